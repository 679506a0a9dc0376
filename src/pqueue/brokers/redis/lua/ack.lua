-- ack.lua: complete leased jobs of one queue, storing each one's result.
--
-- A lease is current while the job is active and its token matches; anything else is
-- a lost lease and changes nothing. (The token field stays: only an active job's token
-- fences anything.) Completed job hashes expire after the retention
-- window (PEXPIRE); prune.lua removes their index entries.
--
-- KEYS[1]  <p>:{q}:active
-- KEYS[2]  <p>:{q}:completed    zset id -> finished_at ms
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  retention ms (the job hash's TTL; 0 = no TTL, prune only)
-- ARGV[4]  JSON object {id: [...], token: [...], result: [JSON text|null, ...]}; result
--          is absent when no lease has one
-- Returns: array of 1 (completed) / 0 (lease lost), one per lease
-- Errors:  none of its own.

local active, completed = KEYS[1], KEYS[2]
local now = pq_now(ARGV[1])
local job_prefix = ARGV[2]
local retention = tonumber(ARGV[3])
local batch = cjson.decode(ARGV[4])
local ids, tokens, results = batch['id'], batch['token'], batch['result']
local out, done = {}, {}
for i = 1, #ids do
  local id = ids[i]
  local key = job_prefix .. id
  local cur = redis.call('HMGET', key, 'status', 'token')
  if cur[1] == 'active' and cur[2] == tokens[i] then
    if results ~= nil and results[i] ~= cjson.null then
      redis.call('HSET', key, 'status', 'completed', 'finished_at', now, 'result', results[i])
    else
      redis.call('HSET', key, 'status', 'completed', 'finished_at', now)
    end
    if retention > 0 then
      redis.call('PEXPIRE', key, retention)
    end
    done[#done + 1] = now
    done[#done + 1] = id
    out[i] = 1
  else
    out[i] = 0
  end
end
if #done > 0 then
  pq_chunked('ZADD', completed, done)
  local gone = {}
  for i = 2, #done, 2 do
    gone[#gone + 1] = done[i]
  end
  pq_chunked('ZREM', active, gone)
end
return out
