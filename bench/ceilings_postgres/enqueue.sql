-- pgbench: one enqueue statement of N jobs (pgbench -D batch=N), shaped like pqueue's:
-- time-ordered ids, insert, queue upsert, NOTIFY. The values are made on the server, so
-- this is the ceiling with no client-side encoding at all.
WITH created AS (
    INSERT INTO ceiling.jobs (id, queue, type, status, payload, run_at, created_at, max_retries,
                              max_recoveries, meta)
    SELECT encode(overlay(uuid_send(gen_random_uuid())
                          PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                          FROM 1 FOR 6), 'hex')::uuid,
           'bench', 'bench.noop', 'pending', json_build_object('i', g)::text::json,
           statement_timestamp(), statement_timestamp(), 3, 5, '{}'
    FROM generate_series(1, :batch::int) AS g
    RETURNING queue
),
seen AS (
    INSERT INTO ceiling.queues (name, created_at) SELECT DISTINCT queue, statement_timestamp() FROM created
    ON CONFLICT (name) DO NOTHING
)
SELECT pg_notify('ceiling.jobs', 'bench 0') FROM (SELECT 1 FROM created LIMIT 1) AS any_created;
