-- Background: N completed jobs in a pqueue schema (psql -v schema=S -v completed=N), vacuumed.
INSERT INTO :"schema".queues (name, created_at) VALUES ('bench', now()) ON CONFLICT DO NOTHING;
INSERT INTO :"schema".jobs (id, queue, type, status, payload, run_at, created_at, started_at,
                          finished_at, attempt, max_retries, max_recoveries)
SELECT gen_random_uuid(), 'bench', 'bench.noop', 'completed', json_build_object('i', g), now(), now(),
       now(), now(), 1, 3, 5
FROM generate_series(1, :completed) AS g;
VACUUM ANALYZE :"schema".jobs;
