-- claim.lua: lease up to `limit` due jobs of one queue, oldest first.
--
-- Promotes due scheduled/retry jobs first, then leases ids from the head of pending
-- (pq_lease in _lib.lua): each job becomes active with attempt + 1, a fresh token
-- (unique per queue, from the seq counter) and an entry in the active set scored by its
-- deadline now + lease. Stale ids (job gone, or no longer pending) are dropped. When
-- pending leaves room, limited jobs fill it from their lanes (pq_claim_lanes in
-- _limits.lua, prepended to this script only).
--
-- KEYS[1]  <p>:{q}:pending
-- KEYS[2]  <p>:{q}:scheduled
-- KEYS[3]  <p>:{q}:retry
-- KEYS[4]  <p>:{q}:active       zset id -> lease deadline ms
-- KEYS[5]  <p>:{q}:seq
-- KEYS[6]  <p>:{q}:parked       zset parked claimer -> parking expiry ms
-- KEYS[7]  <p>:{q}:parkers      hash parked claimer -> "<limit> <lease ms>"
-- KEYS[8]  <p>:{q}:paused       present while the queue is paused (pause.lua): claim nothing
-- KEYS[9]  <p>:{q}:lanes        zset limit key -> when its lane may next be claimable ms
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  limit (>= 1)
-- ARGV[4]  lease duration ms
-- ARGV[5]  worker id
-- ARGV[6]  promote limit
-- ARGV[7]  the claimer's parking name "<broker hand-off id> <worker id>": a claiming
--          worker is no longer idle, so its parking here ends (a hand-off to it now
--          would wait in its broker until it claims again)
-- ARGV[8]  lane key prefix <p>:{q}:lane:   (lane keys are built from it; see _limits.lua):
--          limited jobs fill what pending left, within their limits (ADR 0110)
-- Returns: {lease deadline ms, {{id, fields}, ...}}: fields is the job's HGETALL before
--          the claim followed by the fields the claim changed (the last value of a field
--          wins); the deadline lives only in the active set's score
-- Errors:  none of its own.

if redis.call('EXISTS', KEYS[8]) == 1 then
  return {0, {}}
end

local pending, active = KEYS[1], KEYS[4]
local now = pq_now(ARGV[1])
local job_prefix, limit, lease, worker = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]

redis.call('ZREM', KEYS[6], ARGV[7])
redis.call('HDEL', KEYS[7], ARGV[7])
pq_promote(pending, KEYS[2], KEYS[3], KEYS[5], job_prefix, now, tonumber(ARGV[6]))
local deadline, out = pq_lease(pending, active, KEYS[5], job_prefix, now, limit, lease, worker)
if #out < limit and redis.call('EXISTS', KEYS[9]) == 1 then
  local limited = pq_claim_lanes(KEYS[9], ARGV[8], KEYS[5], job_prefix, now, limit - #out, lease, worker,
    tonumber(ARGV[6]))
  for _, job in ipairs(limited) do
    out[#out + 1] = job
  end
end
if #out == 0 then
  return {0, {}}
end
return {deadline, out}
