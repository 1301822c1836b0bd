/*
 * test_catalog.c - the built-in catalog (core/catalog.h): parameter counts
 * against the published sizes, forward FLOPs against the 2 x parameters rule,
 * hand-computed FLOPs and activation bytes of one layer, every entry
 * validates and round-trips through jenc_cluster/jenc_model and
 * jdec_cluster/jdec_model, unknown names list the known ones.
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

#include "catalog.h"
#include "cost.h"
#include "jdecode.h"
#include "jencode.h"

/* relative agreement of values that went through GB/s or TFLOP/s units */
#define CLOSE(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-12 * fabs((double)(b)) + 1e-300)
#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)))

static double total_params(const struct model_profile *m)
{
	double p = 0;
	size_t u;

	for (u = 0; u < m->n_layers; u++)
		p += m->types[m->layers[u].type].parameters;
	return p;
}

static double total_flops(const struct model_profile *m)
{
	double f = 0;
	size_t u;

	for (u = 0; u < m->n_layers; u++)
		f += m->types[m->layers[u].type].forward_flops_per_sample;
	return f;
}

static const struct model_layer_type *type_named(const struct model_profile *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->n_types; i++)
		if (strcmp(m->types[i].name, name) == 0)
			return &m->types[i];
	fail_msg("no layer type %s", name);
	return NULL;
}

static double act_at(const struct model_layer_type *t, int tp)
{
	return model_tp_lookup(t->activation_bytes, t->n_activation_bytes, tp);
}

/* published sizes: BERT-Huge, T5-Large, ViT-Huge, Swin-Huge (UniAP), LLaMA, Llama 2, GPT-3 */
static void test_parameter_counts(void **state)
{
	static const struct {
		const char *name;
		double published;
	} cases[] = {
		{ "bert-huge", 672e6 }, { "t5-large", 737e6 },   { "vit-huge", 632e6 },   { "swin-huge", 1.02e9 },
		{ "llama-7b", 6.74e9 }, { "llama-13b", 13.0e9 }, { "llama-70b", 69.0e9 }, { "gpt3-175b", 175e9 },
		/* Llama 3.1 (The Llama 3 Herd of Models; HuggingFace model cards) */
		{ "llama-3.1-8b", 8.03e9 }, { "llama-3.1-70b", 70.6e9 }, { "llama-3.1-405b", 405.9e9 },
		/* MoE (HuggingFace configs; model cards): Mixtral 46.7 B and 141 B, Qwen3 30.5 B and 235 B,
		 * GPT-OSS-120B 116.8 B */
		{ "mixtral-8x7b", 46.7e9 }, { "mixtral-8x22b", 141e9 }, { "qwen3-30b-a3b", 30.5e9 },
		{ "qwen3-235b-a22b", 235e9 }, { "gpt-oss-120b", 116.8e9 },
		/* DeepSeek-V3 Technical Report: 671 B (its multi-token-prediction module apart) */
		{ "deepseek-v3", 671e9 },
		/* Narayanan et al. SC 2021, Table 1 (which rounds 1.65 B to 1.7) */
		{ "gpt-1.7b", 1.65e9 },  { "gpt-3.6b", 3.6e9 },   { "gpt-7.5b", 7.5e9 },   { "gpt-18b", 18.4e9 },
		{ "gpt-39b", 39.1e9 },  { "gpt-76b", 76.1e9 },   { "gpt-145b", 145.6e9 }, { "gpt-310b", 310.1e9 },
		{ "gpt-530b", 529.6e9 }, { "gpt-1t", 1008e9 },
	};
	struct uniap_err err;
	size_t i;

	(void)state;
	assert_int_equal(catalog_count(CATALOG_MODEL), sizeof(cases) / sizeof(cases[0]));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct model_profile m;
		double p;

		assert_int_equal(catalog_model(cases[i].name, &m, &err), UNIAP_OK);
		p = total_params(&m);
		if (fabs(p - cases[i].published) > 0.02 * cases[i].published)
			fail_msg("%s: %g parameters, published %g", cases[i].name, p, cases[i].published);
		model_release(&m);
	}
}

/* decoder models: forward FLOPs per token within 10 % of 2 x parameters */
static void test_flops_per_token(void **state)
{
	static const struct {
		const char *name;
		double seq;
	} cases[] = { { "llama-7b", 2048 }, { "llama-13b", 2048 }, { "llama-70b", 4096 }, { "gpt3-175b", 2048 },
		      { "gpt-18b", 2048 }, { "gpt-1t", 2048 } };
	struct uniap_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct model_profile m;
		double per_token, rule;

		assert_int_equal(catalog_model(cases[i].name, &m, &err), UNIAP_OK);
		per_token = total_flops(&m) / cases[i].seq;
		rule = 2 * total_params(&m);
		if (fabs(per_token - rule) > 0.1 * rule)
			fail_msg("%s: %g FLOPs per token, 2 x params = %g", cases[i].name, per_token, rule);
		model_release(&m);
	}
}

/* one layer by hand: BERT-Huge's block (fp32) and Llama-7B's block (mixed) */
static void test_one_layer_by_hand(void **state)
{
	struct model_profile m;
	struct uniap_err err;
	const struct model_layer_type *t;

	(void)state;
	/* s h (10 + 24/t + 5 a s / (h t)) x 2: s h = 655360; 5 a s / h = 32 */
	NEAR(catalog_activation_bytes(512, 1280, 16, 1, 4, 1), 655360.0 * 66 * 2);
	NEAR(catalog_activation_bytes(512, 1280, 16, 2, 4, 1), 655360.0 * 38 * 2);
	/* without dropout: 8 + 24/t + 2 a s / (h t) */
	NEAR(catalog_activation_bytes(512, 1280, 16, 2, 4, 0), 655360.0 * (8 + 12 + 6.4) * 2);
	assert_int_equal(catalog_model("bert-huge", &m, &err), UNIAP_OK);
	t = type_named(&m, "block");
	NEAR(act_at(t, 1), 86507520.0);
	NEAR(act_at(t, 2), 49807360.0);
	NEAR(act_at(t, 4), 655360.0 * (10 + 6 + 8) * 2);
	/* weights 4 h^2 + 2 h f = 19660800; 2 x weights x s + 4 s^2 h */
	NEAR(t->forward_flops_per_sample, 2 * 19660800.0 * 512 + 4 * 512.0 * 512 * 1280);
	/* + biases 4h + f + h and two LayerNorms 4h */
	NEAR(t->parameters, 19660800.0 + 9 * 1280 + 5120);
	NEAR(t->output_bytes_per_sample, 512.0 * 1280 * 4);
	NEAR(t->checkpoint_bytes_per_sample, 512.0 * 1280 * 4);
	assert_int_equal(t->tp_allreduces_per_pass, 2);
	/* memory-bound bytes, fp32 with dropout: norms and residual adds 10 s h e, hidden dropouts
	 * s h (4e + 2); split: softmax 2 a s^2 e, its dropout a s^2 (2e + 1), GeLU 2 s f e */
	NEAR(model_tp_lookup(t->memory_bound_bytes, t->n_memory_bound_bytes, 1),
	     655360.0 * (40 + 18) + 16 * 512.0 * 512 * (8 + 9) + 2 * 512.0 * 5120 * 4);
	NEAR(model_tp_lookup(t->memory_bound_bytes, t->n_memory_bound_bytes, 4),
	     655360.0 * (40 + 18) + (16 * 512.0 * 512 * (8 + 9) + 2 * 512.0 * 5120 * 4) / 4);
	/* two LayerNorms, QKV + output GEMMs, 7 attention kernels, residual adds and dropouts, MLP 3 */
	assert_int_equal(t->kernels_per_pass, 20);
	assert_true(t->gemm_dim == 1280 && t->tokens_per_sample == 512);
	model_release(&m);
	/* Llama-7B (no dropout, SwiGLU, no flash attention), 2-byte elements, tp 8:
	 * 8 s h + (4 s h + 4 s h + 6 s f + 2 a s^2) / 8 */
	assert_int_equal(catalog_model("llama-7b", &m, &err), UNIAP_OK);
	t = type_named(&m, "block");
	NEAR(act_at(t, 8), 8 * 8388608.0 + (8 * 8388608.0 + 6 * 2048.0 * 11008 + 2 * 32 * 2048.0 * 2048) / 8);
	assert_int_equal(t->kernels_per_pass, 2 * 6 + 4 + 10 + 6 + 1 + 5 + 1);
	assert_true(t->gemm_dim == 4096 && t->tokens_per_sample == 2048);
	/* q, k, v, o 4 h^2 + SwiGLU 3 h f + two RMSNorms 2 h */
	NEAR(t->parameters, 4 * 4096.0 * 4096 + 3 * 4096.0 * 11008 + 2 * 4096);
	model_release(&m);
}

/* T5's DAG: embedding -> encoder chain and decoder.0; encoder.23 -> every decoder layer */
static void test_t5_graph(void **state)
{
	struct model_profile m;
	struct uniap_err err;
	size_t e, from_last_enc = 0;

	(void)state;
	assert_int_equal(catalog_model("t5-large", &m, &err), UNIAP_OK);
	assert_int_equal(m.n_layers, 50);
	assert_string_equal(m.layers[24].name, "encoder.23");
	assert_string_equal(m.layers[25].name, "decoder.0");
	for (e = 0; e < m.n_edges; e++)
		if (m.edges[e].from == 24)
			from_last_enc++;
	assert_int_equal(from_last_enc, 24);
	assert_int_equal(m.n_edges, 23 + 1 + 1 + 24 + 23 + 1);
	model_release(&m);
}

static void same_cluster(const struct cluster_profile *a, const struct cluster_profile *b)
{
	size_t i;
	int k;

	assert_string_equal(a->name, b->name);
	assert_string_equal(a->device_name, b->device_name);
	assert_int_equal(a->nodes, b->nodes);
	assert_int_equal(a->devices_per_node, b->devices_per_node);
	assert_true(a->memory_bytes == b->memory_bytes);
	assert_true(a->reserved_bytes == b->reserved_bytes);
	assert_true(a->overlap_coefficient == b->overlap_coefficient);
	assert_true(a->compute_efficiency == b->compute_efficiency);
	CLOSE(a->peak_flops_per_s[0], b->peak_flops_per_s[0]);
	CLOSE(a->peak_flops_per_s[1], b->peak_flops_per_s[1]);
	assert_int_equal(a->n_levels, b->n_levels);
	for (i = 0; i < a->n_levels; i++) {
		assert_string_equal(a->levels[i].name, b->levels[i].name);
		assert_int_equal(a->levels[i].devices, b->levels[i].devices);
		CLOSE(a->levels[i].bw_bytes_per_s, b->levels[i].bw_bytes_per_s);
		CLOSE(a->levels[i].latency_s, b->levels[i].latency_s);
		assert_int_equal(a->levels[i].shared_by, b->levels[i].shared_by);
	}
	CLOSE(a->memory_bandwidth_bytes_per_s, b->memory_bandwidth_bytes_per_s);
	CLOSE(a->kernel_overhead_s, b->kernel_overhead_s);
	assert_true(a->gemm_half_dim == b->gemm_half_dim);
	assert_true(a->memory_fragmentation == b->memory_fragmentation);
	assert_true(a->memory_margin == b->memory_margin);
	for (k = 0; k < CLUSTER_COLL_COUNT; k++)
		assert_int_equal(a->n_coll[k], b->n_coll[k]);
	assert_int_equal(a->n_p2p, b->n_p2p);
}

static void same_tp_table(const struct model_tp_value *a, size_t na, const struct model_tp_value *b, size_t nb)
{
	size_t i;

	assert_int_equal(na, nb);
	for (i = 0; i < na; i++) {
		assert_int_equal(a[i].tp, b[i].tp);
		assert_true(a[i].value == b[i].value);
	}
}

static void same_model(const struct model_profile *a, const struct model_profile *b)
{
	size_t i;

	assert_string_equal(a->name, b->name);
	assert_int_equal(a->precision, b->precision);
	assert_int_equal(a->optimizer, b->optimizer);
	assert_int_equal(a->n_types, b->n_types);
	for (i = 0; i < a->n_types; i++) {
		const struct model_layer_type *x = &a->types[i], *y = &b->types[i];

		assert_string_equal(x->name, y->name);
		same_tp_table(x->forward_s, x->n_forward_s, y->forward_s, y->n_forward_s);
		assert_true(x->forward_flops_per_sample == y->forward_flops_per_sample);
		assert_true(x->parameters == y->parameters);
		same_tp_table(x->activation_bytes, x->n_activation_bytes, y->activation_bytes, y->n_activation_bytes);
		assert_true(x->output_bytes_per_sample == y->output_bytes_per_sample);
		assert_true(x->checkpoint_bytes_per_sample == y->checkpoint_bytes_per_sample);
		assert_int_equal(x->tp_allreduces_per_pass, y->tp_allreduces_per_pass);
		assert_int_equal(x->kernels_per_pass, y->kernels_per_pass);
		assert_true(x->gemm_dim == y->gemm_dim);
		assert_true(x->tokens_per_sample == y->tokens_per_sample);
		assert_int_equal(x->experts, y->experts);
		assert_true(x->expert_parameters == y->expert_parameters);
		assert_true(x->expert_flops_per_sample == y->expert_flops_per_sample);
		assert_true(x->expert_gemm_dim == y->expert_gemm_dim);
		assert_true(x->kernels_per_local_expert == y->kernels_per_local_expert);
		assert_true(x->expert_sync == y->expert_sync);
		assert_true(x->expert_tokens_per_sample == y->expert_tokens_per_sample);
		assert_true(x->expert_activation_bytes_per_sample == y->expert_activation_bytes_per_sample);
		assert_true(x->dispatch_bytes_per_sample == y->dispatch_bytes_per_sample);
		assert_true(x->expert_load == y->expert_load);
		same_tp_table(x->memory_bound_bytes, x->n_memory_bound_bytes, y->memory_bound_bytes,
		              y->n_memory_bound_bytes);
	}
	assert_int_equal(a->n_layers, b->n_layers);
	for (i = 0; i < a->n_layers; i++) {
		assert_string_equal(a->layers[i].name, b->layers[i].name);
		assert_int_equal(a->layers[i].type, b->layers[i].type);
	}
	assert_int_equal(a->n_edges, b->n_edges);
	for (i = 0; i < a->n_edges; i++) {
		assert_int_equal(a->edges[i].from, b->edges[i].from);
		assert_int_equal(a->edges[i].to, b->edges[i].to);
	}
}

static void roundtrip_cluster(const char *name)
{
	struct cluster_profile c, back;
	struct uniap_err err;
	cJSON *doc;
	char *text;

	if (catalog_cluster(name, &c, &err) != UNIAP_OK)
		fail_msg("%s: %s", name, err.msg);
	assert_int_equal(cluster_validate(&c, &err), UNIAP_OK);
	doc = jenc_cluster(&c);
	assert_non_null(doc);
	text = jenc_print(doc, 0);
	assert_non_null(text);
	if (jdec_cluster(text, strlen(text), &back, &err) != UNIAP_OK)
		fail_msg("%s: %s", name, err.msg);
	same_cluster(&c, &back);
	cJSON_free(text);
	cJSON_Delete(doc);
	cluster_release(&back);
	cluster_release(&c);
}

static void roundtrip_model(const char *name)
{
	struct model_profile m, back;
	struct uniap_err err;
	cJSON *doc;
	char *text;

	if (catalog_model(name, &m, &err) != UNIAP_OK)
		fail_msg("%s: %s", name, err.msg);
	assert_int_equal(model_validate(&m, &err), UNIAP_OK);
	doc = jenc_model(&m);
	assert_non_null(doc);
	text = jenc_print(doc, 1);
	assert_non_null(text);
	if (jdec_model(text, strlen(text), &back, &err) != UNIAP_OK)
		fail_msg("%s: %s", name, err.msg);
	same_model(&m, &back);
	cJSON_free(text);
	cJSON_Delete(doc);
	model_release(&back);
	model_release(&m);
}

/* every entry validates and round-trips; a -xN family is tried at both ends */
static void test_every_entry_roundtrips(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < catalog_count(CATALOG_CLUSTER); i++) {
		const struct catalog_entry *e = catalog_entry(CATALOG_CLUSTER, i);
		size_t n = strlen(e->name);

		assert_non_null(e->description);
		assert_non_null(e->sources);
		if (n > 3 && strcmp(e->name + n - 3, "-xN") == 0) {
			char name[64];

			snprintf(name, sizeof(name), "%.*s%d", (int)(n - 1), e->name, CATALOG_MIN_NODES);
			roundtrip_cluster(name);
			snprintf(name, sizeof(name), "%.*s%d", (int)(n - 1), e->name, CATALOG_MAX_NODES);
			roundtrip_cluster(name);
		} else {
			roundtrip_cluster(e->name);
		}
	}
	for (i = 0; i < catalog_count(CATALOG_MODEL); i++)
		roundtrip_model(catalog_entry(CATALOG_MODEL, i)->name);
	assert_null(catalog_entry(CATALOG_MODEL, catalog_count(CATALOG_MODEL)));
	assert_null(catalog_entry(CATALOG_CLUSTER, catalog_count(CATALOG_CLUSTER)));
}

static void test_names(void **state)
{
	static const char *const bad[] = { "dgx-a100-x1", "dgx-a100-x129", "dgx-a100-x02", "dgx-h100-x",
	                                   "dgx-h100-x4a", "ENVA", "" };
	struct cluster_profile c;
	struct model_profile m;
	struct uniap_err err;
	size_t i;

	(void)state;
	assert_int_equal(catalog_cluster("dgx-h100-x4", &c, &err), UNIAP_OK);
	assert_int_equal(cluster_devices(&c), 32);
	assert_int_equal(c.levels[c.n_levels - 1].devices, 32);
	CLOSE(c.levels[c.n_levels - 1].bw_bytes_per_s, 50e9 * 0.9);
	CLOSE(c.peak_flops_per_s[MODEL_MIXED], 989e12);
	cluster_release(&c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(catalog_has(CATALOG_CLUSTER, bad[i]), 0);
		assert_int_equal(catalog_cluster(bad[i], &c, &err), UNIAP_E_NOTFOUND);
		assert_non_null(strstr(err.msg, "enva, envb"));
		assert_non_null(strstr(err.msg, "dgx-h100-xN"));
	}
	assert_int_equal(catalog_model("llama-7", &m, &err), UNIAP_E_NOTFOUND);
	assert_non_null(strstr(err.msg, "bert-huge"));
	assert_non_null(strstr(err.msg, "gpt3-175b"));
	assert_int_equal(catalog_has(CATALOG_MODEL, "swin-huge"), 1);
	assert_int_equal(catalog_has(CATALOG_CLUSTER, "swin-huge"), 0);
}

/* a catalog pair prices: EnvA x BERT-Huge block time from FLOPs */
static void test_prices(void **state)
{
	struct cluster_profile c;
	struct model_profile m;
	struct cost_candidate cand;
	struct cost_options o = { .batch = 8, .pp = 1, .microbatches = 8, .schedule = COST_GPIPE };
	struct uniap_err err;
	long k;

	(void)state;
	assert_int_equal(catalog_cluster("enva", &c, &err), UNIAP_OK);
	assert_int_equal(catalog_model("bert-huge", &m, &err), UNIAP_OK);
	assert_int_equal(cost_build(&c, &m, &o, &cand, &err), UNIAP_OK);
	k = strategy_find(&cand.strategies, "tp8");
	assert_true(k >= 0);
	/* block.0 is layer 1: at least forward flops / (15.7e12 * 0.9) / 8 (the
	 * efficiency curve only lowers 0.9), tripled (fwd + 2 x bwd) */
	assert_true(cand.time_s[1 * cost_k(&cand) + (size_t)k] >
	            3 * type_named(&m, "block")->forward_flops_per_sample / (15.7e12 * 0.9) / 8);
	cost_candidate_release(&cand);
	model_release(&m);
	cluster_release(&c);
}

/* the document fields of FLOPs-based timing: efficiency defaults to 0.5 with a peak */
static void test_decode_peak(void **state)
{
	static const char ok[] = "{\"nodes\":1,\"devices_per_node\":2,\"device\":{\"memory_bytes\":1e10,"
	                         "\"peak_tflops\":{\"fp32\":10,\"mixed\":40}},"
	                         "\"hierarchy\":[{\"name\":\"node\",\"devices\":2,\"bandwidth_gb_per_s\":10}]}";
	static const char no_mixed[] = "{\"nodes\":1,\"devices_per_node\":2,\"device\":{\"memory_bytes\":1e10,"
	                               "\"peak_tflops\":{\"fp32\":10}},"
	                               "\"hierarchy\":[{\"name\":\"node\",\"devices\":2,\"bandwidth_gb_per_s\":10}]}";
	static const char no_peak[] = "{\"nodes\":1,\"devices_per_node\":2,\"device\":{\"memory_bytes\":1e10},"
	                              "\"hierarchy\":[{\"name\":\"node\",\"devices\":2,\"bandwidth_gb_per_s\":10}]}";
	struct cluster_profile c;
	struct uniap_err err;

	(void)state;
	assert_int_equal(jdec_cluster(ok, strlen(ok), &c, &err), UNIAP_OK);
	assert_true(c.compute_efficiency == 0.5);
	assert_true(c.peak_flops_per_s[MODEL_FP32] == 10e12);
	assert_true(c.peak_flops_per_s[MODEL_MIXED] == 40e12);
	cluster_release(&c);
	assert_int_equal(jdec_cluster(no_mixed, strlen(no_mixed), &c, &err), UNIAP_E_INVALID);
	assert_string_equal(err.msg, "cluster.device.peak_tflops.mixed: is required");
	/* without a peak nothing changes: no efficiency either */
	assert_int_equal(jdec_cluster(no_peak, strlen(no_peak), &c, &err), UNIAP_OK);
	assert_true(c.compute_efficiency == 0 && c.peak_flops_per_s[0] == 0 && c.peak_flops_per_s[1] == 0);
	cluster_release(&c);
}

/* architecture documents generate exactly what the catalog does (one code path) */
static void test_architecture_documents(void **state)
{
	static const struct {
		const char *catalog;
		const char *doc;
	} cases[] = {
		{ "llama-7b",
		  "{\"name\":\"llama-7b\",\"precision\":\"mixed\",\"architecture\":{\"family\":\"decoder\","
		  "\"layers\":32,\"hidden\":4096,\"heads\":32,\"ffn_hidden\":11008,\"mlp\":\"swiglu\","
		  "\"seq_len\":2048,\"vocab\":32000,\"norm\":\"rmsnorm\",\"positions\":\"rotary\","
		  "\"biases\":false,\"tied_embeddings\":false,\"flash_attention\":false}}" },
		{ "llama-70b",
		  "{\"name\":\"llama-70b\",\"precision\":\"mixed\",\"architecture\":{\"family\":\"decoder\","
		  "\"layers\":80,\"hidden\":8192,\"heads\":64,\"kv_heads\":8,\"ffn_hidden\":28672,"
		  "\"mlp\":\"swiglu\",\"seq_len\":4096,\"vocab\":32000,\"norm\":\"rmsnorm\","
		  "\"positions\":\"rotary\",\"biases\":false,\"tied_embeddings\":false}}" },
		{ "bert-huge",
		  "{\"name\":\"bert-huge\",\"precision\":\"fp32\",\"architecture\":{\"family\":\"encoder\","
		  "\"layers\":32,\"hidden\":1280,\"heads\":16,\"seq_len\":512,\"vocab\":30522,"
		  "\"dropout\":true,\"flash_attention\":false}}" },
		{ "mixtral-8x7b",
		  "{\"name\":\"mixtral-8x7b\",\"precision\":\"mixed\",\"architecture\":{\"family\":\"decoder\","
		  "\"layers\":32,\"hidden\":4096,\"heads\":32,\"kv_heads\":8,\"ffn_hidden\":14336,\"mlp\":\"swiglu\","
		  "\"seq_len\":4096,\"vocab\":32000,\"norm\":\"rmsnorm\",\"positions\":\"rotary\",\"biases\":false,"
		  "\"tied_embeddings\":false,\"moe\":{\"experts\":8,\"top_k\":2,\"expert_ffn_hidden\":14336}}}" },
		{ "gpt-oss-120b",
		  "{\"name\":\"gpt-oss-120b\",\"precision\":\"mixed\",\"architecture\":{\"family\":\"decoder\","
		  "\"layers\":36,\"hidden\":2880,\"heads\":64,\"kv_heads\":8,\"head_dim\":64,\"ffn_hidden\":2880,"
		  "\"mlp\":\"swiglu\",\"seq_len\":4096,\"vocab\":201088,\"norm\":\"rmsnorm\",\"positions\":\"rotary\","
		  "\"biases\":true,\"tied_embeddings\":false,\"window\":128,\"window_every\":2,"
		  "\"moe\":{\"experts\":128,\"top_k\":4,\"expert_ffn_hidden\":2880,\"router\":\"softmax_topk\"}}}" },
		{ "deepseek-v3",
		  "{\"name\":\"deepseek-v3\",\"precision\":\"mixed\",\"architecture\":{\"family\":\"decoder\","
		  "\"layers\":61,\"hidden\":7168,\"heads\":128,\"ffn_hidden\":18432,\"mlp\":\"swiglu\","
		  "\"seq_len\":4096,\"vocab\":129280,\"norm\":\"rmsnorm\",\"positions\":\"rotary\",\"biases\":false,"
		  "\"tied_embeddings\":false,\"mla\":{\"q_lora_rank\":1536,\"kv_lora_rank\":512,\"qk_nope_head_dim\":128,"
		  "\"qk_rope_head_dim\":64,\"v_head_dim\":128},\"moe\":{\"experts\":256,\"top_k\":8,"
		  "\"expert_ffn_hidden\":2048,\"shared_experts\":1,\"shared_expert_ffn_hidden\":2048,\"first_dense\":3,"
		  "\"router\":\"sigmoid_topk\"}}}" },
		{ "gpt3-175b",
		  "{\"name\":\"gpt3-175b\",\"precision\":\"mixed\",\"optimizer\":\"adam\",\"architecture\":"
		  "{\"family\":\"decoder\",\"layers\":96,\"hidden\":12288,\"heads\":96,\"seq_len\":2048,"
		  "\"vocab\":50257,\"dropout\":true,\"flash_attention\":false}}" },
	};
	struct uniap_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct model_profile a, b;

		assert_int_equal(catalog_model(cases[i].catalog, &a, &err), UNIAP_OK);
		if (jdec_model(cases[i].doc, strlen(cases[i].doc), &b, &err) != UNIAP_OK)
			fail_msg("%s: %s", cases[i].catalog, err.msg);
		same_model(&a, &b);
		model_release(&a);
		model_release(&b);
	}
}

/* a bad architecture field names its path */
static void test_architecture_errors(void **state)
{
#define ARCH(fields) "{\"precision\":\"mixed\",\"architecture\":{\"family\":\"decoder\",\"layers\":2," \
	"\"hidden\":1024,\"heads\":16,\"seq_len\":128,\"vocab\":1000" fields "}}"
	static const struct {
		const char *doc;
		const char *msg;
	} cases[] = {
		{ ARCH(",\"kv_heads\":5"), "model.architecture.kv_heads: must divide heads (16), got 5" },
		{ ARCH(",\"kv_heads\":32"), "model.architecture.kv_heads: must divide heads (16), got 32" },
		{ ARCH(",\"kv_heads\":0"), "model.architecture.kv_heads: must be an integer between 1 and 10000000, got 0" },
		{ "{\"precision\":\"fp32\",\"architecture\":{\"family\":\"decoder\",\"layers\":2,\"hidden\":1000,"
		  "\"heads\":16,\"seq_len\":128,\"vocab\":1000}}",
		  "model.architecture.heads: must divide hidden (1000) unless head_dim is given, got 16" },
		{ ARCH(",\"moe\":{\"experts\":8,\"top_k\":9,\"expert_ffn_hidden\":512}"),
		  "model.architecture.moe.top_k: must be between 1 and experts (8), got 9" },
		{ ARCH(",\"moe\":{\"experts\":8,\"top_k\":2}"), "model.architecture.moe.expert_ffn_hidden: is required" },
		{ ARCH(",\"mla\":{\"kv_lora_rank\":512,\"qk_nope_head_dim\":128,\"v_head_dim\":128}"),
		  "model.architecture.mla.qk_rope_head_dim: is required" },
		{ ARCH(",\"mla\":{\"kv_lora_rank\":0,\"qk_nope_head_dim\":128,\"qk_rope_head_dim\":64,\"v_head_dim\":128}"),
		  "model.architecture.mla.kv_lora_rank: must be an integer between 1 and 10000000, got 0" },
		{ ARCH(",\"moe\":{\"experts\":8,\"top_k\":2,\"expert_ffn_hidden\":512,\"capacity_factor\":1.25,"
		       "\"dropless\":true}"),
		  "model.architecture.moe.capacity_factor: a dropless MoE has none (dropless true)" },
		{ ARCH(",\"moe\":{\"experts\":8,\"top_k\":2,\"expert_ffn_hidden\":512,\"first_dense\":2}"),
		  "model.architecture.moe.first_dense: must be below layers (2), got 2" },
		{ ARCH(",\"moe\":{\"experts\":0,\"top_k\":2,\"expert_ffn_hidden\":512}"),
		  "model.architecture.moe.experts: must be an integer between 1 and 4096, got 0" },
		{ ARCH(",\"moe\":{\"experts\":8,\"top_k\":2,\"expert_ffn_hidden\":512,\"shared_experts\":1}"),
		  "model.architecture.moe.shared_expert_ffn_hidden: is required" },
		{ ARCH(",\"mlp\":\"relu\""), "model.architecture.mlp: must be one of \"gelu\", \"swiglu\", got \"relu\"" },
		{ ARCH(",\"flash_attention\":1"), "model.architecture.flash_attention: must be true or false, got number" },
		{ ARCH(",\"depth\":3"), "model.architecture.depth: unknown key" },
		{ "{\"precision\":\"fp32\",\"architecture\":{\"family\":\"decoder\",\"layers\":2,\"heads\":16,"
		  "\"seq_len\":128,\"vocab\":1000}}",
		  "model.architecture.hidden: is required" },
		{ "{\"precision\":\"fp32\",\"architecture\":{\"family\":\"decoder\",\"layers\":0,\"hidden\":64,"
		  "\"heads\":1,\"seq_len\":128,\"vocab\":1000}}",
		  "model.architecture.layers: must be an integer between 1 and 4094, got 0" },
		{ "{\"precision\":\"fp32\",\"architecture\":{\"family\":\"decoder\",\"layers\":1,\"hidden\":64,"
		  "\"heads\":1,\"seq_len\":8,\"vocab\":10},\"layer_types\":[]}",
		  "model.architecture: give either architecture or layer_types and graph, not both" },
	};
#undef ARCH
	struct model_profile m;
	struct uniap_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(jdec_model(cases[i].doc, strlen(cases[i].doc), &m, &err), UNIAP_E_INVALID);
		assert_string_equal(err.msg, cases[i].msg);
	}
}

/* a small decoder to vary one choice at a time */
static struct model_arch small_arch(void)
{
	struct model_arch a;

	memset(&a, 0, sizeof(a));
	a.family = MODEL_ARCH_DECODER;
	a.layers = 2;
	a.hidden = 1024;
	a.heads = 16;
	a.kv_heads = 16;
	a.ffn_hidden = 2816;
	a.seq_len = 2048;
	a.vocab = 32000;
	a.dropout = 1;
	a.biases = 1;
	a.precision = MODEL_MIXED;
	return a;
}

static void build(const struct model_arch *a, struct model_profile *m)
{
	struct uniap_err err;

	if (catalog_transformer("x", a, m, &err) != UNIAP_OK)
		fail_msg("%s", err.msg);
}

/* SwiGLU, GQA and flash attention move parameters, FLOPs and activations as docs/catalog.md says */
static void test_architecture_formulas(void **state)
{
	struct model_arch base = small_arch(), v;
	struct model_profile m0, m1;
	const struct model_layer_type *b0, *b1;
	double h = 1024, f = 2816, s = 2048, a = 16, k = 4 * (1024 / 16);

	(void)state;
	build(&base, &m0);
	b0 = type_named(&m0, "block");
	/* SwiGLU: one more h x f matrix (+ its f biases), 2 h f s more FLOPs,
	 * 2 s f more activation bytes (2-byte elements) in the split part */
	v = base;
	v.mlp = MODEL_MLP_SWIGLU;
	build(&v, &m1);
	b1 = type_named(&m1, "block");
	NEAR(b1->parameters - b0->parameters, h * f + f);
	NEAR(b1->forward_flops_per_sample - b0->forward_flops_per_sample, 2 * h * f * s);
	NEAR(act_at(b1, 1) - act_at(b0, 1), 2 * s * f);
	NEAR(act_at(b1, 4) - act_at(b0, 4), 2 * s * f / 4);
	assert_int_equal(b1->kernels_per_pass - b0->kernels_per_pass, 2);
	model_release(&m1);
	/* GQA with 4 KV heads: K and V of width k = 4 * h / a */
	v = base;
	v.kv_heads = 4;
	build(&v, &m1);
	b1 = type_named(&m1, "block");
	NEAR(b0->parameters - b1->parameters, 2 * h * (h - k) + 2 * (h - k));
	NEAR(b0->forward_flops_per_sample - b1->forward_flops_per_sample, 2 * 2 * h * (h - k) * s);
	NEAR(act_at(b0, 1) - act_at(b1, 1), 4 * s * (h - k));
	model_release(&m1);
	/* flash attention: the 5 a s^2 score bytes (with dropout) become a 4 a s
	 * byte logsumexp; backward's recomputed QK^T adds 2/3 s^2 h forward FLOPs */
	v = base;
	v.flash_attention = 1;
	build(&v, &m1);
	b1 = type_named(&m1, "block");
	assert_true(b1->parameters == b0->parameters);
	NEAR(act_at(b0, 1) - act_at(b1, 1), 5 * a * s * s - 4 * a * s);
	NEAR(act_at(b0, 8) - act_at(b1, 8), (5 * a * s * s - 4 * a * s) / 8);
	NEAR(b1->forward_flops_per_sample - b0->forward_flops_per_sample, 2.0 / 3.0 * s * s * h);
	/* nor do its scores go through memory: softmax 2 a s^2 e, dropout a s^2 (2e + 1) */
	NEAR(model_tp_lookup(b0->memory_bound_bytes, b0->n_memory_bound_bytes, 1) -
	     model_tp_lookup(b1->memory_bound_bytes, b1->n_memory_bound_bytes, 1),
	     2 * a * s * s * 2 + a * s * s * 5);
	model_release(&m1);
	/* without dropout and flash attention the scores keep 2 a s^2 bytes */
	v = base;
	v.dropout = 0;
	build(&v, &m1);
	b1 = type_named(&m1, "block");
	NEAR(act_at(b0, 1) - act_at(b1, 1), 2 * s * h + 3 * a * s * s);
	model_release(&m1);
	/* an encoder adds token types and the embedding LayerNorm (4 h) and the MLM transform */
	v = base;
	v.family = MODEL_ARCH_ENCODER;
	build(&v, &m1);
	NEAR(type_named(&m1, "embedding")->parameters - type_named(&m0, "embedding")->parameters, 4 * h);
	NEAR(type_named(&m1, "head")->parameters - type_named(&m0, "head")->parameters, h * h + h + 32000);
	model_release(&m1);
	model_release(&m0);
}

/* the catalog's Llama-2-70B uses flash attention; the paper's models do not */
static void test_flash_per_entry(void **state)
{
	struct model_profile m;
	struct uniap_err err;
	const struct model_layer_type *t;
	double s = 4096, h = 8192, k = 1024, f = 28672, a = 64;

	(void)state;
	assert_int_equal(catalog_model("llama-70b", &m, &err), UNIAP_OK);
	t = type_named(&m, "block");
	NEAR(act_at(t, 1), 8 * s * h + 4 * s * h + 4 * s * k + 6 * s * f + 4 * a * s);
	model_release(&m);
}

/* datasheet figures of docs/catalog.md reach the profiles: memory bandwidth,
 * kernel overhead, GEMM knee, per-level latency and link sharing */
static void test_cluster_figures(void **state)
{
	static const struct {
		const char *name;
		double mem_gb_per_s, knee, eff;
		size_t levels;
		double last_latency_us;
		int last_shared_by;
	} cases[] = {
		{ "enva", 900, 32, 0.9, 1, 3.4, 1 },      { "envb-8", 547.6, 38, 0.85, 3, 30, 4 },
		{ "envc", 1555, 150, 0.75, 2, 11.4, 4 },  { "envd-32", 1024, 15, 0.75, 2, 9.6, 4 },
		{ "dgx-a100-x2", 2039, 122, 0.8, 2, 9.6, 1 }, { "dgx-h100", 3350, 221, 0.75, 1, 3.4, 1 },
		{ "dgx-h200-x2", 4800, 155, 0.75, 2, 9.6, 1 }, { "dgx-b200", 8000, 197, 0.7, 1, 3.4, 1 },
		{ "gb200-nvl72", 8000, 219, 0.7, 1, 3.4, 1 }, { "h100-roce-x4", 3350, 221, 0.75, 2, 9.6, 1 },
	};
	struct cluster_profile c;
	struct uniap_err err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(catalog_cluster(cases[i].name, &c, &err), UNIAP_OK);
		CLOSE(c.memory_bandwidth_bytes_per_s, cases[i].mem_gb_per_s * 1e9);
		assert_true(c.gemm_half_dim == cases[i].knee);
		assert_true(c.compute_efficiency == cases[i].eff);
		assert_true(c.kernel_overhead_s > 0 && c.reserved_bytes == 2 * 1073741824.0);
		assert_true(c.memory_fragmentation == MODEL_DEFAULT_FRAGMENTATION);
		assert_true(c.memory_margin == MODEL_DEFAULT_MARGIN);
		assert_int_equal(c.n_levels, cases[i].levels);
		CLOSE(c.levels[c.n_levels - 1].latency_s, cases[i].last_latency_us * 1e-6);
		assert_int_equal(c.levels[c.n_levels - 1].shared_by, cases[i].last_shared_by);
		cluster_release(&c);
	}
}

/* MoE: the active parameters per token (the dense part + top_k / experts of
 * the routed ones) match the published ones; the expert parts are parts */
static void test_moe_active(void **state)
{
	static const struct {
		const char *name;
		double active;  /* published */
		int embedding;  /* the published count includes the input embedding */
	} cases[] = {
		{ "mixtral-8x7b", 12.9e9, 1 }, { "mixtral-8x22b", 39e9, 1 }, { "qwen3-30b-a3b", 3.3e9, 1 },
		{ "qwen3-235b-a22b", 22e9, 1 }, { "gpt-oss-120b", 5.13e9, 0 }, { "deepseek-v3", 37e9, 1 },
	};
	struct uniap_err err;
	size_t i, u;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct model_profile m;
		double active = 0;

		assert_int_equal(catalog_model(cases[i].name, &m, &err), UNIAP_OK);
		for (u = 0; u < m.n_layers; u++) {
			const struct model_layer_type *t = &m.types[m.layers[u].type];
			double k = t->experts ? t->expert_tokens_per_sample / m.shape.seq_len : 0;

			if (u == 0 && !cases[i].embedding)
				continue;
			assert_true(t->expert_parameters <= t->parameters);
			assert_true(t->expert_flops_per_sample < t->forward_flops_per_sample);
			/* dropless, one fc1 and one fc2 GEMM per local expert (docs/catalog.md) */
			assert_int_equal(t->kernels_per_local_expert, t->experts ? 2 : 0);
			assert_int_equal(t->expert_sync, t->experts ? 1 : 0);
			active += t->parameters - t->expert_parameters + (t->experts ? t->expert_parameters * k / t->experts : 0);
		}
		if (fabs(active - cases[i].active) > 0.03 * cases[i].active)
			fail_msg("%s: %g active parameters, published %g", cases[i].name, active, cases[i].active);
		assert_true(m.shape.experts > 0);
		model_release(&m);
	}
	/* with a capacity factor the shapes are static (padded to capacity): no synchronisation */
	{
		static const char doc[] =
			"{\"name\":\"m\",\"precision\":\"mixed\",\"architecture\":{\"family\":\"decoder\","
			"\"layers\":2,\"hidden\":512,\"heads\":8,\"ffn_hidden\":1024,\"mlp\":\"swiglu\","
			"\"seq_len\":256,\"vocab\":1000,\"moe\":{\"experts\":8,\"top_k\":2,\"expert_ffn_hidden\":512,"
			"\"dropless\":false,\"capacity_factor\":1.25}}}";
		struct model_profile m;

		if (jdec_model(doc, strlen(doc), &m, &err) != UNIAP_OK)
			fail_msg("%s", err.msg);
		assert_int_equal(m.types[m.layers[1].type].experts, 8);
		assert_int_equal(m.types[m.layers[1].type].expert_sync, 0);
		assert_int_equal(m.types[m.layers[1].type].kernels_per_local_expert, 2);
		model_release(&m);
	}
}

/* FP8 keeps the GEMMs' inputs in 1 byte: a Llama block saves 2 s h whole on every tp rank and s q + s f split */
static void test_fp8_saved(void **state)
{
	struct model_profile m;
	struct uniap_err err;
	const struct model_layer_type *b;
	double s = 8192, h = 4096, f = 14336;

	(void)state;
	assert_int_equal(catalog_model("llama-3.1-8b", &m, &err), UNIAP_OK);
	b = type_named(&m, "block");
	assert_true(b->fp8_saved_bytes_per_sample == 2 * s * h);
	assert_true(b->fp8_saved_split_bytes_per_sample == s * h + s * f);
	assert_true(b->fp8_saved_bytes_per_sample + b->fp8_saved_split_bytes_per_sample < act_at(b, 1));
	assert_true(type_named(&m, "head")->fp8_saved_bytes_per_sample == 0);
	model_release(&m);
}

/* MLA: selective recomputation reruns the up-projections, so Q, K and V are what +sel does not keep */
static void test_mla_selective(void **state)
{
	struct model_profile m;
	struct uniap_err err;
	const struct model_layer_type *b;
	double s = 4096, qk = 128.0 * (128 + 64), vw = 128.0 * 128;

	(void)state;
	assert_int_equal(catalog_model("deepseek-v3", &m, &err), UNIAP_OK);
	b = type_named(&m, "block");
	assert_true(b->attention_bytes_per_sample == 2 * s * (qk + qk + vw));
	assert_true(b->attention_flops_per_sample == 2 * s * (1536.0 * qk + 512.0 * 128 * (128 + 128)));
	model_release(&m);
	assert_int_equal(catalog_model("llama-3.1-8b", &m, &err), UNIAP_OK);
	assert_true(type_named(&m, "block")->attention_bytes_per_sample == 0); /* flash: nothing to rerun */
	model_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parameter_counts),
		cmocka_unit_test(test_moe_active),
		cmocka_unit_test(test_fp8_saved),
		cmocka_unit_test(test_mla_selective),
		cmocka_unit_test(test_flops_per_token),
		cmocka_unit_test(test_one_layer_by_hand),
		cmocka_unit_test(test_t5_graph),
		cmocka_unit_test(test_every_entry_roundtrips),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_prices),
		cmocka_unit_test(test_decode_peak),
		cmocka_unit_test(test_architecture_documents),
		cmocka_unit_test(test_architecture_errors),
		cmocka_unit_test(test_architecture_formulas),
		cmocka_unit_test(test_flash_per_entry),
		cmocka_unit_test(test_cluster_figures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
