-- 0010_job_priority: per-job priority within a queue (ADR 0145, docs/priority.md).
--
-- A claim takes a queue's due jobs by (priority DESC, run_at, seq). Jobs at the default
-- priority 0 are indexed as before, in jobs_claim, which the claim's middle leg reads as
-- before. A job with a priority is in jobs_claim while it waits to be due (scheduled,
-- retry: the idle check and the stats need its run_at) and in jobs_prioritized, ordered
-- by priority, once it is due (pending): so neither index holds a row the claim must skip
-- in bulk, whatever mix of priorities a queue holds. A queue that never sets a priority
-- writes nothing more per job than before (the column is a fixed-width smallint with a
-- constant default: adding it rewrites no row; jobs_claim is rebuilt with the same rows).
-- The limited claim (claim_limited, migration 0006) and the hand-off (migration 0002)
-- follow. Written to run again over its own result (IF NOT EXISTS, OR REPLACE).
ALTER TABLE {schema}.jobs ADD COLUMN IF NOT EXISTS priority smallint NOT NULL DEFAULT 0;

DROP INDEX IF EXISTS {schema}.jobs_claim;
CREATE INDEX jobs_claim ON {schema}.jobs (queue, run_at, seq)
    WHERE status IN ('pending', 'scheduled', 'retry') AND (priority = 0 OR status <> 'pending');
CREATE INDEX IF NOT EXISTS jobs_prioritized ON {schema}.jobs (queue, priority DESC, run_at, seq)
    WHERE status = 'pending' AND priority <> 0;

-- hand_off as in migration 0002, with its "no older due job" test over both indexes.
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
        'e', extract(epoch FROM j.lease_expires_at)::float8, 'j', {job_json}
    )::text INTO message;
    IF message IS NULL THEN
        RETURN false;
    END IF;
    DELETE FROM {schema}.parked WHERE queue = queue_name AND worker_id = taker.worker_id;
    PERFORM pg_notify(taker.channel, message);
    RETURN true;
END
$$;

-- claim_limited as in migration 0006, with each group's head and its jobs taken by
-- (priority DESC, run_at, seq).
CREATE OR REPLACE FUNCTION {schema}.claim_limited(queue_names text[], wanted integer, now_at timestamptz)
RETURNS TABLE (job_id uuid, pos bigint)
LANGUAGE plpgsql VOLATILE ROWS 1
AS $$
DECLARE
    q record;
    g record;
    grp record;
    picked record;
    left_over integer := wanted;
    room integer;
    running integer;
    have double precision;
    took integer;
BEGIN
    FOR q IN SELECT u.name, u.ord FROM unnest(queue_names) WITH ORDINALITY AS u(name, ord) ORDER BY u.ord LOOP
        EXIT WHEN left_over <= 0;
        FOR g IN
            SELECT h.* FROM (
                SELECT DISTINCT ON (j.limit_key) j.limit_key AS key, j.priority, j.run_at, j.seq,
                       j.limit_rate AS rate, j.limit_burst AS burst, j.limit_concurrency AS concurrency
                FROM {schema}.jobs AS j
                WHERE j.queue = q.name AND j.status IN ('pending', 'scheduled', 'retry')
                  AND j.limit_key IS NOT NULL AND j.run_at <= now_at
                ORDER BY j.limit_key, j.priority DESC, j.run_at, j.seq
            ) AS h
            ORDER BY h.priority DESC, h.run_at, h.seq
        LOOP
            EXIT WHEN left_over <= 0;
            SELECT * INTO grp FROM {schema}.limit_groups AS l
            WHERE l.queue = q.name AND l.key = g.key
            FOR UPDATE SKIP LOCKED;
            CONTINUE WHEN NOT FOUND;
            room := left_over;
            running := 0;
            IF g.concurrency IS NOT NULL THEN
                SELECT count(*) INTO running FROM {schema}.jobs AS a
                WHERE a.queue = q.name AND a.limit_key = g.key AND a.status = 'active';
                room := least(room, g.concurrency - running);
            END IF;
            have := NULL;
            IF g.rate IS NOT NULL THEN
                have := CASE WHEN grp.tokens IS NULL THEN g.burst ELSE least(
                    g.burst, grp.tokens + greatest(extract(epoch FROM now_at - grp.refilled_at), 0) * g.rate
                ) END;
                room := least(room, floor(have + 1e-9)::integer);
            END IF;
            took := 0;
            IF room > 0 THEN
                FOR picked IN
                    SELECT j.id FROM {schema}.jobs AS j
                    WHERE j.queue = q.name AND j.limit_key = g.key
                      AND j.status IN ('pending', 'scheduled', 'retry') AND j.run_at <= now_at
                    ORDER BY j.priority DESC, j.run_at, j.seq
                    LIMIT room
                    FOR UPDATE SKIP LOCKED
                LOOP
                    job_id := picked.id;
                    pos := q.ord;
                    took := took + 1;
                    RETURN NEXT;
                END LOOP;
            END IF;
            left_over := left_over - took;
            UPDATE {schema}.limit_groups AS l SET
                tokens = CASE WHEN g.rate IS NULL THEN NULL ELSE have - took END,
                refilled_at = now_at,
                held = g.concurrency IS NOT NULL AND running + took >= g.concurrency,
                wake_at = CASE WHEN g.rate IS NOT NULL AND have - took < 1
                               THEN now_at + make_interval(secs => (1 - (have - took)) / g.rate + 0.001) END,
                rate = g.rate, burst = g.burst, concurrency = g.concurrency
            WHERE l.queue = q.name AND l.key = g.key;
        END LOOP;
    END LOOP;
END
$$;
