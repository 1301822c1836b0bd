/*
 * route.c - path matching and the one dispatcher: every check a route's
 * flags ask for (auth, query parameters, content type, size, JSON) happens
 * here, in a fixed order, before any handler runs; CORS (preflights and the
 * headers of answers) and ETag/If-None-Match happen here too, for every
 * route alike.
 *
 * Never: touch sockets or MHD; never let a request leave without a status.
 */
#include "route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "jdecode.h"
#include "problem.h"

/* Length of the segment starting at s (up to '/' or the end). */
static size_t route_seg_len(const char *s)
{
	const char *e = strchr(s, '/');

	return e ? (size_t)(e - s) : strlen(s);
}

int route_match(const char *pattern, const char *path, struct http_request *req)
{
	size_t params = 0, used = 0;

	if (!pattern || !path || pattern[0] != '/' || path[0] != '/')
		return 0;
	while (*pattern == '/' && *path == '/') {
		size_t pl, sl;

		pattern++;
		path++;
		pl = route_seg_len(pattern);
		sl = route_seg_len(path);
		if (pl >= 2 && pattern[0] == '{' && pattern[pl - 1] == '}') {
			size_t nl = pl - 2;

			if (sl == 0)
				return 0;
			if (req) {
				char *buf = req->param_buf;

				if (params >= HTTP_MAX_PARAMS || used + nl + 1 + sl + 1 > sizeof(req->param_buf))
					return 0;
				memcpy(buf + used, pattern + 1, nl);
				buf[used + nl] = '\0';
				req->params[params].name = buf + used;
				used += nl + 1;
				memcpy(buf + used, path, sl);
				buf[used + sl] = '\0';
				req->params[params].value = buf + used;
				used += sl + 1;
			}
			params++;
		} else if (pl != sl || memcmp(pattern, path, pl) != 0) {
			return 0;
		}
		pattern += pl;
		path += sl;
	}
	if (*pattern || *path)
		return 0;
	if (req)
		req->param_count = params;
	return 1;
}

/* 1 when path has an empty, "." or ".." segment (after the leading '/'). */
static int route_has_dot_segment(const char *path)
{
	const char *s = path;

	while (*s == '/') {
		size_t n;

		s++;
		n = route_seg_len(s);
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return 1;
		if (n == 0 && s[0] == '/')
			return 1; /* "//" */
		s += n;
	}
	return 0;
}

/* "application/json" with optional parameters ("; charset=utf-8"), any case. */
static int route_is_json(const char *content_type)
{
	static const char json[] = "application/json";
	size_t n = sizeof(json) - 1;

	if (!content_type || strncasecmp(content_type, json, n) != 0)
		return 0;
	return content_type[n] == '\0' || content_type[n] == ';' || content_type[n] == ' ';
}

/* The bearer key of an Authorization header, or NULL. */
static const char *route_bearer(const char *authorization)
{
	const char *k;

	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
		return NULL;
	k = authorization + 7;
	while (*k == ' ')
		k++;
	return *k ? k : NULL;
}

/* Fills Allow with every method of the routes matching path; the count. */
static size_t route_allow(const struct route_table *t, const char *path, char *allow, size_t cap)
{
	size_t i, n = 0, len = 0;

	allow[0] = '\0';
	for (i = 0; i < t->count; i++) {
		const char *m = t->routes[i].method;

		if (!route_match(t->routes[i].pattern, path, NULL))
			continue;
		{
			/* each method once */
			size_t j, dup = 0;

			for (j = 0; j < i; j++)
				if (strcmp(t->routes[j].method, m) == 0 &&
				    route_match(t->routes[j].pattern, path, NULL))
					dup = 1;
			if (dup)
				continue;
		}
		len += (size_t)snprintf(allow + len, len < cap ? cap - len : 0, "%s%s", n ? ", " : "", m);
		n++;
	}
	return n;
}

/* 1 when name is one of the space-separated words of list (NULL: none). */
static int route_word_in(const char *list, const char *name)
{
	size_t n = strlen(name);

	while (list && *list) {
		size_t w;

		while (*list == ' ')
			list++;
		w = strcspn(list, " ");
		if (w == n && n && memcmp(list, name, n) == 0)
			return 1;
		list += w;
	}
	return 0;
}

/* Every query parameter must be one the route declares; 0 ok, -1 after a 400 naming it. */
static int route_check_query(const struct route *r, const struct http_request *req, struct http_response *res)
{
	size_t i;

	for (i = 0; i < req->query_count; i++) {
		char detail[HTTP_HEADER_VALUE_MAX + 160];

		if (route_word_in(r->query, req->query[i].name))
			continue;
		snprintf(detail, sizeof(detail), "query: unknown parameter \"%.100s\"; %s%s", req->query[i].name,
		         r->query && *r->query ? "this route takes " : "this route takes none",
		         r->query ? r->query : "");
		problem_fill(res, HTTP_BAD_REQUEST, "bad-query", detail, req->path, NULL);
		return -1;
	}
	return 0;
}

/* Auth, content type, size and JSON checks of route r; 0 when the handler may run. */
/* The bearer key of req against the auth hook: 0 with req->principal set, or -1 with res filled. */
static int route_authenticate(const struct route_table *t, struct http_request *req, struct http_response *res)
{
	const char *key = route_bearer(req->authorization);
	uniap_code rc = UNIAP_E_NOTFOUND;
	struct uniap_err err;

	memset(&req->principal, 0, sizeof(req->principal));
	err_clear(&err);
	if (key && t->auth)
		rc = t->auth(t->auth_ctx, key, &req->principal, &err);
	if (rc != UNIAP_OK) {
		req->principal.authenticated = 0;
		if (rc != UNIAP_E_NOTFOUND) {
			/* known but refused (403), or the check itself failed (500, 503) */
			if (!err.msg[0] || err.code != rc)
				err_set(&err, rc, "authorization: %s", uniap_code_name(rc));
			problem_from_err(res, &err, req->path);
			return -1;
		}
		problem_fill(res, HTTP_UNAUTHORIZED, "unauthorized",
		             key ? "the bearer key is not valid" : "an Authorization: Bearer key is required",
		             req->path, NULL);
		http_response_add_header(res, "WWW-Authenticate", "Bearer");
		return -1;
	}
	req->principal.authenticated = 1;
	return 0;
}

int route_auth_early(const struct route_table *t, struct http_request *req, struct http_response *res)
{
	size_t i;

	req->route_index = -1;
	if (!t || !req->path || !req->method)
		return 0;
	for (i = 0; i < t->count; i++)
		if (strcmp(t->routes[i].method, req->method) == 0 && route_match(t->routes[i].pattern, req->path, NULL)) {
			req->route_index = (int)i;
			return (t->routes[i].flags & ROUTE_AUTH) ? route_authenticate(t, req, res) : 0;
		}
	return 0; /* no route: route_dispatch answers, the body unread matters little */
}

static int route_check(const struct route_table *t, const struct route *r, struct http_request *req,
                       struct http_response *res)
{
	size_t max_body = t->max_body_bytes ? t->max_body_bytes : HTTP_DEFAULT_MAX_BODY_BYTES;
	struct uniap_err err;

	if ((r->flags & ROUTE_AUTH) && route_authenticate(t, req, res) != 0)
		return -1;
	if (route_check_query(r, req, res) != 0)
		return -1;
	if (req->body_len > max_body) {
		char detail[128];

		snprintf(detail, sizeof(detail), "body: %zu bytes, the limit is %zu", req->body_len, max_body);
		problem_fill(res, HTTP_CONTENT_TOO_LARGE, "content-too-large", detail, req->path, NULL);
		return -1;
	}
	if (!(r->flags & ROUTE_JSON))
		return 0;
	if (!route_is_json(req->content_type)) {
		char detail[160];

		snprintf(detail, sizeof(detail), "content-type: must be application/json, got %.100s",
		         req->content_type ? req->content_type : "none");
		problem_fill(res, HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type", detail, req->path, NULL);
		http_response_add_header(res, "Accept-Post", "application/json");
		return -1;
	}
	if (req->body_len == 0) {
		problem_fill(res, HTTP_BAD_REQUEST, "malformed", "body: a JSON body is required", req->path, "");
		return -1;
	}
	err_clear(&err);
	if (jdec_parse(req->body, req->body_len, "body", &req->json, &err) != UNIAP_OK) {
		problem_from_err(res, &err, req->path);
		return -1;
	}
	return 0;
}

int route_cors_allowed(const struct route_table *t, const char *origin)
{
	size_t i;

	if (!t || !origin)
		return 0;
	for (i = 0; i < t->cors_origin_count; i++)
		if (strcmp(t->cors_origins[i], origin) == 0)
			return 1;
	return 0;
}

void route_cors_answer(const struct route_table *t, const char *origin, struct http_response *res)
{
	if (!t || !t->cors_origin_count)
		return;
	http_response_add_header(res, "Vary", "Origin");
	if (!route_cors_allowed(t, origin))
		return;
	http_response_add_header(res, "Access-Control-Allow-Origin", origin);
	http_response_add_header(res, "Access-Control-Expose-Headers", ROUTE_CORS_EXPOSE_HEADERS);
}

/*
 * OPTIONS on a path that routes match: a CORS preflight (Origin and
 * Access-Control-Request-Method) from an allowed origin is a 204 with what it
 * may do; from any other origin a 403 problem without CORS headers (the
 * browser blocks the call, and a person debugging with curl reads why); a
 * plain OPTIONS is a 204 with Allow.  Never authenticated: browsers send
 * preflights without credentials.
 */
static void route_options(const struct route_table *t, struct http_request *req, struct http_response *res)
{
	const char *origin = http_request_header(req, "Origin");
	const char *want = http_request_header(req, "Access-Control-Request-Method");
	char allow[HTTP_HEADER_VALUE_MAX];

	route_allow(t, req->path, allow, sizeof(allow));
	if (!origin || !want) {
		res->status = HTTP_NO_CONTENT;
		http_response_add_header(res, "Allow", allow);
		return;
	}
	if (!route_cors_allowed(t, origin)) {
		char detail[200];

		snprintf(detail, sizeof(detail), "origin: %.120s may not call this service (--cors-origin)", origin);
		problem_fill(res, HTTP_FORBIDDEN, "cors-origin", detail, req->path, NULL);
		return;
	}
	res->status = HTTP_NO_CONTENT;
	http_response_add_header(res, "Access-Control-Allow-Methods", allow);
	http_response_add_header(res, "Access-Control-Allow-Headers", ROUTE_CORS_ALLOW_HEADERS);
	http_response_add_header(res, "Access-Control-Max-Age", ROUTE_CORS_MAX_AGE_S);
}

/* A 200 of a ROUTE_ETAG route: its ETag, and a bodiless 304 when If-None-Match matches. */
static void route_etag(const struct http_request *req, struct http_response *res)
{
	const char *inm = http_request_header(req, "If-None-Match");
	char tag[HTTP_ETAG_MAX];
	const char *have = http_response_header(res, "ETag");

	if (!have) {
		http_etag(res->body ? res->body : "", res->body_len, tag);
		http_response_add_header(res, "ETag", tag);
		have = tag;
	}
	if (inm && http_etag_match(inm, have)) {
		free(res->body);
		res->body = NULL;
		res->body_len = 0;
		res->content_type[0] = '\0';
		res->status = HTTP_NOT_MODIFIED;
	}
}

static int route_dispatch_one(const struct route_table *t, struct http_request *req, struct http_response *res)
{
	size_t i, path_matches = 0;
	const struct route *r = NULL;
	int index = -1;

	req->route_index = -1;
	if (!t || !req->path || !req->method || req->path[0] != '/') {
		problem_fill(res, HTTP_BAD_REQUEST, "bad-path", "path: must start with /",
		             req->path ? req->path : "", NULL);
		return -1;
	}
	if (route_has_dot_segment(req->path)) {
		problem_fill(res, HTTP_BAD_REQUEST, "bad-path",
		             "path: must not hold empty, \".\" or \"..\" segments", req->path, NULL);
		return -1;
	}
	for (i = 0; i < t->count; i++) {
		if (!route_match(t->routes[i].pattern, req->path, NULL))
			continue;
		path_matches++;
		if (strcmp(req->method, "OPTIONS") == 0)
			break;
		if (strcmp(t->routes[i].method, req->method) == 0 ||
		    (strcmp(req->method, "HEAD") == 0 && strcmp(t->routes[i].method, "GET") == 0)) {
			r = &t->routes[i];
			index = (int)i;
			break;
		}
	}
	if (!r) {
		char allow[HTTP_HEADER_VALUE_MAX];

		if (path_matches == 0) {
			problem_fill(res, HTTP_NOT_FOUND, "not-found", "no resource at this path", req->path, NULL);
			return -1;
		}
		if (strcmp(req->method, "OPTIONS") == 0) {
			route_options(t, req, res);
			return -1;
		}
		route_allow(t, req->path, allow, sizeof(allow));
		{
			char detail[HTTP_HEADER_VALUE_MAX + 64];

			snprintf(detail, sizeof(detail), "method %.16s: not allowed here, use %s", req->method, allow);
			problem_fill(res, HTTP_METHOD_NOT_ALLOWED, "method-not-allowed", detail, req->path, NULL);
		}
		http_response_add_header(res, "Allow", allow);
		return -1;
	}
	req->route_index = index;
	if (!route_match(r->pattern, req->path, req)) {
		problem_fill(res, HTTP_NOT_FOUND, "not-found", "path: parameters too long", req->path, NULL);
		return index;
	}
	if (route_check(t, r, req, res) != 0)
		return index;
	r->handler(req, res);
	if (res->status == 0 && !res->wait.set)
		problem_fill(res, HTTP_INTERNAL_ERROR, "internal", "the handler gave no response", req->path, NULL);
	return index;
}

int route_dispatch(const struct route_table *t, struct http_request *req, struct http_response *res)
{
	int index = route_dispatch_one(t, req, res);

	if (index >= 0 && res->status == HTTP_OK && !res->stream && (t->routes[index].flags & ROUTE_ETAG) &&
	    (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0))
		route_etag(req, res);
	/* every answer, errors and preflights included: a browser reads none without them */
	if (!res->wait.set)
		route_cors_answer(t, http_request_header(req, "Origin"), res);
	return index;
}
