// A cluster member's decisions without a cluster: reading CLUSTER SLOTS and the
// redirections, and the failover rule (which slots stop counting, for how long),
// enumerated over every way a slot's master can change.

#include "sansio/cluster_routing.hpp"

#include "reply_tree.hpp"
#include "sansio/cluster_replies.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock::detail::cluster_node;
using redlock::detail::cluster_routing;
using redlock::detail::read_cluster_slots;
using redlock::detail::read_redirection;
using redlock::detail::redirection;
using redlock::detail::slot_layout;
using redlock::detail::slot_range;
using redlock_test::reply_tree;

namespace {

auto node_entry(reply_tree& t, const std::string& host, long long port, const std::string& id)
    -> const redlock::detail::reply* {
    return t.array({t.string(host), t.integer(port), t.string(id)});
}

auto layout_of(std::initializer_list<slot_range> ranges) -> slot_layout {
    slot_layout l;
    l.ranges.assign(ranges.begin(), ranges.end());
    return l;
}

auto node(std::uint16_t port, char id) -> cluster_node {
    return cluster_node{"127.0.0.1", port, std::string(40, id)};
}

const auto t0 = std::chrono::steady_clock::time_point{} + 1h;

}  // namespace

TEST_CASE("CLUSTER SLOTS is read into ranges, masters and replicas") {
    reply_tree t;
    const auto* answer = t.array({
        t.array({t.integer(0), t.integer(5460), node_entry(t, "127.0.0.1", 7001, "a"),
                 node_entry(t, "127.0.0.1", 7004, "d")}),
        t.array({t.integer(5461), t.integer(16383), node_entry(t, "", 7002, "b")}),
    });
    const slot_layout l = read_cluster_slots(answer, "10.0.0.9");
    REQUIRE(l.error.empty());
    REQUIRE(l.ranges.size() == 2);
    CHECK(l.ranges[0].first == 0);
    CHECK(l.ranges[0].last == 5460);
    CHECK(l.ranges[0].master == cluster_node{"127.0.0.1", 7001, "a"});
    REQUIRE(l.ranges[0].replicas.size() == 1);
    CHECK(l.ranges[0].replicas[0].port == 7004);
    CHECK(l.ranges[1].master.host == "10.0.0.9");  // an empty host: the one asked
    CHECK(l.unserved().empty());

    reply_tree u;
    const slot_layout partial = read_cluster_slots(
        u.array({u.array({u.integer(100), u.integer(200), node_entry(u, "h", 1, "x")})}), "h");
    CHECK(partial.unserved() == "0-99, 201-16383");

    reply_tree bad;
    CHECK(!read_cluster_slots(bad.error("ERR This instance has cluster support disabled"), "h")
               .error.empty());
    CHECK(
        !read_cluster_slots(
             bad.array({bad.array({bad.integer(5), bad.integer(2), node_entry(bad, "h", 1, "x")})}),
             "h")
             .error.empty());
    CHECK(!read_cluster_slots(bad.array({bad.array({bad.integer(0), bad.integer(2)})}), "h")
               .error.empty());
    CHECK(!read_cluster_slots(bad.array({bad.array({bad.integer(0), bad.integer(16384),
                                                    node_entry(bad, "h", 1, "x")})}),
                              "h")
               .error.empty());
}

TEST_CASE("MOVED and ASK are read, other errors are not redirections") {
    reply_tree t;
    const auto moved = read_redirection(t.error("MOVED 3999 127.0.0.1:6381"));
    REQUIRE(moved);
    CHECK(moved->how == redirection::kind::moved);
    CHECK(moved->slot == 3999);
    CHECK(moved->host == "127.0.0.1");
    CHECK(moved->port == 6381);
    const auto ask = read_redirection(t.error("ASK 16383 [::1]:7000"));
    REQUIRE(ask);
    CHECK(ask->how == redirection::kind::ask);
    CHECK(ask->host == "::1");
    const auto bare_v6 = read_redirection(t.error("MOVED 1 ::1:7000"));
    REQUIRE(bare_v6);
    CHECK(bare_v6->host == "::1");
    const auto no_host = read_redirection(t.error("MOVED 12 :7000"));
    REQUIRE(no_host);
    CHECK(no_host->host.empty());
    CHECK_FALSE(read_redirection(t.error("MOVED 16384 h:1")));
    CHECK_FALSE(read_redirection(t.error("MOVED x h:1")));
    CHECK_FALSE(read_redirection(t.error("MOVED 1 h:0")));
    CHECK_FALSE(read_redirection(t.error("MOVED 1 h")));
    CHECK_FALSE(read_redirection(t.error("ERR wrong number of arguments")));
    CHECK_FALSE(read_redirection(t.string("MOVED 1 h:1")));  // not an error reply
    CHECK(redlock::detail::calls_for_refresh(t.error("CLUSTERDOWN The cluster is down")));
    CHECK(redlock::detail::calls_for_refresh(t.error("TRYAGAIN Multiple keys request")));
    CHECK_FALSE(redlock::detail::calls_for_refresh(t.error("NOSCRIPT No matching script")));
}

TEST_CASE("the failover rule, enumerated over every change of a slot's master") {
    // Three nodes A, B, C. Before: slot 0 is served by `before` (A, B, or nobody) and
    // each node is or is not a master of other slots; after: slot 0 is served by `after`.
    // The slot is put in quarantine exactly when its master changed to a node that was
    // not a master before (a promotion), or to a known address with a new id.
    const cluster_node nodes[] = {node(7001, 'a'), node(7002, 'b'), node(7003, 'c')};
    int cases = 0;
    for (int before = -1; before < 2; ++before) {
        for (int after = 0; after < 3; ++after) {
            for (int masters = 0; masters < 8; ++masters) {
                for (const bool renamed : {false, true}) {
                    // Slots 1..3 tell which nodes were masters before (besides slot 0's).
                    cluster_routing routing{5000ms};
                    slot_layout first;
                    if (before >= 0) first.ranges.push_back({0, 0, nodes[before], {}});
                    for (int n = 0; n < 3; ++n) {
                        if ((masters & (1 << n)) != 0)
                            first.ranges.push_back({static_cast<std::uint16_t>(1 + n),
                                                    static_cast<std::uint16_t>(1 + n),
                                                    nodes[n],
                                                    {}});
                    }
                    if (first.ranges.empty()) continue;
                    (void)routing.apply(first, t0);
                    CHECK(routing.quarantined_slots(t0).empty());  // a first map: nothing known
                    cluster_node now_serving = nodes[after];
                    if (renamed) now_serving.id = std::string(40, 'z');
                    const auto change =
                        routing.apply(layout_of({{0, 0, now_serving, {}}}), t0 + 10ms);
                    const bool was_master = (masters & (1 << after)) != 0 || before == after;
                    const bool known_id = routing.node(*routing.node_of(0)).id == now_serving.id;
                    CHECK(known_id);
                    const bool expected = (before != after && !was_master) ||
                                          (renamed && (was_master || before == after));
                    CAPTURE(before);
                    CAPTURE(after);
                    CAPTURE(masters);
                    CAPTURE(renamed);
                    CHECK((routing.quarantined_until(0) == t0 + 10ms + 5000ms) == expected);
                    CHECK((routing.quarantined_until(0) ==
                           std::chrono::steady_clock::time_point{}) == !expected);
                    CHECK(change.notes.empty() == !expected);
                    CHECK(routing.node_of(0) == routing.node_of(0));
                    CHECK(routing.quarantined_slots(t0 + 10ms + 5000ms).empty());
                    ++cases;
                }
            }
        }
    }
    CHECK(cases > 100);
}

TEST_CASE("a MOVED to a node that was no master is a failover, a resharding is not") {
    cluster_routing routing{2000ms};
    (void)routing.apply(layout_of({{0, 8191, node(7001, 'a'), {node(7003, 'c')}},
                                   {8192, 16383, node(7002, 'b'), {}}}),
                        t0);
    CHECK(routing.node(*routing.node_of(100)).port == 7001);
    CHECK(routing.replicas_of(*routing.node_of(100)) == std::vector<std::string>{"127.0.0.1:7003"});
    CHECK(routing.replicas_of(*routing.node_of(9000)).empty());
    // Resharding: slot 100 moves to B, a master already.
    auto c = routing.moved(100, "127.0.0.1", 7002, t0 + 1ms);
    CHECK(c.notes.empty());
    CHECK(routing.node(*routing.node_of(100)).port == 7002);
    CHECK(routing.quarantined_until(100) == std::chrono::steady_clock::time_point{});
    // A failover: slot 5 moves to C, A's replica.
    c = routing.moved(5, "127.0.0.1", 7003, t0 + 2ms);
    CHECK(c.new_nodes.size() == 1);
    CHECK(c.notes.size() == 1);
    CHECK(routing.quarantined_until(5) == t0 + 2ms + 2000ms);
    CHECK(routing.quarantined_slots(t0 + 3ms) == "5");
    // Another of A's slots redirected to C: the same failover, in quarantine too.
    c = routing.moved(6, "127.0.0.1", 7003, t0 + 3ms);
    CHECK(routing.quarantined_until(6) == t0 + 3ms + 2000ms);
    // The next map: every slot C took from A is in quarantine, not only those it redirected.
    (void)routing.apply(
        layout_of({{0, 8191, node(7003, 'c'), {}}, {8192, 16383, node(7002, 'b'), {}}}), t0 + 4ms);
    CHECK(routing.quarantined_until(7) == t0 + 4ms + 2000ms);
    CHECK(routing.quarantined_until(5) == t0 + 2ms + 2000ms);  // not extended: seen already
    CHECK(routing.quarantined_until(9000) == std::chrono::steady_clock::time_point{});
    // C is a master in that map: a slot moved to it later is a resharding.
    c = routing.moved(9000, "127.0.0.1", 7003, t0 + 5ms);
    CHECK(c.notes.empty());
    CHECK(routing.quarantined_until(9000) == std::chrono::steady_clock::time_point{});
}

TEST_CASE("with the quarantine off (wait_replicas), a failover is followed and nothing waits") {
    cluster_routing routing{0ms};
    (void)routing.apply(layout_of({{0, 16383, node(7001, 'a'), {node(7002, 'b')}}}), t0);
    const auto c = routing.apply(layout_of({{0, 16383, node(7002, 'b'), {}}}), t0 + 1ms);
    CHECK(routing.node(*routing.node_of(0)).port == 7002);
    CHECK(routing.quarantined_slots(t0 + 1ms).empty());
    CHECK(c.notes.size() == 1);  // still reported
}

TEST_CASE("slots no range serves route nowhere") {
    cluster_routing routing{1000ms};
    CHECK_FALSE(routing.mapped());
    CHECK_FALSE(routing.node_of(0));
    (void)routing.apply(layout_of({{0, 99, node(7001, 'a'), {}}}), t0);
    CHECK(routing.mapped());
    CHECK(routing.node_of(99));
    CHECK_FALSE(routing.node_of(100));
}
