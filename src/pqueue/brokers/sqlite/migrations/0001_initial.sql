-- 0001_initial: every pqueue table of a SQLite database, in one file.
--
-- Applied by pqueue.brokers.sqlite.migrate inside one BEGIN IMMEDIATE transaction, after
-- it has created the migrations table. Released migrations are immutable: change the
-- schema with a new numbered file. Times are REAL epoch seconds (the host's clock, or an
-- injected one in tests); JSON columns are TEXT written by pqueue.

CREATE TABLE jobs (
    id                TEXT    NOT NULL PRIMARY KEY,
    seq               INTEGER NOT NULL,          -- enqueue order (renewed when put back in line)
    priority          INTEGER NOT NULL DEFAULT 0, -- -100..100, higher first
    run_at            REAL    NOT NULL,
    created_at        REAL    NOT NULL,
    started_at        REAL,
    finished_at       REAL,
    lease_expires_at  REAL,
    lease_token       INTEGER,
    timeout           REAL,
    attempt           INTEGER NOT NULL DEFAULT 0,
    max_retries       INTEGER NOT NULL,
    recoveries        INTEGER NOT NULL DEFAULT 0,
    max_recoveries    INTEGER NOT NULL,
    status            TEXT    NOT NULL CHECK (
        status IN ('pending', 'scheduled', 'active', 'retry', 'completed', 'dead', 'cancelled', 'waiting')
    ),
    queue             TEXT    NOT NULL,
    type              TEXT    NOT NULL,
    payload           TEXT    NOT NULL,
    meta              TEXT    NOT NULL DEFAULT '{}',
    errors            TEXT    NOT NULL DEFAULT '[]',
    result            TEXT,
    unique_key        TEXT,
    idempotency_key   TEXT,
    worker_id         TEXT,
    depends_on        TEXT,                      -- JSON array of parent ids, or NULL
    parent_results    TEXT,                      -- JSON object parent id -> result, or NULL
    on_parent_failure TEXT,
    parents_left      INTEGER,
    has_children      INTEGER NOT NULL DEFAULT 0,
    limit_key         TEXT,
    limit_rate        REAL,
    limit_burst       REAL,
    limit_concurrency INTEGER,
    CHECK (status <> 'active' OR lease_token IS NOT NULL),
    CHECK (lease_token IS NULL OR status = 'active')
);

-- Partial indexes on the live states only: finished rows, however many, are never in the
-- claim path.
CREATE INDEX jobs_claim ON jobs (queue, priority DESC, run_at, seq)
    WHERE status IN ('pending', 'scheduled', 'retry') AND limit_key IS NULL;
CREATE INDEX jobs_limited ON jobs (queue, limit_key, priority DESC, run_at, seq)
    WHERE status IN ('pending', 'scheduled', 'retry') AND limit_key IS NOT NULL;
CREATE INDEX jobs_delayed ON jobs (run_at) WHERE status IN ('scheduled', 'retry');
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE status = 'active';
CREATE INDEX jobs_limit_active ON jobs (queue, limit_key) WHERE status = 'active' AND limit_key IS NOT NULL;
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE status IN ('completed', 'cancelled', 'dead');
CREATE INDEX jobs_status ON jobs (status, queue, created_at);

-- The enqueue order and fencing tokens (SQLite has no sequences).
CREATE TABLE counters (
    name  TEXT    NOT NULL PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO counters (name, value) VALUES ('job_seq', 0), ('lease_token', 0), ('cancel_seq', 0);

CREATE TABLE queues (
    name       TEXT NOT NULL PRIMARY KEY,
    created_at REAL NOT NULL
);

CREATE TABLE unique_keys (
    queue      TEXT NOT NULL,
    key        TEXT NOT NULL,
    job_id     TEXT NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (queue, key)
);
CREATE INDEX unique_keys_expiry ON unique_keys (expires_at);

CREATE TABLE idempotency_keys (
    key        TEXT NOT NULL PRIMARY KEY,
    owner      TEXT NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
    expires_at REAL NOT NULL
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

CREATE TABLE workers (
    id          TEXT    NOT NULL PRIMARY KEY,
    host        TEXT    NOT NULL,
    pid         INTEGER NOT NULL,
    queues      TEXT    NOT NULL,   -- JSON array
    concurrency INTEGER NOT NULL,
    started_at  REAL    NOT NULL,
    last_seen   REAL    NOT NULL,
    expires_at  REAL    NOT NULL,
    meta        TEXT    NOT NULL DEFAULT '{}'
);

CREATE TABLE paused_queues (
    queue     TEXT NOT NULL PRIMARY KEY,
    paused_at REAL NOT NULL
);

-- Running jobs cancelled by an admin, in order: workers read the ids past the last they saw.
CREATE TABLE cancels (
    seq    INTEGER NOT NULL PRIMARY KEY,
    job_id TEXT    NOT NULL,
    at     REAL    NOT NULL
);

CREATE TABLE job_deps (
    parent TEXT NOT NULL,
    child  TEXT NOT NULL,
    PRIMARY KEY (parent, child)
) WITHOUT ROWID;

CREATE TABLE limit_groups (
    queue       TEXT NOT NULL,
    key         TEXT NOT NULL,
    tokens      REAL,               -- NULL: never used, a full bucket
    refilled_at REAL,
    PRIMARY KEY (queue, key)
);

CREATE TABLE schedules (
    name        TEXT NOT NULL PRIMARY KEY,
    definition  TEXT NOT NULL,
    since       REAL NOT NULL,
    last_run_at REAL,
    expires_at  REAL NOT NULL
);
