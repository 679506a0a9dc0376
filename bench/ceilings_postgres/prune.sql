-- pgbench: pqueue's retention delete, 1000 completed jobs per statement.
WITH old AS MATERIALIZED (
    SELECT id FROM ceiling.jobs
    WHERE status IN ('completed', 'cancelled') AND finished_at <= statement_timestamp()
    ORDER BY finished_at
    LIMIT 1000
    FOR UPDATE SKIP LOCKED
)
DELETE FROM ceiling.jobs AS t USING old WHERE t.id = old.id;
