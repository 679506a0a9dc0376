-- 0009_job_priority: per-job priority within a queue (ADR 0145, docs/priority.md).
--
-- A claim takes a queue's due jobs by (priority DESC, run_at, seq). Jobs at the default
-- priority 0 stay where they were: in jobs_claim, read by the claim's middle leg as
-- before. Only jobs with a priority enter jobs_prioritized, so a queue that never sets
-- one writes nothing more per job than before (the column is a fixed-width smallint with
-- a constant default: adding it rewrites no row). The limited claim (claim_limited,
-- migration 0006) orders its groups and their jobs the same way.
-- Written to run again over its own result (IF NOT EXISTS, OR REPLACE).
ALTER TABLE {schema}.jobs ADD COLUMN IF NOT EXISTS priority smallint NOT NULL DEFAULT 0;

CREATE INDEX IF NOT EXISTS jobs_prioritized ON {schema}.jobs (queue, priority DESC, run_at, seq)
    WHERE status IN ('pending', 'scheduled', 'retry') AND priority <> 0;

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
