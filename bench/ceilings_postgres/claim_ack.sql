-- pgbench: claim N jobs (pgbench -D claim=N) with pqueue's claim statement, then ack them
-- by id and token in a second statement: two commits, as a worker does.
WITH picked AS MATERIALIZED (
    SELECT id FROM ceiling.jobs
    WHERE queue = 'bench' AND status IN ('pending', 'scheduled', 'retry') AND run_at <= statement_timestamp()
    ORDER BY run_at, seq
    LIMIT :claim::int
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE ceiling.jobs AS t SET
        status = 'active', attempt = t.attempt + 1, started_at = statement_timestamp(),
        lease_token = nextval('ceiling.lease_token'),
        lease_expires_at = statement_timestamp() + interval '60 seconds', worker_id = 'pgbench'
    FROM picked WHERE t.id = picked.id
    RETURNING t.*
)
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(lease_token), '{}') AS tokens FROM claimed
\gset
UPDATE ceiling.jobs AS t SET
    status = 'completed', finished_at = statement_timestamp(), result = NULL,
    lease_token = NULL, lease_expires_at = NULL
FROM unnest(:ids::uuid[], :tokens::bigint[]) AS d(id, token)
WHERE t.id = d.id AND t.lease_token = d.token AND t.status = 'active';
