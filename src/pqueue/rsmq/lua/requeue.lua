-- requeue.lua: move up to N messages from one queue (a dead queue) back to another,
-- visible now, with a fresh rc; each keeps its id.
--
-- KEYS[1]  {ns}:{from}   KEYS[2]  {ns}:{from}:Q   KEYS[3]  {ns}:{to}   KEYS[4]  {ns}:{to}:Q
-- ARGV[1]  at most this many
-- Returns: {0, moved}, {1} the target queue does not exist

if not rsmq_settings(KEYS[4]) then
  return {1}
end
local now = rsmq_ms(rsmq_time())
local ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[3], rsmq_num(now), id)
  redis.call('HSET', KEYS[4], id, redis.call('HGET', KEYS[2], id) or '')
  redis.call('HINCRBY', KEYS[4], 'totalsent', 1)
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id, id .. ':rc', id .. ':fr')
end
return {0, #ids}
