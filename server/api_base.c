/*
 * api_base.c - what every /v1 resource's handlers share (api.h): the
 * principal a request acts for, problems, JSON bodies, ids, counts, times
 * and the list pages' arguments.  Below the resources' files (api.c,
 * api_jobs.c, api_events.c, api_calib.c, api_import.c), which use it and
 * never each other's helpers.
 *
 * Thread safety: reentrant (request threads).
 * Never: touch the store, keep state.
 */
#include "api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "problem.h"

/* The principal the request acts for. */
const struct http_principal *api_principal(const struct http_request *req)
{
	const struct api_app *app = req->app;

	return req->principal.authenticated ? &req->principal : &app->anonymous;
}

/* A problem for code with detail (borrowed). */
void api_problem(struct http_request *req, struct http_response *res, uniap_code code,
                        const char *detail)
{
	problem_fill(res, problem_status(code), problem_slug(code), detail, req->path, NULL);
}

void api_fail(struct http_request *req, struct http_response *res, const struct uniap_err *err)
{
	problem_from_err(res, err, req->path);
}

/* Sets json (borrowed) as the body; out of memory leaves status 0 (a 500). */
void api_json(struct http_response *res, int status, const cJSON *json)
{
	if (!json || http_response_set_json(res, status, json) != 0)
		res->status = 0;
}

/* Decimal digits only, 0..INT64_MAX, into *out; 0 ok, -1 otherwise. */
int api_parse_count(const char *s, int64_t *out)
{
	char *end = NULL;
	long long v;

	if (!s || !*s || strspn(s, "0123456789") != strlen(s))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = (int64_t)v;
	return 0;
}

/* A decimal id of 1..INT64_MAX into *out; 0 ok, -1 otherwise. */
int api_parse_id(const char *s, int64_t *out)
{
	int64_t v;

	if (api_parse_count(s, &v) != 0 || v < 1)
		return -1;
	*out = v;
	return 0;
}

/* Unix ms as "2026-01-02T03:04:05Z" into buf. */
void api_time(int64_t ms, char *buf, size_t cap)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, cap, "1970-01-01T00:00:00Z");
}

/* ?limit= and ?cursor= into *limit and *cursor; a 400 problem naming the parameter when bad. */
int api_page_args(struct http_request *req, struct http_response *res, size_t *limit, int64_t *cursor)
{
	const char *l = http_request_query(req, "limit");
	const char *c = http_request_query(req, "cursor");
	char detail[256];
	int64_t v = 0;

	*limit = API_LIST_DEFAULT;
	*cursor = 0;
	if (l) {
		if (api_parse_id(l, &v) != 0 || v > API_LIST_MAX) {
			snprintf(detail, sizeof(detail), "limit: must be an integer 1..%d, got \"%.64s\"", API_LIST_MAX, l);
			api_problem(req, res, UNIAP_E_ARG, detail);
			return -1;
		}
		*limit = (size_t)v;
	}
	if (c) {
		if (api_parse_id(c, cursor) != 0) {
			snprintf(detail, sizeof(detail), "cursor: must be a next_cursor of this list, got \"%.64s\"", c);
			api_problem(req, res, UNIAP_E_ARG, detail);
			return -1;
		}
	}
	return 0;
}
