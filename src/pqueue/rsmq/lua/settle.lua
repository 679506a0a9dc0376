-- settle.lua: the consumer's fenced step on a message it received: delete it (done),
-- hide it for ms (heartbeat, back-off, or 0 to hand it back), or bury it in the dead
-- queue. Fenced by rc: if the message was received again since (its vt ran out and
-- someone else holds it) or is gone, nothing changes.
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q
-- KEYS[3]  {ns}:{dead}    KEYS[4]  {ns}:{dead}:Q    KEYS[5]  {ns}:QUEUES
-- ARGV[1]  'delete' | 'hide' | 'bury'   ARGV[2]  id   ARGV[3]  rc the consumer saw
-- ARGV[4]  hide: ms from now            ARGV[5]  bury: the dead queue's name
-- Returns: {0, 1} done, {0, 0} fenced off (nothing changed)
-- The dead queue is a plain RSMQ queue (made on first use with the source's vt, delay 0
-- and no maxsize); the message keeps its id, so its `sent` stays the original send time.

local action, id = ARGV[1], ARGV[2]
if redis.call('HGET', KEYS[2], id .. ':rc') ~= ARGV[3] or not redis.call('ZSCORE', KEYS[1], id) then
  return {0, 0}
end
local s, us = rsmq_time()
local now = rsmq_ms(s, us)
if action == 'hide' then
  redis.call('ZADD', KEYS[1], rsmq_num(now + tonumber(ARGV[4])), id)
  return {0, 1}
end
if action == 'bury' then
  local vt = rsmq_settings(KEYS[2])
  if redis.call('HSETNX', KEYS[4], 'vt', vt or 30) == 1 then
    redis.call('HSET', KEYS[4], 'delay', 0, 'maxsize', -1, 'created', s, 'modified', s)
    redis.call('SADD', KEYS[5], ARGV[5])
  end
  redis.call('ZADD', KEYS[3], rsmq_num(now), id)
  redis.call('HSET', KEYS[4], id, redis.call('HGET', KEYS[2], id) or '')
  redis.call('HINCRBY', KEYS[4], 'totalsent', 1)
end
redis.call('ZREM', KEYS[1], id)
redis.call('HDEL', KEYS[2], id, id .. ':rc', id .. ':fr')
return {0, 1}
