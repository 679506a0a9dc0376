-- 0011_prioritized_delayed: prioritized jobs claimable the moment they are due (ADR 0156).
--
-- A job with a priority that waits to be due (scheduled, retry) sits in jobs_claim, which
-- the claim reads for priority 0 only, and joins jobs_prioritized once `promote` relabels
-- it pending: so it waited for the next promote pass, about a second, where a plain job is
-- claimed the moment it is due. This index is jobs_delayed's part for those jobs: the claim
-- reads the due ones (one probe of an empty range when none is) and sorts them into its
-- legs by priority. Ordered by run_at alone, as jobs_delayed is, so the planner, which sees
-- run_at follow the table's order, prefers it to jobs_delayed for what it holds: a burst
-- of due plain jobs is never read by the prioritized legs. A job at priority 0 is not in
-- it, so queues that set no priority write nothing more per job.
-- Written to run again over its own result (IF NOT EXISTS).
CREATE INDEX IF NOT EXISTS jobs_prioritized_delayed ON {schema}.jobs (run_at)
    WHERE status IN ('scheduled', 'retry') AND priority <> 0;
