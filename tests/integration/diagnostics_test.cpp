#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <chrono>

using namespace std::chrono_literals;
using redlock_test::cluster;

TEST_SUITE("diagnostics") {
    TEST_CASE_FIXTURE(cluster,
                      "status shows the holder on every node and the majority's agreement") {
        auto locks = make_client();
        redlock::lock_options fenced;
        fenced.fencing = true;
        auto held = locks.acquire("orders:42", fenced);
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key_of("orders:42")) == 5; }));
        node(4).crash();

        auto status = locks.status("orders:42");

        REQUIRE(status);
        CHECK(status->resource == "orders:42");
        CHECK(status->quorum == 3);
        REQUIRE(status->nodes.size() == 5);
        for (std::size_t i = 0; i < 4; ++i) {
            CHECK(status->nodes[i].reachable);
            CHECK(status->nodes[i].holder == held->value());
            REQUIRE(status->nodes[i].ttl);
            CHECK(*status->nodes[i].ttl <= 2000ms);
            CHECK(status->nodes[i].fence == held->fence());
        }
        CHECK_FALSE(status->nodes[4].reachable);
        CHECK_FALSE(status->nodes[4].detail.empty());
        CHECK(status->majority_holder == held->value());
        CHECK(status->fence == held->fence());
    }

    TEST_CASE_FIXTURE(cluster, "status of a free resource shows no holder and no majority") {
        auto locks = make_client();

        auto status = locks.status("nobody-holds-this");

        REQUIRE(status);
        for (const auto& n : status->nodes) {
            CHECK(n.reachable);
            CHECK_FALSE(n.holder);
            CHECK_FALSE(n.ttl);
        }
        CHECK_FALSE(status->majority_holder);
    }

    TEST_CASE_FIXTURE(cluster, "status with an empty resource is an invalid argument") {
        auto locks = make_client();

        auto status = locks.status("");

        REQUIRE_FALSE(status);
        CHECK(status.error().code == redlock::errc::invalid_argument);
    }

    TEST_CASE_FIXTURE(cluster,
                      "check reports version, role and that in-memory nodes can lose writes") {
        auto locks = make_client();
        node(0).crash();

        auto health = locks.check();

        REQUIRE(health);
        CHECK(health->quorum == 3);
        CHECK(health->reachable() == 4);
        CHECK(health->quorum_reachable());
        CHECK_FALSE(health->nodes[0].reachable);
        for (std::size_t i = 1; i < 5; ++i) {
            const auto& n = health->nodes[i];
            CHECK(n.reachable);
            CHECK(n.redis_version.starts_with("7."));
            CHECK(n.run_id.size() == 40);
            CHECK(n.role == "master");
            CHECK(n.aof_enabled == false);  // the fixture runs with --appendonly no
            CHECK(n.can_lose_writes());
            CHECK(n.round_trip > 0us);
        }
    }

    TEST_CASE_FIXTURE(cluster, "check sees a node that persists every write as safe") {
        node(2).command({"CONFIG", "SET", "appendonly", "yes"});
        node(2).command({"CONFIG", "SET", "appendfsync", "always"});
        auto locks = make_client();

        auto health = locks.check();

        REQUIRE(health);
        CHECK(health->nodes[2].aof_enabled == true);
        CHECK(health->nodes[2].appendfsync == "always");
        CHECK_FALSE(health->nodes[2].can_lose_writes());
        CHECK(health->nodes[1].can_lose_writes());
    }

    TEST_CASE_FIXTURE(cluster, "an adopted lock can be extended and released by its value alone") {
        auto owner = make_client();
        auto other_process = make_client();
        auto held = owner.acquire("orders:42");
        REQUIRE(held);
        // acquire returns at quorum; the other SETs travel on the owner's connections,
        // which the other process's release does not wait behind.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return count_holding(key_of("orders:42")) == 5; }));
        auto adopted = other_process.adopt("orders:42", held->value());
        CHECK_FALSE(adopted.valid());  // its validity is unknown until an extend succeeds

        auto extended = other_process.extend(adopted, 5s);
        auto report = other_process.release(adopted);

        REQUIRE_MESSAGE(extended, (extended ? "" : extended.error().message));
        CHECK(*extended > 4s);
        REQUIRE(report);
        CHECK(report->deleted + report->pending == 5);  // a slow node may be pending
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key_of("orders:42")) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "adopting a wrong value extends and releases nothing") {
        auto owner = make_client();
        auto held = owner.acquire("orders:42");
        REQUIRE(held);
        auto forged = owner.adopt("orders:42", "00000000000000000000000000000000");

        auto extended = owner.extend(forged, 5s);
        auto report = owner.release(forged);

        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::not_held);
        REQUIRE(report);
        CHECK(report->deleted == 0);
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return count_holding(key_of("orders:42"), held->value()) == 5;
        }));
    }
}
