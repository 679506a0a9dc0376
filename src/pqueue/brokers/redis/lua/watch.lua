-- watch.lua: mark an unfinished job as waited on by result() (ADR 0117).
--
-- The finishing scripts (ack, fail, recover, cancel, settle) then PUBLISH its id on the
-- results channel. The caller subscribed before, so no finish falls between this and its
-- sleep.
--
-- KEYS[1]  <p>:{q}:job:<id>
-- KEYS[2]  <p>:{q}:followed     set of jobs with dependants or a result() waiter
-- ARGV[1]  now ms, or '' for the server clock (unused: kept as every script's first ARGV)
-- ARGV[2]  job id
-- Returns: the job's status ('' when there is no such job)
-- Errors:  none of its own.

local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return ''
end
if status ~= 'completed' and status ~= 'dead' and status ~= 'cancelled' then
  redis.call('HSET', KEYS[1], 'watched', '1')
  redis.call('SADD', KEYS[2], ARGV[2])
end
return status
