/*
 * dp_dag.c - the exact dynamic program for layer graphs that are not chains
 * but are narrow: encoder-decoder models with cross edges, long skips, a few
 * parallel branches (dp.h, docs/optimizer.md "dp-dag").
 *
 * A plan's stages are the differences of a chain of ideals (sets of layers
 * closed under predecessors) 0 = I_0 < I_1 < ... < I_pp = all layers, since an
 * edge never goes backwards.  The program adds one layer at a time to an
 * ideal, either to the open stage or to a new one, so every plan is reached.
 * A state is (ideal I, open stage s, and for every frontier layer -- a layer
 * of I with a successor outside I -- its stage and strategy class): everything
 * the costs still to come depend on.  Strategies of a layer whose rows on each
 * of its out-edges are equal, bit for bit, form a class (a layout: the same
 * data where the same ranks hold it, whatever the recomputation or ZeRO stage):
 * the layers after it cannot tell them apart, so a state keeps the class and
 * the label's trace the strategy.  Its labels hold
 *   sum   every p and o charged so far (the open stage included)
 *   mx    max of the stage cycles already final (cost.h: o_(i-1) + p_i +
 *         o_i, final once both boundaries of stage i are)
 *   open  time of the open stage,  mem  its memory
 *   pool  the last final transfer before the pending ones, the partial o_m
 *         of every communication stage m that an edge from the frontier will
 *         still cross (m from the least frontier stage to s - 1), and the p
 *         of each closed stage whose cycle waits on one of them
 * and a label is dropped only when another label of its state dominates it
 * (dd_insert): the future adds the same amounts to each whatever the label,
 * and the final TPI = sum + (c - 1) * max(mx, every cycle still to close) is
 * monotone in all of them.
 *
 * Before the search the ideals are enumerated without strategies: their
 * number and the largest frontier (the width) decide whether the program can
 * answer at all (UNIAP_E_LIMIT otherwise, and opt_solve falls back to the
 * MILP), and the states they could hold, estimated against the label cap,
 * whether it answers outright or within a trial of labels made.  During it the
 * cap bounds the trace the plan is rebuilt from, which is compacted to what
 * live labels lead to when it fills (dd_gc).
 *
 * Never: CBC, I/O, globals, asserts on input.  Reentrant.
 */
#include "dp.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h> /* snprintf of notes only */
#include <stdlib.h>
#include <string.h>

#define DD_NONE SIZE_MAX
#define DD_SLACK 1e-12          /* relative slack on the incumbent bound, against rounding */
#define DD_IDEALS_MAX 200000u   /* ideals enumerated before giving up on the program */
#define DD_NPRICE 13            /* memory prices of the Lagrangian bound: base * 4^(-6..6) */
#define DD_BEAM 16               /* labels per state in the incumbent run */
#define DD_WIDTH_MAX 8          /* widest frontier the program takes; the states decide below it */

/* max of two costs; no NaN reaches here (opt_candidate_check), and libm's fmax is a call */
static inline double dd_max(double a, double b)
{
	return a > b ? a : b;
}

/* ------------------------------------------------------------ a hash set of word strings */

/* Keys are runs of uint64 words in one pool; the table maps a key to its index. */
struct dd_keys {
	uint64_t *pool;   /* owned */
	size_t pool_n, pool_cap;
	size_t *off;      /* owned, [count]: start of key i in pool */
	size_t count, cap;
	size_t *slot;     /* owned, [nslot]: key index or DD_NONE */
	size_t nslot;
	size_t words;     /* words per key (fixed per table) */
};

#define DD_FNV_BASIS 1469598103934665603ull

static uint64_t dd_hash(const uint64_t *w, size_t n)
{
	uint64_t h = DD_FNV_BASIS;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= w[i];
		h *= 1099511628211ull;
		h ^= h >> 29;
	}
	return h;
}

/* FNV-1a over n more bytes of a hash h (start from DD_FNV_BASIS): the strategy
 * classes' rows, compared bytewise after it. */
static uint64_t dd_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void dd_keys_free(struct dd_keys *t)
{
	free(t->pool);
	free(t->off);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static int dd_keys_init(struct dd_keys *t, size_t words)
{
	memset(t, 0, sizeof(*t));
	t->words = words;
	t->nslot = 1024;
	t->slot = malloc(t->nslot * sizeof(size_t));
	if (!t->slot)
		return -1;
	memset(t->slot, 0xff, t->nslot * sizeof(size_t));
	return 0;
}

static const uint64_t *dd_key(const struct dd_keys *t, size_t i)
{
	return t->pool + t->off[i];
}

static int dd_keys_grow(struct dd_keys *t)
{
	size_t ns = t->nslot * 2, i, *s = malloc(ns * sizeof(size_t));

	if (!s)
		return -1;
	memset(s, 0xff, ns * sizeof(size_t));
	for (i = 0; i < t->count; i++) {
		size_t h = (size_t)dd_hash(dd_key(t, i), t->words) & (ns - 1);

		while (s[h] != DD_NONE)
			h = (h + 1) & (ns - 1);
		s[h] = i;
	}
	free(t->slot);
	t->slot = s;
	t->nslot = ns;
	return 0;
}

/* The index of key w (t->words words): found, or added (*added = 1).  DD_NONE when out of memory. */
static size_t dd_keys_put(struct dd_keys *t, const uint64_t *w, int *added)
{
	size_t h, i;

	*added = 0;
	if ((t->count + 1) * 2 > t->nslot && dd_keys_grow(t) != 0)
		return DD_NONE;
	h = (size_t)dd_hash(w, t->words) & (t->nslot - 1);
	while ((i = t->slot[h]) != DD_NONE) {
		if (!memcmp(dd_key(t, i), w, t->words * sizeof(uint64_t)))
			return i;
		h = (h + 1) & (t->nslot - 1);
	}
	if (t->count == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		size_t *no = realloc(t->off, nc * sizeof(size_t));

		if (!no)
			return DD_NONE;
		t->off = no;
		t->cap = nc;
	}
	if (t->pool_n + t->words > t->pool_cap) {
		size_t nc = t->pool_cap ? t->pool_cap * 2 : 1024;
		uint64_t *np;

		while (nc < t->pool_n + t->words)
			nc *= 2;
		np = realloc(t->pool, nc * sizeof(uint64_t));
		if (!np)
			return DD_NONE;
		t->pool = np;
		t->pool_cap = nc;
	}
	memcpy(t->pool + t->pool_n, w, t->words * sizeof(uint64_t));
	t->off[t->count] = t->pool_n;
	t->pool_n += t->words;
	t->slot[h] = t->count;
	*added = 1;
	return t->count++;
}

/* ------------------------------------------------------------ the instance */

struct dd_inst {
	const struct cost_candidate *cand;
	size_t n, K, words;             /* layers, strategies, words of an ideal's bitset */
	int pp;
	long c;
	double limit;
	int mem_binds;                  /* 0: no stage can ever exceed the limit */
	size_t *pstart, *pred;          /* owned: in-edges of v are pred[pstart[v]..pstart[v+1]-1] */
	size_t *sstart, *succ;          /* owned: successor layers (with repeats) */
	size_t *sedge;                  /* owned: the edge of each succ entry */
	double *rmin;                   /* owned, [n_edges * K]: least R' of edge e with its tail's
	                                 * strategy k, over its head's strategies */
	double *min_a;                  /* owned, [n]: least layer time */
	uint32_t *rep;                  /* owned, [n * K]: the least strategy of u whose rows of every
	                                 * out-edge of u (R and R') equal k's: what a state keeps of a
	                                 * frontier layer (the costs to come see nothing else of it) */
	double *ncls;                   /* owned, [n]: u's classes (distinct representatives) */
	double total_min_a;
	double deadline_s, cutoff_s, ub_s;
	size_t cap;
	long labels;
	long trial;                     /* 0, or the labels each run may make (dd_measure) */
	long trial_budget;              /* opt_options.dp_dag_trial or its default */
	int trial_spent;                /* 1: a run stopped at the trial */
	double states;                  /* the states estimated by dd_measure */
	int cut_pruned;
	int width;                      /* largest frontier over the ideals */
	size_t ideals;
	/* the memory-priced bound (dd_lagrange): h[(sigma * DD_NPRICE + j) * n + w] =
	 * min_k A[w][k] + price[j] * (Mf[w][k] + infmin[sigma] * Mm[w][k]), infmin[sigma] the
	 * least in-flight count of the stages >= sigma; NULL when memory never binds */
	double price[DD_NPRICE];
	double *h;                      /* owned, [pp * DD_NPRICE * n] */
};

static int dd_in(const uint64_t *set, size_t u)
{
	return (int)((set[u / 64] >> (u % 64)) & 1u);
}

static void dd_inst_release(struct dd_inst *d)
{
	free(d->pstart);
	free(d->pred);
	free(d->sstart);
	free(d->succ);
	free(d->min_a);
	free(d->sedge);
	free(d->rmin);
	free(d->rep);
	free(d->ncls);
	free(d->h);
	memset(d, 0, sizeof(*d));
}

/*
 * The memory-priced tables of the bound.  For any price >= 0 the layers still
 * to place take at least sum_w min_k (A + price * mem_lb) - price * room, where
 * room is the memory left in the open stage plus a full limit per later stage
 * and mem_lb uses the least in-flight count those stages can have.  0, or -1
 * out of memory.
 */
static int dd_lagrange_init(struct dd_inst *d)
{
	const struct cost_candidate *c = d->cand;
	size_t n = d->n, K = d->K, w, k, j;
	double base, total_mem = 0;
	long infmin = LONG_MAX;
	int sg;

	if (!d->mem_binds || !isfinite(d->limit) || !(d->limit > 0))
		return 0;
	for (w = 0; w < n; w++) {
		double m = INFINITY;

		for (k = 0; k < K; k++)
			m = fmin(m, c->memory_fixed_bytes[w * K + k]);
		total_mem += m;
	}
	/* the price that makes the layers' time and memory comparable */
	base = d->total_min_a / dd_max(total_mem, d->limit);
	if (!(base > 0) || !isfinite(base))
		return 0;
	for (j = 0; j < DD_NPRICE; j++)
		d->price[j] = base * pow(4.0, (double)j - (DD_NPRICE - 1) / 2.0);
	d->h = malloc((size_t)d->pp * DD_NPRICE * n * sizeof(double));
	if (!d->h)
		return -1;
	for (sg = d->pp - 1; sg >= 0; sg--) {
		if (c->inflight[sg] < infmin)
			infmin = c->inflight[sg];
		for (j = 0; j < DD_NPRICE; j++)
			for (w = 0; w < n; w++) {
				double m = INFINITY;

				for (k = 0; k < K; k++)
					m = fmin(m, c->time_s[w * K + k] +
					               d->price[j] * (c->memory_fixed_bytes[w * K + k] +
					                              (double)infmin * c->memory_per_microbatch_bytes[w * K + k]));
				d->h[((size_t)sg * DD_NPRICE + j) * n + w] = m;
			}
	}
	return 0;
}

/* 1 when u (in set) has a successor outside set. */
static int dd_frontier(const struct dd_inst *d, const uint64_t *set, size_t u)
{
	size_t j;

	for (j = d->sstart[u]; j < d->sstart[u + 1]; j++)
		if (!dd_in(set, d->succ[j]))
			return 1;
	return 0;
}

/* 1 when v is outside set and every predecessor of v is in it. */
static int dd_addable(const struct dd_inst *d, const uint64_t *set, size_t v)
{
	size_t j;

	if (dd_in(set, v))
		return 0;
	for (j = d->pstart[v]; j < d->pstart[v + 1]; j++)
		if (!dd_in(set, d->cand->edges[d->pred[j]].from))
			return 0;
	return 1;
}

static uniap_code dd_inst_init(struct dd_inst *d, const struct cost_candidate *cand,
                               const struct opt_options *o, struct uniap_err *err)
{
	size_t n = cand->n_layers, K = cost_k(cand), e, u, k;
	uint64_t *rowhash;
	int i;

	memset(d, 0, sizeof(*d));
	d->cand = cand;
	d->n = n;
	d->K = K;
	d->words = (n + 63) / 64;
	d->pp = cand->pp;
	d->c = cand->microbatches;
	d->limit = cand->memory_limit_bytes;
	d->deadline_s = o->time_limit_s > 0 && isfinite(o->time_limit_s) ?
	                opt_clock_s() + o->time_limit_s : INFINITY;
	d->cutoff_s = isnan(o->cutoff_tpi) ? INFINITY : o->cutoff_tpi;
	d->ub_s = INFINITY;
	d->cap = o->dp_label_cap ? o->dp_label_cap : OPT_DP_LABEL_CAP_DEFAULT;
	d->trial_budget = o->dp_dag_trial > 0 ? o->dp_dag_trial : OPT_DP_DAG_TRIAL_DEFAULT;
	d->pstart = calloc(n + 1, sizeof(size_t));
	d->sstart = calloc(n + 1, sizeof(size_t));
	d->pred = calloc(cand->n_edges + 1, sizeof(size_t));
	d->succ = calloc(cand->n_edges + 1, sizeof(size_t));
	d->sedge = calloc(cand->n_edges + 1, sizeof(size_t));
	d->rmin = calloc(cand->n_edges * K + 1, sizeof(double));
	d->min_a = calloc(n, sizeof(double));
	d->rep = calloc(n * K + 1, sizeof(uint32_t));
	d->ncls = calloc(n + 1, sizeof(double));
	if (!d->pstart || !d->sstart || !d->pred || !d->succ || !d->sedge || !d->rmin || !d->min_a || !d->rep ||
	    !d->ncls) {
		dd_inst_release(d);
		return err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
	}
	for (e = 0; e < cand->n_edges; e++) {
		d->pstart[cand->edges[e].to + 1]++;
		d->sstart[cand->edges[e].from + 1]++;
	}
	for (u = 0; u < n; u++) {
		d->pstart[u + 1] += d->pstart[u];
		d->sstart[u + 1] += d->sstart[u];
	}
	{
		size_t *pf = calloc(n, sizeof(size_t)), *sf = calloc(n, sizeof(size_t));

		if (!pf || !sf) {
			free(pf);
			free(sf);
			dd_inst_release(d);
			return err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
		}
		for (e = 0; e < cand->n_edges; e++) {
			size_t a = cand->edges[e].from, b = cand->edges[e].to;

			d->pred[d->pstart[b] + pf[b]++] = e;
			d->sedge[d->sstart[a] + sf[a]] = e;
			d->succ[d->sstart[a] + sf[a]++] = b;
		}
		free(pf);
		free(sf);
	}
	for (e = 0; e < cand->n_edges; e++)
		for (k = 0; k < K; k++) {
			double r = INFINITY;
			size_t l;

			for (l = 0; l < K; l++)
				r = fmin(r, cand->edges[e].cross_stage_s[k * K + l]);
			d->rmin[e * K + k] = r;
		}
	/* strategy classes of each layer: equal rows, bit for bit, on every out-edge (a hash
	 * of the rows first, so that only strategies that may be equal are compared) */
	if (!(rowhash = calloc(K + 1, sizeof(uint64_t)))) {
		dd_inst_release(d);
		return err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
	}
	for (u = 0; u < n; u++)
		for (k = 0; k < K; k++) {
			size_t r, j;

			if (k == 0)
				for (r = 0; r < K; r++) {
					rowhash[r] = DD_FNV_BASIS;
					for (j = d->sstart[u]; j < d->sstart[u + 1]; j++) {
						const struct cost_edge *ed = &cand->edges[d->sedge[j]];

						rowhash[r] = dd_hash_bytes(rowhash[r], ed->same_stage_s + r * K, K * sizeof(double));
						rowhash[r] = dd_hash_bytes(rowhash[r], ed->cross_stage_s + r * K, K * sizeof(double));
					}
				}
			for (r = 0; r < k; r++) {
				if (d->rep[u * K + r] != r || rowhash[r] != rowhash[k])
					continue;
				for (j = d->sstart[u]; j < d->sstart[u + 1]; j++) {
					const struct cost_edge *ed = &cand->edges[d->sedge[j]];

					if (memcmp(ed->same_stage_s + k * K, ed->same_stage_s + r * K, K * sizeof(double)) ||
					    memcmp(ed->cross_stage_s + k * K, ed->cross_stage_s + r * K, K * sizeof(double)))
						break;
				}
				if (j == d->sstart[u + 1])
					break; /* k's rows are r's */
			}
			d->rep[u * K + k] = (uint32_t)r;
			if (r == k)
				d->ncls[u] += 1;
		}
	free(rowhash);
	d->total_min_a = 0;
	for (u = 0; u < n; u++) {
		double m = INFINITY;

		for (k = 0; k < K; k++)
			m = fmin(m, cand->time_s[u * K + k]);
		d->min_a[u] = m;
		d->total_min_a += m;
	}
	for (i = 0; i < d->pp && !d->mem_binds; i++) {
		double worst = 0;

		for (u = 0; u < n; u++) {
			double m = 0;

			for (k = 0; k < K; k++)
				m = dd_max(m, cand->memory_fixed_bytes[u * K + k] +
				            (double)cand->inflight[i] * cand->memory_per_microbatch_bytes[u * K + k]);
			worst += m;
		}
		if (!(worst <= d->limit))
			d->mem_binds = 1;
	}
	return UNIAP_OK;
}

/*
 * Enumerates the ideals level by level and measures the width.  UNIAP_E_ARG
 * when the graph has a cycle (some layer is never addable), UNIAP_E_LIMIT when
 * the states the search could need exceed the cap.
 */
static uniap_code dd_measure(struct dd_inst *d, struct uniap_err *err)
{
	struct dd_keys cur, nxt;
	uint64_t *w = calloc(d->words + 1, sizeof(uint64_t));
	size_t t, i, v, u;
	double states = 0;
	uniap_code rc = UNIAP_OK;
	int added;

	if (!w || dd_keys_init(&cur, d->words) != 0) {
		free(w);
		return err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
	}
	if (dd_keys_init(&nxt, d->words) != 0) {
		dd_keys_free(&cur);
		free(w);
		return err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
	}
	if (dd_keys_put(&cur, w, &added) == DD_NONE)
		goto nomem;
	d->ideals = 1;
	for (t = 0; t < d->n; t++) {
		for (i = 0; i < cur.count; i++) {
			int f = 0;
			double k_f = (double)d->pp;

			memcpy(w, dd_key(&cur, i), d->words * sizeof(uint64_t));
			for (u = 0; u < d->n; u++)
				if (dd_in(w, u) && dd_frontier(d, w, u)) {
					f++;
					k_f *= d->ncls[u];
				}
			if (f > d->width)
				d->width = f;
			/* the states of this ideal are at least its frontier layers' strategy classes
			 * times the open stages, each needing a label.  Their sum over the ideals must
			 * fit the cap: a gate, not a bound, since the trace is compacted during the
			 * search (dd_gc) and a level pair is all it holds; graphs past it (parallel
			 * branches) were measured to fill the cap with live labels anyway and lose to
			 * the MILP the time they take (docs/optimizer.md, "dp-dag") */
			states += k_f;
			for (v = 0; v < d->n; v++) {
				if (!dd_addable(d, w, v))
					continue;
				w[v / 64] |= (uint64_t)1 << (v % 64);
				if (dd_keys_put(&nxt, w, &added) == DD_NONE)
					goto nomem;
				w[v / 64] &= ~((uint64_t)1 << (v % 64));
				/* within the level too: one level of a wide fan-out can hold
				 * the limit many times over (C(64, 10) ideals of 64 branches) */
				if (d->ideals + nxt.count > DD_IDEALS_MAX) {
					rc = err_set(err, UNIAP_E_LIMIT, "dp-dag: width %d+, %zu+ ideals: over "
					             "the program's limits (width %d, %u ideals)", d->width,
					             d->ideals + nxt.count, DD_WIDTH_MAX, DD_IDEALS_MAX);
					goto out;
				}
			}
		}
		if (nxt.count == 0) {
			rc = err_set(err, UNIAP_E_ARG, "dp-dag: the layer graph has a cycle");
			goto out;
		}
		d->ideals += nxt.count;
		if (d->ideals > DD_IDEALS_MAX || d->width > DD_WIDTH_MAX) {
			rc = err_set(err, UNIAP_E_LIMIT, "dp-dag: width %d, %zu+ ideals: over the program's "
			             "limits (width %d, %u ideals)", d->width, d->ideals, DD_WIDTH_MAX,
			             DD_IDEALS_MAX);
			goto out;
		}
		dd_keys_free(&cur);
		cur = nxt;
		if (dd_keys_init(&nxt, d->words) != 0)
			goto nomem;
	}
	/*
	 * Over the cap, the estimate says every state needs a label, which the bound and the
	 * incumbent often refute: skip graphs of width 8 estimated at 2.2e6 states are proven
	 * with 1e3 to 1e5 labels, while parallel branches fill the cap with live ones
	 * (docs/optimizer.md, "dp-dag").  So such a graph gets a trial, a count of labels per
	 * run (work, never time), after which the MILP answers with the time left.
	 */
	d->states = states;
	if (states > (double)d->cap)
		d->trial = d->trial_budget;
	goto out;
nomem:
	rc = err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
out:
	dd_keys_free(&cur);
	dd_keys_free(&nxt);
	free(w);
	return rc;
}

/* ------------------------------------------------------------ the search */

/* One label of a level.  pend values live in the level's pool at pend. */
struct dd_lab {
	double sum, mx, open, mem;
	size_t pend;    /* offset in the level's pend pool */
	size_t trace;   /* index in the trace */
	size_t next;    /* next live label of the same state; DD_NONE ends */
};

/* How a label was made: enough to rebuild the plan. */
struct dd_trace {
	size_t parent;  /* trace index of the label it extends; DD_NONE for the first layer */
	uint32_t v, k;
	int32_t stage;
};

/* One level: the states with |I| = t and their labels. */
struct dd_level {
	struct dd_keys keys;   /* state keys: ideal words, s, then (class << 32 | stage) per frontier
	                          layer, the class its strategy's representative (dd_inst.rep) */
	size_t *head;          /* owned, [keys.cap]: first live label of each state */
	size_t head_cap;
	struct dd_lab *lab;    /* owned */
	size_t nlab, lab_cap;
	double *pend;          /* owned pool */
	size_t npend, pend_cap;
};

static void dd_level_free(struct dd_level *L)
{
	dd_keys_free(&L->keys);
	free(L->head);
	free(L->lab);
	free(L->pend);
	memset(L, 0, sizeof(*L));
}

struct dd_search {
	struct dd_inst *d;
	size_t beam;            /* 0: exact; else the labels kept per state (the incumbent run) */
	long labels0;           /* d->labels when the run began (the trial counts from it) */
	struct dd_trace *tr;
	size_t ntr, tr_cap;
};

/* The pend count of a state: from its least frontier stage to s - 1 (0 with no frontier). */
static size_t dd_npend(const uint64_t *key, size_t words, size_t nf, int s)
{
	int m0 = s;
	size_t f;

	for (f = 0; f < nf; f++) {
		int st = (int)(uint32_t)key[words + 1 + f];

		if (st < m0)
			m0 = st;
	}
	return (size_t)(s - m0);
}

/* A guess of a label's final TPI: what it has, the bottleneck so far counted c - 1 times. */
static double dd_score(const struct dd_search *S, const struct dd_level *L, const struct dd_lab *x,
                       size_t np)
{
	double m = dd_max(x->mx, x->open);
	size_t i;

	for (i = 0; i < np; i++)
		m = dd_max(m, L->pend[x->pend + i]);
	return x->sum + (double)(S->d->c - 1) * m;
}

/* Beam runs only: past S->beam labels in state si, unlinks the worst by score (never the
 * least-memory label, which keeps a completion that fits when any does). */
static void dd_beam_trim(struct dd_search *S, struct dd_level *L, size_t si, size_t np)
{
	size_t cnt = 0, i, least = DD_NONE, worst = DD_NONE, *pp;
	double wscore = -1;

	for (i = L->head[si]; i != DD_NONE; i = L->lab[i].next) {
		cnt++;
		if (least == DD_NONE || L->lab[i].mem < L->lab[least].mem)
			least = i;
	}
	if (cnt <= S->beam)
		return;
	for (i = L->head[si]; i != DD_NONE; i = L->lab[i].next) {
		double sc = dd_score(S, L, &L->lab[i], np);

		if (i != least && sc > wscore) {
			wscore = sc;
			worst = i;
		}
	}
	for (pp = &L->head[si]; *pp != DD_NONE; pp = &L->lab[*pp].next)
		if (*pp == worst) {
			*pp = L->lab[worst].next;
			return;
		}
}

/*
 * Adds a label to state si of level L unless a live label dominates it; drops
 * the live labels it dominates.  np pend values in pv.  Returns 0, 1 when
 * dominated (nothing added), -1 out of memory, -2 past the cap, -3 past the trial.
 */
static int dd_insert(struct dd_search *S, struct dd_level *L, size_t si, const struct dd_lab *x,
                     const double *pv, size_t np, size_t parent, uint32_t v, uint32_t k, int stage)
{
	size_t *pp = &L->head[si], j, m;
	double cm = (double)(S->d->c - 1);

	/*
	 * y dominates x when y.mem <= x.mem and y.sum + (c - 1) D <= x.sum, D the most by which
	 * any cycle still to close (or mx) of y can exceed x's: the future adds the same to both
	 * (the same state: the same frontier, stages and strategy classes), so y's final bottleneck is
	 * at most x's + D and y's TPI at most x's.  Each pending stage j's cycle is its receive,
	 * its p and its send (pool: o_prev, the pending o, the pending p), the open stage's its
	 * receive and open, each plus what the future adds to it alike: the differences of a
	 * cycle's known parts add up with their signs.  D = 0 is plain Pareto dominance.
	 */
	while (*pp != DD_NONE) {
		struct dd_lab *y = &L->lab[*pp];
		const double *yp = L->pend + y->pend;
		double dy = dd_max(0, y->mx - x->mx), dx = dd_max(0, x->mx - y->mx), dc;
		size_t npend = np > 0 ? (np - 1) / 2 : 0;
		int y_le, x_le;

		for (m = 0; m < npend; m++) {
			/* receive pool[m] (o_prev for the first), p pool[1 + npend + m], send pool[1 + m] */
			dc = (yp[m] - pv[m]) + (yp[1 + npend + m] - pv[1 + npend + m]) + (yp[1 + m] - pv[1 + m]);
			dy = dd_max(dy, dc);
			dx = dd_max(dx, -dc);
		}
		dc = y->open - x->open + (np > 0 ? yp[npend] - pv[npend] : 0);
		dy = dd_max(dy, dc); /* y above x */
		dx = dd_max(dx, -dc); /* x above y */
		y_le = y->mem <= x->mem && y->sum + cm * dy <= x->sum;
		x_le = x->mem <= y->mem && x->sum + cm * dx <= y->sum;
		if (y_le)
			return 1;
		if (x_le) {
			*pp = y->next; /* unlink the dominated label */
			continue;
		}
		pp = &y->next;
	}
	if (S->ntr >= S->d->cap)
		return -2;
	if (S->d->trial && S->d->labels - S->labels0 >= S->d->trial)
		return -3;
	if (L->nlab == L->lab_cap) {
		size_t nc = L->lab_cap ? L->lab_cap * 2 : 1024;
		struct dd_lab *nl = realloc(L->lab, nc * sizeof(*nl));

		if (!nl)
			return -1;
		L->lab = nl;
		L->lab_cap = nc;
	}
	if (L->npend + np > L->pend_cap) {
		size_t nc = L->pend_cap ? L->pend_cap * 2 : 1024;
		double *np2;

		while (nc < L->npend + np)
			nc *= 2;
		np2 = realloc(L->pend, nc * sizeof(double));
		if (!np2)
			return -1;
		L->pend = np2;
		L->pend_cap = nc;
	}
	if (S->ntr == S->tr_cap) {
		size_t nc = S->tr_cap ? S->tr_cap * 2 : 4096;
		struct dd_trace *nt = realloc(S->tr, nc * sizeof(*nt));

		if (!nt)
			return -1;
		S->tr = nt;
		S->tr_cap = nc;
	}
	S->tr[S->ntr].parent = parent;
	S->tr[S->ntr].v = v;
	S->tr[S->ntr].k = k;
	S->tr[S->ntr].stage = stage;
	j = L->nlab++;
	L->lab[j] = *x;
	L->lab[j].pend = L->npend;
	L->lab[j].trace = S->ntr++;
	L->lab[j].next = L->head[si];
	if (np)
		memcpy(L->pend + L->npend, pv, np * sizeof(double));
	L->npend += np;
	L->head[si] = j;
	S->d->labels++;
	if (S->beam)
		dd_beam_trim(S, L, si, np);
	return 0;
}

/*
 * Compacts the trace to the entries some live label of a or b leads to (its
 * own and its ancestors'), renumbering parents and the labels' trace fields;
 * a parent is always older than its child, so one pass in order renumbers
 * both.  Live labels are the ones linked from their state's head (dd_insert
 * unlinks the dominated, dd_beam_trim the worst of a beam run).  Only the
 * trace shrinks: the levels' label arrays keep their dead labels, which the
 * caller bounds.  0, or -1 out of memory.
 */
static int dd_gc(struct dd_search *S, struct dd_level *a, struct dd_level *b)
{
	struct dd_level *lv[2] = {a, b};
	size_t *map = malloc((S->ntr + 1) * sizeof(size_t)), i, j, si, li;
	int w;

	if (!map)
		return -1;
	for (i = 0; i < S->ntr; i++)
		map[i] = DD_NONE;
	for (w = 0; w < 2; w++)
		for (si = 0; si < lv[w]->keys.count; si++)
			for (li = lv[w]->head[si]; li != DD_NONE; li = lv[w]->lab[li].next)
				for (i = lv[w]->lab[li].trace; i != DD_NONE && map[i] == DD_NONE; i = S->tr[i].parent)
					map[i] = 0; /* reached */
	for (i = 0, j = 0; i < S->ntr; i++) {
		if (map[i] == DD_NONE)
			continue;
		S->tr[j] = S->tr[i];
		if (S->tr[j].parent != DD_NONE)
			S->tr[j].parent = map[S->tr[j].parent];
		map[i] = j++;
	}
	S->ntr = j;
	for (w = 0; w < 2; w++)
		for (si = 0; si < lv[w]->keys.count; si++)
			for (li = lv[w]->head[si]; li != DD_NONE; li = lv[w]->lab[li].next)
				if (lv[w]->lab[li].trace != DD_NONE)
					lv[w]->lab[li].trace = map[lv[w]->lab[li].trace];
	free(map);
	return 0;
}

/* The state index of key w in L (added if new); DD_NONE out of memory. */
static size_t dd_state(struct dd_level *L, const uint64_t *w)
{
	int added;
	size_t si = dd_keys_put(&L->keys, w, &added);

	if (si == DD_NONE)
		return DD_NONE;
	if (L->head_cap < L->keys.cap) {
		size_t nc = L->keys.cap, *nh = realloc(L->head, nc * sizeof(size_t));

		if (!nh)
			return DD_NONE;
		L->head = nh;
		L->head_cap = nc;
	}
	if (added)
		L->head[si] = DD_NONE;
	return si;
}

/*
 * The exact search bounded by d->ub_s and d->cutoff_s.  On success with a plan
 * below both (within DD_SLACK of ub_s), stage/strategy are filled and *found = 1.
 */
static uniap_code dd_search(struct dd_inst *d, size_t beam, int *stage_out, size_t *strategy_out,
                            double *tpi, int *found, struct uniap_err *err)
{
	struct dd_search S = {.d = d, .beam = beam, .labels0 = d->labels};
	struct dd_level cur = {0}, nxt = {0};
	size_t n = d->n, K = d->K, W = d->words, t, si, v, f, m;
	const struct cost_candidate *c = d->cand;
	double cm = (double)(d->c - 1), bound = fmin(d->cutoff_s, d->ub_s * (1 + DD_SLACK));
	/* scratch: a key, the frontier of the state and of the extension, pend deltas */
	size_t kw = W + 1 + (size_t)d->width; /* the frontier never exceeds the measured width */
	uint64_t *key = calloc(kw, sizeof(uint64_t)), *nkey = calloc(kw, sizeof(uint64_t));
	size_t *fl = calloc(n, sizeof(size_t)), *addable = calloc(n, sizeof(size_t));
	int *fst = calloc(n, sizeof(int)), *where = calloc(n, sizeof(int));
	size_t *fk = calloc(n, sizeof(size_t));
	double *dp = calloc((size_t)d->pp + 1, sizeof(double));
	double *pv = calloc((size_t)d->pp + 1, sizeof(double));
	double *ps = calloc((size_t)d->pp + 1, sizeof(double));       /* pending stages' p */
	double *pool = calloc(2 * (size_t)d->pp + 1, sizeof(double)); /* a new label's pool */
	/* transfers still certain to come: per pending boundary, and the frontier layers' (stage, R') */
	double *cert = calloc((size_t)d->pp + 1, sizeof(double)), *crv = calloc(n + 1, sizeof(double));
	int *cst = calloc(n + 1, sizeof(int));
	double gsum[2][DD_NPRICE];
	uniap_code rc = UNIAP_OK;
	long tick = 0;

	*found = 0;
	*tpi = INFINITY;
	if (!key || !nkey || !fl || !addable || !fst || !where || !fk || !dp || !pv || !ps || !pool || !cert ||
	    !crv || !cst)
		goto nomem;
	/* keys have a fixed length per table: the ideal, s, and n frontier slots (unused ones 0) */
	if (dd_keys_init(&cur.keys, kw) != 0 || dd_keys_init(&nxt.keys, kw) != 0)
		goto nomem;
	/* level 0: the empty ideal with one zero label */
	memset(key, 0, kw * sizeof(uint64_t));
	if (dd_state(&cur, key) == DD_NONE)
		goto nomem;
	cur.lab = calloc(1, sizeof(*cur.lab));
	if (!cur.lab)
		goto nomem;
	cur.lab_cap = cur.nlab = 1;
	cur.lab[0].trace = DD_NONE;
	cur.lab[0].next = DD_NONE;
	cur.head[0] = 0;
	for (t = 0; t < n; t++) {
		for (si = 0; si < cur.keys.count; si++) {
			size_t nf = 0, na = 0, np0, li, ai;
			int s = 0, m0;
			double placed_min = 0, rem_after;

			if (cur.head[si] == DD_NONE)
				continue;
			memcpy(key, dd_key(&cur.keys, si), kw * sizeof(uint64_t));
			s = (int)key[W];
			/* the frontier in index order, its strategy classes and stages */
			for (v = 0; v < n; v++) {
				where[v] = -1;
				if (dd_in(key, v)) {
					placed_min += d->min_a[v];
					if (dd_frontier(d, key, v)) {
						fl[nf] = v;
						fk[nf] = (size_t)(key[W + 1 + nf] >> 32);
						fst[nf] = (int)(uint32_t)key[W + 1 + nf];
						where[v] = (int)nf;
						nf++;
					}
				} else if (dd_addable(d, key, v)) {
					addable[na++] = v;
				}
			}
			np0 = dd_npend(key, W, nf, s);
			m0 = s - (int)np0;
			/* the priced sums over the layers not yet placed, for stages s and s + 1 */
			if (d->h) {
				int sg;

				for (sg = 0; sg < 2; sg++) {
					size_t jj;

					for (jj = 0; jj < DD_NPRICE; jj++) {
						const double *hr;
						double g = 0;

						if (s + sg >= d->pp) {
							gsum[sg][jj] = 0;
							continue;
						}
						hr = d->h + ((size_t)(s + sg) * DD_NPRICE + jj) * n;
						for (v = 0; v < n; v++)
							if (!dd_in(key, v))
								g += hr[v];
						gsum[sg][jj] = g;
					}
				}
			}
			for (ai = 0; ai < na; ai++) {
				int opt;

				v = addable[ai];
				rem_after = d->total_min_a - placed_min - d->min_a[v];
				for (opt = 0; opt < 2; opt++) {
					int s2 = s + opt, m0b, nf2;
					size_t k, np2;

					if (t == 0 && opt == 1)
						continue; /* the first layer opens stage 0 */
					if (s2 >= d->pp || (size_t)(d->pp - 1 - s2) > n - (t + 1))
						continue;
					for (k = 0; k < K; k++) {
						double dsum = c->time_s[v * K + k], dopen = dsum, mem_add, cert_sum = 0;
						size_t j, ncert = 0;

						mem_add = c->memory_fixed_bytes[v * K + k] +
						          (double)c->inflight[s2] * c->memory_per_microbatch_bytes[v * K + k];
						if (d->mem_binds && !(mem_add <= d->limit))
							continue;
						/* pend deltas for boundaries m0 .. s2 - 1 */
						for (m = 0; m < (size_t)(s2 - m0); m++)
							dp[m] = 0;
						for (j = d->pstart[v]; j < d->pstart[v + 1]; j++) {
							const struct cost_edge *e = &c->edges[d->pred[j]];
							int fi = where[e->from], su = fst[fi];
							size_t kl = fk[fi] * K + k;

							if (su == s2) {
								dsum += e->same_stage_s[kl];
								dopen += e->same_stage_s[kl];
							} else {
								double r = e->cross_stage_s[kl];
								int mm;

								dsum += (double)(s2 - su) * r;
								for (mm = su; mm < s2; mm++)
									dp[mm - m0] += r;
							}
						}
						/* the extension's key: ideal + v, s2, its frontier */
						memset(nkey, 0, kw * sizeof(uint64_t));
						memcpy(nkey, key, W * sizeof(uint64_t));
						nkey[v / 64] |= (uint64_t)1 << (v % 64);
						nkey[W] = (uint64_t)s2;
						nf2 = 0;
						m0b = s2;
						for (f = 0, j = 0; f <= nf; f++) {
							/* merge the old frontier (index order) with v */
							size_t u;
							int st;
							size_t ku;

							if (j == 0 && (f == nf || fl[f] > v)) {
								j = 1;
								if (dd_frontier(d, nkey, v)) {
									/* its class: the rows its out-edges will read */
									nkey[W + 1 + (size_t)nf2++] =
										((uint64_t)d->rep[v * K + k] << 32) | (uint32_t)s2;
									/* v's own stage s2 starts no pending boundary */
								}
							}
							if (f == nf)
								break;
							u = fl[f];
							if (!dd_frontier(d, nkey, u))
								continue;
							st = fst[f];
							ku = fk[f];
							nkey[W + 1 + (size_t)nf2++] = ((uint64_t)ku << 32) | (uint32_t)st;
							if (st < m0b)
								m0b = st;
							if (st < s2) {
								/* each edge from u to a layer not yet placed will cross the
								 * boundaries st .. s2 - 1 at least (its head goes to a stage
								 * >= s2), at no less than its least R' */
								size_t jj;
								double r = 0;

								for (jj = d->sstart[u]; jj < d->sstart[u + 1]; jj++)
									if (!dd_in(nkey, d->succ[jj]))
										r += d->rmin[d->sedge[jj] * K + ku];
								cst[ncert] = st;
								crv[ncert++] = r;
							}
						}
						np2 = (size_t)(s2 - m0b);
						for (m = 0; m < np2; m++)
							cert[m] = 0;
						for (j = 0; j < ncert; j++) {
							int mm;

							for (mm = cst[j]; mm < s2; mm++)
								cert[mm - m0b] += crv[j];
							cert_sum += crv[j] * (double)(s2 - cst[j]);
						}
						{
							size_t ts = dd_state(&nxt, nkey);
							double lbase = rem_after;

							if (ts == DD_NONE)
								goto nomem;
							for (li = cur.head[si]; li != DD_NONE; li = cur.lab[li].next) {
								struct dd_lab x = {0};
								const struct dd_lab *y = &cur.lab[li];
								/* y's pool: o_prev, then the pending boundaries' o and the
								 * pending stages' p (m0 .. s - 1 each); none on the first label */
								const double *yp = cur.pend && cur.npend ? cur.pend + y->pend : NULL;
								double yo_prev = yp ? yp[0] : 0, o_in;
								double pmax = 0, lb, mx, open_old;
								int r;

								open_old = y->open;
								x.sum = y->sum + dsum;
								mx = y->mx;
								x.open = (opt ? 0 : open_old) + dopen;
								x.mem = d->mem_binds ? (opt ? 0 : y->mem) + mem_add : 0;
								if (d->mem_binds && !(x.mem <= d->limit))
									goto next_label;
								for (m = 0; m < (size_t)(s2 - m0); m++) {
									double old = (int)m < s - m0 ? yp[1 + m] : 0;

									pv[m] = old + dp[m];
									/* stage m0 + m: closed before (its p pending in y), or
									 * stage s, closed by this extension */
									ps[m] = (int)m < s - m0 ? yp[1 + np0 + m] : open_old;
								}
								/* boundaries below the new least frontier stage are final, and
								 * so is the cycle of every stage before them (cost.h: receive,
								 * compute, send; transfers block both ranks) */
								for (m = 0; m < (size_t)(m0b - m0); m++)
									mx = dd_max(mx, (m == 0 ? yo_prev : pv[m - 1]) + ps[m] + pv[m]);
								pool[0] = m0b == m0 ? yo_prev : pv[m0b - m0 - 1];
								for (m = 0; m < np2; m++) {
									pool[1 + m] = pv[(size_t)(m0b - m0) + m];
									pool[1 + np2 + m] = ps[(size_t)(m0b - m0) + m];
								}
								/* each pending cycle is at least its known receive, p and send
								 * with the transfers certain to come */
								for (m = 0; m < np2; m++)
									pmax = dd_max(pmax, pool[m] + (m > 0 ? cert[m - 1] : 0) +
									                    pool[1 + np2 + m] + pool[1 + m] + cert[m]);
								/* the open stage's cycle so far: its receive (as known) and layers */
								o_in = np2 > 0 ? pool[np2] : pool[0];
								x.mx = mx;
								if (d->c == 1) {
									x.mx = 0;
									x.open = 0;
									for (m = 0; m < 1 + 2 * np2; m++)
										pool[m] = 0;
									pmax = 0;
									o_in = 0;
								}
								if (d->h) {
									/* the memory-priced bound on the time still to come */
									const double *hr = d->h + (size_t)s2 * DD_NPRICE * n;
									double room = d->limit - x.mem + (double)(d->pp - 1 - s2) * d->limit;
									size_t jj;

									lbase = rem_after;
									for (jj = 0; jj < DD_NPRICE; jj++)
										lbase = dd_max(lbase, gsum[opt][jj] - hr[jj * n + v] -
										                    d->price[jj] * room);
								}
								lb = x.sum + cert_sum + lbase;
								if (d->c > 1) {
									double b = dd_max(dd_max(x.mx, x.open + o_in +
									                                   (np2 > 0 ? cert[np2 - 1] : 0)),
									                  pmax);

									b = dd_max(b, (x.open + lbase) / (double)(d->pp - s2));
									lb += cm * b;
								}
								if (lb >= d->cutoff_s) {
									d->cut_pruned = 1;
									goto next_label;
								}
								if (lb > bound)
									goto next_label;
								r = dd_insert(&S, &nxt, ts, &x, pool, 1 + 2 * np2,
								              y->trace, (uint32_t)v, (uint32_t)k, s2);
								if (r == -2) {
									/* the trace is full: drop what no live label leads to,
									 * and go on while that frees an eighth of it at least
									 * (so compactions copy at most 8 x the labels made)
									 * and the level's labels, dominated ones included,
									 * stay within twice the cap (their memory) */
									r = dd_gc(&S, &cur, &nxt);
									if (r == 0 && S.ntr <= d->cap - d->cap / 8 &&
									    nxt.nlab < 2 * d->cap)
										r = dd_insert(&S, &nxt, ts, &x, pool, 1 + 2 * np2,
										              y->trace, (uint32_t)v, (uint32_t)k, s2);
									else if (r == 0)
										r = -2;
								}
								if (r == -1)
									goto nomem;
								if (r == -3) {
									d->trial_spent = 1;
									rc = err_set(err, UNIAP_E_LIMIT,
									             "dp-dag: width %d, %zu ideals, %.3g states "
									             "estimated, over the label cap of %zu: its "
									             "trial of %ld labels did not finish",
									             d->width, d->ideals, d->states, d->cap,
									             d->trial);
									goto out;
								}
								if (r == -2) {
									rc = err_set(err, UNIAP_E_LIMIT,
									             "dp-dag: width %d: over the label cap of %zu",
									             d->width, d->cap);
									goto out;
								}
								if ((++tick & 4095) == 0 && opt_clock_s() > d->deadline_s) {
									rc = err_set(err, UNIAP_E_TIMEOUT, "dp-dag: time limit");
									goto out;
								}
next_label:;
							}
						}
					}
				}
			}
		}
		dd_level_free(&cur);
		cur = nxt;
		memset(&nxt, 0, sizeof(nxt));
		if (dd_keys_init(&nxt.keys, kw) != 0)
			goto nomem;
	}
	/* the last level: every layer placed; only s = pp - 1 is a plan */
	{
		size_t best = DD_NONE, li;
		double best_tpi = INFINITY;

		for (si = 0; si < cur.keys.count; si++) {
			if ((int)dd_key(&cur.keys, si)[W] != d->pp - 1)
				continue;
			for (li = cur.head[si]; li != DD_NONE; li = cur.lab[li].next) {
				const struct dd_lab *x = &cur.lab[li];
				/* every boundary is final: the last stage's cycle is its receive and layers */
				double o_last = cur.npend ? cur.pend[x->pend] : 0;
				double tt = x->sum + cm * dd_max(x->mx, x->open + o_last);

				if (tt < best_tpi) {
					best_tpi = tt;
					best = x->trace;
				}
			}
		}
		if (best == DD_NONE)
			goto out;
		if (!(best_tpi < d->cutoff_s)) {
			d->cut_pruned = 1;
			goto out;
		}
		/* the trace must give every layer once, each entry after its parent (dd_gc keeps
		 * that order): anything else is a bug, said, never a plan built from it */
		for (v = 0; v < n; v++)
			stage_out[v] = -1;
		for (li = best, t = 0; li != DD_NONE && t < n; li = S.tr[li].parent, t++) {
			if (S.tr[li].v >= n || stage_out[S.tr[li].v] >= 0 ||
			    (S.tr[li].parent != DD_NONE && S.tr[li].parent >= li))
				break;
			stage_out[S.tr[li].v] = S.tr[li].stage;
			strategy_out[S.tr[li].v] = S.tr[li].k;
		}
		if (li != DD_NONE || t != n) {
			rc = err_set(err, UNIAP_E_INTERNAL, "dp-dag: the plan's trace does not give each layer once");
			goto out;
		}
		*found = 1;
		*tpi = best_tpi;
	}
	goto out;
nomem:
	rc = err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
out:
	dd_level_free(&cur);
	dd_level_free(&nxt);
	free(S.tr);
	free(key);
	free(nkey);
	free(fl);
	free(addable);
	free(fst);
	free(where);
	free(fk);
	free(dp);
	free(pv);
	free(ps);
	free(pool);
	free(cert);
	free(crv);
	free(cst);
	return rc;
}

/* Copies a plan (stage, strategy: n borrowed entries each) into out. */
static uniap_code dd_give_plan(struct opt_result *out, size_t n, const int *stage,
                               const size_t *strategy, struct uniap_err *err)
{
	out->stage = malloc(n * sizeof(int));
	out->strategy = malloc(n * sizeof(size_t));
	if (!out->stage || !out->strategy) {
		free(out->stage);
		free(out->strategy);
		out->stage = NULL;
		out->strategy = NULL;
		return err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
	}
	memcpy(out->stage, stage, n * sizeof(int));
	memcpy(out->strategy, strategy, n * sizeof(size_t));
	out->n_layers = n;
	return UNIAP_OK;
}

uniap_code dp_dag_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                        const int *inc_stage, const size_t *inc_strategy, struct opt_result *out,
                        struct uniap_err *err)
{
	struct dd_inst d;
	size_t n = cand->n_layers;
	int *st = NULL, found = 0, *inc_copy_st = NULL;
	size_t *sk = NULL, *inc_copy_sk = NULL;
	double t_inc = INFINITY, t_dp = INFINITY;
	uniap_code rc;

	if (cost_virtual(cand) > 1)
		return err_set(err, UNIAP_E_ARG, "dp-dag: interleaved candidates go to the MILP");
	rc = dd_inst_init(&d, cand, opts, err);
	if (rc != UNIAP_OK)
		return rc;
	out->method = OPT_METHOD_DP_DAG;
	rc = dd_measure(&d, err);
	if (rc != UNIAP_OK)
		goto out;
	if (dd_lagrange_init(&d) != 0) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
		goto out;
	}
	if (inc_stage && inc_strategy && !opts->dp_no_incumbent)
		t_inc = opt_tpi(cand, inc_stage, inc_strategy);
	d.ub_s = t_inc;
	st = calloc(n, sizeof(int));
	sk = calloc(n, sizeof(size_t));
	if (!st || !sk) {
		rc = err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
		goto out;
	}
	if (!opts->dp_no_incumbent) {
		/* a beam run (a few labels per state) for a tighter incumbent than the heuristic's */
		int fb = 0;
		double tb = INFINITY;
		long lab0 = d.labels;

		rc = dd_search(&d, DD_BEAM, st, sk, &tb, &fb, err);
		/* a beam past the trial ends it, a rule of thumb, not an implication: the exact
		 * search keeps every label no other dominates where the beam keeps 16 a state, and
		 * on every parallel-branch graph measured both stopped (0.2 to 0.4 s each), but the
		 * beam's trimming can drop a label that would have dominated later ones, so it can
		 * make more labels than the exact run (an audit: 6 of 221 small fan-ins whose exact
		 * run fits a trial its beam ran out of).  Those go to the MILP: the answer is the
		 * same, the path slower */
		if (rc == UNIAP_E_LIMIT && d.trial_spent)
			goto out;
		if (rc == UNIAP_E_LIMIT || rc == UNIAP_E_TIMEOUT) {
			err_clear(err);
			rc = UNIAP_OK;
		}
		if (rc != UNIAP_OK)
			goto out;
		if (fb)
			tb = opt_tpi(cand, st, sk);
		if (fb && tb < t_inc) {
			free(inc_copy_st);
			free(inc_copy_sk);
			inc_copy_st = st;
			inc_copy_sk = sk;
			inc_stage = inc_copy_st;
			inc_strategy = inc_copy_sk;
			t_inc = tb;
			st = calloc(n, sizeof(int));
			sk = calloc(n, sizeof(size_t));
			if (!st || !sk) {
				rc = err_set(err, UNIAP_E_NOMEM, "dp-dag: out of memory");
				goto out;
			}
		}
		d.cut_pruned = 0;
		d.labels = lab0;
		d.ub_s = t_inc;
	}
	rc = dd_search(&d, 0, st, sk, &t_dp, &found, err);
	if (rc == UNIAP_E_TIMEOUT && isfinite(t_inc) && t_inc < d.cutoff_s) {
		/* out of time: the incumbent, with the bound every plan meets (each layer at its
		 * fastest, and the largest of pp stages at least their mean) */
		err_clear(err);
		rc = UNIAP_OK;
		rc = dd_give_plan(out, n, inc_stage, inc_strategy, err);
		if (rc != UNIAP_OK)
			goto out;
		out->n_layers = n;
		out->tpi_s = t_inc;
		out->bound_s = fmin(t_inc, d.total_min_a * (1 + (double)(d.c - 1) / d.pp));
		out->gap = t_inc > 0 ? (t_inc - out->bound_s) / t_inc : 0;
		out->status = OPT_FEASIBLE;
		out->nodes = d.labels;
		snprintf(out->note, sizeof(out->note), "dp-dag: time limit (width %d): the heuristic plan",
		         d.width);
		goto out;
	}
	if (rc != UNIAP_OK)
		goto out;
	out->nodes = d.labels;
	if (found) {
		t_dp = opt_tpi(cand, st, sk);
		if (!isfinite(t_dp)) {
			/* the program summed a stage's memory in another order than opt_tpi and the two
			 * disagree at the limit: let the MILP answer */
			rc = err_set(err, UNIAP_E_LIMIT, "dp-dag: a stage at the memory limit within rounding");
			goto out;
		}
	}
	if (found && t_dp <= t_inc) {
		out->stage = st;
		out->strategy = sk;
		st = NULL;
		sk = NULL;
	} else if (isfinite(t_inc) && t_inc < d.cutoff_s) {
		rc = dd_give_plan(out, n, inc_stage, inc_strategy, err);
		if (rc != UNIAP_OK)
			goto out;
	} else {
		/* nothing below the cutoff (or nothing at all) */
		if (d.cut_pruned || (isfinite(t_inc) && !(t_inc < d.cutoff_s))) {
			out->status = OPT_PRUNED;
			out->bound_s = d.cutoff_s;
		} else {
			out->status = OPT_INFEASIBLE;
			out->bound_s = INFINITY;
		}
		out->tpi_s = INFINITY;
		out->gap = INFINITY;
		goto note;
	}
	out->n_layers = n;
	out->tpi_s = opt_tpi(cand, out->stage, out->strategy);
	out->status = OPT_OPTIMAL;
	out->gap = 0;
	out->bound_s = out->tpi_s;
note:
	if (d.trial)
		snprintf(out->note, sizeof(out->note), "width %d, %zu ideals, %.3g states estimated: "
		         "answered within its trial of %ld labels", d.width, d.ideals, d.states, d.trial);
	else
		snprintf(out->note, sizeof(out->note), "width %d, %zu ideals", d.width, d.ideals);
out:
	free(st);
	free(sk);
	free(inc_copy_st);
	free(inc_copy_sk);
	dd_inst_release(&d);
	return rc;
}
