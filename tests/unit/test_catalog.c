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
	} cases[] = { { "llama-7b", 2048 }, { "llama-13b", 2048 }, { "llama-70b", 4096 }, { "gpt3-175b", 2048 } };
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
	model_release(&m);
	/* Llama-7B (no dropout), 2-byte elements, tp 8: s h = 8388608; 8 + 3 + 2*32*2048/(4096*8) = 15 */
	assert_int_equal(catalog_model("llama-7b", &m, &err), UNIAP_OK);
	t = type_named(&m, "block");
	NEAR(act_at(t, 8), 8388608.0 * 15);
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
	}
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
	/* block.0 is layer 1: forward flops / (15.7e12 * 0.4) / 8, tripled (fwd + 2 x bwd) plus TP all-reduces */
	assert_true(cand.time_s[1 * cost_k(&cand) + (size_t)k] >
	            3 * type_named(&m, "block")->forward_flops_per_sample / (15.7e12 * 0.4) / 8);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parameter_counts),
		cmocka_unit_test(test_flops_per_token),
		cmocka_unit_test(test_one_layer_by_hand),
		cmocka_unit_test(test_t5_graph),
		cmocka_unit_test(test_every_entry_roundtrips),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_prices),
		cmocka_unit_test(test_decode_peak),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
