-- extend.lua: push the deadline of current leases to now + lease (the heartbeat).
--
-- KEYS[1]  <p>:{q}:active
-- KEYS[1+i] <p>:{q}:job:<id> of lease i
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  lease duration ms
-- ARGV[1+2i .. 2+2i] for lease i: id, token
-- Returns: array of 1 (extended) / 0 (lease lost), one per lease
-- Errors:  none of its own.

local active = KEYS[1]
local now = pq_now(ARGV[1])
local deadline = pq_int(now + tonumber(ARGV[2]))
local out = {}
for i = 1, #KEYS - 1 do
  local key = KEYS[1 + i]
  local id, token = ARGV[1 + 2 * i], ARGV[2 + 2 * i]
  local cur = redis.call('HMGET', key, 'status', 'token')
  if cur[1] == 'active' and cur[2] == token then
    redis.call('HSET', key, 'lease_expires_at', deadline)
    redis.call('ZADD', active, 'XX', deadline, id)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
