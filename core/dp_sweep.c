/*
 * dp_sweep.c - dp-sweep (dp.h, dp_int.h): the bottleneck swept down from
 * above, a shortest path per threshold; no labels, no beam.  Uses dp_inst.c.
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

/* ------------------------------------------------------------ dp-sweep */

/*
 * dp-sweep: the bottleneck swept from above.  For a threshold x, Q(x) is the
 * least sum S over the plans whose every stage cycle (cost.h: receive,
 * compute, send) is at most x: a shortest path over (stage, last layer,
 * out-class of its strategy, in-class of the next stage's first) with one
 * number per state, on a block table of the least time of each stage
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
	size_t *same;      /* owned, [L]: as dp_same_init */
	size_t *edist;     /* owned, [L]: the chain edges whose matrices differ bit for bit from the
	                      edge before them (runs of identical layers share one) */
	size_t n_edist;
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
	double *in;        /* owned, [L * C * C]: a query's ways into a stage starting at layer a with
	                      in-class fc, by the transfer of its boundary (in_r, ascending): the least S
	                      of the previous stages (their last send included) among those up to each */
	double *in_r;      /* owned, [L * C * C]: that transfer */
	size_t *in_pc;     /* owned, [L * C * C]: the out-class before it */
	size_t *in_n;      /* owned, [L * C]: how many ways */
	double *V;         /* owned, [pp * L * C * C]: the query's least S at (stage, last layer, out-class
	                      of its last strategy, in-class of the next stage's first), its send included */
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
		/* the entries of each step are its work (opt_options.dp_work_limit) */
		d->labels += (long)(w->n_hist - base);
		if (dp_check_time(d, err) != UNIAP_OK)
			return UNIAP_E_TIMEOUT;
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
	size_t L = d->n_layers, C = w->C, K = d->k, b, a, fc, lc, pc, nf, j, best_lc = 0;
	size_t n_states = (size_t)d->pp * L * C * C, i;
	int s, pp = d->pp;
	double best = INFINITY, M = 0;
	uniap_code rc = UNIAP_OK;

	for (i = 0; i < n_states; i++)
		w->V[i] = INFINITY;
	for (s = 0; s < pp; s++) {
		size_t b_hi = L - (size_t)pp + (size_t)s, b_lo = s == pp - 1 ? L - 1 : (size_t)s;
		int last = s == pp - 1;

		/* a stage's ways in and out are its work (opt_options.dp_work_limit) */
		d->labels += (long)(L * C * C);
		rc = dp_check_time(d, err);
		if (rc != UNIAP_OK)
			return rc;
		/* the ways into this stage at each first layer a and in-class fc: every previous
		 * out-class pc whose transfer r fits, by r, with the least S so far among those
		 * up to each (the previous stage's S already holds r) */
		for (a = s == 0 ? 0 : (size_t)s; a <= b_hi; a++)
			for (fc = 0; fc < C; fc++) {
				size_t o = (a * C + fc) * C, n = 0;

				if (s == 0) {
					if (a == 0 && fc == 0) {
						w->in_r[o] = 0;
						w->in[o] = 0;
						w->in_pc[o] = DPW_NONE;
						n = 1;
					}
				} else if (w->rep_i[fc] != SIZE_MAX) {
					for (pc = 0; pc < C; pc++) {
						double v = w->V[((((size_t)s - 1) * L + a - 1) * C + pc) * C + fc], r;
						size_t m;

						if (!isfinite(v) || w->rep_o[pc] == SIZE_MAX)
							continue;
						r = d->chain[a - 1]->cross_stage_s[w->rep_o[pc] * K + w->rep_i[fc]];
						if (!(r <= x))
							continue;
						/* insertion by r */
						for (m = n; m > 0 && w->in_r[o + m - 1] > r; m--) {
							w->in_r[o + m] = w->in_r[o + m - 1];
							w->in[o + m] = w->in[o + m - 1];
							w->in_pc[o + m] = w->in_pc[o + m - 1];
						}
						w->in_r[o + m] = r;
						w->in[o + m] = v;
						w->in_pc[o + m] = pc;
						n++;
					}
					for (j = 1; j < n; j++) /* prefix minima of S */
						if (w->in[o + j - 1] <= w->in[o + j]) {
							w->in[o + j] = w->in[o + j - 1];
							w->in_pc[o + j] = w->in_pc[o + j - 1];
						}
				}
				w->in_n[a * C + fc] = n;
			}
		for (b = b_lo; b <= b_hi; b++)
			for (a = (s == 0 ? 0 : b) + 1; a-- > (s == 0 ? 0 : (size_t)s);) {
				size_t n = b - a + 1;
				const double *t = dpw_entry(w, s, a, n, &rc, err);
				int any = 0;

				if (!t)
					return rc;
				for (fc = 0; fc < (s == 0 ? 1 : C); fc++) {
					size_t o = (a * C + fc) * C, no = w->in_n[a * C + fc];

					for (lc = 0; lc < C; lc++)
						any |= isfinite(t[fc * C + lc]);
					if (no == 0)
						continue;
					for (lc = 0; lc < C; lc++) {
						double tt = t[fc * C + lc];

						if (!(tt <= x))
							continue;
						for (nf = 0; nf < (last ? 1 : C); nf++) {
							double ro = 0, cap, val;
							size_t idx = ((((size_t)s * L + b) * C + lc) * C) + nf;

							if (!last) {
								if (w->rep_o[lc] == SIZE_MAX || w->rep_i[nf] == SIZE_MAX)
									continue;
								ro = d->chain[b]->cross_stage_s[w->rep_o[lc] * K + w->rep_i[nf]];
							}
							/* the stage's cycle, receive + compute + send (cost.h), summed as
							 * the bottleneck below is, so that a plan found under x has M <= x */
							cap = x - tt - ro;
							if (!(cap >= -fabs(x) * 1e-12))
								continue;
							for (j = no; j > 0 && (w->in_r[o + j - 1] + tt) + ro > x; j--)
								;
							if (j == 0)
								continue;
							val = w->in[o + j - 1] + tt + ro;
							if (val < w->V[idx]) {
								w->V[idx] = val;
								w->pa[idx] = a;
								w->pf[idx] = fc;
								w->pc[idx] = w->in_pc[o + j - 1];
							}
						}
					}
				}
				if (!any)
					break; /* no block a..b at all: none longer either (costs >= 0) */
			}
	}
	for (lc = 0; lc < C; lc++) {
		double v = w->V[(((size_t)pp - 1) * L + L - 1) * C * C + lc * C];

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
	/* the bottleneck: each stage's cycle, its receive, block and send */
	b = L - 1;
	lc = best_lc;
	nf = 0;
	for (s = pp - 1; s >= 0; s--) {
		size_t idx = ((((size_t)s * L + b) * C + lc) * C) + nf;
		const double *t;
		double cyc;

		a = w->pa[idx];
		fc = w->pf[idx];
		t = dpw_entry(w, s, a, b - a + 1, &rc, err);
		if (!t)
			return rc;
		/* (receive + compute) + send, as the query summed it */
		pc = DPW_NONE;
		cyc = t[fc * C + lc];
		if (s > 0) {
			pc = w->pc[idx];
			cyc = d->chain[a - 1]->cross_stage_s[w->rep_o[pc] * K + w->rep_i[fc]] + cyc;
		}
		if (s < pp - 1)
			cyc += d->chain[b]->cross_stage_s[w->rep_o[lc] * K + w->rep_i[nf]];
		if (s > 0) {
			b = a - 1;
			lc = pc;
			nf = fc;
		}
		M = fmax(M, cyc);
	}
	*M_out = M;
	return UNIAP_OK;
}

/* The plan of the last dpw_query (which found one): each stage's strategies from a traced block run. */
static uniap_code dpw_trace(struct dpw *w, int *stage, size_t *strategy, struct uniap_err *err)
{
	struct dp_inst *d = w->d;
	size_t L = d->n_layers, C = w->C, b, a, fc, lc, pc, nf;
	int s, pp = d->pp;
	uniap_code rc;

	b = L - 1;
	lc = w->q_lc;
	nf = 0;
	for (s = pp - 1; s >= 0; s--) {
		size_t idx = ((((size_t)s * L + b) * C + lc) * C) + nf, len, j, k, u, pick = DPW_NONE;
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
			nf = fc;
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
	free(w->edist);
	free(w->sigma);
	free(w->hist);
	free(w->buf);
	free(w->off);
	free(w->noff);
	free(w->none);
	free(w->in);
	free(w->in_r);
	free(w->in_pc);
	free(w->in_n);
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
 * none) is equal: gid[k] in order of first appearance, *ng groups.  Only the
 * edges of w->edist are read: an edge equal bit for bit to the one before it
 * decides nothing the earlier one has not.  A hash of each strategy's cells
 * finds the candidates; equality is checked cell by cell against the group's
 * first member.  hash: scratch [K], firsts: [K].
 */
static void dpw_group(const struct dpw *w, int cross, int col, const size_t *key, size_t *gid, size_t *ng,
                      uint64_t *hash, size_t *firsts)
{
	const struct dp_inst *d = w->d;
	size_t K = d->k, k, x, i, e, g;

	for (k = 0; k < K; k++) {
		uint64_t hv = 1469598103934665603ull;

		for (i = 0; i < w->n_edist; i++)
			for (x = 0, e = w->edist[i]; x < K; x++) {
				double v = dpw_cell(d, e, cross, col, k, x);
				uint64_t b;

				memcpy(&b, &v, sizeof(b));
				hv = (hv ^ b) * 1099511628211ull;
			}
		hash[k] = hv;
	}
	*ng = 0;
	for (k = 0; k < K; k++) {
		gid[k] = SIZE_MAX;
		for (g = 0; g < *ng && gid[k] == SIZE_MAX; g++) {
			size_t f = firsts[g];
			int eq = hash[f] == hash[k] && (!key || key[f] == key[k]);

			for (i = 0; i < w->n_edist && eq; i++)
				for (x = 0, e = w->edist[i]; x < K && eq; x++)
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
	size_t L = d->n_layers, e;
	uint64_t *hash = malloc(K * sizeof(*hash));
	size_t *firsts = malloc(K * sizeof(*firsts));

	if (!hash || !firsts) {
		free(hash);
		free(firsts);
		return -1;
	}
	w->n_edist = 0;
	for (e = 0; e + 1 < L; e++)
		if (e == 0 || memcmp(d->chain[e]->same_stage_s, d->chain[e - 1]->same_stage_s, K * K * sizeof(double)) ||
		    memcmp(d->chain[e]->cross_stage_s, d->chain[e - 1]->cross_stage_s, K * K * sizeof(double)))
			w->edist[w->n_edist++] = e;
	dpw_group(w, 1, 0, NULL, w->oc, &no, hash, firsts);
	dpw_group(w, 1, 1, NULL, w->ic, &ni, hash, firsts);
	dpw_group(w, 0, 0, w->oc, w->gf, &w->ngf, hash, firsts);
	dpw_group(w, 0, 1, w->ic, w->gb, &w->ngb, hash, firsts);
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
	w.edist = calloc(L, sizeof(*w.edist));
	w.sigma = calloc((size_t)d.pp, sizeof(*w.sigma));
	w.rows = calloc((size_t)d.pp * L, sizeof(*w.rows));
	w.row0 = calloc(1, sizeof(*w.row0));
	w.rowb = calloc(1, sizeof(*w.rowb));
	w.off = calloc(K + 1, sizeof(*w.off));
	w.noff = calloc(K + 1, sizeof(*w.noff));
	if (!st || !best_st || !sk || !best_sk || !w.oc || !w.ic || !w.rep_o || !w.rep_i || !w.same || !w.sigma ||
	    !w.edist || !w.rows || !w.row0 || !w.rowb || !w.off || !w.noff || !w.gf || !w.gb || !w.gf_mem || !w.gb_mem ||
	    !w.gf_start || !w.gb_start || !w.gf_rep || !w.gb_rep || !w.gf_cls || !w.gb_cls || dpw_classes(&w) != 0) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	if ((double)d.pp * L * w.C * w.C > (double)d.cap * 4) {
		rc = err_set(err, UNIAP_E_LIMIT, "dp-sweep: %zu x %d x %zu x %zu states is over the cap", L, d.pp, w.C,
		             w.C);
		goto out;
	}
	w.V = malloc((size_t)d.pp * L * w.C * w.C * sizeof(*w.V));
	w.pa = malloc((size_t)d.pp * L * w.C * w.C * sizeof(*w.pa));
	w.pf = malloc((size_t)d.pp * L * w.C * w.C * sizeof(*w.pf));
	w.pc = malloc((size_t)d.pp * L * w.C * w.C * sizeof(*w.pc));
	w.none = malloc(w.C * w.C * sizeof(*w.none));
	w.in = malloc(L * w.C * w.C * sizeof(*w.in));
	w.in_r = malloc(L * w.C * w.C * sizeof(*w.in_r));
	w.in_pc = malloc(L * w.C * w.C * sizeof(*w.in_pc));
	w.in_n = malloc(L * w.C * sizeof(*w.in_n));
	if (!w.V || !w.pa || !w.pf || !w.pc || !w.none || !w.in || !w.in_r || !w.in_pc || !w.in_n) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp: out of memory");
		goto out;
	}
	for (i = 0; i < w.C * w.C; i++)
		w.none[i] = INFINITY;
	dp_same_init(&d, w.same);
	for (s = 0; s < d.pp; s++)
		for (t = 0; t <= s; t++)
			if (d.inflight[t] == d.inflight[s]) {
				w.sigma[s] = t;
				break;
			}
	/* every stage cycle is at most g_max: all layers at their slowest, plus every edge at its
	 * dearest (a cycle holds its layers and the two edges around it) */
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
	/* no partition of the layers fits the memory limit (the partition bound, exact on memory):
	 * without it the sweep proves that by raising its cap to g_max, round by round, each
	 * round's table larger (a 126-layer candidate on 65,536 H100s: 8.9 s) */
	if (dp_root_infeasible(&d)) {
		dpw_no_plan(out, OPT_INFEASIBLE, INFINITY);
		snprintf(out->note, sizeof(out->note), "dp-sweep: no split of the layers into %d stages fits the memory "
		         "limit", d.pp);
		goto done;
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
		{
			double ng = fmin(g_lim, best / (double)d.c);

			/* c (best / c) can round to an ulp below best: the cap would not grow and
			 * the same query would repeat forever (no deadline stops it under a work
			 * limit); a plan above g is then at most an ulp better than best */
			if (!(ng > g))
				break;
			g = ng;
		}
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
