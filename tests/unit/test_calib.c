/*
 * test_calib.c - the calibration fit (core/calib.c) and the measured-runs
 * decoder (json/runs.c).
 *
 * Synthetic runs are predicted on a "true" cluster whose parameters differ
 * from the document's (the prior); fitting from the prior must recover the
 * true values within 2 %, stay inside the bounds when the truth is outside
 * them, and predict each left-out run almost exactly.  Layouts to plans
 * (the Megatron-LM split, strategy names) and decoder errors are tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "fixtures.h"
#include "runs.h"

#define T_FLOPS 2e11 /* forward FLOPs per sample of one layer */

/* 2 nodes x 4 devices: a 100 GB/s node level, a 10 GB/s cluster level; a 100 TFLOP/s peak. */
static void t_cluster(struct cluster_profile *c)
{
	static const int devices[] = { 4, 8 };
	static const double bw[] = { 100, 10 };

	assert_int_equal(fx_cluster(c, 2, 4, devices, bw, 2, 16e9, 1e9, 1.0), 0);
	c->peak_flops_per_s[MODEL_FP32] = 100e12;
	c->peak_flops_per_s[MODEL_MIXED] = 200e12;
	c->compute_efficiency = 0.5;
	/* physical links at twice the achieved bandwidths: the calibration's upper bounds */
	c->levels[0].link_bytes_per_s = 200e9;
	c->levels[1].link_bytes_per_s = 20e9;
	assert_int_equal(cluster_validate(c, NULL), UNIAP_OK);
}

/* A chain of 8 layers whose time comes from FLOPs. */
static void t_model(struct model_profile *m)
{
	struct model_layer_type *t;

	assert_int_equal(fx_model_chain(m, 8, MODEL_FP32, 1.0, 0, 50e6, 20e6, 0, 2e6, 1e6), 0);
	t = &m->types[0];
	free(t->forward_s);
	t->forward_s = NULL;
	t->n_forward_s = 0;
	t->forward_flops_per_sample = T_FLOPS;
	assert_int_equal(model_validate(m, NULL), UNIAP_OK);
}

/* Layouts of the synthetic runs: {pp, tp, microbatches} on 8 devices, batch 32. */
static const int t_layouts[][3] = {
	{ 1, 1, 1 }, { 1, 4, 1 }, { 2, 4, 4 }, { 1, 2, 2 }, { 2, 1, 8 }, { 1, 8, 1 }, { 4, 2, 8 }, { 2, 2, 4 },
};
#define T_RUNS (sizeof(t_layouts) / sizeof(t_layouts[0]))

struct t_set {
	struct cluster_profile prior, truth;
	struct model_profile model;
	struct plan_doc plans[T_RUNS];
	double memory[T_RUNS][4];
	struct calib_run runs[T_RUNS];
};

/* The runs of t_layouts measured on truth (time, and peak memory when memory is set). */
static void t_set_init(struct t_set *s, double eff, double bw0, double bw1, double reserved, int memory)
{
	size_t i;
	int j;

	memset(s, 0, sizeof(*s));
	t_cluster(&s->prior);
	t_model(&s->model);
	assert_int_equal(cluster_copy(&s->prior, &s->truth, NULL), UNIAP_OK);
	s->truth.compute_efficiency = eff;
	s->truth.levels[0].bw_bytes_per_s *= bw0;
	s->truth.levels[1].bw_bytes_per_s *= bw1;
	s->truth.reserved_bytes = reserved;
	for (i = 0; i < T_RUNS; i++) {
		struct calib_uniform u = { .pp = t_layouts[i][0], .tp = t_layouts[i][1], .fsdp = 1,
		                           .microbatches = t_layouts[i][2], .tp_inner = 1 };
		struct calib_prediction pr;
		struct uniap_err err = { 0 };

		assert_int_equal(calib_uniform_plan(&s->model, 8, 32, COST_GPIPE, &u, &s->plans[i], &err), UNIAP_OK);
		s->runs[i] = (struct calib_run){ .name = "r", .model = &s->model, .plan = &s->plans[i], .batch = 32 };
		assert_int_equal(calib_predict(&s->truth, &s->runs[i], &pr, &err), UNIAP_OK);
		s->runs[i].iteration_s = pr.iteration_s;
		if (memory) {
			for (j = 0; j < pr.pp; j++)
				s->memory[i][j] = pr.peak_memory_bytes[j];
			s->runs[i].peak_memory_bytes = s->memory[i];
		}
		calib_prediction_release(&pr);
	}
}

static void t_set_release(struct t_set *s)
{
	size_t i;

	for (i = 0; i < T_RUNS; i++)
		plan_doc_release(&s->plans[i]);
	cluster_release(&s->prior);
	cluster_release(&s->truth);
	model_release(&s->model);
}

static const struct calib_param *t_param(const struct calib_param *p, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(p[i].name, name) == 0)
			return &p[i];
	fail_msg("no parameter %s", name);
	return NULL;
}

static void t_near(double got, double want, double rel)
{
	if (fabs(got / want - 1.0) > rel)
		fail_msg("got %.9g, want %.9g within %g", got, want, rel);
}

/* The default selection fits efficiency, both levels and reserved memory; the fit recovers the truth. */
static void test_recover(void **state)
{
	struct t_set s;
	struct calib_param *p = NULL;
	struct calib_fit_info info;
	struct calib_options opt = { .prior_weight = 1e-6 };
	struct uniap_err err = { 0 };
	size_t n = 0;

	(void)state;
	t_set_init(&s, 0.4, 0.7, 1.3, 2.5e9, 1);
	assert_int_equal(calib_params_default(&s.prior, s.runs, T_RUNS, &p, &n, &err), UNIAP_OK);
	assert_int_equal(n, 4);
	assert_int_equal(calib_fit(&s.prior, s.runs, T_RUNS, -1, &opt, p, n, &info, &err), UNIAP_OK);
	t_near(t_param(p, n, "device.compute_efficiency")->value, 0.4, 0.02);
	t_near(t_param(p, n, "hierarchy[0].bandwidth")->value, 70e9, 0.02);
	t_near(t_param(p, n, "hierarchy[1].bandwidth")->value, 13e9, 0.02);
	t_near(t_param(p, n, "device.reserved_bytes")->value, 2.5e9, 0.02);
	t_near(t_param(p, n, "hierarchy[1].bandwidth")->prior, 10e9, 1e-12);
	assert_true(info.cost < info.cost_initial);
	free(p);
	t_set_release(&s);
}

/* A cluster with a measured all-reduce table: collectives.bandwidth scales it, and is recovered. */
static void test_measured_tables(void **state)
{
	static const char *const names[] = { "collectives.bandwidth", "device.compute_efficiency" };
	struct t_set s;
	struct calib_param *p = NULL;
	struct calib_options opt = { .prior_weight = 1e-6 };
	struct uniap_err err = { 0 };
	size_t n = 0, i;

	(void)state;
	t_set_init(&s, 0.5, 1.0, 1.0, 1e9, 0);
	/* the measured entries of the prior, and the truth's at 0.6 of them */
	assert_int_equal(fx_cluster_add_bw(&s.prior, CLUSTER_ALLREDUCE, 4, 1, 80), 0);
	assert_int_equal(fx_cluster_add_bw(&s.prior, CLUSTER_ALLREDUCE, 8, 1, 8), 0);
	assert_int_equal(fx_cluster_add_bw(&s.truth, CLUSTER_ALLREDUCE, 4, 1, 48), 0);
	assert_int_equal(fx_cluster_add_bw(&s.truth, CLUSTER_ALLREDUCE, 8, 1, 4.8), 0);
	s.truth.compute_efficiency = 0.4;
	for (i = 0; i < T_RUNS; i++) {
		struct calib_prediction pr;

		assert_int_equal(calib_predict(&s.truth, &s.runs[i], &pr, &err), UNIAP_OK);
		s.runs[i].iteration_s = pr.iteration_s;
		calib_prediction_release(&pr);
	}
	assert_int_equal(calib_params_select(&s.prior, names, 2, &p, &n, &err), UNIAP_OK);
	assert_int_equal(calib_fit(&s.prior, s.runs, T_RUNS, -1, &opt, p, n, NULL, &err), UNIAP_OK);
	t_near(t_param(p, n, "collectives.bandwidth")->value, 0.6, 0.02);
	t_near(t_param(p, n, "device.compute_efficiency")->value, 0.4, 0.02);
	/* the document's own tables are untouched */
	t_near(s.prior.coll[CLUSTER_ALLREDUCE][0].bw_bytes_per_s, 80e9, 1e-12);
	free(p);
	t_set_release(&s);
}

/* A truth outside the bounds: the fit stops at the bound, never past it. */
static void test_bounds(void **state)
{
	static const char *const names[] = { "hierarchy.bandwidth", "device.compute_efficiency" };
	struct t_set s;
	struct calib_param *p = NULL;
	struct calib_options opt = { .prior_weight = 1e-6 };
	struct uniap_err err = { 0 };
	const struct calib_param *b0;
	size_t n = 0, i;

	(void)state;
	t_set_init(&s, 0.5, 3.0, 0.5, 1e9, 0);
	assert_int_equal(calib_params_select(&s.prior, names, 2, &p, &n, &err), UNIAP_OK);
	assert_int_equal(n, 3);
	assert_int_equal(calib_fit(&s.prior, s.runs, T_RUNS, -1, &opt, p, n, NULL, &err), UNIAP_OK);
	for (i = 0; i < n; i++) {
		assert_true(p[i].value >= p[i].lo);
		assert_true(p[i].value <= p[i].hi);
	}
	b0 = t_param(p, n, "hierarchy[0].bandwidth");
	t_near(b0->hi, 200e9, 1e-12);
	t_near(b0->value, 200e9, 0.02);
	t_near(t_param(p, n, "hierarchy[1].bandwidth")->value, 5e9, 0.02);
	/* a fit on its bound is refused, naming the parameter and the bound */
	assert_int_equal(calib_on_bound(b0), 1);
	assert_int_equal(calib_on_bound(t_param(p, n, "hierarchy[1].bandwidth")), 0);
	assert_int_equal(calib_check_bounds(p, n, &err), UNIAP_E_INFEASIBLE);
	assert_non_null(strstr(err.msg, "hierarchy[0].bandwidth at its upper bound 2e+11"));
	assert_null(strstr(err.msg, "hierarchy[1]"));
	free(p);
	/* without a link the bound is 1.25 x the document's figure (a measured or
	 * derated figure is at least 0.8 of its link) */
	s.prior.levels[0].link_bytes_per_s = 0;
	assert_int_equal(calib_params_select(&s.prior, names, 2, &p, &n, &err), UNIAP_OK);
	t_near(t_param(p, n, "hierarchy[0].bandwidth")->hi, 125e9, 1e-12);
	t_near(t_param(p, n, "hierarchy[1].bandwidth")->hi, 20e9, 1e-12);
	free(p);
	t_set_release(&s);
}

/* Leave-one-out on exact synthetic data predicts every run almost exactly. */
static void test_leave_one_out(void **state)
{
	struct t_set s;
	struct calib_param *p = NULL;
	struct calib_options opt = { .prior_weight = 1e-6 };
	struct uniap_err err = { 0 };
	double loo[T_RUNS];
	size_t n = 0, i;

	(void)state;
	t_set_init(&s, 0.45, 0.8, 1.2, 1e9, 0);
	assert_int_equal(calib_params_default(&s.prior, s.runs, T_RUNS, &p, &n, &err), UNIAP_OK);
	assert_int_equal(n, 3);
	assert_int_equal(calib_leave_one_out(&s.prior, s.runs, T_RUNS, &opt, p, n, loo, &err), UNIAP_OK);
	for (i = 0; i < T_RUNS; i++)
		t_near(loo[i], s.runs[i].iteration_s, 0.01);
	free(p);
	t_set_release(&s);
}

/* The cancel hook's countdown: stops once it reaches 0; counts the polls. */
struct t_cancel {
	int left, polls;
};

static int t_cancel_poll(void *ctx)
{
	struct t_cancel *c = ctx;

	c->polls++;
	return c->left-- <= 0;
}

/* The cancel hook stops a fit after a few evaluations and leave-one-out between or inside folds. */
static void test_cancel(void **state)
{
	static const int after[] = { 0, 1, 3, 20 };
	struct t_set s;
	struct calib_param *p = NULL;
	struct t_cancel tc;
	struct calib_options opt = { .prior_weight = 1e-6, .cancel = t_cancel_poll, .cancel_ctx = &tc };
	struct uniap_err err = { 0 };
	double loo[T_RUNS];
	size_t n = 0, k;

	(void)state;
	t_set_init(&s, 0.45, 0.8, 1.2, 1e9, 0);
	assert_int_equal(calib_params_default(&s.prior, s.runs, T_RUNS, &p, &n, &err), UNIAP_OK);
	for (k = 0; k < sizeof(after) / sizeof(after[0]); k++) {
		tc = (struct t_cancel){ .left = after[k] };
		assert_int_equal(calib_fit(&s.prior, s.runs, T_RUNS, -1, &opt, p, n, NULL, &err), UNIAP_E_CANCELED);
		assert_int_equal(tc.polls, after[k] + 1);
		assert_string_equal(err.msg, "calibration: canceled");
		tc = (struct t_cancel){ .left = after[k] };
		assert_int_equal(calib_leave_one_out(&s.prior, s.runs, T_RUNS, &opt, p, n, loo, &err), UNIAP_E_CANCELED);
		assert_int_equal(tc.polls, after[k] + 1);
	}
	/* a hook that never fires changes nothing */
	tc = (struct t_cancel){ .left = 1 << 30 };
	assert_int_equal(calib_fit(&s.prior, s.runs, T_RUNS, -1, &opt, p, n, NULL, &err), UNIAP_OK);
	assert_true(tc.polls > 1);
	free(p);
	t_set_release(&s);
}

/* OOM records move reserved_bytes: an OOM run predicted to fit pushes it up to where it does not. */
static void test_oom_hinge(void **state)
{
	static const char *const names[] = { "device.reserved_bytes" };
	struct t_set s;
	struct calib_param *p = NULL;
	struct calib_prediction pr;
	struct calib_options opt = { .prior_weight = 1e-6 };
	struct uniap_err err = { 0 };
	size_t n = 0;
	double peak, want;

	(void)state;
	t_set_init(&s, 0.5, 1.0, 1.0, 1e9, 0);
	assert_int_equal(calib_predict(&s.prior, &s.runs[0], &pr, &err), UNIAP_OK);
	assert_true(pr.fits);
	peak = pr.peak_memory_bytes[0] - s.prior.reserved_bytes;
	calib_prediction_release(&pr);
	s.runs[0].oom = 1;
	s.runs[0].iteration_s = 0;
	assert_int_equal(calib_params_select(&s.prior, names, 1, &p, &n, &err), UNIAP_OK);
	assert_int_equal(calib_fit(&s.prior, s.runs, 1, -1, &opt, p, n, NULL, &err), UNIAP_OK);
	/* the fitted reserve grows until the run no longer fits, or to its bound */
	want = 16e9 - peak < p[0].hi ? 16e9 - peak : p[0].hi;
	assert_true(p[0].value >= want * 0.999);
	assert_true(p[0].value <= p[0].hi);
	assert_true(want > 2e9);
	free(p);
	t_set_release(&s);
}

static void test_select_errors(void **state)
{
	static const char *const bad[] = { "device.frobs" };
	struct cluster_profile c;
	struct calib_param *p = NULL;
	struct uniap_err err = { 0 };
	size_t n = 0;

	(void)state;
	t_cluster(&c);
	assert_int_equal(calib_params_select(&c, bad, 1, &p, &n, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "--fit: unknown parameter \"device.frobs\" (known: device.compute_efficiency"));
	assert_null(p);
	cluster_release(&c);
}

/* Layouts to plans: strategy names and the Megatron-LM split. */
static void test_uniform_plan(void **state)
{
	static const struct {
		struct calib_uniform u;
		const char *strategy;
		int stages[8];
	} cases[] = {
		{ { .pp = 1, .tp = 2, .fsdp = 1, .microbatches = 2, .tp_inner = 1 }, "tp2.dp4", { 0 } },
		{ { .pp = 1, .tp = 2, .fsdp = 1, .microbatches = 2, .tp_inner = 0 }, "dp4.tp2", { 0 } },
		{ { .pp = 8, .tp = 1, .fsdp = 1, .microbatches = 8, .tp_inner = 1, .recompute = 1 }, "single+rc",
		  { 0, 1, 2, 3, 4, 5, 6, 7 } },
		{ { .pp = 3, .tp = 1, .dp = 1, .fsdp = 1, .microbatches = 4, .tp_inner = 1 }, "", { 0 } },
		{ { .pp = 2, .tp = 1, .fsdp = 2, .microbatches = 4, .tp_inner = 1 }, "fsdp2.dp2", { 0, 0, 0, 0, 1, 1, 1, 1 } },
		{ { .pp = 4, .tp = 2, .fsdp = 1, .microbatches = 4, .tp_inner = 1, .first_stage_layers = 1 }, "tp2",
		  { 0, 1, 1, 1, 2, 2, 3, 3 } },
		{ { .pp = 3, .tp = 1, .fsdp = 1, .dp = 2, .microbatches = 4, .tp_inner = 1, .last_stage_layers = 4 },
		  NULL, { 0 } },
	};
	struct model_profile m;
	size_t i, u;

	(void)state;
	t_model(&m);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct plan_doc p;
		struct uniap_err err = { 0 };
		uniap_code rc = calib_uniform_plan(&m, 8, 32, COST_1F1B, &cases[i].u, &p, &err);

		if (!cases[i].strategy || !cases[i].strategy[0]) {
			assert_int_not_equal(rc, UNIAP_OK);
			assert_non_null(strstr(err.msg, "uniform"));
			continue;
		}
		assert_int_equal(rc, UNIAP_OK);
		assert_string_equal(p.strategy_names[0], cases[i].strategy);
		assert_int_equal(p.schedule, COST_1F1B);
		for (u = 0; u < 8 && cases[i].u.pp > 1; u++)
			assert_int_equal(p.stage[u], cases[i].stages[u]);
		plan_doc_release(&p);
	}
	model_release(&m);
}

/* 10 layers on 4 stages: 3, 3, 2, 2 (the first stages get the extra layers). */
static void test_split_remainder(void **state)
{
	static const int want[10] = { 0, 0, 0, 1, 1, 1, 2, 2, 3, 3 };
	struct model_profile m;
	struct plan_doc p;
	struct calib_uniform u = { .pp = 4, .tp = 2, .fsdp = 1, .microbatches = 4, .tp_inner = 1 };
	size_t i;

	(void)state;
	assert_int_equal(fx_model_chain(&m, 10, MODEL_FP32, 1e-3, 0, 1e6, 1e6, 0, 1e5, 1e5), 0);
	assert_int_equal(calib_uniform_plan(&m, 8, 32, COST_GPIPE, &u, &p, NULL), UNIAP_OK);
	for (i = 0; i < 10; i++)
		assert_int_equal(p.stage[i], want[i]);
	plan_doc_release(&p);
	model_release(&m);
}

static void test_megatron_parse(void **state)
{
	struct calib_uniform u;
	struct uniap_err err = { 0 };
	char ignored[128];
	long gbs = 0;

	(void)state;
	assert_int_equal(calib_megatron_parse("--tensor-model-parallel-size 2 --pipeline-model-parallel-size=4 "
	                                      "--num-layers 24 --micro-batch-size 2 --global-batch-size 64 "
	                                      "--sequence-parallel --recompute-granularity full "
	                                      "--decoder-first-pipeline-num-layers 5",
	                                      &u, &gbs, ignored, sizeof(ignored), &err),
	                 UNIAP_OK);
	assert_int_equal(u.tp, 2);
	assert_int_equal(u.pp, 4);
	assert_int_equal(u.micro_batch_size, 2);
	assert_int_equal(u.recompute, 1);
	assert_int_equal(u.first_stage_layers, 5);
	assert_int_equal(u.dp, 0);
	assert_int_equal(gbs, 64);
	assert_string_equal(ignored, "--num-layers 24");
	assert_int_equal(u.sp, 1);
	/* MoE, interleaving, the distributed optimizer, FSDP, context parallelism */
	assert_int_equal(calib_megatron_parse("--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
	                                      "--virtual-pipeline-model-parallel-size 3 --expert-model-parallel-size 8 "
	                                      "--expert-tensor-parallel-size 1 --sequence-parallel "
	                                      "--use-distributed-optimizer --recompute-granularity selective",
	                                      &u, &gbs, ignored, sizeof(ignored), &err),
	                 UNIAP_OK);
	assert_int_equal(u.virtual_stages, 3);
	assert_int_equal(u.ep, 8);
	assert_int_equal(u.etp1, 1);
	assert_int_equal(u.zero, 1);
	assert_int_equal(u.selective, 1);
	u.dp = 4;
	{
		char name[64];

		calib_uniform_strategy(&u, name, sizeof(name));
		assert_string_equal(name, "tp2.dp4+sp+ep8+etp1+z1+sel");
	}
	assert_int_equal(calib_megatron_parse("--use-megatron-fsdp --num-layers-per-virtual-pipeline-stage 2", &u, &gbs,
	                                      ignored, sizeof(ignored), &err),
	                 UNIAP_OK);
	assert_int_equal(u.fsdp_all, 1);
	assert_int_equal(u.layers_per_chunk, 2);
	assert_int_equal(calib_megatron_parse("--tensor-model-parallel-size 2 --context-parallel-size 2 --sequence-parallel "
	                                      "--cp-comm-type a2a",
	                                      &u, &gbs, ignored, sizeof(ignored), &err),
	                 UNIAP_OK);
	assert_int_equal(u.cp, 2);
	assert_int_equal(u.cp_a2a, 1);
	u.dp = 4;
	{
		char name[64];

		calib_uniform_strategy(&u, name, sizeof(name));
		assert_string_equal(name, "tp2.dp4+sp+cp2");
	}
	assert_int_equal(calib_megatron_parse("--tensor-model-parallel-size two", &u, &gbs, ignored, sizeof(ignored),
	                                      &err),
	                 UNIAP_E_INVALID);
	assert_string_equal(err.msg, "--tensor-model-parallel-size: must be a positive integer, got \"two\"");
	assert_int_equal(calib_megatron_parse("--micro-batch-size", &u, &gbs, ignored, sizeof(ignored), &err),
	                 UNIAP_E_INVALID);
	assert_string_equal(err.msg, "--micro-batch-size: needs a value");
}

/* The runs decoder: errors name the JSON path. */
static void test_decode_errors(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{ "{\"runs\":[{\"name\":\"a\",\"batch\":8,\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,\"microbatches\":1},"
		  "\"measured\":{\"iteration_s\":1}},{\"name\":\"b\",\"batch\":8,\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,"
		  "\"microbatches\":1},\"measured\":{\"iteration_s\":1,\"samples_per_s\":8}}]}",
		  "runs[1].measured: give exactly one of iteration_s, samples_per_s" },
		{ "{\"runs\":[{\"name\":\"a\",\"batch\":8,\"measured\":{\"iteration_s\":1}}]}",
		  "runs[0]: give exactly one of plan, uniform, megatron" },
		{ "{\"runs\":[{\"name\":\"a\",\"batch\":8,\"uniform\":{\"pp\":0,\"tp\":1,\"dp\":8,\"microbatches\":1},"
		  "\"measured\":{\"iteration_s\":1}}]}",
		  "runs[0].uniform.pp: must be an integer between 1 and 1048576, got 0" },
		{ "{\"runs\":[{\"name\":\"a\",\"batch\":8,\"megatron\":\"--tensor-model-parallel-size x\","
		  "\"measured\":{\"iteration_s\":1}}]}",
		  "runs[0].megatron: --tensor-model-parallel-size: must be a positive integer, got \"x\"" },
		{ "{\"runs\":[{\"name\":\"a\",\"batch\":8,\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,\"microbatches\":1},"
		  "\"measured\":{\"iteration_s\":-1}}]}",
		  "runs[0].measured.iteration_s: must be > 0" },
		{ "{\"runs\":[{\"name\":\"a\",\"batch\":8,\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,\"microbatches\":1},"
		  "\"measured\":{\"iteration_s\":1}},{\"name\":\"a\",\"batch\":8,\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,"
		  "\"microbatches\":1},\"measured\":{\"iteration_s\":1}}]}",
		  "runs[1].name: duplicate of runs[0].name \"a\"" },
		{ "{\"runs\":[{\"name\":\"a\",\"batch\":8,\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,\"microbatches\":1},"
		  "\"measured\":{\"oom\":false}}]}",
		  "runs[0].measured: give iteration_s or samples_per_s unless oom is true" },
		{ "{\"runs\":{}}", "runs: must be an array, got object" },
		{ "{\"runs\":[{\"name\":\"a\",\"batch\":8,\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,\"microbatches\":1},"
		  "\"frob\":1,\"measured\":{\"iteration_s\":1}}]}",
		  "runs[0].frob: unknown key" },
		{ "{\"runs\":[{\"name\":\"a\",\"model\":\"no-such-model\",\"batch\":8,\"uniform\":{\"pp\":1,\"tp\":1,"
		  "\"dp\":8,\"microbatches\":1},\"measured\":{\"iteration_s\":1}}]}",
		  "runs[0].model: model \"no-such-model\": not in the catalog" },
		{ "{\"runs\":[", "runs: malformed json" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct runs_doc d;
		struct uniap_err err = { 0 };

		assert_int_not_equal(runs_decode(cases[i].text, strlen(cases[i].text), &d, &err), UNIAP_OK);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, err.msg, cases[i].msg);
	}
}

/* A decoded document resolves to runs: a megatron string becomes the plan it describes. */
static void test_decode_resolve(void **state)
{
	static const char text[] =
		"{\"runs\":[{\"name\":\"m\",\"batch\":32,\"schedule\":\"1f1b\","
		"\"megatron\":\"--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --micro-batch-size 1 "
		"--global-batch-size 32 --use-flash-attn\","
		"\"measured\":{\"samples_per_s\":64,\"peak_memory_bytes\":[3e9,2e9]},\"source\":\"test\"}]}";
	struct cluster_profile c;
	struct model_profile m;
	struct runs_doc d;
	struct calib_run *runs = NULL;
	struct uniap_err err = { 0 };

	(void)state;
	t_cluster(&c);
	t_model(&m);
	assert_int_equal(runs_decode(text, strlen(text), &d, &err), UNIAP_OK);
	assert_int_equal(runs_resolve(&d, &c, &m, &runs, &err), UNIAP_OK);
	assert_int_equal(runs[0].plan->pp, 2);
	assert_int_equal(runs[0].plan->microbatches, 16); /* 32 / (1 x dp 2) */
	assert_string_equal(runs[0].plan->strategy_names[0], "tp2.dp2");
	assert_int_equal(runs[0].plan->schedule, COST_1F1B);
	t_near(runs[0].iteration_s, 0.5, 1e-12);
	assert_string_equal(d.runs[0].ignored_args, "--use-flash-attn");
	free(runs);
	runs_doc_release(&d);
	model_release(&m);
	cluster_release(&c);
}

/* Truncations and byte changes of a valid document never crash: they decode, or fail naming a field. */
static void test_decode_mutations(void **state)
{
	static const char text[] =
		"{\"model\":\"bert-huge\",\"runs\":[{\"name\":\"m\",\"schedule\":\"1f1b\","
		"\"megatron\":\"--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --global-batch-size 32\","
		"\"measured\":{\"iteration_s\":1,\"peak_memory_bytes\":[3e9,2e9]}},"
		"{\"name\":\"u\",\"batch\":32,\"uniform\":{\"pp\":2,\"tp\":2,\"dp\":2,\"fsdp\":1,"
		"\"microbatches\":4,\"recompute\":true,\"tp_inner\":false},\"measured\":{\"oom\":true}}]}";
	static const char bytes[] = "{}[],:\"0-9e.ntf \\x";
	struct cluster_profile c;
	size_t len = sizeof(text) - 1, i, ok = 0;
	unsigned long rng = 7;
	char buf[sizeof(text)];

	(void)state;
	t_cluster(&c);
	for (i = 0; i < 3 * len; i++) {
		struct runs_doc d;
		struct calib_run *runs = NULL;
		struct uniap_err err = { 0 };
		size_t n = len;

		memcpy(buf, text, len);
		if (i < len) {
			n = i; /* truncated */
		} else {
			rng = rng * 6364136223846793005UL + 1442695040888963407UL;
			buf[(rng >> 33) % len] = bytes[(rng >> 20) % (sizeof(bytes) - 1)];
		}
		if (runs_decode(buf, n, &d, &err) != UNIAP_OK) {
			assert_true(err.msg[0] != '\0');
			assert_int_equal(d.n_runs, 0);
			continue;
		}
		if (runs_resolve(&d, &c, NULL, &runs, &err) == UNIAP_OK) {
			struct calib_prediction pr;

			ok++;
			if (calib_predict(&c, &runs[0], &pr, &err) != UNIAP_OK)
				assert_true(err.msg[0] != '\0');
			calib_prediction_release(&pr);
		}
		free(runs);
		runs_doc_release(&d);
	}
	assert_true(ok > 0);
	cluster_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recover),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_measured_tables),
		cmocka_unit_test(test_leave_one_out),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_oom_hinge),
		cmocka_unit_test(test_select_errors),
		cmocka_unit_test(test_uniform_plan),
		cmocka_unit_test(test_split_remainder),
		cmocka_unit_test(test_megatron_parse),
		cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_decode_resolve),
		cmocka_unit_test(test_decode_mutations),
	};

	calib_global_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
