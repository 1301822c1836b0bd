/*
 * ui.h - the web UI's routes (server/routes.h): GET /ui is a 308 to /ui/,
 * GET /ui/ is index.html and GET /ui/{asset} one file of the UI, all from the
 * asset table the application holds (struct api_app's ui_assets; uniapd's is
 * compiled in from ui/, ui_assets.h).  HEAD, ETag and If-None-Match (304)
 * come from the dispatcher (ROUTE_ETAG), as for every route.
 *
 * The routes are public: the page holds no secret, and the API calls it makes
 * carry the tenant's key in an Authorization header.  Every answer of these
 * handlers, a 404 included, carries the browser headers below: UI_CSP allows
 * scripts and styles from this origin only, so the UI has no inline script,
 * style or event handler attribute; Cache-Control: no-cache makes a browser
 * revalidate each asset with its ETag (a 304 when unchanged), so a new build
 * is seen at once without versioned file names.
 *
 * Thread safety: the handlers read constant data only; any connection thread.
 * Never: read the disk; ask for a key (ROUTE_AUTH); serve a name that is not
 * in the table (no path is ever built from the request).
 */
#ifndef UNIAP_UI_H
#define UNIAP_UI_H

#include <stddef.h>

#include "http.h"
#include "ui_assets.h"

#define UI_CSP                                                                                      \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "                  \
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; " \
	"frame-ancestors 'none'"
#define UI_INDEX "index.html" /* the asset GET /ui/ answers with */

/* The asset named name (borrowed) in assets (count entries, borrowed), or NULL. */
const struct ui_asset *ui_asset_find(const struct ui_asset *assets, size_t count, const char *name);

/* GET /ui: 308 with Location: /ui/ (the page's relative links resolve under /ui/). */
void ui_get_root(struct http_request *req, struct http_response *res);
/* GET /ui/: index.html; a 404 problem when the table has none. */
void ui_get_index(struct http_request *req, struct http_response *res);
/* GET /ui/{asset}: the asset with its content type; a 404 problem for a name not in the table. */
void ui_get_asset(struct http_request *req, struct http_response *res);

#endif
