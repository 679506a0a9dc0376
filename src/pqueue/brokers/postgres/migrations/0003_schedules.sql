-- 0003_schedules: the schedules workers run (periodic jobs, ADR 0100).
--
-- Each worker that runs schedules upserts their definitions with an expiry on every pass,
-- so operators see them without the app's code and a schedule removed from the code
-- disappears from listings once its registration expires. The row also keeps the newest
-- tick that was enqueued, for the missed-tick policy of workers started after a downtime;
-- rows whose registration expired long ago are deleted by the next registration.
CREATE TABLE {schema}.schedules (
    name        text        NOT NULL,
    definition  jsonb       NOT NULL,
    since       timestamptz NOT NULL,
    last_run_at timestamptz,
    expires_at  timestamptz NOT NULL,
    CONSTRAINT schedules_pkey PRIMARY KEY (name)
);
