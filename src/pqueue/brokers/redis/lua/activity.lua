-- activity.lua: how one queue is moving (Inspector.activity): the oldest due waiting job's
-- run_at and the jobs finished within a window. Reads only.
--
-- The oldest due job is the earliest run_at among the first 100 ids in pending (the line
-- is kept in due order, except for promoted jobs that join its tail, which the first 100
-- cover for any backlog a person watches) and the heads of the scheduled and retry sets
-- when they are due (not promoted yet).
--
-- KEYS[1]  <p>:{q}:pending      list of due job ids
-- KEYS[2]  <p>:{q}:scheduled    zset id -> run_at ms
-- KEYS[3]  <p>:{q}:retry        zset id -> run_at ms
-- KEYS[4]  <p>:{q}:completed    zset id -> finished_at ms
-- KEYS[5]  <p>:{q}:dead         zset id -> died ms
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  window ms
-- Returns: {now ms, oldest due run_at ms or -1 when no due job waits, finished in the window}
-- Errors:  none of its own.

local now = pq_now(ARGV[1])
local job_prefix = ARGV[2]
local oldest = nil
local firsts = redis.call('LRANGE', KEYS[1], 0, 99)
for _, id in ipairs(redis.call('ZRANGE', pq_prio_key(KEYS[1]), 0, 99)) do  -- prioritized (ADR 0145)
  firsts[#firsts + 1] = id
end
for _, id in ipairs(firsts) do
  local run_at = tonumber(redis.call('HGET', job_prefix .. id, 'run_at'))
  if run_at ~= nil and (oldest == nil or run_at < oldest) then
    oldest = run_at
  end
end
for _, zkey in ipairs({KEYS[2], KEYS[3]}) do
  local head = pq_head_score(zkey)
  if head ~= nil and head <= now and (oldest == nil or head < oldest) then
    oldest = head
  end
end
local since = '(' .. pq_int(now - tonumber(ARGV[3]))
local done = redis.call('ZCOUNT', KEYS[4], since, '+inf') + redis.call('ZCOUNT', KEYS[5], since, '+inf')
return {now, oldest or -1, done}
