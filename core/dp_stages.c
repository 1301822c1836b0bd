/*
 * dp_stages.c - dp-stages (dp.h, dp_int.h): one stage at a time over a
 * table of the least time of every block of layers per first/last strategy,
 * with an outer DP over (stage, last layer, last strategy).  Runs under
 * dp_chain.c's driver; uses dp_inst.c.
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
 *   sum_s  every p and o up to stage s;
 *   max_s  the largest cycle of the stages before s (cost.h: receive,
 *          compute, send; transfers block both ranks);
 *   open_s stage s's cycle so far: its receive and its layers (its send is
 *          the next boundary's, not known yet).
 * TPI = sum + (c-1) max(max_s, open_s + o_s, later cycles) is non-decreasing
 * in each and the future adds the same to every label of a state, so the
 * fronts of dps_front_add are exact.
 */
struct dps_label {
	double sum_s, max_s, open_s;
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
 * y dominates x when no completion makes y's TPI exceed x's: the future adds
 * the same sum F to both and TPI = sum + F + cm max(max, open + r, Z), so
 * TPI(y) - TPI(x) <= y.sum - x.sum + cm max(0, y.max - x.max, y.open - x.open)
 * (cm = c - 1), and y dominates x when that is <= 0.
 */
static int dps_dominates(const struct dps_label *y, const struct dps_label *x, double cm)
{
	double up = fmax(0, fmax(y->max_s - x->max_s, y->open_s - x->open_s));

	return y->sum_s + cm * up <= x->sum_s;
}

/*
 * Adds x to fr unless an entry dominates it (dps_dominates); drops the entries
 * x dominates.  Returns -1 when out of memory.
 */
static int dps_front_add(struct dps_vec *fr, const struct dps_label *x, double cm)
{
	size_t i, n = 0;

	for (i = 0; i < fr->n; i++)
		if (dps_dominates(&fr->v[i], x, cm))
			return 0;
	for (i = 0; i < fr->n; i++)
		if (!dps_dominates(x, &fr->v[i], cm))
			fr->v[n++] = fr->v[i];
	fr->n = n;
	return dps_push(fr, x);
}

/* The block table of the stage being processed. */
struct dps_table {
	double *t;           /* [(a * L + b) * K*K + f*K + l] */
	long inflight;       /* the inflight value the rows were computed for; -1: none */
	unsigned char *done; /* [L] row a computed */
	size_t *same;        /* [L]: layers a.. and a+1.. are identical (costs, memory and the same-stage
	                        matrices between them) for this many layers */
};

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
					pre.max_s = fmin(pre.max_s, fmax(lab->v[j].max_s, lab->v[j].open_s));
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
			x.max_s = 0;
			x.open_s = d->c > 1 ? t : 0;
			x.parent = DP_NONE;
			x.a = 0;
			x.f = K; /* any: the block DP picks it */
			x.b = b;
			x.k = k;
			if (dp_prune(d, dp_lower_bound(d, b, left, x.sum_s, fmax(x.max_s, x.open_s), 0, 0)))
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

					/* the previous stage's cycle closes with this boundary's send,
					 * this one's opens with its receive */
					x.sum_s = p->sum_s + r + t;
					x.max_s = d->c > 1 ? fmax(p->max_s, p->open_s + r) : 0;
					x.open_s = d->c > 1 ? r + t : 0;
					if (dp_prune(d, dp_lower_bound(d, b, left, x.sum_s, fmax(x.max_s, x.open_s), 0, 0)))
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
	dp_same_init(d, tb.same);
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
			double t = lab.v[j].sum_s + cm * fmax(lab.v[j].max_s, lab.v[j].open_s);

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

uniap_code dp_stages_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                           struct opt_result *out, struct uniap_err *err)
{
	return dp_drive(cand, opts, out, dps_run, 1, OPT_METHOD_DP_STAGES, err);
}
