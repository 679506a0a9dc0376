-- receive.lua: take the first visible message and hide it for vt seconds; count the
-- receive (totalrecv, the message's rc) and stamp its first receive (fr) once.
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q
-- ARGV[1]  vt in s, '' = the queue's
-- Returns: {0, id, body, rc, fr}, {0} nothing visible, {1} no such queue

local vt = rsmq_settings(KEYS[2])
if not vt then
  return {1}
end
if ARGV[1] ~= '' then
  vt = tonumber(ARGV[1])
end
local now = rsmq_ms(rsmq_time())
local found = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', rsmq_num(now), 'LIMIT', 0, 1)
if #found == 0 then
  return {0}
end
local id = found[1]
redis.call('ZADD', KEYS[1], rsmq_num(now + vt * 1000), id)
redis.call('HINCRBY', KEYS[2], 'totalrecv', 1)
local body = redis.call('HGET', KEYS[2], id) or ''
local rc = redis.call('HINCRBY', KEYS[2], id .. ':rc', 1)
local fr
if rc == 1 then
  fr = rsmq_num(now)
  redis.call('HSET', KEYS[2], id .. ':fr', fr)
else
  fr = redis.call('HGET', KEYS[2], id .. ':fr') or rsmq_num(now)
end
return {0, id, body, rc, fr}
