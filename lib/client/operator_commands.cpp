#include "client/operator_commands.hpp"

#include "client/probe_replies.hpp"
#include "operations/holder_text.hpp"
#include "operations/lock_commands.hpp"
#include "redlock/lock.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <utility>

namespace redlock::detail {
namespace {

// The break (sent with EVAL: breaks are rare). KEYS[1] lock key, KEYS[2] its
// readers' set, KEYS[3] the tombstone hash, KEYS[4] the audit stream, KEYS[5]
// the fence counter, then with permits KEYS[6] the permit-count key and
// KEYS[7 + i] permit i's key. ARGV[1] breaker, ARGV[2] reason, ARGV[3] the
// breaker's wall clock (ms), ARGV[4] the stream's cap. Deletes every hold (a
// reader only if its hold has not ended), records each in the tombstone and
// the stream (one entry each; one "none" entry when nothing was held), and
// returns {kind, value, ms left, ...}.
constexpr std::string_view break_source = R"lua(
local lock, readers, broken, audit, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local victims = {}
local held = redis.call('GET', lock)
if held == '~readers' then
  local rs = redis.call('ZRANGE', readers, 0, -1, 'WITHSCORES')
  for i = 1, #rs, 2 do
    local left = math.floor(tonumber(rs[i + 1]) - now)
    if left > 0 then victims[#victims + 1] = {'reader', rs[i], left} end
  end
elseif held then
  victims[#victims + 1] = {'writer', held, redis.call('PTTL', lock)}
end
redis.call('DEL', lock, readers)
for i = 7, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    victims[#victims + 1] = {'permit ' .. (i - 7), v, redis.call('PTTL', KEYS[i])}
    redis.call('DEL', KEYS[i])
  end
end
local counter = redis.call('GET', fence) or ''
local function record(kind, value)
  redis.call('XADD', audit, 'MAXLEN', '~', ARGV[4], '*', 'time', ARGV[3], 'breaker', ARGV[1],
             'reason', ARGV[2], 'kind', kind, 'value', value, 'fence', counter)
end
local out, longest = {}, 1000
for _, v in ipairs(victims) do
  redis.call('HSET', broken, v[2], ARGV[1] .. ': ' .. ARGV[2])
  if v[3] > longest then longest = v[3] end
  record(v[1], v[2])
  out[#out + 1] = v[1]
  out[#out + 1] = v[2]
  out[#out + 1] = v[3]
end
if #victims == 0 then record('none', '') end
if #victims > 0 and redis.call('PTTL', broken) < longest then
  redis.call('PEXPIRE', broken, longest)
end
return out
)lua";

auto lock_key_of(const client_config& config, const std::string& resource) -> std::string {
    return std::string{tagged_key(config.key_prefix, resource).view()};
}

auto reports_of(const std::vector<node_probe>& probes, std::size_t& ok)
    -> std::vector<node_report> {
    std::vector<node_report> nodes;
    ok = 0;
    for (const auto& p : probes) {
        const std::string problem = p.answered ? first_error(p) : p.cause;
        if (p.answered && problem.empty()) ++ok;
        nodes.push_back({p.node, problem.empty() ? node_status::ok : node_status::error, problem});
    }
    return nodes;
}

auto field_of(const flat_reply& fields, std::string_view name) -> std::string {
    for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
        if (fields.elements[i].text == name) return fields.elements[i + 1].text;
    }
    return {};
}

}  // namespace

auto operator_scripts() -> std::span<const std::string_view> {
    static constexpr std::array scripts{break_source};
    return scripts;
}

auto break_problem(std::string_view reason, const force_release_options& options) -> std::string {
    if (reason.empty()) return "a break needs a reason (it is recorded in the audit)";
    if (reason.size() > 1000) return "reason must be at most 1000 bytes";
    if (options.breaker) {
        if (auto problem = holder_problem(*options.breaker); !problem.empty())
            return "breaker: " + problem;
    }
    if (options.permits && (*options.permits < 1 || *options.permits > max_permits))
        return "permits must be between 1 and " + std::to_string(max_permits);
    return {};
}

auto break_commands(const client_config& config, const std::string& resource,
                    std::string_view reason, std::string_view breaker,
                    const force_release_options& options, std::int64_t wall_ms)
    -> std::vector<std::vector<std::string>> {
    const std::string lock_key = lock_key_of(config, resource);
    std::vector<std::string> call{"EVAL",
                                  std::string{break_source},
                                  "0",
                                  lock_key,
                                  lock_key + "|readers",
                                  lock_key + "|broken",
                                  lock_key + "|audit",
                                  std::string{tagged_key(config.fence_prefix, resource).view()}};
    if (options.permits) {
        call.push_back(lock_key + "|permits");
        for (int i = 0; i < *options.permits; ++i)
            call.push_back(lock_key + "|permit|" + std::to_string(i));
    }
    call[2] = std::to_string(call.size() - 3);
    call.insert(call.end(), {std::string{breaker}, std::string{reason}, std::to_string(wall_ms),
                             std::to_string(audit_length)});
    return {std::move(call)};
}

auto parse_break(std::string resource, std::size_t quorum, std::vector<node_probe> probes)
    -> break_report {
    break_report report;
    report.resource = std::move(resource);
    report.quorum = quorum;
    report.nodes = reports_of(probes, report.broken_on);
    std::map<std::pair<std::string, std::string>, broken_hold> seen;
    for (const auto& p : probes) {
        if (!p.answered || p.replies.size() != 1) continue;
        const flat_reply& r = p.replies.front();
        for (std::size_t i = 0; i + 2 < r.elements.size(); i += 3) {
            const std::string& kind = r.elements[i].text;
            broken_hold& h = seen[{kind, r.elements[i + 1].text}];
            if (h.nodes == 0) {
                h.value = r.elements[i + 1].text;
                h.holder = std::string{holder_of(h.value)};
                h.kind = kind.starts_with("permit ") ? "permit" : kind;
                if (kind.starts_with("permit "))
                    h.permit = static_cast<int>(number_of(kind.substr(7)).value_or(0));
            }
            ++h.nodes;
            h.ttl_left = std::max(h.ttl_left, std::chrono::milliseconds{r.elements[i + 2].integer});
        }
    }
    for (auto& [key, hold] : seen) report.broken.push_back(std::move(hold));
    std::ranges::stable_sort(report.broken, std::ranges::greater{}, &broken_hold::nodes);
    return report;
}

auto audit_commands(const client_config& config, const std::string& resource, std::size_t limit)
    -> std::vector<std::vector<std::string>> {
    return {{"XREVRANGE", lock_key_of(config, resource) + "|audit", "+", "-", "COUNT",
             std::to_string(limit)}};
}

auto parse_audit(std::string resource, std::size_t quorum, std::vector<node_probe> probes)
    -> audit_log {
    audit_log log;
    log.resource = std::move(resource);
    log.quorum = quorum;
    std::size_t answered = 0;
    log.nodes = reports_of(probes, answered);
    // One break is the same entry on every node but its stream id (each node's
    // clock): grouped by what the breaker sent.
    using entry_key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
    std::map<entry_key, audit_entry> seen;
    // Where an entry stands in a node's stream (newest first): breaks in one
    // millisecond keep the order a node recorded them in.
    std::map<const audit_entry*, std::size_t> rank;
    for (const auto& p : probes) {
        if (!p.answered || p.replies.size() != 1) continue;
        std::size_t position = 0;
        for (const flat_reply& item : p.replies.front().elements) {
            ++position;
            if (item.elements.size() != 2) continue;
            const flat_reply& fields = item.elements[1];
            const std::string time = field_of(fields, "time");
            audit_entry& e = seen[{time, field_of(fields, "breaker"), field_of(fields, "reason"),
                                   field_of(fields, "kind"), field_of(fields, "value")}];
            if (e.nodes == 0) {
                e.time = std::chrono::system_clock::time_point{
                    std::chrono::milliseconds{number_of(time).value_or(0)}};
                e.resource = log.resource;
                e.breaker = field_of(fields, "breaker");
                e.reason = field_of(fields, "reason");
                e.kind = field_of(fields, "kind");
                e.value = field_of(fields, "value");
                e.holder = std::string{holder_of(e.value)};
                e.fence = number_of(field_of(fields, "fence"));
            }
            ++e.nodes;
            const auto [at, fresh] = rank.emplace(&e, position);
            if (!fresh) at->second = std::min(at->second, position);
        }
    }
    std::vector<const audit_entry*> order;
    for (const auto& [key, e] : seen) order.push_back(&e);
    std::ranges::stable_sort(order, [&rank](const audit_entry* a, const audit_entry* b) {
        return a->time != b->time ? a->time > b->time : rank[a] < rank[b];
    });
    for (const audit_entry* e : order)
        (e->nodes >= quorum ? log.entries : log.minority).push_back(*e);
    return log;
}

auto fence_check_commands(const client_config& config, const std::string& resource)
    -> std::vector<std::vector<std::string>> {
    const std::string lock_key = lock_key_of(config, resource);
    return {{"GET", std::string{tagged_key(config.fence_prefix, resource).view()}},
            {"GET", lock_key},
            {"PTTL", lock_key}};
}

auto parse_fence_check(std::string resource, std::uint64_t token, std::size_t quorum,
                       std::vector<node_probe> probes) -> fence_check {
    fence_check check;
    check.resource = std::move(resource);
    check.token = token;
    check.quorum = quorum;
    // Per value: the nodes where it holds the lock and the counter is `token`.
    std::map<std::string, std::size_t> current_on;
    std::map<std::string, std::size_t> held_on;
    std::size_t answered = 0;
    for (auto& p : probes) {
        node_fence_state n;
        n.node = std::move(p.node);
        n.reachable = p.answered;
        n.detail = p.answered ? first_error(p) : p.cause;
        if (p.answered && p.replies.size() == 3) {
            ++answered;
            if (const auto text = text_of(p.replies[0])) n.counter = number_of(*text);
            n.holder = text_of(p.replies[1]);
            if (n.holder == "~readers") n.holder.reset();  // readers hold no writer's token
            n.ttl = ttl_of(p.replies[2]);
            if (n.counter) check.highest = std::max(check.highest.value_or(0), *n.counter);
            if (n.holder) {
                ++held_on[*n.holder];
                if (n.counter == token) ++current_on[*n.holder];
            }
        }
        check.nodes.push_back(std::move(n));
    }
    for (const auto& [value, count] : held_on) {
        if (count >= quorum) check.holder = value;
    }
    for (const auto& [value, count] : current_on) {
        if (count >= quorum) check.current = true;
    }
    if (check.current) return check;
    if (answered < quorum) {
        check.reason = "only " + std::to_string(answered) + " of " +
                       std::to_string(check.nodes.size()) + " nodes answered, " +
                       std::to_string(quorum) + " needed";
    } else if (check.highest && *check.highest > token) {
        check.reason = "stale: a later holder was granted token " + std::to_string(*check.highest);
    } else if (!check.holder) {
        check.reason = "no majority holds the lock now (released, expired, or never granted)";
    } else {
        check.reason = "the lock a majority holds does not carry token " + std::to_string(token);
    }
    return check;
}

auto tombstone_commands(const client_config& config, const std::string& resource,
                        const std::string& value) -> std::vector<std::vector<std::string>> {
    return {{"HGET", lock_key_of(config, resource) + "|broken", value}};
}

auto parse_tombstone(const std::vector<node_probe>& probes) -> std::string {
    for (const auto& p : probes) {
        if (!p.answered || p.replies.size() != 1) continue;
        if (const auto text = text_of(p.replies.front())) return "broken by " + *text;
    }
    return {};
}

}  // namespace redlock::detail
