-- 0004_job_version.sql - a number per job that grows with every write of its
-- state, progress, times, result or error: the event ids of
-- GET /v1/jobs/{id}/events and what long-polls and event streams watch
-- (docs/jobs.md). A trigger keeps it, so no writer can forget it; the
-- trigger's own update touches no watched column, so it never fires itself.
ALTER TABLE jobs ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER jobs_version AFTER UPDATE OF state, progress_done, progress_total, best_tpi_s,
	error, started_at, finished_at, result ON jobs
BEGIN
	UPDATE jobs SET version = OLD.version + 1 WHERE id = NEW.id;
END;
