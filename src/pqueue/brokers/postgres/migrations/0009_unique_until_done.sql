-- 0009_unique_until_done: unique keys that are freed when their job completes (ADR 0152).
--
-- A job enqueued with unique_until='done' stores its key with until_done; the ack
-- statements (`ack`, `ack_results`) call unique_done() from RETURNING for a completed job
-- that has a unique key (one boolean test for the others), which deletes the key only
-- while that job still holds it: a key that expired meanwhile and was taken by a newer
-- job stays with the newer job. Keys of jobs that die or are cancelled wait for their TTL.

ALTER TABLE {schema}.unique_keys ADD COLUMN IF NOT EXISTS until_done boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION {schema}.unique_done(q text, k text, job uuid) RETURNS boolean
LANGUAGE sql VOLATILE
AS $$
    WITH freed AS (
        DELETE FROM {schema}.unique_keys
        WHERE queue = q AND key = k AND job_id = job AND until_done
        RETURNING 1
    )
    SELECT count(*) > 0 FROM freed
$$;
