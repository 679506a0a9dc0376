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
