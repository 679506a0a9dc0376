-- enqueue_waiting.lua: store jobs of one queue that wait for parents (status `waiting`).
--
-- Part of enqueue_flow's MULTI/EXEC (ADR 0116): the parents' side is link.lua. Each job's
-- hash gets its options as enqueue.lua stores them, plus depends_on (JSON array) and
-- on_parent_failure; the set deps:<id> holds the parents it still waits for. A job whose
-- id exists is not stored.
--
-- KEYS[1]  <p>:{q}:waiting      zset id -> created ms
-- KEYS[2]  <p>:{q}:seq
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  deps key prefix <p>:{q}:deps: (same hash tag)
-- ARGV[4]  JSON array of jobs: {id, type, payload, max_retries, max_recoveries, run_at
--          (ms) | delay (ms), timeout (text), idempotency_key, meta (JSON text),
--          priority, depends_on (array of ids), on_parent_failure, limit_key, limit ("rate
--          burst concurrency", as enqueue.lua stores it), unset (ADR 0157)}; absent options
--          are left out. A limited job waits here like any other; settle.lua releases it
--          into its lane.
-- Returns: one entry per job: 1 stored, 0 its id exists
-- Errors:  none of its own.

local now = pq_now(ARGV[1])
local jobs = cjson.decode(ARGV[4])
local out = {}
for i, job in ipairs(jobs) do
  local key = ARGV[2] .. job['id']
  if redis.call('EXISTS', key) == 1 then
    out[i] = 0
  else
    local run_at = now
    if job['run_at'] ~= nil then
      run_at = job['run_at']
    elseif job['delay'] ~= nil then
      run_at = now + job['delay']
    end
    local seq = redis.call('INCR', KEYS[2])
    redis.call('HSET', key, 'type', job['type'], 'payload', job['payload'], 'status', 'waiting',
      'run_at', pq_int(run_at), 'created_at', pq_int(now), 'seq', pq_int(seq),
      'max_retries', job['max_retries'], 'max_recoveries', job['max_recoveries'],
      'depends_on', cjson.encode(job['depends_on']), 'on_parent_failure', job['on_parent_failure'])
    for _, name in ipairs({'timeout', 'idempotency_key', 'meta', 'limit_key', 'limit', 'priority', 'unset'}) do
      if job[name] ~= nil then
        redis.call('HSET', key, name, job[name])
      end
    end
    pq_chunked('SADD', ARGV[3] .. job['id'], job['depends_on'])
    redis.call('ZADD', KEYS[1], now, job['id'])
    out[i] = 1
  end
end
return out
