// Reading what check's servers answered (diagnostics_members.hpp): CLUSTER NODES, SENTINEL
// MASTER's fields, INFO replication's replicas, a master's health; and the words every kind
// of member shares. No I/O.

#include "client/diagnostics_members.hpp"
#include "client/probe_replies.hpp"
#include "sansio/node_handshake.hpp"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::detail {
namespace {

/// The space-separated words of `line`.
auto words_of(std::string_view line) -> std::vector<std::string_view> {
    std::vector<std::string_view> words;
    while (!line.empty()) {
        const auto space = line.find(' ');
        const auto word = line.substr(0, space);
        if (!word.empty()) words.push_back(word);
        if (space == std::string_view::npos) break;
        line.remove_prefix(space + 1);
    }
    return words;
}

auto unsigned_of(std::string_view text) -> std::uint64_t {
    std::uint64_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

/// "0-5460" -> 5461, "42" -> 1; an importing or migrating mark ("[42->-id]") -> 0.
auto slots_in(std::string_view item) -> std::size_t {
    if (item.empty() || item.front() == '[') return 0;
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) return 1;
    const auto first = unsigned_of(item.substr(0, dash));
    const auto last = unsigned_of(item.substr(dash + 1));
    return last >= first ? static_cast<std::size_t>(last - first + 1) : 0;
}

/// `key=value` of a comma-separated list ("ip=127.0.0.1,port=7004,state=online").
auto pair_of(std::string_view list, std::string_view key) -> std::string_view {
    while (!list.empty()) {
        const auto comma = list.find(',');
        const auto item = list.substr(0, comma);
        if (item.size() > key.size() && item.starts_with(key) && item[key.size()] == '=')
            return item.substr(key.size() + 1);
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return {};
}

}  // namespace

auto read_cluster_nodes(std::string_view text) -> std::vector<cluster_nodes_entry> {
    std::vector<cluster_nodes_entry> entries;
    while (!text.empty()) {
        const auto end = text.find('\n');
        std::string_view line = text.substr(0, end);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        const auto w = words_of(line);
        if (w.size() < 8) continue;
        cluster_nodes_entry e;
        e.id = std::string{w[0]};
        // "ip:port@cport[,hostname]"
        e.address = std::string{w[1].substr(0, w[1].find_first_of("@,"))};
        if (e.address.starts_with(':')) e.address.clear();  // ":0": the address was forgotten
        std::string_view flags = w[2];
        while (!flags.empty()) {
            const auto comma = flags.find(',');
            const auto f = flags.substr(0, comma);
            e.myself = e.myself || f == "myself";
            e.master = e.master || f == "master";
            e.failed = e.failed || f == "fail";
            e.suspected = e.suspected || f == "fail?";
            if (comma == std::string_view::npos) break;
            flags.remove_prefix(comma + 1);
        }
        e.master_id = std::string{w[3]};
        e.pong_received_ms = unsigned_of(w[5]);
        for (std::size_t i = 8; i < w.size(); ++i) e.slot_count += slots_in(w[i]);
        entries.push_back(std::move(e));
    }
    return entries;
}

auto read_fields(const flat_reply& r) -> std::map<std::string, std::string> {
    std::map<std::string, std::string> fields;
    if (r.type != flat_reply::kind::array) return fields;
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
        const auto name = text_of(r.elements[i]);
        const auto value = text_of(r.elements[i + 1]);
        if (name && value) fields.emplace(*name, *value);
    }
    return fields;
}

auto listed_replicas(std::string_view info) -> std::vector<replica_health> {
    std::vector<replica_health> replicas;
    for (int i = 0;; ++i) {
        const std::string_view line = info_field(info, "slave" + std::to_string(i));
        if (line.empty()) break;
        replica_health r;
        r.address = std::string{pair_of(line, "ip")} + ":" + std::string{pair_of(line, "port")};
        const std::string_view state = pair_of(line, "state");
        r.state = state == "online" ? "online" : "syncing";
        const std::string_view lag = pair_of(line, "lag");
        if (!lag.empty()) r.lag_seconds = static_cast<long long>(unsigned_of(lag));
        replicas.push_back(std::move(r));
    }
    return replicas;
}

auto info_of(const flat_reply& r, std::string_view field) -> std::string {
    if (r.type != flat_reply::kind::text) return {};
    return std::string{info_field(r.text, field)};
}

auto master_from(const node_probe& p, std::string address) -> master_health {
    master_health m;
    m.address = std::move(address);
    m.round_trip = p.round_trip;
    // A server that answers at all is reachable, even if CONFIG is disabled.
    m.reachable = p.answered || (p.cause.empty() && !p.replies.empty());
    m.detail = p.cause;
    if (m.reachable) m.tls = p.tls;
    if (p.replies.size() > config_appendfsync) {
        m.redis_version = info_of(p.replies[info_server], "redis_version");
        m.run_id = info_of(p.replies[info_server], "run_id");
        const std::string aof = info_of(p.replies[info_persistence], "aof_enabled");
        if (!aof.empty()) m.aof_enabled = aof == "1";
        m.role = info_of(p.replies[info_replication], "role");
        const flat_reply& config = p.replies[config_appendfsync];
        if (config.type == flat_reply::kind::array && config.elements.size() == 2)
            m.appendfsync = text_of(config.elements[1]);
        m.replicas = listed_replicas(p.replies[info_replication].text);
    }
    if (p.replies.size() > cluster_info)
        m.cluster_state = info_of(p.replies[cluster_info], "cluster_state");
    // Answered, but with errors only (an ACL, a server that is not Redis): say which.
    if (m.reachable && m.redis_version.empty() && m.detail.empty()) m.detail = first_error(p);
    return m;
}

void describe_member_by(node_health& h, const master_health& m) {
    h.round_trip = m.round_trip;
    h.redis_version = m.redis_version;
    h.run_id = m.run_id;
    h.role = m.role;
    h.aof_enabled = m.aof_enabled;
    h.appendfsync = m.appendfsync;
    h.tls = m.tls;
}

auto age_text(std::uint64_t ms) -> std::string {
    const std::uint64_t s = ms / 1000;
    if (s < 60) return std::to_string(s) + " s";
    if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
    if (s < 86400) return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
    return std::to_string(s / 86400) + " d " + std::to_string(s % 86400 / 3600) + " h";
}

auto replicas_text(const std::vector<replica_health>& replicas) -> std::string {
    if (replicas.empty()) return ", no replica";
    std::string text = ", replicas";
    for (std::size_t i = 0; i < replicas.size(); ++i) {
        const replica_health& r = replicas[i];
        text += (i == 0 ? " " : ", ") + r.address + " (" + r.state;
        if (r.lag_seconds) text += ", lag " + std::to_string(*r.lag_seconds) + " s";
        text += ")";
    }
    return text;
}

auto master_state_text(const master_health& m) -> std::string {
    if (!m.reachable) return "DOWN (" + (m.detail.empty() ? "no answer" : m.detail) + ")";
    std::string text = "up";
    if (!m.role.empty() && m.role != "master") text += ", but role:" + m.role;
    if (m.can_lose_writes()) {
        text += ", CAN LOSE WRITES (";
        text += !m.aof_enabled    ? "persistence unknown"
                : !*m.aof_enabled ? "appendonly no"
                : !m.appendfsync  ? "appendfsync unknown"
                                  : "appendfsync " + *m.appendfsync;
        text += ")";
    }
    return text;
}

auto no_wait_replicas_warning(std::size_t replicas) -> std::string {
    return "its masters have replicas (" + std::to_string(replicas) +
           " in all) and it has no wait_replicas: a failover may promote a replica that lacks "
           "lock keys its master granted. This client does not count the new master's grants "
           "for restart_quarantine_ms, but a client started after the failover cannot see it. "
           "Set \"wait_replicas\" to the replicas of each master, or keep failovers rarer than "
           "your longest TTL";
}

void judge_wait_replicas(node_health& h, const std::string& who, int wanted, std::size_t known,
                         std::size_t connected) {
    if (wanted <= 0) return;
    const auto n = static_cast<std::size_t>(wanted);
    const std::string asks = "wait_replicas " + std::to_string(wanted);
    if (known < n) {
        h.configuration_errors.push_back(
            asks + ", but " + who + " has " +
            (known == 0 ? std::string{"no replica"}
                        : std::to_string(known) + (known == 1 ? " replica" : " replicas")) +
            ": not all of the " + std::to_string(wanted) +
            " replicas wait_replicas asks for can ever acknowledge a write, so none counts "
            "there. Lower wait_replicas or add replicas");
    } else if (connected < n) {
        h.problems.push_back(who + " has " + std::to_string(connected) + " of its " +
                             std::to_string(known) + " replicas streaming, and " + asks +
                             ": its writes do not count until enough are back");
    }
}

}  // namespace redlock::detail
