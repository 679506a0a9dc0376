-- schedules_register.lua: record (or refresh) the schedules one worker runs, keeping each
-- one's first-seen time and last run, and delete records expired for longer than the
-- retention. Value format of a field: "<since ms>|<expires ms>|<last run ms or empty>|<json>"
-- (the JSON is the definition, pqueue.broker_schedules.encode_schedule).
--
-- KEYS[1]  <p>:schedules (hash: schedule name -> value)
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  ttl ms
-- ARGV[3]  retention ms (records whose expiry is older than now - retention are deleted)
-- ARGV[4..] pairs: schedule name, definition JSON
-- Returns: per schedule, in order, the ms its due ticks count from (last run, else since)
-- Errors:  none of its own.

local now = pq_now(ARGV[1])
local expires = now + tonumber(ARGV[2])
local oldest = now - tonumber(ARGV[3])
local stored = redis.call('HGETALL', KEYS[1])
local records = {}
for i = 1, #stored, 2 do
  local since, exp, last = string.match(stored[i + 1], '^(%d+)|(%d+)|(%d*)|')
  if since == nil or tonumber(exp) <= oldest then
    redis.call('HDEL', KEYS[1], stored[i])
  else
    records[stored[i]] = {since, last}
  end
end
local cursors = {}
for i = 4, #ARGV, 2 do
  local name = ARGV[i]
  local since, last = pq_int(now), ''
  local record = records[name]
  if record ~= nil then
    since, last = record[1], record[2]
  end
  redis.call('HSET', KEYS[1], name, since .. '|' .. pq_int(expires) .. '|' .. last .. '|' .. ARGV[i + 1])
  if last ~= '' then
    cursors[#cursors + 1] = tonumber(last)
  else
    cursors[#cursors + 1] = tonumber(since)
  end
end
return cursors
