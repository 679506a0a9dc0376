-- 0005_workflows: job dependencies (the `waiting` status) and result waiters (ADRs 0115, 0117).
--
-- A job enqueued with depends_on is stored `waiting` with `parents_left` unfinished parents;
-- each edge is a row of job_deps until its parent finishes. A finishing statement (ack,
-- fail to dead, recover to dead, cancel) calls job_finished() for a job that has children
-- or a result waiter -- only those, so other jobs pay one boolean test -- in the same
-- transaction: nothing can finish without its dependants being told.

ALTER TABLE {schema}.jobs DROP CONSTRAINT jobs_status_check;
ALTER TABLE {schema}.jobs ADD CONSTRAINT jobs_status_check CHECK (
    status IN ('pending', 'scheduled', 'active', 'retry', 'completed', 'dead', 'cancelled', 'waiting')
);

ALTER TABLE {schema}.jobs
    ADD COLUMN depends_on        uuid[],
    ADD COLUMN parent_results    jsonb,
    ADD COLUMN on_parent_failure text,
    ADD COLUMN parents_left      integer,
    ADD COLUMN has_children      boolean NOT NULL DEFAULT false,
    ADD COLUMN watched           boolean NOT NULL DEFAULT false;

-- One row per dependency not yet settled: deleted (exactly once) when its parent finishes.
CREATE TABLE {schema}.job_deps (
    parent uuid NOT NULL,
    child  uuid NOT NULL,
    CONSTRAINT job_deps_pkey PRIMARY KEY (parent, child)
);

-- Tell whoever waits on `job` that it finished (NOTIFY on the schema's results channel,
-- only if a result() waiter marked it), and settle each of its dependency edges: a
-- completed parent copies its result into the child and releases it when no parent is
-- left; a dead or cancelled one cancels the child (on_parent_failure 'cancel', then the
-- child's own children in turn) or counts as done ('run'). Each edge is deleted as it is
-- settled, so calling this twice settles nothing twice. Iterative, not recursive: a long
-- chain of cancellations cannot exhaust the stack. Returns how many jobs it touched.
CREATE FUNCTION {schema}.job_finished(job uuid, now_at timestamptz) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    todo uuid[] := ARRAY[job];
    p record;
    c record;
    edge record;
    left_count integer;
    touched integer := 0;
BEGIN
    WHILE cardinality(todo) > 0 LOOP
        SELECT j.id, j.status, j.result, j.watched, j.has_children INTO p
        FROM {schema}.jobs AS j WHERE j.id = todo[1];
        todo := todo[2:];
        CONTINUE WHEN NOT FOUND OR p.status NOT IN ('completed', 'dead', 'cancelled');
        IF p.watched THEN
            PERFORM pg_notify({results_channel}, p.id::text);
        END IF;
        CONTINUE WHEN NOT p.has_children;
        FOR edge IN
            DELETE FROM {schema}.job_deps AS d WHERE d.parent = p.id RETURNING d.child
        LOOP
            SELECT j.id, j.status, j.on_parent_failure, j.queue, j.attempt INTO c
            FROM {schema}.jobs AS j WHERE j.id = edge.child FOR UPDATE;
            CONTINUE WHEN NOT FOUND OR c.status <> 'waiting';
            touched := touched + 1;
            IF p.status <> 'completed' AND c.on_parent_failure = 'cancel' THEN
                UPDATE {schema}.jobs AS j SET
                    status = 'cancelled',
                    finished_at = now_at,
                    parents_left = j.parents_left - 1,
                    errors = {schema}.append_error(
                        j.errors,
                        jsonb_build_object(
                            'kind', 'ParentFailed', 'message', 'parent job ' || p.id || ' is ' || p.status,
                            'traceback', '', 'attempt', j.attempt, 'at', extract(epoch FROM now_at)
                        ),
                        10
                    )
                WHERE j.id = c.id;
                todo := todo || c.id;
                CONTINUE;
            END IF;
            UPDATE {schema}.jobs AS j SET
                parents_left = j.parents_left - 1,
                parent_results = CASE WHEN p.status = 'completed'
                    THEN coalesce(j.parent_results, '{}'::jsonb)
                         || jsonb_build_object(p.id::text, p.result::jsonb)
                    ELSE j.parent_results END
            WHERE j.id = c.id
            RETURNING j.parents_left INTO left_count;
            IF left_count <= 0 THEN
                UPDATE {schema}.jobs AS j SET
                    status = CASE WHEN j.run_at > now_at THEN 'scheduled' ELSE 'pending' END,
                    run_at = greatest(j.run_at, now_at),
                    seq = nextval('{schema}.job_seq')
                WHERE j.id = c.id;
                PERFORM pg_notify({channel}, c.queue || ' 0');
            END IF;
        END LOOP;
    END LOOP;
    RETURN touched;
END
$$;
