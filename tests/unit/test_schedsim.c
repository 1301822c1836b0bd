/*
 * test_schedsim.c - core/schedsim.c, the iteration the chrome-trace export
 * draws: its length against closed forms (GPipe, whose transfers block both
 * stages: the audit TPI on random stage and transfer times; 1F1B and
 * interleaved with equal stages and no transfers: c t + (pp - 1) t / v), 1F1B
 * with Megatron-LM's blocking exchanges against cases worked by hand, against
 * an independent simulation and never above the objective, its invariants (no
 * rank runs two units at once, a unit starts after its input arrived, every
 * unit once), and its refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "schedsim.h"

/* Σp + Σo + (c - 1) max_i (o_(i-1) + p_i + o_i): the audit formula of cost.h without
 * interleaving, each stage's cycle its receive, compute and send */
static double audit(const double *p, const double *o, int S, long c)
{
	double sum = 0, mx = 0;
	int i;

	for (i = 0; i < S; i++)
		sum += p[i];
	for (i = 0; i + 1 < S; i++)
		sum += o[i];
	for (i = 0; i < S; i++)
		mx = fmax(mx, (i > 0 ? o[i - 1] : 0) + p[i] + (i + 1 < S ? o[i] : 0));
	return sum + (double)(c - 1) * mx;
}

/* A small deterministic generator (tests must not depend on the C library's rand). */
static double next01(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*s >> 11) / 9007199254740992.0;
}

/* The invariants every laid-out iteration keeps; returns the number of compute units. */
static size_t check_invariants(const struct sched_input *in, const struct sched *s)
{
	size_t i, j, units = 0;

	for (i = 0; i < s->n_blocks; i++) {
		const struct sched_block *a = &s->blocks[i];

		assert_true(a->start_s >= 0 && a->dur_s >= 0);
		assert_true(a->start_s + a->dur_s <= s->length_s * (1 + 1e-12));
		if (a->kind == SCHED_FORWARD || a->kind == SCHED_BACKWARD) {
			units++;
			assert_int_equal(a->rank, a->stage % in->ranks);
		}
		for (j = i + 1; j < s->n_blocks; j++) {
			const struct sched_block *b = &s->blocks[j];

			/* one unit at a time per rank; one transfer at a time per link and direction */
			if (a->kind == b->kind || ((a->kind == SCHED_FORWARD || a->kind == SCHED_BACKWARD) &&
			                           (b->kind == SCHED_FORWARD || b->kind == SCHED_BACKWARD)))
				if (a->rank == b->rank && a->dur_s > 0 && b->dur_s > 0)
					assert_true(a->start_s + a->dur_s <= b->start_s * (1 + 1e-12) + 1e-15 ||
					            b->start_s + b->dur_s <= a->start_s * (1 + 1e-12) + 1e-15);
			/* a backward starts after its own forward ended */
			if (a->kind == SCHED_FORWARD && b->kind == SCHED_BACKWARD && a->stage == b->stage &&
			    a->micro == b->micro)
				assert_true(b->start_s >= a->start_s + a->dur_s - 1e-15);
		}
	}
	assert_int_equal(units, (size_t)in->stages * (size_t)in->microbatches * 2);
	return units;
}

static void test_gpipe_is_the_audit_formula(void **state)
{
	uint64_t seed = 12345;
	int trial;

	(void)state;
	for (trial = 0; trial < 300; trial++) {
		int S = 1 + (int)(next01(&seed) * 6);
		long c = 1 + (long)(next01(&seed) * 9);
		double p[8], o[8];
		struct sched_input in = { S, S, c, COST_GPIPE, p, S > 1 ? o : NULL };
		struct sched s;
		struct uniap_err err = { 0 };
		int i;

		for (i = 0; i < S; i++) {
			p[i] = next01(&seed);
			o[i] = trial % 3 == 0 ? 0 : next01(&seed) * (trial % 2 ? 2 : 0.2);
		}
		assert_int_equal(sched_simulate(&in, &s, &err), UNIAP_OK);
		check_invariants(&in, &s);
		assert_true(fabs(s.length_s - audit(p, o, S, c)) <= 1e-12 * audit(p, o, S, c));
		sched_release(&s);
	}
}

static void test_equal_stages_closed_form(void **state)
{
	static const enum cost_schedule kinds[] = { COST_GPIPE, COST_1F1B, COST_INTERLEAVED };
	int k, P, v;
	long c;

	(void)state;
	for (k = 0; k < 3; k++)
		for (P = 1; P <= 4; P++)
			for (v = 1; v <= (kinds[k] == COST_INTERLEAVED ? 3 : 1); v++)
				for (c = P; c <= 3 * P; c += P) {
					const double t = 0.3; /* per rank and micro-batch, so t / v per chunk */
					double p[12];
					struct sched_input in = { P, P * v, c, kinds[k], p, NULL };
					struct sched s;
					struct uniap_err err = { 0 };
					double want = (double)c * t + (double)(P - 1) * t / v;
					int i;

					for (i = 0; i < P * v; i++)
						p[i] = t / v;
					assert_int_equal(sched_simulate(&in, &s, &err), UNIAP_OK);
					check_invariants(&in, &s);
					if (fabs(s.length_s - want) > 1e-12)
						fail_msg("%s pp %d v %d c %ld: %.15g, want %.15g", cost_schedule_name(kinds[k]), P,
						         v, c, s.length_s, want);
					sched_release(&s);
				}
}

static double sim_length(int S, long c, enum cost_schedule kind, const double *p, const double *o)
{
	struct sched_input in = { S, S, c, kind, p, S > 1 ? o : NULL };
	struct sched s;
	struct uniap_err err = { 0 };
	double len;

	assert_int_equal(sched_simulate(&in, &s, &err), UNIAP_OK);
	check_invariants(&in, &s);
	len = s.length_s;
	sched_release(&s);
	return len;
}

static void test_1f1b_blocking_by_hand(void **state)
{
	/* Megatron-LM's 1F1B with its blocking exchanges (schedsim.h).  Two stages of 1 s, a
	 * transfer of 0.9 s, one micro-batch: forward 1/3, the activation 0.3, the last stage's
	 * forward and backward 1, the gradient 0.6, the backward 2/3: Σp + Σo = 2.9 */
	double p2[] = { 1, 1 }, o2[] = { 0.9 };
	/* stage 0 sets the pace and never waits: its 8 forwards and 8 backwards back to back,
	 * c p_0 = 2.4, where the objective charges GPipe's fill and drain, 0.6 + 7 x 0.3 = 2.7 */
	double p4[] = { 0.3, 0.1, 0.1, 0.1 }, o4[] = { 0, 0, 0 };

	(void)state;
	assert_true(fabs(sim_length(2, 1, COST_1F1B, p2, o2) - 2.9) < 1e-12);
	assert_true(fabs(sim_length(4, 8, COST_1F1B, p4, o4) - 2.4) < 1e-12);
	/* two stages, 8 micro-batches: in the steady state both ranks meet in one call that
	 * sends an activation one way and a gradient the other, max(0.3, 0.6), so a micro-batch
	 * costs 1 + 0.6 where the objective's cycle is 1 + 0.9; 14.1 against 16.2 */
	assert_true(fabs(sim_length(2, 8, COST_1F1B, p2, o2) - 14.1) < 1e-12);
	assert_true(fabs(audit(p2, o2, 2, 8) - 16.2) < 1e-12);
}

static void test_1f1b_blocking_reference(void **state)
{
	/* lengths from the independent simulation of scripts/check-1f1b-blocking.py (its
	 * simulate(p, o, c, 1/3)), which follows the same Megatron-LM schedule */
	static const struct {
		int S;
		long c;
		double p[4], o[3], want;
	} ref[] = {
		{ 3, 5, { 0.5, 0.2, 0.7 }, { 0.1, 0.4 }, 5.766666666666667 },
		{ 4, 3, { 0.25, 0.5, 0.125, 1 }, { 0.5, 0.25, 2 }, 9.291666666666668 },
	};
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(ref) / sizeof(ref[0]); k++) {
		double got = sim_length(ref[k].S, ref[k].c, COST_1F1B, ref[k].p, ref[k].o);

		if (fabs(got - ref[k].want) > 1e-12 * ref[k].want)
			fail_msg("case %zu: %.17g, want %.17g", k, got, ref[k].want);
	}
}

static void test_1f1b_never_over_the_objective(void **state)
{
	/* the optimizer minimises the audit formula for 1F1B too (docs/optimizer.md, "What is
	 * left"): it must be an upper bound of the schedule as run, fewer micro-batches than
	 * stages included */
	uint64_t seed = 20261129;
	int trial;

	(void)state;
	for (trial = 0; trial < 2000; trial++) {
		int S = 1 + (int)(next01(&seed) * 7);
		long c = 1 + (long)(next01(&seed) * 12);
		double p[8], o[8], scale = trial % 4 == 0 ? 0 : trial % 4 == 1 ? 0.1 : trial % 4 == 2 ? 1 : 3;
		double len, bound;
		int i;

		for (i = 0; i < S; i++) {
			p[i] = next01(&seed);
			o[i] = next01(&seed) * scale;
		}
		len = sim_length(S, c, COST_1F1B, p, o);
		bound = audit(p, o, S, c);
		if (len > bound * (1 + 1e-12))
			fail_msg("trial %d: pp %d, c %ld: 1F1B %.15g over the objective %.15g", trial, S, c, len,
			         bound);
	}
}

static void test_graph_is_the_layout(void **state)
{
	/* sched_graph_build's longest path is the layout's length (the MILP's makespan rows
	 * are these arcs): GPipe and 1F1B, random stage and transfer times, fewer micro-batches
	 * than stages included, and interleaved's list schedule; every arc's tail comes before its
	 * head, and a graph built once serves every time vector */
	uint64_t seed = 20261130;
	int trial;

	(void)state;
	for (trial = 0; trial < 600; trial++) {
		int S = 1 + (int)(next01(&seed) * 7), i, v;
		long c = 1 + (long)(next01(&seed) * 12);
		enum cost_schedule kind = trial % 3 == 0 ? COST_GPIPE : COST_1F1B;
		struct sched_graph g;
		struct uniap_err err = { 0 };
		double *t;
		size_t r;

		assert_int_equal(sched_graph_build(S, S, c, kind, &g, &err), UNIAP_OK);
		for (r = 0; r < g.n_arcs; r++) {
			assert_true(g.arcs[r].from < g.arcs[r].to && g.arcs[r].to < g.n_nodes);
			assert_true(r == 0 || g.arcs[r - 1].to <= g.arcs[r].to);
		}
		t = malloc((size_t)g.n_nodes * sizeof(*t));
		assert_non_null(t);
		for (v = 0; v < 3; v++) {
			double p[8], o[8], scale = v == 0 ? 0 : v == 1 ? 0.2 : 2, want, got;

			for (i = 0; i < S; i++) {
				p[i] = next01(&seed);
				o[i] = next01(&seed) * scale;
			}
			want = sim_length(S, c, kind, p, o);
			got = sched_graph_length(&g, p, o, t);
			if (fabs(got - want) > 1e-12 * want)
				fail_msg("trial %d: %s pp %d c %ld: graph %.17g, layout %.17g", trial,
				         kind == COST_GPIPE ? "gpipe" : "1f1b", S, c, got, want);
		}
		free(t);
		sched_graph_release(&g);
	}
	/* interleaved: the list schedule on R ranks of v chunks, c a multiple of R */
	for (trial = 0; trial < 300; trial++) {
		int R = 2 + (int)(next01(&seed) * 3), v = 2 + (int)(next01(&seed) * 2), S = R * v, i, k;
		long c = (long)R * (1 + (long)(next01(&seed) * 4));
		struct sched_graph g;
		struct uniap_err err = { 0 };
		double *t, p[16], o[16];

		assert_int_equal(sched_graph_build(R, S, c, COST_INTERLEAVED, &g, &err), UNIAP_OK);
		t = malloc((size_t)g.n_nodes * sizeof(*t));
		assert_non_null(t);
		for (k = 0; k < 3; k++) {
			struct sched_input in = { R, S, c, COST_INTERLEAVED, p, o };
			struct sched sc;
			double got;

			for (i = 0; i < S; i++) {
				p[i] = next01(&seed);
				o[i] = next01(&seed) * (k == 0 ? 0 : k == 1 ? 0.2 : 2);
			}
			assert_int_equal(sched_simulate(&in, &sc, &err), UNIAP_OK);
			got = sched_graph_length(&g, p, o, t);
			if (fabs(got - sc.length_s) > 1e-12 * sc.length_s)
				fail_msg("interleaved trial %d: pp %d v %d c %ld: graph %.17g, layout %.17g", trial, R, v, c, got,
				         sc.length_s);
			sched_release(&sc);
		}
		free(t);
		sched_graph_release(&g);
	}
	{
		struct sched_graph g;
		struct uniap_err err = { 0 };

		assert_int_equal(sched_graph_build(2, 3, 8, COST_INTERLEAVED, &g, &err), UNIAP_E_ARG);
		assert_int_equal(sched_graph_build(2, 4, 8, COST_1F1B, &g, &err), UNIAP_E_ARG);
		assert_int_equal(sched_graph_build(0, 0, 8, COST_1F1B, &g, &err), UNIAP_E_ARG);
		assert_int_equal(sched_graph_build(1, 1, SCHED_MAX_UNITS + 1L, COST_1F1B, &g, &err), UNIAP_E_LIMIT);
	}
}

static void test_1f1b_lower_bounds(void **state)
{
	/* what the makespan objective's bounds rest on (opt_makespan_factor): 1F1B as run takes
	 * at least L_i = sum_{j<i} (p_j + o_j) + c p_i for every stage, and so at least
	 * K (sum p + sum o / c); each is met exactly on some inputs (no transfers: the first
	 * stage setting the pace, or equal stages at the last one) */
	uint64_t seed = 20261201;
	int trial, tight = 0;

	(void)state;
	for (trial = 0; trial < 3000; trial++) {
		int S = 1 + (int)(next01(&seed) * 7), i;
		long c = 1 + (long)(next01(&seed) * 12);
		double p[8], o[8], scale = trial % 3 == 0 ? 0 : trial % 3 == 1 ? 0.2 : 2, len, pre = 0, worst = 0;
		double sp = 0, so = 0;

		for (i = 0; i < S; i++) {
			p[i] = trial % 5 == 0 ? 1 : next01(&seed);
			o[i] = next01(&seed) * scale;
		}
		len = sim_length(S, c, COST_1F1B, p, o);
		for (i = 0; i < S; i++) {
			worst = fmax(worst, pre + (double)c * p[i]);
			pre += p[i] + (i + 1 < S ? o[i] : 0);
			sp += p[i];
			so += i + 1 < S ? o[i] : 0;
		}
		if (worst > len * (1 + 1e-12))
			fail_msg("trial %d: pp %d c %ld: max L_i %.17g over the makespan %.17g", trial, S, c, worst, len);
		if (opt_makespan_factor(c, S) * (sp + so / (double)c) > len * (1 + 1e-12))
			fail_msg("trial %d: pp %d c %ld: K bound over the makespan %.17g", trial, S, c, len);
		tight += worst >= len * (1 - 1e-12);
	}
	assert_true(tight > 100);
}

static void test_refusals(void **state)
{
	double p[] = { 1, 1, 1 }, bad[] = { 1, NAN, 1 };
	struct sched s;
	struct uniap_err err = { 0 };
	struct sched_input in = { 2, 3, 4, COST_1F1B, p, p };

	(void)state;
	assert_int_equal(sched_simulate(&in, &s, &err), UNIAP_E_ARG);
	in = (struct sched_input){ 3, 3, 4, COST_GPIPE, bad, p };
	assert_int_equal(sched_simulate(&in, &s, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "stages[1].time_s"));
	in = (struct sched_input){ 3, 3, 0, COST_GPIPE, p, p };
	assert_int_equal(sched_simulate(&in, &s, &err), UNIAP_E_ARG);
	in = (struct sched_input){ 1, 1, SCHED_MAX_UNITS + 1L, COST_GPIPE, p, NULL };
	assert_int_equal(sched_simulate(&in, &s, &err), UNIAP_E_LIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpipe_is_the_audit_formula),
		cmocka_unit_test(test_equal_stages_closed_form),
		cmocka_unit_test(test_1f1b_blocking_by_hand),
		cmocka_unit_test(test_1f1b_blocking_reference),
		cmocka_unit_test(test_1f1b_never_over_the_objective),
		cmocka_unit_test(test_graph_is_the_layout),
		cmocka_unit_test(test_1f1b_lower_bounds),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
