-- send.lua: store a message under a new id, visible after the delay.
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q
-- ARGV[1]  body   ARGV[2]  its length in UTF-16 code units (maxsize counts those)
-- ARGV[3]  delay in s, '' = the queue's   ARGV[4]  22 random characters of the id
-- ARGV[5]  realtime channel {ns}:rt:{qname}, '' = do not publish
-- Returns: {0, id}, {1} no such queue, {2, maxsize} too long (nothing written)

local vt, delay, maxsize = rsmq_settings(KEYS[2])
if not vt then
  return {1}
end
if maxsize ~= -1 and tonumber(ARGV[2]) > maxsize then
  return {2, maxsize}
end
if ARGV[3] ~= '' then
  delay = tonumber(ARGV[3])
end
local s, us = rsmq_time()
local id = rsmq_base36(s * 1000000 + us) .. ARGV[4]
redis.call('ZADD', KEYS[1], rsmq_num(rsmq_ms(s, us) + delay * 1000), id)
redis.call('HSET', KEYS[2], id, ARGV[1])
redis.call('HINCRBY', KEYS[2], 'totalsent', 1)
if ARGV[5] ~= '' then
  redis.call('PUBLISH', ARGV[5], redis.call('ZCARD', KEYS[1]))
end
return {0, id}
