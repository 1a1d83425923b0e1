// client::check's reading of a cluster or Sentinel member, without sockets (issue 38, items 4
// to 6): what check_op collected, handed to parse_members as canned replies. Every master of a
// cluster judged, the slots nobody serves, cluster_state, down told from up; the configuration
// errors that make check exit 78 (and acquire say invalid_config), read from the handshake's
// own words; the warning of replicas without wait_replicas; the failovers the servers report.

#include "client/diagnostics_members.hpp"
#include "node_handshake_model.hpp"
#include "sansio/member_misconfig.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock::detail::flat_reply;
using redlock::detail::member_check;
using redlock::detail::member_kind;
using redlock::detail::member_setup;
using redlock::detail::node_probe;
using redlock::detail::slot_run;

namespace {

auto text(std::string t) -> flat_reply {
    flat_reply r;
    r.type = flat_reply::kind::text;
    r.text = std::move(t);
    return r;
}

auto error_reply(std::string t) -> flat_reply {
    flat_reply r;
    r.type = flat_reply::kind::error;
    r.text = std::move(t);
    return r;
}

auto array(std::vector<flat_reply> elements) -> flat_reply {
    flat_reply r;
    r.type = flat_reply::kind::array;
    r.elements = std::move(elements);
    return r;
}

auto fields(const std::vector<std::string>& pairs) -> flat_reply {
    std::vector<flat_reply> out;
    for (const auto& p : pairs) out.push_back(text(p));
    return array(std::move(out));
}

constexpr auto now_ms = 1'700'000'000'000ULL;

/// What a master answers check_plan's commands: INFO server / persistence / replication,
/// CONFIG GET appendfsync, and for a cluster node CLUSTER INFO and CLUSTER NODES.
auto master_probe(const std::string& address, const std::string& appendfsync,
                  const std::string& replicas_info, const std::string& state = "",
                  const std::string& nodes = "") -> node_probe {
    node_probe p;
    p.node = address;
    p.answered = true;
    p.round_trip = 300us;
    p.replies = {
        text("# Server\r\nredis_version:7.0.15\r\nrun_id:" + std::string(40, address.back()) +
             "\r\nserver_time_usec:" + std::to_string(now_ms * 1000) + "\r\n"),
        text("# Persistence\r\naof_enabled:1\r\n"),
        text("# Replication\r\nrole:master\r\n" + replicas_info),
        array({text("appendfsync"), text(appendfsync)}),
    };
    if (!state.empty()) {
        p.replies.push_back(
            text("cluster_state:" + state + "\r\ncluster_slots_assigned:16384\r\n"));
        p.replies.push_back(text(nodes));
    }
    return p;
}

auto down_probe(const std::string& address, const std::string& cause, std::size_t commands)
    -> node_probe {
    node_probe p;
    p.node = address;
    p.cause = cause;
    p.replies.resize(commands);
    return p;
}

// Three masters (a, b, c) with a replica each; b is dead, c's replica took nothing yet.
const std::string three_nodes =
    "aaa 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n"
    "bbb 127.0.0.1:7002@17002,host-b master,fail - 1699999999000 " +
    std::to_string(now_ms - 12'000) +
    " 2 disconnected 5461-10922\n"
    "ccc 127.0.0.1:7003@17003 master - 0 0 3 connected 10923-16383 [16383->-aaa]\n"
    "ddd 127.0.0.1:7004@17004 slave aaa 0 0 1 connected\n"
    "eee 127.0.0.1:7005@17005 slave bbb 0 0 2 connected\n"
    "fff 127.0.0.1:7006@17006 slave,fail ccc 0 0 3 disconnected\n";

const std::string one_replica =
    "connected_slaves:1\r\nslave0:ip=127.0.0.1,port=7004,state=online,"
    "offset=42,lag=0\r\n";

auto three_masters() -> member_check {
    member_check c;
    c.kind = member_kind::cluster;
    c.member = master_probe("cluster 127.0.0.1:7001", "always", one_replica, "fail", three_nodes);
    c.member_server = "127.0.0.1:7001";
    c.map = {{0, 5460, "127.0.0.1:7001", 0ms},
             {5461, 10922, "127.0.0.1:7002", 0ms},
             {10923, 16383, "127.0.0.1:7003", 0ms}};
    c.masters = {
        down_probe("127.0.0.1:7002", "cannot connect: connection refused", 6),
        master_probe("127.0.0.1:7003", "everysec", "connected_slaves:0\r\n", "fail", three_nodes)};
    return c;
}

auto contains(const std::vector<std::string>& lines, const std::string& part) -> bool {
    for (const auto& l : lines)
        if (l.find(part) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_SUITE("check members") {
    TEST_CASE("CLUSTER NODES is read: addresses without bus port or hostname, flags, slots") {
        const auto entries = redlock::detail::read_cluster_nodes(three_nodes);
        REQUIRE(entries.size() == 6);
        CHECK(entries[0].myself);
        CHECK(entries[0].master);
        CHECK(entries[0].slot_count == 5461);
        CHECK(entries[1].address == "127.0.0.1:7002");
        CHECK(entries[1].failed);
        CHECK(entries[1].pong_received_ms == now_ms - 12'000);
        CHECK(entries[2].slot_count == 5461);  // a migrating mark is no slot
        CHECK(entries[5].master_id == "ccc");
        CHECK_FALSE(entries[5].master);
        CHECK(entries[5].failed);
    }

    TEST_CASE("every master of a cluster is judged: one down, cluster_state:fail, not serving") {
        auto health =
            redlock::detail::parse_members(1, {{member_kind::cluster, 0, {}}}, {three_masters()});
        REQUIRE(health.nodes.size() == 1);
        const auto& n = health.nodes[0];
        CHECK(n.reachable);
        CHECK_FALSE(n.serving());
        CHECK_FALSE(health.quorum_reachable());
        REQUIRE(n.masters.size() == 3);
        CHECK(n.masters[0].slots == "0-5460");
        CHECK(n.masters[1].address == "127.0.0.1:7002");
        CHECK_FALSE(n.masters[1].reachable);
        CHECK(n.masters[2].appendfsync == "everysec");
        // A master other than the first one that can lose writes makes the member unsafe.
        CHECK(n.can_lose_writes());
        CHECK(n.cluster_state == "fail");
        CHECK(n.unserved_slots == "5461-10922");
        CHECK(n.unserved_slot_count == 5462);
        CHECK(contains(n.problems,
                       "master 127.0.0.1:7002 is down (cannot connect: connection "
                       "refused): slots 5461-10922 cannot be locked"));
        CHECK(contains(n.problems, "cluster_state:fail"));
        // Down is told from up, never "not connected".
        REQUIRE(n.topology.size() >= 4);
        CHECK(n.topology[0].starts_with("master 127.0.0.1:7001: 5461 slots (0-5460), up"));
        CHECK(n.topology[1].find("DOWN (cannot connect: connection refused), flagged failed by "
                                 "its cluster") != std::string::npos);
        CHECK(n.topology[2].find("CAN LOSE WRITES (appendfsync everysec)") != std::string::npos);
        CHECK(contains(n.topology, "cluster_state:fail, 10922 of 16384 slots served"));
        // Replicas, as the cluster and each master say.
        CHECK(n.topology[0].find("replicas 127.0.0.1:7004 (online, lag 0 s)") != std::string::npos);
        CHECK(n.topology[2].find("replicas 127.0.0.1:7006 (down)") != std::string::npos);
        // The failover the cluster shows: b failed with its slots, none taken over yet.
        CHECK(contains(n.failovers,
                       "master 127.0.0.1:7002 failed (flagged fail, last heard 12 s "
                       "ago): no replica has taken its 5462 slots yet"));
        // Replicas and no wait_replicas: the README's rule, as a warning.
        CHECK(contains(n.warnings, "a client started after the failover cannot see it"));
        CHECK(n.configuration_errors.empty());
    }

    TEST_CASE("slots in no master's range are unserved, and a healthy cluster serves") {
        member_check c;
        c.kind = member_kind::cluster;
        const std::string nodes = "aaa 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-9\n";
        c.member = master_probe("cluster 127.0.0.1:7001", "always", "", "ok", nodes);
        c.member_server = "127.0.0.1:7001";
        c.map = {{0, 9, "127.0.0.1:7001", 0ms}, {10, 16383, "", 0ms}};
        auto gap = redlock::detail::parse_members(1, {{member_kind::cluster, 0, {}}}, {c});
        CHECK(gap.nodes[0].unserved_slots == "10-16383");
        CHECK(contains(gap.nodes[0].problems, "slots 10-16383 are in no master's range"));
        CHECK(contains(gap.nodes[0].topology, "no master: slots 10-16383"));
        CHECK(gap.nodes[0].warnings.empty());  // no replica, nothing to warn of

        c.map = {{0, 16383, "127.0.0.1:7001", 0ms}};
        auto whole = redlock::detail::parse_members(1, {{member_kind::cluster, 0, {}}}, {c});
        CHECK(whole.nodes[0].serving());
        CHECK(whole.quorum_reachable());
        CHECK(whole.nodes[0].topology.at(0) ==
              "master 127.0.0.1:7001: 16384 slots (0-16383), up, no replica");
    }

    TEST_CASE(
        "wait_replicas above a master's replicas is a configuration error, and replicas "
        "down are a problem") {
        member_check c = three_masters();
        c.masters.at(0) = master_probe("127.0.0.1:7002", "always", "", "ok", three_nodes);
        auto two = redlock::detail::parse_members(1, {{member_kind::cluster, 2, {}}}, {c});
        CHECK(contains(two.nodes[0].configuration_errors,
                       "wait_replicas 2, but master 127.0.0.1:7001 has 1 replica: not all of "
                       "the 2 replicas wait_replicas asks for can ever acknowledge a write"));
        CHECK(two.misconfigured() == 1);
        CHECK(two.nodes[0].warnings.empty());  // wait_replicas is set
        auto one = redlock::detail::parse_members(1, {{member_kind::cluster, 1, {}}}, {c});
        CHECK(one.nodes[0].configuration_errors.empty());
        // 7003's replica is flagged failed: known, not streaming.
        CHECK(contains(one.nodes[0].problems,
                       "master 127.0.0.1:7003 has 0 of its 1 replicas "
                       "streaming, and wait_replicas 1"));
    }

    TEST_CASE("a cluster member without a slot map: why, and whether it is configuration") {
        member_check c;
        c.kind = member_kind::cluster;
        c.member = down_probe("cluster 127.0.0.1:7001",
                              "no slot map from any seed (127.0.0.1:7001: is not in cluster mode "
                              "(cluster_enabled:0): a seed of a \"clusters\" member must be a "
                              "Redis Cluster node; list a standalone master under \"nodes\")",
                              6);
        auto health = redlock::detail::parse_members(1, {{member_kind::cluster, 0, {}}}, {c});
        CHECK_FALSE(health.nodes[0].reachable);
        CHECK(health.misconfigured() == 1);
        c.member.cause = "no slot map from any seed (127.0.0.1:7001: cannot connect: refused)";
        health = redlock::detail::parse_members(1, {{member_kind::cluster, 0, {}}}, {c});
        CHECK(health.misconfigured() == 0);
    }

    TEST_CASE("a Sentinel member: a master name no sentinel knows is a configuration error") {
        member_check c;
        c.kind = member_kind::sentinel;
        c.member = down_probe("sentinel master \"nope\"", "no sentinel named the master", 4);
        for (int i = 0; i < 3; ++i) {
            node_probe s;
            s.node = "127.0.0.1:2638" + std::to_string(i);
            s.answered = true;
            s.replies = {error_reply("ERR No such master with that name"),
                         error_reply("ERR No such master with that name")};
            c.sentinels.push_back(s);
        }
        c.sentinels[2] = down_probe("127.0.0.1:26382", "cannot connect: refused", 2);
        const member_setup setup{member_kind::sentinel, 0, "nope"};
        auto health = redlock::detail::parse_members(1, {setup}, {c});
        REQUIRE(health.nodes[0].configuration_errors.size() == 1);
        CHECK(health.nodes[0].configuration_errors[0] ==
              "no sentinel knows a master named \"nope\": the 2 of 3 that answered say \"No "
              "such master with that name\" (SENTINEL MASTER)");
        CHECK(contains(health.nodes[0].topology, "2 of 3 sentinels answering, 0 know \"nope\""));
    }

    TEST_CASE(
        "a Sentinel member: how long ago the master took its role, replicas without "
        "wait_replicas warn, and wait_replicas above them is configuration") {
        member_check c;
        c.kind = member_kind::sentinel;
        c.member = master_probe("sentinel master \"m\"", "always", one_replica);
        c.member_server = "127.0.0.1:7001";
        node_probe s;
        s.node = "127.0.0.1:26379";
        s.answered = true;
        s.replies = {
            fields({"name", "m", "ip", "127.0.0.1", "port", "7001", "flags", "master",
                    "role-reported-time", "125000", "config-epoch", "2", "num-slaves", "1"}),
            array({fields({"ip", "127.0.0.1", "port", "7004", "flags", "slave"})})};
        c.sentinels = {s};
        auto plain = redlock::detail::parse_members(1, {{member_kind::sentinel, 0, "m"}}, {c});
        const auto& n = plain.nodes[0];
        CHECK(n.serving());
        CHECK(n.topology.at(0) ==
              "master \"m\" at 127.0.0.1:7001: up, replicas 127.0.0.1:7004 "
              "(online, lag 0 s)");
        CHECK(contains(n.failovers,
                       "master 127.0.0.1:7001 took its role 2 min 5 s ago, as "
                       "sentinel 127.0.0.1:26379 saw it (config-epoch 2: chosen by a "
                       "failover)"));
        CHECK(contains(n.warnings,
                       "its masters have replicas (1 in all) and it has no "
                       "wait_replicas"));
        auto two = redlock::detail::parse_members(1, {{member_kind::sentinel, 2, "m"}}, {c});
        CHECK(contains(two.nodes[0].configuration_errors,
                       "wait_replicas 2, but master \"m\" at 127.0.0.1:7001 has 1 replica"));
        CHECK(two.nodes[0].warnings.empty());

        s.replies[0] = fields({"ip", "127.0.0.1", "port", "7001", "flags", "master",
                               "role-reported-time", "4000", "config-epoch", "0"});
        c.sentinels = {s};
        auto first = redlock::detail::parse_members(1, {{member_kind::sentinel, 1, "m"}}, {c});
        CHECK(contains(first.nodes[0].failovers,
                       "no failover since the sentinels began to monitor \"m\" (config-epoch 0); "
                       "127.0.0.1:7001 has been its master for 4 s at least"));
    }

    TEST_CASE("the handshake's words for a member set up wrong are configuration causes") {
        using peer = redlock::detail::node_handshake::peer;
        struct row {
            peer expected;
            const char* cluster_enabled;
        };
        for (const row r : {row{peer::cluster_node, "0"}, row{peer::standalone, "1"}}) {
            redlock_test::node_model node;
            node.cluster_enabled = r.cluster_enabled;
            redlock::detail::node_handshake hs;
            hs.expect(r.expected);
            redlock::client_config config;
            const auto run = redlock_test::play(hs, config, node);
            CAPTURE(run.cause);
            CHECK(redlock::detail::configuration_cause(run.cause));
        }
        CHECK_FALSE(redlock::detail::configuration_cause("cannot connect: connection refused"));
        CHECK_FALSE(redlock::detail::configuration_cause("is a replica (role:slave)"));
    }

    TEST_CASE("an acquisition short of its quorum through such a member is invalid_config") {
        redlock::error e{make_error_code(redlock::errc::quorum_unreachable),
                         "resource 'x' ...",
                         {{"127.0.0.1:7001", redlock::node_status::unreachable, "refused"},
                          {"cluster 127.0.0.1:7003", redlock::node_status::unreachable,
                           "no slot map from any seed (127.0.0.1:7003: is not in cluster mode "
                           "(cluster_enabled:0): …)"}},
                         1};
        const auto changed = redlock::detail::configuration_failure(e);
        CHECK(changed.code == redlock::errc::invalid_config);
        CHECK(
            changed.message.starts_with("configuration: cluster 127.0.0.1:7003 can never grant "
                                        "a lock as configured"));
        CHECK(changed.nodes.size() == 2);
        e.nodes.pop_back();
        CHECK(redlock::detail::configuration_failure(e).code == redlock::errc::quorum_unreachable);
        e.code = make_error_code(redlock::errc::contended);
        CHECK(redlock::detail::configuration_failure(e).code == redlock::errc::contended);
    }
}
