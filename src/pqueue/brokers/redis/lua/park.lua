-- park.lua: an idle claimer looks for due work in one queue and, finding none, parks.
-- `wait_for_jobs` looks with it whether or not it parks (no claimer: look only).
--
-- Parking registers the claimer in the queue's `parked` set until the expiry now + park
-- ms, with how many jobs it takes and for how long; the enqueue script then leases due
-- jobs straight to it and publishes them on its broker's hand-off channel (pq_hand_off
-- in _lib.lua). Parking again refreshes the entry. Nothing is parked when a job is due:
-- the claimer should claim instead. Both keys expire with their last parked claimer.
--
-- KEYS[1]  <p>:{q}:pending
-- KEYS[2]  <p>:{q}:scheduled
-- KEYS[3]  <p>:{q}:retry
-- KEYS[4]  <p>:{q}:parked       zset parked claimer -> parking expiry ms
-- KEYS[5]  <p>:{q}:parkers      hash parked claimer -> "<limit> <lease ms>"
-- KEYS[6]  <p>:{q}:paused       present while the queue is paused: nothing is due, nobody parks
-- KEYS[7]  <p>:{q}:lanes        zset limit key -> when its lane may next be claimable ms
--                               (_limits.lua): a lane's time counts as a due job's
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  the claimer: "<broker hand-off id> <worker id>", or '' to look without parking
-- ARGV[3]  limit (>= 1)
-- ARGV[4]  lease duration ms
-- ARGV[5]  parking time ms
-- Returns: {1, 0} when a job is due (not parked), else {0, ms until the earliest
--          scheduled/retry job is due, or -1 when there is none}
-- Errors:  none of its own.

if redis.call('EXISTS', KEYS[6]) == 1 then
  return {0, -1}
end

local pending, parked, parkers = KEYS[1], KEYS[4], KEYS[5]
local now = pq_now(ARGV[1])

if pq_line_len(pending) > 0 then
  return {1, 0}
end
local earliest = nil
for _, zkey in ipairs({KEYS[2], KEYS[3]}) do
  local head = pq_head_score(zkey)
  if head ~= nil and (earliest == nil or head < earliest) then
    earliest = head
  end
end
local lane = pq_head_score(KEYS[7])
if lane ~= nil and lane < math.huge and (earliest == nil or lane < earliest) then
  earliest = lane
end
if earliest ~= nil and earliest <= now then
  return {1, 0}
end

if ARGV[2] ~= '' then
  local park_ms = tonumber(ARGV[5])
  pq_unpark_expired(parked, parkers, now)
  redis.call('ZADD', parked, pq_int(now + park_ms), ARGV[2])
  redis.call('HSET', parkers, ARGV[2], pq_int(tonumber(ARGV[3])) .. ' ' .. pq_int(tonumber(ARGV[4])))
  for _, key in ipairs({parked, parkers}) do
    if redis.call('PTTL', key) < park_ms then
      redis.call('PEXPIRE', key, park_ms)
    end
  end
end
if earliest == nil then
  return {0, -1}
end
return {0, earliest - now}
