-- settle.lua: tell waiting jobs of one queue that one parent finished (ADR 0116).
--
-- For each child still waiting: SREM the parent from its deps set; only if it was there
-- (so a repeat after a crash does nothing) is the child changed:
--   * parent completed: its result is copied to the child's field presult:<parent id>;
--     with no parent left the child is lined up (pending at the back, or scheduled while
--     its own run_at is ahead) and a wake-up is published; a limited child (a limit_key
--     field) is lined up in its group's lane instead, which is marked "look now" in the
--     queue's lanes zset (ADR 0110, _limits.lua), so claims apply its limits;
--   * parent dead or cancelled and on_parent_failure 'cancel': the child is cancelled
--     with a ParentFailed error and finished by pq_finish (_lib.lua), as cancel.lua
--     finishes one; if it has dependants itself it goes into `settled` and is answered,
--     so the broker tells them in turn;
--   * 'run': the edge counts as done without a result.
--
-- KEYS[1]  <p>:{q}:pending
-- KEYS[2]  <p>:{q}:scheduled
-- KEYS[3]  <p>:{q}:waiting
-- KEYS[4]  <p>:{q}:cancelled
-- KEYS[5]  <p>:{q}:settled
-- KEYS[6]  <p>:{q}:seq
-- KEYS[7]  <p>:{q}:followed     set of jobs with dependants or a result() waiter
-- KEYS[8]  <p>:{q}:lanes        zset limit key -> when its lane may next be claimable
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  deps key prefix <p>:{q}:deps:
-- ARGV[4]  parent id
-- ARGV[5]  parent status: completed, dead or cancelled
-- ARGV[6]  parent result JSON text ('null' when none)
-- ARGV[7]  retention ms (a cancelled child's TTL; 0 = none)
-- ARGV[8]  wake-up channel
-- ARGV[9]  queue name
-- ARGV[10] results channel
-- ARGV[11] error history length to keep
-- ARGV[12] lane prefix <p>:{q}:lane:   (a lane's keys are <this><limit key>:<name>)
-- ARGV[13..] child ids
-- Returns: ids of children cancelled here that have dependants of their own
-- Errors:  none of its own.

local now = pq_now(ARGV[1])
local parent, parent_status = ARGV[4], ARGV[5]
local cascade = {}
local fin = nil  -- pq_finisher's, made when the first child is cancelled
local woken = false
for i = 13, #ARGV do
  local id = ARGV[i]
  local key = ARGV[2] .. id
  local deps = ARGV[3] .. id
  local cur = redis.call('HMGET', key, 'status', 'on_parent_failure', 'attempt', 'run_at', 'limit_key')
  if cur[1] == 'waiting' and redis.call('SREM', deps, parent) == 1 then
    if parent_status ~= 'completed' and cur[2] ~= 'run' then
      pq_add_error(key, {
        kind = 'ParentFailed', message = 'parent job ' .. parent .. ' is ' .. parent_status,
        traceback = '',
      }, cur[3], now, tonumber(ARGV[11]))
      redis.call('ZREM', KEYS[3], id)
      redis.call('DEL', deps)
      fin = fin or pq_finisher(now, KEYS[7], KEYS[5], ARGV[10], ARGV[7])
      if pq_finish(fin, key, id, 'cancelled', KEYS[4]) then
        cascade[#cascade + 1] = id
      end
    else
      if parent_status == 'completed' then
        redis.call('HSET', key, 'presult:' .. parent, ARGV[6])
      end
      if redis.call('SCARD', deps) == 0 then
        local run_at = math.max(tonumber(cur[4]) or now, now)
        local seq = redis.call('INCR', KEYS[6])
        local pending, scheduled = KEYS[1], KEYS[2]
        if cur[5] then  -- a limited child waits and runs in its lane
          pending, scheduled = ARGV[12] .. cur[5] .. ':pending', ARGV[12] .. cur[5] .. ':scheduled'
          redis.call('ZADD', KEYS[8], 'LT', 0, cur[5])
        end
        redis.call('ZREM', KEYS[3], id)
        if run_at > now then
          redis.call('HSET', key, 'status', 'scheduled', 'run_at', pq_int(run_at), 'seq', pq_int(seq))
          redis.call('ZADD', scheduled, run_at, id)
        else
          redis.call('HSET', key, 'status', 'pending', 'run_at', pq_int(run_at), 'seq', pq_int(seq))
          pq_line_push(pending, id, tonumber(redis.call('HGET', key, 'priority')) or 0, seq)
        end
        woken = true
      end
    end
  end
end
if woken then
  redis.call('PUBLISH', ARGV[8], ARGV[9])
end
return cascade
