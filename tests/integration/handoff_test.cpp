// The hand-off: a release by a client passes an exclusive lock straight to that
// client's first waiter where the waiter is first in the node's queue — the
// waiter's attempt is the releaser's script, so it holds without a request of
// its own. Against real servers: the grant, the request count, a waiter of
// another client ahead in the queue, and a successor cancelled mid-hand-off.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// How many nodes hold `value` under the lock key of `resource`.
auto nodes_holding(const cluster& nodes, const std::string& resource, const std::string& value)
    -> int {
    int n = 0;
    for (const auto& server : nodes)
        n += server.command({"GET", "redlock:{" + resource + "}"}) == value;
    return n;
}

/// How many nodes have the lock key of `resource` at all.
auto nodes_with_key(const cluster& nodes, const std::string& resource) -> int {
    int n = 0;
    for (const auto& server : nodes)
        n += server.command({"EXISTS", "redlock:{" + resource + "}"}) == std::string{"1"};
    return n;
}

/// Waits until `count` waiters are queued for `resource` on every node.
auto queued_everywhere(const cluster& nodes, const std::string& resource, int count) -> bool {
    return redlock_test::wait_until(redlock_test::scaled(5s), [&] {
        for (const auto& server : nodes) {
            if (server.command({"ZCARD", "redlock-queue:{" + resource + "}"}) !=
                std::to_string(count))
                return false;
        }
        return true;
    });
}

struct pending_acquire {
    std::promise<redlock::result<redlock::lock>> promise;
    std::future<redlock::result<redlock::lock>> future = promise.get_future();
    redlock::client::acquire_ticket ticket = 0;
};

auto wait_for(redlock::client& locks, const std::string& resource, pending_acquire& into,
              redlock::wait_mode mode = redlock::wait_mode::targeted) {
    redlock::lock_options options;
    options.max_wait = 20s;
    options.wait = mode;
    into.ticket = locks.acquire_async(resource, options, [&into](redlock::result<redlock::lock> r) {
        into.promise.set_value(std::move(r));
    });
}

}  // namespace

TEST_SUITE("hand-off") {
    TEST_CASE_FIXTURE(cluster,
                      "a release hands the lock to this client's waiter: no request of its own") {
        for (const auto mode : {redlock::wait_mode::targeted, redlock::wait_mode::fair}) {
            CAPTURE(static_cast<int>(mode));
            auto locks = make_client();
            REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                             [&] { return locks.stats().nodes_connected == 5; }));
            auto held = locks.acquire("ledger", {.ttl = 30s});
            REQUIRE(held);
            pending_acquire waiter;
            wait_for(locks, "ledger", waiter, mode);
            REQUIRE(queued_everywhere(*this, "ledger", 1));
            const auto before = locks.stats();

            const auto released = locks.release(*held);

            REQUIRE(released);
            CHECK(released->majority());
            auto granted = waiter.future.get();
            REQUIRE(granted);
            const auto after = locks.stats();
            CHECK(after.handoffs - before.handoffs == 1);
            // The release's five requests were the waiter's grant.
            CHECK(after.requests - before.requests == 5);
            CHECK(nodes_holding(*this, "ledger", granted->value()) >= 3);
            CHECK(granted->valid());
            CHECK(queued_everywhere(*this, "ledger", 0));  // it left the queue where granted
            REQUIRE(locks.release(*granted));
            CHECK(nodes_with_key(*this, "ledger") == 0);
        }
    }

    TEST_CASE_FIXTURE(cluster, "a waiter of another client ahead in the queue is not passed over") {
        auto owner = make_client();
        auto other = make_client();
        // Both connected everywhere, so that each queues on every node at its first
        // attempt, and a holder whose TTL cannot run out while the test waits.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            return owner.stats().nodes_connected == 5 && other.stats().nodes_connected == 5;
        }));
        auto held = owner.acquire("ledger", {.ttl = 30s});
        REQUIRE(held);
        pending_acquire first;  // another client's, queued first
        wait_for(other, "ledger", first, redlock::wait_mode::fair);
        REQUIRE(queued_everywhere(*this, "ledger", 1));
        pending_acquire second;  // the owner's own, queued behind it
        wait_for(owner, "ledger", second, redlock::wait_mode::fair);
        REQUIRE(queued_everywhere(*this, "ledger", 2));

        REQUIRE(owner.release(*held));

        auto granted = first.future.get();  // handed to it through its offer
        REQUIRE(granted);
        CHECK(owner.stats().handoffs == 0);
        CHECK(other.stats().handoffs == 1);
        CHECK(second.future.wait_for(200ms) == std::future_status::timeout);
        REQUIRE(other.release(*granted));
        auto then = second.future.get();
        REQUIRE(then);
        CHECK(nodes_holding(*this, "ledger", then->value()) >= 3);
        REQUIRE(owner.release(*then));
    }

    TEST_CASE_FIXTURE(cluster, "a successor cancelled during the hand-off leaves no key behind") {
        auto locks = make_client();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        auto held = locks.acquire("ledger", {.ttl = 30s});
        REQUIRE(held);
        pending_acquire waiter;
        wait_for(locks, "ledger", waiter);
        REQUIRE(queued_everywhere(*this, "ledger", 1));
        std::promise<void> release_done;

        // Both reach the loop in this order: the release claims the waiter and
        // sends its script, then the cancellation ends the waiter's attempt.
        locks.release_async(
            *held, [&](redlock::result<redlock::release_report>) { release_done.set_value(); });
        locks.cancel(waiter.ticket);

        auto outcome = waiter.future.get();
        release_done.get_future().get();
        const std::string what = outcome ? "held before it was cancelled" : "was cancelled";
        MESSAGE("the successor " << what);
        if (outcome) {
            // The hand-off was decided before the cancellation arrived: it holds.
            CHECK(nodes_holding(*this, "ledger", outcome->value()) >= 3);
            REQUIRE(locks.release(*outcome));
        } else {
            CHECK(outcome.error().code == redlock::errc::cancelled);
        }
        // Either way, once the waiter has its answer nothing of it remains.
        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return nodes_with_key(*this, "ledger") == 0; }));
        CHECK(queued_everywhere(*this, "ledger", 0));
    }

    TEST_CASE_FIXTURE(cluster,
                      "dead queue entries ahead of the successor do not stop the hand-off") {
        auto locks = make_client();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        auto held = locks.acquire("ledger", {.ttl = 30s});
        REQUIRE(held);
        // A crashed waiter's entry: first in line by score, with no liveness entry.
        for (const auto& server : *this)
            server.command({"ZADD", "redlock-queue:{ledger}", "1", "ghost:1"});
        pending_acquire waiter;
        wait_for(locks, "ledger", waiter);
        REQUIRE(queued_everywhere(*this, "ledger", 2));

        REQUIRE(locks.release(*held));

        auto granted = waiter.future.get();
        REQUIRE(granted);
        CHECK(locks.stats().handoffs == 1);
        CHECK(queued_everywhere(*this, "ledger", 0));  // the ghost was pruned on the way
        REQUIRE(locks.release(*granted));
    }

    TEST_CASE_FIXTURE(cluster,
                      "the successor first in line is handed the lock though its liveness lapsed") {
        // Its own client names it in the release, so it is live whatever the
        // node's liveness entry says; another client's waiter behind it waits on.
        auto owner = make_client();
        auto other = make_client();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            return owner.stats().nodes_connected == 5 && other.stats().nodes_connected == 5;
        }));
        auto held = owner.acquire("ledger", {.ttl = 30s});
        REQUIRE(held);
        pending_acquire mine;
        wait_for(owner, "ledger", mine);
        REQUIRE(queued_everywhere(*this, "ledger", 1));
        pending_acquire behind;
        wait_for(other, "ledger", behind);
        REQUIRE(queued_everywhere(*this, "ledger", 2));
        // The successor's liveness entry, gone as if it had expired on every node.
        for (const auto& server : *this) {
            const auto first = server.command({"ZRANGE", "redlock-queue:{ledger}", "0", "0"});
            REQUIRE(first);
            CHECK(server.command({"HDEL", "redlock-queue:{ledger}|live", *first}) == "1");
        }

        REQUIRE(owner.release(*held));

        auto granted = mine.future.get();
        REQUIRE(granted);
        CHECK(owner.stats().handoffs == 1);
        CHECK(nodes_holding(*this, "ledger", granted->value()) >= 3);
        CHECK(behind.future.wait_for(200ms) == std::future_status::timeout);
        REQUIRE(owner.release(*granted));
        auto then = behind.future.get();
        REQUIRE(then);
        REQUIRE(other.release(*then));
    }
}
