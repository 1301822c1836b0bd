/*
 * opt.c - the optimizer's front: picks the exact path for a candidate
 * (dp.c and dp_dag.c for chains and narrow DAGs, milp.c otherwise), builds
 * the MILP's warm start and bounds its run.  What the paths share is in
 * opt_base.c, the worker processes' byte format in opt_pack.c.
 *
 * Never: include CBC (only milp.c does), I/O, globals, asserts on input.
 */
#include "opt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp.h"
#include "milp.h"

/* A topological order of the layers into order; 1 ok, 0 on a cycle or out of memory. */
static int opt_topo_order(const struct cost_candidate *c, size_t *order)
{
	size_t n = c->n_layers, e, head = 0, tail = 0;
	size_t *indeg = calloc(n ? n : 1, sizeof(size_t)), *cnt = NULL, *adj = NULL;
	int ok = 0;

	if (!indeg || opt_successors(c, &cnt, &adj) != 0)
		goto out;
	for (e = 0; e < c->n_edges; e++)
		indeg[c->edges[e].to]++;
	/* Kahn with the smallest index first, so index order wins when it is topological */
	for (e = 0; e < n; e++)
		if (indeg[e] == 0)
			order[tail++] = e;
	while (head < tail) {
		size_t u = order[head++], j, w;

		/* keep the queue sorted: insert newly freed layers in index order */
		for (j = cnt[u]; j < cnt[u + 1]; j++) {
			size_t v = adj[j];

			if (--indeg[v] == 0) {
				w = tail++;
				while (w > head && order[w - 1] > v) {
					order[w] = order[w - 1];
					w--;
				}
				order[w] = v;
			}
		}
	}
	ok = tail == n;
out:
	free(indeg);
	free(cnt);
	free(adj);
	return ok;
}

/*
 * The strategy switch that saves the memory of a device over the limit (mem[],
 * its devices' memory now) at the least time per byte, judged by the layer's
 * own memory on its stage, any layer but skip: into *bu, *bk; *bu = n_layers
 * when no switch saves memory there.
 */
static void opt_memory_switch(const struct cost_candidate *c, const int *stage, const size_t *strategy,
                              const double *mem, size_t skip, size_t *bu, size_t *bk)
{
	size_t n = c->n_layers, K = cost_k(c), u, k;
	double best = INFINITY, best_save = 0;

	*bu = n;
	*bk = 0;
	for (u = 0; u < n; u++) {
		int i = stage[u];
		double cur;

		if (u == skip || mem[i % c->pp] <= c->memory_limit_bytes)
			continue;
		cur = c->memory_fixed_bytes[u * K + strategy[u]] +
		      (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + strategy[u]];
		for (k = 0; k < K; k++) {
			double save = cur - (c->memory_fixed_bytes[u * K + k] +
			                     (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + k]),
			       cost = c->time_s[u * K + k] - c->time_s[u * K + strategy[u]], ratio;

			if (!(save > 0))
				continue;
			ratio = cost / save;
			if (ratio < best || (ratio == best && save > best_save)) {
				best = ratio;
				best_save = save;
				*bu = u;
				*bk = k;
			}
		}
	}
}

/*
 * Moves one layer of a device over the memory limit (mem[], its devices'
 * memory now) to the neighbouring stage, where the order of the edges allows
 * it and its own stage keeps a layer: of those moves, the one that leaves the
 * receiving device the most room.  1 moved, 0 none possible, -1 out of
 * memory.  O(layers + edges + stages).
 */
static int opt_repair_move(const struct cost_candidate *c, int *stage, size_t *strategy, const double *mem)
{
	size_t n = c->n_layers, K = cost_k(c), u, e, bu = n;
	int S = cost_stages(c), pp = c->pp, bi = 0, di;
	/* per layer: the latest stage of its predecessors, the earliest of its successors */
	int *lo = malloc(n * 2 * sizeof(int)), *hi, *count = calloc((size_t)S, sizeof(int));
	double best = -INFINITY;

	if (!lo || !count) {
		free(lo);
		free(count);
		return -1;
	}
	hi = lo + n;
	for (u = 0; u < n; u++) {
		lo[u] = 0;
		hi[u] = S - 1;
		count[stage[u]]++;
	}
	for (e = 0; e < c->n_edges; e++) {
		size_t a = c->edges[e].from, b = c->edges[e].to;

		lo[b] = stage[a] > lo[b] ? stage[a] : lo[b];
		hi[a] = stage[b] < hi[a] ? stage[b] : hi[a];
	}
	for (u = 0; u < n; u++) {
		int i = stage[u];

		if (mem[i % pp] <= c->memory_limit_bytes || count[i] < 2)
			continue;
		for (di = -1; di <= 1; di += 2) {
			int ni = i + di;
			double own, room;

			if (ni < 0 || ni >= S || ni % pp == i % pp || ni < lo[u] || ni > hi[u])
				continue;
			own = c->memory_fixed_bytes[u * K + strategy[u]] +
			      (double)c->inflight[ni] * c->memory_per_microbatch_bytes[u * K + strategy[u]];
			room = c->memory_limit_bytes - mem[ni % pp] - own;
			if (room > best) {
				best = room;
				bu = u;
				bi = ni;
			}
		}
	}
	free(lo);
	free(count);
	if (bu == n)
		return 0;
	stage[bu] = bi;
	return 1;
}

/*
 * Brings an assignment within every device's memory, greedily: while a
 * device is over the limit, the layer on it and the strategy that save its
 * memory at the least time per byte (the layer's own memory on its stage)
 * are switched, and the devices measured again (opt_device_memory); when no
 * switch saves memory there, a layer moves off them (opt_repair_move).  Stops
 * when every device fits (1), or when nothing helps or after 4n steps (0; the
 * assignment is left as it stands).  -1 out of memory.
 */
static int opt_repair_memory(const struct cost_candidate *c, int *stage, size_t *strategy)
{
	size_t n = c->n_layers, step;
	double *mem = malloc((size_t)c->pp * sizeof(double));
	int d, rc = 0;

	if (!mem)
		return -1;
	for (step = 0; step < 4 * n; step++) {
		int over = 0;
		size_t bu, bk;

		if (opt_device_memory(c, stage, strategy, mem) != 0) {
			rc = -1;
			break;
		}
		for (d = 0; d < c->pp; d++)
			over += !(mem[d] <= c->memory_limit_bytes);
		if (!over) {
			rc = 1;
			break;
		}
		opt_memory_switch(c, stage, strategy, mem, n, &bu, &bk);
		if (bu != n) {
			strategy[bu] = bk;
			continue;
		}
		/* every layer of the devices over the limit is at its smallest: move one of their
		 * layers to a neighbouring stage instead, onto the device with the most room left */
		rc = opt_repair_move(c, stage, strategy, mem);
		if (rc != 1) {
			rc = rc < 0 ? -1 : 0;
			break;
		}
		rc = 0;
	}
	free(mem);
	return rc;
}

/*
 * Local search from a valid plan (opt_local_search).  Moves:
 *   - one layer to its stage or a neighbouring one, with any strategy;
 *   - on a chain, a shift: one layer over every boundary from stage i to stage
 *     j (each stage between gives its end layer to the next and takes one from
 *     the one before), which moves work from i's device to j's while the
 *     stages between keep their sizes: interleaved devices' stages are not
 *     neighbours, so one-layer moves alone cannot balance them.
 * A move is taken when it makes the plan better: a lower TPI, or the same TPI
 * (to rounding) with more even bottleneck terms (opt_tpi_spread).  The second
 * rule is what lets the search leave a tie at the maximum: when several
 * devices carry the largest load, no one move lowers the TPI, but each that
 * takes work off one of them evens the terms, until the last one goes.  A move
 * that puts a device over the memory limit comes with up to OPT_LS_SWITCHES
 * strategy switches of that device's other layers, the cheapest in time per
 * byte first (opt_memory_switch), and is judged with them: a device with spare
 * time but no spare memory can then take a layer by sharding others.  The best
 * plan seen is kept.  Stops when no move helps or after its budget of
 * evaluation work (layers + edges + memory rows per evaluation; OPT_QUICK_WORK
 * by default, opt.h).
 */
#define OPT_LS_SWITCHES 8 /* strategy switches that may make room for one move */
#define OPT_LS_ROUNDS 64  /* kicks of the iterated search per OPT_QUICK_WORK of work */

struct opt_ls {
	const struct cost_candidate *c;
	int *stage;                  /* borrowed: the plan being improved */
	size_t *strategy;            /* borrowed */
	int *best_st;                /* owned, [n]: the best plan seen */
	size_t *best_sk;             /* owned, [n] */
	double *mem;                 /* owned, [pp] */
	unsigned char *used;         /* owned, [S]: phase 1's check that no stage is empty */
	double cur, sq, best, work, per;
	double budget;               /* work allowed per phase */
	double target;               /* phase 2 ends once best is at most this (0: never) */
	int rounds;                  /* kicks allowed per phase */
	int phase1;                  /* 1: the value is the memory over the limit (opt_ls_excess) */
};

/*
 * Phase 1's value: the bytes by which the devices exceed the memory limit,
 * summed, and into *q the plan's compute time; INFINITY when the plan is not
 * one apart from memory (a stage empty, an edge backwards).
 */
static double opt_ls_excess(struct opt_ls *ls, double *q)
{
	const struct cost_candidate *c = ls->c;
	size_t n = c->n_layers, K = cost_k(c), u, e;
	int S = cost_stages(c), i;
	double over = 0, t = 0;

	*q = INFINITY;
	memset(ls->used, 0, (size_t)S);
	for (u = 0; u < n; u++) {
		ls->used[ls->stage[u]] = 1;
		t += c->time_s[u * K + ls->strategy[u]];
	}
	for (i = 0; i < S; i++)
		if (!ls->used[i])
			return INFINITY;
	for (e = 0; e < c->n_edges; e++)
		if (ls->stage[c->edges[e].from] > ls->stage[c->edges[e].to])
			return INFINITY;
	if (opt_device_memory(c, ls->stage, ls->strategy, ls->mem) != 0)
		return INFINITY;
	for (i = 0; i < c->pp; i++)
		over += fmax(0, ls->mem[i] - c->memory_limit_bytes);
	*q = t;
	return over;
}

/* The plan as it stands becomes the current one (value t, tie-break q), and
 * the best one when its value is the least yet. */
static void opt_ls_take(struct opt_ls *ls, double t, double q)
{
	size_t n = ls->c->n_layers;

	ls->cur = t;
	ls->sq = q;
	if (t < ls->best) {
		ls->best = t;
		memcpy(ls->best_st, ls->stage, n * sizeof(int));
		memcpy(ls->best_sk, ls->strategy, n * sizeof(size_t));
	}
}

/*
 * The value of the plan as it stands, into *q its tie-break: phase 1's excess
 * (opt_ls_excess), else its TPI, after up to OPT_LS_SWITCHES strategy switches
 * that make room on devices over memory (opt_memory_switch, never layer skip),
 * each recorded in undo_u/undo_k (*nsw of them) for the caller to undo.
 */
static double opt_ls_value(struct opt_ls *ls, size_t skip, size_t *undo_u, size_t *undo_k, size_t *nsw,
                           double *q)
{
	const struct cost_candidate *c = ls->c;
	size_t n = c->n_layers;
	double t;

	ls->work += ls->per;
	if (ls->phase1)
		return opt_ls_excess(ls, q);
	t = opt_tpi_spread(c, ls->stage, ls->strategy, q);
	while (!isfinite(t) && *nsw < OPT_LS_SWITCHES && opt_device_memory(c, ls->stage, ls->strategy, ls->mem) == 0) {
		size_t bu, bk;

		opt_memory_switch(c, ls->stage, ls->strategy, ls->mem, skip, &bu, &bk);
		ls->work += ls->per * (double)cost_k(c);
		if (bu == n)
			break;
		undo_u[*nsw] = bu;
		undo_k[(*nsw)++] = ls->strategy[bu];
		ls->strategy[bu] = bk;
		t = opt_tpi_spread(c, ls->stage, ls->strategy, q);
		ls->work += ls->per;
	}
	return t;
}

/* Judges the plan as it now stands (the caller has made its move), making room
 * in memory first if it needs it (never switching layer skip); 1 taken, 0 not
 * (the switches undone: the caller undoes its own move). */
static int opt_ls_try(struct opt_ls *ls, size_t skip)
{
	size_t undo_u[OPT_LS_SWITCHES], undo_k[OPT_LS_SWITCHES], nsw = 0;
	double q, tol = 1e-12 * ls->cur, t = opt_ls_value(ls, skip, undo_u, undo_k, &nsw, &q);

	if (ls->phase1 ? t < ls->cur || (t == ls->cur && q < ls->sq)
	               : t < ls->cur - tol || (t <= ls->cur + tol && q < ls->sq * (1 - 1e-12))) {
		opt_ls_take(ls, t, q);
		return 1;
	}
	while (nsw > 0) {
		nsw--;
		ls->strategy[undo_u[nsw]] = undo_k[nsw];
	}
	return 0;
}

/* One pass of one-layer moves; 1 when one was taken. */
static int opt_ls_layers(struct opt_ls *ls)
{
	const struct cost_candidate *c = ls->c;
	size_t n = c->n_layers, K = cost_k(c), u, k;
	int S = cost_stages(c), improved = 0;

	for (u = 0; u < n && ls->work < ls->budget; u++) {
		size_t old_k = ls->strategy[u];
		int old_i = ls->stage[u], di;

		for (di = -1; di <= 1; di++) {
			int ni = old_i + di;

			if (ni < 0 || ni >= S)
				continue;
			for (k = 0; k < K; k++) {
				if (ni == old_i && k == old_k)
					continue;
				ls->stage[u] = ni;
				ls->strategy[u] = k;
				if (opt_ls_try(ls, u)) {
					old_k = k;
					old_i = ni;
					improved = 1;
				}
			}
		}
		ls->stage[u] = old_i;
		ls->strategy[u] = old_k;
	}
	return improved;
}

/* The first and last layer of every stage, the stages in layer order; n_layers
 * for an empty stage. */
static void opt_ls_ends(const struct opt_ls *ls, size_t *first, size_t *last)
{
	size_t u;
	int i;

	for (i = 0; i < cost_stages(ls->c); i++)
		first[i] = last[i] = ls->c->n_layers; /* an empty stage (a kick's move can make one) */
	for (u = 0; u < ls->c->n_layers; u++) {
		if (u == 0 || ls->stage[u] != ls->stage[u - 1])
			first[ls->stage[u]] = u;
		last[ls->stage[u]] = u;
	}
}

/* One pass of shifts on a chain whose stages follow the layer order; 1 when
 * one was taken. */
static int opt_ls_shifts(struct opt_ls *ls)
{
	const struct cost_candidate *c = ls->c;
	size_t n = c->n_layers;
	int S = cost_stages(c), i, j, s, improved = 0;
	size_t *first = malloc((size_t)S * 2 * sizeof(size_t)), *last;

	if (!first)
		return 0;
	last = first + S;
	opt_ls_ends(ls, first, last);
	for (i = 0; i < S && ls->work < ls->budget; i++)
		for (j = 0; j < S && ls->work < ls->budget; j++) {
			if (j == i || j == i + 1 || j + 1 == i || first[i] == last[i])
				continue; /* a neighbour (one-layer moves), or stage i would be empty */
			if (i < j)
				for (s = i; s < j; s++)
					ls->stage[last[s]] = s + 1;
			else
				for (s = i; s > j; s--)
					ls->stage[first[s]] = s - 1;
			if (opt_ls_try(ls, n)) {
				improved = 1;
				opt_ls_ends(ls, first, last);
				ls->work += (double)n;
				continue;
			}
			if (i < j)
				for (s = i; s < j; s++)
					ls->stage[last[s]] = s;
			else
				for (s = i; s > j; s--)
					ls->stage[first[s]] = s;
		}
	free(first);
	return improved;
}

/* xorshift64*: the kicks' choices, from a fixed seed */
static uint64_t opt_ls_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/*
 * Moves the plan (the best one, copied in by the caller) by 2 to 6 random
 * moves: a layer to a random strategy on its stage or a neighbour, or (on a
 * chain) a shift between two random stages; a plan over memory then gets the
 * switches of opt_ls_try.  1 with ls->cur, ls->sq those of a valid plan, 0
 * when the kick found none.
 */
static int opt_ls_kick(struct opt_ls *ls, int chain, uint64_t *rng)
{
	const struct cost_candidate *c = ls->c;
	size_t n = c->n_layers, K = cost_k(c), u, moves = 2 + opt_ls_rand(rng) % 5, m, nsw = 0;
	size_t undo_u[OPT_LS_SWITCHES], undo_k[OPT_LS_SWITCHES]; /* the kick keeps its switches */
	int S = cost_stages(c), i, j, s;
	double t, q;
	size_t *ends = chain ? malloc((size_t)S * 2 * sizeof(size_t)) : NULL; /* first, then last */

	if (chain && !ends)
		return 0;
	for (m = 0; m < moves; m++) {
		if (chain && S > 2 && opt_ls_rand(rng) % 2) {
			int lo, hi, ok;

			i = (int)(opt_ls_rand(rng) % (uint64_t)S);
			j = (int)(opt_ls_rand(rng) % (uint64_t)S);
			lo = i < j ? i : j;
			hi = i < j ? j : i;
			ok = i != j;
			opt_ls_ends(ls, ends, ends + S);
			ls->work += (double)n;
			for (s = lo; s <= hi && ok; s++)
				ok = ends[s] < n;
			if (!ok || ends[i] == ends[S + i])
				continue; /* no move, a stage empty, or stage i would be */
			/* one layer over each boundary from i to j, the stages in layer order */
			if (i < j)
				for (s = i; s < j; s++)
					ls->stage[ends[S + s]] = s + 1;
			else
				for (s = i; s > j; s--)
					ls->stage[ends[s]] = s - 1;
		} else {
			int ni;

			u = (size_t)(opt_ls_rand(rng) % n);
			ni = ls->stage[u] + (int)(opt_ls_rand(rng) % 3) - 1;
			if (ni >= 0 && ni < S)
				ls->stage[u] = ni;
			ls->strategy[u] = (size_t)(opt_ls_rand(rng) % K);
		}
	}
	free(ends);
	t = opt_ls_value(ls, n, undo_u, undo_k, &nsw, &q);
	if (!isfinite(t))
		return 0;
	opt_ls_take(ls, t, q);
	return 1;
}

/* 1 when the search can end: phase 1 at no excess, phase 2 at its target. */
static int opt_ls_done(const struct opt_ls *ls)
{
	return ls->phase1 ? ls->best == 0 : ls->best <= ls->target;
}

/* Runs passes of moves until none helps, the work runs out, or phase 1 reaches no excess. */
static void opt_ls_run(struct opt_ls *ls, int chain)
{
	while (ls->work < ls->budget && !(ls->phase1 && ls->cur == 0) && !opt_ls_done(ls)) {
		int improved = opt_ls_layers(ls);

		if (chain && cost_stages(ls->c) > 2 && !(ls->phase1 && ls->cur == 0))
			improved |= opt_ls_shifts(ls);
		if (!improved)
			break;
	}
}

/* Descends, then kicks the best plan by a few random moves and descends again,
 * ls->rounds times, until a quarter of them (at least OPT_LS_ROUNDS) in a row
 * found nothing better, or until the work runs out (phase 1: until no excess). */
static void opt_ls_iterate(struct opt_ls *ls, int chain, uint64_t *rng)
{
	size_t n = ls->c->n_layers;
	int round, idle = 0, patience = ls->rounds / 4 > OPT_LS_ROUNDS ? ls->rounds / 4 : OPT_LS_ROUNDS;

	opt_ls_run(ls, chain);
	for (round = 0; round < ls->rounds && idle < patience && ls->work < ls->budget && !opt_ls_done(ls);
	     round++) {
		double before = ls->best;

		memcpy(ls->stage, ls->best_st, n * sizeof(int));
		memcpy(ls->strategy, ls->best_sk, n * sizeof(size_t));
		if (opt_ls_kick(ls, chain, rng))
			opt_ls_run(ls, chain);
		idle = ls->best < before ? 0 : idle + 1;
	}
}

/*
 * Improves stage[], strategy[] (borrowed) in place.  A plan over the memory
 * limit (*tpi INFINITY) first goes through phase 1, the same moves judged by
 * how far the devices are over the limit (then by compute time), until none
 * is; *tpi is then the best plan's TPI, INFINITY when phase 1 did not get
 * there.
 */
static void opt_local_search(const struct cost_candidate *c, double work, double target, int *stage,
                             size_t *strategy, double *tpi)
{
	size_t n = c->n_layers, u;
	struct opt_ls ls = { .c = c, .stage = stage, .strategy = strategy, .best = INFINITY, .target = target };
	int chain = opt_is_chain(c);
	uint64_t rng = 0x9e3779b97f4a7c15ull; /* fixed: the same plan whatever runs beside it */

	ls.per = (double)(n + c->n_edges + c->n_peaks * (size_t)cost_virtual(c) + 16);
	ls.budget = work > OPT_QUICK_WORK ? work : OPT_QUICK_WORK;
	ls.rounds = (int)fmin(ls.budget / OPT_QUICK_WORK * OPT_LS_ROUNDS, 1 << 20);
	ls.best_st = malloc(n * sizeof(int));
	ls.best_sk = malloc(n * sizeof(size_t));
	ls.mem = malloc((size_t)c->pp * sizeof(double));
	ls.used = malloc((size_t)cost_stages(c));
	if (!ls.best_st || !ls.best_sk || !ls.mem || !ls.used)
		goto out;
	/* shifts need the stages in layer order, which the heuristic's cut of a chain gives */
	for (u = 1; chain && u < n; u++)
		chain = stage[u] >= stage[u - 1];
	if (!isfinite(*tpi)) {
		ls.phase1 = 1;
		ls.cur = opt_ls_excess(&ls, &ls.sq);
		if (!isfinite(ls.cur))
			goto out;
		ls.best = INFINITY;
		opt_ls_take(&ls, ls.cur, ls.sq);
		opt_ls_iterate(&ls, chain, &rng);
		if (ls.best > 0)
			goto out; /* still over memory: no plan */
		memcpy(stage, ls.best_st, n * sizeof(int));
		memcpy(strategy, ls.best_sk, n * sizeof(size_t));
		ls.phase1 = 0;
		*tpi = opt_tpi(c, stage, strategy);
		if (!isfinite(*tpi))
			goto out;
	}
	ls.best = INFINITY;
	ls.work = 0;
	ls.cur = opt_tpi_spread(c, stage, strategy, &ls.sq);
	opt_ls_take(&ls, ls.cur, ls.sq);
	opt_ls_iterate(&ls, chain, &rng);
	memcpy(stage, ls.best_st, n * sizeof(int));
	memcpy(strategy, ls.best_sk, n * sizeof(size_t));
	*tpi = ls.best;
out:
	free(ls.best_st);
	free(ls.best_sk);
	free(ls.mem);
	free(ls.used);
}

/*
 * Interleaved chains: more starts (docs/optimizer.md, "The quick plan", step
 * 5): the counts cuts (opt_counts_cut and opt_counts_loose, below) and chain cuts.  For a chain cut
 * the S = pp v chunks are taken as the S stages of a
 * 1F1B pipeline, each with its own in-flight count and within share x (the
 * limit / v), and dp-sweep's optimum of that chain is the start: its stages
 * come out balanced, so the devices, each the sum of v of them, do too, with
 * the strategies a memory-tight model needs (where the cut of step 1 and its
 * repair leave the local search far from any good plan, or with none).  A
 * device's chunks need not split its memory evenly (its first holds the most
 * micro-batches), so each share of opt_chunk_shares is a start; a cut over a
 * device's limit goes through phase 1.  The DP's work is counted
 * (OPT_CHUNK_DP_WORK entries of its block runs), never timed, so the same
 * input gets the same starts on any machine.
 */
static const double opt_chunk_shares[] = {1.0, 1.25, 1.5, 2.0};
#define OPT_CHUNK_STARTS 6 /* the two counts cuts and one chain cut per share */
#define OPT_CHUNK_DP_WORK 20000000L

/* The cut of c's chunks as a 1F1B chain within share x (limit / v) per chunk
 * into stage[], strategy[] (caller-owned, [n_layers]); 1 made, 0 none. */
static int opt_chunk_cut(const struct cost_candidate *c, double share, int *stage, size_t *strategy)
{
	struct cost_candidate s = *c; /* borrows c's tables: never released */
	struct opt_options o;
	struct opt_result r;
	struct uniap_err err;
	int ok = 0;

	s.pp = cost_stages(c);
	s.virtual_stages = 1;
	s.schedule = COST_1F1B;
	s.n_peaks = 0;
	s.peaks = NULL;
	s.memory_limit_bytes = c->memory_limit_bytes / cost_virtual(c) * share;
	opt_options_init(&o);
	o.path = OPT_PATH_DP_SWEEP;
	o.dp_work_limit = OPT_CHUNK_DP_WORK;
	o.time_limit_s = 0; /* none: the work bounds it */
	err_clear(&err);
	if (opt_solve(&s, &o, &r, &err) == UNIAP_OK && r.stage && r.strategy && r.n_layers == c->n_layers) {
		memcpy(stage, r.stage, c->n_layers * sizeof(int));
		memcpy(strategy, r.strategy, c->n_layers * sizeof(size_t));
		ok = 1;
	}
	opt_result_release(&r);
	return ok;
}

/* Each layer's type into type[] (opt_layer_types; caller-owned, n_layers);
 * returns the first layer of the type with the most members (ties: the
 * earlier type), their count into *members. */
static size_t opt_body_type(const struct cost_candidate *c, size_t *type, size_t *members)
{
	size_t n = c->n_layers, u, b = 0, *count = malloc((n ? n : 1) * sizeof(size_t));

	*members = 0;
	if (!count)
		return 0;
	opt_layer_types(c, type, count);
	for (u = 0; u < n; u++)
		if (count[u] > *members) {
			*members = count[u];
			b = u;
		}
	free(count);
	return b;
}

/* Layer b's strategies with a finite time that no other beats in time, fixed
 * and per-micro-batch memory (of equals, the first), fastest first, into P
 * (caller-owned, cost_k entries); returns how many.  O(K^2). */
static size_t opt_body_front(const struct cost_candidate *c, size_t b, size_t *P)
{
	size_t K = cost_k(c), k, l, np = 0;

	for (k = 0; k < K; k++) {
		int dom = 0;

		for (l = 0; l < K && !dom; l++) {
			double tk = c->time_s[b * K + k], tl = c->time_s[b * K + l];
			double fk = c->memory_fixed_bytes[b * K + k], fl = c->memory_fixed_bytes[b * K + l];
			double ak = c->memory_per_microbatch_bytes[b * K + k], al = c->memory_per_microbatch_bytes[b * K + l];

			dom = l != k && tl <= tk && fl <= fk && al <= ak && (tl < tk || fl < fk || al < ak || l < k);
		}
		if (!dom && isfinite(c->time_s[b * K + k]))
			P[np++] = k;
	}
	for (k = 1; k < np; k++) /* insertion sort by time: np is small */
		for (l = k; l > 0 && c->time_s[b * K + P[l]] < c->time_s[b * K + P[l - 1]]; l--) {
			size_t z = P[l];

			P[l] = P[l - 1];
			P[l - 1] = z;
		}
	return np;
}

/* Keeps keep of the np entries of P (in place, their order kept), spread from
 * the first to the last (a front by time: from the fastest to the least
 * memory); returns how many are left. */
static size_t opt_front_spread(size_t *P, size_t np, size_t keep)
{
	size_t q;

	if (keep >= np)
		return np;
	if (keep <= 1)
		return np > 0 ? 1 : 0;
	for (q = 0; q < keep; q++)
		P[q] = P[(q * (np - 1) + (keep - 1) / 2) / (keep - 1)];
	return keep;
}

/* The stage of a cut's next body slot, its stages holding quota[] slots each:
 * *st and *used (the slots taken in it) move past the full stages, never
 * beyond stage S - 1. */
static int opt_next_slot(const size_t *quota, int S, int *st, size_t *used)
{
	while (*used >= quota[*st] && *st < S - 1) {
		(*st)++;
		*used = 0;
	}
	(*used)++;
	return *st;
}

/*
 * An end of a chain for the counts cut: the layers before its first body
 * layer (the prefix, in stage 0) or after its last (the suffix, in stage
 * S - 1), with the choices of their strategies that no other beats in time,
 * fixed and per-micro-batch memory (at most OPT_END_OPTIONS of them, spread
 * from the fastest to the least memory), sorted by time.
 */
#define OPT_END_OPTIONS 16
#define OPT_END_FRONT 64  /* of each layer's own front, at most (spread) */
#define OPT_END_WORK 2e8  /* comparisons of the fronts, at most: more, and no end is made */
struct opt_end {
	size_t first, n, nopt;
	double t[OPT_END_OPTIONS], f[OPT_END_OPTIONS], a[OPT_END_OPTIONS];
	size_t *pick; /* nopt x n strategies; NULL when n is 0 */
};

/* The options of layers first .. first + n - 1 into *e (e->pick caller-released
 * with free); 1 made, 0 out of memory or a layer without a finite strategy. */
static int opt_end_build(const struct cost_candidate *c, size_t first, size_t n, struct opt_end *e)
{
	size_t K = cost_k(c), i, o, k, x, y, z, cnt;
	size_t cap = (size_t)OPT_END_OPTIONS * (K < OPT_END_FRONT ? K : OPT_END_FRONT);
	double *t = malloc(cap * sizeof(double)), *f = malloc(cap * sizeof(double)), *a = malloc(cap * sizeof(double));
	size_t *pk = malloc(cap * (n ? n : 1) * sizeof(size_t)), *keep = malloc(cap * sizeof(size_t));
	size_t *front = malloc(K * sizeof(size_t)), nf, q;
	int ok = 0;

	e->first = first;
	e->n = n;
	e->nopt = 1;
	e->t[0] = e->f[0] = e->a[0] = 0;
	e->pick = n ? malloc((size_t)OPT_END_OPTIONS * n * sizeof(size_t)) : NULL;
	if (!t || !f || !a || !pk || !keep || !front || (n && !e->pick) ||
	    (double)n * ((double)K * (double)K + (double)cap * (double)cap) > OPT_END_WORK)
		goto out;
	for (i = 0; i < n; i++) {
		size_t u = first + i;

		/* a choice with one of u's strategies that another of u's beats is beaten too */
		nf = opt_front_spread(front, opt_body_front(c, u, front), OPT_END_FRONT);
		cnt = 0;
		for (o = 0; o < e->nopt; o++)
			for (q = 0; q < nf; q++) {
				k = front[q];
				t[cnt] = e->t[o] + c->time_s[u * K + k];
				f[cnt] = e->f[o] + c->memory_fixed_bytes[u * K + k];
				a[cnt] = e->a[o] + c->memory_per_microbatch_bytes[u * K + k];
				if (i > 0)
					memcpy(pk + cnt * n, e->pick + o * n, i * sizeof(size_t));
				pk[cnt * n + i] = k;
				cnt++;
			}
		/* those no other beats (ties: the first), by time */
		for (x = 0, y = 0; x < cnt; x++) {
			int dom = 0;

			for (z = 0; z < cnt && !dom; z++)
				dom = z != x && t[z] <= t[x] && f[z] <= f[x] && a[z] <= a[x] &&
				      (t[z] < t[x] || f[z] < f[x] || a[z] < a[x] || z < x);
			if (!dom)
				keep[y++] = x;
		}
		for (x = 1; x < y; x++) /* insertion sort by time: y is at most 16 x OPT_END_FRONT */
			for (z = x; z > 0 && t[keep[z]] < t[keep[z - 1]]; z--) {
				size_t w = keep[z];

				keep[z] = keep[z - 1];
				keep[z - 1] = w;
			}
		if (y == 0)
			goto out;
		e->nopt = opt_front_spread(keep, y, OPT_END_OPTIONS);
		for (o = 0; o < e->nopt; o++) {
			size_t src = keep[o];

			e->t[o] = t[src];
			e->f[o] = f[src];
			e->a[o] = a[src];
			memcpy(e->pick + o * n, pk + src * n, (i + 1) * sizeof(size_t));
		}
	}
	ok = 1;
out:
	free(t);
	free(f);
	free(a);
	free(pk);
	free(keep);
	free(front);
	return ok;
}

/* Device d's chunks by the most micro-batches each holds over d's rows (its
 * peak rows, or its chunks' in-flight counts), into hw[j]; their order, most
 * first (ties: the earlier chunk), into ord[]; returns d's rows. */
static size_t opt_chunk_order(const struct cost_candidate *c, int d, long *hw, int *ord)
{
	int v = cost_virtual(c), j, l;
	size_t r, rows = 0;

	for (j = 0; j < v; j++)
		hw[j] = -1;
	for (r = 0; r < c->n_peaks && c->peaks; r++)
		if (c->peaks[r * (size_t)(v + 1)] == d) {
			rows++;
			for (j = 0; j < v; j++)
				if (c->peaks[r * (size_t)(v + 1) + 1 + (size_t)j] > hw[j])
					hw[j] = c->peaks[r * (size_t)(v + 1) + 1 + (size_t)j];
		}
	for (j = 0; j < v; j++) {
		if (rows == 0)
			hw[j] = c->inflight[d + c->pp * j];
		ord[j] = j;
	}
	for (j = 1; j < v; j++)
		for (l = j; l > 0 && hw[ord[l]] > hw[ord[l - 1]]; l--) {
			int z = ord[l];

			ord[l] = ord[l - 1];
			ord[l - 1] = z;
		}
	return rows ? rows : 1;
}

/* The least sum of G_d(m_d) (G: pp rows of N + 1) over counts summing to N
 * with every G_d(m_d) <= T, into f[N] (f: N + 1, scratch); when choice is not
 * NULL (pp x (N + 1)), choice[d][t] the count of device d that makes the least
 * for t layers on devices 0 .. d.  1 when N is reached, 0 when not or out of
 * memory.  O(pp N^2). */
static int opt_counts_knap(const double *G, int pp, size_t N, double T, double *f, size_t *choice)
{
	double *g = malloc((N + 1) * sizeof(double));
	size_t t, m;
	int d;

	if (!g)
		return 0;
	for (t = 0; t <= N; t++)
		f[t] = t == 0 ? 0 : INFINITY;
	for (d = 0; d < pp; d++) {
		const double *Gd = G + (size_t)d * (N + 1);

		for (t = 0; t <= N; t++) {
			g[t] = INFINITY;
			for (m = 0; m <= t; m++)
				if (Gd[m] <= T && f[t - m] + Gd[m] < g[t]) {
					g[t] = f[t - m] + Gd[m];
					if (choice)
						choice[(size_t)d * (N + 1) + t] = m;
				}
		}
		memcpy(f, g, (N + 1) * sizeof(double));
	}
	free(g);
	return isfinite(f[N]);
}

/*
 * The counts cut (docs/optimizer.md, "The quick plan", step 5): what the
 * counts bound of "The MILP" says a good plan looks like, made a plan that
 * fits.  The body is the layer type with the most members (a model's
 * blocks); the layers before its first member go to stage 0, those after its
 * last to stage S - 1 (the ends), each end at one of its options
 * (opt_end_build).  For each device d and count m of body layers, G[d][m] is
 * the least time of d's layers, m body layers of at most two strategies (of
 * those no other beats in time and both memories) and its ends, within d's
 * memory as the device's rows charge it: its chunks filled one layer at a
 * time where each adds least to the peak, the smaller activations in the
 * chunks that hold the most micro-batches, and a chunk that holds both
 * strategies charged one resharding between them.  The counts m_d summing to the
 * slots (the layers from the body's first member to its last) that make the
 * least sum G / v + (c - 1/v) max G (a knapsack over the devices per
 * bottleneck T, from the least T up) give each chunk its layers and each
 * layer its strategy: so the cut fits every device when the body's members
 * are all the slots.  Another type's layer in a slot (a chain whose types
 * alternate) is priced as a member and takes its fastest strategy within
 * that member's memories, so the cut may then be over a device's limit:
 * phase 1 repairs it.  The work is counted (OPT_COUNTS_WORK), never timed.
 * 0 when no cut is made (fewer slots than stages, no counts that fit, out of
 * memory, too large).
 */
#define OPT_COUNTS_WORK 2e8 /* row sums of the memory checks, and knapsack entries, at most */
#define OPT_COUNTS_TS 256   /* bottlenecks tried by the knapsack, at most */
static int opt_counts_cut(const struct cost_candidate *c, int *stage, size_t *strategy)
{
	size_t n = c->n_layers, K = cost_k(c), u, k, l, b, N = 0, np, m, fb = n, lb = 0, r;
	int pp = c->pp, v = cost_virtual(c), S = cost_stages(c), d, j, ok = 0;
	size_t *P = NULL, *cnt = NULL, *cfg = NULL, *md = NULL, *quota = NULL, *choice = NULL, *type = NULL;
	double *G = NULL, *f = NULL, *hws = NULL, work = 0, best_est = INFINITY, best_T = INFINITY;
	double w = (double)c->microbatches - 1.0 / (double)v, limit = c->memory_limit_bytes;
	const double *Rb = NULL;
	struct opt_end ends[2];

	memset(ends, 0, sizeof ends);
	/* the body: the type with the most members */
	type = malloc(n * sizeof(size_t));
	if (!type)
		goto out;
	b = opt_body_type(c, type, &N);
	for (u = 0; u < n; u++)
		if (type[u] == type[b]) {
			fb = u < fb ? u : fb;
			lb = u;
		}
	N = lb - fb + 1; /* the slots: the body's members and the other layers between them */
	if (pp < 2 || (double)pp * (double)(N + 1) * (double)(N + 1) > OPT_COUNTS_WORK)
		goto out;
	if (!opt_end_build(c, 0, fb, &ends[0]) || !opt_end_build(c, lb + 1, n - lb - 1, &ends[1]))
		goto out;
	/* an end fills its stage alone: the other stages need a slot each */
	if (N + (ends[0].n > 0) + (ends[1].n > 0) < (size_t)S)
		goto out;
	P = malloc(K * sizeof(size_t));
	G = malloc((size_t)pp * (N + 1) * sizeof(double));
	cnt = calloc((size_t)pp * (N + 1) * (size_t)v, sizeof(size_t));
	cfg = calloc((size_t)pp * (N + 1) * 4, sizeof(size_t)); /* end option, A, B, members of A */
	md = calloc((size_t)pp, sizeof(size_t));
	quota = calloc((size_t)S, sizeof(size_t));
	f = malloc((N + 1) * sizeof(double));
	choice = malloc((size_t)pp * (N + 1) * sizeof(size_t));
	if (!P || !G || !cnt || !cfg || !md || !quota || !f || !choice)
		goto out;
	np = opt_body_front(c, b, P);
	if (np == 0)
		goto out;
	/* the resharding between two members in one stage (an edge between them) */
	for (r = 0; r < c->n_edges && !Rb; r++)
		if (type[c->edges[r].from] == b && type[c->edges[r].to] == b)
			Rb = c->edges[r].same_stage_s;
	/* as many as the work allows, spread from the fastest to the least memory (a check
	 * costs a device's rows times v; a pair's scan ends at its first fit, a few members
	 * on average) */
	{
		double opts = (double)(ends[0].nopt > ends[1].nopt ? ends[0].nopt : ends[1].nopt);
		double rows_v = fmax((double)(c->peaks ? c->n_peaks : 0) / pp, 1) * (double)v, room;
		size_t keep;

		room = OPT_COUNTS_WORK / ((double)pp * (double)(N + 1) * opts * rows_v * 4);
		keep = room >= (double)np * (double)np ? np : (size_t)floor(sqrt(room));
		np = opt_front_spread(P, np, keep);
	}
	for (d = 0; d < pp; d++) {
		const struct opt_end *e = NULL;
		int ej = -1, ord[COST_MAX_VIRTUAL_STAGES];
		long hw[COST_MAX_VIRTUAL_STAGES];
		double act[COST_MAX_VIRTUAL_STAGES], aref = c->memory_per_microbatch_bytes[b * K + P[0]];
		size_t have[COST_MAX_VIRTUAL_STAGES], lo = 0, nopt = 1, o, ia, ib, m1;
		int fits_any = 1;
		double rv;

		if (d == 0 && ends[0].n > 0) {
			e = &ends[0];
			ej = 0;
		} else if (d == pp - 1 && ends[1].n > 0) {
			e = &ends[1];
			ej = v - 1;
		}
		if (e)
			nopt = e->nopt;
		rv = (double)opt_chunk_order(c, d, hw, ord) * (double)v;
		/* the chunks' counts for every m: one layer each (none where an end is), then
		 * each layer where it adds least to the peak (the ends at their fastest) */
		for (j = 0; j < v; j++) {
			have[j] = j == ej ? 0 : 1;
			lo += have[j];
			act[j] = (double)have[j] * aref + (j == ej ? e->a[0] : 0);
		}
		for (m = 0; m <= N; m++)
			G[(size_t)d * (N + 1) + m] = INFINITY;
		for (m = lo; m <= N && fits_any; m++) {
			size_t *cm = cnt + ((size_t)d * (N + 1) + m) * (size_t)v, *cf = cfg + ((size_t)d * (N + 1) + m) * 4;
			double *g = &G[(size_t)d * (N + 1) + m];

			if (m > lo) {
				double low = INFINITY;
				int bj = 0;

				for (j = 0; j < v; j++) {
					double x;

					act[j] += aref;
					x = cost_device_activation(c, d, act);
					act[j] -= aref;
					if (x < low) {
						low = x;
						bj = j;
					}
				}
				act[bj] += aref;
				have[bj]++;
				work += rv;
			}
			for (j = 0; j < v; j++)
				cm[j] = have[j];
			/* the fastest mix that fits: for each end option and pair, the members of the
			 * faster strategy from all down, to the first that fits */
			for (o = 0; o < nopt; o++)
				for (ia = 0; ia < np; ia++)
					for (ib = ia; ib < np; ib++)
						for (m1 = m + 1; m1-- > (ib == ia ? m : 0);) {
							size_t A = P[ia], B = P[ib], x = m1, Lk = A, Hk = B, rem;
							double tt = (e ? e->t[o] : 0) + (double)m1 * c->time_s[b * K + A] +
							            (double)(m - m1) * c->time_s[b * K + B];
							double fx = (e ? e->f[o] : 0) + (double)m1 * c->memory_fixed_bytes[b * K + A] +
							            (double)(m - m1) * c->memory_fixed_bytes[b * K + B];
							double ca[COST_MAX_VIRTUAL_STAGES];

							if (!(tt < *g) || work > OPT_COUNTS_WORK)
								break;
							if (c->memory_per_microbatch_bytes[b * K + B] < c->memory_per_microbatch_bytes[b * K + A]) {
								Lk = B;
								Hk = A;
								x = m - m1;
							}
							for (j = 0; j < v; j++)
								ca[j] = j == ej ? e->a[o] : 0;
							for (rem = x, j = 0; j < v; j++) {
								size_t q = (size_t)ord[j], xl = rem < cm[q] ? rem : cm[q];

								ca[q] += (double)xl * c->memory_per_microbatch_bytes[b * K + Lk] +
								         (double)(cm[q] - xl) * c->memory_per_microbatch_bytes[b * K + Hk];
								/* a chunk holding both: one resharding between them */
								if (Rb && xl > 0 && xl < cm[q])
									tt += Rb[Lk * K + Hk];
								rem -= xl;
							}
							work += rv;
							if (!(tt < *g) || !(fx + cost_device_activation(c, d, ca) <= limit))
								continue;
							*g = tt;
							cf[0] = o;
							cf[1] = A;
							cf[2] = B;
							cf[3] = m1;
							break;
						}
			fits_any = isfinite(*g) || work > OPT_COUNTS_WORK;
		}
	}
	/* the counts: for each bottleneck T from the least whose counts can reach N, the
	 * least sum of G over counts summing to N, each G_d(m_d) <= T (a knapsack) */
	{
		double knap = (double)pp * (double)(N + 1) * (double)(N + 1); /* one knapsack's entries */
		size_t nv, i, tried = 0, tot, most_ts = (size_t)fmax(1, fmin(OPT_COUNTS_TS, OPT_COUNTS_WORK / knap));
		double *vals = opt_sorted_finite(G, (size_t)pp * (N + 1), &nv);

		if (!vals)
			goto out;
		for (i = 0; i < nv && tried < most_ts; i++) {
			double T = vals[i];

			if (i > 0 && T == vals[i - 1])
				continue;
			if (!(w * T < best_est))
				break;
			/* can the devices' largest counts within T reach N at all? */
			for (tot = 0, d = 0; d < pp; d++) {
				size_t most = 0;

				for (m = 0; m <= N; m++)
					if (G[(size_t)d * (N + 1) + m] <= T)
						most = m;
				tot += most;
			}
			if (tot < N)
				continue;
			tried++;
			if (opt_counts_knap(G, pp, N, T, f, NULL) && f[N] / v + w * T < best_est) {
				best_est = f[N] / v + w * T;
				best_T = T;
			}
		}
		free(vals);
	}
	if (!isfinite(best_T) || !opt_counts_knap(G, pp, N, best_T, f, choice))
		goto out;
	for (m = N, d = pp; d-- > 0;) {
		md[d] = choice[(size_t)d * (N + 1) + m];
		m -= md[d];
	}
	for (d = 0; d < pp; d++)
		for (j = 0; j < v; j++)
			quota[d + pp * j] = cnt[((size_t)d * (N + 1) + md[d]) * (size_t)v + (size_t)j];
	{
		int st = 0;
		size_t used = 0, *cf, x, o;
		long *left = calloc((size_t)S, sizeof(long)); /* members of the lower activation still to place per stage */
		size_t *lowk = calloc((size_t)pp, sizeof(size_t)), *highk = calloc((size_t)pp, sizeof(size_t));
		size_t *seen = calloc((size_t)S, sizeof(size_t));

		hws = malloc((size_t)S * sizeof(double));
		if (!left || !lowk || !highk || !seen || !hws) {
			free(left);
			free(lowk);
			free(highk);
			free(seen);
			goto out;
		}
		/* each device's lower-activation members, over its chunks from the fullest */
		for (d = 0; d < pp; d++) {
			long hw[COST_MAX_VIRTUAL_STAGES];
			int ord[COST_MAX_VIRTUAL_STAGES];
			size_t A, B, rem;

			cf = cfg + ((size_t)d * (N + 1) + md[d]) * 4;
			A = cf[1];
			B = cf[2];
			lowk[d] = A;
			highk[d] = B;
			x = cf[3];
			if (c->memory_per_microbatch_bytes[b * K + B] < c->memory_per_microbatch_bytes[b * K + A]) {
				lowk[d] = B;
				highk[d] = A;
				x = md[d] - cf[3];
			}
			opt_chunk_order(c, d, hw, ord);
			for (j = 0; j < v; j++)
				hws[d + pp * j] = (double)hw[j];
			for (rem = x, j = 0; j < v; j++) {
				int s = d + pp * ord[j];
				size_t xl = rem < quota[s] ? rem : quota[s];

				left[s] = (long)xl;
				rem -= xl;
			}
		}
		for (u = 0; u < n; u++) {
			if (u < fb || u > lb) {
				const struct opt_end *e = u < fb ? &ends[0] : &ends[1];

				d = u < fb ? 0 : pp - 1;
				o = cfg[((size_t)d * (N + 1) + md[d]) * 4];
				stage[u] = u < fb ? 0 : S - 1;
				strategy[u] = e->pick[o * e->n + (u - e->first)];
			} else {
				size_t kb, bk = K;

				stage[u] = opt_next_slot(quota, S, &st, &used);
				d = st % pp;
				kb = left[st] > 0 ? lowk[d] : highk[d];
				left[st]--;
				if (type[u] == type[b]) {
					strategy[u] = kb;
					continue;
				}
				/* another type's layer in a body slot: its fastest within the body
				 * strategy's memories, else its least memory at the chunk's most */
				for (k = 0; k < K; k++)
					if (isfinite(c->time_s[u * K + k]) &&
					    c->memory_fixed_bytes[u * K + k] <= c->memory_fixed_bytes[b * K + kb] &&
					    c->memory_per_microbatch_bytes[u * K + k] <= c->memory_per_microbatch_bytes[b * K + kb] &&
					    (bk == K || c->time_s[u * K + k] < c->time_s[u * K + bk]))
						bk = k;
				for (k = 0; bk == K && k < K; k++) {
					double mk = c->memory_fixed_bytes[u * K + k] + hws[st] * c->memory_per_microbatch_bytes[u * K + k];
					double mb = 0;

					for (l = 0; l < K; l++)
						if (isfinite(c->time_s[u * K + l]) &&
						    c->memory_fixed_bytes[u * K + l] + hws[st] * c->memory_per_microbatch_bytes[u * K + l] < mk)
							mb = 1;
					if (!mb && isfinite(c->time_s[u * K + k]))
						bk = k;
				}
				strategy[u] = bk < K ? bk : kb;
			}
		}
		for (u = 0; u < n; u++)
			seen[stage[u]]++;
		ok = 1;
		for (j = 0; j < S; j++)
			ok = ok && seen[j] > 0;
		free(left);
		free(lowk);
		free(highk);
		free(seen);
	}
out:
	free(type);
	free(hws);
	free(ends[0].pick);
	free(ends[1].pick);
	free(P);
	free(G);
	free(cnt);
	free(cfg);
	free(md);
	free(quota);
	free(f);
	free(choice);
	return ok;
}

/* Device d's chunks filled one layer at a time, each at least one, each layer into
 * the chunk where it adds least to the peak activations: for every m from v to
 * N, A[m] the peak per unit of per-layer activation and, when cnt is not NULL,
 * cnt[m * v + j] the layers of chunk j.  (Greedy: a start, not a bound.) */
static void opt_counts_split(const struct cost_candidate *c, int d, size_t N, double *A, size_t *cnt)
{
	int v = cost_virtual(c), j, bj;
	double act[COST_MAX_VIRTUAL_STAGES];
	size_t r, have[COST_MAX_VIRTUAL_STAGES];

	for (j = 0; j < v; j++) {
		have[j] = 1;
		act[j] = 1;
	}
	for (r = (size_t)v; r <= N; r++) {
		if (r > (size_t)v) {
			double best = INFINITY;

			bj = 0;
			for (j = 0; j < v; j++) {
				double t;

				act[j] += 1;
				t = cost_device_activation(c, d, act);
				act[j] -= 1;
				if (t < best) {
					best = t;
					bj = j;
				}
			}
			act[bj] += 1;
			have[bj]++;
		}
		A[r] = cost_device_activation(c, d, act);
		if (cnt)
			for (j = 0; j < v; j++)
				cnt[r * (size_t)v + (size_t)j] = have[j];
	}
}

/*
 * The loose counts cut (docs/optimizer.md, "The quick plan", step 5): the
 * counts cut's first form, kept as a start of its own because its plans,
 * over memory and repaired, reach other plans (DeepSeek-V3, whose three
 * dense blocks before the MoE ones the counts cut puts in stage 0, is better
 * from it).  The body is the layer type with the most members.  For each
 * device d and count m, G[d][m] is the least time of m body layers within
 * d's memory using at most two strategies, from those no other beats in time
 * and both memories, their chunks filled as opt_counts_split fills them; the
 * least T at which the devices' largest counts within T sum to the body's
 * gives each device its count (the surplus taken from the slowest), its
 * chunks their layers and its layers their strategies (the smaller
 * activations in its first chunks, which hold the most micro-batches).  The
 * other layers keep their place in the chain at their fastest strategy.
 * The cut may be over a device's limit (the fill is greedy, the other layers
 * are not counted): phase 1 repairs it.  0 when no cut is made (a body
 * shorter than the stages, no counts that fit, out of memory).
 */
#define OPT_LOOSE_WORK 4e7 /* mixes tried, at most: pp x N^2 x (strategies kept)^2 / 2 */
static int opt_counts_loose(const struct cost_candidate *c, int *stage, size_t *strategy)
{
	size_t n = c->n_layers, K = cost_k(c), u, k, b, N = 0, np, m, m1;
	int pp = c->pp, v = cost_virtual(c), S = cost_stages(c), d, j, ok = 0;
	size_t *P = NULL, *md = NULL, *mix = NULL, *quota = NULL, *k1d = NULL, *k2d = NULL, *m1d = NULL;
	double *G = NULL, *A = NULL, T = INFINITY;
	size_t *cnt = NULL;

	/* the body: the type with the most members */
	{
		size_t *type = malloc((n ? n : 1) * sizeof(size_t));

		if (!type)
			return 0;
		b = opt_body_type(c, type, &N);
		free(type);
	}
	if (N < (size_t)S || pp < 2)
		return 0;
	P = malloc(K * sizeof(size_t));
	md = calloc((size_t)pp, sizeof(size_t));
	k1d = calloc((size_t)pp, sizeof(size_t));
	k2d = calloc((size_t)pp, sizeof(size_t));
	m1d = calloc((size_t)pp, sizeof(size_t));
	quota = calloc((size_t)S, sizeof(size_t));
	G = malloc((size_t)pp * (N + 1) * sizeof(double));
	mix = malloc((size_t)pp * (N + 1) * 3 * sizeof(size_t));
	A = malloc((size_t)pp * (N + 1) * sizeof(double));
	cnt = malloc((size_t)pp * (N + 1) * (size_t)v * sizeof(size_t));
	if (!P || !md || !quota || !G || !mix || !k1d || !k2d || !m1d || !A || !cnt)
		goto out;
	for (d = 0; d < pp; d++)
		opt_counts_split(c, d, N, A + (size_t)d * (N + 1), cnt + (size_t)d * (N + 1) * (size_t)v);
	/* the body's strategies no other beats, as many as the work allows, spread from the
	 * fastest to the least memory */
	np = opt_body_front(c, b, P);
	if (np == 0)
		goto out;
	{
		double room = OPT_LOOSE_WORK * 2 / ((double)pp * (double)(N + 1) * (double)(N + 1));
		size_t keep = room >= (double)np * np ? np : (size_t)floor(sqrt(room));

		np = opt_front_spread(P, np, keep);
	}
	for (d = 0; d < pp; d++)
		for (m = 0; m <= N; m++) {
			double *g = &G[(size_t)d * (N + 1) + m];
			size_t a, bb;

			*g = INFINITY;
			if (m < (size_t)v)
				continue;
			for (a = 0; a < np; a++)
				for (bb = a; bb < np; bb++)
					for (m1 = bb == a ? m : 0; m1 <= m; m1++) {
						double t = (double)m1 * c->time_s[b * K + P[a]] +
						           (double)(m - m1) * c->time_s[b * K + P[bb]];

						double mem = (double)m1 * c->memory_fixed_bytes[b * K + P[a]] +
						             (double)(m - m1) * c->memory_fixed_bytes[b * K + P[bb]] +
						             ((double)m1 * c->memory_per_microbatch_bytes[b * K + P[a]] +
						              (double)(m - m1) * c->memory_per_microbatch_bytes[b * K + P[bb]]) /
						                     (double)m * A[(size_t)d * (N + 1) + m];

						if (t >= *g || !(mem <= c->memory_limit_bytes))
							continue;
						*g = t;
						mix[((size_t)d * (N + 1) + m) * 3] = P[a];
						mix[((size_t)d * (N + 1) + m) * 3 + 1] = P[bb];
						mix[((size_t)d * (N + 1) + m) * 3 + 2] = m1;
					}
		}
	/* the least T of the G values for which the devices' most layers within T reach N
	 * (that sum grows with T: a bisection over the sorted values) */
	{
		size_t nv, lo_i, hi_i;
		double *vals = opt_sorted_finite(G, (size_t)pp * (N + 1), &nv);

		if (!vals)
			goto out;
		lo_i = 0;
		hi_i = nv; /* vals[hi_i] reaches N; nv: none known yet */
		while (lo_i < hi_i) {
			size_t mid = lo_i + (hi_i - lo_i) / 2, tot = 0;

			for (d = 0; d < pp; d++) {
				size_t most = 0;

				for (m = 0; m <= N; m++)
					if (G[(size_t)d * (N + 1) + m] <= vals[mid])
						most = m;
				tot += most;
			}
			if (tot >= N)
				hi_i = mid;
			else
				lo_i = mid + 1;
		}
		if (hi_i < nv)
			T = vals[hi_i];
		free(vals);
	}
	if (!isfinite(T))
		goto out;
	{
		size_t tot = 0;

		for (d = 0; d < pp; d++) {
			for (m = 0; m <= N; m++)
				if (G[(size_t)d * (N + 1) + m] <= T)
					md[d] = m;
			tot += md[d];
		}
		while (tot > N) {
			int bd = -1;
			double bl = -1;

			for (d = 0; d < pp; d++)
				if (md[d] > (size_t)v && isfinite(G[(size_t)d * (N + 1) + md[d] - 1]) &&
				    G[(size_t)d * (N + 1) + md[d]] > bl) {
					bl = G[(size_t)d * (N + 1) + md[d]];
					bd = d;
				}
			if (bd < 0)
				goto out;
			md[bd]--;
			tot--;
		}
		for (d = 0; d < pp; d++) {
			if (md[d] < (size_t)v)
				goto out;
			k1d[d] = mix[((size_t)d * (N + 1) + md[d]) * 3];
			k2d[d] = mix[((size_t)d * (N + 1) + md[d]) * 3 + 1];
			m1d[d] = mix[((size_t)d * (N + 1) + md[d]) * 3 + 2];
		}
	}
	for (d = 0; d < pp; d++)
		for (j = 0; j < v; j++)
			quota[d + pp * j] = cnt[((size_t)d * (N + 1) + md[d]) * (size_t)v + (size_t)j];
	{
		int st = 0;
		size_t used = 0, *seen = calloc((size_t)pp, sizeof(size_t));

		if (!seen)
			goto out;
		for (u = 0; u < n; u++) {
			if (opt_same_costs(c, u, b)) {
				stage[u] = opt_next_slot(quota, S, &st, &used);
				d = st % pp;
				/* the chunks holding the most micro-batches come first: the smaller activations there */
				{
					size_t ka = k1d[d], kb = k2d[d], na = m1d[d];

					if (c->memory_per_microbatch_bytes[b * K + kb] < c->memory_per_microbatch_bytes[b * K + ka]) {
						ka = k2d[d];
						kb = k1d[d];
						na = md[d] - m1d[d];
					}
					strategy[u] = seen[d] < na ? ka : kb;
				}
				seen[d]++;
			} else {
				size_t bk = 0;

				stage[u] = st;
				for (k = 1; k < K; k++)
					if (c->time_s[u * K + k] < c->time_s[u * K + bk])
						bk = k;
				strategy[u] = bk;
			}
		}
		free(seen);
		ok = st == S - 1;
	}
out:
	free(P);
	free(md);
	free(k1d);
	free(k2d);
	free(m1d);
	free(quota);
	free(G);
	free(A);
	free(cnt);
	free(mix);
	return ok;
}

/* The two counts cuts, then each share's chain cut, each searched as the quick
 * plan's own start is (a cut equal to the one before it is not searched
 * again); the best plan of all replaces stage[], strategy[] and *tpi when it
 * is better.  Stops once a plan is at target.  Out of memory: no more. */
static void opt_chunk_starts(const struct cost_candidate *c, double work, double target, int *stage,
                             size_t *strategy, double *tpi)
{
	size_t n = c->n_layers, i;
	int *st = malloc(n * sizeof(int)), *prev = malloc(n * sizeof(int)), have_prev = 0;
	size_t *sk = malloc(n * sizeof(size_t)), *prevk = malloc(n * sizeof(size_t));
	double t;

	/* i = 0, 1: the counts cuts; then one per share */
	for (i = 0; st && sk && prev && prevk && i < 2 + sizeof(opt_chunk_shares) / sizeof(*opt_chunk_shares) &&
	            !(*tpi <= target);
	     i++) {
		if (!(i == 0   ? opt_counts_cut(c, st, sk)
		      : i == 1 ? opt_counts_loose(c, st, sk)
		               : opt_chunk_cut(c, opt_chunk_shares[i - 2], st, sk)))
			continue;
		if (have_prev && memcmp(st, prev, n * sizeof(int)) == 0 && memcmp(sk, prevk, n * sizeof(size_t)) == 0)
			continue;
		memcpy(prev, st, n * sizeof(int));
		memcpy(prevk, sk, n * sizeof(size_t));
		have_prev = 1;
		t = opt_tpi(c, st, sk);
		/* the starts share the work of one search (each gets at least the default) */
		opt_local_search(c, work / OPT_CHUNK_STARTS, target, st, sk, &t);
		if (t < *tpi) {
			memcpy(stage, st, n * sizeof(int));
			memcpy(strategy, sk, n * sizeof(size_t));
			*tpi = t;
		}
	}
	free(st);
	free(sk);
	free(prev);
	free(prevk);
}

int opt_quick_plan(const struct cost_candidate *c, double work, int *stage, size_t *strategy, double *tpi)
{
	return opt_quick_plan_to(c, work, 0, stage, strategy, tpi);
}

int opt_quick_plan_to(const struct cost_candidate *c, double work, double target, int *stage, size_t *strategy,
                      double *tpi)
{
	size_t n = c->n_layers, K = cost_k(c), u, k, r, pass;
	size_t *order = calloc(n, sizeof(size_t));
	double *best_t = calloc(n, sizeof(double)), total = 0, acc = 0;
	/* interleaved: S stages, v per device, each kept within 1/v of the limit */
	int pp = cost_stages(c), i, found = 0;
	double stage_limit = c->memory_limit_bytes / cost_virtual(c);

	*tpi = INFINITY;
	if (!order || !best_t || (size_t)pp > n || !opt_topo_order(c, order))
		goto out;
	for (u = 0; u < n; u++) {
		size_t bk = 0;

		for (k = 1; k < K; k++)
			if (c->time_s[u * K + k] < c->time_s[u * K + bk])
				bk = k;
		strategy[u] = bk;
		best_t[u] = c->time_s[u * K + bk];
		total += best_t[u];
	}
	/* block r of the order goes to stage i: cut when the running time passes i+1 shares */
	i = 0;
	for (r = 0; r < n; r++) {
		size_t left = n - r;

		if (i < pp - 1 && r > 0 &&
		    ((size_t)(pp - 1 - i) >= left || acc >= total * (double)(i + 1) / pp))
			i++;
		stage[order[r]] = i;
		acc += best_t[order[r]];
	}
	/* an over-memory stage: switch its layers to their smallest strategy, largest saving first */
	for (i = 0; i < pp; i++) {
		for (pass = 0; pass < n; pass++) {
			double mem = 0, gain = 0;
			size_t bu = n, bkk = 0;

			for (u = 0; u < n; u++)
				if (stage[u] == i)
					mem += c->memory_fixed_bytes[u * K + strategy[u]] +
					       (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + strategy[u]];
			if (mem <= stage_limit)
				break;
			for (u = 0; u < n; u++) {
				double cur;

				if (stage[u] != i)
					continue;
				cur = c->memory_fixed_bytes[u * K + strategy[u]] +
				      (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + strategy[u]];
				for (k = 0; k < K; k++) {
					double m = c->memory_fixed_bytes[u * K + k] +
					           (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + k];

					if (cur - m > gain) {
						gain = cur - m;
						bu = u;
						bkk = k;
					}
				}
			}
			if (bu == n)
				break;
			strategy[bu] = bkk;
		}
	}
	*tpi = opt_tpi(c, stage, strategy);
	/* the rule above judges a stage by its share of the limit; the devices' own memory
	 * (interleaved chunks, their peaks) can still be over: switch what saves the most per second */
	if (!isfinite(*tpi) && (double)n * n * K < 5e8 && opt_repair_memory(c, stage, strategy) == 1)
		*tpi = opt_tpi(c, stage, strategy);
	opt_local_search(c, work, target, stage, strategy, tpi);
	if (cost_virtual(c) > 1 && opt_is_chain(c) && !(*tpi <= target))
		opt_chunk_starts(c, work, target, stage, strategy, tpi);
	found = isfinite(*tpi);
out:
	free(order);
	free(best_t);
	return found;
}

/* ------------------------------------------------------------ dispatch */

/* Copies src into a note buffer of OPT_NOTE_MAX bytes, truncating. */
/*
 * The quick plan's work for a solve with o's time limit: the default, and up
 * to about 15 % of a limit beyond 1.3 s (at about 2e9 units a second on the
 * machines measured), at most 20 times the default.  A function of the limit
 * alone, so the same input gives the same start whatever runs beside it.
 */
static double opt_quick_work(const struct opt_options *o)
{
	double w = OPT_QUICK_WORK;

	if (o->time_limit_s > 0 && isfinite(o->time_limit_s))
		w = fmax(w, fmin(0.15 * o->time_limit_s * 2e9, 20 * OPT_QUICK_WORK));
	return w;
}

/* A fallback path gets what is left of the time limit (a DP that gave up used some), never
 * less than 50 ms, so that the whole solve keeps to the limit its caller enforces. */
static void opt_time_left(struct opt_options *o, double t0)
{
	if (o->time_limit_s > 0 && isfinite(o->time_limit_s))
		o->time_limit_s = fmax(0.05, o->time_limit_s - (opt_clock_s() - t0));
}

/* The quick plan of a candidate, made once for the paths that start from it. */
struct opt_start {
	int *stage;       /* owned, [n_layers] */
	size_t *strategy; /* owned, [n_layers] */
	int state;        /* 0 not made yet, 1 made, -1 none */
	double work;      /* the work it was made with */
	double tpi;       /* its TPI when made */
};

/*
 * The quick plan, then dp-dag (dag = 1) or the MILP bounded by it.  dp-dag
 * gets the default work (it may still refuse the graph, and the MILP then
 * follows), the MILP the work of its time limit (opt_quick_work): the start
 * is made again when the one made is of less work.  None for a model the MILP
 * refuses by its size anyway.
 */
static uniap_code opt_run_bounded(const struct cost_candidate *c, const struct opt_options *o,
                                  int dag, struct opt_start *s, struct opt_result *out, struct uniap_err *err)
{
	size_t n = c->n_layers;
	double work = dag ? OPT_QUICK_WORK : opt_quick_work(o), t0 = opt_clock_s();
	double target = o->bound_s > 0 && isfinite(o->bound_s) ? o->bound_s * (1 + 1e-9) : 0;
	struct opt_options left = *o;

	if (!dag && milp_over_cap(c))
		return milp_solve(c, o, NULL, NULL, out, err);
	if (!dag && target > 0)
		work *= 2; /* a plan at the bound ends the solve: worth a longer search */
	if (s->state == 0 || s->work < work) {
		if (!s->stage)
			s->stage = calloc(n, sizeof(int));
		if (!s->strategy)
			s->strategy = calloc(n, sizeof(size_t));
		if (!s->stage || !s->strategy)
			return err_set(err, UNIAP_E_NOMEM, "opt: out of memory");
		s->state = opt_quick_plan_to(c, work, target, s->stage, s->strategy, &s->tpi) == 1 ? 1 : -1;
		s->work = work;
	}
	if (!dag && s->state == 1 && s->tpi <= target) {
		/* the caller's proven bound is met: optimal, nothing for the MILP to prove */
		out->stage = malloc(n * sizeof(int));
		out->strategy = malloc(n * sizeof(size_t));
		if (!out->stage || !out->strategy)
			return err_set(err, UNIAP_E_NOMEM, "opt: out of memory");
		memcpy(out->stage, s->stage, n * sizeof(int));
		memcpy(out->strategy, s->strategy, n * sizeof(size_t));
		out->n_layers = n;
		out->tpi_s = s->tpi;
		out->bound_s = fmin(o->bound_s, s->tpi);
		out->gap = 0;
		out->status = OPT_OPTIMAL;
		out->method = OPT_METHOD_QUICK;
		out->solve_s = opt_clock_s() - t0;
		snprintf(out->note, sizeof(out->note), "its quick plan meets the candidate's lower bound %.9g s",
		         o->bound_s);
		return UNIAP_OK;
	}
	/* the start's time is the solve's too */
	opt_time_left(&left, t0);
	if (dag)
		return dp_dag_solve(c, &left, s->state == 1 ? s->stage : NULL, s->state == 1 ? s->strategy : NULL,
		                    out, err);
	return milp_solve(c, &left, s->state == 1 ? s->stage : NULL, s->state == 1 ? s->strategy : NULL, out,
	                  err);
}

uniap_code opt_solve(const struct cost_candidate *c, const struct opt_options *opts,
                     struct opt_result *out, struct uniap_err *err)
{
	struct opt_options o;
	struct opt_start start = { 0 };
	double t0 = opt_clock_s();
	uniap_code rc;
	int chain;

	opt_result_init(out);
	if (opts)
		o = *opts;
	else
		opt_options_init(&o);
	if (isnan(o.cutoff_tpi))
		o.cutoff_tpi = INFINITY;
	if (!o.dp_label_cap)
		o.dp_label_cap = OPT_DP_LABEL_CAP_DEFAULT;
	if (o.path < OPT_PATH_AUTO || o.path >= OPT_PATH_COUNT) {
		rc = err_set(err, UNIAP_E_ARG, "opt.path: unknown path %d", (int)o.path);
		goto out;
	}
	rc = opt_candidate_check(c, err);
	if (rc != UNIAP_OK)
		goto out;
	if ((size_t)cost_stages(c) > c->n_layers) {
		out->status = OPT_INFEASIBLE;
		out->bound_s = INFINITY;
		snprintf(out->note, sizeof(out->note), "%d stages exceed the %zu layers", cost_stages(c),
		         c->n_layers);
		goto out;
	}
	/* the DPs add contiguous stage times into one maximum; interleaved device loads are
	 * sums over stages that are not contiguous, so only the MILP is exact for them */
	chain = opt_is_chain(c) && cost_virtual(c) == 1;
	if (cost_virtual(c) > 1 &&
	    (o.path == OPT_PATH_DP_CHAIN || o.path == OPT_PATH_DP_STAGES || o.path == OPT_PATH_DP_SWEEP)) {
		rc = err_set(err, UNIAP_E_ARG, "opt.path: the dynamic programs do not take interleaved "
		             "candidates (%d virtual stages)", c->virtual_stages);
		goto out;
	}
	if (opt_makespan_objective(c) && o.path != OPT_PATH_AUTO && o.path != OPT_PATH_MILP) {
		rc = err_set(err, UNIAP_E_ARG, "opt.path: the dynamic programs do not take the makespan objective");
		goto out;
	}
	if (opt_makespan_objective(c)) {
		/* the makespan as run: the DPs and the caller's bounds are the formula's, so only the
		 * MILP's makespan rows answer.  Their start is the formula's optimum (the DPs find it in
		 * a quarter of the time; its makespan is at most its formula), improved by the quick
		 * plan's local search under the makespan; the quick plan itself only when there is none */
		struct cost_candidate formula = *c; /* shares c's tables; never released */
		struct opt_options fo = o;
		struct opt_result fr;
		struct uniap_err ferr = { 0 };

		o.bound_s = 0;
		formula.makespan = 0;
		fo.path = OPT_PATH_AUTO;
		fo.cutoff_tpi = INFINITY;
		fo.bound_s = 0;
		if (o.time_limit_s > 0 && isfinite(o.time_limit_s))
			fo.time_limit_s = o.time_limit_s / 4;
		if (opt_solve(&formula, &fo, &fr, &ferr) == UNIAP_OK && fr.stage && fr.strategy) {
			double t = opt_tpi(c, fr.stage, fr.strategy);

			start.stage = fr.stage;
			start.strategy = fr.strategy;
			fr.stage = NULL;
			fr.strategy = NULL;
			start.state = isfinite(t) ? 1 : 0;
			start.tpi = t;
			start.work = INFINITY; /* not replaced by a quick plan */
			if (start.state == 1)
				opt_local_search(c, opt_quick_work(&o), 0, start.stage, start.strategy, &start.tpi);
		}
		opt_result_release(&fr);
		opt_time_left(&o, t0);
		rc = opt_run_bounded(c, &o, 0, &start, out, err);
		goto done;
	}
	switch (o.path) {
	case OPT_PATH_DP_CHAIN:
		rc = dp_chain_solve(c, &o, out, err);
		break;
	case OPT_PATH_DP_STAGES:
		rc = dp_stages_solve(c, &o, out, err);
		break;
	case OPT_PATH_DP_SWEEP:
		rc = dp_sweep_solve(c, &o, out, err);
		break;
	case OPT_PATH_MILP:
		rc = opt_run_bounded(c, &o, 0, &start, out, err);
		break;
	case OPT_PATH_DP_DAG:
		rc = opt_run_bounded(c, &o, 1, &start, out, err);
		break;
	default:
		if (!chain && cost_virtual(c) > 1) {
			rc = opt_run_bounded(c, &o, 0, &start, out, err);
			break;
		}
		if (!chain) {
			/* dp-dag when the graph is narrow enough, else the MILP (the note says why) */
			rc = opt_run_bounded(c, &o, 1, &start, out, err);
			if (rc == UNIAP_E_LIMIT || rc == UNIAP_E_ARG) {
				char why[OPT_NOTE_MAX];

				opt_note_copy(why, err ? err->msg : "dp-dag");
				opt_result_release(out);
				err_clear(err);
				opt_time_left(&o, t0);
				rc = opt_run_bounded(c, &o, 0, &start, out, err);
				if (rc == UNIAP_OK) {
					/* why the MILP answered, then what the MILP itself noted */
					char both[2 * OPT_NOTE_MAX + 4];

					snprintf(both, sizeof(both), "%s%s%s", why, out->note[0] ? "; " : "", out->note);
					opt_note_copy(out->note, both);
				}
			}
			break;
		}
		/*
		 * dp-stages while its block table is small (L^2 K^2 <= OPT_DP_SWEEP_ABOVE entries),
		 * else dp-sweep, whose table shares rows between identical layers and keeps strategy
		 * classes at the boundaries (docs/optimizer.md, "dp-sweep", has the measurements);
		 * each falls back to the other on a cap, then dp-chain, then the MILP.
		 */
		{
			double kk = (double)cost_k(c), nn = (double)c->n_layers;
			int sweep_first = nn * nn * kk * kk > OPT_DP_SWEEP_ABOVE;

			rc = sweep_first ? dp_sweep_solve(c, &o, out, err) : dp_stages_solve(c, &o, out, err);
			if (rc == UNIAP_E_LIMIT) {
				opt_result_release(out);
				err_clear(err);
				opt_time_left(&o, t0);
				rc = sweep_first ? dp_stages_solve(c, &o, out, err) : dp_sweep_solve(c, &o, out, err);
			}
		}
		if (rc == UNIAP_E_LIMIT) {
			opt_result_release(out);
			err_clear(err);
			opt_time_left(&o, t0);
			rc = dp_chain_solve(c, &o, out, err);
		}
		if (rc == UNIAP_E_LIMIT) {
			char why[OPT_NOTE_MAX];

			opt_note_copy(why, err ? err->msg : "dp label cap");
			opt_result_release(out);
			err_clear(err);
			opt_time_left(&o, t0);
			rc = opt_run_bounded(c, &o, 0, &start, out, err);
			if (rc == UNIAP_OK) {
				out->method = OPT_METHOD_MILP_AFTER_CAP;
				opt_note_copy(out->note, why);
			}
		}
		break;
	}
done:
	if (rc == UNIAP_E_TIMEOUT) {
		/* a DP ran out of time: nothing proven, no plan */
		opt_result_release(out);
		out->status = OPT_UNKNOWN;
		opt_note_copy(out->note, err ? err->msg : "time limit");
		err_clear(err);
		rc = UNIAP_OK;
	}
	if (rc != UNIAP_OK)
		goto out;
	/* the reported TPI is always the audit formula on the reported plan */
	if (out->stage && out->strategy) {
		out->tpi_s = opt_tpi(c, out->stage, out->strategy);
		if (!isfinite(out->tpi_s)) {
			rc = err_set(err, UNIAP_E_INTERNAL, "opt: %s returned an invalid plan", out->method);
			goto out;
		}
		if (out->status == OPT_OPTIMAL && out->gap == 0)
			out->bound_s = out->tpi_s;
		out->bound_s = fmin(out->bound_s, out->tpi_s);
		out->gap = out->tpi_s > 0 ? (out->tpi_s - out->bound_s) / out->tpi_s : 0;
	} else {
		out->tpi_s = INFINITY;
		out->gap = INFINITY;
	}
out:
	if (rc != UNIAP_OK) {
		const char *m = out->method;

		opt_result_release(out);
		out->method = m;
		out->status = OPT_ERROR;
	}
	free(start.stage);
	free(start.strategy);
	out->solve_s = opt_clock_s() - t0;
	return rc;
}
