-- schedules_mark.lua: raise a schedule's last run to a tick that was enqueued (never lower
-- it). Value format: see schedules_register.lua.
--
-- KEYS[1]  <p>:schedules (hash: schedule name -> value)
-- ARGV[1]  schedule name
-- ARGV[2]  tick ms
-- Returns: 1 when the last run was raised, 0 otherwise (older tick, or no such record)
-- Errors:  none of its own.

local value = redis.call('HGET', KEYS[1], ARGV[1])
if not value then
  return 0
end
local since, exp, last, definition = string.match(value, '^(%d+)|(%d+)|(%d*)|(.*)$')
if since == nil then
  return 0
end
local tick = tonumber(ARGV[2])
if last ~= '' and tonumber(last) >= tick then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], since .. '|' .. exp .. '|' .. pq_int(tick) .. '|' .. definition)
return 1
