/*
 * dp_chain.c - dp-chain (dp.h, dp_int.h): one layer at a time over
 * (stage, layer, strategy) with Pareto labels, exact or with a beam; and the
 * driver that every label DP runs under (the beam incumbent, then the exact
 * program bounded by it).  Uses dp_inst.c.
 *
 * Never: CBC, I/O, globals, asserts on input.
 */
#include "dp_int.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ dp-chain */

/*
 * A label of dp-chain at layer u, state (stage s, strategy k of u):
 *   sum_s   every p and o so far, the open stage included
 *   max_s   max of the closed stages' cycles (receive, compute, send)
 *   open_s  the open stage's cycle so far: its receive and its layers
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

/*
 * Appends the non-dominated labels of cand (sorted here) to lab.  y dominates
 * x when y.mem <= x.mem and y.sum + cm D <= x.sum, D the most by which y's max
 * or open exceeds x's (0 if neither does): the future adds the same to both,
 * so y's final bottleneck is at most x's + D and its TPI at most x's.  cm = c - 1.
 */
static int dpc_filter(struct dpc_vec *cand, struct dpc_vec *lab, size_t first, double cm)
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

			double dy = y->max_s - x->max_s;

			if (y->open_s - x->open_s > dy)
				dy = y->open_s - x->open_s;
			dominated = y->mem <= x->mem && y->sum_s + (dy > 0 ? cm * dy : 0) <= x->sum_s;
		}
		if (!dominated && dpc_push(lab, x) != 0)
			return -1;
	}
	return 0;
}

/*
 * The beam's pick from the candidate labels of one state (cand, unsorted):
 * the least-memory one, then the beam - 1 least by dp_beam_key plus lambda *
 * memory, appended to lab; first on ties, so the pick is deterministic.
 * Linear in cand (the exact program's sort and dominance filter are not
 * needed: the beam keeps a handful whatever they are).
 */
static int dpc_beam_pick(const struct dp_inst *d, struct dpc_vec *cand, struct dpc_vec *lab, size_t u,
                         int s)
{
	size_t i, j, n = cand->n, pick;

	if (n == 0)
		return 0;
	pick = 0;
	for (i = 1; i < n; i++)
		if (cand->v[i].mem < cand->v[pick].mem)
			pick = i;
	for (j = 0; j < d->beam && j < n; j++) {
		struct dpc_label t;
		double kb = INFINITY;

		if (j > 0) {
			pick = j;
			for (i = j; i < n; i++) {
				const struct dpc_label *x = &cand->v[i];
				double kx = dp_beam_key(d, u, d->pp - s, x->sum_s, x->max_s, x->open_s) +
				            d->lambda * x->mem;

				if (kx < kb) {
					kb = kx;
					pick = i;
				}
			}
		}
		/* move the pick to position j; cand[j..) are the ones not yet taken */
		t = cand->v[j];
		cand->v[j] = cand->v[pick];
		cand->v[pick] = t;
		if (dpc_push(lab, &cand->v[j]) != 0)
			return -1;
	}
	return 0;
}

/*
 * dp-chain over d (exact when d->beam == 0).  On return *found says whether a
 * plan was found; then stage/strategy (caller-owned, n_layers) hold the best
 * one and *tpi_s its DP value.
 */
uniap_code dpc_run(struct dp_inst *d, int *stage_out, size_t *strategy_out, double *tpi_s,
                          int *found, struct uniap_err *err)
{
	struct dpc_vec lab = {0}, cand_v = {0};
	size_t *start = NULL; /* [(u * pp + s) * K + k] first label of the state, [.. + 1] its end */
	size_t n_states, u, k, l, i, best = DP_NONE, K = d->k;
	double best_tpi = INFINITY, cm = (double)(d->c - 1);
	int s, pp = d->pp;
	/* with neither an incumbent nor a cutoff no bound can prune */
	int bounded = isfinite(d->ub_s) || isfinite(d->cutoff_s);
	uniap_code rc = UNIAP_OK;

	*found = 0;
	*tpi_s = INFINITY;
	n_states = d->n_layers * (size_t)pp * K; /* within the cap: dp_check_caps */
	start = calloc(n_states + 1, sizeof(*start));
	if (!start) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	/* layer 0 is on stage 0; states are filled in index order, so start[idx + 1] ends state idx */
	for (k = 0; k < K; k++) {
		struct dpc_label x = {0};

		start[k] = lab.n;
		x.sum_s = d->time_s[k];
		x.open_s = d->c > 1 ? x.sum_s : 0;
		x.mem = dp_mem(d, 0, 0, k);
		x.parent = DP_NONE;
		x.stage = 0;
		x.k = k;
		if (!(x.mem <= d->limit))
			continue;
		if (!d->mem_binds)
			x.mem = 0;
		if (dp_prune(d, dp_lower_bound(d, 0, pp, x.sum_s, 0, x.open_s, x.mem)))
			continue;
		if (dpc_push(&lab, &x) != 0) {
			rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
			goto out;
		}
	}
	for (i = K; i <= (size_t)pp * K; i++)
		start[i] = lab.n;
	for (u = 0; u + 1 < d->n_layers; u++) {
		const struct cost_edge *e = d->chain[u];
		size_t v = u + 1, base = v * (size_t)pp * K;

		rc = dp_check_time(d, err);
		if (rc != UNIAP_OK)
			goto out;
		for (s = 0; s < pp; s++) {
			/* stage s needs s <= v and enough layers after v for the later stages */
			int ok = (size_t)s <= v && (size_t)(pp - 1 - s) <= d->n_layers - 1 - v;

			if (ok && s > 0 && (rc = dp_check_time(d, err)) != UNIAP_OK)
				goto out;

			for (l = 0; l < K; l++) {
				size_t idx = base + (size_t)s * K + l, first;
				double a = d->time_s[v * K + l];
				double m = dp_mem(d, v, s, l);

				start[idx] = lab.n;
				cand_v.n = 0;
				for (k = 0; ok && k < K; k++) {
					int from;

					for (from = s - 1; from <= s; from++) {
						size_t j, pidx;

						if (from < 0)
							continue;
						pidx = (u * (size_t)pp + (size_t)from) * K + k;
						for (j = start[pidx]; j < start[pidx + 1]; j++) {
							const struct dpc_label *p = &lab.v[j];
							struct dpc_label x;

							x.parent = j;
							x.stage = s;
							x.k = l;
							if (from == s) {
								double r = e->same_stage_s[k * K + l];

								x.sum_s = p->sum_s + r + a;
								x.max_s = p->max_s;
								x.open_s = d->c > 1 ? p->open_s + r + a : 0;
								x.mem = p->mem + m;
							} else {
								double r = e->cross_stage_s[k * K + l];

								/* the closed stage's cycle ends with its send, the new one's
								 * starts with its receive (cost.h: transfers block) */
								x.sum_s = p->sum_s + r + a;
								x.max_s = d->c > 1 ? fmax(p->max_s, p->open_s + r) : 0;
								x.open_s = d->c > 1 ? r + a : 0;
								x.mem = m;
							}
							if (d->mem_binds && !(x.mem <= d->limit))
								continue;
							if (!d->mem_binds)
								x.mem = 0;
							if (bounded &&
							    dp_prune(d, dp_lower_bound(d, v, pp - s, x.sum_s, x.max_s,
							                               x.open_s, x.mem)))
								continue;
							if (dpc_push(&cand_v, &x) != 0) {
								rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
								goto out;
							}
						}
					}
				}
				d->labels += (long)cand_v.n;
				if (lab.n + cand_v.n > d->cap) {
					rc = err_set(err, UNIAP_E_LIMIT, "dp-chain: more than %zu labels", d->cap);
					goto out;
				}
				first = lab.n;
				if (d->beam ? dpc_beam_pick(d, &cand_v, &lab, v, s)
				            : dpc_filter(&cand_v, &lab, first, (double)(d->c - 1))) {
					rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
					goto out;
				}
			}
		}
		start[base + (size_t)pp * K] = lab.n;
	}
	/* the last layer is on the last stage */
	u = d->n_layers - 1;
	for (k = 0; k < K && u >= (size_t)(pp - 1); k++) {
		size_t idx = (u * (size_t)pp + (size_t)(pp - 1)) * K + k, j;

		for (j = start[idx]; j < start[idx + 1]; j++) {
			const struct dpc_label *x = &lab.v[j];
			double t = x->sum_s + cm * fmax(x->max_s, x->open_s);

			if (t < best_tpi) {
				best_tpi = t;
				best = j;
			}
		}
	}
	if (best == DP_NONE || !(best_tpi < d->cutoff_s)) {
		if (best != DP_NONE)
			d->cut_pruned = 1;
		goto out;
	}
	for (i = best, u = d->n_layers; i != DP_NONE && u > 0; i = lab.v[i].parent) {
		u--;
		stage_out[u] = lab.v[i].stage;
		strategy_out[u] = lab.v[i].k;
	}
	*found = 1;
	*tpi_s = best_tpi;
out:
	free(start);
	free(lab.v);
	free(cand_v.v);
	return rc;
}

/* ------------------------------------------------------------ driver (dp_int.h) */

/*
 * The incumbent: dp-chain with a beam, once without a memory price and, when
 * memory binds, for a sweep of prices around (mean layer time) / (memory
 * budget of one layer), then around the best; keeps the plan with the least
 * audit TPI.  *found = 0 when no run found a plan.
 */
static uniap_code dp_incumbent(struct dp_inst *d, int *stage, size_t *strategy, double *tpi_s, int *found,
                               struct uniap_err *err)
{
	size_t n = d->n_layers, u, k;
	int *st = calloc(n, sizeof(int)), j, best_j = 0, pass;
	size_t *sk = calloc(n, sizeof(size_t));
	double mean_t = 0, per_layer_mem, lambda0, t;
	int f;
	uniap_code rc = UNIAP_OK;

	*found = 0;
	*tpi_s = INFINITY;
	if (!st || !sk) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	for (u = 0; u < n; u++) {
		double m = INFINITY;

		for (k = 0; k < d->k; k++)
			m = fmin(m, d->time_s[u * d->k + k]);
		mean_t += m / (double)n;
	}
	per_layer_mem = d->limit / ceil((double)n / d->pp);
	lambda0 = mean_t / fmax(per_layer_mem, 1.0);
	d->beam = DP_BEAM;
	for (pass = 0; pass < 2; pass++) {
		int lo = pass == 0 ? -7 : best_j - 1, hi = pass == 0 ? 7 : best_j + 1;

		if (!d->mem_binds)
			lo = hi = 0;
		for (j = lo; j <= hi; j += pass == 0 ? 2 : 1) {
			if (pass == 1 && (j == best_j || j == best_j - 2 || j == best_j + 2))
				continue;
			d->lambda = d->mem_binds ? lambda0 * ldexp(1.0, j) : 0;
			rc = dpc_run(d, st, sk, &t, &f, err);
			if (rc == UNIAP_E_TIMEOUT && *found) {
				/* out of time: the best plan of the passes done */
				err_clear(err);
				rc = UNIAP_OK;
				d->timed_out = 1;
				goto out;
			}
			if (rc != UNIAP_OK)
				goto out;
			if (!f)
				continue;
			t = opt_tpi(d->cand, st, sk);
			if (t < *tpi_s) {
				*tpi_s = t;
				*found = 1;
				best_j = j;
				memcpy(stage, st, n * sizeof(int));
				memcpy(strategy, sk, n * sizeof(size_t));
			}
		}
		if (!d->mem_binds)
			break;
	}
out:
	d->beam = 0;
	d->lambda = 0;
	free(st);
	free(sk);
	return rc;
}

uniap_code dp_drive(const struct cost_candidate *cand, const struct opt_options *opts,
                    struct opt_result *out, dp_exact_fn exact, int stages, const char *method,
                    struct uniap_err *err)
{
	struct dp_inst d;
	size_t n = cand->n_layers;
	int *st0 = NULL, *st1 = NULL, found0 = 0, found1 = 0, use1;
	size_t *sk0 = NULL, *sk1 = NULL;
	double t0 = INFINITY, t1 = INFINITY;
	uniap_code rc;

	rc = dp_inst_init(&d, cand, opts, err);
	if (rc != UNIAP_OK)
		return rc;
	out->method = method;
	st0 = calloc(n, sizeof(int));
	st1 = calloc(n, sizeof(int));
	sk0 = calloc(n, sizeof(size_t));
	sk1 = calloc(n, sizeof(size_t));
	if (!st0 || !st1 || !sk0 || !sk1) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	/* a program over its size caps says so before the incumbent is spent on it */
	if ((rc = dp_check_caps(&d, stages, err)) != UNIAP_OK)
		goto out;
	if (!opts->dp_no_incumbent) {
		/* out of time with a plan, it returns OK with d.timed_out set */
		rc = dp_incumbent(&d, st0, sk0, &t0, &found0, err);
		if (rc == UNIAP_E_TIMEOUT)
			goto no_plan;
		if (rc != UNIAP_OK)
			goto out;
	}
	/* the incumbent's audit TPI bounds the search */
	d.ub_s = found0 ? t0 : INFINITY;
	rc = d.timed_out ? err_set(err, UNIAP_E_TIMEOUT, "dp: time limit reached")
	                 : exact(&d, st1, sk1, &t1, &found1, err);
	if (rc == UNIAP_E_TIMEOUT && found0) {
		/* anytime: the incumbent, with the bound every plan has */
		out->n_layers = n;
		out->stage = st0;
		out->strategy = sk0;
		st0 = NULL;
		sk0 = NULL;
		out->tpi_s = opt_tpi(cand, out->stage, out->strategy);
		out->bound_s = fmin(dp_root_bound(&d), out->tpi_s);
		out->status = OPT_FEASIBLE;
		out->gap = out->tpi_s > 0 ? (out->tpi_s - out->bound_s) / out->tpi_s : 0;
		out->nodes = d.labels;
		snprintf(out->note, sizeof(out->note), "%s: time limit reached; the beam's plan", method);
		err_clear(err);
		rc = UNIAP_OK;
		goto out;
	}
	if (rc == UNIAP_E_TIMEOUT) {
no_plan:
		/* out of time before the beam had a plan: no plan, but the bound every plan has
		 * holds (the instance's bound tables are complete once it is initialised) */
		out->status = OPT_UNKNOWN;
		out->bound_s = dp_root_bound(&d);
		out->tpi_s = INFINITY;
		out->gap = INFINITY;
		out->nodes = d.labels;
		snprintf(out->note, sizeof(out->note), "%s: time limit reached before a plan; the bound holds",
		         method);
		err_clear(err);
		rc = UNIAP_OK;
		goto out;
	}
	if (rc != UNIAP_OK)
		goto out;
	if (found1)
		t1 = opt_tpi(cand, st1, sk1);
	use1 = found1 && isfinite(t1) && (!found0 || t1 <= t0);
	out->nodes = d.labels;
	if (!use1 && !found0) {
		if (d.cut_pruned) {
			out->status = OPT_PRUNED;
			out->bound_s = d.cutoff_s;
		} else {
			out->status = OPT_INFEASIBLE;
			out->bound_s = INFINITY;
		}
		out->tpi_s = INFINITY;
		out->gap = INFINITY;
		goto out;
	}
	out->n_layers = n;
	if (use1) {
		out->stage = st1;
		out->strategy = sk1;
		st1 = NULL;
		sk1 = NULL;
	} else {
		out->stage = st0;
		out->strategy = sk0;
		st0 = NULL;
		sk0 = NULL;
	}
	out->tpi_s = opt_tpi(cand, out->stage, out->strategy);
	out->status = OPT_OPTIMAL;
	out->gap = 0;
	out->bound_s = out->tpi_s;
out:
	free(st0);
	free(st1);
	free(sk0);
	free(sk1);
	dp_inst_release(&d);
	return rc;
}

uniap_code dp_chain_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                          struct opt_result *out, struct uniap_err *err)
{
	return dp_drive(cand, opts, out, dpc_run, 0, OPT_METHOD_DP_CHAIN, err);
}
