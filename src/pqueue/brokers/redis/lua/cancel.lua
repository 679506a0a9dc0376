-- cancel.lua: cancel one pending, scheduled or retry job.
--
-- Removing a pending id is an LREM (O(n) in the queue's backlog); cancel is an admin
-- operation, and keeping pending exact keeps counts and claims free of stale entries.
--
-- KEYS[1]  <p>:{q}:pending
-- KEYS[2]  <p>:{q}:scheduled
-- KEYS[3]  <p>:{q}:retry
-- KEYS[4]  <p>:{q}:cancelled    zset id -> finished_at ms
-- KEYS[5]  <p>:{q}:job:<id>
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job id
-- ARGV[3]  retention ms (the job hash's TTL; 0 = none)
-- Returns: 1 cancelled, 0 not in a waiting status, -1 no such job
-- Errors:  none of its own.

local key, id = KEYS[5], ARGV[2]
local now = pq_now(ARGV[1])
local status = redis.call('HGET', key, 'status')
if not status then
  return -1
end
if status == 'pending' then
  redis.call('LREM', KEYS[1], 1, id)
elseif status == 'scheduled' then
  redis.call('ZREM', KEYS[2], id)
elseif status == 'retry' then
  redis.call('ZREM', KEYS[3], id)
else
  return 0
end
redis.call('HSET', key, 'status', 'cancelled', 'finished_at', pq_int(now))
redis.call('ZADD', KEYS[4], now, id)
local retention = tonumber(ARGV[3])
if retention > 0 then
  redis.call('PEXPIRE', key, retention)
end
return 1
