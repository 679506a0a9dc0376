-- 0002_unique_until_done: unique keys freed when their job completes (ADR 0152).
--
-- A job enqueued with unique_until='done' takes its key with until_done = 1; the ack
-- (store.ack, the worker's and job.transaction()'s) deletes the key in its own transaction
-- when the key still names the completing job. A constant default: no table rewrite.

ALTER TABLE unique_keys ADD COLUMN until_done INTEGER NOT NULL DEFAULT 0;
