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

// Waiting without spinning (design: README "Waiting"). Each resource has, on
// each node, a queue of waiters (a sorted set scored by arrival on that node)
// and, per waiter, a liveness key that expires unless the waiter comes back:
// a dead waiter cannot block anyone for longer than its liveness TTL.
//
// KEYS[1] lock key, KEYS[2] fence counter key or "" without fencing,
// KEYS[3] queue key. ARGV[1] value, ARGV[2] ttl ms, ARGV[3] waiter id,
// ARGV[4] liveness ms, ARGV[5] "f" for fair mode (no overtaking a live waiter),
// ARGV[6] the waiter's arrival time (µs, the client's clock): the same score on
// every node, so that every node agrees on who is first.
// Returns {granted 0|1, fence counter, the holder's PTTL (-2: no key)}.
constexpr std::string_view wait_acquire_source = R"lua(
local q, me = KEYS[3], ARGV[3]
local counter = 0
if KEYS[2] ~= '' then counter = tonumber(redis.call('GET', KEYS[2]) or '0') end
local function forget(w)
  redis.call('ZREM', q, w)
  redis.call('DEL', q .. '|' .. w)
end
local ahead = false
if ARGV[5] == 'f' then
  for _ = 1, 64 do
    local head = redis.call('ZRANGE', q, 0, 0)[1]
    if not head or head == me then break end
    if redis.call('EXISTS', q .. '|' .. head) == 1 then ahead = true break end
    forget(head)
  end
end
if not ahead and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  forget(me)
  return {1, counter, -2}
end
redis.call('ZADD', q, 'NX', ARGV[6], me)
redis.call('SET', q .. '|' .. me, '1', 'PX', ARGV[4])
redis.call('PEXPIRE', q, ARGV[4])
return {0, counter, redis.call('PTTL', KEYS[1])}
)lua";

// KEYS[1] lock key, KEYS[2] queue key. ARGV[1] value, ARGV[2] "1" wake the
// first live waiter, "a" wake all live waiters, "0" wake nobody, ARGV[3] the
// wake channel prefix, ARGV[4] the holder's own waiter id or "" (a holder that
// waited may still be queued where its grant answered late: it leaves here).
// Deletes the key if it holds our value; then publishes
// "<waiter id>|<released value>" to "<prefix><client id>" for each woken waiter
// (a waiter id is "<client id>:<n>"; the value lets a waiter that hears of one
// release from several nodes act on it once).
// Returns 1 if deleted, else 0.
constexpr std::string_view release_wake_source = R"lua(
local q = KEYS[2]
if ARGV[4] ~= '' then
  redis.call('ZREM', q, ARGV[4])
  redis.call('DEL', q .. '|' .. ARGV[4])
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if ARGV[2] == '0' then return 1 end
local woken = 0
for _, w in ipairs(redis.call('ZRANGE', q, 0, 63)) do
  if redis.call('EXISTS', q .. '|' .. w) == 1 then
    redis.call('PUBLISH', ARGV[3] .. string.match(w, '^(.*):'), w .. '|' .. ARGV[1])
    woken = woken + 1
    if ARGV[2] == '1' then break end
  else
    redis.call('ZREM', q, w)
  end
end
return 1
)lua";

// KEYS[1] queue key, ARGV[1] waiter id: leave the queue (acquired or gave up).
constexpr std::string_view dequeue_source = R"lua(
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[1] .. '|' .. ARGV[1])
return 1
)lua";

}  // namespace

/// The script made from `source`, once (its SHA-1 computed on first use).
template <const std::string_view& source>
auto cached() -> const script& {
    static const script s = make(source);
    return s;
}

auto wait_acquire_script() -> const script& {
    return cached<wait_acquire_source>();
}
auto release_wake_script() -> const script& {
    return cached<release_wake_source>();
}
auto dequeue_script() -> const script& {
    return cached<dequeue_source>();
}
auto release_script() -> const script& {
    return cached<release_source>();
}
auto acquire_script() -> const script& {
    return cached<acquire_source>();
}
auto fence_confirm_script() -> const script& {
    return cached<fence_confirm_source>();
}
auto extend_script() -> const script& {
    return cached<extend_source>();
}

auto all_scripts() -> std::span<const script* const> {
    static const script* const scripts[] = {
        &release_script(),      &acquire_script(),      &fence_confirm_script(), &extend_script(),
        &wait_acquire_script(), &release_wake_script(), &dequeue_script()};
    return scripts;
}

}  // namespace redlock::detail
