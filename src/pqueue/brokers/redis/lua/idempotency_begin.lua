-- idempotency_begin.lua: hold an idempotency key in flight for an owner, or report why not.
--
-- The value is "<state>|<expires ms>|<owner>" with state 'f' (in flight) or 'd' (done);
-- expiry is judged on the script's clock, the PX TTL only collects garbage.
--
-- KEYS[1]  <p>:idem:<key>
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  owner (a job id)
-- ARGV[3]  ttl ms
-- Returns: 'acquired', 'in_flight' or 'done'
-- Errors:  none of its own.

local now = pq_now(ARGV[1])
local owner, ttl = ARGV[2], tonumber(ARGV[3])
local held = redis.call('GET', KEYS[1])
if held then
  local state, expires, holder = string.match(held, '^(%a)|(%d+)|(.*)$')
  if expires and tonumber(expires) > now then
    if state == 'd' then
      return 'done'
    end
    if holder ~= owner then
      return 'in_flight'
    end
  end
end
redis.call('SET', KEYS[1], 'f|' .. pq_int(now + ttl) .. '|' .. owner, 'PX', pq_int(math.max(ttl, 1)))
return 'acquired'
