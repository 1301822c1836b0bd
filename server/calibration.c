/*
 * calibration.c - calibration jobs (calibration.h): the request checked and
 * written at submission, and the job's work on a job thread.
 *
 * The request is decoded twice: at submission (every rule checked, so a bad
 * document is a 422 naming its path) and on the job thread (from the stored
 * text, which holds every document it needs).  Both go through the same
 * functions, so they cannot disagree.
 */
#include "calibration.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "docref.h"
#include "jdecode.h"
#include "jencode.h"
#include "runs.h"

/* ---------------------------------------------------------------- options */

static const char *const calibration_keys[] = {
	"fit", "leave_one_out", "prior_weight", "name", "time_limit_s", "allow_bounds",
};

/* Unknown and repeated keys of obj (extra allowed besides calibration_keys). */
static uniap_code calibration_keys_check(const cJSON *obj, const char *root, const char *extra,
                                         struct uniap_err *err)
{
	const cJSON *v, *w;
	size_t k;

	for (v = obj->child; v; v = v->next) {
		for (w = obj->child; w != v; w = w->next)
			if (v->string && w->string && strcmp(v->string, w->string) == 0)
				return err_set(err, UNIAP_E_INVALID, "%s.%.64s: given twice", root, v->string);
		for (k = 0; k < sizeof(calibration_keys) / sizeof(calibration_keys[0]); k++)
			if (v->string && strcmp(v->string, calibration_keys[k]) == 0)
				break;
		if (k == sizeof(calibration_keys) / sizeof(calibration_keys[0]) &&
		    !(v->string && strcmp(v->string, extra) == 0))
			return err_set(err, UNIAP_E_INVALID, "%s.%.64s: unknown field", root,
			               v->string ? v->string : "?");
	}
	return UNIAP_OK;
}

static uniap_code calibration_fit_json(const cJSON *v, const char *root, struct calibration_options *o,
                                       struct uniap_err *err)
{
	const cJSON *e;
	size_t n = 0;

	if (!v)
		return UNIAP_OK;
	if (!cJSON_IsArray(v))
		return err_set(err, UNIAP_E_INVALID, "%s.fit: must be an array of parameter names, got %s", root,
		               jdec_type_name(v));
	cJSON_ArrayForEach(e, v) {
		if (!cJSON_IsString(e) || !e->valuestring[0])
			return err_set(err, UNIAP_E_INVALID, "%s.fit[%zu]: must be a parameter name, got %s", root, n,
			               cJSON_IsString(e) ? "\"\"" : jdec_type_name(e));
		if (n == CALIB_MAX_PARAMS)
			return err_set(err, UNIAP_E_INVALID, "%s.fit: at most %d names", root, CALIB_MAX_PARAMS);
		o->fit[n++] = e->valuestring;
	}
	if (n == 0)
		return err_set(err, UNIAP_E_INVALID, "%s.fit: names no parameter (leave it out for the default)",
		               root);
	o->n_fit = n;
	o->has_fit = 1;
	return UNIAP_OK;
}

uniap_code calibration_options_json(const cJSON *obj, const char *root, const char *extra,
                                    double max_time_limit_s, struct calibration_options *o,
                                    struct uniap_err *err)
{
	const cJSON *v;
	uniap_code rc;

	memset(o, 0, sizeof(*o));
	o->prior_weight = CALIB_DEFAULT_PRIOR_WEIGHT;
	if (max_time_limit_s <= 0)
		max_time_limit_s = 86400;
	o->time_limit_s = CALIBRATION_DEFAULT_TIME_LIMIT_S < max_time_limit_s ? CALIBRATION_DEFAULT_TIME_LIMIT_S
	                                                                       : max_time_limit_s;
	if (!cJSON_IsObject(obj))
		return err_set(err, UNIAP_E_INVALID, "%s: must be an object, got %s", root, jdec_type_name(obj));
	if ((rc = calibration_keys_check(obj, root, extra, err)) != UNIAP_OK ||
	    (rc = calibration_fit_json(cJSON_GetObjectItemCaseSensitive(obj, "fit"), root, o, err)) != UNIAP_OK)
		return rc;
	if ((v = cJSON_GetObjectItemCaseSensitive(obj, "leave_one_out"))) {
		if (!cJSON_IsBool(v))
			return err_set(err, UNIAP_E_INVALID, "%s.leave_one_out: must be a boolean, got %s", root,
			               jdec_type_name(v));
		o->leave_one_out = cJSON_IsTrue(v);
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(obj, "allow_bounds"))) {
		if (!cJSON_IsBool(v))
			return err_set(err, UNIAP_E_INVALID, "%s.allow_bounds: must be a boolean, got %s", root,
			               jdec_type_name(v));
		o->allow_bounds = cJSON_IsTrue(v);
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(obj, "prior_weight"))) {
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
			return err_set(err, UNIAP_E_INVALID, "%s.prior_weight: must be a finite number >= 0", root);
		o->prior_weight = v->valuedouble;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(obj, "name"))) {
		if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) > STORE_NAME_MAX)
			return err_set(err, UNIAP_E_INVALID, "%s.name: must be a string of 1..%d bytes", root,
			               STORE_NAME_MAX);
		o->name = v->valuestring;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(obj, "time_limit_s"))) {
		if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0.001 && v->valuedouble <= max_time_limit_s))
			return err_set(err, UNIAP_E_INVALID, "%s.time_limit_s: must be a number in [0.001, %g]", root,
			               max_time_limit_s);
		o->time_limit_s = v->valuedouble;
	}
	return UNIAP_OK;
}

/* ---------------------------------------------------------------- submission */

/* A copy of the body's runs document (owned) with stored models written inline. */
static uniap_code calibration_runs_copy(struct store *store, int64_t tenant, const cJSON *body, cJSON **out,
                                        struct uniap_err *err)
{
	const cJSON *runs = cJSON_GetObjectItemCaseSensitive(body, "runs");
	cJSON *copy, *list, *r;
	char path[48];
	size_t i = 0;
	uniap_code rc;

	*out = NULL;
	if (!runs)
		return err_set(err, UNIAP_E_INVALID, "runs: required (a measured-runs document)");
	if (!cJSON_IsObject(runs))
		return err_set(err, UNIAP_E_INVALID, "runs: must be a measured-runs document (an object), got %s",
		               jdec_type_name(runs));
	if (!(copy = cJSON_Duplicate(runs, 1)))
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	rc = docref_inline(store, tenant, copy, "model", STORE_DOC_MODEL, "runs", err);
	list = cJSON_GetObjectItemCaseSensitive(copy, "runs");
	if (cJSON_IsArray(list))
		cJSON_ArrayForEach(r, list) {
			if (rc != UNIAP_OK)
				break;
			snprintf(path, sizeof(path), "runs.runs[%zu]", i++);
			if (cJSON_IsObject(r))
				rc = docref_inline(store, tenant, r, "model", STORE_DOC_MODEL, path, err);
		}
	if (rc != UNIAP_OK) {
		cJSON_Delete(copy);
		return rc;
	}
	*out = copy;
	return UNIAP_OK;
}

/* An error of runs_resolve / calib_params_*: named as a field of the body. */
static uniap_code calibration_body_path(uniap_code rc, struct uniap_err *err)
{
	char msg[UNIAP_ERR_MSG_MAX + 8];

	if (!err || rc == UNIAP_OK)
		return rc;
	if (strncmp(err->msg, "--fit", 5) == 0)
		snprintf(msg, sizeof(msg), "fit%s", err->msg + 5);
	else if (strncmp(err->msg, "runs", 4) == 0)
		snprintf(msg, sizeof(msg), "runs.%s", err->msg);
	else
		return rc;
	/* a wrong name or a layout the cluster cannot hold is the request's fault */
	return err_set(err, rc == UNIAP_E_ARG || rc == UNIAP_E_LIMIT ? UNIAP_E_INVALID : rc, "%.*s",
	               UNIAP_ERR_MSG_MAX - 1, msg);
}

/* Decodes the runs document and checks it and the fit names against c: what submission and the job share. */
static uniap_code calibration_check(const cJSON *runs, const char *path, const struct cluster_profile *c,
                                    const struct calibration_options *o, struct runs_doc *doc,
                                    struct calib_run **resolved, struct calib_param **params, size_t *n_params,
                                    struct uniap_err *err)
{
	uniap_code rc = runs_decode_json(runs, path, doc, err);

	if (rc == UNIAP_OK)
		rc = calibration_body_path(runs_resolve(doc, c, NULL, resolved, err), err);
	if (rc == UNIAP_OK && o->has_fit)
		rc = calibration_body_path(calib_params_select(c, o->fit, o->n_fit, params, n_params, err), err);
	return rc;
}

uniap_code calibration_request(struct store *store, int64_t tenant, const cJSON *body, int64_t cluster_id,
                               const struct cluster_profile *c, double max_time_limit_s, char **text,
                               struct uniap_err *err)
{
	struct calibration_options o;
	struct runs_doc doc = { .default_model = -1 };
	struct calib_run *resolved = NULL;
	struct calib_param *params = NULL;
	size_t n_params = 0, k;
	cJSON *runs = NULL, *req = NULL, *sum = NULL, *cd = NULL;
	uniap_code rc;

	*text = NULL;
	if ((rc = calibration_options_json(body, "body", "runs", max_time_limit_s, &o, err)) != UNIAP_OK ||
	    (rc = calibration_runs_copy(store, tenant, body, &runs, err)) != UNIAP_OK ||
	    (rc = calibration_check(runs, "runs", c, &o, &doc, &resolved, &params, &n_params, err)) != UNIAP_OK)
		goto out;
	req = cJSON_CreateObject();
	rc = UNIAP_E_NOMEM;
	if (!req || !(sum = cJSON_AddObjectToObject(req, "summary")) ||
	    !cJSON_AddNumberToObject(sum, "cluster", (double)cluster_id))
		goto nomem;
	for (k = 0; k < sizeof(calibration_keys) / sizeof(calibration_keys[0]); k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, calibration_keys[k]);

		if (v && !cJSON_AddItemToObject(sum, calibration_keys[k], cJSON_Duplicate(v, 1)))
			goto nomem;
	}
	/* the defaults as they were at submission, so the job does what was asked */
	if ((!cJSON_GetObjectItemCaseSensitive(sum, "leave_one_out") &&
	     !cJSON_AddBoolToObject(sum, "leave_one_out", o.leave_one_out)) ||
	    (!cJSON_GetObjectItemCaseSensitive(sum, "prior_weight") &&
	     !jenc_add_num(sum, "prior_weight", o.prior_weight)) ||
	    (!cJSON_GetObjectItemCaseSensitive(sum, "time_limit_s") &&
	     !jenc_add_num(sum, "time_limit_s", o.time_limit_s)))
		goto nomem;
	if (!(cd = jenc_cluster(c)) || !cJSON_AddItemToObject(req, "cluster", cd)) {
		cJSON_Delete(cd);
		goto nomem;
	}
	if (!cJSON_AddItemToObject(req, "runs", runs))
		goto nomem;
	runs = NULL;
	if ((*text = cJSON_PrintUnformatted(req)))
		rc = UNIAP_OK;
nomem:
	if (rc != UNIAP_OK)
		rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
out:
	cJSON_Delete(req);
	cJSON_Delete(runs);
	free(resolved);
	free(params);
	runs_doc_release(&doc);
	return rc;
}

/* ---------------------------------------------------------------- the job */

void calibration_output_release(struct calibration_output *out)
{
	if (!out)
		return;
	cJSON_Delete(out->report);
	cJSON_free(out->cluster);
	memset(out, 0, sizeof(*out));
}

uniap_code calibration_run(const char *text, size_t len, int (*cancel)(void *ctx),
                           void (*progress)(void *ctx, size_t done, size_t total), void *ctx,
                           void (*set_limit)(void *ctx, double time_limit_s), struct calibration_output *out,
                           struct uniap_err *err)
{
	struct calibration_options o;
	struct cluster_profile c = { 0 };
	struct runs_doc doc = { .default_model = -1 };
	struct runs_calibration cal = { 0 };
	struct runs_calibrate_in in;
	struct runs_report_in rin;
	char date[16] = "unknown";
	time_t now = time(NULL);
	struct tm tm;
	cJSON *root = NULL, *cdoc = NULL;
	uniap_code rc;

	memset(out, 0, sizeof(*out));
	if ((rc = jdec_parse(text, len, "request", &root, err)) != UNIAP_OK ||
	    (rc = calibration_options_json(cJSON_GetObjectItemCaseSensitive(root, "summary"), "request.summary",
	                                   "cluster", 0, &o, err)) != UNIAP_OK)
		goto out;
	if (set_limit)
		set_limit(ctx, o.time_limit_s);
	/* checked at submission: what fails here fails the job with the message */
	if ((rc = jdec_cluster_json(cJSON_GetObjectItemCaseSensitive(root, "cluster"), "request.cluster", &c, err)) !=
	            UNIAP_OK ||
	    (rc = runs_decode_json(cJSON_GetObjectItemCaseSensitive(root, "runs"), "request.runs", &doc, err)) !=
	            UNIAP_OK)
		goto out;
	in = (struct runs_calibrate_in){
		.cluster = &c, .fit = o.has_fit ? o.fit : NULL, .n_fit = o.n_fit, .leave_one_out = o.leave_one_out,
		.opt = { .prior_weight = o.prior_weight, .cancel = cancel, .cancel_ctx = ctx, .progress = progress,
		         .progress_ctx = ctx, .allow_bounds = o.allow_bounds },
	};
	if ((rc = runs_calibrate(&doc, &in, &cal, err)) != UNIAP_OK)
		goto out;
	rin = runs_calibration_report_in(&doc, &cal, c.name, o.prior_weight);
	if (now != (time_t)-1 && gmtime_r(&now, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d", &tm);
	out->report = runs_report(&rin);
	cdoc = out->report ? runs_calibrated_cluster(&doc, &cal, o.prior_weight, o.name, date) : NULL;
	out->cluster = cdoc ? cJSON_PrintUnformatted(cdoc) : NULL;
	if (!out->cluster) {
		rc = err_set(err, UNIAP_E_NOMEM, "result: out of memory");
		goto out;
	}
	snprintf(out->name, sizeof(out->name), "%s", o.name ? o.name : c.name ? c.name : "");
out:
	cJSON_Delete(cdoc);
	cJSON_Delete(root);
	runs_calibration_release(&cal);
	runs_doc_release(&doc);
	cluster_release(&c);
	return rc;
}

char *calibration_result(const cJSON *report, int64_t cluster_id, const char *name, size_t *len)
{
	cJSON *o = cJSON_CreateObject(), *cl = NULL, *links = NULL, *rep = cJSON_Duplicate(report, 1);
	char self[64], *text = NULL;

	snprintf(self, sizeof(self), "/v1/clusters/%lld", (long long)cluster_id);
	if (o && rep && (cl = cJSON_AddObjectToObject(o, "cluster")) &&
	    cJSON_AddNumberToObject(cl, "id", (double)cluster_id) && cJSON_AddStringToObject(cl, "name", name) &&
	    (links = cJSON_AddObjectToObject(cl, "links")) && cJSON_AddStringToObject(links, "self", self) &&
	    cJSON_AddItemToObject(o, "report", rep)) {
		rep = NULL;
		text = cJSON_PrintUnformatted(o);
	}
	cJSON_Delete(rep);
	cJSON_Delete(o);
	if (text && len)
		*len = strlen(text);
	return text;
}
