-- delete_queue.lua: remove a queue, its messages, and its name from {ns}:QUEUES.
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q   KEYS[3]  {ns}:QUEUES
-- ARGV[1]  qname
-- Returns: {0} deleted, {1} no such queue

local n = redis.call('DEL', KEYS[2], KEYS[1])
redis.call('SREM', KEYS[3], ARGV[1])
if n == 0 then
  return {1}
end
return {0}
