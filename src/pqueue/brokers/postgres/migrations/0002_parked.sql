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
-- many parkings ended. The statements that unpark (enqueue_one after a hand-off, claim
-- when its worker has parked) call it only when there is something to end: a DELETE
-- written into those statements would cost every call about 0.08 ms on the project's
-- machine, parked claimer or not (ADR 0054).
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
