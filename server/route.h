/*
 * route.h - routes as data and the one place that dispatches them.
 *
 * A route is {method, path pattern, handler, flags}.  Patterns are literal
 * segments and {name} segments ("/v1/jobs/{id}"); a {name} matches one
 * non-empty segment and its value is available as a path parameter.
 * route_dispatch() does, in this order: dot segments (400), path match (404),
 * method (405 with Allow), auth (401 with WWW-Authenticate), body size (413),
 * then on ROUTE_JSON routes content type (415), empty body (400), JSON parse
 * (400 naming the byte, 413 past JDEC_MAX_DEPTH, 422 for "\u0000"), then
 * calls the handler.  Every error is application/problem+json
 * (problem.h).
 *
 * Never: touch sockets or MHD, or let a handler answer without a status (a
 * handler that leaves status 0 becomes a 500 problem).
 */
#ifndef UNIAP_ROUTE_H
#define UNIAP_ROUTE_H

#include <stddef.h>

#include "http.h"

enum route_flags {
	ROUTE_AUTH = 1 << 0, /* needs a valid Authorization: Bearer key */
	ROUTE_JSON = 1 << 1, /* needs a non-empty application/json body, parsed into req->json */
};
/* Routes without ROUTE_JSON see any body raw in req->body (still capped by the limit). */

/* Fills res (status, body, headers); req is borrowed.  Runs on a connection thread. */
typedef void (*route_handler_fn)(struct http_request *req, struct http_response *res);

struct route {
	const char *method;   /* "GET", "POST", ... */
	const char *pattern;  /* "/v1/jobs/{id}" */
	route_handler_fn handler;
	unsigned flags;       /* enum route_flags */
};

struct route_table {
	const struct route *routes; /* borrowed */
	size_t count;
	http_auth_fn auth;          /* may be NULL: ROUTE_AUTH routes answer 401 */
	void *auth_ctx;
	size_t max_body_bytes;      /* 0: HTTP_DEFAULT_MAX_BODY_BYTES */
};

/*
 * Matches pattern against path; on a match fills req's path parameters (when
 * req is not NULL) and returns 1, else 0.
 */
int route_match(const char *pattern, const char *path, struct http_request *req);

/*
 * Dispatches req (borrowed; req->json and req->principal are filled here and
 * freed by http_request_release) on table (borrowed) into res (caller-owned,
 * initialised with http_response_init, released with http_response_release).
 * Always leaves a status in res.  Returns the matched route's index or -1.
 */
int route_dispatch(const struct route_table *table, struct http_request *req, struct http_response *res);

#endif
