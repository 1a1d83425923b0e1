#include "sansio/scripts.hpp"

namespace redlock::detail {
namespace {

// A session's renewal, every lock of it in one call (README, "Sessions").
// KEYS the keys of the session's locks; ARGV[1] the TTL in ms, then
// ARGV[i + 1] the value KEYS[i] must hold. For each key, in order: 1 if it
// holds that value (its TTL raised to ARGV[1], never shortened), 0 if it holds
// another, -1 if it is missing. Each key is judged alone: the client folds
// the answers of a lock's keys.
constexpr std::string_view session_extend_source = R"lua(
local ttl = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == ARGV[i + 1] then
    if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
    out[i] = 1
  elseif v == false then
    out[i] = -1
  else
    out[i] = 0
  end
end
return out
)lua";

}  // namespace

auto session_extend_script() -> const script& {
    return cached_script<session_extend_source>();
}

}  // namespace redlock::detail
