-- fail.lua: record a leased job's error; schedule its retry, or make it dead.
--
-- A dead job is finished by pq_finish (_lib.lua), without a TTL: result() waiter,
-- dependants (ADRs 0116, 0117).
--
-- KEYS[1]  <p>:{q}:active
-- KEYS[2]  <p>:{q}:retry
-- KEYS[3]  <p>:{q}:dead         zset id -> died ms
-- KEYS[4]  <p>:{q}:seq
-- KEYS[5]  <p>:{q}:job:<id>
-- KEYS[6]  <p>:{q}:settled      (a dead job with dependants is recorded here; ADR 0116)
-- KEYS[7]  <p>:{q}:followed     set of jobs with dependants or a result() waiter
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job id
-- ARGV[3]  lease token
-- ARGV[4]  error JSON object {kind, message, traceback}; attempt and at are set here
-- ARGV[5]  retry in ms, or '' for dead
-- ARGV[6]  error history length to keep
-- ARGV[7]  wake-up channel
-- ARGV[8]  queue name
-- ARGV[9]  results channel (a dead job a result() waits on is named there; ADR 0117)
-- Returns: 1 when recorded (2: dead, and it has dependants to tell), 0 when the lease was lost
-- Errors:  none of its own.

local active, retry, dead, key = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local now = pq_now(ARGV[1])
local id, token = ARGV[2], ARGV[3]
local cur = pq_lease_current(key, token, 'attempt')
if not cur then
  return 0
end

pq_add_error(key, cjson.decode(ARGV[4]), cur[3], now, tonumber(ARGV[6]))
redis.call('ZREM', active, id)

if ARGV[5] == '' then
  -- Dead jobs keep their hash (no retention) until purged.
  local fin = pq_finisher(now, KEYS[7], KEYS[6], ARGV[9], 0)
  if pq_finish(fin, key, id, 'dead', dead) then
    return 2
  end
  return 1
end

local run_at = now + tonumber(ARGV[5])
local seq = redis.call('INCR', KEYS[4])
local head = pq_head_score(retry)
redis.call('HSET', key, 'status', 'retry', 'run_at', pq_int(run_at), 'seq', pq_int(seq))
redis.call('ZADD', retry, run_at, id)
if run_at <= now or head == nil or run_at < head then
  redis.call('PUBLISH', ARGV[7], ARGV[8])
end
return 1
