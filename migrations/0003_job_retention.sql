-- 0003_job_retention.sql - finished jobs by when they finished, so the
-- retention sweep (uniapd --job-retention, store_jobs_purge) finds the
-- oldest without reading every job. Queued and running jobs have no
-- finished_at and stay out of the index.
CREATE INDEX jobs_finished ON jobs(finished_at) WHERE finished_at IS NOT NULL;
