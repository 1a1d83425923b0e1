// A cluster member's first lock in a fresh client (issue 38, items 1-3): a seed that a
// failover made a replica still gives the slot map, the seeds are asked at once, a
// majority's grant waits for a member still connecting (acquire_settling.cpp) so that a
// one-shot process's lock is on every member it can reach, and a member left out of a
// grant is logged once and counted. Real redis-server processes, Redis Clusters built by
// tests/support/cluster_member.

#include "sansio/hash_slot.hpp"
#include "support/cluster.hpp"
#include "support/cluster_member.hpp"
#include "support/fault_proxy.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"
#include "support/slowdown.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>
#include <redlock/metrics.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster_member;
using redlock_test::lock_key;

namespace {

/// Two standalone masters and the cluster seeded with `seeds`: three members, so a
/// majority is two and the standalone masters alone could decide without the cluster.
auto three_members(const redlock_test::cluster& standalone,
                   std::vector<redlock::node_address> seeds) -> redlock::client_config {
    redlock::client_config config = standalone.config();
    redlock::cluster_member member;
    member.seeds = std::move(seeds);
    config.clusters = {member};
    config.request_timeout = redlock_test::scaled(200ms);
    // The first lock waits at most 2 x (connect + request timeout) for a member still
    // connecting (and half the TTL): room for a machine far busier than an idle one.
    config.connect_timeout = redlock_test::scaled(2s);
    return config;
}

/// The cluster member's grants missed so far, from the client's metrics.
auto missed_on(redlock::client& client, std::size_t member) -> std::uint64_t {
    return client.metrics().nodes.at(member).grants_missed;
}

}  // namespace

TEST_SUITE("cluster members: the first lock") {
    TEST_CASE(
        "a seed that a failover made a replica still maps its cluster: ten fresh "
        "clients' first locks are on every member") {
        redlock_test::cluster standalone{2};
        cluster_member shards{{.shards = 1, .replicas = 1, .node_timeout = 1000ms, .server = {}}};
        shards.manual_failover(0);
        REQUIRE(shards.role(0) == "slave");
        // The demoted master is the only seed: it gives the map, and takes no lock.
        const auto config = three_members(standalone, {shards.node(0).address()});
        for (int i = 0; i < 10; ++i) {
            auto client = redlock_test::create_client(config);  // fresh: no warm-up
            const std::string r = "first-lock:" + std::to_string(i);
            auto held = client.acquire(r, {.ttl = 5s});
            REQUIRE(held);
            // On every member when acquire returns, not only on the standalone majority.
            CHECK(shards.get(lock_key(r)) == held->value());
            CHECK(standalone.count_holding(lock_key(r), held->value()) == 2);
            CHECK(missed_on(client, 2) == 0);
            REQUIRE(client.release(*held));
        }
    }

    TEST_CASE("a fresh client's first lock waits for the cluster member's map and master") {
        redlock_test::cluster standalone{2};
        cluster_member shards{{.shards = 3, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
        const auto config = three_members(standalone, shards.seeds());
        for (int i = 0; i < 5; ++i) {
            auto client = redlock_test::create_client(config);
            const std::string r = "settle:" + std::to_string(i);
            auto held = client.acquire(r, {.ttl = 5s});
            REQUIRE(held);
            CHECK(shards.get(lock_key(r)) == held->value());
            REQUIRE(client.release(*held));
        }
    }

    TEST_CASE("the seeds are asked at once: a hung first seed does not hold up the map") {
        redlock_test::cluster standalone{2};
        cluster_member shards{{.shards = 3, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
        redlock_test::fault_proxy hung{shards.node(0).port()};
        hung.blackhole();
        auto config = three_members(standalone, {hung.address(), shards.node(1).address()});
        // Asked in turn, the hung seed would cost a whole connect timeout first.
        config.connect_timeout = redlock_test::scaled(3s);
        auto client = redlock_test::create_client(config);
        const auto started = std::chrono::steady_clock::now();
        auto held = client.acquire("at-once", {.ttl = 10s});
        const auto took = std::chrono::steady_clock::now() - started;
        REQUIRE(held);
        CHECK(shards.get(lock_key("at-once")) == held->value());
        CHECK(took < redlock_test::scaled(1500ms));  // about ten round trips, not 3 s
        REQUIRE(client.release(*held));
    }

    TEST_CASE("a member no seed can map fails with every seed named, and why") {
        redlock_test::redis_server standalone_seed;
        const std::uint16_t closed = redlock_test::free_port();
        redlock::cluster_member member;
        redlock::node_address nobody = standalone_seed.address();
        nobody.port = closed;
        member.seeds = {standalone_seed.address(), nobody};
        auto config = redlock_test::fixture_config({});
        config.clusters = {member};
        auto client = redlock_test::create_client(config);
        auto l = client.acquire("nowhere", {.ttl = 1s});
        REQUIRE_FALSE(l);
        const std::string text = to_string(l.error());
        INFO(text);
        CHECK(text.find("no slot map from any seed") != std::string::npos);
        CHECK(text.find("127.0.0.1:" + std::to_string(standalone_seed.port()) +
                        ": is not in cluster mode") != std::string::npos);
        CHECK(text.find("127.0.0.1:" + std::to_string(closed) + ":") != std::string::npos);
    }

    TEST_CASE("a member left out of a grant is logged once, and counted every time") {
        redlock_test::cluster standalone{3};
        standalone[2].crash();
        redlock_test::log_capture log;
        auto config = standalone.config();
        config.logger = log.logger();
        auto client = redlock_test::create_client(config);
        for (int i = 0; i < 3; ++i) {
            auto held = client.acquire("left-out:" + std::to_string(i), {.ttl = 5s});
            REQUIRE(held);
            REQUIRE(client.release(*held));
        }
        CHECK(missed_on(client, 2) == 3);
        CHECK(missed_on(client, 0) == 0);
        CHECK(missed_on(client, 1) == 0);
        std::size_t told = 0;
        for (const auto& line : log.lines()) {
            if (line.text.find("a lock was granted without this member") == std::string::npos)
                continue;
            ++told;
            CHECK(line.level == redlock::log_level::warning);
            CHECK(line.text.find(std::to_string(standalone[2].port())) != std::string::npos);
        }
        CHECK(told == 1);
        const std::string text = redlock::to_prometheus(client.metrics());
        CHECK(text.find("redlock_node_grants_missed_total{node=\"127.0.0.1:" +
                        std::to_string(standalone[2].port()) + "\"} 3") != std::string::npos);
    }
}
