-- prune.lua: delete up to `limit` completed/cancelled jobs of one queue finished before
-- now - retention, and their index entries.
--
-- The job hashes usually expired already by TTL; an index entry is removed either way.
-- A hash is deleted only if it still holds that finished job (a job re-enqueued with
-- the same id after its hash expired is left alone).
--
-- KEYS[1]  <p>:{q}:completed
-- KEYS[2]  <p>:{q}:cancelled
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  retention ms
-- ARGV[3]  limit
-- ARGV[4]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- Returns: how many jobs were removed
-- Errors:  none of its own.

local now = pq_now(ARGV[1])
local cutoff = now - tonumber(ARGV[2])
local left = tonumber(ARGV[3])
local job_prefix = ARGV[4]
local removed = 0
for _, spec in ipairs({{KEYS[1], 'completed'}, {KEYS[2], 'cancelled'}}) do
  local zkey, status = spec[1], spec[2]
  if left <= 0 then
    break
  end
  local old = redis.call('ZRANGE', zkey, '-inf', cutoff, 'BYSCORE', 'LIMIT', 0, left, 'WITHSCORES')
  for i = 1, #old, 2 do
    local id, finished = old[i], old[i + 1]
    local key = job_prefix .. id
    local cur = redis.call('HMGET', key, 'status', 'finished_at')
    if cur[1] == status and cur[2] == finished then
      redis.call('DEL', key)
    end
    redis.call('ZREM', zkey, id)
    removed = removed + 1
    left = left - 1
  end
end
return removed
