#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>
#include <uv.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// A libuv loop owned by the test and driven on the test thread, which is therefore the
/// loop thread of every client attached to it.
class test_loop {
public:
    test_loop() {
        if (uv_loop_init(&loop_) != 0) throw std::runtime_error("uv_loop_init failed");
        uv_timer_init(&loop_, &tick_);
        uv_timer_init(&loop_, &task_timer_);
        task_timer_.data = this;
    }
    test_loop(const test_loop&) = delete;
    auto operator=(const test_loop&) -> test_loop& = delete;
    ~test_loop() {
        // A case that failed half-way: close what is left so no handle outlives the loop.
        if (!closed_) (void)finish(2s);
    }

    [[nodiscard]] auto get() noexcept -> uv_loop_t* { return &loop_; }

    /// Runs the loop a turn at a time (UV_RUN_ONCE) until `done()` holds or `limit` has
    /// passed, and returns `done()`. A 5 ms tick bounds each turn, so an idle loop cannot
    /// block the test.
    template <class P>
    auto run_until(P&& done, std::chrono::milliseconds limit) -> bool {
        auto deadline = std::chrono::steady_clock::now() + limit;
        uv_timer_start(
            &tick_, [](uv_timer_t*) {}, 5, 5);
        while (!done() && std::chrono::steady_clock::now() < deadline) uv_run(&loop_, UV_RUN_ONCE);
        uv_timer_stop(&tick_);
        return static_cast<bool>(done());
    }

    /// Runs the loop for `period`, whatever happens meanwhile.
    void run_for(std::chrono::milliseconds period) {
        (void)run_until([] { return false; }, period);
    }

    /// Runs `task` from a timer callback on the next loop turn: work done "inside one
    /// callback", the way an application on this loop would do it.
    void defer(std::function<void()> task) {
        task_ = std::move(task);
        uv_timer_start(
            &task_timer_,
            [](uv_timer_t* t) {
                auto& self = *static_cast<test_loop*>(t->data);
                std::exchange(self.task_, nullptr)();
            },
            0, 0);
    }

    /// Closes the test's own handles, runs the loop (UV_RUN_NOWAIT) until it reports no
    /// more work or `limit` has passed, and returns uv_loop_close's result: 0 when every
    /// handle on the loop was closed.
    auto finish(std::chrono::milliseconds limit) -> int {
        if (closed_) return 0;
        uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&task_timer_), nullptr);
        auto deadline = std::chrono::steady_clock::now() + limit;
        while (uv_run(&loop_, UV_RUN_NOWAIT) != 0 && std::chrono::steady_clock::now() < deadline) {
        }
        int rc = uv_loop_close(&loop_);
        closed_ = rc == 0;
        return rc;
    }

    /// The types of the handles still on the loop, for a failure message.
    [[nodiscard]] auto open_handles() -> std::string {
        std::string names;
        uv_walk(
            &loop_,
            [](uv_handle_t* h, void* arg) {
                auto& out = *static_cast<std::string*>(arg);
                out += std::string{out.empty() ? "" : ", "} + uv_handle_type_name(h->type) +
                       (uv_is_closing(h) != 0 ? " (closing)" : "") +
                       (uv_is_active(h) != 0 ? " (active)" : "");
            },
            &names);
        return names.empty() ? "none" : names;
    }

private:
    uv_loop_t loop_{};
    uv_timer_t tick_{};
    uv_timer_t task_timer_{};
    std::function<void()> task_;
    bool closed_ = false;
};

auto attach(const redlock::client_config& settings, test_loop& loop) -> redlock::client {
    auto made = redlock::client::create(settings, loop.get());
    if (!made) throw std::runtime_error("client::create(config, loop): " + made.error().message);
    return std::move(*made);
}

/// The error code of a failed result; a default (zero) code for a success.
template <class T>
auto code_of(const redlock::result<T>& r) -> std::error_code {
    return r ? std::error_code{} : r.error().code;
}

struct three_nodes : cluster {
    three_nodes() : cluster(3) {}
};

}  // namespace

TEST_SUITE("attached loop") {
    TEST_CASE_FIXTURE(three_nodes,
                      "a client on the caller's loop acquires and releases through callbacks on "
                      "that loop, and leaves nothing open when destroyed") {
        test_loop loop;
        std::optional<redlock::client> locks{attach(config(), loop)};
        REQUIRE(loop.run_until([&] { return locks->stats().nodes_connected == 3; },
                               redlock_test::scaled(5s)));
        auto key = key_of("orders:42");
        bool inside_call = false;
        int acquire_calls = 0;
        bool acquire_ran_inside = false;
        std::optional<redlock::result<redlock::lock>> acquired;
        std::optional<std::error_code> blocking_in_callback;

        inside_call = true;
        locks->acquire_async("orders:42", {}, [&](redlock::result<redlock::lock> r) {
            ++acquire_calls;
            acquire_ran_inside = inside_call;
            blocking_in_callback = code_of(locks->acquire("orders:43"));
            acquired.emplace(std::move(r));
        });
        inside_call = false;
        REQUIRE(loop.run_until([&] { return acquire_calls > 0; }, redlock_test::scaled(5s)));
        REQUIRE(acquired.has_value());
        REQUIRE(*acquired);
        auto held = acquired->value();
        bool held_everywhere = loop.run_until([&] { return count_holding(key, held.value()) == 3; },
                                              redlock_test::scaled(1s));
        auto blocking_acquire = locks->acquire("orders:44");
        auto blocking_release = locks->release(held);
        int release_calls = 0;
        bool release_ran_inside = false;
        std::optional<redlock::result<redlock::release_report>> released;
        inside_call = true;
        locks->release_async(held, [&](redlock::result<redlock::release_report> r) {
            ++release_calls;
            release_ran_inside = inside_call;
            released.emplace(std::move(r));
        });
        inside_call = false;
        REQUIRE(loop.run_until([&] { return release_calls > 0; }, redlock_test::scaled(5s)));
        loop.run_for(200ms);  // a second call, if any, would come meanwhile

        CHECK(acquire_calls == 1);
        CHECK_FALSE(acquire_ran_inside);
        CHECK(held_everywhere);
        CHECK(blocking_in_callback == redlock::errc::would_deadlock);
        REQUIRE_FALSE(blocking_acquire);
        CHECK(blocking_acquire.error().code == redlock::errc::would_deadlock);
        REQUIRE_FALSE(blocking_release);
        CHECK(blocking_release.error().code == redlock::errc::would_deadlock);
        CHECK(release_calls == 1);
        CHECK_FALSE(release_ran_inside);
        REQUIRE(released.has_value());
        REQUIRE(*released);
        CHECK((*released)->deleted + (*released)->pending == 3);  // a slow node may be pending
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key) == 0; }));

        locks.reset();  // destroyed while the loop is alive
        int closed = loop.finish(redlock_test::scaled(5s));

        CHECK_MESSAGE(closed == 0, "still open: " << loop.open_handles());
    }

    TEST_CASE_FIXTURE(three_nodes,
                      "an argument error on an attached loop is reported on a later loop turn") {
        test_loop loop;
        std::optional<redlock::client> locks{attach(config(), loop)};
        bool inside_call = false;
        int calls = 0;
        bool ran_inside = false;
        std::optional<std::error_code> code;

        inside_call = true;
        locks->acquire_async("", {}, [&](redlock::result<redlock::lock> r) {
            ++calls;
            ran_inside = inside_call;
            code = code_of(r);
        });
        inside_call = false;
        REQUIRE(loop.run_until([&] { return calls > 0; }, redlock_test::scaled(5s)));
        loop.run_for(100ms);

        CHECK(calls == 1);
        CHECK_FALSE(ran_inside);
        CHECK(code == redlock::errc::invalid_argument);
        locks.reset();
        CHECK(loop.finish(redlock_test::scaled(5s)) == 0);
    }

    TEST_CASE_FIXTURE(three_nodes,
                      "after shutdown, calls on an attached loop still call back on a later loop "
                      "turn") {
        test_loop loop;
        std::optional<redlock::client> locks{attach(config(), loop)};
        std::optional<redlock::result<redlock::lock>> acquired;
        locks->acquire_async("orders:42", {},
                             [&](redlock::result<redlock::lock> r) { acquired.emplace(r); });
        REQUIRE(loop.run_until([&] { return acquired.has_value(); }, redlock_test::scaled(5s)));
        REQUIRE(*acquired);
        // Every node answered its SET: no operation is left in flight, so shutdown() closes
        // the client's handles at once.
        REQUIRE(loop.run_until(
            [&] { return count_holding(key_of("orders:42"), acquired->value().value()) == 3; },
            redlock_test::scaled(1s)));
        loop.run_for(100ms);
        locks->shutdown();
        bool inside_call = false;
        int acquire_calls = 0;
        bool acquire_ran_inside = false;
        std::optional<std::error_code> acquire_code;
        int release_calls = 0;
        bool release_ran_inside = false;
        std::optional<std::error_code> release_code;

        inside_call = true;
        locks->acquire_async("orders:43", {}, [&](redlock::result<redlock::lock> r) {
            ++acquire_calls;
            acquire_ran_inside = inside_call;
            acquire_code = code_of(r);
        });
        locks->release_async(acquired->value(), [&](redlock::result<redlock::release_report> r) {
            ++release_calls;
            release_ran_inside = inside_call;
            release_code = code_of(r);
        });
        inside_call = false;
        (void)loop.run_until([&] { return acquire_calls > 0 && release_calls > 0; },
                             redlock_test::scaled(2s));

        // The thread contract: callbacks never run inside the call that started the operation,
        // and client_stopped is one of the errors they report, so this holds after shutdown too.
        CHECK(acquire_calls == 1);
        CHECK_FALSE(acquire_ran_inside);
        CHECK(acquire_code == redlock::errc::client_stopped);
        CHECK(release_calls == 1);
        CHECK_FALSE(release_ran_inside);
        CHECK(release_code == redlock::errc::client_stopped);
        locks.reset();
        CHECK(loop.finish(redlock_test::scaled(5s)) == 0);
    }

    TEST_CASE_FIXTURE(three_nodes,
                      "a straggler queued before its connection's handshake is disowned once "
                      "the acquisition is decided") {
        // Frozen: the kernel still accepts the connection, and nothing is answered.
        node(2).freeze();
        auto settings = config();
        settings.request_timeout = 5s;
        settings.connect_timeout = 5s;
        // A fresh client's majority waits for a node still making its first connection, at
        // most half the TTL here (acquire_settling.cpp): 3 s, then it decides without it.
        settings.lock.ttl = 6s;
        test_loop loop;
        std::optional<redlock::client> locks{attach(settings, loop)};
        std::optional<redlock::result<redlock::lock>> outcome;
        // Before the loop has run a turn: every SET is queued while its connection is still
        // connecting, so each connection's handshake is then put in front of it. The request
        // numbers must still lead the disown to node 2's SET (not to a handshake request).
        const auto asked = std::chrono::steady_clock::now();
        locks->acquire_async("orders:45", {},
                             [&](redlock::result<redlock::lock> r) { outcome = std::move(r); });

        REQUIRE(loop.run_until([&] { return outcome.has_value(); }, redlock_test::scaled(8s)));
        REQUIRE(outcome->has_value());
        CHECK(std::chrono::steady_clock::now() - asked >= 2900ms);  // it waited for node 2
        const redlock::lock held = outcome->value();
        CHECK(loop.run_until([&] { return locks->stats().operations == 0; },
                             redlock_test::scaled(1s)));
        node(2).thaw();
        const auto key = key_of("orders:45");
        REQUIRE(loop.run_until([&] { return count_holding(key, held.value()) == 3; },
                               redlock_test::scaled(2s)));
        std::optional<redlock::result<redlock::release_report>> released;
        locks->release_async(
            held, [&](redlock::result<redlock::release_report> r) { released = std::move(r); });
        REQUIRE(loop.run_until([&] { return released.has_value(); }, redlock_test::scaled(5s)));
        REQUIRE(released->has_value());
        CHECK(released->value().deleted + released->value().pending ==
              3);  // a slow node may be pending
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key) == 0; }));
        locks.reset();
        CHECK(loop.finish(redlock_test::scaled(5s)) == 0);
    }

    TEST_CASE_FIXTURE(three_nodes,
                      "two hundred acquisitions queued in one loop turn leave in a few writes "
                      "per node, not one per request") {
        test_loop loop;
        // Room for 200 release calls in flight under a sanitizer: the count of
        // writes is the point here, not how fast each answer comes.
        auto settings = config();
        settings.request_timeout = 1000ms;
        std::optional<redlock::client> locks{attach(settings, loop)};
        REQUIRE(loop.run_until([&] { return locks->stats().nodes_connected == 3; },
                               redlock_test::scaled(5s)));
        // A first round trip on every connection: the connect handshake is over by its end.
        bool warmed_up = false;
        locks->acquire_async("warm-up", {}, [&](redlock::result<redlock::lock> r) {
            // No REQUIRE here: an exception must not unwind through the library's callback.
            if (!r) {
                warmed_up = true;
                return;
            }
            locks->release_async(
                *r, [&](redlock::result<redlock::release_report>) { warmed_up = true; });
        });
        REQUIRE(loop.run_until([&] { return warmed_up; }, redlock_test::scaled(5s)));
        constexpr std::size_t batch = 200;
        const std::size_t nodes = locks->node_count();
        std::vector<redlock::lock> held;
        std::size_t acquire_fired = 0;
        std::size_t release_fired = 0;
        std::size_t deleted = 0;

        auto before_acquire = locks->stats();
        loop.defer([&] {
            for (std::size_t i = 0; i < batch; ++i) {
                locks->acquire_async("batch:" + std::to_string(i), {},
                                     [&](redlock::result<redlock::lock> r) {
                                         ++acquire_fired;
                                         if (r) held.push_back(*r);
                                     });
            }
        });
        REQUIRE(loop.run_until([&] { return acquire_fired == batch; }, redlock_test::scaled(10s)));
        auto after_acquire = locks->stats();
        loop.defer([&] {
            for (const auto& l : held) {
                locks->release_async(l, [&](redlock::result<redlock::release_report> r) {
                    ++release_fired;
                    if (r) deleted += r->deleted + r->pending;  // pending: decided without it
                });
            }
        });
        REQUIRE(loop.run_until([&] { return release_fired == held.size(); },
                               redlock_test::scaled(10s)));
        auto after_release = locks->stats();

        CHECK(held.size() == batch);
        CHECK(after_acquire.requests - before_acquire.requests == batch * nodes);
        // What is queued in one turn leaves in one write per 8 KiB (a bound on the
        // bytes waiting in the client): 200 SETs are about 16 KiB per node, 200
        // release calls about 65 KiB (each names the lock key, the queue, its
        // liveness hash and its waiters' offers). Unbatched, each would be 200 writes.
        CHECK(after_acquire.writes - before_acquire.writes <= 4 * nodes);
        CHECK(after_release.requests - after_acquire.requests == batch * nodes);
        CHECK(after_release.writes - after_acquire.writes <= 10 * nodes);
        CHECK(deleted == batch * nodes);
        locks.reset();  // the stragglers' releases land before the client has closed
        CHECK(total_keys() == 0);
        CHECK(loop.finish(redlock_test::scaled(5s)) == 0);
    }
}
