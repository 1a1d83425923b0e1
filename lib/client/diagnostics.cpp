// The pure half of client::status: the commands it probes every node with, and
// the summaries made of the replies (client.cpp runs the probe in between). Also
// find_duplicate_servers, which check uses (check's own half is
// diagnostics_members.cpp).
// Key layout (README, "Key layout"), T = the resource's tagged form: lock key
// key_prefix + T, holding the holder's value or the readers' marker; the
// readers' sorted set "<lock key>|readers" (value, scored by the end of its
// hold); permit i "<lock key>|permit|<i>". Every key a script reads is in its
// KEYS, like the library's own scripts.

#include "redlock/diagnostics.hpp"

#include "client/diagnostics_parse.hpp"
#include "client/probe_replies.hpp"
#include "operations/lock_commands.hpp"
#include "operations/probe_op.hpp"
#include "redlock/config.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock {
namespace {

using detail::first_error;
using detail::flat_reply;
using detail::node_probe;
using detail::number_of;
using detail::text_of;
using detail::ttl_of;

// While readers hold a resource its lock key holds this marker rather than a
// holder's value (shared_acquire_source, lib/sansio/scripts.cpp).
constexpr std::string_view readers_marker = "~readers";

// The diagnostics' scripts only read, and are sent with EVAL rather than
// loaded at connect time: status is rare, and a node restarted since the
// handshake would answer EVALSHA with NOSCRIPT.
//
// KEYS[1] the readers' set "<lock key>|readers". The readers whose hold has
// not ended (the set is scored by each reader's end, on the node's clock), as
// {value, ms left, ...}: the set may keep the entries of readers that expired
// without releasing, and a listing of it alone would show them as holders. One
// script, so one round trip.
constexpr std::string_view readers_source = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #live, 2 do
  out[#out + 1] = live[i]
  out[#out + 1] = math.floor(tonumber(live[i + 1]) - now)
end
return out
)lua";

// KEYS[1] the permit-count key, KEYS[1 + i] permit i's key for every permit.
// Returns {the count the node knows (nil: none), {permit, value, pttl, ...}
// for each held permit}: free permits cost nothing in the reply, which matters
// for a semaphore of up to 1024.
constexpr std::string_view permits_source = R"lua(
local held = {}
for i = 2, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    held[#held + 1] = i - 2
    held[#held + 1] = v
    held[#held + 1] = redis.call('PTTL', KEYS[i])
  end
end
return {redis.call('GET', KEYS[1]), held}
)lua";

/// The live readers from the reply to readers_source, ordered by value.
auto readers_of(const flat_reply& r) -> std::vector<node_reader> {
    std::vector<node_reader> readers;
    if (r.type != flat_reply::kind::array) return readers;
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
        if (const auto value = text_of(r.elements[i]))
            readers.push_back({*value, ttl_of(r.elements[i + 1])});
    }
    std::ranges::sort(readers, {}, &node_reader::value);
    return readers;
}

/// Fills permit j's view on node `node` from the reply to permits_source, and
/// returns the permit count the node knows.
auto read_permits(const flat_reply& r, std::size_t node, std::vector<permit_state>& permits)
    -> std::optional<int> {
    if (r.type != flat_reply::kind::array || r.elements.size() != 2) return std::nullopt;
    std::optional<int> known;
    if (const auto text = text_of(r.elements[0])) {
        if (const auto count = number_of(*text); count && *count <= 1u << 30)
            known = static_cast<int>(*count);
    }
    const flat_reply& held = r.elements[1];
    for (std::size_t i = 0; i + 2 < held.elements.size(); i += 3) {
        const flat_reply& index = held.elements[i];
        if (index.type != flat_reply::kind::integer || index.integer < 0 ||
            static_cast<std::size_t>(index.integer) >= permits.size())
            continue;
        auto& view = permits[static_cast<std::size_t>(index.integer)].nodes[node];
        view.holder = text_of(held.elements[i + 1]);
        view.ttl = ttl_of(held.elements[i + 2]);
    }
    return known;
}

/// The value at least `quorum` of the counted ones share, if any.
auto majority_of(const std::map<std::string, std::size_t>& counts, std::size_t quorum)
    -> std::optional<std::string> {
    for (const auto& [value, count] : counts) {
        if (count >= quorum) return value;
    }
    return std::nullopt;
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

auto diagnostics_scripts() -> std::span<const std::string_view> {
    static constexpr std::array scripts{readers_source, permits_source};
    return scripts;
}

auto status_commands(const client_config& config, const std::string& resource)
    -> std::vector<std::vector<std::string>> {
    const std::string lock_key{tagged_key(config.key_prefix, resource).view()};
    return {
        {"GET", lock_key},
        {"PTTL", lock_key},
        {"GET", std::string{tagged_key(config.fence_prefix, resource).view()}},
        {"EVAL", std::string{readers_source}, "1", lock_key + "|readers"},
    };
}

auto parse_status(std::string resource, std::size_t quorum, std::vector<node_probe> probes)
    -> lock_status {
    lock_status status;
    status.resource = std::move(resource);
    status.quorum = quorum;
    std::map<std::string, std::size_t> holders;
    std::map<std::string, std::size_t> readers;
    for (auto& p : probes) {
        node_lock_state n;
        n.node = std::move(p.node);
        n.reachable = p.answered;
        n.detail = p.answered ? first_error(p) : p.cause;
        if (p.answered && p.replies.size() == 4) {
            n.holder = text_of(p.replies[0]);
            if (n.holder == readers_marker) {
                n.holder.reset();
                n.shared = true;
            }
            n.ttl = ttl_of(p.replies[1]);
            if (const auto counter = text_of(p.replies[2])) n.fence = number_of(*counter);
            // A script refused (scripting disabled, an ACL) leaves the readers
            // unknown; the error is the node's detail, the rest still stands.
            n.readers = readers_of(p.replies[3]);
            if (n.holder) ++holders[*n.holder];
            for (const auto& r : n.readers) ++readers[r.value];
            if (n.fence && (!status.fence || *n.fence > *status.fence)) status.fence = n.fence;
        }
        status.nodes.push_back(std::move(n));
    }
    status.majority_holder = majority_of(holders, quorum);
    for (const auto& [value, count] : readers) {
        if (count >= quorum) status.majority_readers.push_back(value);
    }
    return status;
}

auto semaphore_commands(const client_config& config, const std::string& resource, int permits)
    -> std::vector<std::vector<std::string>> {
    // The key layout of lock_commands: permit i is key_prefix + T + "|permit|"
    // + i, the count key_prefix + T + "|permits".
    const std::string lock_key{tagged_key(config.key_prefix, resource).view()};
    std::vector<std::string> eval{"EVAL", std::string{permits_source}, std::to_string(permits + 1),
                                  lock_key + "|permits"};
    eval.reserve(eval.size() + static_cast<std::size_t>(std::max(permits, 0)));
    for (int i = 0; i < permits; ++i) eval.push_back(lock_key + "|permit|" + std::to_string(i));
    return {std::move(eval)};
}

auto parse_semaphore(std::string resource, int permits, std::size_t quorum,
                     std::vector<node_probe> probes) -> semaphore_status {
    semaphore_status status;
    status.resource = std::move(resource);
    status.permits = permits;
    status.quorum = quorum;
    status.permit_holders.resize(static_cast<std::size_t>(std::max(permits, 0)));
    for (std::size_t i = 0; i < status.permit_holders.size(); ++i) {
        status.permit_holders[i].permit = static_cast<int>(i);
        status.permit_holders[i].nodes.resize(probes.size());
    }
    for (std::size_t j = 0; j < probes.size(); ++j) {
        node_probe& p = probes[j];
        node_semaphore_state n;
        n.node = std::move(p.node);
        n.reachable = p.answered;
        n.detail = p.answered ? first_error(p) : p.cause;
        if (p.answered && p.replies.size() == 1)
            n.permits = read_permits(p.replies[0], j, status.permit_holders);
        status.nodes.push_back(std::move(n));
    }
    for (auto& permit : status.permit_holders) {
        std::map<std::string, std::size_t> holders;
        for (const auto& view : permit.nodes) {
            if (view.holder) ++holders[*view.holder];
        }
        permit.majority_holder = majority_of(holders, quorum);
    }
    return status;
}

}  // namespace detail
}  // namespace redlock
