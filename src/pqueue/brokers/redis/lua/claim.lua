-- claim.lua: lease up to `limit` due jobs of one queue, oldest first.
--
-- Promotes due scheduled/retry jobs first, then pops ids from the head of pending. Each
-- job becomes active: attempt + 1, a fresh token (unique per queue, from the seq counter),
-- a lease deadline now + lease, and an entry in the active set scored by that deadline.
-- An id whose job is gone or no longer pending (a stale entry) is dropped.
--
-- KEYS[1]  <p>:{q}:pending
-- KEYS[2]  <p>:{q}:scheduled
-- KEYS[3]  <p>:{q}:retry
-- KEYS[4]  <p>:{q}:active       zset id -> lease deadline ms
-- KEYS[5]  <p>:{q}:seq
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  limit (>= 1)
-- ARGV[4]  lease duration ms
-- ARGV[5]  worker id
-- ARGV[6]  promote limit
-- Returns: array of {id, HGETALL of the job after the claim}
-- Errors:  none of its own.

local pending, active = KEYS[1], KEYS[4]
local now = pq_now(ARGV[1])
local job_prefix, limit, lease = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])

pq_promote(pending, KEYS[2], KEYS[3], job_prefix, now, tonumber(ARGV[6]))
local ids = redis.call('LPOP', pending, limit)
if not ids then
  return {}
end

local token = redis.call('INCRBY', KEYS[5], #ids) - #ids
local deadline = pq_int(now + lease)
local started = pq_int(now)
local out, leased = {}, {}
for _, id in ipairs(ids) do
  local key = job_prefix .. id
  if redis.call('HGET', key, 'status') == 'pending' then
    token = token + 1
    redis.call('HINCRBY', key, 'attempt', 1)
    redis.call('HSET', key, 'status', 'active', 'token', pq_int(token), 'lease_expires_at', deadline,
      'started_at', started, 'worker', ARGV[5])
    leased[#leased + 1] = deadline
    leased[#leased + 1] = id
    out[#out + 1] = {id, redis.call('HGETALL', key)}
  end
end
if #leased > 0 then
  pq_chunked('ZADD', active, leased)
end
return out
