#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>

using namespace std::chrono_literals;
using redlock_test::cluster;

TEST_SUITE("deadlines") {
    TEST_CASE_FIXTURE(cluster,
                      "a contended acquisition gives up at its wait deadline, not before") {
        auto owner = make_client();
        auto rival = make_client();
        auto held = owner.acquire("orders:42");
        REQUIRE(held);
        redlock::lock_options wait_400ms;
        wait_400ms.max_wait = 400ms;  // retry delay 50 ms + jitter up to 50 ms: several attempts
        auto start = std::chrono::steady_clock::now();

        auto refused = rival.acquire("orders:42", wait_400ms);

        auto took = std::chrono::steady_clock::now() - start;
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::contended);
        CHECK(refused.error().attempts >= 2);  // it waits for the holder instead of polling
        CHECK(took >= 350ms);                  // it kept trying until about the deadline...
        CHECK(took < 400ms + redlock_test::scaled(1100ms));  // ...and stopped there
    }

    TEST_CASE_FIXTURE(cluster,
                      "waiting succeeds as soon as the holder lets go within the deadline") {
        auto owner = make_client();
        auto rival = make_client();
        redlock::lock_options short_ttl;
        short_ttl.ttl = 300ms;
        auto held = owner.acquire("orders:42", short_ttl);
        REQUIRE(held);
        redlock::lock_options wait_3s;
        wait_3s.max_wait = 3s;

        auto granted =
            rival.acquire("orders:42", wait_3s);  // the owner never releases: TTL ends it

        REQUIRE(granted);
        CHECK(granted->valid());
        CHECK_FALSE(held->valid());
    }

    TEST_CASE_FIXTURE(cluster, "a quorum granted with no validity left is released and reported") {
        auto locks = make_client();
        redlock::lock_options tiny;
        tiny.ttl = 2ms;  // drift alone (ceil(0.02) + 2 ms = 3 ms) exceeds it
        tiny.attempts = 2;
        auto key = key_of("orders:42");

        auto refused = locks.acquire("orders:42", tiny);

        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::validity_expired);
        CHECK(refused.error().attempts == 2);
        CHECK(count_holding(key) == 0);
    }

    TEST_CASE_FIXTURE(cluster, "the attempt budget bounds the number of attempts") {
        auto owner = make_client();
        auto rival = make_client();
        auto held = owner.acquire("orders:42");
        REQUIRE(held);
        redlock::lock_options once;
        once.attempts = 1;
        auto before = rival.stats();

        auto refused = rival.acquire("orders:42", once);

        REQUIRE_FALSE(refused);
        CHECK(refused.error().attempts == 1);
        CHECK(rival.stats().attempts - before.attempts == 1);
    }
}
