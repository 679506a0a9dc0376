-- peek.lua: the first messages of a queue by visible-at time, read-only (no receive
-- is counted): pqueue's own addition, for `pqueue rsmq dead` and the dashboard.
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q
-- ARGV[1]  at most this many
-- Returns: {0, id, body, rc, fr, visible-at, id, ...}, {1} no such queue

if not rsmq_settings(KEYS[2]) then
  return {1}
end
local found = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
local out = {0}
for i = 1, #found, 2 do
  local id = found[i]
  local extra = redis.call('HMGET', KEYS[2], id, id .. ':rc', id .. ':fr')
  table.insert(out, id)
  table.insert(out, extra[1] or '')
  table.insert(out, extra[2] or '0')
  table.insert(out, extra[3] or '0')
  table.insert(out, found[i + 1])
end
return out
