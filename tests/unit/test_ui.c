/*
 * test_ui.c - the web UI's routes without sockets: server/routes.h's /ui
 * entries (GET only, never ROUTE_AUTH) dispatched by route_dispatch on the
 * real handlers (server/ui.c) over a small asset table, through a table of
 * requests with the status, content type and Location each must get; every
 * answer of the UI's handlers (308, 200, 304, 404) carries the browser
 * headers of server/ui.h, and with the CORS headers of an allowed Origin on
 * top none is dropped for want of room (HTTP_MAX_HEADERS).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "api.h"
#include "http.h"
#include "route.h"
#include "routes.h"
#include "ui.h"

/* The /v1 handlers are stubs here (main.c's are not linked); the /ui ones are
 * put back by pattern in test_ui_table(). */
static void test_stub(struct http_request *req, struct http_response *res)
{
	(void)req;
	http_response_set_body(res, HTTP_OK, "application/json", "{}", 2);
}

#define TEST_HANDLER(f) test_stub
static const struct route test_routes_src[] = {
	UNIAPD_ROUTES(ROUTE_AUTH, TEST_HANDLER)
};
#define TEST_NROUTES (sizeof(test_routes_src) / sizeof(test_routes_src[0]))

static const unsigned char test_index[] = "<!doctype html><title>t</title>";
static const unsigned char test_js[] = "\"use strict\";\n";
static const struct ui_asset test_assets[] = {
	{"app.js", "text/javascript; charset=utf-8", test_js, sizeof(test_js) - 1},
	{"index.html", "text/html; charset=utf-8", test_index, sizeof(test_index) - 1},
	{NULL, NULL, NULL, 0},
};
static const char *const test_origins[] = {"https://ui.example"};

struct test_ui {
	struct route routes[TEST_NROUTES];
	struct route_table table;
	struct api_app app;
};

/* routes.h's table, the /ui handlers the real ones */
static void test_ui_table(struct test_ui *t, const struct ui_asset *assets, size_t count)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	memcpy(t->routes, test_routes_src, sizeof(t->routes));
	for (i = 0; i < TEST_NROUTES; i++) {
		if (strcmp(t->routes[i].pattern, "/ui") == 0)
			t->routes[i].handler = ui_get_root;
		else if (strcmp(t->routes[i].pattern, "/ui/") == 0)
			t->routes[i].handler = ui_get_index;
		else if (strcmp(t->routes[i].pattern, "/ui/{asset}") == 0)
			t->routes[i].handler = ui_get_asset;
	}
	t->table.routes = t->routes;
	t->table.count = TEST_NROUTES;
	t->table.cors_origins = test_origins;
	t->table.cors_origin_count = 1;
	t->app.ui_assets = assets;
	t->app.ui_asset_count = count;
}

/* Request headers: Origin (always the allowed one) and If-None-Match (ctx, may be NULL). */
static const char *test_header(void *ctx, const char *name)
{
	if (strcmp(name, "Origin") == 0)
		return test_origins[0];
	if (strcmp(name, "If-None-Match") == 0)
		return ctx;
	return NULL;
}

/* Dispatches METHOD PATH (If-None-Match inm, may be NULL) into res (initialised here). */
static void test_dispatch(struct test_ui *t, const char *method, const char *path, const char *inm,
                          struct http_response *res)
{
	struct http_request req;

	http_request_init(&req);
	req.method = method;
	req.path = path;
	req.header = test_header;
	req.header_ctx = (void *)inm;
	req.app = &t->app;
	http_response_init(res);
	route_dispatch(&t->table, &req, res);
	http_request_release(&req);
}

static void test_browser_headers(const struct http_response *res)
{
	assert_string_equal(http_response_header(res, "Content-Security-Policy"), UI_CSP);
	assert_string_equal(http_response_header(res, "X-Content-Type-Options"), "nosniff");
	assert_string_equal(http_response_header(res, "Referrer-Policy"), "no-referrer");
	assert_string_equal(http_response_header(res, "X-Frame-Options"), "DENY");
	assert_string_equal(http_response_header(res, "Cache-Control"), "no-cache");
	/* the last header added (CORS, after the handler) made it in */
	assert_string_equal(http_response_header(res, "Access-Control-Allow-Origin"), test_origins[0]);
}

static void test_routes_public(void **state)
{
	size_t i, n = 0;

	(void)state;
	for (i = 0; i < TEST_NROUTES; i++) {
		const struct route *r = &test_routes_src[i];

		if (strncmp(r->pattern, "/ui", 3) != 0)
			continue;
		n++;
		assert_string_equal(r->method, "GET");
		assert_int_equal(r->flags & ROUTE_AUTH, 0);
		assert_null(r->query);
	}
	assert_int_equal(n, 3);
	assert_int_equal(route_match("/ui/", "/ui/", NULL), 1);
	assert_int_equal(route_match("/ui/", "/ui", NULL), 0);
	assert_int_equal(route_match("/ui", "/ui/", NULL), 0);
	assert_int_equal(route_match("/ui/{asset}", "/ui/", NULL), 0);
	assert_int_equal(route_match("/ui/{asset}", "/ui/app.js", NULL), 1);
	assert_int_equal(route_match("/ui/{asset}", "/ui/a/app.js", NULL), 0);
}

static void test_dispatch_cases(void **state)
{
	static const struct {
		const char *method, *path;
		int status;
		const char *content_type; /* NULL: none */
		const char *location;     /* NULL: none */
		int ui;                   /* answered by a UI handler: the browser headers */
	} cases[] = {
		{"GET", "/ui", HTTP_PERMANENT_REDIRECT, NULL, "/ui/", 1},
		{"HEAD", "/ui", HTTP_PERMANENT_REDIRECT, NULL, "/ui/", 1},
		{"GET", "/ui/", HTTP_OK, "text/html; charset=utf-8", NULL, 1},
		{"HEAD", "/ui/", HTTP_OK, "text/html; charset=utf-8", NULL, 1},
		{"GET", "/ui/index.html", HTTP_OK, "text/html; charset=utf-8", NULL, 1},
		{"GET", "/ui/app.js", HTTP_OK, "text/javascript; charset=utf-8", NULL, 1},
		{"GET", "/ui/nope.js", HTTP_NOT_FOUND, "application/problem+json", NULL, 1},
		{"GET", "/ui/APP.JS", HTTP_NOT_FOUND, "application/problem+json", NULL, 1},
		{"GET", "/ui/../v1/jobs", HTTP_BAD_REQUEST, "application/problem+json", NULL, 0},
		{"GET", "/ui/./app.js", HTTP_BAD_REQUEST, "application/problem+json", NULL, 0},
		{"GET", "/ui//app.js", HTTP_BAD_REQUEST, "application/problem+json", NULL, 0},
		{"GET", "/ui/a/app.js", HTTP_NOT_FOUND, "application/problem+json", NULL, 0},
		{"POST", "/ui/", HTTP_METHOD_NOT_ALLOWED, "application/problem+json", NULL, 0},
		{"GET", "/v1/jobs", HTTP_UNAUTHORIZED, "application/problem+json", NULL, 0},
	};
	struct test_ui t;
	size_t i;

	(void)state;
	test_ui_table(&t, test_assets, 2);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_response res;

		test_dispatch(&t, cases[i].method, cases[i].path, NULL, &res);
		print_message("%s %s\n", cases[i].method, cases[i].path);
		assert_int_equal(res.status, cases[i].status);
		if (cases[i].content_type)
			assert_string_equal(res.content_type, cases[i].content_type);
		else
			assert_string_equal(res.content_type, "");
		if (cases[i].location)
			assert_string_equal(http_response_header(&res, "Location"), cases[i].location);
		else
			assert_null(http_response_header(&res, "Location"));
		if (cases[i].ui)
			test_browser_headers(&res);
		if (res.status == HTTP_OK)
			assert_non_null(http_response_header(&res, "ETag"));
		http_response_release(&res);
	}
}

/* The bytes of the table, and a 304 (with the browser headers) for their ETag. */
static void test_body_and_etag(void **state)
{
	struct test_ui t;
	struct http_response res;
	char etag[HTTP_ETAG_MAX];

	(void)state;
	test_ui_table(&t, test_assets, 2);
	test_dispatch(&t, "GET", "/ui/", NULL, &res);
	assert_int_equal(res.status, HTTP_OK);
	assert_int_equal(res.body_len, sizeof(test_index) - 1);
	assert_memory_equal(res.body, test_index, res.body_len);
	snprintf(etag, sizeof(etag), "%s", http_response_header(&res, "ETag"));
	http_response_release(&res);

	test_dispatch(&t, "GET", "/ui/", etag, &res);
	assert_int_equal(res.status, HTTP_NOT_MODIFIED);
	assert_int_equal(res.body_len, 0);
	test_browser_headers(&res);
	http_response_release(&res);

	test_dispatch(&t, "GET", "/ui/app.js", etag, &res);
	assert_int_equal(res.status, HTTP_OK);
	assert_memory_equal(res.body, test_js, res.body_len);
	http_response_release(&res);
}

/* No table (or no index.html in it): 404 problems, never a crash. */
static void test_no_assets(void **state)
{
	struct test_ui t;
	struct http_response res;

	(void)state;
	test_ui_table(&t, NULL, 0);
	test_dispatch(&t, "GET", "/ui/", NULL, &res);
	assert_int_equal(res.status, HTTP_NOT_FOUND);
	test_browser_headers(&res);
	http_response_release(&res);
	test_ui_table(&t, test_assets, 1); /* app.js only */
	test_dispatch(&t, "GET", "/ui/", NULL, &res);
	assert_int_equal(res.status, HTTP_NOT_FOUND);
	http_response_release(&res);
	assert_null(ui_asset_find(test_assets, 2, "app.j"));
	assert_ptr_equal(ui_asset_find(test_assets, 2, "index.html"), &test_assets[1]);
	assert_null(ui_asset_find(test_assets, 3, "")); /* the NULL entry is skipped */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes_public),
		cmocka_unit_test(test_dispatch_cases),
		cmocka_unit_test(test_body_and_etag),
		cmocka_unit_test(test_no_assets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
