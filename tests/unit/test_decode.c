/*
 * test_decode.c - the JSON decoders (json/jdecode.c) and the profile rules
 * and helpers of core/model.c.
 *
 * Run from the repository root (the examples are read from schema/examples).
 * Every test releases what it decoded so ASan's leak checker stays quiet.
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

#include <cjson/cJSON.h>

#include "jdecode.h"
#include "model.h"
#include "plan.h"
#include "jobs.h"
#include "runs.h"

#define EXAMPLES_DIR "schema/examples"
#define EXAMPLE_MAX_BYTES (1u << 20)

enum doc_kind { DOC_CLUSTER, DOC_MODEL, DOC_PLAN, DOC_RUNS, DOC_JOBS };

/* Decodes text as kind; releases whatever was decoded; returns the code. */
static uniap_code decode_and_release(enum doc_kind kind, const char *text, size_t len, struct uniap_err *err)
{
	struct cluster_profile c;
	struct model_profile m;
	struct plan_doc p;
	struct runs_doc r;
	struct jobs_doc jd;
	uniap_code rc;

	switch (kind) {
	case DOC_JOBS:
		rc = jobs_decode(text, len, &jd, err);
		if (rc != UNIAP_OK)
			assert_int_equal(jd.n_jobs, 0);
		jobs_doc_release(&jd);
		break;
	case DOC_RUNS:
		rc = runs_decode(text, len, &r, err);
		if (rc != UNIAP_OK)
			assert_int_equal(r.n_runs, 0);
		runs_doc_release(&r);
		break;
	case DOC_CLUSTER:
		rc = jdec_cluster(text, len, &c, err);
		if (rc != UNIAP_OK)
			assert_int_equal(c.n_levels, 0); /* released and zeroed on failure */
		cluster_release(&c);
		break;
	case DOC_MODEL:
		rc = jdec_model(text, len, &m, err);
		if (rc != UNIAP_OK)
			assert_int_equal(m.n_layers, 0);
		model_release(&m);
		break;
	default:
		rc = jdec_plan(text, len, &p, err);
		if (rc != UNIAP_OK)
			assert_int_equal(p.n_layers, 0);
		plan_doc_release(&p);
		break;
	}
	return rc;
}

/* ------------------------------------------------------------ examples */

static char *read_example(const char *name, size_t *len)
{
	char path[512];
	char *text = NULL;
	struct uniap_err err;

	snprintf(path, sizeof(path), "%s/%s", EXAMPLES_DIR, name);
	if (jdec_read_file(path, EXAMPLE_MAX_BYTES, &text, len, &err) != UNIAP_OK)
		fail_msg("%s", err.msg);
	return text;
}

static void test_every_example_decodes(void **state)
{
	DIR *d = opendir(EXAMPLES_DIR);
	struct dirent *e;
	int seen = 0;

	(void)state;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name), len = 0;
		struct uniap_err err = {0};
		enum doc_kind kind = DOC_PLAN;
		char *text;
		uniap_code rc;

		if (n < 5 || strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		if (strncmp(e->d_name, "cluster-", 8) == 0)
			kind = DOC_CLUSTER;
		else if (strncmp(e->d_name, "model-", 6) == 0)
			kind = DOC_MODEL;
		else if (strncmp(e->d_name, "plan-", 5) == 0)
			kind = DOC_PLAN;
		else if (strncmp(e->d_name, "runs-", 5) == 0)
			kind = DOC_RUNS;
		else if (strncmp(e->d_name, "jobs-", 5) == 0)
			kind = DOC_JOBS;
		else
			fail_msg("%s: example name must start with cluster-, model-, plan-, runs- or jobs-", e->d_name);
		text = read_example(e->d_name, &len);
		rc = decode_and_release(kind, text, len, &err);
		free(text);
		if (rc != UNIAP_OK)
			fail_msg("%s: %s", e->d_name, err.msg);
		seen++;
	}
	closedir(d);
	assert_true(seen >= 5);
}

static void test_bert_chain_values(void **state)
{
	struct model_profile m;
	struct uniap_err err;
	size_t len, order[10], i;
	char *text = read_example("model-bert-chain.json", &len);

	(void)state;
	assert_int_equal(jdec_model(text, len, &m, &err), UNIAP_OK);
	free(text);
	assert_int_equal(m.n_types, 3);
	assert_int_equal(m.n_layers, 10);
	assert_string_equal(m.layers[0].name, "embed");
	assert_string_equal(m.layers[1].name, "encoder.0");
	assert_string_equal(m.layers[8].name, "encoder.7");
	assert_string_equal(m.layers[9].name, "head");
	assert_int_equal(m.layers[4].type, 1);
	/* no "edges": a chain in listed order */
	assert_int_equal(m.n_edges, 9);
	for (i = 0; i < 9; i++) {
		assert_int_equal(m.edges[i].from, i);
		assert_int_equal(m.edges[i].to, i + 1);
	}
	assert_true(model_c_dtype(&m) == 4.0);
	assert_true(model_param_elem_bytes(&m) == 4.0);
	/* plain numbers become a single tp = 1 entry */
	assert_int_equal(m.types[0].n_forward_s, 1);
	assert_int_equal(m.types[0].forward_s[0].tp, 1);
	assert_int_equal(m.types[1].n_forward_s, 4);
	assert_true(model_tp_lookup(m.types[1].forward_s, m.types[1].n_forward_s, 2) == 0.00215);
	/* checkpoint defaults to the output; tp_allreduces_per_pass given */
	assert_true(m.types[2].checkpoint_bytes_per_sample == m.types[2].output_bytes_per_sample);
	assert_int_equal(m.types[1].tp_allreduces_per_pass, 2);
	assert_int_equal(model_topo_order(&m, order, &err), UNIAP_OK);
	for (i = 0; i < 10; i++)
		assert_int_equal(order[i], i);
	model_release(&m);
	assert_null(m.layers);
}

static void test_t5_dag_values(void **state)
{
	struct model_profile m;
	struct uniap_err err;
	size_t len, order[10], pos[10], i;
	char *text = read_example("model-t5-dag.json", &len);

	(void)state;
	assert_int_equal(jdec_model(text, len, &m, &err), UNIAP_OK);
	free(text);
	assert_int_equal(m.precision, MODEL_MIXED);
	assert_true(model_c_dtype(&m) == 8.0);
	assert_true(model_param_elem_bytes(&m) == 2.0);
	assert_int_equal(m.n_layers, 10);
	assert_int_equal(m.n_edges, 13);
	assert_int_equal(m.edges[12].from, 8); /* [8, 9] by index */
	assert_int_equal(m.edges[12].to, 9);
	assert_int_equal(m.types[2].tp_allreduces_per_pass, 3);
	assert_int_equal(model_topo_order(&m, order, &err), UNIAP_OK);
	for (i = 0; i < 10; i++)
		pos[order[i]] = i;
	for (i = 0; i < m.n_edges; i++)
		assert_true(pos[m.edges[i].from] < pos[m.edges[i].to]);
	model_release(&m);
}

static void test_cluster_values(void **state)
{
	struct cluster_profile c;
	struct uniap_err err;
	size_t len;
	char *text = read_example("cluster-8gpu-nvlink.json", &len);

	(void)state;
	assert_int_equal(jdec_cluster(text, len, &c, &err), UNIAP_OK);
	free(text);
	assert_int_equal(cluster_devices(&c), 8);
	assert_int_equal(c.n_levels, 1);
	assert_true(c.levels[0].bw_bytes_per_s == 120e9); /* GB/s to bytes/s */
	assert_int_equal(c.n_coll[CLUSTER_ALLREDUCE], 6);
	assert_int_equal(c.n_coll[CLUSTER_ALLGATHER], 0);
	assert_int_equal(c.coll[CLUSTER_ALLREDUCE][0].consecutive, 1);
	assert_int_equal(c.coll[CLUSTER_ALLREDUCE][1].consecutive, 0);
	assert_int_equal(c.n_p2p, 3);
	assert_true(c.overlap_coefficient == 1.12);
	assert_string_equal(c.device_name, "Tesla V100-SXM2-32GB");
	cluster_release(&c);

	text = read_example("cluster-16gpu-pcie-pairs.json", &len);
	assert_int_equal(jdec_cluster(text, len, &c, &err), UNIAP_OK);
	free(text);
	assert_int_equal(cluster_devices(&c), 16);
	assert_int_equal(c.n_levels, 3);
	assert_int_equal(c.levels[1].devices, 4);
	assert_true(c.levels[2].bw_bytes_per_s == 1.25e9);
	assert_int_equal(c.n_coll[CLUSTER_ALLREDUCE], 0);
	assert_null(c.p2p);
	cluster_release(&c);
}

static void test_plan_values(void **state)
{
	struct plan_doc p;
	struct uniap_err err;
	size_t len;
	char *text = read_example("plan-example.json", &len);

	(void)state;
	assert_int_equal(jdec_plan(text, len, &p, &err), UNIAP_OK);
	free(text);
	assert_int_equal(p.pp, 2);
	assert_int_equal(p.microbatches, 4);
	assert_int_equal(p.microbatch_size, 8);
	assert_int_equal(p.schedule, COST_1F1B);
	assert_int_equal(p.n_layers, 10);
	assert_string_equal(p.layer_names[3], "encoder.2");
	assert_int_equal(p.stage[4], 0);
	assert_int_equal(p.stage[5], 1);
	assert_string_equal(p.strategy_names[0], "dp4");
	assert_string_equal(p.strategy_names[1], "tp2.dp2");
	assert_int_equal(p.recompute[1], 0);
	assert_true(p.throughput_samples_per_s > 53.86 && p.throughput_samples_per_s < 53.87);
	plan_doc_release(&p);
}

/* ------------------------------------------------------- bad documents */

/* A minimal valid cluster: 1 node x 8 devices, one level. */
#define C_ND "\"nodes\":1,\"devices_per_node\":8"
#define C_DEV "\"device\":{\"memory_bytes\":1e9}"
#define C_H "\"hierarchy\":[{\"name\":\"n\",\"devices\":8,\"bandwidth_gb_per_s\":100}]"
#define CLUSTER(nd, dev, hier, extra) "{" nd "," dev "," hier extra "}"
#define CL(extra) CLUSTER(C_ND, C_DEV, C_H, extra)
#define LVL(d) "{\"name\":\"l\",\"devices\":" #d ",\"bandwidth_gb_per_s\":10}"
#define AR(size, placement) "{\"size\":" #size ",\"placement\":\"" placement "\",\"bandwidth_gb_per_s\":50}"

/* A minimal valid model: one type "a", four layers l0..l3. */
#define M_TYPE(fwd, act) \
	"{\"name\":\"a\",\"forward_s_per_sample\":" fwd ",\"parameters\":10,\"activation_bytes_per_sample\":" act \
	",\"output_bytes_per_sample\":10}"
#define M_TA M_TYPE("0.001", "100")
#define M_L4                                                                                      \
	"\"layers\":[{\"name\":\"l0\",\"type\":\"a\"},{\"name\":\"l1\",\"type\":\"a\"},{\"name\":\"l2\"," \
	"\"type\":\"a\"},{\"name\":\"l3\",\"type\":\"a\"}]"
#define MODEL(types, graph) "{\"precision\":\"fp32\",\"layer_types\":[" types "],\"graph\":{" graph "}}"
#define MG(edges) MODEL(M_TA, M_L4 ",\"edges\":" edges)

/* A minimal valid plan: pp 2 over 4 devices, one dp2 layer per stage. */
#define P_HEAD "\"pp\":2,\"microbatches\":2,\"microbatch_size\":4,\"schedule\":\"gpipe\",\"tpi_s\":1.0,"
#define P_ST(devs, layers) "{\"devices\":[" devs "],\"layers\":[" layers "],\"time_s\":0.5,\"memory_bytes\":100}"
#define P_DP2 "{\"name\":\"dp2\",\"dp\":2,\"tp\":1,\"fsdp\":1,\"recompute\":false,\"placement\":[\"dp\"]}"
#define P_LAYER(name, stage, strat) "{\"name\":\"" name "\",\"stage\":" #stage ",\"strategy\":" strat "}"
#define PLAN(head, stages, layers) "{" head "\"stages\":[" stages "],\"layers\":[" layers "]}"
#define P_STAGES P_ST("0,1", "0") "," P_ST("2,3", "1")
#define P_LAYERS P_LAYER("a", 0, P_DP2) "," P_LAYER("b", 1, P_DP2)
#define PL(extra) PLAN(P_HEAD extra, P_STAGES, P_LAYERS)
#define P_STRAT(fields) "{\"name\":\"s\",\"recompute\":false," fields "}"

#define NEST10 "[[[[[[[[[["
#define UNNEST10 "]]]]]]]]]]"
#define NEST100 NEST10 NEST10 NEST10 NEST10 NEST10 NEST10 NEST10 NEST10 NEST10 NEST10
#define UNNEST100 UNNEST10 UNNEST10 UNNEST10 UNNEST10 UNNEST10 UNNEST10 UNNEST10 UNNEST10 UNNEST10 UNNEST10
#define X16 "xxxxxxxxxxxxxxxx"
#define NAME129 X16 X16 X16 X16 X16 X16 X16 X16 "x"

struct bad_case {
	enum doc_kind kind;
	const char *json;
	uniap_code code;
	const char *path; /* substring the message must contain (NULL when code is UNIAP_OK) */
};

static const struct bad_case bad_cases[] = {
	/* the bases are valid, so each case below fails only for its change */
	{DOC_CLUSTER, CL(""), UNIAP_OK, NULL},
	{DOC_MODEL, MG("[[0,1],[1,2],[2,3]]"), UNIAP_OK, NULL},
	{DOC_MODEL, MODEL(M_TA, "\"layers\":[{\"name\":\"only\",\"type\":\"a\"}]"), UNIAP_OK, NULL},
	{DOC_PLAN, PL(""), UNIAP_OK, NULL},
	{DOC_PLAN, PL("\"optimal\":true,\"gap\":0.01,\"candidates\":[1,2],\"status\":\"ok\","), UNIAP_OK, NULL},

	/* ---- cluster */
	{DOC_CLUSTER, CLUSTER("\"devices_per_node\":8", C_DEV, C_H, ""), UNIAP_E_INVALID, "cluster.nodes: is required"},
	{DOC_CLUSTER, CLUSTER("\"nodes\":\"1\",\"devices_per_node\":8", C_DEV, C_H, ""), UNIAP_E_INVALID,
	 "cluster.nodes: must be an integer, got string"},
	{DOC_CLUSTER, CLUSTER("\"nodes\":true,\"devices_per_node\":8", C_DEV, C_H, ""), UNIAP_E_INVALID,
	 "cluster.nodes"},
	{DOC_CLUSTER, CLUSTER("\"nodes\":0,\"devices_per_node\":8", C_DEV, C_H, ""), UNIAP_E_INVALID,
	 "cluster.nodes: must be between 1 and 1048576, got 0"},
	{DOC_CLUSTER, CLUSTER("\"nodes\":1,\"devices_per_node\":0", C_DEV, C_H, ""), UNIAP_E_INVALID,
	 "cluster.devices_per_node"},
	{DOC_CLUSTER, CLUSTER("\"nodes\":1e400,\"devices_per_node\":8", C_DEV, C_H, ""), UNIAP_E_INVALID,
	 "cluster.nodes: must be a finite"},
	{DOC_CLUSTER, CLUSTER("\"nodes\":1.5,\"devices_per_node\":8", C_DEV, C_H, ""), UNIAP_E_INVALID,
	 "cluster.nodes: must be an integer, got 1.5"},
	{DOC_CLUSTER, CLUSTER("\"nodes\":1048576,\"devices_per_node\":2", C_DEV, C_H, ""), UNIAP_E_LIMIT,
	 "cluster.devices_per_node"},
	{DOC_CLUSTER, CLUSTER(C_ND, "\"device\":{\"memory_bytes\":-1}", C_H, ""), UNIAP_E_INVALID,
	 "cluster.device.memory_bytes"},
	{DOC_CLUSTER, CLUSTER(C_ND, "\"device\":{\"memory_bytes\":1e400}", C_H, ""), UNIAP_E_INVALID,
	 "cluster.device.memory_bytes: must be a finite"},
	{DOC_CLUSTER, CLUSTER(C_ND, "\"device\":{\"memory_bytes\":1e9,\"reserved_bytes\":1e9}", C_H, ""),
	 UNIAP_E_INVALID, "cluster.device.reserved_bytes"},
	{DOC_CLUSTER, CLUSTER(C_ND, "\"device\":{\"memory_bytes\":1e9,\"speed\":1}", C_H, ""), UNIAP_E_INVALID,
	 "cluster.device.speed: unknown key"},
	{DOC_CLUSTER, CLUSTER(C_ND, "\"device\":[]", C_H, ""), UNIAP_E_INVALID, "cluster.device: must be an object"},
	{DOC_CLUSTER, CLUSTER("\"nodes\":1,\"devices_per_node\":16", C_DEV, "\"hierarchy\":[" LVL(2) "," LVL(6) "," LVL(16) "]", ""),
	 UNIAP_E_INVALID, "cluster.hierarchy[1].devices: must divide 16, got 6"},
	{DOC_CLUSTER, CLUSTER(C_ND, C_DEV, "\"hierarchy\":[" LVL(4) "]", ""), UNIAP_E_INVALID,
	 "cluster.hierarchy[0].devices: the last level must span every device"},
	{DOC_CLUSTER, CLUSTER(C_ND, C_DEV, "\"hierarchy\":[" LVL(4) "," LVL(4) "," LVL(8) "]", ""), UNIAP_E_INVALID,
	 "cluster.hierarchy[1].devices"},
	{DOC_CLUSTER, CLUSTER(C_ND, C_DEV, "\"hierarchy\":[" LVL(0) "," LVL(8) "]", ""), UNIAP_E_INVALID,
	 "cluster.hierarchy[0].devices"},
	{DOC_CLUSTER, CLUSTER("\"nodes\":2,\"devices_per_node\":4", C_DEV, "\"hierarchy\":[" LVL(2) "," LVL(8) "]", ""),
	 UNIAP_E_INVALID, "cluster.hierarchy: with 2 nodes"},
	{DOC_CLUSTER, CLUSTER(C_ND, C_DEV, "\"hierarchy\":[]", ""), UNIAP_E_INVALID, "cluster.hierarchy"},
	{DOC_CLUSTER,
	 CLUSTER("\"nodes\":1,\"devices_per_node\":512", C_DEV,
	         "\"hierarchy\":[" LVL(2) "," LVL(4) "," LVL(8) "," LVL(16) "," LVL(32) "," LVL(64) "," LVL(128) "," LVL(256) "," LVL(512) "]",
	         ""),
	 UNIAP_E_LIMIT, "cluster.hierarchy"},
	{DOC_CLUSTER, CLUSTER(C_ND, C_DEV, "\"hierarchy\":[{\"devices\":8,\"bandwidth_gb_per_s\":1}]", ""),
	 UNIAP_E_INVALID, "cluster.hierarchy[0].name: is required"},
	{DOC_CLUSTER, CLUSTER(C_ND, C_DEV, "\"hierarchy\":[{\"name\":\"n\",\"devices\":8,\"bandwidth_gb_per_s\":0}]", ""),
	 UNIAP_E_INVALID, "cluster.hierarchy[0].bandwidth_gb_per_s"},
	{DOC_CLUSTER, CL(",\"collectives\":{\"allreduce\":[" AR(2, "consecutive") "," AR(2, "consecutive") "]}"),
	 UNIAP_E_INVALID, "cluster.collectives.allreduce[1]: duplicate"},
	{DOC_CLUSTER, CL(",\"collectives\":{\"allreduce\":[" AR(2, "diagonal") "]}"), UNIAP_E_INVALID,
	 "cluster.collectives.allreduce[0].placement"},
	{DOC_CLUSTER, CL(",\"collectives\":{\"allgather\":[" AR(1, "strided") "]}"), UNIAP_E_INVALID,
	 "cluster.collectives.allgather[0].size"},
	{DOC_CLUSTER, CL(",\"collectives\":{\"reduce_scatter\":[" AR(16, "strided") "]}"), UNIAP_E_INVALID,
	 "cluster.collectives.reduce_scatter[0].size"},
	{DOC_CLUSTER, CL(",\"collectives\":{\"broadcast\":[]}"), UNIAP_E_INVALID, "cluster.collectives.broadcast"},
	{DOC_CLUSTER, CL(",\"p2p\":[{\"pp\":2,\"bandwidth_gb_per_s\":5},{\"pp\":2,\"bandwidth_gb_per_s\":6}]"),
	 UNIAP_E_INVALID, "cluster.p2p[1]: duplicate"},
	{DOC_CLUSTER, CL(",\"p2p\":[{\"pp\":3,\"bandwidth_gb_per_s\":5}]"), UNIAP_E_INVALID, "cluster.p2p[0].pp"},
	{DOC_CLUSTER, CL(",\"overlap_coefficient\":0.5"), UNIAP_E_INVALID, "cluster.overlap_coefficient"},
	{DOC_CLUSTER, CL(",\"overlap_coefficient\":11"), UNIAP_E_INVALID, "cluster.overlap_coefficient"},
	{DOC_CLUSTER, CL(",\"foo\":1"), UNIAP_E_INVALID, "cluster.foo: unknown key"},
	{DOC_CLUSTER, CL(",\"Name\":\"x\""), UNIAP_E_INVALID, "cluster.Name: unknown key"},
	{DOC_CLUSTER, CL(",\"nodes\":1"), UNIAP_E_INVALID, "cluster.nodes: duplicate key"},
	{DOC_CLUSTER, CL(",\"name\":\"" NAME129 "\""), UNIAP_E_INVALID, "cluster.name"},
	{DOC_CLUSTER, "{\"nodes\":", UNIAP_E_MALFORMED, "cluster: malformed json at byte"},
	{DOC_CLUSTER, "", UNIAP_E_MALFORMED, "cluster: malformed json at byte 0"},
	{DOC_CLUSTER, CL("") " x", UNIAP_E_MALFORMED, "cluster: malformed json at byte"},
	{DOC_CLUSTER, CL("") "{}", UNIAP_E_MALFORMED, "cluster: malformed json at byte"},
	{DOC_CLUSTER, "{\"nodes\":NaN}", UNIAP_E_MALFORMED, "cluster: malformed json"},
	{DOC_CLUSTER, NEST100 UNNEST100, UNIAP_E_LIMIT, "cluster: nesting deeper than 64"},
	{DOC_CLUSTER, "[]", UNIAP_E_INVALID, "cluster: must be an object, got array"},

	/* ---- model */
	{DOC_MODEL, MG("[[0,1],[1,2],[2,3],[3,2]]"), UNIAP_E_INVALID, "model.graph: cycle through layer \"l2\""},
	{DOC_MODEL, MG("[[\"l3\",\"l0\"],[0,1],[1,2],[2,3]]"), UNIAP_E_INVALID, "model.graph: cycle through layer \"l0\""},
	{DOC_MODEL, MG("[[0,1],[1,1],[2,3]]"), UNIAP_E_INVALID, "model.graph.edges[1]: self-loop on layer \"l1\""},
	{DOC_MODEL, MG("[[0,1],[1,2],[2,3],[\"l0\",\"l1\"]]"), UNIAP_E_INVALID, "model.graph.edges[3]: duplicate of edges[0]"},
	{DOC_MODEL, MG("[[0,1],[1,2]]"), UNIAP_E_INVALID, "model.graph.layers[3]: layer \"l3\" has no edges"},
	{DOC_MODEL, MG("[[0,\"l9\"],[1,2],[2,3]]"), UNIAP_E_INVALID, "model.graph.edges[0][1]: no layer named \"l9\""},
	{DOC_MODEL, MG("[[4,1],[1,2],[2,3]]"), UNIAP_E_INVALID, "model.graph.edges[0][0]"},
	{DOC_MODEL, MG("[[-1,1],[1,2],[2,3]]"), UNIAP_E_INVALID, "model.graph.edges[0][0]"},
	{DOC_MODEL, MG("[[0.5,1],[1,2],[2,3]]"), UNIAP_E_INVALID, "model.graph.edges[0][0]"},
	{DOC_MODEL, MG("[[true,1],[1,2],[2,3]]"), UNIAP_E_INVALID, "model.graph.edges[0][0]"},
	{DOC_MODEL, MG("[[0,1,2],[2,3]]"), UNIAP_E_INVALID, "model.graph.edges[0]: must be a [from, to]"},
	{DOC_MODEL, MG("{}"), UNIAP_E_INVALID, "model.graph.edges: must be an array"},
	{DOC_MODEL, MODEL(M_TA, "\"layers\":[{\"name\":\"l0\",\"type\":\"a\"},{\"name\":\"l1\",\"type\":\"b\"}]"),
	 UNIAP_E_INVALID, "model.graph.layers[1].type: unknown layer type \"b\""},
	{DOC_MODEL, MODEL(M_TA, "\"layers\":[{\"name\":\"l0\",\"type\":\"a\"},{\"name\":\"l0\",\"type\":\"a\"}]"),
	 UNIAP_E_INVALID, "model.graph.layers[1].name: duplicate layer name \"l0\""},
	{DOC_MODEL,
	 MODEL(M_TA, "\"layers\":[{\"name\":\"b\",\"type\":\"a\",\"repeat\":3},{\"name\":\"b.1\",\"type\":\"a\"}]"),
	 UNIAP_E_INVALID, "model.graph.layers[1].name: duplicate layer name \"b.1\""},
	{DOC_MODEL, MODEL(M_TA, "\"layers\":[{\"name\":\"b\",\"type\":\"a\",\"repeat\":0}]"), UNIAP_E_INVALID,
	 "model.graph.layers[0].repeat"},
	{DOC_MODEL, MODEL(M_TA, "\"layers\":[{\"name\":\"b\",\"type\":\"a\",\"repeat\":2.5}]"), UNIAP_E_INVALID,
	 "model.graph.layers[0].repeat: must be an integer"},
	{DOC_MODEL,
	 MODEL(M_TA, "\"layers\":[{\"name\":\"b\",\"type\":\"a\",\"repeat\":4096},{\"name\":\"c\",\"type\":\"a\"}]"),
	 UNIAP_E_LIMIT, "model.graph.layers: more than 4096"},
	{DOC_MODEL, MODEL(M_TA, "\"layers\":[]"), UNIAP_E_INVALID, "model.graph.layers: must have at least 1"},
	{DOC_MODEL, MODEL(M_TA, "\"layers\":[{\"name\":\"l0\"}]"), UNIAP_E_INVALID, "model.graph.layers[0].type: is required"},
	{DOC_MODEL, "{\"precision\":\"fp32\",\"layer_types\":[" M_TA "]}", UNIAP_E_INVALID, "model.graph: is required"},
	{DOC_MODEL, "{\"layer_types\":[" M_TA "],\"graph\":{" M_L4 "}}", UNIAP_E_INVALID, "model.precision: is required"},
	{DOC_MODEL, "{\"precision\":\"fp16\",\"layer_types\":[" M_TA "],\"graph\":{" M_L4 "}}", UNIAP_E_INVALID,
	 "model.precision: must be one of \"fp32\", \"mixed\""},
	{DOC_MODEL, "{\"precision\":\"fp32\",\"optimizer\":\"lamb\",\"layer_types\":[" M_TA "],\"graph\":{" M_L4 "}}",
	 UNIAP_E_INVALID, "model.optimizer"},
	{DOC_MODEL, "{\"precision\":\"fp32\",\"batch\":8,\"layer_types\":[" M_TA "],\"graph\":{" M_L4 "}}",
	 UNIAP_E_INVALID, "model.batch: unknown key"},
	{DOC_MODEL, MODEL("", M_L4), UNIAP_E_INVALID, "model.layer_types: must have at least 1"},
	{DOC_MODEL, MODEL(M_TA "," M_TA, M_L4), UNIAP_E_INVALID, "model.layer_types[1].name: duplicate layer type name"},
	{DOC_MODEL, MODEL(M_TYPE("{\"0\":0.1}", "100"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].forward_s_per_sample[\"0\"]"},
	{DOC_MODEL, MODEL(M_TYPE("{\"1\":0.1,\"01\":0.1}", "100"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].forward_s_per_sample[\"01\"]"},
	{DOC_MODEL, MODEL(M_TYPE("{\"1\":0.1,\"-2\":0.1}", "100"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].forward_s_per_sample[\"-2\"]"},
	{DOC_MODEL, MODEL(M_TYPE("0.1", "{\"1\":5,\"x\":1}"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].activation_bytes_per_sample[\"x\"]"},
	{DOC_MODEL, MODEL(M_TYPE("{\"1\":0.1,\"+2\":0.1}", "100"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].forward_s_per_sample[\"+2\"]"},
	{DOC_MODEL, MODEL(M_TYPE("{\"1\":0.1,\"131072\":0.1}", "100"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].forward_s_per_sample[\"131072\"]"},
	{DOC_MODEL, MODEL(M_TYPE("{\"2\":0.1,\"4\":0.05}", "100"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].forward_s_per_sample: must have an entry for tp 1"},
	{DOC_MODEL, MODEL(M_TYPE("{\"1\":0.1,\"1\":0.2}", "100"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].forward_s_per_sample[\"1\"]: duplicate"},
	{DOC_MODEL, MODEL(M_TYPE("{\"1\":0.1,\"2\":1e400}", "100"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].forward_s_per_sample[\"2\"]: must be a finite"},
	{DOC_MODEL, MODEL(M_TYPE("-0.1", "100"), M_L4), UNIAP_E_INVALID, "model.layer_types[0].forward_s_per_sample"},
	{DOC_MODEL, MODEL(M_TYPE("0", "100"), M_L4), UNIAP_E_INVALID, "model.layer_types[0].forward_s_per_sample"},
	{DOC_MODEL, MODEL(M_TYPE("\"fast\"", "100"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].forward_s_per_sample: must be a number or an object"},
	{DOC_MODEL, MODEL(M_TYPE("0.1", "1e400"), M_L4), UNIAP_E_INVALID,
	 "model.layer_types[0].activation_bytes_per_sample: must be a finite"},
	{DOC_MODEL, MODEL(M_TYPE("0.1", "1e16"), M_L4), UNIAP_E_INVALID, "model.layer_types[0].activation_bytes_per_sample"},
	{DOC_MODEL,
	 MODEL("{\"name\":\"a\",\"forward_s_per_sample\":1,\"parameters\":1.5,\"activation_bytes_per_sample\":1,"
	       "\"output_bytes_per_sample\":1}",
	       M_L4),
	 UNIAP_E_INVALID, "model.layer_types[0].parameters"},
	{DOC_MODEL,
	 MODEL("{\"name\":\"a\",\"forward_s_per_sample\":1,\"parameters\":1,\"activation_bytes_per_sample\":1}", M_L4),
	 UNIAP_E_INVALID, "model.layer_types[0].output_bytes_per_sample: is required"},
	{DOC_MODEL,
	 MODEL("{\"name\":\"a\",\"forward_s_per_sample\":1,\"parameters\":1,\"activation_bytes_per_sample\":1,"
	       "\"output_bytes_per_sample\":1,\"tp_allreduces_per_pass\":65}",
	       M_L4),
	 UNIAP_E_INVALID, "model.layer_types[0].tp_allreduces_per_pass"},
	{DOC_MODEL, "{\"precision\":\"fp32\",\"layer_types\":" NEST100 UNNEST100 "}", UNIAP_E_LIMIT, "model: nesting"},

	/* ---- plan */
	{DOC_PLAN, PLAN(P_HEAD, P_ST("0,1", "0,1"), P_LAYER("a", 0, P_DP2) "," P_LAYER("b", 0, P_DP2)), UNIAP_E_INVALID,
	 "plan.stages: must have pp = 2 entries, got 1"},
	{DOC_PLAN, PLAN(P_HEAD, P_ST("0,1", "0") "," P_ST("2,3", "1,0"), P_LAYERS), UNIAP_E_INVALID,
	 "plan.stages[1].layers[1]: layer 0 is already listed in stage 0"},
	{DOC_PLAN, PLAN(P_HEAD, P_ST("0,1", "0") "," P_ST("2,3", "1"), P_LAYER("a", 0, P_DP2) "," P_LAYER("b", 0, P_DP2)),
	 UNIAP_E_INVALID, "plan.stages[1].layers[0]: layer 1 (\"b\") has stage 0"},
	{DOC_PLAN, PLAN(P_HEAD, P_ST("0,1", "0") "," P_ST("2,3", ""), P_LAYERS), UNIAP_E_INVALID,
	 "plan.layers[1]: layer \"b\" is in no stage"},
	{DOC_PLAN, PLAN(P_HEAD, P_STAGES, P_LAYER("a", 0, P_DP2) "," P_LAYER("b", 2, P_DP2)), UNIAP_E_INVALID,
	 "plan.layers[1].stage"},
	{DOC_PLAN, PLAN(P_HEAD, P_ST("0,1", "0") "," P_ST("2,3", "5"), P_LAYERS), UNIAP_E_INVALID,
	 "plan.stages[1].layers[0]"},
	{DOC_PLAN, PLAN(P_HEAD, P_ST("0,1", "0") "," P_ST("1,3", "1"), P_LAYERS), UNIAP_E_INVALID,
	 "plan.stages[1].devices[0]: device 1 is listed twice"},
	{DOC_PLAN, PLAN(P_HEAD, P_ST("0,1,2", "0") "," P_ST("3,4", "1"), P_LAYERS), UNIAP_E_INVALID,
	 "plan.stages[0].layers[0]: layer 0's strategy \"dp2\" spans 2 devices, the stage has 3"},
	{DOC_PLAN, PLAN(P_HEAD, P_STAGES, P_LAYER("a", 0, P_DP2) "," P_LAYER("a", 1, P_DP2)), UNIAP_E_INVALID,
	 "plan.layers[1].name: duplicate layer name \"a\""},
	{DOC_PLAN, PLAN(P_HEAD, P_STAGES, P_LAYER("a", 0, P_STRAT("\"dp\":2,\"tp\":1,\"fsdp\":1,\"placement\":[]")) "," P_LAYER("b", 1, P_DP2)),
	 UNIAP_E_INVALID, "plan.layers[0].strategy.placement: must list exactly"},
	{DOC_PLAN, PLAN(P_HEAD, P_STAGES, P_LAYER("a", 0, P_STRAT("\"dp\":2,\"tp\":1,\"fsdp\":1,\"placement\":[\"pp\"]")) "," P_LAYER("b", 1, P_DP2)),
	 UNIAP_E_INVALID, "plan.layers[0].strategy.placement[0]"},
	{DOC_PLAN, PLAN(P_HEAD, P_STAGES, P_LAYER("a", 0, P_STRAT("\"dp\":2,\"tp\":1,\"fsdp\":1,\"placement\":[\"dp\",\"dp\"]")) "," P_LAYER("b", 1, P_DP2)),
	 UNIAP_E_INVALID, "plan.layers[0].strategy.placement[1]: duplicate dimension"},
	{DOC_PLAN, PLAN(P_HEAD, P_STAGES, P_LAYER("a", 0, P_STRAT("\"dp\":0,\"tp\":1,\"fsdp\":1,\"placement\":[]")) "," P_LAYER("b", 1, P_DP2)),
	 UNIAP_E_INVALID, "plan.layers[0].strategy.dp"},
	{DOC_PLAN,
	 PLAN(P_HEAD, P_STAGES,
	      P_LAYER("a", 0, "{\"name\":\"s\",\"recompute\":1,\"dp\":2,\"tp\":1,\"fsdp\":1,\"placement\":[\"dp\"]}") "," P_LAYER("b", 1, P_DP2)),
	 UNIAP_E_INVALID, "plan.layers[0].strategy.recompute: must be a boolean"},
	{DOC_PLAN, PLAN(P_HEAD, P_STAGES, P_LAYER("a", 0, "{}") "," P_LAYER("b", 1, P_DP2)), UNIAP_E_INVALID,
	 "plan.layers[0].strategy.name: is required"},
	{DOC_PLAN, PLAN("\"pp\":0,\"microbatches\":2,\"microbatch_size\":4,\"schedule\":\"gpipe\",\"tpi_s\":1.0,", P_STAGES, P_LAYERS),
	 UNIAP_E_INVALID, "plan.pp"},
	{DOC_PLAN, PLAN("\"pp\":2,\"microbatches\":2.5,\"microbatch_size\":4,\"schedule\":\"gpipe\",\"tpi_s\":1.0,", P_STAGES, P_LAYERS),
	 UNIAP_E_INVALID, "plan.microbatches: must be an integer"},
	{DOC_PLAN, PLAN("\"pp\":2,\"microbatches\":2,\"microbatch_size\":4,\"schedule\":\"zb\",\"tpi_s\":1.0,", P_STAGES, P_LAYERS),
	 UNIAP_E_INVALID, "plan.schedule: must be one of \"gpipe\", \"1f1b\""},
	{DOC_PLAN, PLAN("\"pp\":2,\"microbatches\":2,\"microbatch_size\":4,\"schedule\":\"gpipe\",\"tpi_s\":-1,", P_STAGES, P_LAYERS),
	 UNIAP_E_INVALID, "plan.tpi_s: must be >= 0"},
	{DOC_PLAN, PLAN("\"pp\":2,\"microbatches\":2,\"microbatch_size\":4,\"schedule\":\"gpipe\",", P_STAGES, P_LAYERS),
	 UNIAP_E_INVALID, "plan.tpi_s: is required"},
	{DOC_PLAN, PL("\"foo\":1,"), UNIAP_E_INVALID, "plan.foo: unknown key"},
	{DOC_PLAN, "{" P_HEAD "\"stages\":[" P_STAGES "]}", UNIAP_E_INVALID, "plan.layers: is required"},
	{DOC_PLAN, PLAN(P_HEAD, P_ST("0,1", "0") "," "{\"devices\":[2,3],\"layers\":[1],\"time_s\":0.5}", P_LAYERS),
	 UNIAP_E_INVALID, "plan.stages[1].memory_bytes: is required"},
	{DOC_PLAN, "{\"pp\":2", UNIAP_E_MALFORMED, "plan: malformed json at byte"},
};

static void test_bad_documents(void **state)
{
	size_t i, failures = 0;

	(void)state;
	assert_true(sizeof(bad_cases) / sizeof(bad_cases[0]) >= 50);
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct uniap_err err = {0};
		uniap_code rc = decode_and_release(c->kind, c->json, strlen(c->json), &err);

		if (rc != c->code || (c->path && !strstr(err.msg, c->path))) {
			print_error("case %zu: want %s \"%s\", got %s \"%s\"\n", i, uniap_code_name(c->code),
			            c->path ? c->path : "", uniap_code_name(rc), err.msg);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

/* ------------------------------------------------------------- parsing */

static void test_nul_byte_and_depth(void **state)
{
	static const char with_nul[] = "{}\0{}";
	struct uniap_err err;
	char deep[2 * (JDEC_MAX_DEPTH + 1) + 1];
	cJSON *root = NULL;
	int d;

	(void)state;
	assert_int_equal(decode_and_release(DOC_CLUSTER, with_nul, sizeof(with_nul) - 1, &err), UNIAP_E_MALFORMED);
	assert_non_null(strstr(err.msg, "cluster: malformed json at byte 2"));

	/* exactly JDEC_MAX_DEPTH nested arrays parse; one more does not */
	for (d = 0; d < JDEC_MAX_DEPTH; d++) {
		deep[d] = '[';
		deep[JDEC_MAX_DEPTH + d] = ']';
	}
	assert_int_equal(jdec_parse(deep, 2 * JDEC_MAX_DEPTH, "doc", &root, &err), UNIAP_OK);
	cJSON_Delete(root);
	for (d = 0; d <= JDEC_MAX_DEPTH; d++) {
		deep[d] = '[';
		deep[JDEC_MAX_DEPTH + 1 + d] = ']';
	}
	assert_int_equal(jdec_parse(deep, 2 * (JDEC_MAX_DEPTH + 1), "doc", &root, &err), UNIAP_E_LIMIT);
	assert_null(root);
	assert_non_null(strstr(err.msg, "doc: nesting deeper than 64"));
}

/* Strings and keys must be UTF-8 (RFC 8259 §8.1): overlong forms, surrogates, stray
 * continuation bytes and code points past U+10FFFF are refused, naming the member. */
static void test_utf8(void **state)
{
	static const struct {
		const char *text;
		const char *want; /* NULL: accepted */
	} cases[] = {
		{"{\"name\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"}", NULL},
		{"{\"name\":\"\\u00e9\\ud83d\\ude00\"}", NULL},
		{"{\"name\":\"a\xff\"}", "doc.name: invalid UTF-8 at byte 1 of the string"},
		{"{\"name\":\"\xc0\xaf\"}", "doc.name: invalid UTF-8 at byte 0"},        /* overlong '/' */
		{"{\"name\":\"\xe0\x80\xaf\"}", "doc.name: invalid UTF-8 at byte 0"},    /* overlong */
		{"{\"name\":\"ab\xed\xa0\x80\"}", "doc.name: invalid UTF-8 at byte 2"},  /* a surrogate */
		{"{\"name\":\"\xf4\x90\x80\x80\"}", "doc.name: invalid UTF-8 at byte 0"}, /* past U+10FFFF */
		{"{\"name\":\"\x80\"}", "doc.name: invalid UTF-8 at byte 0"},              /* a lone continuation */
		{"{\"name\":\"\xe2\x82\"}", "doc.name: invalid UTF-8 at byte 0"},          /* cut short */
		{"{\"l\":[{\"n\":1},{\"n\":\"\xfe\"}]}", "doc.l[1].n: invalid UTF-8 at byte 0"},
		{"{\"k\xc3\":1}", "doc: a key has invalid UTF-8 at byte 1"},
	};
	struct uniap_err err;
	cJSON *root = NULL;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uniap_code rc = jdec_parse(cases[i].text, strlen(cases[i].text), "doc", &root, &err);

		if (!cases[i].want) {
			if (rc != UNIAP_OK)
				fail_msg("case %zu: refused: %s", i, err.msg);
			cJSON_Delete(root);
			continue;
		}
		assert_int_equal(rc, UNIAP_E_MALFORMED);
		assert_null(root);
		if (!strstr(err.msg, cases[i].want))
			fail_msg("case %zu: want '%s', got '%s'", i, cases[i].want, err.msg);
	}
}

/* Documents embedded in a request body carry the caller's path prefix, core's messages included. */
static void test_path_prefix(void **state)
{
	static const char *const bad_type = "{\"body\":{\"cluster\":" CLUSTER("\"nodes\":\"x\",\"devices_per_node\":8", C_DEV, C_H, "") "}}";
	static const char *const bad_rule =
		"{\"body\":{\"cluster\":" CLUSTER(C_ND, C_DEV, "\"hierarchy\":[" LVL(4) "]", "") ",\"model\":" MG("[[0,1],[1,2],[2,3],[3,2]]") "}}";
	struct cluster_profile c;
	struct model_profile m;
	struct plan_doc p;
	struct uniap_err err;
	cJSON *root = cJSON_Parse(bad_type);
	const cJSON *body;

	(void)state;
	assert_non_null(root);
	body = cJSON_GetObjectItemCaseSensitive(root, "body");
	assert_int_equal(jdec_cluster_json(cJSON_GetObjectItemCaseSensitive(body, "cluster"), "body.cluster", &c, &err),
	                 UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "body.cluster.nodes: must be an integer"));
	cJSON_Delete(root);

	root = cJSON_Parse(bad_rule);
	assert_non_null(root);
	body = cJSON_GetObjectItemCaseSensitive(root, "body");
	assert_int_equal(jdec_cluster_json(cJSON_GetObjectItemCaseSensitive(body, "cluster"), "body.cluster", &c, &err),
	                 UNIAP_E_INVALID);
	assert_int_equal(strncmp(err.msg, "body.cluster.hierarchy[0].devices: ", 35), 0);
	assert_int_equal(jdec_model_json(cJSON_GetObjectItemCaseSensitive(body, "model"), "body.model", &m, &err),
	                 UNIAP_E_INVALID);
	assert_string_equal(err.msg, "body.model.graph: cycle through layer \"l2\"");
	/* "cluster" and "model" are keys a plan may carry (ignored), so the first fault is pp */
	assert_int_equal(jdec_plan_json(body, "body", &p, &err), UNIAP_E_INVALID);
	assert_string_equal(err.msg, "body.pp: is required");
	cJSON_Delete(root);
}

static void test_read_file(void **state)
{
	struct uniap_err err;
	char *text = (char *)1;
	size_t len = 7;

	(void)state;
	assert_int_equal(jdec_read_file("schema/examples/no-such-file.json", 1024, &text, &len, &err), UNIAP_E_IO);
	assert_null(text);
	assert_non_null(strstr(err.msg, "schema/examples/no-such-file.json: cannot open"));
	assert_int_equal(jdec_read_file("schema/examples/plan-example.json", 16, &text, &len, &err), UNIAP_E_LIMIT);
	assert_null(text);
	assert_non_null(strstr(err.msg, "plan-example.json: larger than 16 bytes"));
	assert_int_equal(jdec_read_file("schema/examples", 1024, &text, &len, &err), UNIAP_E_IO);
	assert_int_equal(jdec_read_file("schema/examples/plan-example.json", EXAMPLE_MAX_BYTES, &text, &len, &err),
	                 UNIAP_OK);
	assert_true(len > 100);
	assert_int_equal(text[len], '\0');
	assert_int_equal(strlen(text), len);
	free(text);
}

/* -------------------------------------------- core, without any JSON */

static void test_c_dtype_and_tp_lookup(void **state)
{
	static const struct {
		enum model_precision precision;
		enum model_optimizer optimizer;
		double c_dtype;
	} cases[] = {
		{MODEL_FP32, MODEL_ADAM, 4}, {MODEL_MIXED, MODEL_ADAM, 8}, {MODEL_FP32, MODEL_SGD_MOMENTUM, 3},
		{MODEL_MIXED, MODEL_SGD_MOMENTUM, 6}, {MODEL_FP32, MODEL_SGD, 2}, {MODEL_MIXED, MODEL_SGD, 4},
	};
	static const struct model_tp_value table[] = {{1, 8.0}, {4, 3.0}};
	struct model_profile m;
	size_t i;

	(void)state;
	memset(&m, 0, sizeof(m));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		m.precision = cases[i].precision;
		m.optimizer = cases[i].optimizer;
		assert_true(model_c_dtype(&m) == cases[i].c_dtype);
	}
	assert_true(model_tp_lookup(table, 2, 1) == 8.0);
	assert_true(model_tp_lookup(table, 2, 4) == 3.0); /* exact entry */
	assert_true(model_tp_lookup(table, 2, 2) == 4.0); /* value(1) / tp */
	assert_true(model_tp_lookup(table, 2, 8) == 1.0);
}

/* A hand-built profile, as the catalog makes them: 4 layers, edges given. */
struct fixture_model {
	struct model_tp_value fwd[1], act[1];
	struct model_layer_type type;
	struct model_layer layers[4];
	struct model_edge edges[4];
	char names[4][8];
	char type_name[8];
	struct model_profile m;
};

static void fixture_model_init(struct fixture_model *f, const struct model_edge *edges, size_t n_edges)
{
	size_t i;

	memset(f, 0, sizeof(*f));
	f->fwd[0] = (struct model_tp_value){1, 0.01};
	f->act[0] = (struct model_tp_value){1, 1000.0};
	snprintf(f->type_name, sizeof(f->type_name), "t");
	f->type = (struct model_layer_type){.name = f->type_name, .forward_s = f->fwd, .n_forward_s = 1, .parameters = 100.0,
	                                   .activation_bytes = f->act, .n_activation_bytes = 1,
	                                   .output_bytes_per_sample = 10.0, .checkpoint_bytes_per_sample = 10.0,
	                                   .tp_allreduces_per_pass = 2};
	for (i = 0; i < 4; i++) {
		snprintf(f->names[i], sizeof(f->names[i]), "l%zu", i);
		f->layers[i].name = f->names[i];
	}
	memcpy(f->edges, edges, n_edges * sizeof(*edges));
	f->m.types = &f->type;
	f->m.n_types = 1;
	f->m.layers = f->layers;
	f->m.n_layers = 4;
	f->m.edges = f->edges;
	f->m.n_edges = n_edges;
}

static void test_topo_order(void **state)
{
	/* 3 -> 1, 2 -> 1, 0 -> 2: ready set starts {0, 3}; ties by smallest index */
	static const struct model_edge dag[] = {{3, 1}, {2, 1}, {0, 2}};
	static const size_t want[] = {0, 2, 3, 1};
	static const struct model_edge cyc[] = {{0, 1}, {1, 2}, {2, 3}, {3, 1}};
	struct fixture_model f;
	struct uniap_err err;
	size_t order[4], i;

	(void)state;
	fixture_model_init(&f, dag, 3);
	assert_int_equal(model_validate(&f.m, &err), UNIAP_OK);
	assert_int_equal(model_topo_order(&f.m, order, &err), UNIAP_OK);
	for (i = 0; i < 4; i++)
		assert_int_equal(order[i], want[i]);

	fixture_model_init(&f, cyc, 4);
	assert_int_equal(model_topo_order(&f.m, order, &err), UNIAP_E_INVALID);
	assert_string_equal(err.msg, "model.graph: cycle through layer \"l1\"");
	assert_int_equal(model_validate(&f.m, &err), UNIAP_E_INVALID);
	assert_string_equal(err.msg, "model.graph: cycle through layer \"l1\"");
}

static void test_core_validate_structs(void **state)
{
	static const struct model_edge chain[] = {{0, 1}, {1, 2}, {2, 3}};
	struct cluster_level levels[2] = {{.name = (char *)"pair", .devices = 2, .bw_bytes_per_s = 10e9},
	                                  {.name = (char *)"all", .devices = 8, .bw_bytes_per_s = 5e9}};
	struct cluster_profile c;
	struct fixture_model f;
	struct uniap_err err;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.nodes = 2;
	c.devices_per_node = 4;
	c.memory_bytes = 16e9;
	c.levels = levels;
	c.n_levels = 2;
	c.overlap_coefficient = 1.0;
	/* 2 nodes of 4 devices but no level of 4 */
	assert_int_equal(cluster_validate(&c, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "cluster.hierarchy: with 2 nodes"));
	levels[0].devices = 4;
	assert_int_equal(cluster_validate(&c, &err), UNIAP_OK);
	levels[1].bw_bytes_per_s = -1.0;
	assert_int_equal(cluster_validate(&c, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "cluster.hierarchy[1].bandwidth_gb_per_s"));
	levels[1].bw_bytes_per_s = 5e9;
	c.overlap_coefficient = 0.0; /* a producer that forgot the default */
	assert_int_equal(cluster_validate(&c, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "cluster.overlap_coefficient"));

	fixture_model_init(&f, chain, 3);
	assert_int_equal(model_validate(&f.m, &err), UNIAP_OK);
	f.layers[2].type = 1; /* only one type */
	assert_int_equal(model_validate(&f.m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "model.graph.layers[2].type"));
	f.layers[2].type = 0;
	f.edges[1] = (struct model_edge){1, 7};
	assert_int_equal(model_validate(&f.m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "model.graph.edges[1]: endpoint out of range"));
	f.edges[1] = (struct model_edge){1, 2};
	f.type.checkpoint_bytes_per_sample = NAN; /* NaN from a broken producer */
	assert_int_equal(model_validate(&f.m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "model.layer_types[0].checkpoint_bytes_per_sample"));
	f.type.checkpoint_bytes_per_sample = 10.0;
	f.m.precision = (enum model_precision)5;
	assert_int_equal(model_validate(&f.m, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "model.precision"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_example_decodes),
		cmocka_unit_test(test_bert_chain_values),
		cmocka_unit_test(test_t5_dag_values),
		cmocka_unit_test(test_cluster_values),
		cmocka_unit_test(test_plan_values),
		cmocka_unit_test(test_bad_documents),
		cmocka_unit_test(test_nul_byte_and_depth),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_path_prefix),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_c_dtype_and_tp_lookup),
		cmocka_unit_test(test_topo_order),
		cmocka_unit_test(test_core_validate_structs),
	};

	return cmocka_run_group_tests_name("decode", tests, NULL, NULL);
}
