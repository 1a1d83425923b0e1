#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::elapsed_since;

namespace {

/// The outcome of one acquire_async. Declare it before the client, so that it outlives any
/// callback.
struct acquisition {
    std::atomic<int> calls{0};
    redlock_test::countdown done{1};
    std::mutex mutex;
    std::optional<redlock::result<redlock::lock>> outcome;
    std::chrono::steady_clock::time_point at{};

    auto callback() -> redlock::client::acquire_callback {
        return [this](redlock::result<redlock::lock> r) {
            {
                std::lock_guard guard{mutex};
                if (!outcome) {
                    outcome.emplace(std::move(r));
                    at = std::chrono::steady_clock::now();
                }
            }
            ++calls;
            done.count_down();
        };
    }
};

}  // namespace

TEST_SUITE("cancel") {
    TEST_CASE_FIXTURE(cluster,
                      "cancelling a waiting acquisition completes it once with cancelled "
                      "and leaves no key behind") {
        acquisition waiting;
        auto owner = make_client();
        auto rival = make_client();
        auto key = key_of("r");
        auto held = owner.acquire("r");
        REQUIRE(held);
        REQUIRE(held_everywhere("r", held->value()));
        redlock::lock_options patient;
        patient.max_wait = redlock_test::scaled(10s);  // beyond the bounds checked below
        auto ticket = rival.acquire_async("r", patient, waiting.callback());
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return rival.stats().attempts >= 2; }));
        auto start = std::chrono::steady_clock::now();

        rival.cancel(ticket);

        REQUIRE(waiting.done.wait_for(redlock_test::scaled(5s)));
        CHECK(waiting.at - start < redlock_test::scaled(2s));
        CHECK(redlock_test::holds_for(200ms, [&] { return waiting.calls == 1; }));
        {
            std::lock_guard guard{waiting.mutex};
            REQUIRE_FALSE(*waiting.outcome);
            CHECK(waiting.outcome->error().code == redlock::errc::cancelled);
        }
        // Cancelled means no more attempts.
        auto attempts = rival.stats().attempts;
        CHECK(redlock_test::holds_for(300ms, [&] { return rival.stats().attempts == attempts; }));
        CHECK(count_holding(key, held->value()) == 5);
        CHECK(count_holding(key) == 5);
        CHECK(total_keys() == 5);
        REQUIRE(owner.release(*held));
        CHECK(total_keys() == 0);
    }

    TEST_CASE_FIXTURE(cluster,
                      "cancelling an attempt in flight releases the SETs queued on frozen nodes") {
        acquisition in_flight;
        // A request deadline long enough for the attempt to be surely in flight when cancelled.
        auto settings = config();
        settings.request_timeout = 1000ms;
        auto locks = make_client(settings);
        auto key = key_of("r");
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        for (int i : {0, 1, 2}) node(i).freeze();
        // A TTL far beyond the waits below: a key that disappears was released, not expired.
        redlock::lock_options options;
        options.ttl = 20s;
        options.max_wait = 10s;
        auto ticket = locks.acquire_async("r", options, in_flight.callback());
        // The two live nodes granted; the three frozen ones have the SET queued, unanswered.
        bool granted_by_two = redlock_test::wait_until(redlock_test::scaled(2s),
                                                       [&] { return count_holding(key) == 2; });
        auto start = std::chrono::steady_clock::now();

        locks.cancel(ticket);

        bool completed = in_flight.done.wait_for(redlock_test::scaled(5s));
        auto took = elapsed_since(start);
        auto left_on_live_nodes = count_holding(key);
        for (int i : {0, 1, 2}) node(i).thaw();
        CHECK(granted_by_two);
        REQUIRE(completed);
        CHECK(took < redlock_test::scaled(3s));
        CHECK(redlock_test::holds_for(200ms, [&] { return in_flight.calls == 1; }));
        {
            std::lock_guard guard{in_flight.mutex};
            REQUIRE_FALSE(*in_flight.outcome);
            CHECK(in_flight.outcome->error().code == redlock::errc::cancelled);
        }
        CHECK(left_on_live_nodes == 0);
        // Each release was queued behind its SET on the frozen node's connection.
        CHECK(redlock_test::wait_until(redlock_test::scaled(3s),
                                       [&] { return count_holding(key) == 0; }));
        CHECK(redlock_test::holds_for(300ms, [&] { return count_holding(key) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster,
                      "a blocking acquisition returns cancelled when its stop token is requested") {
        auto owner = make_client();
        auto rival = make_client();
        auto held = owner.acquire("r");
        REQUIRE(held);
        REQUIRE(held_everywhere("r", held->value()));
        std::stop_source stop;
        redlock::lock_options patient;
        patient.max_wait = redlock_test::scaled(10s);  // beyond the bounds checked below
        std::jthread stopper{[&] {
            if (redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return rival.stats().attempts >= 2; })) {
                stop.request_stop();
            }
        }};
        auto start = std::chrono::steady_clock::now();

        auto outcome = rival.acquire("r", patient, stop.get_token());

        auto took = elapsed_since(start);
        stopper.join();
        REQUIRE_FALSE(outcome);
        CHECK(outcome.error().code == redlock::errc::cancelled);
        CHECK(took < redlock_test::scaled(6s));  // well before max_wait
        CHECK(count_holding(key_of("r"), held->value()) == 5);
        CHECK(total_keys() == 5);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a blocking acquisition whose stop was already requested returns "
                      "cancelled and leaves no key") {
        auto locks = make_client();
        std::stop_source stop;
        stop.request_stop();

        auto outcome = locks.acquire("r", {}, stop.get_token());

        REQUIRE_FALSE(outcome);
        CHECK(outcome.error().code == redlock::errc::cancelled);
        CHECK(count_holding(key_of("r")) == 0);
        CHECK(redlock_test::holds_for(300ms, [&] { return count_holding(key_of("r")) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster,
                      "cancelling a completed acquisition does nothing, nor does ticket 0") {
        acquisition completed;
        auto locks = make_client();
        auto key = key_of("r");
        auto ticket = locks.acquire_async("r", {}, completed.callback());
        REQUIRE(completed.done.wait_for(redlock_test::scaled(5s)));
        std::unique_lock guard{completed.mutex};
        REQUIRE(*completed.outcome);
        auto held = **completed.outcome;
        guard.unlock();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key, held.value()) == 5; }));
        auto requests = locks.stats().requests;

        CHECK(ticket != 0);
        locks.cancel(ticket);
        locks.cancel(0);

        CHECK(redlock_test::holds_for(
            300ms, [&] { return held.valid() && count_holding(key, held.value()) == 5; }));
        CHECK(completed.calls == 1);
        CHECK(locks.stats().requests == requests);
        auto released = locks.release(held);
        REQUIRE(released);
        CHECK(released->deleted + released->pending == 5);  // a slow node may be pending
    }
}
