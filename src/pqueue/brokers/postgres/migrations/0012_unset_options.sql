-- 0012_unset_options: which run-time options a job's producer left to its handler (ADR 0157).
--
-- `unset` holds the names, comma-separated (`max_retries,timeout`), of the options the
-- producer did not set: their stored values are the defaults, and the worker that runs
-- the job takes its handler's declaration instead. NULL for a job whose producer set
-- them all, and for every job stored before this migration: their stored values hold, as
-- they did. A nullable column without a default: adding it rewrites no row.
-- hand_off (migration 0010's) sends it too, as the message's "u" (null when none), so a
-- handed-off job is resolved like a claimed one. Written to run again over its own
-- result (IF NOT EXISTS, OR REPLACE).
ALTER TABLE {schema}.jobs ADD COLUMN IF NOT EXISTS unset text;

-- hand_off as in migration 0010, its message with the job's unset options.
CREATE OR REPLACE FUNCTION {schema}.hand_off(job uuid, queue_name text, now_at timestamptz) RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    taker record;
    message text;
BEGIN
    SELECT c.worker_id, c.channel, c.lease_for INTO taker
    FROM {schema}.parked AS c
    WHERE c.queue = queue_name
      AND c.expires_at > now_at
      AND octet_length(c.worker_id) <= 200  -- escaped, at most 1,200 bytes of the message
      AND EXISTS (
          SELECT 1 FROM pg_stat_get_activity(c.listener_pid) AS a
          WHERE a.backend_start = c.listener_start
      )
      AND NOT EXISTS (  -- an older due job goes first: it is the claimer's to claim
          SELECT 1 FROM {schema}.jobs AS w
          WHERE w.queue = queue_name
            AND w.status IN ('pending', 'scheduled', 'retry') AND (w.priority = 0 OR w.status <> 'pending')
            AND w.run_at <= now_at
            AND w.id <> job
      )
      AND NOT EXISTS (  -- so does a due job with a priority (jobs_prioritized)
          SELECT 1 FROM {schema}.jobs AS w
          WHERE w.queue = queue_name AND w.status = 'pending' AND w.priority <> 0
      )
    ORDER BY c.expires_at DESC
    LIMIT 1
    FOR UPDATE OF c SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE {schema}.jobs AS j SET
        status = 'active',
        attempt = 1,
        started_at = now_at,
        lease_token = nextval('{schema}.lease_token'),
        lease_expires_at = now_at + make_interval(secs => taker.lease_for),
        worker_id = taker.worker_id
    WHERE j.id = job AND j.status = 'pending'
    RETURNING json_build_object(
        'w', j.worker_id, 't', j.lease_token,
        'e', extract(epoch FROM j.lease_expires_at)::float8, 'j', {job_json}, 'u', j.unset
    )::text INTO message;
    IF message IS NULL THEN
        RETURN false;
    END IF;
    DELETE FROM {schema}.parked WHERE queue = queue_name AND worker_id = taker.worker_id;
    PERFORM pg_notify(taker.channel, message);
    RETURN true;
END
$$;
