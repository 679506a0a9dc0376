-- _limits.lua: rate and concurrency limits at claim time (ADR 0110); scripts.py prepends
-- it, after _lib.lua, to claim.lua only.
--
-- A limited job waits and runs in its group's "lane": the lists and sets of a queue's own
-- (pending, scheduled, retry, active), named <lane prefix><limit key>:<name> where the lane
-- prefix "<prefix>:{<queue>}:lane:" carries the queue's hash tag, so every lane key lives
-- in the same cluster slot as the declared KEYS. Lane keys are built here from that prefix
-- (passed in ARGV, as the job key prefix is; see _lib.lua) because the claim learns which
-- groups to visit only while it runs. Ack, fail, release, extend and recover run their
-- usual scripts on a lane's keys (the broker names them from the lease's limit key), so a
-- lane's active set counts its running jobs, and every way out of active frees a slot.
--
-- Per queue, the zset <p>:{q}:lanes scores each lane by when it may next be claimable (ms):
-- 0 after an enqueue, ack, fail, release or recovery touched it ("look now"), the next
-- token's time when its rate holds it back, now + LANE_RECHECK_MS when it is full (its
-- own jobs' acks set it back to 0), the head of its scheduled/retry jobs when nothing is
-- due, +inf while it only has running jobs. A lane with no job at all leaves the zset.
-- Its state is the hash <lane prefix><key>:state {limit (its head job's, for stats),
-- tokens, at ms}; no tokens = a full bucket. It outlives an empty lane by as long as the
-- bucket takes to fill, so a lane that empties and refills cannot start with a fresh burst.

local LANE_RECHECK_MS = 1000
local LANES_PER_CLAIM = 64

local function pq_lane(lane_prefix, key, name)
  return lane_prefix .. key .. ':' .. name
end

-- The limits a job carries in its 'limit' field: rate (tokens/s, or nil), burst, concurrency.
local function pq_job_limit(job_key)
  local text = redis.call('HGET', job_key, 'limit')
  if not text then
    return nil, 1, nil
  end
  local rate, burst, conc = string.match(text, '^(%S+) (%S+) (%S+)$')
  return tonumber(rate), tonumber(burst) or 1, tonumber(conc)
end

-- The bucket's tokens at `now` for `rate` per second up to `burst`.
local function pq_tokens(bucket, now, rate, burst)
  local state = redis.call('HMGET', bucket, 'tokens', 'at')
  local tokens, at = tonumber(state[1]), tonumber(state[2])
  if tokens == nil or at == nil then
    return burst
  end
  return math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
end

-- The first job id of a lane's line that is still pending there (stale ids, left by a
-- cancel or a purge, are dropped), or nil: a prioritized job's (its prio zset's first), else
-- the pending list's. Its limits are the ones the lane's claim applies.
local function pq_lane_head(pending, job_prefix)
  local prio = pq_prio_key(pending)
  while true do
    local first = redis.call('ZRANGE', prio, '0', '0')
    if #first == 0 then
      break
    end
    if redis.call('HGET', job_prefix .. first[1], 'status') == 'pending' then
      return first[1]
    end
    redis.call('ZREM', prio, first[1])
  end
  while true do
    local id = redis.call('LINDEX', pending, 0)
    if not id then
      return nil
    end
    if redis.call('HGET', job_prefix .. id, 'status') == 'pending' then
      return id
    end
    redis.call('LPOP', pending)
  end
end

-- Let an empty lane's state expire once its bucket would be full again.
local function pq_lane_forget(state)
  local text = redis.call('HGET', state, 'limit')
  local rate, burst = nil, 1
  if text then
    local r, b = string.match(text, '^(%S+) (%S+) ')
    rate, burst = tonumber(r), tonumber(b) or 1
  end
  if rate == nil then
    redis.call('DEL', state)
  else
    redis.call('PEXPIRE', state, pq_int(math.ceil(burst * 1000 / rate) + 1000))
  end
end

-- When a lane without due jobs next has one (its scheduled/retry head), or nil.
local function pq_lane_next_due(scheduled, retry)
  local a, b = pq_head_score(scheduled), pq_head_score(retry)
  if a == nil then
    return b
  end
  if b == nil then
    return a
  end
  return math.min(a, b)
end

-- Lease up to `want` jobs from the lanes of one queue whose score has come (oldest score
-- first), each within its limits, and rescore every lane visited. Returns the leased
-- {id, fields} entries (deadline now + lease, as pq_lease's).
local function pq_claim_lanes(lanes, lane_prefix, seq_key, job_prefix, now, want, lease, worker, promote_limit)
  local out = {}
  local visit = redis.call('ZRANGE', lanes, '-inf', now, 'BYSCORE', 'LIMIT', 0, LANES_PER_CLAIM)
  for _, key in ipairs(visit) do
    local pending, scheduled = pq_lane(lane_prefix, key, 'pending'), pq_lane(lane_prefix, key, 'scheduled')
    local retry, active = pq_lane(lane_prefix, key, 'retry'), pq_lane(lane_prefix, key, 'active')
    pq_promote(pending, scheduled, retry, seq_key, job_prefix, now, promote_limit)
    local head = pq_lane_head(pending, job_prefix)
    local score = nil
    if head ~= nil then
      local rate, burst, conc = pq_job_limit(job_prefix .. head)
      local room = want - #out
      if conc ~= nil then
        room = math.min(room, conc - redis.call('ZCARD', active))
      end
      local bucket, tokens = pq_lane(lane_prefix, key, 'state'), nil
      redis.call('HSET', bucket, 'limit', redis.call('HGET', job_prefix .. head, 'limit') or '- 1 -')
      redis.call('PERSIST', bucket)
      if rate ~= nil then
        tokens = pq_tokens(bucket, now, rate, burst)
        room = math.min(room, math.floor(tokens + 1e-9))
      end
      local took = 0
      if room > 0 then
        local _, jobs = pq_lease(pending, active, seq_key, job_prefix, now, room, lease, worker)
        for _, job in ipairs(jobs) do
          out[#out + 1] = job
        end
        took = #jobs
      end
      if rate ~= nil then
        tokens = tokens - took
        redis.call('HSET', bucket, 'tokens', tostring(tokens), 'at', pq_int(now))
      end
      if pq_line_len(pending) > 0 then
        if conc ~= nil and redis.call('ZCARD', active) >= conc then
          score = now + LANE_RECHECK_MS
        elseif rate ~= nil and tokens < 1 then
          score = now + math.ceil((1 - tokens) * 1000 / rate)
        else
          score = now
        end
      end
    end
    if score == nil then
      score = pq_lane_next_due(scheduled, retry)
    end
    if score == nil and redis.call('ZCARD', active) > 0 then
      score = '+inf'
    end
    if score == nil then
      redis.call('ZREM', lanes, key)
      pq_lane_forget(pq_lane(lane_prefix, key, 'state'))
    else
      redis.call('ZADD', lanes, score, key)
    end
    if #out >= want then
      break
    end
  end
  return out
end
