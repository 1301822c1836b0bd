-- 0010_job_ask.sql - what a client asked of a running job through any uniapd
-- on this database (docs/jobs.md, "Cancel"; docs/scale.md): 'cancel' (DELETE
-- /v1/jobs/{id}) or 'stop' (POST /v1/jobs/{id}/stop); NULL: nothing.  The
-- process that runs the job reads it with each lease renewal.  Not watched
-- by the version trigger: the state change it leads to is.
ALTER TABLE jobs ADD COLUMN ask TEXT CHECK (ask IN ('cancel', 'stop'));
