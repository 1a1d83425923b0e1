#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// One acquire/release round; true when `server` held the lock's key meanwhile.
auto round_uses(redlock::client& locks, const redlock_test::redis_server& server,
                const std::string& key) -> bool {
    auto held = locks.acquire("orders:42");
    if (!held) return false;
    // The call returns on a majority; this node's SET may still be on its way.
    bool used = redlock_test::wait_until(redlock_test::scaled(200ms),
                                         [&] { return server.get(key) == held->value(); });
    (void)locks.release(*held);
    return used;
}

}  // namespace

TEST_SUITE("reconnect") {
    TEST_CASE_FIXTURE(cluster, "a node that crashed and restarted is reconnected and used again") {
        auto locks = make_client();
        auto key = key_of("orders:42");
        REQUIRE(round_uses(locks, node(0), key));
        node(0).crash();
        for (int i = 0; i < 3; ++i) {
            auto held = locks.acquire("orders:42");
            REQUIRE(held);
            REQUIRE(locks.release(*held));
        }

        node(0).restart();

        // Restarted empty: no scripts, so its first release also needs the EVAL fallback.
        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return round_uses(locks, node(0), key); }));
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return count_holding(key) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster,
                      "a node that was down when the client started is used once it comes up") {
        node(0).crash();
        auto locks = make_client();
        auto key = key_of("orders:42");
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        REQUIRE(locks.release(*held));

        node(0).restart();

        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return round_uses(locks, node(0), key); }));
        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return locks.stats().nodes_connected == 5; }));
    }

    TEST_CASE_FIXTURE(cluster, "a node restarted while a lock is held does not stop its release") {
        auto locks = make_client();
        auto key = key_of("orders:42");
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key) == 5; }));

        node(1).restart();
        auto report = locks.release(*held);

        REQUIRE(report);
        CHECK(report->majority());
        // The restarted node is empty: it deletes nothing. Its request may still be pending
        // when the release returns at a majority (the client may not have seen the old
        // connection die yet), or already failed.
        CHECK(report->deleted <= 4);
        CHECK(report->deleted + report->pending >= 4);
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key) == 0; }));
    }
}
