/*
 * opt_base.c - what every exact method of the optimizer shares (opt.h): the
 * status names, the clock, options and results, the audit formula opt_tpi()
 * on one assignment, the candidate check, the chain test, the successor
 * lists, and the bounds from whole layers (opt_packing_bound; within each
 * device's memory opt_rank_bound and opt_rank_tpi_bound, which also count two
 * kinds of blocks as the chunks' runs can hold them; opt_transfer_bound).
 * Below the methods (dp.c, dp_dag.c, milp.c) and the front that picks one
 * (opt.c), so that each of them uses this file and none uses another.
 *
 * Thread safety: reentrant.
 * Never: I/O, globals, asserts on input.
 */
#include "opt.h"
#include "schedsim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static const char *const opt_status_names[OPT_STATUS_COUNT] = {
	[OPT_OPTIMAL] = "optimal",
	[OPT_FEASIBLE] = "feasible",
	[OPT_INFEASIBLE] = "infeasible",
	[OPT_PRUNED] = "pruned",
	[OPT_UNKNOWN] = "unknown",
	[OPT_ERROR] = "error",
};

const char *opt_status_name(enum opt_status s)
{
	if ((int)s < 0 || s >= OPT_STATUS_COUNT)
		return "unknown-status";
	return opt_status_names[s];
}

double opt_clock_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void opt_options_init(struct opt_options *o)
{
	memset(o, 0, sizeof(*o));
	o->time_limit_s = 60;
	o->rel_gap = 0;
	o->cutoff_tpi = INFINITY;
	o->early_stop = 0;
	o->early_stop_after_s = 15;
	o->early_stop_gap = 0.04;
	o->threads_inside_cbc = 1;
	o->path = OPT_PATH_AUTO;
	o->dp_label_cap = OPT_DP_LABEL_CAP_DEFAULT;
}

void opt_result_init(struct opt_result *r)
{
	memset(r, 0, sizeof(*r));
	r->status = OPT_UNKNOWN;
	r->tpi_s = INFINITY;
	r->bound_s = 0;
	r->gap = INFINITY;
	r->method = OPT_METHOD_NONE;
}

void opt_result_release(struct opt_result *r)
{
	if (!r)
		return;
	free(r->stage);
	free(r->strategy);
	opt_result_init(r);
}

/* ------------------------------------------------------------ evaluation */

int opt_device_memory(const struct cost_candidate *c, const int *stage, const size_t *strategy, double *mem)
{
	size_t K = cost_k(c), u;
	int pp = c->pp, S = cost_stages(c), v = cost_virtual(c), i;
	double *act = NULL;

	if (pp < 1 || !stage || !strategy || K == 0)
		return -1;
	act = calloc((size_t)S, sizeof(double));
	if (!act)
		return -1;
	for (i = 0; i < pp; i++)
		mem[i] = 0;
	for (u = 0; u < c->n_layers; u++) {
		size_t k = strategy[u];

		i = stage[u];
		if (i < 0 || i >= S || k >= K) {
			free(act);
			return -1;
		}
		if (c->n_peaks > 0) {
			/* the fixed sum, then the device's peak (cost_device_activation) */
			mem[i % pp] += c->memory_fixed_bytes[u * K + k];
			act[i] += c->memory_per_microbatch_bytes[u * K + k];
		} else {
			mem[i % pp] += c->memory_fixed_bytes[u * K + k] +
			               (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + k];
		}
	}
	if (c->n_peaks > 0)
		for (i = 0; i < pp; i++) {
			double chunk[COST_MAX_VIRTUAL_STAGES];
			int j;

			for (j = 0; j < v; j++)
				chunk[j] = act[i + pp * j];
			mem[i] += cost_device_activation(c, i, chunk);
		}
	free(act);
	return 0;
}

double opt_makespan_factor(long c, int pp)
{
	if (c <= 1 || pp < 1)
		return 1;
	return 1 / (1 - pow(1 - 1 / (double)c, pp));
}

int opt_makespan_objective(const struct cost_candidate *c)
{
	return c->makespan && c->pp > 1 &&
	       ((c->schedule == COST_1F1B && cost_virtual(c) == 1) ||
	        (c->schedule == COST_INTERLEAVED && cost_virtual(c) > 1));
}

double opt_tpi(const struct cost_candidate *c, const int *stage, const size_t *strategy)
{
	return opt_tpi_spread(c, stage, strategy, NULL);
}

double opt_tpi_spread(const struct cost_candidate *c, const int *stage, const size_t *strategy, double *spread)
{
	size_t K = cost_k(c), u, e;
	int pp = c->pp, S = cost_stages(c), v = cost_virtual(c), i;
	double *p = NULL, *o, *mem, *load, sum = 0, mx = 0, sq = 0, tpi = INFINITY;
	unsigned char *used;

	if (spread)
		*spread = INFINITY;
	if (pp < 1 || !stage || !strategy || K == 0)
		return INFINITY;
	/* p[S], o[S], mem[pp], load[2 pp], used[S] */
	p = calloc((size_t)S * 2 + (size_t)pp * 3, sizeof(double));
	used = calloc((size_t)S, 1);
	if (!p || !used)
		goto out;
	o = p + S;
	mem = o + S;
	load = mem + pp;
	for (u = 0; u < c->n_layers; u++) {
		size_t k = strategy[u];

		i = stage[u];
		if (i < 0 || i >= S || k >= K)
			goto out;
		used[i] = 1;
		p[i] += c->time_s[u * K + k];
	}
	for (i = 0; i < S; i++)
		if (!used[i])
			goto out;
	if (opt_device_memory(c, stage, strategy, mem) != 0)
		goto out;
	for (i = 0; i < pp; i++)
		if (!(mem[i] <= c->memory_limit_bytes))
			goto out;
	for (e = 0; e < c->n_edges; e++) {
		const struct cost_edge *ed = &c->edges[e];
		int a, b, j;
		size_t kl;

		if (ed->from >= c->n_layers || ed->to >= c->n_layers)
			goto out;
		a = stage[ed->from];
		b = stage[ed->to];
		kl = strategy[ed->from] * K + strategy[ed->to];
		if (a > b)
			goto out;
		if (a == b)
			p[a] += ed->same_stage_s[kl];
		else
			for (j = a; j < b; j++)
				o[j] += ed->cross_stage_s[kl];
	}
	if (v == 1) {
		/* a stage's cycle: receive, compute, send (transfers block both ranks) */
		for (i = 0; i < pp; i++)
			sum += p[i];
		for (i = 0; i + 1 < pp; i++)
			sum += o[i];
		for (i = 0; i < pp; i++) {
			double cyc = (i > 0 ? o[i - 1] : 0) + p[i] + (i + 1 < pp ? o[i] : 0);

			mx = fmax(mx, cyc);
			sq += cyc * cyc;
		}
		tpi = sum + (double)(c->microbatches - 1) * mx;
		if (spread)
			*spread = sq;
		goto out;
	}
	/* interleaved: device loads P_d and link loads O_d, the transfers overlapped (cost.h) */
	for (i = 0; i < S; i++) {
		sum += p[i];
		load[i % pp] += p[i];
	}
	for (i = 0; i + 1 < S; i++) {
		sum += o[i];
		load[pp + i % pp] += o[i];
	}
	for (i = 0; i < 2 * pp; i++) {
		mx = fmax(mx, load[i]);
		sq += load[i] * load[i];
	}
	tpi = sum / v + ((double)c->microbatches - 1.0 / v) * mx;
	if (spread)
		*spread = sq;
out:
	if (isfinite(tpi) && opt_makespan_objective(c)) {
		/* the iteration as run: the longest path of its layout (the spread stays the formula's
		 * loads, a tie-break) */
		struct sched_graph g;
		struct uniap_err err = { 0 };
		double *t = NULL;

		tpi = INFINITY;
		if (sched_graph_build(pp, S, c->microbatches, v > 1 ? COST_INTERLEAVED : COST_1F1B, &g, &err) == UNIAP_OK &&
		    (t = malloc((size_t)(g.n_nodes ? g.n_nodes : 1) * sizeof(*t))) != NULL)
			tpi = sched_graph_length(&g, p, o, t);
		free(t);
		sched_graph_release(&g);
	}
	free(p);
	free(used);
	return tpi;
}

static int opt_bad_cost(double x)
{
	return !isfinite(x) || x < 0;
}

uniap_code opt_candidate_check(const struct cost_candidate *c, struct uniap_err *err)
{
	size_t K, n, u, e, i;

	if (!c)
		return err_set(err, UNIAP_E_INVALID, "candidate: missing");
	K = cost_k(c);
	n = c->n_layers;
	if (c->pp < 1 || c->pp > MODEL_MAX_LAYERS)
		return err_set(err, UNIAP_E_INVALID, "candidate.pp: must be in [1, %d], got %d",
		               MODEL_MAX_LAYERS, c->pp);
	if (c->microbatches < 1)
		return err_set(err, UNIAP_E_INVALID, "candidate.microbatches: must be >= 1, got %ld",
		               c->microbatches);
	if (c->batch < 0 || c->batch > COST_MAX_BATCH)
		return err_set(err, UNIAP_E_INVALID, "candidate.batch: must be in [0, %ld], got %ld", COST_MAX_BATCH,
		               c->batch);
	if (K < 1 || K > STRATEGY_MAX_COUNT)
		return err_set(err, UNIAP_E_INVALID, "candidate.strategies: count must be in [1, %d], got %zu",
		               STRATEGY_MAX_COUNT, K);
	if (n < 1 || n > MODEL_MAX_LAYERS)
		return err_set(err, UNIAP_E_INVALID, "candidate.n_layers: must be in [1, %d], got %zu",
		               MODEL_MAX_LAYERS, n);
	if (c->n_edges > MODEL_MAX_EDGES)
		return err_set(err, UNIAP_E_INVALID, "candidate.n_edges: must be <= %d, got %zu",
		               MODEL_MAX_EDGES, c->n_edges);
	if (!c->inflight || !c->time_s || !c->memory_fixed_bytes || !c->memory_per_microbatch_bytes ||
	    (c->n_edges > 0 && !c->edges))
		return err_set(err, UNIAP_E_INVALID, "candidate: cost arrays missing");
	if (isnan(c->memory_limit_bytes) || c->memory_limit_bytes < 0)
		return err_set(err, UNIAP_E_INVALID, "candidate.memory_limit_bytes: must be >= 0");
	if (c->virtual_stages < 0 || c->virtual_stages > COST_MAX_VIRTUAL_STAGES ||
	    (c->virtual_stages > 1 && (c->schedule != COST_INTERLEAVED || c->pp < 2 ||
	                               (size_t)cost_stages(c) > MODEL_MAX_LAYERS)))
		return err_set(err, UNIAP_E_INVALID, "candidate.virtual_stages: must be 1, or in [2, %d] with the "
		               "interleaved schedule and pp >= 2, got %d", COST_MAX_VIRTUAL_STAGES,
		               c->virtual_stages);
	for (i = 0; i < (size_t)cost_stages(c); i++)
		if (c->inflight[i] < 0)
			return err_set(err, UNIAP_E_INVALID, "candidate.inflight[%zu]: must be >= 0, got %ld",
			               i, c->inflight[i]);
	if (c->n_peaks > 0 && (!c->peaks || c->n_peaks > COST_MAX_PEAK_ROWS))
		return err_set(err, UNIAP_E_INVALID, "candidate.peaks: %zu rows, must be in [1, %ld] and given",
		               c->n_peaks, COST_MAX_PEAK_ROWS);
	for (u = 0; u < c->n_peaks; u++) {
		const long *h = c->peaks + u * (size_t)(cost_virtual(c) + 1);
		int j;

		if (h[0] < 0 || h[0] >= c->pp)
			return err_set(err, UNIAP_E_INVALID, "candidate.peaks[%zu]: device must be in [0, %d), got %ld",
			               u, c->pp, h[0]);
		for (j = 1; j <= cost_virtual(c); j++)
			if (h[j] < 0 || h[j] > c->inflight[h[0] + (long)c->pp * (j - 1)])
				return err_set(err, UNIAP_E_INVALID, "candidate.peaks[%zu][%d]: must be in [0, inflight "
				               "of its stage], got %ld", u, j, h[j]);
	}
	for (u = 0; u < n * K; u++) {
		if (opt_bad_cost(c->time_s[u]))
			return err_set(err, UNIAP_E_INVALID,
			               "candidate.time_s[%zu][%zu]: must be finite and >= 0", u / K, u % K);
		if (opt_bad_cost(c->memory_fixed_bytes[u]))
			return err_set(err, UNIAP_E_INVALID,
			               "candidate.memory_fixed_bytes[%zu][%zu]: must be finite and >= 0", u / K,
			               u % K);
		if (opt_bad_cost(c->memory_per_microbatch_bytes[u]))
			return err_set(err, UNIAP_E_INVALID,
			               "candidate.memory_per_microbatch_bytes[%zu][%zu]: must be finite and >= 0",
			               u / K, u % K);
	}
	for (e = 0; e < c->n_edges; e++) {
		const struct cost_edge *ed = &c->edges[e];

		if (ed->from >= n || ed->to >= n)
			return err_set(err, UNIAP_E_INVALID, "candidate.edges[%zu]: layer out of range", e);
		if (ed->from == ed->to)
			return err_set(err, UNIAP_E_INVALID, "candidate.edges[%zu]: self-loop on layer %zu", e,
			               ed->from);
		if (!ed->same_stage_s || !ed->cross_stage_s)
			return err_set(err, UNIAP_E_INVALID, "candidate.edges[%zu]: cost matrices missing", e);
		for (i = 0; i < K * K; i++)
			if (opt_bad_cost(ed->same_stage_s[i]) || opt_bad_cost(ed->cross_stage_s[i]))
				return err_set(err, UNIAP_E_INVALID,
				               "candidate.edges[%zu]: costs must be finite and >= 0", e);
	}
	return UNIAP_OK;
}

int opt_is_chain(const struct cost_candidate *c)
{
	unsigned char *seen;
	size_t e;
	int ok = 1;

	if (c->n_layers < 1 || c->n_edges != c->n_layers - 1)
		return 0;
	if (c->n_edges == 0)
		return 1;
	seen = calloc(c->n_edges, 1);
	if (!seen)
		return 0;
	for (e = 0; e < c->n_edges && ok; e++) {
		size_t f = c->edges[e].from;

		if (f + 1 >= c->n_layers || c->edges[e].to != f + 1 || seen[f])
			ok = 0;
		else
			seen[f] = 1;
	}
	free(seen);
	return ok;
}

/* ------------------------------------------------------------ warm start */

static int opt_cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x > y ? -1 : x < y;
}

/*
 * A lower bound on T from whole layers: every plan puts each layer on one
 * device (a stage without interleaving), whose load is at least the least
 * times of its layers, and T is at least every device's load (its cycle, or
 * under interleaving the device's sum).  So T is at least the makespan of
 * scheduling the layers' least times on m identical machines, which is at
 * least (with the times sorted in decreasing order, a_1 >= a_2 >= ...) the
 * mean, the largest, and for every k >= 1 the sum a_(km+1-k) + ... + a_(km+1):
 * of the km + 1 largest layers one device holds k + 1 at least (Dell'Amico and
 * Martello's bound for P||Cmax).  The relaxation of the T rows spreads a
 * layer over devices; this bound does not (80 equal blocks and a lighter head
 * on 16 devices: five blocks and the head, where the relaxation has 5.02
 * blocks; docs/optimizer.md, "The MILP").  Sorts least in place.
 */
double opt_packing_bound(double *least, size_t n, int m)
{
	double sum = 0, best = 0, run;
	size_t i, k;

	if (n == 0 || m < 1)
		return 0;
	qsort(least, n, sizeof(double), opt_cmp_desc);
	for (i = 0; i < n; i++)
		sum += least[i];
	best = fmax(sum / m, least[0]);
	for (k = 1; k * (size_t)m + 1 <= n; k++) {
		run = 0;
		for (i = k * (size_t)m - k; i <= k * (size_t)m; i++)
			run += least[i];
		best = fmax(best, run);
	}
	return best;
}

/* ------------------------------------------------------------ rank bound */

/* Front points one opt_rank_bound makes, about: its cost (tens of ms); the
 * fronts' size cap follows from it (opt_rank_bound) */
#define OPT_RANK_WORK 4e6
/* Chunks of a row whose layer may be one of the type at the chunk's own
 * count, each choice searched (2^this of them); more: a charge each. */
#define OPT_RANK_SPECIALS 5
/* The least and the most points of one front. */
#define OPT_RANK_FRONT_MIN 16
#define OPT_RANK_FRONT_MAX 65536

/* A layer count's memory and time (opt_rank_times). */
struct opt_pt {
	double m, t;
};

static int opt_pt_cmp(const void *a, const void *b)
{
	const struct opt_pt *x = a, *y = b;

	if (x->m != y->m)
		return x->m < y->m ? -1 : 1;
	return (x->t > y->t) - (x->t < y->t);
}

/* Sorts pt[0..n) and keeps its Pareto front (memory up, time strictly down)
 * in place; returns its size. */
static size_t opt_pt_front(struct opt_pt *pt, size_t n)
{
	size_t i, out = 0;

	qsort(pt, n, sizeof(*pt), opt_pt_cmp);
	for (i = 0; i < n; i++)
		if (out == 0 || pt[i].t < pt[out - 1].t)
			pt[out++] = pt[i];
	return out;
}

/*
 * One layer more on front[0 .. *size) (memory up, time strictly down): the
 * Pareto front of its points plus each of the K options opt[] within mu, in
 * place; next has room for cap * K points, head for K.  Past cap points, the
 * points of cap equal slices of the memory range merge into one each, its
 * least memory and its least time (the slice's last point's): a point that
 * beats them all, so what follows can only be lower.
 */
static void opt_rank_extend(struct opt_pt *front, size_t *size, const struct opt_pt *opt, size_t K, double mu,
                            size_t cap, struct opt_pt *next, size_t *head)
{
	size_t made = 0, i, k;

	/* the K shifted copies of the front, each sorted, merged in (memory, time)
	 * order; a point is kept when it is faster than every one before it */
	for (k = 0; k < K; k++)
		head[k] = 0;
	for (;;) {
		size_t pick = K;
		struct opt_pt p = { INFINITY, INFINITY };

		for (k = 0; k < K; k++) {
			double pm, pt;

			if (head[k] >= *size)
				continue;
			pm = front[head[k]].m + opt[k].m;
			pt = front[head[k]].t + opt[k].t;
			if (pm < p.m || (pm == p.m && pt < p.t)) {
				p.m = pm;
				p.t = pt;
				pick = k;
			}
		}
		if (pick == K || !(p.m <= mu))
			break;
		head[pick]++;
		if (made == 0 || p.t < next[made - 1].t)
			next[made++] = p;
	}
	if (made > cap) {
		double lo = next[0].m, width = (next[made - 1].m - lo) / (double)(cap - 1);
		size_t out = 0;

		for (i = 0; i < made; i++) {
			if (out > 0 && width > 0 &&
			    floor((next[i].m - lo) / width) == floor((next[out - 1].m - lo) / width)) {
				next[out - 1].t = next[i].t;
				continue;
			}
			next[out++] = next[i];
		}
		made = out;
	}
	memcpy(front, next, made * sizeof(*front));
	*size = made;
}

/*
 * g[m] for m = 0 .. n: a lower bound on the least time of m layers whose
 * memory sums to at most mu, s of them each with one of the ks options of its
 * row of spec[] (s x ks: the layers a chunk must hold, at its own count), the
 * others each with one of the K options opt[]; INFINITY when none fits (m <
 * s among them).  front[m] is the Pareto front of the sums of every such
 * choice (one off it is beaten in both by one on it, and adding a layer keeps
 * that), and g[m] its least time: exact while fronts stay within cap points
 * (opt_rank_extend merges past it: g only falls).  Past top (>= s), g[m] is
 * g[top] plus m - top least times, or INFINITY when the least memories of s
 * special and m - s other layers pass mu.  -1 when out of memory.
 */
static int opt_rank_times(const struct opt_pt *opt, size_t K, const struct opt_pt *spec, size_t ks, size_t s,
                          double mu, size_t n, size_t top, size_t cap, double *g)
{
	size_t wide = K > ks ? K : ks;
	struct opt_pt *front = malloc(cap * sizeof(*front));
	struct opt_pt *next = malloc((cap * wide + 1) * sizeof(*next));
	size_t *head = malloc(wide * sizeof(*head));
	size_t size = 0, m, k, q;
	double tmin = INFINITY, mmin = INFINITY, smin = 0;
	int rc = 0;

	if (!front || !next || !head) {
		rc = -1;
		goto out;
	}
	if (mu >= 0) {
		front[0].m = 0;
		front[0].t = 0;
		size = 1;
	}
	for (q = 0; q < s && size > 0; q++)
		opt_rank_extend(front, &size, spec + q * ks, ks, mu, cap, next, head);
	for (m = 0; m < s && m <= n; m++)
		g[m] = INFINITY;
	if (s <= n)
		g[s] = size ? front[size - 1].t : INFINITY;
	for (k = 0; k < K; k++) {
		tmin = fmin(tmin, opt[k].t);
		mmin = fmin(mmin, opt[k].m);
	}
	for (q = 0; q < s; q++) {
		double least = INFINITY;

		for (k = 0; k < ks; k++)
			least = fmin(least, spec[q * ks + k].m);
		smin += least;
	}
	for (m = s + 1; m <= n; m++) {
		if (m > top) {
			/* drop m - top layers of a plan for m: one for top, at least
			 * (m - top) tmin faster; and m layers need the specials' least
			 * bytes and m - s mmin */
			g[m] = smin + (double)(m - s) * mmin <= mu ? g[top] + (double)(m - top) * tmin : INFINITY;
			continue;
		}
		opt_rank_extend(front, &size, opt, K, mu, cap, next, head);
		g[m] = size ? front[size - 1].t : INFINITY;
	}
out:
	free(front);
	free(next);
	free(head);
	return rc;
}

int opt_same_costs(const struct cost_candidate *c, size_t u, size_t w)
{
	size_t K = cost_k(c);

	return memcmp(c->time_s + u * K, c->time_s + w * K, K * sizeof(double)) == 0 &&
	       memcmp(c->memory_fixed_bytes + u * K, c->memory_fixed_bytes + w * K, K * sizeof(double)) == 0 &&
	       memcmp(c->memory_per_microbatch_bytes + u * K, c->memory_per_microbatch_bytes + w * K,
	              K * sizeof(double)) == 0;
}

int opt_double_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double *opt_sorted_finite(const double *x, size_t n, size_t *count)
{
	double *v = malloc((n ? n : 1) * sizeof(*v));
	size_t i;

	*count = 0;
	if (!v)
		return NULL;
	for (i = 0; i < n; i++)
		if (isfinite(x[i]))
			v[(*count)++] = x[i];
	qsort(v, *count, sizeof(*v), opt_double_cmp);
	return v;
}

void opt_layer_types(const struct cost_candidate *c, size_t *type, size_t *count)
{
	size_t n = c->n_layers, u, w;

	for (u = 0; u < n; u++)
		count[u] = 0;
	for (u = 0; u < n; u++) {
		for (w = 0; w < u && !(type[w] == w && opt_same_costs(c, w, u)); w++)
			;
		type[u] = w; /* u itself when no earlier layer has its costs */
		count[w]++;
	}
}

/*
 * G[0 .. n] (caller-owned) for device d of c and the type of layers whose
 * representative is b (type[u] == b for its n members): opt_rank_bound's
 * G_d.  Under one of d's rows h (its peak rows, or its stages' inflight),
 * the device holds sum fixed + sum_j h_j A_j >= (each member at the row's
 * least entry hmin) + E, where E charges each chunk j the least it can add
 * for the layer it must hold: another type's layer (its least fixed + h_j
 * per-micro-batch bytes; on a chain only a layer u that can be in the
 * chunk's stage s, s <= u <= s + n_layers - S), or a member there (h_j -
 * hmin times the type's least per-micro-batch bytes beyond hmin).
 * Different chunks hold different layers, so the charges add up (each a
 * scan of the layers: none when scan is 0); on a chain (chain 1) device 0's
 * first chunk holds layer 0 and device pp - 1's last the last layer, whose
 * least memory is then that chunk's charge and whose least time G adds.  G
 * is the largest over the rows of the least time within the limit less E
 * (opt_rank_times: fronts up to top layers, each row's capped so that they
 * make about budget points).  -1 as opt_rank_times.
 */
static int opt_rank_device(const struct cost_candidate *c, const size_t *type, size_t b, size_t n, size_t top,
                           int d, int chain, int scan, double budget, size_t fixed_cap, double *G, double *g,
                           struct opt_pt *opt)
{
	size_t K = cost_k(c), k, u, r, i, kept, nsub, sub, q;
	int v = cost_virtual(c), j, rows = 0, rc = -1;
	double amin = INFINITY, slack = 1e-9 * fabs(c->memory_limit_bytes), cap;
	long own[COST_MAX_VIRTUAL_STAGES];
	double nm[COST_MAX_VIRTUAL_STAGES];
	int special[COST_MAX_VIRTUAL_STAGES], nspecial;
	double *gs = malloc((n + 1) * sizeof(*gs));
	struct opt_pt *spec = malloc((size_t)OPT_RANK_SPECIALS * K * sizeof(*spec));

	if (!gs || !spec)
		goto out;
	for (k = 0; k < K; k++)
		amin = fmin(amin, c->memory_per_microbatch_bytes[b * K + k]);
	for (i = 0; i <= n; i++)
		G[i] = 0;
	for (r = 0; r <= c->n_peaks; r++) {
		const long *h;
		long hmin;
		double held = 0, extra = 0;

		if (r < c->n_peaks) {
			if (!c->peaks || c->peaks[r * (size_t)(v + 1)] != d)
				continue;
			h = c->peaks + r * (size_t)(v + 1) + 1;
		} else {
			if (rows > 0)
				break;
			for (j = 0; j < v; j++)
				own[j] = c->inflight[d + c->pp * j];
			h = own;
		}
		rows++;
		hmin = h[0];
		for (j = 1; j < v; j++)
			hmin = h[j] < hmin ? h[j] : hmin;
		nspecial = 0;
		for (j = 0; j < v; j++) {
			size_t end[2];
			int ends = 0;

			/* a chain's first layer opens stage 0 (device 0's first chunk), its last
			 * closes stage S - 1 (device pp - 1's last chunk): when not of the type,
			 * that chunk's layer is known */
			if (chain && d == 0 && j == 0 && type[0] != b)
				end[ends++] = 0;
			if (chain && d == c->pp - 1 && j == v - 1 && type[c->n_layers - 1] != b &&
			    (c->n_layers > 1 || ends == 0))
				end[ends++] = c->n_layers - 1;
			for (q = 0; q < (size_t)ends; q++) {
				double mem = INFINITY;

				for (k = 0; k < K; k++)
					mem = fmin(mem, c->memory_fixed_bytes[end[q] * K + k] +
					                (double)h[j] * c->memory_per_microbatch_bytes[end[q] * K + k]);
				held += mem;
			}
			if (ends > 0 || h[j] == hmin || !scan)
				continue; /* known, a member there costs no more, or no charge (weaker) */
			/* the chunk's layer: another type's (its least memory there), or a member
			 * at this chunk's count (a special layer of opt_rank_times) */
			nm[j] = INFINITY;
			for (u = 0; u < c->n_layers; u++) {
				/* on a chain, layer u's stage s has at least one layer before it per
				 * earlier stage and after it per later one: s <= u <= s + n - S */
				size_t s = (size_t)d + (size_t)c->pp * (size_t)j;

				if (type[u] == b || (chain && (u < s || u > s + c->n_layers - (size_t)cost_stages(c))))
					continue;
				for (k = 0; k < K; k++)
					nm[j] = fmin(nm[j], c->memory_fixed_bytes[u * K + k] +
					                    (double)h[j] * c->memory_per_microbatch_bytes[u * K + k]);
			}
			special[nspecial++] = j;
		}
		for (k = 0; k < K; k++) {
			opt[k].m = c->memory_fixed_bytes[b * K + k] + (double)hmin * c->memory_per_microbatch_bytes[b * K + k];
			opt[k].t = c->time_s[b * K + k];
		}
		kept = opt_pt_front(opt, K);
		if (nspecial > OPT_RANK_SPECIALS) {
			/* too many chunks to choose for: each charged the least it can add
			 * (a member's least per-micro-batch bytes beyond hmin, or another
			 * type's layer), the members' own time not counted */
			for (q = 0; q < (size_t)nspecial; q++)
				extra += fmin((double)(h[special[q]] - hmin) * amin, nm[special[q]]);
			nspecial = 0;
		}
		nsub = (size_t)1 << nspecial;
		cap = fmax(OPT_RANK_FRONT_MIN,
		           fmin(OPT_RANK_FRONT_MAX, budget / ((double)top * (double)kept * (double)nsub)));
		if (fixed_cap > 0)
			cap = (double)fixed_cap;
		for (i = 0; i <= n; i++)
			g[i] = INFINITY;
		/* each choice of which chunks hold a member as their layer: the least over them */
		for (sub = 0; sub < nsub; sub++) {
			double mu = c->memory_limit_bytes - held - extra + slack;
			size_t s = 0;

			for (q = 0; q < (size_t)nspecial; q++) {
				if (!(sub >> q & 1)) {
					mu -= nm[special[q]];
					continue;
				}
				for (k = 0; k < K; k++) {
					spec[s * K + k].m = c->memory_fixed_bytes[b * K + k] +
					                    (double)h[special[q]] * c->memory_per_microbatch_bytes[b * K + k];
					spec[s * K + k].t = c->time_s[b * K + k];
				}
				s++;
			}
			if (!(mu >= 0) || s > n)
				continue;
			if (opt_rank_times(opt, kept, spec, K, s, mu, n, top > s ? top : s, (size_t)cap, gs) != 0)
				goto out;
			for (i = 0; i <= n; i++)
				g[i] = fmin(g[i], gs[i]);
		}
		for (i = 0; i <= n; i++)
			G[i] = fmax(G[i], g[i]);
	}
	/* and the least time of a chain's end layers it holds */
	for (i = 0; chain && i < 2; i++) {
		size_t e = i == 0 ? 0 : c->n_layers - 1;
		double t = INFINITY;

		if ((i == 0 ? d != 0 : d != c->pp - 1) || type[e] == b || (i == 1 && c->n_layers == 1))
			continue;
		for (k = 0; k < K; k++)
			t = fmin(t, c->time_s[e * K + k]);
		for (u = 0; u <= n; u++)
			G[u] += t;
	}
	/* G grows with m from the least count that fits (drop a layer no chunk needs); below
	 * it, where chunks need the type's layers, take the least of the larger counts: lower,
	 * and growing everywhere, as the counts' search needs */
	for (i = n; i-- > 0;)
		G[i] = fmin(G[i], G[i + 1]);
	rc = 0;
out:
	free(gs);
	free(spec);
	return rc;
}

/*
 * The n least of pp nondecreasing sequences, sequence d being rows[d *
 * stride + off + i] for i < cap[d] (head[d]: how many it gave, reset here):
 * their sum into *sum and largest into *most; -1 when fewer than n of them
 * are finite.  O(n pp).
 */
static int opt_least_steps(const double *rows, size_t stride, size_t off, const size_t *cap, int pp, size_t n,
                           size_t *head, double *sum, double *most)
{
	size_t i;
	int d;

	*sum = 0;
	*most = 0;
	for (d = 0; d < pp; d++)
		head[d] = 0;
	for (i = 0; i < n; i++) {
		int pick = -1;
		double low = INFINITY;

		for (d = 0; d < pp; d++)
			if (head[d] < cap[d] && rows[(size_t)d * stride + off + head[d]] < low) {
				low = rows[(size_t)d * stride + off + head[d]];
				pick = d;
			}
		if (pick < 0)
			return -1;
		head[pick]++;
		*sum += low;
		*most = fmax(*most, low);
	}
	return 0;
}

/*
 * A lower bound on TPI = (sum p + sum o) / v + (c - 1/v) max_d P_d (without
 * interleaving, sum p + sum o + (c - 1) times a cycle at least P_d: the same
 * with v = 1) from one type's G (pp rows of N + 1 counts; M the least max of
 * opt_rank_bound), rest the least time of the layers G does not count plus a
 * bound on sum o.  Every plan gives counts m_d summing to N with sum p >=
 * sum_d G_d(m_d) + (the rest's time) and max P >= t = max_d G_d(m_d), so TPI
 * >= (S_t + rest) / v + (c - 1/v) t, S_t the least sum of the G_d over counts
 * summing to N whose G_d(m_d) are all at most t.  With each G_d replaced by
 * its lower convex hull (lower: still a bound) S_t is the sum of the G_d(0)
 * and the N least hull steps within each device's count at t.  The least over
 * the values t of G at or above M is the bound; past OPT_RANK_TPI_STEPS of
 * them, or once (c - 1/v) t alone with the least S passes the best, the rest
 * is bounded by that.  INFINITY when no counts fit.
 */
#define OPT_RANK_TPI_STEPS 4096
static double opt_rank_tpi(const struct cost_candidate *c, const double *G, size_t N, double M, double rest)
{
	int pp = c->pp, d;
	double v = cost_virtual(c), w = (double)c->microbatches - 1.0 / v, best = INFINITY, floor_s = 0, t;
	double steps_s, unused;
	size_t i, m, steps, *fin = calloc((size_t)pp, sizeof(size_t)), *cap = calloc((size_t)pp, sizeof(size_t));
	size_t *head = calloc((size_t)pp, sizeof(size_t)), *pt = malloc((N + 1) * sizeof(size_t));
	double *H = malloc((size_t)pp * (N + 1) * sizeof(double));

	if (!fin || !cap || !head || !pt || !H || !isfinite(M))
		goto out;
	/* each device's hull steps H_d[0 .. fin_d), fin_d its most finite count */
	for (d = 0; d < pp; d++) {
		const double *Gd = G + (size_t)d * (N + 1);
		double *Hd = H + (size_t)d * (N + 1);
		size_t top = 0;

		if (!isfinite(Gd[0]))
			goto out; /* not even its forced layers fit: opt_rank_bound said INFINITY */
		while (fin[d] < N && isfinite(Gd[fin[d] + 1]))
			fin[d]++;
		/* lower convex hull of (m, G(m)), m = 0 .. fin (a monotone chain) */
		for (m = 0; m <= fin[d]; m++) {
			while (top >= 2 && (Gd[pt[top - 1]] - Gd[pt[top - 2]]) * (double)(m - pt[top - 2]) >=
			                       (Gd[m] - Gd[pt[top - 2]]) * (double)(pt[top - 1] - pt[top - 2]))
				top--;
			pt[top++] = m;
		}
		for (i = 0; i + 1 < top; i++)
			for (m = pt[i]; m < pt[i + 1]; m++)
				Hd[m] = (Gd[pt[i + 1]] - Gd[pt[i]]) / (double)(pt[i + 1] - pt[i]);
		floor_s += Gd[0];
	}
	/* the least S over any t: every device up to its most finite count */
	if (opt_least_steps(H, N + 1, 0, fin, pp, N, head, &steps_s, &unused) != 0)
		goto out; /* N do not fit at all */
	floor_s += steps_s;
	/* the values t of G from M up, in increasing order */
	for (t = M, steps = 0;; steps++) {
		double s = 0, next = INFINITY;
		size_t room = 0;

		if (steps >= OPT_RANK_TPI_STEPS || (floor_s + rest) / v + w * t >= best) {
			best = fmin(best, (floor_s + rest) / v + w * t);
			break;
		}
		for (d = 0; d < pp; d++) {
			const double *Gd = G + (size_t)d * (N + 1);

			cap[d] = 0;
			while (cap[d] < fin[d] && Gd[cap[d] + 1] <= t)
				cap[d]++;
			if (cap[d] < fin[d])
				next = fmin(next, Gd[cap[d] + 1]);
			room += cap[d];
			s += Gd[0];
		}
		if (room >= N && opt_least_steps(H, N + 1, 0, cap, pp, N, head, &steps_s, &unused) == 0)
			best = fmin(best, (s + steps_s + rest) / v + w * t);
		if (!isfinite(next))
			break;
		t = next;
	}
out:
	free(fin);
	free(cap);
	free(head);
	free(pt);
	free(H);
	return best;
}

double opt_rank_bound(const struct cost_candidate *c, int chain)
{
	return opt_rank_bound_with(c, chain, 0, 0);
}

static double opt_rank_core(const struct cost_candidate *c, int chain, size_t front_cap, size_t top_count,
                            double transfers, double *tpi_lb);

#define OPT_RUNS_WORK 4e7 /* cells of opt_runs_bound's tables and checks; past it no bound (0) */

/* 1 when counts (a, b) of both types, summed over devices 0 .. pp - 1 each
 * holding one of its admissible counts (held[(a * (nb + 1) + b)], device d's
 * load a ta + b tb + extra[d] <= T), make exactly (na, nb); reach, next
 * [(na + 1) (nb + 1)] scratch. */
static int opt_runs_cover(const unsigned char *held, size_t na, size_t nb, double ta, double tb,
                          const double *extra, int pp, double T, unsigned char *reach, unsigned char *next)
{
	size_t cells = (na + 1) * (nb + 1), x, y;
	int d;

	memset(reach, 0, cells);
	reach[0] = 1;
	for (d = 0; d < pp; d++) {
		memset(next, 0, cells);
		for (y = 0; y < cells; y++) {
			size_t a = y / (nb + 1), b = y % (nb + 1);

			if (!held[y] || !((double)a * ta + (double)b * tb + extra[d] <= T))
				continue;
			for (x = 0; x < cells; x++) {
				size_t a0 = x / (nb + 1), b0 = x % (nb + 1);

				if (reach[x] && a0 + a <= na && b0 + b <= nb)
					next[(a0 + a) * (nb + 1) + b0 + b] = 1;
			}
		}
		memcpy(reach, next, cells);
	}
	return reach[cells - 1];
}

/*
 * A bound on the busiest device of a chain whose blocks come in two kinds
 * (opt_rank_both): A and B the two types with the most members (two or more
 * each, na and nb of them).  A device's v chunks are v runs of the chain, so
 * the counts (a, b) it can hold are those some v disjoint runs hold: where
 * the kinds alternate (sliding and full attention), a run of length l holds
 * ceil(l / 2) of its first kind and floor(l / 2) of the other, and four
 * blocks in three runs are at most three of one kind.  Its load is at least
 * a tA + b tB (each kind's least time) plus, on device 0 and device pp - 1,
 * the least time of the chain's first and last layer where it is of neither
 * kind.  Every layer sits on one device, so the devices' counts sum to (na,
 * nb); the least T for which admissible counts with loads <= T do is a lower
 * bound on every plan's busiest device (the devices' loads add reshards and
 * their other layers on top).  The counts bound (opt_rank_core) lets each
 * device take any mix within the totals.  0 when it does not apply (not a
 * chain, fewer than two such kinds, pp 1) or its tables would pass
 * OPT_RUNS_WORK cells.
 */
static double opt_runs_bound(const struct cost_candidate *c, const size_t *type, const size_t *count)
{
	size_t n = c->n_layers, K = cost_k(c), u, k, A = n, B = n, na, nb, cells, j, x, nval = 0, lo, hi;
	int pp = c->pp, v = cost_virtual(c);
	unsigned char *cur = NULL, *nxt = NULL, *held = NULL, *reach = NULL, *scratch = NULL;
	double ta = INFINITY, tb = INFINITY, *extra = NULL, *val = NULL, best = 0;

	if (pp < 2 || n < 2 || K == 0)
		return 0;
	for (u = 0; u < n; u++) {
		if (type[u] != u || count[u] < 2)
			continue;
		if (A == n || count[u] > count[A]) {
			B = A;
			A = u;
		} else if (B == n || count[u] > count[B]) {
			B = u;
		}
	}
	if (A == n || B == n)
		return 0;
	na = count[A];
	nb = count[B];
	cells = (na + 1) * (nb + 1);
	/* the runs' table: n steps of (v + 1) x 2 x cells; the covers: about log2 of the
	 * values checks, each pp x cells x cells */
	if ((double)n * (double)(v + 1) * 2 * (double)cells > OPT_RUNS_WORK ||
	    (double)pp * (double)cells * (double)cells * 2 * log2((double)cells * 4 + 2) > OPT_RUNS_WORK)
		return 0;
	for (k = 0; k < K; k++) {
		ta = fmin(ta, c->time_s[A * K + k]);
		tb = fmin(tb, c->time_s[B * K + k]);
	}
	if (!(ta >= 0) || !(tb >= 0) || isinf(ta) || isinf(tb))
		return 0;
	cur = calloc((size_t)(v + 1) * 2 * cells, 1);
	nxt = calloc((size_t)(v + 1) * 2 * cells, 1);
	held = calloc(cells, 1);
	reach = calloc(cells, 1);
	scratch = calloc(cells, 1);
	extra = calloc((size_t)pp, sizeof(*extra));
	val = malloc(cells * 4 * sizeof(*val));
	if (!cur || !nxt || !held || !reach || !scratch || !extra || !val)
		goto out;
	/* the chain's ends: layer 0 on device 0, the last on device pp - 1 */
	for (j = 0; j < 2; j++) {
		size_t w = j ? n - 1 : 0;
		double least = INFINITY;

		if (type[w] == A || type[w] == B)
			continue;
		for (k = 0; k < K; k++)
			least = fmin(least, c->time_s[w * K + k]);
		if (isfinite(least))
			extra[j ? pp - 1 : 0] += least;
	}
	/* cur[(runs * 2 + inside) * cells + a (nb + 1) + b]: some runs - inside closed runs
	 * and, inside, one open run over the layers so far hold (a, b) */
	cur[0] = 1;
	for (u = 0; u < n; u++) {
		size_t da = type[u] == A, db = type[u] == B;
		size_t r;

		memset(nxt, 0, (size_t)(v + 1) * 2 * cells);
		for (r = 0; r <= (size_t)v; r++)
			for (j = 0; j < 2; j++)
				for (x = 0; x < cells; x++) {
					size_t a = x / (nb + 1), b = x % (nb + 1);

					if (!cur[(r * 2 + j) * cells + x])
						continue;
					nxt[(r * 2) * cells + x] = 1; /* u outside every run */
					if (a + da > na || b + db > nb)
						continue;
					if (j) /* u extends the open run */
						nxt[(r * 2 + 1) * cells + (a + da) * (nb + 1) + b + db] = 1;
					else if (r < (size_t)v) /* u opens a run */
						nxt[((r + 1) * 2 + 1) * cells + (a + da) * (nb + 1) + b + db] = 1;
				}
		memcpy(cur, nxt, (size_t)(v + 1) * 2 * cells);
	}
	for (x = 0; x < (size_t)(v + 1) * 2 * cells; x++)
		if (cur[x])
			held[x % cells] = 1;
	/* the bound is one of the devices' possible loads: the least that covers */
	for (x = 0; x < cells; x++) {
		double load = (double)(x / (nb + 1)) * ta + (double)(x % (nb + 1)) * tb;

		if (!held[x])
			continue;
		val[nval++] = load;
		if (extra[0] > 0)
			val[nval++] = load + extra[0];
		if (extra[pp - 1] > 0)
			val[nval++] = load + extra[pp - 1];
	}
	qsort(val, nval, sizeof(*val), opt_double_cmp);
	lo = 0;
	hi = nval;
	/* least index whose value covers (monotone: a larger T admits more counts) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (opt_runs_cover(held, na, nb, ta, tb, extra, pp, val[mid], reach, scratch))
			hi = mid;
		else
			lo = mid + 1;
	}
	/* (one run of the whole chain holds every block, so the largest value covers) */
	if (lo < nval)
		best = val[lo] * (1 - 1e-12); /* against the sums' rounding in the plan's loads */
out:
	free(cur);
	free(nxt);
	free(held);
	free(reach);
	free(scratch);
	free(extra);
	free(val);
	return best;
}

/*
 * opt_rank_core on c, and when two or more types have two or more members
 * (blocks of two kinds: alternating attention windows, dense blocks before
 * MoE ones), on c with every such layer given, strategy by strategy, the
 * least time, fixed and per-micro-batch memory over those layers: one type
 * of all of them, whose every plan costs no more than c's, so its bound is
 * c's too, and it counts every block in each device's load where each type
 * alone counts its own and leaves the others to the sum.  The larger of the
 * two (each of *tpi_lb's too).
 */
static double opt_rank_both(const struct cost_candidate *c, int chain, size_t front_cap, size_t top_count,
                            double transfers, double *tpi_lb)
{
	size_t K = cost_k(c), n = c->n_layers, u, w, k, blocks = 0, *type = NULL, *count = NULL;
	double best = opt_rank_core(c, chain, front_cap, top_count, transfers, tpi_lb), mtpi = 0;
	struct cost_candidate m = *c; /* borrows c's other tables: never released */
	double *t = NULL, *f = NULL, *a = NULL;

	if (n == 0 || K == 0)
		return best;
	type = malloc(n * sizeof(*type));
	count = calloc(n, sizeof(*count));
	if (!type || !count)
		goto out;
	opt_layer_types(c, type, count);
	for (u = 0; u < n; u++)
		blocks += type[u] == u && count[u] >= 2;
	if (blocks < 2)
		goto out;
	t = malloc(n * K * sizeof(*t));
	f = malloc(n * K * sizeof(*f));
	a = malloc(n * K * sizeof(*a));
	if (!t || !f || !a)
		goto out;
	memcpy(t, c->time_s, n * K * sizeof(*t));
	memcpy(f, c->memory_fixed_bytes, n * K * sizeof(*f));
	memcpy(a, c->memory_per_microbatch_bytes, n * K * sizeof(*a));
	/* the least of the blocks' rows into the first block's, then copied to every block */
	for (w = n, u = 0; u < n; u++) {
		if (count[type[u]] < 2)
			continue;
		if (w == n) {
			w = u;
			continue;
		}
		for (k = 0; k < K; k++) {
			t[w * K + k] = fmin(t[w * K + k], t[u * K + k]);
			f[w * K + k] = fmin(f[w * K + k], f[u * K + k]);
			a[w * K + k] = fmin(a[w * K + k], a[u * K + k]);
		}
	}
	for (u = 0; u < n; u++)
		if (count[type[u]] >= 2 && u != w) {
			memcpy(t + u * K, t + w * K, K * sizeof(*t));
			memcpy(f + u * K, f + w * K, K * sizeof(*f));
			memcpy(a + u * K, a + w * K, K * sizeof(*a));
		}
	m.time_s = t;
	m.memory_fixed_bytes = f;
	m.memory_per_microbatch_bytes = a;
	best = fmax(best, opt_rank_core(&m, chain, front_cap, top_count, transfers, tpi_lb ? &mtpi : NULL));
	if (tpi_lb)
		*tpi_lb = fmax(*tpi_lb, mtpi);
	if (chain) {
		/* and the two kinds' counts as the chunks' runs can hold them */
		double runs = opt_runs_bound(c, type, count);

		if (runs > best && isfinite(runs)) {
			best = runs;
			if (tpi_lb) {
				double sum = transfers;
				int v = cost_virtual(c);

				for (u = 0; u < n; u++) {
					double least = INFINITY;

					for (k = 0; k < K; k++)
						least = fmin(least, c->time_s[u * K + k]);
					sum += isfinite(least) ? least : 0;
				}
				*tpi_lb = fmax(*tpi_lb, sum / v + ((double)c->microbatches - 1.0 / v) * runs);
			}
		}
	}
out:
	free(type);
	free(count);
	free(t);
	free(f);
	free(a);
	return best;
}

double opt_rank_bound_with(const struct cost_candidate *c, int chain, size_t front_cap, size_t top_count)
{
	return opt_rank_both(c, chain, front_cap, top_count, 0, NULL);
}

double opt_rank_tpi_bound(const struct cost_candidate *c, int chain, double transfers)
{
	double tpi = 0;

	opt_rank_both(c, chain, 0, 0, transfers, &tpi);
	return tpi;
}

double opt_rank_bounds(const struct cost_candidate *c, int chain, double transfers, double *tpi_lb)
{
	*tpi_lb = 0;
	return opt_rank_both(c, chain, 0, 0, transfers, tpi_lb);
}

/* opt_rank_bound_with, and into *tpi_lb (NULL: not made) the largest over the
 * types of opt_rank_tpi's bound, transfers bounding sum o. */
static double opt_rank_core(const struct cost_candidate *c, int chain, size_t front_cap, size_t top_count,
                            double transfers, double *tpi_lb)
{
	size_t K = cost_k(c), n = c->n_layers, u, w, i, top, types = 0, rows = 0, *type = NULL, *count = NULL;
	size_t *at = NULL, *cap = NULL;
	double best = 0, budget, *G = NULL, *g = NULL;
	struct opt_pt *opt = NULL;
	int pp = c->pp, d, scan;

	if (pp < 1 || n == 0 || K == 0)
		return 0;
	type = malloc(n * sizeof(*type));
	count = calloc(n, sizeof(*count));
	at = calloc((size_t)pp, sizeof(*at));
	cap = calloc((size_t)pp, sizeof(*cap));
	g = malloc((n + 1) * sizeof(*g));
	opt = malloc(K * sizeof(*opt));
	if (!type || !count || !at || !cap || !g || !opt)
		goto fail;
	/* each layer's type: the first layer with its costs */
	opt_layer_types(c, type, count);
	/* the work shared out: each type's rows (a device's peak rows, or its one) */
	for (u = 0; u < n; u++)
		types += type[u] == u && count[u] >= 2;
	for (d = 0; d < pp; d++) {
		size_t own = 0;

		for (i = 0; i < c->n_peaks && c->peaks; i++)
			own += c->peaks[i * (size_t)(cost_virtual(c) + 1)] == d;
		rows += own ? own : 1;
	}
	budget = OPT_RANK_WORK / (double)(types ? types : 1) / (double)rows;
	/* the chunks' charges scan every layer per row and chunk: past the budget, none */
	scan = (double)types * (double)rows * (double)cost_virtual(c) * (double)n * (double)K <= OPT_RANK_WORK * 10;
	for (u = 0; u < n; u++) {
		size_t N = count[u];
		double M = 0;

		if (type[u] != u || N < 2)
			continue;
		if ((double)pp * (double)(N + 1) > (double)(1 << 21))
			continue; /* G's 16 MiB at most: no bound from this type */
		free(G);
		G = malloc((size_t)pp * (N + 1) * sizeof(*G));
		if (!G)
			goto fail;
		/* fronts up to twice a device's share (they cost m each); past it
		 * opt_rank_times extends G by least times */
		top = top_count > 0 ? top_count : 2 * ((N + (size_t)pp - 1) / (size_t)pp) + 2;
		for (d = 0; d < pp; d++) {
			if (opt_rank_device(c, type, u, N, top, d, chain, scan, budget, front_cap, G + (size_t)d * (N + 1),
			                    g, opt) != 0)
				goto fail;
			M = fmax(M, G[(size_t)d * (N + 1)]);
			cap[d] = N;
		}
		/* the least max over counts summing to N: G_d grows with m (drop a layer
		 * of a plan for m + 1 and it is one for m), so take the N least steps */
		if (isfinite(M)) {
			double sum, most;

			M = opt_least_steps(G, N + 1, 1, cap, pp, N, at, &sum, &most) == 0 ? fmax(M, most) : INFINITY;
		}
		best = fmax(best, M);
		if (tpi_lb) {
			/* the layers G does not count: other types, less a chain's ends (in G) */
			double rest = transfers;

			for (w = 0; w < n; w++) {
				double least = INFINITY;

				if (type[w] == u || (chain && (w == 0 || w == n - 1)))
					continue;
				for (i = 0; i < K; i++)
					least = fmin(least, c->time_s[w * K + i]);
				rest += least;
			}
			*tpi_lb = fmax(*tpi_lb, isinf(M) ? INFINITY : opt_rank_tpi(c, G, N, M, rest));
		}
	}
	goto out;
fail:
	best = 0;
	if (tpi_lb)
		*tpi_lb = 0;
out:
	free(type);
	free(count);
	free(at);
	free(cap);
	free(g);
	free(opt);
	free(G);
	return best;
}

double opt_transfer_bound(const struct cost_candidate *c)
{
	size_t K = cost_k(c), e, i, S = (size_t)cost_stages(c);
	double *least, sum = 0;

	if (S < 2 || c->n_edges == 0 || c->n_edges + 1 < S || !opt_is_chain(c))
		return 0;
	least = malloc(c->n_edges * sizeof(*least));
	if (!least)
		return 0;
	for (e = 0; e < c->n_edges; e++) {
		least[e] = INFINITY;
		for (i = 0; i < K * K; i++)
			least[e] = fmin(least[e], c->edges[e].cross_stage_s[i]);
	}
	/* opt_packing_bound's sort: decreasing, so the S - 1 least are the last */
	qsort(least, c->n_edges, sizeof(*least), opt_cmp_desc);
	for (i = 0; i + 1 < S; i++)
		sum += least[c->n_edges - 1 - i];
	free(least);
	return sum;
}

int opt_successors(const struct cost_candidate *c, size_t **start, size_t **succ)
{
	size_t n = c->n_layers, e, u;
	size_t *cnt = calloc(n + 1, sizeof(size_t)), *adj = calloc(c->n_edges + 1, sizeof(size_t));
	size_t *fill = calloc(n ? n : 1, sizeof(size_t));

	*start = NULL;
	*succ = NULL;
	if (!cnt || !adj || !fill) {
		free(cnt);
		free(adj);
		free(fill);
		return -1;
	}
	for (e = 0; e < c->n_edges; e++)
		cnt[c->edges[e].from + 1]++;
	for (u = 0; u < n; u++)
		cnt[u + 1] += cnt[u];
	for (e = 0; e < c->n_edges; e++) {
		size_t f = c->edges[e].from;

		adj[cnt[f] + fill[f]++] = c->edges[e].to;
	}
	free(fill);
	*start = cnt;
	*succ = adj;
	return 0;
}

void opt_note_copy(char *dst, const char *src)
{
	size_t n = strnlen(src, OPT_NOTE_MAX - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}
