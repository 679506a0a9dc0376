-- ack.lua: complete leased jobs of one queue, storing each one's result.
--
-- A lost lease changes nothing (pq_lease_current in _lib.lua). Each job is finished by
-- pq_finish (_lib.lua): completed job hashes expire after the retention window (PEXPIRE),
-- and prune.lua removes their index entries; a job with dependants is recorded in
-- `settled` and answered 2, so the broker tells its children (ADR 0116); one a result()
-- waits on is named on the results channel (ADR 0117). While `followed` is empty that
-- costs one SCARD per call.
--
-- KEYS[1]  <p>:{q}:active
-- KEYS[2]  <p>:{q}:completed    zset id -> finished_at ms
-- KEYS[3]  <p>:{q}:settled      zset id -> finished ms (parents whose children wait to be told)
-- KEYS[4]  <p>:{q}:followed     set of jobs with dependants or a result() waiter
-- ARGV[1]  now ms, or '' for the server clock
-- ARGV[2]  job key prefix <p>:{q}:job:   (job keys are built from it; see _lib.lua)
-- ARGV[3]  retention ms (the job hash's TTL; 0 = no TTL, prune only)
-- ARGV[4]  JSON object {id: [...], token: [...], result: [JSON text|null, ...]}; result
--          is absent when no lease has one
-- ARGV[5]  results channel
-- ARGV[6]  unique key prefix <p>:{q}:unique:   With `unique` in ARGV[4] (each job's unique
--          key, or null), a completed job whose hash has `unique_done` (unique_until='done',
--          ADR 0152) frees its key, only while the key still names this job ("<id>|<ms>").
-- Returns: array of 1 (completed) / 2 (completed, has dependants) / 0 (lease lost), one per lease
-- Errors:  none of its own.

local active, completed = KEYS[1], KEYS[2]
local now = pq_now(ARGV[1])
local job_prefix = ARGV[2]
local batch = cjson.decode(ARGV[4])
local ids, tokens, results, uniques = batch['id'], batch['token'], batch['result'], batch['unique']
local out, done = {}, {}
local fin = pq_finisher(now, KEYS[4], KEYS[3], ARGV[5], ARGV[3])
for i = 1, #ids do
  local id = ids[i]
  local key = job_prefix .. id
  if pq_lease_current(key, tokens[i]) then
    local result = nil
    if results ~= nil and results[i] ~= cjson.null then
      result = results[i]
    end
    -- the completed entries are added below, in one ZADD
    if pq_finish(fin, key, id, 'completed', false, result) then
      out[i] = 2
    else
      out[i] = 1
    end
    done[#done + 1] = now
    done[#done + 1] = id
    if uniques ~= nil and uniques[i] ~= cjson.null and redis.call('HEXISTS', key, 'unique_done') == 1 then
      local unique_key = ARGV[6] .. uniques[i]
      local held = redis.call('GET', unique_key)
      if held and string.sub(held, 1, #id + 1) == id .. '|' then
        redis.call('DEL', unique_key)
      end
    end
  else
    out[i] = 0
  end
end
if #done > 0 then
  pq_chunked('ZADD', completed, done)
  local gone = {}
  for i = 2, #done, 2 do
    gone[#gone + 1] = done[i]
  end
  pq_chunked('ZREM', active, gone)
end
return out
