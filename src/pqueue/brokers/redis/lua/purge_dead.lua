-- purge_dead.lua: delete dead jobs of one queue.
--
-- KEYS[1]  <p>:{q}:dead         zset id -> died ms
-- KEYS[1+i] <p>:{q}:job:<id> of the i-th id in ARGV (mode 'ids' only)
-- ARGV[1]  job key prefix <p>:{q}:job:   (mode 'all' builds job keys from it; see _lib.lua)
-- ARGV[2]  mode: 'ids' (the ids below) or 'all' (the oldest `limit` dead jobs)
-- ARGV[3]  limit (mode 'all')
-- ARGV[4]  now ms, or '' for the server clock
-- ARGV[5]  older than ms: only jobs that died at least this long before now; '' for any
-- ARGV[6..] job ids (mode 'ids')
-- Returns: how many jobs were deleted
-- Errors:  none of its own.

local dead, job_prefix = KEYS[1], ARGV[1]
local cutoff = nil
if ARGV[5] ~= '' then
  cutoff = pq_now(ARGV[4]) - tonumber(ARGV[5])
end
local ids = {}
if ARGV[2] == 'all' then
  if cutoff == nil then
    ids = redis.call('ZRANGE', dead, 0, tonumber(ARGV[3]) - 1)
  else
    ids = redis.call('ZRANGE', dead, '-inf', pq_int(cutoff), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[3]))
  end
else
  for i = 6, #ARGV do
    local died = redis.call('ZSCORE', dead, ARGV[i])
    if cutoff == nil or (died and tonumber(died) <= cutoff) then
      ids[#ids + 1] = ARGV[i]
    end
  end
end
local deleted = 0
for _, id in ipairs(ids) do
  if redis.call('ZREM', dead, id) == 1 then
    local key = job_prefix .. id
    if redis.call('HGET', key, 'status') == 'dead' then
      redis.call('DEL', key)
    end
    deleted = deleted + 1
  end
end
return deleted
