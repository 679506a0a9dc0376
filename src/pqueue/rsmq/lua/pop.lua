-- pop.lua: take the first visible message and delete it in the same step (receive and
-- delete at once); it counts as a receive in totalrecv.
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q
-- Returns: {0, id, body, rc, fr}, {0} nothing visible, {1} no such queue

if not rsmq_settings(KEYS[2]) then
  return {1}
end
local now = rsmq_ms(rsmq_time())
local found = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', rsmq_num(now), 'LIMIT', 0, 1)
if #found == 0 then
  return {0}
end
local id = found[1]
redis.call('HINCRBY', KEYS[2], 'totalrecv', 1)
local body = redis.call('HGET', KEYS[2], id) or ''
local rc = redis.call('HINCRBY', KEYS[2], id .. ':rc', 1)
local fr = rsmq_num(now)
if rc ~= 1 then
  fr = redis.call('HGET', KEYS[2], id .. ':fr') or fr
end
redis.call('ZREM', KEYS[1], id)
redis.call('HDEL', KEYS[2], id, id .. ':rc', id .. ':fr')
return {0, id, body, rc, fr}
