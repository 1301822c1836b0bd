/*
 * test_http.c - uniapd's HTTP layer: route_dispatch and problem+json without
 * sockets, then a real server on 127.0.0.1 (ephemeral port) with a test-only
 * route table, driven by libcurl through a table of hostile and malformed
 * requests, each with its expected status; afterwards /healthz still answers
 * and /metrics has counted the requests; a graceful stop lets an in-flight
 * request finish.  Traffic only ever goes to 127.0.0.1.
 */
/* Every wait here is on a condition (a metric, a connection's state, an
 * answer) with a generous deadline: a busy machine makes it slower, never
 * wrong, so it runs beside other programs (tests/run.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/socket.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "http.h"
#include "problem.h"
#include "route.h"

#define TEST_MAX_BODY 8192

/* ---------------------------------------------------------------- test routes */

static void h_json(struct http_request *req, struct http_response *res)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "type", cJSON_IsObject(req->json) ? "object" : "other");
	cJSON_AddNumberToObject(o, "bytes", (double)req->body_len);
	assert_int_equal(http_response_set_json(res, HTTP_OK, o), 0);
	cJSON_Delete(o);
}

static void h_auth(struct http_request *req, struct http_response *res)
{
	cJSON *o = cJSON_CreateObject();

	assert_true(req->principal.authenticated);
	cJSON_AddStringToObject(o, "principal", req->principal.name);
	assert_int_equal(http_response_set_json(res, HTTP_OK, o), 0);
	cJSON_Delete(o);
}

static void h_item(struct http_request *req, struct http_response *res)
{
	cJSON *o = cJSON_CreateObject();
	const char *q = http_request_query(req, "q");

	cJSON_AddStringToObject(o, "id", http_request_param(req, "id"));
	cJSON_AddStringToObject(o, "q", q ? q : "");
	assert_int_equal(http_response_set_json(res, HTTP_OK, o), 0);
	cJSON_Delete(o);
}

static void h_noanswer(struct http_request *req, struct http_response *res)
{
	(void)req;
	(void)res;
}

static void h_invalid(struct http_request *req, struct http_response *res)
{
	struct uniap_err err;

	err_set(&err, UNIAP_E_INVALID, "body.cluster.nodes[1]: must be >= 1, got 0");
	problem_from_err(res, &err, req->path);
}

static atomic_int slow_started;

/* h_slow answers once slow_release is set (30 s at most): the test decides how long a
 * request stays in flight, not the machine's speed */
static atomic_int slow_release;

static void h_slow(struct http_request *req, struct http_response *res)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	int waited;

	(void)req;
	atomic_store(&slow_started, 1);
	for (waited = 0; !atomic_load(&slow_release) && waited < 30000; waited += 10)
		nanosleep(&ts, NULL);
	assert_int_equal(http_response_set_body(res, HTTP_OK, "text/plain", "done", 4), 0);
}

/* Waits and streams: one key (1) whose version the test moves. */
static atomic_llong test_version;

static int test_version_of(void *ctx, int64_t key, int64_t *version)
{
	(void)ctx;
	if (key != 1)
		return -1;
	*version = atomic_load(&test_version);
	return 0;
}

/* A long-poll on key 1 of ?ms= milliseconds (1000 when absent): {"v", "expired"}
 * once the version moved or the time is up. */
static atomic_int test_expired_dispatches; /* h_wait answers told their wait is over */
static atomic_int test_gone_hooks;         /* test_wait_gone calls: waits ended with no dispatch */

/* The wait-gone hook (http_wait_gone_fn): counts. */
static void test_wait_gone(void *ctx, int64_t key)
{
	(void)ctx;
	(void)key;
	atomic_fetch_add(&test_gone_hooks, 1);
}

static int raw_connect(unsigned short port);

static void h_wait(struct http_request *req, struct http_response *res)
{
	long long v = atomic_load(&test_version);
	const char *ms = http_request_query(req, "ms");
	char body[64];
	int n;

	if (!req->wait_expired && (!req->resumed || v == req->wait_seen)) {
		http_response_wait(res, 1, v, ms ? (unsigned)atol(ms) : 1000u);
		return;
	}
	if (req->wait_expired)
		atomic_fetch_add(&test_expired_dispatches, 1);
	n = snprintf(body, sizeof(body), "{\"v\":%lld,\"expired\":%d}", v, req->wait_expired);
	assert_int_equal(http_response_set_body(res, HTTP_OK, "application/json", body, (size_t)n), 0);
}

static long test_stream_next(struct http_stream *s, char *buf, size_t cap, int *end)
{
	long long v = atomic_load(&test_version);
	int n;

	if (v == s->seen)
		return 0;
	n = snprintf(buf, cap, "id: %lld\ndata: %lld\n\n", v, v);
	s->seen = v;
	*end = v >= 3;
	return n;
}

static void test_stream_free(struct http_stream *s)
{
	free(s);
}

/* An event per version of key 1, from the current one, until 3. */
static void h_stream(struct http_request *req, struct http_response *res)
{
	struct http_stream *s = calloc(1, sizeof(*s));

	(void)req;
	assert_non_null(s);
	s->key = 1;
	s->seen = -1;
	s->next = test_stream_next;
	s->free = test_stream_free;
	res->status = HTTP_OK;
	snprintf(res->content_type, sizeof(res->content_type), "text/event-stream");
	res->stream = s;
}

static const struct route test_routes[] = {
	{"POST", "/t/json", h_json, ROUTE_JSON, NULL},
	{"POST", "/t/auth", h_auth, ROUTE_AUTH | ROUTE_JSON, NULL},
	{"GET", "/t/items/{id}", h_item, ROUTE_ETAG, "q"},
	{"PUT", "/t/items/{id}", h_json, ROUTE_JSON, NULL},
	{"DELETE", "/t/items/{id}", h_item, ROUTE_AUTH, NULL},
	{"GET", "/t/noanswer", h_noanswer, 0, NULL},
	{"GET", "/t/invalid", h_invalid, 0, NULL},
	{"GET", "/t/slow", h_slow, 0, NULL},
	{"GET", "/t/wait", h_wait, 0, "ms"},
	{"GET", "/t/stream", h_stream, 0, NULL},
};

/* good-key is tenant 7; revoked-key a revoked tenant (403); store-down a failed look-up (500). */
static uniap_code fake_auth(void *ctx, const char *key, struct http_principal *out, struct uniap_err *err)
{
	(void)ctx;
	if (strcmp(key, "revoked-key") == 0)
		return err_set(err, UNIAP_E_FORBIDDEN, "api key: tenant \"t8\" was revoked");
	if (strcmp(key, "store-down") == 0)
		return UNIAP_E_IO; /* no message: the code's name is used */
	if (strcmp(key, "good-key") != 0)
		return UNIAP_E_NOTFOUND;
	out->tenant_id = 7;
	snprintf(out->name, sizeof(out->name), "tenant-7");
	return UNIAP_OK;
}

static const char *const test_origins[] = {"http://ui.test:8081"};

static const struct route_table test_table = {
	test_routes, sizeof(test_routes) / sizeof(test_routes[0]), fake_auth, NULL, TEST_MAX_BODY, test_origins, 1,
};

/* ---------------------------------------------------------------- route_dispatch without sockets */

/* Dispatches one request on test_table; res must be released by the caller. */
static int dispatch(const char *method, const char *path, const char *ct, const char *authz, const char *body,
                    size_t len, struct http_response *res)
{
	struct http_request req;
	int idx;

	http_request_init(&req);
	http_response_init(res);
	req.method = method;
	req.path = path;
	req.content_type = ct;
	req.authorization = authz;
	req.body = body;
	req.body_len = len;
	idx = route_dispatch(&test_table, &req, res);
	http_request_release(&req);
	return idx;
}

/* res's problem body parsed; asserts the problem shape and status. */
static cJSON *problem_json(const struct http_response *res, int status)
{
	cJSON *o = cJSON_ParseWithLength(res->body, res->body_len);

	assert_non_null(o);
	assert_string_equal(res->content_type, "application/problem+json");
	assert_int_equal(cJSON_GetObjectItem(o, "status")->valuedouble, status);
	assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(o, "type")));
	assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(o, "title")));
	assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(o, "detail")));
	assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(o, "instance")));
	return o;
}

static void test_dispatch_table(void **state)
{
	static const char big[TEST_MAX_BODY + 2] = "{}";
	static const struct {
		const char *method, *path, *ct, *authz, *body;
		size_t len; /* 0: strlen(body) */
		int status;
		const char *allow;
	} cases[] = {
		{"GET", "/nope", NULL, NULL, NULL, 0, 404, NULL},
		{"GET", "/t/json", NULL, NULL, NULL, 0, 405, "POST"},
		{"PATCH", "/t/items/5", NULL, NULL, NULL, 0, 405, "GET, PUT, DELETE"},
		{"POST", "/t/json", "text/plain", NULL, "{}", 0, 415, NULL},
		{"POST", "/t/json", NULL, NULL, "{}", 0, 415, NULL},
		{"POST", "/t/json", "application/json", NULL, "", 0, 400, NULL},
		{"POST", "/t/json", "application/json", NULL, "{\"a\":", 0, 400, NULL},
		{"POST", "/t/json", "application/json", NULL, "{}", 0, 200, NULL},
		{"POST", "/t/json", "Application/JSON; charset=utf-8", NULL, "{}", 0, 200, NULL},
		{"POST", "/t/auth", "application/json", NULL, "{}", 0, 401, NULL},
		{"POST", "/t/auth", "application/json", "Bearer nope", "{}", 0, 401, NULL},
		{"POST", "/t/auth", "application/json", "Bearer good-key", "{}", 0, 200, NULL},
		{"POST", "/t/auth", "application/json", "Bearer revoked-key", "{}", 0, 403, NULL},
		{"POST", "/t/auth", "application/json", "Bearer store-down", "{}", 0, 500, NULL},
		{"GET", "/t/items/42", NULL, NULL, NULL, 0, 200, NULL},
		{"HEAD", "/t/items/42", NULL, NULL, NULL, 0, 200, NULL},
		{"GET", "/t/items/..", NULL, NULL, NULL, 0, 400, NULL},
		{"GET", "/t//items", NULL, NULL, NULL, 0, 400, NULL},
		{"GET", "/t/items/", NULL, NULL, NULL, 0, 404, NULL},
		{"GET", "/t/items/1/2", NULL, NULL, NULL, 0, 404, NULL},
		{"GET", "relative", NULL, NULL, NULL, 0, 400, NULL},
		{"GET", "/t/noanswer", NULL, NULL, NULL, 0, 500, NULL},
		{"GET", "/t/invalid", NULL, NULL, NULL, 0, 422, NULL},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_response res;
		size_t len = cases[i].body ? strlen(cases[i].body) : 0;

		dispatch(cases[i].method, cases[i].path, cases[i].ct, cases[i].authz, cases[i].body, len, &res);
		if (res.status != cases[i].status)
			fail_msg("case %zu %s %s: status %d, want %d", i, cases[i].method, cases[i].path, res.status,
			         cases[i].status);
		if (cases[i].status >= 400)
			cJSON_Delete(problem_json(&res, cases[i].status));
		if (cases[i].allow)
			assert_string_equal(http_response_header(&res, "Allow"), cases[i].allow);
		if (cases[i].status == 401)
			assert_string_equal(http_response_header(&res, "WWW-Authenticate"), "Bearer");
		else
			assert_null(http_response_header(&res, "WWW-Authenticate"));
		http_response_release(&res);
	}
	{
		/* a body over the table's limit is a 413 even without a socket */
		struct http_response res;

		dispatch("POST", "/t/json", "application/json", NULL, big, sizeof(big), &res);
		assert_int_equal(res.status, 413);
		http_response_release(&res);
	}
}

static void test_dispatch_details(void **state)
{
	struct http_request req;
	struct http_response res;
	cJSON *o;

	(void)state;
	/* path parameters */
	http_request_init(&req);
	http_response_init(&res);
	req.method = "GET";
	req.path = "/t/items/abc";
	assert_int_equal(route_dispatch(&test_table, &req, &res), 2);
	assert_string_equal(http_request_param(&req, "id"), "abc");
	assert_null(http_request_param(&req, "nope"));
	http_request_release(&req);
	http_response_release(&res);

	/* malformed JSON names the byte */
	dispatch("POST", "/t/json", "application/json", NULL, "{\"a\":1,}", 8, &res);
	o = problem_json(&res, 400);
	assert_non_null(strstr(cJSON_GetObjectItem(o, "detail")->valuestring, "at byte 8"));
	assert_string_equal(cJSON_GetObjectItem(o, "type")->valuestring, "urn:uniap:problem:malformed");
	assert_string_equal(cJSON_GetObjectItem(o, "instance")->valuestring, "/t/json");
	cJSON_Delete(o);
	http_response_release(&res);

	/* a rule broken deep in the body gives a JSON pointer */
	dispatch("GET", "/t/invalid", NULL, NULL, NULL, 0, &res);
	o = problem_json(&res, 422);
	assert_string_equal(cJSON_GetObjectItem(o, "pointer")->valuestring, "/cluster/nodes/1");
	cJSON_Delete(o);
	http_response_release(&res);
}

/* Request headers of a socket-less request: name, value pairs ending with NULL. */
static const char *headers_find(void *ctx, const char *name)
{
	const char *const *h = ctx;

	for (; h && h[0]; h += 2)
		if (strcasecmp(h[0], name) == 0)
			return h[1];
	return NULL;
}

/* dispatch() with request headers (hdrs: pairs, NULL-terminated) and one query parameter (may be NULL). */
static void dispatch_h(const char *method, const char *path, const char *const *hdrs, const char *qname,
                       const char *qvalue, struct http_response *res)
{
	struct http_request req;

	http_request_init(&req);
	http_response_init(res);
	req.method = method;
	req.path = path;
	req.header = headers_find;
	req.header_ctx = (void *)hdrs;
	if (qname) {
		req.query[0].name = qname;
		req.query[0].value = qvalue;
		req.query_count = 1;
	}
	route_dispatch(&test_table, &req, res);
	http_request_release(&req);
}

/* CORS: preflights (allowed, refused, plain OPTIONS), headers of actual answers, errors included. */
static void test_cors(void **state)
{
	static const char *const pre_ok[] = {"Origin", "http://ui.test:8081", "Access-Control-Request-Method",
	                                     "DELETE", NULL};
	static const char *const pre_bad[] = {"Origin", "http://evil.test", "Access-Control-Request-Method",
	                                      "GET", NULL};
	static const char *const ok[] = {"Origin", "http://ui.test:8081", NULL};
	static const char *const bad[] = {"Origin", "http://ui.test:8082", NULL};
	struct http_response res;

	(void)state;
	/* an allowed preflight: 204, the route's methods, the headers, no auth asked */
	dispatch_h("OPTIONS", "/t/items/5", pre_ok, NULL, NULL, &res);
	assert_int_equal(res.status, 204);
	assert_string_equal(http_response_header(&res, "Access-Control-Allow-Origin"), "http://ui.test:8081");
	assert_string_equal(http_response_header(&res, "Access-Control-Allow-Methods"), "GET, PUT, DELETE");
	assert_string_equal(http_response_header(&res, "Access-Control-Allow-Headers"), ROUTE_CORS_ALLOW_HEADERS);
	assert_string_equal(http_response_header(&res, "Access-Control-Max-Age"), ROUTE_CORS_MAX_AGE_S);
	assert_string_equal(http_response_header(&res, "Vary"), "Origin");
	assert_null(http_response_header(&res, "WWW-Authenticate"));
	http_response_release(&res);
	/* on an authenticated route too */
	dispatch_h("OPTIONS", "/t/auth", pre_ok, NULL, NULL, &res);
	assert_int_equal(res.status, 204);
	assert_string_equal(http_response_header(&res, "Access-Control-Allow-Methods"), "POST");
	http_response_release(&res);
	/* another origin: 403 problem, no CORS header but Vary */
	dispatch_h("OPTIONS", "/t/items/5", pre_bad, NULL, NULL, &res);
	cJSON_Delete(problem_json(&res, 403));
	assert_null(http_response_header(&res, "Access-Control-Allow-Origin"));
	assert_null(http_response_header(&res, "Access-Control-Allow-Methods"));
	assert_string_equal(http_response_header(&res, "Vary"), "Origin");
	http_response_release(&res);
	/* a plain OPTIONS: 204 with Allow; an unknown path: 404 */
	dispatch_h("OPTIONS", "/t/items/5", NULL, NULL, NULL, &res);
	assert_int_equal(res.status, 204);
	assert_string_equal(http_response_header(&res, "Allow"), "GET, PUT, DELETE");
	http_response_release(&res);
	dispatch_h("OPTIONS", "/nope", pre_ok, NULL, NULL, &res);
	assert_int_equal(res.status, 404);
	http_response_release(&res);
	/* actual answers from the allowed origin expose the headers, errors too */
	dispatch_h("GET", "/t/items/5", ok, NULL, NULL, &res);
	assert_int_equal(res.status, 200);
	assert_string_equal(http_response_header(&res, "Access-Control-Allow-Origin"), "http://ui.test:8081");
	assert_string_equal(http_response_header(&res, "Access-Control-Expose-Headers"), ROUTE_CORS_EXPOSE_HEADERS);
	http_response_release(&res);
	dispatch_h("DELETE", "/t/items/5", ok, NULL, NULL, &res);
	assert_int_equal(res.status, 401);
	assert_string_equal(http_response_header(&res, "Access-Control-Allow-Origin"), "http://ui.test:8081");
	http_response_release(&res);
	/* others do not (a near miss: the port differs) */
	dispatch_h("GET", "/t/items/5", bad, NULL, NULL, &res);
	assert_int_equal(res.status, 200);
	assert_null(http_response_header(&res, "Access-Control-Allow-Origin"));
	assert_null(http_response_header(&res, "Access-Control-Expose-Headers"));
	http_response_release(&res);
}

/* Query parameters a route does not declare are a 400 naming them; declared ones pass. */
static void test_unknown_query(void **state)
{
	struct http_response res;
	cJSON *o;

	(void)state;
	dispatch_h("GET", "/t/items/5", NULL, "q", "x", &res);
	assert_int_equal(res.status, 200);
	http_response_release(&res);
	dispatch_h("GET", "/t/items/5", NULL, "wait", "10", &res);
	o = problem_json(&res, 400);
	assert_string_equal(cJSON_GetObjectItem(o, "type")->valuestring, "urn:uniap:problem:bad-query");
	assert_non_null(strstr(cJSON_GetObjectItem(o, "detail")->valuestring, "\"wait\""));
	assert_non_null(strstr(cJSON_GetObjectItem(o, "detail")->valuestring, "takes q"));
	cJSON_Delete(o);
	http_response_release(&res);
	dispatch_h("GET", "/t/invalid", NULL, "q", "x", &res);
	o = problem_json(&res, 400);
	assert_non_null(strstr(cJSON_GetObjectItem(o, "detail")->valuestring, "takes none"));
	cJSON_Delete(o);
	http_response_release(&res);
}

/* ETag on ROUTE_ETAG answers; If-None-Match with it (or a list holding it, weak or "*") is a bodiless 304. */
static void test_etag(void **state)
{
	static const char *const inm_star[] = {"If-None-Match", "*", NULL};
	static const char *const inm_other[] = {"If-None-Match", "\"0000\"", NULL};
	const char *inm[] = {"If-None-Match", NULL, NULL};
	char tag[HTTP_ETAG_MAX], list[128], weak[64];
	struct http_response res;

	(void)state;
	dispatch_h("GET", "/t/items/5", NULL, NULL, NULL, &res);
	assert_int_equal(res.status, 200);
	assert_non_null(http_response_header(&res, "ETag"));
	http_etag(res.body, res.body_len, tag);
	assert_string_equal(http_response_header(&res, "ETag"), tag);
	assert_int_equal(strlen(tag), HTTP_ETAG_MAX - 1);
	http_response_release(&res);
	snprintf(list, sizeof(list), "\"abc\", %s", tag);
	snprintf(weak, sizeof(weak), "W/%s", tag);
	{
		const char *const values[] = {tag, list, weak};
		size_t i;

		for (i = 0; i < 3; i++) {
			inm[1] = values[i];
			dispatch_h("GET", "/t/items/5", inm, NULL, NULL, &res);
			assert_int_equal(res.status, 304);
			assert_int_equal(res.body_len, 0);
			assert_string_equal(http_response_header(&res, "ETag"), tag);
			http_response_release(&res);
		}
	}
	dispatch_h("GET", "/t/items/5", inm_star, NULL, NULL, &res);
	assert_int_equal(res.status, 304);
	http_response_release(&res);
	dispatch_h("GET", "/t/items/5", inm_other, NULL, NULL, &res);
	assert_int_equal(res.status, 200);
	http_response_release(&res);
	/* another answer of the same route has another tag; a route without the flag has none */
	dispatch_h("GET", "/t/items/6", inm, NULL, NULL, &res);
	assert_int_equal(res.status, 200);
	assert_string_not_equal(http_response_header(&res, "ETag"), tag);
	http_response_release(&res);
	dispatch_h("PUT", "/t/items/6", NULL, NULL, NULL, &res);
	assert_null(http_response_header(&res, "ETag"));
	http_response_release(&res);
	assert_false(http_etag_match("\"a\"", "\"ab\""));
	assert_false(http_etag_match("", "\"a\""));
	assert_true(http_etag_match(" \"b\" ,\"a\" ", "\"a\""));
}

static void test_problem_table(void **state)
{
	char ptr[64];
	char out[16];

	(void)state;
	assert_int_equal(problem_status(UNIAP_E_MALFORMED), 400);
	assert_int_equal(problem_status(UNIAP_E_INVALID), 422);
	assert_int_equal(problem_status(UNIAP_E_NOTFOUND), 404);
	assert_int_equal(problem_status(UNIAP_E_LIMIT), 413);
	assert_int_equal(problem_status(UNIAP_E_INTERNAL), 500);
	assert_int_equal(problem_status(UNIAP_E_FORBIDDEN), 403);
	assert_string_equal(problem_slug(UNIAP_E_FORBIDDEN), "forbidden");
	assert_int_equal(problem_status((uniap_code)999), 500);
	for (int c = 0; c < UNIAP_CODE_COUNT; c++)
		assert_true(problem_status((uniap_code)c) >= 200 && problem_status((uniap_code)c) < 600);
	assert_string_equal(problem_title(413), "Content Too Large");
	assert_int_equal(problem_pointer("body.a[2].b: bad", "body", ptr, sizeof(ptr)), 0);
	assert_string_equal(ptr, "/a/2/b");
	assert_int_equal(problem_pointer("body: bad", "body", ptr, sizeof(ptr)), 0);
	assert_string_equal(ptr, "");
	assert_int_equal(problem_pointer("bodyx.a: bad", "body", ptr, sizeof(ptr)), -1);
	assert_int_equal(problem_pointer("cluster.a: bad", "body", ptr, sizeof(ptr)), -1);
	assert_int_equal(problem_pointer("no colon", "body", ptr, sizeof(ptr)), -1);
	/* percent-decoding is strict */
	assert_int_equal(http_percent_decode("a%20b", 5, out, sizeof(out), 0), 0);
	assert_string_equal(out, "a b");
	assert_int_equal(http_percent_decode("a+b", 3, out, sizeof(out), 1), 0);
	assert_string_equal(out, "a b");
	assert_int_equal(http_percent_decode("%zz", 3, out, sizeof(out), 0), -1);
	assert_int_equal(http_percent_decode("%2", 2, out, sizeof(out), 0), -1);
	assert_int_equal(http_percent_decode("%", 1, out, sizeof(out), 0), -1);
	assert_int_equal(http_percent_decode("%00", 3, out, sizeof(out), 0), -1);
	assert_int_equal(http_percent_decode("0123456789abcdef", 16, out, sizeof(out), 0), -1);
}

/* ---------------------------------------------------------------- a real server */

struct fetch {
	char body[1 << 16];
	size_t body_len;
	char headers[1 << 15];
	size_t headers_len;
	const char *upload;  /* chunked upload source */
	size_t upload_len, upload_pos;
};

/* Appends what fits of p[0..len) to dst (cap bytes, *used of them taken), kept
 * NUL-terminated; returns len, as libcurl's write callbacks must. */
static size_t fetch_append(char *dst, size_t cap, size_t *used, const char *p, size_t len)
{
	size_t room = cap - 1 - *used, take = len < room ? len : room;

	memcpy(dst + *used, p, take);
	*used += take;
	dst[*used] = '\0';
	return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct fetch *f = ud;

	return fetch_append(f->body, sizeof(f->body), &f->body_len, p, size * n);
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct fetch *f = ud;

	return fetch_append(f->headers, sizeof(f->headers), &f->headers_len, p, size * n);
}

static size_t on_read(char *p, size_t size, size_t n, void *ud)
{
	struct fetch *f = ud;
	size_t room = size * n, left = f->upload_len - f->upload_pos;
	size_t take = left < room ? left : room;

	if (take > 100)
		take = 100; /* several chunks */
	memcpy(p, f->upload + f->upload_pos, take);
	f->upload_pos += take;
	return take;
}

/*
 * One request to 127.0.0.1:port; path goes as is.  hdrs: NULL-terminated.
 * chunked: send body with Transfer-Encoding: chunked.  Returns the status
 * (0 when curl failed).
 */
static long http_do(unsigned short port, const char *method, const char *path, const char *const *hdrs,
                    const char *body, size_t len, int chunked, struct fetch *f)
{
	CURL *c = curl_easy_init();
	struct curl_slist *sl = NULL;
	char *url;
	long status = 0;
	size_t ul = strlen(path) + 32;
	size_t i;

	assert_non_null(c);
	url = malloc(ul);
	assert_non_null(url);
	snprintf(url, ul, "http://127.0.0.1:%u%s", (unsigned)port, path);
	memset(f, 0, sizeof(*f));
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
	/* generous: a loaded machine (a sanitizer, a fresh-machine chroot beside other work) can
	 * take seconds to answer; a 30 s wait must end by its change, not by the client's patience */
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	for (i = 0; hdrs && hdrs[i]; i++)
		sl = curl_slist_append(sl, hdrs[i]);
	if (chunked) {
		f->upload = body;
		f->upload_len = len;
		sl = curl_slist_append(sl, "Transfer-Encoding: chunked");
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, f);
	} else if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, sl);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(sl);
	curl_easy_cleanup(c);
	free(url);
	return status;
}

static int ready_flag = 1;

static int test_ready(void *ctx)
{
	return *(int *)ctx;
}

/* A server of the test table; threads 0: uniapd's default (one per core). */
static struct http_server *start_server_threads(const char *openapi, int threads)
{
	struct http_config cfg;
	char msg[256];
	struct http_server *srv;

	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = "127.0.0.1";
	cfg.port = 0;
	cfg.max_body_bytes = TEST_MAX_BODY;
	cfg.routes = &test_table;
	cfg.auth = fake_auth;
	cfg.ready = test_ready;
	cfg.ready_ctx = &ready_flag;
	cfg.openapi_json = openapi;
	cfg.openapi_json_len = openapi ? strlen(openapi) : 0;
	cfg.threads = threads;
	srv = http_server_start(&cfg, msg, sizeof(msg));
	if (!srv)
		fail_msg("http_server_start: %s", msg);
	assert_true(http_server_port(srv) != 0);
	return srv;
}

static struct http_server *start_server_openapi(const char *openapi)
{
	return start_server_threads(openapi, 0);
}

static struct http_server *start_server(void)
{
	return start_server_openapi(NULL);
}

/* A string of n copies of c followed by tail (owned, free()). */
static char *repeat(char c, size_t n, const char *tail)
{
	size_t tl = tail ? strlen(tail) : 0;
	char *s = malloc(n + tl + 1);

	assert_non_null(s);
	memset(s, c, n);
	memcpy(s + n, tail ? tail : "", tl);
	s[n + tl] = '\0';
	return s;
}

static const char *const CT_JSON[] = {"Content-Type: application/json", NULL};

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void test_hostile_requests(void **state)
{
	char *long_path = repeat('a', 40000, NULL);
	char *huge_header = repeat('x', 40000, NULL);
	char *deep = repeat('[', 3000, NULL);
	char *deep65 = malloc(200);
	char *over = repeat(' ', TEST_MAX_BODY + 500, "{}");
	char *many_q = malloc(400);
	char long_url[40016];
	char hh[40032];
	const char *const ct_text[] = {"Content-Type: text/plain", NULL};
	const char *const ct_jsonx[] = {"Content-Type: application/jsonx", NULL};
	const char *const ct_json_utf8[] = {"Content-Type: application/json; charset=utf-8", NULL};
	const char *const auth_bad[] = {"Content-Type: application/json", "Authorization: Bearer wrong", NULL};
	const char *const auth_basic[] = {"Content-Type: application/json", "Authorization: Basic Zm9vOmJhcg==", NULL};
	const char *const auth_empty[] = {"Content-Type: application/json", "Authorization: Bearer ", NULL};
	const char *const auth_good[] = {"Content-Type: application/json", "Authorization: Bearer good-key", NULL};
	const char *const auth_revoked[] = {"Content-Type: application/json", "Authorization: Bearer revoked-key", NULL};
	const char *const auth_down[] = {"Content-Type: application/json", "Authorization: Bearer store-down", NULL};
	const char *const expect[] = {"Content-Type: application/json", "Expect: 100-continue", NULL};
	const char *const no_expect[] = {"Content-Type: application/json", "Expect:", NULL};
	const char *const huge[] = {hh, NULL};
	struct http_server *srv = start_server();
	unsigned short port = http_server_port(srv);
	struct fetch *f = malloc(sizeof(*f));
	size_t i, n;

	(void)state;
	assert_non_null(f);
	assert_non_null(deep65);
	assert_non_null(many_q);
	snprintf(long_url, sizeof(long_url), "/%s", long_path);
	snprintf(hh, sizeof(hh), "X-Huge: %s", huge_header);
	n = 0;
	for (i = 0; i < 70; i++)
		deep65[n++] = '[';
	for (i = 0; i < 70; i++)
		deep65[n++] = ']';
	deep65[n] = '\0';
	n = (size_t)snprintf(many_q, 400, "/t/items/1?");
	for (i = 0; i < 40; i++)
		n += (size_t)snprintf(many_q + n, 400 - n, "a%zu=%zu&", i, i); /* each once: a repeat is its own 400 */
	{
		const struct {
			const char *method, *path;
			const char *const *hdrs;
			const char *body;
			size_t len; /* SIZE_MAX: strlen(body) */
			int chunked;
			long status;
			int problem;       /* expect an application/problem+json body */
			const char *want;  /* a substring of the headers or body */
		} cases[] = {
			/* malformed JSON, several kinds */
			{"POST", "/t/json", CT_JSON, "{", SIZE_MAX, 0, 400, 1, "at byte"},
			{"POST", "/t/json", CT_JSON, "{\"a\":1,}", SIZE_MAX, 0, 400, 1, "at byte 8"},
			{"POST", "/t/json", CT_JSON, "[1,2", SIZE_MAX, 0, 400, 1, NULL},
			{"POST", "/t/json", CT_JSON, "{\"a\":1} trailing", SIZE_MAX, 0, 400, 1, NULL},
			{"POST", "/t/json", CT_JSON, "{'a':1}", SIZE_MAX, 0, 400, 1, NULL},
			{"POST", "/t/json", CT_JSON, "{\"a\":tru}", SIZE_MAX, 0, 400, 1, NULL},
			{"POST", "/t/json", CT_JSON, "{\"a\":NaN}", SIZE_MAX, 0, 400, 1, NULL},
			{"POST", "/t/json", CT_JSON, "\xff\xfe", SIZE_MAX, 0, 400, 1, NULL},
			{"POST", "/t/json", CT_JSON, "{\"a\":\0 1}", 9, 0, 400, 1, "nul byte"},
			{"POST", "/t/json", CT_JSON, "{\"a\":\"\\u0000\"}", SIZE_MAX, 0, 422, 1, "u0000"},
			{"POST", "/t/json", CT_JSON, deep, SIZE_MAX, 0, 400, 1, NULL},
			{"POST", "/t/json", CT_JSON, deep65, SIZE_MAX, 0, 413, 1, "nest"},
			{"POST", "/t/json", CT_JSON, "", 0, 0, 400, 1, "required"},
			{"POST", "/t/json", CT_JSON, "   ", SIZE_MAX, 0, 400, 1, NULL},
			/* content type */
			{"POST", "/t/json", ct_text, "{}", SIZE_MAX, 0, 415, 1, "application/json"},
			{"POST", "/t/json", NULL, "{}", SIZE_MAX, 0, 415, 1, NULL},
			{"POST", "/t/json", ct_jsonx, "{}", SIZE_MAX, 0, 415, 1, NULL},
			{"POST", "/t/json", ct_json_utf8, "{}", SIZE_MAX, 0, 200, 0, "\"object\""},
			/* size limits: Content-Length checked on the first call, chunked capped */
			{"POST", "/t/json", expect, over, SIZE_MAX, 0, 413, 1, "Content-Length"},
			{"POST", "/t/json", no_expect, over, SIZE_MAX, 0, 413, 1, NULL},
			{"POST", "/nope", expect, over, SIZE_MAX, 0, 413, 1, NULL},
			{"POST", "/t/json", CT_JSON, over, SIZE_MAX, 1, 413, 1, "limit"},
			{"POST", "/t/json", CT_JSON, "{\"chunked\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, "
			 "17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36]}",
			 SIZE_MAX, 1, 200, 0, "\"object\""},
			/* paths and methods */
			{"GET", "/nope", NULL, NULL, 0, 0, 404, 1, "not-found"},
			{"GET", "/v1/openapi.json", NULL, NULL, 0, 0, 404, 1, NULL},
			{"GET", "/t/json", NULL, NULL, 0, 0, 405, 1, "Allow: POST"},
			{"DELETE", "/healthz", NULL, NULL, 0, 0, 405, 1, "Allow: GET"},
			{"PATCH", "/t/items/5", NULL, NULL, 0, 0, 405, 1, "Allow: GET, PUT, DELETE"},
			{"BREW", "/healthz", NULL, NULL, 0, 0, 405, 1, NULL},
			/* auth */
			{"POST", "/t/auth", CT_JSON, "{}", SIZE_MAX, 0, 401, 1, "WWW-Authenticate: Bearer"},
			{"POST", "/t/auth", auth_bad, "{}", SIZE_MAX, 0, 401, 1, NULL},
			{"POST", "/t/auth", auth_basic, "{}", SIZE_MAX, 0, 401, 1, NULL},
			{"POST", "/t/auth", auth_empty, "{}", SIZE_MAX, 0, 401, 1, NULL},
			{"DELETE", "/t/items/1", NULL, NULL, 0, 0, 401, 1, NULL},
			{"POST", "/t/auth", auth_good, "{}", SIZE_MAX, 0, 200, 0, "tenant-7"},
			{"POST", "/t/auth", auth_revoked, "{}", SIZE_MAX, 0, 403, 1, "tenant \\\"t8\\\" was revoked"},
			{"POST", "/t/auth", auth_down, "{}", SIZE_MAX, 0, 500, 1, "authorization: i/o error"},
			/* auth comes before the body checks: no key, bad body is still a 401 */
			{"POST", "/t/auth", CT_JSON, "{", SIZE_MAX, 0, 401, 1, NULL},
			/* traversal and encoding */
			{"GET", "/t/items/../../etc/passwd", NULL, NULL, 0, 0, 400, 1, "segments"},
			{"GET", "/t/items/%2e%2e", NULL, NULL, 0, 0, 400, 1, NULL},
			{"GET", "/t/items/%2e%2e%2f%2e%2e%2fetc%2fpasswd", NULL, NULL, 0, 0, 400, 1, NULL},
			{"GET", "/v1/openapi.json/../../../etc/passwd", NULL, NULL, 0, 0, 400, 1, NULL},
			{"GET", "//healthz", NULL, NULL, 0, 0, 400, 1, NULL},
			{"GET", "/healthz%zz", NULL, NULL, 0, 0, 400, 1, "percent"},
			{"GET", "/t/items/%", NULL, NULL, 0, 0, 400, 1, NULL},
			{"GET", "/t/items/%00", NULL, NULL, 0, 0, 400, 1, NULL},
			{"GET", "/t/items/a?q=%zz", NULL, NULL, 0, 0, 400, 1, "query"},
			{"GET", "/t/items/a%20b?q=x%20y", NULL, NULL, 0, 0, 200, 0, "\"q\":\"x y\""},
			{"GET", many_q, NULL, NULL, 0, 0, 400, 1, "too many"},
			/* oversize request line and header: MHD answers those itself */
			{"GET", long_url, NULL, NULL, 0, 0, 414, 0, NULL},
			{"GET", "/healthz", huge, NULL, 0, 0, 431, 0, NULL},
			/* handlers that misbehave or report errors */
			{"GET", "/t/noanswer", NULL, NULL, 0, 0, 500, 1, NULL},
			{"GET", "/t/invalid", NULL, NULL, 0, 0, 422, 1, "\"pointer\":\"/cluster/nodes/1\""},
			{"HEAD", "/healthz", NULL, NULL, 0, 0, 200, 0, NULL},
			{"GET", "/readyz", NULL, NULL, 0, 0, 200, 0, "ready"},
		};

		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			size_t len = cases[i].body && cases[i].len == SIZE_MAX ? strlen(cases[i].body) : cases[i].len;
			long st = http_do(port, cases[i].method, cases[i].path, cases[i].hdrs, cases[i].body, len,
			                  cases[i].chunked, f);
			char label[96];

			snprintf(label, sizeof(label), "case %zu (%s %.40s)", i, cases[i].method, cases[i].path);
			if (st != cases[i].status)
				fail_msg("%s: status %ld, want %ld; body %.300s", label, st, cases[i].status, f->body);
			if (cases[i].problem) {
				cJSON *o = cJSON_Parse(f->body);

				if (!strstr(f->headers, "Content-Type: application/problem+json"))
					fail_msg("%s: not problem+json: %s", label, f->headers);
				if (!o || cJSON_GetObjectItem(o, "status")->valuedouble != (double)st)
					fail_msg("%s: bad problem body %.300s", label, f->body);
				cJSON_Delete(o);
			}
			if (cases[i].want && !strstr(f->body, cases[i].want) && !strstr(f->headers, cases[i].want))
				fail_msg("%s: neither body nor headers hold %s: %.300s %.300s", label, cases[i].want,
				         f->headers, f->body);
			/* the server stays healthy after each */
			if (http_do(port, "GET", "/healthz", NULL, NULL, 0, 0, f) != 200)
				fail_msg("%s: /healthz no longer answers", label);
		}
	}
	assert_int_equal(http_do(port, "GET", "/healthz", NULL, NULL, 0, 0, f), 200);
	assert_string_equal(f->body, "{\"status\":\"ok\"}");
	/* readiness follows the hook */
	ready_flag = 0;
	assert_int_equal(http_do(port, "GET", "/readyz", NULL, NULL, 0, 0, f), 503);
	assert_non_null(strstr(f->headers, "Retry-After: 1"));
	ready_flag = 1;
	/* metrics counted the requests */
	assert_int_equal(http_do(port, "GET", "/metrics", NULL, NULL, 0, 0, f), 200);
	assert_non_null(strstr(f->headers, "Content-Type: text/plain; version=0.0.4"));
	assert_non_null(strstr(f->body, "uniapd_http_requests_total{method=\"POST\",route=\"/t/json\",status=\"400\"} "));
	assert_non_null(strstr(f->body, "uniapd_http_requests_total{method=\"POST\",route=\"/t/auth\",status=\"401\"} 5\n"));
	assert_non_null(strstr(f->body, "uniapd_http_requests_total{method=\"\",route=\"unmatched\",status=\"404\"} 1\n"));
	assert_non_null(strstr(f->body, "uniapd_http_requests_total{method=\"GET\",route=\"/readyz\",status=\"503\"} 1\n"));
	assert_non_null(strstr(f->body, "uniapd_http_request_duration_seconds_bucket{method=\"GET\",route=\"/healthz\",le=\"+Inf\"}"));
	{
		/* only the metrics request itself is in flight: a request leaves the count in its
		 * completion callback, which may trail the client's read of its answer by a moment */
		int tries = 0;

		while (!strstr(f->body, "uniapd_http_requests_in_flight 1\n") && tries++ < 50) {
			sleep_ms(20);
			assert_int_equal(http_do(port, "GET", "/metrics", NULL, NULL, 0, 0, f), 200);
		}
		assert_non_null(strstr(f->body, "uniapd_http_requests_in_flight 1\n"));
	}
	http_server_free(srv);
	free(f);
	free(long_path);
	free(huge_header);
	free(deep);
	free(deep65);
	free(over);
	free(many_q);
}

/* ---------------------------------------------------------------- graceful stop */

struct slow_call {
	unsigned short port;
	long status;
	struct fetch f;
};

static void *slow_thread(void *arg)
{
	struct slow_call *sc = arg;

	sc->status = http_do(sc->port, "GET", "/t/slow", NULL, NULL, 0, 0, &sc->f);
	return NULL;
}

struct bg_call {
	unsigned short port;
	const char *path;
	long status;
	double seconds;
	struct fetch f;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *bg_thread(void *arg)
{
	struct bg_call *bc = arg;
	double t0 = now_s();

	bc->status = http_do(bc->port, "GET", bc->path, NULL, NULL, 0, 0, &bc->f);
	bc->seconds = now_s() - t0;
	return NULL;
}

/* Polls /metrics until it holds "uniapd_http_streams_open N" (waits and streams
 * count alike); fails after 20 s.  Conditions, not sleeps: under a sanitizer on a
 * loaded machine a thread can take far longer than usual to connect. */
static void await_streams_open(unsigned short port, int n, struct fetch *f)
{
	char want[64];
	int tries;

	snprintf(want, sizeof(want), "uniapd_http_streams_open %d\n", n);
	for (tries = 0; tries < 1000; tries++) {
		assert_int_equal(http_do(port, "GET", "/metrics", NULL, NULL, 0, 0, f), 200);
		if (strstr(f->body, want))
			return;
		sleep_ms(20);
	}
	fail_msg("streams open never reached %d", n);
}

/*
 * Long-polls and event streams: a wait ends on a version change or at its
 * time; a stream sends each version, heartbeats while idle and ends; neither
 * holds the one request thread (healthz answers meanwhile); past max_streams
 * a 503 with Retry-After; a stop answers the waiters at once.  The bounds on
 * time are wide (a 30 s wait must end well before 30 s), never tight.
 */
static void test_waits_and_streams(void **state)
{
	struct http_config cfg;
	struct http_server *srv;
	struct bg_call *bc = calloc(4, sizeof(*bc));
	struct fetch *f = malloc(sizeof(*f));
	pthread_t t[4];
	unsigned short port;
	char msg[256];
	double t0;
	int i;

	(void)state;
	assert_non_null(bc);
	assert_non_null(f);
	atomic_store(&test_version, 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = "127.0.0.1";
	cfg.routes = &test_table;
	cfg.threads = 2; /* fewer than the waits below */
	cfg.max_streams = 3;
	cfg.heartbeat_ms = 300;
	cfg.version = test_version_of;
	srv = http_server_start(&cfg, msg, sizeof(msg));
	if (!srv)
		fail_msg("http_server_start: %s", msg);
	port = http_server_port(srv);

	/* nothing moves: the wait ends at its time, told so */
	t0 = now_s();
	assert_int_equal(http_do(port, "GET", "/t/wait", NULL, NULL, 0, 0, f), 200);
	assert_true(now_s() - t0 >= 0.9);
	assert_non_null(strstr(f->body, "\"expired\":1"));
	/* its slot is given back when MHD completes the request, which can come
	 * after the client has the answer: counting it as the next wait's would
	 * change the version before that wait read it */
	await_streams_open(port, 0, f);

	/* a change ends a 30 s wait early */
	bc[0].port = port;
	bc[0].path = "/t/wait?ms=30000";
	assert_int_equal(pthread_create(&t[0], NULL, bg_thread, &bc[0]), 0);
	await_streams_open(port, 1, f);
	atomic_store(&test_version, 1);
	pthread_join(t[0], NULL);
	assert_int_equal(bc[0].status, 200);
	if (!strstr(bc[0].f.body, "{\"v\":1,\"expired\":0}"))
		fail_msg("a change did not end the wait: %.200s after %.3f s", bc[0].f.body, bc[0].seconds);
	assert_true(bc[0].seconds < 20);
	await_streams_open(port, 0, f);

	/* a stream: the current version, a heartbeat while idle, each change, the end */
	bc[0].path = "/t/stream";
	assert_int_equal(pthread_create(&t[0], NULL, bg_thread, &bc[0]), 0);
	await_streams_open(port, 1, f);
	sleep_ms(3000); /* ten heartbeat periods idle: at least one on any machine */
	assert_int_equal(http_do(port, "GET", "/healthz", NULL, NULL, 0, 0, f), 200); /* the thread is free */
	atomic_store(&test_version, 2);
	sleep_ms(300);
	atomic_store(&test_version, 3);
	pthread_join(t[0], NULL);
	assert_int_equal(bc[0].status, 200);
	assert_non_null(strstr(bc[0].f.headers, "text/event-stream"));
	assert_non_null(strstr(bc[0].f.body, "id: 1\ndata: 1\n\n"));
	assert_non_null(strstr(bc[0].f.body, ": heartbeat\n\n"));
	assert_non_null(strstr(bc[0].f.body, "id: 2\ndata: 2\n\nid: 3\ndata: 3\n\n") ||
	                strstr(bc[0].f.body, "id: 3\ndata: 3\n\n"));
	await_streams_open(port, 0, f);

	/* three 30 s waits fill the slots: the fourth is a 503, healthz still answers */
	for (i = 0; i < 3; i++) {
		bc[i].port = port;
		bc[i].path = "/t/wait?ms=30000";
		assert_int_equal(pthread_create(&t[i], NULL, bg_thread, &bc[i]), 0);
	}
	await_streams_open(port, 3, f);
	assert_int_equal(http_do(port, "GET", "/t/stream", NULL, NULL, 0, 0, f), 503);
	assert_non_null(strstr(f->headers, "Retry-After: 5"));
	assert_int_equal(http_do(port, "GET", "/metrics", NULL, NULL, 0, 0, f), 200);
	assert_non_null(strstr(f->body, "uniapd_http_streams_open 3\n"));
	assert_non_null(strstr(f->body, "uniapd_http_streams_refused_total 1\n"));
	assert_int_equal(http_do(port, "GET", "/healthz", NULL, NULL, 0, 0, f), 200);
	/* a stop answers them now, not at their time */
	t0 = now_s();
	http_server_stop(srv, 5000);
	assert_true(now_s() - t0 < 15);
	for (i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(bc[i].status, 200);
		assert_non_null(strstr(bc[i].f.body, "\"expired\":1"));
		assert_true(bc[i].seconds < 25);
	}
	http_server_free(srv);
	free(bc);
	free(f);
}

/*
 * A waiting request whose client goes away: found by the watcher (its parked
 * socket reads an end of file), its slot freed long before its 10 minutes,
 * and its handler dispatched once more, told its wait is over, so that it can
 * let go of what it waited on (POST /v1/evaluate abandons its task there), or,
 * where libmicrohttpd closes the resumed connection before calling the
 * handler (it reads the client's end first: seen once in the TSan pass on a
 * busy machine), the wait-gone hook called instead: one of the two, once,
 * before the slot is given back.  Nothing is written back.  Counted in
 * uniapd_http_streams_gone_total.
 */
static void test_gone_waits(void **state)
{
	struct http_config cfg;
	struct http_server *srv;
	struct fetch *f = malloc(sizeof(*f));
	char msg[256];
	unsigned short port;
	int fd, before, hooks;

	(void)state;
	assert_non_null(f);
	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = "127.0.0.1";
	cfg.routes = &test_table;
	cfg.auth = fake_auth;
	cfg.version = test_version_of;
	cfg.wait_gone = test_wait_gone;
	srv = http_server_start(&cfg, msg, sizeof(msg));
	if (!srv)
		fail_msg("http_server_start: %s", msg);
	port = http_server_port(srv);
	before = atomic_load(&test_expired_dispatches);
	hooks = atomic_load(&test_gone_hooks);
	fd = raw_connect(port);
	{
		static const char req[] = "GET /t/wait?ms=600000 HTTP/1.1\r\nHost: a\r\n\r\n";

		assert_true(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(req) - 1));
	}
	await_streams_open(port, 1, f);
	close(fd);
	await_streams_open(port, 0, f);
	/* the slot is given back at the request's completion, after either */
	assert_int_equal(atomic_load(&test_expired_dispatches) - before + atomic_load(&test_gone_hooks) - hooks, 1);
	assert_int_equal(http_do(port, "GET", "/metrics", NULL, NULL, 0, 0, f), 200);
	assert_non_null(strstr(f->body, "uniapd_http_streams_gone_total 1\n"));
	http_server_free(srv);
	free(f);
}

/* Sets slow_release once the server at port (arg) refuses new connections: its stop has
 * begun, so the slow request it holds is in flight during the stop (30 s at most). */
static void *release_when_stopping(void *arg)
{
	unsigned short port = (unsigned short)(uintptr_t)arg;
	int i;

	for (i = 0; i < 3000; i++) {
		struct sockaddr_in a;
		int fd = socket(AF_INET, SOCK_STREAM, 0), refused;

		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_port = htons(port);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		refused = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0;
		if (fd >= 0)
			close(fd);
		if (refused)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	atomic_store(&slow_release, 1);
	return NULL;
}

static void test_graceful_stop(void **state)
{
	struct http_server *srv = start_server();
	struct slow_call *sc = calloc(1, sizeof(*sc));
	struct fetch *f = malloc(sizeof(*f));
	pthread_t t, releaser;
	unsigned short port = http_server_port(srv);

	(void)state;
	assert_non_null(sc);
	assert_non_null(f);
	atomic_store(&slow_started, 0);
	atomic_store(&slow_release, 0);
	sc->port = port;
	assert_int_equal(pthread_create(&t, NULL, slow_thread, sc), 0);
	while (!atomic_load(&slow_started)) {
		struct timespec ts = {0, 1000 * 1000};

		nanosleep(&ts, NULL);
	}
	/* the slow request ends during the stop, which waits for it (a grace of 60 s) */
	assert_int_equal(pthread_create(&releaser, NULL, release_when_stopping, (void *)(uintptr_t)port), 0);
	http_server_stop(srv, 60000);
	pthread_join(releaser, NULL);
	pthread_join(t, NULL);
	assert_int_equal(sc->status, 200);
	assert_string_equal(sc->f.body, "done");
	/* no longer accepting */
	assert_int_equal(http_do(port, "GET", "/healthz", NULL, NULL, 0, 0, f), 0);
	http_server_free(srv);
	free(sc);
	free(f);
}

/* ---- raw HTTP: what a client library would never send */

/* The first case-insensitive occurrence of needle in hay, or NULL (strcasestr is GNU's). */
static const char *ci_find(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return hay;
	return NULL;
}

/*
 * A connected socket to 127.0.0.1:port with 30 s send and receive timeouts,
 * from the loopback address 127.0.0.host (bound before the connect; 0: the
 * kernel's choice).
 */
static int raw_connect_from(unsigned short port, int host)
{
	struct sockaddr_in a, from;
	struct timeval tv = {30, 0};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	if (host) {
		memset(&from, 0, sizeof(from));
		from.sin_family = AF_INET;
		from.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)host);
		assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	}
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static int raw_connect(unsigned short port)
{
	return raw_connect_from(port, 0);
}

/*
 * Sends req on fd and reads one response (headers, then Content-Length bytes)
 * into out (NUL-terminated); returns its status, or 0 when the server closed
 * or timed out first.
 */
static long raw_exchange(int fd, const char *req, char *out, size_t cap)
{
	size_t n = 0, want = 0, len = strlen(req), sent = 0;
	char *end = NULL;
	long status = 0;

	while (sent < len) {
		ssize_t w = send(fd, req + sent, len - sent, MSG_NOSIGNAL);

		if (w <= 0)
			return 0;
		sent += (size_t)w;
	}
	out[0] = '\0';
	for (;;) {
		ssize_t r;

		if (end && n >= want)
			break;
		if (n + 1 >= cap)
			break;
		r = recv(fd, out + n, cap - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
		out[n] = '\0';
		if (!end && (end = strstr(out, "\r\n\r\n")) != NULL) {
			const char *cl = ci_find(out, "\r\nContent-Length:");

			want = (size_t)(end + 4 - out) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
		}
	}
	if (end && sscanf(out, "HTTP/1.%*d %ld", &status) != 1)
		status = 0;
	return end ? status : 0;
}

/*
 * Framing that a proxy in front could read otherwise is refused before any
 * body is read: a repeated Content-Length, Content-Length with
 * Transfer-Encoding, a coding other than chunked (501), HTTP/1.1 without
 * exactly one Host, two Authorization or Origin headers, a control character
 * in a header value; a query parameter given twice is a 400 naming it; a
 * JSON body with invalid UTF-8 in a string is a 400 naming the member.
 */
static void test_framing(void **state)
{
	static const struct {
		const char *req;
		long status;
		const char *want;
	} cases[] = {
		{"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n", 200, "\"ok\""},
		{"POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
		 "Content-Length: 7\r\n\r\n{}", 400, "Content-Length given 2 times"},
		{"POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
		 "Content-Length: 2\r\n\r\n{}", 400, "Content-Length given 2 times"},
		{"POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400, "Content-Length and Transfer-Encoding"},
		{"POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n"
		 "\r\n{}", 501, "Transfer-Encoding \\\"gzip\\\" is not supported"},
		{"POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
		 "\r\n2\r\n{}\r\n0\r\n\r\n", 200, "\"object\""},
		{"GET /healthz HTTP/1.1\r\n\r\n", 400, "HTTP/1.1 needs exactly one Host, got 0"},
		{"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "HTTP/1.1 needs exactly one Host, got 2"},
		{"GET /healthz HTTP/1.0\r\n\r\n", 200, "\"ok\""},
		{"POST /t/auth HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nAuthorization: Bearer good-key\r\n"
		 "Authorization: Bearer revoked-key\r\nContent-Length: 2\r\n\r\n{}", 400, "Authorization given 2 times"},
		{"GET /healthz HTTP/1.1\r\nHost: a\r\nOrigin: https://a.example\r\nOrigin: https://b.example\r\n\r\n", 400,
		 "Origin given 2 times"},
		{"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Note: a\x01b\r\n\r\n", 400, "X-Note: a control character"},
		{"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Note: a\x7f\r\n\r\n", 400, "X-Note: a control character"},
		{"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Note: a\tb\r\n\r\n", 200, "\"ok\""},
		{"GET /healthz?wait=1&wait=2 HTTP/1.1\r\nHost: a\r\n\r\n", 400, "query: wait given twice"},
		{"POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n"
		 "{\"a\":[1,\"x\xc3\x28\"]}", 400, "body.a[1]: invalid UTF-8 at byte 1 of the string"},
		{"POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n"
		 "{\"\xed\xa0\x80\":\"ok\"}", 400, "body: a key has invalid UTF-8 at byte 0"},
		{"POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n"
		 "{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}", 200, "\"object\""},
		/* the key is checked from the headers: a 16 MB body that never comes is not waited for */
		{"POST /t/auth HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 16000000\r\n\r\n",
		 401, "Bearer key is required"},
		{"POST /t/auth HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nAuthorization: Bearer wrong\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n", 401, "not valid"},
		{"POST /t/auth HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nAuthorization: Bearer revoked-key\r\n"
		 "Content-Length: 16000000\r\n\r\n", 403, "revoked"},
	};
	struct http_server *srv = start_server();
	unsigned short port = http_server_port(srv);
	char *out = malloc(8192);
	size_t i;

	(void)state;
	assert_non_null(out);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = raw_connect(port);
		long st = raw_exchange(fd, cases[i].req, out, 8192);

		if (st != cases[i].status || !strstr(out, cases[i].want))
			fail_msg("case %zu: want %ld with '%s', got %ld: %.300s", i, cases[i].status, cases[i].want, st,
			         out);
		/* a refused framing closes the connection: nothing after it is read as a request */
		if (strstr(out, "bad-framing") || cases[i].status == 501)
			assert_non_null(ci_find(out, "Connection: close"));
		close(fd);
	}
	http_server_free(srv);
	free(out);
}

/* 1 when the server closed fd within ms milliseconds (recv sees the end or an error). */
static int closed_within(int fd, long ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	char buf[256];
	ssize_t r;

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	do
		r = recv(fd, buf, sizeof(buf), 0);
	while (r > 0); /* an answer (408, ...) may come first */
	return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* 1 when fd is still open: nothing to read yet, no end, no error. */
static int still_open(int fd)
{
	char b;
	ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);

	return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* The value of metric line NAME (the name and a space) in srv's metrics; -1 when absent. */
static long long metric_of(struct http_server *srv, const char *name)
{
	char *text = http_server_metrics_text(srv), want[128], *at;
	long long v = -1;

	assert_non_null(text);
	snprintf(want, sizeof(want), "\n%s ", name);
	at = strstr(text, want);
	if (at)
		v = atoll(at + strlen(want));
	free(text);
	return v;
}

/* Waits (10 ms steps, 30 s at most) until metric NAME of srv is want; fails otherwise. */
static void await_metric(struct http_server *srv, const char *name, long long want)
{
	int i;

	for (i = 0; i < 3000; i++) {
		if (metric_of(srv, name) == want)
			return;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	fail_msg("%s is %lld, never %lld", name, metric_of(srv, name), want);
}

/*
 * Slow clients (slowloris): connections that trickle their headers or body
 * are closed at a deadline that trickling does not move, while /healthz
 * answers at once; one address holds at most per_address_limit connections.
 */
/* A body of n bytes of JSON ({"a":"xxx..."}) for a POST /t/json with its headers; owned. */
static char *json_post(size_t n)
{
	char *r = malloc(n + 256);
	int h;

	assert_non_null(r);
	h = snprintf(r, 256, "POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
	                     "Content-Length: %zu\r\n\r\n{\"a\":\"", n);
	memset(r + h, 'x', n - 8);
	memcpy(r + h + n - 8, "\"}", 3);
	r[h + n - 6] = '\0';
	return r;
}

/*
 * The bodies being received are bounded together (max_body_in_flight), not
 * only one by one: with two 16 KB bodies half sent, a third that does not fit
 * beside them is answered 503 with Retry-After, /healthz answers meanwhile,
 * and once the two are done their bytes are free for the next one.
 */
static void test_bodies_in_flight(void **state)
{
	struct http_config cfg;
	struct http_server *srv;
	char msg[256], *out = malloc(8192), *full = json_post(16000), *metrics;
	int fds[2], i, fd;
	unsigned short port;
	struct fetch *f = malloc(sizeof(*f));
	size_t head;

	(void)state;
	assert_non_null(out);
	assert_non_null(f);
	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = "127.0.0.1";
	cfg.routes = &test_table;
	cfg.auth = fake_auth;
	cfg.max_body_bytes = 16384;
	cfg.max_body_in_flight = 40960;
	srv = http_server_start(&cfg, msg, sizeof(msg));
	if (!srv)
		fail_msg("http_server_start: %s", msg);
	port = http_server_port(srv);
	head = strlen(full) - 16000 + 6; /* headers and the body's first 6 bytes */
	for (i = 0; i < 2; i++) {
		fds[i] = raw_connect(port);
		/* headers and 10000 of the 16000 bytes: a 16 KB buffer each */
		assert_true(send(fds[i], full, head + 10000 - 6, MSG_NOSIGNAL) == (ssize_t)(head + 10000 - 6));
	}
	/* both buffers held (the server read the headers of both) */
	await_metric(srv, "uniapd_http_body_bytes", 2 * 16384);
	assert_int_equal(http_do(port, "GET", "/healthz", NULL, NULL, 0, 0, f), 200);
	fd = raw_connect(port);
	assert_int_equal(raw_exchange(fd, full, out, 8192), 503);
	assert_non_null(ci_find(out, "Retry-After: 5"));
	assert_non_null(strstr(out, "request bodies in flight"));
	close(fd);
	/* the two finish: answered, and their bytes go back */
	for (i = 0; i < 2; i++) {
		assert_int_equal(raw_exchange(fds[i], full + head + 10000 - 6, out, 8192), 200);
		close(fds[i]);
	}
	/* a request's completion, which gives its bytes back, may trail its answer (a slow,
	 * sanitized or busy machine): wait for it, then the next body fits */
	await_metric(srv, "uniapd_http_body_bytes", 0);
	fd = raw_connect(port);
	assert_int_equal(raw_exchange(fd, full, out, 8192), 200);
	close(fd);
	/* every buffer is given back (a request's completion may trail its answer a little) */
	for (i = 0;; i++) {
		metrics = http_server_metrics_text(srv);
		assert_non_null(metrics);
		assert_non_null(strstr(metrics, "\nuniapd_http_bodies_refused_total 1\n"));
		if (strstr(metrics, "\nuniapd_http_body_bytes 0\n"))
			break;
		free(metrics);
		if (i >= 200)
			fail_msg("the request bodies' bytes did not go back to 0");
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	free(metrics);
	http_server_free(srv);
	free(full);
	free(out);
	free(f);
}

static void test_slow_clients(void **state)
{
	enum { N = 12, LIMIT = 16 };
	struct http_config cfg;
	struct http_server *srv;
	struct fetch *f = malloc(sizeof(*f));
	char msg[256], *metrics;
	int fds[N + 1], extra[LIMIT + 6], i, k, open_n, refused = 0;
	unsigned short port;

	(void)state;
	assert_non_null(f);
	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = "127.0.0.1";
	cfg.routes = &test_table;
	cfg.auth = fake_auth;
	cfg.per_address_limit = LIMIT;
	cfg.header_timeout_ms = 3000;
	cfg.body_timeout_ms = 3000;
	srv = http_server_start(&cfg, msg, sizeof(msg));
	if (!srv)
		fail_msg("http_server_start: %s", msg);
	port = http_server_port(srv);
	for (i = 0; i < N; i++) {
		fds[i] = raw_connect(port);
		assert_true(send(fds[i], "GET /healthz HTTP/1.1\r\nHost: a\r\n", 32, MSG_NOSIGNAL) == 32);
	}
	/* one more sends its headers and trickles its body */
	fds[N] = raw_connect(port);
	{
		const char *h = "POST /t/json HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
		                "Content-Length: 100\r\n\r\n{\"a\":";

		assert_true(send(fds[N], h, strlen(h), MSG_NOSIGNAL) == (ssize_t)strlen(h));
	}
	/* /healthz answers at once: while every slow connection is still open, well inside
	 * their 3 s deadline (on a thread held by them it would wait for the deadline) */
	assert_int_equal(http_do(port, "GET", "/healthz", NULL, NULL, 0, 0, f), 200);
	for (i = 0; i <= N; i++)
		if (!still_open(fds[i]))
			fail_msg("slow connection %d closed before /healthz answered", i);
	/* a byte per open connection every 200 ms: the deadline does not move, so each is closed
	 * (30 s at most; about 3 s) while it still trickles; /healthz answers meanwhile */
	for (k = 0, open_n = N + 1; open_n > 0 && k < 150; k++) {
		struct timespec ts = {0, 200 * 1000 * 1000};

		for (i = 0, open_n = 0; i <= N; i++)
			if (fds[i] >= 0 && still_open(fds[i])) {
				(void)send(fds[i], i == N ? " " : "X", 1, MSG_NOSIGNAL);
				open_n++;
			}
		assert_int_equal(http_do(port, "GET", "/healthz", NULL, NULL, 0, 0, f), 200);
		nanosleep(&ts, NULL);
	}
	for (i = 0, open_n = 0; i <= N; i++) {
		open_n += !closed_within(fds[i], 1000);
		close(fds[i]);
	}
	if (open_n)
		fail_msg("%d of %d trickling connections still open 30 s past their deadline", open_n, N + 1);
	metrics = http_server_metrics_text(srv);
	assert_non_null(metrics);
	assert_non_null(strstr(metrics, "\nuniapd_http_connections_reaped_total "));
	assert_true(atoll(strstr(metrics, "\nuniapd_http_connections_reaped_total ") + 38) >= N + 1);
	free(metrics);
	/* one address: LIMIT connections are kept, the ones past it closed at once; first
	 * libmicrohttpd lets go of the closed ones above (nothing in flight but the look itself) */
	await_metric(srv, "uniapd_http_requests_in_flight", 0);
	for (i = 0; i < LIMIT + 6; i++)
		extra[i] = raw_connect(port);
	/* the 6 past the limit are closed by the server (30 s at most), well inside the 3 s
	 * header deadline of the ones it keeps */
	for (k = 0; k < 3000; k++) {
		for (i = 0, refused = 0; i < LIMIT + 6; i++)
			refused += !still_open(extra[i]);
		if (refused >= 6)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	for (i = 0; i < LIMIT + 6; i++)
		close(extra[i]);
	if (refused < 6 || refused > 6 + 1)
		fail_msg("%d of %d connections past the per-address limit %d were closed", refused, LIMIT + 6, LIMIT);
	http_server_free(srv);
	free(f);
}

/*
 * Admission: 30 connections from 10 addresses (3 each, under the per-address
 * limit) trickle their headers past a global limit of 20, their deadline far
 * away.  Each connection past the limit closes the oldest one still in its
 * headers: at least 10 close.  Then, 5 times, one more trickler and a
 * /healthz probe from another address: the probe is answered every time
 * while the trickling goes on (before, the limit refused every newcomer until
 * a deadline passed), and at the end at most 20 tricklers are still open.
 * Then one address past its own limit of 4: its oldest connections close,
 * not the newcomers.  One request thread, so that libmicrohttpd's own limit
 * is not split among threads.
 */
static void test_admission(void **state)
{
	enum { ADDRS = 10, EACH = 3, LIMIT = 20, PROBES = 5, PER = 4, ALL = ADDRS * EACH + PROBES };
	struct http_config cfg;
	struct http_server *srv;
	struct fetch *f = malloc(sizeof(*f));
	char msg[256];
	int fds[ALL], mine[PER + 2], i, k, closed;
	unsigned short port;

	(void)state;
	assert_non_null(f);
	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = "127.0.0.1";
	cfg.routes = &test_table;
	cfg.auth = fake_auth;
	cfg.threads = 1;
	cfg.connection_limit = LIMIT;
	cfg.per_address_limit = PER;
	cfg.header_timeout_ms = 600000;
	srv = http_server_start(&cfg, msg, sizeof(msg));
	if (!srv)
		fail_msg("http_server_start: %s", msg);
	port = http_server_port(srv);
	for (i = 0; i < ALL; i++) {
		fds[i] = raw_connect_from(port, 2 + i % ADDRS);
		assert_true(send(fds[i], "GET /healthz HTTP/1.1\r\nHost: a\r\n", 32, MSG_NOSIGNAL) == 32);
		if (i < ADDRS * EACH - 1)
			continue;
		/* at most LIMIT tricklers open (the rest closed: evicted), probes or not */
		for (k = 0;; k++) {
			int j;

			for (j = 0, closed = 0; j <= i; j++)
				closed += !still_open(fds[j]);
			if (i + 1 - closed <= LIMIT)
				break;
			if (k >= 3000)
				fail_msg("%d of %d trickling connections still open, the limit %d", i + 1 - closed, i + 1,
				         LIMIT);
			nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
		}
		if (i >= ADDRS * EACH)
			assert_int_equal(http_do(port, "GET", "/healthz", NULL, NULL, 0, 0, f), 200);
	}
	assert_true(metric_of(srv, "uniapd_http_connections_evicted_total") >= ADDRS * EACH - LIMIT);
	for (i = 0; i < ALL; i++)
		close(fds[i]);
	/* the server has let go of them all (the metrics text asks for none) */
	await_metric(srv, "uniapd_http_connections_open", 0);
	/* one address past its limit: PER + 2 connections, each in order once the one before is
	 * in; the two oldest close */
	for (i = 0; i < PER + 2; i++) {
		long long before = metric_of(srv, "uniapd_http_connections_evicted_total");

		mine[i] = raw_connect_from(port, 60);
		assert_true(send(mine[i], "GET /healthz HTTP/1.1\r\n", 23, MSG_NOSIGNAL) == 23);
		if (i >= PER)
			await_metric(srv, "uniapd_http_connections_evicted_total", before + 1);
	}
	assert_true(closed_within(mine[0], 30000));
	assert_true(closed_within(mine[1], 30000));
	for (i = 2; i < PER + 2; i++)
		assert_true(still_open(mine[i]));
	for (i = 0; i < PER + 2; i++)
		close(mine[i]);
	http_server_free(srv);
	free(f);
}

/* /metrics without a token answers loopback clients only: what counts as loopback. */
static void test_loopback_addresses(void **state)
{
	static const struct {
		const char *addr;
		int loopback;
	} cases[] = {
		{"127.0.0.1", 1}, {"127.255.0.9", 1}, {"128.0.0.1", 0}, {"10.0.0.1", 0}, {"0.0.0.0", 0},
		{"::1", 1}, {"::ffff:127.0.0.1", 1}, {"::ffff:10.1.2.3", 0}, {"::", 0}, {"fe80::1", 0},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_in a4;
		struct sockaddr_in6 a6;

		memset(&a4, 0, sizeof(a4));
		memset(&a6, 0, sizeof(a6));
		if (inet_pton(AF_INET, cases[i].addr, &a4.sin_addr) == 1) {
			a4.sin_family = AF_INET;
			assert_int_equal(http_addr_loopback((const struct sockaddr *)&a4), cases[i].loopback);
		} else {
			assert_int_equal(inet_pton(AF_INET6, cases[i].addr, &a6.sin6_addr), 1);
			a6.sin6_family = AF_INET6;
			assert_int_equal(http_addr_loopback((const struct sockaddr *)&a6), cases[i].loopback);
		}
	}
	assert_int_equal(http_addr_loopback(NULL), 0);
}

static void *stop_thread(void *arg)
{
	http_server_stop(arg, 60000);
	return NULL;
}

/* While a stop drains, an answer on a kept-alive connection says Connection: close. */
static void test_drain_closes(void **state)
{
	/* two threads: the slow request holds one, the kept-alive connection is the other's */
	struct http_server *srv = start_server_threads(NULL, 2);
	struct slow_call *sc = calloc(1, sizeof(*sc));
	unsigned short port = http_server_port(srv);
	char *out = malloc(8192);
	pthread_t slow, stopper;
	int fd, i;
	struct timespec ts = {0, 10 * 1000 * 1000};

	(void)state;
	assert_non_null(sc);
	assert_non_null(out);
	/* the slow request first: its thread is held (it accepts nothing more), so the
	 * connection made next belongs to the other thread and is answered meanwhile */
	atomic_store(&slow_started, 0);
	atomic_store(&slow_release, 0);
	sc->port = port;
	assert_int_equal(pthread_create(&slow, NULL, slow_thread, sc), 0);
	while (!atomic_load(&slow_started)) {
		struct timespec one = {0, 1000 * 1000};

		nanosleep(&one, NULL);
	}
	fd = raw_connect(port);
	assert_int_equal(raw_exchange(fd, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n", out, 8192), 200);
	assert_null(ci_find(out, "Connection: close"));
	assert_int_equal(pthread_create(&stopper, NULL, stop_thread, srv), 0);
	/* once the stop has begun (the slow request keeps it draining), the next answer on the
	 * kept-alive connection says close; before, they keep it alive (30 s at most) */
	for (i = 0;; i++) {
		assert_int_equal(raw_exchange(fd, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n", out, 8192), 200);
		if (ci_find(out, "Connection: close"))
			break;
		if (i >= 3000)
			fail_msg("no Connection: close while the stop drained");
		nanosleep(&ts, NULL);
	}
	atomic_store(&slow_release, 1); /* the slow request ends; so does the stop */
	pthread_join(slow, NULL);
	pthread_join(stopper, NULL);
	assert_int_equal(sc->status, 200);
	close(fd);
	http_server_free(srv);
	free(sc);
	free(out);
}

#define CONC_THREADS 8
#define CONC_REQUESTS 25

struct conc_call {
	unsigned short port;
	int id;
	int ok;
	struct fetch f;
};

static void *conc_thread(void *arg)
{
	struct conc_call *cc = arg;
	int i;

	for (i = 0; i < CONC_REQUESTS; i++) {
		char path[64];
		char want[64];

		snprintf(path, sizeof(path), "/t/items/%d-%d", cc->id, i);
		snprintf(want, sizeof(want), "\"id\":\"%d-%d\"", cc->id, i);
		if (http_do(cc->port, "GET", path, NULL, NULL, 0, 0, &cc->f) == 200 && strstr(cc->f.body, want))
			cc->ok++;
	}
	return NULL;
}

/* Requests from several threads at once all get their own answers and are all counted. */
static void test_concurrent(void **state)
{
	struct http_server *srv = start_server();
	struct conc_call *cc = calloc(CONC_THREADS, sizeof(*cc));
	pthread_t t[CONC_THREADS];
	char *text;
	char want[128];
	int i;

	(void)state;
	assert_non_null(cc);
	for (i = 0; i < CONC_THREADS; i++) {
		cc[i].port = http_server_port(srv);
		cc[i].id = i;
		assert_int_equal(pthread_create(&t[i], NULL, conc_thread, &cc[i]), 0);
	}
	for (i = 0; i < CONC_THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(cc[i].ok, CONC_REQUESTS);
	}
	text = http_server_metrics_text(srv);
	assert_non_null(text);
	snprintf(want, sizeof(want), "uniapd_http_requests_total{method=\"GET\",route=\"/t/items/{id}\",status=\"200\"} %d\n",
	         CONC_THREADS * CONC_REQUESTS);
	if (!strstr(text, want))
		fail_msg("metrics lack %s:\n%s", want, text);
	free(text);
	http_server_free(srv);
	free(cc);
}

static void test_openapi(void **state)
{
	static const char doc[] = "{\"openapi\":\"3.1.0\"}";
	struct http_server *srv;
	struct fetch *f = malloc(sizeof(*f));

	(void)state;
	assert_non_null(f);
	srv = start_server_openapi(doc);
	assert_int_equal(http_do(http_server_port(srv), "GET", "/v1/openapi.json", NULL, NULL, 0, 0, f), 200);
	assert_string_equal(f->body, doc);
	assert_non_null(strstr(f->headers, "Content-Type: application/json"));
	http_server_free(srv);
	free(f);
}

static void test_bad_listen(void **state)
{
	struct http_config cfg;
	char msg[256];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = "192.0.2.1"; /* TEST-NET-1: on no interface of this host (no DNS look-up) */
	assert_null(http_server_start(&cfg, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "192.0.2.1"));
}

/* A host name is resolved (/etc/hosts) and the first address that binds serves. */
/* Whether "localhost" resolves (a machine without /etc/hosts may not say so). */
static int localhost_resolves(void)
{
	struct addrinfo hints, *res = NULL;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo("localhost", NULL, &hints, &res) != 0)
		return 0;
	freeaddrinfo(res);
	return 1;
}

static void test_listen_name(void **state)
{
	struct http_config cfg;
	struct http_server *srv;
	char msg[256];

	(void)state;
	if (!localhost_resolves()) {
		fprintf(stderr, "test_listen_name: \"localhost\" does not resolve here (no /etc/hosts "
		                "entry): skipped\n");
		skip();
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = "localhost";
	srv = http_server_start(&cfg, msg, sizeof(msg));
	if (!srv)
		fail_msg("http_server_start(localhost): %s", msg);
	assert_true(http_server_port(srv) != 0);
	http_server_free(srv);
}

static int group_setup(void **state)
{
	(void)state;
	return curl_global_init(CURL_GLOBAL_NOTHING) == CURLE_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispatch_table),
		cmocka_unit_test(test_dispatch_details),
		cmocka_unit_test(test_cors),
		cmocka_unit_test(test_unknown_query),
		cmocka_unit_test(test_etag),
		cmocka_unit_test(test_problem_table),
		cmocka_unit_test(test_hostile_requests),
		cmocka_unit_test(test_graceful_stop),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_loopback_addresses),
		cmocka_unit_test(test_slow_clients),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_gone_waits),
		cmocka_unit_test(test_bodies_in_flight),
		cmocka_unit_test(test_drain_closes),
		cmocka_unit_test(test_waits_and_streams),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_openapi),
		cmocka_unit_test(test_bad_listen),
		cmocka_unit_test(test_listen_name),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
