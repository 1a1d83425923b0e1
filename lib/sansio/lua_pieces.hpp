#pragma once

// Pieces of Lua that several scripts share, and lua_join, which makes one
// script's text of them at compile time: one text, reviewed once. Each piece
// names what it expects to be defined before it.

#include <array>
#include <cstddef>
#include <string_view>

namespace redlock::detail {

/// The text of `Parts` one after the other, made at compile time.
template <const std::string_view&... Parts>
struct lua_join {
    static constexpr auto chars = [] {
        std::array<char, (Parts.size() + ...)> out{};
        std::size_t at = 0;
        for (const std::string_view part : {Parts...}) {
            for (const char c : part) out[at++] = c;
        }
        return out;
    }();
    static constexpr std::string_view text{chars.data(), chars.size()};
};

/// Raises the fence counter KEYS[2] to ARGV[2] if it is lower (always safe).
inline constexpr std::string_view raise_fence_lua = R"lua(
local counter = tonumber(redis.call('GET', KEYS[2]) or '0')
if counter < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
)lua";

/// Defines tell_observers(), which tells every live observer in the hash `watchers`
/// "<observer id>|~elect" on its client's wake channel (prefix `wake`; '' for none) and on the
/// shard channel `shard` ('' for none: SPUBLISH, cluster members), prunes the dead ones, and
/// returns 1; the three are locals defined before this piece (a function's parameter would
/// hide from tests/unit/scripts_declare_keys_test.cpp that `watchers` is one of KEYS). The
/// node's clock is read only when there is an observer.
inline constexpr std::string_view tell_observers_fn = R"lua(
local function tell_observers()
  local all = redis.call('HGETALL', watchers)
  if #all == 0 then return 1 end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  for i = 1, #all, 2 do
    local id, expiry = all[i], tonumber(all[i + 1])
    if expiry and expiry > now then
      if wake ~= '' then
        redis.call('PUBLISH', wake .. string.match(id, '^(.*):'), id .. '|~elect')
      end
      if shard ~= '' then redis.call('SPUBLISH', shard, id .. '|~elect') end
    else
      redis.call('HDEL', watchers, id)
    end
  end
  return 1
end
)lua";

/// Ends a script: tells the observers (tell_observers_fn) and returns 1.
inline constexpr std::string_view tell_observers_end = R"lua(
return tell_observers()
)lua";

/// The abdication that goes with a campaign's release, ahead of release_wake's body
/// (scripts.cpp): the release's KEYS with the leader hash and the observers' hash after them,
/// its ARGV (ARGV[1] the lock's value, ARGV[3] the wake prefix, ARGV[6] the shard channel).
/// First the locals, then tell_observers_fn, then abdicate_body, which deletes the leader hash
/// where it names this lock's value and tells the observers. `nk`, the release's own key
/// count, leaves the two out.
inline constexpr std::string_view abdicate_locals = R"lua(
local nk = #KEYS - 2
local leader, watchers, wake, shard = KEYS[#KEYS - 1], KEYS[#KEYS], ARGV[3], ARGV[6] or ''
)lua";
inline constexpr std::string_view abdicate_body = R"lua(
if ARGV[1] ~= '' and redis.call('HGET', leader, 'lock') == ARGV[1] then
  redis.call('DEL', leader)
  tell_observers()
end
)lua";

}  // namespace redlock::detail
