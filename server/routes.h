/*
 * routes.h - uniapd's application routes as data: the /v1 API and the web
 * UI (/ui, server/ui.h), one X-macro, so that the service (server/main.c)
 * and the routing fuzz target (fuzz/fuzz_route.c) route on the same
 * methods, patterns, flags and query words.
 *
 * UNIAPD_ROUTES(A, H) expands to the table's initializers: A is ROUTE_AUTH
 * with keys, 0 under --no-auth (the routes then act for the anonymous
 * tenant); H(handler) names each handler (main.c: the function itself; the
 * fuzz target: a stub).  The last field lists the query parameters a route
 * takes: any other is a 400.  The UI's routes never take A: the page is
 * public (it holds no secret; the API calls it makes carry the key).
 * /healthz, /readyz, /metrics and /openapi.json are the HTTP layer's own
 * (server/http.c).
 *
 * Never: add a /v1 or /ui route anywhere else; ROUTE_AUTH on a /ui route.
 */
#ifndef UNIAP_ROUTES_H
#define UNIAP_ROUTES_H

#define UNIAPD_ROUTES(A, H) \
	{"GET", "/v1/whoami", H(uniapd_whoami), (A), NULL},                                            \
	{"GET", "/v1/catalog", H(api_catalog_list), (A) | ROUTE_ETAG, NULL},                           \
	{"GET", "/v1/catalog/{name}", H(api_catalog_get), (A) | ROUTE_ETAG, NULL},                     \
	{"POST", "/v1/clusters", H(api_cluster_create), (A) | ROUTE_JSON, "format"},                   \
	{"GET", "/v1/clusters", H(api_cluster_list), (A), "limit cursor"},                             \
	{"GET", "/v1/clusters/{id}", H(api_cluster_get), (A) | ROUTE_ETAG, NULL},                      \
	{"DELETE", "/v1/clusters/{id}", H(api_cluster_delete), (A), NULL},                             \
	{"POST", "/v1/clusters/{id}/calibrations", H(api_calibration_create), (A) | ROUTE_JSON, NULL}, \
	{"POST", "/v1/models", H(api_model_create), (A) | ROUTE_JSON, "format"},                       \
	{"GET", "/v1/models", H(api_model_list), (A), "limit cursor"},                                 \
	{"GET", "/v1/models/{id}", H(api_model_get), (A) | ROUTE_ETAG, NULL},                          \
	{"DELETE", "/v1/models/{id}", H(api_model_delete), (A), NULL},                                 \
	{"POST", "/v1/evaluate", H(api_evaluate), (A) | ROUTE_JSON, NULL},                             \
	{"POST", "/v1/plans", H(api_plan_create), (A) | ROUTE_JSON, NULL},                             \
	{"POST", "/v1/allocations", H(api_allocation_create), (A) | ROUTE_JSON, NULL},                 \
	{"GET", "/v1/allocations/{id}", H(api_allocation_get), (A) | ROUTE_ETAG, NULL},                \
	{"GET", "/v1/jobs", H(api_job_list), (A), "state limit cursor"},                               \
	{"GET", "/v1/jobs/{id}", H(api_job_get), (A) | ROUTE_ETAG, "wait"},                            \
	{"GET", "/v1/jobs/{id}/events", H(api_job_events), (A), NULL},                                 \
	{"DELETE", "/v1/jobs/{id}", H(api_job_delete), (A), NULL},                                     \
	{"POST", "/v1/jobs/{id}/cancel", H(api_job_cancel), (A), NULL},                                \
	{"POST", "/v1/jobs/{id}/stop", H(api_job_stop), (A), NULL},                                    \
	{"GET", "/v1/jobs/{id}/plan", H(api_job_plan), (A) | ROUTE_ETAG, "format target wait"},        \
	{"GET", "/ui", H(ui_get_root), 0, NULL},                                                       \
	{"GET", "/ui/", H(ui_get_index), ROUTE_ETAG, NULL},                                            \
	{"GET", "/ui/{asset}", H(ui_get_asset), ROUTE_ETAG, NULL},

#endif
