/*
 * store.c - the store's one front (store.h): opens the backend that a name
 * asks for (store_backend.h) and hands every call to it.  What the front,
 * both backends and their callers share (SHA-256, names of states and
 * kinds, random keys and ids) is in store_base.c, below them all: the
 * backends never call this file.
 *
 * Thread safety: whatever the backend's; this file keeps no state of its own.
 * Never: hold a backend's lock or connection here, or check what the backend
 * must check in its own transaction.
 */
#include "store_backend.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- open, close, and the calls handed to the backend ---- */

void store_global_init(void)
{
	store_sqlite_global_init();
}

int store_is_postgres(const char *where)
{
	return where && (strncmp(where, "postgres://", 11) == 0 || strncmp(where, "postgresql://", 13) == 0);
}

uniap_code store_open(const char *where, const struct store_opts *opts, struct store **out,
		      struct uniap_err *err)
{
	if (store_is_postgres(where))
		return store_pg_open(where, opts, out, err);
	return store_sqlite_open(where, opts, out, err);
}

void store_close(struct store *s)
{
	if (s)
		s->be->close(s);
}

const char *store_backend_name(const struct store *s)
{
	return s->be->name;
}

void store_health(struct store *s, struct store_health *h)
{
	s->be->health(s, h);
}

uniap_code store_probe(struct store *s, struct uniap_err *err)
{
	return s->be->probe(s, err);
}

uniap_code store_schema_version(struct store *s, int *version, struct uniap_err *err)
{
	return s->be->schema_version(s, version, err);
}

uniap_code store_tenant_add(struct store *s, const char *name, int64_t max_concurrent_jobs,
			    int64_t max_stored_bytes, int64_t *id, char key_out[STORE_KEY_CHARS + 1],
			    struct uniap_err *err)
{
	return s->be->tenant_add(s, name, max_concurrent_jobs, max_stored_bytes, id, key_out, err);
}

uniap_code store_tenant_list(struct store *s, int64_t cursor, size_t limit, struct store_tenant **out,
			     size_t *n, int64_t *next, struct uniap_err *err)
{
	return s->be->tenant_list(s, cursor, limit, out, n, next, err);
}

uniap_code store_tenant_revoke(struct store *s, int64_t id, size_t *canceled, struct uniap_err *err)
{
	return s->be->tenant_revoke(s, id, canceled, err);
}

uniap_code store_tenant_set_quota(struct store *s, int64_t id, const struct store_tenant_quota *q,
				  struct uniap_err *err)
{
	return s->be->tenant_set_quota(s, id, q, err);
}

uniap_code store_tenant_get(struct store *s, int64_t id, struct store_tenant *out, struct uniap_err *err)
{
	return s->be->tenant_get(s, id, out, err);
}

uniap_code store_tenant_revoked(struct store *s, int64_t id, int *revoked, struct uniap_err *err)
{
	struct store_tenant t;
	uniap_code rc = store_tenant_get(s, id, &t, err);

	*revoked = rc == UNIAP_OK && t.revoked_at_ms != 0;
	return rc == UNIAP_E_NOTFOUND ? UNIAP_OK : rc;
}

uniap_code store_tenant_lookup(struct store *s, const char *key, struct store_tenant *out,
			       struct uniap_err *err)
{
	return s->be->tenant_lookup(s, key, out, err);
}

uniap_code store_doc_put(struct store *s, int64_t tenant_id, enum store_doc_kind kind, const char *name,
			 const void *body, size_t bytes, int64_t *id, struct uniap_err *err)
{
	return s->be->doc_put(s, tenant_id, kind, name, body, bytes, id, err);
}

uniap_code store_doc_get(struct store *s, int64_t tenant_id, int64_t id, struct store_doc *out,
			 struct uniap_err *err)
{
	return s->be->doc_get(s, tenant_id, id, out, err);
}

uniap_code store_doc_list(struct store *s, int64_t tenant_id, int64_t cursor, size_t limit,
			  struct store_doc **out, size_t *n, int64_t *next, struct uniap_err *err)
{
	return s->be->doc_list(s, tenant_id, cursor, limit, out, n, next, err);
}

uniap_code store_doc_delete(struct store *s, int64_t tenant_id, enum store_doc_kind kind, int64_t id,
			    struct uniap_err *err)
{
	return s->be->doc_delete(s, tenant_id, kind, id, err);
}

uniap_code store_job_create(struct store *s, int64_t tenant_id, const char *idem_key, const void *request,
			    size_t bytes, int64_t *id, int *existed, struct uniap_err *err)
{
	return s->be->job_create(s, tenant_id, STORE_JOB_PLAN, idem_key, request, bytes, id, existed, err);
}

uniap_code store_job_create_kind(struct store *s, int64_t tenant_id, enum store_job_kind kind,
				 const char *idem_key, const void *request, size_t bytes, int64_t *id,
				 int *existed, struct uniap_err *err)
{
	return s->be->job_create(s, tenant_id, kind, idem_key, request, bytes, id, existed, err);
}

uniap_code store_job_find_idem(struct store *s, int64_t tenant_id, const char *idem_key, int64_t *id,
			       unsigned char body_sha256[STORE_SHA256_BYTES], int *has_body_sha256,
			       struct uniap_err *err)
{
	return s->be->job_find_idem(s, tenant_id, idem_key, id, body_sha256, has_body_sha256, err);
}

uniap_code store_job_set_body_hash(struct store *s, int64_t tenant_id, int64_t id,
				   const unsigned char body_sha256[STORE_SHA256_BYTES], struct uniap_err *err)
{
	return s->be->job_set_body_hash(s, tenant_id, id, body_sha256, err);
}

uniap_code store_job_get(struct store *s, int64_t tenant_id, int64_t id, struct store_job *out,
			 struct uniap_err *err)
{
	return s->be->job_get(s, tenant_id, id, out, err);
}

uniap_code store_job_version(struct store *s, int64_t tenant_id, int64_t id, int64_t *version,
			     struct uniap_err *err)
{
	return s->be->job_version(s, tenant_id, id, version, err);
}

uniap_code store_job_list(struct store *s, int64_t tenant_id, const enum store_job_state *state,
			  int64_t cursor, size_t limit, struct store_job **out, size_t *n, int64_t *next,
			  struct uniap_err *err)
{
	return s->be->job_list(s, tenant_id, state, cursor, limit, out, n, next, err);
}

uniap_code store_job_transition(struct store *s, int64_t tenant_id, int64_t id, enum store_job_state to,
				const void *result, size_t result_bytes, const char *error_msg,
				const struct store_lease *lease, struct uniap_err *err)
{
	return s->be->job_transition(s, tenant_id, id, to, result, result_bytes, error_msg, lease, err);
}

uniap_code store_job_progress(struct store *s, int64_t id, int64_t done, int64_t total,
			      const double *best_tpi_s, const double *bound_s,
			      const struct store_lease *lease, struct uniap_err *err)
{
	return s->be->job_progress(s, id, done, total, best_tpi_s, bound_s, lease, err);
}

uniap_code store_job_delete(struct store *s, int64_t tenant_id, int64_t id, struct uniap_err *err)
{
	return s->be->job_delete(s, tenant_id, id, err);
}

uniap_code store_job_claim(struct store *s, const char *owner, int64_t lease_ms, int64_t *id,
			   struct store_lease *lease, struct uniap_err *err)
{
	return s->be->job_claim(s, owner, lease_ms, 0, id, lease, err);
}

uniap_code store_job_claim_idle(struct store *s, const char *owner, int64_t lease_ms, int64_t *id,
				struct store_lease *lease, struct uniap_err *err)
{
	return s->be->job_claim(s, owner, lease_ms, 1, id, lease, err);
}

uniap_code store_job_renew(struct store *s, int64_t id, const struct store_lease *lease, int64_t lease_ms,
			   enum store_job_ask *asked, struct uniap_err *err)
{
	if (asked)
		*asked = STORE_ASK_NONE;
	return s->be->job_renew(s, id, lease, lease_ms, asked, err);
}

uniap_code store_job_ask(struct store *s, int64_t tenant_id, int64_t id, enum store_job_ask ask,
			 struct uniap_err *err)
{
	if (ask != STORE_ASK_CANCEL && ask != STORE_ASK_STOP)
		return err_set(err, UNIAP_E_ARG, "ask: must be cancel or stop");
	return s->be->job_ask(s, tenant_id, id, ask, err);
}

uniap_code store_job_requeue(struct store *s, int64_t id, const struct store_lease *lease,
			     struct uniap_err *err)
{
	return s->be->job_requeue(s, id, lease, err);
}

uniap_code store_job_counts(struct store *s, int64_t counts[STORE_JOB_STATE_COUNT], struct uniap_err *err)
{
	return s->be->job_counts(s, counts, err);
}

uniap_code store_jobs_purge(struct store *s, int64_t age_ms, size_t max, size_t *purged,
			    struct uniap_err *err)
{
	return s->be->jobs_purge(s, age_ms, max, purged, err);
}

uniap_code store_jobs_recover(struct store *s, size_t *requeued, struct uniap_err *err)
{
	return s->be->jobs_recover(s, requeued, err);
}

uniap_code store_cache_get(struct store *s, const unsigned char key[STORE_SHA256_BYTES], char **body,
			   size_t *bytes, struct uniap_err *err)
{
	return s->be->cache_get(s, key, body, bytes, err);
}

uniap_code store_cache_put(struct store *s, const unsigned char key[STORE_SHA256_BYTES], const void *body,
			   size_t bytes, struct uniap_err *err)
{
	return s->be->cache_put(s, key, body, bytes, err);
}

uniap_code store_cache_stats(struct store *s, int64_t *entries, int64_t *bytes, struct uniap_err *err)
{
	return s->be->cache_stats(s, entries, bytes, err);
}

uniap_code store_listen(struct store *s, store_event_fn fn, void *ctx, struct uniap_err *err)
{
	if (!fn)
		return err_set(err, UNIAP_E_ARG, "listen: needs a function");
	return s->be->listen ? s->be->listen(s, fn, ctx, err) : UNIAP_OK;
}

int store_listens(const struct store *s)
{
	return s->be->listen != NULL;
}

int store_shares(const struct store *s)
{
	return s->be->unit_claim != NULL;
}

static uniap_code store_no_shares(struct uniap_err *err)
{
	return err_set(err, UNIAP_E_CONFLICT, "store: %s shares no jobs between instances (PostgreSQL does)",
		       "this backend");
}

uniap_code store_unit_claim(struct store *s, int64_t job, int run, int pp, int vs, int64_t c, const char *owner,
			    const char *build, int64_t lease_ms, enum store_unit_state *state, char **facts,
			    size_t *facts_bytes, double *incumbent, int *taken_over, struct uniap_err *err)
{
	int over = 0;
	uniap_code rc;

	*facts = NULL;
	*facts_bytes = 0;
	*incumbent = INFINITY;
	if (!s->be->unit_claim)
		return store_no_shares(err);
	if (!owner || !build || lease_ms < 0 || run < 0 || pp < 1 || vs < 1 || c < 1)
		return err_set(err, UNIAP_E_ARG, "unit claim: needs an owner, a build, lease_ms >= 0 and a candidate");
	rc = s->be->unit_claim(s, job, run, pp, vs, c, owner, build, lease_ms, state, facts, facts_bytes, incumbent,
			       &over, err);
	if (taken_over)
		*taken_over = rc == UNIAP_OK && over;
	return rc;
}

uniap_code store_unit_put(struct store *s, int64_t job, int run, int pp, int vs, int64_t c, const char *owner,
			  const char *build, const void *facts, size_t bytes, double tpi_s, struct uniap_err *err)
{
	if (!s->be->unit_put)
		return store_no_shares(err);
	if (!owner || !build || (facts && bytes > INT32_MAX))
		return err_set(err, UNIAP_E_ARG, "unit put: needs an owner, a build and facts below 2 GiB");
	return s->be->unit_put(s, job, run, pp, vs, c, owner, build, facts, bytes, tpi_s, err);
}

uniap_code store_units_renew(struct store *s, const char *owner, const int64_t *jobs, size_t n_jobs,
			     int64_t lease_ms, struct uniap_err *err)
{
	if (!s->be->units_renew)
		return store_no_shares(err);
	if (!owner || lease_ms < 0 || (n_jobs && !jobs))
		return err_set(err, UNIAP_E_ARG, "units renew: needs an owner, its jobs and lease_ms >= 0");
	if (n_jobs == 0)
		return UNIAP_OK;
	return s->be->units_renew(s, owner, jobs, n_jobs, lease_ms, err);
}

uniap_code store_job_share(struct store *s, int64_t job, const struct store_lease *lease, int run,
			   const char *build, struct uniap_err *err)
{
	if (!s->be->job_share)
		return store_no_shares(err);
	if (!lease || !build || run < -1)
		return err_set(err, UNIAP_E_ARG, "job share: needs the job's lease, a build and a run >= -1");
	return s->be->job_share(s, job, lease, run, build, err);
}

uniap_code store_job_share_open(struct store *s, int64_t job, int run, const char *build, int *open,
				struct uniap_err *err)
{
	*open = 0;
	if (!s->be->job_share_open)
		return store_no_shares(err);
	if (!build)
		return err_set(err, UNIAP_E_ARG, "job share open: needs a build");
	return s->be->job_share_open(s, job, run, build, open, err);
}

uniap_code store_job_share_find(struct store *s, const char *owner, const char *build, int64_t min_age_ms,
				const int64_t *skip, size_t n_skip, int64_t *job, int *run, struct uniap_err *err)
{
	*job = 0;
	*run = -1;
	if (!s->be->job_share_find)
		return store_no_shares(err);
	if (!owner || !build || (n_skip && !skip))
		return err_set(err, UNIAP_E_ARG, "job share find: needs an owner and a build");
	return s->be->job_share_find(s, owner, build, min_age_ms, skip, n_skip, job, run, err);
}
