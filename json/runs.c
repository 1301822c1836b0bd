/*
 * runs.c - the measured-runs document (see runs.h, schema/runs.schema.json,
 * docs/calibration.md) and the calibration report.
 *
 * Field readers are jdecode.c's (jdec_int.h), so messages and checks match
 * the other documents.  A model is a catalog name or an inline model
 * document; models are decoded once into runs_doc.models and runs point at
 * them by index.
 *
 * Never: print, exit, read files, keep state.
 */
#include "runs.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jdec_int.h"
#include "jdecode.h"
#include "jencode.h"

#define RUNS_MAX_COUNT 1000000000000LL
#define RUNS_MAX_MEGATRON_BYTES 8192
#define RUNS_MAX_SOURCE_BYTES 1024

static const char *const runs_schedules[] = { "gpipe", "1f1b" };

void runs_doc_release(struct runs_doc *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; d->runs && i < d->n_runs; i++) {
		struct runs_run *r = &d->runs[i];

		free(r->name);
		free(r->source);
		free(r->megatron);
		free(r->peak_memory_bytes);
		plan_doc_release(&r->plan);
	}
	free(d->runs);
	for (i = 0; d->models && i < d->n_models; i++)
		model_release(&d->models[i]);
	free(d->models);
	memset(d, 0, sizeof(*d));
	d->default_model = -1;
}

/* v (at path): a catalog model name or an inline model document, appended to d->models; *index its place. */
static uniap_code runs_model(const cJSON *v, const char *path, struct runs_doc *d, long *index,
                             struct uniap_err *err)
{
	uniap_code rc = jdec_model_ref(v, path, &d->models[d->n_models], err);

	if (rc == UNIAP_OK)
		*index = (long)d->n_models++;
	return rc;
}

/* obj.key as a number > 0 (0 when absent). */
static uniap_code runs_positive(const cJSON *obj, const char *key, const char *path, double *out,
                                struct uniap_err *err)
{
	char p[JDEC_PATH_MAX];
	const cJSON *v;
	uniap_code rc = jdec_get(obj, key, path, 0, p, &v, err);

	*out = 0.0;
	if (rc != UNIAP_OK || !v)
		return rc;
	rc = jdec_num_value(v, p, -DBL_MAX, DBL_MAX, out, err);
	if (rc == UNIAP_OK && !(*out > 0))
		return err_set(err, UNIAP_E_INVALID, "%s: must be > 0, got %.15g", p, *out);
	return rc;
}

static uniap_code runs_measured(const cJSON *run, const char *rp, struct runs_run *r, struct uniap_err *err)
{
	static const char *const keys[] = { "iteration_s", "samples_per_s", "peak_memory_bytes", "oom", NULL };
	char mp[JDEC_PATH_MAX], ap[JDEC_PATH_MAX], p[JDEC_PATH_MAX];
	const cJSON *m, *arr, *it;
	size_t n = 0, i = 0;
	uniap_code rc = jdec_obj(run, "measured", rp, 1, keys, &m, err);

	jdec_pkey(mp, rp, "measured");
	if (rc == UNIAP_OK)
		rc = runs_positive(m, "iteration_s", mp, &r->iteration_s, err);
	if (rc == UNIAP_OK)
		rc = runs_positive(m, "samples_per_s", mp, &r->samples_per_s, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(m, "oom", mp, 0, &r->oom, err);
	if (rc != UNIAP_OK)
		return rc;
	if (r->iteration_s > 0 && r->samples_per_s > 0)
		return err_set(err, UNIAP_E_INVALID, "%s: give exactly one of iteration_s, samples_per_s", mp);
	if (r->oom && (r->iteration_s > 0 || r->samples_per_s > 0))
		return err_set(err, UNIAP_E_INVALID, "%s: a run that ran out of memory has no iteration_s or samples_per_s",
		               mp);
	if (!r->oom && !(r->iteration_s > 0 || r->samples_per_s > 0))
		return err_set(err, UNIAP_E_INVALID, "%s: give iteration_s or samples_per_s unless oom is true", mp);
	rc = jdec_arr(m, "peak_memory_bytes", mp, 0, 1, MODEL_MAX_DEVICES, &arr, &n, err);
	if (rc != UNIAP_OK || !arr)
		return rc;
	r->peak_memory_bytes = calloc(n, sizeof(*r->peak_memory_bytes));
	if (!r->peak_memory_bytes)
		return err_set(err, UNIAP_E_NOMEM, "%s: out of memory", mp);
	r->n_peak_memory_bytes = n;
	jdec_pkey(ap, mp, "peak_memory_bytes");
	cJSON_ArrayForEach(it, arr) {
		jdec_pidx(p, ap, i);
		rc = jdec_num_value(it, p, 1.0, 1125899906842624.0, &r->peak_memory_bytes[i++], err);
		if (rc != UNIAP_OK)
			return rc;
	}
	return UNIAP_OK;
}

static uniap_code runs_uniform(const cJSON *run, const char *rp, struct runs_run *r, struct uniap_err *err)
{
	static const char *const keys[] = { "pp", "tp", "dp", "fsdp", "microbatches", "recompute", "tp_inner", NULL };
	char up[JDEC_PATH_MAX];
	const cJSON *u;
	long long pp = 1, tp = 1, dp = 0, fsdp = 1, mb = 1;
	uniap_code rc = jdec_obj(run, "uniform", rp, 1, keys, &u, err);

	jdec_pkey(up, rp, "uniform");
	if (rc == UNIAP_OK)
		rc = jdec_int(u, "pp", up, 1, 1, 1, MODEL_MAX_DEVICES, &pp, err);
	if (rc == UNIAP_OK)
		rc = jdec_int(u, "tp", up, 1, 1, 1, MODEL_MAX_DEVICES, &tp, err);
	if (rc == UNIAP_OK)
		rc = jdec_int(u, "dp", up, 0, 0, 1, MODEL_MAX_DEVICES, &dp, err);
	if (rc == UNIAP_OK)
		rc = jdec_int(u, "fsdp", up, 0, 1, 1, MODEL_MAX_DEVICES, &fsdp, err);
	if (rc == UNIAP_OK)
		rc = jdec_int(u, "microbatches", up, 1, 1, 1, RUNS_MAX_COUNT, &mb, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(u, "recompute", up, 0, &r->uniform.recompute, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(u, "tp_inner", up, 1, &r->uniform.tp_inner, err);
	r->uniform.pp = (int)pp;
	r->uniform.tp = (int)tp;
	r->uniform.dp = (int)dp;
	r->uniform.fsdp = (int)fsdp;
	r->uniform.microbatches = (long)mb;
	return rc;
}

/* The layout of run (exactly one of plan, uniform, megatron) and its batch. */
static uniap_code runs_layout(const cJSON *run, const char *rp, struct runs_run *r, struct uniap_err *err)
{
	char p[JDEC_PATH_MAX];
	const cJSON *plan = cJSON_GetObjectItemCaseSensitive(run, "plan");
	const cJSON *uni = cJSON_GetObjectItemCaseSensitive(run, "uniform");
	const cJSON *meg = cJSON_GetObjectItemCaseSensitive(run, "megatron");
	const char *s = NULL;
	long long batch = 0;
	long gbs = 0;
	uniap_code rc;

	if (!!plan + !!uni + !!meg != 1)
		return err_set(err, UNIAP_E_INVALID, "%s: give exactly one of plan, uniform, megatron", rp);
	rc = jdec_int(run, "batch", rp, 0, 0, 1, COST_MAX_BATCH, &batch, err);
	if (rc != UNIAP_OK)
		return rc;
	r->batch = (long)batch;
	if (plan) {
		long implied;

		r->layout = RUNS_PLAN;
		rc = jdec_plan_json(plan, jdec_pkey(p, rp, "plan"), &r->plan, err);
		if (rc != UNIAP_OK)
			return rc;
		implied = r->plan.microbatches * r->plan.microbatch_size;
		if (r->batch && r->batch != implied)
			return err_set(err, UNIAP_E_INVALID,
			               "%s.batch: must equal the plan's microbatches x microbatch_size = %ld, got %ld", rp,
			               implied, r->batch);
		if (cJSON_GetObjectItemCaseSensitive(run, "schedule") && r->schedule != r->plan.schedule)
			return err_set(err, UNIAP_E_INVALID, "%s.schedule: must match plan.schedule \"%s\"", rp,
			               cost_schedule_name(r->plan.schedule));
		r->schedule = r->plan.schedule;
		r->batch = implied;
		return UNIAP_OK;
	}
	if (uni) {
		r->layout = RUNS_UNIFORM;
		if (!r->batch)
			return err_set(err, UNIAP_E_INVALID, "%s.batch: is required", rp);
		return runs_uniform(run, rp, r, err);
	}
	r->layout = RUNS_MEGATRON;
	jdec_pkey(p, rp, "megatron");
	rc = jdec_str_value(meg, p, 0, RUNS_MAX_MEGATRON_BYTES, &s, err);
	if (rc != UNIAP_OK)
		return rc;
	r->megatron = strdup(s);
	if (!r->megatron)
		return err_set(err, UNIAP_E_NOMEM, "%s: out of memory", p);
	rc = calib_megatron_parse(s, &r->uniform, &gbs, r->ignored_args, sizeof(r->ignored_args), err);
	if (rc != UNIAP_OK) {
		err_prefix(err, "%s", p);
		return rc;
	}
	if (r->batch && gbs && r->batch != gbs)
		return err_set(err, UNIAP_E_INVALID, "%s.batch: must equal --global-batch-size %ld, got %ld", rp, gbs,
		               r->batch);
	if (!r->batch)
		r->batch = gbs;
	if (!r->batch)
		return err_set(err, UNIAP_E_INVALID, "%s.batch: is required (or --global-batch-size in megatron)", rp);
	return UNIAP_OK;
}

static uniap_code runs_run(const cJSON *run, const char *rp, struct runs_doc *d, struct runs_run *r,
                           struct uniap_err *err)
{
	static const char *const keys[] = { "name", "model", "batch", "schedule", "plan", "uniform",
	                                    "megatron", "measured", "source", "runtime", NULL };
	char p[JDEC_PATH_MAX];
	const cJSON *v;
	int sched = 0;
	uniap_code rc = jdec_keys(run, rp, keys, NULL, err);

	r->model = -1;
	if (rc == UNIAP_OK)
		rc = jdec_str(run, "name", rp, 1, 1, MODEL_MAX_NAME, &r->name, err);
	if (rc == UNIAP_OK)
		rc = jdec_str(run, "source", rp, 0, 0, RUNS_MAX_SOURCE_BYTES, &r->source, err);
	if (rc == UNIAP_OK)
		rc = jdec_get(run, "schedule", rp, 0, p, &v, err);
	if (rc == UNIAP_OK && v)
		rc = jdec_enum_value(v, p, runs_schedules, 2, &sched, err);
	r->schedule = sched == 1 ? COST_1F1B : COST_GPIPE;
	snprintf(r->runtime, sizeof(r->runtime), "%s", d->runtime);
	if (rc == UNIAP_OK)
		rc = jdec_runtime(run, "runtime", rp, r->runtime, err);
	if (rc == UNIAP_OK)
		rc = jdec_get(run, "model", rp, 0, p, &v, err);
	if (rc == UNIAP_OK && v)
		rc = runs_model(v, p, d, &r->model, err);
	if (rc == UNIAP_OK)
		rc = runs_layout(run, rp, r, err);
	/* a plan's own runtime must be the run's; a plan without one runs on the run's */
	if (rc == UNIAP_OK && r->layout == RUNS_PLAN && r->plan.runtime[0] && r->runtime[0] &&
	    strcmp(r->plan.runtime, r->runtime) != 0)
		rc = err_set(err, UNIAP_E_INVALID, "%s.plan.runtime: must match the run's runtime \"%s\", got \"%s\"",
		             rp, r->runtime, r->plan.runtime);
	if (rc == UNIAP_OK && r->layout == RUNS_PLAN && !r->runtime[0])
		snprintf(r->runtime, sizeof(r->runtime), "%s", r->plan.runtime);
	if (rc == UNIAP_OK)
		rc = runs_measured(run, rp, r, err);
	return rc;
}

uniap_code runs_decode_json(const cJSON *root, const char *path, struct runs_doc *out, struct uniap_err *err)
{
	static const char *const keys[] = { "model", "runs", "description", "runtime", NULL };
	/* the document itself has no name of its own; its "runs" array is "runs" (or "PATH.runs") */
	const char *doc = path ? path : "runs document";
	char ap[JDEC_PATH_MAX], p[JDEC_PATH_MAX];
	const cJSON *arr, *it, *v;
	size_t n = 0, i = 0, j;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "runs_decode_json: out is NULL");
	memset(out, 0, sizeof(*out));
	out->default_model = -1;
	if (!root)
		return err_set(err, UNIAP_E_ARG, "%s: missing document", doc);
	if (path)
		jdec_pkey(ap, path, "runs");
	else
		snprintf(ap, sizeof(ap), "runs");
	rc = jdec_check_depth(root, doc, err);
	if (rc == UNIAP_OK)
		rc = jdec_keys(root, doc, keys, NULL, err);
	if (rc != UNIAP_OK)
		goto out;
	arr = cJSON_GetObjectItemCaseSensitive(root, "runs");
	for (it = arr ? arr->child : NULL; it; it = it->next)
		n++;
	if (!arr)
		rc = err_set(err, UNIAP_E_INVALID, "%s: is required", ap);
	else if (!cJSON_IsArray(arr))
		rc = err_set(err, UNIAP_E_INVALID, "%s: must be an array, got %s", ap, jdec_type_name(arr));
	else if (n > CALIB_MAX_RUNS)
		rc = err_set(err, UNIAP_E_LIMIT, "%s: must have at most %d entries, got %zu", ap, CALIB_MAX_RUNS, n);
	if (rc != UNIAP_OK)
		goto out;
	/* an empty list decodes (a collection still empty); fitting it fails, predicting it prints nothing */
	out->runs = calloc(n ? n : 1, sizeof(*out->runs));
	out->models = calloc(n + 1, sizeof(*out->models));
	if (!out->runs || !out->models) {
		rc = err_set(err, UNIAP_E_NOMEM, "%s: out of memory", ap);
		goto out;
	}
	out->n_runs = n;
	for (i = 0; i < n; i++)
		out->runs[i].model = -1;
	v = cJSON_GetObjectItemCaseSensitive(root, "model");
	if (path)
		jdec_pkey(p, path, "model");
	else
		snprintf(p, sizeof(p), "model");
	if (v)
		rc = runs_model(v, p, out, &out->default_model, err);
	if (rc == UNIAP_OK)
		rc = jdec_runtime(root, "runtime", path, out->runtime, err);
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		if (rc != UNIAP_OK)
			break;
		jdec_pidx(p, ap, i);
		rc = runs_run(it, p, out, &out->runs[i], err);
		for (j = 0; rc == UNIAP_OK && j < i; j++)
			if (strcmp(out->runs[j].name, out->runs[i].name) == 0)
				rc = err_set(err, UNIAP_E_INVALID, "%s.name: duplicate of %s[%zu].name \"%s\"", p, ap, j,
				             out->runs[i].name);
		i++;
	}
out:
	if (rc != UNIAP_OK)
		runs_doc_release(out);
	return rc;
}

uniap_code runs_decode(const char *text, size_t len, struct runs_doc *out, struct uniap_err *err)
{
	cJSON *root = NULL;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "runs_decode: out is NULL");
	memset(out, 0, sizeof(*out));
	out->default_model = -1;
	rc = jdec_parse(text, len, "runs", &root, err);
	if (rc == UNIAP_OK)
		rc = runs_decode_json(root, NULL, out, err);
	cJSON_Delete(root);
	return rc;
}

uniap_code runs_resolve(struct runs_doc *d, const struct cluster_profile *c,
                        const struct model_profile *default_model, struct calib_run **out,
                        struct uniap_err *err)
{
	struct calib_run *runs;
	uniap_code rc = UNIAP_OK;
	size_t i;

	*out = NULL;
	runs = calloc(d->n_runs ? d->n_runs : 1, sizeof(*runs));
	if (!runs)
		return err_set(err, UNIAP_E_NOMEM, "runs: out of memory");
	for (i = 0; i < d->n_runs && rc == UNIAP_OK; i++) {
		struct runs_run *r = &d->runs[i];
		const struct model_profile *m = r->model >= 0 ? &d->models[r->model]
		                                : d->default_model >= 0 ? &d->models[d->default_model]
		                                : default_model;

		if (!m) {
			rc = err_set(err, UNIAP_E_INVALID,
			             "runs[%zu].model: no model (give one in the run, in the document or with --model)", i);
			break;
		}
		if (r->layout != RUNS_PLAN) {
			plan_doc_release(&r->plan);
			rc = calib_uniform_plan(m, cluster_devices(c), r->batch, r->schedule, &r->uniform, &r->plan, err);
			if (rc != UNIAP_OK) {
				char to[JDEC_PATH_MAX];

				snprintf(to, sizeof(to), "runs[%zu].%s", i, r->layout == RUNS_UNIFORM ? "uniform" : "megatron");
				if (err && strncmp(err->msg, "uniform", 7) == 0)
					jdec_reroot(err, "uniform", to);
				else
					err_prefix(err, "%s", to);
				break;
			}
		}
		/* the plan is priced for the runtime the run ran on */
		snprintf(r->plan.runtime, sizeof(r->plan.runtime), "%s", r->runtime);
		if (r->peak_memory_bytes && r->n_peak_memory_bytes != (size_t)r->plan.pp) {
			rc = err_set(err, UNIAP_E_INVALID,
			             "runs[%zu].measured.peak_memory_bytes: must have one entry per stage (pp %d), got %zu", i,
			             r->plan.pp, r->n_peak_memory_bytes);
			break;
		}
		runs[i].name = r->name;
		runs[i].model = m;
		runs[i].plan = &r->plan;
		runs[i].batch = r->batch;
		runs[i].iteration_s = r->iteration_s > 0 ? r->iteration_s
		                      : r->samples_per_s > 0 ? (double)r->batch / r->samples_per_s : 0.0;
		runs[i].peak_memory_bytes = r->peak_memory_bytes;
		runs[i].oom = r->oom;
	}
	if (rc != UNIAP_OK) {
		free(runs);
		return rc;
	}
	*out = runs;
	return UNIAP_OK;
}

/* ----------------------------------------------------------------- report */

/* Error statistics of one kind of prediction over the runs with a measured time. */
struct runs_stats {
	double sum, max;
	size_t n;
};

static void runs_stats_add(struct runs_stats *s, double predicted, double measured)
{
	double e;

	if (!(measured > 0) || !(predicted > 0))
		return;
	e = fabs(calib_rel_error(predicted, measured));
	s->sum += e;
	if (e > s->max)
		s->max = e;
	s->n++;
}

static cJSON *runs_stats_json(const struct runs_stats *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	if (!cJSON_AddNumberToObject(o, "runs", (double)s->n) ||
	    !(s->n ? jenc_add_num(o, "mean_abs_relative_error", s->sum / (double)s->n)
	           : cJSON_AddNullToObject(o, "mean_abs_relative_error") != NULL) ||
	    !(s->n ? jenc_add_num(o, "max_abs_relative_error", s->max)
	           : cJSON_AddNullToObject(o, "max_abs_relative_error") != NULL)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *runs_array(const double *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; a && i < n; i++) {
		cJSON *x = jenc_number(v[i]);

		if (!x || !cJSON_AddItemToArray(a, x)) {
			cJSON_Delete(x);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

/* Adds key: batch / iteration_s, or null when there is no time. */
static int runs_add_rate(cJSON *o, const char *key, long batch, double iteration_s)
{
	if (iteration_s > 0)
		return jenc_add_num(o, key, (double)batch / iteration_s);
	return cJSON_AddNullToObject(o, key) != NULL;
}

/* Adds prefix_iteration_s, prefix_samples_per_s, prefix_relative_error, prefix_oom, prefix_peak_memory_bytes of pr to o. */
static int runs_add_prediction(cJSON *o, const char *prefix, const struct calib_prediction *pr, double measured,
                               long batch)
{
	char k[64];
	cJSON *a;

	snprintf(k, sizeof(k), "%s_iteration_s", prefix);
	if (!jenc_add_num(o, k, pr->iteration_s))
		return 0;
	snprintf(k, sizeof(k), "%s_samples_per_s", prefix);
	if (!runs_add_rate(o, k, batch, pr->iteration_s))
		return 0;
	snprintf(k, sizeof(k), "%s_relative_error", prefix);
	if (measured > 0 ? !jenc_add_num(o, k, calib_rel_error(pr->iteration_s, measured))
	                 : !cJSON_AddNullToObject(o, k))
		return 0;
	snprintf(k, sizeof(k), "%s_oom", prefix);
	if (!cJSON_AddBoolToObject(o, k, !pr->fits))
		return 0;
	snprintf(k, sizeof(k), "%s_peak_memory_bytes", prefix);
	a = runs_array(pr->peak_memory_bytes, (size_t)pr->pp);
	return a && cJSON_AddItemToObject(o, k, a);
}

static cJSON *runs_report_run(const struct runs_report_in *in, size_t i)
{
	const struct runs_run *r = &in->doc->runs[i];
	const struct calib_run *cr = &in->runs[i];
	cJSON *o = cJSON_CreateObject();
	int ok = o != NULL;

	ok = ok && cJSON_AddStringToObject(o, "name", r->name);
	ok = ok && (r->source ? cJSON_AddStringToObject(o, "source", r->source) != NULL
	                      : cJSON_AddNullToObject(o, "source") != NULL);
	ok = ok && cJSON_AddNumberToObject(o, "batch", (double)r->batch);
	ok = ok && cJSON_AddNumberToObject(o, "pp", (double)r->plan.pp);
	ok = ok && cJSON_AddNumberToObject(o, "microbatches", (double)r->plan.microbatches);
	ok = ok && cJSON_AddStringToObject(o, "strategy", r->plan.n_layers ? r->plan.strategy_names[0] : "");
	ok = ok && (cr->iteration_s > 0 ? jenc_add_num(o, "measured_iteration_s", cr->iteration_s)
	                                : cJSON_AddNullToObject(o, "measured_iteration_s") != NULL);
	ok = ok && runs_add_rate(o, "measured_samples_per_s", r->batch, cr->iteration_s);
	ok = ok && cJSON_AddBoolToObject(o, "measured_oom", cr->oom);
	ok = ok && (cr->peak_memory_bytes
	                    ? cJSON_AddItemToObject(o, "measured_peak_memory_bytes",
	                                            runs_array(cr->peak_memory_bytes, r->n_peak_memory_bytes))
	                    : cJSON_AddNullToObject(o, "measured_peak_memory_bytes") != NULL);
	ok = ok && runs_add_prediction(o, "datasheet", &in->datasheet[i], cr->iteration_s, r->batch);
	if (in->fitted)
		ok = ok && runs_add_prediction(o, "fitted", &in->fitted[i], cr->iteration_s, r->batch);
	if (in->loo_iteration_s) {
		double loo = in->loo_iteration_s[i];

		ok = ok && (loo > 0 ? jenc_add_num(o, "loo_iteration_s", loo) : cJSON_AddNullToObject(o, "loo_iteration_s") != NULL);
		ok = ok && runs_add_rate(o, "loo_samples_per_s", r->batch, loo);
		ok = ok && (loo > 0 && cr->iteration_s > 0
		                    ? jenc_add_num(o, "loo_relative_error", calib_rel_error(loo, cr->iteration_s))
		                    : cJSON_AddNullToObject(o, "loo_relative_error") != NULL);
	}
	if (r->layout == RUNS_MEGATRON)
		ok = ok && cJSON_AddStringToObject(o, "ignored_arguments", r->ignored_args);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *runs_report_params(const struct runs_report_in *in)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; a && i < in->n_params; i++) {
		const struct calib_param *p = &in->params[i];
		const struct calib_param_def *d = calib_def(p->def);
		cJSON *o = cJSON_CreateObject();
		int ok = o && cJSON_AddItemToArray(a, o);

		if (o && !ok) {
			cJSON_Delete(o);
			o = NULL;
		}

		ok = ok && cJSON_AddStringToObject(o, "name", p->name);
		ok = ok && cJSON_AddStringToObject(o, "unit", d ? d->unit : "");
		ok = ok && jenc_add_num(o, "prior", p->prior) && jenc_add_num(o, "value", p->value);
		ok = ok && jenc_add_num(o, "lower_bound", p->lo) && jenc_add_num(o, "upper_bound", p->hi);
		ok = ok && (p->prior != 0 ? jenc_add_num(o, "ratio_to_prior", p->value / p->prior)
		                          : cJSON_AddNullToObject(o, "ratio_to_prior") != NULL);
		if (!ok) {
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

/* {"datasheet": stats, "fitted": stats, "leave_one_out": stats} of the predictions present. */
static cJSON *runs_report_summary(const struct runs_report_in *in)
{
	struct runs_stats ds = { 0 }, fit = { 0 }, loo = { 0 };
	cJSON *o = cJSON_CreateObject();
	size_t i;
	int ok = o != NULL;

	for (i = 0; i < in->doc->n_runs; i++) {
		runs_stats_add(&ds, in->datasheet[i].iteration_s, in->runs[i].iteration_s);
		if (in->fitted)
			runs_stats_add(&fit, in->fitted[i].iteration_s, in->runs[i].iteration_s);
		if (in->loo_iteration_s)
			runs_stats_add(&loo, in->loo_iteration_s[i], in->runs[i].iteration_s);
	}
	ok = ok && cJSON_AddItemToObject(o, "datasheet", runs_stats_json(&ds));
	if (in->fitted)
		ok = ok && cJSON_AddItemToObject(o, "fitted", runs_stats_json(&fit));
	if (in->loo_iteration_s)
		ok = ok && cJSON_AddItemToObject(o, "leave_one_out", runs_stats_json(&loo));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *runs_report(const struct runs_report_in *in)
{
	cJSON *o = cJSON_CreateObject(), *a = NULL, *f;
	size_t i;
	int ok = o != NULL;

	ok = ok && (in->cluster_name ? cJSON_AddStringToObject(o, "cluster", in->cluster_name) != NULL
	                             : cJSON_AddNullToObject(o, "cluster") != NULL);
	ok = ok && cJSON_AddBoolToObject(o, "fitted", in->fitted != NULL);
	ok = ok && (!in->refused || cJSON_AddStringToObject(o, "refused", in->refused) != NULL);
	ok = ok && (a = cJSON_AddArrayToObject(o, "runs")) != NULL;
	for (i = 0; ok && i < in->doc->n_runs; i++) {
		cJSON *r = runs_report_run(in, i);

		ok = r && cJSON_AddItemToArray(a, r);
		if (!ok)
			cJSON_Delete(r);
	}
	if (ok && in->fitted) {
		ok = jenc_add_num(o, "prior_weight", in->prior_weight) &&
		     cJSON_AddItemToObject(o, "parameters", runs_report_params(in));
		ok = ok && (f = cJSON_AddObjectToObject(o, "fit")) != NULL;
		ok = ok && in->info && jenc_add_num(f, "cost", in->info->cost) &&
		     jenc_add_num(f, "cost_initial", in->info->cost_initial) &&
		     cJSON_AddNumberToObject(f, "residuals", (double)in->info->n_residuals) &&
		     cJSON_AddNumberToObject(f, "iterations", in->info->iterations) &&
		     cJSON_AddBoolToObject(f, "converged", in->info->converged);
	}
	ok = ok && cJSON_AddItemToObject(o, "summary", runs_report_summary(in));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *runs_calibration_record(const struct runs_report_in *in, const char *date)
{
	cJSON *o = cJSON_CreateObject(), *names = NULL, *vals = NULL, *sum;
	size_t i;
	int ok = o != NULL;

	ok = ok && cJSON_AddStringToObject(o, "date", date);
	ok = ok && (names = cJSON_AddArrayToObject(o, "runs")) != NULL;
	for (i = 0; ok && i < in->doc->n_runs; i++) {
		cJSON *s = cJSON_CreateString(in->doc->runs[i].name);

		ok = s && cJSON_AddItemToArray(names, s);
		if (!ok)
			cJSON_Delete(s);
	}
	ok = ok && jenc_add_num(o, "prior_weight", in->prior_weight);
	ok = ok && (vals = cJSON_AddObjectToObject(o, "parameters")) != NULL;
	for (i = 0; ok && i < in->n_params; i++) {
		cJSON *p = cJSON_AddObjectToObject(vals, in->params[i].name);

		ok = p && jenc_add_num(p, "prior", in->params[i].prior) && jenc_add_num(p, "value", in->params[i].value);
	}
	ok = ok && (sum = runs_report_summary(in)) != NULL && cJSON_AddItemToObject(o, "errors", sum);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* ------------------------------------------------------------ runs_calibrate */

void runs_calibration_release(struct runs_calibration *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n_runs; i++) {
		if (s->datasheet)
			calib_prediction_release(&s->datasheet[i]);
		if (s->fitted)
			calib_prediction_release(&s->fitted[i]);
	}
	free(s->datasheet);
	free(s->fitted);
	free(s->loo);
	free(s->params);
	free(s->runs);
	cluster_release(&s->calibrated);
	memset(s, 0, sizeof(*s));
}

/* Predictions of every run of s on c into *preds (new array). */
static uniap_code runs_predict_all(const struct cluster_profile *c, const struct runs_calibration *s,
                                   struct calib_prediction **preds, struct uniap_err *err)
{
	size_t i;
	uniap_code rc;

	*preds = calloc(s->n_runs ? s->n_runs : 1, sizeof(**preds));
	if (!*preds)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	for (i = 0; i < s->n_runs; i++) {
		rc = calib_predict(c, &s->runs[i], &(*preds)[i], err);
		if (rc != UNIAP_OK) {
			err_prefix(err, "runs[%zu]", i);
			return rc;
		}
	}
	return UNIAP_OK;
}

/* The caller's progress hook seen through leave-one-out: its folds come after the fit. */
struct runs_progress {
	const struct calib_options *opt;
};

static void runs_loo_progress(void *ctx, size_t done, size_t total)
{
	const struct runs_progress *rp = ctx;

	rp->opt->progress(rp->opt->progress_ctx, 1 + done, 1 + total);
}

uniap_code runs_calibrate(struct runs_doc *d, const struct runs_calibrate_in *in, struct runs_calibration *out,
                          struct uniap_err *err)
{
	const struct cluster_profile *c = in->cluster;
	struct runs_progress rp = { &in->opt };
	struct calib_options loo_opt = in->opt;
	uniap_code rc;

	memset(out, 0, sizeof(*out));
	if ((rc = runs_resolve(d, c, in->default_model, &out->runs, err)) != UNIAP_OK)
		return rc;
	out->n_runs = d->n_runs;
	if ((rc = runs_predict_all(c, out, &out->datasheet, err)) != UNIAP_OK || in->predict_only)
		return rc;
	if (in->fit && in->n_fit)
		rc = calib_params_select(c, in->fit, in->n_fit, &out->params, &out->n_params, err);
	else if (in->fit)
		rc = err_set(err, UNIAP_E_ARG, "--fit: names no parameter");
	else
		rc = calib_params_default(c, out->runs, out->n_runs, &out->params, &out->n_params, err);
	if (rc != UNIAP_OK ||
	    (rc = calib_fit(c, out->runs, out->n_runs, -1, &in->opt, out->params, out->n_params, &out->info, err)) !=
	            UNIAP_OK ||
	    (rc = calib_apply(c, out->params, out->n_params, &out->calibrated, err)) != UNIAP_OK ||
	    (rc = runs_predict_all(&out->calibrated, out, &out->fitted, err)) != UNIAP_OK)
		return rc;
	/* a fit on a bound is refused; its report is still made (the folds too) to show why */
	if (!in->opt.allow_bounds) {
		struct uniap_err be = { 0 };

		if (calib_check_bounds(out->params, out->n_params, &be) != UNIAP_OK)
			snprintf(out->refused, sizeof(out->refused), "%s", be.msg);
	}
	if (in->opt.progress && !in->leave_one_out)
		in->opt.progress(in->opt.progress_ctx, 1, 1);
	if (in->leave_one_out) {
		out->loo = calloc(out->n_runs ? out->n_runs : 1, sizeof(*out->loo));
		if (!out->loo)
			return err_set(err, UNIAP_E_NOMEM, "out of memory");
		if (in->opt.progress) {
			loo_opt.progress = runs_loo_progress;
			loo_opt.progress_ctx = &rp;
		}
		rc = calib_leave_one_out(c, out->runs, out->n_runs, &loo_opt, out->params, out->n_params, out->loo, err);
	}
	if (rc == UNIAP_OK && out->refused[0])
		rc = err_set(err, UNIAP_E_INFEASIBLE, "%s", out->refused);
	return rc;
}

struct runs_report_in runs_calibration_report_in(const struct runs_doc *d, const struct runs_calibration *s,
                                                 const char *cluster_name, double prior_weight)
{
	return (struct runs_report_in){
		.cluster_name = cluster_name, .doc = d, .runs = s->runs, .datasheet = s->datasheet,
		.fitted = s->fitted, .loo_iteration_s = s->loo, .params = s->params, .n_params = s->n_params,
		.info = &s->info, .prior_weight = prior_weight, .refused = s->refused[0] ? s->refused : NULL,
	};
}

cJSON *runs_calibrated_cluster(const struct runs_doc *d, const struct runs_calibration *s, double prior_weight,
                               const char *name, const char *date)
{
	struct runs_report_in in = runs_calibration_report_in(d, s, s->calibrated.name, prior_weight);
	cJSON *doc = jenc_cluster(&s->calibrated), *rec = doc ? runs_calibration_record(&in, date) : NULL;

	if (!rec || !cJSON_AddItemToObject(doc, "calibration", rec)) {
		cJSON_Delete(rec);
		cJSON_Delete(doc);
		return NULL;
	}
	if (name && cJSON_GetObjectItemCaseSensitive(doc, "name") &&
	    !cJSON_ReplaceItemInObjectCaseSensitive(doc, "name", cJSON_CreateString(name))) {
		cJSON_Delete(doc);
		return NULL;
	}
	if (name && !cJSON_GetObjectItemCaseSensitive(doc, "name") && !cJSON_AddStringToObject(doc, "name", name)) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}
