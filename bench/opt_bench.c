/*
 * opt_bench.c - solve-time figures of the optimizer's paths on random
 * instances (not a test: it asserts nothing about time).
 *
 *   chains: L layers in a chain whose layers are identical (one cost table,
 *   one edge table) or independent (--random), K strategies, pp stages,
 *   c micro-batches, GPipe or 1F1B in-flight counts, a memory limit that
 *   binds (the least possible stage memory times 1.3); solved by dp-stages,
 *   dp-sweep, dp-chain and the MILP; the table shows each path's wall time,
 *   status and TPI, and flags any disagreement between proven optima.
 *   --dag: the same with skip edges (0 -> every later layer, random others);
 *   MILP only.
 *
 * Build and run (from the repository root, after `make`):
 *   cc -O2 -Icore bench/opt_bench.c build/libuniapcore.a $(pkg-config --libs cbc) -lm \
 *      -o build/opt_bench && build/opt_bench [--layers 32] [--seeds 3] [--milp-limit 10]
 *      [--no-milp] [--no-dp-chain] [--random] [--dag] [--1f1b] [--k 8,16] [--pp 1,2,4,8] [--c 8]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "opt.h"

#define BENCH_MAX_LIST 8

struct bench_cfg {
	size_t layers;
	int seeds;
	double milp_limit_s;
	int no_milp, no_dp_chain, random, dag, one_f_one_b;
	size_t ks[BENCH_MAX_LIST], n_k;
	int pps[BENCH_MAX_LIST], n_pp;
	long c;
};

static uint64_t bench_rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static double bench_unit(uint64_t *s)
{
	return (double)(bench_rng(s) >> 11) / 9007199254740992.0;
}

static int bench_make(const struct bench_cfg *cfg, size_t K, int pp, uint64_t seed,
                      struct cost_candidate *c)
{
	size_t L = cfg->layers, u, k, e, ne = 0, cap;
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
	double least = 0;
	int i;

	memset(c, 0, sizeof(*c));
	c->pp = pp;
	c->microbatches = cfg->c;
	c->microbatch_size = 1;
	c->n_layers = L;
	c->strategies.count = K;
	c->strategies.items = calloc(K, sizeof(*c->strategies.items));
	c->inflight = calloc((size_t)pp, sizeof(long));
	c->time_s = calloc(L * K, sizeof(double));
	c->memory_fixed_bytes = calloc(L * K, sizeof(double));
	c->memory_per_microbatch_bytes = calloc(L * K, sizeof(double));
	cap = cfg->dag ? 3 * L : L;
	c->edges = calloc(cap, sizeof(*c->edges));
	if (!c->strategies.items || !c->inflight || !c->time_s || !c->memory_fixed_bytes ||
	    !c->memory_per_microbatch_bytes || !c->edges)
		return -1;
	for (i = 0; i < pp; i++)
		c->inflight[i] = cfg->one_f_one_b && pp - i < cfg->c ? pp - i : cfg->c;
	for (u = 0; u < L; u++)
		for (k = 0; k < K; k++) {
			size_t src = cfg->random ? u * K + k : k;

			if (!cfg->random && u > 0) {
				c->time_s[u * K + k] = c->time_s[src];
				c->memory_fixed_bytes[u * K + k] = c->memory_fixed_bytes[src];
				c->memory_per_microbatch_bytes[u * K + k] = c->memory_per_microbatch_bytes[src];
				continue;
			}
			/* faster strategies use more memory, as sharding trades time for memory */
			{
				double shard = 1.0 + (double)(k % 4);

				c->time_s[src] = (0.01 + 0.02 * bench_unit(&s)) * (1.0 + 0.3 * shard);
				c->memory_fixed_bytes[src] = floor((1.0 + 8.0 * bench_unit(&s)) / shard) * 1048576.0 * 64;
				c->memory_per_microbatch_bytes[src] = floor(1.0 + 4.0 * bench_unit(&s)) * 1048576.0 * 16;
			}
		}
	for (u = 0; u + 1 < L; u++) {
		c->edges[ne].from = u;
		c->edges[ne++].to = u + 1;
	}
	if (cfg->dag)
		for (u = 2; u < L && ne < cap; u++) {
			c->edges[ne].from = 0;
			c->edges[ne++].to = u;
			if (u > 3 && bench_unit(&s) < 0.3 && ne < cap) {
				c->edges[ne].from = u - 3;
				c->edges[ne++].to = u;
			}
		}
	c->n_edges = ne;
	for (e = 0; e < ne; e++) {
		c->edges[e].same_stage_s = calloc(K * K, sizeof(double));
		c->edges[e].cross_stage_s = calloc(K * K, sizeof(double));
		if (!c->edges[e].same_stage_s || !c->edges[e].cross_stage_s)
			return -1;
		for (k = 0; k < K * K; k++) {
			if (!cfg->random && e > 0 && e < L - 1) {
				c->edges[e].same_stage_s[k] = c->edges[0].same_stage_s[k];
				c->edges[e].cross_stage_s[k] = c->edges[0].cross_stage_s[k];
				continue;
			}
			c->edges[e].same_stage_s[k] = k % (K + 1) == 0 ? 0 : 0.004 * bench_unit(&s);
			c->edges[e].cross_stage_s[k] = 0.002 + 0.004 * bench_unit(&s);
		}
	}
	for (u = 0; u < L; u++) {
		double best = INFINITY;

		for (k = 0; k < K; k++)
			best = fmin(best, c->memory_fixed_bytes[u * K + k] +
			                          (double)c->inflight[0] * c->memory_per_microbatch_bytes[u * K + k]);
		least += best;
	}
	c->memory_limit_bytes = least / pp * 1.3;
	return 0;
}

static void bench_run(const struct cost_candidate *c, enum opt_path path, double limit_s,
                      struct opt_result *res)
{
	struct opt_options o;
	struct uniap_err err;

	opt_options_init(&o);
	o.path = path;
	o.time_limit_s = limit_s;
	if (opt_solve(c, &o, res, &err) != UNIAP_OK)
		fprintf(stderr, "solve failed: %s\n", err.msg);
}

static void bench_print(const struct opt_result *r)
{
	printf(" | %8.3f s %-9s %-10.6g", r->solve_s, opt_status_name(r->status), r->tpi_s);
}

static int bench_parse_list(const char *s, long *out, int max)
{
	int n = 0;
	char *end;

	while (*s && n < max) {
		long v = strtol(s, &end, 10);

		if (end == s || v < 1)
			return -1;
		out[n++] = v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

int main(int argc, char **argv)
{
	struct bench_cfg cfg = {32, 3, 10, 0, 0, 0, 0, 0, {8, 16}, 2, {1, 2, 4, 8}, 4, 8};
	long list[BENCH_MAX_LIST];
	int a, n, ki, pi, sd, bad = 0;

	for (a = 1; a < argc; a++) {
		const char *v = a + 1 < argc ? argv[a + 1] : "";
		char *end = NULL;

		if (strcmp(argv[a], "--layers") == 0) {
			cfg.layers = (size_t)strtoul(v, &end, 10);
			a++;
		} else if (strcmp(argv[a], "--seeds") == 0) {
			cfg.seeds = (int)strtol(v, &end, 10);
			a++;
		} else if (strcmp(argv[a], "--milp-limit") == 0) {
			cfg.milp_limit_s = strtod(v, &end);
			a++;
		} else if (strcmp(argv[a], "--c") == 0) {
			cfg.c = strtol(v, &end, 10);
			a++;
		} else if (strcmp(argv[a], "--k") == 0 || strcmp(argv[a], "--pp") == 0) {
			n = bench_parse_list(v, list, BENCH_MAX_LIST);
			if (n <= 0) {
				fprintf(stderr, "%s: expected a comma-separated list\n", argv[a]);
				return 2;
			}
			for (ki = 0; ki < n; ki++) {
				if (argv[a][2] == 'k')
					cfg.ks[ki] = (size_t)list[ki];
				else
					cfg.pps[ki] = (int)list[ki];
			}
			if (argv[a][2] == 'k')
				cfg.n_k = (size_t)n;
			else
				cfg.n_pp = n;
			a++;
			end = (char *)"";
		} else if (strcmp(argv[a], "--no-milp") == 0) {
			cfg.no_milp = 1;
		} else if (strcmp(argv[a], "--no-dp-chain") == 0) {
			cfg.no_dp_chain = 1;
		} else if (strcmp(argv[a], "--random") == 0) {
			cfg.random = 1;
		} else if (strcmp(argv[a], "--dag") == 0) {
			cfg.dag = 1;
		} else if (strcmp(argv[a], "--1f1b") == 0) {
			cfg.one_f_one_b = 1;
		} else {
			fprintf(stderr, "unknown option %s\n", argv[a]);
			return 2;
		}
		if (end && *end) {
			fprintf(stderr, "%s: bad value %s\n", argv[a - 1], v);
			return 2;
		}
	}
	if (cfg.layers < 1 || cfg.seeds < 1 || cfg.c < 1) {
		fprintf(stderr, "layers, seeds and c must be >= 1\n");
		return 2;
	}
	printf("L=%zu c=%ld %s %s %s, MILP limit %.0f s\n", cfg.layers, cfg.c,
	       cfg.random ? "independent layers" : "identical layers", cfg.dag ? "DAG" : "chain",
	       cfg.one_f_one_b ? "1F1B" : "GPipe", cfg.milp_limit_s);
	printf("%3s %3s %4s | %-30s | %-30s | %-30s | %-30s\n", "K", "pp", "seed", "dp-stages", "dp-sweep",
	       "dp-chain", "milp");
	for (ki = 0; ki < (int)cfg.n_k; ki++)
		for (pi = 0; pi < cfg.n_pp; pi++)
			for (sd = 0; sd < cfg.seeds; sd++) {
				struct cost_candidate c;
				struct opt_result r1, r2, r3, r4;

				if ((size_t)cfg.pps[pi] > cfg.layers)
					continue;
				if (bench_make(&cfg, cfg.ks[ki], cfg.pps[pi], (uint64_t)(sd + 1), &c) != 0) {
					fprintf(stderr, "out of memory\n");
					cost_candidate_release(&c);
					return 1;
				}
				opt_result_init(&r1);
				opt_result_init(&r2);
				opt_result_init(&r3);
				opt_result_init(&r4);
				printf("%3zu %3d %4d", cfg.ks[ki], cfg.pps[pi], sd + 1);
				if (!cfg.dag) {
					bench_run(&c, OPT_PATH_DP_STAGES, 600, &r1);
					bench_print(&r1);
					bench_run(&c, OPT_PATH_DP_SWEEP, 600, &r4);
					bench_print(&r4);
					if (!cfg.no_dp_chain) {
						bench_run(&c, OPT_PATH_DP_CHAIN, 600, &r2);
						bench_print(&r2);
					} else {
						printf(" | %-30s", "-");
					}
				} else {
					printf(" | %-30s | %-30s | %-30s", "-", "-", "-");
				}
				if (!cfg.no_milp) {
					bench_run(&c, OPT_PATH_MILP, cfg.milp_limit_s, &r3);
					bench_print(&r3);
					if (r3.status == OPT_FEASIBLE)
						printf(" gap %.1f%%", 100 * r3.gap);
				}
				if (!cfg.dag && r1.status == OPT_OPTIMAL && r2.status == OPT_OPTIMAL &&
				    fabs(r1.tpi_s - r2.tpi_s) > 1e-9 * r1.tpi_s)
					bad = 1, printf("  DP MISMATCH");
				if (!cfg.dag && r1.status == OPT_OPTIMAL && r4.status == OPT_OPTIMAL &&
				    fabs(r1.tpi_s - r4.tpi_s) > 1e-9 * r1.tpi_s)
					bad = 1, printf("  SWEEP MISMATCH");
				if (!cfg.dag && r1.status == OPT_OPTIMAL && r3.status == OPT_OPTIMAL &&
				    fabs(r1.tpi_s - r3.tpi_s) > 1e-9 * r1.tpi_s)
					bad = 1, printf("  MILP MISMATCH");
				printf("\n");
				fflush(stdout);
				opt_result_release(&r1);
				opt_result_release(&r2);
				opt_result_release(&r3);
				opt_result_release(&r4);
				cost_candidate_release(&c);
			}
	return bad;
}
