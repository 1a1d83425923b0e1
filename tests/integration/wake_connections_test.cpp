// client::open_wake_connections (issue 28, item 4): the connections that carry
// release notifications, opened before anyone waits, so that a waiter's first
// attempt begins with every subscription answered and, refused, sleeps until
// the holder's keys expire or its release wakes it.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

using namespace std::chrono_literals;
using redlock_test::cluster;

TEST_SUITE("wake connections") {
    TEST_CASE_FIXTURE(cluster,
                      "opened before anyone waits: one per node, answered, and closed when "
                      "nobody comes") {
        auto locks = make_client();
        CHECK(locks.stats().subscriber_connections == 0);

        locks.open_wake_connections();

        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return locks.stats().subscribers_ready == 5; }));
        CHECK(locks.stats().subscriber_connections == 5);
        locks.open_wake_connections();  // open already: nothing more
        CHECK(locks.stats().subscriber_connections == 5);
        // Nobody waited: they close after the idle grace period (2 s).
        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return locks.stats().subscriber_connections == 0; }));
        CHECK(locks.stats().subscribers_ready == 0);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a waiter whose wake connections were answered first makes one refused "
                      "attempt and one when the holder's keys expire") {
        auto owner = make_client();
        auto waiter = make_client();
        waiter.open_wake_connections();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return waiter.stats().subscribers_ready == 5; }));
        redlock::lock_options short_ttl;
        short_ttl.ttl = 800ms;
        auto held = owner.acquire("ledger", short_ttl);  // never released: its TTL ends it
        REQUIRE(held);
        redlock::lock_options wait;
        wait.max_wait = 5s;

        auto granted = waiter.acquire("ledger", wait);

        REQUIRE(granted);
        // Subscribed before its first attempt began, the waiter sleeps on the holder's TTL
        // at once. Subscribed only by the refusal, it would look again after 2 x
        // request_timeout (a release between its grant and its SUBSCRIBE goes unheard).
        CHECK(waiter.stats().attempts == 2);
    }

    TEST_CASE_FIXTURE(cluster, "a stopped client opens nothing") {
        auto locks = make_client();
        locks.shutdown();
        locks.open_wake_connections();
        CHECK(locks.stats().subscriber_connections == 0);
    }
}
