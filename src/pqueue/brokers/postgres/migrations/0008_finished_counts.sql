-- 0008_finished_counts: counts of finished jobs without reading the history (ADR 0139).
--
-- Completed, cancelled and dead jobs are counted by the jobs table's own triggers: every
-- row that enters or leaves one of those statuses (or moves between queues in one)
-- appends a (queue, status, +1/-1) row to finished_deltas, in the transaction that moved
-- it, whatever statement or function did so. Appends never contend: many workers acking
-- in one queue write no common row. The `fold_counts` query (run by the prune and by
-- `counts` when many deltas wait) moves the deltas into finished_counts in one
-- transaction. So at any snapshot, per (queue, status):
--     jobs in that status = finished_counts.n + sum(finished_deltas.n)
-- exactly, and `counts` reads O(queues + unfolded deltas) rows, never the history.
-- Live statuses are counted through the partial indexes (jobs_waiting below for waiting).
-- Written to run again over its own result (the counters are then counted afresh).

CREATE TABLE IF NOT EXISTS {schema}.finished_counts (
    queue  text   NOT NULL,
    status text   NOT NULL,
    n      bigint NOT NULL,
    CONSTRAINT finished_counts_pkey PRIMARY KEY (queue, status)
);

-- Append-only between folds; no index (a fold and `counts` read all of it).
CREATE TABLE IF NOT EXISTS {schema}.finished_deltas (
    queue  text    NOT NULL,
    status text    NOT NULL,
    n      integer NOT NULL
) WITH (
    -- Every row is deleted by the next fold: vacuum after a few thousand, whatever the size.
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 5000
);

-- One delta per finished status a row left or entered (inserts and updates).
CREATE OR REPLACE FUNCTION {schema}.count_finished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.status IN ('completed', 'cancelled', 'dead') THEN
        INSERT INTO {schema}.finished_deltas (queue, status, n) VALUES (OLD.queue, OLD.status, -1);
    END IF;
    IF NEW.status IN ('completed', 'cancelled', 'dead') THEN
        INSERT INTO {schema}.finished_deltas (queue, status, n) VALUES (NEW.queue, NEW.status, 1);
    END IF;
    RETURN NULL;
END
$$;

-- One delta per (queue, status) a DELETE statement took finished rows from: the prune
-- and purge_dead delete hundreds at a time, and a statement trigger costs a fifth of
-- a row trigger's per row here. Nothing else deletes jobs, so no hot path pays it.
CREATE OR REPLACE FUNCTION {schema}.count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.finished_deltas (queue, status, n)
    SELECT queue, status, -count(*)::integer FROM gone_rows
    WHERE status IN ('completed', 'cancelled', 'dead')
    GROUP BY queue, status;
    RETURN NULL;
END
$$;

-- The WHEN clauses are tested without calling the function: a claim, an extend or a
-- retry (no finished status on either side) costs nothing more. Updates stay row
-- triggers: a statement trigger's transition tables would copy every claimed row.
DROP TRIGGER IF EXISTS jobs_count_insert ON {schema}.jobs;
CREATE TRIGGER jobs_count_insert AFTER INSERT ON {schema}.jobs FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'cancelled', 'dead'))
    EXECUTE FUNCTION {schema}.count_finished();
DROP TRIGGER IF EXISTS jobs_count_update ON {schema}.jobs;
CREATE TRIGGER jobs_count_update AFTER UPDATE OF status, queue ON {schema}.jobs FOR EACH ROW
    WHEN ((OLD.status IN ('completed', 'cancelled', 'dead') OR NEW.status IN ('completed', 'cancelled', 'dead'))
          AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.queue IS DISTINCT FROM NEW.queue))
    EXECUTE FUNCTION {schema}.count_finished();
DROP TRIGGER IF EXISTS jobs_count_delete ON {schema}.jobs;
CREATE TRIGGER jobs_count_delete AFTER DELETE ON {schema}.jobs
    REFERENCING OLD TABLE AS gone_rows FOR EACH STATEMENT
    EXECUTE FUNCTION {schema}.count_deleted();
-- TRUNCATE fires no row trigger: it empties the counters with the table.
CREATE OR REPLACE FUNCTION {schema}.count_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.finished_deltas;
    DELETE FROM {schema}.finished_counts;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS jobs_count_truncate ON {schema}.jobs;
CREATE TRIGGER jobs_count_truncate AFTER TRUNCATE ON {schema}.jobs FOR EACH STATEMENT
    EXECUTE FUNCTION {schema}.count_truncated();

-- Waiting jobs (migration 0005) had no index: `counts` reads them through this one.
CREATE INDEX IF NOT EXISTS jobs_waiting ON {schema}.jobs (queue) WHERE status = 'waiting';
-- Jobs that died recently (`activity`), as jobs_finished finds the completed ones.
CREATE INDEX IF NOT EXISTS jobs_died ON {schema}.jobs (finished_at) WHERE status = 'dead';

-- The counters start from the rows there are: one read of the table. CREATE TRIGGER
-- above holds a lock that keeps writers out until this transaction commits, so no job
-- moves between this count and the triggers taking over.
DELETE FROM {schema}.finished_deltas;
DELETE FROM {schema}.finished_counts;
INSERT INTO {schema}.finished_counts (queue, status, n)
SELECT queue, status, count(*) FROM {schema}.jobs
WHERE status IN ('completed', 'cancelled', 'dead')
GROUP BY queue, status;
