-- pause.lua: pause one queue: claims and hand-offs skip it until resume.lua.
--
-- The flag is the queue's own key, so claim.lua and park.lua read it in the queue's
-- cluster slot (one EXISTS per call). Every claimer parked on the queue is unparked in
-- the same step, so no enqueue can hand a job to one afterwards, and park.lua parks
-- nobody while the flag is set.
--
-- KEYS[1]  <p>:{q}:paused       string, present while the queue is paused
-- KEYS[2]  <p>:{q}:parked       zset parked claimer -> parking expiry ms
-- KEYS[3]  <p>:{q}:parkers      hash parked claimer -> "<limit> <lease ms>"
-- ARGV[1]  now ms, or '' for the server clock (the time stored in the flag)
-- Returns: 1 paused now, 0 already paused
-- Errors:  none of its own.

local now = pq_now(ARGV[1])
redis.call('DEL', KEYS[2], KEYS[3])
if redis.call('SET', KEYS[1], pq_int(now), 'NX') then
  return 1
end
return 0
