-- promote.lua: mark up to `limit` due scheduled/retry jobs of one queue pending.
--
-- KEYS[1]  <p>:{q}:pending
-- KEYS[2]  <p>:{q}:scheduled
-- KEYS[3]  <p>:{q}:retry
-- KEYS[4]  <p>:{q}:seq          (a prioritized job joins its line with a fresh seq)
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  limit
-- ARGV[4]  wake-up channel
-- ARGV[5]  queue name
-- Returns: how many jobs moved
-- Errors:  none of its own.

local pending = KEYS[1]
local was_empty = redis.call('LLEN', pending) == 0
local moved = pq_promote(pending, KEYS[2], KEYS[3], KEYS[4], ARGV[2], pq_now(ARGV[1]), tonumber(ARGV[3]))
if moved > 0 and was_empty then
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
return moved
