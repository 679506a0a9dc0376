-- enqueue.lua: store a batch of new jobs of one queue, in order.
--
-- Due jobs already in the scheduled/retry sets are promoted first, so a new immediate
-- job lines up behind every job that was due before it. A job whose id already exists,
-- or whose unique key is held (value "<holder id>|<expires ms>", expiry judged on the
-- script's clock; the PX TTL only collects garbage), is not stored.
--
-- KEYS[1]  <p>:{q}:pending      list of due job ids
-- KEYS[2]  <p>:{q}:scheduled    zset id -> run_at ms
-- KEYS[3]  <p>:{q}:retry        zset id -> run_at ms
-- KEYS[4]  <p>:{q}:seq          counter: enqueue order and lease tokens
-- KEYS[4+i]                     <p>:{q}:job:<id> of job i (i = 1..n)
-- KEYS[4+n+k]                   <p>:{q}:unique:<key> for the k-th job that has a unique key
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:
-- ARGV[3]  wake-up channel
-- ARGV[4]  queue name
-- ARGV[5]  promote limit
-- ARGV[6]  JSON array, one entry per job:
--          [id, type, run_at ms|null, delay ms|null, max_retries, max_recoveries,
--           timeout text|null, unique key|null, unique_for ms|null, idempotency key|null,
--           meta JSON text|null]
-- ARGV[6+i] payload JSON text of job i
-- Returns: one entry per job: 1 when stored, else the id of the job that holds its id
--          or unique key.
-- Errors:  none of its own.

local pending, scheduled, seq_key = KEYS[1], KEYS[2], KEYS[4]
local now = pq_now(ARGV[1])
local job_prefix, channel, queue = ARGV[2], ARGV[3], ARGV[4]
local jobs = cjson.decode(ARGV[6])
local n = #jobs
local NULL = cjson.null

local was_empty = redis.call('LLEN', pending) == 0
local head = pq_head_score(scheduled)
pq_promote(pending, scheduled, KEYS[3], job_prefix, now, tonumber(ARGV[5]))

local seq = redis.call('INCRBY', seq_key, n) - n
local out, due, later = {}, {}, {}
local earliest = nil
local unique_index = 4 + n

for i = 1, n do
  local job = jobs[i]
  local id, key = job[1], KEYS[4 + i]
  local holder, unique_key = nil, nil
  if job[8] ~= NULL then
    unique_index = unique_index + 1
    unique_key = KEYS[unique_index]
  end
  if redis.call('EXISTS', key) == 1 then
    holder = id
  elseif unique_key ~= nil then
    local held = redis.call('GET', unique_key)
    if held then
      local held_id, expires = string.match(held, '^(.*)|(%d+)$')
      if expires and tonumber(expires) > now then
        holder = held_id
      end
    end
    if holder == nil then
      local ttl = job[9]
      redis.call('SET', unique_key, id .. '|' .. pq_int(now + ttl), 'PX', pq_int(math.max(ttl, 1)))
    end
  end
  if holder ~= nil then
    out[i] = holder
  else
    seq = seq + 1
    local run_at = job[3]
    if run_at == NULL then
      run_at = now + (job[4] ~= NULL and job[4] or 0)
    end
    local status = 'pending'
    if run_at > now then
      status = 'scheduled'
      later[#later + 1] = run_at
      later[#later + 1] = id
      if earliest == nil or run_at < earliest then
        earliest = run_at
      end
    else
      due[#due + 1] = id
    end
    local fields = {
      'type', job[2], 'payload', ARGV[6 + i], 'status', status,
      'run_at', pq_int(run_at), 'created_at', pq_int(now), 'seq', pq_int(seq),
      'max_retries', job[5], 'max_recoveries', job[6],
    }
    if job[7] ~= NULL then
      fields[#fields + 1] = 'timeout'
      fields[#fields + 1] = job[7]
    end
    if job[8] ~= NULL then
      fields[#fields + 1] = 'unique_key'
      fields[#fields + 1] = job[8]
    end
    if job[10] ~= NULL then
      fields[#fields + 1] = 'idempotency_key'
      fields[#fields + 1] = job[10]
    end
    if job[11] ~= NULL then
      fields[#fields + 1] = 'meta'
      fields[#fields + 1] = job[11]
    end
    redis.call('HSET', key, unpack(fields))
    out[i] = 1
  end
end

if #due > 0 then
  pq_chunked('RPUSH', pending, due)
end
if #later > 0 then
  pq_chunked('ZADD', scheduled, later)
end
if (was_empty and redis.call('LLEN', pending) > 0) or (earliest ~= nil and (head == nil or earliest < head)) then
  redis.call('PUBLISH', channel, queue)
end
return out
