-- postgres/0003_job_units.sql - one plan job solved by several replicas
-- (docs/scale.md, "One job across replicas"): a running job's candidates are
-- units that any replica may claim under a lease and mark done with their
-- facts; the job's owner opens its current target run to helpers of its
-- build.  A unit is its build's: another build's facts are never taken (its
-- cost model may differ).  Both go with their job.  PostgreSQL only: SQLite
-- is one machine.
CREATE TABLE job_units (
	job_id           BIGINT  NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
	run              INTEGER NOT NULL CHECK (run >= 0),
	pp               INTEGER NOT NULL CHECK (pp >= 1),
	vs               INTEGER NOT NULL CHECK (vs >= 1),
	microbatches     BIGINT  NOT NULL CHECK (microbatches >= 1),
	build            TEXT    NOT NULL,
	owner            TEXT,
	lease_expires_at BIGINT,
	tpi_s            DOUBLE PRECISION,
	facts            BYTEA,
	PRIMARY KEY (job_id, run, pp, vs, microbatches)
);
CREATE INDEX job_units_owner ON job_units(owner) WHERE owner IS NOT NULL;

CREATE TABLE job_shares (
	job_id     BIGINT  PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
	run        INTEGER NOT NULL CHECK (run >= 0),
	build      TEXT    NOT NULL,
	open_since BIGINT  NOT NULL
);
