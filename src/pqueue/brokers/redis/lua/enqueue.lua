-- enqueue.lua: store a batch of new jobs of one queue, in order.
--
-- Due jobs already in the scheduled/retry sets are promoted first, so a new immediate
-- job lines up behind every job that was due before it. A job whose id already exists,
-- or whose unique key is held (value "<holder id>|<expires ms>", expiry judged on the
-- script's clock; the PX TTL only collects garbage), is not stored. Due jobs then go
-- straight to parked claimers, leased (pq_hand_off in _lib.lua); a wake-up is published
-- only if due jobs are left over for the others.
--
-- Cost: most calls store one plain immediate job in a queue with nothing scheduled,
-- retrying or parked. One EXISTS over those three sets and the new jobs' keys stands in
-- for a lookup of each; only what it finds present is looked at further (`unknown`
-- below). Such a call makes 6 calls: TIME, LLEN, EXISTS, INCRBY, HSET, RPUSH.
--
-- KEYS[1]  <p>:{q}:pending      list of due job ids
-- KEYS[2]  <p>:{q}:scheduled    zset id -> run_at ms
-- KEYS[3]  <p>:{q}:retry        zset id -> run_at ms
-- KEYS[4]  <p>:{q}:seq          counter: enqueue order and lease tokens
-- KEYS[5]  <p>:{q}:active       zset id -> lease deadline ms (hand-offs lease)
-- KEYS[6]  <p>:{q}:parked       zset parked claimer -> parking expiry ms
-- KEYS[7]  <p>:{q}:parkers      hash parked claimer -> "<limit> <lease ms>"
-- KEYS[7+k] <p>:{q}:unique:<key> for the k-th job (in batch order) that has a unique key
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  wake-up channel
-- ARGV[4]  queue name
-- ARGV[5]  promote limit
-- ARGV[6]  JSON object of columns, one entry per job in each array (codec.enqueue_header):
--          id, payload                         arrays of text
--          type, max_retries, max_recoveries   one value shared by all jobs, or an array
--          run_at, delay (ms), timeout (text), unique_key, unique_for (ms),
--          idempotency_key, meta (JSON text),  absent when no job sets them, else an
--          limit_key, limit ("rate burst       array with null for jobs that do not
--          concurrency", '-' for none),        (a limited batch goes to its lane's keys)
--          unique_done (1 or null), priority (null for 0; ADR 0145)
--          unset                               absent when no job leaves an option to its
--                                              handler, else as type (null for a job that
--                                              leaves none; ADR 0157)
-- ARGV[7]  hand-off channel prefix <p>:handoff:
-- Returns: one entry per job: 1 when stored, else the id of the job that holds its id
--          or unique key.
-- Errors:  none of its own.

local pending, scheduled, retry, parked = KEYS[1], KEYS[2], KEYS[3], KEYS[6]
local now = pq_now(ARGV[1])
-- now as text, formatted once: redis.call formats every Lua number argument anew.
local now_text = pq_int(now)
local job_prefix = ARGV[2]
local h = cjson.decode(ARGV[6])
local NULL = cjson.null
local ids, payloads = h['id'], h['payload']
local n = #ids

-- Shared columns arrive as one value; `x_all` holds it, else x_all is nil and x[i] is used.
local function shared(column)
  if type(column) == 'table' then
    return nil, column
  end
  return column, nil
end
local type_all, types = shared(h['type'])
local retries_all, retries = shared(h['max_retries'])
local recoveries_all, recoveries = shared(h['max_recoveries'])
local unset_all, unsets = shared(h['unset'])
local run_ats, delays = h['run_at'], h['delay']
local priorities = h['priority']  -- absent unless a job of the batch has a priority (ADR 0145)
local unique_keys, unique_fors = h['unique_key'], h['unique_for']
-- {field, column} for the columns stored as they are. They are absent unless a job of the
-- batch sets them, and most batches set none: the `or` spares those building the list.
local optional = {}
if h['timeout'] or h['unique_key'] or h['idempotency_key'] or h['meta'] or h['limit_key'] or h['limit']
    or h['priority'] then
  -- unique_done (1: unique_until='done', ADR 0152) comes only with a unique_key
  local names = {'timeout', 'unique_key', 'idempotency_key', 'meta', 'limit_key', 'limit', 'unique_done', 'priority'}
  for _, name in ipairs(names) do
    if h[name] ~= nil then
      optional[#optional + 1] = {name, h[name]}
    end
  end
end

-- Read first, like every lookup below: a pending key of the wrong type fails the script
-- before it writes anything.
local was_empty = redis.call('LLEN', pending) == 0

local keys = {}
for i = 1, n do
  keys[i] = job_prefix .. ids[i]
end

-- How many of the keys a plain enqueue finds absent exist: the scheduled, retry and
-- parked sets and the new jobs' keys (chunked for unpack()). Each lookup below that finds
-- one of them takes it off the count; once it is 0 the rest are known to be absent and
-- are not looked up. A queue with nothing scheduled, retrying or parked so pays one EXISTS
-- instead of a lookup per set and an EXISTS per job.
local unknown = redis.call('EXISTS', scheduled, retry, parked, unpack(keys, 1, math.min(n, 1000)))
for i = 1001, n, 1000 do
  unknown = unknown + redis.call('EXISTS', unpack(keys, i, math.min(i + 999, n)))
end
-- The heads of scheduled (before this run adds to it: see the wake-up below) and retry,
-- nil for an empty set; whether a claimer is parked. Parked is asked before retry as it
-- is present more often (idle workers), so the count more often runs out before retry.
local head, retry_head, is_parked = nil, nil, false
if unknown > 0 then
  head = pq_head_score(scheduled)
  if head ~= nil then
    unknown = unknown - 1
  end
end
if unknown > 0 then
  is_parked = redis.call('EXISTS', parked) == 1
  if is_parked then
    unknown = unknown - 1
  end
end
if unknown > 0 then
  retry_head = pq_head_score(retry)
  if retry_head ~= nil then
    unknown = unknown - 1
  end
end

-- Promote, searching only a set whose head is due.
local scheduled_due, retry_due = head ~= nil and head <= now, retry_head ~= nil and retry_head <= now
local moved = 0
if scheduled_due or retry_due then
  moved = pq_promote(pending, scheduled_due and scheduled, retry_due and retry, KEYS[4], job_prefix, now,
    tonumber(ARGV[5]))
end
-- What is left of `unknown` counts new jobs' keys that exist, and promoting may have
-- created one (its HSET on a stale entry's missing job): then every job is looked up.
-- Otherwise none existed, and only a job stored earlier in this batch can hold an id.
local look_up = unknown > 0 or moved > 0

local seq = redis.call('INCRBY', KEYS[4], n) - n
local out, due, later, stored, ranked = {}, {}, {}, {}, {}
local earliest = nil
local unique_index = 7

-- The id of the job already holding job i's id or unique key, or nil (then the key is taken).
local function holder_of(i, id, key)
  local unique_key = nil
  if unique_keys ~= nil and unique_keys[i] ~= NULL then
    unique_index = unique_index + 1
    unique_key = KEYS[unique_index]
  end
  if stored[id] or (look_up and redis.call('EXISTS', key) == 1) then
    return id
  end
  if unique_key == nil then
    return nil
  end
  local held = redis.call('GET', unique_key)
  if held then
    local held_id, expires = string.match(held, '^(.*)|(%d+)$')
    if expires and tonumber(expires) > now then
      return held_id
    end
  end
  local ttl = unique_fors[i]
  redis.call('SET', unique_key, id .. '|' .. pq_int(now + ttl), 'PX', pq_int(math.max(ttl, 1)))
  return nil
end

for i = 1, n do
  local id = ids[i]
  local key = keys[i]
  local holder = holder_of(i, id, key)
  if holder ~= nil then
    out[i] = holder
  else
    seq = seq + 1
    local run_at = now
    if run_ats ~= nil and run_ats[i] ~= NULL then
      run_at = run_ats[i]
    elseif delays ~= nil and delays[i] ~= NULL then
      run_at = now + delays[i]
    end
    local status = 'pending'
    if run_at > now then
      status = 'scheduled'
      later[#later + 1] = run_at
      later[#later + 1] = id
      if earliest == nil or run_at < earliest then
        earliest = run_at
      end
    elseif priorities ~= nil and priorities[i] ~= NULL then
      ranked[#ranked + 1] = {id, priorities[i], seq}
    else
      due[#due + 1] = id
    end
    -- now and seq go as text (see now_text)
    local unset = unset_all or (unsets ~= nil and unsets[i]) or NULL
    if unset == NULL then
      redis.call('HSET', key, 'type', type_all or types[i], 'payload', payloads[i], 'status', status,
        'run_at', run_at == now and now_text or run_at, 'created_at', now_text, 'seq', pq_int(seq),
        'max_retries', retries_all or retries[i], 'max_recoveries', recoveries_all or recoveries[i])
    else  -- the same, and the options left to the handler
      redis.call('HSET', key, 'type', type_all or types[i], 'payload', payloads[i], 'status', status,
        'run_at', run_at == now and now_text or run_at, 'created_at', now_text, 'seq', pq_int(seq),
        'max_retries', retries_all or retries[i], 'max_recoveries', recoveries_all or recoveries[i],
        'unset', unset)
    end
    for _, column in ipairs(optional) do
      local value = column[2][i]
      if value ~= NULL then
        redis.call('HSET', key, column[1], value)
      end
    end
    stored[id] = true
    out[i] = 1
  end
end

if #due > 0 then
  pq_chunked('RPUSH', pending, due)
end
if #ranked > 0 then  -- due jobs with a priority: one ZADD for the batch (ADR 0145)
  local scored = {}
  for _, job in ipairs(ranked) do
    scored[#scored + 1] = pq_prio_score(job[2], job[3])
    scored[#scored + 1] = job[1]
  end
  pq_chunked('ZADD', pq_prio_key(pending), scored)
end
if #later > 0 then
  pq_chunked('ZADD', scheduled, later)
end
-- Due jobs left for a wake-up, if pending was empty: all this run pushed, unless parked
-- claimers took some (without one pq_hand_off would do nothing: its first check).
local left = moved + #due + #ranked
if is_parked then
  pq_hand_off(pending, KEYS[5], KEYS[4], parked, KEYS[7], job_prefix, now, ARGV[7], ARGV[4])
  if was_empty then
    left = pq_line_len(pending)
  end
end
if (was_empty and left > 0) or (earliest ~= nil and (head == nil or earliest < head)) then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
end
return out
