/*
 * calib.c - fitting cluster parameters to measured runs (see calib.h and
 * docs/calibration.md), and uniform / Megatron-LM layouts as plans.
 *
 * The optimizer is GSL's trust-region nonlinear least squares
 * (gsl_multifit_nlinear, Levenberg-Marquardt, finite-difference Jacobian).
 * Bounds are kept by a logistic transform: parameter i is
 * v = lo + (hi - lo) * sigma(z) (in log space when lo > 0), z free.
 *
 * Thread safety: no state outside the arguments; see calib_global_init().
 * Never: I/O, JSON, globals here.
 */
#include "calib.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

/*
 * The parameter table.  One row per fittable field: adding a double field of
 * struct cluster_profile (or of struct cluster_level, one parameter per
 * level) to the fit is one row here.
 */
/* Measured collective and point-to-point tables scaled as one: the tables as given are 1. */
static double calib_measured_get(const struct cluster_profile *c, size_t level)
{
	(void)c;
	(void)level;
	return 1.0;
}

static void calib_measured_set(struct cluster_profile *c, size_t level, double v)
{
	size_t i;
	int k;

	(void)level;
	for (k = 0; k < CLUSTER_COLL_COUNT; k++)
		for (i = 0; i < c->n_coll[k]; i++)
			c->coll[k][i].bw_bytes_per_s *= v;
	for (i = 0; i < c->n_p2p; i++)
		c->p2p[i].bw_bytes_per_s *= v;
}

/* 1 when c has a measured collective or point-to-point table. */
static int calib_has_measured(const struct cluster_profile *c)
{
	int k;

	for (k = 0; k < CLUSTER_COLL_COUNT; k++)
		if (c->n_coll[k])
			return 1;
	return c->n_p2p > 0;
}

static const struct calib_param_def calib_defs[] = {
	{ "device.compute_efficiency", CALIB_CLUSTER, offsetof(struct cluster_profile, compute_efficiency), NULL, NULL,
	  CALIB_ABSOLUTE, 0.05, 1.0, CALIB_TIME, CALIB_DEFAULT_FLOPS, "fraction of peak" },
	/* a bandwidth cannot exceed its link: the catalog's figure is the link times an achievable
	 * fraction of 0.75-0.9 (docs/catalog.md), a measured one is what the link gave, so at most
	 * 1 / 0.8 = 1.25 of the document's figure (docs/calibration.md, "Bounds") */
	{ "bandwidth", CALIB_LEVEL, offsetof(struct cluster_level, bw_bytes_per_s), NULL, NULL,
	  CALIB_FACTOR, 0.05, 1.25, CALIB_TIME, CALIB_DEFAULT_LEVEL_USED, "bytes/s" },
	{ "overlap_coefficient", CALIB_CLUSTER, offsetof(struct cluster_profile, overlap_coefficient), NULL, NULL,
	  CALIB_ABSOLUTE, 1.0, 2.0, CALIB_TIME, CALIB_DEFAULT_NEVER, "dimensionless" },
	{ "device.reserved_bytes", CALIB_CLUSTER, offsetof(struct cluster_profile, reserved_bytes), NULL, NULL,
	  CALIB_OF_MEMORY, 0.0, 0.5, CALIB_MEMORY, CALIB_DEFAULT_MEMORY, "bytes" },
	{ "latency", CALIB_LEVEL, offsetof(struct cluster_level, latency_s), NULL, NULL,
	  CALIB_ABSOLUTE, 0.0, 1e-3, CALIB_TIME, CALIB_DEFAULT_NEVER, "s" },
	{ "device.memory_bandwidth", CALIB_CLUSTER, offsetof(struct cluster_profile, memory_bandwidth_bytes_per_s),
	  NULL, NULL,
	  CALIB_FACTOR, 0.05, 1.0, CALIB_TIME, CALIB_DEFAULT_NEVER, "bytes/s" }, /* the datasheet's is the most */
	{ "device.kernel_overhead", CALIB_CLUSTER, offsetof(struct cluster_profile, kernel_overhead_s), NULL, NULL,
	  CALIB_ABSOLUTE, 0.0, 1e-4, CALIB_TIME, CALIB_DEFAULT_NEVER, "s" },
	{ "device.gemm_half_dim", CALIB_CLUSTER, offsetof(struct cluster_profile, gemm_half_dim), NULL, NULL,
	  CALIB_ABSOLUTE, 0.0, 8192.0, CALIB_TIME, CALIB_DEFAULT_NEVER, "GEMM dimension" },
	{ "device.memory_fragmentation", CALIB_CLUSTER, offsetof(struct cluster_profile, memory_fragmentation), NULL, NULL,
	  CALIB_ABSOLUTE, 0.0, 0.5, CALIB_MEMORY, CALIB_DEFAULT_NEVER, "fraction of allocated bytes" },
	{ "collectives.bandwidth", CALIB_CLUSTER, 0, calib_measured_get, calib_measured_set,
	  CALIB_ABSOLUTE, 0.05, 1.25, CALIB_TIME, CALIB_DEFAULT_MEASURED, "factor of the measured tables" },
};

#define CALIB_N_DEFS (sizeof(calib_defs) / sizeof(calib_defs[0]))
/* A residual that cannot be computed (a zero or infinite prediction) counts as this. */
#define CALIB_BAD_RESIDUAL 1e3
/* The optimizer starts this far inside the bounds (fraction of the transformed range). */
#define CALIB_START_MARGIN 0.02
#define CALIB_LIST_MAX 512

size_t calib_def_count(void)
{
	return CALIB_N_DEFS;
}

const struct calib_param_def *calib_def(size_t i)
{
	return i < CALIB_N_DEFS ? &calib_defs[i] : NULL;
}

/* ------------------------------------------------------------ parameters */

/* The address of p's field inside c (cluster or level struct). */
static size_t calib_field_base(const struct cluster_profile *c, const struct calib_param *p, const char **base)
{
	const struct calib_param_def *d = &calib_defs[p->def];

	*base = d->where == CALIB_LEVEL ? (const char *)&c->levels[p->level] : (const char *)c;
	return d->offset;
}

double calib_param_get(const struct cluster_profile *c, const struct calib_param *p)
{
	const char *base;
	size_t off;
	double v;

	if (calib_defs[p->def].get)
		return calib_defs[p->def].get(c, p->level);
	off = calib_field_base(c, p, &base);
	memcpy(&v, base + off, sizeof(v));
	return v;
}

void calib_param_set(struct cluster_profile *c, const struct calib_param *p, double v)
{
	const struct calib_param_def *d = &calib_defs[p->def];
	char *base;

	if (d->set) {
		d->set(c, p->level, v);
		return;
	}
	base = d->where == CALIB_LEVEL ? (char *)&c->levels[p->level] : (char *)c;
	memcpy(base + d->offset, &v, sizeof(v));
}

/* Fills p for row def (level for per-level rows) of c. */
static void calib_param_fill(const struct cluster_profile *c, size_t def, size_t level, struct calib_param *p)
{
	const struct calib_param_def *d = &calib_defs[def];

	memset(p, 0, sizeof(*p));
	p->def = def;
	p->level = level;
	if (d->where == CALIB_LEVEL)
		snprintf(p->name, sizeof(p->name), "hierarchy[%zu].%s", level, d->name);
	else
		snprintf(p->name, sizeof(p->name), "%s", d->name);
	p->prior = calib_param_get(c, p);
	switch (d->bounds) {
	case CALIB_FACTOR:
		p->lo = d->lo * p->prior;
		p->hi = d->hi * p->prior;
		/* a level's bandwidth is bounded by its physical link where the document gives it */
		if (d->where == CALIB_LEVEL && d->offset == offsetof(struct cluster_level, bw_bytes_per_s) &&
		    c->levels[level].link_bytes_per_s > p->prior)
			p->hi = c->levels[level].link_bytes_per_s;
		break;
	case CALIB_OF_MEMORY:
		p->lo = d->lo * c->memory_bytes;
		p->hi = d->hi * c->memory_bytes;
		break;
	default:
		p->lo = d->lo;
		p->hi = d->hi;
	}
	if (p->prior > p->hi && d->bounds == CALIB_OF_MEMORY)
		p->hi = p->prior;
	p->value = p->prior;
}

uniap_code calib_params_all(const struct cluster_profile *c, struct calib_param **out, size_t *n,
                            struct uniap_err *err)
{
	size_t i, l, count = 0;

	*out = NULL;
	*n = 0;
	for (i = 0; i < CALIB_N_DEFS; i++)
		count += calib_defs[i].where == CALIB_LEVEL ? c->n_levels : 1;
	*out = calloc(count ? count : 1, sizeof(**out));
	if (!*out)
		return err_set(err, UNIAP_E_NOMEM, "calibration: out of memory");
	for (i = 0; i < CALIB_N_DEFS; i++) {
		/* scaling measured tables a cluster does not have moves nothing */
		if (calib_defs[i].by_default == CALIB_DEFAULT_MEASURED && !calib_has_measured(c))
			continue;
		for (l = 0; l < (calib_defs[i].where == CALIB_LEVEL ? c->n_levels : 1); l++) {
			calib_param_fill(c, i, l, &(*out)[*n]);
			/* a factor of a zero prior (a term the document leaves off) cannot move */
			if ((*out)[*n].hi > (*out)[*n].lo)
				(*n)++;
		}
	}
	return UNIAP_OK;
}

/* 1 when name selects p: its own name, or "hierarchy.FIELD" for every level of a per-level row. */
static int calib_name_selects(const char *name, const struct calib_param *p)
{
	const struct calib_param_def *d = &calib_defs[p->def];

	if (strcmp(name, p->name) == 0)
		return 1;
	return d->where == CALIB_LEVEL && strncmp(name, "hierarchy.", 10) == 0 && strcmp(name + 10, d->name) == 0;
}

/* The names of all (borrowed, n) as one comma-separated list in buf. */
static void calib_name_list(const struct calib_param *all, size_t n, char *buf, size_t cap)
{
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < n && used < cap; i++) {
		int w = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", all[i].name);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* Keeps the entries of all (owned, replaced by the result) whose keep[i] is set. */
static void calib_params_keep(struct calib_param *all, size_t *n, const unsigned char *keep)
{
	size_t i, m = 0;

	for (i = 0; i < *n; i++)
		if (keep[i])
			all[m++] = all[i];
	*n = m;
}

uniap_code calib_params_select(const struct cluster_profile *c, const char *const *names, size_t n_names,
                               struct calib_param **out, size_t *n, struct uniap_err *err)
{
	unsigned char keep[CALIB_MAX_PARAMS + 1] = { 0 };
	char list[CALIB_LIST_MAX];
	size_t i, j;
	uniap_code rc = calib_params_all(c, out, n, err);

	if (rc != UNIAP_OK)
		return rc;
	if (*n > CALIB_MAX_PARAMS) {
		rc = err_set(err, UNIAP_E_LIMIT, "--fit: the cluster offers %zu parameters, at most %d", *n,
		             CALIB_MAX_PARAMS);
		goto out;
	}
	for (j = 0; j < n_names; j++) {
		int hit = 0;

		for (i = 0; i < *n; i++)
			if (calib_name_selects(names[j], &(*out)[i]))
				hit = keep[i] = 1;
		if (!hit) {
			calib_name_list(*out, *n, list, sizeof(list));
			rc = err_set(err, UNIAP_E_ARG, "--fit: unknown parameter \"%.64s\" (known: %s)", names[j], list);
			goto out;
		}
	}
	calib_params_keep(*out, n, keep);
	if (*n == 0)
		rc = err_set(err, UNIAP_E_ARG, "--fit: names no parameter");
out:
	if (rc != UNIAP_OK) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* ------------------------------------------------------------ prediction */

void calib_prediction_release(struct calib_prediction *p)
{
	if (!p)
		return;
	free(p->peak_memory_bytes);
	memset(p, 0, sizeof(*p));
}

uniap_code calib_predict(const struct cluster_profile *c, const struct calib_run *run,
                         struct calib_prediction *out, struct uniap_err *err)
{
	struct plan_applied a;
	uniap_code rc;
	int i;

	memset(out, 0, sizeof(*out));
	rc = plan_doc_apply(c, run->model, run->batch, run->plan, &a, err);
	if (rc == UNIAP_OK) {
		out->pp = a.eval.pp;
		out->iteration_s = a.eval.tpi_s;
		out->fits = a.eval.valid && a.eval.fits;
		out->capacity_bytes = c->memory_bytes * (1.0 - c->memory_margin);
		snprintf(out->reason, sizeof(out->reason), "%s", a.eval.reason);
		out->peak_memory_bytes = calloc((size_t)out->pp, sizeof(*out->peak_memory_bytes));
		if (!out->peak_memory_bytes)
			rc = err_set(err, UNIAP_E_NOMEM, "plan: out of memory");
		/* the cost model's limit is (capacity - reserved - transients) / (1 + fragmentation),
		 * so the peak is the capacity less the stage's headroom scaled back; under
		 * interleaving a stage's is its device's (the chunks peak apart, cost.h) */
		for (i = 0; rc == UNIAP_OK && i < out->pp; i++)
			out->peak_memory_bytes[i] = out->capacity_bytes -
				(a.cand.memory_limit_bytes - (a.eval.virtual_stages > 1
				                              ? a.eval.device_memory_bytes[i % a.eval.devices]
				                              : a.eval.stage_memory_bytes[i])) *
				(1.0 + c->memory_fragmentation);
	}
	plan_applied_release(&a);
	return rc;
}

/* Smallest level holding rank r and rank r + D for every r: where stage-to-stage transfers run. */
static size_t calib_p2p_level(const struct cluster_profile *c, int stage_devices)
{
	int n = cluster_devices(c), r;
	size_t lv;

	for (lv = 0; lv < c->n_levels; lv++) {
		long block = c->levels[lv].devices;
		int ok = 1;

		for (r = 0; ok && r + stage_devices < n; r++)
			ok = r / block == (r + stage_devices) / block;
		if (ok)
			return lv;
	}
	return c->n_levels ? c->n_levels - 1 : 0;
}

/* Marks in used[] (n_levels entries) the levels run's plan communicates over. */
static uniap_code calib_mark_levels(const struct cluster_profile *c, const struct calib_run *run,
                                    unsigned char *used, struct uniap_err *err)
{
	struct plan_applied a;
	const struct strategy_set *set;
	size_t u, e;
	int d;
	uniap_code rc = plan_doc_apply(c, run->model, run->batch, run->plan, &a, err);

	if (rc != UNIAP_OK)
		goto out;
	set = &a.cand.strategies;
	for (u = 0; u < a.cand.n_layers; u++) {
		const struct strategy *s = &set->items[a.strategy[u]];

		for (d = 0; d < STRATEGY_DIMS; d++)
			if (s->degree[d] > 1 && s->level[d] >= 0)
				used[s->level[d]] = 1;
	}
	/* a change of layout inside a stage reshards over the whole stage */
	for (e = 0; e < run->model->n_edges; e++) {
		size_t from = run->model->edges[e].from, to = run->model->edges[e].to;

		if (a.stage[from] == a.stage[to] && a.strategy[from] != a.strategy[to])
			used[strategy_group_level(c, set->stage_devices, 1, set->stage_devices, set->pp)] = 1;
	}
	if (a.cand.pp > 1)
		used[calib_p2p_level(c, set->stage_devices)] = 1;
out:
	plan_applied_release(&a);
	return rc;
}

/* 1 when some layer type of m takes its time from FLOPs (and so from compute_efficiency). */
static int calib_model_uses_flops(const struct model_profile *m)
{
	size_t t;

	for (t = 0; t < m->n_types; t++)
		if (m->types[t].forward_flops_per_sample > 0)
			return 1;
	return 0;
}

uniap_code calib_params_default(const struct cluster_profile *c, const struct calib_run *runs, size_t n_runs,
                                struct calib_param **out, size_t *n, struct uniap_err *err)
{
	unsigned char levels[MODEL_MAX_LEVELS] = { 0 };
	unsigned char keep[CALIB_MAX_PARAMS + 1] = { 0 };
	int flops = 0, memory = 0, any_level = 0;
	size_t i;
	uniap_code rc = calib_params_all(c, out, n, err);

	if (rc != UNIAP_OK)
		return rc;
	if (n_runs == 0) {
		rc = err_set(err, UNIAP_E_INVALID, "runs: no run to fit to");
		goto out;
	}
	if (*n > CALIB_MAX_PARAMS) {
		rc = err_set(err, UNIAP_E_LIMIT, "calibration: the cluster offers %zu parameters, at most %d", *n,
		             CALIB_MAX_PARAMS);
		goto out;
	}
	for (i = 0; i < n_runs && rc == UNIAP_OK; i++) {
		flops |= calib_model_uses_flops(runs[i].model) && c->peak_flops_per_s[runs[i].model->precision] > 0;
		memory |= runs[i].peak_memory_bytes != NULL || runs[i].oom;
		rc = calib_mark_levels(c, &runs[i], levels, err);
		if (rc != UNIAP_OK)
			err_prefix(err, "runs[%zu]", i);
	}
	if (rc != UNIAP_OK)
		goto out;
	for (i = 0; i < c->n_levels; i++)
		any_level |= levels[i];
	for (i = 0; i < *n; i++) {
		const struct calib_param *p = &(*out)[i];

		switch (calib_defs[p->def].by_default) {
		case CALIB_DEFAULT_FLOPS: keep[i] = (unsigned char)flops; break;
		case CALIB_DEFAULT_MEMORY: keep[i] = (unsigned char)memory; break;
		case CALIB_DEFAULT_LEVEL_USED: keep[i] = levels[p->level]; break;
		case CALIB_DEFAULT_MEASURED: keep[i] = (unsigned char)(calib_has_measured(c) && any_level); break;
		default: keep[i] = 0;
		}
	}
	calib_params_keep(*out, n, keep);
	if (*n == 0)
		rc = err_set(err, UNIAP_E_INVALID,
		             "runs: nothing to fit by default (no FLOP-based model, no communication, no memory "
		             "measured); name parameters with --fit");
out:
	if (rc != UNIAP_OK) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* ------------------------------------------------------------------- fit */

/* State the residual function reads: the runs, a working copy of the cluster. */
struct calib_ctx {
	const struct calib_run *runs;
	size_t n_runs;
	long skip;
	const struct calib_param *params;
	size_t n_params;
	double sqrt_weight;
	const struct cluster_profile *base; /* the document (borrowed) */
	struct cluster_profile work;  /* owned copy, the parameters written into it */
	uniap_code rc;                /* an error inside the residual function */
	struct uniap_err *err;
	const struct calib_options *opt; /* borrowed, may be NULL: its cancel hook */
};

/* UNIAP_E_CANCELED (err filled) when opt's cancel hook asks to stop. */
static uniap_code calib_check_cancel(const struct calib_options *opt, struct uniap_err *err)
{
	if (opt && opt->cancel && opt->cancel(opt->cancel_ctx))
		return err_set(err, UNIAP_E_CANCELED, "calibration: canceled");
	return UNIAP_OK;
}

/* The measured tables of work back to base's (same sizes: work is a copy): setters that scale start from them. */
static void calib_reset_tables(struct cluster_profile *work, const struct cluster_profile *base)
{
	int k;

	for (k = 0; k < CLUSTER_COLL_COUNT; k++)
		if (work->n_coll[k])
			memcpy(work->coll[k], base->coll[k], work->n_coll[k] * sizeof(*work->coll[k]));
	if (work->n_p2p)
		memcpy(work->p2p, base->p2p, work->n_p2p * sizeof(*work->p2p));
}

static int calib_log_space(const struct calib_param *p)
{
	return p->lo > 0;
}

/* The transformed coordinate of v: log v or v. */
static double calib_t(const struct calib_param *p, double v)
{
	return calib_log_space(p) ? log(v) : v;
}

/* The parameter value of free variable z. */
static double calib_value(const struct calib_param *p, double z)
{
	double lo = calib_t(p, p->lo), hi = calib_t(p, p->hi);
	double t = lo + (hi - lo) / (1.0 + exp(-z));

	return calib_log_space(p) ? exp(t) : t;
}

/* The free variable where p starts: its prior, clamped a margin inside the bounds. */
static double calib_z0(const struct calib_param *p)
{
	double lo = calib_t(p, p->lo), hi = calib_t(p, p->hi), v = p->prior, f;

	if (v < p->lo)
		v = p->lo;
	if (v > p->hi)
		v = p->hi;
	f = hi > lo ? (calib_t(p, v) - lo) / (hi - lo) : 0.5;
	if (f < CALIB_START_MARGIN)
		f = CALIB_START_MARGIN;
	if (f > 1.0 - CALIB_START_MARGIN)
		f = 1.0 - CALIB_START_MARGIN;
	return log(f / (1.0 - f));
}

/* The ridge residual of value v: distance from the (clamped) prior, in log space or relative to the range. */
static double calib_ridge(const struct calib_param *p, double v)
{
	double prior = p->prior < p->lo ? p->lo : p->prior > p->hi ? p->hi : p->prior;

	if (calib_log_space(p))
		return log(v) - log(prior);
	return p->hi > p->lo ? (v - prior) / (p->hi - p->lo) : 0.0;
}

static double calib_finite(double r)
{
	return isfinite(r) ? r : CALIB_BAD_RESIDUAL;
}

/* The largest predicted peak of pr (borrowed). */
static double calib_max_peak(const struct calib_prediction *pr)
{
	double m = 0.0;
	int i;

	for (i = 0; i < pr->pp; i++)
		if (pr->peak_memory_bytes[i] > m)
			m = pr->peak_memory_bytes[i];
	return m;
}

/*
 * The data residuals of run r: time, memory per stage, OOM hinge.  With out
 * NULL only counts them (the structure never depends on the parameters).
 */
static size_t calib_run_residuals(const struct calib_run *r, const struct calib_prediction *pr, double *out)
{
	size_t k = 0;
	int i;

	if (r->iteration_s > 0) {
		if (out)
			out[k] = calib_finite(log(pr->iteration_s / r->iteration_s));
		k++;
	}
	for (i = 0; r->peak_memory_bytes && i < r->plan->pp; i++, k++)
		if (out)
			out[k] = calib_finite((pr->peak_memory_bytes[i] - r->peak_memory_bytes[i]) /
			                      r->peak_memory_bytes[i]);
	/* a hinge: an OOM run predicted to fit, or a run that ran predicted not to */
	if (r->oom || r->iteration_s > 0 || r->peak_memory_bytes) {
		if (out) {
			double peak = calib_max_peak(pr), mem = pr->capacity_bytes;

			out[k] = 0.0;
			if (r->oom && peak < mem)
				out[k] = (mem - peak) / mem;
			else if (!r->oom && peak > mem)
				out[k] = (peak - mem) / mem;
		}
		k++;
	}
	return k;
}

static int calib_f(const gsl_vector *z, void *vctx, gsl_vector *f)
{
	struct calib_ctx *ctx = vctx;
	struct calib_prediction pr;
	double buf[64]; /* most runs' residuals; more are allocated */
	size_t i, k = 0, j, m;

	/* a failure sticks: GSL's finite-difference Jacobian ignores an evaluation's
	 * status and goes on, so every later evaluation fails at once; every one
	 * polls the hook, as GSL's driver has no way to stop between iterations */
	if (ctx->rc != UNIAP_OK || (ctx->rc = calib_check_cancel(ctx->opt, ctx->err)) != UNIAP_OK)
		return GSL_EFAILED;
	calib_reset_tables(&ctx->work, ctx->base);
	for (i = 0; i < ctx->n_params; i++)
		calib_param_set(&ctx->work, &ctx->params[i], calib_value(&ctx->params[i], gsl_vector_get(z, i)));
	for (i = 0; i < ctx->n_runs; i++) {
		const struct calib_run *r = &ctx->runs[i];
		double *res = buf;
		size_t need;

		memset(&pr, 0, sizeof(pr));
		if ((long)i == ctx->skip)
			continue;
		need = calib_run_residuals(r, NULL, NULL);
		if (need == 0)
			continue;
		if (need > sizeof(buf) / sizeof(buf[0]))
			res = malloc(need * sizeof(*res));
		ctx->rc = res ? calib_predict(&ctx->work, r, &pr, ctx->err)
		              : err_set(ctx->err, UNIAP_E_NOMEM, "calibration: out of memory");
		if (ctx->rc != UNIAP_OK) {
			if (res)
				err_prefix(ctx->err, "runs[%zu]", i);
			calib_prediction_release(&pr);
			if (res != buf)
				free(res);
			return GSL_EFAILED;
		}
		m = calib_run_residuals(r, &pr, res);
		for (j = 0; j < m; j++)
			gsl_vector_set(f, k++, res[j]);
		calib_prediction_release(&pr);
		if (res != buf)
			free(res);
	}
	for (i = 0; i < ctx->n_params; i++)
		gsl_vector_set(f, k++, ctx->sqrt_weight * calib_ridge(&ctx->params[i], calib_value(&ctx->params[i],
		                                                                                   gsl_vector_get(z, i))));
	return GSL_SUCCESS;
}

static double calib_sumsq(const gsl_vector *f)
{
	double s = 0.0;
	size_t i;

	for (i = 0; i < f->size; i++)
		s += gsl_vector_get(f, i) * gsl_vector_get(f, i);
	return s;
}

uniap_code calib_fit(const struct cluster_profile *c, const struct calib_run *runs, size_t n_runs, long skip,
                     const struct calib_options *opt, struct calib_param *params, size_t n_params,
                     struct calib_fit_info *info, struct uniap_err *err)
{
	struct calib_ctx ctx = { .runs = runs, .n_runs = n_runs, .skip = skip, .params = params,
	                         .n_params = n_params, .err = err, .base = c, .opt = opt };
	gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w = NULL;
	gsl_multifit_nlinear_fdf fdf;
	gsl_vector *z0 = NULL, *f0 = NULL;
	double weight = opt ? opt->prior_weight : CALIB_DEFAULT_PRIOR_WEIGHT;
	int max_iter = opt && opt->max_iterations > 0 ? opt->max_iterations : CALIB_DEFAULT_MAX_ITERATIONS;
	size_t i, n_data = 0;
	int status, gsl_info = 0;
	uniap_code rc;

	if (n_params == 0 || n_params > CALIB_MAX_PARAMS)
		return err_set(err, UNIAP_E_ARG, "calibration: must fit 1 to %d parameters, got %zu", CALIB_MAX_PARAMS,
		               n_params);
	if (!(weight >= 0) || !isfinite(weight))
		return err_set(err, UNIAP_E_ARG, "--prior-weight: must be a finite number >= 0, got %g", weight);
	if (n_runs > CALIB_MAX_RUNS)
		return err_set(err, UNIAP_E_LIMIT, "runs: at most %d runs, got %zu", CALIB_MAX_RUNS, n_runs);
	for (i = 0; i < n_runs; i++)
		if ((long)i != skip)
			n_data += calib_run_residuals(&runs[i], NULL, NULL);
	if (n_data == 0)
		return err_set(err, UNIAP_E_INVALID, "runs: no run with a measured time, memory or out-of-memory record");
	ctx.sqrt_weight = sqrt(weight);
	if ((rc = cluster_copy(c, &ctx.work, err)) != UNIAP_OK)
		return rc;
	z0 = gsl_vector_alloc(n_params);
	f0 = gsl_vector_alloc(n_data + n_params);
	/* the ridge rows keep n >= p, which GSL requires, even with weight 0 */
	w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, n_data + n_params, n_params);
	if (!z0 || !f0 || !w) {
		rc = err_set(err, UNIAP_E_NOMEM, "calibration: out of memory");
		goto out;
	}
	for (i = 0; i < n_params; i++)
		gsl_vector_set(z0, i, calib_z0(&params[i]));
	memset(&fdf, 0, sizeof(fdf));
	fdf.f = calib_f;
	fdf.df = NULL; /* finite differences */
	fdf.fvv = NULL;
	fdf.n = n_data + n_params;
	fdf.p = n_params;
	fdf.params = &ctx;
	ctx.rc = UNIAP_OK;
	if (calib_f(z0, &ctx, f0) != GSL_SUCCESS) {
		rc = ctx.rc;
		goto out;
	}
	status = gsl_multifit_nlinear_init(z0, &fdf, w);
	if (status == GSL_SUCCESS)
		status = gsl_multifit_nlinear_driver((size_t)max_iter, 1e-10, 1e-10, 1e-12, NULL, NULL, &gsl_info, w);
	if (ctx.rc != UNIAP_OK) {
		rc = ctx.rc;
		goto out;
	}
	if (status != GSL_SUCCESS && status != GSL_EMAXITER && status != GSL_ENOPROG) {
		rc = err_set(err, UNIAP_E_INTERNAL, "calibration: the optimizer failed: %s", gsl_strerror(status));
		goto out;
	}
	for (i = 0; i < n_params; i++)
		params[i].value = calib_value(&params[i], gsl_vector_get(gsl_multifit_nlinear_position(w), i));
	if (info) {
		info->cost_initial = calib_sumsq(f0);
		info->cost = calib_sumsq(gsl_multifit_nlinear_residual(w));
		info->n_residuals = n_data;
		info->iterations = (int)gsl_multifit_nlinear_niter(w);
		info->converged = status == GSL_SUCCESS;
	}
	rc = UNIAP_OK;
out:
	if (w)
		gsl_multifit_nlinear_free(w);
	if (z0)
		gsl_vector_free(z0);
	if (f0)
		gsl_vector_free(f0);
	cluster_release(&ctx.work);
	return rc;
}

uniap_code calib_apply(const struct cluster_profile *c, const struct calib_param *params, size_t n_params,
                       struct cluster_profile *out, struct uniap_err *err)
{
	size_t i;
	uniap_code rc = cluster_copy(c, out, err);

	if (rc != UNIAP_OK)
		return rc;
	for (i = 0; i < n_params; i++)
		calib_param_set(out, &params[i], params[i].value);
	rc = cluster_validate(out, err);
	if (rc != UNIAP_OK)
		cluster_release(out);
	return rc;
}

int calib_on_bound(const struct calib_param *p)
{
	double t;

	if (!(p->hi > p->lo))
		return 0;
	if (p->lo > 0 && p->value > 0)
		t = (log(p->value) - log(p->lo)) / (log(p->hi) - log(p->lo));
	else
		t = (p->value - p->lo) / (p->hi - p->lo);
	return t <= CALIB_BOUND_SHARE ? -1 : t >= 1 - CALIB_BOUND_SHARE ? 1 : 0;
}

uniap_code calib_check_bounds(const struct calib_param *params, size_t n_params, struct uniap_err *err)
{
	char list[512];
	size_t i, used = 0, n = 0;

	list[0] = '\0';
	for (i = 0; i < n_params; i++) {
		int b = calib_on_bound(&params[i]);
		int w;

		if (!b)
			continue;
		n++;
		w = snprintf(list + used, sizeof(list) - used, "%s%s at its %s bound %g (prior %g)", n > 1 ? "; " : "",
		             params[i].name, b < 0 ? "lower" : "upper", b < 0 ? params[i].lo : params[i].hi,
		             params[i].prior);
		if (w > 0 && (size_t)w < sizeof(list) - used)
			used += (size_t)w;
	}
	if (!n)
		return UNIAP_OK;
	return err_set(err, UNIAP_E_INFEASIBLE,
	               "calibration: refused: %s. A parameter pushed to a physical bound compensates for what the "
	               "cost model does not price in these runs, and its value would mislead every plan; fit fewer "
	               "parameters (--fit), add runs that pin them, or keep the fit anyway with --allow-bounds",
	               list);
}

uniap_code calib_leave_one_out(const struct cluster_profile *c, const struct calib_run *runs, size_t n_runs,
                               const struct calib_options *opt, const struct calib_param *params,
                               size_t n_params, double *loo_iteration_s, struct uniap_err *err)
{
	struct calib_param *p = NULL;
	struct cluster_profile fitted = { 0 };
	struct calib_prediction pr = { 0 };
	uniap_code rc = UNIAP_OK;
	size_t i, folds = 0, done = 0;

	if (n_params == 0 || n_params > CALIB_MAX_PARAMS)
		return err_set(err, UNIAP_E_ARG, "calibration: must fit 1 to %d parameters, got %zu", CALIB_MAX_PARAMS,
		               n_params);
	p = malloc(n_params * sizeof(*p));
	if (!p)
		return err_set(err, UNIAP_E_NOMEM, "calibration: out of memory");
	for (i = 0; i < n_runs; i++)
		folds += runs[i].iteration_s > 0;
	if (opt && opt->progress)
		opt->progress(opt->progress_ctx, 0, folds);
	for (i = 0; i < n_runs && rc == UNIAP_OK; i++) {
		loo_iteration_s[i] = 0.0;
		if (!(runs[i].iteration_s > 0))
			continue;
		if (done > 0 && opt && opt->progress)
			opt->progress(opt->progress_ctx, done, folds);
		done++;
		if ((rc = calib_check_cancel(opt, err)) != UNIAP_OK)
			break;
		memcpy(p, params, n_params * sizeof(*p));
		rc = calib_fit(c, runs, n_runs, (long)i, opt, p, n_params, NULL, err);
		if (rc == UNIAP_E_INVALID) { /* the others measured nothing */
			rc = UNIAP_OK;
			continue;
		}
		/* a fold whose fit sits on a bound predicts nothing (refused, as the whole fit would be) */
		if (rc == UNIAP_OK && !(opt && opt->allow_bounds) && calib_check_bounds(p, n_params, NULL) != UNIAP_OK)
			continue;
		if (rc == UNIAP_OK)
			rc = calib_apply(c, p, n_params, &fitted, err);
		if (rc == UNIAP_OK)
			rc = calib_predict(&fitted, &runs[i], &pr, err);
		if (rc == UNIAP_OK)
			loo_iteration_s[i] = pr.iteration_s;
		calib_prediction_release(&pr);
		cluster_release(&fitted);
	}
	if (rc == UNIAP_OK && opt && opt->progress)
		opt->progress(opt->progress_ctx, folds, folds);
	free(p);
	return rc;
}

double calib_rel_error(double predicted, double measured)
{
	return measured > 0 ? predicted / measured - 1.0 : 0.0;
}

void calib_global_init(void)
{
	gsl_set_error_handler_off();
}

/* ------------------------------------------------------- layouts to plans */

void calib_uniform_strategy(const struct calib_uniform *u, char *buf, size_t cap)
{
	/* inner to outer: TP, FSDP, DP with tp_inner; FSDP, DP, TP otherwise */
	const char *names[3];
	int degrees[3], i, n = 0;
	size_t used = 0;

	if (u->tp_inner) {
		names[0] = "tp"; degrees[0] = u->tp;
		names[1] = "fsdp"; degrees[1] = u->fsdp;
		names[2] = "dp"; degrees[2] = u->dp;
	} else {
		names[0] = "fsdp"; degrees[0] = u->fsdp;
		names[1] = "dp"; degrees[1] = u->dp;
		names[2] = "tp"; degrees[2] = u->tp;
	}
	buf[0] = '\0';
	for (i = 0; i < 3; i++) {
		int w;

		if (degrees[i] <= 1)
			continue;
		w = snprintf(buf + used, cap - used, "%s%s%d", n++ ? "." : "", names[i], degrees[i]);
		if (w < 0 || (size_t)w >= cap - used)
			return;
		used += (size_t)w;
	}
	if (n == 0)
		used = (size_t)snprintf(buf, cap, "single");
	/* the dictionary's suffixes, in its order: +sp, +epN[+etp1], +z1, +rc / +sel */
	if (u->sp && u->tp > 1 && used < cap)
		used += (size_t)snprintf(buf + used, cap - used, "+sp");
	if (u->cp > 1 && used < cap)
		used += (size_t)snprintf(buf + used, cap - used, "+cp%d", u->cp);
	if ((u->ep > 1 || (u->etp1 && u->tp > 1)) && used < cap)
		used += (size_t)snprintf(buf + used, cap - used, "+ep%d", u->ep > 1 ? u->ep : 1);
	if (u->etp1 && u->tp > 1 && used < cap)
		used += (size_t)snprintf(buf + used, cap - used, "+etp1");
	if (u->zero && u->dp > 1 && u->fsdp == 1 && used < cap)
		used += (size_t)snprintf(buf + used, cap - used, "+z1");
	if (u->recompute && used < cap)
		snprintf(buf + used, cap - used, "+rc");
	else if (u->selective && used < cap)
		snprintf(buf + used, cap - used, "+sel");
}

/* Layers per stage (counts, pp entries) for n layers: Megatron-LM's split (calib.h). */
static uniap_code calib_split(const struct calib_uniform *u, size_t n, size_t *counts, struct uniap_err *err)
{
	size_t pp = (size_t)u->pp, first = (size_t)u->first_stage_layers, last = (size_t)u->last_stage_layers;
	size_t lo = 0, hi = pp, rest, i, base, extra;

	if (pp > n)
		return err_set(err, UNIAP_E_INVALID, "uniform.pp: must be at most the model's %zu layers, got %zu", n,
		               pp);
	rest = n;
	if (first) {
		if (first > rest)
			return err_set(err, UNIAP_E_INVALID,
			               "uniform.first_stage_layers: must be at most the model's %zu layers, got %zu", n,
			               first);
		counts[lo++] = first;
		rest -= first;
	}
	if (last && lo < hi) {
		if (last > rest)
			return err_set(err, UNIAP_E_INVALID,
			               "uniform.last_stage_layers: %zu layers left after the first stage, got %zu", rest,
			               last);
		counts[--hi] = last;
		rest -= last;
	}
	if (hi > lo) {
		base = rest / (hi - lo);
		extra = rest % (hi - lo);
		if (base == 0)
			return err_set(err, UNIAP_E_INVALID,
			               "uniform.pp: %zu layers left for %zu middle stages; every stage needs one", rest,
			               hi - lo);
		for (i = lo; i < hi; i++)
			counts[i] = base + (i - lo < extra ? 1 : 0);
	} else if (rest) {
		return err_set(err, UNIAP_E_INVALID,
		               "uniform.first_stage_layers: with pp %zu the first and last stages must hold all %zu layers",
		               pp, n);
	}
	for (i = 0; i < pp; i++)
		if (counts[i] == 0)
			return err_set(err, UNIAP_E_INVALID, "uniform: stage %zu gets no layer", i);
	return UNIAP_OK;
}

/* Checks the degrees of u against devices and fills dp when it is 0. */
static uniap_code calib_degrees(struct calib_uniform *u, int devices, struct uniap_err *err)
{
	long per;

	if (u->pp < 1 || u->tp < 1 || u->fsdp < 1 || u->dp < 0)
		return err_set(err, UNIAP_E_INVALID, "uniform: pp, tp and fsdp must be >= 1 and dp >= 0, got %d, %d, %d, %d",
		               u->pp, u->tp, u->fsdp, u->dp);
	if (u->fsdp_all) {
		if (devices % ((long)u->pp * u->tp) != 0)
			return err_set(err, UNIAP_E_INVALID,
			               "uniform: pp x tp = %ld must divide the cluster's %d devices", (long)u->pp * u->tp,
			               devices);
		u->fsdp = (int)(devices / ((long)u->pp * u->tp));
		u->dp = 1;
	}
	per = (long)u->pp * u->tp * u->fsdp;
	if (u->dp == 0) {
		if (devices % per != 0)
			return err_set(err, UNIAP_E_INVALID,
			               "uniform: pp x tp = %ld must divide the cluster's %d devices", per, devices);
		u->dp = (int)(devices / per);
	}
	if (per * u->dp != devices)
		return err_set(err, UNIAP_E_INVALID,
		               "uniform: pp x tp x dp x fsdp must equal the cluster's %d devices, got %d x %d x %d x %d",
		               devices, u->pp, u->tp, u->dp, u->fsdp);
	return UNIAP_OK;
}

uniap_code calib_uniform_plan(const struct model_profile *m, int devices, long batch,
                              enum cost_schedule schedule, const struct calib_uniform *uin,
                              struct plan_doc *out, struct uniap_err *err)
{
	struct calib_uniform u = *uin;
	char name[STRATEGY_NAME_MAX];
	size_t *order = NULL, *counts = NULL, i, s, k;
	uniap_code rc;

	memset(out, 0, sizeof(*out));
	if ((rc = calib_degrees(&u, devices, err)) != UNIAP_OK)
		return rc;
	if (u.cp > 1 && u.dp % u.cp != 0)
		return err_set(err, UNIAP_E_INVALID, "--context-parallel-size: %d must divide the data-parallel ranks %d",
		               u.cp, u.dp);
	if (u.microbatches == 0) {
		/* Megatron-LM's data-parallel size leaves the context-parallel ranks out */
		long per = u.micro_batch_size * (u.dp / (u.cp > 1 ? u.cp : 1)) * u.fsdp;

		if (u.micro_batch_size < 1 || batch % per != 0)
			return err_set(err, UNIAP_E_INVALID,
			               "uniform: micro-batch size %ld x dp %d must divide the global batch %ld",
			               u.micro_batch_size, u.dp * u.fsdp, batch);
		u.microbatches = batch / per;
	}
	if (u.microbatches < 1 || batch % u.microbatches != 0)
		return err_set(err, UNIAP_E_INVALID, "uniform.microbatches: must divide the batch %ld, got %ld", batch,
		               u.microbatches);
	/* interleaved 1F1B: pp x v model chunks, split like pp x v stages (stage i of the plan is chunk
	 * i / pp of device i mod pp) */
	if (u.layers_per_chunk > 0) {
		long blocks = (long)m->n_layers - 2;

		if (blocks < 1 || blocks % ((long)u.pp * u.layers_per_chunk) != 0)
			return err_set(err, UNIAP_E_INVALID,
			               "--num-layers-per-virtual-pipeline-stage: %d x pp %d must divide the model's %ld "
			               "transformer layers", u.layers_per_chunk, u.pp, blocks);
		u.virtual_stages = (int)(blocks / ((long)u.pp * u.layers_per_chunk));
	}
	if (u.virtual_stages > 1 && u.pp < 2)
		return err_set(err, UNIAP_E_INVALID, "uniform: virtual pipeline stages need pp > 1, got pp %d", u.pp);
	if (u.virtual_stages > 1) {
		schedule = COST_INTERLEAVED;
		u.pp *= u.virtual_stages;
	}
	calib_uniform_strategy(&u, name, sizeof(name));
	order = calloc(m->n_layers ? m->n_layers : 1, sizeof(*order));
	counts = calloc((size_t)u.pp, sizeof(*counts));
	out->n_layers = m->n_layers;
	out->layer_names = calloc(m->n_layers ? m->n_layers : 1, sizeof(*out->layer_names));
	out->strategy_names = calloc(m->n_layers ? m->n_layers : 1, sizeof(*out->strategy_names));
	out->stage = calloc(m->n_layers ? m->n_layers : 1, sizeof(*out->stage));
	out->recompute = calloc(m->n_layers ? m->n_layers : 1, sizeof(*out->recompute));
	if (!order || !counts || !out->layer_names || !out->strategy_names || !out->stage || !out->recompute) {
		rc = err_set(err, UNIAP_E_NOMEM, "uniform: out of memory");
		goto out;
	}
	if ((rc = model_topo_order(m, order, err)) != UNIAP_OK ||
	    (rc = calib_split(&u, m->n_layers, counts, err)) != UNIAP_OK)
		goto out;
	out->pp = u.virtual_stages > 1 ? u.pp / u.virtual_stages : u.pp;
	out->virtual_stages = u.virtual_stages > 1 ? u.virtual_stages : 0;
	out->fp8 = u.fp8;
	out->cp = u.cp > 1 ? u.cp : 1;
	out->cp_a2a = u.cp > 1 && u.cp_a2a;
	out->microbatches = u.microbatches;
	out->microbatch_size = batch / u.microbatches;
	out->schedule = schedule;
	for (i = 0, s = 0, k = 0; i < m->n_layers; i++) {
		size_t l = order[i];

		if (k == counts[s]) {
			s++;
			k = 0;
		}
		k++;
		out->stage[l] = (int)s;
		out->recompute[l] = u.recompute;
		out->layer_names[l] = strdup(m->layers[l].name);
		out->strategy_names[l] = strdup(name);
		if (!out->layer_names[l] || !out->strategy_names[l]) {
			rc = err_set(err, UNIAP_E_NOMEM, "uniform: out of memory");
			goto out;
		}
	}
out:
	free(order);
	free(counts);
	if (rc != UNIAP_OK)
		plan_doc_release(out);
	return rc;
}

/* The Megatron-LM arguments read, and where each goes. */
enum calib_marg {
	CALIB_TP, CALIB_PP, CALIB_MBS, CALIB_GBS, CALIB_FIRST, CALIB_LAST, CALIB_RECOMPUTE, CALIB_FP8, CALIB_EP, CALIB_ETP,
	CALIB_VP, CALIB_VP_LAYERS, CALIB_CP, CALIB_CP_COMM,
	/* flags (no value) */
	CALIB_SP, CALIB_DISTOPT, CALIB_FSDP
};

static const struct {
	const char *name;
	enum calib_marg arg;
} calib_megatron_args[] = {
	{ "--tensor-model-parallel-size", CALIB_TP },
	{ "--pipeline-model-parallel-size", CALIB_PP },
	{ "--micro-batch-size", CALIB_MBS },
	{ "--global-batch-size", CALIB_GBS },
	{ "--decoder-first-pipeline-num-layers", CALIB_FIRST },
	{ "--decoder-last-pipeline-num-layers", CALIB_LAST },
	{ "--recompute-granularity", CALIB_RECOMPUTE },
	{ "--fp8-format", CALIB_FP8 }, /* e4m3 or hybrid: FP8 training (docs/cost-model.md, "FP8") */
	{ "--expert-model-parallel-size", CALIB_EP },
	{ "--expert-tensor-parallel-size", CALIB_ETP },
	{ "--virtual-pipeline-model-parallel-size", CALIB_VP },
	{ "--num-layers-per-virtual-pipeline-stage", CALIB_VP_LAYERS },
	{ "--context-parallel-size", CALIB_CP },
	{ "--cp-comm-type", CALIB_CP_COMM }, /* p2p (ring) or a2a (Ulysses) */
	{ "--sequence-parallel", CALIB_SP },
	{ "--use-distributed-optimizer", CALIB_DISTOPT },
	{ "--use-torch-fsdp2", CALIB_FSDP },
	{ "--use-megatron-fsdp", CALIB_FSDP },
};

#define CALIB_MEGATRON_TOKEN_MAX 256

/* Appends "tok" to the ignored list (buf of cap bytes, space-separated, "..." when full). */
static void calib_ignore(char *buf, size_t cap, const char *tok, size_t len)
{
	size_t used = strlen(buf);
	int w;

	if (cap == 0 || (used >= 3 && strcmp(buf + used - 3, "...") == 0))
		return;
	w = snprintf(buf + used, cap - used, "%s%.*s", used ? " " : "", (int)len, tok);
	if (w < 0 || (size_t)w >= cap - used) {
		if (cap >= 4)
			memcpy(buf + cap - 4, "...", 4);
	}
}

static uniap_code calib_megatron_int(const char *name, const char *v, long *out, struct uniap_err *err)
{
	char *end = NULL;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || !end || *end || end == v || x < 1 || x > (1L << 30))
		return err_set(err, UNIAP_E_INVALID, "%s: must be a positive integer, got \"%.64s\"", name, v);
	*out = x;
	return UNIAP_OK;
}

uniap_code calib_megatron_parse(const char *args, struct calib_uniform *u, long *global_batch, char *ignored,
                                size_t cap, struct uniap_err *err)
{
	const char *p = args;
	char tok[CALIB_MEGATRON_TOKEN_MAX], val[CALIB_MEGATRON_TOKEN_MAX];
	size_t i;

	memset(u, 0, sizeof(*u));
	u->pp = u->tp = u->fsdp = 1;
	u->micro_batch_size = 1;
	u->tp_inner = 1;
	*global_batch = 0;
	if (cap)
		ignored[0] = '\0';
	while (*p) {
		const char *start, *eq, *vs = NULL;
		size_t len, vlen = 0;
		long x = 0;
		uniap_code rc;

		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\\')
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
		len = (size_t)(p - start);
		if (len >= sizeof(tok))
			return err_set(err, UNIAP_E_INVALID, "argument \"%.32s...\" is longer than %d bytes", start,
			               CALIB_MEGATRON_TOKEN_MAX - 1);
		if (len < 3 || strncmp(start, "--", 2) != 0) {
			calib_ignore(ignored, cap, start, len);
			continue;
		}
		eq = memchr(start, '=', len);
		if (eq) {
			vs = eq + 1;
			vlen = len - (size_t)(vs - start);
			len = (size_t)(eq - start);
		} else {
			/* the value is the next token unless that is an option (a flag) */
			const char *q = p;

			while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\\')
				q++;
			if (*q && strncmp(q, "--", 2) != 0) {
				vs = q;
				while (*q && *q != ' ' && *q != '\t' && *q != '\n')
					q++;
				vlen = (size_t)(q - vs);
			}
		}
		memcpy(tok, start, len);
		tok[len] = '\0';
		for (i = 0; i < sizeof(calib_megatron_args) / sizeof(calib_megatron_args[0]); i++)
			if (strcmp(tok, calib_megatron_args[i].name) == 0)
				break;
		if (i == sizeof(calib_megatron_args) / sizeof(calib_megatron_args[0])) {
			calib_ignore(ignored, cap, start, vs ? (size_t)(vs + vlen - start) : len);
			if (vs && !eq)
				p = vs + vlen;
			continue;
		}
		if (calib_megatron_args[i].arg >= CALIB_SP) {
			/* a flag: a value after it is the next argument's business */
			if (vs && !eq)
				vs = NULL;
			switch (calib_megatron_args[i].arg) {
			case CALIB_SP: u->sp = 1; break;
			case CALIB_DISTOPT: u->zero = 1; break;
			default: u->fsdp_all = 1; break;
			}
			continue;
		}
		if (!vs)
			return err_set(err, UNIAP_E_INVALID, "%s: needs a value", tok);
		if (vlen >= sizeof(val))
			return err_set(err, UNIAP_E_INVALID, "%s: value longer than %d bytes", tok,
			               CALIB_MEGATRON_TOKEN_MAX - 1);
		memcpy(val, vs, vlen);
		val[vlen] = '\0';
		if (!eq)
			p = vs + vlen;
		if (calib_megatron_args[i].arg == CALIB_FP8) {
			u->fp8 = 1;
			continue;
		}
		if (calib_megatron_args[i].arg == CALIB_CP_COMM) {
			if (strcmp(val, "a2a") == 0)
				u->cp_a2a = 1;
			else if (strcmp(val, "p2p") != 0)
				return err_set(err, UNIAP_E_INVALID, "%s: p2p and a2a are priced, got \"%.32s\"", tok, val);
			continue;
		}
		if (calib_megatron_args[i].arg == CALIB_RECOMPUTE) {
			if (strcmp(val, "full") == 0)
				u->recompute = 1;
			else if (strcmp(val, "selective") == 0)
				u->selective = 1;
			else
				calib_ignore(ignored, cap, start, (size_t)(vs + vlen - start));
			continue;
		}
		if ((rc = calib_megatron_int(tok, val, &x, err)) != UNIAP_OK)
			return rc;
		switch (calib_megatron_args[i].arg) {
		case CALIB_TP: u->tp = (int)x; break;
		case CALIB_PP: u->pp = (int)x; break;
		case CALIB_MBS: u->micro_batch_size = x; break;
		case CALIB_GBS: *global_batch = x; break;
		case CALIB_FIRST: u->first_stage_layers = (int)x; break;
		case CALIB_LAST: u->last_stage_layers = (int)x; break;
		case CALIB_EP: u->ep = (int)x; break;
		case CALIB_ETP: u->etp1 = x == 1; break;
		case CALIB_VP: u->virtual_stages = (int)x; break;
		case CALIB_VP_LAYERS: u->layers_per_chunk = (int)x; break;
		case CALIB_CP: u->cp = (int)x; break;
		default: break;
		}
	}
	return UNIAP_OK;
}
