/*
 * dp.c - exact dynamic programs for chains in index order (dp.h).
 *
 * Notation (cost.h): A[u][k] layer time, R_u[k][l] / R'_u[k][l] the same-stage /
 * cross-stage cost of the chain edge u -> u+1, mem(u, i, k) = Mf[u][k] +
 * inflight[i] * Mm[u][k].  On a chain every stage is a block of consecutive
 * layers, only the edge that leaves a block crosses a communication stage and
 * it crosses exactly one, so
 *   TPI = S + (c - 1) * M,  S = sum of every p_i and o_j,  M = max of them.
 * dp-chain and dp-stages keep, for each state, only the labels no other
 * label of the same state dominates; a label is dropped only when another one
 * is at least as good in every quantity the future can depend on, so the
 * optimum survives.  Both first run dp-chain with a beam (a few labels per
 * state) to get a valid plan whose TPI is an upper bound U, then the exact
 * program, which drops a partial plan only when a lower bound of every
 * completion exceeds U (times 1 + 1e-12, against rounding) or reaches the
 * caller's cutoff.  If the exact program finds nothing better, the beam plan
 * is optimal.
 *
 * dp-sweep (at the end of the file) needs no labels and no beam: a shortest
 * path per bottleneck threshold, thresholds swept down from above.
 *
 * Memory sums are accumulated in layer order exactly as opt_tpi() does, so a
 * stage the DP accepts is one opt_tpi() accepts; the one exception, dp-sweep's
 * downward run for the last stage, says how it stays honest (dpw_block).
 *
 * Never: CBC, I/O, globals, asserts on input.
 */
#include "dp.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#define DP_NONE SIZE_MAX
#define DP_SLACK 1e-12 /* relative slack on the incumbent bound, against rounding */
#define DP_BEAM 4      /* labels per state in the incumbent runs */
#define DP_TABLE_MAX 33554432.0 /* entries of the dp-stages block table (256 MiB) */
#define DP_NPRICE 13   /* memory prices of the Lagrangian bound: base * 4^(-6..6) */

/* The read-only view of one candidate plus the search's bounds and counters. */
struct dp_inst {
	const struct cost_candidate *cand;
	size_t n_layers, k;
	int pp;
	long c;
	const double *time_s, *mem_fixed, *mem_micro;
	const long *inflight;
	double limit;
	const struct cost_edge **chain; /* owned array of borrowed edges, [n_layers - 1]: u -> u+1 */
	int mem_binds;                  /* 0: no stage can ever exceed the limit */
	double *rem_s;                  /* owned, [n_layers + 1]: least time still to come after layer
	                                   u (layers > u and edges >= u) */
	double *rem_layers_s;           /* owned, [n_layers + 1]: least time of the layers > u */
	double *edge_cut_s;             /* owned, [n_layers]: what crossing a stage boundary at edge
	                                   u -> u+1 adds to its least cost (min R' - min(min R, min R')) */
	double *edge_rmin_s;            /* owned, [n_layers]: the least R' of edge u -> u+1 */
	double *cut_extra_s;            /* owned, [n_layers + 1]: least over the edges e >= u of what
	                                   crossing a stage boundary adds to e's least cost
	                                   (min R'_e - min(min R_e, min R'_e)) */
	double *cut_least_s;            /* owned, [n_layers + 1]: least R' over the edges e >= u: every
	                                   communication stage o is at least that */
	double *part_s;                 /* owned, [pp * n_layers] (NULL when over its budget): the
	                                   least sum of the partition bound (dp_partition_init) for an
	                                   open stage s at layer u */
	double *part_m;                 /* owned, [pp * n_layers]: its least bottleneck */
	double *rem_peak_s;             /* owned, [n_layers + 1]: max over the layers w > u of the least
	                                   time of a strategy of w that fits the limit alone at the least
	                                   in-flight count: some stage holds w, so its time is >= that */
	double *rem_guess_s;            /* owned, [n_layers + 1]: beam only, a guess of the time of the
	                                   layers > u: each at its fastest strategy within a per-layer
	                                   share of the memory limit (not a bound) */
	double price[DP_NPRICE];        /* memory prices of the Lagrangian bound, s/byte */
	double *lag;                    /* owned, [(s * DP_NPRICE + j) * (n_layers + 1) + u] (NULL when
	                                   memory never binds): with lag_rows == pp the staged
	                                   tables C[s][u] (dp_lagrange_staged); with 1, the pooled
	                                   sum over layers w > u of min_k A[w][k] + price[j] *
	                                   mem_lb(w, k), mem_lb at the least in-flight count */
	size_t lag_rows;                /* pp (staged), or 1 (pooled, for large pp x n) */
	double deadline_s;              /* opt_clock_s() value; INFINITY when none */
	double cutoff_s;                /* drop partial plans whose lower bound reaches it */
	double ub_s;                    /* TPI of the incumbent plan; INFINITY when none */
	size_t cap;                     /* label cap */
	size_t beam;                    /* 0: exact; else labels kept per state */
	double lambda;                  /* beam only: price of a byte of open-stage memory, s/byte */
	long labels;                    /* labels created (reported as nodes) */
	int cut_pruned;                 /* a partial plan was dropped against the cutoff */
	int timed_out;                  /* the incumbent's passes ran out of time (it has a plan) */
};

static double dp_mem(const struct dp_inst *d, size_t u, int stage, size_t k)
{
	return d->mem_fixed[u * d->k + k] + (double)d->inflight[stage] * d->mem_micro[u * d->k + k];
}

static void dp_inst_release(struct dp_inst *d)
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

static uniap_code dp_inst_init(struct dp_inst *d, const struct cost_candidate *cand,
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

static uniap_code dp_check_time(const struct dp_inst *d, struct uniap_err *err)
{
	if (isfinite(d->deadline_s) && opt_clock_s() > d->deadline_s)
		return err_set(err, UNIAP_E_TIMEOUT, "dp: time limit reached");
	return UNIAP_OK;
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
static double dp_lower_bound(const struct dp_inst *d, size_t u, int stages_left, double sum_s,
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

/* The beam's guess of the final TPI: dp_lower_bound with rem_guess_s for the layers to come. */
static double dp_beam_key(const struct dp_inst *d, size_t u, int stages_left, double sum_s, double max_s,
                          double open_s)
{
	double m = fmax(max_s, open_s), rest = d->rem_guess_s[u];

	if (stages_left > 0)
		m = fmax(m, (open_s + rest) / stages_left);
	return sum_s + rest + (double)(d->c - 1) * m;
}

/* 1 when no completion of a partial plan with lower bound lb can beat the cutoff or the incumbent
 * (lb INFINITY: it has no valid completion at all, which claims nothing about the cutoff). */
static int dp_prune(struct dp_inst *d, double lb)
{
	if (isinf(lb))
		return 1;
	if (lb >= d->cutoff_s) {
		d->cut_pruned = 1;
		return 1;
	}
	return lb > d->ub_s * (1 + DP_SLACK);
}

/*
 * Notes that a stage was dropped for being over dp_stage_cap: a claim about the
 * cutoff when the cutoff (not the incumbent) set the cap, so that a search that
 * finds nothing says pruned, not infeasible.  Returns 1 (for use in conditions).
 */
static int dp_cap_drop(struct dp_inst *d)
{
	if (d->cutoff_s <= d->ub_s * (1 + DP_SLACK))
		d->cut_pruned = 1;
	return 1;
}

/* The largest stage (or communication) time an improving plan can have: c * p <= TPI. */
static double dp_stage_cap(const struct dp_inst *d)
{
	double b = fmin(d->cutoff_s, d->ub_s * (1 + DP_SLACK));

	return b / (double)d->c * (1 + DP_SLACK);
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
static uniap_code dpc_run(struct dp_inst *d, int *stage_out, size_t *strategy_out, double *tpi_s,
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

								x.sum_s = p->sum_s + r + a;
								x.max_s = d->c > 1 ? fmax(fmax(p->max_s, p->open_s), r) : 0;
								x.open_s = d->c > 1 ? a : 0;
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

/* ------------------------------------------------------------ dp-stages */

/*
 * Block table: for the stage's inflight value, tb.t[((a * L) + b) * K*K + f*K + l]
 * is the least time p of a stage made of layers a..b whose first layer uses
 * strategy f and last uses l, with the stage's memory within the limit
 * (INFINITY when no such choice fits, or when p is over dp_stage_cap, which
 * no improving plan can have).  Exact: inside the block, labels (time,
 * memory) per (layer, strategy) keep every Pareto-optimal pair, and a stage
 * contributes to the TPI only through p, in which TPI is non-decreasing, so
 * its least feasible p is all the outer DP needs.
 */
struct dps_tm {
	double t, m;
	size_t parent; /* trace index (trace runs) or source index (tie-break only) */
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

/* A copy of the block DP's fronts after some layer `pos` (for the shortcut of identical layers). */
struct dps_snap {
	struct dps_tmvec v;
	size_t *off; /* [K + 1] */
	size_t pos;
	int valid;
};

/* Working memory of the block DP. */
struct dps_block {
	struct dps_tmvec cur[2]; /* fronts of the current / next layer, per strategy (off[]) */
	size_t *off[2];          /* [K + 1] */
	struct dps_tmvec tmp, tmp2; /* the front being merged, and the merge's output */
	struct dps_tmvec trace;  /* every kept label with its parent (trace runs only) */
	size_t *trace_first;     /* [(b - a) * K + l]: trace index of the least-time label of (b, l) */
	struct dps_snap snap[2]; /* taken by the previous row / being taken by this one */
};

static void dps_block_release(struct dps_block *bk)
{
	int x;

	for (x = 0; x < 2; x++) {
		free(bk->cur[x].v);
		free(bk->off[x]);
		free(bk->snap[x].v.v);
		free(bk->snap[x].off);
	}
	free(bk->tmp.v);
	free(bk->tmp2.v);
	free(bk->trace.v);
	free(bk->trace_first);
	memset(bk, 0, sizeof(*bk));
}

/* Copies a front (v, off) into a snapshot taken after layer pos. */
static int dps_snap_take(struct dps_snap *sn, const struct dps_tmvec *v, const size_t *off, size_t K,
                         size_t pos)
{
	size_t i;

	sn->valid = 0;
	if (!sn->off) {
		sn->off = calloc(K + 1, sizeof(size_t));
		if (!sn->off)
			return -1;
	}
	sn->v.n = 0;
	for (i = 0; i < v->n; i++)
		if (dps_tm_push(&sn->v, &v->v[i]) != 0)
			return -1;
	memcpy(sn->off, off, (K + 1) * sizeof(size_t));
	sn->pos = pos;
	sn->valid = 1;
	return 0;
}

/*
 * What the stages before a block have at least: the least sum and the least
 * max over the outer labels that end just before the block (plus the least
 * cross-stage cost into it), and how many stages follow the block.  With it
 * a block label of time t at layer b has the lower bound dp_lower_bound(b,
 * stages_after + 1, sum + t, max, t), non-decreasing as the block grows, so
 * pruning against it only removes labels that no improving plan extends.
 */
struct dps_prefix {
	double sum_s, max_s;
	int stages_after;
};

/*
 * A block time below which a block label at layer u is never pruned by the
 * prefix bound: dp_lower_bound is the max of three lines in t (whichever of
 * the prefix max, t, or the spread of the rest is the max), so it stays
 * within the bound up to the least of their crossing points.  Shaved by
 * 1e-9 against rounding; labels above it get the exact test.
 */
static double dps_safe_time(const struct dp_inst *d, const struct dps_prefix *pre, size_t u)
{
	double bound = fmin(d->cutoff_s, d->ub_s * (1 + DP_SLACK)), cm = (double)(d->c - 1);
	double base = bound - pre->sum_s - d->rem_s[u], q = pre->stages_after + 1;
	double t1 = base - cm * pre->max_s, t2 = base / (1 + cm);
	double t3 = (base - cm * d->rem_layers_s[u] / q) / (1 + cm / q);

	if (!isfinite(bound))
		return INFINITY;
	t1 = fmin(t1, fmin(t2, t3));
	return t1 - fabs(t1) * 1e-9 - 1e-300;
}

/*
 * The block DP from layer a with first strategy f (K: any) on `stage` (its
 * inflight count), up to layer b_end: row[(b - a) * K + l] = least time of a..b ending
 * in strategy l (INFINITY if none, or over t_cap).  With trace, every kept
 * label is recorded so that the strategies can be read back.
 * from (may be NULL): start from these fronts, which are this row's fronts
 * after layer from->pos; row entries up to from->pos are then left alone.
 * snap (may be NULL): filled with the fronts after layer snap_pos.
 * pre (may be NULL): prune block labels with the prefix bound (struct dps_prefix).
 */
static uniap_code dps_block_run(struct dp_inst *d, struct dps_block *bk, size_t a, size_t f, int stage,
                                size_t b_end, double t_cap, double *row, int trace,
                                const struct dps_snap *from, struct dps_snap *snap, size_t snap_pos,
                                const struct dps_prefix *pre, struct uniap_err *err)
{
	size_t K = d->k, b, k, l, j, x = 0, b0 = a;
	double t_safe;
	struct dps_tm first;

	if (!bk->off[0]) {
		bk->off[0] = calloc(K + 1, sizeof(size_t));
		bk->off[1] = calloc(K + 1, sizeof(size_t));
		if (!bk->off[0] || !bk->off[1])
			return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
	}
	if (snap)
		snap->valid = 0;
	if (trace) {
		free(bk->trace_first);
		bk->trace_first = calloc((b_end - a + 1) * K, sizeof(size_t));
		if (!bk->trace_first)
			return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		bk->trace.n = 0;
	}
	bk->cur[0].n = 0;
	if (from) {
		b0 = from->pos;
		for (j = (b0 + 1 - a) * K; j < (b_end - a + 1) * K; j++)
			row[j] = INFINITY;
		for (j = 0; j < from->v.n; j++)
			if (dps_tm_push(&bk->cur[0], &from->v.v[j]) != 0)
				return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		memcpy(bk->off[0], from->off, (K + 1) * sizeof(size_t));
	} else {
		for (j = 0; j < (b_end - a + 1) * K; j++)
			row[j] = INFINITY;
		/* f == K: any first strategy (stage 0 has no edge before it, so only the least time counts) */
		for (k = 0; k < K; k++) {
			bk->off[0][k] = bk->cur[0].n;
			if (f != K && k != f)
				continue;
			first.t = d->time_s[a * K + k];
			first.m = dp_mem(d, a, stage, k);
			first.parent = DP_NONE;
			first.k = k;
			if (!(first.m <= d->limit))
				continue;
			if (first.t > t_cap) {
				dp_cap_drop(d);
				continue;
			}
			if (pre && dp_prune(d, dp_lower_bound(d, a, pre->stages_after + 1, pre->sum_s + first.t,
			                                      pre->max_s, first.t, 0)))
				continue;
			if (!d->mem_binds)
				first.m = 0;
			if (trace) {
				bk->trace_first[k] = bk->trace.n;
				if (dps_tm_push(&bk->trace, &first) != 0)
					return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
				first.parent = bk->trace.n - 1;
			}
			if (dps_tm_push(&bk->cur[0], &first) != 0)
				return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
			row[k] = first.t;
			d->labels++;
		}
		bk->off[0][K] = bk->cur[0].n;
	}
	for (b = b0;; b++) {
		const struct cost_edge *e;
		struct dps_tmvec *src = &bk->cur[x], *dst = &bk->cur[1 - x];
		size_t *so = bk->off[x], *dof = bk->off[1 - x];

		if (snap && b == snap_pos && dps_snap_take(snap, src, so, K, b) != 0)
			return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		if (b >= b_end || src->n == 0)
			break;
		if (src->n > d->cap)
			return err_set(err, UNIAP_E_LIMIT, "dp-stages: more than %zu labels in a block", d->cap);
		e = d->chain[b];
		dst->n = 0;
		t_safe = pre ? dps_safe_time(d, pre, b + 1) : INFINITY;
		for (l = 0; l < K; l++) {
			double a_t = d->time_s[(b + 1) * K + l];
			double m = dp_mem(d, b + 1, stage, l);
			size_t w;

			dof[l] = dst->n;
			/*
			 * The front of (b+1, l) is the Pareto merge of the K fronts of b, each shifted by
			 * (same-stage cost + layer time, layer memory): every front is sorted by time, so
			 * a merge and one sweep replace a sort.  Within a shifted list time only grows, so
			 * the first label over the cap or the bound ends that list.
			 */
			bk->tmp.n = 0;
			for (k = 0; k < K; k++) {
				double r = e->same_stage_s[k * K + l], best_m = INFINITY;
				size_t i = 0, jn = so[k], je = so[k + 1];
				struct dps_tmvec *mv = &bk->tmp, *out_v = &bk->tmp2;
				struct dps_tm y = {0, 0, 0, 0};
				int have_y = 0;

				if (jn == je)
					continue;
				out_v->n = 0;
				for (;;) {
					const struct dps_tm *take;

					while (!have_y && jn < je) {
						y.t = src->v[jn].t + r + a_t;
						y.m = d->mem_binds ? src->v[jn].m + m : 0;
						y.k = l;
						y.parent = trace ? src->v[jn].parent : jn;
						jn++;
						if (!(y.m <= d->limit))
							continue;
						if ((y.t > t_cap && dp_cap_drop(d)) ||
						    (y.t > t_safe &&
						     dp_prune(d, dp_lower_bound(d, b + 1, pre->stages_after + 1,
						                                pre->sum_s + y.t, pre->max_s, y.t, 0)))) {
							jn = je;
							break;
						}
						have_y = 1;
						d->labels++;
					}
					if (i >= mv->n && !have_y)
						break;
					if (i < mv->n && (!have_y || dps_tm_cmp(&mv->v[i], &y) <= 0)) {
						take = &mv->v[i++];
					} else {
						take = &y;
						have_y = 0;
					}
					if (take->m < best_m) {
						best_m = take->m;
						if (dps_tm_push(out_v, take) != 0)
							return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
					}
				}
				{
					struct dps_tmvec t = bk->tmp;

					bk->tmp = bk->tmp2;
					bk->tmp2 = t;
				}
			}
			w = bk->tmp.n;
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
	if (snap && !snap->valid && snap_pos > b && snap_pos <= b_end) {
		/* the fronts died out before snap_pos: they are empty there too */
		struct dps_tmvec none = {0};

		if (dps_snap_take(snap, &none, bk->off[x], K, snap_pos) != 0)
			return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		memset(snap->off, 0, (K + 1) * sizeof(size_t));
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
	size_t f;  /* strategy of layer a (K on stage 0: any, see dps_table_fill) */
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

/*
 * Adds x to fr unless an entry dominates it; drops the entries x dominates.
 * y dominates x when y.sum <= x.sum and y.max <= x.max, or when y's max is
 * higher but y.sum + cm (y.max - x.max) <= x.sum, i.e. y.sum + cm y.max <=
 * x.sum + cm x.max (cm = c - 1): the future adds the same to both sums, so y's
 * final bottleneck exceeds x's by at most the difference.  fr stays sorted by
 * sum with max and sum + cm max both strictly decreasing, so only the entry
 * just before x can dominate it and the entries x dominates follow it in one
 * run.  Returns -1 when out of memory.
 */
static int dps_front_add(struct dps_vec *fr, const struct dps_label *x, double cm)
{
	double px = x->sum_s + cm * x->max_s;

	size_t lo = 0, hi = fr->n, pos, first, end;

	while (lo < hi) { /* pos: entries with sum <= x's */
		size_t mid = lo + (hi - lo) / 2;

		if (fr->v[mid].sum_s <= x->sum_s)
			lo = mid + 1;
		else
			hi = mid;
	}
	pos = lo;
	if (pos > 0 && (fr->v[pos - 1].max_s <= x->max_s ||
	                fr->v[pos - 1].sum_s + cm * fr->v[pos - 1].max_s <= px))
		return 0;
	first = pos > 0 && fr->v[pos - 1].sum_s == x->sum_s ? pos - 1 : pos;
	for (end = pos; end < fr->n && (fr->v[end].max_s >= x->max_s ||
	                                fr->v[end].sum_s + cm * fr->v[end].max_s >= px); end++)
		;
	if (end == first) {
		if (dps_push(fr, x) != 0) /* grows by one; shifted below */
			return -1;
		memmove(&fr->v[first + 1], &fr->v[first], (fr->n - 1 - first) * sizeof(*fr->v));
		fr->v[first] = *x;
		return 0;
	}
	fr->v[first] = *x;
	memmove(&fr->v[first + 1], &fr->v[end], (fr->n - end) * sizeof(*fr->v));
	fr->n -= end - first - 1;
	return 0;
}

/* The block table of the stage being processed. */
struct dps_table {
	double *t;           /* [(a * L + b) * K*K + f*K + l] */
	long inflight;       /* the inflight value the rows were computed for; -1: none */
	unsigned char *done; /* [L] row a computed */
	size_t *same;        /* [L]: layers a.. and a+1.. are identical (costs, memory and the same-stage
	                        matrices between them) for this many layers */
};

static int dp_rows_equal(const double *x, const double *y, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(x[i] == y[i]))
			return 0;
	return 1;
}

/* same[a] for the shortcut of identical layers (see dps_table_fill). */
static void dps_same_init(const struct dp_inst *d, size_t *same)
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
 * Computes the rows of the block table that stage `stage` and the later
 * stages with the same inflight count need (first layers stage .. a_hi).
 * Shortcut for identical layers: when layers a.. and a+1.. agree for m =
 * same[a] layers, row a's first m entries equal row a+1's and row a's fronts
 * after layer a+m-1 equal row a+1's after layer a+m, so row a copies those
 * entries and continues from a snapshot of row a+1 (rows go downwards).  A
 * run of n identical layers costs one row plus short tails, not n rows.
 */
static uniap_code dps_table_fill(struct dp_inst *d, struct dps_table *tb, struct dps_block *bk, int stage,
                                 const struct dps_vec *lab, const size_t *start, double *row,
                                 struct uniap_err *err)
{
	size_t L = d->n_layers, K = d->k, KK = K * K, a, f, b, l, a_lo = (size_t)stage, a_hi = 0;
	double t_cap = dp_stage_cap(d);
	int s, shared = 0, alike = 0;
	uniap_code rc;

	if (tb->inflight != d->inflight[stage]) {
		memset(tb->done, 0, L);
		tb->inflight = d->inflight[stage];
	}
	for (s = stage + 1; s < d->pp; s++)
		shared |= d->inflight[s] == tb->inflight;
	for (s = stage; s < d->pp; s++)
		if (d->inflight[s] == tb->inflight && s > 0 && L - (size_t)d->pp + (size_t)s > a_hi)
			a_hi = L - (size_t)d->pp + (size_t)s;
	if (stage == 0) {
		/* row 0 serves only stage 0, which has no edge before it: one run with any first
		 * strategy, stored under f = 0 (dps_gather reads it so), pruned with an empty prefix */
		struct dps_prefix pre = {0, 0, d->pp - 1};

		rc = dps_block_run(d, bk, 0, K, stage, L - (size_t)d->pp, t_cap, row, 0, NULL, NULL, 0, &pre,
		                   err);
		if (rc != UNIAP_OK)
			return rc;
		for (b = 0; b < L; b++)
			for (f = 0; f < K; f++)
				for (l = 0; l < K; l++)
					tb->t[b * KK + f * K + l] =
					        f == 0 && b <= L - (size_t)d->pp ? row[b * K + l] : INFINITY;
		tb->done[0] = 1;
		return UNIAP_OK;
	}
	for (a = a_lo; a <= a_hi; a++)
		alike |= tb->same[a] > 0;
	if (!shared && !alike) {
		/*
		 * Rows used by this stage alone and no identical layers to share work between rows: each
		 * row is pruned with the bound of the outer labels that end just before it, stops at the
		 * stage's last possible layer, and is skipped when no such label exists.
		 */
		size_t b_end = L - (size_t)d->pp + (size_t)stage;

		for (a = a_lo; a <= a_hi; a++) {
			struct dps_prefix pre = {INFINITY, INFINITY, d->pp - 1 - stage};
			const struct cost_edge *e = d->chain[a - 1];
			double r_min = INFINITY;
			size_t pk, j;

			rc = dp_check_time(d, err);
			if (rc != UNIAP_OK)
				return rc;
			for (pk = 0; pk < K; pk++) {
				size_t pidx = ((size_t)(stage - 1) * L + a - 1) * K + pk;

				if (start[pidx] == start[pidx + 1])
					continue;
				for (j = start[pidx]; j < start[pidx + 1]; j++) {
					pre.sum_s = fmin(pre.sum_s, lab->v[j].sum_s);
					pre.max_s = fmin(pre.max_s, lab->v[j].max_s);
				}
				for (f = 0; f < K; f++)
					r_min = fmin(r_min, e->cross_stage_s[pk * K + f]);
			}
			for (f = 0; f < K; f++) {
				if (isfinite(pre.sum_s)) {
					struct dps_prefix pf = pre;

					pf.sum_s += r_min;
					rc = dps_block_run(d, bk, a, f, stage, b_end, t_cap, row, 0, NULL, NULL, 0, &pf,
					                   err);
					if (rc != UNIAP_OK)
						return rc;
				}
				for (b = a; b < L; b++)
					for (l = 0; l < K; l++)
						tb->t[(a * L + b) * KK + f * K + l] =
						        isfinite(pre.sum_s) && b <= b_end ? row[(b - a) * K + l] : INFINITY;
			}
			tb->done[a] = 1;
		}
		return UNIAP_OK;
	}
	for (f = 0; f < K; f++) {
		int have = 0; /* bk->snap[0] holds row a+1's fronts for row a */

		for (a = a_hi + 1; a-- > a_lo;) {
			size_t m = tb->same[a], pos;
			int cont;

			if (tb->done[a]) {
				have = 0;
				continue;
			}
			rc = dp_check_time(d, err);
			if (rc != UNIAP_OK)
				return rc;
			cont = have && m >= 1 && bk->snap[0].valid && bk->snap[0].pos == a + m;
			if (cont) {
				/* row a after layer a+m-1 is row a+1 after layer a+m */
				bk->snap[0].pos = a + m - 1;
				for (b = a; b < a + m; b++)
					for (l = 0; l < K; l++)
						row[(b - a) * K + l] = tb->t[((a + 1) * L + b + 1) * KK + f * K + l];
			}
			/* the row below needs this row's fronts after layer (a-1) + same[a-1] + 1 - 1 */
			pos = a > a_lo ? a - 1 + tb->same[a - 1] : SIZE_MAX;
			rc = dps_block_run(d, bk, a, f, stage, L - 1, t_cap, row, 0, cont ? &bk->snap[0] : NULL,
			                   pos != SIZE_MAX && tb->same[a - 1] >= 1 ? &bk->snap[1] : NULL, pos, NULL,
			                   err);
			if (rc != UNIAP_OK)
				return rc;
			{
				struct dps_snap t = bk->snap[0];

				bk->snap[0] = bk->snap[1];
				bk->snap[1] = t;
			}
			have = 1;
			for (b = a; b < L; b++)
				for (l = 0; l < K; l++)
					tb->t[(a * L + b) * KK + f * K + l] = row[(b - a) * K + l];
		}
	}
	for (a = a_lo; a <= a_hi; a++)
		tb->done[a] = 1;
	return UNIAP_OK;
}

/* The Pareto front of the labels of state (s, b, k), from the previous stage's states, into cv. */
static int dps_gather(struct dp_inst *d, const struct dps_table *tb, const struct dps_vec *lab,
                      const size_t *start, int s, size_t b, size_t k, struct dps_vec *cv)
{
	size_t L = d->n_layers, K = d->k, pb, f, pk, j;
	int left = d->pp - 1 - s;

	if (s == 0) {
		/* row 0 holds the least time over every first strategy under f = 0 (dps_table_fill) */
		for (f = 0; f < 1; f++) {
			double t = tb->t[(0 * L + b) * K * K + f * K + k];
			struct dps_label x;

			if (!isfinite(t))
				continue;
			x.sum_s = t;
			x.max_s = d->c > 1 ? t : 0;
			x.parent = DP_NONE;
			x.a = 0;
			x.f = K; /* any: the block DP picks it */
			x.b = b;
			x.k = k;
			if (dp_prune(d, dp_lower_bound(d, b, left, x.sum_s, x.max_s, 0, 0)))
				continue;
			d->labels++;
			if (dps_front_add(cv, &x, (double)(d->c - 1)) != 0)
				return -1;
		}
		return 0;
	}
	/* the previous stage ends at pb (strategy pk), this one is pb+1 .. b (first strategy f) */
	for (pb = (size_t)s - 1; pb < b; pb++) {
		const struct cost_edge *e = d->chain[pb];
		size_t a = pb + 1;

		for (pk = 0; pk < K; pk++) {
			size_t pidx = ((size_t)(s - 1) * L + pb) * K + pk;

			if (start[pidx] == start[pidx + 1])
				continue;
			for (f = 0; f < K; f++) {
				double t = tb->t[(a * L + b) * K * K + f * K + k];
				double r = e->cross_stage_s[pk * K + f];

				if (!isfinite(t))
					continue;
				for (j = start[pidx]; j < start[pidx + 1]; j++) {
					const struct dps_label *p = &lab->v[j];
					struct dps_label x;

					x.sum_s = p->sum_s + r + t;
					x.max_s = d->c > 1 ? fmax(p->max_s, fmax(r, t)) : 0;
					if (dp_prune(d, dp_lower_bound(d, b, left, x.sum_s, x.max_s, 0, 0)))
						continue;
					x.parent = j;
					x.a = a;
					x.f = f;
					x.b = b;
					x.k = k;
					d->labels++;
					if (dps_front_add(cv, &x, (double)(d->c - 1)) != 0)
						return -1;
				}
			}
		}
	}
	return 0;
}

/* dp-stages over d; same contract as dpc_run. */
static uniap_code dps_run(struct dp_inst *d, int *stage_out, size_t *strategy_out, double *tpi_s,
                          int *found, struct uniap_err *err)
{
	struct dps_vec lab = {0}, cv = {0};
	struct dps_table tb = {0};
	struct dps_block bk = {0};
	double *row = NULL, best_tpi = INFINITY, cm = (double)(d->c - 1);
	size_t *start = NULL; /* [(s * L + b) * K + k] first label of the state, [.. + 1] its end */
	size_t L = d->n_layers, K = d->k, n_states, b, k, j, i, best = DP_NONE;
	int s, pp = d->pp;
	uniap_code rc = UNIAP_OK;

	*found = 0;
	*tpi_s = INFINITY;
	n_states = (size_t)pp * L * K; /* within the caps: dp_check_caps */
	start = calloc(n_states + 1, sizeof(*start));
	tb.t = malloc(L * L * K * K * sizeof(*tb.t));
	tb.done = calloc(L, 1);
	tb.same = calloc(L, sizeof(*tb.same));
	row = malloc(L * K * sizeof(*row));
	if (!start || !tb.t || !tb.done || !tb.same || !row) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	tb.inflight = -1;
	dps_same_init(d, tb.same);
	for (s = 0; s < pp; s++) {
		/* stage s is layers a..b with s <= a and b <= L - pp + s; the last one ends at L - 1 */
		size_t b_hi = L - (size_t)pp + (size_t)s;
		size_t b_lo = s == pp - 1 ? L - 1 : (size_t)s;

		rc = dps_table_fill(d, &tb, &bk, s, &lab, start, row, err);
		if (rc != UNIAP_OK)
			goto out;
		for (b = 0; b < L; b++)
			for (k = 0; k < K; k++) {
				size_t idx = ((size_t)s * L + b) * K + k;

				start[idx] = lab.n;
				if (b < b_lo || b > b_hi)
					continue;
				rc = dp_check_time(d, err);
				if (rc != UNIAP_OK)
					goto out;
				cv.n = 0;
				if (dps_gather(d, &tb, &lab, start, s, b, k, &cv) != 0) {
					rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
					goto out;
				}
				if (lab.n + cv.n > d->cap) {
					rc = err_set(err, UNIAP_E_LIMIT, "dp-stages: more than %zu labels", d->cap);
					goto out;
				}
				for (i = 0; i < cv.n; i++)
					if (dps_push(&lab, &cv.v[i]) != 0) {
						rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
						goto out;
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
	if (best == DP_NONE || !(best_tpi < d->cutoff_s)) {
		if (best != DP_NONE)
			d->cut_pruned = 1;
		goto out;
	}
	/* rebuild each stage's strategies by re-running its block DP with a trace */
	for (j = best, s = pp - 1; j != DP_NONE; j = lab.v[j].parent, s--) {
		const struct dps_label *x = &lab.v[j];
		size_t t_idx, u;

		if (s < 0) {
			rc = err_set(err, UNIAP_E_INTERNAL, "dp-stages: trace longer than pp");
			goto out;
		}
		rc = dps_block_run(d, &bk, x->a, x->f, s, x->b, dp_stage_cap(d), row, 1, NULL, NULL, 0, NULL,
		                   err);
		if (rc != UNIAP_OK)
			goto out;
		t_idx = bk.trace_first[(x->b - x->a) * K + x->k];
		if (t_idx >= bk.trace.n || bk.trace.v[t_idx].k != x->k) {
			rc = err_set(err, UNIAP_E_INTERNAL, "dp-stages: block trace lost");
			goto out;
		}
		for (u = x->b + 1; u-- > x->a;) {
			const struct dps_tm *y = &bk.trace.v[t_idx];

			stage_out[u] = s;
			strategy_out[u] = y->k;
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
	*found = 1;
	*tpi_s = best_tpi;
out:
	free(start);
	free(lab.v);
	free(cv.v);
	free(tb.t);
	free(tb.done);
	free(tb.same);
	free(row);
	dps_block_release(&bk);
	return rc;
}

/* ------------------------------------------------------------ driver */

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

/*
 * A lower bound of every plan's TPI: every plan starts with layer 0 on stage 0
 * under some strategy k, so the least dp_lower_bound over those starts.
 */
static double dp_root_bound(const struct dp_inst *d)
{
	double best = INFINITY;
	size_t k;

	for (k = 0; k < d->k; k++) {
		double a = d->time_s[k], m = dp_mem(d, 0, 0, k);

		if (!(m <= d->limit))
			continue;
		best = fmin(best, dp_lower_bound(d, 0, d->pp, a, 0, d->c > 1 ? a : 0, d->mem_binds ? m : 0));
	}
	return isfinite(best) ? best : 0;
}

/*
 * The size caps, checked once before any run (the beam's dp-chain included,
 * whose states are the same n x pp x K): UNIAP_E_LIMIT past them.  stages:
 * also dp-stages' block table.
 */
static uniap_code dp_check_caps(const struct dp_inst *d, int stages, struct uniap_err *err)
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

typedef uniap_code (*dp_exact_fn)(struct dp_inst *d, int *stage, size_t *strategy, double *tpi_s,
                                  int *found, struct uniap_err *err);

/* Beam incumbent, then the exact program bounded by it; fills out. */
static uniap_code dp_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                           struct opt_result *out, dp_exact_fn exact, const char *method,
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
	if ((rc = dp_check_caps(&d, exact == dps_run, err)) != UNIAP_OK)
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
	return dp_solve(cand, opts, out, dpc_run, OPT_METHOD_DP_CHAIN, err);
}

uniap_code dp_stages_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                           struct opt_result *out, struct uniap_err *err)
{
	return dp_solve(cand, opts, out, dps_run, OPT_METHOD_DP_STAGES, err);
}

/* ------------------------------------------------------------ dp-sweep */

/*
 * dp-sweep: the bottleneck swept from above.  For a threshold x, Q(x) is the
 * least sum S over the plans whose every stage and communication time is at
 * most x: a shortest path over (stage, last layer, out-class of its strategy)
 * with one number per state, on a block table of the least time of each stage
 * block per (in-class of its first strategy, out-class of its last).  A plan P
 * = Q(x) with bottleneck M dominates every plan whose bottleneck lies in
 * [M, x] (their sum is >= S(P), their bottleneck >= M); the plans left have a
 * bottleneck < M and a sum >= S(P), so the next threshold is the double just
 * below M, and the sweep stops once S(P) + (c-1) lo reaches the best TPI, lo
 * being a threshold below which no plan exists (bisection).  Strategies are
 * grouped into classes whose cross-stage rows (out) or columns (in) are equal
 * on every edge, so the boundary between two stages costs the same for any
 * member; the block DP inside a stage still sees every strategy.  Rows of the
 * table are shared by runs of identical layers and by stages with the same
 * in-flight count; entries above the cap (the TPI bound over c: c p <= TPI)
 * are left out.
 */
#define DPW_NONE SIZE_MAX

struct dpw_ent {
	double t, m;
	size_t k;      /* strategy of the block's last layer */
	size_t parent; /* index of the previous layer's entry in hist (traced runs only) */
};

struct dpw_row {
	double cap;  /* computed under this cap; 0: not yet */
	size_t len;  /* lengths 1..len have a finite entry somewhere */
	double *t;   /* owned, [((n - 1) * C + fc) * C + lc] */
};

struct dpw {
	struct dp_inst *d;
	size_t C;          /* classes (the larger of the in and out counts) */
	size_t *oc, *ic;   /* owned, [K]: out- and in-class of each strategy */
	size_t *rep_o, *rep_i; /* owned, [C]: one member of each class (SIZE_MAX: none) */
	size_t *gf, *gb;   /* owned, [K]: continuation group of each strategy, forward and downward */
	size_t ngf, ngb;
	size_t *gf_mem, *gb_mem;     /* owned, [K]: strategies by group */
	size_t *gf_start, *gb_start; /* owned, [K + 1]: each group's first in *_mem */
	size_t *gf_rep, *gb_rep;     /* owned, [K]: one member per group */
	size_t *gf_cls, *gb_cls;     /* owned, [K]: a group's out-class (forward) or in-class */
	size_t *same;      /* owned, [L]: as dps_same_init */
	int *sigma;        /* owned, [pp]: first stage with the same in-flight count */
	struct dpw_row *rows; /* owned, [pp * L]: rows[sigma * L + a] for a >= 1 */
	struct dpw_row *row0; /* owned, [1]: stage 0's row, any first strategy, under fc 0 */
	struct dpw_row *rowb; /* owned, [1]: the last stage's blocks a..L-1 by length, from one
	                         downward run (when pp > 1) */
	double cap;
	double entries;    /* table entries held */
	struct dpw_ent *hist, *buf; /* block DP scratch */
	size_t n_hist, cap_hist, cap_buf;
	size_t *off, *noff;  /* owned, [K + 1]: each group's front of the current (next) step in hist */
	double *none;      /* owned, [C * C]: INFINITY (a length past a row's end) */
	size_t q_lc;       /* the last query's out-class at the last layer */
	double lost_lb;    /* least S + (c-1) M of a traced plan opt_tpi() refused (INFINITY: none):
	                      the downward run adds the last stage's memory from its last layer, so a
	                      stage on the limit to the last bit can pass there and fail in layer order */
	double *in;        /* owned, [L * C]: a query's least S into a stage starting at layer a with
	                      in-class fc (the previous stage and the boundary), for the stage at hand */
	size_t *in_pc;     /* owned, [L * C]: the out-class before it */
	double *V;         /* owned, [pp * L * C]: the query's least S */
	size_t *pa;        /* owned: first layer of the state's last stage */
	size_t *pf, *pc;   /* owned: in-class of that stage's first strategy, out-class before it */
};

static int dpw_grow(struct dpw_ent **v, size_t *cap, size_t need)
{
	struct dpw_ent *nv;
	size_t nc = *cap ? *cap : 1024;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	nv = realloc(*v, nc * sizeof(*nv));
	if (!nv)
		return -1;
	*v = nv;
	*cap = nc;
	return 0;
}

/*
 * Merges the sorted front src[0..ns) (parent indices src_base.., or none),
 * shifted by (dt, dm) and given strategy k (k == SIZE_MAX: kept), into the
 * running Pareto front buf[0..*bn) (sorted by time, memory falling), dropping
 * entries over cap or over the limit.  -1 when out of memory.
 */
static int dpw_merge(struct dpw *w, size_t *bn, const struct dpw_ent *src, size_t ns, size_t src_base,
                     double dt, double dm, size_t k, double cap, double limit)
{
	size_t i0 = 0, j = 0, q = 0, n0 = *bn;
	double mm = INFINITY;
	struct dpw_ent *dst;

	if (ns == 0)
		return 0;
	if (dpw_grow(&w->buf, &w->cap_buf, 2 * (n0 + ns)) != 0)
		return -1;
	dst = w->buf + n0;
	while (i0 < n0 || j < ns) {
		struct dpw_ent y = {0, 0, 0, DPW_NONE};

		if (j < ns) {
			y.t = src[j].t + dt;
			y.m = src[j].m + dm;
			if (!(y.t <= cap))
				j = ns; /* the rest of this front is slower still */
		}
		if (j < ns && (i0 == n0 || y.t < w->buf[i0].t || (y.t == w->buf[i0].t && y.m < w->buf[i0].m))) {
			y.k = k == SIZE_MAX ? src[j].k : k;
			y.parent = src_base == DPW_NONE ? DPW_NONE : src_base + j;
			j++;
			if (y.m <= limit && y.m < mm) {
				mm = y.m;
				dst[q++] = y;
			}
		} else if (i0 < n0) {
			if (w->buf[i0].m < mm) {
				mm = w->buf[i0].m;
				dst[q++] = w->buf[i0];
			}
			i0++;
		}
	}
	memmove(w->buf, dst, q * sizeof(*dst));
	*bn = q;
	return 0;
}

/* Appends the running front buf[0..bn) to hist as the next group's front.  -1 when out of memory. */
static int dpw_push(struct dpw *w, size_t bn)
{
	if (bn == 0)
		return 0; /* hist and buf may not exist yet */
	if (dpw_grow(&w->hist, &w->cap_hist, w->n_hist + bn) != 0)
		return -1;
	memcpy(w->hist + w->n_hist, w->buf, bn * sizeof(*w->buf));
	w->n_hist += bn;
	return 0;
}

/*
 * The block DP from layer a on a stage with `inflight` micro-batches in flight,
 * first strategy of in-class fc (any when fc == SIZE_MAX), at most nmax layers,
 * entries over cap dropped.  Each step keeps, per continuation group of the
 * last strategy (strategies with the same out-class and the same same-stage
 * rows on every edge, whose futures are the same), the (time, memory) Pareto
 * front within the memory limit; each entry keeps its strategy.  out (NULL, or
 * [nmax * C]) gets per length and out-class the least time (INFINITY: none);
 * *len the longest length with an entry.  back: the block grows downwards from
 * its last layer a instead (groups of the first strategy by in-class and
 * columns, out per in-class, fc ignored): the last stage's blocks, which all
 * end at the last layer, in one run.  trace: hist keeps every step (parent
 * indices valid); else only the last.  Fronts are merged, never sorted: a
 * front shifted by a constant stays sorted.  Returns UNIAP_E_TIMEOUT/NOMEM.
 */
static uniap_code dpw_block(struct dpw *w, size_t a, int back, long inflight, size_t fc, size_t nmax,
                            double cap, double *out, size_t *len, int trace, struct uniap_err *err)
{
	struct dp_inst *d = w->d;
	size_t L = d->n_layers, K = d->k, C = w->C, n, k, l, h, g, j, base = 0, bn;
	const size_t *gcls = back ? w->gb_cls : w->gf_cls;
	const size_t *rep = back ? w->gb_rep : w->gf_rep, *mem = back ? w->gb_mem : w->gf_mem;
	const size_t *gst = back ? w->gb_start : w->gf_start;
	size_t G = back ? w->ngb : w->ngf;
	/*
	 * The downward run adds memory from the last layer, opt_tpi() from the first.  Sums of n
	 * non-negative doubles in two orders differ by less than n ulps of the sum (< 1e-12
	 * relative for n <= MODEL_MAX_LAYERS), so with that slack the run refuses no stage the
	 * audit accepts; a plan it accepts and the audit refuses is caught in dpw_keep.
	 */
	double lim = back ? d->limit * (1 + 1e-12) : d->limit;

	if (out)
		for (j = 0; j < nmax * C; j++)
			out[j] = INFINITY;
	*len = 0;
	w->n_hist = 0;
	for (g = 0; g < G; g++) {
		w->off[g] = w->n_hist;
		bn = 0;
		for (j = gst[g]; j < gst[g + 1]; j++) {
			struct dpw_ent x;

			k = mem[j];
			x.t = d->time_s[a * K + k];
			x.m = d->mem_fixed[a * K + k] + (double)inflight * d->mem_micro[a * K + k];
			x.k = k;
			x.parent = DPW_NONE;
			if ((back || fc == SIZE_MAX || w->ic[k] == fc) &&
			    dpw_merge(w, &bn, &x, 1, DPW_NONE, 0, 0, SIZE_MAX, cap, lim) != 0)
				return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		}
		if (dpw_push(w, bn) != 0)
			return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
	}
	w->off[G] = w->n_hist;
	for (n = 1;; n++) {
		size_t u = back ? a - n : a + n, nb;
		const struct cost_edge *e;

		if (w->off[G] == base)
			break;
		*len = n;
		if (out)
			for (g = 0; g < G; g++)
				if (w->off[g + 1] > w->off[g]) {
					double *o = &out[(n - 1) * C + gcls[g]];

					*o = fmin(*o, w->hist[w->off[g]].t);
				}
		if (n == nmax || (back ? n > a : u >= L))
			break;
		if (isfinite(d->deadline_s) && opt_clock_s() > d->deadline_s)
			return err_set(err, UNIAP_E_TIMEOUT, "dp: time limit reached");
		e = d->chain[back ? u : u - 1];
		nb = w->n_hist; /* the next step starts here */
		for (g = 0; g < G; g++) {
			w->noff[g] = w->n_hist;
			bn = 0;
			for (j = gst[g]; j < gst[g + 1]; j++) {
				double tl, ml;

				l = mem[j];
				tl = d->time_s[u * K + l];
				ml = d->mem_fixed[u * K + l] + (double)inflight * d->mem_micro[u * K + l];
				if (!(ml <= lim))
					continue;
				for (h = 0; h < G; h++) {
					double r = e->same_stage_s[back ? l * K + rep[h] : rep[h] * K + l];

					if (w->off[h + 1] > w->off[h] &&
					    dpw_merge(w, &bn, w->hist + w->off[h], w->off[h + 1] - w->off[h], w->off[h],
					              r + tl, ml, l, cap, lim) != 0)
						return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
				}
			}
			if (dpw_push(w, bn) != 0)
				return err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		}
		w->noff[G] = w->n_hist;
		if (!trace) {
			/* keep only the new step, at the start of hist */
			if (w->n_hist > nb)
				memmove(w->hist, w->hist + nb, (w->n_hist - nb) * sizeof(*w->hist));
			w->n_hist -= nb;
			for (g = 0; g <= G; g++)
				w->off[g] = w->noff[g] - nb;
			base = 0;
		} else {
			memcpy(w->off, w->noff, (G + 1) * sizeof(*w->off));
			base = nb;
		}
	}
	return UNIAP_OK;
}

/* The table row for stage s starting at a (computed on first use); NULL on error. */
static struct dpw_row *dpw_row(struct dpw *w, int s, size_t a, uniap_code *rc, struct uniap_err *err)
{
	struct dp_inst *d = w->d;
	size_t L = d->n_layers, C = w->C, fc, n, lc, len, nmax;
	int back = s > 0 && s == d->pp - 1; /* the last stage: blocks a..L-1, one downward run */
	struct dpw_row *r = s == 0 ? w->row0 : back ? w->rowb : &w->rows[(size_t)w->sigma[s] * L + a];
	double *tmp;

	if (r->cap >= w->cap && r->cap > 0)
		return r;
	w->entries -= (double)r->len * C * C;
	free(r->t);
	r->t = NULL;
	r->len = 0;
	nmax = back ? L - (size_t)s : L - a;
	tmp = malloc(nmax * C * sizeof(*tmp));
	if (!tmp) {
		*rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		return NULL;
	}
	for (fc = 0; fc < (s == 0 || back ? 1 : C); fc++) {
		*rc = dpw_block(w, back ? L - 1 : a, back, d->inflight[s], s == 0 ? SIZE_MAX : fc, nmax, w->cap,
		                tmp, &len, 0, err);
		if (*rc != UNIAP_OK)
			goto fail;
		if (len > r->len) {
			double *nt = realloc(r->t, len * C * C * sizeof(*nt));

			if (!nt) {
				*rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
				goto fail;
			}
			for (n = r->len; n < len; n++)
				for (lc = 0; lc < C * C; lc++)
					nt[n * C * C + lc] = INFINITY;
			r->t = nt;
			w->entries += (double)(len - r->len) * C * C;
			r->len = len;
		}
		for (n = 0; n < len; n++)
			for (lc = 0; lc < C; lc++) {
				size_t x;

				if (!back)
					r->t[(n * C + fc) * C + lc] = tmp[n * C + lc];
				else /* tmp per in-class; the last layer has no edge out, any out-class */
					for (x = 0; x < C; x++)
						r->t[(n * C + lc) * C + x] = tmp[n * C + lc];
			}
	}
	free(tmp);
	r->cap = w->cap;
	if (w->entries > DP_TABLE_MAX) {
		*rc = err_set(err, UNIAP_E_LIMIT, "dp-sweep: block table over %.0f entries", DP_TABLE_MAX);
		return NULL;
	}
	return r;
fail:
	free(tmp);
	return NULL;
}

/* Least stage time of layers a..a+n-1 on stage s, first in-class fc, last out-class lc. */
static const double *dpw_entry(struct dpw *w, int s, size_t a, size_t n, uniap_code *rc, struct uniap_err *err)
{
	struct dpw_row *r;
	size_t a0 = a;

	if (s > 0 && s < w->d->pp - 1)
		while (a0 > 1 && w->same[a0 - 1] >= n)
			a0--; /* layers a0-1.. and a0.. agree for n layers: the same row entries */
	r = dpw_row(w, s, a0, rc, err);
	if (!r)
		return NULL;
	if (n > r->len)
		return w->none;
	return &r->t[(n - 1) * w->C * w->C];
}

/*
 * Q(x): least S with every stage and communication time <= x (x <= w->cap).
 * *S_out INFINITY when no plan; else *M_out the bottleneck of that plan, read
 * from the table along the parents (dpw_trace turns them into the plan).
 */
static uniap_code dpw_query(struct dpw *w, double x, double *S_out, double *M_out, struct uniap_err *err)
{
	struct dp_inst *d = w->d;
	size_t L = d->n_layers, C = w->C, b, a, fc, lc, pc, n_states = (size_t)d->pp * L * C, i, best_lc = 0;
	int s, pp = d->pp;
	double best = INFINITY, M = 0;
	uniap_code rc = UNIAP_OK;

	for (i = 0; i < n_states; i++)
		w->V[i] = INFINITY;
	for (s = 0; s < pp; s++) {
		size_t b_hi = L - (size_t)pp + (size_t)s, b_lo = s == pp - 1 ? L - 1 : (size_t)s;

		rc = dp_check_time(d, err);
		if (rc != UNIAP_OK)
			return rc;
		/* the way into this stage at each first layer a and in-class fc, once per stage */
		for (a = s == 0 ? 0 : (size_t)s; a <= b_hi; a++)
			for (fc = 0; fc < C; fc++) {
				double *in = &w->in[a * C + fc];

				*in = s == 0 && a == 0 ? 0 : INFINITY;
				w->in_pc[a * C + fc] = DPW_NONE;
				if (s == 0 || w->rep_i[fc] == SIZE_MAX)
					continue;
				for (pc = 0; pc < C; pc++) {
					double v = w->V[(((size_t)s - 1) * L + a - 1) * C + pc], r;

					if (!isfinite(v) || w->rep_o[pc] == SIZE_MAX)
						continue;
					r = d->chain[a - 1]->cross_stage_s[w->rep_o[pc] * d->k + w->rep_i[fc]];
					if (r <= x && v + r < *in) {
						*in = v + r;
						w->in_pc[a * C + fc] = pc;
					}
				}
			}
		for (b = b_lo; b <= b_hi; b++)
			for (a = (s == 0 ? 0 : b) + 1; a-- > (s == 0 ? 0 : (size_t)s);) {
				size_t n = b - a + 1;
				const double *t = dpw_entry(w, s, a, n, &rc, err);
				int any = 0;

				if (!t)
					return rc;
				for (fc = 0; fc < (s == 0 ? 1 : C); fc++) {
					double in = w->in[a * C + fc];

					for (lc = 0; lc < C; lc++)
						any |= isfinite(t[fc * C + lc]);
					if (!isfinite(in))
						continue;
					for (lc = 0; lc < C; lc++) {
						double tt = t[fc * C + lc];
						size_t idx = ((size_t)s * L + b) * C + lc;

						if (tt <= x && in + tt < w->V[idx]) {
							w->V[idx] = in + tt;
							w->pa[idx] = a;
							w->pf[idx] = fc;
							w->pc[idx] = w->in_pc[a * C + fc];
						}
					}
				}
				if (!any)
					break; /* no block a..b at all: none longer either (costs >= 0) */
			}
	}
	for (lc = 0; lc < C; lc++) {
		double v = w->V[(((size_t)pp - 1) * L + L - 1) * C + lc];

		if (v < best) {
			best = v;
			best_lc = lc;
		}
	}
	*S_out = best;
	*M_out = INFINITY;
	w->q_lc = best_lc;
	if (!isfinite(best))
		return UNIAP_OK;
	/* the bottleneck: each stage's entry and the boundary before it */
	b = L - 1;
	lc = best_lc;
	for (s = pp - 1; s >= 0; s--) {
		size_t idx = ((size_t)s * L + b) * C + lc;
		const double *t;

		a = w->pa[idx];
		fc = w->pf[idx];
		t = dpw_entry(w, s, a, b - a + 1, &rc, err);
		if (!t)
			return rc;
		M = fmax(M, t[fc * C + lc]);
		if (s > 0) {
			pc = w->pc[idx];
			M = fmax(M, d->chain[a - 1]->cross_stage_s[w->rep_o[pc] * d->k + w->rep_i[fc]]);
			b = a - 1;
			lc = pc;
		}
	}
	*M_out = M;
	return UNIAP_OK;
}

/* The plan of the last dpw_query (which found one): each stage's strategies from a traced block run. */
static uniap_code dpw_trace(struct dpw *w, int *stage, size_t *strategy, struct uniap_err *err)
{
	struct dp_inst *d = w->d;
	size_t L = d->n_layers, C = w->C, b, a, fc, lc, pc;
	int s, pp = d->pp;
	uniap_code rc;

	b = L - 1;
	lc = w->q_lc;
	for (s = pp - 1; s >= 0; s--) {
		size_t idx = ((size_t)s * L + b) * C + lc, len, j, k, u, pick = DPW_NONE;
		int back = s > 0 && s == pp - 1;
		double tb = INFINITY;

		a = w->pa[idx];
		fc = w->pf[idx];
		rc = dpw_block(w, back ? b : a, back, d->inflight[s], s == 0 ? SIZE_MAX : fc, b - a + 1, w->cap, NULL,
		               &len, 1, err);
		if (rc != UNIAP_OK)
			return rc;
		if (len != b - a + 1)
			return err_set(err, UNIAP_E_INTERNAL, "dp-sweep: block trace lost");
		/* the run's last step: per group of the last strategy (downward: of the first) */
		for (k = 0; k < (back ? w->ngb : w->ngf); k++)
			if ((back ? w->gb_cls[k] == fc : w->gf_cls[k] == lc) && w->off[k + 1] > w->off[k] &&
			    w->hist[w->off[k]].t < tb) {
				tb = w->hist[w->off[k]].t;
				pick = w->off[k];
			}
		if (pick == DPW_NONE)
			return err_set(err, UNIAP_E_INTERNAL, "dp-sweep: block trace lost");
		for (u = 0, j = pick; u <= b - a; u++, j = w->hist[j].parent) {
			size_t layer = back ? a + u : b - u;

			if (j == DPW_NONE)
				return err_set(err, UNIAP_E_INTERNAL, "dp-sweep: block trace broken");
			stage[layer] = s;
			strategy[layer] = w->hist[j].k;
		}
		if (s > 0) {
			pc = w->pc[idx];
			b = a - 1;
			lc = pc;
		}
	}
	return UNIAP_OK;
}

static void dpw_release(struct dpw *w)
{
	size_t i;

	if (w->rows)
		for (i = 0; i < (size_t)w->d->pp * w->d->n_layers; i++)
			free(w->rows[i].t);
	if (w->row0)
		free(w->row0->t);
	if (w->rowb)
		free(w->rowb->t);
	free(w->rows);
	free(w->row0);
	free(w->rowb);
	free(w->oc);
	free(w->ic);
	free(w->rep_o);
	free(w->rep_i);
	free(w->gf);
	free(w->gb);
	free(w->gf_mem);
	free(w->gb_mem);
	free(w->gf_start);
	free(w->gb_start);
	free(w->gf_rep);
	free(w->gb_rep);
	free(w->gf_cls);
	free(w->gb_cls);
	free(w->same);
	free(w->sigma);
	free(w->hist);
	free(w->buf);
	free(w->off);
	free(w->noff);
	free(w->none);
	free(w->in);
	free(w->in_pc);
	free(w->V);
	free(w->pa);
	free(w->pf);
	free(w->pc);
}

/* Row (col == 0) or column k of an edge's same-stage (cross == 0) or cross-stage matrix. */
static double dpw_cell(const struct dp_inst *d, size_t e, int cross, int col, size_t k, size_t x)
{
	const double *m = cross ? d->chain[e]->cross_stage_s : d->chain[e]->same_stage_s;

	return col ? m[x * d->k + k] : m[k * d->k + x];
}

/*
 * Groups the strategies whose rows (or columns) of the same-stage or
 * cross-stage matrices are equal on every chain edge and whose key (NULL:
 * none) is equal: gid[k] in order of first appearance, *ng groups.  A hash of
 * each strategy's cells finds the candidates; equality is checked cell by
 * cell against the group's first member.  hash: scratch [K], firsts: [K].
 */
static void dpw_group(const struct dp_inst *d, int cross, int col, const size_t *key, size_t *gid, size_t *ng,
                      uint64_t *hash, size_t *firsts)
{
	size_t K = d->k, L = d->n_layers, k, x, e, g;

	for (k = 0; k < K; k++) {
		uint64_t hv = 1469598103934665603ull;

		for (e = 0; e + 1 < L; e++)
			for (x = 0; x < K; x++) {
				double v = dpw_cell(d, e, cross, col, k, x);
				unsigned char b[sizeof(double)];
				size_t i;

				memcpy(b, &v, sizeof(v));
				for (i = 0; i < sizeof(v); i++)
					hv = (hv ^ b[i]) * 1099511628211ull;
			}
		hash[k] = hv;
	}
	*ng = 0;
	for (k = 0; k < K; k++) {
		gid[k] = SIZE_MAX;
		for (g = 0; g < *ng && gid[k] == SIZE_MAX; g++) {
			size_t f = firsts[g];
			int eq = hash[f] == hash[k] && (!key || key[f] == key[k]);

			for (e = 0; e + 1 < L && eq; e++)
				for (x = 0; x < K && eq; x++)
					eq = dpw_cell(d, e, cross, col, k, x) == dpw_cell(d, e, cross, col, f, x);
			if (eq)
				gid[k] = g;
		}
		if (gid[k] == SIZE_MAX) {
			firsts[*ng] = k;
			gid[k] = (*ng)++;
		}
	}
}

/* Members of each group in order (mem, start [ng + 1]), one member (rep) and its class (cls). */
static void dpw_members(size_t K, const size_t *gid, size_t ng, const size_t *cls_of, size_t *mem, size_t *start,
                        size_t *rep, size_t *cls)
{
	size_t g, k, i = 0;

	for (g = 0; g < ng; g++) {
		start[g] = i;
		for (k = 0; k < K; k++)
			if (gid[k] == g) {
				if (i == start[g]) {
					rep[g] = k;
					cls[g] = cls_of[k];
				}
				mem[i++] = k;
			}
	}
	start[ng] = i;
}

/*
 * Strategy classes: equal cross-stage rows (out) or columns (in) on every edge;
 * continuation groups for the block DP: the same out-class and same-stage
 * rows (forward), or in-class and columns (downward).  -1 when out of memory.
 */
static int dpw_classes(struct dpw *w)
{
	struct dp_inst *d = w->d;
	size_t K = d->k, k, no = 0, ni = 0;
	uint64_t *hash = malloc(K * sizeof(*hash));
	size_t *firsts = malloc(K * sizeof(*firsts));

	if (!hash || !firsts) {
		free(hash);
		free(firsts);
		return -1;
	}
	dpw_group(d, 1, 0, NULL, w->oc, &no, hash, firsts);
	dpw_group(d, 1, 1, NULL, w->ic, &ni, hash, firsts);
	dpw_group(d, 0, 0, w->oc, w->gf, &w->ngf, hash, firsts);
	dpw_group(d, 0, 1, w->ic, w->gb, &w->ngb, hash, firsts);
	free(hash);
	free(firsts);
	w->C = no > ni ? no : ni;
	for (k = 0; k < w->C; k++)
		w->rep_o[k] = w->rep_i[k] = SIZE_MAX;
	for (k = K; k-- > 0;) {
		w->rep_o[w->oc[k]] = k;
		w->rep_i[w->ic[k]] = k;
	}
	dpw_members(K, w->gf, w->ngf, w->oc, w->gf_mem, w->gf_start, w->gf_rep, w->gf_cls);
	dpw_members(K, w->gb, w->ngb, w->ic, w->gb_mem, w->gb_start, w->gb_rep, w->gb_cls);
	return 0;
}

/*
 * After a query with a plan of sum S and bottleneck M: when S + (c-1) M may
 * beat *best, traces the plan into st/sk and keeps it in best_st/best_sk if
 * its audited TPI does.
 */
static uniap_code dpw_keep(struct dpw *w, double S, double M, int *st, size_t *sk, int *best_st, size_t *best_sk,
                           double *best, struct uniap_err *err)
{
	size_t n = w->d->n_layers;
	double t;
	uniap_code rc;

	if (!(S + (double)(w->d->c - 1) * M < *best * (1 + 1e-9)))
		return UNIAP_OK;
	rc = dpw_trace(w, st, sk, err);
	if (rc != UNIAP_OK)
		return rc;
	t = opt_tpi(w->d->cand, st, sk);
	if (!isfinite(t))
		w->lost_lb = fmin(w->lost_lb, S + (double)(w->d->c - 1) * M);
	if (isfinite(t) && t < *best) {
		*best = t;
		memcpy(best_st, st, n * sizeof(*st));
		memcpy(best_sk, sk, n * sizeof(*sk));
	}
	return UNIAP_OK;
}

/* A result without a plan: status, bound, no TPI. */
static void dpw_no_plan(struct opt_result *out, enum opt_status status, double bound_s)
{
	out->status = status;
	out->bound_s = bound_s;
	out->tpi_s = INFINITY;
	out->gap = INFINITY;
}

/* One threshold: dpw_query at x, counted, then dpw_keep when it found a plan. */
static uniap_code dpw_step(struct dpw *w, double x, double *S, double *M, int *st, size_t *sk, int *best_st,
                           size_t *best_sk, double *best, size_t *queries, struct uniap_err *err)
{
	uniap_code rc = dpw_query(w, x, S, M, err);

	(*queries)++;
	if (rc != UNIAP_OK || !isfinite(*S))
		return rc;
	return dpw_keep(w, *S, *M, st, sk, best_st, best_sk, best, err);
}

uniap_code dp_sweep_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                          struct opt_result *out, struct uniap_err *err)
{
	struct dp_inst d;
	struct dpw w;
	size_t n, K, L, u, k, i, queries = 0;
	int *st = NULL, *best_st = NULL, s, t;
	size_t *sk = NULL, *best_sk = NULL;
	double c1, g = 0, g_max = 0, g_lim, S = INFINITY, M = INFINITY, best = INFINITY, lo = 0, hi, S_last = 0,
	       M_last, g_done = 0, covered = -1;
	uniap_code rc;

	rc = dp_inst_init(&d, cand, opts, err);
	if (rc != UNIAP_OK)
		return rc;
	memset(&w, 0, sizeof(w));
	w.d = &d;
	w.lost_lb = INFINITY;
	out->method = OPT_METHOD_DP_SWEEP;
	n = L = d.n_layers;
	K = d.k;
	c1 = (double)(d.c - 1);
	st = calloc(n, sizeof(*st));
	best_st = calloc(n, sizeof(*best_st));
	sk = calloc(n, sizeof(*sk));
	best_sk = calloc(n, sizeof(*best_sk));
	w.oc = calloc(K, sizeof(*w.oc));
	w.ic = calloc(K, sizeof(*w.ic));
	w.rep_o = calloc(K, sizeof(*w.rep_o));
	w.rep_i = calloc(K, sizeof(*w.rep_i));
	w.gf = calloc(K, sizeof(*w.gf));
	w.gb = calloc(K, sizeof(*w.gb));
	w.gf_mem = calloc(K, sizeof(*w.gf_mem));
	w.gb_mem = calloc(K, sizeof(*w.gb_mem));
	w.gf_start = calloc(K + 1, sizeof(*w.gf_start));
	w.gb_start = calloc(K + 1, sizeof(*w.gb_start));
	w.gf_rep = calloc(K, sizeof(*w.gf_rep));
	w.gb_rep = calloc(K, sizeof(*w.gb_rep));
	w.gf_cls = calloc(K, sizeof(*w.gf_cls));
	w.gb_cls = calloc(K, sizeof(*w.gb_cls));
	w.same = calloc(L, sizeof(*w.same));
	w.sigma = calloc((size_t)d.pp, sizeof(*w.sigma));
	w.rows = calloc((size_t)d.pp * L, sizeof(*w.rows));
	w.row0 = calloc(1, sizeof(*w.row0));
	w.rowb = calloc(1, sizeof(*w.rowb));
	w.off = calloc(K + 1, sizeof(*w.off));
	w.noff = calloc(K + 1, sizeof(*w.noff));
	if (!st || !best_st || !sk || !best_sk || !w.oc || !w.ic || !w.rep_o || !w.rep_i || !w.same || !w.sigma ||
	    !w.rows || !w.row0 || !w.rowb || !w.off || !w.noff || !w.gf || !w.gb || !w.gf_mem || !w.gb_mem ||
	    !w.gf_start || !w.gb_start || !w.gf_rep || !w.gb_rep || !w.gf_cls || !w.gb_cls || dpw_classes(&w) != 0) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	if ((double)d.pp * L * w.C > (double)d.cap * 4) {
		rc = err_set(err, UNIAP_E_LIMIT, "dp-sweep: %zu x %d x %zu states is over the cap", L, d.pp, w.C);
		goto out;
	}
	w.V = malloc((size_t)d.pp * L * w.C * sizeof(*w.V));
	w.pa = malloc((size_t)d.pp * L * w.C * sizeof(*w.pa));
	w.pf = malloc((size_t)d.pp * L * w.C * sizeof(*w.pf));
	w.pc = malloc((size_t)d.pp * L * w.C * sizeof(*w.pc));
	w.none = malloc(w.C * w.C * sizeof(*w.none));
	w.in = malloc(L * w.C * sizeof(*w.in));
	w.in_pc = malloc(L * w.C * sizeof(*w.in_pc));
	if (!w.V || !w.pa || !w.pf || !w.pc || !w.none || !w.in || !w.in_pc) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	for (i = 0; i < w.C * w.C; i++)
		w.none[i] = INFINITY;
	dps_same_init(&d, w.same);
	for (s = 0; s < d.pp; s++)
		for (t = 0; t <= s; t++)
			if (d.inflight[t] == d.inflight[s]) {
				w.sigma[s] = t;
				break;
			}
	/* every stage or communication time is at most g_max: all layers at their slowest, plus
	 * every edge at its dearest */
	for (u = 0; u < L; u++) {
		double worst = 0;

		for (k = 0; k < K; k++)
			worst = fmax(worst, d.time_s[u * K + k]);
		g_max += worst;
		if (u + 1 < L) {
			worst = 0;
			for (i = 0; i < K * K; i++)
				worst = fmax(worst, fmax(d.chain[u]->same_stage_s[i], d.chain[u]->cross_stage_s[i]));
			g_max += worst;
		}
	}
	/* TPI = S + (c-1) M >= c M, so a plan under the cutoff has M < cutoff / c */
	g_lim = isfinite(d.cutoff_s) ? fmin(g_max, d.cutoff_s / (double)d.c) : g_max;
	/* the first cap: the least time of everything spread evenly (rows cost more the higher the
	 * cap; it grows by half while no plan fits under it, and to best / c once one does) */
	{
		double first = INFINITY;

		for (k = 0; k < K; k++)
			first = fmin(first, d.time_s[k]);
		g = fmin(g_lim, fmax((d.rem_s[0] + first) / d.pp, d.rem_peak_s[0]));
		if (!(g > 0))
			g = fmin(g_lim, 1e-9);
		/* under a cutoff its own cap, the tightest valid one, decides in one round */
		if (isfinite(d.cutoff_s))
			g = g_lim;
	}
	/* the memory-priced bound of the other DPs already reaches the cutoff: nothing to build */
	if (isfinite(d.cutoff_s) && dp_root_bound(&d) >= d.cutoff_s) {
		dpw_no_plan(out, OPT_PRUNED, d.cutoff_s);
		snprintf(out->note, sizeof(out->note), "dp-sweep: the root bound reaches the cutoff");
		goto done;
	}
	/*
	 * Rounds, each with the table under cap g: Q(g), then (first round) the floor lo by
	 * bisection, then the sweep down to what the earlier rounds covered.  Plans with M > g
	 * have TPI >= c M > c g, so a round ends the search once c g >= best; else the next round
	 * raises g to best / c (a plan under no cap: g grows by half).
	 */
	for (;;) {
		w.cap = g;
		rc = dpw_step(&w, g, &S, &M, st, sk, best_st, best_sk, &best, &queries, err);
		if (rc != UNIAP_OK)
			goto stop;
		if (!isfinite(S)) {
			lo = fmax(lo, g); /* no plan at all with every time <= g */
			if (g >= g_lim)
				break;
			g = fmin(g_lim, 1.5 * g);
			continue;
		}
		S_last = S;
		M_last = M;
		g_done = g;
		hi = M;
		while (d.c > 1 && covered < 0 && hi - lo > 1e-9 * hi && S_last + c1 * lo < best * (1 - 1e-12)) {
			double mid = lo + (hi - lo) / 2;

			rc = dpw_step(&w, mid, &S, &M, st, sk, best_st, best_sk, &best, &queries, err);
			if (rc != UNIAP_OK)
				goto stop;
			if (isfinite(S))
				hi = M;
			else
				lo = mid;
		}
		/* the sweep: plans with a bottleneck in [M_last, previous threshold] are dominated */
		while (d.c > 1 && S_last + c1 * lo < best * (1 - 1e-12)) {
			double x = nextafter(M_last, 0);

			if (!(x > lo) || x <= covered)
				break;
			rc = dpw_step(&w, x, &S, &M, st, sk, best_st, best_sk, &best, &queries, err);
			if (rc != UNIAP_OK)
				goto stop;
			if (!isfinite(S))
				break;
			S_last = S;
			M_last = M;
		}
		covered = g;
		if (best <= (double)d.c * g || g >= g_lim)
			break;
		g = fmin(g_lim, best / (double)d.c);
	}
	if (w.lost_lb < best * (1 + 1e-12)) {
		/*
		 * A plan the audit refused by a rounding of its memory may have hidden a valid one
		 * just above it: no claim of optimality, but nothing is below its S + (c-1) M
		 * (up to the same rounding).
		 */
		snprintf(out->note, sizeof(out->note), "dp-sweep: a plan on the memory limit failed the audit "
		         "by rounding; the bound holds");
		if (!isfinite(best)) {
			dpw_no_plan(out, OPT_UNKNOWN, w.lost_lb * (1 - 1e-12));
			goto done;
		}
		out->status = OPT_FEASIBLE;
		out->bound_s = fmin(best, w.lost_lb * (1 - 1e-12));
		goto plan;
	}
	if (!isfinite(best)) {
		/* no plan with every time <= g_lim */
		dpw_no_plan(out, g_lim < g_max ? OPT_PRUNED : OPT_INFEASIBLE, g_lim < g_max ? d.cutoff_s : INFINITY);
		goto done;
	}
	if (!(best < d.cutoff_s)) {
		dpw_no_plan(out, OPT_PRUNED, d.cutoff_s);
		goto done;
	}
	out->status = OPT_OPTIMAL;
	out->bound_s = best;
	out->gap = 0;
	goto plan;
stop:
	if (rc != UNIAP_E_TIMEOUT)
		goto out;
	err_clear(err);
	rc = UNIAP_OK;
	if (!isfinite(best)) {
		dpw_no_plan(out, OPT_UNKNOWN, dp_root_bound(&d));
		snprintf(out->note, sizeof(out->note), "dp-sweep: time limit reached before a plan; the bound holds");
		goto done;
	}
	out->status = OPT_FEASIBLE;
	/* what is left: a bottleneck over g_done (TPI >= c g_done), or a sum >= S_last (the top
	 * of the last round whose first query ended) and a bottleneck > lo */
	out->bound_s = fmin(fmin(best, (double)d.c * g_done), fmax(dp_root_bound(&d), S_last + c1 * lo));
	out->bound_s = fmin(out->bound_s, w.lost_lb * (1 - 1e-12));
	snprintf(out->note, sizeof(out->note), "dp-sweep: time limit reached after %zu thresholds", queries);
plan:
	out->n_layers = n;
	out->stage = best_st;
	out->strategy = best_sk;
	best_st = NULL;
	best_sk = NULL;
	out->tpi_s = opt_tpi(cand, out->stage, out->strategy);
	out->gap = out->tpi_s > 0 ? (out->tpi_s - out->bound_s) / out->tpi_s : 0;
done:
	out->nodes = (long)queries;
	if (!out->note[0])
		snprintf(out->note, sizeof(out->note), "dp-sweep: %zu thresholds, %zu strategy classes, %.0f table entries",
		         queries, w.C, w.entries);
out:
	free(st);
	free(sk);
	free(best_st);
	free(best_sk);
	dpw_release(&w);
	dp_inst_release(&d);
	return rc;
}
