-- recover.lua: return up to `limit` jobs of one queue whose lease expired.
--
-- Finds them by score in the active set (O(log n + k)). Each one's recoveries + 1; past
-- max_recoveries it is dead with a LeaseExpired error, otherwise attempt - 1 (a crash
-- does not burn an attempt) and it goes back to the head of pending keeping its run_at.
-- A dead job is finished by pq_finish (_lib.lua), as fail.lua finishes one.
-- Active-set entries whose job is gone or not active are dropped.
--
-- KEYS[1]  <p>:{q}:active
-- KEYS[2]  <p>:{q}:pending
-- KEYS[3]  <p>:{q}:dead
-- KEYS[4]  <p>:{q}:settled      (a job dead with dependants is recorded here; ADR 0116)
-- KEYS[5]  <p>:{q}:followed     set of jobs with dependants or a result() waiter
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  limit
-- ARGV[4]  error history length to keep
-- ARGV[5]  wake-up channel
-- ARGV[6]  queue name
-- ARGV[7]  results channel (a dead job a result() waits on is named there; ADR 0117)
-- Returns: {recovered ids, dead ids}
-- Errors:  none of its own.

local active, pending, dead = KEYS[1], KEYS[2], KEYS[3]
local now = pq_now(ARGV[1])
local job_prefix = ARGV[2]
local expired = redis.call('ZRANGE', active, '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[3]))
local recovered, died, front = {}, {}, {}
local fin = nil  -- pq_finisher's, made when the first job dies
for _, id in ipairs(expired) do
  local key = job_prefix .. id
  redis.call('ZREM', active, id)
  local cur = redis.call('HMGET', key, 'status', 'recoveries', 'max_recoveries', 'attempt', 'run_at')
  if cur[1] == 'active' then
    local recoveries = (tonumber(cur[2]) or 0) + 1
    redis.call('HSET', key, 'recoveries', recoveries)
    if recoveries > (tonumber(cur[3]) or 0) then
      pq_add_error(key, {
        kind = 'LeaseExpired', message = 'lease expired ' .. recoveries .. ' times', traceback = '',
      }, cur[4], now, tonumber(ARGV[4]))
      fin = fin or pq_finisher(now, KEYS[5], KEYS[4], ARGV[7], 0)  -- dead jobs keep their hash
      pq_finish(fin, key, id, 'dead', dead)
      died[#died + 1] = id
    else
      redis.call('HINCRBY', key, 'attempt', -1)
      redis.call('HSET', key, 'status', 'pending')
      front[#front + 1] = {id, tonumber(cur[5]) or 0}
      recovered[#recovered + 1] = id
    end
  end
end
pq_push_front(pending, front, job_prefix)
if #front > 0 then
  redis.call('PUBLISH', ARGV[5], ARGV[6])
end
return {recovered, died}
