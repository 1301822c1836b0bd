-- 0009_job_bound.sql - a running plan job's proven bound: a lower bound on
-- the TPI of any plan of the space being searched (for a job of several
-- targets, the current one's), written with its progress (docs/jobs.md,
-- "Progress").  NULL: none yet (before every candidate has a bound).  The
-- version trigger of 0004 is recreated to watch it too, so a new bound
-- reaches long-polls and event streams like any other progress.
ALTER TABLE jobs ADD COLUMN bound_s REAL;
DROP TRIGGER jobs_version;
CREATE TRIGGER jobs_version AFTER UPDATE OF state, progress_done, progress_total, best_tpi_s,
	bound_s, error, started_at, finished_at, result ON jobs
BEGIN
	UPDATE jobs SET version = OLD.version + 1 WHERE id = NEW.id;
END;
