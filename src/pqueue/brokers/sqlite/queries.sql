-- Every statement the SQLite broker runs, as named blocks loaded once by sql.py.
--
-- A block starts with `-- name: <name>` and a comment saying what it does. Statements are
-- small: an operation runs several of them inside one BEGIN IMMEDIATE transaction on a
-- local file, where a statement costs microseconds, not a network round trip (ADR 0147).
--   {job_columns}  the columns a Job is decoded from (pqueue.brokers.job_columns), then limit_key,
--                  priority, unset
-- Parameters are sqlite3 named placeholders (:name). :now is the broker's time in epoch
-- seconds, read once per transaction. Id lists arrive as JSON arrays (:ids) read with
-- json_each.


-- name: next_counter
-- Take :n values of a counter (job_seq, lease_token, cancel_seq); returns the last one.
UPDATE counters SET value = value + :n WHERE name = :name RETURNING value;


-- name: existing_ids
-- Which of these ids (a JSON array) are already stored.
SELECT id FROM jobs WHERE id IN (SELECT value FROM json_each(:ids));


-- name: unique_holder
-- The job holding a unique key of a queue, and until when.
SELECT job_id, expires_at FROM unique_keys WHERE queue = :queue AND key = :key;


-- name: unique_take
-- Take (or take over an expired) unique key for a job; :until_done 1 frees it when the job
-- completes (unique_until='done', ADR 0152).
INSERT INTO unique_keys (queue, key, job_id, expires_at, until_done)
VALUES (:queue, :key, :job_id, :expires_at, :until_done)
ON CONFLICT (queue, key) DO UPDATE SET
    job_id = excluded.job_id, expires_at = excluded.expires_at, until_done = excluded.until_done;


-- name: unique_done
-- Free the unique keys (a JSON array of [queue, key, job id]) of completed jobs that hold
-- them until done, each only while it still names that job (ADR 0152).
DELETE FROM unique_keys
WHERE until_done = 1 AND EXISTS (
    SELECT 1 FROM json_each(:held) AS h
    WHERE unique_keys.queue = json_extract(h.value, '$[0]')
      AND unique_keys.key = json_extract(h.value, '$[1]')
      AND unique_keys.job_id = json_extract(h.value, '$[2]')
);


-- name: insert_job
-- Store one new job (the caller has checked its id is free).
INSERT INTO jobs (
    id, seq, priority, status, queue, type, payload, run_at, created_at, max_retries,
    max_recoveries, timeout, unique_key, idempotency_key, meta, depends_on, on_parent_failure,
    parents_left, limit_key, limit_rate, limit_burst, limit_concurrency, unset
) VALUES (
    :id, :seq, :priority, :status, :queue, :type, :payload, :run_at, :now, :max_retries,
    :max_recoveries, :timeout, :unique_key, :idempotency_key, :meta, :depends_on,
    :on_parent_failure, :parents_left, :limit_key, :limit_rate, :limit_burst, :limit_concurrency,
    :unset
);


-- name: queue_seen
-- Remember a queue that has held a job.
INSERT INTO queues (name, created_at) VALUES (:queue, :now) ON CONFLICT (name) DO NOTHING;


-- name: limit_group_seen
-- Make the row of a limit group (a full bucket until first used).
INSERT INTO limit_groups (queue, key) VALUES (:queue, :key) ON CONFLICT (queue, key) DO NOTHING;


-- name: paused
-- Every paused queue.
SELECT queue FROM paused_queues ORDER BY queue;


-- name: claim_due
-- Due unlimited jobs of one queue in claim order: priority (higher first), due time,
-- enqueue order. Scheduled and retry jobs count once due: promote only relabels.
SELECT id FROM jobs
WHERE queue = :queue AND status IN ('pending', 'scheduled', 'retry') AND limit_key IS NULL
  AND run_at <= :now
ORDER BY priority DESC, run_at, seq
LIMIT :limit;


-- name: limited_due
-- Due limited jobs of one queue in claim order, with their limits (ADR 0110).
SELECT id, limit_key, limit_rate, limit_burst, limit_concurrency FROM jobs
WHERE queue = :queue AND status IN ('pending', 'scheduled', 'retry') AND limit_key IS NOT NULL
  AND run_at <= :now
ORDER BY priority DESC, run_at, seq
LIMIT :limit;


-- name: limited_active
-- Active jobs per limit group of one queue.
SELECT limit_key, count(*) FROM jobs
WHERE queue = :queue AND status = 'active' AND limit_key IS NOT NULL
GROUP BY limit_key;


-- name: limit_buckets
-- The token buckets of one queue's limit groups.
SELECT key, tokens, refilled_at FROM limit_groups WHERE queue = :queue;


-- name: limit_spend
-- Store a group's bucket after a claim spent tokens.
UPDATE limit_groups SET tokens = :tokens, refilled_at = :now WHERE queue = :queue AND key = :key;


-- name: lease
-- Lease the jobs :ids (a JSON array, in claim order) to a worker in one statement: the
-- i-th gets token :token + i. Returns the leases and the jobs, in no order.
UPDATE jobs SET
    status = 'active', attempt = attempt + 1, started_at = :now, lease_token = :token + p.key,
    lease_expires_at = :expires_at, worker_id = :worker_id
FROM json_each(:ids) AS p
WHERE jobs.id = p.value
RETURNING lease_token, lease_expires_at, {job_columns};


-- name: lease_tokens
-- The current lease token of each job in :ids (a JSON array), read before an ack that
-- names one job twice (pqueue.brokers.fencing).
SELECT id, lease_token FROM jobs WHERE id IN (SELECT value FROM json_each(:ids));


-- name: ack
-- Complete leased jobs with their results in one statement: :leases is a JSON array of
-- [id, token, result JSON text or null]. Returns each completed job's id, whether it has
-- children to settle, and its queue and unique key (to free a key held until done).
UPDATE jobs SET
    status = 'completed', finished_at = :now, result = json_extract(p.value, '$[2]'),
    lease_token = NULL, lease_expires_at = NULL
FROM json_each(:leases) AS p
WHERE jobs.id = json_extract(p.value, '$[0]') AND jobs.lease_token = json_extract(p.value, '$[1]')
RETURNING id, has_children, queue, unique_key;


-- name: leased
-- A leased job's error history and attempt (no row: the lease is lost).
SELECT errors, attempt, run_at, has_children FROM jobs WHERE id = :id AND lease_token = :token;


-- name: fail_dead
-- A leased job failed for good: dead, with its new error history.
UPDATE jobs SET
    status = 'dead', finished_at = :now, errors = :errors, lease_token = NULL, lease_expires_at = NULL
WHERE id = :id;


-- name: fail_retry
-- A leased job failed and runs again at :run_at, at the end of the line.
UPDATE jobs SET
    status = 'retry', run_at = :run_at, seq = :seq, errors = :errors, lease_token = NULL,
    lease_expires_at = NULL
WHERE id = :id;


-- name: put_back
-- Return a leased job to its line unrun (release, recovery): the cut-short run does not count.
UPDATE jobs SET
    status = :status, attempt = attempt - 1, run_at = :run_at, errors = :errors,
    recoveries = recoveries + :recovered, lease_token = NULL, lease_expires_at = NULL
WHERE id = :id;


-- name: extend
-- Push a lease's deadline.
UPDATE jobs SET lease_expires_at = :expires_at WHERE id = :id AND lease_token = :token RETURNING id;


-- name: expired
-- Active jobs whose lease expired, oldest deadline first.
SELECT id, queue, recoveries, max_recoveries, errors, attempt, run_at, has_children FROM jobs
WHERE status = 'active' AND lease_expires_at <= :now
ORDER BY lease_expires_at
LIMIT :limit;


-- name: recover_dead
-- A job whose lease expired too often: dead.
UPDATE jobs SET
    status = 'dead', finished_at = :now, errors = :errors, recoveries = recoveries + 1,
    lease_token = NULL, lease_expires_at = NULL
WHERE id = :id;


-- name: promote
-- Relabel due scheduled/retry jobs pending.
UPDATE jobs SET status = 'pending' WHERE id IN (
    SELECT id FROM jobs WHERE status IN ('scheduled', 'retry') AND run_at <= :now
    ORDER BY run_at LIMIT :limit
);


-- name: earliest
-- The earliest due time of an unlimited waiting job in these queues (a JSON array), paused
-- queues left out.
SELECT min(run_at) FROM jobs
WHERE queue IN (SELECT value FROM json_each(:queues))
  AND queue NOT IN (SELECT queue FROM paused_queues)
  AND status IN ('pending', 'scheduled', 'retry') AND limit_key IS NULL;


-- name: data_version
-- Changes whenever another connection commits to the file (the wake-up poller's probe).
PRAGMA data_version;


-- name: idempotency_get
-- The holder of an idempotency key.
SELECT owner, state, expires_at FROM idempotency_keys WHERE key = :key;


-- name: idempotency_put
-- Hold or mark an idempotency key.
INSERT INTO idempotency_keys (key, owner, state, expires_at) VALUES (:key, :owner, :state, :expires_at)
ON CONFLICT (key) DO UPDATE SET
    owner = excluded.owner, state = excluded.state, expires_at = excluded.expires_at;


-- name: idempotency_release
-- Let go of a key held in flight by this owner.
DELETE FROM idempotency_keys WHERE key = :key AND owner = :owner AND state = 'in_flight';


-- name: get_job
-- One job by id.
SELECT {job_columns} FROM jobs WHERE id = :id;


-- name: job_status
-- One job's status and queue.
SELECT status, queue, has_children, attempt, errors FROM jobs WHERE id = :id;


-- name: list_jobs
-- One page of jobs in a status (optionally one queue and/or one type), oldest first; one
-- extra row tells whether another page follows.
SELECT {job_columns} FROM jobs
WHERE status = :status AND (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
ORDER BY created_at, id
LIMIT :limit + 1 OFFSET :offset;


-- name: scan_jobs
-- One page of the jobs a scan matches, in rowid order after :after.
SELECT rowid, {job_columns} FROM jobs
WHERE rowid > :after AND status IN (SELECT value FROM json_each(:statuses))
  AND (:queue IS NULL OR queue = :queue)
  AND (:since IS NULL OR coalesce(finished_at, created_at) >= :since)
ORDER BY rowid
LIMIT :limit;


-- name: counts
-- Jobs per queue and status; queues without jobs appear with a NULL status.
SELECT q.name, c.status, c.n FROM queues AS q
LEFT JOIN (SELECT queue, status, count(*) AS n FROM jobs GROUP BY queue, status) AS c
    ON c.queue = q.name;


-- name: activity
-- Per queue: seconds since the oldest due waiting job became due, and the jobs finished
-- (completed or dead) within the window.
SELECT q.name,
    (SELECT :now - min(j.run_at) FROM jobs AS j
     WHERE j.queue = q.name AND j.status IN ('pending', 'scheduled', 'retry') AND j.run_at <= :now),
    (SELECT count(*) FROM jobs AS j
     WHERE j.queue = q.name AND j.status IN ('completed', 'dead') AND j.finished_at > :now - :window)
FROM queues AS q ORDER BY q.name;


-- name: limit_groups
-- Every limit group with a waiting or active job, with the limits of its latest job.
SELECT j.queue, j.limit_key,
       sum(j.status = 'active'), sum(j.status <> 'active'),
       (SELECT limit_concurrency FROM jobs AS l WHERE l.queue = j.queue AND l.limit_key = j.limit_key
        ORDER BY l.seq DESC LIMIT 1),
       (SELECT limit_rate FROM jobs AS l WHERE l.queue = j.queue AND l.limit_key = j.limit_key
        ORDER BY l.seq DESC LIMIT 1),
       (SELECT limit_burst FROM jobs AS l WHERE l.queue = j.queue AND l.limit_key = j.limit_key
        ORDER BY l.seq DESC LIMIT 1),
       g.tokens, g.refilled_at
FROM jobs AS j LEFT JOIN limit_groups AS g ON g.queue = j.queue AND g.key = j.limit_key
WHERE j.limit_key IS NOT NULL AND j.status IN ('pending', 'scheduled', 'retry', 'active')
GROUP BY j.queue, j.limit_key
ORDER BY 1, 2;


-- name: list_queues
-- Every queue that has held a job.
SELECT name FROM queues ORDER BY name;


-- name: finish
-- End a job in a final status (cancel, cancel_active, a parent's failure).
UPDATE jobs SET
    status = :status, finished_at = :now, errors = :errors, lease_token = NULL,
    lease_expires_at = NULL, parents_left = NULL
WHERE id = :id;


-- name: dead_ids
-- Dead jobs (these ids and/or this queue, or all), in line order.
SELECT id, queue FROM jobs
WHERE status = 'dead' AND (:queue IS NULL OR queue = :queue)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:older_than IS NULL OR finished_at <= :now - :older_than)
ORDER BY seq;


-- name: requeue
-- A dead job back to pending with a fresh budget, at the end of the line.
UPDATE jobs SET
    status = 'pending', attempt = 0, recoveries = 0, finished_at = NULL, run_at = :now, seq = :seq
WHERE id = :id;


-- name: delete_job
-- Delete one job and its edges as a child.
DELETE FROM jobs WHERE id = :id;


-- name: prune_jobs
-- One bounded batch of finished jobs past the retention window.
DELETE FROM jobs WHERE id IN (
    SELECT id FROM jobs
    WHERE status IN ('completed', 'cancelled') AND finished_at <= :now - :retention
    ORDER BY finished_at LIMIT :limit
);


-- name: prune_edges
-- Edges whose child is gone.
DELETE FROM job_deps WHERE child NOT IN (SELECT id FROM jobs);


-- name: prune_keys
-- Expired unique keys, idempotency keys, workers and old cancel announcements.
DELETE FROM unique_keys WHERE expires_at <= :now;


-- name: prune_idempotency
DELETE FROM idempotency_keys WHERE expires_at <= :now;


-- name: prune_workers
DELETE FROM workers WHERE expires_at <= :now;


-- name: prune_cancels
DELETE FROM cancels WHERE at <= :now - 3600;


-- name: register_worker
-- Record or refresh a live worker until now + ttl.
INSERT INTO workers (id, host, pid, queues, concurrency, started_at, last_seen, expires_at, meta)
VALUES (:id, :host, :pid, :queues, :concurrency, :started_at, :now, :now + :ttl, :meta)
ON CONFLICT (id) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, queues = excluded.queues,
    concurrency = excluded.concurrency, started_at = excluded.started_at,
    last_seen = excluded.last_seen, expires_at = excluded.expires_at, meta = excluded.meta;


-- name: unregister_worker
-- Forget a worker that stopped cleanly.
DELETE FROM workers WHERE id = :id;


-- name: list_workers
-- Workers seen within their ttl.
SELECT id, host, pid, queues, concurrency, started_at, last_seen, meta
FROM workers WHERE expires_at > :now ORDER BY id;


-- name: pause
-- Pause a queue; returns a row when it was running.
INSERT INTO paused_queues (queue, paused_at) VALUES (:queue, :now) ON CONFLICT (queue) DO NOTHING
RETURNING queue;


-- name: resume
-- Resume a queue; returns a row when it was paused.
DELETE FROM paused_queues WHERE queue = :queue RETURNING queue;


-- name: announce_cancel
-- Announce a job cancelled while running, for the workers' cancel inboxes.
INSERT INTO cancels (seq, job_id, at) VALUES (:seq, :job_id, :now);


-- name: cancels_since
-- Cancel announcements after the last one a broker read.
SELECT seq, job_id FROM cancels WHERE seq > :after ORDER BY seq;


-- name: last_cancel
-- The newest cancel announcement (where a new inbox starts reading).
SELECT coalesce(max(seq), 0) FROM cancels;


-- name: parents
-- Stored parents of a flow, with their status and result.
SELECT id, status, result FROM jobs WHERE id IN (SELECT value FROM json_each(:ids));


-- name: link
-- Record one dependency edge and mark the parent as having children.
INSERT INTO job_deps (parent, child) VALUES (:parent, :child) ON CONFLICT DO NOTHING;


-- name: mark_parent
UPDATE jobs SET has_children = 1 WHERE id = :id;


-- name: children
-- The dependants of a finished job still waiting for it.
SELECT j.id, j.on_parent_failure, j.parents_left, j.parent_results, j.run_at, j.queue, j.attempt, j.errors
FROM job_deps AS d JOIN jobs AS j ON j.id = d.child
WHERE d.parent = :parent AND j.status = 'waiting';


-- name: child_settled
-- A waiting child told one parent completed.
UPDATE jobs SET parents_left = :parents_left, parent_results = :parent_results WHERE id = :id;


-- name: child_released
-- A waiting child whose last parent completed: due now (or at its run_at), end of the line.
UPDATE jobs SET
    status = :status, parents_left = NULL, parent_results = :parent_results, run_at = :run_at, seq = :seq
WHERE id = :id;


-- name: register_schedule
-- Record or refresh a schedule until :expires_at, keeping its last run.
INSERT INTO schedules (name, definition, since, expires_at) VALUES (:name, :definition, :now, :expires_at)
ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, expires_at = excluded.expires_at
RETURNING coalesce(last_run_at, since);


-- name: drop_old_schedules
DELETE FROM schedules WHERE expires_at <= :now - :keep;


-- name: mark_schedule_run
UPDATE schedules SET last_run_at = :tick WHERE name = :name AND (last_run_at IS NULL OR last_run_at < :tick);


-- name: list_schedules
SELECT definition, last_run_at FROM schedules WHERE expires_at > :now ORDER BY name;


-- name: schema_version
-- The newest migration applied (fails if the file was never migrated).
SELECT max(version) FROM migrations;


-- name: migrate_bootstrap
CREATE TABLE IF NOT EXISTS migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at REAL    NOT NULL
);


-- name: migrate_applied
SELECT version FROM migrations ORDER BY version;


-- name: migrate_record
INSERT INTO migrations (version, name, applied_at) VALUES (:version, :name, :now);
