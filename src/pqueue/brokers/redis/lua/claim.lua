-- claim.lua: lease up to `limit` due jobs of one queue, oldest first.
--
-- Promotes due scheduled/retry jobs first, then pops ids from the head of pending. Each
-- job becomes active: attempt + 1, a fresh token (unique per queue, from the seq counter),
-- a lease deadline now + lease, and an entry in the active set scored by that deadline.
-- An id whose job is gone or no longer pending (a stale entry) is dropped. Nothing here
-- may raise after the LPOP (Redis does not roll a failed script back), so a job key of
-- the wrong type is read with pcall and dropped like a stale entry.
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
-- Returns: {lease deadline ms, {{id, fields}, ...}}: fields is the job's HGETALL before
--          the claim followed by the fields the claim changed (the last value of a field
--          wins); the deadline lives only in the active set's score
-- Errors:  none of its own.

local pending, active = KEYS[1], KEYS[4]
local now = pq_now(ARGV[1])
local job_prefix, limit, lease, worker = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]

pq_promote(pending, KEYS[2], KEYS[3], job_prefix, now, tonumber(ARGV[6]))
local ids = redis.call('LPOP', pending, limit)
if not ids then
  return {0, {}}
end

local token = redis.call('INCRBY', KEYS[5], #ids) - #ids
local deadline = now + lease
local out, leased = {}, {}
for _, id in ipairs(ids) do
  local key = job_prefix .. id
  local fields = redis.pcall('HGETALL', key)
  local status, attempt = nil, 0
  if fields['err'] ~= nil then
    fields = {}
  end
  for i = 1, #fields, 2 do
    local name = fields[i]
    if name == 'status' then
      status = fields[i + 1]
    elseif name == 'attempt' then
      attempt = tonumber(fields[i + 1]) or 0
    end
  end
  if status == 'pending' then
    token = token + 1
    local changed = {'status', 'active', 'attempt', attempt + 1, 'token', pq_int(token),
      'started_at', now, 'worker', worker}
    redis.call('HSET', key, unpack(changed))
    for i = 1, #changed do
      fields[#fields + 1] = changed[i]
    end
    leased[#leased + 1] = deadline
    leased[#leased + 1] = id
    out[#out + 1] = {id, fields}
  end
end
if #leased > 0 then
  pq_chunked('ZADD', active, leased)
end
return {deadline, out}
