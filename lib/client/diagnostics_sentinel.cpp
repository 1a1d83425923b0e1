// A Sentinel member judged by its master and by what every sentinel says of it, and a
// standalone master (diagnostics_members.hpp). No I/O: check_op asked, this reads.

#include "client/diagnostics_members.hpp"
#include "client/probe_replies.hpp"
#include "sansio/member_misconfig.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace redlock::detail {
namespace {

using fields = std::map<std::string, std::string>;

auto field(const fields& f, const std::string& name) -> std::string {
    const auto it = f.find(name);
    return it != f.end() ? it->second : std::string{};
}

/// What one sentinel said of the master name.
struct sentinel_view {
    std::string sentinel;
    bool answered = false;
    bool unknown = false;  ///< "No such master with that name"
    std::string error;
    fields master;
    std::vector<fields> replicas;
};

auto view_of(const node_probe& p) -> sentinel_view {
    sentinel_view v;
    v.sentinel = p.node;
    if (!p.cause.empty() || p.replies.size() <= sentinel_replicas) {
        v.error = p.cause.empty() ? "no answer" : p.cause;
        return v;
    }
    v.answered = true;
    const flat_reply& master = p.replies[sentinel_master];
    if (master.type == flat_reply::kind::error) {
        v.unknown = master.text.find("No such master") != std::string::npos;
        v.error = master.text;
        return v;
    }
    v.master = read_fields(master);
    for (const auto& r : p.replies[sentinel_replicas].elements)
        v.replicas.push_back(read_fields(r));
    return v;
}

/// The replicas the sentinel knows, with what the master's INFO replication says of each.
void merge_replicas(master_health& m, const sentinel_view& v) {
    std::vector<replica_health> merged;
    for (const auto& r : v.replicas) {
        replica_health out;
        out.address = field(r, "ip") + ":" + field(r, "port");
        const auto listed =
            std::find_if(m.replicas.begin(), m.replicas.end(),
                         [&](const replica_health& x) { return x.address == out.address; });
        const std::string flags = field(r, "flags");
        if (listed != m.replicas.end()) {
            out = *listed;
        } else {
            out.state = flags.find("s_down") != std::string::npos ||
                                flags.find("o_down") != std::string::npos
                            ? "down"
                            : "not connected";
        }
        merged.push_back(std::move(out));
    }
    for (const auto& r : m.replicas) {
        const auto same = [&](const replica_health& x) { return x.address == r.address; };
        if (std::none_of(merged.begin(), merged.end(), same)) merged.push_back(r);
    }
    m.replicas = std::move(merged);
}

/// How long ago the master took its role, as the sentinel saw it, and by which config.
void read_failover(node_health& h, const sentinel_view& v, const std::string& master_name) {
    const auto since = number_of(field(v.master, "role-reported-time"));
    const auto epoch = number_of(field(v.master, "config-epoch"));
    const std::string address = field(v.master, "ip") + ":" + field(v.master, "port");
    const std::string age = since ? age_text(*since) : std::string{"an unknown time"};
    if (epoch && *epoch > 0) {
        h.failovers.push_back("master " + address + " took its role " + age + " ago, as sentinel " +
                              v.sentinel + " saw it (config-epoch " + std::to_string(*epoch) +
                              ": chosen by a failover)");
    } else {
        h.failovers.push_back("no failover since the sentinels began to monitor \"" + master_name +
                              "\" (config-epoch 0); " + address + " has been its master for " +
                              age + " at least, as sentinel " + v.sentinel + " saw it");
    }
    const std::string flags = field(v.master, "flags");
    if (flags.find("failover_in_progress") != std::string::npos)
        h.problems.push_back("a failover of \"" + master_name + "\" is in progress (" + flags +
                             ")");
    if (flags.find("s_down") != std::string::npos || flags.find("o_down") != std::string::npos)
        h.problems.push_back("sentinel " + v.sentinel + " flags the master down (" + flags + ")");
}

}  // namespace

auto standalone_member(member_check& check) -> node_health {
    node_health h;
    h.node = check.member.node;
    const master_health m = master_from(check.member, h.node);
    h.reachable = m.reachable;
    h.detail = m.detail;
    describe_member_by(h, m);
    if (!h.reachable) h.tls.reset();
    if (!h.reachable && configuration_cause(h.detail)) h.configuration_errors.push_back(h.detail);
    return h;
}

auto sentinel_member_health(const member_setup& setup, member_check& check) -> node_health {
    node_health h;
    h.node = check.member.node;
    const std::string quoted = "\"" + setup.master_name + "\"";
    std::vector<sentinel_view> views;
    for (const auto& p : check.sentinels) views.push_back(view_of(p));
    const auto count = [&](auto pred) {
        return static_cast<std::size_t>(std::count_if(views.begin(), views.end(), pred));
    };
    const std::size_t answered = count([](const sentinel_view& v) { return v.answered; });
    const std::size_t unknown = count([](const sentinel_view& v) { return v.unknown; });
    const auto knows = [](const sentinel_view& v) { return v.answered && !v.master.empty(); };
    const auto first = std::find_if(views.begin(), views.end(), knows);
    const std::size_t knowing = count(knows);
    if (answered > 0 && unknown == answered) {
        h.configuration_errors.push_back(
            "no sentinel knows a master named " + quoted + ": the " + std::to_string(answered) +
            " of " + std::to_string(views.size()) +
            " that answered say \"No such master with that name\" (SENTINEL MASTER)");
    } else if (unknown > 0) {
        for (const auto& v : views)
            if (v.unknown)
                h.warnings.push_back("sentinel " + v.sentinel + " does not know " + quoted +
                                     ": it takes no part in its failovers");
    }

    std::size_t known = 0;
    for (const auto& v : views) {
        if (!knows(v)) continue;
        known = std::max(
            {known, v.replicas.size(),
             static_cast<std::size_t>(number_of(field(v.master, "num-slaves")).value_or(0))});
        const std::string named = field(v.master, "ip") + ":" + field(v.master, "port");
        if (!check.member_server.empty() && named != check.member_server)
            h.warnings.push_back("sentinel " + v.sentinel + " names " + named +
                                 " as the master, "
                                 "not " +
                                 check.member_server + ", which this client uses");
    }

    if (check.member_server.empty()) {
        h.detail = !check.member.cause.empty() ? check.member.cause : "no master known";
        h.topology.push_back("master " + quoted + " not known (" + h.detail + ")");
        if (h.configuration_errors.empty() && configuration_cause(h.detail))
            h.configuration_errors.push_back(h.detail);
    } else {
        master_health m = master_from(check.member, check.member_server);
        if (first != views.end()) merge_replicas(m, *first);
        known = std::max(known, m.replicas.size());
        h.topology.push_back("master " + quoted + " at " + m.address + ": " + master_state_text(m) +
                             replicas_text(m.replicas));
        h.reachable = m.reachable;
        h.detail = m.detail;
        if (m.reachable) {
            describe_member_by(h, m);
            if (!m.role.empty() && m.role != "master")
                h.problems.push_back(m.address + " answers role:" + m.role +
                                     ": a failover this client has yet to follow");
            const auto streaming = static_cast<std::size_t>(
                std::count_if(m.replicas.begin(), m.replicas.end(),
                              [](const replica_health& r) { return r.state == "online"; }));
            judge_wait_replicas(h, "master " + quoted + " at " + m.address, setup.wait_replicas,
                                known, streaming);
        }
        h.masters.push_back(std::move(m));
    }
    h.topology.push_back(
        std::to_string(answered) + " of " + std::to_string(views.size()) + " sentinels answering" +
        (knowing < answered ? ", " + std::to_string(knowing) + " know " + quoted : std::string{}));
    if (first != views.end()) read_failover(h, *first, setup.master_name);
    if (check.quarantined.count() > 0) {
        // A new master (this client followed a failover), or one restarted without persisting
        // every write: its grants do not count yet.
        const std::string q = "in quarantine for another " +
                              std::to_string(check.quarantined.count()) +
                              " ms (a new master, or a restart that may have lost writes)";
        h.topology.push_back(q);
        h.failovers.push_back("its master is " + q);
    }
    if (setup.wait_replicas == 0 && known > 0)
        h.warnings.push_back(no_wait_replicas_warning(known));
    return h;
}

}  // namespace redlock::detail
