// The fixtures for quorum members that are a Redis Cluster or a Sentinel-managed master,
// checked against the real processes: that they build what they say, and that their
// resharding and failover operations have taken effect when they return.
#include "support/cluster_member.hpp"
#include "support/sentinel_member.hpp"
#include "support/tls_certs.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using redlock_test::cluster_member;
using redlock_test::cluster_member_options;
using redlock_test::sentinel_member;

namespace {

auto field(const std::string& text, const std::string& name) -> std::string {
    const auto at = text.find(name + ":");
    if (at == std::string::npos) return {};
    const auto value = text.substr(at + name.size() + 1);
    return value.substr(0, value.find_first_of("\r\n"));
}

/// "-MOVED <slot> 127.0.0.1:<port>" (or -ASK) as the node at `from` answers GET `key`.
auto redirection(const std::string& kind, std::uint16_t slot, const redlock_test::redis_server& to)
    -> std::string {
    return "-" + kind + " " + std::to_string(slot) + " 127.0.0.1:" + std::to_string(to.port());
}

auto layout(int shards, int replicas) -> cluster_member_options {
    cluster_member_options options;
    options.shards = shards;
    options.replicas = replicas;
    return options;
}

/// The master's address as Sentinel `i` gives it: "127.0.0.1\n<port>".
auto named_master(const sentinel_member& m, std::size_t i) -> std::string {
    return m.sentinel(i)
        .command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", m.master_name()})
        .value_or("(nil)");
}

auto address_text(const redlock_test::redis_server& s) -> std::string {
    return "127.0.0.1\n" + std::to_string(s.port());
}

auto first_line(const std::optional<std::string>& reply) -> std::string {
    const auto text = reply.value_or("");
    return text.substr(0, text.find('\n'));
}

}  // namespace

TEST_SUITE("member fixtures") {
    TEST_CASE(
        "a cluster node keeps its nodes.conf across restart() and drops it on restart_fresh()") {
        std::filesystem::path dir;
        {
            redlock_test::redis_server node{redlock_test::server_options{},
                                            redlock_test::server_mode::cluster_node_with(1000ms)};
            dir = node.state_dir();
            REQUIRE_FALSE(dir.empty());
            CHECK(node.cluster_bus_port() != 0);
            CHECK(node.cluster_bus_port() != node.port());
            CHECK(
                std::filesystem::exists(dir / ("nodes-" + std::to_string(node.port()) + ".conf")));
            const auto id = node.command({"CLUSTER", "MYID"});
            const auto bus = node.cluster_bus_port();
            node.restart();
            CHECK(node.command({"CLUSTER", "MYID"}) == id);
            CHECK(node.cluster_bus_port() == bus);
            node.restart_fresh();
            CHECK(node.command({"CLUSTER", "MYID"}) != id);
            CHECK(node.state_dir() == dir);
        }
        CHECK_FALSE(std::filesystem::exists(dir));
    }

    TEST_CASE("a Sentinel rewrites its own sentinel.conf in its state directory") {
        const redlock_test::redis_server master;
        std::filesystem::path dir;
        {
            const redlock_test::redis_server sentinel{
                redlock_test::server_options{},
                redlock_test::server_mode::sentinel("sentinel monitor m 127.0.0.1 " +
                                                    std::to_string(master.port()) + " 1")};
            dir = sentinel.state_dir();
            CHECK(sentinel.log_file().filename() ==
                  "sentinel-" + std::to_string(sentinel.port()) + ".log");
            CHECK(sentinel.command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m"}) ==
                  "127.0.0.1\n" + std::to_string(master.port()));
            std::ifstream in{dir / "sentinel.conf"};
            const std::string text{std::istreambuf_iterator<char>{in}, {}};
            CHECK(text.find("sentinel myid ") != std::string::npos);
        }
        CHECK_FALSE(std::filesystem::exists(dir));
    }

    TEST_CASE("a 3-shard cluster member serves all 16384 slots from 3 masters") {
        cluster_member c;
        REQUIRE(c.size() == 3);
        CHECK(c.seeds().size() == 3);
        for (std::size_t i = 0; i < c.size(); ++i) {
            CHECK(c.seeds()[i].host == "127.0.0.1");
            CHECK(c.seeds()[i].port == c.node(i).port());
            CHECK(c.role(i) == "master");
            const auto info = c.node(i).command({"CLUSTER", "INFO"}).value_or("");
            CHECK(field(info, "cluster_state") == "ok");
            CHECK(field(info, "cluster_slots_assigned") == "16384");
            CHECK(field(info, "cluster_slots_ok") == "16384");
            CHECK(field(info, "cluster_size") == "3");
            CHECK(field(info, "cluster_known_nodes") == "3");
        }
        CHECK(c.master_of_slot(0) == 0);
        CHECK(c.master_of_slot(5460) == 0);
        CHECK(c.master_of_slot(5461) == 1);
        CHECK(c.master_of_slot(16383) == 2);
        // The fixture's key_slot is the server's: "{user1000}.following" and "user1000" share.
        CHECK(c.key_slot("{user1000}.following") == c.key_slot("user1000"));
        CHECK(c.key_slot("foo") == 12182);
    }

    TEST_CASE("a key written to its slot's master is served by the new master after move_slot") {
        cluster_member c;
        const std::string key = "orders:42";
        const auto slot = c.key_slot(key);
        const auto from = c.master_of_slot(slot);
        const auto to = (from + 1) % 3;
        REQUIRE(c.node(from).command({"SET", key, "alice", "PX", "60000"}) == "OK");
        c.move_slot(slot, to);
        CHECK(c.master_of_slot(slot) == to);
        CHECK(c.node(to).get(key) == "alice");
        CHECK(c.get(key) == "alice");
        CHECK(c.pttl(key) > 50000);
        CHECK(c.node(from).command({"GET", key}) == redirection("MOVED", slot, c.node(to)));
        // Every node, not just the two involved, redirects to the new owner.
        const auto third = (from + 2) % 3;
        CHECK(c.node(third).command({"GET", key}) == redirection("MOVED", slot, c.node(to)));
    }

    TEST_CASE("a slot moved in two halves answers ASK for the keys already migrated") {
        cluster_member c;
        const std::string moved = "{tag}:a";
        const std::string staying = "{tag}:b";
        const auto slot = c.key_slot(moved);
        REQUIRE(c.key_slot(staying) == slot);
        const auto from = c.master_of_slot(slot);
        const auto to = (from + 2) % 3;
        REQUIRE(c.node(from).command({"SET", moved, "1"}) == "OK");
        REQUIRE(c.node(from).command({"SET", staying, "2"}) == "OK");
        c.begin_move_slot(slot, to);
        CHECK(c.migrate_keys(slot, 1) == 1);
        // The source still serves the slot: the key it kept, and ASK for the one it gave away.
        CHECK(c.master_of_slot(slot) == from);
        const auto first = c.node(from).command({"GET", moved});
        const auto second = c.node(from).command({"GET", staying});
        const bool one_gone = (first == redirection("ASK", slot, c.node(to)) && second == "2") ||
                              (second == redirection("ASK", slot, c.node(to)) && first == "1");
        CHECK(one_gone);
        // The target redirects a plain GET to the owner (MOVED) until the move is finished.
        CHECK(c.node(to).command({"GET", moved}).value_or("").starts_with("-MOVED"));
        c.finish_move_slot(slot, to);
        CHECK(c.master_of_slot(slot) == to);
        CHECK(c.node(to).get(moved) == "1");
        CHECK(c.node(to).get(staying) == "2");
        CHECK(c.node(from).dbsize() == 0);
    }

    TEST_CASE("a key that expires between GETKEYSINSLOT and MIGRATE does not fail a slot move") {
        // The torture test's slot moves race lock keys that expire or are released (MIGRATE:
        // NOKEY, seed 4203078868). Active expiry off keeps an expired key listed until touched.
        cluster_member_options options;
        options.server.extra_args = {"--enable-debug-command", "yes"};
        cluster_member c{options};
        const std::string key = "{gone}:a";
        const auto slot = c.key_slot(key);
        const auto from = c.master_of_slot(slot);
        const auto to = (from + 1) % 3;
        REQUIRE(c.node(from).command({"DEBUG", "SET-ACTIVE-EXPIRE", "0"}) == "OK");
        REQUIRE(c.node(from).command({"SET", key, "1", "PX", "1"}) == "OK");
        std::this_thread::sleep_for(20ms);  // the clock passes the key's expiry; no event to await
        REQUIRE(c.node(from).command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) == "1");
        c.begin_move_slot(slot, to);
        CHECK(c.migrate_keys(slot, 10) == 1);  // listed, and gone when MIGRATE ran
        c.finish_move_slot(slot, to);
        CHECK(c.master_of_slot(slot) == to);
        CHECK_FALSE(c.exists(key));
    }

    TEST_CASE("manual_failover promotes the replica without losing a write") {
        cluster_member c{layout(1, 1)};
        REQUIRE(c.size() == 2);
        REQUIRE(c.replica_of(0) == 1);
        REQUIRE(c.role(1) == "slave");
        REQUIRE(c.node(0).command({"SET", "k", "v"}) == "OK");
        c.manual_failover(0);
        CHECK(c.role(1) == "master");
        CHECK(c.role(0) == "slave");
        CHECK(c.replica_of(1) == 0);
        CHECK(c.master_of_slot(0) == 1);
        CHECK(c.get("k") == "v");
        for (std::size_t i = 0; i < 2; ++i) {
            CHECK(field(c.node(i).command({"CLUSTER", "INFO"}).value_or(""), "cluster_state") ==
                  "ok");
        }
    }

    TEST_CASE(
        "forced_failover has the surviving masters elect the replica, and the old master rejoins "
        "as its replica") {
        cluster_member c{layout(3, 1)};
        REQUIRE(c.size() == 6);
        REQUIRE(c.replica_of(1) == 4);
        c.forced_failover(1);
        CHECK_FALSE(c.node(1).running());
        CHECK(c.role(4) == "master");
        CHECK(c.master_of_slot(5461) == 4);
        for (const std::size_t i : {0, 2, 3, 4, 5}) {
            CHECK(field(c.node(i).command({"CLUSTER", "INFO"}).value_or(""), "cluster_state") ==
                  "ok");
        }
        c.restart_node(1);
        CHECK(c.role(1) == "slave");
        CHECK(c.replica_of(4) == 1);
        CHECK(c.master_of_slot(5461) == 4);
    }

    TEST_CASE("forced_failover of a one-shard cluster promotes the replica by takeover") {
        cluster_member c{layout(1, 1)};
        c.forced_failover(0);
        CHECK(c.role(1) == "master");
        CHECK(c.master_of_slot(16383) == 1);
        CHECK(field(c.node(1).command({"CLUSTER", "INFO"}).value_or(""), "cluster_state") == "ok");
    }

    TEST_CASE("a cluster member with requirepass authenticates its replicas and MIGRATE") {
        auto options = layout(2, 1);
        options.server.extra_args = {"--requirepass", "s3cret"};
        options.server.password = "s3cret";
        cluster_member c{options};
        CHECK(c.role(2) == "slave");
        CHECK(field(c.node(2).command({"INFO", "replication"}).value_or(""),
                    "master_link_status") == "up");
        REQUIRE(c.node(c.master_of_slot(c.key_slot("k"))).command({"SET", "k", "v"}) == "OK");
        c.move_slot(c.key_slot("k"), 1 - c.master_of_slot(c.key_slot("k")));
        CHECK(c.get("k") == "v");
    }

    TEST_CASE("a TLS cluster member replicates, migrates and redirects over TLS only") {
        const redlock_test::tls_certs certs;
        auto options = layout(2, 1);
        options.server.tls = redlock_test::tls_listener{.cert_file = certs.server_cert(),
                                                        .key_file = certs.server_key(),
                                                        .ca_file = certs.ca(),
                                                        .auth_clients = true,
                                                        .client_cert_file = certs.client_cert(),
                                                        .client_key_file = certs.client_key()};
        cluster_member c{options};
        CHECK(c.role(2) == "slave");
        CHECK(c.role(3) == "slave");
        const auto slot = c.key_slot("k");
        const auto from = c.master_of_slot(slot);
        REQUIRE(c.node(from).command({"SET", "k", "v"}) == "OK");
        c.move_slot(slot, 1 - from);
        CHECK(c.get("k") == "v");
        // The TLS port is the one announced: a plain port would be 0 here.
        CHECK(c.node(from).command({"GET", "k"}) == redirection("MOVED", slot, c.node(1 - from)));
    }

    TEST_CASE("a sentinel member's Sentinels know the master, its replica and each other") {
        sentinel_member m;
        CHECK(m.master_name() == "redlock-m");
        CHECK(m.master_index() == 0);
        REQUIRE(m.sentinels().size() == 3);
        for (std::size_t i = 0; i < 3; ++i) {
            CHECK(m.sentinels()[i].host == "127.0.0.1");
            CHECK(m.sentinels()[i].port == m.sentinel(i).port());
            CHECK(named_master(m, i) == address_text(m.server(0)));
            const auto info = m.sentinel(i).command({"INFO", "sentinel"}).value_or("");
            CHECK(info.find("name=redlock-m,status=ok,address=127.0.0.1:" +
                            std::to_string(m.server(0).port()) + ",slaves=1,sentinels=3") !=
                  std::string::npos);
        }
        CHECK(first_line(m.server(0).command({"ROLE"})) == "master");
        CHECK(first_line(m.server(1).command({"ROLE"})) == "slave");
        CHECK(m.sentinel(0).log_file().filename().string().starts_with("sentinel-"));
    }

    TEST_CASE("sentinel failover() switches every Sentinel to the replica") {
        sentinel_member m;
        REQUIRE(m.server(0).command({"SET", "k", "v"}) == "OK");
        REQUIRE(m.server(0).command({"WAIT", "1", "2000"}) == "1");
        m.failover();
        CHECK(m.master_index() == 1);
        for (std::size_t i = 0; i < 3; ++i) CHECK(named_master(m, i) == address_text(m.server(1)));
        CHECK(first_line(m.server(1).command({"ROLE"})) == "master");
        CHECK(first_line(m.server(0).command({"ROLE"})) == "slave");
        CHECK(m.server(1).get("k") == "v");
    }

    TEST_CASE("sentinel kill_master() has the Sentinels promote the replica") {
        sentinel_member m;
        m.kill_master();
        CHECK_FALSE(m.server(0).running());
        CHECK(m.master_index() == 1);
        for (std::size_t i = 0; i < 3; ++i) CHECK(named_master(m, i) == address_text(m.server(1)));
        CHECK(first_line(m.server(1).command({"ROLE"})) == "master");
        m.restart_server(0);
        CHECK(first_line(m.server(0).command({"ROLE"})) == "slave");
        CHECK(m.master_index() == 1);
    }

    TEST_CASE("a sentinel member over TLS with requirepass fails over like a plain one") {
        const redlock_test::tls_certs certs;
        redlock_test::sentinel_member_options options;
        options.master_name = "tls-m";
        options.server.extra_args = {"--requirepass", "s3cret"};
        options.server.password = "s3cret";
        options.server.tls = redlock_test::tls_listener{.cert_file = certs.server_cert(),
                                                        .key_file = certs.server_key(),
                                                        .ca_file = certs.ca(),
                                                        .auth_clients = true,
                                                        .client_cert_file = certs.client_cert(),
                                                        .client_key_file = certs.client_key()};
        sentinel_member m{options};
        for (std::size_t i = 0; i < 3; ++i) {
            // The Sentinels reached the master over TLS with the password, found its replica
            // (from the master's INFO) and each other (over the master's hello channel).
            const auto info = m.sentinel(i).command({"INFO", "sentinel"}).value_or("");
            CHECK(info.find("name=tls-m,status=ok,address=127.0.0.1:" +
                            std::to_string(m.server(0).port()) + ",slaves=1,sentinels=3") !=
                  std::string::npos);
        }
        m.failover();
        CHECK(m.master_index() == 1);
        CHECK(first_line(m.server(1).command({"ROLE"})) == "master");
        CHECK(first_line(m.server(0).command({"ROLE"})) == "slave");
    }
}
