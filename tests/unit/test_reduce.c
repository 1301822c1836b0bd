/*
 * test_reduce.c - dominated-strategy removal keeps the optimum: on random
 * cost-model candidates the brute-force optimum with and without the
 * dominated strategies is the same; a duplicated strategy is dropped and a
 * strategy that is best somewhere is kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "brute.h"
#include "cost.h"
#include "fixtures.h"
#include "reduce.h"

static unsigned long rng = 99;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005UL + 1442695040888963407UL;
	return (unsigned)((rng >> 33) % n);
}

static void test_same_optimum(void **state)
{
	static const int dev[] = { 2, 4 };
	static const double bw[] = { 10, 2 };
	int trial, shrunk = 0;

	(void)state;
	for (trial = 0; trial < 80; trial++) {
		struct cluster_profile cl;
		struct model_profile m;
		struct cost_candidate c, r;
		struct uniap_err err;
		size_t L = 2 + rnd(3), removed, k;
		struct cost_options o = { .batch = 8, .pp = 1 + (int)rnd(2), .microbatches = 1 << rnd(3),
		                          .schedule = rnd(2) ? COST_1F1B : COST_GPIPE,
		                          .recompute = (int)rnd(2), .zero = trial % 2,
		                          .sp = trial % 3 == 0 };
		double full, part;

		assert_int_equal(fx_cluster(&cl, 1, 4, dev, bw, 2, rnd(3) ? 64e9 : 3e8, 0,
		                            1 + rnd(4) * 0.3), 0);
		assert_int_equal(fx_model_chain(&m, L, MODEL_FP32, 1e-3 * (1 + rnd(9)),
		                                rnd(2) ? 7e-4 : 0, 1e6 * (1 + rnd(30)), 1e7 * (1 + rnd(9)),
		                                rnd(2) ? 5e6 : 0, 2e5 * (1 + rnd(9)), 1e6), 0);
		if (L > 2 && rnd(2))
			assert_int_equal(fx_model_add_edge(&m, 0, L - 1), 0);
		assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
		assert_int_equal(reduce_dominated(&c, &r, &removed, &err), UNIAP_OK);
		assert_int_equal(cost_k(&r) + removed, cost_k(&c));
		assert_true(cost_k(&r) >= 1);
		/* the kept strategies keep their order and their costs */
		for (k = 0; k + 1 < cost_k(&r); k++)
			assert_true(strategy_find(&c.strategies, r.strategies.items[k].name) <
			            strategy_find(&c.strategies, r.strategies.items[k + 1].name));
		assert_int_equal(brute_solve(&c, &full, NULL, NULL, NULL), 0);
		assert_int_equal(brute_solve(&r, &part, NULL, NULL, NULL), 0);
		if (isinf(full))
			assert_true(isinf(part));
		else
			assert_true(part == full);
		shrunk += removed > 0;
		cost_candidate_release(&r);
		cost_candidate_release(&c);
		model_release(&m);
		cluster_release(&cl);
	}
	assert_true(shrunk > 0); /* the test exercises removal at all */
}

static void test_duplicate_dropped(void **state)
{
	static const int dev[] = { 2 };
	static const double bw[] = { 10 };
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate c, r;
	struct uniap_err err;
	struct cost_options o = { .batch = 4, .pp = 1, .microbatches = 1 };
	size_t removed, K, u;

	(void)state;
	assert_int_equal(fx_cluster(&cl, 1, 2, dev, bw, 1, 64e9, 0, 1), 0);
	assert_int_equal(fx_model_chain(&m, 3, MODEL_FP32, 1e-3, 4e-4, 1e6, 1e7, 4e6, 1e5, 1e5), 0);
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	/* make strategy 2 an exact copy of strategy 0 in every table */
	K = cost_k(&c);
	assert_true(K == 3);
	for (u = 0; u < c.n_layers; u++) {
		c.time_s[u * K + 2] = c.time_s[u * K + 0];
		c.memory_fixed_bytes[u * K + 2] = c.memory_fixed_bytes[u * K + 0];
		c.memory_per_microbatch_bytes[u * K + 2] = c.memory_per_microbatch_bytes[u * K + 0];
	}
	for (u = 0; u < c.n_edges; u++) {
		double *m2[2] = { c.edges[u].same_stage_s, c.edges[u].cross_stage_s };
		int s;

		for (s = 0; s < 2; s++) {
			size_t j;

			for (j = 0; j < K; j++)
				m2[s][j * K + 2] = m2[s][j * K + 0];
			for (j = 0; j < K; j++)
				m2[s][2 * K + j] = m2[s][0 * K + j];
		}
	}
	assert_int_equal(reduce_dominated(&c, &r, &removed, &err), UNIAP_OK);
	assert_true(removed >= 1);
	assert_int_equal(strategy_find(&r.strategies, c.strategies.items[2].name), -1);
	assert_true(strategy_find(&r.strategies, c.strategies.items[0].name) >= 0);
	cost_candidate_release(&r);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_optimum),
		cmocka_unit_test(test_duplicate_dropped),
	};

	return cmocka_run_group_tests_name("reduce", tests, NULL, NULL);
}
