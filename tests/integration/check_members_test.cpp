// client::check on cluster and Sentinel members (issue 38, items 4 to 6), against real Redis
// Clusters and Sentinel groups on loopback ports: every master of a cluster is probed (a master
// other than the seed that can lose writes, a master that is down and the cluster_state:fail
// it causes, told from up); a member that can never serve as configured is named, and an
// acquisition short of its quorum through it is invalid_config; replicas without wait_replicas
// are warned of; the failovers the servers report are shown.

#include "support/cluster.hpp"
#include "support/cluster_member.hpp"
#include "support/redis_server.hpp"
#include "support/sentinel_member.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster_member;
using redlock_test::sentinel_member;

namespace {

auto member_of(const cluster_member& c, int wait_replicas = 0) -> redlock::cluster_member {
    redlock::cluster_member m;
    m.seeds = c.seeds();
    m.wait_replicas = wait_replicas;
    return m;
}

auto member_of(const sentinel_member& s, int wait_replicas = 0, std::string name = {})
    -> redlock::sentinel_member {
    redlock::sentinel_member m;
    m.sentinels = s.sentinels();
    m.master_name = name.empty() ? s.master_name() : std::move(name);
    m.wait_replicas = wait_replicas;
    return m;
}

/// The test settings, with the room routed members need for their first map or master.
auto check_config(std::vector<redlock::node_address> nodes) -> redlock::client_config {
    redlock::client_config config = redlock_test::fixture_config(std::move(nodes));
    config.request_timeout = redlock_test::scaled(300ms);
    config.connect_timeout = redlock_test::scaled(1000ms);
    return config;
}

auto has(const std::vector<std::string>& lines, const std::string& part) -> bool {
    for (const auto& l : lines)
        if (l.find(part) != std::string::npos) return true;
    return false;
}

auto check_of(const redlock::client_config& config) -> redlock::cluster_health {
    auto client = redlock_test::create_client(config);
    auto health = client.check();
    REQUIRE_MESSAGE(health, (health ? "" : health.error().message));
    return *health;
}

void persist_every_write(const redlock_test::redis_server& server) {
    REQUIRE(server.command({"CONFIG", "SET", "appendonly", "yes"}));
    REQUIRE(server.command({"CONFIG", "SET", "appendfsync", "always"}));
}

}  // namespace

TEST_SUITE("check members") {
    TEST_CASE(
        "check probes every master of a cluster member: a non-seed master that can lose "
        "writes, and one that is down, with cluster_state:fail, told from up") {
        redlock_test::cluster standalone{2};
        cluster_member shards{{.shards = 3, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
        for (std::size_t i = 0; i < 3; ++i) persist_every_write(shards.node(i));
        redlock::client_config config = check_config(standalone.config().nodes);
        config.clusters = {member_of(shards)};

        auto health = check_of(config);
        REQUIRE(health.nodes.size() == 3);
        const redlock::node_health* member = &health.nodes[2];
        CHECK(member->serving());
        REQUIRE(member->masters.size() == 3);
        for (const auto& m : member->masters) {
            CAPTURE(m.address);
            CHECK(m.reachable);
            CHECK(m.slot_count > 5000);
            CHECK_FALSE(m.can_lose_writes());
        }
        CHECK(member->cluster_state == "ok");
        CHECK(member->unserved_slot_count == 0);
        CHECK_FALSE(member->can_lose_writes());
        CHECK(member->warnings.empty());  // no replica, nothing weaker than the README says

        // appendfsync everysec on a master that is not the seed: the member can lose writes.
        const std::string second = shards.node(1).address().to_string();
        REQUIRE(shards.node(1).command({"CONFIG", "SET", "appendfsync", "everysec"}));
        health = check_of(config);
        member = &health.nodes[2];
        CHECK(member->can_lose_writes());
        CHECK(member->masters.at(1).address == second);
        CHECK(member->masters.at(1).appendfsync == "everysec");

        // That master dies: its cluster fails, and check says so, master by master.
        const std::string slots = member->masters.at(1).slots;
        shards.node(1).crash();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(15s), [&] {
            const auto info = shards.node(0).command({"CLUSTER", "INFO"});
            return info && info->find("cluster_state:fail") != std::string::npos;
        }));
        health = check_of(config);
        member = &health.nodes[2];
        CHECK(member->reachable);
        CHECK_FALSE(member->serving());
        CHECK(member->cluster_state == "fail");
        CHECK(member->unserved_slots == slots);
        REQUIRE(member->masters.size() == 3);
        CHECK_FALSE(member->masters[1].reachable);
        CHECK_FALSE(member->masters[1].detail.empty());
        CHECK(member->masters[0].reachable);
        CHECK(member->masters[2].reachable);
        CHECK(has(member->problems, "master " + second + " is down ("));
        CHECK(has(member->problems, "cluster_state:fail"));
        CHECK(has(member->topology, "master " + second + ": "));
        CHECK(has(member->topology, "DOWN ("));
        CHECK_FALSE(has(member->topology, "not connected"));
        CHECK(has(member->failovers, "master " + second + " failed (flagged fail"));
        // Two standalone masters still make the quorum, the cluster member does not count.
        CHECK(health.serving() == 2);
        CHECK(health.reachable() == 3);
        CHECK(health.quorum_reachable());
        CHECK(health.misconfigured() == 0);
    }

    TEST_CASE(
        "check on a cluster member with replicas: the warning without wait_replicas, a "
        "wait_replicas it cannot meet, and the failover its nodes report") {
        cluster_member shards{{.shards = 3, .replicas = 1, .node_timeout = 1000ms, .server = {}}};
        redlock::client_config config = check_config({});
        config.clusters = {member_of(shards)};
        auto health = check_of(config);
        const redlock::node_health* member = &health.nodes.at(0);
        CHECK(member->serving());
        REQUIRE(member->masters.size() == 3);
        for (const auto& m : member->masters) {
            CAPTURE(m.address);
            REQUIRE(m.replicas.size() == 1);
            CHECK(m.replicas[0].address.starts_with("127.0.0.1:"));
            CHECK(m.replicas[0].state == "online");
        }
        CHECK(has(member->warnings, "a client started after the failover cannot see it"));
        CHECK(member->configuration_errors.empty());

        config.clusters = {member_of(shards, 1)};
        health = check_of(config);
        CHECK(health.nodes[0].warnings.empty());
        CHECK(health.nodes[0].configuration_errors.empty());
        CHECK(health.nodes[0].serving());

        config.clusters = {member_of(shards, 2)};
        health = check_of(config);
        CHECK(health.misconfigured() == 1);
        CHECK(has(health.nodes[0].configuration_errors, "wait_replicas 2, but master "));
        CHECK(has(health.nodes[0].configuration_errors, " has 1 replica"));

        // Master 0 crashes; its replica takes its slots. The cluster remembers the old master
        // as failed and without slots: a failover, read from the servers.
        const std::string old_master = shards.node(0).address().to_string();
        shards.forced_failover(0);
        config.clusters = {member_of(shards)};
        health = check_of(config);
        member = &health.nodes.at(0);
        CHECK(member->serving());
        CHECK(has(member->failovers, "former master " + old_master + " failed"));
        CHECK(has(member->failovers, "a failover gave its slots to a replica"));
    }

    TEST_CASE(
        "check on a Sentinel member: its master, replicas and sentinels, how long ago the "
        "master took its role, the warning without wait_replicas") {
        sentinel_member managed;
        redlock::client_config config = check_config({});
        config.sentinel_masters = {member_of(managed)};
        auto client = redlock_test::create_client(config);
        auto health = client.check();
        REQUIRE(health);
        const redlock::node_health& member = health->nodes.at(0);
        CHECK(member.serving());
        REQUIRE(member.masters.size() == 1);
        CHECK(member.masters[0].address ==
              managed.server(managed.master_index()).address().to_string());
        REQUIRE(member.masters[0].replicas.size() == 1);
        CHECK(member.masters[0].replicas[0].state == "online");
        CHECK(has(member.topology, "3 of 3 sentinels answering"));
        CHECK(has(member.failovers, "no failover since the sentinels began to monitor"));
        CHECK(has(member.warnings,
                  "its masters have replicas (1 in all) and it has no "
                  "wait_replicas"));

        managed.failover();
        const std::string promoted = managed.server(managed.master_index()).address().to_string();
        // The client follows +switch-master; check reads what the sentinels say since.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            auto again = client.check();
            return again &&
                   has(again->nodes.at(0).failovers, "master " + promoted + " took its role ");
        }));
        health = client.check();
        REQUIRE(health);
        CHECK(has(health->nodes.at(0).failovers, "chosen by a failover"));

        config.sentinel_masters = {member_of(managed, 1)};
        const auto one = check_of(config);
        CHECK(one.nodes.at(0).warnings.empty());
        CHECK(one.nodes.at(0).configuration_errors.empty());
        config.sentinel_masters = {member_of(managed, 2)};
        const auto two = check_of(config);
        CHECK(has(two.nodes.at(0).configuration_errors, "wait_replicas 2, but master "));
    }

    TEST_CASE(
        "a member that can never serve as configured: check names it, and an acquisition "
        "short of its quorum through it is invalid_config") {
        redlock_test::cluster standalone{2};
        sentinel_member managed;
        // A seed that is a standalone master, not a cluster node.
        redlock::client_config config = check_config({standalone[0].address()});
        redlock::cluster_member not_a_cluster;
        not_a_cluster.seeds = {standalone[1].address()};
        config.clusters = {not_a_cluster};
        config.sentinel_masters = {member_of(managed, 0, "nobody-monitors-this")};
        auto client = redlock_test::create_client(config);
        auto health = client.check();
        REQUIRE(health);
        CHECK(health->misconfigured() == 2);
        CHECK(has(health->nodes.at(1).configuration_errors, "is not in cluster mode"));
        CHECK(has(health->nodes.at(2).configuration_errors,
                  "no sentinel knows a master named \"nobody-monitors-this\""));
        CHECK_FALSE(health->quorum_reachable());

        auto held = client.acquire("deploy", {.ttl = 5s});
        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::invalid_config);
        CHECK(held.error().message.starts_with("configuration: "));
        CHECK(held.error().message.find("cluster " + standalone[1].address().to_string()) !=
              std::string::npos);
    }
}
