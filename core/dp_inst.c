/*
 * dp_inst.c - the chain DPs' shared instance (dp_int.h): a candidate's
 * chain edges, its least times to come, the memory-priced (Lagrangian) and
 * partition bounds, the lower bound of a partial plan, the root bound and
 * the size caps.  Uses no other DP file.
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

void dp_inst_release(struct dp_inst *d)
{
	free(d->chain);
	free(d->rem_s);
	free(d->rem_layers_s);
	free(d->rem_peak_s);
	free(d->cut_extra_s);
	free(d->cut_least_s);
	free(d->edge_cut_s);
	free(d->edge_rmin_s);
	free(d->part_s);
	free(d->part_m);
	free(d->rem_guess_s);
	free(d->lag);
	memset(d, 0, sizeof(*d));
}

/* tau of layers a..b (a <= b) on the stage whose prefix sums are pre (dp_partition_init). */
static double dp_tau(const struct dp_inst *d, const double *pre, size_t np, size_t n, size_t a, size_t b)
{
	const double *pa = pre + np * (n + 1), *pm = pre + (np + 1) * (n + 1);
	double t = pa[b + 1] - pa[a];
	size_t j;

	if (pm[b + 1] - pm[a] > d->limit)
		return INFINITY;
	for (j = 0; j < np; j++) {
		const double *pj = pre + j * (n + 1);
		double v = pj[b + 1] - pj[a] - d->price[j] * d->limit;

		if (v > t)
			t = v;
	}
	return t;
}

/*
 * The staged tables (one row set per stage, d->lag_rows == pp): for price p,
 * lag[(s * DP_NPRICE + j) * (n + 1) + u] = C[s][u], the least over every way to
 * place layers u+1 .. n-1 on the open stage s (none or more) and then on
 * stages s+1 .. pp-1 (contiguous, each non-empty) of
 *   sum_w min_k (A[w][k] + p mem(w, stage of w, k)) - p limit x (stages s+1..pp-1),
 * each stage with its own in-flight count.  For every completion of a plan
 * whose open stage s holds mem_b bytes, the layers' time is at least
 * C[s][u] - p (limit - mem_b), because each stage's memory fits its limit:
 * the Lagrangian of the per-stage memory rows, which unlike the pooled bound
 * charges each stage its own activations.  Computed by a backward program:
 * B[s][v] (stage s opens at v) = g_s(v) - p limit + C[s][v], and C[s][u] =
 * min(B[s+1][u+1], g_s(u+1) + C[s][u+1]), g_s(w) = min_k A + p mem at stage s;
 * INFINITY where no completion has every stage non-empty.  0, or -1.
 */
static int dp_lagrange_staged(struct dp_inst *d)
{
	size_t n = d->n_layers, K = d->k, w, k, j, u;
	double *g = malloc(n * sizeof(double)), *bnext = malloc((n + 1) * sizeof(double));
	double *bcur = malloc((n + 1) * sizeof(double));
	int sg;

	if (!g || !bnext || !bcur) {
		free(g);
		free(bnext);
		free(bcur);
		return -1;
	}
	for (j = 0; j < DP_NPRICE; j++) {
		double p = d->price[j];

		/* B[pp][v]: no stage left, so only the end (v == n) is complete */
		for (u = 0; u <= n; u++)
			bnext[u] = u == n ? 0 : INFINITY;
		for (sg = d->pp - 1; sg >= 0; sg--) {
			double *c = d->lag + ((size_t)sg * DP_NPRICE + j) * (n + 1);
			double *t;

			for (w = 0; w < n; w++) {
				double m = INFINITY;

				for (k = 0; k < K; k++)
					m = fmin(m, d->time_s[w * K + k] + p * dp_mem(d, w, sg, k));
				g[w] = m;
			}
			c[n] = INFINITY;
			c[n - 1] = bnext[n];
			for (u = n - 1; u-- > 0;)
				c[u] = fmin(bnext[u + 1], g[u + 1] + c[u + 1]);
			for (u = 0; u < n; u++)
				bcur[u] = g[u] - p * d->limit + c[u];
			bcur[n] = INFINITY;
			t = bnext;
			bnext = bcur;
			bcur = t;
		}
	}
	free(g);
	free(bnext);
	free(bcur);
	return 0;
}

/*
 * The memory-priced tables of the bound.  Staged (dp_lagrange_staged) when
 * pp * DP_NPRICE * (n + 1) <= 2^22; else pooled, as dp-dag's: for any price
 * >= 0 the layers after u take at least sum_w min_k (A + price * mem_lb) -
 * price * room, room the memory the stages they can go to have left, because
 * their memory fits in that room, with mem_lb at the least in-flight count of
 * any stage (weaker: every layer priced as if on the emptiest stage).
 * 0, or -1 out of memory; d->lag stays NULL when memory never binds.
 */
static int dp_lagrange_init(struct dp_inst *d)
{
	size_t n = d->n_layers, K = d->k, w, k, j, rows;
	double base, total_a = 0, total_mem = 0;
	long infmin = LONG_MAX;
	int sg;

	if (!d->mem_binds || !isfinite(d->limit) || !(d->limit > 0))
		return 0;
	for (w = 0; w < n; w++) {
		double a = INFINITY, m = INFINITY;

		for (k = 0; k < K; k++) {
			a = fmin(a, d->time_s[w * K + k]);
			m = fmin(m, d->mem_fixed[w * K + k]);
		}
		total_a += a;
		total_mem += m;
	}
	/* the price that makes the layers' time and memory comparable */
	base = total_a / fmax(total_mem, d->limit);
	if (!(base > 0) || !isfinite(base))
		return 0;
	for (j = 0; j < DP_NPRICE; j++)
		d->price[j] = base * pow(4.0, (double)j - (DP_NPRICE - 1) / 2.0);
	rows = (double)d->pp * DP_NPRICE * (double)(n + 1) <= 4194304.0 ? (size_t)d->pp : 1;
	d->lag_rows = rows;
	d->lag = malloc(rows * DP_NPRICE * (n + 1) * sizeof(double));
	if (!d->lag)
		return -1;
	if (rows > 1)
		return dp_lagrange_staged(d);
	for (sg = 0; sg < d->pp; sg++)
		if (d->inflight[sg] < infmin)
			infmin = d->inflight[sg];
	for (j = 0; j < DP_NPRICE; j++) {
		double *h = d->lag + j * (n + 1);

		h[n] = 0;
		h[n - 1] = 0;
		for (w = n - 1; w > 0; w--) {
			double m = INFINITY;

			for (k = 0; k < K; k++)
				m = fmin(m, d->time_s[w * K + k] +
				               d->price[j] * (d->mem_fixed[w * K + k] +
				                              (double)infmin * d->mem_micro[w * K + k]));
			h[w - 1] = h[w] + m;
		}
	}
	return 0;
}

/*
 * One entry of the partition bound (dp_partition_init): over the ends b >= b0
 * of a block of layers from .. b (none when b < from) on a stage whose prefix
 * sums are pre, the least sum (block + boundary + the next stage's sn) and the
 * least bottleneck (with mn); the last stage must end at the last layer.
 */
static void dp_partition_best(const struct dp_inst *d, const double *pre, size_t np, size_t from, size_t b0,
                              int last, const double *sn, const double *mn, double *bs_out, double *bm_out)
{
	size_t n = d->n_layers, b;
	double bs = INFINITY, bm = INFINITY;

	for (b = b0; b < n; b++) {
		double t = b < from ? 0 : dp_tau(d, pre, np, n, from, b), rs, rm;

		if (!isfinite(t))
			break; /* longer blocks need more memory still */
		if (last) {
			if (b != n - 1)
				continue;
			rs = 0;
			rm = 0;
		} else {
			if (b + 1 >= n)
				continue;
			rs = d->edge_cut_s[b] + sn[b + 1];
			rm = fmax(d->edge_rmin_s[b], mn[b + 1]);
		}
		bs = fmin(bs, t + rs);
		bm = fmin(bm, fmax(t, rm));
	}
	*bs_out = bs;
	*bm_out = bm;
}

/*
 * The partition bound.  Relax a plan to its stage blocks: block a..b on stage
 * s takes at least tau_s(a, b) = the larger of its layers' least times and,
 * for each memory price p, sum_w min_k (A + p mem(w, s, k)) - p limit (its
 * memory fits the limit; each block gets its own best price, so this is the
 * Lagrangian of every stage's memory row, with the stage's own in-flight
 * count); INFINITY when even its layers' least memory is over the limit.  A
 * boundary after layer b adds at least cut_extra(b) (its R' over the edge's
 * least cost) to the sum and is a communication stage of at least its least
 * R'.  Over every contiguous partition into non-empty stages, backwards:
 *   Ssuf[s][v] = min_b tau_s(v, b) + cut(b) + Ssuf[s+1][b+1], Msuf likewise
 *   with max, and for an open stage s at layer u (it may take u+1 .. b, or
 *   nothing more) part_s[s][u], part_m[s][u] the same over b >= u,
 * each a lower bound of the rest of any completion: the sum of its layers'
 * times plus what its boundaries add, and its largest stage or communication
 * time.  The open stage is priced with a full limit (its content so far is
 * in the label).  O(pp n^2 DP_NPRICE); skipped (part_s NULL) past 2e8.
 * 0, or -1 out of memory.
 */
static int dp_partition_init(struct dp_inst *d)
{
	size_t n = d->n_layers, K = d->k, w, k, j, a, np = d->lag ? DP_NPRICE : 0;
	double *pre = NULL, *ssuf = NULL, *msuf = NULL;
	int sg, ret = -1;

	if ((double)d->pp * (double)n * (double)n * (double)(np + 2) > 2e8)
		return 0;
	/* pre[(j * (n + 1)) + w]: prefix sums; j < np the priced ones, np the least times, np + 1
	 * the least memory */
	pre = malloc((np + 2) * (n + 1) * sizeof(double));
	ssuf = malloc(2 * (n + 1) * sizeof(double)); /* Ssuf and Msuf of stage s + 1 */
	msuf = malloc(2 * (n + 1) * sizeof(double));
	d->part_s = malloc((size_t)d->pp * n * sizeof(double));
	d->part_m = malloc((size_t)d->pp * n * sizeof(double));
	if (!pre || !ssuf || !msuf || !d->part_s || !d->part_m)
		goto out;
	for (sg = d->pp - 1; sg >= 0; sg--) {
		double *sn = ssuf + (n + 1), *mn = msuf + (n + 1); /* stage sg + 1 */
		int last = sg == d->pp - 1;

		if (last)
			for (w = 0; w <= n; w++)
				sn[w] = mn[w] = INFINITY;
		for (j = 0; j < np + 2; j++) {
			double *pj = pre + j * (n + 1);

			pj[0] = 0;
			for (w = 0; w < n; w++) {
				double m = INFINITY;

				for (k = 0; k < K; k++) {
					double x = j < np ? d->time_s[w * K + k] + d->price[j] * dp_mem(d, w, sg, k)
					         : j == np ? d->time_s[w * K + k] : dp_mem(d, w, sg, k);

					m = fmin(m, x);
				}
				pj[w + 1] = pj[w] + m;
			}
		}
		/* fresh stage sg from a, then the open stage sg holding layer a (the label's), which
		 * may take a+1 .. b or nothing more */
		for (a = 0; a < n; a++)
			dp_partition_best(d, pre, np, a, a, last, sn, mn,
			                  &ssuf[a], &msuf[a]);
		ssuf[n] = msuf[n] = INFINITY;
		for (a = 0; a < n; a++)
			dp_partition_best(d, pre, np, a + 1, a, last, sn, mn,
			                  &d->part_s[(size_t)sg * n + a], &d->part_m[(size_t)sg * n + a]);
		memcpy(sn, ssuf, (n + 1) * sizeof(double));
		memcpy(mn, msuf, (n + 1) * sizeof(double));
	}
	ret = 0;
out:
	free(pre);
	free(ssuf);
	free(msuf);
	if (ret != 0) {
		free(d->part_s);
		free(d->part_m);
		d->part_s = d->part_m = NULL;
	}
	return ret;
}

uniap_code dp_inst_init(struct dp_inst *d, const struct cost_candidate *cand,
                               const struct opt_options *o, struct uniap_err *err)
{
	size_t u, e, k, l, i;
	uniap_code rc = UNIAP_OK;

	memset(d, 0, sizeof(*d));
	if (!opt_is_chain(cand))
		return err_set(err, UNIAP_E_ARG, "dp: the layer graph is not a chain in index order");
	d->cand = cand;
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
	d->cutoff_s = isnan(o->cutoff_tpi) ? INFINITY : o->cutoff_tpi;
	d->ub_s = INFINITY;
	d->deadline_s = (o->time_limit_s > 0 && isfinite(o->time_limit_s))
	                        ? opt_clock_s() + o->time_limit_s
	                        : INFINITY;
	d->work_limit = o->dp_work_limit > 0 ? o->dp_work_limit : 0;
	d->chain = calloc(d->n_layers, sizeof(*d->chain));
	d->rem_s = calloc(d->n_layers + 1, sizeof(*d->rem_s));
	d->rem_layers_s = calloc(d->n_layers + 1, sizeof(*d->rem_layers_s));
	d->rem_guess_s = calloc(d->n_layers + 1, sizeof(*d->rem_guess_s));
	d->rem_peak_s = calloc(d->n_layers + 1, sizeof(*d->rem_peak_s));
	d->cut_extra_s = calloc(d->n_layers + 1, sizeof(*d->cut_extra_s));
	d->cut_least_s = calloc(d->n_layers + 1, sizeof(*d->cut_least_s));
	d->edge_cut_s = calloc(d->n_layers, sizeof(*d->edge_cut_s));
	d->edge_rmin_s = calloc(d->n_layers, sizeof(*d->edge_rmin_s));
	if (!d->chain || !d->rem_s || !d->rem_layers_s || !d->rem_guess_s || !d->rem_peak_s || !d->cut_extra_s ||
	    !d->cut_least_s || !d->edge_cut_s || !d->edge_rmin_s) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	for (e = 0; e < cand->n_edges; e++)
		d->chain[cand->edges[e].from] = &cand->edges[e];
	/* least possible future time (every cost is >= 0) */
	d->cut_extra_s[d->n_layers - 1] = INFINITY;
	d->cut_least_s[d->n_layers - 1] = INFINITY;
	for (u = d->n_layers - 1; u-- > 0;) {
		double best_a = INFINITY, best_r = INFINITY, best_x = INFINITY;

		for (k = 0; k < d->k; k++)
			best_a = fmin(best_a, d->time_s[(u + 1) * d->k + k]);
		for (k = 0; k < d->k; k++)
			for (l = 0; l < d->k; l++) {
				best_r = fmin(best_r, d->chain[u]->same_stage_s[k * d->k + l]);
				best_x = fmin(best_x, d->chain[u]->cross_stage_s[k * d->k + l]);
			}
		d->rem_s[u] = d->rem_s[u + 1] + best_a + fmin(best_r, best_x);
		d->rem_layers_s[u] = d->rem_layers_s[u + 1] + best_a;
		d->edge_cut_s[u] = best_x - fmin(best_r, best_x);
		d->edge_rmin_s[u] = best_x;
		d->cut_extra_s[u] = fmin(d->cut_extra_s[u + 1], d->edge_cut_s[u]);
		d->cut_least_s[u] = fmin(d->cut_least_s[u + 1], best_x);
	}
	{
		double share = d->limit / ceil((double)d->n_layers / d->pp);

		for (u = d->n_layers - 1; u-- > 0;) {
			double fit = INFINITY, small_m = INFINITY, small_t = 0;

			for (k = 0; k < d->k; k++) {
				double m = dp_mem(d, u + 1, 0, k), t = d->time_s[(u + 1) * d->k + k];

				if (m <= share)
					fit = fmin(fit, t);
				if (m < small_m) {
					small_m = m;
					small_t = t;
				}
			}
			d->rem_guess_s[u] = d->rem_guess_s[u + 1] + (isfinite(fit) ? fit : small_t);
		}
	}
	/* memory binds unless every stage fits with every layer at its largest strategy */
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
	{
		long infmin = LONG_MAX;

		for (i = 0; i < (size_t)d->pp; i++)
			if (d->inflight[i] < infmin)
				infmin = d->inflight[i];
		for (u = d->n_layers - 1; u-- > 0;) {
			double fit = INFINITY;

			for (k = 0; k < d->k; k++) {
				size_t x = (u + 1) * d->k + k;

				if (d->mem_fixed[x] + (double)infmin * d->mem_micro[x] <= d->limit)
					fit = fmin(fit, d->time_s[x]);
			}
			/* no strategy fits: nothing to claim here (the search finds no plan) */
			d->rem_peak_s[u] = fmax(d->rem_peak_s[u + 1], isfinite(fit) ? fit : 0);
		}
	}
	if (dp_lagrange_init(d) != 0 || dp_partition_init(d) != 0)
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
out:
	if (rc != UNIAP_OK)
		dp_inst_release(d);
	return rc;
}


/*
 * Lower bound of the final TPI of a partial plan that ends at layer u with
 * total sum_s, closed max max_s and an open stage of open_s using mem_b
 * bytes, with stages_left stages (the open one included) for the layers
 * after u: sum + least time to come + (c-1) * max(max_s, open_s, (open_s +
 * least layer time to come) / stages_left), the last because those layers
 * and the open stage's time end up in stages_left stage times.  The least
 * layer time to come is the larger of the plain sum of least times and the
 * memory-priced bounds (dp_lagrange_init) with room = limit - mem_b + a full
 * limit per later stage.  mem_b = 0 is valid for any label (more room, a
 * weaker bound); callers that need the bound monotone in open_s alone pass 0.
 * The bottleneck is also at least the peak of the layers to come (rem_peak_s).
 * With stages_left > 1 the stages_left - 1 boundaries still to come each cross
 * an edge >= u: they add at least cut_extra_s each to the sum, and the
 * bottleneck is at least cut_least_s (one of them is a communication stage).
 * Then the partition bound (dp_partition_init) for the open stage at u, when
 * built: INFINITY when no completion fits at all.
 */
double dp_lower_bound(const struct dp_inst *d, size_t u, int stages_left, double sum_s,
                             double max_s, double open_s, double mem_b)
{
	double m = fmax(max_s, open_s), lay = d->rem_layers_s[u], cuts = 0, rest;

	if (d->lag && stages_left > 0 && u + 1 < d->n_layers) {
		size_t n1 = d->n_layers + 1, j;
		size_t r = d->lag_rows == 1 ? 0 : (size_t)(d->pp - stages_left);
		const double *h = d->lag + r * DP_NPRICE * n1 + u;
		/* staged tables charge the later stages' limits themselves (dp_lagrange_staged) */
		double room = (d->limit - mem_b) + (d->lag_rows == 1 ? (double)(stages_left - 1) * d->limit : 0);

		for (j = 0; j < DP_NPRICE; j++) {
			double v = h[j * n1] - d->price[j] * room;

			/* infinite: no completion has every stage non-empty; nothing to claim here */
			if (isfinite(v) && v > lay)
				lay = v;
		}
	}
	if (stages_left > 0)
		m = fmax(m, (open_s + lay) / stages_left);
	m = fmax(m, d->rem_peak_s[u]);
	if (stages_left > 1) {
		/* stages_left - 1 boundaries are still to be crossed, each at an edge >= u: each adds
		 * at least cut_extra to that edge's least cost, and is a communication stage */
		cuts = (double)(stages_left - 1) * d->cut_extra_s[u];
		m = fmax(m, d->cut_least_s[u]);
	}
	rest = (d->rem_s[u] - d->rem_layers_s[u]) + lay + cuts;
	if (d->part_s && stages_left > 0 && stages_left <= d->pp) {
		size_t x = (size_t)(d->pp - stages_left) * d->n_layers + u;

		if (!isfinite(d->part_s[x]))
			return INFINITY; /* no completion fits: every stage non-empty, every block in memory */
		rest = fmax(rest, (d->rem_s[u] - d->rem_layers_s[u]) + d->part_s[x]);
		m = fmax(m, d->part_m[x]);
	}
	return sum_s + rest + (double)(d->c - 1) * m;
}





static int dp_rows_equal(const double *x, const double *y, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(x[i] == y[i]))
			return 0;
	return 1;
}

/* same[a] for the shortcut of identical layers (see dps_table_fill). */
void dp_same_init(const struct dp_inst *d, size_t *same)
{
	size_t L = d->n_layers, K = d->k, a;

	same[L - 1] = 0;
	for (a = L - 1; a-- > 0;) {
		int layer_eq = dp_rows_equal(d->time_s + a * K, d->time_s + (a + 1) * K, K) &&
		               dp_rows_equal(d->mem_fixed + a * K, d->mem_fixed + (a + 1) * K, K) &&
		               dp_rows_equal(d->mem_micro + a * K, d->mem_micro + (a + 1) * K, K);
		int edge_eq = a + 2 < L && dp_rows_equal(d->chain[a]->same_stage_s,
		                                         d->chain[a + 1]->same_stage_s, K * K);

		same[a] = !layer_eq ? 0 : 1 + (edge_eq ? same[a + 1] : 0);
	}
}

/*
 * The least dp_lower_bound over layer 0's strategies that fit alone: every
 * plan starts with layer 0 on stage 0 under one of them.  INFINITY when none
 * has a completion that fits (the partition bound) or none fits at all.
 */
static double dp_root_least(const struct dp_inst *d)
{
	double best = INFINITY;
	size_t k;

	for (k = 0; k < d->k; k++) {
		double a = d->time_s[k], m = dp_mem(d, 0, 0, k);

		if (!(m <= d->limit))
			continue;
		best = fmin(best, dp_lower_bound(d, 0, d->pp, a, 0, d->c > 1 ? a : 0, d->mem_binds ? m : 0));
	}
	return best;
}

double dp_root_bound(const struct dp_inst *d)
{
	double best = dp_root_least(d);

	return isfinite(best) ? best : 0;
}

int dp_root_infeasible(const struct dp_inst *d)
{
	return isinf(dp_root_least(d));
}

/*
 * The size caps, checked once before any run (the beam's dp-chain included,
 * whose states are the same n x pp x K): UNIAP_E_LIMIT past them.  stages:
 * also dp-stages' block table.
 */
uniap_code dp_check_caps(const struct dp_inst *d, int stages, struct uniap_err *err)
{
	size_t n = d->n_layers, K = d->k;

	if (stages && (double)n * n * K * K > DP_TABLE_MAX)
		return err_set(err, UNIAP_E_LIMIT, "dp-stages: block table of %zu x %zu x %zu x %zu too big", n, n,
		               K, K);
	if ((double)n * d->pp * K > (double)d->cap * 4)
		return err_set(err, UNIAP_E_LIMIT, "%s: %zu x %d x %zu states is over the cap",
		               stages ? "dp-stages" : "dp-chain", n, d->pp, K);
	return UNIAP_OK;
}
