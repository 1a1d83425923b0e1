#include "sansio/scripts.hpp"

#include "sansio/election_scripts.hpp"
#include "sansio/lua_pieces.hpp"
#include "sansio/sha1.hpp"

namespace redlock::detail {
namespace {

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

// Several resources, or one with fencing. KEYS the lock keys, then the fence
// counter key when ARGV[3] is "1"; ARGV[1] value, ARGV[2] ttl ms. Returns
// {1, counter} when it set every lock key, else {0, counter, the index
// (0-based) of the first lock key found held}, so that an error names it.
constexpr std::string_view acquire_source = R"lua(
local locks = #KEYS
local counter = 0
if ARGV[3] == '1' then
  locks = locks - 1
  counter = tonumber(redis.call('GET', KEYS[#KEYS]) or '0')
end
for i = 1, locks do
  if redis.call('EXISTS', KEYS[i]) == 1 then return {0, counter, i - 1} end
end
for i = 1, locks do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return {1, counter}
)lua";

constexpr std::string_view fence_confirm_tail = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
)lua";
constexpr std::string_view fence_confirm_source =
    lua_join<raise_fence_lua, fence_confirm_tail>::text;

// An exclusive lock's extend. KEYS the lock keys; ARGV[1] value, ARGV[2] ttl
// ms. Returns 0 if a key holds another value, -1 if one is missing; else
// raises every TTL below ARGV[2] to it (never shortening one) and returns the
// least TTL left, at least 1: what the lock really has there, which may be
// more than ARGV[2].
// A fenced hold also passes its token as ARGV[3] and the fence counter as the
// last of KEYS: where it still holds, the counter is raised to the token. Why:
// the confirm round reaches only the nodes up at the time; a node that missed
// it learns the token at the next renewal, so that in-memory nodes restarting
// empty later cannot take the last copies of it (README "Where tokens come from").
constexpr std::string_view extend_source = R"lua(
local nk = #KEYS
if ARGV[3] then nk = nk - 1 end
local missing = false
for i = 1, nk do
  local v = redis.call('GET', KEYS[i])
  if v == false then
    missing = true
  elseif v ~= ARGV[1] then
    return 0
  end
end
if missing then return -1 end
local ttl = tonumber(ARGV[2])
local least = nil
for i = 1, nk do
  local left = redis.call('PTTL', KEYS[i])
  if left < ttl then
    redis.call('PEXPIRE', KEYS[i], ttl)
    left = ttl
  end
  if least == nil or left < least then least = left end
end
if ARGV[3] and tonumber(redis.call('GET', KEYS[#KEYS]) or '0') < tonumber(ARGV[3]) then
  redis.call('SET', KEYS[#KEYS], ARGV[3])
end
return math.max(least, 1)
)lua";

// Waiting without spinning (design: README "Waiting"). Each resource has, on
// each node, a queue of waiters (a sorted set scored by arrival on that node)
// and a liveness hash beside it: waiter id -> "<kind>|<expiry, ms on the
// node's clock (TIME)>", which the waiter pushes later each time it comes back.
// A waiter whose entry has expired is dead: it cannot block anyone for longer
// than its liveness TTL, and is pruned (from both) when found. Every key is
// declared in KEYS and shares the resource's hash tag (one slot).
//
// The liveness test, the same in every script that reads the hash: the kind of
// a live waiter `w`, else nil.
//   local e = redis.call('HGET', live, w)
//   local kind, expiry = string.match(e or '', '^(.*)|(%d+)$')
//   live if expiry and tonumber(expiry) > now
//
// The offer (the hand-off across clients): an exclusive waiter may also leave,
// in a third hash beside the queue (the queue key + "|offer"), what it would be
// granted: waiter id -> "<ttl ms>|<attempt>|<value>", rewritten by each of its
// attempts that queues it. A release then sets the key to that value where the
// waiter is first in line (release_wake_source). The offer outlives the queue
// entry that a hand-off removes, so that the waiter can still recognise the key
// as its own: its next attempt takes it over, and its leaving deletes it.
//
// KEYS[1] lock key, KEYS[2] queue key, KEYS[3] liveness hash, KEYS[4] the offer
// hash, KEYS[5] the fence counter key (only with fencing). ARGV[1] value,
// ARGV[2] ttl ms, ARGV[3] waiter id, ARGV[4] liveness ms, ARGV[5] "f" for fair
// mode (no overtaking a live waiter), ARGV[6] the waiter's arrival time (µs, the
// client's clock): the same score on every node, so that every node agrees on
// who is first; ARGV[7] the attempt's number to leave an offer under, or absent
// or "" for none; ARGV[8] "n" for the waiter's first attempt (nothing of it is
// on the node yet: no offer to look for, no entry to remove), absent or "" for a
// later one. A key that holds the value of the waiter's offer was handed to
// it by a release it has not heard of yet: it is the waiter's, and is set to
// this attempt's value (a grant like SET NX's, of a key no one else holds).
// Returns {granted 0|1, fence counter, the holder's PTTL (-2: no key)}.
constexpr std::string_view wait_acquire_source = R"lua(
local q, live, offers = KEYS[2], KEYS[3], KEYS[4]
local me = ARGV[3]
local counter = 0
if #KEYS == 5 then counter = tonumber(redis.call('GET', KEYS[5]) or '0') end
local now
local function clock()
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end
local function alive(w)
  local kind, expiry = string.match(redis.call('HGET', live, w) or '', '^(.*)|(%d+)$')
  if expiry and tonumber(expiry) > clock() then return kind end
  return nil
end
local function forget(w)
  redis.call('ZREM', q, w)
  redis.call('HDEL', live, w)
  redis.call('HDEL', offers, w)
end
local fresh = ARGV[8] == 'n'
local offered = not fresh and string.match(redis.call('HGET', offers, me) or '', '^%d+|%d+|(.+)$')
if offered and redis.call('GET', KEYS[1]) == offered then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  forget(me)
  return {1, counter, -2}
end
local ahead = false
if ARGV[5] == 'f' then
  for _ = 1, 64 do
    local head = redis.call('ZRANGE', q, 0, 0)[1]
    if not head or head == me then break end
    if alive(head) then ahead = true break end
    forget(head)
  end
end
if not ahead and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if not fresh then forget(me) end
  return {1, counter, -2}
end
redis.call('ZADD', q, 'NX', ARGV[6], me)
redis.call('HSET', live, me, '1|' .. (clock() + tonumber(ARGV[4])))
redis.call('PEXPIRE', q, ARGV[4])
redis.call('PEXPIRE', live, ARGV[4])
if ARGV[7] and ARGV[7] ~= '' then
  redis.call('HSET', offers, me, ARGV[2] .. '|' .. ARGV[7] .. '|' .. ARGV[1])
  redis.call('PEXPIRE', offers, ARGV[4])
end
return {0, counter, redis.call('PTTL', KEYS[1])}
)lua";

// Releasing and waking, for every kind of lock. KEYS: the lock keys (one, or a
// semaphore's permit keys when the permit is not known; for a reader, the lock
// key and its readers' set), then the queue key, its liveness hash and its offer
// hash. ARGV[1] value, or "" for a waiter's leaving (below); ARGV[2] whom to
// wake ("1" the next in line, "a" every live waiter, "0" nobody), ARGV[3] the
// wake channel prefix ("" publishes nothing there), ARGV[4] the holder's own
// waiter id or "" (a holder that waited may still be queued where its grant
// answered late: it leaves here, and its offer with it), ARGV[5] "r" for a
// reader, "p" for a semaphore's permit, "w" an exclusive holder, ARGV[6] the
// resource's shard channel or "" (SPUBLISH, for cluster members: it hashes to
// the lock's slot).
//
// An exclusive holder or a permit: deletes the key that holds our value. A
// reader: leaves the readers' set; the last live reader out also deletes the
// shared marker (else the marker's TTL shrinks to the longest live reader's:
// the set is sorted by expiry, so that costs O(log R), not a call per reader).
// Then, if the resource became free, publishes "<waiter id>|<released value>" to
// "<prefix><client id>" for each woken waiter (a waiter id is "<client id>:<n>";
// the value lets a waiter that hears of one release from several nodes act on
// it once). "The next in line" is the first live waiter if it is a writer (or a
// semaphore's waiter), else every live reader queued before the first live
// writer: ZooKeeper's shared-lock recipe, never a herd.
//
// The hand-off (an exclusive holder that wakes "1" only). If the first live
// waiter left an offer (wait_acquire_source), the key passes straight to it: SET
// its value PX its ttl, as its own grant would, it leaves the queue (its offer
// stays: see there), and instead of a wake-up it is told
// "<waiter id>+<attempt>" on the same channels: granted here. Every node orders
// its queue by the same arrival scores, so they agree on who is first, and
// where one does not that waiter simply was not granted there. ARGV[7] a
// successor's value, ARGV[8] its ttl ms, ARGV[9] its waiter id — a waiter of
// the releasing client whose attempt is this script (no offer needed: it hears
// the answer), or ARGV[7] absent or "" for none; it is granted where it is
// first (live whatever its liveness entry says: its client names it now), or
// where nobody live is queued, and told nothing. The key is then overwritten,
// not deleted first, and its liveness is not read.
// Returns 2 if our hold was deleted and handed to ARGV[9], 3 if handed to an
// offer, 1 if deleted, else 0.
//
// A waiter's leaving (ARGV[1] "", ARGV[4] its id, ARGV[5] "w"): the value its
// offer names is released if the key still holds it (handed to it, unheard),
// and the next in line is served as above; else it only leaves the queue.
//
// `nk`, defined ahead of the body, is how many of KEYS are the release's: all of
// them, or all but the two a campaign's release adds (lua_pieces.hpp,
// abdicate_locals).
constexpr std::string_view all_keys_release = R"lua(
local nk = #KEYS
)lua";
constexpr std::string_view release_wake_body = R"lua(
local q, live, offers = KEYS[nk - 2], KEYS[nk - 1], KEYS[nk]
local mine = ARGV[1]
local now
local function clock()
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end
local function alive(w)
  local kind, expiry = string.match(redis.call('HGET', live, w) or '', '^(.*)|(%d+)$')
  if expiry and tonumber(expiry) > clock() then return kind end
  return nil
end
local function forget(w)
  redis.call('ZREM', q, w)
  redis.call('HDEL', live, w)
end
if ARGV[4] ~= '' then
  if mine == '' then
    mine = string.match(redis.call('HGET', offers, ARGV[4]) or '', '^%d+|%d+|(.+)$') or ''
  end
  forget(ARGV[4])
  redis.call('HDEL', offers, ARGV[4])
end
if mine == '' then return 0 end
if ARGV[5] == 'r' then
  local k, readers = KEYS[1], KEYS[2]
  local until_ms = tonumber(redis.call('ZSCORE', readers, mine))
  redis.call('ZREM', readers, mine)
  if not until_ms or until_ms <= clock() then return 0 end
  if redis.call('GET', k) ~= '~readers' then return 1 end
  redis.call('ZREMRANGEBYSCORE', readers, '-inf', clock())
  local longest = redis.call('ZRANGE', readers, -1, -1, 'WITHSCORES')[2]
  if longest then
    local left = tonumber(longest) - clock()
    redis.call('PEXPIRE', k, left)
    redis.call('PEXPIRE', readers, left)
    return 1
  end
  redis.call('DEL', k, readers)
else
  -- One waiter woken: the key may pass straight on, so it is deleted only if it does not.
  local pass = ARGV[5] == 'w' and ARGV[2] == '1'
  local deleted = false
  for i = 1, nk - 3 do
    if redis.call('GET', KEYS[i]) == mine then
      if not pass then redis.call('DEL', KEYS[i]) end
      deleted = true
      if ARGV[5] == 'p' then break end
    end
  end
  if not deleted then return 0 end
  if pass then
    local successor = ARGV[7] and ARGV[7] ~= '' and ARGV[9]
    local first, dead = nil, 0
    local line = redis.call('ZRANGE', q, 0, 63)
    for _, w in ipairs(line) do
      -- The successor is live: its client is waiting on it now.
      if w == successor or alive(w) then first = w break end
      forget(w)
      redis.call('HDEL', offers, w)
      dead = dead + 1
    end
    -- 64 dead entries say nothing about the 65th: no hand-off then.
    if successor and (first == successor or (first == nil and dead < 64)) then
      redis.call('SET', KEYS[1], ARGV[7], 'PX', ARGV[8])
      forget(successor)
      redis.call('HDEL', offers, successor)
      return 2
    end
    local ttl, attempt, value
    if first then
      ttl, attempt, value = string.match(redis.call('HGET', offers, first) or '', '^(%d+)|(%d+)|(.+)$')
    end
    if value then
      redis.call('SET', KEYS[1], value, 'PX', ttl)
      forget(first)
      local message = first .. '+' .. attempt
      if ARGV[3] ~= '' then
        redis.call('PUBLISH', ARGV[3] .. string.match(first, '^(.*):'), message)
      end
      if ARGV[6] and ARGV[6] ~= '' then redis.call('SPUBLISH', ARGV[6], message) end
      return 3
    end
    redis.call('DEL', KEYS[1])
    if #line == 0 then return 1 end  -- nobody queued: nobody to wake
  end
end
if ARGV[2] == '0' then return 1 end
local woken = 0
for _, w in ipairs(redis.call('ZRANGE', q, 0, 63)) do
  local kind = alive(w)
  if kind then
    if ARGV[2] == '1' and kind ~= 'r' and woken > 0 then break end
    local message = w .. '|' .. mine
    if ARGV[3] ~= '' then
      redis.call('PUBLISH', ARGV[3] .. string.match(w, '^(.*):'), message)
    end
    if ARGV[6] and ARGV[6] ~= '' then redis.call('SPUBLISH', ARGV[6], message) end
    woken = woken + 1
    if ARGV[2] == '1' and kind ~= 'r' then break end
  else
    forget(w)
  end
end
return 1
)lua";

constexpr std::string_view release_wake_source =
    lua_join<all_keys_release, release_wake_body>::text;
// A campaign's lock: the same release, and the abdication before it, in one call.
constexpr std::string_view abdicate_release_wake_source =
    lua_join<abdicate_locals, tell_observers_fn, abdicate_body, release_wake_body>::text;

// KEYS[1] queue key, KEYS[2] its liveness hash, ARGV[1] waiter id: leave the
// queue (acquired or gave up).
constexpr std::string_view dequeue_source = R"lua(
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
)lua";

}  // namespace

auto make_script(std::string_view source) -> script {
    return script{source, sha1_hex(source)};
}

auto wait_acquire_script() -> const script& {
    return cached_script<wait_acquire_source>();
}
auto release_wake_script() -> const script& {
    return cached_script<release_wake_source>();
}
auto abdicate_release_wake_script() -> const script& {
    return cached_script<abdicate_release_wake_source>();
}
auto dequeue_script() -> const script& {
    return cached_script<dequeue_source>();
}
auto release_script() -> const script& {
    return cached_script<release_source>();
}
auto acquire_script() -> const script& {
    return cached_script<acquire_source>();
}
auto fence_confirm_script() -> const script& {
    return cached_script<fence_confirm_source>();
}
auto extend_script() -> const script& {
    return cached_script<extend_source>();
}

auto all_scripts() -> std::span<const script* const> {
    static const script* const scripts[] = {&release_script(),
                                            &acquire_script(),
                                            &fence_confirm_script(),
                                            &extend_script(),
                                            &wait_acquire_script(),
                                            &release_wake_script(),
                                            &abdicate_release_wake_script(),
                                            &dequeue_script(),
                                            &shared_acquire_script(),
                                            &shared_extend_script(),
                                            &permit_acquire_script(),
                                            &permit_extend_script(),
                                            &session_extend_script(),
                                            &fence_confirm_proclaim_script()};
    return scripts;
}

}  // namespace redlock::detail
