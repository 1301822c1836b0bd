/*
 * api.h - the synchronous /v1 resources of uniapd: the catalog, the
 * tenant's stored cluster and model documents, and POST /v1/evaluate.
 *
 * Every handler acts for the caller's tenant (the authenticated principal,
 * or app->anonymous under --no-auth) and sees only that tenant's documents:
 * another tenant's id answers 404, like an id that never existed.  Errors are
 * problem+json from the one code-to-status table (problem.h); a document
 * over the tenant's stored-bytes quota is UNIAP_E_LIMIT, so 413.
 *
 * Never: keep state between requests, or run long work on a request thread (jobs and
 * the offload pool do that).
 */
#ifndef UNIAP_API_H
#define UNIAP_API_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "http.h"
#include "model.h"
#include "store.h"

struct runner;
struct offload;
struct ui_asset;

/* What the handlers find in req->app. */
struct api_app {
	struct store *store;              /* borrowed from main(); NULL until opened */
	struct http_principal anonymous;  /* the --no-auth tenant */
	struct runner *runner;            /* borrowed: runs the plan jobs; NULL: jobs stay queued */
	FILE *log;                        /* job transitions made by handlers (queued, canceled) */
	double max_time_limit_s;          /* cap on a plan's time_limit_s (uniapd: --max-time-limit, 600);
	                                     0: 86400 */
	struct offload *offload;          /* borrowed: runs POST /v1/evaluate's work; NULL: on the request
	                                     thread (tests) */
	double evaluate_time_limit_s;     /* an evaluation's cap, queueing included (uniapd
	                                     --evaluate-time-limit); 0: API_EVALUATE_TIME_LIMIT_S */
	double evaluate_max_bytes;        /* an evaluation's cost tables at most (uniapd --evaluate-memory);
	                                     0: API_EVALUATE_MAX_BYTES */
	double evaluate_total_bytes;      /* all evaluations' cost tables at once at most (uniapd
	                                     --evaluate-memory-total); 0: no cap */
	atomic_llong eval_bytes;          /* what the evaluations running now hold of it */
	atomic_llong jobs_purged;         /* finished jobs deleted by the retention sweep (uniapd's main
	                                     thread adds, GET /metrics reads) */
	const struct ui_asset *ui_assets; /* borrowed: the web UI's files (ui.h; uniapd: compiled in,
	                                     ui_assets.h); NULL: /ui/ answers 404 */
	size_t ui_asset_count;
};

#define API_EVALUATE_TIME_LIMIT_S 10.0 /* an evaluation's default cap */
#define API_EVALUATE_MAX_BYTES (256.0 * 1024 * 1024) /* an evaluation's default cost-table budget */
#define API_EVALUATE_TOTAL_BYTES (1024.0 * 1024 * 1024) /* all evaluations' at once, by default */
#define API_RETRY_AFTER_S "5"            /* Retry-After of a 429 or 503 */
#define API_LIST_DEFAULT 20  /* ?limit= when absent */
#define API_LIST_MAX 100     /* ?limit= at most */

/* GET /v1/catalog: {"clusters":[{name, description, source}], "models":[...]}. */
void api_catalog_list(struct http_request *req, struct http_response *res);
/* GET /v1/catalog/{name}: the full cluster or model profile. */
void api_catalog_get(struct http_request *req, struct http_response *res);

/* POST /v1/clusters, /v1/models: validate and store the body; 201 with its metadata. */
void api_cluster_create(struct http_request *req, struct http_response *res);
void api_model_create(struct http_request *req, struct http_response *res);
/* GET /v1/clusters?limit=&cursor=: {"items":[metadata...], "next_cursor": string or null}. */
void api_cluster_list(struct http_request *req, struct http_response *res);
void api_model_list(struct http_request *req, struct http_response *res);
/* GET /v1/clusters/{id}: the stored document. */
void api_cluster_get(struct http_request *req, struct http_response *res);
void api_model_get(struct http_request *req, struct http_response *res);
/* DELETE /v1/clusters/{id}: 204. */
void api_cluster_delete(struct http_request *req, struct http_response *res);
void api_model_delete(struct http_request *req, struct http_response *res);

/*
 * POST /v1/evaluate {cluster, model, batch, plan}: the report of `uniap
 * evaluate`.  The body is decoded here; the cost build and the report run on
 * app->offload (the request waits, its thread free) within
 * app->evaluate_time_limit_s: past it 413 naming the cap, a full pool 503 and
 * a tenant's full share 429, both with Retry-After.
 */
void api_evaluate(struct http_request *req, struct http_response *res);

/* ---- plan jobs (server/api_jobs.c) ---- */

/* POST /v1/plans {cluster, model, batch, schedule?, space?, time_limit_s?, gap?, recompute?,
 * zero?, sequence_parallel?, selective_recompute?,
 * uneven_microbatches?, early_stop?, every_candidate?}: 202 with the job and Location; Idempotency-Key makes a retry return the same job. */
void api_plan_create(struct http_request *req, struct http_response *res);
/* GET /v1/jobs?state=&limit=&cursor=: the tenant's jobs, newest ids last. */
void api_job_list(struct http_request *req, struct http_response *res);
/* GET /v1/jobs/{id}: state, progress, timestamps, request, result or error. */
void api_job_get(struct http_request *req, struct http_response *res);
/* POST /v1/jobs/{id}/cancel: cancels a queued or running job (its workers are stopped); 409 for a
 * succeeded or failed one. */
void api_job_cancel(struct http_request *req, struct http_response *res);
/* POST /v1/jobs/{id}/stop: a running plan job ends now with the best plan so far
 * (runner_stop_job): 202 with the job, still running for a moment; 409 for a job
 * that is not running here or is not a plan. */
/* DELETE /v1/jobs/{id}: deletes a finished job (succeeded, failed, canceled); cancels a queued or
 * running one for one release more (deprecated, with a Deprecation header). */
void api_job_delete(struct http_request *req, struct http_response *res);
void api_job_stop(struct http_request *req, struct http_response *res);
/* GET /v1/jobs/{id}/plan?format=json|text|galvatron|megatron|deepspeed: the exported plan. */
void api_job_plan(struct http_request *req, struct http_response *res);

/*
 * Checks a job request (req borrowed) and builds the text to store: on
 * UNIAP_OK *text is owned by the caller (cJSON_free()); otherwise err says why
 * (the status comes from its code).
 */
typedef uniap_code (*api_job_request_fn)(struct http_request *req, char **text, struct uniap_err *err);

/*
 * The one way a job is queued: Idempotency-Key (a replay of the same bytes
 * is the stored job, answered with Idempotent-Replayed), build, store as a
 * job of kind, 202 with Location, wake the runner.
 */
void api_job_create(struct http_request *req, struct http_response *res, enum store_job_kind kind,
                    api_job_request_fn build);

/* ---- calibration jobs (server/api_calib.c) ---- */

/* POST /v1/clusters/{id}/calibrations: queues a calibration of the tenant's stored cluster {id}. */
void api_calibration_create(struct http_request *req, struct http_response *res);

/* ---- allocation jobs (server/api_alloc.c) ---- */

/* POST /v1/allocations {cluster | clusters, jobs, objective?, restart_cost?, drain?, no_plans?,
 * time_limit_s?, current?, curves?}: queues an allocation of the cluster (or pools) among the
 * jobs (docs/allocation.md); 202 with the job, like a plan. */
void api_allocation_create(struct http_request *req, struct http_response *res);

/* GET /v1/allocations/{id}: an allocation job as its owner sees it (the report whole) or, once it
 * succeeded, as a tenant one of its jobs names ("tenant") sees it: the others' jobs redacted
 * (jobs_report_redact), no request.  404 for anyone else, as for an id that never existed. */
void api_allocation_get(struct http_request *req, struct http_response *res);

/* ---- watching jobs (server/api_events.c) ---- */

#define API_WAIT_MAX_S 60  /* ?wait= of GET /v1/jobs/{id} at most */

/* GET /v1/jobs/{id}/events: the job's changes as Server-Sent Events until it finishes
 * (Last-Event-ID resumes); 406 when Accept rules text/event-stream out. */
void api_job_events(struct http_request *req, struct http_response *res);
/* The server's version hook (http_version_fn; ctx is the struct api_app): a job's version. */
int api_job_version(void *ctx, int64_t key, int64_t *version);
/* The server's wait-gone hook (http_wait_gone_fn; ctx is the struct api_app): an evaluation
 * whose waiter left is abandoned (as POST /v1/evaluate's handler does when told); a job's
 * wait holds nothing. */
void api_wait_gone(void *ctx, int64_t key);
/* 1 for succeeded, failed and canceled (enum store_job_state). */
int api_job_final(int state);
/* 1 when the request's Accept asks for text/event-stream rather than JSON. */
int api_wants_events(const struct http_request *req);

/* ---- imports (server/api_import.c) ---- */

/* ?format= of POST /v1/clusters (galvatron, nccl-tests) and /v1/models (galvatron): builds the
 * document from the import body and puts it in place of req->json (the body is freed), so the
 * create handler stores it like an upload.  0: go on (also without ?format=); -1: res holds the
 * problem (400 naming format, 422 naming the body member). */
int api_import(struct http_request *req, struct http_response *res, int cluster);

/* ---- shared by the api_*.c files: api_base.c, but api_input (api.c) ---- */

const struct http_principal *api_principal(const struct http_request *req);
void api_problem(struct http_request *req, struct http_response *res, uniap_code code, const char *detail);
void api_fail(struct http_request *req, struct http_response *res, const struct uniap_err *err);
void api_json(struct http_response *res, int status, const struct cJSON *json);
/* Decimal digits only (s borrowed): api_parse_count takes 0..INT64_MAX, api_parse_id
 * 1..INT64_MAX; 0 ok with *out set, -1 otherwise. */
int api_parse_count(const char *s, int64_t *out);
int api_parse_id(const char *s, int64_t *out);
void api_time(int64_t ms, char *buf, size_t cap);
/* ?limit= and ?cursor= of a list; -1 after answering a 400. */
int api_page_args(struct http_request *req, struct http_response *res, size_t *limit, int64_t *cursor);
/* A job's small fields (id, state, kind, times, progress, error, links) as an object; owned or NULL. */
struct cJSON *api_job_meta(const struct store_job *j);
/* body.<cluster|model> (a stored id, a catalog name or an inline document) decoded into c or m. */
uniap_code api_input(struct http_request *req, int cluster, struct cluster_profile *c,
                     struct model_profile *m, struct uniap_err *err);

#endif
