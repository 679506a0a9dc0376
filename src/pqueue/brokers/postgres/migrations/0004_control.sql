-- 0004_control: paused queues (ADR 0105).
--
-- A row means: claims and hand-offs skip this queue until it is resumed; enqueues go on.
-- The claim statement reads the table with one primary-key probe per queue it visits (an
-- anti-join on a table that is almost always empty), so queues never paused pay nothing
-- per job. A queue may be paused before it has held any job.
CREATE TABLE {schema}.paused_queues (
    queue     text        NOT NULL,
    paused_at timestamptz NOT NULL,
    CONSTRAINT paused_queues_pkey PRIMARY KEY (queue)
);
