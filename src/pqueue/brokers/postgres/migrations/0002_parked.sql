-- 0002_parked: idle claimers parked for the hand-off (ADR 0054).
--
-- A waiting worker parks here on each queue it consumes; a single enqueue of a due job
-- leases the job straight to one parked claimer whose broker still listens and notifies
-- that broker's own channel with the lease, so the pick-up needs no claim round trip.
-- Rows live for seconds and mean nothing after a crash: UNLOGGED (no WAL, emptied by
-- crash recovery, not replicated) is exactly that.
CREATE UNLOGGED TABLE {schema}.parked (
    queue          text             NOT NULL,
    worker_id      text             NOT NULL,
    -- The claimer's broker: its hand-off channel, and the backend of its LISTEN
    -- connection (pid and start, so a reused pid is not taken for it).
    channel        text             NOT NULL,
    listener_pid   integer          NOT NULL,
    listener_start timestamptz      NOT NULL,
    lease_for      double precision NOT NULL,
    expires_at     timestamptz      NOT NULL,
    CONSTRAINT parked_pkey PRIMARY KEY (queue, worker_id)
);

-- Unpark one claimer from one queue, or from every queue (queue_name NULL); returns how
-- many parkings ended. The claim statement calls it only when its worker has parked
-- since its last claim: a DELETE written into the statement would cost every claim about
-- 0.08 ms on the project's machine, parked claimer or not (ADR 0054).
CREATE FUNCTION {schema}.unpark(queue_name text, claimer text) RETURNS integer
LANGUAGE sql VOLATILE
AS $$
    WITH gone AS (
        DELETE FROM {schema}.parked
        WHERE worker_id = claimer AND (queue_name IS NULL OR queue = queue_name)
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;

-- Lease the job just stored by enqueue_one (pending, due now) to one parked claimer of
-- its queue, unpark that claimer and notify its broker's channel with the lease as JSON
-- ({job_json}: the row in codec.JOB_COLUMNS order). Only a claimer whose LISTEN backend
-- is still the one it parked with, and only when no older job of the queue is due.
-- Returns whether the job was handed off. A function, so that single enqueues pay for
-- this only when someone is parked (ADR 0054); it runs after the calling statement's
-- insert and, being volatile, sees that row.
CREATE FUNCTION {schema}.hand_off(job uuid, queue_name text, now_at timestamptz) RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    taker record;
    message text;
BEGIN
    SELECT c.worker_id, c.channel, c.lease_for INTO taker
    FROM {schema}.parked AS c
    WHERE c.queue = queue_name
      AND c.expires_at > now_at
      AND octet_length(c.worker_id) <= 200  -- escaped, at most 1,200 bytes of the message
      AND EXISTS (
          SELECT 1 FROM pg_stat_get_activity(c.listener_pid) AS a
          WHERE a.backend_start = c.listener_start
      )
      AND NOT EXISTS (  -- an older due job goes first: it is the claimer's to claim
          SELECT 1 FROM {schema}.jobs AS w
          WHERE w.queue = queue_name
            AND w.status IN ('pending', 'scheduled', 'retry')
            AND w.run_at <= now_at
            AND w.id <> job
      )
    ORDER BY c.expires_at DESC
    LIMIT 1
    FOR UPDATE OF c SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE {schema}.jobs AS j SET
        status = 'active',
        attempt = 1,
        started_at = now_at,
        lease_token = nextval('{schema}.lease_token'),
        lease_expires_at = now_at + make_interval(secs => taker.lease_for),
        worker_id = taker.worker_id
    WHERE j.id = job AND j.status = 'pending'
    RETURNING json_build_object(
        'w', j.worker_id, 't', j.lease_token,
        'e', extract(epoch FROM j.lease_expires_at)::float8, 'j', {job_json}
    )::text INTO message;
    IF message IS NULL THEN
        RETURN false;
    END IF;
    DELETE FROM {schema}.parked WHERE queue = queue_name AND worker_id = taker.worker_id;
    PERFORM pg_notify(taker.channel, message);
    RETURN true;
END
$$;
