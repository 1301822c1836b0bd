/*
 * api_alloc.c - POST /v1/allocations (api.h): checks an allocation request
 * here, in the request thread (a bad jobs document, cluster or option is a
 * 422 naming its path; documents given by stored id are the tenant's), and
 * queues it as an allocation job (api_job_create); a job thread plans the
 * curves on the shared worker pool and allocates (allocation.h, runner.c).
 *
 * Never: plan or allocate here.
 */
#include "api.h"

#include "allocation.h"
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
