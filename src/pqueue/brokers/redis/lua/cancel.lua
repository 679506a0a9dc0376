-- cancel.lua: cancel one pending, scheduled, retry or waiting job.
--
-- Removing a pending id is an LREM (O(n) in the queue's backlog); cancel is an admin
-- operation, and keeping pending exact keeps counts and claims free of stale entries.
-- The job is finished by pq_finish (_lib.lua): TTL, result() waiter, dependants.
--
-- KEYS[1]  <p>:{q}:pending
-- KEYS[2]  <p>:{q}:scheduled
-- KEYS[3]  <p>:{q}:retry
-- KEYS[4]  <p>:{q}:cancelled    zset id -> finished_at ms
-- KEYS[5]  <p>:{q}:job:<id>
-- KEYS[6]  <p>:{q}:waiting      (jobs waiting for parents; ADR 0115)
-- KEYS[7]  <p>:{q}:settled      (a cancelled job with dependants is recorded here; ADR 0116)
-- KEYS[8]  <p>:{q}:deps:<id>    (the parents a waiting job still waits for)
-- KEYS[9]  <p>:{q}:followed     set of jobs with dependants or a result() waiter
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job id
-- ARGV[3]  retention ms (the job hash's TTL; 0 = none)
-- ARGV[4]  results channel (a job a result() waits on is named there; ADR 0117)
-- Returns: 1 cancelled (2: and it has dependants to tell), 0 not in a waiting status,
--          -1 no such job
-- Errors:  none of its own.

local key, id = KEYS[5], ARGV[2]
local now = pq_now(ARGV[1])
local status = redis.call('HGET', key, 'status')
if not status then
  return -1
end
if status == 'pending' then
  if redis.call('ZREM', pq_prio_key(KEYS[1]), id) == 0 then
    redis.call('LREM', KEYS[1], 1, id)
  end
elseif status == 'scheduled' then
  redis.call('ZREM', KEYS[2], id)
elseif status == 'retry' then
  redis.call('ZREM', KEYS[3], id)
elseif status == 'waiting' then
  redis.call('ZREM', KEYS[6], id)
  redis.call('DEL', KEYS[8])
else
  return 0
end
local fin = pq_finisher(now, KEYS[9], KEYS[7], ARGV[4], ARGV[3])
if pq_finish(fin, key, id, 'cancelled', KEYS[4]) then
  return 2
end
return 1
