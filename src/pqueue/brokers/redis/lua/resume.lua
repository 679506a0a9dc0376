-- resume.lua: resume one paused queue and wake idle claimers to look at it again.
--
-- KEYS[1]  <p>:{q}:paused       string, present while the queue is paused
-- ARGV[1]  now ms, or '' for the server clock (unused; every script takes it first)
-- ARGV[2]  wake-up channel
-- ARGV[3]  queue name
-- Returns: 1 resumed, 0 was not paused
-- Errors:  none of its own.

if redis.call('DEL', KEYS[1]) == 1 then
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return 1
end
return 0
