-- ack.lua: complete leased jobs of one queue, storing each one's result.
--
-- A lease is current while the job is active and its token matches; anything else is
-- a lost lease and changes nothing. Completed job hashes expire after the retention
-- window (PEXPIRE); prune.lua removes their index entries.
--
-- KEYS[1]  <p>:{q}:active
-- KEYS[2]  <p>:{q}:completed    zset id -> finished_at ms
-- KEYS[2+i] <p>:{q}:job:<id> of lease i
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  retention ms (the job hash's TTL; 0 = no TTL, prune only)
-- ARGV[3i .. 3i+2] for lease i: id, token, result JSON text or '' for none
-- Returns: array of 1 (completed) / 0 (lease lost), one per lease
-- Errors:  none of its own.

local active, completed = KEYS[1], KEYS[2]
local now = pq_now(ARGV[1])
local finished = pq_int(now)
local retention = tonumber(ARGV[2])
local out, done = {}, {}
for i = 1, #KEYS - 2 do
  local key = KEYS[2 + i]
  local id, token, result = ARGV[3 * i], ARGV[3 * i + 1], ARGV[3 * i + 2]
  local cur = redis.call('HMGET', key, 'status', 'token')
  if cur[1] == 'active' and cur[2] == token then
    redis.call('HSET', key, 'status', 'completed', 'finished_at', finished)
    if result ~= '' then
      redis.call('HSET', key, 'result', result)
    end
    redis.call('HDEL', key, 'token', 'lease_expires_at')
    if retention > 0 then
      redis.call('PEXPIRE', key, retention)
    end
    redis.call('ZREM', active, id)
    done[#done + 1] = finished
    done[#done + 1] = id
    out[i] = 1
  else
    out[i] = 0
  end
end
if #done > 0 then
  pq_chunked('ZADD', completed, done)
end
return out
