-- 0001_init.sql - the first schema of uniapd's store (docs/store.md).
-- Forward only: never edit this file once it has landed; add 0002_*.sql.
-- Times are Unix milliseconds (INTEGER); hashes are SHA-256 digests (32-byte BLOB).

CREATE TABLE tenants (
	id                  INTEGER PRIMARY KEY,
	name                TEXT    NOT NULL UNIQUE,
	key_hash            BLOB    NOT NULL UNIQUE CHECK (length(key_hash) = 32),
	created_at          INTEGER NOT NULL,
	revoked_at          INTEGER,
	max_concurrent_jobs INTEGER NOT NULL CHECK (max_concurrent_jobs >= 0),
	max_stored_bytes    INTEGER NOT NULL CHECK (max_stored_bytes >= 0)
);

CREATE TABLE documents (
	id         INTEGER PRIMARY KEY,
	tenant_id  INTEGER NOT NULL REFERENCES tenants(id),
	kind       TEXT    NOT NULL CHECK (kind IN ('cluster', 'model')),
	name       TEXT    NOT NULL,
	bytes      INTEGER NOT NULL CHECK (bytes >= 0),
	sha256     BLOB    NOT NULL CHECK (length(sha256) = 32),
	created_at INTEGER NOT NULL,
	body       BLOB    NOT NULL
);
-- every document read is scoped by tenant and paged by id; bytes makes the
-- stored-bytes sum of the limit check an index-only scan
CREATE INDEX documents_tenant_id ON documents(tenant_id, id, bytes);

CREATE TABLE jobs (
	id              INTEGER PRIMARY KEY,
	tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
	state           TEXT    NOT NULL
	                CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
	request_sha256  BLOB    NOT NULL CHECK (length(request_sha256) = 32),
	idempotency_key TEXT,
	progress_done   INTEGER NOT NULL DEFAULT 0,
	progress_total  INTEGER NOT NULL DEFAULT 0,
	best_tpi_s      REAL,
	error           TEXT,
	created_at      INTEGER NOT NULL,
	started_at      INTEGER,
	finished_at     INTEGER,
	request         BLOB    NOT NULL,
	result          BLOB
);
-- one job per (tenant, Idempotency-Key); also the look-up of a retried create
CREATE UNIQUE INDEX jobs_idempotency ON jobs(tenant_id, idempotency_key)
	WHERE idempotency_key IS NOT NULL;
-- a tenant's jobs paged by id (the unfiltered list)
CREATE INDEX jobs_tenant_id ON jobs(tenant_id, id);
-- a tenant's jobs by state, paged by id: the state-filtered list and the
-- concurrent-jobs count of the limit check
CREATE INDEX jobs_tenant_state ON jobs(tenant_id, state, id);
-- all jobs in one state, oldest first: recovery and the queue
CREATE INDEX jobs_state ON jobs(state, id);

CREATE TABLE cost_cache (
	key           BLOB    PRIMARY KEY CHECK (length(key) = 32),
	bytes         INTEGER NOT NULL CHECK (bytes >= 0),
	created_at    INTEGER NOT NULL,
	last_used_at  INTEGER NOT NULL,
	last_used_seq INTEGER NOT NULL,
	hits          INTEGER NOT NULL DEFAULT 0,
	body          BLOB    NOT NULL
);
-- eviction takes the least recently used entry first; bytes makes the
-- cache's total size an index-only sum
CREATE INDEX cost_cache_lru ON cost_cache(last_used_seq, bytes);
-- bodies come last in every table so the small columns before them are read
-- without walking a large body's overflow pages
