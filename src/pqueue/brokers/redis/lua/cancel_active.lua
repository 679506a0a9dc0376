-- cancel_active.lua: cancel one running job: active -> cancelled, its lease revoked.
--
-- The status leaves 'active', so the worker's late ack, fail, release and extend find no
-- current lease and change nothing; recovery no longer sees it (it leaves the active
-- set). The reason joins the error history. The job id is published on the cancel
-- channel, where workers listen to stop its handler. The job is then finished by pq_finish
-- (_lib.lua), as cancel.lua finishes one: TTL, result() waiter, dependants (ADRs 0116, 0117).
--
-- KEYS[1]  <p>:{q}:active       zset id -> lease deadline ms
-- KEYS[2]  <p>:{q}:cancelled    zset id -> finished_at ms
-- KEYS[3]  <p>:{q}:job:<id>
-- KEYS[4]  <p>:{q}:settled      (a cancelled job with dependants is recorded here; ADR 0116)
-- KEYS[5]  <p>:{q}:followed     set of jobs with dependants or a result() waiter
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job id
-- ARGV[3]  retention ms (the job hash's TTL; 0 = none)
-- ARGV[4]  error JSON object {kind, message, traceback}; attempt and at are set here
-- ARGV[5]  error history length to keep
-- ARGV[6]  cancel channel
-- ARGV[7]  results channel (a job a result() waits on is named there; ADR 0117)
-- Returns: 1 cancelled (2: and it has dependants to tell), 0 not active, -1 no such job
-- Errors:  none of its own.

local active, key, id = KEYS[1], KEYS[3], ARGV[2]
local now = pq_now(ARGV[1])
local cur = redis.call('HMGET', key, 'status', 'attempt')
if not cur[1] then
  return -1
end
if cur[1] ~= 'active' then
  return 0
end
pq_add_error(key, cjson.decode(ARGV[4]), cur[2], now, tonumber(ARGV[5]))
redis.call('ZREM', active, id)
-- On the cancel channel before pq_finish names it on the results channel, as before.
redis.call('PUBLISH', ARGV[6], id)
local fin = pq_finisher(now, KEYS[5], KEYS[4], ARGV[7], ARGV[3])
if pq_finish(fin, key, id, 'cancelled', KEYS[2]) then
  return 2
end
return 1
