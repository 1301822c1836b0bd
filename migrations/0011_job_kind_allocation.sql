-- 0011_job_kind_allocation.sql - a third kind of job: 'allocation' (POST
-- /v1/allocations, docs/allocation.md).  SQLite cannot widen a CHECK
-- constraint in place, so the jobs table is made again with the wider one
-- (sqlite.org/lang_altertable.html, "Making Other Kinds Of Table Schema
-- Changes"): the same columns in the same order, every row copied, then its
-- indexes and the version trigger of 0009 as they were.  No other table
-- refers to jobs.
CREATE TABLE jobs_new (
	id               INTEGER PRIMARY KEY,
	tenant_id        INTEGER NOT NULL REFERENCES tenants(id),
	state            TEXT    NOT NULL
	                 CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
	request_sha256   BLOB    NOT NULL CHECK (length(request_sha256) = 32),
	idempotency_key  TEXT,
	progress_done    INTEGER NOT NULL DEFAULT 0,
	progress_total   INTEGER NOT NULL DEFAULT 0,
	best_tpi_s       REAL,
	error            TEXT,
	created_at       INTEGER NOT NULL,
	started_at       INTEGER,
	finished_at      INTEGER,
	request          BLOB    NOT NULL,
	result           BLOB,
	body_sha256      BLOB    CHECK (body_sha256 IS NULL OR length(body_sha256) = 32),
	version          INTEGER NOT NULL DEFAULT 0,
	kind             TEXT    NOT NULL DEFAULT 'plan' CHECK (kind IN ('plan', 'calibration', 'allocation')),
	lease_owner      TEXT,
	lease_expires_at INTEGER,
	lease_token      INTEGER NOT NULL DEFAULT 0,
	bound_s          REAL,
	ask              TEXT    CHECK (ask IN ('cancel', 'stop'))
);
INSERT INTO jobs_new (id, tenant_id, state, request_sha256, idempotency_key, progress_done, progress_total,
	best_tpi_s, error, created_at, started_at, finished_at, request, result, body_sha256, version, kind,
	lease_owner, lease_expires_at, lease_token, bound_s, ask)
SELECT id, tenant_id, state, request_sha256, idempotency_key, progress_done, progress_total,
	best_tpi_s, error, created_at, started_at, finished_at, request, result, body_sha256, version, kind,
	lease_owner, lease_expires_at, lease_token, bound_s, ask FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE UNIQUE INDEX jobs_idempotency ON jobs(tenant_id, idempotency_key)
	WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_tenant_id ON jobs(tenant_id, id);
CREATE INDEX jobs_tenant_state ON jobs(tenant_id, state, id);
CREATE INDEX jobs_state ON jobs(state, id);
CREATE INDEX jobs_finished ON jobs(finished_at) WHERE finished_at IS NOT NULL;
CREATE TRIGGER jobs_version AFTER UPDATE OF state, progress_done, progress_total, best_tpi_s,
	bound_s, error, started_at, finished_at, result ON jobs
BEGIN
	UPDATE jobs SET version = OLD.version + 1 WHERE id = NEW.id;
END;
