#include "client/election_commands.hpp"

#include "client/probe_replies.hpp"
#include "operations/acquire_checks.hpp"
#include "operations/lock_commands.hpp"
#include "sansio/election_tally.hpp"

#include <array>
#include <utility>

namespace redlock::detail {
namespace {

// The leader key's writes. KEYS[1] lock key, KEYS[2] leader key, KEYS[3] the
// observers' hash. ARGV[1] "p" to proclaim, "a" to abdicate; ARGV[2] the
// leader's lock value; ARGV[3] the wake channel prefix; a proclamation's
// ARGV[4] term, ARGV[5] seq, ARGV[6] value. A proclamation is stored only
// where the lock key holds the leader's value (only the holder proclaims), and
// never over a newer one of the same leader; an abdication deletes the leader
// key only where it names the leader's value. Either tells every live
// observer, on its client's wake channel, "<observer id>|~elect" (and prunes
// the dead ones). Returns 1 if done (or already superseded), else 0.
constexpr std::string_view elect_write_source = R"lua(
local lock, leader, watchers = KEYS[1], KEYS[2], KEYS[3]
if ARGV[1] == 'p' then
  if redis.call('GET', lock) ~= ARGV[2] then return 0 end
  local seq = tonumber(redis.call('HGET', leader, 'seq') or '-1')
  if redis.call('HGET', leader, 'lock') == ARGV[2] and seq >= tonumber(ARGV[5]) then
    return 1
  end
  redis.call('HSET', leader, 'term', ARGV[4], 'lock', ARGV[2], 'seq', ARGV[5], 'value', ARGV[6])
else
  if redis.call('HGET', leader, 'lock') ~= ARGV[2] then return 0 end
  redis.call('DEL', leader)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', watchers)
for i = 1, #all, 2 do
  local id, expiry = all[i], tonumber(all[i + 1])
  if expiry and expiry > now then
    redis.call('PUBLISH', ARGV[3] .. string.match(id, '^(.*):'), id .. '|~elect')
  else
    redis.call('HDEL', watchers, id)
  end
end
return 1
)lua";

// An observer's registration. KEYS[1] the observers' hash; ARGV[1] observer id,
// ARGV[2] ttl ms. Its entry expires unless renewed; so does the hash.
constexpr std::string_view watch_source = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], now + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
)lua";

constexpr std::array<std::string_view, 2> sources{elect_write_source, watch_source};

auto key(const client_config& config, const std::string& name, std::string_view suffix = {})
    -> std::string {
    return std::string{tagged_key(config.key_prefix, name, suffix).view()};
}

auto wake_prefix(const client_config& config) -> std::string {
    return config.queue_prefix + "wake:";
}

auto write_call(const client_config& config, const std::string& name, std::vector<std::string> args)
    -> std::vector<std::string> {
    std::vector<std::string> c{"EVAL",
                               std::string{elect_write_source},
                               "3",
                               key(config, name),
                               key(config, name, "|leader"),
                               key(config, name, "|observers")};
    for (auto& a : args) c.push_back(std::move(a));
    return c;
}

auto watch_call(const client_config& config, const std::string& name, std::string_view observer)
    -> std::vector<std::string> {
    return {"EVAL",
            std::string{watch_source},
            "1",
            key(config, name, "|observers"),
            std::string{observer},
            std::to_string(observer_ttl.count())};
}

}  // namespace

auto election_scripts() -> std::span<const std::string_view> {
    return sources;
}

auto election_problem(const std::string& name) -> std::string {
    if (name.empty()) return "the election name is empty";
    return resource_problem(name);
}

auto proclaim_commands(const client_config& config, const std::string& name,
                       std::string_view lock_value, std::uint64_t term, std::uint64_t seq,
                       std::string_view value) -> std::vector<std::vector<std::string>> {
    return {write_call(config, name,
                       {"p", std::string{lock_value}, wake_prefix(config), std::to_string(term),
                        std::to_string(seq), std::string{value}})};
}

auto abdicate_commands(const client_config& config, const std::string& name,
                       std::string_view lock_value) -> std::vector<std::vector<std::string>> {
    return {write_call(config, name, {"a", std::string{lock_value}, wake_prefix(config)})};
}

auto count_writes(const std::vector<node_probe>& probes) -> write_count {
    write_count count;
    for (const auto& p : probes) {
        if (!p.answered || p.replies.size() != 1) continue;
        const flat_reply& r = p.replies.front();
        if (r.type != flat_reply::kind::integer) continue;
        ++(r.integer == 1 ? count.done : count.refused);
    }
    return count;
}

auto leader_commands(const client_config& config, const std::string& name,
                     std::string_view observer) -> std::vector<std::vector<std::string>> {
    std::vector<std::vector<std::string>> c;
    if (!observer.empty()) c.push_back(watch_call(config, name, observer));
    const std::string lock = key(config, name);
    c.push_back({"GET", lock});
    c.push_back({"PTTL", lock});
    c.push_back({"HMGET", key(config, name, "|leader"), "term", "lock", "seq", "value"});
    c.push_back({"GET", std::string{tagged_key(config.fence_prefix, name).view()}});
    return c;
}

auto watch_commands(const client_config& config, const std::string& name, std::string_view observer)
    -> std::vector<std::vector<std::string>> {
    return {watch_call(config, name, observer)};
}

auto unwatch_commands(const client_config& config, const std::string& name,
                      std::string_view observer) -> std::vector<std::vector<std::string>> {
    return {{"HDEL", key(config, name, "|observers"), std::string{observer}}};
}

auto parse_leader(std::string name, std::size_t quorum, const std::vector<node_probe>& probes)
    -> election_view {
    std::vector<node_election> nodes;
    nodes.reserve(probes.size());
    for (const auto& p : probes) {
        node_election n;
        // The registration, when there is one, comes first: the last four are the reads.
        if (p.answered && p.replies.size() >= 4 && first_error(p).empty()) {
            const auto r = std::span{p.replies}.last(4);
            n.answered = true;
            n.lock_value = text_of(r[0]);
            n.ttl = ttl_of(r[1]);
            if (r[2].type == flat_reply::kind::array && r[2].elements.size() == 4) {
                const auto& f = r[2].elements;
                if (const auto t = text_of(f[0])) n.leader_term = number_of(*t);
                n.leader_lock = text_of(f[1]);
                if (const auto s = text_of(f[2])) n.leader_seq = number_of(*s);
                n.leader_value = text_of(f[3]);
            }
            if (const auto c = text_of(r[3])) n.counter = number_of(*c);
        }
        nodes.push_back(std::move(n));
    }
    return tally_election(std::move(name), nodes, quorum);
}

}  // namespace redlock::detail
