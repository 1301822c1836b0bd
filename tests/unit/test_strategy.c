/*
 * test_strategy.c - the strategy dictionary: counts for 1..16 devices per
 * stage on two hierarchies, names, strides, hierarchy levels and batch shards.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "fixtures.h"
#include "catalog.h"
#include "strategy.h"
#include "fracmemo.h"

/* 4 nodes x 4 devices, PCIe pairs inside a node (the paper's EnvB). */
static void pairs_cluster(struct cluster_profile *c)
{
	static const int dev[] = { 2, 4, 16 };
	static const double bw[] = { 10, 5, 1.25 };

	assert_int_equal(fx_cluster(c, 4, 4, dev, bw, 3, 12e9, 1e9, 1.1), 0);
}

/* 2 nodes x 8 devices, one NVLink island per node. */
static void nvlink_cluster(struct cluster_profile *c)
{
	static const int dev[] = { 8, 16 };
	static const double bw[] = { 150, 25 };

	assert_int_equal(fx_cluster(c, 2, 8, dev, bw, 2, 32e9, 1e9, 1.1), 0);
}

/* Ordered factorizations into dp/tp/fsdp times placements: 1, 3, 9, 21, 39. */
static void test_counts(void **state)
{
	static const struct { int pp; size_t count; } cases[] = {
		{ 16, 1 }, { 8, 3 }, { 4, 9 }, { 2, 21 }, { 1, 39 },
	};
	size_t i;
	int h;

	(void)state;
	for (h = 0; h < 2; h++) {
		struct cluster_profile c;

		if (h == 0)
			pairs_cluster(&c);
		else
			nvlink_cluster(&c);
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct strategy_set set, rc;
			struct uniap_err err;
			size_t k, j;

			assert_int_equal(strategy_enumerate(&c, cases[i].pp, 0, &set, &err), UNIAP_OK);
			assert_int_equal(set.count, cases[i].count);
			assert_int_equal(set.stage_devices, 16 / cases[i].pp);
			for (k = 0; k < set.count; k++) {
				const struct strategy *s = &set.items[k];

				assert_int_equal(s->degree[0] * s->degree[1] * s->degree[2],
				                 set.stage_devices);
				assert_false(s->recompute);
				for (j = 0; j < k; j++) /* names are unique */
					assert_string_not_equal(s->name, set.items[j].name);
			}
			assert_int_equal(strategy_enumerate(&c, cases[i].pp, 1, &rc, &err), UNIAP_OK);
			assert_int_equal(rc.count, 2 * cases[i].count);
			assert_non_null(strstr(rc.items[rc.count - 1].name, "+rc"));
			assert_true(rc.items[rc.count - 1].recompute);
			strategy_set_release(&rc);
			strategy_set_release(&set);
		}
		cluster_release(&c);
	}
}

static const struct strategy *find(const struct strategy_set *set, const char *name)
{
	long k = strategy_find(set, name);

	assert_true(k >= 0);
	return &set->items[k];
}

/* The appendix example: dp inside PCIe pairs and tp across them, and its mirror. */
static void test_placements_pairs(void **state)
{
	struct cluster_profile c;
	struct strategy_set set;
	struct uniap_err err;
	const struct strategy *a, *b;

	(void)state;
	pairs_cluster(&c);
	/* pp = 4: stages of 4 devices = one node each */
	assert_int_equal(strategy_enumerate(&c, 4, 0, &set, &err), UNIAP_OK);
	a = find(&set, "dp2.tp2");
	b = find(&set, "tp2.dp2");
	assert_int_equal(a->stride[STRATEGY_DP], 1);
	assert_int_equal(a->stride[STRATEGY_TP], 2);
	assert_int_equal(a->level[STRATEGY_DP], 0);  /* inside a pair */
	assert_int_equal(a->level[STRATEGY_TP], 1);  /* across pairs, inside the node */
	assert_int_equal(a->level[STRATEGY_FSDP], -1);
	assert_int_equal(b->level[STRATEGY_TP], 0);
	assert_int_equal(b->level[STRATEGY_DP], 1);
	assert_int_equal(a->n_order, 2);
	assert_int_equal(a->order[0], STRATEGY_DP);
	/* batch shards: dp2.tp2 alternates, tp2.dp2 pairs up */
	assert_int_equal(strategy_batch_shard(a, 0), 0);
	assert_int_equal(strategy_batch_shard(a, 1), 1);
	assert_int_equal(strategy_batch_shard(a, 2), 0);
	assert_int_equal(strategy_batch_shard(b, 1), 0);
	assert_int_equal(strategy_batch_shard(b, 2), 1);
	assert_int_equal(strategy_coord(b, 3, STRATEGY_TP), 1);
	assert_int_equal(strategy_coord(b, 3, STRATEGY_DP), 1);
	assert_int_equal(strategy_find(&set, "tp4.dp2"), -1);
	strategy_set_release(&set);

	/* pp = 1: 16 devices over 4 nodes */
	assert_int_equal(strategy_enumerate(&c, 1, 0, &set, &err), UNIAP_OK);
	a = find(&set, "tp2.dp8");
	assert_int_equal(a->level[STRATEGY_TP], 0);
	assert_int_equal(a->level[STRATEGY_DP], 2);  /* spans nodes */
	a = find(&set, "tp4.fsdp2.dp2");
	assert_int_equal(a->stride[STRATEGY_FSDP], 4);
	assert_int_equal(a->stride[STRATEGY_DP], 8);
	assert_int_equal(a->level[STRATEGY_TP], 1);
	assert_int_equal(a->level[STRATEGY_FSDP], 2);
	assert_int_equal(strategy_batch_width(a), 4);
	/* dp outer (stride 8), fsdp inner: shard = dp * 2 + fsdp */
	assert_int_equal(strategy_batch_shard(a, 4), 1);
	assert_int_equal(strategy_batch_shard(a, 8), 2);
	assert_int_equal(strategy_batch_shard(a, 12), 3);
	strategy_set_release(&set);

	/* pp = 8: stages of 2 devices, each a PCIe pair */
	assert_int_equal(strategy_enumerate(&c, 8, 0, &set, &err), UNIAP_OK);
	assert_int_equal(find(&set, "tp2")->level[STRATEGY_TP], 0);
	strategy_set_release(&set);
	cluster_release(&c);
}

static void test_placements_nvlink(void **state)
{
	struct cluster_profile c;
	struct strategy_set set;
	struct uniap_err err;

	(void)state;
	nvlink_cluster(&c);
	assert_int_equal(strategy_enumerate(&c, 1, 0, &set, &err), UNIAP_OK);
	assert_int_equal(find(&set, "tp8.dp2")->level[STRATEGY_TP], 0);
	assert_int_equal(find(&set, "tp8.dp2")->level[STRATEGY_DP], 1);
	assert_int_equal(find(&set, "dp2.tp8")->level[STRATEGY_TP], 1);
	assert_int_equal(find(&set, "fsdp16")->level[STRATEGY_FSDP], 1);
	strategy_set_release(&set);
	assert_int_equal(strategy_enumerate(&c, 2, 0, &set, &err), UNIAP_OK);
	/* each stage is one node: everything stays on NVLink */
	assert_int_equal(find(&set, "dp8")->level[STRATEGY_DP], 0);
	strategy_set_release(&set);
	assert_int_equal(strategy_enumerate(&c, 16, 0, &set, &err), UNIAP_OK);
	assert_int_equal(set.count, 1);
	assert_string_equal(set.items[0].name, "single");
	assert_int_equal(set.items[0].n_order, 0);
	strategy_set_release(&set);
	/* pp must divide the devices */
	assert_int_equal(strategy_enumerate(&c, 3, 0, &set, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "pp"));
	assert_int_equal(strategy_enumerate(&c, 0, 0, &set, &err), UNIAP_E_ARG);
	cluster_release(&c);
}

/* A stage that straddles nodes: 12 devices on 4-device nodes, pp = 2. */
static void test_straddling_stage(void **state)
{
	static const int dev[] = { 4, 12 };
	static const double bw[] = { 10, 1 };
	struct cluster_profile c;
	struct strategy_set set;
	struct uniap_err err;

	(void)state;
	assert_int_equal(fx_cluster(&c, 3, 4, dev, bw, 2, 12e9, 0, 1), 0);
	assert_int_equal(strategy_enumerate(&c, 2, 0, &set, &err), UNIAP_OK);
	/* 6 = 2 x 3: tp2 groups {6,7} sit in node 1 but {4,5} too; tp3.dp2 {3,4,5} crosses */
	assert_int_equal(find(&set, "tp2.dp3")->level[STRATEGY_TP], 0);
	assert_int_equal(find(&set, "tp3.dp2")->level[STRATEGY_TP], 1);
	assert_int_equal(set.count, 15); /* 6: 3 singles + 6 (3,2) tuples x 2 orders */
	strategy_set_release(&set);
	cluster_release(&c);
}

/*
 * strategy_reshard_fraction against the plain definition: every one of the D
 * ranks, shard intervals in doubles.  Every pair of strategies of catalog
 * clusters from 8 to 256 devices per stage, with every variant.
 */
static double plain_fraction(const struct strategy *a, const struct strategy *b, int D)
{
	double wa = strategy_batch_width(a), wb = strategy_batch_width(b), worst = 0;
	int r;

	for (r = 0; r < D; r++) {
		double ha = strategy_batch_shard(a, r), hb = strategy_batch_shard(b, r);
		double lo = fmax(ha / wa, hb / wb), hi = fmin((ha + 1) / wa, (hb + 1) / wb);
		double missing = ((hb + 1) / wb - hb / wb) - (hi > lo ? hi - lo : 0);

		worst = fmax(worst, missing);
	}
	return worst < 1e-12 ? 0 : worst;
}

static void test_reshard_fraction(void **state)
{
	static const char *const clusters[] = {"enva", "envb-8", "envd-16", "dgx-a100-x4", "dgx-h100-x32"};
	size_t ci, k, l, pairs = 0, nonzero = 0;
	int pp;

	(void)state;
	for (ci = 0; ci < sizeof(clusters) / sizeof(clusters[0]); ci++)
		for (pp = 1; pp <= 2; pp++) {
			struct cluster_profile c;
			struct strategy_set set;
			struct uniap_err err;

			memset(&c, 0, sizeof(c));
			err_clear(&err);
			assert_int_equal(catalog_cluster(clusters[ci], &c, &err), UNIAP_OK);
			assert_int_equal(strategy_enumerate(&c, pp, STRATEGY_WITH_ZERO | STRATEGY_WITH_SP, &set, &err),
			                 UNIAP_OK);
			for (k = 0; k < set.count; k++)
				for (l = 0; l < set.count; l++) {
					const struct strategy *a = &set.items[k], *b = &set.items[l];
					double want = plain_fraction(a, b, set.stage_devices);
					double got = strategy_reshard_fraction(a, b, set.stage_devices);

					if (!(fabs(got - want) <= 1e-12 * fmax(1, want)))
						fail_msg("%s pp %d: %s -> %s: %.17g, plainly %.17g", clusters[ci], pp,
						         a->name, b->name, got, want);
					pairs++;
					nonzero += want > 0;
				}
			strategy_set_release(&set);
			cluster_release(&c);
		}
	print_message("reshard fraction: %zu pairs, %zu nonzero, as the plain definition\n", pairs, nonzero);
	assert_true(nonzero > 0);
}

/* The run's memo of fractions answers exactly what the walk does, from the memo the second time. */
static void test_frac_memo(void **state)
{
	static const char *const clusters[] = {"envb-8", "dgx-h100-x32"};
	struct frac_memo *m = frac_memo_new(0), *tiny = frac_memo_new(5);
	size_t ci, k, l, pass, pairs = 0, hits, misses;

	(void)state;
	assert_non_null(m);
	assert_non_null(tiny);
	for (pass = 0; pass < 2; pass++)
		for (ci = 0; ci < sizeof(clusters) / sizeof(clusters[0]); ci++) {
			struct cluster_profile c;
			struct strategy_set set;
			struct uniap_err err;

			memset(&c, 0, sizeof(c));
			err_clear(&err);
			assert_int_equal(catalog_cluster(clusters[ci], &c, &err), UNIAP_OK);
			assert_int_equal(strategy_enumerate_cp(&c, 2, STRATEGY_WITH_ZERO | STRATEGY_WITH_SP, 0,
			                                       ci == 1 ? 2 : 1, &set, &err),
			                 UNIAP_OK);
			for (k = 0; k < set.count; k++)
				for (l = 0; l < set.count; l++) {
					const struct strategy *a = &set.items[k], *b = &set.items[l];
					double want = strategy_reshard_fraction(a, b, set.stage_devices);

					/* bit for bit: the memo keeps what the walk returned */
					assert_true(frac_memo_get(m, a, b, set.stage_devices) == want);
					assert_true(frac_memo_get(tiny, a, b, set.stage_devices) == want);
					assert_true(frac_memo_get(NULL, a, b, set.stage_devices) == want);
					pairs += pass == 0;
				}
			strategy_set_release(&set);
			cluster_release(&c);
		}
	frac_memo_counts(m, &hits, &misses);
	{
		size_t th, tm;

		/* a memo at its cap keeps answering, computing what it cannot keep */
		frac_memo_counts(tiny, &th, &tm);
		assert_int_equal(th + tm, 2 * pairs);
		assert_true(tm > 2 * misses);
	}
	print_message("fraction memo: %zu lookups, %zu computed\n", hits + misses, misses);
	assert_int_equal(hits + misses, 2 * pairs);
	/* layouts repeat across strategies (tp placement): fewer walks than pairs, and none again */
	assert_true(misses < pairs);
	frac_memo_free(m);
	frac_memo_free(tiny);
}

/* strategy_group_level by its definition: every group led in every stage, every level. */
static int plain_group_level(const struct cluster_profile *c, int size, int stride, int stage_devices, int pp)
{
	size_t lv;

	if (size <= 1 || c->n_levels == 0)
		return 0;
	for (lv = 0; lv < c->n_levels; lv++) {
		long block = c->levels[lv].devices;
		int fits = 1, st, r;

		for (st = 0; st < pp && fits; st++)
			for (r = 0; r < stage_devices && fits; r++) {
				long first = (long)st * stage_devices + r, last = first + (long)(size - 1) * stride;

				if ((r / stride) % size == 0 && first / block != last / block)
					fits = 0;
			}
		if (fits)
			return (int)lv;
	}
	return (int)c->n_levels - 1;
}

/*
 * The group level against its definition: hierarchies of powers of two (and
 * of 6, 12, 24, 48 and of 4, 20, 40: levels that do not divide the stages),
 * every pp dividing the devices, every size and stride up to the stage.
 */
static void test_group_level(void **state)
{
	static const int shapes[][4] = {
		{ 8, 16, 64, 0 }, { 6, 12, 24, 48 }, { 4, 20, 40, 0 }, { 2, 8, 32, 128 }, { 3, 9, 0, 0 },
	};
	size_t si, checks = 0, differ = 0;

	(void)state;
	for (si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
		struct cluster_level lv[4];
		struct cluster_profile c;
		int n = 0, total, pp, size, stride;

		memset(&c, 0, sizeof(c));
		memset(lv, 0, sizeof(lv));
		while (n < 4 && shapes[si][n])
			lv[n].devices = shapes[si][n], n++;
		c.levels = lv;
		c.n_levels = (size_t)n;
		total = lv[n - 1].devices;
		for (pp = 1; pp <= total; pp++) {
			int D = total / pp;

			if (total % pp)
				continue;
			for (size = 1; size <= D; size++)
				for (stride = 1; (long)stride * size <= 2L * D; stride++) {
					int want = plain_group_level(&c, size, stride, D, pp);
					int got = strategy_group_level(&c, size, stride, D, pp);

					if (got != want)
						fail_msg("levels %d..%d pp %d size %d stride %d: level %d, plainly %d",
						         lv[0].devices, total, pp, size, stride, got, want);
					checks++;
					differ += want > 0;
				}
		}
	}
	print_message("group level: %zu cases (%zu above the first level), as the plain definition\n",
	              checks, differ);
	assert_true(differ > 0);
}

/* Expert parallelism: +epN right after each dp > 1, fsdp 1 strategy, for every N > 1 dividing dp and the
 * experts; none without experts (the plain dictionary) */
static void test_expert_parallel(void **state)
{
	struct cluster_profile c;
	struct strategy_set plain, set;
	struct uniap_err err;
	size_t k, with_ep = 0;

	(void)state;
	memset(&c, 0, sizeof(c));
	assert_int_equal(catalog_cluster("dgx-h100", &c, &err), UNIAP_OK);
	assert_int_equal(strategy_enumerate(&c, 1, STRATEGY_WITH_ZERO, &plain, &err), UNIAP_OK);
	assert_int_equal(strategy_enumerate_experts(&c, 1, STRATEGY_WITH_ZERO, 0, &set, &err), UNIAP_OK);
	assert_int_equal(set.count, plain.count);
	for (k = 0; k < set.count; k++)
		assert_string_equal(set.items[k].name, plain.items[k].name);
	strategy_set_release(&set);
	/* 8 experts on 8 devices: dp8 gains ep2, ep4, ep8 (each with z0, z1, z2); dp4 ep2 and ep4; dp2 ep2 */
	assert_int_equal(strategy_enumerate_experts(&c, 1, STRATEGY_WITH_ZERO, 8, &set, &err), UNIAP_OK);
	for (k = 0; k < set.count; k++) {
		const struct strategy *s = &set.items[k];

		if (s->ep <= 1)
			continue;
		with_ep++;
		assert_true(s->degree[STRATEGY_DP] % s->ep == 0);
		assert_int_equal(s->degree[STRATEGY_FSDP], 1);
		assert_non_null(strstr(s->name, "+ep"));
	}
	assert_true(strategy_find(&set, "dp8+ep8+z1") >= 0);
	assert_true(strategy_find(&set, "tp2.dp4+ep4") >= 0);
	assert_true(strategy_find(&set, "dp2.tp4+ep2+z2") >= 0);
	assert_true(strategy_find(&set, "fsdp2.dp4+ep2") < 0);
	/* each plain strategy is still there, in its order */
	for (k = 0; k < plain.count; k++)
		assert_true(strategy_find(&set, plain.items[k].name) >= 0);
	print_message("8 devices, 8 experts: %zu strategies, %zu of them with ep (%zu without experts)\n", set.count,
	              with_ep, plain.count);
	assert_int_equal(set.count, plain.count + with_ep);
	strategy_set_release(&set);
	/* 6 experts: only ep2 divides them */
	assert_int_equal(strategy_enumerate_experts(&c, 1, 0, 6, &set, &err), UNIAP_OK);
	for (k = 0; k < set.count; k++)
		assert_true(set.items[k].ep <= 2);
	assert_true(strategy_find(&set, "dp8+ep2") >= 0);
	strategy_set_release(&set);
	strategy_set_release(&plain);
	cluster_release(&c);
}

/* The fraction by its definition with context parallelism: a rank's shard is a batch interval times a
 * sequence interval, and what it lacks is the area of b's not covered by a's. */
static double plain_fraction_cp(const struct strategy *a, const struct strategy *b, int D)
{
	double wa = strategy_batch_width(a), wb = strategy_batch_width(b), ca = strategy_cp(a), cb = strategy_cp(b);
	double worst = 0;
	int r;

	for (r = 0; r < D; r++) {
		double ha = strategy_batch_shard(a, r), hb = strategy_batch_shard(b, r);
		double sa = strategy_seq_shard(a, r), sb = strategy_seq_shard(b, r);
		double lo = fmax(ha / wa, hb / wb), hi = fmin((ha + 1) / wa, (hb + 1) / wb);
		double slo = fmax(sa / ca, sb / cb), shi = fmin((sa + 1) / ca, (sb + 1) / cb);
		double missing = 1 / (wb * cb) - (hi > lo ? hi - lo : 0) * (shi > slo ? shi - slo : 0);

		worst = fmax(worst, missing);
	}
	return worst < 1e-12 ? 0 : worst;
}

/* Context parallelism: only strategies whose dp cp divides, "+cpN", batch width dp x fsdp / cp; the
 * reshard fraction between any two layouts (one cp, or cp 1 against cp 2) as its definition says */
static void test_context_parallel(void **state)
{
	static const char *const clusters[] = {"enva", "dgx-h100-x4"};
	size_t ci, k, l, pairs = 0, nonzero = 0;

	(void)state;
	for (ci = 0; ci < sizeof(clusters) / sizeof(clusters[0]); ci++) {
		struct cluster_profile c;
		struct strategy_set one, two, four;
		struct uniap_err err;
		const struct strategy_set *sets[3] = { &one, &two, &four };
		int x, y, pp;

		memset(&c, 0, sizeof(c));
		assert_int_equal(catalog_cluster(clusters[ci], &c, &err), UNIAP_OK);
		pp = cluster_devices(&c) / 8; /* stages of 8 devices */
		assert_int_equal(strategy_enumerate_cp(&c, pp, STRATEGY_WITH_SP, 0, 1, &one, &err), UNIAP_OK);
		assert_int_equal(strategy_enumerate_cp(&c, pp, STRATEGY_WITH_SP, 0, 2, &two, &err), UNIAP_OK);
		assert_int_equal(strategy_enumerate_cp(&c, pp, STRATEGY_WITH_SP, 8, 4, &four, &err), UNIAP_OK);
		for (k = 0; k < two.count; k++) {
			const struct strategy *t = &two.items[k];

			assert_int_equal(t->cp, 2);
			assert_int_equal(t->degree[STRATEGY_DP] % 2, 0);
			assert_non_null(strstr(t->name, "+cp2"));
			assert_int_equal(strategy_batch_width(t), t->degree[STRATEGY_DP] / 2 * t->degree[STRATEGY_FSDP]);
		}
		assert_true(strategy_find(&two, "tp2.dp4+sp+cp2") >= 0);
		assert_true(strategy_find(&two, "tp8+sp") < 0);
		assert_true(strategy_find(&four, "dp8+cp4+ep8") >= 0);
		for (x = 0; x < 3; x++)
			for (y = 0; y < 3; y++)
				for (k = 0; k < sets[x]->count; k++)
					for (l = 0; l < sets[y]->count; l++) {
						const struct strategy *a = &sets[x]->items[k], *b = &sets[y]->items[l];
						double want = plain_fraction_cp(a, b, two.stage_devices);
						double got = strategy_reshard_fraction(a, b, two.stage_devices);

						if (!(fabs(got - want) <= 1e-12 * fmax(1, want)))
							fail_msg("%s: %s -> %s: %.17g, plainly %.17g", clusters[ci], a->name, b->name, got,
							         want);
						pairs++;
						nonzero += want > 0;
					}
		/* a cp that does not divide a stage's devices is refused, naming it */
		strategy_set_release(&one);
		assert_int_equal(strategy_enumerate_cp(&c, pp, 0, 0, 3, &one, &err), UNIAP_E_ARG);
		assert_non_null(strstr(err.msg, "context_parallel"));
		strategy_set_release(&two);
		strategy_set_release(&four);
		cluster_release(&c);
	}
	print_message("context parallelism: %zu reshard pairs, %zu nonzero, as the definition\n", pairs, nonzero);
	assert_true(nonzero > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_placements_pairs),
		cmocka_unit_test(test_placements_nvlink),
		cmocka_unit_test(test_straddling_stage),
		cmocka_unit_test(test_reshard_fraction),
		cmocka_unit_test(test_frac_memo),
		cmocka_unit_test(test_expert_parallel),
		cmocka_unit_test(test_context_parallel),
		cmocka_unit_test(test_group_level),
	};

	return cmocka_run_group_tests_name("strategy", tests, NULL, NULL);
}
