-- requeue_dead.lua: move dead jobs of one queue back to pending with a fresh budget.
--
-- attempt and recoveries restart at 0, run_at becomes now and the job gets a new place
-- in enqueue order; its error history is kept. Due scheduled/retry jobs are promoted
-- first so the requeued jobs line up behind them.
--
-- KEYS[1]  <p>:{q}:pending
-- KEYS[2]  <p>:{q}:scheduled
-- KEYS[3]  <p>:{q}:retry
-- KEYS[4]  <p>:{q}:dead
-- KEYS[5]  <p>:{q}:seq
-- KEYS[5+i] <p>:{q}:job:<id> of the i-th id in ARGV (mode 'ids' only)
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (mode 'all' builds job keys from it; see _lib.lua)
-- ARGV[3]  mode: 'ids' (the ids below) or 'all' (the oldest `limit` dead jobs)
-- ARGV[4]  limit (mode 'all')
-- ARGV[5]  wake-up channel
-- ARGV[6]  queue name
-- ARGV[7]  'lane': KEYS are a limit lane's, its jobs move; 'plain': the queue's own list,
--          where a limited job must never go (it would run outside its limits): skipped,
--          for the lane pass (a job that died after that pass stays dead until the next)
-- ARGV[8]  mode 'all': how many dead jobs at the front of the set to pass over (the limited
--          ones earlier calls skipped); '0' in mode 'ids'
-- ARGV[9..] job ids (mode 'ids')
-- Returns: {how many jobs moved, how many limited ones were skipped}
-- Errors:  none of its own.

local pending, dead = KEYS[1], KEYS[4]
local plain = ARGV[7] == 'plain'
local now = pq_now(ARGV[1])
local job_prefix = ARGV[2]
local ids = {}
if ARGV[3] == 'all' then
  local skip = tonumber(ARGV[8])
  ids = redis.call('ZRANGE', dead, skip, skip + tonumber(ARGV[4]) - 1)
else
  for i = 9, #ARGV do
    ids[#ids + 1] = ARGV[i]
  end
end

local was_empty = pq_line_len(pending) == 0
pq_promote(pending, KEYS[2], KEYS[3], KEYS[5], job_prefix, now, 1000)
local moved, requeued, skipped = {}, 0, 0  -- moved: to the list; requeued: to prio (ADR 0145)
for _, id in ipairs(ids) do
  local key = job_prefix .. id
  local fields = redis.call('HMGET', key, 'status', 'limit_key')
  if plain and fields[2] then
    skipped = skipped + 1
  elseif redis.call('ZSCORE', dead, id) and fields[1] == 'dead' then
    redis.call('ZREM', dead, id)
    redis.call('HDEL', key, 'finished_at')
    local seq = redis.call('INCR', KEYS[5])
    redis.call('HSET', key, 'status', 'pending', 'attempt', 0, 'recoveries', 0, 'run_at', pq_int(now),
      'seq', pq_int(seq))
    local priority = tonumber(redis.call('HGET', key, 'priority'))
    if priority == nil then
      moved[#moved + 1] = id
    else
      pq_line_push(pending, id, priority, seq)
      requeued = requeued + 1
    end
  end
end
if #moved > 0 then
  pq_chunked('RPUSH', pending, moved)
end
if #moved + requeued > 0 and was_empty then
  redis.call('PUBLISH', ARGV[5], ARGV[6])
end
return {#moved + requeued, skipped}
