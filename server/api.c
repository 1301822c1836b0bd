/*
 * api.c - the synchronous /v1 resources (api.h): catalog, stored clusters
 * and models, evaluate.  Documents are validated with the same decoders the
 * CLI uses and stored as the compact print of the parsed body.
 */
#include "api.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "catalog.h"
#include "docref.h"
#include "jdecode.h"
#include "jencode.h"
#include "offload.h"
#include "opt.h"
#include "problem.h"
#include "store.h"

static const char *api_kind_name(enum store_doc_kind kind)
{
	return kind == STORE_DOC_CLUSTER ? "cluster" : "model";
}

/* {"id", "kind", "name", "bytes", "created_at"} of d (borrowed); owned or NULL. */
static cJSON *api_doc_meta(const struct store_doc *d)
{
	cJSON *o = cJSON_CreateObject();
	char when[32];

	api_time(d->created_at_ms, when, sizeof(when));
	if (!o || !cJSON_AddNumberToObject(o, "id", (double)d->id) ||
	    !cJSON_AddStringToObject(o, "kind", api_kind_name(d->kind)) ||
	    !cJSON_AddStringToObject(o, "name", d->name) ||
	    !cJSON_AddNumberToObject(o, "bytes", (double)d->bytes) ||
	    !cJSON_AddStringToObject(o, "created_at", when)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* ---------------------------------------------------------------- catalog */

static cJSON *api_catalog_entries(enum catalog_kind kind)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i, n = catalog_count(kind);

	for (i = 0; arr && i < n; i++) {
		const struct catalog_entry *e = catalog_entry(kind, i);
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			cJSON_Delete(arr);
			return NULL;
		}
		if (!cJSON_AddStringToObject(o, "name", e->name) ||
		    !cJSON_AddStringToObject(o, "description", e->description) ||
		    !cJSON_AddStringToObject(o, "source", e->sources)) {
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

void api_catalog_list(struct http_request *req, struct http_response *res)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *c = api_catalog_entries(CATALOG_CLUSTER);
	cJSON *m = api_catalog_entries(CATALOG_MODEL);

	(void)req;
	if (o && c && m && cJSON_AddItemToObject(o, "clusters", c)) {
		c = NULL;
		if (cJSON_AddItemToObject(o, "models", m)) {
			m = NULL;
			api_json(res, HTTP_OK, o);
		}
	}
	cJSON_Delete(c);
	cJSON_Delete(m);
	cJSON_Delete(o);
}

void api_catalog_get(struct http_request *req, struct http_response *res)
{
	const char *name = http_request_param(req, "name");
	struct cluster_profile c = { 0 };
	struct model_profile m = { 0 };
	struct uniap_err err;
	cJSON *doc = NULL;

	err_clear(&err);
	if (name && catalog_has(CATALOG_CLUSTER, name)) {
		if (catalog_cluster(name, &c, &err) == UNIAP_OK)
			doc = jenc_cluster(&c);
	} else if (name && catalog_has(CATALOG_MODEL, name)) {
		if (catalog_model(name, &m, &err) == UNIAP_OK)
			doc = jenc_model(&m);
	} else {
		char detail[256];

		snprintf(detail, sizeof(detail), "catalog: no cluster or model named \"%.128s\"", name ? name : "");
		api_problem(req, res, UNIAP_E_NOTFOUND, detail);
		goto out;
	}
	if (err.code != UNIAP_OK)
		api_fail(req, res, &err);
	else
		api_json(res, HTTP_OK, doc);
out:
	cJSON_Delete(doc);
	cluster_release(&c);
	model_release(&m);
}

/* ---------------------------------------------------------------- documents */

static void api_doc_create(struct http_request *req, struct http_response *res, enum store_doc_kind kind)
{
	const struct api_app *app = req->app;
	int64_t tenant = api_principal(req)->tenant_id;
	struct cluster_profile c = { 0 };
	struct model_profile m = { 0 };
	struct store_doc d = { 0 };
	struct uniap_err err;
	const char *name;
	char *text = NULL;
	char location[64];
	int64_t id = 0;
	cJSON *meta = NULL;
	uniap_code rc;

	err_clear(&err);
	rc = kind == STORE_DOC_CLUSTER ? jdec_cluster_json(req->json, "body", &c, &err)
	                               : jdec_model_json(req->json, "body", &m, &err);
	if (rc != UNIAP_OK)
		goto out;
	name = kind == STORE_DOC_CLUSTER ? c.name : m.name;
	text = cJSON_PrintUnformatted(req->json);
	if (!text) {
		rc = err_set(&err, UNIAP_E_NOMEM, "out of memory");
		goto out;
	}
	rc = store_doc_put(app->store, tenant, kind, name ? name : "", text, strlen(text), &id, &err);
	if (rc == UNIAP_OK)
		rc = store_doc_get(app->store, tenant, id, &d, &err);
	if (rc != UNIAP_OK)
		goto out;
	meta = api_doc_meta(&d);
	snprintf(location, sizeof(location), "/v1/%ss/%lld", api_kind_name(kind), (long long)id);
	api_json(res, HTTP_CREATED, meta);
	if (res->status)
		http_response_add_header(res, "Location", location);
out:
	if (rc != UNIAP_OK)
		api_fail(req, res, &err);
	cJSON_Delete(meta);
	cJSON_free(text);
	store_doc_release(&d);
	cluster_release(&c);
	model_release(&m);
}

void api_cluster_create(struct http_request *req, struct http_response *res)
{
	if (api_import(req, res, 1) == 0)
		api_doc_create(req, res, STORE_DOC_CLUSTER);
}

void api_model_create(struct http_request *req, struct http_response *res)
{
	if (api_import(req, res, 0) == 0)
		api_doc_create(req, res, STORE_DOC_MODEL);
}

/* The tenant's document {id} of kind into *d (release with store_doc_release); another kind is not found. */
/* rc, with a not-found message that names the kind asked for. */
static uniap_code api_doc_missing(uniap_code rc, enum store_doc_kind kind, int64_t id, struct uniap_err *err)
{
	if (rc == UNIAP_E_NOTFOUND)
		err_set(err, UNIAP_E_NOTFOUND, "%s: no %s with id %lld", api_kind_name(kind), api_kind_name(kind),
		        (long long)id);
	return rc;
}

static uniap_code api_doc_fetch(struct http_request *req, enum store_doc_kind kind, int64_t id,
                                struct store_doc *d, struct uniap_err *err)
{
	const struct api_app *app = req->app;
	uniap_code rc = store_doc_get(app->store, api_principal(req)->tenant_id, id, d, err);

	if (rc == UNIAP_OK && d->kind != kind) {
		store_doc_release(d);
		rc = UNIAP_E_NOTFOUND;
	}
	return api_doc_missing(rc, kind, id, err);
}

/* The path's {id}; a problem (404: a non-number names no document) when bad. */
static int api_path_id(struct http_request *req, struct http_response *res, enum store_doc_kind kind,
                       int64_t *id)
{
	const char *s = http_request_param(req, "id");
	char detail[256];

	if (api_parse_id(s, id) == 0)
		return 0;
	snprintf(detail, sizeof(detail), "%s: no %s with id \"%.64s\"", api_kind_name(kind), api_kind_name(kind),
	         s ? s : "");
	api_problem(req, res, UNIAP_E_NOTFOUND, detail);
	return -1;
}

static void api_doc_get(struct http_request *req, struct http_response *res, enum store_doc_kind kind)
{
	struct store_doc d = { 0 };
	struct uniap_err err;
	int64_t id;

	err_clear(&err);
	if (api_path_id(req, res, kind, &id) != 0)
		return;
	if (api_doc_fetch(req, kind, id, &d, &err) != UNIAP_OK)
		api_fail(req, res, &err);
	else if (http_response_set_body(res, HTTP_OK, "application/json", d.body, (size_t)d.bytes) != 0)
		res->status = 0;
	store_doc_release(&d);
}

void api_cluster_get(struct http_request *req, struct http_response *res)
{
	api_doc_get(req, res, STORE_DOC_CLUSTER);
}

void api_model_get(struct http_request *req, struct http_response *res)
{
	api_doc_get(req, res, STORE_DOC_MODEL);
}

static void api_doc_delete(struct http_request *req, struct http_response *res, enum store_doc_kind kind)
{
	const struct api_app *app = req->app;
	struct uniap_err err;
	int64_t id;

	err_clear(&err);
	if (api_path_id(req, res, kind, &id) != 0)
		return;
	if (api_doc_missing(store_doc_delete(app->store, api_principal(req)->tenant_id, kind, id, &err),
	                    kind, id, &err) != UNIAP_OK)
		api_fail(req, res, &err);
	else if (http_response_set_body(res, HTTP_NO_CONTENT, NULL, NULL, 0) != 0)
		res->status = 0;
}

void api_cluster_delete(struct http_request *req, struct http_response *res)
{
	api_doc_delete(req, res, STORE_DOC_CLUSTER);
}

void api_model_delete(struct http_request *req, struct http_response *res)
{
	api_doc_delete(req, res, STORE_DOC_MODEL);
}

/*
 * The store lists both kinds together: pages are scanned from cursor, the
 * documents of kind collected up to limit; next_cursor is the last one's id
 * when another of kind follows, else null.
 */
static void api_doc_list(struct http_request *req, struct http_response *res, enum store_doc_kind kind)
{
	const struct api_app *app = req->app;
	int64_t tenant = api_principal(req)->tenant_id;
	struct uniap_err err;
	cJSON *o = NULL, *items = NULL;
	size_t limit, count = 0;
	int64_t cursor, last = 0;
	int more = 0, ok;
	uniap_code rc = UNIAP_OK;

	err_clear(&err);
	if (api_page_args(req, res, &limit, &cursor) != 0)
		return;
	o = cJSON_CreateObject();
	items = cJSON_CreateArray();
	ok = o && items && cJSON_AddItemToObject(o, "items", items);
	if (!ok) {
		cJSON_Delete(items);
		goto out;
	}
	do {
		struct store_doc *page = NULL;
		size_t n = 0, i;
		int64_t next = 0;

		rc = store_doc_list(app->store, tenant, cursor, 0, &page, &n, &next, &err);
		if (rc != UNIAP_OK)
			break;
		for (i = 0; ok && i < n && !more; i++) {
			cJSON *meta;

			if (page[i].kind != kind)
				continue;
			if (count == limit) {
				more = 1;
				break;
			}
			meta = api_doc_meta(&page[i]);
			ok = meta && cJSON_AddItemToArray(items, meta);
			if (!ok)
				cJSON_Delete(meta);
			last = page[i].id;
			count++;
		}
		free(page);
		cursor = next;
	} while (ok && !more && cursor != 0);
	if (rc != UNIAP_OK) {
		api_fail(req, res, &err);
		goto out;
	}
	if (ok && more) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%lld", (long long)last);
		ok = cJSON_AddStringToObject(o, "next_cursor", buf) != NULL;
	} else if (ok) {
		ok = cJSON_AddNullToObject(o, "next_cursor") != NULL;
	}
	if (ok)
		api_json(res, HTTP_OK, o);
out:
	cJSON_Delete(o);
}

void api_cluster_list(struct http_request *req, struct http_response *res)
{
	api_doc_list(req, res, STORE_DOC_CLUSTER);
}

void api_model_list(struct http_request *req, struct http_response *res)
{
	api_doc_list(req, res, STORE_DOC_MODEL);
}

/* ---------------------------------------------------------------- evaluate */

/*
 * body.<field> (cluster or model) into c or m: a stored id (a number or a
 * string of digits), a catalog name, or an inline document.
 */
static uniap_code api_eval_input(struct http_request *req, enum store_doc_kind kind, struct cluster_profile *c,
                                 struct model_profile *m, struct uniap_err *err)
{
	const char *field = api_kind_name(kind);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req->json, field);
	char path[32];
	int64_t id = 0;
	uniap_code rc;

	snprintf(path, sizeof(path), "body.%s", field);
	if (!v)
		return err_set(err, UNIAP_E_INVALID, "%s: required", path);
	if (cJSON_IsObject(v))
		return kind == STORE_DOC_CLUSTER ? jdec_cluster_json(v, path, c, err) : jdec_model_json(v, path, m, err);
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble < 1 || v->valuedouble > 9007199254740991.0 ||
		    v->valuedouble != (double)(int64_t)v->valuedouble)
			return err_set(err, UNIAP_E_INVALID, "%s: an id must be an integer >= 1", path);
		id = (int64_t)v->valuedouble;
	} else if (cJSON_IsString(v)) {
		if (api_parse_id(v->valuestring, &id) != 0) {
			if (kind == STORE_DOC_CLUSTER ? !catalog_has(CATALOG_CLUSTER, v->valuestring)
			                              : !catalog_has(CATALOG_MODEL, v->valuestring))
				return catalog_unknown(kind == STORE_DOC_CLUSTER ? CATALOG_CLUSTER : CATALOG_MODEL,
				                       v->valuestring, path, DOCREF_CATALOG_HINT, UNIAP_E_INVALID, err);
			rc = kind == STORE_DOC_CLUSTER ? catalog_cluster(v->valuestring, c, err)
			                               : catalog_model(v->valuestring, m, err);
			return rc;
		}
	} else {
		return err_set(err, UNIAP_E_INVALID, "%s: must be an id, a catalog name or a %s document, got %s",
		               path, field, jdec_type_name(v));
	}
	{
		struct store_doc d = { 0 };

		rc = api_doc_fetch(req, kind, id, &d, err);
		if (rc == UNIAP_E_NOTFOUND)
			return err_set(err, UNIAP_E_NOTFOUND, "%s: no %s with id %lld", path, field, (long long)id);
		if (rc == UNIAP_OK)
			rc = kind == STORE_DOC_CLUSTER ? jdec_cluster(d.body, (size_t)d.bytes, c, err)
			                               : jdec_model(d.body, (size_t)d.bytes, m, err);
		store_doc_release(&d);
		return rc;
	}
}

uniap_code api_input(struct http_request *req, int cluster, struct cluster_profile *c,
                     struct model_profile *m, struct uniap_err *err)
{
	return api_eval_input(req, cluster ? STORE_DOC_CLUSTER : STORE_DOC_MODEL, c, m, err);
}

/* One evaluation handed to the offload pool: the decoded inputs, then its outcome. */
struct api_eval_task {
	struct cluster_profile c;
	struct model_profile m;
	struct plan_doc plan;
	long batch;
	double deadline_s;     /* opt_clock_s() past which the cost build gives up */
	double limit_s;
	struct api_app *app;   /* borrowed: its memory budget (api_eval_take) */
	struct cost_budget budget; /* ctx: this task */
	long long taken;       /* bytes of app->eval_bytes this task holds while it builds */
	cJSON *report;         /* UNIAP_OK: owned */
	uniap_code rc;
	struct uniap_err err;
};

static void api_eval_free(void *arg)
{
	struct api_eval_task *t = arg;

	if (!t)
		return;
	cJSON_Delete(t->report);
	plan_doc_release(&t->plan);
	cluster_release(&t->c);
	model_release(&t->m);
	free(t);
}

/*
 * The cost build's memory, asked before its tables are allocated: granted
 * while every evaluation's tables together stay within the process's budget
 * (uniapd --evaluate-memory-total), refused otherwise (503, retry).  The
 * per-request cap (budget.max_bytes) was checked before.
 */
static int api_eval_take(void *ctx, double bytes)
{
	struct api_eval_task *t = ctx;
	struct api_app *app = t->app;
	long long want = (long long)ceil(bytes), was = atomic_load(&app->eval_bytes);

	/* compare and swap: two that do not fit together never both see the other's bytes */
	do {
		if (app->evaluate_total_bytes > 0 && (double)(was + want) > app->evaluate_total_bytes)
			return -1;
	} while (!atomic_compare_exchange_weak(&app->eval_bytes, &was, was + want));
	t->taken = want;
	return 0;
}

/* On an offload thread (or inline without a pool): the cost build and the report. */
static void api_eval_run(void *arg)
{
	struct api_eval_task *t = arg;
	int feasible = 0, matches = 0;
	const char *tables;

	err_clear(&t->err);
	t->rc = jenc_evaluate_report(&t->c, &t->m, t->batch, &t->plan, t->deadline_s, &t->budget, &t->report,
	                             &feasible, &matches, &t->err);
	/* the candidate and its tables are freed by now */
	if (t->taken) {
		atomic_fetch_sub(&t->app->eval_bytes, t->taken);
		t->taken = 0;
	}
	if ((t->rc == UNIAP_E_LIMIT || t->rc == UNIAP_E_BUSY) &&
	    (tables = strstr(t->err.msg, "cost tables: ")) != NULL) {
		char said[UNIAP_ERR_MSG_MAX];

		snprintf(said, sizeof(said), "%s", tables + strlen("cost tables: "));
		if (t->rc == UNIAP_E_LIMIT)
			err_set(&t->err, UNIAP_E_LIMIT,
			        "body: the plan's cost tables: %.300s per evaluation (uniapd --evaluate-memory): "
			        "a smaller cluster or model, or `uniap evaluate` locally", said);
		else
			err_set(&t->err, UNIAP_E_BUSY,
			        "the evaluations in progress hold the memory set aside for them "
			        "(uniapd --evaluate-memory-total); %.200s: retry later", said);
	} else if (t->rc == UNIAP_E_LIMIT && opt_clock_s() > t->deadline_s)
		err_set(&t->err, UNIAP_E_LIMIT,
		        "body: the evaluation ran past its time limit of %g s (uniapd --evaluate-time-limit): "
		        "a smaller cluster or model, or `uniap evaluate` locally", t->limit_s);
	else if (t->rc != UNIAP_OK && strncmp(t->err.msg, "plan", 4) == 0) { /* rooted at "plan": point into the body */
		char old[UNIAP_ERR_MSG_MAX];

		memcpy(old, t->err.msg, sizeof(old));
		snprintf(t->err.msg, sizeof(t->err.msg), "body.%.*s", (int)sizeof(old) - 8, old);
	}
}

/* The finished task's answer. */
static void api_eval_answer(struct http_request *req, struct http_response *res, struct api_eval_task *t)
{
	if (t->rc == UNIAP_OK)
		api_json(res, HTTP_OK, t->report);
	else
		api_fail(req, res, &t->err);
	if (t->rc == UNIAP_E_BUSY)
		http_response_add_header(res, "Retry-After", API_RETRY_AFTER_S);
}

void api_evaluate(struct http_request *req, struct http_response *res)
{
	struct api_app *app = req->app;
	struct api_eval_task *t;
	struct uniap_err err;
	const cJSON *batch, *pv;
	int64_t key = 0;
	uniap_code rc;

	err_clear(&err);
	if (req->resumed) {
		/* the work was handed off: its outcome, or it did not end within the wait */
		if ((t = offload_take(app->offload, req->wait_key)) != NULL) {
			api_eval_answer(req, res, t);
			api_eval_free(t);
			return;
		}
		offload_abandon(app->offload, req->wait_key);
		api_problem(req, res, UNIAP_E_BUSY, "the evaluation did not finish in time; retry later");
		http_response_add_header(res, "Retry-After", API_RETRY_AFTER_S);
		return;
	}
	if (!(t = calloc(1, sizeof(*t)))) {
		api_problem(req, res, UNIAP_E_NOMEM, "out of memory");
		return;
	}
	if (!cJSON_IsObject(req->json)) {
		rc = err_set(&err, UNIAP_E_INVALID, "body: must be an object, got %s", jdec_type_name(req->json));
		goto fail;
	}
	if ((rc = api_eval_input(req, STORE_DOC_CLUSTER, &t->c, &t->m, &err)) != UNIAP_OK ||
	    (rc = api_eval_input(req, STORE_DOC_MODEL, &t->c, &t->m, &err)) != UNIAP_OK)
		goto fail;
	batch = cJSON_GetObjectItemCaseSensitive(req->json, "batch");
	if (!cJSON_IsNumber(batch) || batch->valuedouble < 1 || batch->valuedouble > 1e9 ||
	    batch->valuedouble != (double)(long)batch->valuedouble) {
		rc = err_set(&err, UNIAP_E_INVALID, "body.batch: must be an integer 1..1000000000");
		goto fail;
	}
	pv = cJSON_GetObjectItemCaseSensitive(req->json, "plan");
	if (!pv) {
		rc = err_set(&err, UNIAP_E_INVALID, "body.plan: required");
		goto fail;
	}
	if ((rc = jdec_plan_json(pv, "body.plan", &t->plan, &err)) != UNIAP_OK)
		goto fail;
	t->batch = (long)batch->valuedouble;
	t->limit_s = app->evaluate_time_limit_s > 0 ? app->evaluate_time_limit_s : API_EVALUATE_TIME_LIMIT_S;
	t->deadline_s = opt_clock_s() + t->limit_s;
	t->app = app;
	t->budget.max_bytes = app->evaluate_max_bytes > 0 ? app->evaluate_max_bytes : API_EVALUATE_MAX_BYTES;
	t->budget.take = api_eval_take;
	t->budget.ctx = t;
	if (!app->offload) { /* no pool (a test's app): the work runs here */
		api_eval_run(t);
		api_eval_answer(req, res, t);
		api_eval_free(t);
		return;
	}
	/* the time cap counts from here, queueing included; the wait outlasts it a little */
	if ((rc = offload_submit(app->offload, api_principal(req)->tenant_id, api_eval_run, t, api_eval_free, &key,
	                         &err)) != UNIAP_OK) {
		api_fail(req, res, &err);
		if (rc == UNIAP_E_BUSY || rc == UNIAP_E_RATE)
			http_response_add_header(res, "Retry-After", API_RETRY_AFTER_S);
		return;
	}
	http_response_wait(res, key, 0, (unsigned)(t->limit_s * 1000) + 5000);
	return;
fail:
	api_fail(req, res, &err);
	api_eval_free(t);
}
