/*
 * api_jobs.c - jobs over HTTP (api.h): POST /v1/plans queues a plan job
 * (api_job_create is also the queueing of calibration jobs, api_calib.c),
 * /v1/jobs reads, lists and cancels jobs of both kinds, /v1/jobs/{id}/plan
 * exports a plan job's plan.  The runner (runner.h) does the work; handlers only touch the store
 * and wake or signal the runner, so no HTTP thread ever waits on a solve
 * (DELETE waits a bounded time for the workers to be stopped).
 *
 * The stored request (runner.h) is {"summary": {options, "cluster": ref,
 * "model": ref}, "cluster": document, "model": document}: the documents are
 * resolved here, at submission, so a bad one is a 422 now, and a job never
 * depends on a document deleted later.  GET answers splice the stored
 * summary and result texts in without parsing the documents.
 */
#include "api.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "export.h"
#include "jdecode.h"
#include "jencode.h"
#include "problem.h"
#include "runner.h"
#include "store.h"

#define API_CANCEL_POLL_US 20000
/* DELETE waits this long for a running job to stop, then answers 202: a request thread serves
 * many connections (docs/http.md), so the wait stays short; killing the workers takes ms */
#define API_CANCEL_WAIT_S 2.0

/* ---------------------------------------------------------------- job documents */

/*
 * The end of the JSON value that starts at text[0] (an object or array
 * printed by cJSON), or 0 when it does not end within len bytes.
 */
static size_t api_value_end(const char *text, size_t len)
{
	size_t i, depth = 0;
	int in_str = 0;

	for (i = 0; i < len; i++) {
		char c = text[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"') {
			in_str = 1;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return 0;
			if (--depth == 0)
				return i + 1;
		}
	}
	return 0;
}

/* The "summary" object that opens a stored request, as text (borrowed span). */
static int api_request_summary(const char *req, size_t len, const char **at, size_t *n)
{
	static const char head[] = "{\"summary\":";
	size_t end;

	if (!req || len < sizeof(head) || memcmp(req, head, sizeof(head) - 1) != 0)
		return -1;
	end = api_value_end(req + sizeof(head) - 1, len - (sizeof(head) - 1));
	if (!end)
		return -1;
	*at = req + sizeof(head) - 1;
	*n = end;
	return 0;
}

/*
 * Appends ,"key":raw (raw borrowed, n bytes of JSON) inside the object text
 * *doc (owned, ends with '}'), replacing *doc.  -1 on out of memory.
 */
static int api_splice(char **doc, const char *key, const char *raw, size_t n)
{
	size_t dl = strlen(*doc), kl = strlen(key);
	char *out;

	if (dl < 2 || (*doc)[dl - 1] != '}')
		return -1;
	out = malloc(dl + kl + n + 8);
	if (!out)
		return -1;
	memcpy(out, *doc, dl - 1);
	dl--;
	out[dl++] = ',';
	out[dl++] = '"';
	memcpy(out + dl, key, kl);
	dl += kl;
	out[dl++] = '"';
	out[dl++] = ':';
	memcpy(out + dl, raw, n);
	dl += n;
	out[dl++] = '}';
	out[dl] = '\0';
	cJSON_free(*doc);
	*doc = out;
	return 0;
}

static int api_add_time(cJSON *o, const char *key, int64_t ms)
{
	char when[32];

	if (!ms)
		return cJSON_AddNullToObject(o, key) != NULL;
	api_time(ms, when, sizeof(when));
	return cJSON_AddStringToObject(o, key, when) != NULL;
}

/* The job's small fields as a cJSON object; owned or NULL (api.h). */
cJSON *api_job_meta(const struct store_job *j)
{
	cJSON *o = cJSON_CreateObject(), *p = NULL, *links = NULL;
	char self[64], plan[80];

	snprintf(self, sizeof(self), "/v1/jobs/%lld", (long long)j->id);
	snprintf(plan, sizeof(plan), "/v1/jobs/%lld/plan", (long long)j->id);
	if (!o || !cJSON_AddNumberToObject(o, "id", (double)j->id) ||
	    !cJSON_AddStringToObject(o, "state", store_job_state_name(j->state)) ||
	    !cJSON_AddStringToObject(o, "kind", store_job_kind_name(j->kind)) ||
	    !api_add_time(o, "created_at", j->created_at_ms) ||
	    !api_add_time(o, "started_at", j->started_at_ms) ||
	    !api_add_time(o, "finished_at", j->finished_at_ms) ||
	    !(p = cJSON_AddObjectToObject(o, "progress")) ||
	    !cJSON_AddNumberToObject(p, "candidates_done", (double)j->progress_done) ||
	    !cJSON_AddNumberToObject(p, "candidates_total", (double)j->progress_total) ||
	    !(j->has_best_tpi ? jenc_add_num(p, "best_tpi_s", j->best_tpi_s)
	                      : cJSON_AddNullToObject(p, "best_tpi_s") != NULL) ||
	    !(j->has_bound ? jenc_add_num(p, "bound_s", j->bound_s)
	                   : cJSON_AddNullToObject(p, "bound_s") != NULL) ||
	    (j->idempotency_key[0] && !cJSON_AddStringToObject(o, "idempotency_key", j->idempotency_key)) ||
	    (j->error && !cJSON_AddStringToObject(o, "error", j->error)) ||
	    !(links = cJSON_AddObjectToObject(o, "links")) || !cJSON_AddStringToObject(links, "self", self) ||
	    (j->state == STORE_JOB_SUCCEEDED && j->kind == STORE_JOB_PLAN &&
	     !cJSON_AddStringToObject(links, "plan", plan))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The whole job document (meta, "request" summary, "result"); owned text or NULL. */
static char *api_job_text(const struct store_job *j)
{
	cJSON *o = api_job_meta(j);
	char *text = o ? cJSON_PrintUnformatted(o) : NULL;
	const char *sum;
	size_t n;

	cJSON_Delete(o);
	if (text && api_request_summary(j->request, j->request_bytes, &sum, &n) == 0 &&
	    api_splice(&text, "request", sum, n) != 0)
		goto fail;
	if (text && j->result && api_splice(&text, "result", j->result, j->result_bytes) != 0)
		goto fail;
	return text;
fail:
	cJSON_free(text);
	return NULL;
}

static void api_job_answer(struct http_response *res, int status, const struct store_job *j)
{
	char *text = api_job_text(j);

	if (!text || http_response_set_body(res, status, "application/json", text, strlen(text)) != 0)
		res->status = 0;
	cJSON_free(text);
}

/* {id} of the path; -1 after answering 404 (an id that cannot exist). */
static int api_job_id(struct http_request *req, struct http_response *res, int64_t *id)
{
	if (api_parse_id(http_request_param(req, "id"), id) != 0) {
		api_problem(req, res, UNIAP_E_NOTFOUND, "id: no such job");
		return -1;
	}
	return 0;
}

/* Reads the caller's job id into *job (store_job_release it); -1 with res answered
 * (404 for another tenant's or no such job). */
static int api_job_read(struct http_request *req, struct http_response *res, int64_t id, struct store_job *job)
{
	const struct api_app *app = req->app;
	struct uniap_err err;

	err_clear(&err);
	if (store_job_get(app->store, api_principal(req)->tenant_id, id, job, &err) != UNIAP_OK) {
		api_fail(req, res, &err);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- POST /v1/plans */

/* The reference a request gave for field: an id, a catalog name, or "inline". */
static cJSON *api_ref(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return cJSON_CreateNumber(v->valuedouble);
	if (cJSON_IsString(v))
		return cJSON_CreateString(v->valuestring);
	return cJSON_CreateString("inline");
}

/*
 * A retry with the same Idempotency-Key and the very same body bytes is the
 * stored job, whatever became of the documents it names (one may have been
 * deleted since): found by the key, matched by the hash of the body bytes
 * recorded at creation.  0 with *id when it is one, -1 otherwise (the request
 * is then resolved and compared as usual, so a body written differently with
 * the same meaning is still the same job).
 */
static int api_replay(struct http_request *req, int64_t tenant, const char *idem,
                      const unsigned char body_sha256[STORE_SHA256_BYTES], int64_t *id)
{
	const struct api_app *app = req->app;
	unsigned char stored[STORE_SHA256_BYTES];
	int has = 0;

	if (store_job_find_idem(app->store, tenant, idem, id, stored, &has, NULL) != UNIAP_OK || !has)
		return -1;
	return memcmp(stored, body_sha256, STORE_SHA256_BYTES) == 0 ? 0 : -1;
}

/* The stored request: summary first (options and refs), then the resolved documents. */
static char *api_plan_request(const cJSON *body, const struct cluster_profile *c,
                              const struct model_profile *m)
{
	static const char *const option_keys[] = {
		"batch", "schedule", "space", "time_limit_s", "deadline_s", "gap", "recompute", "zero",
		"sequence_parallel", "selective_recompute", "uneven_microbatches", "virtual_stages", "early_stop",
		"memory_margin", "targets", "runtime", "fp8", "context_parallel", "cp_comm", "every_candidate",
		"objective",
	};
	cJSON *o = cJSON_CreateObject(), *sum = NULL, *cd = NULL, *md = NULL;
	char *text = NULL;
	size_t k;
	int ok = o && (sum = cJSON_AddObjectToObject(o, "summary")) != NULL;

	for (k = 0; ok && k < sizeof(option_keys) / sizeof(option_keys[0]); k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, option_keys[k]);

		if (v)
			ok = cJSON_AddItemToObject(sum, option_keys[k], cJSON_Duplicate(v, 1));
	}
	ok = ok && cJSON_AddItemToObject(sum, "cluster", api_ref(cJSON_GetObjectItemCaseSensitive(body, "cluster"))) &&
	     cJSON_AddItemToObject(sum, "model", api_ref(cJSON_GetObjectItemCaseSensitive(body, "model")));
	ok = ok && (cd = jenc_cluster(c)) && cJSON_AddItemToObject(o, "cluster", cd);
	if (!ok && cd && !cJSON_GetObjectItemCaseSensitive(o, "cluster"))
		cJSON_Delete(cd);
	ok = ok && (md = jenc_model(m)) && cJSON_AddItemToObject(o, "model", md);
	if (!ok && md && !cJSON_GetObjectItemCaseSensitive(o, "model"))
		cJSON_Delete(md);
	if (ok)
		text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

static void api_retry_later(struct http_response *res)
{
	http_response_add_header(res, "Retry-After", API_RETRY_AFTER_S);
}

/*
 * SHA-256 of the bytes that make a request: the body and, for a job of a
 * path (a calibration names its cluster there), the path too, so a replay
 * of the same body against another path is not the same request.
 */
static void api_body_hash(const struct http_request *req, enum store_job_kind kind,
                          unsigned char out[STORE_SHA256_BYTES])
{
	const char *body = req->body ? req->body : "";
	size_t len = req->body ? req->body_len : 0, pl;
	char *buf;

	if (kind == STORE_JOB_PLAN || !req->path) {
		store_sha256(body, len, out);
		return;
	}
	pl = strlen(req->path);
	buf = malloc(pl + 1 + len);
	if (!buf) { /* then the path is not in it: a replay is still compared by its request */
		store_sha256(body, len, out);
		return;
	}
	memcpy(buf, req->path, pl);
	buf[pl] = '\n';
	memcpy(buf + pl + 1, body, len);
	store_sha256(buf, pl + 1 + len, out);
	free(buf);
}

void api_job_create(struct http_request *req, struct http_response *res, enum store_job_kind kind,
                    api_job_request_fn build)
{
	const struct api_app *app = req->app;
	int64_t tenant = api_principal(req)->tenant_id, id = 0;
	const char *idem = http_request_header(req, "Idempotency-Key");
	struct store_job job;
	struct uniap_err err;
	char *text = NULL, loc[64];
	unsigned char body_sha256[STORE_SHA256_BYTES];
	int existed = 0;
	uniap_code rc;

	err_clear(&err);
	memset(&job, 0, sizeof(job));
	if (idem && (!*idem || strlen(idem) > STORE_IDEM_KEY_MAX)) {
		rc = err_set(&err, UNIAP_E_ARG, "Idempotency-Key: must be 1..%d bytes", STORE_IDEM_KEY_MAX);
		goto out;
	}
	if (idem) {
		api_body_hash(req, kind, body_sha256);
		if (api_replay(req, tenant, idem, body_sha256, &id) == 0) {
			existed = 1;
			goto answer;
		}
	}
	if ((rc = build(req, &text, &err)) != UNIAP_OK)
		goto out;
	rc = store_job_create_kind(app->store, tenant, kind, idem, text, strlen(text), &id, &existed, &err);
	if (rc == UNIAP_E_INVALID && idem) /* the key names another request */
		rc = err_set(&err, UNIAP_E_CONFLICT,
		             "Idempotency-Key: \"%.64s\" was used for a different request", idem);
	if (rc != UNIAP_OK)
		goto out;
	if (!existed) {
		/* for the replay of these very bytes (api_replay); without it a replay is
		 * still found by resolving the request again */
		if (idem)
			store_job_set_body_hash(app->store, tenant, id, body_sha256, NULL);
		runner_log_transition(app->log, id, tenant, "new", "queued", NULL);
	}
answer:
	rc = store_job_get(app->store, tenant, id, &job, &err);
	/* the runner is woken after that read, so that a new job is answered as
	 * created (queued), never in the later state of a job that ran at once */
	if (!existed)
		runner_wake(app->runner);
	if (rc != UNIAP_OK)
		goto out;
	snprintf(loc, sizeof(loc), "/v1/jobs/%lld", (long long)id);
	api_job_answer(res, HTTP_ACCEPTED, &job);
	http_response_add_header(res, "Location", loc);
	if (existed)
		http_response_add_header(res, "Idempotent-Replayed", "true");
out:
	if (rc != UNIAP_OK) {
		api_fail(req, res, &err);
		if (rc == UNIAP_E_RATE || rc == UNIAP_E_BUSY)
			api_retry_later(res);
	}
	store_job_release(&job);
	cJSON_free(text);
}

/* The stored request of a plan job (api_job_request_fn): options checked, documents resolved. */
/* "fp8": true and "context_parallel" are checked in the request (a 422 naming the field, never a
 * failed job): a model and device that train in FP8, a cluster, sequence and heads the context
 * parallelism divides (cost_check_cp), and targets whose runtime runs them. */
static uniap_code api_plan_checks(const struct uop_options *o, const enum target_kind *targets, size_t n,
                               const struct cluster_profile *c, const struct model_profile *m,
                               struct uniap_err *err)
{
	size_t i;
	uniap_code rc;

	/* "context_parallel" likewise: targets that run it, a cluster, sequence and heads it divides */
	if (o->cp > 1) {
		for (i = 0; i < n; i++)
			if (!target_rules(targets[i])->cp)
				return err_set(err, UNIAP_E_INVALID, "body.context_parallel: %s has no context parallelism",
				               target_rules(targets[i])->runtime);
		if ((rc = cost_check_cp(c, m, o->cp, o->cp_a2a, err)) != UNIAP_OK)
			return rc;
	}
	if (!o->fp8)
		return UNIAP_OK;
	for (i = 0; i < n; i++)
		if (!target_rules(targets[i])->fp8)
			return err_set(err, UNIAP_E_INVALID, "body.fp8: %s does not train in FP8",
			               target_rules(targets[i])->runtime);
	return cost_check_fp8(c, m, err);
}

static uniap_code api_plan_build(struct http_request *req, char **text, struct uniap_err *err)
{
	const struct api_app *app = req->app;
	struct cluster_profile c = { 0 };
	struct model_profile m = { 0 };
	struct uop_options o;
	enum target_kind targets[TARGET_COUNT];
	size_t n_targets = 0;
	int given = 0;
	char *t = NULL;
	uniap_code rc;

	*text = NULL;
	if ((rc = runner_options_json(req->json, "body", app->max_time_limit_s, &o, err)) == UNIAP_OK &&
	    (rc = runner_targets_json(req->json, "body", &o, targets, &n_targets, &given, err)) == UNIAP_OK &&
	    (rc = api_input(req, 1, &c, &m, err)) == UNIAP_OK && (rc = api_input(req, 0, &c, &m, err)) == UNIAP_OK &&
	    (rc = runner_margin_json(req->json, "body", &c, err)) == UNIAP_OK &&
	    (rc = api_plan_checks(&o, targets, n_targets, &c, &m, err)) == UNIAP_OK &&
	    !(t = api_plan_request(req->json, &c, &m)))
		rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
	*text = t;
	cluster_release(&c);
	model_release(&m);
	return rc;
}

void api_plan_create(struct http_request *req, struct http_response *res)
{
	api_job_create(req, res, STORE_JOB_PLAN, api_plan_build);
}

/* ---------------------------------------------------------------- GET /v1/jobs[/{id}] */

/* ?wait=S: whole seconds 1..API_WAIT_MAX_S into *wait_s (0 when absent); -1 after a 400. */
static int api_wait_arg(struct http_request *req, struct http_response *res, unsigned *wait_s)
{
	const char *w = http_request_query(req, "wait");
	char detail[96], *end = NULL;
	unsigned long v;

	*wait_s = 0;
	if (!w)
		return 0;
	v = *w && strlen(w) <= 2 && strspn(w, "0123456789") == strlen(w) ? strtoul(w, &end, 10) : 0;
	if (v >= 1 && v <= API_WAIT_MAX_S) {
		*wait_s = (unsigned)v;
		return 0;
	}
	snprintf(detail, sizeof(detail), "wait: must be whole seconds 1..%d, got \"%.16s\"", API_WAIT_MAX_S, w);
	api_problem(req, res, UNIAP_E_ARG, detail);
	return -1;
}

/*
 * GET /v1/jobs/{id}[?wait=S]: the job with its ETag.  With wait, a job that
 * has not changed - from the client's If-None-Match, or else from its
 * version when the request came - is not answered yet: the server parks the
 * request (no thread waits) and calls this again when the version moves or
 * after S seconds; a finished job answers at once.  Accept:
 * text/event-stream is served the event stream (api_events.c).
 */
void api_job_get(struct http_request *req, struct http_response *res)
{
	const struct api_app *app = req->app;
	const char *inm = http_request_header(req, "If-None-Match");
	struct store_job job;
	struct uniap_err err;
	char tag[HTTP_ETAG_MAX];
	char *text = NULL;
	unsigned wait_s;
	int64_t id;

	err_clear(&err);
	if (api_wants_events(req)) {
		api_job_events(req, res);
		return;
	}
	if (api_wait_arg(req, res, &wait_s) != 0 || api_job_id(req, res, &id) != 0)
		return;
	if (store_job_get(app->store, api_principal(req)->tenant_id, id, &job, &err) != UNIAP_OK) {
		api_fail(req, res, &err);
		return;
	}
	if (!(text = api_job_text(&job)))
		goto out; /* status 0: the dispatcher answers 500 */
	http_etag(text, strlen(text), tag);
	if (wait_s && !req->wait_expired && !api_job_final((int)job.state)) {
		int same = inm ? http_etag_match(inm, tag) : !req->resumed || job.version == req->wait_seen;

		if (same) {
			http_response_wait(res, id, job.version, wait_s * 1000u);
			goto out;
		}
	}
	if (http_response_set_body(res, HTTP_OK, "application/json", text, strlen(text)) == 0)
		http_response_add_header(res, "ETag", tag); /* the dispatcher turns a match into a 304 */
	else
		res->status = 0;
out:
	cJSON_free(text);
	store_job_release(&job);
}

void api_job_list(struct http_request *req, struct http_response *res)
{
	const struct api_app *app = req->app;
	const char *sv = http_request_query(req, "state");
	enum store_job_state state = STORE_JOB_QUEUED;
	struct store_job *jobs = NULL;
	struct uniap_err err;
	cJSON *o = NULL, *items;
	size_t limit, n = 0, i;
	int64_t cursor = 0, next = 0;
	int ok;

	err_clear(&err);
	if (api_page_args(req, res, &limit, &cursor) != 0)
		return;
	if (sv) {
		int k;

		for (k = 0; k < STORE_JOB_STATE_COUNT; k++)
			if (strcmp(sv, store_job_state_name((enum store_job_state)k)) == 0)
				break;
		if (k == STORE_JOB_STATE_COUNT) {
			api_problem(req, res, UNIAP_E_ARG,
			            "state: must be queued, running, succeeded, failed or canceled");
			return;
		}
		state = (enum store_job_state)k;
	}
	if (store_job_list(app->store, api_principal(req)->tenant_id, sv ? &state : NULL, cursor, limit,
	                   &jobs, &n, &next, &err) != UNIAP_OK) {
		api_fail(req, res, &err);
		return;
	}
	o = cJSON_CreateObject();
	ok = o && (items = cJSON_AddArrayToObject(o, "items")) != NULL;
	for (i = 0; ok && i < n; i++) {
		cJSON *meta = api_job_meta(&jobs[i]);

		ok = meta && cJSON_AddItemToArray(items, meta);
		if (!ok)
			cJSON_Delete(meta);
	}
	if (ok && next) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%lld", (long long)next);
		ok = cJSON_AddStringToObject(o, "next_cursor", buf) != NULL;
	} else if (ok) {
		ok = cJSON_AddNullToObject(o, "next_cursor") != NULL;
	}
	if (ok)
		api_json(res, HTTP_OK, o);
	cJSON_Delete(o);
	store_jobs_free(jobs, n);
}

/* ---------------------------------------------------------------- cancel and delete */

/*
 * Cancels job id (job: its state as read, replaced by its state after): a
 * queued job is canceled in one transaction; a running one is asked to stop
 * (here, or through the database to the uniapd that runs it) and its thread
 * given a bounded wait to record it.  0 with *job filled; -1 res answered.
 */
static int api_job_do_cancel(struct http_request *req, struct http_response *res, int64_t id,
                             struct store_job *job)
{
	const struct api_app *app = req->app;
	int64_t tenant = api_principal(req)->tenant_id;
	struct uniap_err err;
	double waited = 0;

	err_clear(&err);
	if (job->state == STORE_JOB_QUEUED) {
		if (store_job_transition(app->store, tenant, id, STORE_JOB_CANCELED, NULL, 0,
		                         "canceled by the client before it ran", NULL, &err) == UNIAP_OK)
			runner_log_transition(app->log, id, tenant, "queued", "canceled", NULL);
		/* else a job thread claimed it meanwhile: cancel it running */
	}
	store_job_release(job);
	if (api_job_read(req, res, id, job) != 0)
		return -1;
	if (job->state == STORE_JOB_RUNNING &&
	    (runner_cancel(app->runner, id) ||
	     store_job_ask(app->store, tenant, id, STORE_ASK_CANCEL, NULL) == UNIAP_OK)) {
		/* the workers are being killed; wait (bounded) for the job thread to record it */
		while (job->state == STORE_JOB_RUNNING && waited < API_CANCEL_WAIT_S) {
			usleep(API_CANCEL_POLL_US);
			waited += API_CANCEL_POLL_US / 1e6;
			store_job_release(job);
			if (api_job_read(req, res, id, job) != 0)
				return -1;
		}
	}
	return 0;
}

/*
 * POST /v1/jobs/{id}/cancel: a queued or running job is canceled (200 with
 * the canceled job, or 202 while a running one is still stopping); a
 * canceled one answers 200 again; a succeeded or failed one is 409 (there is
 * nothing to cancel: DELETE removes it).
 */
void api_job_cancel(struct http_request *req, struct http_response *res)
{
	int64_t id;
	struct store_job job;
	char detail[128];

	memset(&job, 0, sizeof(job));
	if (api_job_id(req, res, &id) != 0 || api_job_read(req, res, id, &job) != 0)
		return;
	if ((job.state == STORE_JOB_QUEUED || job.state == STORE_JOB_RUNNING) &&
	    api_job_do_cancel(req, res, id, &job) != 0)
		return;
	if (job.state == STORE_JOB_SUCCEEDED || job.state == STORE_JOB_FAILED) {
		snprintf(detail, sizeof(detail), "job %lld already %s: nothing to cancel (DELETE removes it)",
		         (long long)id, store_job_state_name(job.state));
		api_problem(req, res, UNIAP_E_CONFLICT, detail);
	} else {
		api_job_answer(res, job.state == STORE_JOB_CANCELED ? HTTP_OK : HTTP_ACCEPTED, &job);
	}
	store_job_release(&job);
}

/*
 * DELETE /v1/jobs/{id}: a finished job (succeeded, failed or canceled) is
 * deleted, its result with it (204; the tenant's stored jobs and bytes go
 * down, also on a full store).  A queued or running job is canceled as
 * POST /v1/jobs/{id}/cancel does, for one release more, with a Deprecation
 * header and a Link to that operation (docs/jobs.md, "Cancel and delete").
 */
void api_job_delete(struct http_request *req, struct http_response *res)
{
	const struct api_app *app = req->app;
	int64_t tenant = api_principal(req)->tenant_id, id;
	struct store_job job;
	struct uniap_err err;
	char detail[96], link[96];

	err_clear(&err);
	memset(&job, 0, sizeof(job));
	if (api_job_id(req, res, &id) != 0 || api_job_read(req, res, id, &job) != 0)
		return;
	if (job.state == STORE_JOB_QUEUED || job.state == STORE_JOB_RUNNING) {
		if (api_job_do_cancel(req, res, id, &job) != 0)
			return;
		api_job_answer(res, job.state == STORE_JOB_CANCELED ? HTTP_OK : HTTP_ACCEPTED, &job);
		snprintf(link, sizeof(link), "</v1/jobs/%lld/cancel>; rel=\"successor-version\"", (long long)id);
		http_response_add_header(res, "Deprecation", "true");
		http_response_add_header(res, "Link", link);
	} else if (store_job_delete(app->store, tenant, id, &err) == UNIAP_OK) {
		if (http_response_set_body(res, HTTP_NO_CONTENT, NULL, NULL, 0) != 0)
			api_problem(req, res, UNIAP_E_NOMEM, "out of memory");
	} else if (err.code == UNIAP_E_NOTFOUND) {
		snprintf(detail, sizeof(detail), "job %lld: not found", (long long)id);
		api_problem(req, res, UNIAP_E_NOTFOUND, detail);
	} else {
		api_fail(req, res, &err);
	}
	store_job_release(&job);
}

/* ---------------------------------------------------------------- POST /v1/jobs/{id}/stop */

void api_job_stop(struct http_request *req, struct http_response *res)
{
	const struct api_app *app = req->app;
	int64_t id;
	struct store_job job;
	struct uniap_err err;
	char detail[192];

	err_clear(&err);
	memset(&job, 0, sizeof(job));
	if (api_job_id(req, res, &id) != 0)
		return;
	if (api_job_read(req, res, id, &job) != 0)
		return;
	if (job.kind != STORE_JOB_PLAN && job.kind != STORE_JOB_ALLOCATION) {
		snprintf(detail, sizeof(detail), "job %lld is a %s: only a plan or an allocation stops with what it has; "
		         "POST /v1/jobs/%lld/cancel cancels it",
		         (long long)id, store_job_kind_name(job.kind), (long long)id);
		api_problem(req, res, UNIAP_E_CONFLICT, detail);
	} else if (job.state == STORE_JOB_RUNNING &&
	           (runner_stop_job(app->runner, id) ||
	            store_job_ask(app->store, api_principal(req)->tenant_id, id, STORE_ASK_STOP, &err) == UNIAP_OK)) {
		/* here, or through the database to the uniapd that runs it */
		api_job_answer(res, HTTP_ACCEPTED, &job);
	} else if (job.state == STORE_JOB_RUNNING && err.code != UNIAP_E_CONFLICT) {
		api_fail(req, res, &err);
	} else if (job.state == STORE_JOB_RUNNING) {
		snprintf(detail, sizeof(detail), "job %lld ended meanwhile", (long long)id);
		api_problem(req, res, UNIAP_E_CONFLICT, detail);
	} else {
		snprintf(detail, sizeof(detail), "job %lld is %s: only a running job stops%s", (long long)id,
		         store_job_state_name(job.state), job.state == STORE_JOB_QUEUED ? " (POST .../cancel cancels it)" : "");
		api_problem(req, res, UNIAP_E_CONFLICT, detail);
	}
	store_job_release(&job);
}

/* ---------------------------------------------------------------- GET /v1/jobs/{id}/plan */

/*
 * The plan of target tv (NULL: the first one's, result.plan) in a plan job's
 * result: result.targets[i].plan when the job planned several, result.plan
 * when tv is the one it planned; UNIAP_E_NOTFOUND when it planned no such
 * target.  *pv is borrowed from result (may be a JSON null: nothing fits).
 */
static uniap_code api_target_plan(const cJSON *result, int64_t id, const char *tv, const cJSON **pv,
                                  struct uniap_err *err)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(result, "targets"), *t, *own;
	enum target_kind kind;

	*pv = cJSON_GetObjectItemCaseSensitive(result, "plan");
	if (!tv)
		return UNIAP_OK;
	if (target_parse(tv, &kind) != 0)
		return err_set(err, UNIAP_E_ARG, "target: must be any, megatron, deepspeed or galvatron");
	cJSON_ArrayForEach(t, list) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "target");

		if (cJSON_IsString(name) && strcmp(name->valuestring, tv) == 0) {
			*pv = cJSON_GetObjectItemCaseSensitive(t, "plan");
			return UNIAP_OK;
		}
	}
	own = cJSON_GetObjectItemCaseSensitive(result, "target");
	if ((cJSON_IsString(own) && strcmp(own->valuestring, tv) == 0) || (!own && kind == TARGET_ANY))
		return UNIAP_OK;
	return err_set(err, UNIAP_E_NOTFOUND, "target: job %lld did not plan for %s (POST /v1/plans with \"targets\")",
	               (long long)id, tv);
}

/*
 * GET /v1/jobs/{id}/plan[?format=F][&target=T][&wait=S]: the plan of a
 * succeeded plan job in format F.  With wait, a job that has not finished is
 * parked (no thread waits, as GET /v1/jobs/{id}?wait=S) until it has, or for
 * S seconds, so one request submits-then-reads: after S seconds an unfinished
 * job is the usual 409.
 */
void api_job_plan(struct http_request *req, struct http_response *res)
{
	const struct api_app *app = req->app;
	const char *fv = http_request_query(req, "format");
	const char *tv = http_request_query(req, "target");
	enum exp_format fmt = EXP_JSON;
	struct store_job job;
	struct runner_request rq;
	struct plan_doc plan = { 0 };
	struct uniap_err err;
	cJSON *result = NULL;
	const cJSON *pv;
	char *out = NULL;
	size_t len = 0;
	unsigned wait_s;
	int64_t id;
	uniap_code rc;

	err_clear(&err);
	memset(&job, 0, sizeof(job));
	memset(&rq, 0, sizeof(rq));
	if (api_wait_arg(req, res, &wait_s) != 0 || api_job_id(req, res, &id) != 0)
		return;
	if (fv && exp_format_parse(fv, &fmt) != 0) {
		api_problem(req, res, UNIAP_E_ARG, "format: must be json, text, galvatron, megatron, deepspeed or chrome-trace");
		return;
	}
	if ((rc = store_job_get(app->store, api_principal(req)->tenant_id, id, &job, &err)) != UNIAP_OK)
		goto out;
	if (job.kind != STORE_JOB_PLAN) {
		rc = err_set(&err, UNIAP_E_CONFLICT, "job %lld is a %s: it makes no plan (see result)", (long long)id,
		             store_job_kind_name(job.kind));
		goto out;
	}
	if (wait_s && !req->wait_expired && !api_job_final((int)job.state)) {
		http_response_wait(res, id, job.version, wait_s * 1000u); /* again at each version */
		goto out;
	}
	if (job.state != STORE_JOB_SUCCEEDED) {
		rc = err_set(&err, UNIAP_E_CONFLICT, "job %lld is %s: a plan exists once it has succeeded%s",
		             (long long)id, store_job_state_name(job.state),
		             api_job_final((int)job.state) ? "" : " (?wait=S waits for it)");
		goto out;
	}
	if ((rc = jdec_parse(job.result, job.result_bytes, "result", &result, &err)) != UNIAP_OK)
		goto out;
	if ((rc = api_target_plan(result, id, tv, &pv, &err)) != UNIAP_OK)
		goto out;
	if (!cJSON_IsObject(pv)) {
		rc = err_set(&err, UNIAP_E_INFEASIBLE, "job %lld: no plan fits the memory (see result.candidates)",
		             (long long)id);
		goto out;
	}
	if ((rc = jdec_plan_json(pv, "result.plan", &plan, &err)) != UNIAP_OK ||
	    (rc = runner_request_decode(job.request, job.request_bytes, &rq, &err)) != UNIAP_OK ||
	    (rc = exp_plan_doc(fmt, &rq.cluster, &rq.model, &plan, &out, &len, &err)) != UNIAP_OK)
		goto out;
	if (http_response_set_body(res, HTTP_OK, exp_format_media_type(fmt), out, len) != 0)
		res->status = 0;
out:
	if (rc != UNIAP_OK)
		api_fail(req, res, &err);
	free(out);
	cJSON_Delete(result);
	plan_doc_release(&plan);
	runner_request_release(&rq);
	store_job_release(&job);
}
