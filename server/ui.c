/*
 * ui.c - the web UI's handlers: assets looked up by exact name in the table
 * the application holds (req->app, struct api_app), copied into the answer
 * with their content type and the browser headers of every UI answer (ui.h).
 *
 * Thread safety: no state; the table is constant.
 * Never: read the disk, build a path from the request, or answer without the
 * browser headers.
 */
#include "ui.h"

#include <stdio.h>
#include <string.h>

#include "api.h"
#include "problem.h"

const struct ui_asset *ui_asset_find(const struct ui_asset *assets, size_t count, const char *name)
{
	size_t i;

	if (!assets || !name)
		return NULL;
	for (i = 0; i < count; i++)
		if (assets[i].name && strcmp(assets[i].name, name) == 0)
			return &assets[i];
	return NULL;
}

/* The headers of every UI answer (ui.h says why). */
static void ui_browser_headers(struct http_response *res)
{
	http_response_add_header(res, "Content-Security-Policy", UI_CSP);
	http_response_add_header(res, "X-Content-Type-Options", "nosniff");
	http_response_add_header(res, "Referrer-Policy", "no-referrer");
	http_response_add_header(res, "X-Frame-Options", "DENY");
	http_response_add_header(res, "Cache-Control", "no-cache");
}

/* Answers with the asset named name, or a 404 problem. */
static void ui_answer(struct http_request *req, struct http_response *res, const char *name)
{
	const struct api_app *app = req->app;
	const struct ui_asset *a = app ? ui_asset_find(app->ui_assets, app->ui_asset_count, name) : NULL;

	if (!a) {
		char detail[160];

		snprintf(detail, sizeof(detail), "ui: no file named \"%.100s\" in the web UI", name);
		api_problem(req, res, UNIAP_E_NOTFOUND, detail);
	} else if (http_response_set_body(res, HTTP_OK, a->content_type, (const char *)a->bytes, a->len) != 0) {
		problem_fill(res, HTTP_SERVICE_UNAVAILABLE, "out-of-memory", "out of memory", req->path, NULL);
	}
	ui_browser_headers(res);
}

void ui_get_root(struct http_request *req, struct http_response *res)
{
	(void)req;
	res->status = HTTP_PERMANENT_REDIRECT;
	http_response_add_header(res, "Location", "/ui/");
	ui_browser_headers(res);
}

void ui_get_index(struct http_request *req, struct http_response *res)
{
	ui_answer(req, res, UI_INDEX);
}

void ui_get_asset(struct http_request *req, struct http_response *res)
{
	const char *name = http_request_param(req, "asset");

	ui_answer(req, res, name ? name : "");
}
