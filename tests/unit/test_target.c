/*
 * test_target.c - runtime targets: the rules table, DeepSpeed's split, and
 * the planner under each target against brute force.  The brute force
 * enumerates every candidate (pp, c), every contiguous split and every
 * strategy vector of the unfiltered dictionary, keeps the plans that
 * target_check_plan() accepts and takes the least audit TPI (brute_tpi, its
 * own transcription of the formula); the planner must find that TPI, prove
 * it, return a plan the target accepts, and that plan must export in the
 * target's format.  Instances: chains and DAGs (skip edges into the head,
 * out of the embedding), 2 and 4 devices, recompute, ZeRO-1/2 variants,
 * sequence parallelism, selective recomputation, uneven micro-batches (odd
 * batches), tight and loose memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brute.h"
#include "cost.h"
#include "export.h"
#include "fixtures.h"
#include "plan.h"
#include "runtimes.h"
#include "target.h"
#include "uop.h"

static unsigned long rng = 777;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005UL + 1442695040888963407UL;
	return (unsigned)((rng >> 33) % n);
}

static void test_rules(void **state)
{
	enum target_kind t;
	size_t b[5];
	int i;

	(void)state;
	for (i = 0; i < TARGET_COUNT; i++) {
		assert_int_equal(target_parse(target_name((enum target_kind)i), &t), 0);
		assert_int_equal((int)t, i);
		assert_non_null(target_rules(t)->source);
	}
	assert_int_equal(target_parse("Megatron", &t), -1);
	assert_int_equal(target_parse("", &t), -1);
	assert_null(target_rules(TARGET_COUNT));
	assert_string_equal(target_name(TARGET_COUNT), "unknown");
	/* schedules: Megatron-LM and DeepSpeed run 1F1B only, Galvatron both */
	assert_int_equal(target_schedule(TARGET_MEGATRON, COST_GPIPE), COST_1F1B);
	assert_int_equal(target_schedule(TARGET_DEEPSPEED, COST_GPIPE), COST_1F1B);
	assert_int_equal(target_schedule(TARGET_GALVATRON, COST_GPIPE), COST_GPIPE);
	assert_int_equal(target_schedule(TARGET_GALVATRON, COST_1F1B), COST_1F1B);
	assert_int_equal(target_schedule(TARGET_ANY, COST_GPIPE), COST_GPIPE);
	/* DeepSpeed's partition_uniform: the first n % parts parts hold one more */
	target_ds_partition_uniform(10, 4, b);
	assert_int_equal(b[0], 0);
	assert_int_equal(b[1], 3);
	assert_int_equal(b[2], 6);
	assert_int_equal(b[3], 8);
	assert_int_equal(b[4], 10);
	target_ds_partition_uniform(8, 4, b);
	assert_int_equal(b[1], 2);
	assert_int_equal(b[3], 6);
	target_ds_partition_uniform(2, 4, b);
	assert_int_equal(b[1], 1);
	assert_int_equal(b[2], 2);
	assert_int_equal(b[4], 2);
}

/* A random instance small enough for brute force; L >= 3 (embedding, blocks, head). */
static void random_instance(struct cluster_profile *cl, struct model_profile *m, long *batch, int *recompute,
                            int *zero, int *sp, int *sel, int *uneven)
{
	static const int dev[] = { 2, 4 };
	static const double bw[] = { 10, 2 };
	static const int devs2[] = { 2 };
	int four = (int)rnd(2);
	size_t L = four ? 3 + rnd(2) : 3 + rnd(3);
	double mem = rnd(3) == 0 ? 2.2e8 : 64e9; /* tight or loose */
	double act1 = 1e7 * (1 + rnd(9));
	/* at tp 2: half, a profiled 5e6, or 0.8 of tp 1 (norms and dropout replicated,
	 * which sequence parallelism shards) */
	double act2 = (double[]){ 0, 5e6, 0.8 * act1 }[rnd(3)];

	if (four)
		assert_int_equal(fx_cluster(cl, 1, 4, dev, bw, 2, mem, 0, 1 + rnd(4) * 0.2), 0);
	else
		assert_int_equal(fx_cluster(cl, 1, 2, devs2, bw, 1, mem, 0, 1 + rnd(4) * 0.2), 0);
	assert_int_equal(fx_model_chain(m, L, rnd(2) ? MODEL_MIXED : MODEL_FP32, 1e-3 * (1 + rnd(9)),
	                                rnd(2) ? 7e-4 : 0, 1e6 * (1 + rnd(30)), act1, act2,
	                                2e5 * (1 + rnd(9)), 1e6),
	                 0);
	switch (rnd(4)) {
	case 0: /* the embedding also feeds the head (tied weights) */
		assert_int_equal(fx_model_add_edge(m, 0, L - 1), 0);
		break;
	case 1: /* a transformer layer skips to the head */
		assert_int_equal(fx_model_add_edge(m, 1, L - 1), 0);
		break;
	default:
		break;
	}
	cl->levels[0].latency_s = 1e-6 * rnd(20);
	if (rnd(4))
		fx_model_shape(m, 1024, 16); /* megatron needs one; the others never look */
	*recompute = four ? 0 : (int)rnd(2);
	*zero = (int)rnd(2);
	*sp = (int)rnd(2);
	*sel = (int)rnd(2);
	if (*sel) {
		/* an attention core a third of the activations, priced at a peak */
		m->types[0].attention_bytes_per_sample = act1 / 3;
		m->types[0].attention_flops_per_sample = 1e9 * (1 + rnd(4));
		cl->peak_flops_per_s[m->precision] = 1e13;
		cl->compute_efficiency = 0.5;
	}
	*batch = rnd(2) ? 4 : 8;
	*uneven = (int)rnd(2);
	if (*uneven && rnd(2))
		*batch -= 1; /* 3 in 2 (2, 1); 7 in 3 (3, 3, 1) or 4 (2, 2, 2, 1) */
}

/*
 * Split number code (0 .. pp^L - 1) as stage[]: 1 when it is a contiguous split
 * into pp non-empty stages (stage[0] = 0, steps of 0 or 1, stage[L-1] = pp - 1).
 */
static int split_of(long code, int *stage, size_t L, int pp)
{
	size_t u;

	for (u = 0; u < L; u++) {
		stage[u] = (int)(code % pp);
		code /= pp;
	}
	if (stage[0] != 0 || stage[L - 1] != pp - 1)
		return 0;
	for (u = 1; u < L; u++)
		if (stage[u] != stage[u - 1] && stage[u] != stage[u - 1] + 1)
			return 0;
	return 1;
}

/* Brute force of target t over every candidate; INFINITY when no plan fits. */
static double brute_target_v(const struct cluster_profile *cl, const struct model_profile *m, long batch,
                             enum cost_schedule s, int vs, int recompute, int zero, int sp, int sel,
                             int uneven, enum target_kind t)
{
	size_t L = m->n_layers, u;
	double best = INFINITY;
	int pp, *stage = calloc(L, sizeof(*stage));
	size_t *strat = calloc(L, sizeof(*strat));
	long c;

	assert_non_null(stage);
	assert_non_null(strat);
	for (pp = 1; pp <= cluster_devices(cl); pp++) {
		if (cluster_devices(cl) % pp || (size_t)pp > L)
			continue;
		for (c = 1; c <= batch; c++) {
			/* the target's dictionary: the memory limit reserves FSDP's transient buffers
			 * only where the dictionary offers FSDP (docs/cost-model.md, "Memory");
			 * the rules themselves are target_check_plan's on every plan below */
			struct cost_options o = { .batch = batch, .pp = pp, .microbatches = c,
			                          .schedule = target_schedule(t, s), .virtual_stages = vs,
			                          .recompute = recompute,
			                          .zero = zero, .sp = sp, .selective = sel, .uneven = uneven,
			                          .keep = target_keep(t), .runtime = *target_runtime(t) };
			struct cost_candidate cand;
			struct uniap_err err;
			size_t K;
			long code, n_codes = 1;

			if ((uneven ? !cost_chunk_count(batch, c) : batch % c != 0) ||
			    cost_build(cl, m, &o, &cand, &err) != UNIAP_OK)
				continue;
			K = cost_k(&cand);
			for (u = 0; u < L; u++)
				n_codes *= cost_stages(&cand);
			for (code = 0; code < n_codes; code++) {
				if (!split_of(code, stage, L, cost_stages(&cand)))
					continue;
				memset(strat, 0, L * sizeof(*strat));
				for (;;) {
					struct uniap_err e2;

					if (target_check_plan(t, &cand, stage, strat, &e2) == UNIAP_OK) {
						double v = brute_tpi(&cand, stage, strat);

						if (v < best)
							best = v;
					}
					for (u = 0; u < L && ++strat[u] == K; u++)
						strat[u] = 0;
					if (u == L)
						break;
				}
			}
			cost_candidate_release(&cand);
		}
	}
	free(stage);
	free(strat);
	return best;
}

static double brute_target(const struct cluster_profile *cl, const struct model_profile *m, long batch,
                           enum cost_schedule s, int recompute, int zero, int sp, int sel,
                           int uneven, enum target_kind t)
{
	return brute_target_v(cl, m, batch, s, 0, recompute, zero, sp, sel, uneven, t);
}

static const enum exp_format target_format[TARGET_COUNT] = {
	[TARGET_ANY] = EXP_JSON, [TARGET_MEGATRON] = EXP_MEGATRON,
	[TARGET_DEEPSPEED] = EXP_DEEPSPEED, [TARGET_GALVATRON] = EXP_GALVATRON,
};

static void test_matches_brute_force(void **state)
{
	int trial, checked[TARGET_COUNT] = { 0 }, feasible[TARGET_COUNT] = { 0 }, zeroed = 0, sharded = 0;
	int selected = 0;

	(void)state;
	for (trial = 0; trial < 48; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		enum cost_schedule s = rnd(2) ? COST_1F1B : COST_GPIPE;
		long batch;
		int recompute, zero, sp, sel, uneven, t;

		random_instance(&cl, &m, &batch, &recompute, &zero, &sp, &sel, &uneven);
		for (t = TARGET_MEGATRON; t < TARGET_COUNT; t++) {
			struct uop_options o;
			struct uop_result r;
			struct uniap_err err;
			double expect = brute_target(&cl, &m, batch, s, recompute, zero, sp, sel, uneven,
			                             (enum target_kind)t);

			uop_options_init(&o);
			o.batch = batch;
			o.schedule = s;
			o.recompute = recompute;
			o.zero = zero;
			o.sp = sp;
			o.selective = sel;
			o.uneven = uneven;
			o.target = (enum target_kind)t;
			o.threads = 2;
			o.inline_solve = trial % 2;
			o.time_limit_s = 60;
			if (target_rules((enum target_kind)t)->needs_shape && !m.shape.known) {
				/* a model without its shape: the runtime cannot build it, said at once */
				assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_E_INVALID);
				assert_non_null(strstr(err.msg, "model.shape"));
				continue;
			}
			assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
			checked[t]++;
			if (isinf(expect)) {
				if (r.best >= 0)
					fail_msg("trial %d target %s: planner %.17g, brute force none", trial,
					         target_name((enum target_kind)t), r.eval.tpi_s);
			} else {
				char *out = NULL, why[256];
				size_t len = 0;

				feasible[t]++;
				for (size_t u = 0; r.best >= 0 && u < m.n_layers; u++)
					if (r.cand.strategies.items[r.strategy[u]].zero) {
						zeroed++;
						break;
					}
				for (size_t u = 0; r.best >= 0 && u < m.n_layers; u++)
					if (r.cand.strategies.items[r.strategy[u]].sp) {
						sharded++;
						break;
					}
				for (size_t u = 0; r.best >= 0 && u < m.n_layers; u++)
					if (r.cand.strategies.items[r.strategy[u]].selective) {
						selected++;
						break;
					}
				if (r.best >= 0 && target_check_plan((enum target_kind)t, &r.cand, r.stage, r.strategy, &err) != UNIAP_OK)
					fail_msg("trial %d target %s: the plan breaks a rule: %s", trial,
					         target_name((enum target_kind)t), err.msg);
				if (r.best < 0 || fabs(r.eval.tpi_s - expect) > 1e-9 * expect)
					fail_msg("trial %d target %s: planner %.17g, brute force %.17g", trial,
					         target_name((enum target_kind)t), r.best < 0 ? INFINITY : r.eval.tpi_s,
					         expect);
				assert_true(r.optimal);
				assert_int_equal(r.cand.schedule, target_schedule((enum target_kind)t, s));
				if (target_check_plan((enum target_kind)t, &r.cand, r.stage, r.strategy, &err) != UNIAP_OK)
					fail_msg("trial %d target %s: the plan breaks a rule: %s", trial,
					         target_name((enum target_kind)t), err.msg);
				if (exp_plan(target_format[t], &m, &r.cand, r.stage, r.strategy, &r.eval, &out, &len, &err) !=
				    UNIAP_OK)
					fail_msg("trial %d target %s: the export refuses the target's plan: %s", trial,
					         target_name((enum target_kind)t), err.msg);
				if (runtime_check_export(target_format[t], out, why, sizeof(why)) != 0)
					fail_msg("trial %d target %s: %s in\n%s", trial, target_name((enum target_kind)t), why,
					         out);
				free(out);
			}
			uop_result_release(&r);
		}
		model_release(&m);
		cluster_release(&cl);
	}
	/* some optima shard with ZeRO-1/2, some the sequence, and they export */
	assert_true(zeroed > 0);
	(void)sharded;
	(void)selected; /* test_variants_win makes sure of those */
	/* the trials reach every target with and without a feasible plan */
	for (trial = TARGET_MEGATRON; trial < TARGET_COUNT; trial++) {
		assert_true(feasible[trial] > 0);
		assert_true(feasible[trial] < checked[trial]);
	}
}

/* target_solve on one candidate equals brute force on that candidate, DAG and chain. */
/*
 * Interleaved 1F1B on 6-layer models (embedding, 4 blocks, head) on 2 devices:
 * for every target the planner's optimum equals brute force over every
 * candidate, split into pp v stages and strategy vector that the target's
 * rules accept; Megatron-LM's is its equal chunks (one block per chunk at
 * pp 2, v 2) and exports with --num-layers-per-virtual-pipeline-stage, the
 * others plan their plain 1F1B.
 */
static void test_interleaved(void **state)
{
	static const int devs2[] = { 2 };
	static const double bws[][1] = { { 10 }, { 0.05 } }; /* a slow link: no data parallelism */
	int trial, vpp = 0;

	(void)state;
	for (trial = 0; trial < 12; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		long batch = rnd(2) ? 4 : 8;
		int t, rc = (int)rnd(2);

		assert_int_equal(fx_cluster(&cl, 1, 2, devs2, bws[trial % 2], 1, rnd(3) == 0 ? 2.2e8 : 64e9, 0,
		                            1 + rnd(4) * 0.2), 0);
		assert_int_equal(fx_model_chain(&m, 6, rnd(2) ? MODEL_MIXED : MODEL_FP32, 1e-3 * (1 + rnd(9)),
		                                rnd(2) ? 7e-4 : 0, 1e6 * (1 + rnd(30)), 1e7 * (1 + rnd(9)), 0,
		                                2e5 * (1 + rnd(9)), 1e6),
		                 0);
		if (rnd(2))
			assert_int_equal(fx_model_add_edge(&m, 0, 5), 0); /* tied embedding: over every stage */
		fx_model_shape(&m, 1024, 16);
		for (t = 0; t < TARGET_COUNT; t++) {
			struct uop_options o;
			struct uop_result r;
			struct uniap_err err;
			double expect = brute_target_v(&cl, &m, batch, COST_INTERLEAVED, 2, rc, 0, 0, 0, 0,
			                               (enum target_kind)t);

			uop_options_init(&o);
			o.batch = batch;
			o.schedule = COST_INTERLEAVED;
			o.virtual_stages = 2;
			o.recompute = rc;
			o.target = (enum target_kind)t;
			o.threads = 2;
			o.inline_solve = trial % 2;
			assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
			if (isinf(expect)) {
				assert_true(r.best < 0);
			} else {
				char *out = NULL, why[256];
				size_t len = 0;

				if (r.best < 0 || fabs(r.eval.tpi_s - expect) > 1e-9 * expect)
					fail_msg("trial %d target %s: planner %.17g, brute force %.17g", trial,
					         target_name((enum target_kind)t), r.best < 0 ? INFINITY : r.eval.tpi_s,
					         expect);
				assert_true(r.optimal);
				assert_int_equal(target_check_plan((enum target_kind)t, &r.cand, r.stage, r.strategy, &err),
				                 UNIAP_OK);
				if (cost_virtual(&r.cand) > 1) {
					vpp++;
					assert_true(t == TARGET_ANY || t == TARGET_MEGATRON);
				}
				if (t != TARGET_ANY) {
					assert_int_equal(exp_plan(target_format[t], &m, &r.cand, r.stage, r.strategy, &r.eval,
					                          &out, &len, &err), UNIAP_OK);
					if (runtime_check_export(target_format[t], out, why, sizeof(why)) != 0)
						fail_msg("trial %d target %s: %s in\n%s", trial,
						         target_name((enum target_kind)t), why, out);
					if (t == TARGET_MEGATRON && cost_virtual(&r.cand) > 1)
						assert_non_null(strstr(out, "--num-layers-per-virtual-pipeline-stage 1\n"));
					free(out);
				}
			}
			uop_result_release(&r);
		}
		model_release(&m);
		cluster_release(&cl);
	}
	assert_true(vpp > 0); /* some optima interleave */
}

/*
 * Megatron-LM's chunks that count the embedding and the head as layers
 * (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-
 * split): an 8-layer model (6 blocks) in 4 chunks, which 6 blocks alone cannot
 * fill evenly, is planned as [embedding, block] [2 blocks] [2 blocks] [block,
 * head] and exports with both flags and 2 layers per chunk; a split neither
 * rule gives is refused, naming the stage.
 */
static void test_megatron_counted_chunks(void **state)
{
	static const int devs2[] = { 2 };
	static const double bws[] = { 10 }, slow[] = { 0.05 };
	static const size_t even[] = { 2, 2, 2 }, counted[] = { 1, 2, 2, 1 }, other[] = { 1, 2, 3, 1 };
	static const int expect_stage[] = { 0, 0, 1, 1, 2, 2, 3, 3 }, bad_stage[] = { 0, 0, 1, 1, 1, 2, 3, 3 };
	struct cluster_profile cl;
	struct model_profile m;
	struct uop_options o;
	struct uop_result r;
	struct uniap_err err;
	char *out = NULL, why[256];
	size_t len = 0, u;
	int found_v = 0, saved[8];

	(void)state;
	assert_int_equal(target_megatron_chunks(even, 3), 1);
	assert_int_equal(target_megatron_chunks(counted, 4), 2);
	assert_int_equal(target_megatron_chunks(other, 4), 0);
	assert_int_equal(fx_cluster(&cl, 1, 2, devs2, bws, 1, 64e9, 0, 1.0), 0);
	assert_int_equal(fx_model_chain(&m, 8, MODEL_MIXED, 1e-3, 0, 1e6, 1e7, 0, 2e5, 1e6), 0);
	fx_model_shape(&m, 1024, 16);
	uop_options_init(&o);
	o.batch = 8;
	o.schedule = COST_INTERLEAVED;
	o.target = TARGET_MEGATRON;
	o.threads = 2;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
	/* at pp 2, v 2 (4 chunks of 2 layers, counted) and v 3 (6 chunks of 1 block) are
	 * candidates; v 4 (8 chunks of 1 layer: an embedding alone) and past it are not */
	for (u = 0; u < r.n_candidates; u++)
		found_v |= (r.candidates[u].virtual_stages == 2) << 0 | (r.candidates[u].virtual_stages == 3) << 1;
	assert_int_equal(found_v, 3);
	for (u = 0; u < r.n_candidates; u++)
		assert_true(r.candidates[u].virtual_stages <= 3);
	assert_true(r.best >= 0);
	uop_result_release(&r);
	cluster_release(&cl);
	/* a slow link (no data or tensor parallelism pays) and v 2: the counted chunks win */
	assert_int_equal(fx_cluster(&cl, 1, 2, devs2, slow, 1, 64e9, 0, 1.0), 0);
	o.virtual_stages = 2;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
	assert_true(r.best >= 0);
	assert_int_equal(cost_virtual(&r.cand), 2);
	for (u = 0; u < 8; u++)
		assert_int_equal(r.stage[u], expect_stage[u]);
	assert_int_equal(exp_plan(EXP_MEGATRON, &m, &r.cand, r.stage, r.strategy, &r.eval, &out, &len, &err),
	                 UNIAP_OK);
	assert_non_null(strstr(out, "--num-layers 6\n--num-layers-per-virtual-pipeline-stage 2\n"
	                            "--account-for-embedding-in-pipeline-split\n"
	                            "--account-for-loss-in-pipeline-split\n"));
	if (runtime_check_export(EXP_MEGATRON, out, why, sizeof(why)) != 0)
		fail_msg("%s in\n%s", why, out);
	free(out);
	memcpy(saved, r.stage, sizeof(saved));
	memcpy(r.stage, bad_stage, sizeof(bad_stage));
	assert_int_equal(target_check_plan(TARGET_MEGATRON, &r.cand, r.stage, r.strategy, &err), UNIAP_E_INVALID);
	if (!strstr(err.msg, "stages[1]: megatron-lm's --num-layers-per-virtual-pipeline-stage"))
		fail_msg("%s", err.msg);
	memcpy(r.stage, saved, sizeof(saved));
	uop_result_release(&r);
	model_release(&m);
	cluster_release(&cl);
}

static void test_galvatron_candidate(void **state)
{
	static const int dev[] = { 2, 4 };
	static const double bw[] = { 10, 2 };
	int trial;

	(void)state;
	for (trial = 0; trial < 12; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct cost_options co = { .batch = 8, .pp = 1 + (int)rnd(2), .microbatches = 2,
		                           .schedule = COST_GPIPE, .zero = trial % 3 == 1,
		                           .keep = target_keep(TARGET_GALVATRON) };
		struct cost_candidate cand;
		struct opt_result r;
		struct uniap_err err;
		double expect;

		assert_int_equal(fx_cluster(&cl, 1, 4, dev, bw, 2, 64e9, 0, 1.2), 0);
		assert_int_equal(fx_model_chain(&m, 4, MODEL_FP32, 1e-3 * (1 + rnd(9)), 7e-4, 1e6 * (1 + rnd(30)),
		                                1e7, 5e6, 2e5 * (1 + rnd(9)), 1e6), 0);
		if (trial % 2)
			assert_int_equal(fx_model_add_edge(&m, 0, 3), 0);
		expect = brute_target(&cl, &m, 8, COST_GPIPE, 0, co.zero, 0, 0, 0, TARGET_GALVATRON);
		assert_int_equal(cost_build(&cl, &m, &co, &cand, &err), UNIAP_OK);
		assert_int_equal(target_solve(TARGET_GALVATRON, &cand, NULL, &r, &err), UNIAP_OK);
		if (r.status == OPT_OPTIMAL) {
			assert_true(r.tpi_s >= expect * (1 - 1e-9));
			assert_int_equal(target_check_plan(TARGET_GALVATRON, &cand, r.stage, r.strategy, &err), UNIAP_OK);
			assert_true(fabs(opt_tpi(&cand, r.stage, r.strategy) - r.tpi_s) <= 1e-12 * r.tpi_s);
		} else {
			assert_int_equal(r.status, OPT_INFEASIBLE);
		}
		/* one-strategy targets are enumerated by the planner, not solved */
		assert_int_equal(target_solve(TARGET_MEGATRON, &cand, NULL, &r, &err), UNIAP_E_ARG);
		opt_result_release(&r);
		cost_candidate_release(&cand);
		model_release(&m);
		cluster_release(&cl);
	}
}

/*
 * Where memory leaves no other way, the optimum is the variant: three layers
 * on 2 devices whose activations at tp 2 keep 0.8 of tp 1's (replicated
 * norms) fit only with sequence parallelism, or only recomputing the
 * attention core; the planner finds it under megatron and any, equal to
 * brute force, and it exports with Megatron-LM's flag.
 */
static void test_variants_win(void **state)
{
	static const int devs2[] = { 2 };
	static const double bw[] = { 10 };
	static const struct {
		int sp, sel;
		double mem;
		const char *suffix, *flag;
	} cases[] = {
		{ 1, 0, 1.0e8, "+sp", "--sequence-parallel" },
		{ 0, 1, 1.05e8, "+sel", "--recompute-granularity selective" },
	};
	size_t i, u;
	int t;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cluster_profile cl;
		struct model_profile m;

		assert_int_equal(fx_cluster(&cl, 1, 2, devs2, bw, 1, cases[i].mem, 0, 1.0), 0);
		assert_int_equal(fx_model_chain(&m, 3, MODEL_FP32, 1e-3, 6e-4, 1e6, 4e7, 3.2e7, 1e5, 1e6), 0);
		fx_model_shape(&m, 1024, 16);
		m.types[0].attention_bytes_per_sample = 4e7 / 3;
		m.types[0].attention_flops_per_sample = 1e9;
		cl.peak_flops_per_s[MODEL_FP32] = 1e13;
		cl.compute_efficiency = 0.5;
		for (t = TARGET_ANY; t <= TARGET_MEGATRON; t++) {
			struct uop_options o;
			struct uop_result r;
			struct uniap_err err;
			char *out = NULL;
			size_t len = 0;
			double expect = brute_target(&cl, &m, 4, COST_1F1B, 0, 0, cases[i].sp, cases[i].sel, 0,
			                             (enum target_kind)t);

			uop_options_init(&o);
			o.batch = 4;
			o.schedule = COST_1F1B;
			o.sp = cases[i].sp;
			o.selective = cases[i].sel;
			o.target = (enum target_kind)t;
			o.threads = 2;
			o.inline_solve = 1;
			assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
			assert_true(r.best >= 0 && r.optimal);
			assert_true(isfinite(expect) && fabs(r.eval.tpi_s - expect) <= 1e-9 * expect);
			for (u = 0; u < m.n_layers; u++)
				if (!strstr(r.cand.strategies.items[r.strategy[u]].name, cases[i].suffix))
					fail_msg("case %zu target %s: layer %zu uses %s, not a %s strategy", i,
					         target_name((enum target_kind)t), u, r.cand.strategies.items[r.strategy[u]].name,
					         cases[i].suffix);
			if (t == TARGET_MEGATRON) {
				assert_int_equal(exp_plan(EXP_MEGATRON, &m, &r.cand, r.stage, r.strategy, &r.eval, &out, &len,
				                          &err), UNIAP_OK);
				assert_non_null(strstr(out, cases[i].flag));
				free(out);
			}
			uop_result_release(&r);
			/* without the variant nothing fits */
			o.sp = o.selective = 0;
			assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
			assert_true(r.best < 0);
			uop_result_release(&r);
		}
		model_release(&m);
		cluster_release(&cl);
	}
}

/* The rules name what they refuse. */
static void test_refusals(void **state)
{
	static const int dev[] = { 2, 4 };
	static const double bw[] = { 10, 2 };
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_options co = { .batch = 8, .pp = 2, .microbatches = 2, .schedule = COST_GPIPE };
	struct cost_candidate cand;
	struct uniap_err err;
	int stage[6] = { 0, 0, 0, 1, 1, 1 };
	size_t strat[6], u;
	long dp2 , tp2;

	(void)state;
	assert_int_equal(fx_cluster(&cl, 1, 4, dev, bw, 2, 64e9, 0, 1.2), 0);
	assert_int_equal(fx_model_chain(&m, 6, MODEL_FP32, 1e-3, 7e-4, 1e6, 1e7, 5e6, 2e5, 1e6), 0);
	assert_int_equal(cost_build(&cl, &m, &co, &cand, &err), UNIAP_OK);
	dp2 = strategy_find(&cand.strategies, "dp2");
	tp2 = strategy_find(&cand.strategies, "tp2");
	assert_true(dp2 >= 0 && tp2 >= 0);
	for (u = 0; u < 6; u++)
		strat[u] = (size_t)dp2;
	/* GPipe: Megatron-LM runs 1F1B, the export does not mind */
	assert_int_equal(target_check_plan(TARGET_MEGATRON, &cand, stage, strat, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "schedule"));
	assert_int_equal(target_check_export(TARGET_MEGATRON, &cand, stage, strat, &err), UNIAP_OK);
	/* Galvatron accepts any split with a transformer layer per stage; DeepSpeed only its own */
	stage[2] = 1;
	assert_int_equal(target_check_plan(TARGET_GALVATRON, &cand, stage, strat, &err), UNIAP_OK);
	assert_int_equal(target_check_plan(TARGET_DEEPSPEED, &cand, stage, strat, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "partition_uniform") ? err.msg : strstr(err.msg, "uniform"));
	/* the head in another class than the embedding */
	strat[5] = (size_t)tp2;
	assert_int_equal(target_check_plan(TARGET_GALVATRON, &cand, stage, strat, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "layers[5]"));
	assert_non_null(strstr(err.msg, "embed_sdp"));
	cost_candidate_release(&cand);

	/* ZeRO: Megatron-LM shards the optimizer only; DeepSpeed's pipeline runs stages 0-1;
	 * Galvatron has no ZeRO-1 and one type (ddp or zero2) for every replicated layer */
	co.zero = 1;
	co.schedule = COST_1F1B;
	assert_int_equal(cost_build(&cl, &m, &co, &cand, &err), UNIAP_OK);
	{
		long z1 = strategy_find(&cand.strategies, "dp2+z1"), z2 = strategy_find(&cand.strategies, "dp2+z2");
		long plain = strategy_find(&cand.strategies, "dp2");
		int split[6] = { 0, 0, 0, 1, 1, 1 };

		assert_true(z1 >= 0 && z2 >= 0 && plain >= 0);
		for (u = 0; u < 6; u++)
			strat[u] = (size_t)z1;
		assert_int_equal(target_check_plan(TARGET_MEGATRON, &cand, split, strat, &err), UNIAP_OK);
		assert_int_equal(target_check_plan(TARGET_DEEPSPEED, &cand, split, strat, &err), UNIAP_OK);
		assert_int_equal(target_check_plan(TARGET_GALVATRON, &cand, split, strat, &err), UNIAP_E_INVALID);
		assert_non_null(strstr(err.msg, "not zero-1"));
		for (u = 0; u < 6; u++)
			strat[u] = (size_t)z2;
		assert_int_equal(target_check_plan(TARGET_MEGATRON, &cand, split, strat, &err), UNIAP_E_INVALID);
		assert_non_null(strstr(err.msg, "not the gradients (zero-2)"));
		assert_int_equal(target_check_plan(TARGET_DEEPSPEED, &cand, split, strat, &err), UNIAP_E_INVALID);
		assert_non_null(strstr(err.msg, "zero stages 0 and 1 only"));
		assert_int_equal(target_check_plan(TARGET_GALVATRON, &cand, split, strat, &err), UNIAP_OK);
		strat[3] = (size_t)plain;
		assert_int_equal(target_check_plan(TARGET_GALVATRON, &cand, split, strat, &err), UNIAP_E_INVALID);
		assert_non_null(strstr(err.msg, "layers[3]"));
		assert_non_null(strstr(err.msg, "default_dp_type"));
		/* layers without replicas take no part in the rule */
		strat[3] = (size_t)tp2;
		assert_true(strategy_find(&cand.strategies, "tp2") == tp2);
		assert_int_equal(target_check_plan(TARGET_GALVATRON, &cand, split, strat, &err), UNIAP_OK);
	}
	cost_candidate_release(&cand);
	model_release(&m);
	cluster_release(&cl);
}

/*
 * Galvatron's own memory admission (its search engine: 20 % of a budget above
 * 20 GB kept for the allocator's cache, 1024 MB of PyTorch context): the
 * galvatron target plans within it and its export refuses a plan beyond it.
 */
static void test_admission(void **state)
{
	static const int dev[] = { 2, 4 };
	static const double bw[] = { 10, 2 };
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_options co = { .batch = 8, .pp = 2, .microbatches = 2, .schedule = COST_GPIPE };
	struct cost_candidate cand;
	struct cost_keep keep = target_keep(TARGET_GALVATRON), none = target_keep(TARGET_MEGATRON);
	struct uniap_err err;
	int stage[6] = { 0, 0, 0, 1, 1, 1 };
	size_t strat[6], u, K;
	double worst = 0, gib = 1 << 30;
	long dp2;
	int d;

	(void)state;
	/* 0.8 x 80 GiB - 1 GiB; a 16 GiB device keeps no cache share: 16 - 1 */
	assert_true(fabs(cost_admission_bytes(&keep, 80 * gib) - 63 * gib) < 1);
	assert_true(fabs(cost_admission_bytes(&keep, 16 * gib) - 15 * gib) < 1);
	assert_true(isinf(cost_admission_bytes(&none, 80 * gib)));
	assert_int_equal(fx_cluster(&cl, 1, 4, dev, bw, 2, 80 * gib, 0, 1.2), 0);
	assert_int_equal(fx_model_chain(&m, 6, MODEL_FP32, 1e-3, 7e-4, 1e6, 1e7, 5e6, 2e5, 1e6), 0);
	/* the target's candidates take the tighter of the two limits */
	co.keep = keep;
	assert_int_equal(cost_build(&cl, &m, &co, &cand, &err), UNIAP_OK);
	assert_true(cand.memory_limit_bytes <= 63 * gib + 1);
	cost_candidate_release(&cand);
	co.keep = (struct cost_keep){ 0 };
	assert_int_equal(cost_build(&cl, &m, &co, &cand, &err), UNIAP_OK);
	assert_true(cand.memory_limit_bytes > 63 * gib);
	dp2 = strategy_find(&cand.strategies, "dp2");
	assert_true(dp2 >= 0);
	K = cost_k(&cand);
	for (u = 0; u < 6; u++)
		strat[u] = (size_t)dp2;
	for (d = 0; d < 2; d++) {
		double sum = 0;

		for (u = 0; u < 6; u++)
			if (stage[u] == d)
				sum += cand.memory_fixed_bytes[u * K + strat[u]] +
				       (double)cand.inflight[d] * cand.memory_per_microbatch_bytes[u * K + strat[u]];
		worst = sum > worst ? sum : worst;
	}
	assert_int_equal(target_check_export(TARGET_GALVATRON, &cand, stage, strat, &err), UNIAP_OK);
	/* a device too small for the admission (but not for the device's own limit) */
	cand.device_memory_bytes = gib + 0.5 * worst;
	assert_int_equal(target_check_export(TARGET_GALVATRON, &cand, stage, strat, &err), UNIAP_E_INFEASIBLE);
	assert_non_null(strstr(err.msg, "stage 0"));
	assert_non_null(strstr(err.msg, "memory admission"));
	assert_non_null(strstr(err.msg, "dynamic_programming.py"));
	/* other runtimes have no such rule */
	assert_int_equal(target_check_export(TARGET_DEEPSPEED, &cand, stage, strat, &err) == UNIAP_E_INFEASIBLE, 0);
	cand.device_memory_bytes = gib + 2 * worst;
	assert_int_equal(target_check_export(TARGET_GALVATRON, &cand, stage, strat, &err), UNIAP_OK);
	cost_candidate_release(&cand);
	model_release(&m);
	cluster_release(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_galvatron_candidate),
		cmocka_unit_test(test_matches_brute_force),
		cmocka_unit_test(test_interleaved),
		cmocka_unit_test(test_megatron_counted_chunks),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_variants_win),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
