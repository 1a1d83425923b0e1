-- The protected side of a fenced lock: a write to a data store that accepts
-- only writes carrying a fencing token at least as high as the highest it has
-- already accepted for the resource. Run it on the *data store's* Redis (not on
-- the lock nodes) with EVAL/EVALSHA:
--
--   KEYS[1]  the data key to write
--   KEYS[2]  where this store keeps the highest token it accepted for the resource
--   ARGV[1]  the writer's fencing token (redlock::lock::fence(), or $REDLOCK_FENCE)
--   ARGV[2]  the value to write
--
-- Returns 1 when written. A stale writer — one whose lock expired while it was
-- paused, and who was overtaken by a later holder — gets the error
-- "STALE fencing token <its> < <accepted>", and nothing is written.
local token = tonumber(ARGV[1])
if token == nil then
  return redis.error_reply('BADTOKEN fencing token must be a number')
end
local accepted = tonumber(redis.call('GET', KEYS[2]) or '0')
if token < accepted then
  return redis.error_reply('STALE fencing token ' .. ARGV[1] .. ' < ' .. accepted)
end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
return 1
