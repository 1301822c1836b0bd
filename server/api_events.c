/*
 * api_events.c - a job's progress for browsers and other watchers (api.h):
 * Server-Sent Events at GET /v1/jobs/{id}/events (and GET /v1/jobs/{id}
 * with Accept: text/event-stream), and the version hook that wakes waiting
 * requests and streams (api_job_version, http.h "Waiting").
 *
 * A stream sends one event per change of the job's version (migration
 * 0004: every write of its state or progress grows it), with that version
 * as the event id: "state" when the state changed (and first), "progress"
 * when only the progress did, "done" for a finished job, after which the
 * stream ends.  Last-Event-ID resumes: the current state at once when the
 * job changed since, else the next change; a finished job the client has
 * seen to the end is a 204 (EventSource then stops reconnecting).  Events
 * are small (no result; the "done" event links to the job and its plan).
 *
 * Never: block (next() is one or two short store reads on a request
 * thread), or send an event for a version the client already has.
 */
#include "api.h"
#include "offload.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "jencode.h"
#include "problem.h"
#include "store.h"

struct api_stream {
	struct http_stream base; /* first: the server sees only this */
	const struct api_app *app;
	int64_t tenant;
	int last_state;          /* -1 until the first event */
};

int api_job_version(void *ctx, int64_t key, int64_t *version)
{
	const struct api_app *app = ctx;
	struct uniap_err err;

	err_clear(&err);
	if (key < 0) /* an evaluation handed to the offload pool */
		return offload_version(app->offload, key, version);
	return store_job_version(app->store, STORE_ANY_TENANT, key, version, &err) == UNIAP_OK ? 0 : -1;
}

void api_wait_gone(void *ctx, int64_t key)
{
	const struct api_app *app = ctx;

	if (key < 0) /* an evaluation handed to the offload pool */
		offload_abandon(app->offload, key);
}

int api_job_final(int state)
{
	return state == STORE_JOB_SUCCEEDED || state == STORE_JOB_FAILED || state == STORE_JOB_CANCELED;
}

int api_wants_events(const struct http_request *req)
{
	const char *accept = http_request_header(req, "Accept");

	return accept && strstr(accept, "text/event-stream") && !strstr(accept, "application/json");
}

static int64_t api_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The data of one event: id, state, version, progress, elapsed_s, links, error; owned text or NULL. */
static char *api_event_data(const struct store_job *j)
{
	cJSON *o = cJSON_CreateObject(), *p = NULL, *links = NULL;
	int64_t end = j->finished_at_ms ? j->finished_at_ms : api_now_ms();
	double elapsed_s = j->started_at_ms && end > j->started_at_ms ? (double)(end - j->started_at_ms) / 1e3 : 0;
	char self[64], plan[80];
	char *text = NULL;

	snprintf(self, sizeof(self), "/v1/jobs/%lld", (long long)j->id);
	snprintf(plan, sizeof(plan), "/v1/jobs/%lld/plan", (long long)j->id);
	if (o && cJSON_AddNumberToObject(o, "id", (double)j->id) &&
	    cJSON_AddStringToObject(o, "state", store_job_state_name(j->state)) &&
	    cJSON_AddNumberToObject(o, "version", (double)j->version) &&
	    (p = cJSON_AddObjectToObject(o, "progress")) &&
	    cJSON_AddNumberToObject(p, "candidates_done", (double)j->progress_done) &&
	    cJSON_AddNumberToObject(p, "candidates_total", (double)j->progress_total) &&
	    (j->has_best_tpi ? jenc_add_num(p, "best_tpi_s", j->best_tpi_s)
	                     : cJSON_AddNullToObject(p, "best_tpi_s") != NULL) &&
	    (j->has_bound ? jenc_add_num(p, "bound_s", j->bound_s)
	                  : cJSON_AddNullToObject(p, "bound_s") != NULL) &&
	    cJSON_AddNumberToObject(o, "elapsed_s", elapsed_s) &&
	    (!j->error || cJSON_AddStringToObject(o, "error", j->error)) &&
	    (links = cJSON_AddObjectToObject(o, "links")) && cJSON_AddStringToObject(links, "self", self) &&
	    (j->state != STORE_JOB_SUCCEEDED || cJSON_AddStringToObject(links, "plan", plan)))
		text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

static long api_stream_next(struct http_stream *s, char *buf, size_t cap, int *end)
{
	struct api_stream *as = (struct api_stream *)s;
	struct store_job job;
	struct uniap_err err;
	const char *type;
	char *data = NULL;
	int64_t v = 0;
	long n = -1;
	int len;

	err_clear(&err);
	if (store_job_version(as->app->store, as->tenant, s->key, &v, &err) != UNIAP_OK)
		return -1; /* gone (retention) or the store failed: end the stream */
	if (v == s->seen)
		return 0;
	if (store_job_get(as->app->store, as->tenant, s->key, &job, &err) != UNIAP_OK)
		return -1;
	type = api_job_final(job.state) ? "done" : (int)job.state != as->last_state ? "state" : "progress";
	data = api_event_data(&job);
	if (data) {
		len = snprintf(buf, cap, "id: %lld\nevent: %s\ndata: %s\n\n", (long long)job.version, type, data);
		if (len > 0 && (size_t)len < cap) {
			n = len;
			s->seen = job.version;
			as->last_state = (int)job.state;
			*end = api_job_final(job.state);
		}
	}
	cJSON_free(data);
	store_job_release(&job);
	return n;
}

static void api_stream_free(struct http_stream *s)
{
	free(s);
}

/* Last-Event-ID as a version; -1 when absent or not a number (the stream starts afresh). */
static int64_t api_last_event_id(const struct http_request *req)
{
	int64_t v;

	return api_parse_count(http_request_header(req, "Last-Event-ID"), &v) == 0 ? v : -1;
}

void api_job_events(struct http_request *req, struct http_response *res)
{
	const struct api_app *app = req->app;
	const char *accept = http_request_header(req, "Accept");
	int64_t tenant = api_principal(req)->tenant_id, id, last = api_last_event_id(req);
	struct api_stream *as;
	struct store_job job;
	struct uniap_err err;

	err_clear(&err);
	if (accept && !strstr(accept, "text/event-stream") && !strstr(accept, "text/*") && !strstr(accept, "*/*")) {
		problem_fill(res, HTTP_NOT_ACCEPTABLE, "not-acceptable",
		             "accept: this resource is text/event-stream only", req->path, NULL);
		return;
	}
	if (api_parse_id(http_request_param(req, "id"), &id) != 0) {
		api_problem(req, res, UNIAP_E_NOTFOUND, "id: no such job");
		return;
	}
	if (store_job_get(app->store, tenant, id, &job, &err) != UNIAP_OK) {
		api_fail(req, res, &err);
		return;
	}
	if (api_job_final(job.state) && last >= job.version) {
		res->status = HTTP_NO_CONTENT; /* seen to the end: nothing more will come */
		store_job_release(&job);
		return;
	}
	store_job_release(&job);
	as = calloc(1, sizeof(*as));
	if (!as) {
		api_problem(req, res, UNIAP_E_NOMEM, "stream: out of memory");
		return;
	}
	as->base.key = id;
	as->base.seen = last;
	as->base.next = api_stream_next;
	as->base.free = api_stream_free;
	as->app = app;
	as->tenant = tenant;
	as->last_state = -1;
	res->status = HTTP_OK;
	snprintf(res->content_type, sizeof(res->content_type), "text/event-stream");
	http_response_add_header(res, "Cache-Control", "no-cache");
	http_response_add_header(res, "X-Accel-Buffering", "no"); /* proxies: pass events at once */
	res->stream = &as->base;
}
