/*
 * api_calib.c - POST /v1/clusters/{id}/calibrations (api.h): checks a
 * calibration request against the tenant's stored cluster {id} here, in the
 * request thread (a bad runs document is a 422 naming its path), and queues
 * it as a calibration job (api_job_create); a job thread fits it
 * (calibration.h, runner.c) and stores the calibrated cluster as a new
 * document.
 *
 * Never: fit here, or change the stored cluster.
 */
#include "api.h"

#include <stdio.h>

#include <cjson/cJSON.h>

#include "calibration.h"
#include "jdecode.h"
#include "store.h"

/* The stored request of a calibration (api_job_request_fn). */
static uniap_code api_calibration_build(struct http_request *req, char **text, struct uniap_err *err)
{
	const struct api_app *app = req->app;
	int64_t tenant = api_principal(req)->tenant_id, id = 0;
	const char *sid = http_request_param(req, "id");
	struct store_doc d = { 0 };
	struct cluster_profile c = { 0 };
	uniap_code rc;

	*text = NULL;
	if (api_parse_id(sid, &id) != 0)
		return err_set(err, UNIAP_E_NOTFOUND, "cluster: no cluster with id \"%.64s\"", sid ? sid : "");
	rc = store_doc_get(app->store, tenant, id, &d, err);
	if (rc == UNIAP_OK && d.kind != STORE_DOC_CLUSTER)
		rc = UNIAP_E_NOTFOUND;
	if (rc == UNIAP_E_NOTFOUND) /* another tenant's cluster is not found either */
		rc = err_set(err, UNIAP_E_NOTFOUND, "cluster: no cluster with id %lld", (long long)id);
	if (rc == UNIAP_OK)
		rc = jdec_cluster(d.body, (size_t)d.bytes, &c, err);
	if (rc == UNIAP_OK)
		rc = calibration_request(app->store, tenant, req->json, id, &c, app->max_time_limit_s, text, err);
	cluster_release(&c);
	store_doc_release(&d);
	return rc;
}

void api_calibration_create(struct http_request *req, struct http_response *res)
{
	api_job_create(req, res, STORE_JOB_CALIBRATION, api_calibration_build);
}
