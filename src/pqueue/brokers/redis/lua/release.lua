-- release.lua: hand leased jobs back unrun (graceful drain); the run does not count.
--
-- attempt - 1 undoes the claim. With no delay a job keeps its run_at and goes back to
-- the head of pending (it was due before anything behind it); with a delay it is
-- scheduled at now + delay. A note (e.g. "no handler for this type") is added to each
-- job's error history, stamped with the attempt that was handed back.
--
-- KEYS[1]  <p>:{q}:active
-- KEYS[2]  <p>:{q}:pending
-- KEYS[3]  <p>:{q}:scheduled
-- KEYS[4]  <p>:{q}:seq
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  delay ms (0 = back to pending now)
-- ARGV[4]  wake-up channel
-- ARGV[5]  queue name
-- ARGV[6]  JSON object {id: [...], token: [...]}
-- ARGV[7]  note: JSON object {kind, message, traceback}, or '' for none
-- ARGV[8]  error history length to keep
-- Returns: array of 1 (released) / 0 (lease lost), one per lease
-- Errors:  none of its own.

local active, pending, scheduled = KEYS[1], KEYS[2], KEYS[3]
local now = pq_now(ARGV[1])
local job_prefix = ARGV[2]
local delay = tonumber(ARGV[3])
local batch = cjson.decode(ARGV[6])
local note = nil
if ARGV[7] ~= '' then
  note = cjson.decode(ARGV[7])
end
local ids, tokens = batch['id'], batch['token']
local out, front, later = {}, {}, {}
local earliest = nil
for i = 1, #ids do
  local id = ids[i]
  local key = job_prefix .. id
  local cur = pq_lease_current(key, tokens[i], 'run_at', 'attempt')
  if cur then
    if note ~= nil then
      pq_add_error(key, note, cur[4], now, tonumber(ARGV[8]))
    end
    redis.call('HINCRBY', key, 'attempt', -1)
    redis.call('ZREM', active, id)
    if delay > 0 then
      local run_at = now + delay
      redis.call('HSET', key, 'status', 'scheduled', 'run_at', run_at, 'seq', redis.call('INCR', KEYS[4]))
      later[#later + 1] = run_at
      later[#later + 1] = id
      earliest = run_at
    else
      redis.call('HSET', key, 'status', 'pending')
      front[#front + 1] = {id, tonumber(cur[3]) or 0}
    end
    out[i] = 1
  else
    out[i] = 0
  end
end

local head = pq_head_score(scheduled)
if #later > 0 then
  pq_chunked('ZADD', scheduled, later)
end
pq_push_front(pending, front, job_prefix)
if #front > 0 or (earliest ~= nil and (head == nil or earliest < head)) then
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
return out
