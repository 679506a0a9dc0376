-- delete_message.lua: remove a message (body, rc, fr and its place in the sorted set).
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q
-- ARGV[1]  id
-- Returns: {0, 1} deleted, {0, 0} no such message

local z = redis.call('ZREM', KEYS[1], ARGV[1])
local h = redis.call('HDEL', KEYS[2], ARGV[1], ARGV[1] .. ':rc', ARGV[1] .. ':fr')
if z == 1 and h > 0 then
  return {0, 1}
end
return {0, 0}
