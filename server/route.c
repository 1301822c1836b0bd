/*
 * route.c - path matching and the one dispatcher: every check a route's
 * flags ask for (auth, content type, size, JSON) happens here, in a fixed
 * order, before any handler runs.
 *
 * Never: touch sockets or MHD; never let a request leave without a status.
 */
#include "route.h"

#include <stdio.h>
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

/* Auth, content type, size and JSON checks of route r; 0 when the handler may run. */
static int route_check(const struct route_table *t, const struct route *r, struct http_request *req,
                       struct http_response *res)
{
	size_t max_body = t->max_body_bytes ? t->max_body_bytes : HTTP_DEFAULT_MAX_BODY_BYTES;
	struct uniap_err err;

	if (r->flags & ROUTE_AUTH) {
		const char *key = route_bearer(req->authorization);

		uniap_code rc = UNIAP_E_NOTFOUND;

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
			             key ? "the bearer key is not valid"
			                 : "an Authorization: Bearer key is required",
			             req->path, NULL);
			http_response_add_header(res, "WWW-Authenticate", "Bearer");
			return -1;
		}
		req->principal.authenticated = 1;
	}
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

int route_dispatch(const struct route_table *t, struct http_request *req, struct http_response *res)
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
	if (res->status == 0)
		problem_fill(res, HTTP_INTERNAL_ERROR, "internal", "the handler gave no response", req->path, NULL);
	return index;
}
