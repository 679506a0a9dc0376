-- link.lua: record dependants on their parents of one queue (enqueue_flow, ADR 0116).
--
-- Appends "<child queue> <child id>" lines to each parent's `children` field. A parent
-- that has finished already (completed, dead, cancelled) is put in `settled`, so its new
-- dependants are told by the settle step (or, after a crash, by the recover sweep). A
-- parent whose hash is gone (pruned since enqueue_flow looked) is answered, not linked.
--
-- KEYS[1]  <p>:{q}:settled
-- KEYS[2]  <p>:{q}:followed     set of jobs with dependants or a result() waiter
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  JSON object {parent id: ["<child queue> <child id>", ...]}
-- Returns: {ids of parents already finished, ids of parents not found}
-- Errors:  none of its own.

local now = pq_now(ARGV[1])
local links = cjson.decode(ARGV[3])
local finished, gone = {}, {}
for parent, children in pairs(links) do
  local key = ARGV[2] .. parent
  local cur = redis.call('HMGET', key, 'status', 'children')
  if not cur[1] then
    gone[#gone + 1] = parent
  else
    local lines = cur[2] or ''
    for _, child in ipairs(children) do
      lines = lines .. child .. '\n'
    end
    redis.call('HSET', key, 'children', lines)
    if cur[1] == 'completed' or cur[1] == 'dead' or cur[1] == 'cancelled' then
      redis.call('ZADD', KEYS[1], now, parent)
      finished[#finished + 1] = parent
    else
      redis.call('SADD', KEYS[2], parent)
    end
  end
end
return {finished, gone}
