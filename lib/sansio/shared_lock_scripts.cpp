// The scripts of the shared lock kinds: a read-write lock's reader and a semaphore's permit
// (their releases go through release_wake_script, in scripts.cpp, with every other kind).
#include "sansio/scripts.hpp"

namespace redlock::detail {
namespace {

// A reader's grant (README, "Read-write locks"). On one node the resource is
// held either by an exclusive holder (the lock key holds its value) or by
// readers: the lock key holds the marker "~readers", and the sorted set
// "<lock key>|readers" holds each reader's value scored by the moment its hold
// ends (the node's clock, ms: TIME). The marker's TTL is never shorter than a
// live reader's, so a writer's SET NX fails while any reader holds, and a
// crashed reader blocks nobody for longer than its own TTL once the others are
// gone. Entries past their end are pruned as the set is used.
//
// KEYS[1] lock key, KEYS[2] its readers' set, KEYS[3] queue key, KEYS[4] the
// queue's liveness hash (scripts.cpp, "Waiting"), KEYS[5] the fence counter key
// (only for a reader that reads it). ARGV[1] value, ARGV[2] ttl ms, ARGV[3]
// waiter id or "" (not waiting), ARGV[4] liveness ms, ARGV[5] the waiter's
// arrival (µs, the same on every node) or "", ARGV[6] "1" to skip the
// writer-preference check (an extend's repair of a reader that already held).
// Writer-preferring: a live writer queued ahead of us (every queued writer, for
// a reader that does not wait) refuses us. A refused waiter is queued as "r".
// Returns {granted 0|1, fence counter, the lock key's PTTL (-2: no key)}; or,
// for a reader that neither waits nor reads a fence counter, just 1 or 0 (a
// plain integer costs the client less to parse).
constexpr std::string_view shared_acquire_source = R"lua(
local k, readers, q, live = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local me = ARGV[3]
local fenced = #KEYS == 5
local plain = not fenced and me == ''
local counter = 0
if fenced then counter = tonumber(redis.call('GET', KEYS[5]) or '0') end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holder = redis.call('GET', k)
local blocked = holder ~= false and holder ~= '~readers'
if not blocked and ARGV[6] ~= '1' and redis.call('EXISTS', q) == 1 then
  local arrival = math.huge
  if me ~= '' then arrival = tonumber(ARGV[5]) end
  local queue = redis.call('ZRANGE', q, 0, 63, 'WITHSCORES')
  for i = 1, #queue, 2 do
    local w = queue[i]
    if tonumber(queue[i + 1]) >= arrival then break end
    local kind, expiry = string.match(redis.call('HGET', live, w) or '', '^(.*)|(%d+)$')
    if not expiry or tonumber(expiry) <= now then
      redis.call('ZREM', q, w)
      redis.call('HDEL', live, w)
    elseif kind ~= 'r' and w ~= me then
      blocked = true
      break
    end
  end
end
if not blocked then
  local ttl = tonumber(ARGV[2])
  redis.call('ZADD', readers, 'GT', now + ttl, ARGV[1])
  if not holder then
    redis.call('SET', k, '~readers', 'PX', ttl)
    redis.call('PEXPIRE', readers, ttl)
  else
    redis.call('ZREMRANGEBYSCORE', readers, '-inf', now)
    if redis.call('PTTL', k) < ttl then
      redis.call('PEXPIRE', k, ttl)
      redis.call('PEXPIRE', readers, ttl)
    end
  end
  if me ~= '' then
    redis.call('ZREM', q, me)
    redis.call('HDEL', live, me)
  end
  if plain then return 1 end
  return {1, counter, -2}
end
if me ~= '' then
  redis.call('ZADD', q, 'NX', ARGV[5], me)
  redis.call('HSET', live, me, 'r|' .. (now + tonumber(ARGV[4])))
  redis.call('PEXPIRE', q, ARGV[4])
  redis.call('PEXPIRE', live, ARGV[4])
end
if plain then return 0 end
return {0, counter, redis.call('PTTL', k)}
)lua";

// A reader's extend. KEYS[1] lock key, KEYS[2] its readers' set; ARGV[1]
// value, ARGV[2] ttl ms. Moves
// the reader's end later (and the marker's TTL, and the set's, never
// shortening any) and returns the time left to the reader there (ms, at least
// 1); returns -1 if the reader is not in the set or
// its hold has ended there (restarted, evicted, expired: repairable), 0 if a
// writer holds the resource there.
constexpr std::string_view shared_extend_source = R"lua(
local k, readers = KEYS[1], KEYS[2]
local ttl = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ms = tonumber(redis.call('ZSCORE', readers, ARGV[1]))
local holder = redis.call('GET', k)
if holder ~= '~readers' or not until_ms or until_ms <= now then
  if holder and holder ~= '~readers' then return 0 end
  return -1
end
redis.call('ZADD', readers, 'XX', 'GT', now + ttl, ARGV[1])
local left = redis.call('PTTL', k)
if left < ttl then
  redis.call('PEXPIRE', k, ttl)
  redis.call('PEXPIRE', readers, ttl)
  left = ttl
end
return math.max(math.min(math.max(until_ms, now + ttl) - now, left), 1)
)lua";

// A semaphore's permit (README, "Semaphores"): K permits, each an exclusive
// lock of its own ("<lock key>|permit|<i>"). A node grants the first free
// permit from ARGV[4] on; the client holds permit i only where a majority
// granted i. KEYS[1] the permit-count key, KEYS[2] queue key, KEYS[3] its
// liveness hash (scripts.cpp, "Waiting"), KEYS[4 + i] permit i's key, for
// every i in 0..K-1. ARGV[1] value, ARGV[2] ttl ms, ARGV[3] K, ARGV[4] the
// permit to try first, ARGV[5] waiter id or "" (not waiting), ARGV[6]
// liveness ms, ARGV[7] "f" for fair mode (no overtaking a live waiter),
// ARGV[8] the waiter's arrival.
// Returns {1, permit, -2} when granted, {0, -1, the soonest a permit's TTL
// ends (-2: unknown)} when all are held, {-1, the node's K, -2} when the node
// knows this semaphore with another K.
constexpr std::string_view permit_acquire_source = R"lua(
local count, q, live = KEYS[1], KEYS[2], KEYS[3]
local me = ARGV[5]
local known = redis.call('GET', count)
if known and known ~= ARGV[3] then return {-1, tonumber(known), -2} end
local n, first, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[2])
if #KEYS ~= n + 3 then return redis.error_reply('ERR expected ' .. n .. ' permit keys') end
local now
local function clock()
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end
local function forget(w)
  redis.call('ZREM', q, w)
  redis.call('HDEL', live, w)
end
local ahead = false
if ARGV[7] == 'f' then
  for _ = 1, 64 do
    local head = redis.call('ZRANGE', q, 0, 0)[1]
    if not head or head == me then break end
    local _, expiry = string.match(redis.call('HGET', live, head) or '', '^(.*)|(%d+)$')
    if expiry and tonumber(expiry) > clock() then ahead = true break end
    forget(head)
  end
end
-- One PTTL per permit: it tells a free permit (-2) and, for a held one, when
-- it could free, so a refusal costs K calls, not 2K.
local soonest = -2
for j = 0, n - 1 do
  local p = (first + j) % n
  local left = redis.call('PTTL', KEYS[4 + p])
  if left == -2 and not ahead then
    redis.call('SET', KEYS[4 + p], ARGV[1], 'PX', ttl)
    if redis.call('PTTL', count) < ttl then redis.call('SET', count, ARGV[3], 'PX', ttl) end
    if me ~= '' then forget(me) end
    return {1, p, -2}
  end
  if left >= 0 and (soonest < 0 or left < soonest) then soonest = left end
end
if me ~= '' then
  redis.call('ZADD', q, 'NX', ARGV[8], me)
  redis.call('HSET', live, me, '1|' .. (clock() + tonumber(ARGV[6])))
  redis.call('PEXPIRE', q, ARGV[6])
  redis.call('PEXPIRE', live, ARGV[6])
end
return {0, -1, soonest}
)lua";

// A permit's extend. KEYS[1] the permit-count key, KEYS[2..] the permit key
// (or every permit key, when the permit is not known); ARGV[1] value, ARGV[2]
// ttl ms, ARGV[3] K. Raises the TTL of the permit that holds our value (never
// shortening it) and returns the TTL it has (ms, at least 1); else -1 if the one permit named is
// missing (repairable), 0 otherwise. With every permit key named, the TTL comes
// as {ttl, permit}: a value may hold another permit on some node (a stray whose
// release was lost), and the client counts each node's yes for the permit it
// extended only (extend_decision, issue 36), as an acquisition counts grants.
constexpr std::string_view permit_extend_source = R"lua(
local ttl = tonumber(ARGV[2])
for i = 2, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    local left = redis.call('PTTL', KEYS[i])
    if left < ttl then
      redis.call('PEXPIRE', KEYS[i], ttl)
      left = ttl
    end
    if redis.call('PTTL', KEYS[1]) < ttl then redis.call('SET', KEYS[1], ARGV[3], 'PX', ttl) end
    if #KEYS > 2 then return {math.max(left, 1), i - 2} end
    return math.max(left, 1)
  end
end
if #KEYS == 2 and redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
return 0
)lua";

}  // namespace

auto shared_acquire_script() -> const script& {
    return cached_script<shared_acquire_source>();
}
auto shared_extend_script() -> const script& {
    return cached_script<shared_extend_source>();
}
auto permit_acquire_script() -> const script& {
    return cached_script<permit_acquire_source>();
}
auto permit_extend_script() -> const script& {
    return cached_script<permit_extend_source>();
}

}  // namespace redlock::detail
