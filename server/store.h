/*
 * store.h - uniapd's storage layer: tenants and their API keys, uploaded
 * documents, plan and calibration jobs, the cost-matrix cache (docs/store.md).
 * Two backends behind one interface (server/store_backend.h): SQLite, one
 * embedded database file (the default), and PostgreSQL, one server many
 * uniapd replicas share (docs/scale.md).
 *
 * A struct store owns a small pool of connections to one database; any
 * thread may call any function, each call takes one connection for its own
 * use and gives it back before returning.  Every write is one transaction
 * that serialises with the writes it could race (SQLite: BEGIN IMMEDIATE;
 * PostgreSQL: row and advisory locks), so a limit check and the insert it
 * guards are atomic, across replicas too.  Every
 * function returns a uniap_code and fills the caller-owned struct uniap_err
 * (may be NULL).  Output structs are written only on UNIAP_OK.
 *
 * Never: hold a transaction open across a call, build SQL from values (every
 * value is bound), store an API key in plain text, or include HTTP or cJSON.
 */
#ifndef UNIAP_STORE_H
#define UNIAP_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* ---- migrations (server/migrations.c; equal to the migrations/ files byte for byte) ---- */

struct store_migration {
	int version;         /* NNNN of the file name, 1, 2, ... in order */
	const char *name;    /* the file name, "0001_init.sql" */
	const char *sql;     /* the file's text */
};

extern const struct store_migration store_migrations[];
extern const size_t store_migrations_count;

/* The PostgreSQL backend's, from migrations/postgres/ (its own numbering). */
extern const struct store_migration store_pg_migrations[];
extern const size_t store_pg_migrations_count;

/* ---- hashing ---- */

#define STORE_SHA256_BYTES 32

/* SHA-256 (FIPS 180-4) of data[0..bytes) into out. Borrows both. */
void store_sha256(const void *data, size_t bytes, unsigned char out[STORE_SHA256_BYTES]);

/* ---- open / close ---- */

/* Process-wide SQLite settings (memory statistics off); call once in main()
 * before any thread or store exists.  Optional: stores work without it. */
void store_global_init(void);

#define STORE_POOL_MAX 16         /* cap on connections per store */
#define STORE_BUSY_TIMEOUT_MS 5000

struct store;

struct store_opts {
	int pool_size;              /* 1..STORE_POOL_MAX connections; 0 = 4 */
	int64_t cache_max_bytes;    /* cap on the cost cache's bytes; 0 = 256 MiB */
	int64_t max_queued_jobs;    /* cap on queued jobs of all tenants; 0 = STORE_DEFAULT_MAX_QUEUED */
	int64_t max_stored_jobs;    /* cap on one tenant's stored jobs, any state; 0 = STORE_DEFAULT_MAX_STORED_JOBS */
	int64_t max_db_bytes;       /* cap on the database file (PRAGMA max_page_count); past it writes
	                               fail as on a full disk; 0 = none.  SQLite only: a PostgreSQL
	                               server's room is its operator's */
};

#define STORE_DEFAULT_MAX_QUEUED 1000
#define STORE_DEFAULT_MAX_STORED_JOBS 10000
#define STORE_WRITE_WAIT_MS 3000          /* a writer waits this long for the ones before it */
#define STORE_WRITE_STUCK_MS 800          /* ... but no longer once the write in progress has been
                                             held this long (a frozen or failing disk): a request
                                             thread, and the connections it serves, never wait
                                             much longer than this behind a stuck write */
#define STORE_RESERVE_BYTES (8 << 20)     /* "<db>-reserve": given back to a full disk for deletes */

/*
 * The health of writes, lock-free (any thread; what GET /readyz reads, never
 * blocking on the disk): how long the write in progress has held the writer
 * lock (0: none), whether the last write failed (no space, an I/O error), and
 * whether the store is full.  A full store refuses new documents, jobs and
 * cache entries with UNIAP_E_NOSPACE (507) at once, and has given its
 * reserve file back to the disk so that deletes, cancels and job results
 * still commit; the first write that commits afterwards makes the reserve
 * again and clears both.  PostgreSQL: writing_ms is the oldest write in
 * flight; failing is also a server that does not answer (UNIAP_E_UNAVAILABLE),
 * cleared by the next call that reaches it; full is set by the server's
 * disk-full error and cleared by the next commit (no reserve file).
 */
struct store_health {
	int64_t writing_ms;
	int failing;
	int full;
};
void store_health(struct store *s, struct store_health *h);

/*
 * A write of one page (the header's user_version, rewritten as it is) that
 * keeps store_health true on an idle service: a disk that filled or froze
 * shows in it within the probe's period.  May block while the disk does.
 * PostgreSQL: SELECT 1, so a server that went away shows the same way.
 */
uniap_code store_probe(struct store *s, struct uniap_err *err);

/*
 * Opens the database at where (borrowed): a PostgreSQL connection URL
 * ("postgres://..." or "postgresql://...", libpq's syntax) or else the path of
 * a SQLite file (created; ":memory:" and "" are refused).  Applies the
 * backend's pending migrations in order, one transaction each, and returns an
 * owned store in *out; free it with store_close().  A database whose schema
 * is newer than this binary's is refused with UNIAP_E_INVALID.  A PostgreSQL
 * server that does not answer is UNIAP_E_UNAVAILABLE.  opts (borrowed) may be
 * NULL for the defaults.
 */
uniap_code store_open(const char *where, const struct store_opts *opts, struct store **out,
		      struct uniap_err *err);

/* Closes every connection and frees s (taken; NULL is a no-op). No call may be in flight. */
void store_close(struct store *s);

/* "sqlite" or "postgres". Static. */
const char *store_backend_name(const struct store *s);

/* 1 when where (borrowed) names a PostgreSQL database (postgres:// or postgresql://). */
int store_is_postgres(const char *where);

/* The schema version recorded in the database (the latest applied migration). */
uniap_code store_schema_version(struct store *s, int *version, struct uniap_err *err);

/* ---- pagination: every list returns at most limit rows with id > cursor ---- */

#define STORE_PAGE_MAX 1000       /* cap on limit; 0 means this cap */

/* ---- tenants ---- */

#define STORE_NAME_MAX 128        /* bytes of a tenant or document name */
#define STORE_KEY_CHARS 67        /* "uk_" + 64 hex digits of 32 random bytes */

struct store_tenant {
	int64_t id;
	char name[STORE_NAME_MAX + 1];
	int64_t created_at_ms;
	int64_t revoked_at_ms;      /* 0 while the key is valid */
	int64_t max_concurrent_jobs;
	int64_t max_stored_bytes;
	double max_job_worker_s;    /* cap on one plan job's worker seconds; 0: none of its own */
};

/* A tenant's quotas to change (store_tenant_set_quota): a field below 0 stays as it is. */
struct store_tenant_quota {
	int64_t max_concurrent_jobs;
	int64_t max_stored_bytes;
	double max_job_worker_s;    /* 0: none of its own (the operator's --job-budget holds) */
};

/*
 * Adds a tenant with a fresh random key (getrandom(2)); the plain key goes to
 * key_out once and only its SHA-256 is stored.  name (borrowed) is 1..
 * STORE_NAME_MAX bytes and unique (UNIAP_E_INVALID otherwise).
 */
uniap_code store_tenant_add(struct store *s, const char *name, int64_t max_concurrent_jobs,
			    int64_t max_stored_bytes, int64_t *id,
			    char key_out[STORE_KEY_CHARS + 1], struct uniap_err *err);

/* Lists tenants with id > cursor into an owned array (free()); *next is the
 * cursor of the following page, 0 when this page is the last. */
uniap_code store_tenant_list(struct store *s, int64_t cursor, size_t limit,
			     struct store_tenant **out, size_t *n, int64_t *next,
			     struct uniap_err *err);

/* Revokes the tenant's key (revoking twice keeps the first time) and, in the
 * same transaction, cancels its queued jobs (*canceled of them; may be NULL).
 * UNIAP_E_NOTFOUND if no such tenant. */
uniap_code store_tenant_revoke(struct store *s, int64_t id, size_t *canceled, struct uniap_err *err);

/* Changes the quotas of tenant id that q (borrowed) gives (fields >= 0), in
 * one transaction; they hold from the next request (jobs: from the next claim).
 * UNIAP_E_NOTFOUND if no such tenant; UNIAP_E_INVALID for a budget that is
 * not finite. */
uniap_code store_tenant_set_quota(struct store *s, int64_t id, const struct store_tenant_quota *q,
				  struct uniap_err *err);

/* Tenant id, revoked or not, into *out (its quotas included);
 * UNIAP_E_NOTFOUND if no such tenant. */
uniap_code store_tenant_get(struct store *s, int64_t id, struct store_tenant *out, struct uniap_err *err);

/* *revoked = 1 when tenant id was revoked (0 for an active or unknown one). */
uniap_code store_tenant_revoked(struct store *s, int64_t id, int *revoked, struct uniap_err *err);

/* The tenant whose key is key (borrowed): UNIAP_OK when it is active;
 * UNIAP_E_FORBIDDEN (out filled, the message names the tenant) when it was
 * revoked; UNIAP_E_NOTFOUND for an unknown key.  Hashes compare in constant
 * time. */
uniap_code store_tenant_lookup(struct store *s, const char *key, struct store_tenant *out,
			       struct uniap_err *err);

/* ---- documents (every call scoped by tenant: another tenant's id is UNIAP_E_NOTFOUND) ---- */

enum store_doc_kind { STORE_DOC_CLUSTER, STORE_DOC_MODEL };

struct store_doc {
	int64_t id;
	int64_t tenant_id;
	enum store_doc_kind kind;
	char name[STORE_NAME_MAX + 1];
	int64_t bytes;
	unsigned char sha256[STORE_SHA256_BYTES];
	int64_t created_at_ms;
	char *body;                 /* owned, NUL-terminated, bytes long; NULL in lists */
};

/* Stores a copy of body[0..bytes) (borrowed); UNIAP_E_LIMIT when the tenant's
 * documents would exceed max_stored_bytes (checked in the insert's transaction). */
uniap_code store_doc_put(struct store *s, int64_t tenant_id, enum store_doc_kind kind,
			 const char *name, const void *body, size_t bytes, int64_t *id,
			 struct uniap_err *err);

/* Fills *out with the document and its body; release with store_doc_release(). */
uniap_code store_doc_get(struct store *s, int64_t tenant_id, int64_t id, struct store_doc *out,
			 struct uniap_err *err);

/* Frees d->body (d borrowed; NULL is a no-op). */
void store_doc_release(struct store_doc *d);

/* Lists the tenant's documents (no bodies) with id > cursor into an owned array (free()). */
uniap_code store_doc_list(struct store *s, int64_t tenant_id, int64_t cursor, size_t limit,
			  struct store_doc **out, size_t *n, int64_t *next, struct uniap_err *err);

/* Deletes the tenant's document of that kind; its bytes no longer count toward
 * max_stored_bytes.  UNIAP_E_NOTFOUND when the tenant has no such document of
 * that kind (another kind's id included). */
uniap_code store_doc_delete(struct store *s, int64_t tenant_id, enum store_doc_kind kind, int64_t id,
			    struct uniap_err *err);

/* ---- jobs ---- */

enum store_job_state {
	STORE_JOB_QUEUED,
	STORE_JOB_RUNNING,
	STORE_JOB_SUCCEEDED,
	STORE_JOB_FAILED,
	STORE_JOB_CANCELED,
	STORE_JOB_STATE_COUNT
};

/* "queued", "running", ...; "unknown" out of range. Static. */
const char *store_job_state_name(enum store_job_state st);

/* 1 when from -> to is a legal transition: queued->running|canceled,
 * running->succeeded|failed|canceled; nothing else. */
int store_job_transition_legal(enum store_job_state from, enum store_job_state to);

#define STORE_IDEM_KEY_MAX 255    /* bytes of an Idempotency-Key */

/* What a job does (migrations 0005, 0011); rows older than 0005 are plan jobs. */
enum store_job_kind {
	STORE_JOB_PLAN,
	STORE_JOB_CALIBRATION,
	STORE_JOB_ALLOCATION,
	STORE_JOB_KIND_COUNT
};

/* "plan", "calibration", "allocation"; "unknown" out of range. Static. */
const char *store_job_kind_name(enum store_job_kind kind);

struct store_job {
	int64_t id;
	int64_t tenant_id;
	enum store_job_state state;
	enum store_job_kind kind;
	char idempotency_key[STORE_IDEM_KEY_MAX + 1];   /* "" when none */
	int64_t progress_done;
	int64_t progress_total;
	int has_best_tpi;
	double best_tpi_s;
	int has_bound;              /* a proven bound was written with the progress (migration 0009) */
	double bound_s;             /* lower bound on the TPI of any plan of the space searched */
	int64_t created_at_ms, started_at_ms, finished_at_ms;   /* 0 when not yet */
	int64_t version;            /* grows with every write of the job (migration 0004) */
	char *request;              /* owned, NUL-terminated; NULL in lists */
	size_t request_bytes;
	char *result;               /* owned, NUL-terminated; NULL when none or in lists */
	size_t result_bytes;
	char *error;                /* owned message; NULL when none or in lists */
};

/*
 * Creates a queued job for request[0..bytes) (borrowed).  idem_key (borrowed,
 * may be NULL) makes a retry safe: the same key with the same request returns
 * the existing job (*existed = 1); the same key with another request is
 * UNIAP_E_INVALID naming Idempotency-Key.  UNIAP_E_RATE when the tenant
 * already has max_concurrent_jobs queued or running, UNIAP_E_BUSY when the
 * service already has max_queued_jobs queued (same transaction).
 */
uniap_code store_job_create(struct store *s, int64_t tenant_id, const char *idem_key,
			    const void *request, size_t bytes, int64_t *id, int *existed,
			    struct uniap_err *err);

/* store_job_create for a job of the given kind (store_job_create makes plan
 * jobs).  A retry's key matches only the same request, so a key used for one
 * kind is UNIAP_E_INVALID for a request of the other. */
uniap_code store_job_create_kind(struct store *s, int64_t tenant_id, enum store_job_kind kind,
				 const char *idem_key, const void *request, size_t bytes, int64_t *id,
				 int *existed, struct uniap_err *err);

/* The id of the tenant's job created with idem_key (borrowed), and the hash of
 * the body bytes that created it when recorded (*has_body_sha256);
 * UNIAP_E_NOTFOUND when none. */
uniap_code store_job_find_idem(struct store *s, int64_t tenant_id, const char *idem_key, int64_t *id,
			       unsigned char body_sha256[STORE_SHA256_BYTES], int *has_body_sha256,
			       struct uniap_err *err);

/* Records the SHA-256 of the body bytes that created the tenant's job id
 * (migration 0002); UNIAP_E_NOTFOUND when no such job. */
uniap_code store_job_set_body_hash(struct store *s, int64_t tenant_id, int64_t id,
				   const unsigned char body_sha256[STORE_SHA256_BYTES],
				   struct uniap_err *err);

/* STORE_ANY_TENANT scopes a call to every tenant: for the job runner, and for GET
 * /v1/allocations/{id}, which checks itself who may see the job (api_alloc.c). */
#define STORE_ANY_TENANT 0

/* Fills *out with the job and its bodies; release with store_job_release(). */
uniap_code store_job_get(struct store *s, int64_t tenant_id, int64_t id, struct store_job *out,
			 struct uniap_err *err);

/* The job's version alone (a cheap read for watchers); UNIAP_E_NOTFOUND when gone. */
uniap_code store_job_version(struct store *s, int64_t tenant_id, int64_t id, int64_t *version,
			     struct uniap_err *err);

/* Frees the job's owned strings (j borrowed; NULL is a no-op). */
void store_job_release(struct store_job *j);

/* Lists the tenant's jobs (no bodies) with id > cursor, in state *state when
 * state (borrowed) is not NULL, into an owned array; free it with store_jobs_free(). */
uniap_code store_job_list(struct store *s, int64_t tenant_id, const enum store_job_state *state,
			  int64_t cursor, size_t limit, struct store_job **out, size_t *n,
			  int64_t *next, struct uniap_err *err);

/* Frees an array from store_job_list (taken). */
void store_jobs_free(struct store_job *jobs, size_t n);

/* ---- leases: one owner per running job (migration 0006, docs/jobs.md "Leases") ---- */

#define STORE_OWNER_CHARS 32      /* an instance id: 16 random bytes in hex */

/*
 * What a claim hands its runner: the owner that claimed (an instance id,
 * STORE_OWNER_CHARS hex digits, random per uniapd process) and the job's
 * fencing token, which grows by one with every claim of the job.  A write
 * that names a lease is refused with UNIAP_E_CONFLICT ("lost its lease")
 * unless the job is running under exactly that owner and token, so a runner
 * whose lease ran out and whose job was claimed again can never overwrite
 * the new owner's work.
 */
struct store_lease {
	char owner[STORE_OWNER_CHARS + 1];
	int64_t token;
};

/* A fresh instance id (getrandom(2)) into owner. */
uniap_code store_owner_new(char owner[STORE_OWNER_CHARS + 1], struct uniap_err *err);

/*
 * Moves the job to state to; an illegal transition is UNIAP_E_INVALID naming
 * both states.  result (borrowed, result_bytes long) is stored on succeeded,
 * error_msg (borrowed) on failed or canceled; both may be NULL.  Sets
 * started_at on running and finished_at on the final states.  lease
 * (borrowed) NULL: unconditional (the HTTP cancel of a queued job); the
 * runner always passes the lease of its claim (UNIAP_E_CONFLICT when lost).
 */
uniap_code store_job_transition(struct store *s, int64_t tenant_id, int64_t id,
				enum store_job_state to, const void *result, size_t result_bytes,
				const char *error_msg, const struct store_lease *lease,
				struct uniap_err *err);

/* Records progress of a running job (UNIAP_E_INVALID otherwise); best_tpi_s
 * (borrowed) may be NULL while no plan is known (the last one written stays);
 * bound_s (borrowed) NULL: no proven bound now (the column becomes NULL), else
 * >= 0.  0 <= done <= total.  lease (borrowed) as for store_job_transition. */
uniap_code store_job_progress(struct store *s, int64_t id, int64_t done, int64_t total,
			      const double *best_tpi_s, const double *bound_s,
			      const struct store_lease *lease, struct uniap_err *err);

/* Deletes tenant's job id when it succeeded or failed (its result with it: the tenant's quota
 * gets the bytes back); UNIAP_E_NOTFOUND when it is not there or not in one of those states.
 * Allowed on a full store (store_health). */
uniap_code store_job_delete(struct store *s, int64_t tenant_id, int64_t id, struct uniap_err *err);

/*
 * Takes a queued job and marks it running under a lease of owner (borrowed,
 * an instance id) that runs out lease_ms (>= 0) from now; *id = 0 when none
 * is queued.  Fair across tenants (docs/jobs.md, "Fair scheduling"): the
 * tenant with the fewest running jobs, ties to the one served least recently
 * (migration 0007), then its oldest queued job.  On a claim, lease (may be
 * NULL) gets the owner and the new token.
 */
uniap_code store_job_claim(struct store *s, const char *owner, int64_t lease_ms, int64_t *id,
			   struct store_lease *lease, struct uniap_err *err);

/* store_job_claim, but only a job of a tenant that has no job running: what
 * the runner's spare job thread takes, so a tenant's first job never waits
 * for another tenant's to finish (docs/jobs.md, "Fair scheduling"). */
uniap_code store_job_claim_idle(struct store *s, const char *owner, int64_t lease_ms, int64_t *id,
				struct store_lease *lease, struct uniap_err *err);

/*
 * What a client asked of a running job through any replica (migration 0010):
 * to cancel it (DELETE /v1/jobs/{id}) or to stop it with the best plan so far
 * (POST /v1/jobs/{id}/stop).  The replica that runs it reads the ask with its
 * next renewal, or at once from a STORE_EVENT_CANCEL / STORE_EVENT_STOP event.
 */
enum store_job_ask { STORE_ASK_NONE, STORE_ASK_CANCEL, STORE_ASK_STOP };

/* Extends the lease of running job id to lease_ms from now; UNIAP_E_CONFLICT
 * when the job no longer runs under lease (borrowed).  *asked (may be NULL)
 * gets what a client asked of the job (STORE_ASK_NONE: nothing). */
uniap_code store_job_renew(struct store *s, int64_t id, const struct store_lease *lease, int64_t lease_ms,
			   enum store_job_ask *asked, struct uniap_err *err);

/* Records ask (STORE_ASK_CANCEL or STORE_ASK_STOP; a cancel is never turned
 * back into a stop) on tenant's running job id and tells every replica
 * (STORE_EVENT_CANCEL / STORE_EVENT_STOP).  UNIAP_E_CONFLICT when the job is
 * not running; UNIAP_E_NOTFOUND when the tenant has no such job. */
uniap_code store_job_ask(struct store *s, int64_t tenant_id, int64_t id, enum store_job_ask ask,
			 struct uniap_err *err);

/* A running job goes back to queued, progress cleared, lease dropped (a
 * graceful stop that could not finish it); UNIAP_E_CONFLICT when it is not
 * running, or not under lease (borrowed; NULL: any owner). */
uniap_code store_job_requeue(struct store *s, int64_t id, const struct store_lease *lease,
			     struct uniap_err *err);

/* Jobs of every tenant by state, counts[state] (for metrics). */
uniap_code store_job_counts(struct store *s, int64_t counts[STORE_JOB_STATE_COUNT],
			    struct uniap_err *err);

/*
 * Retention: deletes at most max finished jobs (succeeded, failed, canceled)
 * of every tenant that finished more than age_ms ago (by the clock that
 * stamps finished_at), oldest first, in one short write; *purged (may be
 * NULL) says how many.  Queued and running jobs are never touched.  Call
 * again while it returns max.
 */
uniap_code store_jobs_purge(struct store *s, int64_t age_ms, size_t max, size_t *purged,
			    struct uniap_err *err);

/* Every running job whose lease ran out (its owner died or hangs; or it has
 * no lease: a row from before migration 0006) goes back to queued with its
 * progress cleared and its lease dropped; *requeued says how many.  At
 * start-up and every few seconds: a job of a live owner is never taken. */
uniap_code store_jobs_recover(struct store *s, size_t *requeued, struct uniap_err *err);

/* ---- one plan job solved by several replicas (PostgreSQL, migration
 * postgres/0003; docs/scale.md, "One job across replicas") ----
 *
 * A running plan job's candidates are units: (job, run, pp, vs, c), run being
 * the index of the job's target run.  A unit is claimed by an instance under
 * a lease (the database server's clock, like the jobs'), then done with its
 * packed facts (core's opt_result_pack) and its plan's TPI.  The job's owner
 * opens its current run to helpers; an idle replica finds such a run and
 * solves the units it can claim.  Done units outlive a requeue of their job
 * (their facts stay true), its share does not; the job's final transition
 * (or recovery's cancel) deletes both, in its own transaction.  SQLite has none of
 * this: store_shares() is 0 and every call below is UNIAP_E_CONFLICT. */

/* 1 when the backend shares jobs between instances (PostgreSQL). */
int store_shares(const struct store *s);

enum store_unit_state {
	STORE_UNIT_MINE = 0,     /* claimed by the caller now (or already its own) */
	STORE_UNIT_BUSY,         /* another instance holds it, its lease running */
	STORE_UNIT_DONE,         /* decided: *facts holds what its solver put */
};

/*
 * Claims unit (job, run, pp, vs, c) for owner (borrowed) of build (borrowed)
 * with a lease of lease_ms: free, held under a lease that ran out, or left by
 * another build (whose facts are never taken), it becomes the owner's.
 * *state says how it is; on STORE_UNIT_DONE *facts (owned, free()) and
 * *facts_bytes hold its facts; *taken_over (may be NULL) says that a MINE
 * unit was held by another instance whose lease ran out.  *incumbent gets
 * the least plan TPI of the run's done units of build (INFINITY: none).
 * UNIAP_E_CONFLICT unless the job runs with run open to build (the owner
 * opened it: store_job_share); a helper then stops.  The job's row is
 * locked shared meanwhile, so no claim lands after the job's end.
 */
uniap_code store_unit_claim(struct store *s, int64_t job, int run, int pp, int vs, int64_t c, const char *owner,
			    const char *build, int64_t lease_ms, enum store_unit_state *state, char **facts,
			    size_t *facts_bytes, double *incumbent, int *taken_over, struct uniap_err *err);

/*
 * Unit (job, run, pp, vs, c) of build (borrowed) is decided: facts (borrowed,
 * bytes) and the TPI of its plan (INFINITY: none) are kept, the first put
 * wins (a later one, from an instance whose lease ran out, changes nothing:
 * facts are true whoever found them).  facts NULL: owner (borrowed) gives its
 * claim up undecided, so that another claims it at once.
 */
uniap_code store_unit_put(struct store *s, int64_t job, int run, int pp, int vs, int64_t c, const char *owner,
			  const char *build, const void *facts, size_t bytes, double tpi_s, struct uniap_err *err);

/* Extends to lease_ms from now the lease of the units owner (borrowed) holds of the jobs
 * jobs[0..n_jobs) (borrowed): those it still works on.  A unit of any other job (a claim
 * whose put was lost, a run it left) is left to run out. */
uniap_code store_units_renew(struct store *s, const char *owner, const int64_t *jobs, size_t n_jobs,
			     int64_t lease_ms, struct uniap_err *err);

/*
 * The owner of running job (lease, borrowed: the writes are fenced like the
 * job's own) opens its target run `run` to helpers of build (borrowed: the
 * uniapd version; an instance of another build never helps, its cost model
 * may differ); run -1 closes it (no helper joins; those that joined finish
 * their units).
 */
uniap_code store_job_share(struct store *s, int64_t job, const struct store_lease *lease, int run,
			   const char *build, struct uniap_err *err);

/* *open = 1 while run `run` of job is open to helpers of build (borrowed) and the job runs. */
uniap_code store_job_share_open(struct store *s, int64_t job, int run, const char *build, int *open,
				struct uniap_err *err);

/*
 * A running job another instance owns whose run has been open to helpers of
 * build for at least min_age_ms, the one whose units the fewest instances
 * hold now first (then the oldest), skipping the keys skip (borrowed, n_skip:
 * job * 16 + run, the runs the caller helped already).  *job = 0 when there
 * is none.
 */
uniap_code store_job_share_find(struct store *s, const char *owner, const char *build, int64_t min_age_ms,
				const int64_t *skip, size_t n_skip, int64_t *job, int *run, struct uniap_err *err);

/* ---- events between replicas (PostgreSQL: LISTEN/NOTIFY; docs/scale.md) ---- */

enum store_event {
	STORE_EVENT_QUEUED,      /* a job became queued (created or requeued): claim */
	STORE_EVENT_CANCEL,      /* store_job_ask(..., STORE_ASK_CANCEL) on job */
	STORE_EVENT_STOP,        /* store_job_ask(..., STORE_ASK_STOP) on job */
	STORE_EVENT_RECONNECTED  /* the listener lost its connection and has it again:
	                            events may have been missed, look at everything */
};

/* Called on the store's listener thread; job is 0 for QUEUED and RECONNECTED.
 * Must not block for long (set a flag, signal a condition). */
typedef void (*store_event_fn)(void *ctx, enum store_event ev, int64_t job);

/*
 * Delivers every replica's events (its own included) to fn(ctx, ...) from a
 * listener thread of the store's own, until store_close(); once per store.
 * A backend with no events to push (SQLite: one machine, in-process wakes)
 * returns UNIAP_OK and never calls fn; store_listens() says which.
 */
uniap_code store_listen(struct store *s, store_event_fn fn, void *ctx, struct uniap_err *err);

/* 1 when events arrive by push (store_listen), so a poll is only a safety net. */
int store_listens(const struct store *s);

/* ---- cost-matrix cache, keyed by a SHA-256 of its inputs ---- */

/* On a hit fills *body (owned, NUL-terminated; free()) and *bytes, counts the
 * hit and marks the entry most recently used; a miss is UNIAP_E_NOTFOUND. */
uniap_code store_cache_get(struct store *s, const unsigned char key[STORE_SHA256_BYTES],
			   char **body, size_t *bytes, struct uniap_err *err);

/* Stores (or replaces) a copy of body (borrowed), then evicts least recently
 * used entries until the cache fits cache_max_bytes.  An entry larger than
 * the cap is UNIAP_E_LIMIT. */
uniap_code store_cache_put(struct store *s, const unsigned char key[STORE_SHA256_BYTES],
			   const void *body, size_t bytes, struct uniap_err *err);

/* Entries and bytes now in the cache. */
uniap_code store_cache_stats(struct store *s, int64_t *entries, int64_t *bytes,
			     struct uniap_err *err);

#endif
