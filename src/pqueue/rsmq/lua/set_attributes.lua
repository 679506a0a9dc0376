-- set_attributes.lua: change a queue's vt, delay and/or maxsize, stamp `modified`, and
-- return the attributes after the change.
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q
-- ARGV     vt, delay, maxsize ('' = unchanged)
-- Returns: as attributes.lua

if not rsmq_settings(KEYS[2]) then
  return {1}
end
local s = rsmq_time()
redis.call('HSET', KEYS[2], 'modified', s)
local names = {'vt', 'delay', 'maxsize'}
for i = 1, 3 do
  if ARGV[i] ~= '' then
    redis.call('HSET', KEYS[2], names[i], ARGV[i])
  end
end
return {0, unpack(rsmq_attributes(KEYS[1], KEYS[2]))}
