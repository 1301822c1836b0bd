/*
 * brute.c - exhaustive enumeration of every plan of a tiny candidate (brute.h).
 */
#include "brute.h"
#include "schedsim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BRUTE_MAX_PP 16

/* Stages of c: pp, or pp x virtual_stages when interleaved. */
static int brute_stages(const struct cost_candidate *c)
{
	return c->virtual_stages > 1 ? c->pp * c->virtual_stages : c->pp;
}

double brute_tpi(const struct cost_candidate *c, const int *stage, const size_t *strategy)
{
	double p[BRUTE_MAX_PP] = {0}, o[BRUTE_MAX_PP] = {0}, mem[BRUTE_MAX_PP] = {0}, act[BRUTE_MAX_PP] = {0};
	double dev_p[BRUTE_MAX_PP] = {0}, link_o[BRUTE_MAX_PP] = {0};
	int count[BRUTE_MAX_PP] = {0}, S = brute_stages(c), v = c->virtual_stages > 1 ? c->virtual_stages : 1;
	size_t K = c->strategies.count, u, e;
	double total = 0, worst = 0;
	int i;

	if (c->pp < 1 || S > BRUTE_MAX_PP)
		return INFINITY;
	for (u = 0; u < c->n_layers; u++) {
		if (stage[u] < 0 || stage[u] >= S || strategy[u] >= K)
			return INFINITY;
		count[stage[u]]++;
		p[stage[u]] += c->time_s[u * K + strategy[u]];
		/* memory is per device: stage s runs on device s mod pp; with peak
		 * rows its activations are those of its fullest row (below) */
		if (c->n_peaks > 0) {
			mem[stage[u] % c->pp] += c->memory_fixed_bytes[u * K + strategy[u]];
			act[stage[u]] += c->memory_per_microbatch_bytes[u * K + strategy[u]];
		} else {
			mem[stage[u] % c->pp] += c->memory_fixed_bytes[u * K + strategy[u]] +
			                 (double)c->inflight[stage[u]] * c->memory_per_microbatch_bytes[u * K + strategy[u]];
		}
	}
	for (i = 0; i < S; i++)
		if (count[i] == 0)
			return INFINITY;
	if (c->n_peaks > 0) {
		double most[BRUTE_MAX_PP] = {0};
		size_t r;

		for (r = 0; r < c->n_peaks; r++) {
			const long *h = c->peaks + r * (size_t)(v + 1);
			double a = 0;
			int j;

			for (j = 0; j < v; j++)
				a += (double)h[1 + j] * act[h[0] + c->pp * j];
			if (a > most[h[0]])
				most[h[0]] = a;
		}
		for (i = 0; i < c->pp; i++)
			mem[i] += most[i];
	}
	for (i = 0; i < c->pp; i++)
		if (mem[i] > c->memory_limit_bytes)
			return INFINITY;
	for (e = 0; e < c->n_edges; e++) {
		size_t a = c->edges[e].from, b = c->edges[e].to;
		size_t idx = strategy[a] * K + strategy[b];

		if (stage[a] > stage[b])
			return INFINITY;
		if (stage[a] == stage[b]) {
			p[stage[a]] += c->edges[e].same_stage_s[idx];
		} else {
			/* one charge on every communication stage j with stage(a) <= j < stage(b) */
			for (i = stage[a]; i < stage[b]; i++)
				o[i] += c->edges[e].cross_stage_s[idx];
		}
	}
	if (c->makespan && c->pp > 1 &&
	    ((v == 1 && c->schedule == COST_1F1B) || (v > 1 && c->schedule == COST_INTERLEAVED))) {
		/* the makespan objective: the iteration as laid out, blocks and all (schedsim's
		 * simulation, not the graph the optimizer's rows come from) */
		struct sched_input in = { c->pp, S, c->microbatches, c->schedule, p, o };
		struct sched sc;
		struct uniap_err err = { 0 };
		double len;

		if (sched_simulate(&in, &sc, &err) != UNIAP_OK)
			return NAN;
		len = sc.length_s;
		sched_release(&sc);
		return len;
	}
	if (v == 1) {
		/* a stage's cycle: receive, compute, send (transfers block both ranks) */
		for (i = 0; i < c->pp; i++) {
			double cyc = (i > 0 ? o[i - 1] : 0) + p[i] + (i < c->pp - 1 ? o[i] : 0);

			total += p[i] + (i < c->pp - 1 ? o[i] : 0);
			if (cyc > worst)
				worst = cyc;
		}
		return total + (double)(c->microbatches - 1) * worst;
	}
	/* interleaved: the bottleneck is the busiest device or link (transfers overlapped: Megatron-LM
	 * runs the interleaved schedule with overlap_p2p_comm), the rest divided by v */
	for (i = 0; i < S; i++) {
		total += p[i];
		dev_p[i % c->pp] += p[i];
	}
	for (i = 0; i < S - 1; i++) {
		total += o[i];
		link_o[i % c->pp] += o[i];
	}
	for (i = 0; i < c->pp; i++) {
		if (dev_p[i] > worst)
			worst = dev_p[i];
		if (link_o[i] > worst)
			worst = link_o[i];
	}
	return total / v + ((double)c->microbatches - 1.0 / v) * worst;
}

/* Advances an odometer of n digits in [0, base); returns 0 when it wrapped around. */
int brute_next_int(int *d, size_t n, int base)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (++d[i] < base)
			return 1;
		d[i] = 0;
	}
	return 0;
}

int brute_next_size(size_t *d, size_t n, size_t base)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (++d[i] < base)
			return 1;
		d[i] = 0;
	}
	return 0;
}

/* Stage vector is valid: every stage used and every edge forward. */
static int brute_stages_valid(const struct cost_candidate *c, const int *stage)
{
	int used[BRUTE_MAX_PP] = {0}, i;
	size_t u, e;

	for (u = 0; u < c->n_layers; u++)
		used[stage[u]] = 1;
	for (i = 0; i < brute_stages(c); i++)
		if (!used[i])
			return 0;
	for (e = 0; e < c->n_edges; e++)
		if (stage[c->edges[e].from] > stage[c->edges[e].to])
			return 0;
	return 1;
}

int brute_solve(const struct cost_candidate *c, double *best, int *stage_out, size_t *strategy_out,
                double *evals)
{
	size_t n = c->n_layers, K = c->strategies.count;
	int *stage = NULL;
	size_t *strategy = NULL;
	double size_st, size_sk, count = 0;
	int rc = -1;

	*best = INFINITY;
	if (c->pp < 1 || brute_stages(c) > BRUTE_MAX_PP || n == 0 || K == 0)
		return -1;
	size_st = pow((double)brute_stages(c), (double)n);
	size_sk = pow((double)K, (double)n);
	if (size_st * size_sk > BRUTE_MAX_EVALS * 64 || size_st > 1e7)
		return -1;
	stage = calloc(n, sizeof(int));
	strategy = calloc(n, sizeof(size_t));
	if (!stage || !strategy)
		goto out;
	do {
		if (!brute_stages_valid(c, stage))
			continue;
		memset(strategy, 0, n * sizeof(size_t));
		do {
			double t = brute_tpi(c, stage, strategy);

			count++;
			if (count > BRUTE_MAX_EVALS)
				goto out;
			if (t < *best) {
				*best = t;
				if (stage_out)
					memcpy(stage_out, stage, n * sizeof(int));
				if (strategy_out)
					memcpy(strategy_out, strategy, n * sizeof(size_t));
			}
		} while (brute_next_size(strategy, n, K));
	} while (brute_next_int(stage, n, brute_stages(c)));
	rc = 0;
out:
	if (evals)
		*evals = count;
	free(stage);
	free(strategy);
	return rc;
}
