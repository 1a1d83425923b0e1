// Back-pressure: config.max_concurrent_acquisitions bounds how many acquisitions without a
// wait deadline run at once. The others are held in the client, in order, and start as
// running ones deliver their results. Shown by order of completion against a rival that
// keeps one acquisition busy retrying: a held-back acquisition of a free resource cannot
// finish before it.

#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// Completion order of several acquire_async calls. Declare it before the client, so that
/// it outlives any callback.
struct completions {
    explicit completions(std::size_t expected) : all{expected} {}

    auto callback(std::string name) -> redlock::client::acquire_callback {
        return [this, name = std::move(name)](redlock::result<redlock::lock> r) {
            {
                std::lock_guard guard{mutex};
                order.push_back(name);
                outcomes.emplace_back(name, std::move(r));
            }
            all.count_down();
        };
    }
    [[nodiscard]] auto position(const std::string& name) -> std::size_t {
        std::lock_guard guard{mutex};
        return static_cast<std::size_t>(std::find(order.begin(), order.end(), name) -
                                        order.begin());
    }
    [[nodiscard]] auto outcome(const std::string& name) -> redlock::result<redlock::lock> {
        std::lock_guard guard{mutex};
        for (auto& [n, r] : outcomes) {
            if (n == name) return r;
        }
        FAIL("no outcome for " << name);
        return redlock::failure{redlock::error{}};
    }

    redlock_test::countdown all;
    std::mutex mutex;
    std::vector<std::string> order;
    std::vector<std::pair<std::string, redlock::result<redlock::lock>>> outcomes;
};

/// Retries against a held resource for a while: three attempts, 300 ms apart.
auto slow_failure() -> redlock::lock_options {
    redlock::lock_options o;
    o.attempts = 3;
    return o;
}

/// A cluster where another client holds "busy", and a client whose retry delay is fixed at
/// 300 ms and which runs at most `limit` acquisitions at once.
class busy_cluster : public cluster {
protected:
    [[nodiscard]] auto limited_client(int limit) const -> redlock::client {
        auto settings = config();
        settings.max_concurrent_acquisitions = limit;
        settings.retry.delay = 300ms;
        settings.retry.jitter = 0ms;
        return make_client(settings);
    }
    void hold_busy() {
        held_.emplace(owner_.acquire("busy"));
        REQUIRE(*held_);
    }
    /// With "busy" held: `locks` asks for "busy" (it fails slowly) and then for "free",
    /// and both complete into `done`.
    void ask_busy_then_free(redlock::client& locks, completions& done) {
        hold_busy();
        locks.acquire_async("busy", slow_failure(), done.callback("busy"));
        locks.acquire_async("free", {}, done.callback("free"));
        REQUIRE(done.all.wait_for(redlock_test::scaled(10s)));
    }

private:
    redlock::client owner_ = make_client();
    std::optional<redlock::result<redlock::lock>> held_;
};

}  // namespace

TEST_SUITE("back-pressure") {
    TEST_CASE_FIXTURE(busy_cluster,
                      "with a limit of one, an acquisition of a free resource waits for the "
                      "running one to finish") {
        completions done{2};
        auto locks = limited_client(1);

        ask_busy_then_free(locks, done);

        CHECK(done.position("busy") == 0);
        CHECK(done.position("free") == 1);
        CHECK(done.outcome("busy").error().code == redlock::errc::contended);
        REQUIRE(done.outcome("free"));
        CHECK(locks.release(*done.outcome("free")));
    }

    TEST_CASE_FIXTURE(busy_cluster, "without a limit, the free resource is locked first") {
        // The control for the case above: the same calls, max_concurrent_acquisitions = 0.
        completions done{2};
        auto locks = limited_client(0);

        ask_busy_then_free(locks, done);

        CHECK(done.position("free") == 0);
        CHECK(done.position("busy") == 1);
        REQUIRE(done.outcome("free"));
        CHECK(locks.release(*done.outcome("free")));
    }

    TEST_CASE_FIXTURE(busy_cluster, "held-back acquisitions start in the order they were made") {
        completions done{5};
        auto locks = limited_client(1);
        const std::vector<std::string> names{"a", "b", "c", "d", "e"};

        for (const auto& name : names) locks.acquire_async(name, {}, done.callback(name));

        REQUIRE(done.all.wait_for(redlock_test::scaled(10s)));
        for (std::size_t i = 0; i < names.size(); ++i) {
            CHECK(done.position(names[i]) == i);
            auto r = done.outcome(names[i]);
            REQUIRE(r);
            CHECK(locks.release(*r));
        }
    }

    TEST_CASE_FIXTURE(busy_cluster, "an acquisition with a wait deadline is never held back") {
        completions done{2};
        auto locks = limited_client(1);
        hold_busy();
        redlock::lock_options waits;
        waits.max_wait = 5s;

        locks.acquire_async("busy", slow_failure(), done.callback("busy"));
        locks.acquire_async("free", waits, done.callback("free"));

        REQUIRE(done.all.wait_for(redlock_test::scaled(10s)));
        CHECK(done.position("free") == 0);
        REQUIRE(done.outcome("free"));
        CHECK(locks.release(*done.outcome("free")));
    }

    TEST_CASE_FIXTURE(busy_cluster,
                      "a held-back acquisition can be cancelled before it starts, and sends "
                      "nothing") {
        completions done{2};
        auto locks = limited_client(1);
        hold_busy();

        locks.acquire_async("busy", slow_failure(), done.callback("busy"));
        const auto ticket = locks.acquire_async("free", {}, done.callback("free"));
        locks.cancel(ticket);

        REQUIRE(done.all.wait_for(redlock_test::scaled(10s)));
        CHECK(done.position("free") == 0);  // at once, not after "busy"
        const auto cancelled = done.outcome("free");
        REQUIRE_FALSE(cancelled);
        CHECK(cancelled.error().code == redlock::errc::cancelled);
        CHECK(count_holding(key_of("free")) == 0);
    }

    TEST_CASE_FIXTURE(busy_cluster, "held-back acquisitions are refused when the client stops") {
        completions done{2};
        hold_busy();
        {
            auto locks = limited_client(1);
            locks.acquire_async("busy", slow_failure(), done.callback("busy"));
            locks.acquire_async("free", {}, done.callback("free"));
        }  // destroyed: shutdown

        REQUIRE(done.all.wait_for(redlock_test::scaled(10s)));
        const auto stopped = done.outcome("free");
        REQUIRE_FALSE(stopped);
        CHECK(stopped.error().code == redlock::errc::client_stopped);
        CHECK(count_holding(key_of("free")) == 0);
    }
}
