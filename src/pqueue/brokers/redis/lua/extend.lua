-- extend.lua: push the deadline of current leases to now + lease (the heartbeat).
--
-- KEYS[1]  <p>:{q}:active
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  lease duration ms
-- ARGV[4]  JSON object {id: [...], token: [...]}
-- Returns: array of 1 (extended) / 0 (lease lost), one per lease
-- Errors:  none of its own.

local active = KEYS[1]
local now = pq_now(ARGV[1])
local job_prefix = ARGV[2]
local deadline = now + tonumber(ARGV[3])
local batch = cjson.decode(ARGV[4])
local ids, tokens = batch['id'], batch['token']
local out = {}
for i = 1, #ids do
  local id = ids[i]
  local key = job_prefix .. id
  if pq_lease_current(key, tokens[i]) then
    redis.call('ZADD', active, 'XX', deadline, id)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
