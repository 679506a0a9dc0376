-- attributes.lua: a queue's settings, totals and message counts.
--
-- KEYS[1]  {ns}:{qname}   KEYS[2]  {ns}:{qname}:Q
-- Returns: {0, vt, delay, maxsize, totalrecv, totalsent, created, modified, msgs, hiddenmsgs}, {1}

local a = rsmq_attributes(KEYS[1], KEYS[2])
if not a then
  return {1}
end
return {0, unpack(a)}
