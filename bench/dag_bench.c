/*
 * dag_bench.c - solve times of wide layer graphs (widths 5 to 8, 12 to 24
 * layers) on the optimizer's AUTO path, which gives a graph to dp-dag when its
 * states fit and to the MILP otherwise (not a test: it asserts nothing about
 * time; docs/optimizer.md, "dp-dag").
 *
 *   Graphs, one per seed: "skips", a chain with nested skip edges u -> L-1-u
 *   (a U-Net: w - 1 open skips beside the chain make a frontier of w) and
 *   random ones added while the frontier stays at most w; "branches", layer 0
 *   forking into w chains that join at the last layer.  Strategies: `layouts`
 *   data layouts with `variants` strategies each (K = layouts x variants), the
 *   variants of a layout sharing their resharding rows (R and R': the same data
 *   on the same ranks) but not their time and memory, as a real dictionary's
 *   plain, recomputing and ZeRO strategies do; times 10-30 ms, transfers 2-6 ms,
 *   memory tight (1.3 x the least per stage).
 *
 * Prints one row per graph (kind, layers, width, pp, path, status, seconds)
 * and the distribution of solve seconds per width (min, median, max, how many
 * proven).
 *
 * Build and run (from the repository root, after `make`):
 *   cc -O2 -Icore bench/dag_bench.c build/libuniapcore.a $(pkg-config --libs cbc) -lm \
 *      -o build/dag_bench && build/dag_bench [--seeds 5] [--limit 60] [--layouts 4]
 *      [--variants 3] [--pp 4] [--c 8] [--widths 5,6,7,8] [--kind skips|branches]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "opt.h"

#define DB_MAX_ROWS 4096

struct db_cfg {
	int seeds, layouts, variants, pp, wmin, wmax, kinds; /* kinds: bit 0 skips, bit 1 branches */
	long c;
	double limit_s;
};

static uint64_t db_rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static double db_unit(uint64_t *s)
{
	return (double)(db_rng(s) >> 11) / 9007199254740992.0;
}

static int db_has(const struct cost_candidate *c, size_t a, size_t b)
{
	size_t e;

	for (e = 0; e < c->n_edges; e++)
		if (c->edges[e].from == a && c->edges[e].to == b)
			return 1;
	return 0;
}

/* The largest frontier over the prefixes 0..t of a graph whose edges go forward
 * and include the chain (its ideals are the prefixes). */
static int db_prefix_width(const struct cost_candidate *c)
{
	size_t t, e;
	int w = 0;

	for (t = 0; t + 1 < c->n_layers; t++) {
		int f = 0;
		size_t u;

		for (u = 0; u <= t; u++)
			for (e = 0; e < c->n_edges; e++)
				if (c->edges[e].from == u && c->edges[e].to > t) {
					f++;
					break;
				}
		if (f > w)
			w = f;
	}
	return w;
}

/* kind 0: skips, 1: branches; returns the graph's width, -1 out of memory. */
static int db_make(const struct db_cfg *cfg, int kind, size_t L, int width, uint64_t seed,
                   struct cost_candidate *c)
{
	size_t K = (size_t)cfg->layouts * (size_t)cfg->variants, u, v, k, l, e, cap = 4 * L + 16;
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
	double least = 0;
	int i, w;

	memset(c, 0, sizeof(*c));
	c->pp = cfg->pp;
	c->microbatches = cfg->c;
	c->microbatch_size = 1;
	c->n_layers = L;
	c->strategies.count = K;
	c->strategies.items = calloc(K, sizeof(*c->strategies.items));
	c->inflight = calloc((size_t)cfg->pp, sizeof(long));
	c->time_s = calloc(L * K, sizeof(double));
	c->memory_fixed_bytes = calloc(L * K, sizeof(double));
	c->memory_per_microbatch_bytes = calloc(L * K, sizeof(double));
	c->edges = calloc(cap, sizeof(*c->edges));
	if (!c->strategies.items || !c->inflight || !c->time_s || !c->memory_fixed_bytes ||
	    !c->memory_per_microbatch_bytes || !c->edges)
		return -1;
	for (i = 0; i < cfg->pp; i++)
		c->inflight[i] = cfg->c;
	for (u = 0; u < L; u++)
		for (k = 0; k < K; k++) {
			/* a layout's shard count trades time for memory; a variant (plain, recompute,
			 * ZeRO) trades them again */
			double shard = 1.0 + (double)(k / (size_t)cfg->variants % 4), var = (double)(k % (size_t)cfg->variants);

			c->time_s[u * K + k] = (0.01 + 0.02 * db_unit(&s)) * (1.0 + 0.3 * shard) * (1.0 + 0.25 * var);
			c->memory_fixed_bytes[u * K + k] = floor((1.0 + 8.0 * db_unit(&s)) / shard) * 1048576.0 * 64;
			c->memory_per_microbatch_bytes[u * K + k] =
				floor((1.0 + 4.0 * db_unit(&s)) / (1.0 + var)) * 1048576.0 * 16;
		}
#define EDGE(a, b)                                         \
	do {                                               \
		c->edges[c->n_edges].from = (a);           \
		c->edges[c->n_edges].to = (b);             \
		c->n_edges++;                              \
	} while (0)
	if (kind == 0) {
		for (u = 0; u + 1 < L; u++)
			EDGE(u, u + 1);
		/* nested skips: w - 1 of them open beside the chain at the middle */
		for (u = 0; (int)u < width - 1 && u + 2 < L - 1 - u; u++)
			EDGE(u, L - 1 - u);
		/* random skips, kept while the width stays */
		for (i = 0; i < (int)L && c->n_edges < cap; i++) {
			u = (size_t)(db_unit(&s) * (double)L);
			v = u + 2 + (size_t)(db_unit(&s) * (double)L / 3);
			if (v >= L || db_has(c, u, v))
				continue;
			EDGE(u, v);
			if (db_prefix_width(c) > width)
				c->n_edges--;
		}
		w = db_prefix_width(c);
	} else {
		/* 0 forks into `width` chains of (L - 2) / width layers that join at L - 1 */
		size_t per = (L - 2) / (size_t)width, at = 1;

		c->n_layers = L = 2 + per * (size_t)width;
		for (i = 0; i < width; i++) {
			EDGE(0, at);
			for (u = at; u + 1 < at + per; u++)
				EDGE(u, u + 1);
			EDGE(at + per - 1, L - 1);
			at += per;
		}
		w = width;
	}
#undef EDGE
	for (e = 0; e < c->n_edges; e++) {
		double *same = calloc(K * K, sizeof(double)), *cross = calloc(K * K, sizeof(double));

		if (!same || !cross) {
			free(same);
			free(cross);
			return -1;
		}
		c->edges[e].same_stage_s = same;
		c->edges[e].cross_stage_s = cross;
		/* rows by layout pair: variants of a layout reshard alike */
		for (k = 0; k < (size_t)cfg->layouts; k++)
			for (l = 0; l < (size_t)cfg->layouts; l++) {
				double rs = k == l ? 0 : 0.004 * db_unit(&s), rc = 0.002 + 0.004 * db_unit(&s);
				size_t a, b;

				for (a = 0; a < (size_t)cfg->variants; a++)
					for (b = 0; b < (size_t)cfg->variants; b++) {
						size_t ka = k * (size_t)cfg->variants + a, lb = l * (size_t)cfg->variants + b;

						same[ka * K + lb] = rs;
						cross[ka * K + lb] = rc;
					}
			}
	}
	for (u = 0; u < L; u++) {
		double best = INFINITY;

		for (k = 0; k < K; k++)
			best = fmin(best, c->memory_fixed_bytes[u * K + k] +
			                          (double)c->inflight[0] * c->memory_per_microbatch_bytes[u * K + k]);
		least += best;
	}
	c->memory_limit_bytes = least / cfg->pp * 1.3;
	return w;
}

static int db_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct db_cfg cfg = {5, 4, 3, 4, 5, 8, 3, 8, 60};
	static double secs[9][DB_MAX_ROWS];
	int nsec[9] = {0}, proven[9] = {0}, dag[9] = {0}, a, kind, w, sd;

	for (a = 1; a < argc; a++) {
		const char *v = a + 1 < argc ? argv[a + 1] : "";

		if (strcmp(argv[a], "--seeds") == 0)
			cfg.seeds = atoi(v);
		else if (strcmp(argv[a], "--limit") == 0)
			cfg.limit_s = atof(v);
		else if (strcmp(argv[a], "--layouts") == 0)
			cfg.layouts = atoi(v);
		else if (strcmp(argv[a], "--variants") == 0)
			cfg.variants = atoi(v);
		else if (strcmp(argv[a], "--pp") == 0)
			cfg.pp = atoi(v);
		else if (strcmp(argv[a], "--kind") == 0 && (strcmp(v, "skips") == 0 || strcmp(v, "branches") == 0))
			cfg.kinds = strcmp(v, "skips") == 0 ? 1 : 2;
		else if (strcmp(argv[a], "--c") == 0)
			cfg.c = atol(v);
		else if (strcmp(argv[a], "--widths") == 0 && sscanf(v, "%d,%d", &cfg.wmin, &cfg.wmax) >= 1) {
			if (!strchr(v, ','))
				cfg.wmax = cfg.wmin;
		} else {
			fprintf(stderr, "usage: dag_bench [--seeds N] [--limit S] [--layouts N] [--variants N] "
			                "[--pp N] [--c N] [--widths MIN,MAX] [--kind skips|branches]\n");
			return 2;
		}
		a++;
	}
	if (cfg.seeds < 1 || cfg.layouts < 1 || cfg.variants < 1 || cfg.pp < 1 || cfg.c < 1 || cfg.wmin < 1 ||
	    cfg.wmax > 8 || cfg.wmin > cfg.wmax || cfg.seeds > DB_MAX_ROWS / 8) {
		fprintf(stderr, "dag_bench: bad arguments\n");
		return 2;
	}
	printf("K = %d layouts x %d variants, pp %d, c %ld, limit %.0f s\n", cfg.layouts, cfg.variants, cfg.pp,
	       cfg.c, cfg.limit_s);
	printf("%-8s %3s %5s %5s %-8s %-10s %9s %7s %s\n", "graph", "L", "width", "seed", "path", "status",
	       "seconds", "gap %", "note");
	for (w = cfg.wmin; w <= cfg.wmax; w++)
		for (kind = 0; kind < 2; kind++)
			for (sd = 0; sd < cfg.seeds && (cfg.kinds >> kind & 1); sd++) {
				size_t L = 12 + (size_t)((sd * 5 + w) % 13); /* 12 .. 24 */
				struct cost_candidate c;
				struct opt_options o;
				struct opt_result r;
				struct uniap_err err;
				int got = db_make(&cfg, kind, L, w, (uint64_t)(1000 * w + 100 * kind + sd + 1), &c);

				if (got < 0) {
					fprintf(stderr, "out of memory\n");
					cost_candidate_release(&c);
					return 1;
				}
				opt_options_init(&o);
				o.time_limit_s = cfg.limit_s;
				opt_result_init(&r);
				if (opt_solve(&c, &o, &r, &err) != UNIAP_OK) {
					printf("%-8s %3zu %5d %5d solve failed: %s\n", kind ? "branches" : "skips", c.n_layers,
					       got, sd + 1, err.msg);
				} else {
					printf("%-8s %3zu %5d %5d %-8s %-10s %9.3f %7.2f %s\n", kind ? "branches" : "skips",
					       c.n_layers, got, sd + 1, r.method, opt_status_name(r.status), r.solve_s,
					       100 * r.gap, r.note);
					if (got >= 0 && got <= 8) {
						secs[got][nsec[got]++] = r.solve_s;
						proven[got] += r.status == OPT_OPTIMAL || r.status == OPT_INFEASIBLE;
						dag[got] += strcmp(r.method, OPT_METHOD_DP_DAG) == 0;
					}
				}
				fflush(stdout);
				opt_result_release(&r);
				cost_candidate_release(&c);
			}
	printf("\n%5s %6s %7s %8s %8s %8s %7s\n", "width", "graphs", "dp-dag", "min s", "median s", "max s",
	       "proven");
	for (w = 0; w <= 8; w++) {
		if (!nsec[w])
			continue;
		qsort(secs[w], (size_t)nsec[w], sizeof(double), db_cmp);
		printf("%5d %6d %7d %8.3f %8.3f %8.3f %4d/%d\n", w, nsec[w], dag[w], secs[w][0],
		       nsec[w] % 2 ? secs[w][nsec[w] / 2] : (secs[w][nsec[w] / 2 - 1] + secs[w][nsec[w] / 2]) / 2,
		       secs[w][nsec[w] - 1], proven[w], nsec[w]);
	}
	return 0;
}
