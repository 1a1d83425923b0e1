#include "sansio/election_scripts.hpp"

#include "sansio/lua_pieces.hpp"

#include <array>

namespace redlock::detail {
namespace {

// A proclamation is stored only where the lock key holds the leader's value
// (only the holder proclaims), and never over a newer one of the same leader.
// (An abdication rides in the campaign lock's release: scripts.cpp,
// abdicate_release_wake_source.)
constexpr std::string_view elect_write_head = R"lua(
local lock, leader, watchers, wake, shard = KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3]
if redis.call('GET', lock) ~= ARGV[1] then return 0 end
local seq = tonumber(redis.call('HGET', leader, 'seq') or '-1')
if redis.call('HGET', leader, 'lock') == ARGV[1] and seq >= tonumber(ARGV[5]) then
  return 1
end
redis.call('HSET', leader, 'term', ARGV[4], 'lock', ARGV[1], 'seq', ARGV[5], 'value', ARGV[6])
)lua";
constexpr std::string_view elect_write =
    lua_join<elect_write_head, tell_observers_fn, tell_observers_end>::text;

// The entry expires unless renewed; so does the hash.
constexpr std::string_view watch_lua = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], now + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
)lua";

// The proclamation is 0 of the term: a later one of the same leader (seq > 0,
// sent only once this confirm was counted) is never overwritten by a confirm
// sent again as EVAL.
constexpr std::string_view proclaim_first = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local leader, watchers, wake, shard = KEYS[3], KEYS[4], ARGV[3], ARGV[4]
if redis.call('HGET', leader, 'lock') ~= ARGV[1] then
  redis.call('HSET', leader, 'term', ARGV[2], 'lock', ARGV[1], 'seq', '0', 'value', ARGV[5])
end
)lua";
constexpr std::string_view fence_confirm_proclaim_source =
    lua_join<raise_fence_lua, proclaim_first, tell_observers_fn, tell_observers_end>::text;

constexpr std::array<std::string_view, 3> sources{elect_write, watch_lua,
                                                  fence_confirm_proclaim_source};

}  // namespace

auto elect_write_source() -> std::string_view {
    return elect_write;
}

auto watch_source() -> std::string_view {
    return watch_lua;
}

auto fence_confirm_proclaim_script() -> const script& {
    return cached_script<fence_confirm_proclaim_source>();
}

auto election_scripts() -> std::span<const std::string_view> {
    return sources;
}

}  // namespace redlock::detail
