/*
 * test_export.c - json/export.c: every format on small candidates built from
 * the fixtures, the content each target reads (parsed back with cJSON where
 * it is JSON), and the refusals naming the layer or field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cost.h"
#include "export.h"
#include "fixtures.h"
#include "runtimes.h"
#include "jdecode.h"
#include "jencode.h"
#include "plan.h"
#include "target.h"

#define N 6 /* embedding, 4 transformer layers, head */

struct fx {
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_candidate cand;
};

/* devices (pairs at 10 GB/s, the node at 5 GB/s), a chain of N layers; batch/pp/c as given. */
static void fx_make_on(struct fx *f, int devices, long batch, int pp, long c, enum cost_schedule sched)
{
	const int dev[] = { 2, devices };
	static const double bw[] = { 10, 5 };
	struct cost_options o = { .batch = batch, .pp = pp, .microbatches = c, .schedule = sched,
	                          .recompute = 1 };
	struct uniap_err err = { 0 };

	memset(f, 0, sizeof(*f));
	assert_int_equal(fx_cluster(&f->cl, 1, devices, dev, bw, 2, 64e9, 1e9, 1.0), 0);
	assert_int_equal(fx_model_chain(&f->m, N, MODEL_FP32, 1e-3, 6e-4, 1e6, 1e6, 6e5, 1e5, 2e4), 0);
	fx_model_shape(&f->m, 1024, 16);
	assert_int_equal(cost_build(&f->cl, &f->m, &o, &f->cand, &err), UNIAP_OK);
}

static void fx_make(struct fx *f, long batch, int pp, long c, enum cost_schedule sched)
{
	fx_make_on(f, 8, batch, pp, c, sched);
}

static void fx_free(struct fx *f)
{
	cost_candidate_release(&f->cand);
	model_release(&f->m);
	cluster_release(&f->cl);
}

static size_t k_of(const struct fx *f, const char *name)
{
	long k = strategy_find(&f->cand.strategies, name);

	if (k < 0)
		fail_msg("no strategy %s", name);
	return (size_t)k;
}

/* Exports (stage, names) as fmt; returns the code, *out owned by the caller on success. */
static uniap_code run(const struct fx *f, enum exp_format fmt, const int *stage, const char *const *names,
                      char **out, struct uniap_err *err)
{
	size_t strat[N], u, len = 0;
	struct plan_eval ev = { 0 };
	uniap_code rc;

	for (u = 0; u < N; u++)
		strat[u] = k_of(f, names[u]);
	assert_int_equal(plan_evaluate(&f->cand, stage, strat, &ev, err), UNIAP_OK);
	*out = NULL;
	rc = exp_plan(fmt, &f->m, &f->cand, stage, strat, &ev, out, &len, err);
	if (rc == UNIAP_OK) {
		char why[256];

		assert_non_null(*out);
		assert_int_equal(strlen(*out), len);
		/* only flags and keys the runtime reads (tests/data/runtimes/) */
		if (runtime_check_export(fmt, *out, why, sizeof(why)) != 0)
			fail_msg("%s in\n%s", why, *out);
	} else {
		assert_null(*out);
	}
	plan_eval_release(&ev);
	return rc;
}

static cJSON *parse(const char *text)
{
	cJSON *j = cJSON_Parse(text);

	assert_non_null(j);
	return j;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);

	assert_true(cJSON_IsString(x));
	return x->valuestring;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);

	assert_true(cJSON_IsNumber(x));
	return x->valuedouble;
}

/* The comma-separated integers of s into v (at most n); returns the count. */
static size_t ints(const char *s, int *v, size_t n)
{
	size_t i = 0;
	char *end;

	while (*s && i < n) {
		v[i++] = (int)strtol(s, &end, 10);
		s = *end == ',' ? end + 1 : end;
	}
	return i;
}

static void test_format_table(void **state)
{
	static const struct {
		const char *name, *media;
		enum exp_format f;
	} cases[] = {
		{ "json", "application/json", EXP_JSON },
		{ "text", "text/plain; charset=utf-8", EXP_TEXT },
		{ "galvatron", "application/json", EXP_GALVATRON },
		{ "megatron", "text/plain; charset=utf-8", EXP_MEGATRON },
		{ "deepspeed", "application/json", EXP_DEEPSPEED },
	};
	enum exp_format f;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(exp_format_parse(cases[i].name, &f), 0);
		assert_int_equal(f, cases[i].f);
		assert_string_equal(exp_format_name(f), cases[i].name);
		assert_string_equal(exp_format_media_type(f), cases[i].media);
	}
	assert_int_equal(exp_format_parse("yaml", &f), -1);
	assert_int_equal(exp_format_parse("JSON", &f), -1);
	assert_int_equal(exp_format_parse(NULL, &f), -1);
}

static void test_json_and_text(void **state)
{
	static const int stage[N] = { 0, 0, 0, 1, 1, 1 };
	static const char *const names[N] = { "dp4", "tp2.dp2", "tp2.dp2", "tp2.dp2", "dp4", "dp4" };
	struct uniap_err err = { 0 };
	struct fx f;
	char *out;
	cJSON *j;

	(void)state;
	fx_make(&f, 8, 2, 2, COST_GPIPE);
	assert_int_equal(run(&f, EXP_JSON, stage, names, &out, &err), UNIAP_OK);
	j = parse(out);
	assert_int_equal((int)num(j, "pp"), 2);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "layers")), N);
	assert_non_null(strchr(out, '\n')); /* pretty */
	cJSON_Delete(j);
	free(out);

	assert_int_equal(run(&f, EXP_TEXT, stage, names, &out, &err), UNIAP_OK);
	assert_non_null(strstr(out, "plan: pp 2 microbatches 2 microbatch_size 4 schedule gpipe tpi "));
	assert_non_null(strstr(out, "  stage 0: dp4 x1, tp2.dp2 x2; time "));
	assert_non_null(strstr(out, "  stage 1: tp2.dp2 x1, dp4 x2; time "));
	free(out);
	fx_free(&f);
}

static void test_galvatron(void **state)
{
	static const int stage[N] = { 0, 0, 0, 1, 1, 1 };
	static const char *const names[N] = { "dp4", "tp2.dp2", "tp4", "tp2.fsdp2+rc", "dp2.tp2", "dp4" };
	static const int tp[] = { 2, 4, 2, 2 }, consec[] = { 1, 1, 1, 0 }, sdp[] = { 0, 0, 1, 0 },
	                 ckpt[] = { 0, 0, 1, 0 };
	struct uniap_err err = { 0 };
	int v[16], sum = 0;
	size_t i, n;
	struct fx f;
	char *out;
	cJSON *j;

	(void)state;
	fx_make(&f, 8, 2, 2, COST_1F1B);
	assert_int_equal(run(&f, EXP_GALVATRON, stage, names, &out, &err), UNIAP_OK);
	j = parse(out);
	assert_int_equal((int)num(j, "pp_deg"), 2);
	assert_int_equal(ints(str(j, "tp_sizes_enc"), v, 16), N - 2);
	assert_memory_equal(v, tp, sizeof(tp));
	assert_int_equal(ints(str(j, "tp_consecutive_flags"), v, 16), N - 2);
	assert_memory_equal(v, consec, sizeof(consec));
	assert_int_equal(ints(str(j, "dp_types_enc"), v, 16), N - 2);
	assert_memory_equal(v, sdp, sizeof(sdp));
	assert_int_equal(ints(str(j, "checkpoint"), v, 16), N - 2);
	assert_memory_equal(v, ckpt, sizeof(ckpt));
	assert_string_equal(str(j, "use_sp"), "0,0,0,0");
	n = ints(str(j, "pp_division"), v, 16);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)
		sum += v[i];
	assert_int_equal(sum, N - 2);
	assert_int_equal(v[0], 2);
	assert_int_equal((int)num(j, "global_bsz"), 8);
	assert_int_equal((int)num(j, "chunks"), 2);
	assert_string_equal(str(j, "pipeline_type"), "pipedream_flush");
	assert_string_equal(str(j, "default_dp_type"), "ddp");
	assert_int_equal((int)num(j, "vtp"), 1);
	assert_int_equal((int)num(j, "vsp"), 0);
	assert_int_equal((int)num(j, "embed_sdp"), 0);
	cJSON_Delete(j);
	free(out);
	fx_free(&f);
}

static void test_galvatron_refusals(void **state)
{
	static const struct {
		int stage[N];
		const char *names[N];
		const char *needle;
	} cases[] = {
		/* dp and fsdp in one layer */
		{ { 0, 0, 0, 1, 1, 1 }, { "dp4", "dp2.fsdp2", "dp4", "dp4", "dp4", "dp4" }, "layers[1] (l1)" },
		/* embedding and head differ */
		{ { 0, 0, 0, 1, 1, 1 }, { "dp4", "dp4", "dp4", "dp4", "dp4", "tp2.dp2" }, "layers[5] (l5)" },
		/* recompute on the embedding */
		{ { 0, 0, 0, 1, 1, 1 }, { "dp4+rc", "dp4", "dp4", "dp4", "dp4", "dp4+rc" }, "layers[0] (l0)" },
		/* a stage with no transformer layer */
		{ { 0, 1, 1, 1, 1, 1 }, { "dp4", "dp4", "dp4", "dp4", "dp4", "dp4" }, "stages[0]" },
	};
	struct uniap_err err = { 0 };
	struct fx f;
	size_t i;
	char *out;

	(void)state;
	fx_make(&f, 8, 2, 2, COST_GPIPE);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(run(&f, EXP_GALVATRON, cases[i].stage, cases[i].names, &out, &err),
		                 UNIAP_E_INVALID);
		if (!strstr(err.msg, cases[i].needle))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].needle);
	}
	fx_free(&f);
}

static void test_megatron(void **state)
{
	static const int even[N] = { 0, 0, 0, 1, 1, 1 }, uneven[N] = { 0, 0, 1, 1, 1, 1 };
	static const char *const tp2[N] = { "tp2.dp2", "tp2.dp2", "tp2.dp2", "tp2.dp2", "tp2.dp2", "tp2.dp2" };
	static const char *const rc[N] = { "tp2.dp2+rc", "tp2.dp2+rc", "tp2.dp2+rc", "tp2.dp2+rc",
	                                   "tp2.dp2+rc", "tp2.dp2+rc" };
	struct uniap_err err = { 0 };
	struct fx f;
	char *out;

	(void)state;
	fx_make(&f, 8, 2, 2, COST_1F1B);
	assert_int_equal(run(&f, EXP_MEGATRON, even, tp2, &out, &err), UNIAP_OK);
	assert_true(out[0] == '#');
	assert_non_null(strstr(out, "# tpi_s "));
	assert_non_null(strstr(out, "\n--tensor-model-parallel-size 2\n"));
	assert_non_null(strstr(out, "\n--pipeline-model-parallel-size 2\n"));
	assert_non_null(strstr(out, "\n--num-layers 4\n"));
	assert_non_null(strstr(out, "\n--micro-batch-size 2\n")); /* 4 samples over dp 2 */
	assert_non_null(strstr(out, "\n--global-batch-size 8\n"));
	assert_null(strstr(out, "pipeline-num-layers"));
	assert_null(strstr(out, "recompute"));
	free(out);

	assert_int_equal(run(&f, EXP_MEGATRON, uneven, rc, &out, &err), UNIAP_OK);
	assert_non_null(strstr(out, "\n--decoder-first-pipeline-num-layers 1\n"));
	assert_non_null(strstr(out, "\n--decoder-last-pipeline-num-layers 3\n"));
	assert_non_null(strstr(out, "\n--recompute-granularity full\n--recompute-method uniform\n"
	                            "--recompute-num-layers 1\n"));
	free(out);
	fx_free(&f);
}

static void test_megatron_refusals(void **state)
{
	static const struct {
		const char *names[N];
		const char *needle;
	} cases[] = {
		{ { "tp2.dp2", "tp2.dp2", "tp2.dp2", "tp4", "tp2.dp2", "tp2.dp2" }, "layers[3] (l3)" },
		{ { "dp4", "dp4", "dp4", "dp4", "dp4", "dp4+rc" }, "layers[5] (l5)" },
		{ { "fsdp4", "fsdp4", "fsdp4", "fsdp4", "fsdp4", "fsdp4" }, "--use-distributed-optimizer" },
		{ { "dp2.tp2", "dp2.tp2", "dp2.tp2", "dp2.tp2", "dp2.tp2", "dp2.tp2" }, "consecutive" },
	};
	static const int stage[N] = { 0, 0, 0, 1, 1, 1 };
	struct uniap_err err = { 0 };
	struct fx f;
	size_t i;
	char *out;

	(void)state;
	fx_make(&f, 8, 2, 2, COST_GPIPE);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(run(&f, EXP_MEGATRON, stage, cases[i].names, &out, &err), UNIAP_E_INVALID);
		if (!strstr(err.msg, cases[i].needle))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].needle);
	}
	fx_free(&f);
}

static void test_deepspeed(void **state)
{
	static const int two[N] = { 0, 0, 0, 1, 1, 1 }, one[N] = { 0 };
	static const char *const dp4[N] = { "dp4+rc", "dp4+rc", "dp4+rc", "dp4+rc", "dp4+rc", "dp4+rc" };
	static const char *const tp2fsdp4[N] = { "tp2.fsdp4", "tp2.fsdp4", "tp2.fsdp4", "tp2.fsdp4",
	                                         "tp2.fsdp4", "tp2.fsdp4" };
	static const char *const fsdp4[N] = { "fsdp4", "fsdp4", "fsdp4", "fsdp4", "fsdp4", "fsdp4" };
	struct uniap_err err = { 0 };
	const cJSON *pipe;
	struct fx f;
	char *out;
	cJSON *j;

	(void)state;
	fx_make(&f, 8, 2, 2, COST_1F1B);
	assert_int_equal(run(&f, EXP_DEEPSPEED, two, dp4, &out, &err), UNIAP_OK);
	j = parse(out);
	assert_int_equal((int)num(j, "train_batch_size"), 8);
	assert_int_equal((int)num(j, "gradient_accumulation_steps"), 2); /* = microbatches */
	assert_int_equal((int)num(j, "train_micro_batch_size_per_gpu"), 1);
	assert_int_equal((int)num(cJSON_GetObjectItemCaseSensitive(j, "zero_optimization"), "stage"), 0);
	assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "activation_checkpointing")));
	assert_null(cJSON_GetObjectItemCaseSensitive(j, "tensor_parallel"));
	/* the stage count and partition_method are PipelineModule's arguments, not config keys:
	 * the pipeline object holds the one key DeepSpeed reads */
	pipe = cJSON_GetObjectItemCaseSensitive(j, "pipeline");
	assert_int_equal((int)num(pipe, "activation_checkpoint_interval"), 1);
	assert_int_equal(cJSON_GetArraySize(pipe), 1);
	cJSON_Delete(j);
	free(out);
	/* fsdp needs zero-3, which the pipeline engine lacks */
	assert_int_equal(run(&f, EXP_DEEPSPEED, two, fsdp4, &out, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "layers[0] (l0)"));
	fx_free(&f);

	/* tp with fsdp: autotp has no zero-3 */
	fx_make(&f, 32, 1, 4, COST_GPIPE);
	assert_int_equal(run(&f, EXP_DEEPSPEED, one, tp2fsdp4, &out, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "autotp"));
	fx_free(&f);

	/* zero-3 without a pipeline: fsdp over a whole 4-device pp = 1 cluster, when the
	 * dictionary offers a pure fsdp strategy (pp = 1 dictionaries of these fixtures
	 * may hold only tp strategies) */
	fx_make_on(&f, 4, 16, 1, 4, COST_GPIPE);
	if (strategy_find(&f.cand.strategies, "fsdp4") >= 0) {
		assert_int_equal(run(&f, EXP_DEEPSPEED, one, fsdp4, &out, &err), UNIAP_OK);
		j = parse(out);
		assert_int_equal((int)num(j, "gradient_accumulation_steps"), 4);
		assert_int_equal((int)num(j, "train_micro_batch_size_per_gpu"), 1);
		assert_int_equal((int)num(cJSON_GetObjectItemCaseSensitive(j, "zero_optimization"), "stage"), 3);
		assert_null(cJSON_GetObjectItemCaseSensitive(j, "pipeline"));
		cJSON_Delete(j);
		free(out);
	}
	fx_free(&f);

}

/* exp_plan_doc on a decoded plan document gives what exp_plan gives; errors are rooted at "plan". */
static void test_plan_doc(void **state)
{
	static const int stage[N] = { 0, 0, 0, 1, 1, 1 };
	static const char *const names[N] = { "dp4", "tp2.dp2", "tp2.dp2", "tp2.dp2", "tp2.dp2", "dp4" };
	struct uniap_err err = { 0 };
	struct plan_eval ev = { 0 };
	struct plan_doc doc;
	size_t strat[N], u, len;
	char *text, *a, *b;
	struct fx f;
	int fi;
	cJSON *j;

	(void)state;
	fx_make(&f, 8, 2, 2, COST_1F1B);
	for (u = 0; u < N; u++)
		strat[u] = k_of(&f, names[u]);
	/* a given plan is judged by its own FSDP buffers, as exp_plan_doc judges it */
	f.cand.memory_limit_bytes = cost_plan_memory_limit(&f.cl, &f.m, &f.cand, strat);
	assert_int_equal(plan_evaluate(&f.cand, stage, strat, &ev, &err), UNIAP_OK);
	j = jenc_plan(&f.cand, stage, strat, &ev);
	text = jenc_print(j, 0);
	assert_int_equal(jdec_plan(text, strlen(text), &doc, &err), UNIAP_OK);
	for (fi = 0; fi < EXP_FORMAT_COUNT; fi++) {
		uniap_code r1 = exp_plan((enum exp_format)fi, &f.m, &f.cand, stage, strat, &ev, &a, &len, &err);
		uniap_code r2 = exp_plan_doc((enum exp_format)fi, &f.cl, &f.m, &doc, &b, &len, &err);

		assert_int_equal(r1, r2);
		if (r1 == UNIAP_OK)
			assert_string_equal(a, b);
		free(a);
		free(b);
	}
	free(doc.strategy_names[2]);
	doc.strategy_names[2] = strdup("nosuch");
	assert_int_equal(exp_plan_doc(EXP_GALVATRON, &f.cl, &f.m, &doc, &b, &len, &err), UNIAP_E_INVALID);
	assert_null(b);
	assert_non_null(strstr(err.msg, "plan.layers[2]"));
	plan_doc_release(&doc);
	cJSON_free(text);
	cJSON_Delete(j);
	plan_eval_release(&ev);
	fx_free(&f);
}

/* An invalid placement is refused by every format. */
static void test_invalid_placement(void **state)
{
	static const int stage[N] = { 0, 0, 0, 0, 0, 0 }; /* stage 1 empty */
	static const char *const names[N] = { "dp4", "dp4", "dp4", "dp4", "dp4", "dp4" };
	struct uniap_err err = { 0 };
	struct fx f;
	char *out;
	int fi;

	(void)state;
	fx_make(&f, 8, 2, 2, COST_GPIPE);
	for (fi = 0; fi < EXP_FORMAT_COUNT; fi++) {
		assert_int_equal(run(&f, (enum exp_format)fi, stage, names, &out, &err), UNIAP_E_INVALID);
		assert_non_null(strstr(err.msg, "plan: not a valid placement"));
	}
	fx_free(&f);
}

/* A MoE model to Megatron-LM: the expert flags (every one a flag of the pinned release), the expert-parallel
 * size of the strategy, the windowed and MoE layer patterns; tp without sequence parallelism refused */
static void test_megatron_moe(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct model_arch a;
	struct cost_candidate c;
	struct cost_options o = { .batch = 16, .pp = 1, .microbatches = 2, .schedule = COST_1F1B, .zero = 1, .sp = 1 };
	struct uniap_err err = { 0 };
	struct plan_eval ev = { 0 };
	const char *names[2] = { "tp2.dp4+sp+ep4+z1", "tp2.dp4+ep2" };
	int stage[6] = { 0, 0, 0, 0, 0, 0 };
	size_t strat[6], u, len;
	char *out = NULL, why[256];
	int i;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.family = MODEL_ARCH_DECODER;
	a.layers = 4;
	a.hidden = 1024;
	a.heads = 16;
	a.kv_heads = 4;
	a.head_dim = 128;
	a.ffn_hidden = 4096;
	a.seq_len = 2048;
	a.vocab = 32000;
	a.mlp = MODEL_MLP_SWIGLU;
	a.norm = MODEL_NORM_RMSNORM;
	a.positions = MODEL_POS_ROTARY;
	a.flash_attention = 1;
	a.precision = MODEL_MIXED;
	a.window = 256;
	a.window_every = 2;
	a.experts = 8;
	a.top_k = 2;
	a.moe_ffn_hidden = 1024;
	a.shared_ffn_hidden = 2048;
	a.moe_first_dense = 1;
	assert_int_equal(catalog_transformer("moe", &a, &m, &err), UNIAP_OK);
	assert_int_equal(catalog_cluster("dgx-h100", &cl, &err), UNIAP_OK);
	o.runtime = *target_runtime(TARGET_MEGATRON);
	o.keep = target_keep(TARGET_MEGATRON);
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	/* the megatron target keeps no MoE strategy with tp but without sequence parallelism */
	assert_true(strategy_find(&c.strategies, "tp2.dp4+ep2") < 0);
	assert_true(strategy_find(&c.strategies, "tp2.dp4+sp+ep4+z1") >= 0);
	for (u = 0; u < m.n_layers; u++)
		strat[u] = (size_t)strategy_find(&c.strategies, names[0]);
	assert_int_equal(plan_evaluate(&c, stage, strat, &ev, &err), UNIAP_OK);
	assert_int_equal(exp_plan(EXP_MEGATRON, &m, &c, stage, strat, &ev, &out, &len, &err), UNIAP_OK);
	if (runtime_check_export(EXP_MEGATRON, out, why, sizeof(why)) != 0)
		fail_msg("%s in\n%s", why, out);
	{
		static const char *const want[] = {
			"\n--num-experts 8\n", "\n--moe-router-topk 2\n", "\n--moe-ffn-hidden-size 1024\n",
			"\n--moe-grouped-gemm\n", "\n--moe-token-dispatcher-type alltoall\n", "\n--moe-router-fusion\n",
			"\n--moe-permute-fusion\n",
			"\n--moe-shared-expert-intermediate-size 2048\n", "\n--moe-layer-freq [0,1,1,1]\n",
			"\n--kv-channels 128\n", "\n--window-size 256,0\n", "\n--window-attn-skip-freq [1,0,1,0]\n",
			"\n--expert-model-parallel-size 4\n", "\n--expert-tensor-parallel-size 2\n", "\n--sequence-parallel\n",
		};

		for (i = 0; i < (int)(sizeof(want) / sizeof(want[0])); i++)
			if (!strstr(out, want[i]))
				fail_msg("no \"%s\" in\n%s", want[i] + 1, out);
	}
	free(out);
	plan_eval_release(&ev);
	cost_candidate_release(&c);
	/* without the target's filter: a tp strategy without sequence parallelism does not export */
	o.keep = (struct cost_keep){ 0 };
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	for (u = 0; u < m.n_layers; u++)
		strat[u] = (size_t)strategy_find(&c.strategies, names[1]);
	assert_int_equal(plan_evaluate(&c, stage, strat, &ev, &err), UNIAP_OK);
	assert_int_equal(exp_plan(EXP_MEGATRON, &m, &c, stage, strat, &ev, &out, &len, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "sequence parallelism"));
	/* DeepSpeed has no expert parallelism here */
	assert_int_equal(exp_plan(EXP_DEEPSPEED, &m, &c, stage, strat, &ev, &out, &len, &err), UNIAP_E_INVALID);
	if (!strstr(err.msg, "expert parallelism"))
		fail_msg("%s", err.msg);
	plan_eval_release(&ev);
	cost_candidate_release(&c);
	model_release(&m);
	/* a dropping MoE is priced padded to capacity (no host wait): the export pads too */
	a.capacity_factor = 1.25;
	assert_int_equal(catalog_transformer("moe", &a, &m, &err), UNIAP_OK);
	o.keep = target_keep(TARGET_MEGATRON);
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	for (u = 0; u < m.n_layers; u++)
		strat[u] = (size_t)strategy_find(&c.strategies, names[0]);
	assert_int_equal(plan_evaluate(&c, stage, strat, &ev, &err), UNIAP_OK);
	assert_int_equal(exp_plan(EXP_MEGATRON, &m, &c, stage, strat, &ev, &out, &len, &err), UNIAP_OK);
	assert_non_null(strstr(out, "\n--moe-expert-capacity-factor 1.25\n--moe-pad-expert-input-to-capacity\n"));
	if (runtime_check_export(EXP_MEGATRON, out, why, sizeof(why)) != 0)
		fail_msg("%s in\n%s", why, out);
	free(out);
	plan_eval_release(&ev);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

/* Megatron-LM splits the attention heads and the key-value heads over tp: the target offers no
 * other tp, and a plan with one does not export (Llama-2-70B: 64 heads, 8 key-value heads) */
static void test_megatron_heads(void **state)
{
	struct cluster_profile cl;
	struct model_profile m;
	struct cost_options o = { .batch = 16, .pp = 1, .microbatches = 1, .schedule = COST_1F1B };
	struct cost_candidate c;
	struct plan_eval ev;
	struct uniap_err err;
	char *out = NULL;
	size_t len = 0, k, u, *strat;
	int *stage, tp16 = 0;

	(void)state;
	assert_int_equal(catalog_cluster("dgx-a100-x2", &cl, &err), UNIAP_OK);
	assert_int_equal(catalog_model("llama-70b", &m, &err), UNIAP_OK);
	o.keep = target_keep(TARGET_MEGATRON);
	o.runtime = *target_runtime(TARGET_MEGATRON);
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	for (k = 0; k < cost_k(&c); k++)
		assert_int_equal(8 % c.strategies.items[k].degree[STRATEGY_TP], 0);
	cost_candidate_release(&c);
	o.keep = (struct cost_keep){ 0 };
	assert_int_equal(cost_build(&cl, &m, &o, &c, &err), UNIAP_OK);
	stage = calloc(m.n_layers, sizeof(*stage));
	strat = calloc(m.n_layers, sizeof(*strat));
	assert_non_null(stage);
	assert_non_null(strat);
	for (k = 0; k < cost_k(&c) && !tp16; k++)
		if (c.strategies.items[k].degree[STRATEGY_TP] == 16 && c.strategies.items[k].n_order == 1) {
			tp16 = 1;
			for (u = 0; u < m.n_layers; u++)
				strat[u] = k;
		}
	assert_true(tp16);
	assert_int_equal(plan_evaluate(&c, stage, strat, &ev, &err), UNIAP_OK);
	assert_int_equal(exp_plan(EXP_MEGATRON, &m, &c, stage, strat, &ev, &out, &len, &err), UNIAP_E_INVALID);
	if (!strstr(err.msg, "--tensor-model-parallel-size 16 to divide --num-attention-heads 64 and --num-query-groups 8"))
		fail_msg("%s", err.msg);
	plan_eval_release(&ev);
	free(stage);
	free(strat);
	cost_candidate_release(&c);
	model_release(&m);
	cluster_release(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_table),
		cmocka_unit_test(test_json_and_text),
		cmocka_unit_test(test_galvatron),
		cmocka_unit_test(test_galvatron_refusals),
		cmocka_unit_test(test_megatron),
		cmocka_unit_test(test_megatron_refusals),
		cmocka_unit_test(test_megatron_moe),
		cmocka_unit_test(test_megatron_heads),
		cmocka_unit_test(test_deepspeed),
		cmocka_unit_test(test_plan_doc),
		cmocka_unit_test(test_invalid_placement),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
