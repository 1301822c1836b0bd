/*
 * store_backend.h - what a storage backend implements (server/store.c
 * dispatches every store_* call of store.h to one of them).
 *
 * Two backends: SQLite (server/store_sqlite.c; the embedded default, one
 * database file) and PostgreSQL (server/store_pg.c; many uniapd replicas on
 * one server, docs/scale.md).  store_open() picks one by the name it is given:
 * "postgres://..." or "postgresql://..." is PostgreSQL, anything else a file.
 *
 * A backend's struct begins with a struct store (its `base`), so store.c can
 * hand the same pointer to every operation; the backend casts it back to its
 * own struct.  Each operation has the contract of the store.h function of the
 * same name (store.c checks nothing a backend must check itself).  Thread
 * safety as store.h says: any thread may call any operation.
 *
 * Never: include HTTP or cJSON headers here, or let one backend's types leak
 * into the other's file.
 */
#ifndef UNIAP_STORE_BACKEND_H
#define UNIAP_STORE_BACKEND_H

#include "store.h"

struct store_backend;

struct store {
	const struct store_backend *be;
};

struct store_backend {
	const char *name;   /* "sqlite", "postgres" */
	void (*close)(struct store *s);
	void (*health)(struct store *s, struct store_health *h);
	uniap_code (*probe)(struct store *s, struct uniap_err *err);
	uniap_code (*schema_version)(struct store *s, int *version, struct uniap_err *err);

	uniap_code (*tenant_add)(struct store *s, const char *name, int64_t max_concurrent_jobs,
				 int64_t max_stored_bytes, int64_t *id, char key_out[STORE_KEY_CHARS + 1],
				 struct uniap_err *err);
	uniap_code (*tenant_list)(struct store *s, int64_t cursor, size_t limit, struct store_tenant **out,
				  size_t *n, int64_t *next, struct uniap_err *err);
	uniap_code (*tenant_revoke)(struct store *s, int64_t id, size_t *canceled, struct uniap_err *err);
	uniap_code (*tenant_set_quota)(struct store *s, int64_t id, const struct store_tenant_quota *q,
				       struct uniap_err *err);
	uniap_code (*tenant_get)(struct store *s, int64_t id, struct store_tenant *out, struct uniap_err *err);
	uniap_code (*tenant_lookup)(struct store *s, const char *key, struct store_tenant *out,
				    struct uniap_err *err);

	uniap_code (*doc_put)(struct store *s, int64_t tenant_id, enum store_doc_kind kind, const char *name,
			      const void *body, size_t bytes, int64_t *id, struct uniap_err *err);
	uniap_code (*doc_get)(struct store *s, int64_t tenant_id, int64_t id, struct store_doc *out,
			      struct uniap_err *err);
	uniap_code (*doc_list)(struct store *s, int64_t tenant_id, int64_t cursor, size_t limit,
			       struct store_doc **out, size_t *n, int64_t *next, struct uniap_err *err);
	uniap_code (*doc_delete)(struct store *s, int64_t tenant_id, enum store_doc_kind kind, int64_t id,
				 struct uniap_err *err);

	uniap_code (*job_create)(struct store *s, int64_t tenant_id, enum store_job_kind kind,
				 const char *idem_key, const void *request, size_t bytes, int64_t *id,
				 int *existed, struct uniap_err *err);
	uniap_code (*job_find_idem)(struct store *s, int64_t tenant_id, const char *idem_key, int64_t *id,
				    unsigned char body_sha256[STORE_SHA256_BYTES], int *has_body_sha256,
				    struct uniap_err *err);
	uniap_code (*job_set_body_hash)(struct store *s, int64_t tenant_id, int64_t id,
					const unsigned char body_sha256[STORE_SHA256_BYTES], struct uniap_err *err);
	uniap_code (*job_get)(struct store *s, int64_t tenant_id, int64_t id, struct store_job *out,
			      struct uniap_err *err);
	uniap_code (*job_version)(struct store *s, int64_t tenant_id, int64_t id, int64_t *version,
				  struct uniap_err *err);
	uniap_code (*job_list)(struct store *s, int64_t tenant_id, const enum store_job_state *state,
			       int64_t cursor, size_t limit, struct store_job **out, size_t *n, int64_t *next,
			       struct uniap_err *err);
	uniap_code (*job_transition)(struct store *s, int64_t tenant_id, int64_t id, enum store_job_state to,
				     const void *result, size_t result_bytes, const char *error_msg,
				     const struct store_lease *lease, struct uniap_err *err);
	uniap_code (*job_progress)(struct store *s, int64_t id, int64_t done, int64_t total,
				   const double *best_tpi_s, const double *bound_s,
				   const struct store_lease *lease, struct uniap_err *err);
	uniap_code (*job_delete)(struct store *s, int64_t tenant_id, int64_t id, struct uniap_err *err);
	/* idle_only: store_job_claim_idle */
	uniap_code (*job_claim)(struct store *s, const char *owner, int64_t lease_ms, int idle_only,
				int64_t *id, struct store_lease *lease, struct uniap_err *err);
	uniap_code (*job_renew)(struct store *s, int64_t id, const struct store_lease *lease, int64_t lease_ms,
				enum store_job_ask *asked, struct uniap_err *err);
	uniap_code (*job_ask)(struct store *s, int64_t tenant_id, int64_t id, enum store_job_ask ask,
			      struct uniap_err *err);
	uniap_code (*job_requeue)(struct store *s, int64_t id, const struct store_lease *lease,
				  struct uniap_err *err);
	uniap_code (*job_counts)(struct store *s, int64_t counts[STORE_JOB_STATE_COUNT], struct uniap_err *err);
	uniap_code (*jobs_purge)(struct store *s, int64_t age_ms, size_t max, size_t *purged,
				 struct uniap_err *err);
	uniap_code (*jobs_recover)(struct store *s, size_t *requeued, struct uniap_err *err);

	uniap_code (*cache_get)(struct store *s, const unsigned char key[STORE_SHA256_BYTES], char **body,
				size_t *bytes, struct uniap_err *err);
	uniap_code (*cache_put)(struct store *s, const unsigned char key[STORE_SHA256_BYTES], const void *body,
				size_t bytes, struct uniap_err *err);
	uniap_code (*cache_stats)(struct store *s, int64_t *entries, int64_t *bytes, struct uniap_err *err);

	/* the shared jobs (store.h); NULL all: the backend shares nothing (store_shares() is 0) */
	uniap_code (*unit_claim)(struct store *s, int64_t job, int run, int pp, int vs, int64_t c, const char *owner,
				 const char *build, int64_t lease_ms, enum store_unit_state *state, char **facts,
				 size_t *facts_bytes, double *incumbent, int *taken_over, struct uniap_err *err);
	uniap_code (*unit_put)(struct store *s, int64_t job, int run, int pp, int vs, int64_t c, const char *owner,
			       const char *build, const void *facts, size_t bytes, double tpi_s, struct uniap_err *err);
	uniap_code (*units_renew)(struct store *s, const char *owner, const int64_t *jobs, size_t n_jobs,
				  int64_t lease_ms, struct uniap_err *err);
	uniap_code (*job_share)(struct store *s, int64_t job, const struct store_lease *lease, int run,
				const char *build, struct uniap_err *err);
	uniap_code (*job_share_open)(struct store *s, int64_t job, int run, const char *build, int *open,
				     struct uniap_err *err);
	uniap_code (*job_share_find)(struct store *s, const char *owner, const char *build, int64_t min_age_ms,
				     const int64_t *skip, size_t n_skip, int64_t *job, int *run, struct uniap_err *err);

	/* store_listen; NULL: the backend pushes no events (one machine: store_listens() is 0) */
	uniap_code (*listen)(struct store *s, store_event_fn fn, void *ctx, struct uniap_err *err);
};

/* The backends' open functions (store_open's contract; where is a file path or a postgres:// URL). */
uniap_code store_sqlite_open(const char *path, const struct store_opts *opts, struct store **out,
			     struct uniap_err *err);
uniap_code store_pg_open(const char *url, const struct store_opts *opts, struct store **out,
			 struct uniap_err *err);
void store_sqlite_global_init(void);

/* ---- shared by the backends (server/store.c) ---- */

/* "queued", ... back to the state; -1 for another name (name borrowed, may be NULL). */
int store_job_state_parse(const char *name, enum store_job_state *st);

/* "plan", "calibration", "allocation" back to the kind; -1 for another name. */
int store_job_kind_parse(const char *name, enum store_job_kind *kind);

/* n random bytes from getrandom(2) into buf (borrowed). */
uniap_code store_random_bytes(unsigned char *buf, size_t n, struct uniap_err *err);

/* "uk_" + 64 hex digits of 32 fresh random bytes into key, and the SHA-256 of the key into hash. */
uniap_code store_key_new(char key[STORE_KEY_CHARS + 1], unsigned char hash[STORE_SHA256_BYTES],
			 struct uniap_err *err);

/* 1 when a and b (STORE_SHA256_BYTES each) are equal, in constant time. */
int store_hash_equal(const unsigned char *a, const unsigned char *b);

/* "cancel", "stop" ("" for none) and back (anything else: STORE_ASK_NONE). */
const char *store_job_ask_name(enum store_job_ask ask);
enum store_job_ask store_job_ask_parse(const char *name);

/* The error a job canceled by its client carries when no runner wrote one. */
#define STORE_CANCELED_MSG "canceled by the client"

/* Wall-clock Unix milliseconds (what the stores stamp). */
int64_t store_now_ms(void);

#endif
