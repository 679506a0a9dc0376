-- _lib.lua: helpers shared by every pqueue script; scripts.py prepends this file to each
-- script before loading it, so every helper below is a local of the script that uses it.
--
-- Conventions (docs/redis.md):
--   * Times are integer milliseconds since the epoch. ARGV[1] of every script is the
--     caller's clock in ms, or '' to use the server's clock (TIME), so one script run never
--     mixes two clocks.
--   * Every KEYS entry of one call shares the queue's hash tag "{<queue>}". Scripts that
--     must reach jobs whose ids they only learn while running (claim, promote, recover,
--     prune, requeue/purge of a whole queue) build the job key as <job prefix> .. id,
--     where the job prefix "<prefix>:{<queue>}:job:" carries the same hash tag; the key
--     therefore lives in the same cluster slot as the declared KEYS.
--   * A wake-up is a PUBLISH of the queue name on the prefix's channel.

local function pq_now(arg)
  if arg ~= nil and arg ~= '' then
    return tonumber(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function pq_int(n)
  return string.format('%d', n)
end

-- Run `cmd key <items...>` in chunks small enough for Lua's unpack() limit.
local function pq_chunked(cmd, key, items)
  local step = 1000
  for i = 1, #items, step do
    redis.call(cmd, key, unpack(items, i, math.min(i + step - 1, #items)))
  end
end

-- The score of the first member of a sorted set, or nil when it is empty.
local function pq_head_score(zkey)
  -- Text indexes: redis.call formats each Lua number argument anew (snprintf), a
  -- measurable share of a short script's run time.
  local head = redis.call('ZRANGE', zkey, '0', '0', 'WITHSCORES')
  if #head == 0 then
    return nil
  end
  return tonumber(head[2])
end

-- Prioritized jobs (ADR 0145, docs/redis.md). A due job at the default priority 0 waits in
-- the queue's pending list, as it always did. A due job with a priority waits in the zset
-- <pending>:prio (the line's "prio" key, same hash tag), scored (100 - priority) * 2^44 +
-- its seq: lower scores first, so higher priorities first and, within one, enqueue (or
-- line-entry) order. A line is read in three parts: prio members above the default
-- (scores below PQ_PRIO_PLAIN), then the list, then the rest of prio (below the default).
-- A queue that never sets a priority has no prio key, and pays one EXISTS per claim.
local PQ_PRIO_SPAN = 17592186044416  -- 2^44: seq values stay below it; 201 spans fit in 2^53
local PQ_PRIO_PLAIN = '(' .. string.format('%d', 100 * PQ_PRIO_SPAN)

local function pq_prio_key(pending)
  return pending .. ':prio'
end

local function pq_prio_score(priority, seq)
  return pq_int((100 - priority) * PQ_PRIO_SPAN + seq)
end

-- How many ids wait in a line (its list and its prio zset).
local function pq_line_len(pending)
  return redis.call('LLEN', pending) + redis.call('ZCARD', pq_prio_key(pending))
end

-- Put a due job at the tail of its line: the list, or prio by its priority and `seq`.
local function pq_line_push(pending, id, priority, seq)
  if priority == 0 then
    redis.call('RPUSH', pending, id)
  else
    redis.call('ZADD', pq_prio_key(pending), pq_prio_score(priority, seq), id)
  end
end

-- Take up to `limit` ids from the head of a line (see above), removing them.
local function pq_line_take(pending, limit)
  local prio = pq_prio_key(pending)
  if redis.call('EXISTS', prio) == 0 then
    return redis.call('LPOP', pending, limit) or {}
  end
  local ids = redis.call('ZRANGE', prio, '-inf', PQ_PRIO_PLAIN, 'BYSCORE', 'LIMIT', '0', limit)
  if #ids > 0 then
    redis.call('ZREM', prio, unpack(ids))
  end
  if #ids < limit then
    for _, id in ipairs(redis.call('LPOP', pending, limit - #ids) or {}) do
      ids[#ids + 1] = id
    end
  end
  if #ids < limit then
    local below = redis.call('ZRANGE', prio, '0', pq_int(limit - #ids - 1))
    if #below > 0 then
      redis.call('ZREM', prio, unpack(below))
      for _, id in ipairs(below) do
        ids[#ids + 1] = id
      end
    end
  end
  return ids
end

-- Sort entries {id, run_at} by run_at, then by the job's enqueue sequence number (read
-- only to break ties), so equal run_ats keep their enqueue order.
local function pq_sort_due(entries, job_prefix)
  local seqs = {}
  local function seq(id)
    local s = seqs[id]
    if s == nil then
      s = tonumber(redis.call('HGET', job_prefix .. id, 'seq')) or 0
      seqs[id] = s
    end
    return s
  end
  table.sort(entries, function(a, b)
    if a[2] ~= b[2] then
      return a[2] < b[2]
    end
    return seq(a[1]) < seq(b[1])
  end)
end

-- Move up to `limit` due jobs (run_at <= now) from the scheduled and retry sets to the
-- tail of their line (pending, or prio for a job with a priority: then with a fresh seq
-- from `seq_key`), by (run_at, enqueue order). Returns how many moved. A set passed as
-- false is not searched (enqueue.lua, which knows from the set's head that nothing in it
-- is due).
local function pq_promote(pending, scheduled, retry, seq_key, job_prefix, now, limit)
  local due = {}
  for _, zkey in ipairs({scheduled, retry}) do
    if zkey then
      local found = redis.call('ZRANGE', zkey, '-inf', now, 'BYSCORE', 'LIMIT', '0', limit, 'WITHSCORES')
      for i = 1, #found, 2 do
        due[#due + 1] = {found[i], tonumber(found[i + 1]), zkey}
      end
    end
  end
  if #due == 0 then
    return 0
  end
  pq_sort_due(due, job_prefix)
  local ids = {}
  local from = {[scheduled] = {}, [retry] = {}}
  local n = math.min(#due, limit)
  for i = 1, n do
    local id, zkey = due[i][1], due[i][3]
    from[zkey][#from[zkey] + 1] = id
    local key = job_prefix .. id
    local priority = tonumber(redis.call('HGET', key, 'priority'))
    if priority == nil then
      ids[#ids + 1] = id
      redis.call('HSET', key, 'status', 'pending')
    else
      -- joins prio behind what is due already (a fresh seq, as the list's tail is)
      local seq = redis.call('INCR', seq_key)
      redis.call('HSET', key, 'status', 'pending', 'seq', pq_int(seq))
      pq_line_push(pending, id, priority, seq)
    end
  end
  for zkey, members in pairs(from) do
    if #members > 0 then
      pq_chunked('ZREM', zkey, members)
    end
  end
  if #ids > 0 then
    pq_chunked('RPUSH', pending, ids)
  end
  return n
end

-- Put jobs back at the head of their line, earliest (run_at, enqueue order) first: they
-- were due before anything behind them. `entries` are {id, run_at}. A job with a priority
-- goes back into prio under its own seq, so ahead of its equals that entered after it.
local function pq_push_front(pending, entries, job_prefix)
  if #entries == 0 then
    return
  end
  pq_sort_due(entries, job_prefix)
  local reversed = {}
  for i = #entries, 1, -1 do
    local id = entries[i][1]
    local f = redis.call('HMGET', job_prefix .. id, 'priority', 'seq')
    local priority = tonumber(f[1])
    if priority == nil then
      reversed[#reversed + 1] = id
    else
      pq_line_push(pending, id, priority, tonumber(f[2]) or 0)
    end
  end
  if #reversed > 0 then
    pq_chunked('LPUSH', pending, reversed)
  end
end

-- A lease is current while its job is active and holds the lease's token; anything else
-- is a lost lease, which ack, fail, release and extend leave as it is. (The token field
-- stays when a job moves on: only an active job's token fences anything.) Returns the
-- job's fields 'status', 'token' and then those named in `...` (HMGET) when `token` is
-- current, else nil.
local function pq_lease_current(key, token, ...)
  local cur = redis.call('HMGET', key, 'status', 'token', ...)
  if cur[1] == 'active' and cur[2] == token then
    return cur
  end
  return nil
end

-- Append an error record {kind, message, traceback} to a job's JSON error history,
-- stamped with the attempt it ends (the job's `attempt` field as read; 0 when absent) and
-- the time `now` ms (as epoch seconds), keeping the newest `keep`. A malformed history is
-- replaced rather than failing the script (and with it every transition of the queue,
-- e.g. recovery).
local function pq_add_error(job_key, error_obj, attempt, now, keep)
  error_obj['attempt'] = tonumber(attempt) or 0
  error_obj['at'] = now / 1000
  local raw = redis.call('HGET', job_key, 'errors')
  local history = {}
  if raw then
    local ok, decoded = pcall(cjson.decode, raw)
    if ok and type(decoded) == 'table' then
      history = decoded
    end
  end
  history[#history + 1] = error_obj
  while #history > keep do
    table.remove(history, 1)
  end
  redis.call('HSET', job_key, 'errors', cjson.encode(history))
end

-- Lease up to `limit` due jobs from the head of pending to `worker`: each becomes active
-- with attempt + 1, a fresh token (from the seq counter) and an entry in the active set
-- scored by the deadline now + lease. An id whose job is gone or no longer pending (a
-- stale entry) is dropped; a job key of the wrong type is read with pcall and dropped
-- too, since nothing may raise after the LPOP (Redis does not roll a script back).
-- Returns deadline, {{id, fields}, ...}: fields is the job's HGETALL before the lease
-- followed by the fields the lease changed (the last value of a field wins), all text.
local function pq_lease(pending, active, seq_key, job_prefix, now, limit, lease, worker)
  local deadline = now + lease
  local ids = pq_line_take(pending, limit)
  if #ids == 0 then
    return deadline, {}
  end
  local token = redis.call('INCRBY', seq_key, #ids) - #ids
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
      local changed = {'status', 'active', 'attempt', pq_int(attempt + 1), 'token', pq_int(token),
        'started_at', pq_int(now), 'worker', worker}
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
  return deadline, out
end

-- Drop up to 100 parked claimers whose parking expired (park.lua), from both keys.
local function pq_unpark_expired(parked, parkers, now)
  local gone = redis.call('ZRANGE', parked, '-inf', pq_int(now), 'BYSCORE', 'LIMIT', 0, 100)
  if #gone > 0 then
    redis.call('ZREM', parked, unpack(gone))
    redis.call('HDEL', parkers, unpack(gone))
  end
end

-- Hand due jobs straight to parked claimers (one hop; docs/redis.md, "Hand-off"): while
-- pending holds jobs and a claimer is parked, unpark it, lease it up to its limit from
-- the head of pending and publish the leases on its broker's hand-off channel. A
-- claimer whose broker no longer listens is dropped without a lease: its jobs stay
-- pending for the wake-up. Returns how many jobs were handed off.
local function pq_hand_off(pending, active, seq_key, parked, parkers, job_prefix, now, channel_prefix, queue)
  if redis.call('EXISTS', parked) == 0 or pq_line_len(pending) == 0 then
    return 0
  end
  pq_unpark_expired(parked, parkers, now)
  local handed = 0
  while pq_line_len(pending) > 0 do
    local found = redis.call('ZRANGE', parked, '(' .. pq_int(now), '+inf', 'BYSCORE', 'LIMIT', 0, 1)
    if #found == 0 then
      break
    end
    local member = found[1]
    local how = redis.call('HGET', parkers, member)
    redis.call('ZREM', parked, member)
    redis.call('HDEL', parkers, member)
    local hub, worker = string.match(member, '^(%S+) (.+)$')
    local limit, lease = string.match(how or '', '^(%d+) (%d+)$')
    local channel = channel_prefix .. (hub or '')
    if hub and limit and redis.call('PUBSUB', 'NUMSUB', channel)[2] > 0 then
      local deadline, jobs = pq_lease(pending, active, seq_key, job_prefix, now, tonumber(limit),
        tonumber(lease), worker)
      if #jobs > 0 then
        redis.call('PUBLISH', channel, cjson.encode({q = queue, d = pq_int(deadline), w = worker, j = jobs}))
        handed = handed + #jobs
      end
    end
  end
  return handed
end

-- Finishing a job (ADRs 0116, 0117). A job finishes completed (ack.lua), dead (fail.lua,
-- recover.lua) or cancelled (cancel.lua, cancel_active.lua, settle.lua); pq_finish does
-- what all of them do alike. A script gathers what finishing needs once per run, from its
-- own KEYS and ARGV, with pq_finisher(now, followed, settled, results, retention):
--   now        the script's clock, ms (pq_now)
--   followed   KEY <p>:{q}:followed   set of unfinished jobs with dependants or a result()
--                                     waiter (link.lua, watch.lua add them)
--   settled    KEY <p>:{q}:settled    zset id -> finished ms: parents whose dependants the
--                                     broker has still to tell (settle.lua)
--   results    the results channel    a finished job a result() waits on is named there
--   retention  ms the finished job's hash lives on (PEXPIRE); 0 = no TTL (dead jobs stay
--              until purged)
-- Per job, pq_finish takes its key <p>:{q}:job:<id> (a KEYS entry, or built from the job
-- prefix: see the conventions above) and its status's zset <p>:{q}:completed|dead|cancelled
-- (a KEYS entry).
local function pq_finisher(now, followed, settled, results, retention)
  -- `following` (whether `followed` has members) is looked up by the first pq_finish.
  return {now_text = pq_int(now), followed = followed, settled = settled, results = results,
    retention = tonumber(retention)}
end

-- Finish one job: status and finished_at (and `result`, when given) in its hash, its entry
-- in the status's zset `index` (false when the script adds a batch's entries at once, as
-- ack.lua does), its TTL, and its followers: a job a result() waits on (field `watched`) is
-- named on the results channel; one with dependants (field `children`) is recorded in
-- `settled`. `followed` is counted once per script run (SCARD) and a job's fields are read
-- only while it has members, so queues that use neither pay one call per run.
-- Returns true when the job has dependants: the script answers so, and the broker tells
-- them (settle.lua). Raises nothing of its own.
local function pq_finish(fin, key, id, status, index, result)
  if result ~= nil then
    redis.call('HSET', key, 'status', status, 'finished_at', fin.now_text, 'result', result)
  else
    redis.call('HSET', key, 'status', status, 'finished_at', fin.now_text)
  end
  if index then
    redis.call('ZADD', index, fin.now_text, id)
  end
  if fin.retention > 0 then
    redis.call('PEXPIRE', key, fin.retention)
  end
  if fin.following == nil then
    fin.following = redis.call('SCARD', fin.followed) > 0
  end
  if not fin.following or redis.call('SREM', fin.followed, id) == 0 then
    return false
  end
  local f = redis.call('HMGET', key, 'children', 'watched')
  if f[2] then
    redis.call('PUBLISH', fin.results, id)
  end
  if f[1] then
    redis.call('ZADD', fin.settled, fin.now_text, id)
    return true
  end
  return false
end
