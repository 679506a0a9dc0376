-- 0006_limits: rate and concurrency limits enforced at claim time (ADR 0110).
--
-- A limited job carries its group (limit_key, within its queue) and the limits it is
-- subject to. Its group's token bucket lives in limit_groups; its active count is counted
-- from jobs (jobs_limit_active) under the group row's lock, so every way a job leaves
-- 'active' (ack, fail, release, recover) gives its slot back without touching the group.
-- Rows without a limit enter neither new index: unlimited jobs pay nothing.
-- Written to run again over its own result (IF NOT EXISTS, OR REPLACE): a schema rolled
-- back by hand to an earlier version can be migrated forward.
ALTER TABLE {schema}.jobs
    ADD COLUMN IF NOT EXISTS limit_key text,
    ADD COLUMN IF NOT EXISTS limit_rate double precision,
    ADD COLUMN IF NOT EXISTS limit_burst double precision,
    ADD COLUMN IF NOT EXISTS limit_concurrency integer;

CREATE INDEX IF NOT EXISTS jobs_limited ON {schema}.jobs (queue, limit_key, run_at, seq)
    WHERE status IN ('pending', 'scheduled', 'retry') AND limit_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_limit_active ON {schema}.jobs (queue, limit_key)
    WHERE status = 'active' AND limit_key IS NOT NULL;

-- One row per group, inserted by the enqueue of its first job (`enqueue`). tokens
-- NULL is a full bucket. wake_at: when a group held back by its rate gets its next token
-- (the idle check, `look`, sleeps until then); held: the group was full at its last
-- claim (the idle check ignores it until a claim finds a free slot). rate, burst and
-- concurrency are those of the group's latest claimed job (for stats).
CREATE TABLE IF NOT EXISTS {schema}.limit_groups (
    queue       text             NOT NULL,
    key         text             NOT NULL,
    tokens      double precision,
    refilled_at timestamptz,
    wake_at     timestamptz,
    held        boolean          NOT NULL DEFAULT false,
    rate        double precision,
    burst       double precision,
    concurrency integer,
    CONSTRAINT limit_groups_pkey PRIMARY KEY (queue, key)
);

-- Pick up to `wanted` due limited jobs of these queues (in queue order; within a queue the
-- group whose head job is oldest first) that their group's limits let start at now_at,
-- spend their tokens and return them with their queue's position; the calling claim
-- statement leases them. A group row is locked FOR UPDATE SKIP LOCKED: claimers serialize
-- per group, never wait for one (another claimer is serving it) and cannot deadlock. The
-- active count is read after the lock, from committed rows, so it includes the jobs the
-- group's previous claimer leased. The limits of the group's head job apply.
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
                SELECT DISTINCT ON (j.limit_key) j.limit_key AS key, j.run_at, j.seq,
                       j.limit_rate AS rate, j.limit_burst AS burst, j.limit_concurrency AS concurrency
                FROM {schema}.jobs AS j
                WHERE j.queue = q.name AND j.status IN ('pending', 'scheduled', 'retry')
                  AND j.limit_key IS NOT NULL AND j.run_at <= now_at
                ORDER BY j.limit_key, j.run_at, j.seq
            ) AS h
            ORDER BY h.run_at, h.seq
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
                    ORDER BY j.run_at, j.seq
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
