-- create_queue.lua: make a queue's hash and list it in {ns}:QUEUES.
--
-- KEYS[1]  {ns}:{qname}:Q     KEYS[2]  {ns}:QUEUES
-- ARGV     qname, vt, delay, maxsize
-- Returns: {0} created, {3} the queue exists (nothing changed)

if redis.call('HSETNX', KEYS[1], 'vt', ARGV[2]) == 0 then
  return {3}
end
local s = rsmq_time()
redis.call('HSETNX', KEYS[1], 'delay', ARGV[3])
redis.call('HSETNX', KEYS[1], 'maxsize', ARGV[4])
redis.call('HSETNX', KEYS[1], 'created', s)
redis.call('HSETNX', KEYS[1], 'modified', s)
redis.call('SADD', KEYS[2], ARGV[1])
return {0}
