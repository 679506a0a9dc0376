-- 0007_token_only_active: a lease token is set only while its job is active (ADR 0131).
--
-- jobs_lease_check already says an active job has a token; this says the converse, so a
-- current (id, token) pair names an active job by itself. ack, fail, release and extend
-- then match on id and token alone and read each job through jobs_pkey: with a status
-- test beside them the planner may read every active lease through jobs_leases instead,
-- which costs an ack in proportion to the jobs running everywhere, not to its own batch.
-- Every statement that takes a job out of 'active' already clears its token; the UPDATE
-- repairs any row an earlier bug could have left, so the check validates.
-- Written to run again over its own result.
UPDATE {schema}.jobs SET lease_token = NULL
WHERE lease_token IS NOT NULL AND status <> 'active';

ALTER TABLE {schema}.jobs DROP CONSTRAINT IF EXISTS jobs_token_only_active;
ALTER TABLE {schema}.jobs
    ADD CONSTRAINT jobs_token_only_active CHECK (lease_token IS NULL OR status = 'active');
