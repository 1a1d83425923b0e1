// Extend never re-acquires silently: it counts only nodes where our value was
// still present, and puts a missing key back (SET NX) only once the lock has
// been confirmed on a majority — never counting that node toward the quorum.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>

using namespace std::chrono_literals;
using redlock_test::cluster;

TEST_SUITE("extend repair") {
    TEST_CASE_FIXTURE(cluster,
                      "a successful extend puts a missing key back, and leaves foreign ones") {
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        const auto key = key_of("orders:42");
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key, held->value()) == 5; }));
        node(4).command({"DEL", key});                                 // lost by node 4
        node(3).command({"SET", key, "someone-else", "PX", "60000"});  // foreign on node 3

        auto extended = locks.extend(*held, 5s);

        REQUIRE(extended);
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return node(4).get(key) == held->value(); }));
        CHECK(node(4).pttl(key) > 4000);
        CHECK(node(3).get(key) == "someone-else");  // never overwritten
        CHECK(count_holding(key, held->value()) == 4);
    }

    TEST_CASE_FIXTURE(
        cluster,
        "an extend that finds the key missing on a majority fails and re-creates nothing") {
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        const auto key = key_of("orders:42");
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key, held->value()) == 5; }));
        for (int i : {0, 1, 2}) node(i).command({"DEL", key});

        auto extended = locks.extend(*held, 5s);

        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::not_held);
        CHECK(extended.error().message.find("missing") != std::string::npos);
        // No node got its key back: a missing key is not re-acquired silently.
        CHECK(
            redlock_test::holds_for(300ms, [&] { return count_holding(key, held->value()) == 2; }));
    }
}
