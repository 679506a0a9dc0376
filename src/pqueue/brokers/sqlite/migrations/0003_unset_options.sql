-- 0003_unset_options: which run-time options a job's producer left to its handler (ADR 0157).
--
-- `unset` holds the names, comma-separated (`max_retries,timeout`), of the options the
-- producer did not set: their stored values are the defaults, and the worker that runs
-- the job takes its handler's declaration instead. NULL for a job whose producer set
-- them all, and for every job stored before this migration: their stored values hold, as
-- they did. A nullable column without a default: no table rewrite.

ALTER TABLE jobs ADD COLUMN unset TEXT;
