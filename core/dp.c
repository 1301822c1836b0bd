/*
 * dp.c - exact dynamic programs for chains in index order (dp.h).
 *
 * Notation (cost.h): A[u][k] layer time, R_u[k][l] / R'_u[k][l] the same-stage /
 * cross-stage cost of the chain edge u -> u+1, mem(u, i, k) = Mf[u][k] +
 * inflight[i] * Mm[u][k].  On a chain every stage is a block of consecutive
 * layers, only the edge that leaves a block crosses a communication stage and
 * it crosses exactly one, so
 *   TPI = S + (c - 1) * M,  S = sum of every p_i and o_j,  M = max of them.
 * Both programs keep, for each state, only the labels no other label of the
 * same state dominates; a label is dropped only when another one is at least
 * as good in every quantity the future can depend on, so the optimum survives.
 *
 * Memory sums are accumulated in layer order exactly as opt_tpi() does, so a
 * stage the DP accepts is one opt_tpi() accepts.
 *
 * Never: CBC, I/O, globals, asserts on input.
 */
#include "dp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DP_NONE SIZE_MAX

/* The read-only view both programs share. */
struct dp_inst {
	size_t n_layers, k;
	int pp;
	long c;
	const double *time_s, *mem_fixed, *mem_micro;
	const long *inflight;
	double limit;
	const struct cost_edge **chain; /* owned array of borrowed edges, [n_layers - 1]: u -> u+1 */
	int mem_binds;                  /* 0: no stage can ever exceed the limit */
	double *rem_s;                  /* owned, [n_layers + 1]: lower bound of the time still to come
	                                   after layer u (layers > u and edges >= u) */
	double deadline_s;              /* opt_clock_s() value; INFINITY when none */
	double cutoff_s;                /* prune labels whose lower bound reaches it */
	size_t cap;                     /* label cap */
	long labels;                    /* labels created (reported as nodes) */
	int cut_pruned;                 /* a label was pruned against the cutoff */
};

static double dp_mem(const struct dp_inst *d, size_t u, int stage, size_t k)
{
	return d->mem_fixed[u * d->k + k] + (double)d->inflight[stage] * d->mem_micro[u * d->k + k];
}

static void dp_inst_release(struct dp_inst *d)
{
	free(d->chain);
	free(d->rem_s);
	memset(d, 0, sizeof(*d));
}

static uniap_code dp_inst_init(struct dp_inst *d, const struct cost_candidate *cand,
                               const struct opt_options *o, struct uniap_err *err)
{
	size_t u, e, k, l, i;
	uniap_code rc = UNIAP_OK;

	memset(d, 0, sizeof(*d));
	if (!opt_is_chain(cand))
		return err_set(err, UNIAP_E_ARG, "dp: the layer graph is not a chain in index order");
	d->n_layers = cand->n_layers;
	d->k = cost_k(cand);
	d->pp = cand->pp;
	d->c = cand->microbatches;
	d->time_s = cand->time_s;
	d->mem_fixed = cand->memory_fixed_bytes;
	d->mem_micro = cand->memory_per_microbatch_bytes;
	d->inflight = cand->inflight;
	d->limit = cand->memory_limit_bytes;
	d->cap = o->dp_label_cap ? o->dp_label_cap : OPT_DP_LABEL_CAP_DEFAULT;
	d->cutoff_s = o->cutoff_tpi;
	d->deadline_s = (o->time_limit_s > 0 && isfinite(o->time_limit_s))
	                        ? opt_clock_s() + o->time_limit_s
	                        : INFINITY;
	d->chain = calloc(d->n_layers, sizeof(*d->chain));
	d->rem_s = calloc(d->n_layers + 1, sizeof(*d->rem_s));
	if (!d->chain || !d->rem_s) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	for (e = 0; e < cand->n_edges; e++)
		d->chain[cand->edges[e].from] = &cand->edges[e];
	/* rem_s[u]: least possible time of layers u+1.. and edges u.. (costs are >= 0) */
	d->rem_s[d->n_layers] = 0;
	d->rem_s[d->n_layers - 1] = 0;
	for (u = d->n_layers - 1; u-- > 0;) {
		double best_a = INFINITY, best_e = INFINITY;

		for (k = 0; k < d->k; k++)
			best_a = fmin(best_a, d->time_s[(u + 1) * d->k + k]);
		for (k = 0; k < d->k; k++)
			for (l = 0; l < d->k; l++) {
				best_e = fmin(best_e, d->chain[u]->same_stage_s[k * d->k + l]);
				best_e = fmin(best_e, d->chain[u]->cross_stage_s[k * d->k + l]);
			}
		d->rem_s[u] = d->rem_s[u + 1] + best_a + best_e;
	}
	/* memory binds unless every stage fits with every layer at its largest strategy */
	d->mem_binds = 0;
	for (i = 0; i < (size_t)d->pp && !d->mem_binds; i++) {
		double total = 0;

		for (u = 0; u < d->n_layers; u++) {
			double worst = 0;

			for (k = 0; k < d->k; k++)
				worst = fmax(worst, dp_mem(d, u, (int)i, k));
			total += worst;
		}
		if (!(total <= d->limit))
			d->mem_binds = 1;
	}
out:
	if (rc != UNIAP_OK)
		dp_inst_release(d);
	return rc;
}

static uniap_code dp_check_time(const struct dp_inst *d, struct uniap_err *err)
{
	if (isfinite(d->deadline_s) && opt_clock_s() > d->deadline_s)
		return err_set(err, UNIAP_E_TIMEOUT, "dp: time limit reached");
	return UNIAP_OK;
}

/* Lower bound of the final TPI of a partial plan ending at layer u. */
static double dp_lower_bound(const struct dp_inst *d, size_t u, double sum_s, double max_s)
{
	return sum_s + d->rem_s[u] + (double)(d->c - 1) * max_s;
}

/* Copies a found plan into out. */
static uniap_code dp_result_alloc(struct opt_result *out, size_t n, struct uniap_err *err)
{
	out->n_layers = n;
	out->stage = calloc(n, sizeof(*out->stage));
	out->strategy = calloc(n, sizeof(*out->strategy));
	if (!out->stage || !out->strategy) {
		free(out->stage);
		free(out->strategy);
		out->stage = NULL;
		out->strategy = NULL;
		return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
	}
	return UNIAP_OK;
}

/* Sets status when no plan was found: pruned against the cutoff, or none exists. */
static void dp_result_none(const struct dp_inst *d, struct opt_result *out)
{
	if (d->cut_pruned) {
		out->status = OPT_PRUNED;
		out->bound_s = d->cutoff_s;
	} else {
		out->status = OPT_INFEASIBLE;
		out->bound_s = INFINITY;
	}
	out->tpi_s = INFINITY;
	out->gap = INFINITY;
}

/* ------------------------------------------------------------ dp-chain */

/*
 * A label of dp-chain at layer u, state (stage s, strategy k of u):
 *   sum_s   every p and o so far, the open stage included
 *   max_s   max of the closed stages and communication stages
 *   open_s  time of the open stage s so far
 *   mem     memory of the open stage so far
 * The future adds the same amounts to sum_s and open_s whatever the label,
 * and TPI = sum + (c-1) max(max_s, open final, future), non-decreasing in
 * each field; memory feasibility is monotone in mem.  So a label with every
 * field <= another's dominates it.  With c == 1, max_s and open_s are
 * irrelevant and kept 0; when memory never binds, mem is kept 0.
 */
struct dpc_label {
	double sum_s, max_s, open_s, mem;
	size_t parent;
	int stage;
	size_t k;
};

struct dpc_vec {
	struct dpc_label *v;
	size_t n, cap;
};

static int dpc_push(struct dpc_vec *a, const struct dpc_label *l)
{
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 256;
		struct dpc_label *nv = realloc(a->v, nc * sizeof(*nv));

		if (!nv)
			return -1;
		a->v = nv;
		a->cap = nc;
	}
	a->v[a->n++] = *l;
	return 0;
}

static int dpc_cmp(const void *pa, const void *pb)
{
	const struct dpc_label *a = pa, *b = pb;

	if (a->sum_s != b->sum_s)
		return a->sum_s < b->sum_s ? -1 : 1;
	if (a->max_s != b->max_s)
		return a->max_s < b->max_s ? -1 : 1;
	if (a->open_s != b->open_s)
		return a->open_s < b->open_s ? -1 : 1;
	if (a->mem != b->mem)
		return a->mem < b->mem ? -1 : 1;
	/* deterministic among equal labels */
	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	return 0;
}

/* Appends the non-dominated labels of cand (sorted here) to lab. */
static int dpc_filter(struct dpc_vec *cand, struct dpc_vec *lab, size_t first)
{
	size_t i, j;

	if (cand->n > 1)
		qsort(cand->v, cand->n, sizeof(*cand->v), dpc_cmp);
	for (i = 0; i < cand->n; i++) {
		const struct dpc_label *x = &cand->v[i];
		int dominated = 0;

		/* kept labels have sum_s <= x->sum_s (sorted) */
		for (j = first; j < lab->n && !dominated; j++) {
			const struct dpc_label *y = &lab->v[j];

			dominated = y->max_s <= x->max_s && y->open_s <= x->open_s && y->mem <= x->mem;
		}
		if (!dominated && dpc_push(lab, x) != 0)
			return -1;
	}
	return 0;
}

uniap_code dp_chain_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                          struct opt_result *out, struct uniap_err *err)
{
	struct dp_inst d;
	struct dpc_vec lab = {0}, cand_v = {0};
	size_t *start = NULL; /* [(u * pp + s) * K + k] first label of the state, [.. + 1] its end */
	size_t n_states, u, k, l, i, best = DP_NONE;
	double best_tpi = INFINITY;
	int s, pp;
	uniap_code rc;

	rc = dp_inst_init(&d, cand, opts, err);
	if (rc != UNIAP_OK)
		return rc;
	pp = d.pp;
	n_states = d.n_layers * (size_t)pp * d.k;
	start = calloc(n_states + 1, sizeof(*start));
	if (!start) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	/* layer 0 is on stage 0 */
	for (k = 0; k < d.k; k++) {
		struct dpc_label x = {0};

		start[k] = lab.n;
		x.sum_s = d.time_s[k];
		x.open_s = d.c > 1 ? x.sum_s : 0;
		x.mem = dp_mem(&d, 0, 0, k);
		x.parent = DP_NONE;
		x.stage = 0;
		x.k = k;
		if (!(x.mem <= d.limit))
			continue;
		if (!d.mem_binds)
			x.mem = 0;
		if (isfinite(d.cutoff_s) && dp_lower_bound(&d, 0, x.sum_s, x.open_s) >= d.cutoff_s) {
			d.cut_pruned = 1;
			continue;
		}
		if (dpc_push(&lab, &x) != 0) {
			rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
			goto out;
		}
	}
	for (i = d.k; i <= (size_t)pp * d.k; i++)
		start[i] = lab.n;
	/* start[idx] .. start[idx + 1] bounds the labels of state idx: states are filled in index order */
	for (u = 0; u + 1 < d.n_layers; u++) {
		const struct cost_edge *e = d.chain[u];
		size_t v = u + 1, base = v * (size_t)pp * d.k;

		rc = dp_check_time(&d, err);
		if (rc != UNIAP_OK)
			goto out;
		for (s = 0; s < pp; s++) {
			for (l = 0; l < d.k; l++) {
				size_t idx = base + (size_t)s * d.k + l;
				/* stage s needs s <= v and enough layers after v for the later stages */
				int ok = (size_t)s <= v && (size_t)(pp - 1 - s) <= d.n_layers - 1 - v;

				start[idx] = lab.n;
				cand_v.n = 0;
				for (k = 0; ok && k < d.k; k++) {
					int from;

					for (from = s - 1; from <= s; from++) {
						size_t j, pidx;

						if (from < 0)
							continue;
						pidx = (u * (size_t)pp + (size_t)from) * d.k + k;
						for (j = start[pidx]; j < start[pidx + 1]; j++) {
							const struct dpc_label *p = &lab.v[j];
							struct dpc_label x;
							double a = d.time_s[v * d.k + l];
							double m = dp_mem(&d, v, s, l);

							x.parent = j;
							x.stage = s;
							x.k = l;
							if (from == s) {
								double r = e->same_stage_s[k * d.k + l];

								x.sum_s = p->sum_s + r + a;
								x.max_s = p->max_s;
								x.open_s = d.c > 1 ? p->open_s + r + a : 0;
								x.mem = p->mem + m;
							} else {
								double r = e->cross_stage_s[k * d.k + l];

								x.sum_s = p->sum_s + r + a;
								x.max_s = d.c > 1 ? fmax(fmax(p->max_s, p->open_s), r) : 0;
								x.open_s = d.c > 1 ? a : 0;
								x.mem = m;
							}
							if (d.mem_binds && !(x.mem <= d.limit))
								continue;
							if (!d.mem_binds)
								x.mem = 0;
							if (isfinite(d.cutoff_s) &&
							    dp_lower_bound(&d, v, x.sum_s, fmax(x.max_s, x.open_s)) >=
							            d.cutoff_s) {
								d.cut_pruned = 1;
								continue;
							}
							if (dpc_push(&cand_v, &x) != 0) {
								rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
								goto out;
							}
						}
					}
				}
				d.labels += (long)cand_v.n;
				if (lab.n + cand_v.n > d.cap) {
					rc = err_set(err, UNIAP_E_LIMIT, "dp-chain: more than %zu labels", d.cap);
					goto out;
				}
				if (dpc_filter(&cand_v, &lab, lab.n) != 0) {
					rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
					goto out;
				}
			}
		}
		start[base + (size_t)pp * d.k] = lab.n;
	}
	/* the last layer is on the last stage */
	u = d.n_layers - 1;
	for (k = 0; k < d.k; k++) {
		size_t idx = (u * (size_t)pp + (size_t)(pp - 1)) * d.k + k, j;

		if (u < (size_t)(pp - 1))
			break;
		for (j = start[idx]; j < start[idx + 1]; j++) {
			const struct dpc_label *x = &lab.v[j];
			double t = x->sum_s + (double)(d.c - 1) * fmax(x->max_s, x->open_s);

			if (t < best_tpi) {
				best_tpi = t;
				best = j;
			}
		}
	}
	out->method = OPT_METHOD_DP_CHAIN;
	out->nodes = d.labels;
	if (best == DP_NONE || !(best_tpi < d.cutoff_s)) {
		if (best != DP_NONE)
			d.cut_pruned = 1;
		dp_result_none(&d, out);
		goto out;
	}
	rc = dp_result_alloc(out, d.n_layers, err);
	if (rc != UNIAP_OK)
		goto out;
	for (i = best, u = d.n_layers; i != DP_NONE; i = lab.v[i].parent) {
		u--;
		out->stage[u] = lab.v[i].stage;
		out->strategy[u] = lab.v[i].k;
	}
	out->status = OPT_OPTIMAL;
	out->gap = 0;
	out->bound_s = best_tpi;
out:
	free(start);
	free(lab.v);
	free(cand_v.v);
	dp_inst_release(&d);
	return rc;
}

/* ------------------------------------------------------------ dp-stages */

/*
 * Block table: for the stage's inflight value, blk[((a * L) + b) * K*K + f*K + l]
 * is the least time p of a stage made of layers a..b whose first layer uses
 * strategy f and last uses l, with the stage's memory within the limit
 * (INFINITY when no such choice fits).  Exact: inside the block, labels
 * (time, memory) per (layer, strategy) keep every Pareto-optimal pair, and a
 * stage contributes to the TPI only through p, in which TPI is non-decreasing,
 * so its least feasible p is all the outer DP needs.
 */
struct dps_tm {
	double t, m;
	size_t parent; /* index into the trace array, or DP_NONE */
	size_t k;
};

struct dps_tmvec {
	struct dps_tm *v;
	size_t n, cap;
};

static int dps_tm_push(struct dps_tmvec *a, const struct dps_tm *x)
{
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 64;
		struct dps_tm *nv = realloc(a->v, nc * sizeof(*nv));

		if (!nv)
			return -1;
		a->v = nv;
		a->cap = nc;
	}
	a->v[a->n++] = *x;
	return 0;
}

static int dps_tm_cmp(const void *pa, const void *pb)
{
	const struct dps_tm *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->m != b->m)
		return a->m < b->m ? -1 : 1;
	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	return 0;
}

/* Keeps the (time, memory) Pareto front of x[0..n) in place, sorted by time; returns its size. */
static size_t dps_tm_front(struct dps_tm *x, size_t n)
{
	size_t i, w = 0;
	double best_m = INFINITY;

	if (n > 1)
		qsort(x, n, sizeof(*x), dps_tm_cmp);
	for (i = 0; i < n; i++)
		if (x[i].m < best_m) {
			best_m = x[i].m;
			x[w++] = x[i];
		}
	return w;
}

/*
 * The block DP from layer a with first strategy f on a stage holding `inflight`
 * micro-batches, up to layer b_end.  Fills row[(b - a) * K*K ... ] style entries
 * through the callback-free form: blk_row[(b * K + l)] = least time of a..b ending
 * in l, for b in [a, b_end].  When trace is not NULL every label is kept there
 * with its parent, and fronts[b*K + l] is its first label (the least time).
 */
struct dps_block {
	struct dps_tmvec cur[2]; /* per strategy fronts, flattened: cur[x].v with offsets */
	size_t *off[2];          /* [K + 1] */
	struct dps_tmvec tmp;
	struct dps_tmvec trace;
	size_t *trace_first;     /* [(b - a) * K + l]: first trace index of the front of (b, l) */
};

static void dps_block_release(struct dps_block *bk)
{
	int x;

	for (x = 0; x < 2; x++) {
		free(bk->cur[x].v);
		free(bk->off[x]);
	}
	free(bk->tmp.v);
	free(bk->trace.v);
	free(bk->trace_first);
	memset(bk, 0, sizeof(*bk));
}

static uniap_code dps_block_run(struct dp_inst *d, struct dps_block *bk, size_t a, size_t f, int stage,
                                size_t b_end, double *row, int trace, struct uniap_err *err)
{
	size_t K = d->k, b, k, l, j, x = 0;
	struct dps_tm first;

	if (!bk->off[0]) {
		bk->off[0] = calloc(K + 1, sizeof(size_t));
		bk->off[1] = calloc(K + 1, sizeof(size_t));
		if (!bk->off[0] || !bk->off[1])
			return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
	}
	if (trace) {
		free(bk->trace_first);
		bk->trace_first = calloc((b_end - a + 1) * K, sizeof(size_t));
		if (!bk->trace_first)
			return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		bk->trace.n = 0;
	}
	for (j = 0; j < (b_end - a + 1) * K; j++)
		row[j] = INFINITY;
	bk->cur[0].n = 0;
	for (k = 0; k <= K; k++)
		bk->off[0][k] = 0;
	first.t = d->time_s[a * K + f];
	first.m = dp_mem(d, a, stage, f);
	first.parent = DP_NONE;
	first.k = f;
	if (!(first.m <= d->limit))
		return UNIAP_OK;
	if (!d->mem_binds)
		first.m = 0;
	if (trace) {
		bk->trace_first[f] = 0;
		if (dps_tm_push(&bk->trace, &first) != 0)
			return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		first.parent = 0;
	}
	if (dps_tm_push(&bk->cur[0], &first) != 0)
		return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
	for (k = f + 1; k <= K; k++)
		bk->off[0][k] = 1;
	row[f] = first.t;
	d->labels++;
	for (b = a; b < b_end; b++) {
		const struct cost_edge *e = d->chain[b];
		struct dps_tmvec *src = &bk->cur[x], *dst = &bk->cur[1 - x];
		size_t *so = bk->off[x], *dof = bk->off[1 - x];

		if (src->n == 0)
			break;
		if ((size_t)src->n > d->cap)
			return err_set(err, UNIAP_E_LIMIT, "dp-stages: more than %zu labels in a block",
			               d->cap);
		dst->n = 0;
		for (l = 0; l < K; l++) {
			double a_t = d->time_s[(b + 1) * K + l];
			double m = dp_mem(d, b + 1, stage, l);
			size_t from = dst->n, w;

			dof[l] = from;
			bk->tmp.n = 0;
			for (k = 0; k < K; k++) {
				double r = e->same_stage_s[k * K + l];

				for (j = so[k]; j < so[k + 1]; j++) {
					struct dps_tm y;

					y.t = src->v[j].t + r + a_t;
					y.m = d->mem_binds ? src->v[j].m + m : 0;
					y.k = l;
					y.parent = trace ? src->v[j].parent : j;
					if (!(y.m <= d->limit))
						continue;
					if (!d->mem_binds && bk->tmp.n > 0) {
						/* one dimension: keep the least time only */
						if (y.t < bk->tmp.v[0].t)
							bk->tmp.v[0] = y;
						continue;
					}
					if (dps_tm_push(&bk->tmp, &y) != 0)
						return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
				}
			}
			d->labels += (long)bk->tmp.n;
			w = dps_tm_front(bk->tmp.v, bk->tmp.n);
			if (trace)
				bk->trace_first[(b + 1 - a) * K + l] = bk->trace.n;
			for (j = 0; j < w; j++) {
				struct dps_tm y = bk->tmp.v[j];

				if (trace) {
					if (dps_tm_push(&bk->trace, &y) != 0)
						return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
					y.parent = bk->trace.n - 1; /* the next layer's labels point here */
				}
				if (dps_tm_push(dst, &y) != 0)
					return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
			}
			if (w > 0)
				row[(b + 1 - a) * K + l] = bk->tmp.v[0].t;
		}
		dof[K] = dst->n;
		x = 1 - x;
	}
	return UNIAP_OK;
}

/*
 * Outer label at state (stage s, last layer b of stage s, strategy k of b):
 *   sum_s every p and o up to stage s; max_s their max.
 * TPI = sum + (c-1) max is non-decreasing in both and the future does not
 * depend on them, so (sum, max) Pareto fronts are exact.
 */
struct dps_label {
	double sum_s, max_s;
	size_t parent;
	size_t a;  /* first layer of the stage */
	size_t f;  /* strategy of layer a */
	size_t b;  /* last layer of the stage */
	size_t k;  /* strategy of layer b */
};

struct dps_vec {
	struct dps_label *v;
	size_t n, cap;
};

static int dps_push(struct dps_vec *a, const struct dps_label *x)
{
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 256;
		struct dps_label *nv = realloc(a->v, nc * sizeof(*nv));

		if (!nv)
			return -1;
		a->v = nv;
		a->cap = nc;
	}
	a->v[a->n++] = *x;
	return 0;
}

static int dps_cmp(const void *pa, const void *pb)
{
	const struct dps_label *a = pa, *b = pb;

	if (a->sum_s != b->sum_s)
		return a->sum_s < b->sum_s ? -1 : 1;
	if (a->max_s != b->max_s)
		return a->max_s < b->max_s ? -1 : 1;
	if (a->parent != b->parent)
		return a->parent < b->parent ? -1 : 1;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	if (a->f != b->f)
		return a->f < b->f ? -1 : 1;
	return 0;
}

/* The block table of one stage: rows for every first layer a in [a_lo, a_hi]. */
struct dps_table {
	double *t;     /* [(a * L + b) * K*K + f*K + l] */
	long inflight; /* the inflight value the rows were computed for; -1: none */
	unsigned char *done; /* [L] row a computed */
};

static uniap_code dps_table_fill(struct dp_inst *d, struct dps_table *tb, struct dps_block *bk, int stage,
                                 size_t a_lo, size_t a_hi, double *row, struct uniap_err *err)
{
	size_t L = d->n_layers, K = d->k, a, f, b, l;
	uniap_code rc;

	if (tb->inflight != d->inflight[stage]) {
		memset(tb->done, 0, L);
		tb->inflight = d->inflight[stage];
	}
	for (a = a_lo; a <= a_hi; a++) {
		if (tb->done[a])
			continue;
		rc = dp_check_time(d, err);
		if (rc != UNIAP_OK)
			return rc;
		for (f = 0; f < K; f++) {
			/* rows are always computed to the last layer so later stages can reuse them */
			rc = dps_block_run(d, bk, a, f, stage, L - 1, row, 0, err);
			if (rc != UNIAP_OK)
				return rc;
			for (b = a; b < L; b++)
				for (l = 0; l < K; l++)
					tb->t[(a * L + b) * K * K + f * K + l] = row[(b - a) * K + l];
		}
		tb->done[a] = 1;
	}
	return UNIAP_OK;
}

uniap_code dp_stages_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                           struct opt_result *out, struct uniap_err *err)
{
	struct dp_inst d;
	struct dps_vec lab = {0}, cv = {0};
	struct dps_table tb = {0};
	struct dps_block bk = {0};
	double *row = NULL;
	size_t *start = NULL; /* [(s * L + b) * K + k] first label of the state, [.. + 1] its end */
	size_t L, K, n_states, b, k, f, a, j, best = DP_NONE;
	double best_tpi = INFINITY, cm = 0;
	int s, pp;
	uniap_code rc;

	rc = dp_inst_init(&d, cand, opts, err);
	if (rc != UNIAP_OK)
		return rc;
	L = d.n_layers;
	K = d.k;
	pp = d.pp;
	cm = (double)(d.c - 1);
	if ((double)L * L * K * K > (double)d.cap * 8 || (double)L * L * K * K > 1e9) {
		rc = err_set(err, UNIAP_E_LIMIT, "dp-stages: block table of %zu x %zu x %zu x %zu too big",
		             L, L, K, K);
		goto out;
	}
	n_states = (size_t)pp * L * K;
	start = calloc(n_states + 1, sizeof(*start));
	tb.t = malloc(L * L * K * K * sizeof(*tb.t));
	tb.done = calloc(L, 1);
	row = malloc(L * K * sizeof(*row));
	if (!start || !tb.t || !tb.done || !row) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	tb.inflight = -1;
	for (s = 0; s < pp; s++) {
		/* stage s is layers a..b with s <= a, b <= L - pp + s */
		size_t a_lo = (size_t)s, b_hi = L - (size_t)pp + (size_t)s;

		rc = dps_table_fill(&d, &tb, &bk, s, a_lo, s == 0 ? 0 : b_hi, row, err);
		if (rc != UNIAP_OK)
			goto out;
		for (b = 0; b < L; b++)
			for (k = 0; k < K; k++) {
				size_t idx = ((size_t)s * L + b) * K + k;

				start[idx] = lab.n;
				if (b < a_lo || b > b_hi)
					continue;
				rc = dp_check_time(&d, err);
				if (rc != UNIAP_OK)
					goto out;
				cv.n = 0;
				if (s == 0) {
					for (f = 0; f < K; f++) {
						double t = tb.t[(0 * L + b) * K * K + f * K + k];
						struct dps_label x;

						if (!isfinite(t))
							continue;
						x.sum_s = t;
						x.max_s = d.c > 1 ? t : 0;
						x.parent = DP_NONE;
						x.a = 0;
						x.f = f;
						x.b = b;
						x.k = k;
						if (isfinite(d.cutoff_s) &&
						    dp_lower_bound(&d, b, x.sum_s, x.max_s) >= d.cutoff_s) {
							d.cut_pruned = 1;
							continue;
						}
						if (dps_push(&cv, &x) != 0) {
							rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
							goto out;
						}
					}
				} else {
					size_t pb;

					/* the previous stage ends at pb, this one is pb+1 .. b */
					for (pb = (size_t)s - 1; pb < b; pb++) {
						const struct cost_edge *e = d.chain[pb];

						a = pb + 1;
						for (f = 0; f < K; f++) {
							double t = tb.t[(a * L + b) * K * K + f * K + k];
							size_t pk;

							if (!isfinite(t))
								continue;
							for (pk = 0; pk < K; pk++) {
								size_t pidx = ((size_t)(s - 1) * L + pb) * K + pk;
								double r = e->cross_stage_s[pk * K + f];

								for (j = start[pidx]; j < start[pidx + 1]; j++) {
									const struct dps_label *p = &lab.v[j];
									struct dps_label x;

									x.sum_s = p->sum_s + r + t;
									x.max_s = d.c > 1 ? fmax(p->max_s, fmax(r, t)) : 0;
									x.parent = j;
									x.a = a;
									x.f = f;
									x.b = b;
									x.k = k;
									if (isfinite(d.cutoff_s) &&
									    dp_lower_bound(&d, b, x.sum_s, x.max_s) >=
									            d.cutoff_s) {
										d.cut_pruned = 1;
										continue;
									}
									if (dps_push(&cv, &x) != 0) {
										rc = err_set(err, UNIAP_E_NOMEM,
										             "dp: out of memory");
										goto out;
									}
								}
							}
						}
					}
				}
				d.labels += (long)cv.n;
				if (cv.n > 1)
					qsort(cv.v, cv.n, sizeof(*cv.v), dps_cmp);
				{
					double best_m = INFINITY;
					size_t i;

					for (i = 0; i < cv.n; i++) {
						/* sorted by sum: keep a label only if its max is strictly smaller */
						if (i > 0 && !(cv.v[i].max_s < best_m))
							continue;
						best_m = cv.v[i].max_s;
						if (lab.n + 1 > d.cap) {
							rc = err_set(err, UNIAP_E_LIMIT,
							             "dp-stages: more than %zu labels", d.cap);
							goto out;
						}
						if (dps_push(&lab, &cv.v[i]) != 0) {
							rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
							goto out;
						}
					}
				}
			}
		start[((size_t)s * L + L - 1) * K + K] = lab.n;
	}
	for (k = 0; k < K; k++) {
		size_t idx = ((size_t)(pp - 1) * L + L - 1) * K + k;

		for (j = start[idx]; j < start[idx + 1]; j++) {
			double t = lab.v[j].sum_s + cm * lab.v[j].max_s;

			if (t < best_tpi) {
				best_tpi = t;
				best = j;
			}
		}
	}
	out->method = OPT_METHOD_DP_STAGES;
	if (best == DP_NONE || !(best_tpi < d.cutoff_s)) {
		if (best != DP_NONE)
			d.cut_pruned = 1;
		out->nodes = d.labels;
		dp_result_none(&d, out);
		goto out;
	}
	rc = dp_result_alloc(out, L, err);
	if (rc != UNIAP_OK)
		goto out;
	/* rebuild each stage's strategies by re-running its block DP with a trace */
	for (j = best, s = pp - 1; j != DP_NONE; j = lab.v[j].parent, s--) {
		const struct dps_label *x = &lab.v[j];
		size_t t_idx, u;

		if (s < 0) {
			rc = err_set(err, UNIAP_E_INTERNAL, "dp-stages: trace longer than pp");
			goto out;
		}
		rc = dps_block_run(&d, &bk, x->a, x->f, s, x->b, row, 1, err);
		if (rc != UNIAP_OK)
			goto out;
		t_idx = bk.trace_first[(x->b - x->a) * K + x->k];
		if (t_idx >= bk.trace.n || bk.trace.v[t_idx].k != x->k) {
			rc = err_set(err, UNIAP_E_INTERNAL, "dp-stages: block trace lost");
			goto out;
		}
		for (u = x->b + 1; u-- > x->a;) {
			const struct dps_tm *y = &bk.trace.v[t_idx];

			out->stage[u] = s;
			out->strategy[u] = y->k;
			if (u > x->a) {
				/* a traced label's parent is the trace index of the previous layer's label */
				t_idx = y->parent;
				if (t_idx >= bk.trace.n) {
					rc = err_set(err, UNIAP_E_INTERNAL, "dp-stages: block trace broken");
					goto out;
				}
			}
		}
	}
	out->nodes = d.labels;
	out->status = OPT_OPTIMAL;
	out->gap = 0;
	out->bound_s = best_tpi;
out:
	if (rc != UNIAP_OK) {
		free(out->stage);
		free(out->strategy);
		out->stage = NULL;
		out->strategy = NULL;
	}
	free(start);
	free(lab.v);
	free(cv.v);
	free(tb.t);
	free(tb.done);
	free(row);
	dps_block_release(&bk);
	dp_inst_release(&d);
	return rc;
}
