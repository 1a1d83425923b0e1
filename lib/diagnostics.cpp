// The pure half of client::status and client::check: the commands they probe
// every node with, and the summaries made of the replies (client.cpp runs the
// probe in between). Also find_duplicate_servers, which check uses.

#include "redlock/diagnostics.hpp"

#include "detail/diagnostics_parse.hpp"
#include "detail/node_handshake.hpp"
#include "detail/probe_op.hpp"
#include "redlock/config.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock {
namespace {

using detail::flat_reply;
using detail::node_probe;

auto text_of(const flat_reply& r) -> std::optional<std::string> {
    if (r.type == flat_reply::kind::text) return r.text;
    return std::nullopt;
}

auto number_of(std::string_view text) -> std::optional<std::uint64_t> {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

/// `field:value` from the text of an INFO reply (the handshake's parser).
/// Not named info_field: inside namespace detail that name would hide this one.
auto info_reply_field(const flat_reply& r, std::string_view field) -> std::string {
    if (r.type != flat_reply::kind::text) return {};
    return std::string{detail::info_field(r.text, field)};
}

auto first_error(const node_probe& p) -> std::string {
    for (const auto& r : p.replies) {
        if (r.type == flat_reply::kind::error) return r.text;
    }
    return {};
}

}  // namespace

auto find_duplicate_servers(const std::vector<node_health>& nodes)
    -> std::vector<duplicate_server> {
    // A run_id is 40 random hex digits chosen at start-up, so two servers
    // never share one; a node that restarts between two probes only hides a
    // duplicate until the next check.
    std::map<std::string_view, std::vector<std::size_t>> by_run_id;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (!nodes[i].run_id.empty()) by_run_id[nodes[i].run_id].push_back(i);
    }
    std::vector<duplicate_server> groups;
    for (auto& [run_id, members] : by_run_id) {
        if (members.size() > 1) groups.push_back({std::string{run_id}, std::move(members)});
    }
    std::ranges::sort(groups, {}, [](const duplicate_server& d) { return d.nodes.front(); });
    return groups;
}

namespace detail {

auto status_commands(const client_config& config, const std::string& resource)
    -> std::vector<std::vector<std::string>> {
    return {
        {"GET", config.key_prefix + resource},
        {"PTTL", config.key_prefix + resource},
        {"GET", config.fence_prefix + resource},
    };
}

auto parse_status(std::string resource, std::size_t quorum, std::vector<node_probe> probes)
    -> lock_status {
    lock_status status;
    status.resource = std::move(resource);
    status.quorum = quorum;
    std::map<std::string, std::size_t> holders;
    for (auto& p : probes) {
        node_lock_state n;
        n.node = std::move(p.node);
        n.reachable = p.answered;
        n.detail = p.answered ? first_error(p) : p.cause;
        if (p.answered && p.replies.size() == 3) {
            n.holder = text_of(p.replies[0]);
            if (p.replies[1].type == flat_reply::kind::integer && p.replies[1].integer >= 0) {
                n.ttl = std::chrono::milliseconds{p.replies[1].integer};
            }
            if (const auto counter = text_of(p.replies[2])) n.fence = number_of(*counter);
            if (n.holder) ++holders[*n.holder];
            if (n.fence && (!status.fence || *n.fence > *status.fence)) status.fence = n.fence;
        }
        status.nodes.push_back(std::move(n));
    }
    for (const auto& [value, count] : holders) {
        if (count >= quorum) status.majority_holder = value;
    }
    return status;
}

auto health_commands() -> std::vector<std::vector<std::string>> {
    return {
        {"INFO", "server"},
        {"INFO", "persistence"},
        {"INFO", "replication"},
        {"CONFIG", "GET", "appendfsync"},
    };
}

auto parse_health(std::size_t quorum, std::vector<node_probe> probes) -> cluster_health {
    cluster_health health;
    health.quorum = quorum;
    for (auto& p : probes) {
        node_health h;
        h.node = std::move(p.node);
        // A node that answers at all is reachable, even if CONFIG is disabled.
        h.reachable = p.answered || (p.cause.empty() && !p.replies.empty());
        h.detail = p.cause;
        h.round_trip = p.round_trip;
        if (p.replies.size() == 4) {
            h.redis_version = info_reply_field(p.replies[0], "redis_version");
            h.run_id = info_reply_field(p.replies[0], "run_id");
            const std::string aof = info_reply_field(p.replies[1], "aof_enabled");
            if (!aof.empty()) h.aof_enabled = aof == "1";
            h.role = info_reply_field(p.replies[2], "role");
            const flat_reply& config = p.replies[3];
            if (config.type == flat_reply::kind::array && config.elements.size() == 2) {
                h.appendfsync = text_of(config.elements[1]);
            }
        }
        if (h.reachable && h.redis_version.empty() && h.detail.empty()) h.detail = first_error(p);
        health.nodes.push_back(std::move(h));
    }
    health.duplicates = find_duplicate_servers(health.nodes);
    return health;
}

}  // namespace detail
}  // namespace redlock
