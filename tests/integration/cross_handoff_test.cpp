// The hand-off across clients: a release by one client passes an exclusive lock
// to the first live waiter of any client, through the offer that waiter left
// with its queue entry, and tells it by pub/sub. Against five real servers: the
// waiter holds without an attempt of its own, the key holds its value on a
// majority as soon as the release returns, its validity counts from its own
// attempt, dead waiters are skipped, arrival order is kept across clients, a
// hand-off the waiter did not hear is taken over by its next attempt, and one
// it gave up on is released.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <future>
#include <map>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

const std::string lock_key = "redlock:{ledger}";
const std::string queue = "redlock-queue:{ledger}";

/// The value most nodes hold under the lock key, and on how many.
auto majority_value(const cluster& nodes) -> std::pair<std::string, int> {
    std::map<std::string, int> seen;
    for (const auto& server : nodes) ++seen[server.command({"GET", lock_key}).value_or("")];
    std::pair<std::string, int> best;
    for (const auto& [value, n] : seen)
        if (n > best.second) best = {value, n};
    return best;
}

auto nodes_with_key(const cluster& nodes) -> int {
    int n = 0;
    for (const auto& server : nodes) n += server.command({"EXISTS", lock_key}) == std::string{"1"};
    return n;
}

auto queued_everywhere(const cluster& nodes, int count) -> bool {
    return redlock_test::wait_until(redlock_test::scaled(5s), [&] {
        for (const auto& server : nodes)
            if (server.command({"ZCARD", queue}) != std::to_string(count)) return false;
        return true;
    });
}

struct pending_acquire {
    std::promise<redlock::result<redlock::lock>> promise;
    std::future<redlock::result<redlock::lock>> future = promise.get_future();
    redlock::client::acquire_ticket ticket = 0;
    std::chrono::steady_clock::time_point asked;
};

void wait_for(redlock::client& locks, pending_acquire& into,
              redlock::wait_mode mode = redlock::wait_mode::targeted,
              std::chrono::milliseconds ttl = 30s) {
    redlock::lock_options options;
    options.max_wait = 20s;
    options.wait = mode;
    options.ttl = ttl;
    into.asked = std::chrono::steady_clock::now();
    into.ticket = locks.acquire_async("ledger", options, [&into](redlock::result<redlock::lock> r) {
        into.promise.set_value(std::move(r));
    });
}

auto connected(redlock::client& a, redlock::client& b) -> bool {
    return redlock_test::wait_until(redlock_test::scaled(5s), [&] {
        return a.stats().nodes_connected == 5 && b.stats().nodes_connected == 5;
    });
}

/// What a release does, without the message: on every node the key takes the
/// value the first queued waiter offered, and it leaves the queue. Returns that value.
auto hand_off_unheard(const cluster& nodes) -> std::string {
    std::string offered;
    for (const auto& server : nodes) {
        const std::string id = server.command({"ZRANGE", queue, "0", "0"}).value_or("");
        const std::string offer = server.command({"HGET", queue + "|offer", id}).value_or("");
        offered = offer.substr(offer.find('|', offer.find('|') + 1) + 1);
        server.command({"SET", lock_key, offered, "PX", "30000"});
        server.command({"ZREM", queue, id});
    }
    return offered;
}

}  // namespace

TEST_SUITE("hand-off across clients") {
    TEST_CASE_FIXTURE(cluster,
                      "another client's waiter holds as the release returns, with no attempt") {
        for (const auto mode : {redlock::wait_mode::targeted, redlock::wait_mode::fair}) {
            CAPTURE(static_cast<int>(mode));
            // Before the clients: a callback that comes as a client shuts down (a failed REQUIRE)
            // finds it.
            pending_acquire waiter;
            auto owner = make_client();
            auto other = make_client();
            REQUIRE(connected(owner, other));
            auto held = owner.acquire("ledger", {.ttl = 30s});
            REQUIRE(held);
            wait_for(other, waiter, mode, 10s);
            REQUIRE(queued_everywhere(*this, 1));
            REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                             [&] { return other.stats().waiters == 1; }));
            const auto before = other.stats();

            const auto released = owner.release(*held);

            REQUIRE(released);
            CHECK(released->majority());
            // The release itself set the waiter's value: on a majority already.
            const auto [value, on] = majority_value(*this);
            CHECK(on >= 3);
            CHECK(value != held->value());
            CHECK_FALSE(value.empty());
            auto granted = waiter.future.get();
            REQUIRE(granted);
            CHECK(granted->value() == value);
            const auto after = other.stats();
            CHECK(after.attempts == before.attempts);  // no attempt of its own
            CHECK(after.handoffs - before.handoffs == 1);
            CHECK(after.requests == before.requests);  // not a request sent to win it
            // Valid from before its enqueueing attempt at most: within 10 s of the ask.
            CHECK(granted->valid());
            CHECK(granted->valid_until() <= waiter.asked + 10s);
            CHECK(queued_everywhere(*this, 0));
            // The acquisition, finished by a message rather than a reply, is retired.
            CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                           [&] { return other.stats().operations == 0; }));
            REQUIRE(other.release(*granted));
            CHECK(nodes_with_key(*this) == 0);
        }
    }

    TEST_CASE_FIXTURE(cluster, "a dead waiter's offer is skipped, a live one served") {
        // Before the clients: a callback that comes as a client shuts down (a failed REQUIRE) finds
        // it.
        pending_acquire waiter;
        auto owner = make_client();
        auto other = make_client();
        REQUIRE(connected(owner, other));
        auto held = owner.acquire("ledger", {.ttl = 30s});
        REQUIRE(held);
        // A crashed waiter: first in line by score, an offer, and a liveness entry
        // that has expired (its node-clock expiry is in 1970).
        for (const auto& server : *this) {
            server.command({"ZADD", queue, "1", "ghost:1"});
            server.command({"HSET", queue + "|live", "ghost:1", "1|1000"});
            server.command({"HSET", queue + "|offer", "ghost:1", "30000|1|ghost-value"});
        }
        wait_for(other, waiter);
        REQUIRE(queued_everywhere(*this, 2));

        REQUIRE(owner.release(*held));

        auto granted = waiter.future.get();
        REQUIRE(granted);
        CHECK(majority_value(*this).first == granted->value());
        CHECK(queued_everywhere(*this, 0));  // the ghost was pruned on the way
        REQUIRE(other.release(*granted));
    }

    TEST_CASE_FIXTURE(cluster, "three clients' waiters are served in arrival order") {
        // Before the clients: a callback that comes as a client shuts down (a failed REQUIRE) finds
        // it.
        std::vector<pending_acquire> pending(3);
        auto owner = make_client();
        std::vector<redlock::client> waiters;
        for (int i = 0; i < 3; ++i) waiters.push_back(make_client());
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            for (auto& w : waiters)
                if (w.stats().nodes_connected != 5) return false;
            return owner.stats().nodes_connected == 5;
        }));
        auto held = owner.acquire("ledger", {.ttl = 30s});
        REQUIRE(held);
        for (int i = 0; i < 3; ++i) {
            wait_for(waiters[i], pending[i], redlock::wait_mode::fair);
            REQUIRE(queued_everywhere(*this, i + 1));
        }
        REQUIRE(owner.release(*held));
        for (int i = 0; i < 3; ++i) {
            CAPTURE(i);
            auto granted = pending[i].future.get();
            REQUIRE(granted);
            for (int later = i + 1; later < 3; ++later)
                CHECK(pending[later].future.wait_for(0ms) == std::future_status::timeout);
            CHECK(waiters[i].stats().handoffs == 1);
            REQUIRE(waiters[i].release(*granted));
        }
        CHECK(nodes_with_key(*this) == 0);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a hand-off not heard of is taken over by the waiter's next attempt") {
        // Before the clients: a callback that comes as a client shuts down (a failed REQUIRE) finds
        // it.
        pending_acquire waiter;
        auto owner = make_client();
        auto other = make_client();
        REQUIRE(connected(owner, other));
        auto held = owner.acquire("ledger", {.ttl = 30s});
        REQUIRE(held);
        wait_for(other, waiter);
        REQUIRE(queued_everywhere(*this, 1));
        // What a release does, without the message: the key holds the offered value.
        const std::string offered = hand_off_unheard(*this);
        // Its next attempt (at most half of waiter_ttl_ms later) finds its own value.
        auto granted = waiter.future.get();
        REQUIRE(granted);
        CHECK(granted->value() != offered);  // taken over under the new attempt's value
        CHECK(majority_value(*this) == std::pair{granted->value(), 5});
        REQUIRE(other.release(*granted));
        CHECK(nodes_with_key(*this) == 0);
    }

    TEST_CASE_FIXTURE(cluster, "a waiter that gives up releases what was handed to it unheard") {
        // Before the clients: a callback that comes as a client shuts down (a failed REQUIRE) finds
        // it.
        pending_acquire waiter;
        auto owner = make_client();
        auto other = make_client();
        REQUIRE(connected(owner, other));
        auto held = owner.acquire("ledger", {.ttl = 30s});
        REQUIRE(held);
        wait_for(other, waiter);
        REQUIRE(queued_everywhere(*this, 1));
        (void)hand_off_unheard(*this);
        other.cancel(waiter.ticket);
        auto outcome = waiter.future.get();
        if (outcome) {
            MESSAGE("its next attempt took the key over before the cancellation");
            REQUIRE(other.release(*outcome));
        } else {
            CHECK(outcome.error().code == redlock::errc::cancelled);
        }
        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return nodes_with_key(*this) == 0; }));
    }
}
