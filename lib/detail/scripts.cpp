#include "detail/scripts.hpp"

#include "detail/sha1.hpp"

namespace redlock::detail {
namespace {

auto make(std::string_view source) -> script {
    return script{source, sha1_hex(source)};
}

// Every script takes the lock keys first. Values and TTLs are ARGV, never
// spliced into the source, so the SHA-1 of each script is a constant.

constexpr std::string_view release_source = R"lua(
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    deleted = deleted + redis.call('DEL', KEYS[i])
  end
end
return deleted
)lua";

constexpr std::string_view acquire_source = R"lua(
local locks = #KEYS
local counter = 0
if ARGV[3] == '1' then
  locks = locks - 1
  counter = tonumber(redis.call('GET', KEYS[#KEYS]) or '0')
end
for i = 1, locks do
  if redis.call('EXISTS', KEYS[i]) == 1 then return {0, counter} end
end
for i = 1, locks do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return {1, counter}
)lua";

constexpr std::string_view fence_confirm_source = R"lua(
local counter = tonumber(redis.call('GET', KEYS[2]) or '0')
if counter < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
)lua";

constexpr std::string_view extend_source = R"lua(
local missing = false
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == false then
    missing = true
  elseif v ~= ARGV[1] then
    return 0
  end
end
if missing then return -1 end
local ttl = tonumber(ARGV[2])
for i = 1, #KEYS do
  if redis.call('PTTL', KEYS[i]) < ttl then
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
end
return 1
)lua";

}  // namespace

auto release_script() -> const script& {
    static const script s = make(release_source);
    return s;
}

auto acquire_script() -> const script& {
    static const script s = make(acquire_source);
    return s;
}

auto fence_confirm_script() -> const script& {
    static const script s = make(fence_confirm_source);
    return s;
}

auto extend_script() -> const script& {
    static const script s = make(extend_source);
    return s;
}

auto all_scripts() -> std::span<const script* const> {
    static const script* const scripts[] = {&release_script(), &acquire_script(),
                                            &fence_confirm_script(), &extend_script()};
    return scripts;
}

}  // namespace redlock::detail
