-- 0005_job_kind.sql - what a job does: 'plan' (POST /v1/plans) or
-- 'calibration' (POST /v1/clusters/{id}/calibrations).  Both kinds share the
-- table, the queue, the limits and the listing (docs/jobs.md); rows made
-- before this migration are plan jobs, which the default says.
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'plan'
	CHECK (kind IN ('plan', 'calibration'));
