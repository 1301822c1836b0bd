/*
 * api_alloc.c - POST /v1/allocations (api.h): checks an allocation request
 * here, in the request thread (a bad jobs document, cluster or option is a
 * 422 naming its path; documents given by stored id are the tenant's), and
 * queues it as an allocation job (api_job_create); a job thread plans the
 * curves on the shared worker pool and allocates (allocation.h, runner.c).
 *
 * GET /v1/allocations/{id} shows an allocation to its owner whole and, once it
 * succeeded, to each tenant one of its jobs names, with the other jobs
 * redacted: a platform that allocates a shared cluster among its tenants'
 * jobs lets each see where its jobs run and how busy the cluster is, not what
 * the others train.
 *
 * Never: plan or allocate here; show a job's request, or another tenant's job
 * unredacted, to anyone but the owner.
 */
#include "api.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "allocation.h"
#include "jobs.h"
#include "store.h"

/* The stored request of an allocation (api_job_request_fn). */
static uniap_code api_allocation_build(struct http_request *req, char **text, struct uniap_err *err)
{
	const struct api_app *app = req->app;

	return allocation_request(app->store, api_principal(req)->tenant_id, req->json, app->max_time_limit_s, text,
	                          err);
}

void api_allocation_create(struct http_request *req, struct http_response *res)
{
	api_job_create(req, res, STORE_JOB_ALLOCATION, api_allocation_build);
}

/* 1 when report's jobs (text[0..len)) name tenant; *report gets the parsed report (owned) either way. */
static int api_allocation_names(const char *text, size_t len, const char *tenant, cJSON **report)
{
	const cJSON *jobs, *it;

	*report = text ? cJSON_ParseWithLength(text, len) : NULL;
	jobs = cJSON_GetObjectItemCaseSensitive(*report, "jobs");
	cJSON_ArrayForEach(it, jobs) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "tenant");

		if (cJSON_IsString(t) && strcmp(t->valuestring, tenant) == 0)
			return 1;
	}
	return 0;
}

void api_allocation_get(struct http_request *req, struct http_response *res)
{
	const struct api_app *app = req->app;
	const struct http_principal *who = api_principal(req);
	struct store_job job;
	struct uniap_err err;
	cJSON *o = NULL, *report = NULL, *shown = NULL, *links;
	int64_t id = 0;
	int owner, named;
	char self[64];

	err_clear(&err);
	memset(&job, 0, sizeof(job));
	if (api_parse_id(http_request_param(req, "id"), &id) != 0 ||
	    store_job_get(app->store, STORE_ANY_TENANT, id, &job, &err) != UNIAP_OK || job.kind != STORE_JOB_ALLOCATION) {
		if (err.code != UNIAP_OK && err.code != UNIAP_E_NOTFOUND)
			api_fail(req, res, &err);
		else
			api_problem(req, res, UNIAP_E_NOTFOUND, "id: no such allocation");
		goto out;
	}
	owner = job.tenant_id == who->tenant_id;
	named = job.state == STORE_JOB_SUCCEEDED &&
	        api_allocation_names(job.result, job.result ? (size_t)job.result_bytes : 0, who->name, &report);
	if (!owner && !named) { /* another tenant's allocation that names none of this one's jobs */
		api_problem(req, res, UNIAP_E_NOTFOUND, "id: no such allocation");
		goto out;
	}
	snprintf(self, sizeof(self), "/v1/allocations/%lld", (long long)id);
	if (!(o = api_job_meta(&job)) || !cJSON_AddStringToObject(o, "view", owner ? "owner" : "tenant") ||
	    !(links = cJSON_GetObjectItemCaseSensitive(o, "links")) ||
	    !cJSON_ReplaceItemInObjectCaseSensitive(links, "self", cJSON_CreateString(self))) {
		res->status = 0; /* the dispatcher answers 500 */
		goto out;
	}
	if (!owner) /* the owner's own retry key is none of a tenant's business */
		cJSON_DeleteItemFromObjectCaseSensitive(o, "idempotency_key");
	if (report) {
		if (owner) {
			shown = report; /* moved into the answer */
			report = NULL;
		} else {
			shown = jobs_report_redact(report, who->name);
		}
		if (!shown || !cJSON_AddItemToObject(o, "result", shown)) {
			cJSON_Delete(shown);
			res->status = 0;
			goto out;
		}
	}
	api_json(res, HTTP_OK, o);
out:
	cJSON_Delete(o);
	cJSON_Delete(report);
	store_job_release(&job);
}
