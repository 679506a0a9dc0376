-- change_visibility.lua: make a message visible vt seconds from now.
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q
-- ARGV[1]  id   ARGV[2]  vt in s
-- Returns: {0, 1} changed, {0, 0} no such message, {1} no such queue

if not rsmq_settings(KEYS[2]) then
  return {1}
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return {0, 0}
end
local now = rsmq_ms(rsmq_time())
redis.call('ZADD', KEYS[1], rsmq_num(now + tonumber(ARGV[2]) * 1000), ARGV[1])
return {0, 1}
