// check: every node's health, read-only (status is in status_commands.cpp). A cluster
// member shows each master of its slot map, a Sentinel member its master and sentinels;
// a member that can never serve as configured exits 78, one that cannot take every lock
// counts as down (issue 38, items 4 to 6).
#include "client_setup.hpp"
#include "commands.hpp"

#include <algorithm>
#include <cstdio>

namespace redlock::cli {
namespace {

/// Why a node may forget a lock it granted, e.g. "appendonly no".
auto persistence_gap(const node_health& n) -> std::string {
    if (!n.aof_enabled) return "persistence unknown";
    if (!*n.aof_enabled) return "appendonly no";
    if (!n.appendfsync) return "appendfsync unknown (CONFIG GET refused)";
    return "appendfsync " + *n.appendfsync;
}

/// How the node was reached: "TLS off", or "TLSv1.3 TLS_AES_256_GCM_SHA384 verified".
auto tls_text(const std::optional<tls_info>& tls) -> std::string {
    if (!tls) return "TLS off";
    // With verification on, a certificate that fails leaves the node unreachable.
    return tls->version + " " + tls->cipher + " " +
           (tls->verified ? "verified" : "not verified (verification off in config)");
}

/// {"version", "cipher", "verified"}, or null over plain text.
auto tls_json(const std::optional<tls_info>& tls) -> json {
    if (!tls) return nullptr;
    return {{"version", tls->version}, {"cipher", tls->cipher}, {"verified", tls->verified}};
}

/// Why a cluster or Sentinel member's masters may forget locks: "127.0.0.1:7002:
/// appendfsync everysec, ..."; a standalone master's own gap.
auto persistence_gaps(const node_health& n) -> std::string {
    if (n.masters.empty()) return persistence_gap(n);
    std::string gaps;
    for (const master_health& m : n.masters) {
        if (!m.reachable || !m.can_lose_writes()) continue;
        node_health as_node;
        as_node.aof_enabled = m.aof_enabled;
        as_node.appendfsync = m.appendfsync;
        gaps += (gaps.empty() ? "" : ", ") + m.address + ": " + persistence_gap(as_node);
    }
    return gaps;
}

/// "a; b; c"
auto joined(const std::vector<std::string>& items) -> std::string {
    std::string text;
    for (const auto& item : items) text += (text.empty() ? "" : "; ") + item;
    return text;
}

auto check_warnings(const cluster_health& health) -> std::vector<std::string> {
    std::vector<std::string> warnings;
    std::string forgetful;
    for (const auto& n : health.nodes) {
        if (!n.reachable) continue;
        if (n.can_lose_writes())
            forgetful +=
                (forgetful.empty() ? "" : ", ") + n.node + " (" + persistence_gaps(n) + ")";
        // A member that answered but cannot take every lock: what it lacks.
        if (n.configuration_errors.empty() && !n.problems.empty())
            warnings.push_back(n.node + " cannot take every lock now: " + joined(n.problems));
        for (const auto& w : n.warnings) warnings.push_back(n.node + ": " + w);
        if (!n.role.empty() && n.role != "master") {
            warnings.push_back(n.node + " is a " + n.role +
                               ", not a master: Redlock needs independent masters");
        }
    }
    if (!forgetful.empty()) {
        warnings.insert(warnings.begin(),
                        "can lose acknowledged writes on a crash: " + forgetful +
                            ". Restarted empty, such a node may grant a lock that is still held: "
                            "use appendonly yes + appendfsync always, or keep a crashed node "
                            "down for longer than the longest TTL");
    }
    if (health.nodes.size() % 2 == 0) {
        warnings.push_back(std::to_string(health.nodes.size()) +
                           " nodes is an even number: one more node would add fault tolerance "
                           "at no cost");
    }
    return warnings;
}

auto field_of(std::size_t node) -> std::string {
    return "/nodes/" + std::to_string(node);
}

/// "a", "a and b", "a, b and c"
auto listed(const std::vector<std::string>& items) -> std::string {
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) text += i + 1 == items.size() ? " and " : ", ";
        text += items[i];
    }
    return text;
}

/// [{"run_id", "nodes": [names], "fields": ["/nodes/0", ...]}, ...]
auto duplicates_json(const cluster_health& health) -> json {
    json groups = json::array();
    for (const auto& d : health.duplicates) {
        json names = json::array();
        json fields = json::array();
        for (const std::size_t i : d.nodes) {
            names.push_back(health.nodes[i].node);
            fields.push_back(field_of(i));
        }
        groups.push_back({{"run_id", d.run_id}, {"nodes", names}, {"fields", fields}});
    }
    return groups;
}

/// For each node listed again, the name of the first node of its server.
auto first_alias_of(const cluster_health& health) -> std::vector<std::string> {
    std::vector<std::string> first(health.nodes.size());
    for (const auto& d : health.duplicates) {
        for (std::size_t k = 1; k < d.nodes.size(); ++k)
            first[d.nodes[k]] = health.nodes[d.nodes.front()].node;
    }
    return first;
}

/// Why a configuration that names one server through several nodes is a
/// problem, with the fault tolerance it really has. A server grants a lock
/// once however often it is listed, so the quorum (counted over the nodes)
/// must be found among fewer servers.
auto duplicates_problem(const cluster_health& health) -> std::string {
    std::string text;
    for (const auto& d : health.duplicates) {
        std::vector<std::string> members;
        for (const std::size_t i : d.nodes)
            members.push_back(field_of(i) + " (" + health.nodes[i].node + ")");
        text += (text.empty() ? "" : "; ") + listed(members) + " are one server (run_id " +
                d.run_id + ")";
    }
    const bool all_known =
        std::ranges::none_of(health.nodes, [](const node_health& n) { return n.run_id.empty(); });
    const std::size_t nodes = health.nodes.size();
    const std::size_t servers = health.servers();
    const std::size_t quorum = health.quorum;
    text += ": the " + std::to_string(nodes) + " nodes are " + (all_known ? "" : "at most ") +
            std::to_string(servers) +
            " servers, and a server grants a lock once however often it is listed: a quorum of " +
            std::to_string(quorum);
    if (servers < quorum) {
        text += " can never be reached";
    } else {
        text += " survives " + std::to_string(servers - quorum) + " failed server(s), not " +
                std::to_string(nodes - quorum);
    }
    return text + ". List each server once";
}

/// A master of a cluster or Sentinel member, for --json.
auto master_json(const master_health& m) -> json {
    json replicas = json::array();
    for (const replica_health& r : m.replicas)
        replicas.push_back(
            {{"address", r.address}, {"state", r.state}, {"lag_seconds", or_null(r.lag_seconds)}});
    const double rtt_ms = static_cast<double>(m.round_trip.count()) / 1000.0;
    return {{"address", m.address},
            {"slots", m.slots},
            {"slot_count", m.slot_count},
            {"reachable", m.reachable},
            {"detail", m.detail},
            {"round_trip_ms", m.reachable ? json(rtt_ms) : json(nullptr)},
            {"redis_version", m.redis_version},
            {"run_id", m.run_id},
            {"role", m.role},
            {"aof_enabled", or_null(m.aof_enabled)},
            {"appendfsync", or_null(m.appendfsync)},
            {"can_lose_writes", m.reachable ? json(m.can_lose_writes()) : json(nullptr)},
            {"cluster_state", m.cluster_state.empty() ? json(nullptr) : json(m.cluster_state)},
            {"replicas", replicas},
            {"tls", tls_json(m.tls)}};
}

auto node_json(const node_health& n) -> json {
    json masters = json::array();
    for (const master_health& m : n.masters) masters.push_back(master_json(m));
    const double rtt_ms = static_cast<double>(n.round_trip.count()) / 1000.0;
    return {{"node", n.node},
            {"reachable", n.reachable},
            {"serving", n.serving()},
            {"round_trip_ms", n.reachable ? json(rtt_ms) : json(nullptr)},
            {"redis_version", n.redis_version},
            {"run_id", n.run_id},
            {"role", n.role},
            {"aof_enabled", or_null(n.aof_enabled)},
            {"appendfsync", or_null(n.appendfsync)},
            {"can_lose_writes", n.reachable ? json(n.can_lose_writes()) : json(nullptr)},
            {"detail", n.detail},
            {"topology", n.topology},
            {"masters", masters},
            {"cluster_state", n.cluster_state.empty() ? json(nullptr) : json(n.cluster_state)},
            {"unserved_slots", n.unserved_slots},
            {"unserved_slot_count", n.unserved_slot_count},
            {"configuration_errors", n.configuration_errors},
            {"problems", n.problems},
            {"warnings", n.warnings},
            {"failovers", n.failovers},
            {"tls", tls_json(n.tls)}};
}

/// "configuration: cluster 10.0.1.1:7000: <why>; ...: fix these members" (exit 78).
auto misconfigured(const cluster_health& health) -> std::string {
    std::string text;
    for (const auto& n : health.nodes) {
        for (const auto& e : n.configuration_errors)
            text += (text.empty() ? "" : "; ") + n.node + ": " + e;
    }
    return "configuration: " + text + ". " + std::to_string(health.misconfigured()) + " of " +
           std::to_string(health.nodes.size()) +
           " nodes can never grant a lock as configured: fix the configuration";
}

/// Why no lock can be had: too few nodes reachable, or able to take every lock (exit 69).
auto too_few(const cluster_health& health) -> std::string {
    const std::string needed = std::to_string(health.quorum) + " needed for any lock";
    const std::string of = " of " + std::to_string(health.nodes.size()) + " nodes";
    if (health.serving() == health.reachable())
        return "only " + std::to_string(health.reachable()) + of + " are reachable, " + needed;
    std::string why;
    for (const auto& n : health.nodes) {
        if (n.reachable && !n.serving() && !n.problems.empty())
            why += (why.empty() ? "" : "; ") + n.node + ": " + n.problems.front();
    }
    return "only " + std::to_string(health.serving()) + of + " can take every lock (" +
           std::to_string(health.reachable()) + " are reachable; " + why + "), " + needed;
}

}  // namespace

auto check_command(const global_options& global, const check_options& args, const reporter& out)
    -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());

    auto health = locks->check();
    if (!health) return out.fail(health.error());

    const auto aliases = first_alias_of(*health);
    json nodes = json::array();
    std::string table;
    for (std::size_t i = 0; i < health->nodes.size(); ++i) {
        const node_health& n = health->nodes[i];
        nodes.push_back(node_json(n));
        std::string line = "  " + pad(n.node, 22);
        if (!n.reachable) {
            line += n.configuration_errors.empty()
                        ? "unreachable: " + n.detail
                        : "MISCONFIGURED: " + n.configuration_errors.front();
        } else {
            char rtt[32];
            std::snprintf(rtt, sizeof rtt, "%.2f ms",
                          static_cast<double>(n.round_trip.count()) / 1000.0);
            const std::string state = !n.configuration_errors.empty() ? "MISCONFIGURED"
                                      : !n.problems.empty()           ? "DEGRADED"
                                                                      : "up";
            line += state + "  rtt " + pad(rtt, 10) + "redis " + pad(n.redis_version, 9) +
                    pad(n.role, 8) +
                    (n.can_lose_writes() ? "CAN LOSE WRITES (" + persistence_gaps(n) + ")"
                                         : std::string{"persists every write"}) +
                    "  " + tls_text(n.tls);
        }
        if (!aliases[i].empty()) line += "  SAME SERVER AS " + aliases[i];
        table += line + "\n";
        for (const std::string& t : n.topology) table += "      " + t + "\n";
        for (const std::string& f : n.failovers) table += "      failover: " + f + "\n";
    }
    const auto warnings = check_warnings(*health);
    json result{{"quorum", health->quorum},
                {"reachable", health->reachable()},
                {"serving", health->serving()},
                {"misconfigured", health->misconfigured()},
                {"quorum_reachable", health->quorum_reachable()},
                {"nodes", std::move(nodes)},
                {"servers", health->servers()},
                {"duplicate_servers", duplicates_json(*health)},
                {"warnings", warnings}};

    if (health->misconfigured() > 0) {
        // A member that can never serve as configured: a configuration error, whatever
        // the others do (issue 38, item 5).
        if (!out.json_mode()) out.result(result, table);
        for (const auto& w : warnings) out.note("warning: " + w);
        return out.fail(failure_report{exit_config, "invalid_config", misconfigured(*health)}, {},
                        result);
    }
    if (!health->quorum_reachable()) {
        if (!out.json_mode()) out.result(result, table);
        for (const auto& w : warnings) out.note("warning: " + w);
        return out.fail(failure_report{exit_unavailable, "quorum_unreachable", too_few(*health)},
                        {}, result);
    }
    if (!health->duplicates.empty()) {
        // A configuration problem that validation could not see: exit as for
        // a bad config, after the table and the warnings.
        if (!out.json_mode()) out.result(result, table);
        for (const auto& w : warnings) out.note("warning: " + w);
        return out.fail(
            failure_report{exit_config, "duplicate_server", duplicates_problem(*health)}, {},
            result);
    }
    if (args.strict) {
        std::vector<std::string> unsafe;
        for (const auto& n : health->nodes) {
            if (n.reachable && n.can_lose_writes())
                unsafe.push_back(n.node + " (" + persistence_gaps(n) + ")");
        }
        if (!unsafe.empty()) {
            if (!out.json_mode()) out.result(result, table);
            for (const auto& w : warnings) out.note("warning: " + w);
            return out.fail(
                failure_report{exit_failure, "unsafe_nodes",
                               "--strict: " + std::to_string(unsafe.size()) + " of " +
                                   std::to_string(health->nodes.size()) +
                                   " nodes can lose acknowledged writes on a crash: " +
                                   listed(unsafe) + " (use appendonly yes + appendfsync always)"},
                {}, result);
        }
    }
    const std::string count = health->serving() == health->nodes.size()
                                  ? std::to_string(health->reachable()) + " of " +
                                        std::to_string(health->nodes.size()) + " nodes reachable"
                                  : std::to_string(health->serving()) + " of " +
                                        std::to_string(health->nodes.size()) +
                                        " nodes can take every lock (" +
                                        std::to_string(health->reachable()) + " reachable)";
    out.result(result, table + count + ", quorum " + std::to_string(health->quorum) + ": ok\n");
    for (const auto& w : warnings) out.note("warning: " + w);
    return exit_ok;
}

}  // namespace redlock::cli
