-- 0006_job_lease.sql - one owner per running job (docs/jobs.md, "Leases").
-- A claim writes the claiming uniapd's instance id (lease_owner, 32 hex
-- digits, random per process), when the lease runs out unless renewed
-- (lease_expires_at, Unix ms) and a fencing token that grows by one with
-- every claim (lease_token).  Every write the runner makes about a running
-- job names (id, owner, token); recovery re-queues only running jobs whose
-- lease ran out.  Running rows from before this migration have no lease and
-- count as expired.  No watched column: renewals leave the job's version alone.
ALTER TABLE jobs ADD COLUMN lease_owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_expires_at INTEGER;
ALTER TABLE jobs ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
