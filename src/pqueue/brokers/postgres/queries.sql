-- Every statement the Postgres broker runs, as named blocks loaded once by sql.py.
--
-- A block starts with `-- name: <name>` and a comment saying what it does. Before use the
-- text is rendered for one schema (pqueue.brokers.postgres.sql.render):
--   {schema}          the quoted schema name, e.g. "pqueue"
--   {channel}         the NOTIFY channel as a string literal, e.g. 'pqueue.jobs'
--   {now}             coalesce(%(now)s::timestamptz, statement_timestamp()): the injected
--                     clock's time when the broker has one, else the server's. Statement
--                     time, not transaction time, so a job enqueued late in a caller's long
--                     transaction is stamped when it was enqueued.
--   {job_columns}     t.id, t.type, ...: the columns a Job is decoded from, in the order
--                     pqueue.brokers.job_columns gives (the jobs table must be aliased t)
--   {job_json}        the same columns of a row aliased j as one JSON array, times as
--                     epoch seconds (the hand-off message, built by migration 0002's
--                     hand_off function)
--   {lease}           the SET list that leases a job row aliased t to %(worker_id)s for
--                     %(lease_for)s seconds (status, attempt, token, deadline): one text for
--                     the claim's two updates
-- Parameters are psycopg named placeholders: %(name)s, or %(name)b for the arrays of batch
-- statements (binary format: no text quoting to build, about 4x cheaper for the client).
-- No literal percent signs.
--
-- A lease is matched by (id, lease_token) alone, never with `status = 'active'` beside
-- them: a token is set only while its job is active (jobs_token_only_active, migration
-- 0007), and a status test lets the planner read every active lease through jobs_leases
-- instead of each job through jobs_pkey (ADR 0131).
--
-- Notifications carry "<queue> <seconds until its earliest new job is due>"; the listener
-- wakes idle claimers at once for 0 and lowers their sleep for a later time.


-- name: enqueue
-- Store a batch of jobs (duplicate ids and unique keys already folded within the batch).
-- Unique keys (per queue) are taken or refused in unique_keys by an always-updating upsert, so the
-- holder is read under the row lock (race-free between producers); keys are locked in key
-- order so two batches cannot deadlock. Jobs whose id exists are skipped. Returns one row
-- per input, in input order: the id holding the spot, and whether this job was created.
-- Limited jobs (ADR 0110) come only this way: each job's limit (limit_key, rate, burst,
-- concurrency; NULL for a job without one) is stored and the row of every new limit group
-- made, in key order (no deadlock between producers); they are never handed off.
WITH input AS (
    SELECT i.*,
           coalesce(to_timestamp(i.at_epoch), {now} + make_interval(secs => coalesce(i.delay, 0)))
               AS due_at
    FROM unnest(
        %(id)b::uuid[], %(queue)b::text[], %(type)b::text[], %(payload)b::text[],
        %(at_epoch)b::float8[], %(delay)b::float8[], %(max_retries)b::int[],
        %(max_recoveries)b::int[], %(timeout)b::float8[], %(unique_key)b::text[],
        %(unique_for)b::float8[], %(idempotency_key)b::text[], %(meta)b::text[],
        %(limit_key)b::text[], %(limit_rate)b::float8[], %(limit_burst)b::float8[],
        %(limit_concurrency)b::int[], %(unique_until_done)b::bool[], %(priority)b::int[],
        %(unset)b::text[]
    ) WITH ORDINALITY AS i(id, queue, type, payload, at_epoch, delay, max_retries,
                           max_recoveries, timeout, unique_key, unique_for, idempotency_key,
                           meta, limit_key, limit_rate, limit_burst, limit_concurrency,
                           unique_until_done, priority, unset, ord)
),
keys AS (
    -- until_done (migration 0009, ADR 0152): the ack frees the key of a completed job.
    INSERT INTO {schema}.unique_keys AS k (queue, key, job_id, expires_at, until_done)
    SELECT queue, unique_key, id, {now} + make_interval(secs => unique_for), unique_until_done
    FROM input WHERE unique_key IS NOT NULL
    ORDER BY queue, unique_key
    ON CONFLICT (queue, key) DO UPDATE SET
        job_id = CASE WHEN k.expires_at <= {now} THEN excluded.job_id ELSE k.job_id END,
        until_done = CASE WHEN k.expires_at <= {now} THEN excluded.until_done ELSE k.until_done END,
        expires_at = CASE WHEN k.expires_at <= {now} THEN excluded.expires_at ELSE k.expires_at END
    RETURNING k.queue, k.key, k.job_id
),
created AS (
    INSERT INTO {schema}.jobs AS j (
        id, queue, type, status, payload, run_at, created_at, max_retries, max_recoveries,
        timeout, unique_key, idempotency_key, meta, limit_key, limit_rate, limit_burst,
        limit_concurrency, priority, unset
    )
    SELECT i.id, i.queue, i.type,
           CASE WHEN i.due_at > {now} THEN 'scheduled' ELSE 'pending' END,
           i.payload::json, i.due_at, {now}, i.max_retries, i.max_recoveries, i.timeout,
           i.unique_key, i.idempotency_key, i.meta::json, i.limit_key, i.limit_rate,
           i.limit_burst, i.limit_concurrency, i.priority, i.unset
    FROM input AS i LEFT JOIN keys ON keys.queue = i.queue AND keys.key = i.unique_key
    WHERE i.unique_key IS NULL OR keys.job_id = i.id
    ORDER BY i.ord  -- seq (enqueue order) follows the batch order
    ON CONFLICT (id) DO NOTHING
    RETURNING j.id, j.queue, j.run_at
),
groups AS (
    INSERT INTO {schema}.limit_groups (queue, key)
    SELECT DISTINCT queue, limit_key FROM input WHERE limit_key IS NOT NULL ORDER BY queue, limit_key
    ON CONFLICT (queue, key) DO NOTHING
    RETURNING 1
),
seen_queues AS (
    INSERT INTO {schema}.queues (name, created_at)
    SELECT DISTINCT queue, {now} FROM created ORDER BY queue
    ON CONFLICT (name) DO NOTHING
),
woken AS (
    SELECT pg_notify({channel}, queue || ' ' || greatest(extract(epoch FROM min(run_at) - {now}), 0))
    FROM created GROUP BY queue
)
SELECT i.id, coalesce(keys.job_id, i.id) AS holder, created.id IS NOT NULL AS created
FROM input AS i
LEFT JOIN keys ON keys.queue = i.queue AND keys.key = i.unique_key
LEFT JOIN created ON created.id = i.id
CROSS JOIN (SELECT count(*) FROM woken) AS notified  -- evaluates woken, once
CROSS JOIN (SELECT count(*) FROM groups) AS grouped
ORDER BY i.ord;


-- name: enqueue_plain
-- Store a batch of jobs without unique keys and with distinct ids (the common batch):
-- `enqueue` without the unique-key CTE and without joining every input row back, which
-- cuts the statement's server time by a fifth. Returns how many jobs were created and,
-- only when some ids already existed, the ids that were.
WITH created AS (
    INSERT INTO {schema}.jobs AS j (
        id, queue, type, status, payload, run_at, created_at, max_retries, max_recoveries,
        timeout, idempotency_key, meta, priority, unset
    )
    SELECT i.id, i.queue, i.type, CASE WHEN i.due_at > {now} THEN 'scheduled' ELSE 'pending' END,
           i.payload::json, i.due_at, {now}, i.max_retries, i.max_recoveries, i.timeout,
           i.idempotency_key, i.meta::json, i.priority, i.unset
    FROM (
        SELECT u.*,
               coalesce(to_timestamp(u.at_epoch), {now} + make_interval(secs => coalesce(u.delay, 0)))
                   AS due_at
        FROM unnest(
            %(id)b::uuid[], %(queue)b::text[], %(type)b::text[], %(payload)b::text[],
            %(at_epoch)b::float8[], %(delay)b::float8[], %(max_retries)b::int[],
            %(max_recoveries)b::int[], %(timeout)b::float8[], %(idempotency_key)b::text[],
            %(meta)b::text[], %(priority)b::int[], %(unset)b::text[]
        ) WITH ORDINALITY AS u(id, queue, type, payload, at_epoch, delay, max_retries,
                               max_recoveries, timeout, idempotency_key, meta, priority, unset,
                               ord)
        ORDER BY u.ord  -- seq (enqueue order) follows the batch order
    ) AS i
    ON CONFLICT (id) DO NOTHING
    RETURNING j.id, j.queue, j.run_at
),
seen_queues AS (
    INSERT INTO {schema}.queues (name, created_at)
    SELECT DISTINCT queue, {now} FROM created ORDER BY queue
    ON CONFLICT (name) DO NOTHING
),
woken AS (
    SELECT pg_notify({channel}, queue || ' ' || greatest(extract(epoch FROM min(run_at) - {now}), 0))
    FROM created GROUP BY queue
)
SELECT count(*),
       CASE WHEN count(*) < cardinality(%(id)b::uuid[]) THEN array_agg(id::text) END,
       (SELECT count(*) FROM woken)
FROM created;


-- name: enqueue_same
-- `enqueue_plain` for a batch whose jobs differ only in id and payload (the usual fan-out,
-- e.g. AsyncClient.enqueue_map): the shared options come as scalars, so only two arrays
-- are sent and unnested. Optimistic about ids: no ON CONFLICT (its speculative insertion
-- is a fifth of the statement's time), so an id that exists fails the whole statement
-- with a unique violation on jobs_pkey and the broker stores the batch with
-- `enqueue_plain` instead. Returns how many jobs were created (all of them).
WITH due AS (
    SELECT coalesce(to_timestamp(%(at_epoch)s::float8),
                    {now} + make_interval(secs => coalesce(%(delay)s::float8, 0))) AS at
),
created AS (
    INSERT INTO {schema}.jobs AS j (
        id, queue, type, status, payload, run_at, created_at, max_retries, max_recoveries,
        timeout, idempotency_key, meta, priority, unset
    )
    SELECT u.id, %(queue)s::text, %(type)s::text,
           CASE WHEN due.at > {now} THEN 'scheduled' ELSE 'pending' END,
           u.payload::json, due.at, {now}, %(max_retries)s::int, %(max_recoveries)s::int,
           %(timeout)s::float8, %(idempotency_key)s::text, %(meta)s::json, %(priority)s::smallint,
           %(unset)s::text
    FROM due
    CROSS JOIN unnest(%(id)b::uuid[], %(payload)b::text[]) WITH ORDINALITY AS u(id, payload, ord)
    ORDER BY u.ord  -- seq (enqueue order) follows the batch order
    RETURNING j.run_at
),
seen_queues AS (
    INSERT INTO {schema}.queues (name, created_at)
    SELECT %(queue)s::text, {now} WHERE EXISTS (SELECT 1 FROM created)
    ON CONFLICT (name) DO NOTHING
),
woken AS (
    SELECT pg_notify({channel}, %(queue)s::text || ' ' || greatest(extract(epoch FROM min(run_at) - {now}), 0))
    FROM created HAVING count(*) > 0
)
SELECT count(*), (SELECT count(*) FROM woken) FROM created;


-- name: enqueue_one
-- Store one job without a unique key: the same effect as `enqueue` for a batch of one,
-- with scalar parameters and no batch machinery (single enqueues are round-trip bound,
-- so the statement's own cost shows: about half of `enqueue`'s for one job).
-- Hand-off (ADR 0054): a job due now and small enough for a notification (%(handoff)s),
-- in a queue where someone is parked, goes to the `hand_off` function (migration 0002),
-- which leases it to a live parked claimer and notifies that claimer's broker; the
-- schema's channel then stays quiet. Otherwise the job waits as pending and the schema's
-- channel wakes idle claimers. With nobody parked the hand-off costs one index probe of
-- `parked`. Returns whether the job was created (false: its id exists) and how many
-- notifications were sent.
WITH due AS (
    SELECT coalesce(to_timestamp(%(at_epoch)s::float8),
                    {now} + make_interval(secs => coalesce(%(delay)s::float8, 0))) AS at
),
created AS (
    INSERT INTO {schema}.jobs AS j (
        id, queue, type, status, payload, run_at, created_at, max_retries, max_recoveries,
        timeout, idempotency_key, meta, priority, unset
    )
    SELECT %(id)s::uuid, %(queue)s::text, %(type)s::text,
           CASE WHEN due.at > {now} THEN 'scheduled' ELSE 'pending' END,
           %(payload)s::json, due.at, {now}, %(max_retries)s::int, %(max_recoveries)s::int,
           %(timeout)s::float8, %(idempotency_key)s::text, %(meta)s::json, %(priority)s::smallint,
           %(unset)s::text
    FROM due
    ON CONFLICT (id) DO NOTHING
    RETURNING j.id, j.queue, j.run_at
),
seen_queues AS (
    INSERT INTO {schema}.queues (name, created_at)
    SELECT queue, {now} FROM created
    ON CONFLICT (name) DO NOTHING
),
handed AS MATERIALIZED (
    SELECT {schema}.hand_off(c.id, c.queue, {now}) AS done
    FROM created AS c
    WHERE %(handoff)s::bool
      AND c.run_at <= {now}
      AND EXISTS (SELECT 1 FROM {schema}.parked AS p WHERE p.queue = c.queue)
      -- A parking can outlive a pause: a `look` whose snapshot predates the pause inserts
      -- its row after the pause's delete. So a paused queue is tested here too (its probe
      -- runs only when someone is parked).
      AND NOT EXISTS (SELECT 1 FROM {schema}.paused_queues AS q WHERE q.queue = c.queue)
),
woken AS (
    SELECT pg_notify({channel}, queue || ' ' || greatest(extract(epoch FROM run_at - {now}), 0))
    FROM created
    WHERE NOT EXISTS (SELECT 1 FROM handed WHERE done)
)
SELECT (SELECT count(*) FROM created) > 0,
       (SELECT count(*) FROM woken) + (SELECT count(*) FROM handed WHERE done);


-- name: claim
-- Lease up to %(limit)s due jobs, visiting queues in the given order; within a queue by
-- (priority DESC, run_at, seq) (ADR 0145). The nested loop stops as soon as the limit is
-- reached, so later queues are not even read (or locked) when earlier ones fill the claim.
-- A queue is read in three legs, each stopping once the limit is reached: due jobs above
-- the default priority, then the default priority (an index range scan of jobs_claim, as
-- before priorities, which holds scheduled and retry jobs of every priority too), then
-- those below it. A prioritized leg takes, by (priority DESC, run_at, seq), the pending
-- jobs of jobs_prioritized and the scheduled/retry ones that are due but not promoted yet
-- (jobs_prioritized_delayed, migration 0011: only those due since the last promote pass),
-- so they are claimed the moment they are due, as plain jobs are (ADR 0156). With no
-- prioritized job each leg is two probes of empty index ranges. The caller sorts the rows
-- by (pos, -priority, run_at, seq).
-- The claim commits without waiting for its WAL flush (`relaxed`, local to this statement's
-- transaction; ADR 0052): a claim lost in a server crash only makes its jobs claimable
-- again, and the ack that follows is durable, which makes the claim before it durable too.
-- With %(unpark)s (its worker parked since its last claim), the claim also ends that
-- worker's parkings (ADR 0054): a claiming worker is not idle, and a hand-off to it would
-- wait in its broker.
WITH relaxed AS MATERIALIZED (
    SELECT set_config('synchronous_commit', 'off', true) AS setting
),
queues AS MATERIALIZED (
    -- The first row is read before any leg runs, jobs found or not: the unpark rides on it.
    SELECT q.name, q.pos,
           CASE WHEN %(unpark)s::bool AND q.pos = 1
                THEN {schema}.unpark(NULL, %(worker_id)s) END AS unparked
    FROM unnest(%(queues)s::text[]) WITH ORDINALITY AS q(name, pos)
),
open_queues AS MATERIALIZED (
    -- Paused queues are skipped (migration 0004): one primary-key probe per queue.
    SELECT q.name, q.pos FROM queues AS q
    WHERE NOT EXISTS (SELECT 1 FROM {schema}.paused_queues AS p WHERE p.queue = q.name)
),
picked AS MATERIALIZED (
    SELECT j.id, q.pos
    FROM open_queues AS q
    CROSS JOIN LATERAL (
        -- Each read locks in a subquery of its own: FOR UPDATE may not sit beside UNION. The
        -- two reads of a prioritized leg are sorted together (FOR UPDATE forgets the order of
        -- its rows, so they cannot be merged lazily): when due jobs wait to be promoted, the
        -- leg locks up to %(limit)s rows it does not return, until the statement ends.
        (SELECT id FROM (
            SELECT * FROM (
                SELECT id, priority, run_at, seq FROM {schema}.jobs
                WHERE queue = q.name AND status = 'pending' AND priority > 0 AND limit_key IS NULL
                ORDER BY priority DESC, run_at, seq
                LIMIT %(limit)s
                FOR UPDATE SKIP LOCKED
            ) AS pending
            UNION ALL
            SELECT * FROM (
                SELECT id, priority, run_at, seq FROM {schema}.jobs
                WHERE queue = q.name AND status IN ('scheduled', 'retry') AND priority > 0
                  AND run_at <= {now} AND limit_key IS NULL
                ORDER BY priority DESC, run_at, seq
                LIMIT %(limit)s
                FOR UPDATE SKIP LOCKED
            ) AS due
        ) AS above
        ORDER BY priority DESC, run_at, seq
        LIMIT %(limit)s)
        UNION ALL
        SELECT id FROM (
            SELECT id FROM {schema}.jobs
            WHERE queue = q.name AND status IN ('pending', 'scheduled', 'retry') AND priority = 0
              AND run_at <= {now} AND limit_key IS NULL
            ORDER BY run_at, seq
            LIMIT %(limit)s
            FOR UPDATE SKIP LOCKED
        ) AS plain
        UNION ALL
        (SELECT id FROM (
            SELECT * FROM (
                SELECT id, priority, run_at, seq FROM {schema}.jobs
                WHERE queue = q.name AND status = 'pending' AND priority < 0 AND limit_key IS NULL
                ORDER BY priority DESC, run_at, seq
                LIMIT %(limit)s
                FOR UPDATE SKIP LOCKED
            ) AS pending
            UNION ALL
            SELECT * FROM (
                SELECT id, priority, run_at, seq FROM {schema}.jobs
                WHERE queue = q.name AND status IN ('scheduled', 'retry') AND priority < 0
                  AND run_at <= {now} AND limit_key IS NULL
                ORDER BY priority DESC, run_at, seq
                LIMIT %(limit)s
                FOR UPDATE SKIP LOCKED
            ) AS due
        ) AS below
        ORDER BY priority DESC, run_at, seq
        LIMIT %(limit)s)
        LIMIT %(limit)s
    ) AS j
    LIMIT %(limit)s
),
limited AS MATERIALIZED (
    -- Limited jobs fill what the unlimited ones left (ADR 0110): claim_limited (migration
    -- 0006) runs only when the claim is not full and a limited job waits in these queues
    -- (one probe of the empty jobs_limited index otherwise).
    -- A paused queue's name is passed as NULL, which matches no job (migration 0004).
    SELECT l.job_id AS id, l.pos
    FROM {schema}.claim_limited(
        (SELECT array_agg(o.name ORDER BY q.pos) FROM queues AS q LEFT JOIN open_queues AS o ON o.pos = q.pos),
        %(limit)s - (SELECT count(*) FROM picked)::integer,
        {now}
    ) AS l
    WHERE (SELECT count(*) FROM picked) < %(limit)s
      AND EXISTS (
          SELECT 1 FROM {schema}.jobs
          WHERE queue IN (SELECT name FROM open_queues) AND status IN ('pending', 'scheduled', 'retry')
            AND limit_key IS NOT NULL
      )
),
limited_leased AS (
    -- A statement of its own beside the update below, whose plan (a nested loop from
    -- picked over jobs_pkey; it reads the first queue row, with the unpark, even when no
    -- job is due) stays the one of the claim without limits.
    UPDATE {schema}.jobs AS t SET {lease}
    FROM limited
    WHERE t.id = limited.id
    RETURNING limited.pos, t.seq, t.lease_token, t.lease_expires_at, {job_columns}
),
leased AS (
    UPDATE {schema}.jobs AS t SET {lease}
    FROM picked, relaxed
    WHERE t.id = picked.id
    RETURNING picked.pos, t.seq, t.lease_token, t.lease_expires_at, {job_columns}
)
SELECT * FROM leased UNION ALL SELECT * FROM limited_leased;


-- name: ack
-- Complete the jobs whose lease token is still current (handlers that returned None).
-- Jobs with dependants or a result() waiter go through job_finished (migration 0005) in
-- the same statement, called from RETURNING once the row is updated (it sees the new
-- row); for the others that is one boolean test. A CTE around the UPDATE cost every ack
-- about 10 % of the statement's server time (docs/benchmarks.md, issue 16).
UPDATE {schema}.jobs AS t SET
    status = 'completed',
    finished_at = {now},
    result = NULL,
    lease_token = NULL,
    lease_expires_at = NULL
FROM unnest(%(id)b::uuid[], %(token)b::bigint[]) AS d(id, token)
WHERE t.id = d.id AND t.lease_token = d.token
RETURNING t.id, CASE WHEN t.has_children OR t.watched THEN {schema}.job_finished(t.id, {now}) END,
    -- a unique key held until done (ADR 0152) is freed: a function only for jobs with a key
    CASE WHEN t.unique_key IS NOT NULL THEN {schema}.unique_done(t.queue, t.unique_key, t.id) END,
    d.token;  -- last: which lease of the job landed (pqueue.brokers.fencing)


-- name: ack_results
-- Complete the jobs whose lease token is still current, storing each result (and
-- settling dependants and waiters from RETURNING, as `ack` does).
UPDATE {schema}.jobs AS t SET
    status = 'completed',
    finished_at = {now},
    result = d.result::json,
    lease_token = NULL,
    lease_expires_at = NULL
FROM unnest(%(id)b::uuid[], %(token)b::bigint[], %(result)b::text[]) AS d(id, token, result)
WHERE t.id = d.id AND t.lease_token = d.token
RETURNING t.id, CASE WHEN t.has_children OR t.watched THEN {schema}.job_finished(t.id, {now}) END,
    -- a unique key held until done (ADR 0152) is freed: a function only for jobs with a key
    CASE WHEN t.unique_key IS NOT NULL THEN {schema}.unique_done(t.queue, t.unique_key, t.id) END,
    d.token;  -- last: which lease of the job landed (pqueue.brokers.fencing)


-- name: fail
-- Record an error on a job whose lease is current: retry at now + retry_in (a new place in
-- line), or dead when retry_in is NULL.
WITH moved AS (
    UPDATE {schema}.jobs AS t SET
        status = CASE WHEN %(retry_in)s::float8 IS NULL THEN 'dead' ELSE 'retry' END,
        run_at = CASE WHEN %(retry_in)s::float8 IS NULL THEN t.run_at
                      ELSE {now} + make_interval(secs => %(retry_in)s::float8) END,
        seq = CASE WHEN %(retry_in)s::float8 IS NULL THEN t.seq
                   ELSE nextval('{schema}.job_seq') END,
        finished_at = CASE WHEN %(retry_in)s::float8 IS NULL THEN {now} END,
        errors = {schema}.append_error(
            t.errors,
            jsonb_build_object(
                'kind', %(kind)s::text, 'message', %(message)s::text,
                'traceback', %(traceback)s::text, 'attempt', t.attempt,
                'at', extract(epoch FROM {now})
            ),
            %(keep)s
        ),
        lease_token = NULL,
        lease_expires_at = NULL
    WHERE t.id = %(id)s AND t.lease_token = %(token)s
    RETURNING t.queue, t.status, t.run_at,
        -- dead: settle dependants and waiters (migration 0005), as `ack` does
        CASE WHEN t.status = 'dead' AND (t.has_children OR t.watched)
             THEN {schema}.job_finished(t.id, {now}) END AS settled
),
woken AS (
    SELECT pg_notify({channel}, queue || ' ' || greatest(extract(epoch FROM run_at - {now}), 0))
    FROM moved WHERE status = 'retry'
)
SELECT moved.status FROM moved CROSS JOIN (SELECT count(*) FROM woken) AS notified;


-- name: release
-- Hand leased jobs back unrun: attempt - 1, same place in line unless delayed; a note
-- (kind NOT NULL) is added to the error history.
WITH moved AS (
    UPDATE {schema}.jobs AS t SET
        attempt = t.attempt - 1,
        errors = CASE WHEN %(kind)s::text IS NULL THEN t.errors ELSE {schema}.append_error(
            t.errors,
            jsonb_build_object(
                'kind', %(kind)s::text, 'message', %(message)s::text,
                'traceback', %(traceback)s::text, 'attempt', t.attempt,
                'at', extract(epoch FROM {now})
            ),
            %(keep)s
        ) END,
        run_at = CASE WHEN %(delay)s::float8 > 0
                      THEN {now} + make_interval(secs => %(delay)s::float8) ELSE t.run_at END,
        status = CASE WHEN %(delay)s::float8 > 0 OR t.run_at > {now}
                      THEN 'scheduled' ELSE 'pending' END,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM unnest(%(id)b::uuid[], %(token)b::bigint[]) AS d(id, token)
    WHERE t.id = d.id AND t.lease_token = d.token
    RETURNING t.id, t.queue, t.run_at, d.token
),
woken AS (
    SELECT pg_notify({channel}, queue || ' ' || greatest(extract(epoch FROM min(run_at) - {now}), 0))
    FROM moved GROUP BY queue
)
SELECT moved.id, moved.token FROM moved CROSS JOIN (SELECT count(*) FROM woken) AS notified;


-- name: extend
-- Push the deadline of leases that are still current to now + lease_for.
UPDATE {schema}.jobs AS t SET
    lease_expires_at = {now} + make_interval(secs => %(lease_for)s)
FROM unnest(%(id)b::uuid[], %(token)b::bigint[]) AS d(id, token)
WHERE t.id = d.id AND t.lease_token = d.token
RETURNING t.id, d.token;


-- name: recover
-- Put up to %(limit)s jobs whose lease expired back in line (recoveries + 1, attempt - 1),
-- or dead past max_recoveries. SKIP LOCKED lets every worker run this at once.
WITH expired AS MATERIALIZED (
    SELECT id, lease_expires_at AS expired_at FROM {schema}.jobs
    WHERE status = 'active' AND lease_expires_at <= {now}
    ORDER BY lease_expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
moved AS (
    UPDATE {schema}.jobs AS t SET
        recoveries = t.recoveries + 1,
        status = CASE WHEN t.recoveries >= t.max_recoveries THEN 'dead'
                      WHEN t.run_at > {now} THEN 'scheduled' ELSE 'pending' END,
        attempt = CASE WHEN t.recoveries >= t.max_recoveries THEN t.attempt ELSE t.attempt - 1 END,
        finished_at = CASE WHEN t.recoveries >= t.max_recoveries THEN {now} END,
        errors = CASE WHEN t.recoveries >= t.max_recoveries THEN {schema}.append_error(
            t.errors,
            jsonb_build_object(
                'kind', 'LeaseExpired',
                'message', 'lease expired ' || (t.recoveries + 1) || ' times',
                'traceback', '', 'attempt', t.attempt, 'at', extract(epoch FROM {now})
            ),
            %(keep)s
        ) ELSE t.errors END,
        lease_token = NULL,
        lease_expires_at = NULL
    FROM expired
    WHERE t.id = expired.id
    RETURNING t.id, t.queue, t.status, t.run_at, expired.expired_at,
        -- dead: settle dependants and waiters (migration 0005), as `ack` does
        CASE WHEN t.status = 'dead' AND (t.has_children OR t.watched)
             THEN {schema}.job_finished(t.id, {now}) END AS settled
),
woken AS (
    SELECT pg_notify({channel}, queue || ' ' || greatest(extract(epoch FROM min(run_at) - {now}), 0))
    FROM moved WHERE status <> 'dead' GROUP BY queue
)
SELECT moved.id, moved.queue, moved.status
FROM moved CROSS JOIN (SELECT count(*) FROM woken) AS notified
ORDER BY moved.expired_at, moved.id;


-- name: promote
-- Relabel up to %(limit)s scheduled/retry jobs whose run_at has passed as pending (claim
-- already takes them by run_at; this keeps status honest and wakes idle claimers).
WITH due AS MATERIALIZED (
    SELECT id FROM {schema}.jobs
    WHERE status IN ('scheduled', 'retry') AND run_at <= {now}
    ORDER BY run_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
moved AS (
    UPDATE {schema}.jobs AS t SET status = 'pending'
    FROM due WHERE t.id = due.id
    RETURNING t.queue
),
woken AS (
    SELECT pg_notify({channel}, queue || ' 0') FROM moved GROUP BY queue
)
SELECT count(*) FROM moved CROSS JOIN (SELECT count(*) FROM woken) AS notified;


-- name: look
-- Seconds until the earliest waiting job of these queues is due (<= 0: due now; NULL:
-- none). With %(park)s, it first parks an idle claimer on each of these queues until
-- now + %(park_for)s s (replacing its earlier parking there) and drops other claimers'
-- expired parkings of these queues (ADR 0054); without, the other parameters are NULL
-- and nothing is written. The table is unlogged: parking writes no WAL and waits for no
-- flush. Paused queues (migration 0004) are neither looked at nor parked on.
WITH open_queues AS MATERIALIZED (
    SELECT q.name FROM unnest(%(queues)s::text[]) AS q(name)
    WHERE NOT EXISTS (SELECT 1 FROM {schema}.paused_queues AS p WHERE p.queue = q.name)
),
gone AS (
    DELETE FROM {schema}.parked
    WHERE %(park)s::bool
      AND queue = ANY(%(queues)s::text[]) AND expires_at <= {now} AND worker_id <> %(worker_id)s
),
parked AS (
    INSERT INTO {schema}.parked AS p (
        queue, worker_id, channel, listener_pid, listener_start, lease_for, expires_at
    )
    SELECT q.name, %(worker_id)s, %(channel)s, %(listener_pid)s, %(listener_start)s,
           %(lease_for)s, {now} + make_interval(secs => %(park_for)s)
    FROM open_queues AS q
    WHERE %(park)s::bool
    ON CONFLICT (queue, worker_id) DO UPDATE SET
        channel = excluded.channel,
        listener_pid = excluded.listener_pid,
        listener_start = excluded.listener_start,
        lease_for = excluded.lease_for,
        expires_at = excluded.expires_at
)
SELECT extract(epoch FROM least(
    min(d.run_at),
    -- limited groups (ADR 0110): when their head is due and their next token comes; a
    -- group that was full at its last claim waits for a claim after an ack, not for this.
    (SELECT min(greatest(h.run_at, coalesce(g.wake_at, h.run_at)))
     FROM {schema}.limit_groups AS g
     CROSS JOIN LATERAL (
         SELECT run_at FROM {schema}.jobs
         WHERE queue = g.queue AND limit_key = g.key AND status IN ('pending', 'scheduled', 'retry')
         ORDER BY run_at
         LIMIT 1
     ) AS h
     WHERE g.queue IN (SELECT name FROM open_queues) AND NOT g.held),
    -- a due job with a priority (jobs_prioritized, migration 0010): due now
    (SELECT {now} WHERE EXISTS (
        SELECT 1 FROM {schema}.jobs
        WHERE queue IN (SELECT name FROM open_queues) AND status = 'pending' AND priority <> 0
          AND limit_key IS NULL))
) - {now})::float8
FROM open_queues AS q
CROSS JOIN LATERAL (
    SELECT run_at FROM {schema}.jobs
    WHERE queue = q.name AND status IN ('pending', 'scheduled', 'retry') AND limit_key IS NULL
      AND (priority = 0 OR status <> 'pending')
    ORDER BY run_at
    LIMIT 1
) AS d;


-- name: unpark
-- Take every claimer of one broker (its hand-off channel) out of the parked table.
DELETE FROM {schema}.parked WHERE channel = %(channel)s;


-- name: notify
-- Send one notification (the hand-off channel's flush marker at close).
SELECT pg_notify(%(channel)s, %(payload)s);


-- name: listener_identity
-- The LISTEN connection's backend: its pid and start (parked rows name it).
SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid();


-- name: now
-- The server's time: the broker's clock when none is injected.
SELECT statement_timestamp();


-- name: idempotency_begin
-- Hold a key in flight for an owner: taken when free, expired, or already this owner's
-- in-flight hold (a refresh). Always updates, so the answer is read under the row lock.
INSERT INTO {schema}.idempotency_keys AS k (key, owner, state, expires_at)
VALUES (%(key)s, %(owner)s, 'in_flight', {now} + make_interval(secs => %(ttl)s))
ON CONFLICT (key) DO UPDATE SET
    owner = CASE WHEN k.expires_at <= {now} OR (k.state = 'in_flight' AND k.owner = excluded.owner)
                 THEN excluded.owner ELSE k.owner END,
    state = CASE WHEN k.expires_at <= {now} OR (k.state = 'in_flight' AND k.owner = excluded.owner)
                 THEN 'in_flight' ELSE k.state END,
    expires_at = CASE WHEN k.expires_at <= {now} OR (k.state = 'in_flight' AND k.owner = excluded.owner)
                      THEN excluded.expires_at ELSE k.expires_at END
RETURNING k.owner, k.state;


-- name: idempotency_done
-- Remember that the key's job succeeded, for ttl seconds.
INSERT INTO {schema}.idempotency_keys AS k (key, owner, state, expires_at)
VALUES (%(key)s, %(owner)s, 'done', {now} + make_interval(secs => %(ttl)s))
ON CONFLICT (key) DO UPDATE SET
    owner = excluded.owner, state = 'done', expires_at = excluded.expires_at;


-- name: idempotency_release
-- Free a key held in flight by this owner (its job failed); anyone else's hold stays.
DELETE FROM {schema}.idempotency_keys
WHERE key = %(key)s AND owner = %(owner)s AND state = 'in_flight';


-- name: get_job
-- One job by id.
SELECT {job_columns} FROM {schema}.jobs AS t WHERE id = %(id)s;


-- name: list_jobs
-- One page of unfinished jobs in a status (optionally one queue and/or one type), first
-- enqueued first; one extra row tells whether another page follows. The status's jobs come
-- through its partial indexes. The two priority arms are always true: they let the planner
-- read pending jobs through both of theirs (jobs_claim at priority 0, jobs_prioritized the
-- others: migration 0010), where `status = 'pending'` alone matches neither and the plan
-- read the whole table (ADR 0156).
SELECT {job_columns} FROM {schema}.jobs AS t
WHERE status = %(status)s AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(type)s::text IS NULL OR type = %(type)s::text)
  AND (priority = 0 OR priority <> 0)
ORDER BY created_at, id
LIMIT %(limit)s + 1 OFFSET %(offset)s;


-- name: list_finished_jobs
-- One page of finished jobs (completed, cancelled or dead; optionally one queue and/or one
-- type), first finished first; one extra row tells whether another page follows. Read in
-- finish order through jobs_finished or jobs_died, so a page costs its offset and length,
-- not the history: in enqueue order, every page sorted all retained jobs of its status
-- (ADR 0156).
SELECT {job_columns} FROM {schema}.jobs AS t
WHERE status = %(status)s AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(type)s::text IS NULL OR type = %(type)s::text)
ORDER BY finished_at, id
LIMIT %(limit)s + 1 OFFSET %(offset)s;


-- name: scan_jobs
-- Every job matching statuses, queue and since (finished at or after it, or unfinished and
-- enqueued at or after it), in one slice of seq (seq mod parts = part), read through a
-- server-side cursor by Inspector.scan_jobs.
SELECT {job_columns} FROM {schema}.jobs AS t
WHERE status = ANY(%(statuses)s::text[])
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(since)s::float8 IS NULL
       OR coalesce(finished_at, created_at) >= to_timestamp(%(since)s::float8))
  AND mod(seq, %(parts)s::bigint) = %(part)s::bigint;


-- name: counts
-- Jobs per queue and status; queues without jobs appear with a NULL status. Never reads
-- the history (ADR 0139): live statuses through their partial indexes (jobs_claim,
-- jobs_leases, jobs_waiting), finished ones from their counters (migration 0008): the
-- folded totals plus the deltas not folded yet. The last column is how many deltas were
-- read (the same on every row): `counts` folds them when there are many.
WITH deltas AS MATERIALIZED (
    SELECT queue, status, sum(n) AS n, count(*) AS rows
    FROM {schema}.finished_deltas GROUP BY queue, status
),
per AS (
    SELECT queue, status, sum(n) AS n FROM (
        SELECT queue, status, count(*) AS n FROM {schema}.jobs
        WHERE status IN ('pending', 'scheduled', 'retry') AND (priority = 0 OR status <> 'pending')
        GROUP BY queue, status
        UNION ALL
        SELECT queue, 'pending', count(*) FROM {schema}.jobs  -- due jobs with a priority (0010)
        WHERE status = 'pending' AND priority <> 0 GROUP BY queue
    ) AS live GROUP BY queue, status
    UNION ALL
    SELECT queue, 'active', count(*) FROM {schema}.jobs WHERE status = 'active' GROUP BY queue
    UNION ALL
    SELECT queue, 'waiting', count(*) FROM {schema}.jobs WHERE status = 'waiting' GROUP BY queue
    UNION ALL
    SELECT queue, status, sum(n) FROM (
        SELECT queue, status, n FROM {schema}.finished_counts
        UNION ALL
        SELECT queue, status, n FROM deltas
    ) AS f GROUP BY queue, status
)
SELECT q.name, per.status, per.n, (SELECT coalesce(sum(rows), 0) FROM deltas)
FROM {schema}.queues AS q
LEFT JOIN per ON per.queue = q.name;


-- name: fold_counts
-- Move the finished-job deltas (migration 0008) into their totals in one transaction, so
-- every snapshot sees each delta in exactly one of the two tables. One folder at a time
-- (a transaction-scoped advisory lock, tried, never waited for); a delta appended after
-- this statement's snapshot waits for the next fold. Returns how many deltas it folded.
WITH gone AS (
    DELETE FROM {schema}.finished_deltas
    WHERE (SELECT pg_try_advisory_xact_lock(hashtextextended(%(lock)s, 0)))
    RETURNING queue, status, n
),
folded AS (
    INSERT INTO {schema}.finished_counts AS c (queue, status, n)
    SELECT queue, status, sum(n) FROM gone GROUP BY queue, status ORDER BY queue, status
    ON CONFLICT (queue, status) DO UPDATE SET n = c.n + excluded.n
)
SELECT count(*) FROM gone;


-- name: activity
-- Per queue: seconds since the oldest due waiting job became due (NULL when none waits)
-- and the jobs finished (completed or dead) in the window. Every part reads an index, and
-- what it reads is what is there, never the history nor a fixed range (ADR 0156):
--   heads   the earliest job of each queue in jobs_claim, by a loose index scan: one probe
--           per queue (the next queue's first entry), due or not; a head not due yet means
--           no job of its queue in jobs_claim is due;
--   levels  the earliest job of each (queue, priority) in jobs_prioritized (due jobs with a
--           priority, migration 0010), by a loose index scan: one probe per level present,
--           the next lower level of the queue, else the next queue's highest;
--   done    the jobs finished in the window, found by finish time through jobs_finished and
--           jobs_died (migration 0008): what the window holds.
-- So its estimated cost does not scale with the queues table's row estimate (1,200 for a
-- table never analysed, as small tables stay): the earlier form, a subquery per queues row
-- probing a fixed series of 201 levels, was estimated above jit_above_cost and paid 100-400
-- ms of JIT compilation on every call.
WITH RECURSIVE heads AS (
    (SELECT j.queue, j.run_at FROM {schema}.jobs AS j
     WHERE j.status IN ('pending', 'scheduled', 'retry') AND (j.priority = 0 OR j.status <> 'pending')
     ORDER BY j.queue, j.run_at LIMIT 1)
    UNION ALL
    SELECT n.queue, n.run_at FROM heads AS h CROSS JOIN LATERAL (
        SELECT j.queue, j.run_at FROM {schema}.jobs AS j
        WHERE j.status IN ('pending', 'scheduled', 'retry') AND (j.priority = 0 OR j.status <> 'pending')
          AND j.queue > h.queue
        ORDER BY j.queue, j.run_at LIMIT 1
    ) AS n
),
levels AS (
    (SELECT j.queue, j.priority, j.run_at FROM {schema}.jobs AS j
     WHERE j.status = 'pending' AND j.priority <> 0
     ORDER BY j.queue, j.priority DESC, j.run_at LIMIT 1)
    UNION ALL
    SELECT n.queue, n.priority, n.run_at FROM levels AS l CROSS JOIN LATERAL (
        SELECT * FROM (
            (SELECT j.queue, j.priority, j.run_at FROM {schema}.jobs AS j
             WHERE j.status = 'pending' AND j.priority <> 0 AND j.queue = l.queue AND j.priority < l.priority
             ORDER BY j.priority DESC, j.run_at LIMIT 1)
            UNION ALL
            (SELECT j.queue, j.priority, j.run_at FROM {schema}.jobs AS j
             WHERE j.status = 'pending' AND j.priority <> 0 AND j.queue > l.queue
             ORDER BY j.queue, j.priority DESC, j.run_at LIMIT 1)
        ) AS next
        LIMIT 1
    ) AS n
),
oldest AS (
    SELECT queue, min(run_at) AS run_at FROM (
        SELECT queue, run_at FROM heads WHERE run_at <= {now}
        UNION ALL
        SELECT queue, run_at FROM levels
    ) AS due GROUP BY queue
),
done AS (
    SELECT queue, count(*) AS n FROM (
        SELECT queue FROM {schema}.jobs
        WHERE status = 'completed' AND finished_at > {now} - make_interval(secs => %(window)s)
        UNION ALL
        SELECT queue FROM {schema}.jobs
        WHERE status = 'dead' AND finished_at > {now} - make_interval(secs => %(window)s)
    ) AS f GROUP BY queue
)
SELECT q.name, extract(epoch FROM {now} - oldest.run_at)::float8, coalesce(done.n, 0)
FROM {schema}.queues AS q
LEFT JOIN oldest ON oldest.queue = q.name
LEFT JOIN done ON done.queue = q.name
ORDER BY q.name;


-- name: limit_groups
-- Every limit group with a waiting or active job (ADR 0110, 0140): active and waiting
-- jobs, the limits of its latest job and its tokens now (refilled; NULL without a rate).
-- A group row without live jobs is not listed: the live jobs (read through the partial
-- indexes) drive the join, and only their groups' rows are needed.
SELECT c.queue, c.key,
       c.active, c.waiting,
       coalesce(c.concurrency, g.concurrency), coalesce(c.rate, g.rate),
       CASE WHEN coalesce(c.rate, g.rate) IS NULL THEN NULL
            WHEN g.tokens IS NULL THEN coalesce(c.burst, g.burst)
            ELSE least(coalesce(c.burst, g.burst), g.tokens + greatest(
                extract(epoch FROM {now} - g.refilled_at), 0) * coalesce(c.rate, g.rate)) END
FROM (
    -- Two arms, one per partial index (jobs_limited, jobs_limit_active): one condition
    -- over both statuses matches neither index and reads the whole table (ADR 0139).
    SELECT queue, limit_key AS key,
           count(*) FILTER (WHERE status = 'active') AS active,
           count(*) FILTER (WHERE status <> 'active') AS waiting,
           max(limit_concurrency) AS concurrency, max(limit_rate) AS rate, max(limit_burst) AS burst
    FROM (
        SELECT queue, limit_key, status, limit_concurrency, limit_rate, limit_burst FROM {schema}.jobs
        WHERE limit_key IS NOT NULL AND status IN ('pending', 'scheduled', 'retry')
        UNION ALL
        SELECT queue, limit_key, status, limit_concurrency, limit_rate, limit_burst FROM {schema}.jobs
        WHERE limit_key IS NOT NULL AND status = 'active'
    ) AS live
    GROUP BY queue, limit_key
) AS c
LEFT JOIN {schema}.limit_groups AS g ON g.queue = c.queue AND g.key = c.key
ORDER BY 1, 2;


-- name: list_queues
-- Every queue that has held a job.
SELECT name FROM {schema}.queues ORDER BY name;


-- name: cancel
-- Cancel a job that has not started (pending, scheduled, retry, or waiting for parents).
-- Returns its status before (no row: no such job) and whether it moved. Dependants and
-- result() waiters are told by job_finished (migration 0005) in the same statement.
WITH target AS (
    SELECT id, status FROM {schema}.jobs WHERE id = %(id)s FOR UPDATE
),
moved AS (
    UPDATE {schema}.jobs AS t SET status = 'cancelled', finished_at = {now}
    FROM target
    WHERE t.id = target.id AND target.status IN ('pending', 'scheduled', 'retry', 'waiting')
    RETURNING t.id, CASE WHEN t.has_children OR t.watched THEN {schema}.job_finished(t.id, {now}) END
)
SELECT target.status, EXISTS (SELECT 1 FROM moved) AS cancelled FROM target;


-- name: requeue_dead
-- Dead jobs (these ids and/or this queue, or all) back to pending with a fresh budget and
-- a new place at the end of the line.
WITH target AS MATERIALIZED (
    SELECT id FROM {schema}.jobs
    WHERE status = 'dead'
      AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
      AND (%(ids)s::uuid[] IS NULL OR id = ANY (%(ids)s::uuid[]))
    ORDER BY seq
    FOR UPDATE
),
moved AS (
    UPDATE {schema}.jobs AS t SET
        status = 'pending', attempt = 0, recoveries = 0, finished_at = NULL,
        run_at = {now}, seq = nextval('{schema}.job_seq')
    FROM target WHERE t.id = target.id
    RETURNING t.queue
),
woken AS (
    SELECT pg_notify({channel}, queue || ' 0') FROM moved GROUP BY queue
)
SELECT count(*) FROM moved CROSS JOIN (SELECT count(*) FROM woken) AS notified;


-- name: purge_dead
-- Delete dead jobs (these ids and/or this queue, or all; with older_than, only those that
-- died at least that many seconds ago).
WITH gone AS (
    DELETE FROM {schema}.jobs
    WHERE status = 'dead'
      AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
      AND (%(ids)s::uuid[] IS NULL OR id = ANY (%(ids)s::uuid[]))
      AND (%(older_than)s::float8 IS NULL
           OR finished_at <= {now} - make_interval(secs => %(older_than)s::float8))
    RETURNING 1
)
SELECT count(*) FROM gone;


-- name: prune
-- One bounded batch of retention work: completed/cancelled jobs older than the retention
-- window, and expired unique keys, idempotency keys and workers. SKIP LOCKED and the limit
-- keep every lock short. Returns how many jobs were deleted.
WITH old AS MATERIALIZED (
    SELECT id FROM {schema}.jobs
    WHERE status IN ('completed', 'cancelled')
      AND finished_at <= {now} - make_interval(secs => %(retention)s)
    ORDER BY finished_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
gone AS (
    DELETE FROM {schema}.jobs AS t USING old WHERE t.id = old.id RETURNING 1
),
old_keys AS (
    DELETE FROM {schema}.unique_keys WHERE (queue, key) IN (
        SELECT queue, key FROM {schema}.unique_keys WHERE expires_at <= {now}
        ORDER BY expires_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED
    )
),
old_idempotency AS (
    DELETE FROM {schema}.idempotency_keys WHERE key IN (
        SELECT key FROM {schema}.idempotency_keys WHERE expires_at <= {now}
        ORDER BY expires_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED
    )
),
old_workers AS (
    DELETE FROM {schema}.workers WHERE expires_at <= {now}
)
SELECT count(*) FROM gone;


-- name: register_worker
-- Record or refresh a live worker until now + ttl.
INSERT INTO {schema}.workers AS w (
    id, host, pid, queues, concurrency, started_at, last_seen, expires_at, meta
)
VALUES (
    %(id)s, %(host)s, %(pid)s, %(queues)s::text[], %(concurrency)s, to_timestamp(%(started_at)s),
    {now}, {now} + make_interval(secs => %(ttl)s), %(meta)s::json
)
ON CONFLICT (id) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, queues = excluded.queues,
    concurrency = excluded.concurrency, started_at = excluded.started_at,
    last_seen = excluded.last_seen, expires_at = excluded.expires_at, meta = excluded.meta;


-- name: unregister_worker
-- Forget a worker that stopped cleanly.
DELETE FROM {schema}.workers WHERE id = %(id)s;


-- name: list_workers
-- Workers seen within their ttl.
SELECT id, host, pid, queues, concurrency, started_at, last_seen, meta
FROM {schema}.workers WHERE expires_at > {now} ORDER BY id;


-- name: schema_version
-- The newest migration applied to this schema (fails if the schema was never migrated).
SELECT max(version) FROM {schema}.migrations;


-- name: migrate_lock
-- Serialise migrators of one schema for the rest of the transaction.
SELECT pg_advisory_xact_lock(hashtextextended(%(lock)s, 0));


-- name: migrate_create_schema
-- The schema that holds every pqueue table.
CREATE SCHEMA IF NOT EXISTS {schema};


-- name: migrate_bootstrap
-- The record of applied migrations.
CREATE TABLE IF NOT EXISTS {schema}.migrations (
    version    integer     NOT NULL,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    CONSTRAINT migrations_pkey PRIMARY KEY (version)
);


-- name: migrate_applied
-- Versions already applied, oldest first.
SELECT version FROM {schema}.migrations ORDER BY version;


-- name: migrate_record
-- Note one migration as applied.
INSERT INTO {schema}.migrations (version, name) VALUES (%(version)s, %(name)s);


-- name: register_schedules
-- Record or refresh schedules until now + ttl, keeping their first-seen time and last run
-- (names locked in name order, so two workers cannot deadlock); delete other records whose
-- registration expired more than `retention` seconds ago. Returns, per input in order, the
-- epoch its due ticks count from: its last run, else when it was first registered.
WITH gone AS (
    DELETE FROM {schema}.schedules
    WHERE expires_at <= {now} - make_interval(secs => %(retention)s)
      AND NOT (name = ANY(%(names)s::text[]))
),
input AS (
    SELECT i.name, i.definition, i.n
    FROM unnest(%(names)s::text[], %(definitions)s::text[]) WITH ORDINALITY AS i(name, definition, n)
),
upserted AS (
    INSERT INTO {schema}.schedules AS s (name, definition, since, expires_at)
    SELECT input.name, input.definition::jsonb, {now}, {now} + make_interval(secs => %(ttl)s)
    FROM input ORDER BY input.name
    ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, expires_at = excluded.expires_at
    RETURNING s.name, extract(epoch FROM coalesce(s.last_run_at, s.since))::float8 AS cursor
)
SELECT u.cursor FROM input JOIN upserted AS u ON u.name = input.name ORDER BY input.n;


-- name: mark_schedule_run
-- Raise a schedule's last run to an enqueued tick (never lower it).
UPDATE {schema}.schedules SET last_run_at = to_timestamp(%(tick)s)
WHERE name = %(name)s AND (last_run_at IS NULL OR last_run_at < to_timestamp(%(tick)s));


-- name: list_schedules
-- Schedules registered within their ttl, by name, with their last run.
SELECT definition::text, extract(epoch FROM last_run_at)::float8
FROM {schema}.schedules WHERE expires_at > {now} ORDER BY name;
-- Control (ADR 0105, 0106): paused queues (migration 0004) and cancel of running jobs.

-- name: pause
-- Pause a queue and unpark its claimers, so that no enqueue hands them one of its jobs
-- (`look` parks nobody on a paused queue, and `enqueue_one` hands nothing off in one, for
-- a parking that raced this statement). Returns whether it was running.
WITH paused AS (
    INSERT INTO {schema}.paused_queues (queue, paused_at) VALUES (%(queue)s, {now})
    ON CONFLICT (queue) DO NOTHING
    RETURNING 1
),
unparked AS (
    DELETE FROM {schema}.parked WHERE queue = %(queue)s
)
SELECT EXISTS (SELECT 1 FROM paused);


-- name: resume
-- Resume a paused queue and wake idle claimers to look at it. Returns whether it was paused.
WITH gone AS (
    DELETE FROM {schema}.paused_queues WHERE queue = %(queue)s RETURNING queue
),
woken AS (
    SELECT pg_notify({channel}, queue || ' 0') FROM gone
)
SELECT count(*) > 0 FROM gone CROSS JOIN (SELECT count(*) FROM woken) AS notified;


-- name: paused_queues
-- The paused queues, by name.
SELECT queue FROM {schema}.paused_queues ORDER BY queue;


-- name: cancel_active
-- Cancel a running job: active -> cancelled, its lease revoked (a late ack, fail or extend
-- finds no current token), the reason added to its error history, and its id announced
-- on the cancel channel %(channel)s for workers; dependants and result() waiters are told
-- by job_finished (migration 0005) in the same statement, as `cancel` does. Returns its
-- status before (no row: no such job) and whether it moved.
WITH target AS (
    SELECT id, status FROM {schema}.jobs WHERE id = %(id)s FOR UPDATE
),
moved AS (
    UPDATE {schema}.jobs AS t SET
        status = 'cancelled',
        finished_at = {now},
        errors = {schema}.append_error(
            t.errors,
            jsonb_build_object(
                'kind', %(kind)s::text, 'message', %(message)s::text, 'traceback', '',
                'attempt', t.attempt, 'at', extract(epoch FROM {now})
            ),
            %(keep)s
        ),
        lease_token = NULL,
        lease_expires_at = NULL
    FROM target
    WHERE t.id = target.id AND target.status = 'active'
    RETURNING t.id, CASE WHEN t.has_children OR t.watched THEN {schema}.job_finished(t.id, {now}) END
),
told AS (
    SELECT pg_notify(%(channel)s::text, id::text) FROM moved
)
SELECT target.status, EXISTS (SELECT 1 FROM moved) AS cancelled
FROM target CROSS JOIN (SELECT count(*) FROM told) AS notified;
-- name: flow_lock_parents
-- The stored jobs among the parents of a dependency batch, locked until the batch commits:
-- a parent cannot finish meanwhile (its finishing statement waits, then sees the new
-- edges), and one found finished is settled by `flow_settle`. FOR NO KEY UPDATE in id
-- order, not FOR SHARE: `flow_link` updates these rows, and two batches holding share
-- locks on one parent would deadlock on that update.
SELECT id::text, status FROM {schema}.jobs WHERE id = ANY(%(ids)s::uuid[]) ORDER BY id FOR NO KEY UPDATE;


-- name: enqueue_waiting
-- Store jobs that wait for parents (`waiting`, parents_left = how many). Their run_at is
-- computed now, as for any job; a job released later runs at max(run_at, release time).
-- Jobs whose id exists are skipped; their queues are recorded (list_queues, counts).
-- A limited job keeps its limit (ADR 0110) and its group's row is made now, as `enqueue`
-- makes it: once released (job_finished), the job is claimed by claim_limited like any
-- limited job. Returns the ids created.
WITH created AS (
    INSERT INTO {schema}.jobs AS j (
        id, queue, type, status, payload, run_at, created_at, max_retries, max_recoveries,
        timeout, idempotency_key, meta, depends_on, on_parent_failure, parents_left,
        limit_key, limit_rate, limit_burst, limit_concurrency, priority, unset
    )
    SELECT i.id, i.queue, i.type, 'waiting', i.payload::json,
           coalesce(to_timestamp(i.at_epoch), {now} + make_interval(secs => coalesce(i.delay, 0))),
           {now}, i.max_retries, i.max_recoveries, i.timeout, i.idempotency_key, i.meta::json,
           string_to_array(i.parents, ',')::uuid[], i.on_parent_failure,
           cardinality(string_to_array(i.parents, ',')),
           i.limit_key, i.limit_rate, i.limit_burst, i.limit_concurrency, i.priority, i.unset
    FROM unnest(
        %(id)b::uuid[], %(queue)b::text[], %(type)b::text[], %(payload)b::text[],
        %(at_epoch)b::float8[], %(delay)b::float8[], %(max_retries)b::int[],
        %(max_recoveries)b::int[], %(timeout)b::float8[], %(idempotency_key)b::text[],
        %(meta)b::text[], %(parents)b::text[], %(on_parent_failure)b::text[],
        %(limit_key)b::text[], %(limit_rate)b::float8[], %(limit_burst)b::float8[],
        %(limit_concurrency)b::int[], %(priority)b::int[], %(unset)b::text[]
    ) WITH ORDINALITY AS i(id, queue, type, payload, at_epoch, delay, max_retries, max_recoveries,
                           timeout, idempotency_key, meta, parents, on_parent_failure,
                           limit_key, limit_rate, limit_burst, limit_concurrency, priority, unset,
                           ord)
    ORDER BY i.ord
    ON CONFLICT (id) DO NOTHING
    RETURNING j.id, j.queue, j.limit_key
),
groups AS (
    INSERT INTO {schema}.limit_groups (queue, key)
    SELECT DISTINCT queue, limit_key FROM created WHERE limit_key IS NOT NULL ORDER BY queue, limit_key
    ON CONFLICT (queue, key) DO NOTHING
),
seen_queues AS (
    INSERT INTO {schema}.queues (name, created_at)
    SELECT DISTINCT queue, {now} FROM created ORDER BY queue
    ON CONFLICT (name) DO NOTHING
)
SELECT id::text FROM created;


-- name: flow_link
-- Record the edges of newly stored waiting jobs and mark their parents as having children.
WITH edges AS (
    INSERT INTO {schema}.job_deps (parent, child)
    SELECT * FROM unnest(%(parent)b::uuid[], %(child)b::uuid[])
    ON CONFLICT DO NOTHING
    RETURNING parent
)
UPDATE {schema}.jobs AS t SET has_children = true
WHERE t.id IN (SELECT parent FROM edges) AND NOT t.has_children;


-- name: flow_settle
-- Settle the new edges of parents that had already finished (job_finished, migration 0005).
SELECT {schema}.job_finished(p, {now}) FROM unnest(%(ids)s::uuid[]) AS p;


-- name: watch
-- Mark an unfinished job as waited on (its finishing statement then NOTIFYs the results
-- channel). No row: it is finished already, or does not exist.
UPDATE {schema}.jobs SET watched = true
WHERE id = %(id)s AND status NOT IN ('completed', 'dead', 'cancelled')
RETURNING id;
