/*
 * migrations.c - the schema migrations embedded in uniapd, one C string per
 * migrations/NNNN_*.sql file, byte for byte (test_store checks the equality
 * against the files, so the two cannot drift).  When a migration lands, append
 * its text here; never edit an entry once it has landed.
 */
#include "store.h"

const struct store_migration store_migrations[] = {
	{
		1, "0001_init.sql",
		"-- 0001_init.sql - the first schema of uniapd's store (docs/store.md).\n"
		"-- Forward only: never edit this file once it has landed; add 0002_*.sql.\n"
		"-- Times are Unix milliseconds (INTEGER); hashes are SHA-256 digests (32-byte BLOB).\n"
		"\n"
		"CREATE TABLE tenants (\n"
		"\tid                  INTEGER PRIMARY KEY,\n"
		"\tname                TEXT    NOT NULL UNIQUE,\n"
		"\tkey_hash            BLOB    NOT NULL UNIQUE CHECK (length(key_hash) = 32),\n"
		"\tcreated_at          INTEGER NOT NULL,\n"
		"\trevoked_at          INTEGER,\n"
		"\tmax_concurrent_jobs INTEGER NOT NULL CHECK (max_concurrent_jobs >= 0),\n"
		"\tmax_stored_bytes    INTEGER NOT NULL CHECK (max_stored_bytes >= 0)\n"
		");\n"
		"\n"
		"CREATE TABLE documents (\n"
		"\tid         INTEGER PRIMARY KEY,\n"
		"\ttenant_id  INTEGER NOT NULL REFERENCES tenants(id),\n"
		"\tkind       TEXT    NOT NULL CHECK (kind IN ('cluster', 'model')),\n"
		"\tname       TEXT    NOT NULL,\n"
		"\tbytes      INTEGER NOT NULL CHECK (bytes >= 0),\n"
		"\tsha256     BLOB    NOT NULL CHECK (length(sha256) = 32),\n"
		"\tcreated_at INTEGER NOT NULL,\n"
		"\tbody       BLOB    NOT NULL\n"
		");\n"
		"-- every document read is scoped by tenant and paged by id; bytes makes the\n"
		"-- stored-bytes sum of the limit check an index-only scan\n"
		"CREATE INDEX documents_tenant_id ON documents(tenant_id, id, bytes);\n"
		"\n"
		"CREATE TABLE jobs (\n"
		"\tid              INTEGER PRIMARY KEY,\n"
		"\ttenant_id       INTEGER NOT NULL REFERENCES tenants(id),\n"
		"\tstate           TEXT    NOT NULL\n"
		"\t                CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),\n"
		"\trequest_sha256  BLOB    NOT NULL CHECK (length(request_sha256) = 32),\n"
		"\tidempotency_key TEXT,\n"
		"\tprogress_done   INTEGER NOT NULL DEFAULT 0,\n"
		"\tprogress_total  INTEGER NOT NULL DEFAULT 0,\n"
		"\tbest_tpi_s      REAL,\n"
		"\terror           TEXT,\n"
		"\tcreated_at      INTEGER NOT NULL,\n"
		"\tstarted_at      INTEGER,\n"
		"\tfinished_at     INTEGER,\n"
		"\trequest         BLOB    NOT NULL,\n"
		"\tresult          BLOB\n"
		");\n"
		"-- one job per (tenant, Idempotency-Key); also the look-up of a retried create\n"
		"CREATE UNIQUE INDEX jobs_idempotency ON jobs(tenant_id, idempotency_key)\n"
		"\tWHERE idempotency_key IS NOT NULL;\n"
		"-- a tenant's jobs paged by id (the unfiltered list)\n"
		"CREATE INDEX jobs_tenant_id ON jobs(tenant_id, id);\n"
		"-- a tenant's jobs by state, paged by id: the state-filtered list and the\n"
		"-- concurrent-jobs count of the limit check\n"
		"CREATE INDEX jobs_tenant_state ON jobs(tenant_id, state, id);\n"
		"-- all jobs in one state, oldest first: recovery and the queue\n"
		"CREATE INDEX jobs_state ON jobs(state, id);\n"
		"\n"
		"CREATE TABLE cost_cache (\n"
		"\tkey           BLOB    PRIMARY KEY CHECK (length(key) = 32),\n"
		"\tbytes         INTEGER NOT NULL CHECK (bytes >= 0),\n"
		"\tcreated_at    INTEGER NOT NULL,\n"
		"\tlast_used_at  INTEGER NOT NULL,\n"
		"\tlast_used_seq INTEGER NOT NULL,\n"
		"\thits          INTEGER NOT NULL DEFAULT 0,\n"
		"\tbody          BLOB    NOT NULL\n"
		");\n"
		"-- eviction takes the least recently used entry first; bytes makes the\n"
		"-- cache's total size an index-only sum\n"
		"CREATE INDEX cost_cache_lru ON cost_cache(last_used_seq, bytes);\n"
		"-- bodies come last in every table so the small columns before them are read\n"
		"-- without walking a large body's overflow pages\n",
	},
	{
		2, "0002_job_body_hash.sql",
		"-- 0002_job_body_hash.sql - the SHA-256 of the bytes of the request body that\n"
		"-- created a job, so a retry with the same Idempotency-Key and the very same\n"
		"-- bytes finds its job before anything it names is resolved (docs/jobs.md).\n"
		"-- NULL for jobs created before this migration, and for jobs made without HTTP.\n"
		"ALTER TABLE jobs ADD COLUMN body_sha256 BLOB\n"
		"\tCHECK (body_sha256 IS NULL OR length(body_sha256) = 32);\n",
	},
	{
		3, "0003_job_retention.sql",
		"-- 0003_job_retention.sql - finished jobs by when they finished, so the\n"
		"-- retention sweep (uniapd --job-retention, store_jobs_purge) finds the\n"
		"-- oldest without reading every job. Queued and running jobs have no\n"
		"-- finished_at and stay out of the index.\n"
		"CREATE INDEX jobs_finished ON jobs(finished_at) WHERE finished_at IS NOT NULL;\n",
	},
	{
		4, "0004_job_version.sql",
		"-- 0004_job_version.sql - a number per job that grows with every write of its\n"
		"-- state, progress, times, result or error: the event ids of\n"
		"-- GET /v1/jobs/{id}/events and what long-polls and event streams watch\n"
		"-- (docs/jobs.md). A trigger keeps it, so no writer can forget it; the\n"
		"-- trigger's own update touches no watched column, so it never fires itself.\n"
		"ALTER TABLE jobs ADD COLUMN version INTEGER NOT NULL DEFAULT 0;\n"
		"CREATE TRIGGER jobs_version AFTER UPDATE OF state, progress_done, progress_total, best_tpi_s,\n"
		"\terror, started_at, finished_at, result ON jobs\n"
		"BEGIN\n"
		"\tUPDATE jobs SET version = OLD.version + 1 WHERE id = NEW.id;\n"
		"END;\n",
	},
	{
		5, "0005_job_kind.sql",
		"-- 0005_job_kind.sql - what a job does: 'plan' (POST /v1/plans) or\n"
		"-- 'calibration' (POST /v1/clusters/{id}/calibrations).  Both kinds share the\n"
		"-- table, the queue, the limits and the listing (docs/jobs.md); rows made\n"
		"-- before this migration are plan jobs, which the default says.\n"
		"ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'plan'\n"
		"\tCHECK (kind IN ('plan', 'calibration'));\n",
	},
	{
		6, "0006_job_lease.sql",
		"-- 0006_job_lease.sql - one owner per running job (docs/jobs.md, \"Leases\").\n"
		"-- A claim writes the claiming uniapd's instance id (lease_owner, 32 hex\n"
		"-- digits, random per process), when the lease runs out unless renewed\n"
		"-- (lease_expires_at, Unix ms) and a fencing token that grows by one with\n"
		"-- every claim (lease_token).  Every write the runner makes about a running\n"
		"-- job names (id, owner, token); recovery re-queues only running jobs whose\n"
		"-- lease ran out.  Running rows from before this migration have no lease and\n"
		"-- count as expired.  No watched column: renewals leave the job's version alone.\n"
		"ALTER TABLE jobs ADD COLUMN lease_owner TEXT;\n"
		"ALTER TABLE jobs ADD COLUMN lease_expires_at INTEGER;\n"
		"ALTER TABLE jobs ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;\n",
	},
	{
		7, "0007_tenant_served.sql",
		"-- 0007_tenant_served.sql - the order in which tenants were last served: a\n"
		"-- claim of a tenant's job sets its last_served_seq to one more than the\n"
		"-- largest in the table (NULL: not served since this migration), so the queue\n"
		"-- serves tenants in turn (store_job_claim: fewest running jobs first, then\n"
		"-- the tenant served least recently, then its oldest queued job; docs/jobs.md,\n"
		"-- \"Fair scheduling\").  A sequence, not a time: two claims in one millisecond\n"
		"-- still have an order.\n"
		"ALTER TABLE tenants ADD COLUMN last_served_seq INTEGER;\n",
	},
	{
		8, "0008_tenant_job_budget.sql",
		"-- 0008_tenant_job_budget.sql - a tenant's cap on one plan job's worker\n"
		"-- seconds (its candidate solves' wall seconds, all targets together;\n"
		"-- docs/jobs.md, \"Budget\").  0: none of its own, the operator's --job-budget\n"
		"-- holds; above 0: the smaller of the two holds.  Set by `uniapd tenant add\n"
		"-- --max-job-budget S` or `uniapd tenant set NAME --max-job-budget S`.\n"
		"ALTER TABLE tenants ADD COLUMN max_job_worker_s REAL NOT NULL DEFAULT 0 CHECK (max_job_worker_s >= 0);\n",
	},
	{
		9, "0009_job_bound.sql",
		"-- 0009_job_bound.sql - a running plan job's proven bound: a lower bound on\n"
		"-- the TPI of any plan of the space being searched (for a job of several\n"
		"-- targets, the current one's), written with its progress (docs/jobs.md,\n"
		"-- \"Progress\").  NULL: none yet (before every candidate has a bound).  The\n"
		"-- version trigger of 0004 is recreated to watch it too, so a new bound\n"
		"-- reaches long-polls and event streams like any other progress.\n"
		"ALTER TABLE jobs ADD COLUMN bound_s REAL;\n"
		"DROP TRIGGER jobs_version;\n"
		"CREATE TRIGGER jobs_version AFTER UPDATE OF state, progress_done, progress_total, best_tpi_s,\n"
		"\tbound_s, error, started_at, finished_at, result ON jobs\n"
		"BEGIN\n"
		"\tUPDATE jobs SET version = OLD.version + 1 WHERE id = NEW.id;\n"
		"END;\n",
	},
	{
		10, "0010_job_ask.sql",
		"-- 0010_job_ask.sql - what a client asked of a running job through any uniapd\n"
		"-- on this database (docs/jobs.md, \"Cancel\"; docs/scale.md): 'cancel' (DELETE\n"
		"-- /v1/jobs/{id}) or 'stop' (POST /v1/jobs/{id}/stop); NULL: nothing.  The\n"
		"-- process that runs the job reads it with each lease renewal.  Not watched\n"
		"-- by the version trigger: the state change it leads to is.\n"
		"ALTER TABLE jobs ADD COLUMN ask TEXT CHECK (ask IN ('cancel', 'stop'));\n",
	},
	{
		11, "0011_job_kind_allocation.sql",
		"-- 0011_job_kind_allocation.sql - a third kind of job: 'allocation' (POST\n"
		"-- /v1/allocations, docs/allocation.md).  SQLite cannot widen a CHECK\n"
		"-- constraint in place, so the jobs table is made again with the wider one\n"
		"-- (sqlite.org/lang_altertable.html, \"Making Other Kinds Of Table Schema\n"
		"-- Changes\"): the same columns in the same order, every row copied, then its\n"
		"-- indexes and the version trigger of 0009 as they were.  No other table\n"
		"-- refers to jobs.\n"
		"CREATE TABLE jobs_new (\n"
		"\tid               INTEGER PRIMARY KEY,\n"
		"\ttenant_id        INTEGER NOT NULL REFERENCES tenants(id),\n"
		"\tstate            TEXT    NOT NULL\n"
		"\t                 CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),\n"
		"\trequest_sha256   BLOB    NOT NULL CHECK (length(request_sha256) = 32),\n"
		"\tidempotency_key  TEXT,\n"
		"\tprogress_done    INTEGER NOT NULL DEFAULT 0,\n"
		"\tprogress_total   INTEGER NOT NULL DEFAULT 0,\n"
		"\tbest_tpi_s       REAL,\n"
		"\terror            TEXT,\n"
		"\tcreated_at       INTEGER NOT NULL,\n"
		"\tstarted_at       INTEGER,\n"
		"\tfinished_at      INTEGER,\n"
		"\trequest          BLOB    NOT NULL,\n"
		"\tresult           BLOB,\n"
		"\tbody_sha256      BLOB    CHECK (body_sha256 IS NULL OR length(body_sha256) = 32),\n"
		"\tversion          INTEGER NOT NULL DEFAULT 0,\n"
		"\tkind             TEXT    NOT NULL DEFAULT 'plan' CHECK (kind IN ('plan', 'calibration', 'allocation')),\n"
		"\tlease_owner      TEXT,\n"
		"\tlease_expires_at INTEGER,\n"
		"\tlease_token      INTEGER NOT NULL DEFAULT 0,\n"
		"\tbound_s          REAL,\n"
		"\task              TEXT    CHECK (ask IN ('cancel', 'stop'))\n"
		");\n"
		"INSERT INTO jobs_new (id, tenant_id, state, request_sha256, idempotency_key, progress_done, progress_total,\n"
		"\tbest_tpi_s, error, created_at, started_at, finished_at, request, result, body_sha256, version, kind,\n"
		"\tlease_owner, lease_expires_at, lease_token, bound_s, ask)\n"
		"SELECT id, tenant_id, state, request_sha256, idempotency_key, progress_done, progress_total,\n"
		"\tbest_tpi_s, error, created_at, started_at, finished_at, request, result, body_sha256, version, kind,\n"
		"\tlease_owner, lease_expires_at, lease_token, bound_s, ask FROM jobs;\n"
		"DROP TABLE jobs;\n"
		"ALTER TABLE jobs_new RENAME TO jobs;\n"
		"CREATE UNIQUE INDEX jobs_idempotency ON jobs(tenant_id, idempotency_key)\n"
		"\tWHERE idempotency_key IS NOT NULL;\n"
		"CREATE INDEX jobs_tenant_id ON jobs(tenant_id, id);\n"
		"CREATE INDEX jobs_tenant_state ON jobs(tenant_id, state, id);\n"
		"CREATE INDEX jobs_state ON jobs(state, id);\n"
		"CREATE INDEX jobs_finished ON jobs(finished_at) WHERE finished_at IS NOT NULL;\n"
		"CREATE TRIGGER jobs_version AFTER UPDATE OF state, progress_done, progress_total, best_tpi_s,\n"
		"\tbound_s, error, started_at, finished_at, result ON jobs\n"
		"BEGIN\n"
		"\tUPDATE jobs SET version = OLD.version + 1 WHERE id = NEW.id;\n"
		"END;\n",
	},
};

const size_t store_migrations_count = sizeof(store_migrations) / sizeof(store_migrations[0]);

/* migrations/postgres/NNNN_*.sql: the PostgreSQL backend's (server/store_pg.c) */
const struct store_migration store_pg_migrations[] = {
	{
		1, "0001_init.sql",
		"-- postgres/0001_init.sql - the store's schema on PostgreSQL (docs/store.md,\n"
		"-- docs/scale.md): the SQLite schema of migrations 0001-0010 in one file, as\n"
		"-- PostgreSQL spells it.  Forward only, like the SQLite files: never edit\n"
		"-- this file once it has landed; add postgres/0002_*.sql.\n"
		"-- Times are Unix milliseconds (BIGINT); hashes are SHA-256 digests (32-byte BYTEA).\n"
		"\n"
		"CREATE TABLE tenants (\n"
		"\tid                  BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n"
		"\tname                TEXT    NOT NULL UNIQUE,\n"
		"\tkey_hash            BYTEA   NOT NULL UNIQUE CHECK (length(key_hash) = 32),\n"
		"\tcreated_at          BIGINT  NOT NULL,\n"
		"\trevoked_at          BIGINT,\n"
		"\tmax_concurrent_jobs BIGINT  NOT NULL CHECK (max_concurrent_jobs >= 0),\n"
		"\tmax_stored_bytes    BIGINT  NOT NULL CHECK (max_stored_bytes >= 0),\n"
		"\tlast_served_seq     BIGINT,\n"
		"\tmax_job_worker_s    DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (max_job_worker_s >= 0)\n"
		");\n"
		"\n"
		"CREATE TABLE documents (\n"
		"\tid         BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n"
		"\ttenant_id  BIGINT  NOT NULL REFERENCES tenants(id),\n"
		"\tkind       TEXT    NOT NULL CHECK (kind IN ('cluster', 'model')),\n"
		"\tname       TEXT    NOT NULL,\n"
		"\tbytes      BIGINT  NOT NULL CHECK (bytes >= 0),\n"
		"\tsha256     BYTEA   NOT NULL CHECK (length(sha256) = 32),\n"
		"\tcreated_at BIGINT  NOT NULL,\n"
		"\tbody       BYTEA   NOT NULL\n"
		");\n"
		"CREATE INDEX documents_tenant_id ON documents(tenant_id, id, bytes);\n"
		"\n"
		"CREATE TABLE jobs (\n"
		"\tid               BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n"
		"\ttenant_id        BIGINT  NOT NULL REFERENCES tenants(id),\n"
		"\tkind             TEXT    NOT NULL DEFAULT 'plan' CHECK (kind IN ('plan', 'calibration')),\n"
		"\tstate            TEXT    NOT NULL\n"
		"\t                 CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),\n"
		"\trequest_sha256   BYTEA   NOT NULL CHECK (length(request_sha256) = 32),\n"
		"\tbody_sha256      BYTEA   CHECK (body_sha256 IS NULL OR length(body_sha256) = 32),\n"
		"\tidempotency_key  TEXT,\n"
		"\tprogress_done    BIGINT  NOT NULL DEFAULT 0,\n"
		"\tprogress_total   BIGINT  NOT NULL DEFAULT 0,\n"
		"\tbest_tpi_s       DOUBLE PRECISION,\n"
		"\tbound_s          DOUBLE PRECISION,\n"
		"\terror            TEXT,\n"
		"\tcreated_at       BIGINT  NOT NULL,\n"
		"\tstarted_at       BIGINT,\n"
		"\tfinished_at      BIGINT,\n"
		"\tversion          BIGINT  NOT NULL DEFAULT 0,\n"
		"\tlease_owner      TEXT,\n"
		"\tlease_expires_at BIGINT,\n"
		"\tlease_token      BIGINT  NOT NULL DEFAULT 0,\n"
		"\task              TEXT    CHECK (ask IN ('cancel', 'stop')),\n"
		"\trequest          BYTEA   NOT NULL,\n"
		"\tresult           BYTEA\n"
		");\n"
		"CREATE UNIQUE INDEX jobs_idempotency ON jobs(tenant_id, idempotency_key)\n"
		"\tWHERE idempotency_key IS NOT NULL;\n"
		"CREATE INDEX jobs_tenant_id ON jobs(tenant_id, id);\n"
		"CREATE INDEX jobs_tenant_state ON jobs(tenant_id, state, id);\n"
		"CREATE INDEX jobs_state ON jobs(state, id);\n"
		"CREATE INDEX jobs_finished ON jobs(finished_at) WHERE finished_at IS NOT NULL;\n"
		"\n"
		"-- version grows with every write a watcher sees (SQLite's trigger jobs_version):\n"
		"-- a BEFORE trigger here, so the row is written once\n"
		"CREATE FUNCTION jobs_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$\n"
		"BEGIN\n"
		"\tIF (NEW.state, NEW.progress_done, NEW.progress_total, NEW.best_tpi_s, NEW.bound_s, NEW.error,\n"
		"\t    NEW.started_at, NEW.finished_at, NEW.result) IS DISTINCT FROM\n"
		"\t   (OLD.state, OLD.progress_done, OLD.progress_total, OLD.best_tpi_s, OLD.bound_s, OLD.error,\n"
		"\t    OLD.started_at, OLD.finished_at, OLD.result) THEN\n"
		"\t\tNEW.version := OLD.version + 1;\n"
		"\tEND IF;\n"
		"\tRETURN NEW;\n"
		"END $$;\n"
		"CREATE TRIGGER jobs_version BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION jobs_version_bump();\n"
		"\n"
		"CREATE TABLE cost_cache (\n"
		"\tkey           BYTEA   PRIMARY KEY CHECK (length(key) = 32),\n"
		"\tbytes         BIGINT  NOT NULL CHECK (bytes >= 0),\n"
		"\tcreated_at    BIGINT  NOT NULL,\n"
		"\tlast_used_at  BIGINT  NOT NULL,\n"
		"\tlast_used_seq BIGINT  NOT NULL,\n"
		"\thits          BIGINT  NOT NULL DEFAULT 0,\n"
		"\tbody          BYTEA   NOT NULL\n"
		");\n"
		"CREATE INDEX cost_cache_lru ON cost_cache(last_used_seq, bytes);\n"
		"CREATE SEQUENCE cost_cache_seq;\n"
		"CREATE SEQUENCE tenant_served_seq;\n",
	},
	{
		2, "0002_job_kind_allocation.sql",
		"-- postgres/0002_job_kind_allocation.sql - a third kind of job: 'allocation'\n"
		"-- (POST /v1/allocations, docs/allocation.md), as SQLite's 0011 allows it.\n"
		"-- The column's CHECK has PostgreSQL's default name for it.\n"
		"ALTER TABLE jobs DROP CONSTRAINT jobs_kind_check;\n"
		"ALTER TABLE jobs ADD CONSTRAINT jobs_kind_check CHECK (kind IN ('plan', 'calibration', 'allocation'));\n",
	},
};

const size_t store_pg_migrations_count = sizeof(store_pg_migrations) / sizeof(store_pg_migrations[0]);
