// The NOSCRIPT fallback of an extension, against five real redis-server
// processes: a node that lost its script cache (SCRIPT FLUSH; a restart does
// the same) answers the extend's EVALSHA with NOSCRIPT, and is asked again
// with EVAL, so that the extension and the renewals go on as if nothing had
// happened. release_test has the same case for a release.
#include "support/cluster.hpp"
#include "support/loss_record.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <chrono>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::loss_record;

TEST_SUITE("extend") {
    TEST_CASE_FIXTURE(cluster,
                      "extend falls back from EVALSHA to EVAL after the scripts were flushed") {
        auto locks = make_client();
        const auto key = key_of("orders:42");
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        REQUIRE(locks.extend(*held, 2000ms));  // the extend script is now loaded everywhere
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key, held->value()) == 5; }));
        for (auto& server : *this) REQUIRE(server.command({"SCRIPT", "FLUSH"}) == "OK");

        auto extended = locks.extend(*held, 5000ms);

        REQUIRE(extended);
        CHECK(*extended > 2000ms);
        CHECK(held->valid());
        // A majority ran the script (by EVAL): their TTL is the new one. A node whose
        // NOSCRIPT came after the verdict is not asked again, and keeps the key with
        // its old TTL until the next extension.
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s), [&] {
            return std::ranges::count_if(*this, [&](const redlock_test::redis_server& server) {
                       return server.pttl(key) > 2000;
                   }) >= 3;
        }));
        CHECK(count_holding(key, held->value()) == 5);
    }

    TEST_CASE_FIXTURE(cluster, "renewals go on after the scripts were flushed") {
        loss_record loss;
        auto locks = make_client();
        auto held = locks.acquire("orders:42", loss.options(400ms));
        REQUIRE(held);
        const auto renewed = locks.stats().renewals;
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().renewals > renewed; }));
        for (auto& server : *this) REQUIRE(server.command({"SCRIPT", "FLUSH"}) == "OK");
        const auto after_flush = locks.stats().renewals;

        // Three more renewals (one every ~134 ms) keep the 400 ms lock past its TTL.
        CHECK(redlock_test::wait_until(redlock_test::scaled(3s),
                                       [&] { return locks.stats().renewals >= after_flush + 3; }));

        CHECK(held->valid());
        CHECK(loss.calls == 0);
        CHECK(locks.stats().locks_lost == 0);
    }
}
