/*
 * problem.c - RFC 9457 problem details and the code -> status table.
 *
 * Never: print, or map codes to statuses anywhere but problem_status_table.
 */
#include "problem.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#define PROBLEM_TYPE_PREFIX "urn:uniap:problem:"

/* The one table: core result code -> HTTP status and the slug of "type". */
static const struct {
	uniap_code code;
	int status;
	const char *slug;
} problem_status_table[] = {
	{UNIAP_OK, 200, "ok"},
	{UNIAP_E_NOMEM, 503, "out-of-memory"},     /* transient: retry later */
	{UNIAP_E_MALFORMED, 400, "malformed"},     /* bad JSON syntax */
	{UNIAP_E_INVALID, 422, "invalid"},         /* parseable, breaks a rule */
	{UNIAP_E_ARG, 400, "bad-argument"},        /* bad query/path parameter */
	{UNIAP_E_INFEASIBLE, 422, "infeasible"},   /* no plan fits */
	{UNIAP_E_IO, 500, "io"},
	{UNIAP_E_NOTFOUND, 404, "not-found"},
	{UNIAP_E_SOLVER, 500, "solver"},
	{UNIAP_E_TIMEOUT, 504, "timeout"},
	{UNIAP_E_CANCELED, 409, "canceled"},
	{UNIAP_E_LIMIT, 413, "limit"},             /* a size cap (body, nesting, arrays) */
	{UNIAP_E_INTERNAL, 500, "internal"},
	{UNIAP_E_RATE, 429, "too-many-jobs"},      /* the tenant's concurrent-jobs limit */
	{UNIAP_E_BUSY, 503, "busy"},               /* the service's queue is full */
	{UNIAP_E_CONFLICT, 409, "conflict"},       /* e.g. cancel a finished job */
	{UNIAP_E_FORBIDDEN, 403, "forbidden"},     /* a revoked tenant's key */
	{UNIAP_E_NOSPACE, 507, "insufficient-storage"}, /* the disk or the store's size cap is full */
	{UNIAP_E_UNAVAILABLE, 503, "unavailable"},      /* the database server does not answer: retry */
};

int problem_status(uniap_code code)
{
	size_t i;

	for (i = 0; i < sizeof(problem_status_table) / sizeof(problem_status_table[0]); i++)
		if (problem_status_table[i].code == code)
			return problem_status_table[i].status;
	return 500;
}

const char *problem_slug(uniap_code code)
{
	size_t i;

	for (i = 0; i < sizeof(problem_status_table) / sizeof(problem_status_table[0]); i++)
		if (problem_status_table[i].code == code)
			return problem_status_table[i].slug;
	return "internal";
}

const char *problem_title(int status)
{
	static const struct {
		int status;
		const char *title;
	} titles[] = {
		{200, "OK"}, {201, "Created"}, {202, "Accepted"}, {204, "No Content"},
		{400, "Bad Request"}, {401, "Unauthorized"}, {403, "Forbidden"}, {404, "Not Found"},
		{405, "Method Not Allowed"}, {406, "Not Acceptable"}, {409, "Conflict"}, {410, "Gone"},
		{413, "Content Too Large"}, {414, "URI Too Long"}, {415, "Unsupported Media Type"},
		{422, "Unprocessable Content"}, {429, "Too Many Requests"},
		{431, "Request Header Fields Too Large"}, {500, "Internal Server Error"},
		{501, "Not Implemented"}, {503, "Service Unavailable"}, {504, "Gateway Timeout"},
		{507, "Insufficient Storage"},
	};
	size_t i;

	for (i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
		if (titles[i].status == status)
			return titles[i].title;
	return "Error";
}

int problem_fill(struct http_response *res, int status, const char *slug, const char *detail,
                 const char *instance, const char *pointer)
{
	static const char fallback[] = "{\"type\":\"urn:uniap:problem:out-of-memory\",\"title\":"
	                               "\"Internal Server Error\",\"status\":500}";
	char type[128];
	cJSON *o = cJSON_CreateObject();
	int rc = -1;

	snprintf(type, sizeof(type), PROBLEM_TYPE_PREFIX "%s", slug ? slug : "error");
	if (!o || !cJSON_AddStringToObject(o, "type", type) ||
	    !cJSON_AddStringToObject(o, "title", problem_title(status)) ||
	    !cJSON_AddNumberToObject(o, "status", status) ||
	    !cJSON_AddStringToObject(o, "detail", detail ? detail : problem_title(status)) ||
	    !cJSON_AddStringToObject(o, "instance", instance ? instance : "") ||
	    (pointer && !cJSON_AddStringToObject(o, "pointer", pointer)))
		goto out;
	if (http_response_set_json(res, status, o) != 0)
		goto out;
	snprintf(res->content_type, sizeof(res->content_type), "application/problem+json");
	rc = 0;
out:
	cJSON_Delete(o);
	if (rc != 0 && http_response_set_body(res, 500, "application/problem+json", fallback,
	                                      sizeof(fallback) - 1) != 0)
		res->status = 500;
	return rc;
}

int problem_pointer(const char *msg, const char *root, char *out, size_t cap)
{
	size_t rl = strlen(root), n = 0;
	const char *p, *end;

	if (!msg || cap == 0 || strncmp(msg, root, rl) != 0)
		return -1;
	end = strstr(msg, ": ");
	p = msg + rl;
	if (!end || (p != end && *p != '.' && *p != '['))
		return -1;
	out[0] = '\0';
	for (; p < end; p++) {
		char c = *p;

		if (c == ']')
			continue;
		if (c == '.' || c == '[')
			c = '/';
		else if (c == '~' || c == '/') {
			/* RFC 6901: ~ is ~0, / is ~1 */
			if (n + 2 >= cap)
				return -1;
			out[n++] = '~';
			c = c == '~' ? '0' : '1';
		}
		if (n + 1 >= cap)
			return -1;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

int problem_from_err(struct http_response *res, const struct uniap_err *err, const char *instance)
{
	char pointer[256];
	uniap_code code = err ? err->code : UNIAP_E_INTERNAL;
	const char *msg = err && err->msg[0] ? err->msg : NULL;
	int has_pointer = msg && problem_pointer(msg, "body", pointer, sizeof(pointer)) == 0;

	return problem_fill(res, problem_status(code), problem_slug(code), msg, instance,
	                    has_pointer ? pointer : NULL);
}
