// client::check's plan, and a cluster member judged by every master of its slot map
// (diagnostics_members.hpp). No I/O: check_op asked, this reads.

#include "client/diagnostics_members.hpp"

#include "client/probe_replies.hpp"
#include "sansio/cluster_replies.hpp"
#include "sansio/member_misconfig.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace redlock::detail {
namespace {

constexpr std::size_t all_slots = 16384;

/// Slot ranges, joined as messages list them, and how many slots they hold.
struct slot_set {
    std::string text;
    std::size_t count = 0;
    void add(const slot_run& run) {
        append_slot_range(text, run.first, run.last);
        count += static_cast<std::size_t>(run.last - run.first) + 1;
    }
};

/// The first CLUSTER NODES among the masters that answered, with that node's clock (ms).
struct cluster_view {
    std::vector<cluster_nodes_entry> entries;
    std::uint64_t now_ms = 0;
    [[nodiscard]] auto find(const std::string& address) const -> const cluster_nodes_entry* {
        for (const auto& e : entries)
            if (!e.address.empty() && e.address == address) return &e;
        return nullptr;
    }
};

auto view_of(const std::vector<const node_probe*>& probes) -> cluster_view {
    cluster_view view;
    for (const node_probe* p : probes) {
        if (p->replies.size() <= cluster_nodes) continue;
        const flat_reply& nodes = p->replies[cluster_nodes];
        if (nodes.type != flat_reply::kind::text) continue;
        view.entries = read_cluster_nodes(nodes.text);
        const std::string usec = info_of(p->replies[info_server], "server_time_usec");
        view.now_ms = number_of(usec).value_or(0) / 1000;
        if (!view.entries.empty()) break;
    }
    return view;
}

/// "last heard 12 s ago", or nothing when the view does not say.
auto heard(const cluster_view& view, const cluster_nodes_entry& e) -> std::string {
    if (e.pong_received_ms == 0 || view.now_ms < e.pong_received_ms) return {};
    return ", last heard " + age_text(view.now_ms - e.pong_received_ms) + " ago";
}

/// The master's replicas as its cluster knows them (down ones too), with what the master's
/// own INFO replication says of each one streaming from it.
void merge_replicas(master_health& m, const cluster_view& view) {
    const cluster_nodes_entry* self = view.find(m.address);
    if (self == nullptr) return;
    std::vector<replica_health> merged;
    for (const auto& e : view.entries) {
        if (e.master || e.master_id != self->id) continue;
        replica_health r;
        r.address = e.address;
        const auto listed =
            std::find_if(m.replicas.begin(), m.replicas.end(),
                         [&](const replica_health& x) { return x.address == e.address; });
        if (listed != m.replicas.end()) {
            r = *listed;
        } else {
            r.state = e.failed || e.suspected ? "down" : "not connected";
        }
        merged.push_back(std::move(r));
    }
    for (const auto& r : m.replicas) {
        const auto same = [&](const replica_health& x) { return x.address == r.address; };
        if (std::none_of(merged.begin(), merged.end(), same)) merged.push_back(r);
    }
    m.replicas = std::move(merged);
}

/// What the cluster's own view says of failed nodes: the failovers it shows.
void read_failovers(node_health& h, const cluster_view& view) {
    for (const auto& entry : view.entries) {
        if (!entry.master || !(entry.failed || entry.suspected)) continue;
        cluster_nodes_entry e = entry;
        if (e.address.empty()) e.address = "node " + e.id.substr(0, 8) + " (address forgotten)";
        if (e.suspected && !e.failed) {
            h.failovers.push_back("master " + e.address + " is suspected down (fail?)" +
                                  heard(view, e) + ": a failover follows if a majority agree");
        } else if (e.slot_count > 0) {
            h.failovers.push_back("master " + e.address + " failed (flagged fail" + heard(view, e) +
                                  "): no replica has taken its " + std::to_string(e.slot_count) +
                                  " slots yet");
        } else {
            h.failovers.push_back("former master " + e.address + " failed" + heard(view, e) +
                                  " and serves no slot: a failover gave its slots to a replica");
        }
    }
}

}  // namespace

auto check_setups(const client_config& config) -> std::vector<member_setup> {
    std::vector<member_setup> setups;
    for (std::size_t i = 0; i < config.nodes.size(); ++i) setups.push_back({});
    for (const auto& c : config.clusters)
        setups.push_back({member_kind::cluster, c.wait_replicas, {}});
    for (const auto& s : config.sentinel_masters)
        setups.push_back({member_kind::sentinel, s.wait_replicas, s.master_name});
    return setups;
}

auto check_plan_for(const std::vector<member_setup>& setups) -> check_plan {
    check_plan plan;
    for (const auto& s : setups) {
        plan.kinds.push_back(s.kind);
        plan.master_names.push_back(s.master_name);
    }
    plan.master_commands = {{"INFO", "server"},
                            {"INFO", "persistence"},
                            {"INFO", "replication"},
                            {"CONFIG", "GET", "appendfsync"}};
    plan.cluster_commands = plan.master_commands;
    plan.cluster_commands.push_back({"CLUSTER", "INFO"});
    plan.cluster_commands.push_back({"CLUSTER", "NODES"});
    plan.sentinel_commands = {{"SENTINEL", "MASTER", "{name}"}, {"SENTINEL", "REPLICAS", "{name}"}};
    return plan;
}

auto parse_members(std::size_t quorum, const std::vector<member_setup>& setups,
                   std::vector<member_check> checks) -> cluster_health {
    cluster_health health;
    health.quorum = quorum;
    for (std::size_t i = 0; i < checks.size(); ++i) {
        const member_setup setup = i < setups.size() ? setups[i] : member_setup{};
        switch (setup.kind) {
            case member_kind::cluster:
                health.nodes.push_back(cluster_member_health(setup, checks[i]));
                break;
            case member_kind::sentinel:
                health.nodes.push_back(sentinel_member_health(setup, checks[i]));
                break;
            case member_kind::standalone:
                health.nodes.push_back(standalone_member(checks[i]));
                break;
        }
    }
    health.duplicates = find_duplicate_servers(health.nodes);
    return health;
}

auto cluster_member_health(const member_setup& setup, member_check& check) -> node_health {
    node_health h;
    h.node = check.member.node;
    if (check.map.empty()) {
        // No slot map: the member's own answer says why (a seed that is not a cluster node…).
        h.detail = !check.member.cause.empty() ? check.member.cause : first_error(check.member);
        if (h.detail.empty()) h.detail = "no slot map";
        if (configuration_cause(h.detail)) h.configuration_errors.push_back(h.detail);
        h.topology = std::move(check.member.topology);
        return h;
    }
    std::map<std::string, const node_probe*> probes;
    if (!check.member_server.empty()) probes[check.member_server] = &check.member;
    for (const auto& p : check.masters) probes[p.node] = &p;

    // Masters in slot order, each with its slots; the slots no master serves.
    std::vector<std::string> order;
    std::map<std::string, slot_set> served;
    slot_set uncovered;
    slot_set quarantined;
    std::chrono::milliseconds quarantine_left{0};
    for (const slot_run& run : check.map) {
        if (run.quarantined.count() > 0) {
            quarantined.add(run);
            quarantine_left = std::max(quarantine_left, run.quarantined);
        }
        if (run.server.empty()) {
            uncovered.add(run);
            continue;
        }
        if (!served.contains(run.server)) order.push_back(run.server);
        served[run.server].add(run);
    }
    std::vector<const node_probe*> answered;
    for (const auto& address : order) {
        const auto it = probes.find(address);
        if (it != probes.end() && it->second->answered) answered.push_back(it->second);
    }
    const cluster_view view = view_of(answered);

    slot_set unserved = uncovered;
    std::size_t replicas = 0;
    for (const auto& address : order) {
        const auto it = probes.find(address);
        master_health m;
        if (it != probes.end()) {
            m = master_from(*it->second, address);
        } else {
            m.address = address;
            m.detail = "not asked: it took slots while check ran";
        }
        m.slots = served[address].text;
        m.slot_count = served[address].count;
        merge_replicas(m, view);
        replicas += m.replicas.size();
        const cluster_nodes_entry* seen = view.find(address);
        const bool flagged = seen != nullptr && seen->failed;
        std::string line = "master " + address + ": " + std::to_string(m.slot_count) + " slots (" +
                           m.slots + "), " + master_state_text(m);
        if (flagged) line += ", flagged failed by its cluster";
        h.topology.push_back(line + replicas_text(m.replicas));
        if (!m.reachable) {
            h.problems.push_back("master " + address + " is down (" + m.detail + "): slots " +
                                 m.slots + " cannot be locked");
        } else if (flagged) {
            h.problems.push_back("master " + address + " answers this client, but its cluster " +
                                 "flags it failed: slots " + m.slots + " cannot be locked");
        } else if (!m.role.empty() && m.role != "master") {
            h.problems.push_back(address + " answers role:" + m.role + " for slots " + m.slots +
                                 ": a failover this client has yet to read");
        }
        if (!m.reachable || flagged) {
            unserved.text += (unserved.text.empty() ? "" : ", ") + m.slots;
            unserved.count += m.slot_count;
        }
        if (m.reachable) {
            const auto streaming = static_cast<std::size_t>(
                std::count_if(m.replicas.begin(), m.replicas.end(),
                              [](const replica_health& r) { return r.state == "online"; }));
            judge_wait_replicas(h, "master " + address, setup.wait_replicas, m.replicas.size(),
                                streaming);
            if (m.cluster_state == "fail" || h.cluster_state.empty())
                h.cluster_state = m.cluster_state.empty() ? h.cluster_state : m.cluster_state;
        }
        h.masters.push_back(std::move(m));
    }
    if (uncovered.count > 0) {
        h.topology.push_back("no master: slots " + uncovered.text);
        h.problems.push_back("slots " + uncovered.text +
                             " are in no master's range of the slot map");
    }
    if (h.cluster_state == "fail")
        h.problems.push_back(
            "cluster_state:fail: its nodes refuse every command (CLUSTERDOWN) "
            "until every slot is served again");
    h.topology.push_back(
        "cluster_state:" + (h.cluster_state.empty() ? "unknown" : h.cluster_state) + ", " +
        std::to_string(all_slots - unserved.count) + " of " + std::to_string(all_slots) +
        " slots served");
    h.unserved_slots = unserved.text;
    h.unserved_slot_count = unserved.count;
    if (quarantined.count > 0) {
        // A new master (a failover), or one restarted without persisting every write.
        const std::string q = "slots " + quarantined.text + ", for another " +
                              std::to_string(quarantine_left.count()) + " ms";
        h.topology.push_back("in quarantine (a failover or a restart): " + q);
        h.failovers.push_back(
            "in quarantine (a new master, or a restart that may have lost "
            "writes): " +
            q);
    }
    read_failovers(h, view);
    if (setup.wait_replicas == 0 && replicas > 0)
        h.warnings.push_back(no_wait_replicas_warning(replicas));

    const auto up = std::find_if(h.masters.begin(), h.masters.end(),
                                 [](const master_health& m) { return m.reachable; });
    h.reachable = up != h.masters.end();
    if (h.reachable) {
        describe_member_by(h, *up);
    } else {
        h.detail = !h.masters.empty() ? h.masters.front().detail : check.member.cause;
        if (configuration_cause(h.detail)) h.configuration_errors.push_back(h.detail);
    }
    return h;
}

}  // namespace redlock::detail
