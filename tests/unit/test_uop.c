/*
 * test_uop.c - the unified optimization process end to end on the cost
 * model: on small random models (chains, skip edges, tight and loose memory,
 * both schedules) the planner's best TPI equals brute force over every
 * candidate (pp, c) and every plan; worker-process solving gives the same
 * answers as inline solving; the search spaces keep to their rules; a cancel
 * stops the run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brute.h"
#include "cost.h"
#include "fixtures.h"
#include "uop.h"

static unsigned long rng = 424242;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005UL + 1442695040888963407UL;
	return (unsigned)((rng >> 33) % n);
}

/* A random 2-device-per-stage-or-less instance small enough for brute force. */
static void random_instance_at(struct cluster_profile *cl, struct model_profile *m, long *batch,
                               size_t min_layers, int two_only)
{
	static const int dev[] = { 2, 4 };
	static const double bw[] = { 10, 2 };
	static const int devs2[] = { 2 };
	size_t L = 2 + rnd(3);
	int four = (int)rnd(2) && !two_only;
	double mem = rnd(3) == 0 ? 2.2e8 : 64e9; /* tight or loose */

	if (L < min_layers)
		L = min_layers + rnd(2);
	if (four)
		assert_int_equal(fx_cluster(cl, 1, 4, dev, bw, 2, mem, 0, 1 + rnd(4) * 0.2), 0);
	else
		assert_int_equal(fx_cluster(cl, 1, 2, devs2, bw, 1, mem, 0, 1 + rnd(4) * 0.2), 0);
	assert_int_equal(fx_model_chain(m, L, rnd(2) ? MODEL_MIXED : MODEL_FP32,
	                                1e-3 * (1 + rnd(9)), rnd(2) ? 7e-4 : 0, 1e6 * (1 + rnd(30)),
	                                1e7 * (1 + rnd(9)), rnd(2) ? 5e6 : 0, 2e5 * (1 + rnd(9)),
	                                1e6), 0);
	if (L > 2 && rnd(2))
		assert_int_equal(fx_model_add_edge(m, 0, L - 1), 0);
	if (rnd(2)) {
		/* the fidelity terms (docs/cost-model.md): latencies, a shared link,
		 * a fixed time per pass, the optimizer step, margin and fragmentation */
		cl->levels[0].latency_s = 1e-6 * rnd(20);
		cl->levels[cl->n_levels - 1].latency_s = 1e-5 * rnd(5);
		if (four)
			cl->levels[1].shared_by = 1 + (int)rnd(2);
		cl->memory_bandwidth_bytes_per_s = 1e11 * (1 + rnd(10));
		cl->memory_margin = 0.02 * rnd(3);
		cl->memory_fragmentation = 0.05 * rnd(3);
		m->types[0].forward_fixed_s = 1e-4 * rnd(20);
	}
	*batch = rnd(2) ? 4 : 8;
}

static void random_instance(struct cluster_profile *cl, struct model_profile *m, long *batch)
{
	random_instance_at(cl, m, batch, 0, 0);
}

/* Brute force over every candidate of the unified space. */
static double brute_space_v(const struct cluster_profile *cl, const struct model_profile *m,
                            long batch, enum cost_schedule s, int vs, int zero, int sp, int sel, int uneven)
{
	double best = INFINITY;
	int pp;
	long c;

	for (pp = 1; pp <= cluster_devices(cl); pp++) {
		if (cluster_devices(cl) % pp || (size_t)pp > m->n_layers)
			continue;
		for (c = 1; c <= batch; c++) {
			struct cost_options o = { .batch = batch, .pp = pp, .microbatches = c,
			                          .schedule = s, .virtual_stages = vs, .zero = zero, .sp = sp,
			                          .selective = sel, .uneven = uneven,
			                          /* the runtime the planner prices plans of no target for */
			                          .runtime = *target_runtime(TARGET_ANY) };
			struct cost_candidate cand;
			struct uniap_err err;
			double v;

			if (uneven ? !cost_chunk_count(batch, c) : batch % c != 0)
				continue;
			if (cost_build(cl, m, &o, &cand, &err) != UNIAP_OK)
				continue;
			assert_int_equal(brute_solve(&cand, &v, NULL, NULL, NULL), 0);
			if (v < best)
				best = v;
			cost_candidate_release(&cand);
		}
	}
	return best;
}

static double brute_space(const struct cluster_profile *cl, const struct model_profile *m,
                          long batch, enum cost_schedule s, int zero, int sp, int sel, int uneven)
{
	return brute_space_v(cl, m, batch, s, 0, zero, sp, sel, uneven);
}

static void run_v(const struct cluster_profile *cl, const struct model_profile *m, long batch,
                  enum cost_schedule s, int vs, enum uop_space space, int inline_solve, int zero, int sp,
                  int sel, int uneven, struct uop_result *r)
{
	struct uop_options o;
	struct uniap_err err;

	uop_options_init(&o);
	o.zero = zero;
	o.sp = sp;
	o.selective = sel;
	o.uneven = uneven;
	o.batch = batch;
	o.schedule = s;
	o.virtual_stages = vs;
	o.space = space;
	o.threads = 2;
	o.inline_solve = inline_solve;
	o.time_limit_s = 60;
	assert_int_equal(uop_run(cl, m, &o, NULL, r, &err), UNIAP_OK);
}

static void run_zero(const struct cluster_profile *cl, const struct model_profile *m, long batch,
                     enum cost_schedule s, enum uop_space space, int inline_solve, int zero, int sp,
                     int sel, int uneven, struct uop_result *r)
{
	run_v(cl, m, batch, s, 0, space, inline_solve, zero, sp, sel, uneven, r);
}

/* The run's best plan is brute force's optimum expect, proven, valid and within memory. */
static void assert_brute_optimum(const struct uop_result *r, double expect)
{
	if (isinf(expect)) {
		assert_true(r->best < 0);
		return;
	}
	assert_true(r->best >= 0);
	assert_true(r->optimal);
	assert_true(fabs(r->eval.tpi_s - expect) <= 1e-9 * expect);
	assert_true(r->eval.valid && r->eval.fits);
	assert_true(r->bound_s <= r->eval.tpi_s * (1 + 1e-12));
}

static void run(const struct cluster_profile *cl, const struct model_profile *m, long batch,
                enum cost_schedule s, enum uop_space space, int inline_solve,
                struct uop_result *r)
{
	run_zero(cl, m, batch, s, space, inline_solve, 0, 0, 0, 0, r);
}

/* With and without the ZeRO-1/2 variants (every third trial), sequence
 * parallelism (every other trial) and selective recomputation (of a layer
 * with an attention core; every fifth trial) and uneven micro-batches (odd
 * batches, half the trials), alone and together. */
static void test_matches_brute_force(void **state)
{
	int trial;

	(void)state;
	for (trial = 0; trial < 60; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct uop_result r;
		enum cost_schedule s = rnd(2) ? COST_1F1B : COST_GPIPE;
		long batch;
		double expect;

		random_instance(&cl, &m, &batch);
		if (trial % 5 == 4) {
			/* an attention core a third of the activations, priced at a peak */
			m.types[0].attention_bytes_per_sample = model_tp_lookup(m.types[0].activation_bytes,
			                                                        m.types[0].n_activation_bytes, 1) / 3;
			m.types[0].attention_flops_per_sample = 1e9;
			cl.peak_flops_per_s[m.precision] = 1e13;
			cl.compute_efficiency = 0.5;
		}
		if (trial % 6 >= 3)
			batch = batch == 8 ? 7 : 5; /* uneven: 7 in 3 (3, 3, 1) or 4; 5 in 3 (2, 2, 1) */
		expect = brute_space(&cl, &m, batch, s, trial % 3 == 2, trial % 4 >= 2, trial % 5 == 4, trial % 6 >= 3);
		run_zero(&cl, &m, batch, s, UOP_SPACE_UNIFIED, trial % 2, trial % 3 == 2, trial % 4 >= 2,
		         trial % 5 == 4, trial % 6 >= 3, &r);
		assert_brute_optimum(&r, expect);
		uop_result_release(&r);
		model_release(&m);
		cluster_release(&cl);
	}
}

/*
 * The makespan objective (uop_options.makespan): the planner's best 1F1B plan
 * by its iteration as run, and every third trial its best interleaved one (v 2,
 * the list schedule), equals brute force over every candidate with schedsim's
 * layout as the oracle (brute.c), in workers and inline; the candidates'
 * bounds are the makespan's, so none prunes a better plan; and a 1F1B plan's
 * formula is never below its makespan.
 */
static void test_makespan_matches_brute_force(void **state)
{
	int trial, shorter = 0, longer = 0, checked[2] = { 0, 0 };

	(void)state;
	for (trial = 0; trial < 36; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct uop_result r;
		struct uop_options o;
		struct uniap_err err;
		long batch, c;
		double expect = INFINITY;
		int pp;

		int il = trial % 3 == 2;
		enum cost_schedule s = il ? COST_INTERLEAVED : COST_1F1B;

		random_instance_at(&cl, &m, &batch, il ? 4 : 3, il);
		for (pp = 1; pp <= cluster_devices(&cl); pp++) {
			if (cluster_devices(&cl) % pp || (size_t)pp * (il && pp > 1 ? 2 : 1) > m.n_layers)
				continue;
			for (c = 1; c <= batch; c++) {
				struct cost_options co = { .batch = batch, .pp = pp, .microbatches = c,
				                           .schedule = s, .virtual_stages = 2, .makespan = 1,
				                           .runtime = *target_runtime(TARGET_ANY) };
				struct cost_candidate cand;
				double v;

				if (batch % c != 0 || (il && pp > 1 && c % pp != 0) ||
				    cost_build(&cl, &m, &co, &cand, &err) != UNIAP_OK)
					continue;
				assert_int_equal(brute_solve(&cand, &v, NULL, NULL, NULL), 0);
				expect = fmin(expect, v);
				if (pp > 1) {
					/* each pipelined candidate's own optimum, on the MILP's makespan rows */
					struct opt_result res;
					struct opt_options oo;

					opt_options_init(&oo);
					oo.time_limit_s = 60;
					assert_int_equal(opt_solve(&cand, &oo, &res, &err), UNIAP_OK);
					if (isinf(v) ? res.status != OPT_INFEASIBLE
					             : res.status != OPT_OPTIMAL || fabs(res.tpi_s - v) > 1e-9 * v)
						fail_msg("trial %d pp %d c %ld: %s %.17g, brute force %.17g", trial, pp, c,
						         opt_status_name(res.status), res.tpi_s, v);
					checked[il]++;
					opt_result_release(&res);
				}
				cost_candidate_release(&cand);
			}
		}
		uop_options_init(&o);
		o.batch = batch;
		o.schedule = s;
		o.virtual_stages = il ? 2 : 0;
		o.makespan = 1;
		o.threads = 2;
		o.inline_solve = trial % 2;
		o.time_limit_s = 60;
		assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
		assert_brute_optimum(&r, expect);
		if (r.best >= 0 && !il) {
			assert_true(r.eval.tpi_s <= r.eval.formula_tpi_s * (1 + 1e-12));
			shorter += r.eval.tpi_s < r.eval.formula_tpi_s * (1 - 1e-9);
		}
		if (r.best >= 0 && il)
			longer += r.eval.tpi_s > r.eval.formula_tpi_s * (1 + 1e-9);
		uop_result_release(&r);
		model_release(&m);
		cluster_release(&cl);
	}
	/* pipelined 1F1B optima whose iteration as run is shorter than their formula */
	assert_true(shorter > 0);
	print_message("makespan: %d 1F1B optima shorter than their formula, %d interleaved longer; %d 1F1B and %d "
	              "interleaved pipelined candidates against brute force\n", shorter, longer, checked[0], checked[1]);
	assert_true(checked[0] > 0 && checked[1] > 0);
}

/*
 * Interleaved 1F1B (v = 2 or 3 model chunks per device): on random chains
 * of 4 to 7 layers, some with a skip edge over several stages, tight and
 * loose memory, with ZeRO-1/2, sequence parallelism or uneven micro-batches
 * in some trials, the planner's optimum equals
 * brute force over every candidate (c a multiple of pp, pp v <= layers) and
 * every split into pp v stages; and each candidate's MILP answer equals brute
 * force on its own matrices.
 */
/*
 * Interleaved memory is each rank's fullest moment (cost.h, peak rows): on
 * candidates whose memory limit lies between what the best plan needs under
 * that rule and what it needed under the old one (the sum of each chunk's own
 * peak), the MILP equals brute force under the exact rule (brute.c, its own
 * code), and on some of them the exact rule admits a faster plan than the old
 * one would, so a MILP that kept the old rows fails here.
 */
static void test_interleaved_peak_memory(void **state)
{
	int trial, differ = 0, solved = 0;

	(void)state;
	for (trial = 0; trial < 40; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct uniap_err err;
		long batch;
		int v = 2 + trial % 2;
		struct cost_options co;
		struct cost_candidate cand, old;
		struct opt_result res;
		double loose, exact, sum_rule, lo, hi;
		int k;

		random_instance_at(&cl, &m, &batch, (size_t)(2 * v), 1);
		memset(&co, 0, sizeof(co));
		co.batch = batch;
		co.pp = 2;
		co.microbatches = 2 * (1 + trial % 3); /* c > pp: the chunks peak apart */
		co.schedule = COST_INTERLEAVED;
		co.virtual_stages = v;
		if (co.microbatches > batch || cost_build(&cl, &m, &co, &cand, &err) != UNIAP_OK) {
			model_release(&m);
			cluster_release(&cl);
			continue;
		}
		assert_true(cand.n_peaks > 0);
		/* the same matrices under the old rule: no peak rows */
		old = cand;
		old.n_peaks = 0;
		old.peaks = NULL;
		cand.memory_limit_bytes = INFINITY;
		assert_int_equal(brute_solve(&cand, &loose, NULL, NULL, NULL), 0);
		/* bisect the limit at which the exact rule first admits the unconstrained optimum's
		 * speed, then pick a limit where the old rule is tighter */
		lo = 0;
		hi = 1e15;
		for (k = 0; k < 60; k++) {
			double mid = (lo + hi) / 2, b;

			cand.memory_limit_bytes = mid;
			assert_int_equal(brute_solve(&cand, &b, NULL, NULL, NULL), 0);
			if (b <= loose * (1 + 1e-12))
				hi = mid;
			else
				lo = mid;
		}
		cand.memory_limit_bytes = old.memory_limit_bytes = hi * (1 + 1e-9);
		assert_int_equal(brute_solve(&cand, &exact, NULL, NULL, NULL), 0);
		assert_int_equal(brute_solve(&old, &sum_rule, NULL, NULL, NULL), 0);
		assert_true(exact <= sum_rule * (1 + 1e-12)); /* the exact rule never charges more */
		differ += exact < sum_rule * (1 - 1e-9);
		assert_int_equal(opt_solve(&cand, NULL, &res, &err), UNIAP_OK);
		if (res.status == OPT_OPTIMAL) {
			assert_true(fabs(res.tpi_s - exact) <= 1e-9 * exact);
			assert_true(fabs(brute_tpi(&cand, res.stage, res.strategy) - res.tpi_s) <= 1e-12 * exact);
			solved++;
		} else {
			/* a MILP the certification refuses still may not beat brute force */
			assert_true(res.status == OPT_FEASIBLE && res.tpi_s >= exact * (1 - 1e-9));
		}
		opt_result_release(&res);
		cost_candidate_release(&cand);
		model_release(&m);
		cluster_release(&cl);
	}
	fprintf(stderr, "interleaved peak memory: %d proven, the exact rule faster than the sum rule on %d\n",
	        solved, differ);
	assert_true(solved > 0 && differ > 0);
}

static void test_interleaved_matches_brute_force(void **state)
{
	int trial, checked = 0;

	(void)state;
	for (trial = 0; trial < 24; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct uop_result r;
		struct uniap_err err;
		long batch;
		size_t i;
		int v = 2 + (trial % 4 == 3), pp, vs;
		double expect;

		/* pp v layers or one more for pp = 2; v = 3 on 2 devices (one strategy per stage),
		 * which keeps brute force over 6^7 splits small */
		random_instance_at(&cl, &m, &batch, (size_t)(2 * v), v == 3);
		/* with the other new dimensions: ZeRO-1/2, sequence parallelism, uneven micro-batches */
		if (trial % 5 == 4)
			batch = batch == 8 ? 7 : 5;
		expect = brute_space_v(&cl, &m, batch, COST_INTERLEAVED, v, trial % 3 == 1, trial % 4 == 2, 0,
		                       trial % 5 == 4);
		if (trial % 6 == 5) {
			/* no v given: the planner searches 2 to 4, brute force takes the least of them */
			for (vs = UOP_VIRTUAL_SEARCH_MIN; vs <= UOP_VIRTUAL_SEARCH_MAX; vs++)
				if (vs != v)
					expect = fmin(expect, brute_space_v(&cl, &m, batch, COST_INTERLEAVED, vs, trial % 3 == 1,
					                                    trial % 4 == 2, 0, trial % 5 == 4));
		}
		run_v(&cl, &m, batch, COST_INTERLEAVED, trial % 6 == 5 ? 0 : v, UOP_SPACE_UNIFIED, trial % 2,
		      trial % 3 == 1, trial % 4 == 2, 0, trial % 5 == 4, &r);
		assert_brute_optimum(&r, expect);
		if (r.best >= 0 && r.cand.pp > 1 && trial % 6 != 5) {
			assert_int_equal(r.cand.virtual_stages, v);
			assert_int_equal(r.eval.pp, r.cand.pp * v);
		}
		/* every interleaved candidate's stated bound is at most its own optimum, and an
		 * optimal one's plan is it (the bounds decide candidates: uop_lower_bound) */
		for (i = 0; i < r.n_candidates; i++) {
			const struct uop_candidate *uc = &r.candidates[i];
			struct cost_options co = { .batch = batch, .pp = uc->pp, .microbatches = uc->microbatches,
			                           .schedule = COST_INTERLEAVED, .virtual_stages = uc->virtual_stages,
			                           .zero = trial % 3 == 1, .sp = trial % 4 == 2,
			                           .uneven = trial % 5 == 4, .runtime = *target_runtime(TARGET_ANY) };
			struct cost_candidate cand;
			double b;

			if (uc->virtual_stages < 2 || cost_build(&cl, &m, &co, &cand, &err) != UNIAP_OK)
				continue;
			if (brute_solve(&cand, &b, NULL, NULL, NULL) == 0) {
				checked++;
				if (!(uc->bound_s <= b * (1 + 1e-9)))
					fail_msg("trial %d pp %d v %d c %ld: bound %.17g above the optimum %.17g (%s, %s)",
					         trial, uc->pp, uc->virtual_stages, uc->microbatches, uc->bound_s, b,
					         uc->status, uc->method);
				if (strcmp(uc->status, "optimal") == 0 && !(fabs(uc->tpi_s - b) <= 1e-9 * b))
					fail_msg("trial %d pp %d c %ld: optimal %.17g, brute force %.17g", trial, uc->pp,
					         uc->microbatches, uc->tpi_s, b);
			}
			cost_candidate_release(&cand);
		}
		/* every candidate with a pipeline: the MILP against brute force on its matrices */
		for (pp = 2; pp <= cluster_devices(&cl); pp *= 2) {
			struct cost_options co = { .batch = batch, .pp = pp, .microbatches = pp,
			                           .schedule = COST_INTERLEAVED, .virtual_stages = v,
			                           .zero = trial % 3 == 1, .sp = trial % 4 == 2,
			                           .uneven = trial % 5 == 4 };
			struct cost_candidate cand;
			struct opt_result res;
			double b;

			if (cost_build(&cl, &m, &co, &cand, &err) != UNIAP_OK)
				continue;
			assert_int_equal(brute_solve(&cand, &b, NULL, NULL, NULL), 0);
			assert_int_equal(opt_solve(&cand, NULL, &res, &err), UNIAP_OK);
			if (isinf(b)) {
				assert_int_equal(res.status, OPT_INFEASIBLE);
			} else {
				assert_int_equal(res.status, OPT_OPTIMAL);
				assert_true(fabs(res.tpi_s - b) <= 1e-9 * b);
				assert_true(fabs(brute_tpi(&cand, res.stage, res.strategy) - res.tpi_s) <= 1e-12 * b);
			}
			opt_result_release(&res);
			cost_candidate_release(&cand);
		}
		uop_result_release(&r);
		model_release(&m);
		cluster_release(&cl);
	}
	print_message("interleaved: %d candidates' bounds checked against brute force\n", checked);
	assert_true(checked >= 24);
}

/*
 * every_candidate: on random instances each candidate is solved to its own
 * optimum (brute force on its own matrices), none is pruned, and the best plan
 * is the one the usual run finds (which prunes, least bound first).
 */
static void test_every_candidate(void **state)
{
	int trial, solved = 0, pruned_usually = 0;

	(void)state;
	for (trial = 0; trial < 16; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct uop_result r, all;
		struct uop_options o;
		struct uniap_err err;
		long batch;
		size_t i;

		random_instance(&cl, &m, &batch);
		uop_options_init(&o);
		o.batch = batch;
		o.schedule = trial % 2 ? COST_1F1B : COST_GPIPE;
		o.threads = 2;
		o.inline_solve = trial % 3 == 0;
		assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
		o.every_candidate = 1;
		assert_int_equal(uop_run(&cl, &m, &o, NULL, &all, &err), UNIAP_OK);
		assert_int_equal(all.best, r.best);
		assert_int_equal(all.optimal, r.optimal);
		if (r.best >= 0)
			assert_true(all.eval.tpi_s == r.eval.tpi_s);
		assert_int_equal(all.n_candidates, r.n_candidates);
		for (i = 0; i < all.n_candidates; i++) {
			const struct uop_candidate *uc = &all.candidates[i];
			struct cost_options co = { .batch = batch, .pp = uc->pp, .microbatches = uc->microbatches,
			                           .schedule = o.schedule, .runtime = *target_runtime(TARGET_ANY) };
			struct cost_candidate cand;
			double b;

			pruned_usually += strcmp(r.candidates[i].status, "pruned") == 0;
			if (strcmp(uc->status, "pruned") == 0)
				fail_msg("trial %d pp %d c %ld: pruned under every_candidate (%s)", trial, uc->pp,
				         uc->microbatches, uc->note);
			if (cost_build(&cl, &m, &co, &cand, &err) != UNIAP_OK) {
				assert_string_equal(uc->status, "infeasible");
				continue;
			}
			assert_int_equal(brute_solve(&cand, &b, NULL, NULL, NULL), 0);
			if (isinf(b)) {
				assert_string_equal(uc->status, "infeasible");
			} else {
				if (strcmp(uc->status, "optimal") != 0 || !(fabs(uc->tpi_s - b) <= 1e-9 * b))
					fail_msg("trial %d pp %d c %ld: %s %.17g, brute force %.17g", trial, uc->pp,
					         uc->microbatches, uc->status, uc->tpi_s, b);
				solved++;
			}
			cost_candidate_release(&cand);
		}
		uop_result_release(&all);
		uop_result_release(&r);
		model_release(&m);
		cluster_release(&cl);
	}
	print_message("every_candidate: %d candidates solved to their optima, %d of them pruned usually\n",
	              solved, pruned_usually);
	assert_true(solved >= 40);
	assert_true(pruned_usually >= 10);
}

/* Worker processes and inline solving agree on every candidate's optimum. */
static void test_workers_equal_inline(void **state)
{
	static const int dev[] = { 2, 4, 8 };
	static const double bw[] = { 20, 8, 2 };
	struct cluster_profile cl;
	struct model_profile m;
	struct uop_result a, b;

	(void)state;
	assert_int_equal(fx_cluster(&cl, 1, 8, dev, bw, 3, 16e9, 1e8, 1.2), 0);
	assert_int_equal(fx_model_chain(&m, 12, MODEL_FP32, 4e-3, 2.3e-3, 12e6, 2e8, 1.2e8, 2e6,
	                                2e6), 0);
	run(&cl, &m, 16, COST_1F1B, UOP_SPACE_UNIFIED, 0, &a);
	run(&cl, &m, 16, COST_1F1B, UOP_SPACE_UNIFIED, 1, &b);
	assert_true(a.best >= 0 && b.best >= 0);
	assert_true(a.eval.tpi_s == b.eval.tpi_s);
	assert_true(a.optimal && b.optimal);
	assert_int_equal(a.n_candidates, b.n_candidates);
	uop_result_release(&a);
	uop_result_release(&b);
	model_release(&m);
	cluster_release(&cl);
}

static void test_spaces(void **state)
{
	static const int dev[] = { 2, 4 };
	static const double bw[] = { 10, 2 };
	struct cluster_profile cl;
	struct model_profile m;
	struct uop_result r, u;
	size_t i, k, total = 0;

	(void)state;
	assert_int_equal(fx_cluster(&cl, 1, 4, dev, bw, 2, 16e9, 0, 1.2), 0);
	assert_int_equal(fx_model_chain(&m, 4, MODEL_FP32, 4e-3, 2.3e-3, 12e6, 2e8, 1.2e8, 2e6, 2e6),
	                 0);
	/* intra: only pp = 1 */
	run(&cl, &m, 8, COST_GPIPE, UOP_SPACE_INTRA, 0, &r);
	for (i = 0; i < r.n_candidates; i++)
		assert_int_equal(r.candidates[i].pp, 1);
	assert_int_equal(r.n_candidates, 4); /* c in {1, 2, 4, 8} */
	uop_result_release(&r);
	/* inter: every stage purely data parallel */
	run(&cl, &m, 8, COST_GPIPE, UOP_SPACE_INTER, 0, &r);
	assert_true(r.best >= 0);
	for (k = 0; k < r.cand.n_layers; k++) {
		const struct strategy *s = &r.cand.strategies.items[r.strategy[k]];

		assert_int_equal(s->degree[STRATEGY_TP], 1);
		assert_int_equal(s->degree[STRATEGY_FSDP], 1);
	}
	uop_result_release(&r);
	/* uniform: every Megatron-style candidate listed; the unified optimum is no worse */
	run(&cl, &m, 8, COST_GPIPE, UOP_SPACE_UNIFORM, 0, &u);
	run(&cl, &m, 8, COST_GPIPE, UOP_SPACE_UNIFIED, 0, &r);
	for (i = 0; i < u.n_candidates; i++) {
		assert_null(strstr(u.candidates[i].strategy, "fsdp"));
		assert_null(strstr(u.candidates[i].strategy, "dp2.tp2"));
		if (!strcmp(u.candidates[i].status, "evaluated"))
			assert_true(u.candidates[i].tpi_s >= u.eval.tpi_s);
		total++;
	}
	/* pp 1: tp4, tp2.dp2, dp4 x c in {1,2,4,8} minus widths over the micro-batch */
	assert_true(total > 10);
	for (k = 1; k < u.cand.n_layers; k++)
		assert_int_equal(u.strategy[k], u.strategy[0]);
	assert_true(r.eval.tpi_s <= u.eval.tpi_s * (1 + 1e-12));
	uop_result_release(&u);
	uop_result_release(&r);
	model_release(&m);
	cluster_release(&cl);
}

/* Progress callback that cancels the run after the first finished candidate. */
static void cancel_after_first(void *ctx, const struct uop_progress *p)
{
	atomic_int *flag = ctx;

	if (p->done >= 1)
		atomic_store(flag, 1);
}

/* The budget and deadline tests' problem: 4 devices, a 4-layer chain, batch 8,
 * one worker. */
static void small_run(struct cluster_profile *cl, struct model_profile *m, struct uop_options *o)
{
	static const int dev[] = { 4 };
	static const double bw[] = { 10 };

	assert_int_equal(fx_cluster(cl, 1, 4, dev, bw, 1, 16e9, 0, 1), 0);
	assert_int_equal(fx_model_chain(m, 4, MODEL_FP32, 4e-3, 0, 12e6, 2e8, 0, 2e6, 2e6), 0);
	uop_options_init(o);
	o->batch = 8;
	o->threads = 1;
}

/* The run's budget of worker seconds: a tiny one lets the first candidates
 * (those dispatched before any ended) solve and reports the rest as
 * "budget"; the result says the budget was spent and what was used, and is
 * optimal only where the bounds of the rest prove it.  every_candidate: else
 * the first candidate solved, the least-bound one, prunes all the rest. */
static void test_budget(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct uop_result r;
	struct uop_options o;
	struct uniap_err err;
	size_t i, n_budget = 0, n_solved = 0;

	(void)state;
	small_run(&cl, &m, &o);
	o.every_candidate = 1;
	o.budget_worker_s = 1e-9;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
	assert_true(r.budget_spent);
	assert_true(r.worker_s > 0);
	assert_true(r.best >= 0);
	for (i = 0; i < r.n_candidates; i++) {
		if (strcmp(r.candidates[i].status, "budget") == 0) {
			n_budget++;
			assert_non_null(strstr(r.candidates[i].note, "budget"));
			if (r.optimal)
				assert_true(r.candidates[i].bound_s >= r.eval.tpi_s * (1 - 1e-9));
		} else if (strcmp(r.candidates[i].status, "optimal") == 0 ||
		           strcmp(r.candidates[i].status, "feasible") == 0) {
			n_solved++;
		}
	}
	assert_true(n_budget > 0);
	assert_true(n_solved >= 1);
	uop_result_release(&r);
	/* no budget: nothing is left unsolved for it */
	o.budget_worker_s = 0;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
	assert_false(r.budget_spent);
	for (i = 0; i < r.n_candidates; i++)
		assert_string_not_equal(r.candidates[i].status, "budget");
	uop_result_release(&r);
	model_release(&m);
	cluster_release(&cl);
}

/* What the progress callback saw (any thread). */
struct progress_log {
	pthread_mutex_t mu;
	size_t n;
	struct uop_progress p[512];
};

static void log_progress(void *ctx, const struct uop_progress *p)
{
	struct progress_log *log = ctx;

	pthread_mutex_lock(&log->mu);
	if (log->n < sizeof(log->p) / sizeof(log->p[0]))
		log->p[log->n++] = *p;
	pthread_mutex_unlock(&log->mu);
}

/*
 * The proven bound in the progress: the bound pass gives it before any
 * candidate is decided; every bound reported is at most the optimum; the
 * last one (every candidate done) is the result's.  Candidates a budget
 * leaves unsolved keep the pass's bound, so such a run still has a finite
 * gap.  The uniform space evaluates, it does not bound: no bound at all.
 */
static void test_progress_bound(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct uop_result r;
	struct uop_options o;
	struct uniap_err err;
	struct progress_log log = { .n = 0 };
	double opt_tpi;
	size_t i, early = 0, n_budget = 0;

	(void)state;
	pthread_mutex_init(&log.mu, NULL);
	small_run(&cl, &m, &o);
	o.progress = log_progress;
	o.progress_ctx = &log;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
	assert_true(r.optimal);
	opt_tpi = r.candidates[r.best].tpi_s;
	assert_true(log.n > 0);
	for (i = 0; i < log.n; i++) {
		assert_true(log.p[i].bound_s <= opt_tpi * (1 + 1e-12));
		if (log.p[i].done == 0 && log.p[i].bound_s > 0)
			early++;
		if (log.p[i].done == log.p[i].total) {
			assert_true(log.p[i].best_tpi_s == opt_tpi);
			assert_true(fabs(log.p[i].bound_s - r.bound_s) <= 1e-12 * r.bound_s);
		}
	}
	assert_true(early >= 1);
	uop_result_release(&r);

	/* a spent budget: the unsolved candidates keep their bounds, the gap is finite */
	log.n = 0;
	o.budget_worker_s = 1e-9;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
	assert_true(r.budget_spent);
	for (i = 0; i < r.n_candidates; i++)
		if (strcmp(r.candidates[i].status, "budget") == 0) {
			n_budget++;
			assert_true(r.candidates[i].bound_s > 0);
		}
	assert_true(n_budget > 0);
	assert_true(r.bound_s > 0 && r.bound_s <= opt_tpi * (1 + 1e-12));
	assert_true(isfinite(r.gap) && r.gap < 1);
	uop_result_release(&r);

	/* the uniform space: candidates are evaluated, never bounded */
	log.n = 0;
	o.budget_worker_s = 0;
	o.space = UOP_SPACE_UNIFORM;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
	assert_true(log.n > 0);
	for (i = 0; i < log.n; i++)
		assert_true(log.p[i].bound_s == 0);
	uop_result_release(&r);
	pthread_mutex_destroy(&log.mu);
	model_release(&m);
	cluster_release(&cl);
}

/* The run's deadline: one already passed leaves every candidate unsolved
 * ("deadline", with its note) and no plan; one far off changes nothing. */
static void test_deadline(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct uop_result r;
	struct uop_options o;
	struct uniap_err err;
	size_t i;

	(void)state;
	small_run(&cl, &m, &o);
	o.deadline_s = opt_clock_s() - 1;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
	assert_true(r.deadline_passed);
	assert_true(r.best < 0);
	assert_false(r.optimal);
	assert_true(r.n_candidates > 0);
	for (i = 0; i < r.n_candidates; i++) {
		assert_string_equal(r.candidates[i].status, "deadline");
		assert_non_null(strstr(r.candidates[i].note, "deadline passed"));
	}
	uop_result_release(&r);
	o.deadline_s = opt_clock_s() + 3600;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_OK);
	assert_false(r.deadline_passed);
	assert_true(r.optimal);
	for (i = 0; i < r.n_candidates; i++)
		assert_string_not_equal(r.candidates[i].status, "deadline");
	uop_result_release(&r);
	model_release(&m);
	cluster_release(&cl);
}

static void test_cancel(void **state)
{
	static const int dev[] = { 4 };
	static const double bw[] = { 10 };
	struct cluster_profile cl;
	struct model_profile m;
	struct uop_result r;
	struct uop_options o;
	struct uniap_err err;
	atomic_int cancel = 1;

	(void)state;
	assert_int_equal(fx_cluster(&cl, 1, 4, dev, bw, 1, 16e9, 0, 1), 0);
	assert_int_equal(fx_model_chain(&m, 4, MODEL_FP32, 4e-3, 0, 12e6, 2e8, 0, 2e6, 2e6), 0);
	uop_options_init(&o);
	o.batch = 8;
	o.cancel = &cancel;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_E_CANCELED);
	/* canceled mid-run, from a completion, with workers in flight */
	cancel = 0;
	o.threads = 2;
	o.progress = cancel_after_first;
	o.progress_ctx = &cancel;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_E_CANCELED);
	assert_true(cancel);
	o.progress = NULL;
	o.cancel = NULL;
	o.threads = 0;
	assert_int_equal(uop_run(&cl, &m, &o, NULL, &r, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "threads"));
	model_release(&m);
	cluster_release(&cl);
}

/* An in-memory memo store: packed facts and matrices by (pp, c), counting hits and puts;
 * keep_matrices 0 plays a store that never keeps matrices (too large for its cap).  The
 * callbacks come from any thread (a worker's answer is recorded on the pool's thread),
 * so every one holds the store's lock. */
#define MEMO_SLOTS 64
struct memo_store {
	int pp[MEMO_SLOTS];
	long c[MEMO_SLOTS];
	unsigned char *facts[MEMO_SLOTS], *mats[MEMO_SLOTS];
	size_t facts_len[MEMO_SLOTS], mats_len[MEMO_SLOTS];
	size_t n, hits, misses, puts, matrix_hits;
	int keep_matrices;
	int pack_failed; /* a callback could not pack or unpack (asserted on the test's thread) */
	pthread_mutex_t lock;
};

static int memo_slot(struct memo_store *ms, int pp, long c, int add)
{
	size_t i;

	for (i = 0; i < ms->n; i++)
		if (ms->pp[i] == pp && ms->c[i] == c)
			return (int)i;
	if (!add)
		return -1;
	assert_true(ms->n < MEMO_SLOTS);
	ms->pp[ms->n] = pp;
	ms->c[ms->n] = c;
	return (int)ms->n++;
}

/* the memo tests plan no interleaved schedule: every key has vs 1 */
static int memo_get_facts(void *ctx, int pp, int vs, long c, struct opt_result *out)
{
	struct memo_store *ms = ctx;
	int i, hit = 0;

	assert_int_equal(vs, 1);
	pthread_mutex_lock(&ms->lock);
	i = memo_slot(ms, pp, c, 0);
	if (i < 0 || !ms->facts[i]) {
		ms->misses++;
	} else {
		ms->hits++;
		hit = opt_result_unpack(ms->facts[i], ms->facts_len[i], out, NULL) == UNIAP_OK;
		ms->pack_failed |= !hit;
	}
	pthread_mutex_unlock(&ms->lock);
	return hit;
}

static int memo_get_matrices(void *ctx, int pp, int vs, long c, struct cost_candidate *out)
{
	struct memo_store *ms = ctx;
	int i, hit = 0;

	assert_int_equal(vs, 1);
	pthread_mutex_lock(&ms->lock);
	i = memo_slot(ms, pp, c, 0);
	if (i >= 0 && ms->mats[i]) {
		ms->matrix_hits++;
		hit = opt_candidate_unpack(ms->mats[i], ms->mats_len[i], out, NULL) == UNIAP_OK;
		ms->pack_failed |= !hit;
	}
	pthread_mutex_unlock(&ms->lock);
	return hit;
}

static void memo_put(void *ctx, int pp, int vs, long c, const struct opt_result *facts,
                     const struct cost_candidate *cand)
{
	struct memo_store *ms = ctx;
	int i;

	assert_int_equal(vs, 1);
	pthread_mutex_lock(&ms->lock);
	i = memo_slot(ms, pp, c, 1);
	free(ms->facts[i]);
	ms->facts[i] = NULL;
	if (opt_result_pack(facts, &ms->facts[i], &ms->facts_len[i], NULL) != UNIAP_OK) {
		ms->facts[i] = NULL;
		ms->pack_failed = 1;
	}
	if (cand && ms->keep_matrices) {
		free(ms->mats[i]);
		ms->mats[i] = NULL;
		if (opt_candidate_pack(cand, &ms->mats[i], &ms->mats_len[i], NULL) != UNIAP_OK) {
			ms->mats[i] = NULL;
			ms->pack_failed = 1;
		}
	}
	ms->puts++;
	pthread_mutex_unlock(&ms->lock);
}

static void memo_store_init(struct memo_store *ms, int keep_matrices)
{
	memset(ms, 0, sizeof(*ms));
	ms->keep_matrices = keep_matrices;
	assert_int_equal(pthread_mutex_init(&ms->lock, NULL), 0);
}

static void memo_store_free(struct memo_store *ms)
{
	size_t i;

	for (i = 0; i < ms->n; i++) {
		free(ms->facts[i]);
		free(ms->mats[i]);
	}
	pthread_mutex_destroy(&ms->lock);
}

/* A trial's set-up: an empty memo store (keep_matrices), a random instance, options
 * that use the store (inline or with workers); the brute force's best TPI. */
static double memo_trial(struct memo_store *ms, int keep_matrices, const struct uop_memo_ops *ops,
                         int inline_solve, struct cluster_profile *cl, struct model_profile *m,
                         struct uop_options *o)
{
	long batch;
	double expect;

	memo_store_init(ms, keep_matrices);
	random_instance(cl, m, &batch);
	expect = brute_space(cl, m, batch, COST_GPIPE, 0, 0, 0, 0);
	uop_options_init(o);
	o->batch = batch;
	o->threads = 2;
	o->inline_solve = inline_solve;
	o->memo = ops;
	return expect;
}

/* A second run on a memo store gives the same plan and decides every candidate from
 * it (no solve), with or without stored matrices; the answer is the brute force's. */
static void test_memo(void **state)
{
	int trial;

	(void)state;
	for (trial = 0; trial < 16; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct uop_result a, b;
		struct uop_options o;
		struct memo_store ms;
		struct uop_memo_ops ops = { memo_get_facts, memo_get_matrices, memo_put, &ms };
		struct uniap_err err;
		size_t i, puts;
		double expect = memo_trial(&ms, trial % 4 != 3, &ops, trial % 2, &cl, &m, &o);

		assert_int_equal(uop_run(&cl, &m, &o, NULL, &a, &err), UNIAP_OK);
		assert_int_equal(ms.hits, 0);
		assert_true(ms.puts > 0);
		puts = ms.puts;
		assert_int_equal(uop_run(&cl, &m, &o, NULL, &b, &err), UNIAP_OK);
		assert_true(ms.hits > 0);
		assert_int_equal(a.best, b.best);
		assert_int_equal(a.optimal, b.optimal);
		if (a.best >= 0) {
			assert_true(b.eval.tpi_s == a.eval.tpi_s);
			assert_true(fabs(b.eval.tpi_s - expect) <= 1e-9 * expect);
			for (i = 0; i < m.n_layers; i++)
				assert_int_equal(a.stage[i], b.stage[i]);
		} else {
			assert_true(isinf(expect));
		}
		for (i = 0; i < b.n_candidates; i++) {
			const struct uop_candidate *c = &b.candidates[i];

			/* inline (deterministic order and cutoffs), a cached candidate is never solved
			 * again: optimal from the memo, or pruned or infeasible by its cached bound;
			 * with workers a cutoff may come later than in the first run */
			if (c->cached && o.inline_solve) {
				assert_true(strcmp(c->status, "optimal") == 0 || strcmp(c->status, "pruned") == 0 ||
				            strcmp(c->status, "infeasible") == 0);
				assert_true(c->solve_s == 0);
			}
		}
		assert_false(ms.pack_failed);
		/* nothing new was learnt, so nothing was written again */
		if (o.inline_solve)
			assert_int_equal(ms.puts, puts);
		/* the winner's matrices are the only ones read when the facts decide the rest */
		if (o.inline_solve && ms.keep_matrices && a.best >= 0)
			assert_int_equal(ms.matrix_hits, 1);
		uop_result_release(&a);
		uop_result_release(&b);
		memo_store_free(&ms);
		model_release(&m);
		cluster_release(&cl);
	}
}

/*
 * A memo store that lies about the winner: its facts claim a proven optimum at
 * half the true TPI, carry a plan that no longer fits these matrices, or a plan
 * of another shape with a bound above the true optimum.  The claimed plan is
 * checked before anything in those facts is believed, so the second run drops
 * them (the bound too), solves the candidate again, gives the brute force's
 * answer and writes the true facts back.
 */
static void test_memo_lies(void **state)
{
	int trial;

	(void)state;
	for (trial = 0; trial < 12; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct uop_result a, b;
		struct uop_options o;
		struct memo_store ms;
		struct uop_memo_ops ops = { memo_get_facts, memo_get_matrices, memo_put, &ms };
		struct opt_result f;
		struct uniap_err err;
		double expect = memo_trial(&ms, trial % 3 != 2, &ops, trial % 2, &cl, &m, &o);
		int slot;

		assert_int_equal(uop_run(&cl, &m, &o, NULL, &a, &err), UNIAP_OK);
		if (a.best < 0) {
			assert_true(isinf(expect));
			goto next;
		}
		slot = memo_slot(&ms, a.candidates[a.best].pp, a.candidates[a.best].microbatches, 0);
		assert_true(slot >= 0 && ms.facts[slot] != NULL);
		opt_result_init(&f);
		assert_int_equal(opt_result_unpack(ms.facts[slot], ms.facts_len[slot], &f, NULL), UNIAP_OK);
		assert_non_null(f.stage);
		if (trial % 3 == 0) {
			f.tpi_s *= 0.5; /* a smaller TPI for the same plan, "proven" by an equal bound */
			f.bound_s = f.tpi_s;
		} else if (trial % 3 == 1) {
			f.stage[m.n_layers - 1] = a.candidates[a.best].pp; /* a stage that does not exist */
		} else {
			f.n_layers = m.n_layers - 1; /* a plan of another model's shape, "proven" */
			f.bound_s = f.tpi_s * 2;     /* with a bound that would prune the true optimum */
		}
		free(ms.facts[slot]);
		ms.facts[slot] = NULL;
		assert_int_equal(opt_result_pack(&f, &ms.facts[slot], &ms.facts_len[slot], NULL), UNIAP_OK);
		opt_result_release(&f);

		assert_int_equal(uop_run(&cl, &m, &o, NULL, &b, &err), UNIAP_OK);
		assert_int_equal(b.best, a.best);
		assert_true(b.eval.tpi_s == a.eval.tpi_s);
		assert_true(fabs(b.eval.tpi_s - expect) <= 1e-9 * expect);
		assert_false(b.candidates[b.best].cached); /* its facts were dropped, not used */
		/* the true facts replaced the lie */
		opt_result_init(&f);
		assert_int_equal(opt_result_unpack(ms.facts[slot], ms.facts_len[slot], &f, NULL), UNIAP_OK);
		assert_true(f.tpi_s == a.eval.tpi_s);
		opt_result_release(&f);
		assert_false(ms.pack_failed);
		uop_result_release(&b);
	next:
		uop_result_release(&a);
		memo_store_free(&ms);
		model_release(&m);
		cluster_release(&cl);
	}
}

/*
 * An in-memory share table (uop.h, "Sharing"): one row per candidate, held by
 * a run or done with its packed facts.  A row held by the "dead" owner (-1)
 * answers BUSY `dead_busy` times, then its claim has run out: the next claim
 * takes it (MINE).  `lie` makes the first DONE answer of the winner a plan
 * whose TPI is halved (it must not check out).  Every callback holds the lock.
 */
#define SHARE_ROWS 128
struct share_table {
	int pp[SHARE_ROWS], vs[SHARE_ROWS];
	long c[SHARE_ROWS];
	int owner[SHARE_ROWS];       /* 0: free; > 0 a run; -1 the dead owner */
	int dead_left[SHARE_ROWS];
	unsigned char *facts[SHARE_ROWS];
	size_t facts_len[SHARE_ROWS];
	double incumbent;
	size_t n, claims, busy, done_answers, puts, releases;
	int pack_failed;
	pthread_mutex_t lock;
};

struct share_run {
	struct share_table *t;
	int owner;
	int helper_claims_max;       /* a helper ends after this many claims (0: never) */
	int claims;
};

static int share_row(struct share_table *t, int pp, int vs, long c)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->pp[i] == pp && t->vs[i] == vs && t->c[i] == c)
			return (int)i;
	assert_true(t->n < SHARE_ROWS);
	t->pp[t->n] = pp;
	t->vs[t->n] = vs;
	t->c[t->n] = c;
	return (int)t->n++;
}

static enum uop_share_claim share_claim(void *ctx, int pp, int vs, long c, struct opt_result *facts,
                                        double *incumbent)
{
	struct share_run *sr = ctx;
	struct share_table *t = sr->t;
	enum uop_share_claim rc;
	int i;

	pthread_mutex_lock(&t->lock);
	*incumbent = t->incumbent;
	t->claims++;
	if (sr->helper_claims_max && sr->claims >= sr->helper_claims_max) {
		pthread_mutex_unlock(&t->lock);
		return UOP_SHARE_END;
	}
	sr->claims++;
	i = share_row(t, pp, vs, c);
	if (t->facts[i]) {
		rc = UOP_SHARE_DONE;
		t->done_answers++;
		if (opt_result_unpack(t->facts[i], t->facts_len[i], facts, NULL) != UNIAP_OK)
			t->pack_failed = 1;
	} else if (t->owner[i] == -1 && t->dead_left[i] > 0) {
		t->dead_left[i]--;
		t->busy++;
		rc = UOP_SHARE_BUSY;
	} else if (t->owner[i] > 0 && t->owner[i] != sr->owner) {
		t->busy++;
		rc = UOP_SHARE_BUSY;
	} else {
		t->owner[i] = sr->owner;
		rc = UOP_SHARE_MINE;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

static void share_put(void *ctx, int pp, int vs, long c, const struct opt_result *facts)
{
	struct share_run *sr = ctx;
	struct share_table *t = sr->t;
	int i;

	pthread_mutex_lock(&t->lock);
	i = share_row(t, pp, vs, c);
	assert_int_equal(t->owner[i], sr->owner); /* only a claim's holder puts */
	t->owner[i] = 0;
	if (!facts) {
		t->releases++;
	} else if (!t->facts[i]) {
		if (opt_result_pack(facts, &t->facts[i], &t->facts_len[i], NULL) != UNIAP_OK)
			t->pack_failed = 1;
		if (facts->stage && isfinite(facts->tpi_s) && facts->tpi_s < t->incumbent)
			t->incumbent = facts->tpi_s;
		t->puts++;
	}
	pthread_mutex_unlock(&t->lock);
}

static void share_table_init(struct share_table *t)
{
	memset(t, 0, sizeof(*t));
	t->incumbent = INFINITY;
	assert_int_equal(pthread_mutex_init(&t->lock, NULL), 0);
}

static void share_table_free(struct share_table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->facts[i]);
	pthread_mutex_destroy(&t->lock);
}

struct share_thread {
	const struct cluster_profile *cl;
	const struct model_profile *m;
	struct uop_options o;
	struct uop_share_ops ops;
	struct uop_result res;
	uniap_code rc;
};

static void *share_thread_main(void *arg)
{
	struct share_thread *st = arg;
	struct uniap_err err;

	st->o.share = &st->ops;
	st->rc = uop_run(st->cl, st->m, &st->o, NULL, &st->res, &err);
	return NULL;
}

/* The main run's answer is the run alone's: the same winner, TPI and claim. */
static void share_same_answer(const struct uop_result *alone, const struct uop_result *shared)
{
	assert_int_equal(shared->best, alone->best);
	assert_int_equal(shared->optimal, alone->optimal);
	assert_int_equal(shared->n_candidates, alone->n_candidates);
	if (alone->best >= 0) {
		assert_true(shared->eval.tpi_s == alone->eval.tpi_s);
		assert_true(fabs(shared->bound_s - alone->bound_s) <= 1e-9 * alone->bound_s ||
		            shared->bound_s >= alone->eval.tpi_s * (1 - 1e-12));
	}
}

/* A sharing instance: random ones, and every third the 8-device chain (20 candidates). */
static long share_instance(int trial, struct cluster_profile *cl, struct model_profile *m)
{
	static const int dev[] = { 2, 4, 8 };
	static const double bw[] = { 20, 8, 2 };
	long batch = 16;

	if (trial % 3 == 2) {
		assert_int_equal(fx_cluster(cl, 1, 8, dev, bw, 3, trial % 2 ? 16e9 : 6e8, 1e8, 1.2), 0);
		assert_int_equal(fx_model_chain(m, 6 + trial % 5, MODEL_FP32, 4e-3, 2.3e-3, 12e6, 2e8, 1.2e8,
		                                2e6, 2e6), 0);
	} else {
		random_instance(cl, m, &batch);
	}
	return batch;
}

/*
 * Runs sharing one problem answer what a run alone answers (the same winner,
 * TPI, optimality) whoever solves which candidate: a helper that ran first and
 * decided everything it could (the main run then takes every plan from the
 * table and solves nothing but what the helper left), a helper beside the
 * main run on another thread, a helper that stops after a few claims, claims
 * held by a run that died (BUSY until they run out), and a table whose answer
 * for the winner lies (a halved TPI: rebuilt, it does not check out, so it is
 * solved again).
 */
static void test_share(void **state)
{
	pthread_mutex_t solve_lock;
	int trial;

	(void)state;
	assert_int_equal(pthread_mutex_init(&solve_lock, NULL), 0);
	for (trial = 0; trial < 24; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct uop_result alone;
		struct share_table t;
		struct share_run main_run = { &t, 1, 0, 0 }, helper = { &t, 2, 0, 0 };
		struct share_thread mt, ht;
		struct uniap_err err;
		long batch = share_instance(trial, &cl, &m);
		int mode = trial % 4, i;
		size_t k, shared = 0;

		uop_options_init(&mt.o);
		mt.o.batch = batch;
		mt.o.threads = 2;
		mt.o.schedule = trial % 5 == 4 ? COST_1F1B : COST_GPIPE;
		mt.o.inline_solve = 1;
		mt.o.solve_lock = &solve_lock;
		mt.cl = ht.cl = &cl;
		mt.m = ht.m = &m;
		ht.o = mt.o;
		assert_int_equal(uop_run(&cl, &m, &mt.o, NULL, &alone, &err), UNIAP_OK);

		share_table_init(&t);
		mt.ops = (struct uop_share_ops){ share_claim, share_put, 0, &main_run };
		ht.ops = (struct uop_share_ops){ share_claim, share_put, 1, &helper };
		if (mode == 0) {
			/* the helper first, to its end: the main run finds everything done */
			share_thread_main(&ht);
			assert_int_equal(ht.rc, UNIAP_OK);
			share_thread_main(&mt);
		} else if (mode == 1) {
			/* side by side */
			pthread_t a, b;

			assert_int_equal(pthread_create(&a, NULL, share_thread_main, &ht), 0);
			assert_int_equal(pthread_create(&b, NULL, share_thread_main, &mt), 0);
			pthread_join(a, NULL);
			pthread_join(b, NULL);
			assert_int_equal(ht.rc, UNIAP_OK);
		} else if (mode == 2) {
			/* a helper that ends after 2 claims; or claims a dead run holds, for 3 tries each */
			helper.helper_claims_max = 2;
			if (trial % 8 == 2) {
				share_thread_main(&ht);
				assert_int_equal(ht.rc, UNIAP_OK);
			}
			for (k = 0; k < alone.n_candidates; k++) {
				i = share_row(&t, alone.candidates[k].pp, alone.candidates[k].virtual_stages,
				              alone.candidates[k].microbatches);
				if (!t.facts[i] && trial % 8 == 6) {
					t.owner[i] = -1;
					t.dead_left[i] = 3;
				}
			}
			share_thread_main(&mt);
		} else {
			/* the helper decided everything; its answer for the winner is then made a lie */
			share_thread_main(&ht);
			assert_int_equal(ht.rc, UNIAP_OK);
			if (alone.best >= 0) {
				struct opt_result f;

				i = share_row(&t, alone.candidates[alone.best].pp,
				              alone.candidates[alone.best].virtual_stages,
				              alone.candidates[alone.best].microbatches);
				if (t.facts[i]) {
					opt_result_init(&f);
					assert_int_equal(opt_result_unpack(t.facts[i], t.facts_len[i], &f, NULL), UNIAP_OK);
					f.tpi_s *= 0.5;
					f.bound_s = f.tpi_s;
					free(t.facts[i]);
					t.facts[i] = NULL;
					assert_int_equal(opt_result_pack(&f, &t.facts[i], &t.facts_len[i], NULL), UNIAP_OK);
					opt_result_release(&f);
				}
			}
			share_thread_main(&mt);
		}
		assert_int_equal(mt.rc, UNIAP_OK);
		share_same_answer(&alone, &mt.res);
		assert_false(t.pack_failed);
		for (k = 0; k < mt.res.n_candidates; k++)
			shared += mt.res.candidates[k].shared;
		/* after a helper that went first, every candidate the main run claims is done (it
		 * prunes at least what the helper pruned: it knows the final incumbent from its
		 * first claim), and taken, but for the lie */
		if (mode == 0)
			assert_int_equal(shared, main_run.claims);
		if (mode == 3)
			assert_true(shared + 1 >= (size_t)main_run.claims);
		/* the dead run's claims held the main run up, and ran out */
		if (trial % 8 == 6)
			assert_true(t.busy > 0 || alone.best < 0);
		for (k = 0; k < t.n; k++)
			assert_true(t.owner[k] <= 0); /* no claim left held by a run that ended */
		fprintf(stderr, "share trial %d mode %d: %zu candidates, %zu shared, %zu claims, %zu busy\n",
		        trial, mode, mt.res.n_candidates, shared, t.claims, t.busy);
		uop_result_release(&alone);
		uop_result_release(&mt.res);
		if (trial % 8 != 6)
			uop_result_release(&ht.res);
		share_table_free(&t);
		model_release(&m);
		cluster_release(&cl);
	}
	pthread_mutex_destroy(&solve_lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_brute_force),
		cmocka_unit_test(test_interleaved_matches_brute_force),
		cmocka_unit_test(test_makespan_matches_brute_force),
		cmocka_unit_test(test_interleaved_peak_memory),
		cmocka_unit_test(test_workers_equal_inline),
		cmocka_unit_test(test_every_candidate),
		cmocka_unit_test(test_spaces),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_progress_bound),
		cmocka_unit_test(test_memo),
		cmocka_unit_test(test_memo_lies),
		cmocka_unit_test(test_share),
	};

	return cmocka_run_group_tests_name("uop", tests, NULL, NULL);
}
