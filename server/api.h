/*
 * api.h - the synchronous /v1 resources of uniapd: the catalog, the
 * tenant's stored cluster and model documents, and POST /v1/evaluate.
 *
 * Every handler acts for the caller's tenant (the authenticated principal,
 * or app->anonymous under --no-auth) and sees only that tenant's documents:
 * another tenant's id answers 404, like an id that never existed.  Errors are
 * problem+json from the one code-to-status table (problem.h); a document
 * over the tenant's stored-bytes quota is UNIAP_E_LIMIT, so 413.
 *
 * Never: keep state between requests, or run long work (jobs do that).
 */
#ifndef UNIAP_API_H
#define UNIAP_API_H

#include "http.h"

struct store;

/* What the handlers find in req->app. */
struct api_app {
	struct store *store;              /* borrowed from main(); NULL until opened */
	struct http_principal anonymous;  /* the --no-auth tenant */
};

#define API_LIST_DEFAULT 20  /* ?limit= when absent */
#define API_LIST_MAX 100     /* ?limit= at most */

/* GET /v1/catalog: {"clusters":[{name, description, source}], "models":[...]}. */
void api_catalog_list(struct http_request *req, struct http_response *res);
/* GET /v1/catalog/{name}: the full cluster or model profile. */
void api_catalog_get(struct http_request *req, struct http_response *res);

/* POST /v1/clusters, /v1/models: validate and store the body; 201 with its metadata. */
void api_cluster_create(struct http_request *req, struct http_response *res);
void api_model_create(struct http_request *req, struct http_response *res);
/* GET /v1/clusters?limit=&cursor=: {"items":[metadata...], "next_cursor": string or null}. */
void api_cluster_list(struct http_request *req, struct http_response *res);
void api_model_list(struct http_request *req, struct http_response *res);
/* GET /v1/clusters/{id}: the stored document. */
void api_cluster_get(struct http_request *req, struct http_response *res);
void api_model_get(struct http_request *req, struct http_response *res);
/* DELETE /v1/clusters/{id}: 204. */
void api_cluster_delete(struct http_request *req, struct http_response *res);
void api_model_delete(struct http_request *req, struct http_response *res);

/* POST /v1/evaluate {cluster, model, batch, plan}: the report of `uniap evaluate`. */
void api_evaluate(struct http_request *req, struct http_response *res);

#endif
