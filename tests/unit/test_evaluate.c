/*
 * test_evaluate.c - plan evaluation against the audit format on random plans.
 *
 * For random models (chains with skip edges), clusters and candidates, a
 * random assignment is evaluated three ways that must agree: plan_evaluate();
 * an independent recomputation from the printed audit JSON (what an outside
 * checker does); and the plan document round trip (jenc_plan -> text ->
 * jdec_plan -> plan_doc_resolve -> plan_evaluate), whose tpi_s must equal
 * its own recomputed TPI.  The per-stage memory breakdown (cost_stage_memory)
 * adds up to the audit stage memory and, with the allowances, to the device
 * memory, and its free bytes are >= 0 exactly when the stage fits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cost.h"
#include "fixtures.h"
#include "jdecode.h"
#include "jencode.h"
#include "plan.h"

static unsigned long rng_state = 12345;

static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 6364136223846793005UL + 1442695040888963407UL;
	return (unsigned)((rng_state >> 33) % n);
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);

	assert_true(cJSON_IsNumber(x));
	return x->valuedouble;
}

static double at(const cJSON *arr, size_t i)
{
	const cJSON *x = cJSON_GetArrayItem(arr, (int)i);

	assert_true(cJSON_IsNumber(x));
	return x->valuedouble;
}

/*
 * The audit formula computed from the JSON alone.  Returns TPI, or -1 when
 * the placement is invalid, -2 when it is over memory.
 */
static double audit_tpi(const cJSON *doc, const int *stage, const size_t *strat)
{
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(doc, "layers");
	const cJSON *edges = cJSON_GetObjectItemCaseSensitive(doc, "edges");
	const cJSON *inflight = cJSON_GetObjectItemCaseSensitive(doc, "inflight_microbatches");
	int pp = (int)num(doc, "pp"), i, j;
	double c = num(doc, "microbatches"), limit = num(doc, "memory_limit_bytes");
	double p[64] = { 0 }, o[64] = { 0 }, mem[64] = { 0 }, sum = 0, worst = 0;
	int count[64] = { 0 };
	const cJSON *l, *e;
	size_t u = 0;

	cJSON_ArrayForEach(l, layers) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(l, "time_s");
		const cJSON *mf = cJSON_GetObjectItemCaseSensitive(l, "memory_fixed_bytes");
		const cJSON *ma = cJSON_GetObjectItemCaseSensitive(l, "memory_per_microbatch_bytes");

		p[stage[u]] += at(t, strat[u]);
		mem[stage[u]] += at(mf, strat[u]) + at(inflight, (size_t)stage[u]) * at(ma, strat[u]);
		count[stage[u]]++;
		u++;
	}
	cJSON_ArrayForEach(e, edges) {
		size_t a = (size_t)num(e, "from"), b = (size_t)num(e, "to");
		const cJSON *same = cJSON_GetObjectItemCaseSensitive(e, "same_stage_s");
		const cJSON *cross = cJSON_GetObjectItemCaseSensitive(e, "cross_stage_s");

		if (stage[a] > stage[b])
			return -1;
		if (stage[a] == stage[b])
			p[stage[a]] += at(cJSON_GetArrayItem(same, (int)strat[a]), strat[b]);
		for (j = stage[a]; j < stage[b]; j++)
			o[j] += at(cJSON_GetArrayItem(cross, (int)strat[a]), strat[b]);
	}
	for (i = 0; i < pp; i++) {
		if (count[i] == 0)
			return -1;
		sum += p[i];
	}
	for (j = 0; j + 1 < pp; j++)
		sum += o[j];
	/* each stage's cycle: receive, compute, send (transfers block both ranks) */
	for (i = 0; i < pp; i++)
		worst = fmax(worst, (i > 0 ? o[i - 1] : 0) + p[i] + (i + 1 < pp ? o[i] : 0));
	for (i = 0; i < pp; i++)
		if (mem[i] > limit)
			return -2;
	return sum + (c - 1) * worst;
}

/* The identities of cost.h's struct cost_stage_memory on one evaluated assignment. */
static void check_memory_breakdown(const struct cluster_profile *cl, const struct model_profile *m,
                                   const struct cost_candidate *cand, const int *stage, const size_t *strat,
                                   const struct plan_eval *ev)
{
	struct cost_stage_memory mem[8];
	struct uniap_err err = { 0 };
	int i, all_fit = 1, decided = 1;

	assert_true(cand->pp <= 8);
	assert_int_equal(cost_stage_memory(cl, m, cand, stage, strat, mem, &err), UNIAP_OK);
	for (i = 0; i < cand->pp; i++) {
		const struct cost_stage_memory *x = &mem[i];
		double parts = x->model_states_bytes + x->fsdp_accumulation_bytes + x->activation_bytes;
		double whole = x->allocated_bytes + x->fragmentation_bytes + x->fsdp_transient_bytes +
		               x->reserved_bytes + x->margin_bytes + x->free_bytes;

		/* the audit stage memory, exactly, and its three parts */
		assert_true(x->allocated_bytes == ev->stage_memory_bytes[i]);
		assert_true(fabs(parts - x->allocated_bytes) <= 1e-12 * x->allocated_bytes);
		/* model states split into weights, gradients and optimizer states, each >= 0 */
		assert_true(x->weight_bytes >= 0 && x->gradient_bytes >= 0 && x->optimizer_bytes >= 0);
		assert_true(fabs(x->weight_bytes + x->gradient_bytes + x->optimizer_bytes - x->model_states_bytes) <=
		            1e-12 * x->model_states_bytes);
		assert_int_equal(x->inflight_microbatches, cand->inflight[i]);
		/* everything reconciles to the device memory */
		assert_true(fabs(whole - x->device_memory_bytes) <= 1e-9 * x->device_memory_bytes);
		assert_true(x->device_memory_bytes == cl->memory_bytes);
		assert_true(x->margin_bytes == cl->memory_margin * cl->memory_bytes);
		assert_true(x->reserved_bytes == cl->reserved_bytes);
		assert_true(x->memory_limit_bytes == cand->memory_limit_bytes);
		/* the fit check: allocated <= limit iff free >= 0 (away from rounding) */
		if (fabs(x->free_bytes) > 1e-9 * x->device_memory_bytes)
			assert_int_equal(x->allocated_bytes <= x->memory_limit_bytes, x->free_bytes >= 0);
		else
			decided = 0;
		all_fit &= x->free_bytes >= 0;
	}
	if (decided)
		assert_int_equal(ev->fits, all_fit);
}

static void random_case(int trial)
{
	static const int dev[] = { 2, 4, 8 };
	static const double bw[] = { 20, 8, 2 };
	static const long batches[] = { 4, 8, 12, 16, 32 };
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate cand;
	struct plan_eval ev, ev2;
	struct plan_doc doc;
	struct uniap_err err;
	struct cost_options o = { 0 };
	size_t L = 2 + rnd(9), u, K;
	int stage[16], stage2[16], pp, divisors[4] = { 1, 2, 4, 8 }, i;
	size_t strat[16], strat2[16];
	cJSON *audit, *parsed, *plan_json;
	char *text, *plan_text;
	double expect;

	assert_int_equal(fx_cluster(&cl, 2, 4, dev, bw, 3, rnd(2) ? 8e9 : 64e9, 1e8, 1 + rnd(5) * 0.1), 0);
	cl.memory_fragmentation = (trial % 3) * 0.05;
	cl.memory_margin = (trial % 4) * 0.02;
	assert_int_equal(fx_model_chain(&m, L, rnd(2) ? MODEL_MIXED : MODEL_FP32, 1e-3 * (1 + rnd(9)),
	                                rnd(2) ? 6e-4 : 0, 1e6 * (1 + rnd(50)), 1e7 * (1 + rnd(9)),
	                                rnd(2) ? 6e6 : 0, 1e5 * (1 + rnd(9)), 1e5), 0);
	if (L > 3 && rnd(2))
		assert_int_equal(fx_model_add_edge(&m, 0, L - 1), 0);  /* a skip edge */
	do
		pp = divisors[rnd(4)];
	while ((size_t)pp > L);
	o.batch = batches[rnd(5)];
	do
		o.microbatches = 1 + rnd((unsigned)o.batch);
	while (o.batch % o.microbatches);
	o.pp = pp;
	o.schedule = rnd(2) ? COST_1F1B : COST_GPIPE;
	o.recompute = (int)rnd(2);
	assert_int_equal(cost_build(&cl, &m, &o, &cand, &err), UNIAP_OK);
	K = cost_k(&cand);

	/* a random non-decreasing placement with every stage used (or, 1 in 5, a broken one) */
	for (u = 0; u < L; u++)
		stage[u] = 0;
	for (i = 1; i < pp; i++) {
		size_t cut;

		do
			cut = 1 + rnd((unsigned)L - 1);
		while (stage[cut] != stage[cut - 1]);
		for (u = cut; u < L; u++)
			stage[u]++;
	}
	if (pp > 1 && trial % 5 == 0)
		stage[0] = pp - 1;
	for (u = 0; u < L; u++)
		strat[u] = rnd((unsigned)K);
	/* a given plan is judged by its own FSDP buffers (what plan_doc_apply does) */
	assert_true(cost_plan_memory_limit(&cl, &m, &cand, strat) >= cand.memory_limit_bytes);
	cand.memory_limit_bytes = cost_plan_memory_limit(&cl, &m, &cand, strat);

	assert_int_equal(plan_evaluate(&cand, stage, strat, &ev, &err), UNIAP_OK);
	check_memory_breakdown(&cl, &m, &cand, stage, strat, &ev);
	audit = jenc_costs(&cand);
	text = jenc_print(audit, 0);
	parsed = cJSON_Parse(text);
	assert_non_null(parsed);
	expect = audit_tpi(parsed, stage, strat);
	if (expect == -1) {
		assert_false(ev.valid);
	} else {
		assert_true(ev.valid);
		assert_int_equal(ev.fits, expect != -2);
		if (expect >= 0)
			assert_true(fabs(ev.tpi_s - expect) <= 1e-12 * expect);
	}

	if (ev.valid) {
		/* the plan document round trip reproduces its own tpi_s exactly */
		plan_json = jenc_plan(&cand, stage, strat, &ev);
		plan_text = jenc_print(plan_json, 1);
		assert_int_equal(jdec_plan(plan_text, strlen(plan_text), &doc, &err), UNIAP_OK);
		assert_int_equal(plan_doc_resolve(&doc, &cand, stage2, strat2, &err), UNIAP_OK);
		assert_memory_equal(stage, stage2, L * sizeof(int));
		assert_memory_equal(strat, strat2, L * sizeof(size_t));
		assert_int_equal(plan_evaluate(&cand, stage2, strat2, &ev2, &err), UNIAP_OK);
		assert_true(ev2.tpi_s == doc.tpi_s);
		assert_int_equal(plan_doc_recompute(&doc), o.recompute &&
		                 strstr(plan_text, "+rc") != NULL);
		plan_eval_release(&ev2);
		plan_doc_release(&doc);
		cJSON_free(plan_text);
		cJSON_Delete(plan_json);
	}
	cJSON_Delete(parsed);
	cJSON_free(text);
	cJSON_Delete(audit);
	plan_eval_release(&ev);
	cost_candidate_release(&cand);
	model_release(&m);
	cluster_release(&cl);
}

static void test_random_plans(void **state)
{
	int trial;

	(void)state;
	for (trial = 0; trial < 300; trial++)
		random_case(trial);
}

/* A 3-layer chain on 4 devices, pp 2, batch 8: its candidate and one plan's evaluation. */
struct tiny {
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate cand;
	struct plan_eval ev;
};

static void tiny_setup(struct tiny *t, long microbatches, const int *stage, const size_t *strat)
{
	static const int dev[] = { 4 };
	static const double bw[] = { 10 };
	struct cost_options o = { .batch = 8, .pp = 2, .microbatches = microbatches };
	struct uniap_err err;

	assert_int_equal(fx_cluster(&t->cl, 1, 4, dev, bw, 1, 16e9, 0, 1), 0);
	assert_int_equal(fx_model_chain(&t->m, 3, MODEL_FP32, 1e-3, 0, 1e6, 1e6, 0, 1e5, 1e5), 0);
	assert_int_equal(cost_build(&t->cl, &t->m, &o, &t->cand, &err), UNIAP_OK);
	assert_int_equal(plan_evaluate(&t->cand, stage, strat, &t->ev, &err), UNIAP_OK);
}

static void tiny_release(struct tiny *t)
{
	plan_eval_release(&t->ev);
	cost_candidate_release(&t->cand);
	model_release(&t->m);
	cluster_release(&t->cl);
}

/* plan_doc_resolve names the field at fault. */
static void test_resolve_errors(void **state)
{
	struct tiny f;
	struct plan_doc doc;
	struct uniap_err err;
	int stage[3] = { 0, 1, 1 }, s2[3];
	size_t strat[3] = { 0, 1, 2 }, k2[3];
	struct cost_candidate *cand = &f.cand;
	cJSON *j;
	char *t;

	(void)state;
	tiny_setup(&f, 2, stage, strat);
	j = jenc_plan(cand, stage, strat, &f.ev);
	t = jenc_print(j, 0);
	assert_int_equal(jdec_plan(t, strlen(t), &doc, &err), UNIAP_OK);

	free(doc.layer_names[1]);
	doc.layer_names[1] = strdup("other");
	assert_int_equal(plan_doc_resolve(&doc, cand, s2, k2, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "plan.layers[1].name"));
	free(doc.layer_names[1]);
	doc.layer_names[1] = strdup("l1");
	free(doc.strategy_names[2]);
	doc.strategy_names[2] = strdup("tp3");
	assert_int_equal(plan_doc_resolve(&doc, cand, s2, k2, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "plan.layers[2].strategy.name"));
	doc.microbatches = 4;
	assert_int_equal(plan_doc_resolve(&doc, cand, s2, k2, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "plan.microbatch_size"));
	doc.pp = 1;
	assert_int_equal(plan_doc_resolve(&doc, cand, s2, k2, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "plan.pp"));

	plan_doc_release(&doc);
	cJSON_free(t);
	cJSON_Delete(j);
	tiny_release(&f);
}

/*
 * The plan document carries what a drawing of the schedule needs: each
 * stage's time_s and, on every stage but the last, transfer_s (o_i), whose
 * audit sum gives tpi_s back; and memory_limit_bytes, the candidate's.  A
 * reader ignores both but refuses a negative transfer_s, naming it.
 */
static void test_plan_doc_schedule_numbers(void **state)
{
	struct tiny f;
	struct plan_doc doc;
	struct uniap_err err;
	int stage[3] = { 0, 0, 1 };
	size_t strat[3] = { 0, 1, 2 };
	const cJSON *stages, *s, *x;
	double sum = 0, top = 0, tpi, p[2] = { 0, 0 }, o = 0;
	int i = 0;
	cJSON *j;
	char *t;

	(void)state;
	tiny_setup(&f, 4, stage, strat);
	/* read back from the text, as a client does (the encoder keeps numbers as raw text) */
	j = jenc_plan(&f.cand, stage, strat, &f.ev);
	assert_non_null(j);
	t = jenc_print(j, 0);
	cJSON_Delete(j);
	j = cJSON_Parse(t);
	cJSON_free(t);
	assert_non_null(j);
	x = cJSON_GetObjectItemCaseSensitive(j, "memory_limit_bytes");
	assert_true(cJSON_IsNumber(x));
	assert_true(x->valuedouble == f.cand.memory_limit_bytes);
	stages = cJSON_GetObjectItemCaseSensitive(j, "stages");
	assert_int_equal(cJSON_GetArraySize(stages), 2);
	cJSON_ArrayForEach(s, stages) {
		p[i] = cJSON_GetObjectItemCaseSensitive(s, "time_s")->valuedouble;
		x = cJSON_GetObjectItemCaseSensitive(s, "transfer_s");
		sum += p[i];
		if (i++ == 0) {
			assert_true(cJSON_IsNumber(x));
			assert_true(x->valuedouble > 0);
			assert_true(x->valuedouble == f.ev.comm_time_s[0]);
			o = x->valuedouble;
		} else {
			assert_null(x); /* the last stage has no boundary after it */
		}
	}
	/* the boundary's transfer holds both stages: each one's cycle includes it (cost.h) */
	sum += o;
	top = fmax(p[0] + o, o + p[1]);
	tpi = sum + (double)(f.cand.microbatches - 1) * top;
	assert_true(fabs(tpi - f.ev.tpi_s) <= 1e-12 * f.ev.tpi_s);

	t = jenc_print(j, 0);
	assert_int_equal(jdec_plan(t, strlen(t), &doc, &err), UNIAP_OK);
	plan_doc_release(&doc);
	cJSON_free(t);
	cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(stages, 0), "transfer_s"), -1);
	t = jenc_print(j, 0);
	assert_int_equal(jdec_plan(t, strlen(t), &doc, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "stages[0].transfer_s"));

	cJSON_free(t);
	cJSON_Delete(j);
	tiny_release(&f);
}

/* A plan naming an expert-parallel size its model's experts do not allow says so, naming the layer */
static void test_plan_doc_bad_ep(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct model_arch a;
	struct cost_candidate c;
	struct cost_options o = { .batch = 24, .pp = 1, .microbatches = 1, .schedule = COST_GPIPE };
	struct plan_applied applied;
	struct plan_doc doc;
	struct plan_eval ev = { 0 };
	struct uniap_err err;
	int stage[4] = { 0, 0, 0, 0 };
	size_t strat[4], u;
	cJSON *j;
	char *t;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.family = MODEL_ARCH_DECODER;
	a.layers = 2;
	a.hidden = 512;
	a.heads = 8;
	a.seq_len = 256;
	a.vocab = 1000;
	a.flash_attention = 1;
	a.precision = MODEL_MIXED;
	a.experts = 8;
	a.top_k = 2;
	a.moe_ffn_hidden = 256;
	assert_int_equal(catalog_transformer("moe", &a, &m, &err), UNIAP_OK);
	assert_int_equal(catalog_cluster("dgx-h100-x3", &cl, &err), UNIAP_OK);
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	for (u = 0; u < 4; u++)
		strat[u] = (size_t)strategy_find(&c.strategies, "dp24");
	assert_int_equal(plan_evaluate(&c, stage, strat, &ev, &err), UNIAP_OK);
	j = jenc_plan(&c, stage, strat, &ev);
	t = jenc_print(j, 0);
	assert_int_equal(jdec_plan(t, strlen(t), &doc, &err), UNIAP_OK);
	assert_int_equal(plan_doc_apply(&cl, &m, 24, &doc, &applied, &err), UNIAP_OK);
	plan_applied_release(&applied);
	/* ep 3 divides dp 24 but not the 8 experts */
	doc.ep[1] = 3;
	free(doc.strategy_names[1]);
	doc.strategy_names[1] = strdup("dp24+ep3");
	assert_int_equal(plan_doc_apply(&cl, &m, 24, &doc, &applied, &err), UNIAP_E_INVALID);
	assert_string_equal(err.msg, "plan.layers[1].strategy.ep: 3 must divide every MoE layer's experts (their gcd 8)");
	plan_applied_release(&applied);
	plan_doc_release(&doc);
	cJSON_free(t);
	cJSON_Delete(j);
	plan_eval_release(&ev);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_plans),
		cmocka_unit_test(test_resolve_errors),
		cmocka_unit_test(test_plan_doc_schedule_numbers),
		cmocka_unit_test(test_plan_doc_bad_ep),
	};

	return cmocka_run_group_tests_name("evaluate", tests, NULL, NULL);
}
