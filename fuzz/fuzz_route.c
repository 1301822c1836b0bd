/*
 * fuzz_route.c - libFuzzer target for uniapd's request routing
 * (server/route.c: route_match, route_auth_early, route_dispatch with its
 * auth, query, content type, size, JSON body, CORS and ETag checks) and the
 * header-level helpers of server/http.c it leans on (http_percent_decode,
 * http_etag_match), without a running daemon.
 *
 * One input is a request as text:
 *   METHOD\n
 *   TARGET\n            the path as on the wire, "?" then k=v&... (percent-encoded)
 *   Name: value\n ...   headers (Content-Type, Authorization, Origin, If-None-Match, ...)
 *   \n
 *   BODY                the rest, bytes as they are
 * decoded the way server/http.c does (strict percent-decoding, a 400 when it
 * fails), then routed on uniapd's own table (server/routes.h: the same
 * patterns, flags and query words; handlers are stubs).  Keys: "Bearer good" is a
 * tenant, "Bearer revoked" is refused (403), "Bearer broken" fails (500).
 *
 * Invariants: every answer has a status 100..599; an error (>= 400) is an
 * application/problem+json body whose "status" is the answer's; a 304 has no
 * body; a handler runs only on a route that matches the path and method, for
 * an authenticated principal where the route asks for one, with a parsed
 * JSON body where it asks for one; route_auth_early answers only with errors.
 * Seeds: fuzz/corpus/route/.
 *
 * Thread safety: stateless.  Never: keep state between inputs.
 */
#include <strings.h>

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "http.h"
#include "route.h"
#include "routes.h"

#define FUZZ_LINE_MAX 4096

/* The stub handler: records that it ran, answers 200 with a small JSON body. */
static void fuzz_h_ok(struct http_request *req, struct http_response *res)
{
	static const char body[] = "{\"ok\":true}";

	(void)req;
	http_response_set_body(res, HTTP_OK, "application/json", body, sizeof(body) - 1);
	http_response_add_header(res, "X-Fuzz-Handler", "1");
}

/* A handler that forgets its status: the dispatcher must turn it into a 500. */
static void fuzz_h_silent(struct http_request *req, struct http_response *res)
{
	(void)req;
	http_response_add_header(res, "X-Fuzz-Handler", "1");
}

/* uniapd's own /v1 table (server/routes.h) with stub handlers, then /healthz
 * (the HTTP layer's, here a plain route), a route of eight parameters (the
 * most route_match takes) and one whose handler forgets its status */
#define FUZZ_HANDLER(f) fuzz_h_ok
static const struct route fuzz_routes[] = {
	UNIAPD_ROUTES(ROUTE_AUTH, FUZZ_HANDLER)
	{"GET", "/healthz", fuzz_h_ok, 0, NULL},
	{"GET", "/v1/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}", fuzz_h_ok, 0, NULL},
	{"DELETE", "/v1/silent/{id}", fuzz_h_silent, ROUTE_AUTH, NULL},
};

static const char *const fuzz_origins[] = { "https://ui.example:8443" };

static uniap_code fuzz_auth(void *ctx, const char *key, struct http_principal *out, struct uniap_err *err)
{
	(void)ctx;
	if (strcmp(key, "good") == 0) {
		out->tenant_id = 1;
		snprintf(out->name, sizeof(out->name), "fuzz");
		return UNIAP_OK;
	}
	if (strcmp(key, "revoked") == 0)
		return err_set(err, UNIAP_E_FORBIDDEN, "authorization: the key was revoked");
	if (strcmp(key, "broken") == 0)
		return UNIAP_E_INTERNAL; /* err left empty: the dispatcher names the code */
	return UNIAP_E_NOTFOUND;
}

/* The request's other headers, for req->header. */
struct fuzz_headers {
	struct http_kv kv[16];
	size_t n;
};

static const char *fuzz_header(void *ctx, const char *name)
{
	const struct fuzz_headers *h = ctx;
	size_t i;

	for (i = 0; i < h->n; i++)
		if (strcasecmp(h->kv[i].name, name) == 0)
			return h->kv[i].value;
	return NULL;
}

/* Splits the next line off *p (up to end) into a NUL-terminated copy in buf; 0 at the end. */
static int fuzz_line(const char **p, const char *end, char *buf, size_t cap)
{
	const char *nl;
	size_t n;

	if (*p >= end)
		return 0;
	nl = memchr(*p, '\n', (size_t)(end - *p));
	n = (size_t)((nl ? nl : end) - *p);
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, *p, n);
	buf[n] = '\0'; /* a NUL inside cuts the line, as a C string of the header would */
	*p = nl ? nl + 1 : end;
	return 1;
}

/* The invariants of every answer res (borrowed). */
static void fuzz_check_answer(const struct http_response *res)
{
	FUZZ_CHECK(res->status >= 100 && res->status <= 599, "status %d", res->status);
	FUZZ_CHECK(res->header_count <= HTTP_MAX_HEADERS, "%zu headers", res->header_count);
	FUZZ_CHECK(memchr(res->content_type, '\0', sizeof(res->content_type)) != NULL, "content type not terminated");
	if (res->status == HTTP_NOT_MODIFIED)
		FUZZ_CHECK(res->body_len == 0, "a 304 with a %zu-byte body", res->body_len);
	if (res->status >= 400) {
		cJSON *doc, *st;

		FUZZ_CHECK(strcmp(res->content_type, "application/problem+json") == 0,
		           "a %d answered as \"%s\"", res->status, res->content_type);
		FUZZ_CHECK(res->body && res->body_len > 0, "a %d without a body", res->status);
		doc = cJSON_ParseWithLength(res->body, res->body_len);
		FUZZ_CHECK(doc != NULL, "a %d whose problem is not JSON: %.*s", res->status, (int)res->body_len,
		           res->body);
		st = cJSON_GetObjectItemCaseSensitive(doc, "status");
		FUZZ_CHECK(cJSON_IsNumber(st) && st->valuedouble == (double)res->status,
		           "a %d whose problem says another status: %.*s", res->status, (int)res->body_len, res->body);
		cJSON_Delete(doc);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct route_table table = {
		.routes = fuzz_routes,
		.count = sizeof(fuzz_routes) / sizeof(fuzz_routes[0]),
		.auth = fuzz_auth,
		.max_body_bytes = 4096,
		.cors_origins = fuzz_origins,
		.cors_origin_count = 1,
	};
	const char *p = (const char *)data, *end = p + size;
	char method[32], target[FUZZ_LINE_MAX], path[FUZZ_LINE_MAX], line[FUZZ_LINE_MAX];
	char hname[16][HTTP_HEADER_NAME_MAX], hvalue[16][HTTP_HEADER_VALUE_MAX];
	char qbuf[HTTP_MAX_QUERY][2][256];
	struct fuzz_headers headers = { .n = 0 };
	struct http_request req;
	struct http_response res;
	char *query, *q;
	int idx, early;

	if (!fuzz_line(&p, end, method, sizeof(method)) || !fuzz_line(&p, end, target, sizeof(target)))
		return 0;
	http_request_init(&req);
	http_response_init(&res);
	while (fuzz_line(&p, end, line, sizeof(line)) && line[0]) {
		char *colon = strchr(line, ':'), *v;

		if (!colon || headers.n >= 16)
			continue;
		*colon = '\0';
		for (v = colon + 1; *v == ' '; v++)
			;
		if (strlen(line) >= sizeof(hname[0]) || strlen(v) >= sizeof(hvalue[0]))
			continue; /* longer than uniapd keeps: dropped */
		memcpy(hname[headers.n], line, strlen(line) + 1);
		memcpy(hvalue[headers.n], v, strlen(v) + 1);
		headers.kv[headers.n].name = hname[headers.n];
		headers.kv[headers.n].value = hvalue[headers.n];
		headers.n++;
	}
	req.method = method;
	req.content_type = fuzz_header(&headers, "Content-Type");
	req.authorization = fuzz_header(&headers, "Authorization");
	req.header = fuzz_header;
	req.header_ctx = &headers;
	req.body = p < end ? p : NULL;
	req.body_len = (size_t)(end - p);
	if ((query = strchr(target, '?')))
		*query++ = '\0';
	if (http_percent_decode(target, strlen(target), path, sizeof(path), 0) != 0)
		goto out; /* uniapd answers a 400 bad-path itself */
	FUZZ_CHECK(strlen(path) <= strlen(target), "decoding made the path longer");
	req.path = path;
	for (q = query; q && *q && req.query_count < HTTP_MAX_QUERY;) {
		char *amp = strchr(q, '&'), *eq;
		size_t i = req.query_count;

		if (amp)
			*amp = '\0';
		if ((eq = strchr(q, '=')))
			*eq++ = '\0';
		if (http_percent_decode(q, strlen(q), qbuf[i][0], sizeof(qbuf[i][0]), 0) != 0 ||
		    http_percent_decode(eq ? eq : "", eq ? strlen(eq) : 0, qbuf[i][1], sizeof(qbuf[i][1]), 1) != 0)
			goto out; /* a 400 bad-query in uniapd */
		req.query[i].name = qbuf[i][0];
		req.query[i].value = qbuf[i][1];
		req.query_count++;
		q = amp ? amp + 1 : NULL;
	}
	{
		const char *inm = fuzz_header(&headers, "If-None-Match");
		char tag[HTTP_ETAG_MAX];

		http_etag(req.body, req.body_len, tag);
		if (inm)
			(void)http_etag_match(inm, tag);
		FUZZ_CHECK(http_etag_match(tag, tag), "an ETag does not match itself: %s", tag);
	}

	early = route_auth_early(&table, &req, &res);
	FUZZ_CHECK(early == 0 || early == -1, "route_auth_early returned %d", early);
	if (early) {
		FUZZ_CHECK(res.status >= 400, "route_auth_early refused with %d", res.status);
		fuzz_check_answer(&res);
		goto out;
	}
	FUZZ_CHECK(res.status == 0, "route_auth_early answered %d but let the request on", res.status);
	idx = route_dispatch(&table, &req, &res);
	FUZZ_CHECK(idx >= -1 && idx < (int)table.count, "route index %d", idx);
	fuzz_check_answer(&res);
	if (http_response_header(&res, "X-Fuzz-Handler")) {
		const struct route *r;

		FUZZ_CHECK(idx >= 0, "a handler ran without a route");
		r = &fuzz_routes[idx];
		FUZZ_CHECK(strcmp(r->method, req.method) == 0 || strcmp(req.method, "HEAD") == 0,
		           "%s ran the %s handler", req.method, r->method);
		FUZZ_CHECK(route_match(r->pattern, req.path, NULL), "%s ran for %s", r->pattern, req.path);
		if (r->flags & ROUTE_AUTH)
			FUZZ_CHECK(req.principal.authenticated, "%s ran unauthenticated", r->pattern);
		if (r->flags & ROUTE_JSON)
			FUZZ_CHECK(req.json != NULL, "%s ran without a parsed body", r->pattern);
	}
out:
	http_response_release(&res);
	http_request_release(&req);
	return 0;
}
