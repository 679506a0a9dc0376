-- idempotency_end.lua: mark an idempotency key done for `ttl` (success) or release the
-- owner's in-flight hold (failure). Value format: see idempotency_begin.lua.
--
-- KEYS[1]  <p>:idem:<key>
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  owner (a job id)
-- ARGV[3]  '1' done, '0' release
-- ARGV[4]  ttl ms (done only)
-- Returns: 1 when the key changed, 0 otherwise
-- Errors:  none of its own.

local now = pq_now(ARGV[1])
local owner = ARGV[2]
if ARGV[3] == '1' then
  local ttl = tonumber(ARGV[4])
  redis.call('SET', KEYS[1], 'd|' .. pq_int(now + ttl) .. '|' .. owner, 'PX', pq_int(math.max(ttl, 1)))
  return 1
end
local held = redis.call('GET', KEYS[1])
if held then
  local state, _, holder = string.match(held, '^(%a)|(%d+)|(.*)$')
  if state == 'f' and holder == owner then
    redis.call('DEL', KEYS[1])
    return 1
  end
end
return 0
