/*
 * route.h - routes as data and the one place that dispatches them.
 *
 * A route is {method, path pattern, handler, flags}.  Patterns are literal
 * segments and {name} segments ("/v1/jobs/{id}"); a {name} matches one
 * non-empty segment and its value is available as a path parameter.
 * route_dispatch() does, in this order: dot segments (400), path match (404),
 * OPTIONS (CORS preflights and plain OPTIONS, answered here for every route,
 * never authenticated), method (405 with Allow), auth (401 with
 * WWW-Authenticate), query parameters the route does not declare (400 naming
 * the parameter), body size (413), then on ROUTE_JSON routes content type
 * (415), empty body (400), JSON parse (400 naming the byte, 413 past
 * JDEC_MAX_DEPTH, 422 for "\u0000"), then calls the handler; afterwards the
 * ETag of a ROUTE_ETAG answer (304 on a matching If-None-Match) and the CORS
 * headers of an allowed Origin.  Every error is application/problem+json
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
	ROUTE_ETAG = 1 << 2, /* a 200 to GET/HEAD gets an ETag (http_etag of the body, unless the
	                        handler set one); a matching If-None-Match turns it into a bodiless 304 */
};
/* Routes without ROUTE_JSON see any body raw in req->body (still capped by the limit). */

/* Fills res (status, body, headers); req is borrowed.  Runs on a connection thread. */
typedef void (*route_handler_fn)(struct http_request *req, struct http_response *res);

struct route {
	const char *method;   /* "GET", "POST", ... */
	const char *pattern;  /* "/v1/jobs/{id}" */
	route_handler_fn handler;
	unsigned flags;       /* enum route_flags */
	const char *query;    /* the query parameters it takes, space-separated ("limit cursor");
	                         NULL: none; any other is a 400 bad-query naming it */
};

/* CORS (route_dispatch): what a preflight allows and an answer exposes. */
#define ROUTE_CORS_ALLOW_HEADERS \
	"Authorization, Content-Type, Idempotency-Key, Last-Event-ID, If-None-Match, X-Request-Id, traceparent, tracestate"
#define ROUTE_CORS_EXPOSE_HEADERS "Location, Retry-After, Idempotent-Replayed, ETag, X-Request-Id"
#define ROUTE_CORS_MAX_AGE_S "600"
#define ROUTE_CORS_ORIGINS_MAX 16

struct route_table {
	const struct route *routes; /* borrowed */
	size_t count;
	http_auth_fn auth;          /* may be NULL: ROUTE_AUTH routes answer 401 */
	void *auth_ctx;
	size_t max_body_bytes;      /* 0: HTTP_DEFAULT_MAX_BODY_BYTES */
	/* origins ("https://ui.example:8443", compared exactly) whose browsers may call the
	 * routes; none: no CORS header is ever sent (borrowed) */
	const char *const *cors_origins;
	size_t cors_origin_count;
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

/*
 * Before any body byte is read: when req's method and (decoded) path match a
 * route that needs a key, the key is checked as route_dispatch would (401,
 * 403).  0 when the request may go on (its body is then read and dispatched,
 * which checks again); -1 with res filled, answered without the body.
 * req->route_index is the matched route's, or -1.
 */
int route_auth_early(const struct route_table *table, struct http_request *req, struct http_response *res);

/*
 * The CORS headers of an actual (not preflight) answer: Vary: Origin when the
 * table has origins, and Access-Control-Allow-Origin + -Expose-Headers when
 * origin (borrowed, may be NULL) is one of them.  route_dispatch calls it;
 * the server calls it for answers given before dispatch.
 */
void route_cors_answer(const struct route_table *table, const char *origin, struct http_response *res);

/* 1 when origin (borrowed, may be NULL) is in the table's allow-list. */
int route_cors_allowed(const struct route_table *table, const char *origin);

#endif
