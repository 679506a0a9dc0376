-- _lib.lua: helpers put in front of every RSMQ script (their locals).
--
-- rsmq_time()        -> seconds, microseconds of the server's TIME
-- rsmq_ms(s, us)     -> epoch ms as RSMQ counts it: seconds * 1000 + the first 3 digits of us
-- rsmq_num(n)        -> n as an integer string (Lua would print 1e+12)
-- rsmq_base36(n)     -> n (a whole number below 2^53) in lower-case base 36
-- rsmq_settings(h)   -> vt, delay, maxsize of hash h, or nil when the queue does not exist
-- rsmq_attributes(z, h) -> the 9 attributes of a queue, in QueueAttributes order

local function rsmq_time()
  local t = redis.call('TIME')
  return tonumber(t[1]), tonumber(t[2])
end

local function rsmq_ms(s, us)
  return s * 1000 + math.floor(us / 1000)
end

local function rsmq_num(n)
  return string.format('%.0f', n)
end

local function rsmq_base36(n)
  local digits = '0123456789abcdefghijklmnopqrstuvwxyz'
  local out = ''
  repeat
    local d = n % 36
    out = string.sub(digits, d + 1, d + 1) .. out
    n = (n - d) / 36
  until n == 0
  return out
end

local function rsmq_settings(h)
  local q = redis.call('HMGET', h, 'vt', 'delay', 'maxsize')
  if not q[1] or not q[2] or not q[3] then
    return nil
  end
  return tonumber(q[1]), tonumber(q[2]), tonumber(q[3])
end

local function rsmq_attributes(z, h)
  local s = rsmq_time()
  local a = redis.call('HMGET', h, 'vt', 'delay', 'maxsize', 'totalrecv', 'totalsent', 'created', 'modified')
  if not a[1] then
    return nil
  end
  local out = {}
  for i = 1, 7 do
    out[i] = tonumber(a[i]) or 0
  end
  out[8] = redis.call('ZCARD', z)
  -- hidden: visible-at from the current whole second on, as the reference counts them
  out[9] = redis.call('ZCOUNT', z, rsmq_num(s * 1000), '+inf')
  return out
end

-- Every script returns {status, ...}: 0 done, 1 queue not found, 2 message too long.
