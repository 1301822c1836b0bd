/*
 * test_cost.c - every cost formula against hand-computed values
 * (docs/cost-model.md): layer time for dp, tp, fsdp, mixed strategies with
 * and without recompute, fp32 and mixed precision, measured and hierarchy
 * bandwidths, memory, in-flight micro-batches for GPipe and 1F1B, resharding
 * inside a stage and across stages, and the audit formula of plan_evaluate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog.h"
#include "cost.h"
#include "fixtures.h"
#include "opt.h"
#include "plan.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-12 + 1e-9 * fabs((double)(b)))

/* 1 node of 4 devices in PCIe pairs (10 GB/s inside a pair, 5 GB/s across). */
static void cluster4(struct cluster_profile *c)
{
	static const int dev[] = { 2, 4 };
	static const double bw[] = { 10, 5 };

	assert_int_equal(fx_cluster(c, 1, 4, dev, bw, 2, 16e9, 1e9, 1.5), 0);
}

static void model(struct model_profile *m, size_t layers, enum model_precision p)
{
	assert_int_equal(fx_model_chain(m, layers, p, 0.01, 0.006, 1e6, 1e6, 6e5, 1e5, 2e4), 0);
}

static size_t k_of(const struct cost_candidate *c, const char *name)
{
	long k = strategy_find(&c->strategies, name);

	assert_true(k >= 0);
	return (size_t)k;
}

static double T(const struct cost_candidate *c, size_t u, const char *name)
{
	return c->time_s[u * cost_k(c) + k_of(c, name)];
}

static double MF(const struct cost_candidate *c, const char *name)
{
	return c->memory_fixed_bytes[k_of(c, name)];
}

static double MA(const struct cost_candidate *c, const char *name)
{
	return c->memory_per_microbatch_bytes[k_of(c, name)];
}

static double R(const struct cost_candidate *c, const char *a, const char *b, int cross)
{
	size_t K = cost_k(c), at = k_of(c, a) * K + k_of(c, b);

	return cross ? c->edges[0].cross_stage_s[at] : c->edges[0].same_stage_s[at];
}

static void build(const struct cluster_profile *cl, const struct model_profile *m, long batch,
                  int pp, long micro, enum cost_schedule s, int rc, struct cost_candidate *out)
{
	struct cost_options o = { .batch = batch, .pp = pp, .microbatches = micro,
	                          .schedule = s, .recompute = rc };
	struct uniap_err err;

	assert_int_equal(cost_build(cl, m, &o, out, &err), UNIAP_OK);
}

/* batch 8, pp 1, c 2: micro-batches of 4 samples on 4 devices */
static void test_layer_time_fp32(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;

	(void)state;
	cluster4(&cl);
	model(&m, 2, MODEL_FP32);
	build(&cl, &m, 8, 1, 2, COST_GPIPE, 1, &c);
	assert_int_equal(c.microbatch_size, 4);
	/* device 16e9 - reserved 1e9 - the FSDP transient of the largest layer:
	 * two gathered copies of 1e6 fp32 parameters (c > 1); no margin or
	 * fragmentation in a C-built cluster */
	NEAR(c.memory_limit_bytes, 15e9 - 2 * 4e6);
	/* dp4: fwd 0.01; grad all-reduce 4e6 B * 2*3/4 / 5e9 = 1.2e-3, / c = 6e-4;
	 * backward overlapped: 0.02 + (1.5-1) * 6e-4 */
	NEAR(T(&c, 0, "dp4"), 0.01 + 0.02 + 0.5 * 6e-4);
	NEAR(T(&c, 1, "dp4"), T(&c, 0, "dp4"));
	NEAR(MF(&c, "dp4"), 16e6);
	NEAR(MA(&c, "dp4"), 1e6);
	/* tp2.dp2: 2 samples x 0.006; tp all-reduce 2 x (2e5 B * 1 / 10e9) = 4e-5 per pass;
	 * dp group {0,2} crosses pairs: 2e6 B / 5e9 = 4e-4, / c = 2e-4 */
	NEAR(T(&c, 0, "tp2.dp2"), (0.012 + 4e-5) + (0.024 + 0.5 * 2e-4 + 4e-5));
	NEAR(MF(&c, "tp2.dp2"), 8e6);
	NEAR(MA(&c, "tp2.dp2"), 1.2e6);
	/* recompute repeats the forward pass and keeps only checkpoints */
	NEAR(T(&c, 0, "tp2.dp2+rc"), 2 * (0.012 + 4e-5) + (0.024 + 0.5 * 2e-4 + 4e-5));
	NEAR(MA(&c, "tp2.dp2+rc"), 2 * 2e4);
	NEAR(MF(&c, "tp2.dp2+rc"), 8e6);
	/* fsdp4: all-gather 4e6 * 3/4 / 5e9 = 6e-4 in forward, all-gather + reduce-scatter in backward */
	NEAR(T(&c, 0, "fsdp4"), (0.01 + 0.5 * 6e-4) + (0.02 + 0.5 * 1.2e-3));
	/* states 16e6 / 4, plus the unsharded gradient under accumulation (c = 2): 4e6 * 3/4 */
	NEAR(MF(&c, "fsdp4"), 4e6 + 3e6);
	/* tp4: 4 samples x 0.01/4; tp all-reduce of 4e5 B over 4: 4e5*1.5/5e9 = 1.2e-4, twice a pass */
	NEAR(T(&c, 0, "tp4"), (0.01 + 2.4e-4) + (0.02 + 2.4e-4));
	NEAR(MA(&c, "tp4"), 4 * 2.5e5);
	/* dp2.tp2: tp group {0,2} crosses pairs (5 GB/s), dp group {0,1} inside (10 GB/s) */
	NEAR(T(&c, 0, "dp2.tp2"), (0.012 + 2 * 2e5 / 5e9) + (0.024 + 0.5 * 1e-4 + 2 * 2e5 / 5e9));
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

static void test_layer_time_mixed_and_measured(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;

	(void)state;
	cluster4(&cl);
	model(&m, 2, MODEL_MIXED);
	build(&cl, &m, 8, 1, 2, COST_GPIPE, 0, &c);
	/* mixed: 2-byte gradients (half the all-reduce), c_dtype 8 x 2 B = same 16 B/param */
	NEAR(T(&c, 0, "dp4"), 0.03 + 0.5 * 3e-4);
	NEAR(MF(&c, "dp4"), 16e6);
	assert_int_equal(strategy_find(&c.strategies, "dp4+rc"), -1);
	cost_candidate_release(&c);
	model_release(&m);

	/* measured tables take precedence over the hierarchy */
	model(&m, 2, MODEL_FP32);
	assert_int_equal(fx_cluster_add_bw(&cl, CLUSTER_ALLREDUCE, 4, 1, 8), 0);
	assert_int_equal(fx_cluster_add_bw(&cl, CLUSTER_ALLREDUCE, 2, 0, 4), 0);
	build(&cl, &m, 8, 1, 2, COST_GPIPE, 0, &c);
	NEAR(T(&c, 0, "dp4"), 0.03 + 0.5 * (4e6 * 1.5 / 8e9 / 2));
	/* dp over strided pairs measured at 4 GB/s; tp pairs fall back to the hierarchy */
	NEAR(T(&c, 0, "tp2.dp2"), (0.012 + 4e-5) + (0.024 + 0.5 * (2e6 / 4e9 / 2) + 4e-5));
	/* fsdp borrows the all-reduce table for all-gather / reduce-scatter */
	NEAR(T(&c, 0, "fsdp4"), (0.01 + 0.5 * 3e6 / 8e9) + (0.02 + 0.5 * 6e6 / 8e9));
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

/* Replaces every layer type's forward table with FLOPs per sample. */
static void use_flops(struct model_profile *m, double flops)
{
	size_t i;

	for (i = 0; i < m->n_types; i++) {
		free(m->types[i].forward_s);
		m->types[i].forward_s = NULL;
		m->types[i].n_forward_s = 0;
		m->types[i].forward_flops_per_sample = flops;
	}
}

/* forward time from FLOPs: flops / (peak[precision] * efficiency) / tp */
static void test_layer_time_flops(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 8, .pp = 1, .microbatches = 2, .schedule = COST_GPIPE };
	struct uniap_err err;

	(void)state;
	cluster4(&cl);
	model(&m, 2, MODEL_FP32);
	use_flops(&m, 5e10);
	assert_int_equal(model_validate(&m, &err), UNIAP_OK);
	/* no peak in the cluster: an error naming the field and the layer type */
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "cluster.device.peak_tflops: required by model layer type"));
	assert_non_null(strstr(err.msg, "forward_flops_per_sample"));
	cl.peak_flops_per_s[MODEL_FP32] = 10e12;
	cl.peak_flops_per_s[MODEL_MIXED] = 40e12;
	cl.compute_efficiency = 0.5;
	assert_int_equal(cluster_validate(&cl, &err), UNIAP_OK);
	build(&cl, &m, 8, 1, 2, COST_GPIPE, 0, &c);
	/* fp32: 5e10 / (10e12 * 0.5) = 0.01 s per sample, as in test_layer_time_fp32 */
	NEAR(T(&c, 0, "dp4"), 0.01 + 0.02 + 0.5 * 6e-4);
	/* tp2.dp2: 2 samples x 0.01 / 2 (no measured tp 2 entry with FLOPs) */
	NEAR(T(&c, 0, "tp2.dp2"), (0.01 + 4e-5) + (0.02 + 0.5 * 2e-4 + 4e-5));
	cost_candidate_release(&c);
	model_release(&m);
	/* mixed: 5e10 / (40e12 * 0.5) = 2.5e-3 s per sample; 2-byte gradients */
	model(&m, 2, MODEL_MIXED);
	use_flops(&m, 5e10);
	build(&cl, &m, 8, 1, 2, COST_GPIPE, 0, &c);
	NEAR(T(&c, 0, "dp4"), 2.5e-3 + 5e-3 + 0.5 * 3e-4);
	cost_candidate_release(&c);
	/* both forward keys, or an efficiency without a peak, break the rules */
	m.types[0].forward_s = calloc(1, sizeof(*m.types[0].forward_s));
	assert_non_null(m.types[0].forward_s);
	m.types[0].forward_s[0].tp = 1;
	m.types[0].forward_s[0].value = 0.01;
	m.types[0].n_forward_s = 1;
	assert_int_equal(model_validate(&m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "exactly one of"));
	cl.peak_flops_per_s[MODEL_FP32] = cl.peak_flops_per_s[MODEL_MIXED] = 0;
	assert_int_equal(cluster_validate(&cl, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "cluster.device.compute_efficiency"));
	model_release(&m);
	cluster_release(&cl);
}

static void test_inflight(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;

	(void)state;
	cluster4(&cl);
	model(&m, 4, MODEL_FP32);
	build(&cl, &m, 8, 2, 4, COST_1F1B, 0, &c);
	assert_int_equal(c.inflight[0], 2);
	assert_int_equal(c.inflight[1], 1);
	cost_candidate_release(&c);
	build(&cl, &m, 8, 4, 8, COST_1F1B, 0, &c);
	assert_int_equal(c.inflight[0], 4);
	assert_int_equal(c.inflight[3], 1);
	assert_int_equal(c.microbatch_size, 1);
	/* micro-batches of 1 sample: nothing with a batch width above 1 survives */
	assert_int_equal(cost_k(&c), 1);
	assert_string_equal(c.strategies.items[0].name, "single");
	cost_candidate_release(&c);
	build(&cl, &m, 8, 4, 2, COST_1F1B, 0, &c);
	assert_int_equal(c.inflight[0], 2);
	assert_int_equal(c.inflight[2], 2);
	assert_int_equal(c.inflight[3], 1);
	cost_candidate_release(&c);
	build(&cl, &m, 8, 4, 8, COST_GPIPE, 0, &c);
	assert_int_equal(c.inflight[0], 8);
	assert_int_equal(c.inflight[3], 8);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

/*
 * Interleaved 1F1B: in-flight counts per stage from Megatron-LM's order (pp 4,
 * v 2, c 8, worked by hand: rank 0 warms up with 10 forwards, so its first
 * chunk holds 7 and then 8, its second 4; rank 3 warms up with 4 and holds 5
 * of its first chunk and 1 of its second), every chunk holds all c when
 * c = pp, and the time formula gives SC 2021's c t + (pp - 1) t / v on equal
 * stages, the transfers on their links.
 */
/*
 * A deadline that has passed stops the build with UNIAP_E_LIMIT and leaves
 * nothing allocated (the service's evaluate caps its time so); none (0) or a
 * distant one changes nothing.
 */
static void test_deadline(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 8, .pp = 1, .microbatches = 1, .schedule = COST_1F1B };
	struct uniap_err err;
	struct timespec now;

	(void)state;
	cluster4(&cl);
	model(&m, 8, MODEL_FP32);
	clock_gettime(CLOCK_MONOTONIC, &now);
	o.deadline_s = (double)now.tv_sec - 1; /* a second ago */
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_LIMIT);
	assert_non_null(strstr(err.msg, "ran past its time limit"));
	assert_null(c.time_s);
	o.deadline_s = (double)now.tv_sec + 3600;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	assert_true(c.strategies.count > 0);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

/*
 * A memory budget (the service's evaluate): the tables' bytes, known once the
 * strategies are, are checked before any table is allocated.  The budget's
 * taker is asked exactly cost_table_bytes() of them (3 layer tables of L x K
 * doubles, 2 per edge of K x K, one per layer type of K and two K x K of
 * scratch, worked out here by hand); over max_bytes is UNIAP_E_LIMIT naming
 * both, a refusing taker UNIAP_E_BUSY, and both leave nothing allocated.
 */
struct taker {
	double asked;
	int refuse;
};

static int take_bytes(void *ctx, double bytes)
{
	struct taker *t = ctx;

	t->asked = bytes;
	return t->refuse;
}

static void test_budget(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 8, .pp = 1, .microbatches = 1, .schedule = COST_1F1B };
	struct taker t = { 0, 0 };
	struct cost_budget b = { 0, take_bytes, &t };
	struct uniap_err err;
	double k, want;

	(void)state;
	cluster4(&cl);
	model(&m, 8, MODEL_FP32);
	o.budget = &b;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	k = (double)c.strategies.count;
	want = 8.0 * (3.0 * (double)m.n_layers * k + 2.0 * (double)m.n_edges * k * k + (double)m.n_types * k +
	              2.0 * k * k);
	assert_true(t.asked == want);
	assert_true(cost_table_bytes(&m, c.strategies.count, 0) == want);
	cost_candidate_release(&c);
	/* a cap below it: refused, naming the estimate and the cap */
	b.max_bytes = want - 1;
	t.asked = 0;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_LIMIT);
	assert_non_null(strstr(err.msg, "cost tables: they need about"));
	assert_non_null(strstr(err.msg, "over the budget of"));
	assert_true(t.asked == 0); /* the cap first: nothing taken */
	assert_null(c.time_s);
	/* at the cap: taken; a taker that refuses: busy */
	b.max_bytes = want;
	t.refuse = 1;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_BUSY);
	assert_non_null(strstr(err.msg, "are not free now"));
	assert_null(c.time_s);
	model_release(&m);
	cluster_release(&cl);
}

/*
 * The peak rows of interleaved candidates (cost.h): for every device, the
 * activations at its fullest moment, max over rows of sum_j h_j a_j, equal
 * the most it holds at any moment of Megatron-LM's order replayed here on its
 * own (warm-up of 2 (pp - d - 1) + (v - 1) pp forwards, all when c = pp, then
 * one forward and one backward, forwards of chunk (f mod pp v) / pp,
 * backwards in the reverse chunk order), for random per-chunk activations;
 * every row stays within inflight, and the device's peak is below the sum of
 * its chunks' peaks where chunks peak apart (pp 2, v 24 as Megatron-Bridge's
 * Qwen3-30B-A3B run: 49 chunk micro-batches, not 72).
 */
static void cluster8(struct cluster_profile *c);

static long replay_peak(int pp, int v, long c, int d, const double *a, double *most)
{
	long total = c * v, f = 0, b = 0, warm = c == pp ? total : 2L * (pp - d - 1) + (long)(v - 1) * pp;
	long held[COST_MAX_VIRTUAL_STAGES] = {0}, sum = 0, top = 0;
	int j;

	if (warm > total)
		warm = total;
	*most = 0;
	while (b < total) {
		if (f < total && (f < warm || f - warm <= b)) {
			double x = 0;

			held[(f % ((long)pp * v)) / pp]++;
			f++;
			sum++;
			for (j = 0; j < v; j++)
				x += (double)held[j] * a[j];
			if (x > *most)
				*most = x;
			if (sum > top)
				top = sum;
		} else {
			held[v - 1 - (b % ((long)pp * v)) / pp]--;
			b++;
			sum--;
		}
	}
	return top;
}

static void test_interleaved_peaks(void **state)
{
	static const int cases[][3] = { { 2, 24, 32 }, { 4, 2, 8 }, { 8, 5, 64 }, { 8, 8, 64 }, { 4, 3, 4 },
	                                { 2, 2, 6 }, { 8, 4, 256 }, { 4, 6, 12 } };
	struct cluster_profile cl;
	struct model_profile m;
	struct uniap_err err;
	unsigned seed = 7;
	size_t n;

	(void)state;
	for (n = 0; n < sizeof(cases) / sizeof(cases[0]); n++) {
		int pp = cases[n][0], v = cases[n][1], d, j, trial;
		long c = cases[n][2];
		struct cost_options o = { .batch = c, .pp = pp, .microbatches = c, .schedule = COST_INTERLEAVED,
		                          .virtual_stages = v };
		struct cost_candidate cand;

		/* 8 devices, pp v layers at least */
		cluster8(&cl);
		model(&m, (size_t)pp * (size_t)v, MODEL_FP32);
		assert_int_equal(cost_build(&cl, &m, &o, &cand, &err), UNIAP_OK);
		assert_true(cand.n_peaks >= (size_t)pp && cand.peaks != NULL);
		for (d = 0; d < pp; d++) {
			double a[COST_MAX_VIRTUAL_STAGES], most, ones[COST_MAX_VIRTUAL_STAGES];
			long top, sum_inflight = 0;
			size_t r;

			for (r = 0; r < cand.n_peaks; r++) {
				const long *h = cand.peaks + r * (size_t)(v + 1);

				if (h[0] != d)
					continue;
				for (j = 0; j < v; j++)
					assert_true(h[1 + j] >= 0 && h[1 + j] <= cand.inflight[d + pp * j]);
			}
			for (j = 0; j < v; j++) {
				ones[j] = 1;
				sum_inflight += cand.inflight[d + pp * j];
			}
			top = replay_peak(pp, v, c, d, ones, &most);
			assert_int_equal(cost_device_inflight(&cand, d), top);
			assert_true(fabs(cost_device_activation(&cand, d, ones) - (double)top) < 1e-9);
			assert_true(top <= sum_inflight);
			if (pp == 2 && v == 24 && d == 0) {
				assert_int_equal(top, 49);
				assert_int_equal(sum_inflight, 72);
			}
			for (trial = 0; trial < 20; trial++) {
				for (j = 0; j < v; j++)
					a[j] = (double)(rand_r(&seed) % 1000) * (trial % 3 == 0 && j % 2 ? 0 : 1);
				(void)replay_peak(pp, v, c, d, a, &most);
				assert_true(fabs(cost_device_activation(&cand, d, a) - most) <= 1e-9 * (1 + most));
			}
		}
		cost_candidate_release(&cand);
		model_release(&m);
		cluster_release(&cl);
	}
}

static void test_interleaved_terms(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 8, .pp = 4, .microbatches = 8, .schedule = COST_INTERLEAVED,
	                          .virtual_stages = 2 };
	struct uniap_err err;
	double t[4] = { 1, 1, 1, 1 }, fixed[4] = { 0 }, per_mb[4] = { 0 }, same[1] = { 0 }, cross[1] = { 0.5 };
	double no_cross[1] = { 0 };
	long inflight[4];
	struct cost_edge edges[3];
	int stage[4] = { 0, 1, 2, 3 }, i, d, j;
	size_t strategy[4] = { 0, 0, 0, 0 };

	(void)state;
	cluster4(&cl);
	model(&m, 8, MODEL_FP32);
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	assert_int_equal(c.virtual_stages, 2);
	assert_int_equal(cost_stages(&c), 8);
	assert_int_equal(c.inflight[0], 8); /* rank 0, chunk 0 */
	assert_int_equal(c.inflight[4], 4); /* rank 0, chunk 1 */
	assert_int_equal(c.inflight[3], 5); /* rank 3, chunk 0 */
	assert_int_equal(c.inflight[7], 1); /* rank 3, chunk 1 */
	/* a rank holds at least Megatron-LM's warm-up plus one, never more than c per chunk */
	for (d = 0; d < 4; d++) {
		long sum = 0;

		for (j = 0; j < 2; j++) {
			assert_true(c.inflight[d + 4 * j] >= 1 && c.inflight[d + 4 * j] <= 8);
			sum += c.inflight[d + 4 * j];
		}
		assert_true(sum >= 2L * (4 - d - 1) + 4 + 1);
	}
	cost_candidate_release(&c);
	o.microbatches = 4; /* c = pp: all warm-up, every chunk holds all c */
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	for (i = 0; i < 8; i++)
		assert_int_equal(c.inflight[i], 4);
	cost_candidate_release(&c);
	o.pp = 1; /* no pipeline: the ordinary candidate */
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	assert_int_equal(cost_stages(&c), 1);
	cost_candidate_release(&c);

	/* equal stages of t = 1 on pp 2, v 2: rank time 2, TPI = 2c + (pp - 1) 2 / v = 2c + 1 */
	memset(&c, 0, sizeof(c));
	c.pp = 2;
	c.virtual_stages = 2;
	c.schedule = COST_INTERLEAVED;
	c.microbatches = 4;
	c.microbatch_size = 1;
	c.memory_limit_bytes = INFINITY;
	c.strategies.count = 1;
	c.n_layers = 4;
	c.time_s = t;
	c.memory_fixed_bytes = fixed;
	c.memory_per_microbatch_bytes = per_mb;
	for (i = 0; i < 4; i++)
		inflight[i] = 1;
	c.inflight = inflight;
	assert_true(fabs(opt_tpi(&c, stage, strategy) - 9.0) < 1e-12);
	/* transfers of 0.5 on boundaries 0, 1, 2, overlapped with compute under interleaving
	 * (cost.h): link 0 carries two, link 1 one; (4 + 1.5) / 2 + (4 - 1/2) * max(2, 2, 1, 0.5) = 9.75 */
	for (i = 0; i < 3; i++) {
		edges[i].from = (size_t)i;
		edges[i].to = (size_t)i + 1;
		edges[i].same_stage_s = same;
		edges[i].cross_stage_s = cross;
	}
	c.edges = edges;
	c.n_edges = 3;
	assert_true(fabs(opt_tpi(&c, stage, strategy) - 9.75) < 1e-12);
	/* a skip edge 0 -> 3 crosses all three boundaries: link 0 then carries 2.0 */
	edges[1].from = 0;
	edges[1].to = 3;
	edges[0].cross_stage_s = no_cross;
	edges[2].cross_stage_s = no_cross;
	/* o = (0.5, 0.5, 0.5) from the one edge: the same loads, the same TPI */
	assert_true(fabs(opt_tpi(&c, stage, strategy) - 9.75) < 1e-12);
	/* a device over memory makes the plan invalid: rank 0 holds stages 0 and 2 */
	c.memory_limit_bytes = 1;
	fixed[0] = 0.6;
	fixed[2] = 0.6;
	assert_true(isinf(opt_tpi(&c, stage, strategy)));
	fixed[2] = 0;
	assert_true(fabs(opt_tpi(&c, stage, strategy) - 9.75) < 1e-12);
	model_release(&m);
	cluster_release(&cl);
}

/* micro-batches of 3 samples on dp2: ceil(3/2) = 2 samples on the busiest device */
static void test_uneven_batch(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;

	(void)state;
	cluster4(&cl);
	model(&m, 2, MODEL_FP32);
	build(&cl, &m, 6, 2, 2, COST_GPIPE, 0, &c);
	assert_int_equal(c.microbatch_size, 3);
	NEAR(MA(&c, "dp2"), 2 * 1e6);
	NEAR(T(&c, 0, "dp2") - T(&c, 0, "tp2") + T(&c, 0, "tp2"), T(&c, 0, "dp2"));
	assert_true(T(&c, 0, "dp2") > 2 * 0.03);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

static void test_resharding(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;

	(void)state;
	cluster4(&cl);
	model(&m, 2, MODEL_FP32);
	build(&cl, &m, 8, 1, 2, COST_GPIPE, 0, &c);
	/* micro-batch output 4 x 1e5 B; stage bandwidth 5 GB/s; forward + backward */
	NEAR(R(&c, "tp2.dp2", "dp2.tp2", 0), 2 * 0.5 * 4e5 / 5e9);
	NEAR(R(&c, "dp4", "tp4", 0), 2 * 0.75 * 4e5 / 5e9);
	NEAR(R(&c, "tp4", "dp4", 0), 0);
	NEAR(R(&c, "dp4", "dp4", 0), 0);
	NEAR(R(&c, "tp2.dp2", "dp4", 0), 0);
	NEAR(R(&c, "dp4", "tp2.dp2", 0), 2 * 0.25 * 4e5 / 5e9);
	NEAR(R(&c, "dp4", "fsdp4", 0), 0);
	NEAR(R(&c, "dp4", "tp4", 1), 0);  /* no cross-stage cost without stages */
	cost_candidate_release(&c);

	/* pp 2: stages {0,1} and {2,3}; rank r talks to r + 2 across the pairs: 5 GB/s */
	build(&cl, &m, 8, 2, 2, COST_GPIPE, 0, &c);
	NEAR(R(&c, "dp2", "tp2", 1), (4e5 + 2e5) / 5e9);
	NEAR(R(&c, "tp2", "tp2", 1), (4e5 + 4e5) / 5e9);
	NEAR(R(&c, "dp2", "dp2", 1), (2e5 + 2e5) / 5e9);
	NEAR(R(&c, "dp2", "tp2", 0), 2 * 0.5 * 4e5 / 10e9);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

static void test_bad_options(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct uniap_err err;
	struct cost_options o = { .batch = 8, .pp = 3, .microbatches = 2 };

	(void)state;
	cluster4(&cl);
	model(&m, 2, MODEL_FP32);
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "pp"));
	o.pp = 4; /* more stages than layers */
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "layer count"));
	o.pp = 2;
	o.microbatches = 3;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "microbatches"));
	o.microbatches = 1;
	o.batch = 0;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "batch"));
	model_release(&m);
	cluster_release(&cl);
}

/* The audit formula on a 4-layer chain with a skip edge, by hand. */
static void test_evaluate_formula(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct plan_eval ev;
	struct uniap_err err;
	int stage[4] = { 0, 0, 1, 1 };
	size_t st[4];
	double p0, p1, o0, K;
	size_t u;

	(void)state;
	cluster4(&cl);
	model(&m, 4, MODEL_FP32);
	assert_int_equal(fx_model_add_edge(&m, 0, 3), 0);
	build(&cl, &m, 8, 2, 4, COST_1F1B, 0, &c);
	K = (double)cost_k(&c);
	st[0] = k_of(&c, "dp2");
	st[1] = k_of(&c, "tp2");
	st[2] = k_of(&c, "tp2");
	st[3] = k_of(&c, "dp2");
	assert_int_equal(plan_evaluate(&c, stage, st, &ev, &err), UNIAP_OK);
	p0 = c.time_s[0 * (size_t)K + st[0]] + c.time_s[1 * (size_t)K + st[1]] +
	     c.edges[0].same_stage_s[st[0] * (size_t)K + st[1]];
	p1 = c.time_s[2 * (size_t)K + st[2]] + c.time_s[3 * (size_t)K + st[3]] +
	     c.edges[2].same_stage_s[st[2] * (size_t)K + st[3]];
	o0 = c.edges[1].cross_stage_s[st[1] * (size_t)K + st[2]] +
	     c.edges[3].cross_stage_s[st[0] * (size_t)K + st[3]];
	NEAR(ev.stage_time_s[0], p0);
	NEAR(ev.stage_time_s[1], p1);
	NEAR(ev.comm_time_s[0], o0);
	/* transfers block both ranks: each stage's cycle holds the boundary (cost.h) */
	NEAR(ev.tpi_s, p0 + p1 + o0 + 3 * fmax(p0 + o0, o0 + p1));
	assert_true(ev.valid && ev.fits);
	/* 1F1B: stage 0 holds 2 micro-batches, stage 1 holds 1 */
	NEAR(ev.stage_memory_bytes[0], MF(&c, "dp2") + 2 * MA(&c, "dp2") + MF(&c, "tp2") + 2 * MA(&c, "tp2"));
	NEAR(ev.stage_memory_bytes[1], MF(&c, "dp2") + MA(&c, "dp2") + MF(&c, "tp2") + MA(&c, "tp2"));
	plan_eval_release(&ev);

	/* backwards edge, empty stage, memory */
	stage[0] = 1;
	assert_int_equal(plan_evaluate(&c, stage, st, &ev, &err), UNIAP_OK);
	assert_false(ev.valid);
	assert_non_null(strstr(ev.reason, "backwards"));
	plan_eval_release(&ev);
	for (u = 0; u < 4; u++)
		stage[u] = 0;
	assert_int_equal(plan_evaluate(&c, stage, st, &ev, &err), UNIAP_OK);
	assert_false(ev.valid);
	assert_non_null(strstr(ev.reason, "stage 1 holds no layer"));
	plan_eval_release(&ev);
	stage[2] = stage[3] = 1;
	c.memory_limit_bytes = 1e6;
	assert_int_equal(plan_evaluate(&c, stage, st, &ev, &err), UNIAP_OK);
	assert_true(ev.valid);
	assert_false(ev.fits);
	assert_non_null(strstr(ev.reason, "over the limit"));
	plan_eval_release(&ev);
	stage[1] = 7;
	assert_int_equal(plan_evaluate(&c, stage, st, &ev, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "layers[1].stage"));
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

/* 2 nodes x 4 devices: pairs 10 GB/s, node 5 GB/s, network 1 GB/s; latencies
 * 1, 2 and 10 us per step. */
static void cluster8(struct cluster_profile *c)
{
	static const int dev[] = { 2, 4, 8 };
	static const double bw[] = { 10, 5, 1 };

	assert_int_equal(fx_cluster(c, 2, 4, dev, bw, 3, 16e9, 1e9, 1.0), 0);
	c->levels[0].latency_s = 1e-6;
	c->levels[1].latency_s = 2e-6;
	c->levels[2].latency_s = 10e-6;
}

/* alpha-beta collectives and the contention of a shared link */
static void test_latency_and_contention(void **state)
{
	struct cluster_profile cl;
	struct uniap_err err;

	(void)state;
	cluster8(&cl);
	/* ring all-reduce inside a pair: 2 steps of 1 us + X * 2(1/2) / 10e9 */
	NEAR(cost_collective_s(&cl, CLUSTER_ALLREDUCE, 1e6, 2, 1, 8, 1), 2e-6 + 1e6 / 10e9);
	/* all-gather over all 8: 7 steps of 10 us + X * 7/8 / 1e9 */
	NEAR(cost_collective_s(&cl, CLUSTER_ALLGATHER, 1e6, 8, 1, 8, 1), 7e-5 + 1e6 * 7.0 / 8 / 1e9);
	/* one network adapter per node of 4 */
	cl.levels[2].shared_by = 4;
	assert_int_equal(cluster_validate(&cl, &err), UNIAP_OK);
	/* groups {r, r+4}: the 4 groups of a node cross its one link at once */
	NEAR(cost_collective_s(&cl, CLUSTER_ALLREDUCE, 1e6, 2, 4, 8, 1), 2e-5 + 1e6 / (1e9 / 4));
	/* groups {r, r+2, r+4, r+6}: 2 groups have members in a node */
	NEAR(cost_collective_s(&cl, CLUSTER_ALLREDUCE, 1e6, 4, 2, 8, 1), 6e-5 + 1e6 * 1.5 / (1e9 / 2));
	/* one group of 8: alone on the link */
	NEAR(cost_collective_s(&cl, CLUSTER_ALLREDUCE, 1e6, 8, 1, 8, 1), 14e-5 + 1e6 * 1.75 / 1e9);
	/* inside a node the network's sharing does not apply */
	NEAR(cost_collective_s(&cl, CLUSTER_ALLREDUCE, 1e6, 2, 2, 8, 1), 4e-6 + 1e6 / 5e9);
	/* two adapters per node: 4 groups over 2 links */
	cl.levels[2].shared_by = 2;
	NEAR(cost_collective_s(&cl, CLUSTER_ALLREDUCE, 1e6, 2, 4, 8, 1), 2e-5 + 1e6 / (1e9 / 2));
	/* a measured entry is taken as it is */
	assert_int_equal(fx_cluster_add_bw(&cl, CLUSTER_ALLREDUCE, 2, 0, 3), 0);
	NEAR(cost_collective_s(&cl, CLUSTER_ALLREDUCE, 1e6, 2, 4, 8, 1), 2e-5 + 1e6 / 3e9);
	/* sharing a link of the first level, or by more devices than the level below has, is refused */
	cl.levels[2].shared_by = 5;
	assert_int_equal(cluster_validate(&cl, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "cluster.hierarchy[2].shared_by"));
	cl.levels[2].shared_by = 1;
	cl.levels[0].shared_by = 2;
	assert_int_equal(cluster_validate(&cl, &err), UNIAP_E_INVALID);
	cluster_release(&cl);
}

/* The FLOPs path with its efficiency curve, memory-bound bytes, kernels, a
 * fixed time per pass and the optimizer step; the memory limit with margin,
 * fragmentation and FSDP transients; p2p latency across stages. */
static void test_compute_and_memory_terms(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct model_layer_type *t;
	double fwd1, fwd2;

	(void)state;
	cluster8(&cl);
	cl.peak_flops_per_s[MODEL_FP32] = 100e12;
	cl.peak_flops_per_s[MODEL_MIXED] = 200e12;
	cl.compute_efficiency = 0.5;
	cl.gemm_half_dim = 1024;
	cl.memory_bandwidth_bytes_per_s = 1000e9;
	cl.kernel_overhead_s = 5e-6;
	model(&m, 8, MODEL_FP32);
	t = &m.types[0];
	free(t->forward_s);
	t->forward_s = NULL;
	t->n_forward_s = 0;
	t->forward_flops_per_sample = 1e12;
	t->gemm_dim = 1024;
	t->tokens_per_sample = 512;
	t->kernels_per_pass = 10;
	t->forward_fixed_s = 1e-3;
	t->memory_bound_bytes = calloc(1, sizeof(*t->memory_bound_bytes));
	assert_non_null(t->memory_bound_bytes);
	t->memory_bound_bytes[0] = (struct model_tp_value){ 1, 1e9 };
	t->n_memory_bound_bytes = 1;

	/* pp 8, c 4: one device per stage, micro-batches of 2 samples.  GEMM
	 * size min(1024, 2 * 512) = 1024: efficiency 0.5 * 1024 / 2048 */
	build(&cl, &m, 8, 8, 4, COST_GPIPE, 0, &c);
	fwd1 = 1e-3 + 10 * 5e-6 + 2 * (1e12 / (100e12 * 0.25) + 1e9 / 1000e9);
	/* + Adam's step: 1e6 parameters * 28 bytes / 1000 GB/s, a quarter per micro-batch */
	NEAR(T(&c, 0, "single"), 3 * fwd1 + 1e6 * 28 / 1000e9 / 4);
	/* p2p: stage 3 -> 4 crosses the network, which prices every hop: 2
	 * latencies + (2 + 2 samples) * 1e5 B / 1 GB/s */
	NEAR(c.edges[0].cross_stage_s[0], 2 * 10e-6 + 4e5 / 1e9);
	cost_candidate_release(&c);

	/* pp 4: tp2 halves the GEMM (512): efficiency 0.5 * 512 / 1536 */
	build(&cl, &m, 8, 4, 4, COST_GPIPE, 0, &c);
	fwd2 = 1e-3 + 10 * 5e-6 + 2 * (1e12 / (100e12 / 6) / 2 + 0.5e9 / 1000e9);
	/* two all-reduces of 2e5 B per pass inside a pair, 2 steps of 1 us each */
	NEAR(T(&c, 0, "tp2"), 3 * fwd2 + 2 * 2 * (2e-6 + 2e5 / 10e9) + 0.5e6 * 28 / 1000e9 / 4);
	/* a micro-batch of 1 sample halves the rows: d = 512 */
	cost_candidate_release(&c);
	build(&cl, &m, 8, 8, 8, COST_GPIPE, 0, &c);
	NEAR(T(&c, 0, "single"), 3 * (1e-3 + 5e-5 + 1e12 / (100e12 / 6) + 1e-3) + 1e6 * 28 / 1000e9 / 8);
	cost_candidate_release(&c);

	/* memory: (16e9 * (1 - 0.1) - 1e9 - 2 gathered copies of 4e6 B) / 1.25 */
	cl.memory_margin = 0.1;
	cl.memory_fragmentation = 0.25;
	build(&cl, &m, 8, 4, 4, COST_GPIPE, 0, &c);
	NEAR(c.memory_limit_bytes, (14.4e9 - 1e9 - 8e6) / 1.25);
	cost_candidate_release(&c);
	/* one micro-batch: the unsharded gradient of one layer is live too */
	build(&cl, &m, 8, 4, 1, COST_GPIPE, 0, &c);
	NEAR(c.memory_limit_bytes, (14.4e9 - 1e9 - 12e6) / 1.25);
	NEAR(MF(&c, "fsdp2"), 16e6 / 2);
	cost_candidate_release(&c);
	/* without FSDP strategies (pp 8) no transient */
	build(&cl, &m, 8, 8, 1, COST_GPIPE, 0, &c);
	NEAR(c.memory_limit_bytes, (14.4e9 - 1e9) / 1.25);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

/*
 * ZeRO-1/2 (docs/cost-model.md, "ZeRO"): the model states of the ZeRO paper
 * (mixed-precision Adam: 16 bytes per parameter replicated, 4 + 12/dp under
 * ZeRO-1, 2 + 14/dp under ZeRO-2), the gradient all-reduce split into its
 * reduce-scatter and all-gather (the same time with one micro-batch; ZeRO-2
 * reduce-scatters after every micro-batch), the optimizer step on a shard.
 */
static void test_zero_terms(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 8, .pp = 1, .microbatches = 1, .schedule = COST_GPIPE, .zero = 1 };
	struct uniap_err err;
	double step, ag;

	(void)state;
	cluster4(&cl);
	model(&m, 2, MODEL_MIXED);
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(MF(&c, "dp4"), 16e6);
	NEAR(MF(&c, "dp4+z1"), 7e6);
	NEAR(MF(&c, "dp4+z2"), 5.5e6);
	NEAR(MF(&c, "tp2.dp2+z1"), (4 + 12 / 2.0) * 1e6 / 2);
	NEAR(MF(&c, "dp2.tp2+z2"), (2 + 14 / 2.0) * 1e6 / 2);
	/* only replicated strategies have variants: fsdp is ZeRO-3 */
	assert_true(strategy_find(&c.strategies, "fsdp4+z1") < 0);
	assert_true(strategy_find(&c.strategies, "tp4+z1") < 0);
	assert_true(strategy_find(&c.strategies, "dp2.fsdp2+z1") < 0);
	assert_int_equal(c.strategies.items[k_of(&c, "dp4+z2")].zero, 2);
	/* one micro-batch: the reduce-scatter overlaps the backward like the
	 * all-reduce (half of its time, the same bus volume), but the updated
	 * parameters are all-gathered after the optimizer step, outside every
	 * backward: exposed, where the all-reduce's half was slowed by ccoc - 1 */
	ag = cost_collective_s(&cl, CLUSTER_ALLGATHER, 2e6, 4, 1, 4, 1);
	NEAR(T(&c, 0, "dp4+z1") - T(&c, 0, "dp4"), (1 - 0.5) * ag);
	NEAR(T(&c, 0, "dp4+z2"), T(&c, 0, "dp4+z1"));
	/* the breakdown of two such layers: 2 bytes of parameter, 2 of gradient and 12 of
	 * optimizer states each, ZeRO-1 sharding the 12, ZeRO-2 the 2 of gradient too,
	 * FSDP all of it (the ZeRO paper's Figure 1) */
	{
		static const struct {
			const char *name;
			double w, g, opt;
		} want[] = { { "dp4", 2, 2, 12 }, { "dp4+z1", 2, 2, 3 }, { "dp4+z2", 2, 0.5, 3 }, { "fsdp4", 0.5, 0.5, 3 } };
		int stage[2] = { 0, 0 };
		size_t strat[2], i;
		struct cost_stage_memory sm[1];

		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			strat[0] = strat[1] = k_of(&c, want[i].name);
			assert_int_equal(cost_stage_memory(&cl, &m, &c, stage, strat, sm, &err), UNIAP_OK);
			NEAR(sm[0].weight_bytes, 2 * want[i].w * 1e6);
			NEAR(sm[0].gradient_bytes, 2 * want[i].g * 1e6);
			NEAR(sm[0].optimizer_bytes, 2 * want[i].opt * 1e6);
			NEAR(sm[0].model_states_bytes, 2 * MF(&c, want[i].name));
		}
	}
	/* activations and resharding do not change */
	NEAR(MA(&c, "dp4+z2"), MA(&c, "dp4"));
	NEAR(R(&c, "dp4+z1", "tp4", 0), R(&c, "dp4", "tp4", 0));
	cost_candidate_release(&c);

	/* two micro-batches: ZeRO-2 reduce-scatters after each (overlapped with
	 * its backward), ZeRO-1 once in the last; the all-gather once, per
	 * micro-batch half of it */
	o.microbatches = 2;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "dp4+z1") - T(&c, 0, "dp4"), (1 - 0.5) * ag / 2);
	NEAR(T(&c, 0, "dp4+z2") - T(&c, 0, "dp4+z1"), 0.5 * ag - 0.5 * ag / 2);
	cost_candidate_release(&c);

	/* the optimizer step touches a quarter of the states: 1e6 * 30 B at 1 TB/s */
	cl.memory_bandwidth_bytes_per_s = 1e12;
	o.microbatches = 1;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	step = 1e6 * 30 / 1e12;
	NEAR(T(&c, 0, "dp4") - T(&c, 0, "dp4+z1"), step * (1 - 1 / 4.0) - 0.5 * ag);
	cost_candidate_release(&c);

	/* Megatron-LM's fp32 main gradients (18 bytes per parameter): 6 + 12/dp */
	m.state_bytes_per_parameter = 18;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(MF(&c, "dp4+z1"), (6 + 12 / 4.0) * 1e6);
	NEAR(MF(&c, "dp4+z2"), (2 + 16 / 4.0) * 1e6);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

/*
 * Sequence parallelism (docs/cost-model.md, "Sequence parallelism"): every
 * activation divided by tp (never more than without it), the checkpointed
 * input too; each TP all-reduce a reduce-scatter and an all-gather (the same
 * time on one table); the memory-bound bytes over tp; the output handed to a
 * layer that wants the whole sequence all-gathered (and reduce-scattered
 * back), nothing between two layers sharded over the same tp group.
 */
static void test_sequence_parallel_terms(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 8, .pp = 1, .microbatches = 2, .schedule = COST_GPIPE, .sp = 1 };
	struct uniap_err err;
	double ag;

	(void)state;
	cluster4(&cl);
	model(&m, 2, MODEL_FP32);
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	assert_true(strategy_find(&c.strategies, "dp4+sp") < 0); /* no tp group to shard over */
	assert_int_equal(c.strategies.items[k_of(&c, "tp2.dp2+sp")].sp, 1);
	/* act(1) = 1e6 B a sample: 2 samples on a device, / tp 2 (act(2) = 6e5 is more) */
	NEAR(MA(&c, "tp2.dp2+sp"), 2 * 1e6 / 2);
	NEAR(MA(&c, "tp2.dp2"), 2 * 6e5);
	NEAR(MA(&c, "tp4+sp"), 4 * 1e6 / 4);
	NEAR(T(&c, 0, "tp2.dp2+sp"), T(&c, 0, "tp2.dp2"));
	NEAR(MF(&c, "tp2.dp2+sp"), MF(&c, "tp2.dp2"));
	/* edges: sharded to sharded over the same group costs what it did; sharded to whole
	 * gathers 2 samples x 1e5 B over a pair (10 GB/s, bus factor 1/2) and scatters back */
	ag = 2 * 0.5 * 2e5 / 10e9;
	NEAR(R(&c, "tp2.dp2+sp", "tp2.dp2+sp", 0), R(&c, "tp2.dp2", "tp2.dp2", 0));
	NEAR(R(&c, "tp2.dp2", "tp2.dp2+sp", 0), R(&c, "tp2.dp2", "tp2.dp2", 0));
	NEAR(R(&c, "tp2.dp2+sp", "tp2.dp2", 0), R(&c, "tp2.dp2", "tp2.dp2", 0) + ag);
	NEAR(R(&c, "tp2.dp2+sp", "dp2.tp2+sp", 0), R(&c, "tp2.dp2", "dp2.tp2", 0) + ag);
	cost_candidate_release(&c);

	/* recompute keeps the layer's input, sharded too */
	o.recompute = 1;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(MA(&c, "tp2.dp2+sp+rc"), 2 * 2e4 / 2);
	NEAR(MA(&c, "tp2.dp2+rc"), 2 * 2e4);
	cost_candidate_release(&c);

	/* the memory-bound bytes of a FLOP-priced layer run on a tp-th of the sequence: 1e9 B
	 * a sample over tp 2 instead of the 7e8 B of tp 2 without it (whose norms are
	 * replicated), at 1 TB/s, 2 samples, forward and twice in backward */
	cl.memory_bandwidth_bytes_per_s = 1e12;
	cl.peak_flops_per_s[MODEL_FP32] = 100e12;
	cl.compute_efficiency = 0.5;
	free(m.types[0].forward_s);
	m.types[0].forward_s = NULL;
	m.types[0].n_forward_s = 0;
	m.types[0].forward_flops_per_sample = 1e12;
	m.types[0].memory_bound_bytes = calloc(2, sizeof(*m.types[0].memory_bound_bytes));
	assert_non_null(m.types[0].memory_bound_bytes);
	m.types[0].memory_bound_bytes[0] = (struct model_tp_value){ 1, 1e9 };
	m.types[0].memory_bound_bytes[1] = (struct model_tp_value){ 2, 7e8 }; /* norms replicated */
	m.types[0].n_memory_bound_bytes = 2;
	o.recompute = 0;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "tp2.dp2") - T(&c, 0, "tp2.dp2+sp"), 3 * 2 * (7e8 - 1e9 / 2) / 1e12);
	model_release(&m);
	cost_candidate_release(&c);
	cluster_release(&cl);
}

/*
 * Selective recomputation (docs/cost-model.md, "Selective recomputation"):
 * the layer keeps its activations less the attention core's, divided by tp,
 * and recomputes the core's FLOPs and memory-bound bytes once in backward;
 * a layer type without an attention core prices "+sel" as its plain strategy.
 */
static void test_selective_terms(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 8, .pp = 1, .microbatches = 2, .schedule = COST_GPIPE,
	                          .selective = 1, .recompute = 1 };
	struct uniap_err err;
	double core;

	(void)state;
	cluster4(&cl);
	model(&m, 2, MODEL_FP32);
	/* no attention core: the same costs */
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	assert_int_equal(c.strategies.items[k_of(&c, "tp2.dp2+sel")].selective, 1);
	assert_int_equal(c.strategies.items[k_of(&c, "tp2.dp2+sel")].recompute, 0);
	assert_true(strategy_find(&c.strategies, "tp2.dp2+sel+rc") < 0);
	NEAR(T(&c, 0, "tp2.dp2+sel"), T(&c, 0, "tp2.dp2"));
	NEAR(MA(&c, "tp2.dp2+sel"), MA(&c, "tp2.dp2"));
	cost_candidate_release(&c);

	/* an attention core of 4e5 B kept, 1e10 FLOPs and 1e8 memory-bound bytes a sample */
	m.types[0].attention_bytes_per_sample = 4e5;
	m.types[0].attention_flops_per_sample = 1e10;
	m.types[0].attention_memory_bound_bytes_per_sample = 1e8;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_INVALID); /* the FLOPs need a peak */
	assert_non_null(strstr(err.msg, "attention_flops_per_sample"));
	cl.peak_flops_per_s[MODEL_FP32] = 100e12;
	cl.compute_efficiency = 0.5;
	cl.memory_bandwidth_bytes_per_s = 1e12;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	/* 2 samples a device: 6e5 - 4e5 / 2 kept a sample */
	NEAR(MA(&c, "tp2.dp2+sel"), 2 * (6e5 - 4e5 / 2));
	NEAR(MA(&c, "dp4+sel"), 1 * (1e6 - 4e5)); /* one sample a device */
	/* the core once more: FLOPs at half of the peak over tp, bytes at 1 TB/s over tp */
	core = 2 * (1e10 / (100e12 * 0.5) / 2 + 1e8 / 2 / 1e12);
	NEAR(T(&c, 0, "tp2.dp2+sel"), T(&c, 0, "tp2.dp2") + core);
	cost_candidate_release(&c);
	/* an attention core larger than the activations is refused, naming the field */
	m.types[0].attention_bytes_per_sample = 2e6;
	assert_int_equal(model_validate(&m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "attention_bytes_per_sample"));
	model_release(&m);
	cluster_release(&cl);
}

/*
 * Micro-batch counts that leave the last micro-batch smaller (docs/cost-model.md,
 * "Micro-batches"): the chunk counts of a batch, micro-batches of ceil(B / c)
 * priced whole, and the option that admits them.
 */
static void test_uneven_microbatches(void **state)
{
	static const long counts64[] = { 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16, 22, 32, 64 };
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 64, .pp = 1, .microbatches = 11, .schedule = COST_GPIPE };
	struct uniap_err err;
	size_t i = 0;
	long k;

	(void)state;
	for (k = 1; k <= 64; k++)
		if (cost_chunk_count(64, k)) {
			assert_true(i < sizeof(counts64) / sizeof(counts64[0]));
			assert_int_equal(k, counts64[i++]);
		}
	assert_int_equal(i, sizeof(counts64) / sizeof(counts64[0]));
	assert_false(cost_chunk_count(64, 0));
	assert_false(cost_chunk_count(64, 65));
	cluster4(&cl);
	model(&m, 2, MODEL_FP32);
	/* without the option, c must divide B */
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "microbatches: must divide batch 64, got 11"));
	o.uneven = 1;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	assert_int_equal(c.microbatch_size, 6); /* ten of 6 and one of 4 */
	assert_int_equal(c.microbatches, 11);
	assert_int_equal(cost_batch(&c), 64);
	/* every micro-batch priced as the largest: 6 samples over dp2 -> 3 a device */
	NEAR(MA(&c, "tp2.dp2"), 3 * 6e5);
	cost_candidate_release(&c);
	/* 12 is no chunk count of 64: micro-batches of 6 make 11 */
	o.microbatches = 12;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "microbatches: must split batch 64"));
	/* a divisor is a chunk count too */
	o.microbatches = 16;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	assert_int_equal(c.microbatch_size, 4);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

/*
 * A runtime's terms (docs/cost-model.md, "Runtime profile"): the gradient
 * all-reduce in the last micro-batch's backward or after it, the optimizer
 * step's extra passes and bucket copies, the eager attention's bytes, and
 * the host's time to issue a pass's kernels as its floor.
 */
static void test_runtime_terms(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 8, .pp = 1, .microbatches = 2, .schedule = COST_GPIPE };
	struct uniap_err err;
	struct model_layer_type *t;

	(void)state;
	cluster4(&cl);
	model(&m, 4, MODEL_FP32);
	/* dp4, one sample per device: forward 0.01, the all-reduce of 4e6 B over
	 * 5 GB/s 1.2e-3.  In the last backward: 0.02 + (ovl(0.02, 1.2e-3) - 0.02) / 2 */
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "dp4"), 0.01 + 0.02 + 0.5 * 1.2e-3 / 2);
	cost_candidate_release(&c);
	/* after the backward: exposed, half per micro-batch */
	o.runtime.sync = COST_SYNC_AFTER;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "dp4"), 0.01 + 0.02 + 1.2e-3 / 2);
	/* FSDP's own traffic stays per micro-batch: fsdp4 has no data-parallel reduction */
	NEAR(T(&c, 0, "fsdp4"), (0.01 + 0.5 * 6e-4) + (0.02 + 0.5 * 1.2e-3));
	cost_candidate_release(&c);

	/* the step: Adam's 28 bytes, + 8 of the runtime's gradient passes, + 16 of
	 * bucket copies on a replicated layer, per parameter of the shard, at 1 TB/s */
	cl.memory_bandwidth_bytes_per_s = 1e12;
	o.runtime = (struct cost_runtime){ .param_pass_bytes = 8, .bucket_copy_bytes = 16 };
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "dp4"), 0.01 + 0.02 + 0.5 * 1.2e-3 / 2 + 1e6 * (28 + 8 + 16) / 1e12 / 2);
	NEAR(T(&c, 0, "fsdp4"), (0.01 + 0.5 * 6e-4) + (0.02 + 0.5 * 1.2e-3) + 1e6 / 4 * (28 + 8) / 1e12 / 2);
	cost_candidate_release(&c);

	/* a FLOP-priced layer: 1e12 FLOPs at 100 TFLOP/s x 0.5, 1e9 memory-bound
	 * bytes and, eager, 2e9 more at 1 TB/s; 10 kernels */
	t = &m.types[0];
	free(t->forward_s);
	t->forward_s = NULL;
	t->n_forward_s = 0;
	t->forward_flops_per_sample = 1e12;
	t->kernels_per_pass = 10;
	t->eager_attention_bytes_per_sample = 2e9;
	t->memory_bound_bytes = calloc(1, sizeof(*t->memory_bound_bytes));
	assert_non_null(t->memory_bound_bytes);
	t->memory_bound_bytes[0] = (struct model_tp_value){ 1, 1e9 };
	t->n_memory_bound_bytes = 1;
	cl.peak_flops_per_s[MODEL_FP32] = 100e12;
	cl.compute_efficiency = 0.5;
	/* pp 4, c 4: one device per stage, one sample per micro-batch */
	o = (struct cost_options){ .batch = 4, .pp = 4, .microbatches = 4, .schedule = COST_GPIPE };
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "single"), 3 * (0.02 + 1e-3) + 1e6 * 28 / 1e12 / 4);
	cost_candidate_release(&c);
	o.runtime.eager_attention = 1;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "single"), 3 * (0.02 + 3e-3) + 1e6 * 28 / 1e12 / 4);
	cost_candidate_release(&c);
	/* the host issues 10 kernels in 1e-2 s: below the device's 0.023, no change; at 5e-3 each it sets the pace */
	o.runtime.host_s_per_kernel = 1e-3;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "single"), 3 * (0.02 + 3e-3) + 1e6 * 28 / 1e12 / 4);
	cost_candidate_release(&c);
	o.runtime.host_s_per_kernel = 5e-3;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "single"), 3 * 0.05 + 1e6 * 28 / 1e12 / 4);
	cost_candidate_release(&c);
	/* a measured layer was timed under its runtime: no floor, no eager bytes */
	t->forward_s = calloc(1, sizeof(*t->forward_s));
	assert_non_null(t->forward_s);
	t->forward_s[0] = (struct model_tp_value){ 1, 0.01 };
	t->n_forward_s = 1;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "single"), 3 * 0.01 + 1e6 * 28 / 1e12 / 4);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

/*
 * FP8 training (docs/cost-model.md, "FP8"): the layer's FP8 GEMMs at the FP8
 * peak and the rest at the mixed one, the input casts as memory-bound bytes,
 * the weights' FP8 copy in memory and their cast once per iteration; refused
 * for an fp32 model and a device without an FP8 figure.
 */
static void test_fp8_terms(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 4, .pp = 4, .microbatches = 4, .schedule = COST_GPIPE };
	struct uniap_err err;
	struct model_layer_type *t;
	double bf16, fp8;

	(void)state;
	cluster4(&cl);
	model(&m, 4, MODEL_MIXED);
	t = &m.types[0];
	free(t->forward_s);
	t->forward_s = NULL;
	t->n_forward_s = 0;
	/* 1e12 FLOPs per sample, 0.8e12 of them in linear layers; 1e9 memory-bound
	 * bytes, 3e8 more to cast the GEMMs' inputs */
	t->forward_flops_per_sample = 1e12;
	t->fp8_flops_per_sample = 0.8e12;
	t->fp8_cast_bytes_per_sample = 3e8;
	/* its GEMMs' inputs kept in FP8: 1e5 bytes saved whole on every rank, 2e5 split by tp */
	t->fp8_saved_bytes_per_sample = 1e5;
	t->fp8_saved_split_bytes_per_sample = 2e5;
	t->memory_bound_bytes = calloc(1, sizeof(*t->memory_bound_bytes));
	assert_non_null(t->memory_bound_bytes);
	t->memory_bound_bytes[0] = (struct model_tp_value){ 1, 1e9 };
	t->n_memory_bound_bytes = 1;
	cl.peak_flops_per_s[MODEL_FP32] = 50e12;
	cl.peak_flops_per_s[MODEL_MIXED] = 100e12;
	cl.compute_efficiency = 0.5;
	cl.memory_bandwidth_bytes_per_s = 1e12;
	/* no FP8 figure: refused naming it */
	o.fp8 = 1;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "cluster.device.peak_tflops.fp8"));
	cl.peak_fp8_flops_per_s = 200e12;
	/* one sample per micro-batch on one device: BF16 1e12 / 50e12 + 1e9 / 1e12 */
	o.fp8 = 0;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	bf16 = 0.02 + 1e-3;
	NEAR(T(&c, 0, "single"), 3 * bf16 + 1e6 * 30 / 1e12 / 4);
	NEAR(MF(&c, "single"), 16e6);
	cost_candidate_release(&c);
	/* FP8: 0.2e12 / 50e12 + 0.8e12 / 100e12 + (1e9 + 3e8) / 1e12; the weights
	 * cast once per iteration (3 bytes each), their FP8 copy 1 byte each */
	o.fp8 = 1;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	assert_int_equal(c.fp8, 1);
	fp8 = 0.004 + 0.008 + 1.3e-3;
	NEAR(T(&c, 0, "single"), 3 * fp8 + 1e6 * (30 + 3) / 1e12 / 4);
	NEAR(MF(&c, "single"), 16e6 + 1e6);
	/* one sample of the fixture's 1e6 activation bytes, less 1e5 + 2e5 kept in FP8 */
	NEAR(MA(&c, "single"), 1e6 - 3e5);
	/* the breakdown counts the FP8 copy with the model states, so its identity holds */
	{
		int stage[4] = { 0, 1, 2, 3 };
		size_t strat[4] = { k_of(&c, "single"), k_of(&c, "single"), k_of(&c, "single"), k_of(&c, "single") };
		struct cost_stage_memory sm[4];

		assert_int_equal(cost_stage_memory(&cl, &m, &c, stage, strat, sm, &err), UNIAP_OK);
		NEAR(sm[0].model_states_bytes, 16e6 + 1e6);
		NEAR(sm[0].allocated_bytes, sm[0].model_states_bytes + sm[0].fsdp_accumulation_bytes + sm[0].activation_bytes);
	}
	cost_candidate_release(&c);
	/* an fp32 model has no FP8 training */
	m.precision = MODEL_FP32;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "fp8"));
	model_release(&m);
	cluster_release(&cl);
}

/*
 * Mixture of experts (docs/cost-model.md, "Mixture of experts"): the expert
 * GEMMs at the load, four all-to-alls over the ep group (inside a node, and
 * across two), the expert gradients reduced over their dp / ep replicas, the
 * expert states 1/ep, ZeRO over the replicas, the busiest rank's expert
 * activations; a dense layer runs +epN as its plain dp.
 */
static void test_moe_terms(void **state)
{
	static const int dev[] = { 4, 8 };
	static const double bw[] = { 100, 10 };
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c;
	struct cost_options o = { .batch = 8, .pp = 1, .microbatches = 1, .schedule = COST_GPIPE, .zero = 1 };
	struct uniap_err err;
	struct model_layer_type *t;
	double dense_sync;

	(void)state;
	assert_int_equal(fx_cluster(&cl, 2, 4, dev, bw, 2, 80e9, 0, 1.0), 0);
	cl.peak_flops_per_s[MODEL_FP32] = 50e12;
	cl.peak_flops_per_s[MODEL_MIXED] = 100e12;
	cl.compute_efficiency = 0.5;
	model(&m, 2, MODEL_MIXED);
	t = &m.types[0];
	free(t->forward_s);
	t->forward_s = NULL;
	t->n_forward_s = 0;
	/* 1e12 FLOPs per sample, 0.6e12 of them in the experts; 1e7 parameters,
	 * 8e6 of them in 8 experts; 3e8 activation bytes, 1e8 of them the
	 * experts'; 1e8 bytes per dispatch */
	t->forward_flops_per_sample = 1e12;
	t->parameters = 1e7;
	t->activation_bytes[0].value = 3e8;
	t->experts = 8;
	t->expert_parameters = 8e6;
	t->expert_flops_per_sample = 0.6e12;
	t->expert_tokens_per_sample = 1000;
	t->expert_activation_bytes_per_sample = 1e8;
	t->dispatch_bytes_per_sample = 1e8;
	assert_int_equal(model_validate(&m, &err), UNIAP_OK);
	/* the reduction after the backward pass, so that it shows */
	o.runtime.sync = COST_SYNC_AFTER;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	/* dp8: 0.02 s forward, 0.04 backward, all 2e7 gradient bytes all-reduced over
	 * the two nodes (2 x 7/8 at 10 GB/s) */
	NEAR(T(&c, 0, "dp8"), 0.06 + 2e7 * 1.75 / 10e9);
	/* dp8+ep4: the dense 4e6 bytes over dp8, each rank's 4e6 expert bytes over
	 * its 2 replicas {r, r + 4} (2 x 1/2); four all-to-alls inside a node:
	 * 3/4 of 1e8 at 100 GB/s */
	dense_sync = 4e6 * 1.75 / 10e9;
	NEAR(T(&c, 0, "dp8+ep4"), 0.06 + dense_sync + 4e6 / 10e9 + 4 * 1e8 * 0.75 / 100e9);
	/* dp8+ep8: no expert replicas; each all-to-all sends 3/8 inside the node
	 * and 4/8 across at 10 GB/s: the network sets it */
	NEAR(T(&c, 0, "dp8+ep8"), 0.06 + dense_sync + 4 * 1e8 * 0.5 / 10e9);
	/* states, 16 bytes a parameter: all, the dense 2e6 + 8e6 / 4, 2e6 + 8e6 / 8 */
	NEAR(MF(&c, "dp8"), 16 * 1e7);
	NEAR(MF(&c, "dp8+ep4"), 16 * 4e6);
	NEAR(MF(&c, "dp8+ep8"), 16 * 3e6);
	/* ZeRO-1: the dense optimizer states (12 of 16 bytes) over dp8, the experts' over
	 * their 2 replicas */
	NEAR(MF(&c, "dp8+ep4+z1"), 2e6 * (4 + 12.0 / 8) + 2e6 * (4 + 12.0 / 2));
	NEAR(MA(&c, "dp8+ep4"), 3e8);
	cost_candidate_release(&c);
	/* twice the balanced load: the expert GEMMs, the all-to-alls and the experts'
	 * activations double on the busiest rank */
	t->expert_load = 2;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	NEAR(T(&c, 0, "dp8+ep4"), 3 * (0.4e12 / 50e12 + 2 * 0.6e12 / 50e12) + dense_sync + 4e6 / 10e9 +
	                          4 * 2e8 * 0.75 / 100e9);
	NEAR(MA(&c, "dp8+ep4"), 4e8);
	cost_candidate_release(&c);
	/* launches (§Mixture of experts, "Host time"): 2 of the layer's own and 2 per local
	 * expert, 2e-3 s of host each; the device's 0.4e12 / 50e12 = 0.008 outside the experts
	 * and 0.6e12 / 50e12 = 0.012 in them.  Dropless, the host waits before each dispatch:
	 * from one wait to the next the host issues the experts' half (H_b), then the device
	 * runs the combine and the half before the next dispatch (a2a / 2 + 0.008).  dp8 (all 8
	 * experts local, 16 launches, no all-to-all): host 0.036 in all, 0.032 of it in the
	 * experts' half; the wait adds 0.032 + 0.008 - max(0.036, 0.02) = 0.004 to the forward */
	t->expert_load = 0;
	t->kernels_per_pass = 2;
	t->kernels_per_local_expert = 2;
	t->expert_sync = 0;
	assert_int_equal(model_validate(&m, &err), UNIAP_OK);
	o.runtime.host_s_per_kernel = 2e-3;
	{
		static const char *const names[] = { "dp8", "dp8+ep2", "dp8+ep4", "dp8+ep8" };
		/* what the wait adds: dp8+ep2 (8 launches in the experts' half, 0.016; two
		 * all-to-alls inside the node, 5e-4 each): 0.016 + 5e-4 + 0.008 - max(0.02, 0.021);
		 * ep4 and ep8: their experts' halves are the device's (nothing) */
		static const double extra[] = { 0.004, 0.0035, 0, 0 };
		double plain[4];
		size_t i;

		assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
		/* the host sets dp8's pace (3 x 0.036), the dense gradients over the nodes after it */
		NEAR(T(&c, 0, "dp8"), 3 * 0.036 + 2e7 * 1.75 / 10e9);
		for (i = 0; i < 4; i++)
			plain[i] = T(&c, 0, names[i]);
		cost_candidate_release(&c);
		t->expert_sync = 1;
		assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
		for (i = 0; i < 4; i++)
			NEAR(T(&c, 0, names[i]) - plain[i], extra[i]);
		cost_candidate_release(&c);
		/* a full recomputation reruns the forward, its wait included */
		o.recompute = 1;
		assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
		NEAR(T(&c, 0, "dp8+rc"), 4 * 0.036 + 2 * 0.004 + 2e7 * 1.75 / 10e9);
		cost_candidate_release(&c);
		o.recompute = 0;
	}
	t->expert_sync = 0;
	t->kernels_per_pass = 0;
	t->kernels_per_local_expert = 0;
	o.runtime.host_s_per_kernel = 0;
	/* etp 1 (sequence parallel, tp inner): whole experts on each rank, ep groups of consecutive
	 * ranks of the tp x dp block.  tp2.dp4, 2 samples a rank, 1 sent per all-to-all a tp rank */
	o.sp = 1;
	t->expert_load = 0;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	/* states: the dense 2e6 / tp + the experts 8e6 / ep, whole */
	NEAR(MF(&c, "tp2.dp4+sp+ep2+etp1"), 16 * (1e6 + 4e6));
	NEAR(MF(&c, "tp2.dp4+sp+ep8+etp1"), 16 * (1e6 + 1e6));
	NEAR(MF(&c, "tp2.dp4+sp+ep4"), 16 * (1e6 + 1e6));
	{
		/* against etp = tp with ep4: the ep group {0..3} stays in the node (3/4 of 1e8 at 100 GB/s,
		 * where {0,2,4,6} sends half across at 10 GB/s, which sets its pace); each rank's 4e6 expert bytes reduce over
		 * {r, r + 4}; one tp collective pair (forward and backward) fewer */
		double pair = cost_collective_s(&cl, CLUSTER_REDUCE_SCATTER, 2 * 1e5, 2, 1, 8, 1) +
		              cost_collective_s(&cl, CLUSTER_ALLGATHER, 2 * 1e5, 2, 1, 8, 1);

		NEAR(T(&c, 0, "tp2.dp4+sp+ep4") - T(&c, 0, "tp2.dp4+sp+ep4+etp1"),
		     4 * (1e8 * 0.5 / 10e9 - 1e8 * 0.75 / 100e9) - 4e6 / 10e9 + 2 * pair);
	}
	/* a dense-style strategy without sequence parallelism or with dp inner has no etp1 */
	assert_true(strategy_find(&c.strategies, "tp2.dp4+ep2+etp1") < 0);
	assert_true(strategy_find(&c.strategies, "dp4.tp2+sp+ep2+etp1") < 0);
	assert_true(strategy_find(&c.strategies, "tp8+sp+ep8+etp1") >= 0);
	cost_candidate_release(&c);
	o.sp = 0;
	/* an expert count that 4 does not divide: no +ep4, and no +ep8 */
	t->experts = 6;
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	assert_true(strategy_find(&c.strategies, "dp8+ep2") >= 0);
	assert_true(strategy_find(&c.strategies, "dp8+ep4") < 0);
	assert_true(strategy_find(&c.strategies, "dp8+ep8") < 0);
	cost_candidate_release(&c);
	/* the parts within their wholes, named */
	t->expert_parameters = 2e7;
	assert_int_equal(model_validate(&m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "model.layer_types[0].expert_parameters"));
	t->expert_parameters = 8e6;
	t->kernels_per_local_expert = -1;
	assert_int_equal(model_validate(&m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "model.layer_types[0].kernels_per_local_expert"));
	t->kernels_per_local_expert = 0;
	t->experts = 0;
	assert_int_equal(model_validate(&m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "given on a layer without experts"));
	t->expert_parameters = 0;
	t->expert_flops_per_sample = 0;
	t->expert_tokens_per_sample = 0;
	t->expert_activation_bytes_per_sample = 0;
	t->dispatch_bytes_per_sample = 0;
	t->expert_sync = 1;
	assert_int_equal(model_validate(&m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "model.layer_types[0].expert_sync: given on a layer without experts"));
	model_release(&m);
	cluster_release(&cl);
	/* a dense layer (the catalog's embedding and head) runs +epN as its plain dp */
	{
		struct cluster_profile h;
		struct model_profile mx;
		struct cost_options oo = { .batch = 64, .pp = 1, .microbatches = 8, .schedule = COST_1F1B };

		assert_int_equal(catalog_cluster("dgx-h100", &h, &err), UNIAP_OK);
		assert_int_equal(catalog_model("mixtral-8x7b", &mx, &err), UNIAP_OK);
		assert_int_equal(cost_build(&h, &mx, &oo, &c, &err), UNIAP_OK);
		NEAR(T(&c, 0, "dp8+ep8"), T(&c, 0, "dp8"));
		NEAR(T(&c, mx.n_layers - 1, "dp8+ep4"), T(&c, mx.n_layers - 1, "dp8"));
		assert_true(T(&c, 1, "dp8+ep8") != T(&c, 1, "dp8"));
		assert_true(c.memory_fixed_bytes[1 * cost_k(&c) + k_of(&c, "dp8+ep8")] <
		            c.memory_fixed_bytes[1 * cost_k(&c) + k_of(&c, "dp8")] / 4);
		cost_candidate_release(&c);
		model_release(&mx);
		cluster_release(&h);
	}
}

/*
 * Context parallelism (docs/cost-model.md, "Context parallelism"): a rank's 1/cp of each sample's
 * tokens, the ring's all-gather of keys and values (and its gradients' reduce-scatter) charged for
 * what the attention core does not hide, the gradients over the whole dp group; refused where cp
 * does not divide a layer type's tokens.
 */
static void test_context_parallel_terms(void **state)
{
	static const int dev[] = { 2, 4 };
	static const double bw[] = { 100, 10 };
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c1, c2;
	struct cost_options o = { .batch = 4, .pp = 1, .microbatches = 1, .schedule = COST_GPIPE };
	struct uniap_err err;
	struct model_layer_type *t;

	(void)state;
	assert_int_equal(fx_cluster(&cl, 1, 4, dev, bw, 2, 80e9, 0, 1.0), 0);
	cl.peak_flops_per_s[MODEL_FP32] = 100e12;
	cl.compute_efficiency = 0.5;
	model(&m, 2, MODEL_FP32);
	t = &m.types[0];
	free(t->forward_s);
	t->forward_s = NULL;
	t->n_forward_s = 0;
	/* 1e12 FLOPs a sample (2e11 in the attention core) over 1000 tokens; 8e8 bytes of keys and values */
	t->forward_flops_per_sample = 1e12;
	t->tokens_per_sample = 1000;
	t->kv_bytes_per_sample = 8e8;
	t->context_flops_per_sample = 2e11;
	assert_int_equal(model_validate(&m, &err), UNIAP_OK);
	assert_int_equal(cost_build(&cl, &m, &o, &c1, &err), UNIAP_OK);
	o.cp = 2;
	assert_int_equal(cost_build(&cl, &m, &o, &c2, &err), UNIAP_OK);
	assert_int_equal(c2.cp, 2);
	assert_true(strategy_find(&c2.strategies, "dp4") < 0);
	/* dp4+cp2: 2 samples a rank, half of each: the 0.02 s a sample of dp4's one; the pair {0, 1}
	 * gathers 2 x 8e8 bytes (1/2 of them at 100 GB/s: 8 ms) against a 4 ms core, forward, and
	 * twice that backward: 4 + 8 ms more than dp4, whose gradient reduction is the same */
	NEAR(T(&c2, 0, "dp4+cp2") - T(&c1, 0, "dp4"), 4e-3 + 8e-3);
	NEAR(MA(&c2, "dp4+cp2"), MA(&c1, "dp4"));
	NEAR(MF(&c2, "dp4+cp2"), MF(&c1, "dp4"));
	/* a layer without keys and values exchanges nothing */
	cost_candidate_release(&c2);
	t->kv_bytes_per_sample = 0;
	assert_int_equal(cost_build(&cl, &m, &o, &c2, &err), UNIAP_OK);
	NEAR(T(&c2, 0, "dp4+cp2"), T(&c1, 0, "dp4"));
	cost_candidate_release(&c2);
	/* Ulysses (cp_comm a2a): Q, K, V and the context, 8e8 bytes a sample, four all-to-alls each
	 * way over the pair, not overlapped: 4 x 1/2 of 2e8 at 100 GB/s = 4 ms forward, 4 ms backward */
	t->kv_bytes_per_sample = 8e8;
	t->ulysses_bytes_per_sample = 8e8;
	t->attention_heads = 4;
	o.cp_a2a = 1;
	assert_int_equal(cost_build(&cl, &m, &o, &c2, &err), UNIAP_OK);
	assert_int_equal(c2.cp_a2a, 1);
	NEAR(T(&c2, 0, "dp4+cp2") - T(&c1, 0, "dp4"), 4e-3 + 4e-3);
	/* tp x cp divides the heads: with 2 heads no tp2 beside cp2 */
	assert_true(strategy_find(&c2.strategies, "tp2.dp2+cp2") >= 0);
	cost_candidate_release(&c2);
	t->attention_heads = 2;
	assert_int_equal(cost_build(&cl, &m, &o, &c2, &err), UNIAP_OK);
	assert_true(strategy_find(&c2.strategies, "tp2.dp2+cp2") < 0);
	cost_candidate_release(&c2);
	t->attention_heads = 3;
	assert_int_equal(cost_build(&cl, &m, &o, &c2, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "cp_comm: a2a needs context_parallel 2 to divide"));
	o.cp_a2a = 0;
	/* cp must divide every layer type's tokens */
	t->tokens_per_sample = 999;
	assert_int_equal(cost_build(&cl, &m, &o, &c2, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "context_parallel: 2 must divide model layer type"));
	cost_candidate_release(&c1);
	model_release(&m);
	cluster_release(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layer_time_fp32),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_latency_and_contention),
		cmocka_unit_test(test_compute_and_memory_terms),
		cmocka_unit_test(test_layer_time_mixed_and_measured),
		cmocka_unit_test(test_layer_time_flops),
		cmocka_unit_test(test_inflight),
		cmocka_unit_test(test_interleaved_terms),
		cmocka_unit_test(test_interleaved_peaks),
		cmocka_unit_test(test_uneven_batch),
		cmocka_unit_test(test_resharding),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_evaluate_formula),
		cmocka_unit_test(test_zero_terms),
		cmocka_unit_test(test_sequence_parallel_terms),
		cmocka_unit_test(test_selective_terms),
		cmocka_unit_test(test_uneven_microbatches),
		cmocka_unit_test(test_runtime_terms),
		cmocka_unit_test(test_fp8_terms),
		cmocka_unit_test(test_moe_terms),
		cmocka_unit_test(test_context_parallel_terms),
	};

	return cmocka_run_group_tests_name("cost", tests, NULL, NULL);
}
