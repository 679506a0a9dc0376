-- 0001_initial: the jobs table and its small companions.
--
-- Applied by pqueue.brokers.postgres.migrate inside one transaction, after it has created
-- the schema and the migrations table. {schema} is replaced by the quoted schema name.
-- Released migrations are immutable: change the schema with a new numbered file.

-- Enqueue order, the FIFO tie-break after run_at. No CACHE: cached blocks per session
-- would let one producer's later job (on another pooled connection) sort first.
CREATE SEQUENCE {schema}.job_seq AS bigint;

-- Fencing tokens: unique per claim, so a session may cache a block of them.
CREATE SEQUENCE {schema}.lease_token AS bigint CACHE 64;

CREATE TABLE {schema}.jobs (
    id               uuid             NOT NULL,
    seq              bigint           NOT NULL DEFAULT nextval('{schema}.job_seq'),
    run_at           timestamptz      NOT NULL,
    created_at       timestamptz      NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    lease_expires_at timestamptz,
    lease_token      bigint,
    timeout          double precision,
    attempt          integer          NOT NULL DEFAULT 0,
    max_retries      integer          NOT NULL,
    recoveries       integer          NOT NULL DEFAULT 0,
    max_recoveries   integer          NOT NULL,
    status           text             NOT NULL,
    queue            text             NOT NULL,
    type             text             NOT NULL,
    payload          json             NOT NULL,
    meta             json             NOT NULL DEFAULT '{}',
    errors           jsonb            NOT NULL DEFAULT '[]',
    result           json,
    unique_key       text,
    idempotency_key  text,
    worker_id        text,
    CONSTRAINT jobs_pkey PRIMARY KEY (id),
    CONSTRAINT jobs_status_check CHECK (
        status IN ('pending', 'scheduled', 'active', 'retry', 'completed', 'dead', 'cancelled')
    ),
    CONSTRAINT jobs_lease_check CHECK (status <> 'active' OR lease_token IS NOT NULL)
) WITH (
    -- Every transition rewrites the row (status is indexed, so no HOT update); free room
    -- on the page lets the new version stay beside the old one. See docs/postgres.md.
    fillfactor = 80,
    -- A queue table churns: vacuum and analyze after ~2% change, not the default 20%.
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);

-- Partial indexes on the live states only: completed/dead rows, however many, are never
-- in the claim path.
CREATE INDEX jobs_claim ON {schema}.jobs (queue, run_at, seq)
    WHERE status IN ('pending', 'scheduled', 'retry');
CREATE INDEX jobs_delayed ON {schema}.jobs (run_at)
    WHERE status IN ('scheduled', 'retry');
CREATE INDEX jobs_leases ON {schema}.jobs (lease_expires_at)
    WHERE status = 'active';
CREATE INDEX jobs_finished ON {schema}.jobs (finished_at)
    WHERE status IN ('completed', 'cancelled');
CREATE INDEX jobs_dead ON {schema}.jobs (queue, seq)
    WHERE status = 'dead';

-- Every queue that has held a job (list_queues, counts) without scanning jobs.
CREATE TABLE {schema}.queues (
    name       text        NOT NULL,
    created_at timestamptz NOT NULL,
    CONSTRAINT queues_pkey PRIMARY KEY (name)
);

-- Unique enqueue: a key is held within its queue for unique_for seconds from enqueue,
-- whatever the state of the job that took it; expired rows are taken over in place and
-- pruned in batches.
CREATE TABLE {schema}.unique_keys (
    queue      text        NOT NULL,
    key        text        NOT NULL,
    job_id     uuid        NOT NULL,
    expires_at timestamptz NOT NULL,
    CONSTRAINT unique_keys_pkey PRIMARY KEY (queue, key)
);
CREATE INDEX unique_keys_expiry ON {schema}.unique_keys (expires_at);

-- Idempotency keys of running/succeeded jobs (Broker.idempotency_begin/end).
CREATE TABLE {schema}.idempotency_keys (
    key        text        NOT NULL,
    owner      text        NOT NULL,
    state      text        NOT NULL,
    expires_at timestamptz NOT NULL,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (key),
    CONSTRAINT idempotency_keys_state_check CHECK (state IN ('in_flight', 'done'))
);
CREATE INDEX idempotency_keys_expiry ON {schema}.idempotency_keys (expires_at);

-- Live worker processes, refreshed by their heartbeat.
CREATE TABLE {schema}.workers (
    id          text        NOT NULL,
    host        text        NOT NULL,
    pid         integer     NOT NULL,
    queues      text[]      NOT NULL,
    concurrency integer     NOT NULL,
    started_at  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    meta        json        NOT NULL DEFAULT '{}',
    CONSTRAINT workers_pkey PRIMARY KEY (id)
);

-- Append one error to a job's bounded history (newest last, at most `keep` kept).
CREATE FUNCTION {schema}.append_error(history jsonb, error jsonb, keep integer)
RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(jsonb_agg(e ORDER BY n), '[]'::jsonb)
    FROM jsonb_array_elements(history || jsonb_build_array(error)) WITH ORDINALITY AS x(e, n)
    WHERE n > jsonb_array_length(history) + 1 - keep
$$;
