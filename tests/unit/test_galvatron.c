/*
 * test_galvatron.c - importing Galvatron v2.4.0 profiles (json/galvatron.c):
 * every fixture file set and model imports and decodes, hand-picked numbers
 * are converted exactly, configs without profiles are refused, and a table of
 * corrupt inputs each gives an error naming the file and the key.
 *
 * Run from the repository root: the fixtures are read from
 * ../shared/fixtures/galvatron-v2.4.0 (CI), else /work/shared/fixtures/...
 * Every test frees what it made so ASan's leak checker stays quiet.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cost.h"
#include "fixtures.h"
#include "galvatron.h"
#include "jdecode.h"
#include "jencode.h"
#include "model.h"

#define MIB 1048576.0
#define GIB 1073741824.0

/*
 * The fixtures' folder; a test that needs them is skipped (cmocka's skip(),
 * counted by tests/run.sh and said once on stderr) when they are absent, as in
 * a clone without ../shared beside it.
 */
static const char *fixture_root(void)
{
	static const char *const roots[] = { "../shared/fixtures/galvatron-v2.4.0",
	                                     "/work/shared/fixtures/galvatron-v2.4.0" };
	static int said;
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		DIR *d = opendir(roots[i]);

		if (d) {
			closedir(d);
			return roots[i];
		}
	}
	if (!said++)
		fprintf(stderr, "test_galvatron: Galvatron's fixtures (../shared/fixtures/galvatron-v2.4.0) "
		                "are absent: the tests that read them are skipped\n");
	skip();
	return NULL;
}

/* ----------------------------------------------------------------- helpers */

/* Imports one hardware file set; fails the test on error. */
static cJSON *import_cluster(int nodes, int gpus)
{
	char dir[512];
	struct galv_hw_opts o = { 0 };
	struct uniap_err err = { 0 };
	cJSON *doc = NULL;

	snprintf(dir, sizeof(dir), "%s/hardware", fixture_root());
	o.dir = dir;
	o.nodes = nodes;
	o.gpus_per_node = gpus;
	o.memory_bytes = GALV_DEFAULT_MEMORY_GIB * GIB;
	o.reserved_bytes = GALV_DEFAULT_RESERVED_GIB * GIB;
	if (galv_import_cluster(&o, &doc, NULL, &err) != UNIAP_OK)
		fail_msg("%dx%d: %s", nodes, gpus, err.msg);
	return doc;
}

/* Imports model_dir/config (seq 0: the config's); returns the code, *doc on success. */
static uniap_code import_model(const char *model_dir, const char *config, long seq, long bsz, cJSON **doc,
                               struct uniap_err *err)
{
	char dir[512], cfg[640];
	struct galv_model_opts o = { 0 };

	snprintf(dir, sizeof(dir), "%s/models/%s", fixture_root(), model_dir);
	snprintf(cfg, sizeof(cfg), "%s/%s", dir, config);
	o.dir = dir;
	o.config_path = cfg;
	o.seq = seq;
	o.bsz = bsz;
	return galv_import_model(&o, doc, NULL, err);
}

/* The printed document decoded as a cluster (exactly what the CLI writes). */
static void decode_cluster(const cJSON *doc, struct cluster_profile *c)
{
	char *text = jenc_print(doc, 0);
	struct uniap_err err = { 0 };

	assert_non_null(text);
	if (jdec_cluster(text, strlen(text), c, &err) != UNIAP_OK)
		fail_msg("%s", err.msg);
	cJSON_free(text);
}

static void decode_model(const cJSON *doc, struct model_profile *m)
{
	char *text = jenc_print(doc, 0);
	struct uniap_err err = { 0 };

	assert_non_null(text);
	if (jdec_model(text, strlen(text), m, &err) != UNIAP_OK)
		fail_msg("%s", err.msg);
	cJSON_free(text);
}

static const struct cluster_bw *find_bw(const struct cluster_profile *c, int size, int consecutive)
{
	size_t i;

	for (i = 0; i < c->n_coll[CLUSTER_ALLREDUCE]; i++)
		if (c->coll[CLUSTER_ALLREDUCE][i].size == size && c->coll[CLUSTER_ALLREDUCE][i].consecutive == consecutive)
			return &c->coll[CLUSTER_ALLREDUCE][i];
	fail_msg("no all-reduce entry for size %d consecutive %d", size, consecutive);
	return NULL;
}

static const struct model_layer_type *find_type(const struct model_profile *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->n_types; i++)
		if (strcmp(m->types[i].name, name) == 0)
			return &m->types[i];
	fail_msg("no layer type %s", name);
	return NULL;
}

static double tp_value(const struct model_tp_value *t, size_t n, int tp)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].tp == tp)
			return t[i].value;
	fail_msg("no entry for tp %d", tp);
	return 0;
}

static int has_edge(const struct model_profile *m, const char *from, const char *to)
{
	size_t i;

	for (i = 0; i < m->n_edges; i++)
		if (strcmp(m->layers[m->edges[i].from].name, from) == 0 && strcmp(m->layers[m->edges[i].to].name, to) == 0)
			return 1;
	return 0;
}

/* --------------------------------------------------------------- hardware */

static void test_every_hardware_set(void **state)
{
	static const struct {
		int nodes, gpus;
		size_t levels, allreduce, p2p;
	} sets[] = {
		{ 1, 4, 1, 3, 2 },
		{ 1, 8, 1, 5, 3 },
		{ 2, 8, 2, 7, 4 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		struct cluster_profile c = { 0 };
		cJSON *doc = import_cluster(sets[i].nodes, sets[i].gpus);

		decode_cluster(doc, &c);
		assert_int_equal(c.nodes, sets[i].nodes);
		assert_int_equal(c.devices_per_node, sets[i].gpus);
		assert_int_equal(c.n_levels, sets[i].levels);
		assert_int_equal(c.n_coll[CLUSTER_ALLREDUCE], sets[i].allreduce);
		assert_int_equal(c.n_p2p, sets[i].p2p);
		assert_true(c.overlap_coefficient == 1.125552573612729);
		assert_true(c.memory_bytes == 80 * GIB);
		assert_true(c.reserved_bytes == 2 * GIB);
		cluster_release(&c);
		cJSON_Delete(doc);
	}
}

static void test_cluster_values(void **state)
{
	struct cluster_profile c = { 0 };
	cJSON *doc = import_cluster(1, 8);
	size_t i;

	(void)state;
	decode_cluster(doc, &c);
	/* allreduce_size_8_consec_1: 154.203 GB/s; allreduce_size_2_consec_0: 151.344 */
	assert_true(find_bw(&c, 8, 1)->bw_bytes_per_s == 154.203 * 1e9);
	assert_true(find_bw(&c, 2, 0)->bw_bytes_per_s == 151.344 * 1e9);
	/* node level: the best consecutive entry inside the node (size 4: 159.119) */
	assert_int_equal(c.levels[0].devices, 8);
	assert_true(c.levels[0].bw_bytes_per_s == 159.119 * 1e9);
	for (i = 0; i < c.n_p2p; i++)
		if (c.p2p[i].pp == 8)
			assert_true(c.p2p[i].bw_bytes_per_s == 109.45 * 1e9);
	cluster_release(&c);
	cJSON_Delete(doc);

	/* 2 nodes: the cluster level is the worst cross-node entry (strided size 2: 8.13007) */
	doc = import_cluster(2, 8);
	decode_cluster(doc, &c);
	assert_int_equal(c.levels[1].devices, 16);
	assert_true(c.levels[1].bw_bytes_per_s == 8.13007 * 1e9);
	assert_true(c.levels[0].bw_bytes_per_s == 157.984 * 1e9);
	assert_true(find_bw(&c, 16, 1)->bw_bytes_per_s == 44.682 * 1e9);
	cluster_release(&c);
	cJSON_Delete(doc);
}

static void test_hardware_set_choice(void **state)
{
	char dir[512];
	struct galv_hw_opts o = { 0 };
	struct uniap_err err = { 0 };
	cJSON *doc = NULL;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/hardware", fixture_root());
	o.dir = dir;
	o.memory_bytes = 80 * GIB;
	assert_int_equal(galv_import_cluster(&o, &doc, NULL, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "several file sets (1x4, 1x8, 2x8)"));
	assert_null(doc);
	o.nodes = 4;
	o.gpus_per_node = 8;
	assert_int_equal(galv_import_cluster(&o, &doc, NULL, &err), UNIAP_E_NOTFOUND);
	assert_non_null(strstr(err.msg, "no file set matches"));
	o.dir = "/nonexistent-galvatron-dir";
	assert_int_equal(galv_import_cluster(&o, &doc, NULL, &err), UNIAP_E_IO);
	assert_non_null(strstr(err.msg, "/nonexistent-galvatron-dir"));
	assert_null(doc);
}

/* ------------------------------------------------------------------ models */

static void test_every_model_imports(void **state)
{
	static const struct {
		const char *dir, *config;
		long seq;
		size_t types, layers;
	} cases[] = {
		{ "bert_hf", "bert-base-uncased.json", 0, 3, 14 },
		{ "bert_hf", "bert-base-uncased.json", 128, 3, 14 },
		{ "bert_hf", "bert-base-uncased.json", 2048, 3, 14 },
		{ "bert_hf", "bert-large-uncased.json", 0, 3, 26 },
		{ "bert_hf", "bert-large-uncased.json", 1024, 3, 26 },
		{ "gpt_hf", "gpt-1.5b.json", 0, 3, 50 },
		{ "gpt_hf", "gpt-2.7b.json", 0, 3, 34 },
		{ "gpt_hf", "gpt-6.7b.json", 0, 3, 34 },
		{ "llama_hf", "llama-7b.json", 0, 3, 34 },
		{ "swin", "swin-huge-patch4-window7-224.json", 0, 6, 50 },
		{ "vit_hf", "vit-huge-patch16-224.json", 0, 3, 34 },
		{ "vit_hf", "vit-xhuge-patch16-224.json", 0, 3, 130 },
		{ "T5", "t5-3B.json", 0, 4, 50 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct model_profile m = { 0 };
		struct uniap_err err = { 0 };
		cJSON *doc = NULL;

		if (import_model(cases[i].dir, cases[i].config, cases[i].seq, 0, &doc, &err) != UNIAP_OK)
			fail_msg("%s/%s: %s", cases[i].dir, cases[i].config, err.msg);
		decode_model(doc, &m);
		assert_int_equal(m.n_types, cases[i].types);
		assert_int_equal(m.n_layers, cases[i].layers);
		assert_int_equal(m.precision, MODEL_MIXED);
		assert_string_equal(m.layers[0].name, "embed");
		assert_string_equal(m.layers[m.n_layers - 1].name, "head");
		model_release(&m);
		cJSON_Delete(doc);
	}
}

static void test_unprofiled_configs(void **state)
{
	static const struct {
		const char *dir, *config;
		long seq;
		const char *needle;
	} cases[] = {
		{ "bert_hf", "bert-huge-uncased-32.json", 0, "no profile fits bert-huge-uncased-32" },
		{ "bert_hf", "bert-huge-uncased-48.json", 0, "hidden 1280, heads 16" },
		{ "gpt_hf", "gpt-0.3b.json", 0, "no profile fits gpt-0.3b" },
		{ "llama_hf", "llama-0.3b.json", 0, "no profile fits" },
		{ "llama_hf", "llama-13b.json", 0, "no profile fits" },
		{ "llama_hf", "llama-30b.json", 0, "no profile fits" },
		{ "llama_hf", "llama2-70b.json", 0, "no profile fits" },
		{ "llama_hf", "qwen2.5-72b.json", 0, "no profile fits" },
		{ "llama_hf", "qwen2.5-7b.json", 0, "no profile fits" },
		{ "swin", "swin-large-patch4-window12-384.json", 0, "profiles here: bf16_swin-huge" },
		{ "vit_hf", "vit-base-patch16-224.json", 0, "no profile fits" },
		{ "vit_hf", "vit-large-patch16-224.json", 0, "no profile fits" },
		{ "T5", "t5-base.json", 0, "no profile fits t5-base" },
		{ "T5", "t5-large.json", 0, "no profile fits" },
		{ "T5", "t5-small.json", 0, "no profile fits" },
		/* the long-sequence GPT profile has only raw memory measurements */
		{ "gpt_hf", "gpt-6.7b.json", 4096, "memory_profiling_bf16_hidden4096_head32.json: layertype_0: missing" },
		/* BERT's memory profile stops at 2048 */
		{ "bert_hf", "bert-base-uncased.json", 4096, "no entry for sequence length 4096" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct uniap_err err = { 0 };
		cJSON *doc = NULL;

		assert_int_equal(import_model(cases[i].dir, cases[i].config, cases[i].seq, 0, &doc, &err),
		                 UNIAP_E_NOTFOUND);
		assert_null(doc);
		if (!strstr(err.msg, cases[i].needle))
			fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].config, err.msg, cases[i].needle);
	}
}

static void test_bert_values(void **state)
{
	const struct model_layer_type *t;
	struct model_profile m = { 0 };
	struct uniap_err err = { 0 };
	cJSON *doc = NULL;

	(void)state;
	assert_int_equal(import_model("bert_hf", "bert-base-uncased.json", 0, 0, &doc, &err), UNIAP_OK);
	decode_model(doc, &m);
	/* layertype_0_bsz1_seq512 (ms per sample) and layertype_0_sp["512"] (MB) */
	t = find_type(&m, "bert_layer");
	assert_int_equal(t->n_forward_s, 1);
	assert_true(t->forward_s[0].value == 1.933209562301637 / 1000.0);
	assert_true(tp_value(t->activation_bytes, t->n_activation_bytes, 1) == 28.9208984375 * MIB);
	assert_true(tp_value(t->activation_bytes, t->n_activation_bytes, 8) == 3.6151123046875 * MIB);
	assert_true(t->parameters == floor(28.6826171875 * MIB / 4 + 0.5)); /* MB of fp32 parameters */
	assert_true(t->checkpoint_bytes_per_sample == 1.0 * MIB);
	assert_true(t->output_bytes_per_sample == 512.0 * 768 * 2);
	assert_int_equal(t->tp_allreduces_per_pass, 2);
	/* the "other" time split in halves; parameters from model states (16 bytes each) */
	t = find_type(&m, "embedding");
	assert_true(t->forward_s[0].value == 3.338761615753172 / 2 / 1000.0);
	assert_true(t->parameters == floor(442.0439453125 * MIB / 16 + 0.5));
	assert_true(tp_value(t->activation_bytes, t->n_activation_bytes, 2) == 8.96343994140625 * MIB);
	t = find_type(&m, "head");
	assert_true(t->parameters == floor(442.986328125 * MIB / 16 + 0.5));
	assert_true(tp_value(t->activation_bytes, t->n_activation_bytes, 1) == 71.0291748046875 * MIB);
	assert_int_equal(m.n_edges, 13); /* a chain */
	model_release(&m);
	cJSON_Delete(doc);
}

static void test_batch_choice_and_derived_other(void **state)
{
	const struct model_layer_type *t;
	struct model_profile m = { 0 };
	struct uniap_err err = { 0 };
	cJSON *doc = NULL;
	double other;

	(void)state;
	/* llama: layertype_0_bsz1..14; by default the time of a micro-batch of b
	 * samples, b * ms(b), is fitted as alpha + beta * b over the 14 sizes */
	assert_int_equal(import_model("llama_hf", "llama-7b.json", 0, 0, &doc, &err), UNIAP_OK);
	decode_model(doc, &m);
	t = find_type(&m, "llama_layer");
	assert_true(fabs(t->forward_s[0].value * 1000.0 - 4.89244) < 1e-5);
	assert_true(fabs(t->forward_fixed_s * 1000.0 - 1.47241) < 1e-5);
	/* the fit passes near the measured ends: bsz 1 (6.28 ms) and bsz 14 */
	assert_true(fabs(t->forward_fixed_s + t->forward_s[0].value - 6.284 / 1000.0) < 0.05 * 6.284 / 1000.0);
	assert_true(fabs(t->forward_fixed_s + 14 * t->forward_s[0].value - 14 * 5.10182021004813 / 1000.0) <
	            0.05 * 14 * 5.10182021004813 / 1000.0);
	/* embedding + head: their own fit, split in halves */
	t = find_type(&m, "head");
	assert_true(fabs(t->forward_s[0].value * 1000.0 - 3.47519 / 2) < 1e-5);
	assert_true(fabs(t->forward_fixed_s * 1000.0 - 2.00562 / 2) < 1e-5);
	model_release(&m);
	cJSON_Delete(doc);
	doc = NULL;
	/* --profile-bsz: one batch size, its per-sample time, no fixed time */
	assert_int_equal(import_model("llama_hf", "llama-7b.json", 0, 4, &doc, &err), UNIAP_OK);
	decode_model(doc, &m);
	assert_true(find_type(&m, "llama_layer")->forward_s[0].value == 5.27249355316162 / 1000.0);
	assert_true(find_type(&m, "llama_layer")->forward_fixed_s == 0);
	model_release(&m);
	cJSON_Delete(doc);
	doc = NULL;
	assert_int_equal(import_model("llama_hf", "llama-7b.json", 0, 99, &doc, &err), UNIAP_E_NOTFOUND);
	assert_non_null(strstr(err.msg, "layertype_0: no entry for seq 2048 and bsz 99"));

	/* gpt-1.5b has no layertype_other: Galvatron's rule on layernum[12]_bsz4 */
	assert_int_equal(import_model("gpt_hf", "gpt-1.5b.json", 0, 0, &doc, &err), UNIAP_OK);
	decode_model(doc, &m);
	other = 41.484313583374025;
	other -= 12.0 * 4.0 * 0.5981169303258261;
	other /= 4.0;
	t = find_type(&m, "embedding");
	assert_true(t->forward_s[0].value == other / 2 / 1000.0);
	assert_true(t->forward_fixed_s == 0); /* a bare layertype_0: one size, no fit */
	assert_true(find_type(&m, "gpt_layer")->forward_fixed_s == 0);
	assert_true(find_type(&m, "gpt_layer")->parameters == floor(119.087890625 * MIB / 4 + 0.5));
	/* scalar model_states / activation are TP size 1 */
	assert_true(t->parameters == floor(1277.0 * MIB / 16 + 0.5));
	assert_int_equal(t->n_activation_bytes, 1);
	model_release(&m);
	cJSON_Delete(doc);
}

static void test_t5_and_swin_graphs(void **state)
{
	const struct model_layer_type *t;
	struct model_profile m = { 0 };
	struct uniap_err err = { 0 };
	cJSON *doc = NULL;

	(void)state;
	assert_int_equal(import_model("T5", "t5-3B.json", 0, 0, &doc, &err), UNIAP_OK);
	decode_model(doc, &m);
	/* embed->enc.0, embed->dec.0, 23 encoder links, enc.23->dec.j (24), 23 decoder links, dec.23->head */
	assert_int_equal(m.n_edges, 2 + 23 + 24 + 23 + 1);
	assert_true(has_edge(&m, "embed", "dec.0"));
	assert_true(has_edge(&m, "enc.23", "dec.5"));
	assert_true(has_edge(&m, "dec.23", "head"));
	assert_false(has_edge(&m, "enc.22", "dec.0"));
	t = find_type(&m, "t5_decoder_layer");
	assert_int_equal(t->tp_allreduces_per_pass, 3);
	/* fitted over bsz 1..8 */
	assert_true(fabs(t->forward_s[0].value * 1000.0 - 0.401176) < 1e-5);
	assert_true(fabs(t->forward_fixed_s * 1000.0 - 1.5197) < 1e-4);
	assert_true(t->parameters == floor(258.19140625 * MIB / 4 + 0.5));
	assert_true(fabs(find_type(&m, "embedding")->forward_s[0].value * 1000.0 - 0.38388 / 2) < 1e-5);
	model_release(&m);
	cJSON_Delete(doc);
	doc = NULL;

	assert_int_equal(import_model("swin", "swin-huge-patch4-window7-224.json", 0, 0, &doc, &err), UNIAP_OK);
	decode_model(doc, &m);
	t = find_type(&m, "swin_stage2");
	assert_true(t->output_bytes_per_sample == 196.0 * 1280 * 2);
	assert_true(t->forward_s[0].value == 0.23630700641208235 / 1000.0); /* bsz12 only: no fit */
	assert_true(t->forward_fixed_s == 0);
	assert_true(tp_value(t->activation_bytes, t->n_activation_bytes, 4) == 3.6226806640625 * MIB);
	assert_true(find_type(&m, "swin_stage3")->parameters == floor(304.0 * MIB / 4 + 0.5));
	assert_true(find_type(&m, "embedding")->forward_s[0].value == 1e-9); /* other time 0: floored */
	assert_string_equal(m.layers[1].name, "stage0.0");
	assert_string_equal(m.layers[5].name, "stage2.0");
	model_release(&m);
	cJSON_Delete(doc);
	doc = NULL;
	assert_int_equal(import_model("swin", "swin-huge-patch4-window7-224.json", 3136, 0, &doc, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "--seq: not for swin"));
}

/* --------------------------------------------------------- corrupt inputs */

enum corrupt_file { CF_ALLREDUCE, CF_P2P, CF_OVERLAP, CF_SP_TIME, CF_CONFIG, CF_COMPUTATION, CF_MEMORY };

static const char *const corrupt_names[] = {
	"allreduce_bandwidth_1nodes_8gpus_per_node.json", "p2p_bandwidth_1nodes_8gpus_per_node.json",
	"overlap_coefficient.json", "sp_time_1nodes_8gpus_per_node.json", "tiny-bert.json",
	"computation_profiling_bf16_hidden64_head4.json", "memory_profiling_bf16_hidden64_head4.json",
};

/* Valid minimal inputs; each case replaces one of them. */
static const char *const corrupt_valid[] = {
	"{\"allreduce_size_8_consec_1\": 150, \"allreduce_size_2_consec_0\": 100}",
	"{\"pp_size_2\": 100, \"pp_size_8\": 90}",
	"{\"overlap_coe\": 1.1}",
	"{\"allreduce_size_8_1MB_time\": 0.1, \"all2all_size_2_1024MB_time\": 3.5}",
	"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"max_position_embeddings\": 128}",
	"{\"layertype_0_bsz1_seq128\": 1.5, \"layertype_other_0_bsz1_seq128\": 2.0, \"layernum[1]_bsz1_seq128\": 3.5}",
	"{\"layertype_0\": {\"128\": {\"parameter_size\": 1.0, \"tp_activation_per_bsz_dict\": "
	"{\"1\": 2.0, \"2\": 1.0, \"checkpoint\": 0.5}}},"
	" \"other_memory_pp_on_first\": {\"128\": {\"model_states\": {\"1\": 16.0}, \"activation\": {\"1\": 1.0}}},"
	" \"other_memory_pp_on_last\": {\"model_states\": 16.0, \"activation\": 1.0},"
	" \"1_1_8\": {\"layernum[1]_bsz8_seq128_rank0_ms\": 100.0}}",
};

/* Runs one import with input `which` replaced by text (NULL: all valid). */
static uniap_code run_corrupt(enum corrupt_file which, const char *text, struct uniap_err *err)
{
	cJSON *in[7] = { NULL };
	cJSON *doc = NULL;
	uniap_code rc;
	size_t i;

	for (i = 0; i < 7; i++) {
		in[i] = cJSON_Parse(text && i == (size_t)which ? text : corrupt_valid[i]);
		assert_non_null(in[i]);
	}
	if (which <= CF_SP_TIME) {
		struct galv_hw_input h = {
			.nodes = 1, .gpus_per_node = 8, .memory_bytes = 80 * GIB, .reserved_bytes = 2 * GIB,
			.allreduce = in[CF_ALLREDUCE], .allreduce_name = corrupt_names[CF_ALLREDUCE],
			.p2p = in[CF_P2P], .p2p_name = corrupt_names[CF_P2P],
			.overlap = in[CF_OVERLAP], .overlap_name = corrupt_names[CF_OVERLAP],
			.sp_time = in[CF_SP_TIME], .sp_time_name = corrupt_names[CF_SP_TIME],
		};

		rc = galv_cluster_json(&h, &doc, NULL, err);
	} else {
		struct galv_model_input mi = {
			.config = in[CF_CONFIG], .config_name = corrupt_names[CF_CONFIG],
			.computation = in[CF_COMPUTATION], .computation_name = corrupt_names[CF_COMPUTATION],
			.memory = in[CF_MEMORY], .memory_name = corrupt_names[CF_MEMORY], .precision = "bf16",
		};

		rc = galv_model_json(&mi, &doc, NULL, err);
	}
	if (rc != UNIAP_OK)
		assert_null(doc);
	cJSON_Delete(doc);
	for (i = 0; i < 7; i++)
		cJSON_Delete(in[i]);
	return rc;
}

static void test_valid_minimal_inputs(void **state)
{
	struct uniap_err err = { 0 };

	(void)state;
	if (run_corrupt(CF_ALLREDUCE, NULL, &err) != UNIAP_OK)
		fail_msg("%s", err.msg);
	if (run_corrupt(CF_MEMORY, NULL, &err) != UNIAP_OK)
		fail_msg("%s", err.msg);
}

/*
 * A profile whose free fit has an intercept below 0 (T(1) = 1 ms, T(2) = 3 ms:
 * alpha -1) is refitted through the origin, beta = (1*1 + 2*3) / (1 + 4) =
 * 1.4 ms, and the report says so.
 */
static void test_fit_through_origin(void **state)
{
	static const char comp[] = "{\"layertype_0_bsz1_seq128\": 1.0, \"layertype_0_bsz2_seq128\": 1.5,"
	                           " \"layertype_other_0_bsz1_seq128\": 2.0}";
	struct galv_report rep = { { 0 } };
	struct uniap_err err = { 0 };
	struct model_profile m = { 0 };
	cJSON *cfg = cJSON_Parse(corrupt_valid[CF_CONFIG]), *c = cJSON_Parse(comp);
	cJSON *mem = cJSON_Parse(corrupt_valid[CF_MEMORY]), *doc = NULL;
	const struct model_layer_type *t;
	struct galv_model_input mi = {
		.config = cfg, .config_name = "cfg.json", .computation = c, .computation_name = "comp.json",
		.memory = mem, .memory_name = "mem.json", .precision = "bf16",
	};

	(void)state;
	assert_non_null(cfg);
	assert_non_null(c);
	assert_non_null(mem);
	if (galv_model_json(&mi, &doc, &rep, &err) != UNIAP_OK)
		fail_msg("%s", err.msg);
	decode_model(doc, &m);
	t = find_type(&m, "bert_layer");
	assert_true(fabs(t->forward_s[0].value - 1.4 / 1000.0) < 1e-15);
	assert_true(t->forward_fixed_s == 0);
	assert_non_null(strstr(rep.text, "alpha -1 ms is below 0, refitted through the origin"));
	model_release(&m);
	cJSON_Delete(doc);
	cJSON_Delete(cfg);
	cJSON_Delete(c);
	cJSON_Delete(mem);
}

static void test_corrupt_inputs(void **state)
{
	static const struct {
		enum corrupt_file which;
		const char *text;
		uniap_code code;
		const char *needle; /* besides the file name */
	} cases[] = {
		/* hardware */
		{ CF_ALLREDUCE, "{\"allreduce_size_8_consec_1\": \"154\"}", UNIAP_E_INVALID,
		  "allreduce_size_8_consec_1: must be a number, got string" },
		{ CF_ALLREDUCE, "{\"allreduce_size_8_consec_1\": -3}", UNIAP_E_INVALID,
		  "allreduce_size_8_consec_1: must be > 0" },
		{ CF_ALLREDUCE, "{\"allreduce_size_8_consec_2\": 100}", UNIAP_E_INVALID,
		  "allreduce_size_8_consec_2: unknown key" },
		{ CF_ALLREDUCE, "{\"allreduce_size_16_consec_1\": 100}", UNIAP_E_INVALID,
		  "allreduce_size_16_consec_1: group size must be between 2 and the 8 devices" },
		{ CF_ALLREDUCE, "{}", UNIAP_E_INVALID, "no allreduce_size_<k>_consec_<0|1> entries" },
		{ CF_ALLREDUCE, "[150]", UNIAP_E_INVALID, "must be a JSON object, got array" },
		{ CF_P2P, "{\"pp_size_3\": 10}", UNIAP_E_INVALID, "pp_size_3: pipeline degree must be >= 2 and divide" },
		{ CF_P2P, "{\"pp_size_2\": 1, \"pp_size_2\": 2}", UNIAP_E_INVALID, "pp_size_2: duplicate key" },
		{ CF_P2P, "{\"pp_size_2\": null}", UNIAP_E_INVALID, "pp_size_2: must be a number, got null" },
		{ CF_OVERLAP, "{}", UNIAP_E_INVALID, "overlap_coe: missing" },
		{ CF_OVERLAP, "{\"overlap_coe\": 0.5}", UNIAP_E_INVALID, "overlap_coe: must be >= 1" },
		{ CF_OVERLAP, "{\"overlap_coe\": 1.1, \"overlap\": 1}", UNIAP_E_INVALID, "overlap: unknown key" },
		{ CF_SP_TIME, "{\"allreduce_size_8_1MB\": 0.1}", UNIAP_E_INVALID, "allreduce_size_8_1MB: unknown key" },
		{ CF_SP_TIME, "{\"all2all_size_4_8MB_time\": -0.1}", UNIAP_E_INVALID,
		  "all2all_size_4_8MB_time: must be > 0" },
		/* hyper-parameter file */
		{ CF_CONFIG, "{\"num_hidden_layers\": 2}", UNIAP_E_INVALID, "unknown model family" },
		{ CF_CONFIG, "{\"hidden_size\": 64, \"num_hidden_layers\": \"2\", \"num_attention_heads\": 4}",
		  UNIAP_E_INVALID, "num_hidden_layers: must be an integer, got string" },
		{ CF_CONFIG, "{\"hidden_size\": 64, \"num_hidden_layers\": 2.5, \"num_attention_heads\": 4}",
		  UNIAP_E_INVALID, "num_hidden_layers: must be an integer between" },
		{ CF_CONFIG, "{\"hidden_size\": 64, \"num_attention_heads\": 4}", UNIAP_E_INVALID,
		  "num_hidden_layers: missing" },
		/* computation profile */
		{ CF_COMPUTATION, "{\"layertype_0_bsz1_seq128\": \"fast\", \"layertype_other_0_bsz1_seq128\": 2.0}",
		  UNIAP_E_INVALID, "layertype_0_bsz1_seq128: must be a number, got string" },
		{ CF_COMPUTATION, "{\"layertype_0_bsz1_seq128\": -1.5, \"layertype_other_0_bsz1_seq128\": 2.0}",
		  UNIAP_E_INVALID, "layertype_0_bsz1_seq128: must be > 0" },
		{ CF_COMPUTATION, "{\"layertype_0_batch1\": 1.5}", UNIAP_E_INVALID, "layertype_0_batch1: unknown key" },
		{ CF_COMPUTATION, "{\"layertype_0_bsz1_seq[128,128]\": 1.5}", UNIAP_E_INVALID,
		  "layertype_0_bsz1_seq[128,128]: unknown key" },
		{ CF_COMPUTATION, "{\"layertype_0_bsz1_seq256\": 1.5, \"layertype_other_0_bsz1_seq256\": 2.0}",
		  UNIAP_E_NOTFOUND, "layertype_0: no entry for seq 128 (profiled seqs: 256)" },
		{ CF_COMPUTATION, "{\"layertype_0_bsz1_seq128\": 1.5, \"layertype_1_bsz1_seq128\": 1.5}",
		  UNIAP_E_INVALID, "profiles 2 layer type(s), the config (tiny-bert, bert) has 1" },
		{ CF_COMPUTATION, "{\"layertype_0_bsz1_seq128\": 1.5}", UNIAP_E_NOTFOUND,
		  "layertype_other: missing, and no layernum[..] total" },
		/* memory profile */
		{ CF_MEMORY, "{\"layertype_0\": {\"128\": {\"tp_activation_per_bsz_dict\": {\"1\": 2.0}}}}", UNIAP_E_INVALID,
		  "layertype_0.128.parameter_size: missing" },
		{ CF_MEMORY, "{\"layertype_0\": {\"128\": {\"parameter_size\": 1.0, \"tp_activation_per_bsz_dict\": "
		  "{\"2\": 1.0}}}}", UNIAP_E_INVALID, "layertype_0.128.tp_activation_per_bsz_dict.1: missing" },
		{ CF_MEMORY, "{\"layertype_0\": {\"128\": {\"parameter_size\": 1.0, \"tp_activation_per_bsz_dict\": "
		  "{\"1\": 2.0, \"2\": -1.0}}}}", UNIAP_E_INVALID,
		  "layertype_0.128.tp_activation_per_bsz_dict.2: must be >= 0" },
		{ CF_MEMORY, "{\"layertype_0\": {\"128\": {\"parameter_size\": \"1\", \"tp_activation_per_bsz_dict\": "
		  "{\"1\": 2.0}}}}", UNIAP_E_INVALID, "layertype_0.128.parameter_size: must be a number, got string" },
		{ CF_MEMORY, "{\"layertype_a\": {}}", UNIAP_E_INVALID, "layertype_a: unknown key" },
		{ CF_MEMORY, "{\"layertype_0\": {\"256\": {\"parameter_size\": 1.0, \"tp_activation_per_bsz_dict\": "
		  "{\"1\": 2.0}}}}", UNIAP_E_NOTFOUND, "layertype_0: no entry for sequence length 128 (profiled: 256)" },
		{ CF_MEMORY, "{\"layertype_0\": {\"parameter_size\": 1.0, \"tp_activation_per_bsz_dict\": {\"1\": 2.0}},"
		  " \"other_memory_pp_on_first\": {\"model_states\": 1.0, \"activation\": 1.0}}", UNIAP_E_INVALID,
		  "other_memory_pp_on_last: missing" },
		{ CF_MEMORY, "{\"layertype_0\": {\"parameter_size\": 1.0, \"tp_activation_per_bsz_dict\": {\"1\": 2.0}},"
		  " \"other_memory_pp_on_first\": {\"model_states\": \"x\", \"activation\": 1.0}}", UNIAP_E_INVALID,
		  "other_memory_pp_on_first.model_states: must be a number or an object by TP size, got string" },
		{ CF_MEMORY, "{\"1_1_8\": {\"layernum[1]_bsz8_seq128_rank0_ms\": \"x\"}}", UNIAP_E_INVALID,
		  "1_1_8.layernum[1]_bsz8_seq128_rank0_ms: must be a finite number" },
		{ CF_MEMORY, "{\"1_1_8\": {}}", UNIAP_E_NOTFOUND, "layertype_0: missing (only the raw measurements" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct uniap_err err = { 0 };
		uniap_code rc = run_corrupt(cases[i].which, cases[i].text, &err);

		if (rc != cases[i].code)
			fail_msg("case %zu: code %s, want %s (%s)", i, uniap_code_name(rc), uniap_code_name(cases[i].code),
			         err.msg);
		if (!strstr(err.msg, corrupt_names[cases[i].which]) || !strstr(err.msg, cases[i].needle))
			fail_msg("case %zu: message \"%s\" lacks \"%s\" or \"%s\"", i, err.msg, corrupt_names[cases[i].which],
			         cases[i].needle);
	}
}

/* Files on disk: empty, bad JSON, a corrupt file inside a hardware folder. */
static void test_corrupt_files(void **state)
{
	static const struct {
		const char *name, *text, *needle;
		uniap_code code;
	} cases[] = {
		{ "allreduce_bandwidth_1nodes_2gpus_per_node.json", "", "empty file", UNIAP_E_MALFORMED },
		{ "allreduce_bandwidth_1nodes_2gpus_per_node.json", " \n", "empty file", UNIAP_E_MALFORMED },
		{ "allreduce_bandwidth_1nodes_2gpus_per_node.json", "{\"allreduce_size_2_consec_1\": ",
		  "malformed json", UNIAP_E_MALFORMED },
		{ "allreduce_bandwidth_1nodes_2gpus_per_node.json", "{\"allreduce_size_2_consec_1\": 1} x",
		  "malformed json", UNIAP_E_MALFORMED },
		{ "allreduce_bandwidth_1nodes_2gpus_per_node.json", "{\"allreduce_size_2_consec_1\": 1e999}",
		  "allreduce_size_2_consec_1: must be", UNIAP_E_INVALID },
		{ "allreduce_bandwidth_1nodes_2gpus_per_node.json", "{\"allreduce_size_4_consec_1\": 100}",
		  "allreduce_size_4_consec_1: group size", UNIAP_E_INVALID },
	};
	char dir[] = "/tmp/test_galvatron.XXXXXX", path[256];
	size_t i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, cases[0].name);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct galv_hw_opts o = { .dir = dir, .memory_bytes = 80 * GIB };
		struct uniap_err err = { 0 };
		cJSON *doc = NULL;
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		assert_int_equal(fwrite(cases[i].text, 1, strlen(cases[i].text), f), strlen(cases[i].text));
		assert_int_equal(fclose(f), 0);
		assert_int_equal(galv_import_cluster(&o, &doc, NULL, &err), cases[i].code);
		assert_null(doc);
		if (!strstr(err.msg, path) || !strstr(err.msg, cases[i].needle))
			fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, err.msg, cases[i].needle);
	}
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* Sum of one candidate's layer times under strategy 0 (the only one on one device). */
static double layer_time_sum(const struct cluster_profile *c, const struct model_profile *m, long batch,
                             long microbatches)
{
	struct cost_options opt = { 0 };
	struct cost_candidate cand;
	struct uniap_err err = { 0 };
	double sum = 0;
	size_t u;

	opt.batch = batch;
	opt.pp = 1;
	opt.microbatches = microbatches;
	if (cost_build(c, m, &opt, &cand, &err) != UNIAP_OK)
		fail_msg("%s", err.msg);
	for (u = 0; u < cand.n_layers; u++)
		sum += cand.time_s[u * cost_k(&cand)];
	cost_candidate_release(&cand);
	return sum;
}

/*
 * GPT-6.7B (layertype_0_bsz1..16): with the fitted fixed time a micro-batch
 * of 1 sample costs more per sample than one of 8 (about 1.3x); without it
 * (alpha zeroed) both cost the same per sample.
 */
static void test_fixed_time_prices_small_microbatches(void **state)
{
	static const int devices[] = { 1 };
	static const double bw[] = { 100 };
	struct cluster_profile c = { 0 };
	struct model_profile m = { 0 };
	struct uniap_err err = { 0 };
	struct galv_report rep = { { 0 } };
	struct galv_model_opts o = { 0 };
	char dir[512], cfg[640];
	cJSON *doc = NULL;
	double per_sample_b1, per_sample_b8;
	size_t i;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/models/gpt_hf", fixture_root());
	snprintf(cfg, sizeof(cfg), "%s/gpt-6.7b.json", dir);
	o.dir = dir;
	o.config_path = cfg;
	assert_int_equal(galv_import_model(&o, &doc, &rep, &err), UNIAP_OK);
	/* the report gives the fit: alpha, beta, max residual */
	assert_non_null(strstr(rep.text, "forward of layer type 0 fitted over layertype_0_bsz<B> (bsz 1..16, 16 sizes)"
	                                 ": alpha 1.60734 ms + beta 3.9081 ms/sample, max residual 3.62 %"));
	decode_model(doc, &m);
	assert_int_equal(fx_cluster(&c, 1, 1, devices, bw, 1, 1e15, 0, 1), 0);
	/* 8 micro-batches of 1 sample against 1 micro-batch of 8, per sample */
	per_sample_b1 = layer_time_sum(&c, &m, 8, 8) / 1;
	per_sample_b8 = layer_time_sum(&c, &m, 8, 1) / 8;
	assert_true(per_sample_b1 > 1.25 * per_sample_b8);
	for (i = 0; i < m.n_types; i++)
		m.types[i].forward_fixed_s = 0;
	per_sample_b1 = layer_time_sum(&c, &m, 8, 8) / 1;
	per_sample_b8 = layer_time_sum(&c, &m, 8, 1) / 8;
	assert_true(fabs(per_sample_b1 - per_sample_b8) < 1e-12 * per_sample_b8);
	cluster_release(&c);
	model_release(&m);
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_hardware_set),
		cmocka_unit_test(test_cluster_values),
		cmocka_unit_test(test_hardware_set_choice),
		cmocka_unit_test(test_every_model_imports),
		cmocka_unit_test(test_unprofiled_configs),
		cmocka_unit_test(test_bert_values),
		cmocka_unit_test(test_batch_choice_and_derived_other),
		cmocka_unit_test(test_t5_and_swin_graphs),
		cmocka_unit_test(test_fixed_time_prices_small_microbatches),
		cmocka_unit_test(test_valid_minimal_inputs),
		cmocka_unit_test(test_fit_through_origin),
		cmocka_unit_test(test_corrupt_inputs),
		cmocka_unit_test(test_corrupt_files),
	};

	return cmocka_run_group_tests_name("galvatron", tests, NULL, NULL);
}
