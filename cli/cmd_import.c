/*
 * cmd_import.c - `uniap import galvatron`: Galvatron's measured profiles as a
 * cluster document and/or a model document (json/galvatron.h does the work;
 * docs/galvatron.md states the mapping); `uniap import nccl-tests`: the
 * bandwidths of nccl-tests runs overlaid on a base cluster (json/nccl.h,
 * docs/nccl.md).
 *
 * Documents go to --out-cluster/--out-model, or to stdout when only one is
 * asked for without a file; a summary of what was chosen goes to stderr
 * (unless --quiet).  Both documents are built and validated before either
 * file is opened, so a bad input leaves no file behind.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "galvatron.h"
#include "jdecode.h"
#include "jencode.h"
#include "nccl.h"

static const char import_usage[] =
	"usage: uniap import galvatron [hardware options] [model options] [--pretty] [--quiet]\n"
	"\n"
	"Turns the profiles measured by Galvatron (PKU-DAIR/Hetu-Galvatron v2.4.0) into a\n"
	"cluster profile (schema/cluster.schema.json) and/or a model profile\n"
	"(schema/model.schema.json).  See docs/galvatron.md for what maps to what.\n"
	"\n"
	"hardware:\n"
	"  --hardware DIR       Galvatron's hardware_configs folder: allreduce_bandwidth_,\n"
	"                       p2p_bandwidth_, sp_time_<N>nodes_<G>gpus_per_node.json and\n"
	"                       overlap_coefficient.json\n"
	"  --allreduce FILE     explicit files (each overrides the one found in DIR)\n"
	"  --p2p FILE, --overlap FILE, --sp-time FILE\n"
	"  --nodes N            pick the file set for N nodes ...\n"
	"  --gpus-per-node G    ... of G GPUs (needed when DIR holds several sets)\n"
	"  --memory-gb X        memory of one device in GiB (default 80: A100-80GB)\n"
	"  --reserved-gb Y      memory unavailable to the model in GiB (default 2)\n"
	"  --out-cluster FILE   write the cluster profile to FILE\n"
	"\n"
	"model:\n"
	"  --model-dir DIR      folder with computation_profiling_<prec>_*.json and\n"
	"                       memory_profiling_<prec>_*.json (the pair fitting --config)\n"
	"  --config FILE        the model's hyper-parameter file (layers, hidden size, heads)\n"
	"  --computation FILE   explicit profile pair instead of --model-dir ...\n"
	"  --memory FILE        ... (both or neither)\n"
	"  --seq S              sequence length (default: the config's; not for Swin)\n"
	"  --profile-bsz B      use the per-sample times profiled at batch size B, no fixed\n"
	"                       time (default: fit alpha + beta x batch over every size\n"
	"                       profiled; with one size, its per-sample time)\n"
	"  --sequence-parallel  use the \"_sp\" memory entries (default: the plain ones\n"
	"                       when the file has them)\n"
	"  --out-model FILE     write the model profile to FILE\n"
	"\n"
	"  --pretty             indent the JSON\n"
	"  --quiet              no summary on stderr\n"
	"\n"
	"Without --out-cluster/--out-model the one document asked for goes to stdout.\n"
	"Exit status: 0 ok, 1 invalid or missing input, 2 bad command line.\n"
	"\n"
	"Also: uniap import nccl-tests --cluster BASE FILE... (see uniap import nccl-tests --help).\n";

static const char nccl_usage[] =
	"usage: uniap import nccl-tests --cluster BASE FILE... [--ranks N] [--kind K] [--pretty] [--quiet]\n"
	"\n"
	"Overlays the bus bandwidths measured by nccl-tests runs (the text output of\n"
	"all_reduce_perf, all_gather_perf, reduce_scatter_perf, sendrecv_perf) on the\n"
	"cluster BASE and prints the cluster document.  Each FILE holds one run; its\n"
	"bandwidth at the largest message becomes the measured entry of its kind for\n"
	"its group size and placement.  See docs/nccl.md for what maps to what.\n"
	"\n"
	"  --cluster BASE  a cluster document file or a catalog cluster name\n"
	"  --ranks N       ranks of every run (default: the \"# Rank\" lines)\n"
	"  --kind K        all_reduce, all_gather, reduce_scatter, alltoall or sendrecv\n"
	"                  (default: the program named in the file name or a header\n"
	"                  line, else inferred from the rows)\n"
	"  --pretty        indent the JSON\n"
	"  --quiet         no summary on stderr\n"
	"\n"
	"Exit status: 0 ok, 1 invalid or missing input, 2 bad command line.\n";

enum {
	IMP_HARDWARE = 2000,
	IMP_ALLREDUCE,
	IMP_P2P,
	IMP_OVERLAP,
	IMP_SP_TIME,
	IMP_NODES,
	IMP_GPUS,
	IMP_MEMORY_GB,
	IMP_RESERVED_GB,
	IMP_OUT_CLUSTER,
	IMP_MODEL_DIR,
	IMP_CONFIG,
	IMP_COMPUTATION,
	IMP_MEMORY,
	IMP_SEQ,
	IMP_BSZ,
	IMP_SP,
	IMP_OUT_MODEL,
	IMP_PRETTY,
	IMP_QUIET,
	IMP_HELP,
};

struct import_args {
	struct galv_hw_opts hw;
	struct galv_model_opts model;
	const char *out_cluster;
	const char *out_model;
	double memory_gib;
	double reserved_gib;
	int want_hw;
	int want_model;
	int pretty;
	int quiet;
	int help;
};

/* Strict number in [min, max] for a GiB option. */
static uniap_code import_parse_gib(const char *opt, const char *text, double min, double max, double *out,
                                   struct uniap_err *err)
{
	char *end = NULL;
	double v;

	errno = 0;
	v = text ? strtod(text, &end) : NAN;
	if (!text || !*text || errno || !end || *end || !isfinite(v))
		return err_set(err, UNIAP_E_ARG, "%s: must be a number, got \"%.64s\"", opt, text ? text : "");
	if (v < min || v > max)
		return err_set(err, UNIAP_E_ARG, "%s: must be in [%g, %g], got %g", opt, min, max, v);
	*out = v;
	return UNIAP_OK;
}

/* Handles one getopt_long result; err set on a bad value. */
static void import_option(struct import_args *a, int opt, const char *arg, struct uniap_err *err)
{
	long v = 0;

	switch (opt) {
	case IMP_HARDWARE: a->hw.dir = arg, a->want_hw = 1; break;
	case IMP_ALLREDUCE: a->hw.allreduce_path = arg, a->want_hw = 1; break;
	case IMP_P2P: a->hw.p2p_path = arg, a->want_hw = 1; break;
	case IMP_OVERLAP: a->hw.overlap_path = arg, a->want_hw = 1; break;
	case IMP_SP_TIME: a->hw.sp_time_path = arg, a->want_hw = 1; break;
	case IMP_NODES:
		if (cli_parse_long("--nodes", arg, 1, MODEL_MAX_DEVICES, &v, err) == UNIAP_OK)
			a->hw.nodes = (int)v;
		break;
	case IMP_GPUS:
		if (cli_parse_long("--gpus-per-node", arg, 1, 65536, &v, err) == UNIAP_OK)
			a->hw.gpus_per_node = (int)v;
		break;
	case IMP_MEMORY_GB: import_parse_gib("--memory-gb", arg, 1.0 / 1024, 1048576, &a->memory_gib, err); break;
	case IMP_RESERVED_GB: import_parse_gib("--reserved-gb", arg, 0, 1048576, &a->reserved_gib, err); break;
	case IMP_OUT_CLUSTER: a->out_cluster = arg, a->want_hw = 1; break;
	case IMP_MODEL_DIR: a->model.dir = arg, a->want_model = 1; break;
	case IMP_CONFIG: a->model.config_path = arg, a->want_model = 1; break;
	case IMP_COMPUTATION: a->model.computation_path = arg, a->want_model = 1; break;
	case IMP_MEMORY: a->model.memory_path = arg, a->want_model = 1; break;
	case IMP_SEQ: cli_parse_long("--seq", arg, 1, 999999999, &a->model.seq, err); break;
	case IMP_BSZ: cli_parse_long("--profile-bsz", arg, 1, 999999999, &a->model.bsz, err); break;
	case IMP_SP: a->model.sequence_parallel = 1; break;
	case IMP_OUT_MODEL: a->out_model = arg, a->want_model = 1; break;
	case IMP_PRETTY: a->pretty = 1; break;
	case IMP_QUIET: a->quiet = 1; break;
	case IMP_HELP:
	default: a->help = 1; break;
	}
}

/* Checks what was asked for; UNIAP_E_ARG with the reason. */
static uniap_code import_check(struct import_args *a, struct uniap_err *err)
{
	if (!a->want_hw && !a->want_model)
		return err_set(err, UNIAP_E_ARG, "nothing to import: give --hardware DIR and/or --model-dir DIR --config FILE");
	if (a->want_hw && a->want_model && (!a->out_cluster || !a->out_model))
		return err_set(err, UNIAP_E_ARG,
		               "importing both documents needs --out-cluster and --out-model (stdout holds one)");
	if (!a->want_hw && (a->hw.nodes || a->hw.gpus_per_node || a->memory_gib || a->reserved_gib >= 0))
		return err_set(err, UNIAP_E_ARG, "--nodes, --gpus-per-node, --memory-gb, --reserved-gb: need --hardware");
	if (!a->want_model && (a->model.seq || a->model.bsz || a->model.sequence_parallel))
		return err_set(err, UNIAP_E_ARG, "--seq, --profile-bsz, --sequence-parallel: need --model-dir");
	if (a->memory_gib == 0)
		a->memory_gib = GALV_DEFAULT_MEMORY_GIB;
	if (a->reserved_gib < 0)
		a->reserved_gib = GALV_DEFAULT_RESERVED_GIB;
	if (a->want_hw && a->reserved_gib >= a->memory_gib)
		return err_set(err, UNIAP_E_ARG, "--reserved-gb: must be less than --memory-gb (%g), got %g",
		               a->memory_gib, a->reserved_gib);
	a->hw.memory_bytes = a->memory_gib * 1073741824.0;
	a->hw.reserved_bytes = a->reserved_gib * 1073741824.0;
	return UNIAP_OK;
}

/* The kind a file's name tells; NCCL_KIND_NONE when it tells none. */
static enum nccl_kind import_kind_of_path(const char *path)
{
	const char *base = strrchr(path, '/');

	return nccl_kind_in(base ? base + 1 : path);
}

/* `uniap import nccl-tests ...` (argv[0] is "nccl-tests"). */
static int import_nccl(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "ranks", required_argument, NULL, 'r' },
		{ "kind", required_argument, NULL, 'k' },    { "pretty", no_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },         { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cluster_profile c = { 0 };
	struct nccl_input in[NCCL_MAX_INPUTS];
	struct nccl_report rep = { "" };
	struct uniap_err err = { 0 };
	enum nccl_kind kind = NCCL_KIND_NONE;
	const char *base = NULL;
	cJSON *base_doc = NULL, *doc = NULL;
	size_t n = 0, i;
	long ranks = 0;
	int opt, pretty = 0, quiet = 0, status = CLI_EXIT_ERROR;

	memset(in, 0, sizeof(in));
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char msg[128];

		switch (opt) {
		case 'c': base = optarg; break;
		case 'r':
			if (cli_parse_long("--ranks", optarg, 2, NCCL_MAX_RANKS, &ranks, &err) != UNIAP_OK)
				return cli_fail("import", &err);
			break;
		case 'k':
			kind = nccl_kind_parse(optarg);
			if (kind == NCCL_KIND_NONE) {
				snprintf(msg, sizeof(msg), "--kind: unknown kind '%.64s'", optarg);
				return cli_usage_error("import", msg);
			}
			break;
		case 'p': pretty = 1; break;
		case 'q': quiet = 1; break;
		case 'h': fputs(nccl_usage, stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("import", argv[optind - 1]);
		}
	}
	if (!base)
		return cli_usage_error("import", "nccl-tests: --cluster BASE is required");
	if (optind >= argc)
		return cli_usage_error("import", "nccl-tests: no FILE given");
	if (argc - optind > NCCL_MAX_INPUTS)
		return cli_usage_error("import", "nccl-tests: too many files");
	if (cli_load_cluster(base, &c, &err) != UNIAP_OK)
		goto fail;
	{
		/* jenc_cluster writes raw numbers: print and parse again for a plain tree */
		cJSON *raw = jenc_cluster(&c);
		char *text = raw ? jenc_print(raw, 0) : NULL;
		uniap_code rc = text ? jdec_parse(text, strlen(text), base, &base_doc, &err)
		                     : err_set(&err, UNIAP_E_NOMEM, "out of memory");

		cJSON_free(text);
		cJSON_Delete(raw);
		if (rc != UNIAP_OK)
			goto fail;
	}
	for (; optind < argc; optind++, n++) {
		char *text = NULL;

		if (jdec_read_file(argv[optind], NCCL_MAX_TEXT_BYTES, &text, &in[n].len, &err) != UNIAP_OK)
			goto fail;
		in[n].text = text;
		in[n].name = argv[optind];
		in[n].kind = kind != NCCL_KIND_NONE ? kind : import_kind_of_path(argv[optind]);
	}
	if (nccl_cluster_json(base_doc, "cluster", in, n, (int)ranks, &doc, &rep, &err) != UNIAP_OK ||
	    cli_write_doc(doc, NULL, pretty, &err) != UNIAP_OK)
		goto fail;
	if (!quiet)
		fputs(rep.text, stderr);
	status = CLI_EXIT_OK;
	goto out;
fail:
	status = cli_fail("import", &err);
out:
	for (i = 0; i < n; i++)
		free((char *)in[i].text);
	cJSON_Delete(base_doc);
	cJSON_Delete(doc);
	cluster_release(&c);
	return status;
}

int cli_cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "hardware", required_argument, NULL, IMP_HARDWARE },
		{ "allreduce", required_argument, NULL, IMP_ALLREDUCE },
		{ "p2p", required_argument, NULL, IMP_P2P },
		{ "overlap", required_argument, NULL, IMP_OVERLAP },
		{ "sp-time", required_argument, NULL, IMP_SP_TIME },
		{ "nodes", required_argument, NULL, IMP_NODES },
		{ "gpus-per-node", required_argument, NULL, IMP_GPUS },
		{ "memory-gb", required_argument, NULL, IMP_MEMORY_GB },
		{ "reserved-gb", required_argument, NULL, IMP_RESERVED_GB },
		{ "out-cluster", required_argument, NULL, IMP_OUT_CLUSTER },
		{ "model-dir", required_argument, NULL, IMP_MODEL_DIR },
		{ "config", required_argument, NULL, IMP_CONFIG },
		{ "computation", required_argument, NULL, IMP_COMPUTATION },
		{ "memory", required_argument, NULL, IMP_MEMORY },
		{ "seq", required_argument, NULL, IMP_SEQ },
		{ "profile-bsz", required_argument, NULL, IMP_BSZ },
		{ "sequence-parallel", no_argument, NULL, IMP_SP },
		{ "out-model", required_argument, NULL, IMP_OUT_MODEL },
		{ "pretty", no_argument, NULL, IMP_PRETTY },
		{ "quiet", no_argument, NULL, IMP_QUIET },
		{ "help", no_argument, NULL, IMP_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct import_args a = { .reserved_gib = -1 };
	struct galv_report rep = { "" };
	struct uniap_err err = { 0 };
	cJSON *cluster = NULL, *model = NULL;
	int opt, status = CLI_EXIT_ERROR;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(import_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (argc < 2)
		return cli_usage_error("import", "missing format: uniap import galvatron|nccl-tests ...");
	if (strcmp(argv[1], "nccl-tests") == 0)
		return import_nccl(argc - 1, argv + 1);
	if (strcmp(argv[1], "galvatron") != 0) {
		char msg[128];

		snprintf(msg, sizeof(msg), "unknown format '%.64s' (known: galvatron, nccl-tests)", argv[1]);
		return cli_usage_error("import", msg);
	}
	argc--;
	argv++;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == '?' || opt == ':') {
			return cli_bad_option("import", argv[optind - 1]);
		}
		import_option(&a, opt, optarg, &err);
		if (err.code != UNIAP_OK)
			return cli_fail("import", &err);
	}
	if (a.help) {
		fputs(import_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (optind < argc)
		return cli_usage_error("import", "unexpected argument");
	if (import_check(&a, &err) != UNIAP_OK)
		return cli_fail("import", &err);
	if (a.want_hw && galv_import_cluster(&a.hw, &cluster, &rep, &err) != UNIAP_OK)
		goto fail;
	if (a.want_model && galv_import_model(&a.model, &model, &rep, &err) != UNIAP_OK)
		goto fail;
	if (cluster && cli_write_doc(cluster, a.out_cluster, a.pretty, &err) != UNIAP_OK)
		goto fail;
	if (model && cli_write_doc(model, a.out_model, a.pretty, &err) != UNIAP_OK)
		goto fail;
	if (!a.quiet)
		fputs(rep.text, stderr);
	status = CLI_EXIT_OK;
	goto out;
fail:
	status = cli_fail("import", &err);
out:
	cJSON_Delete(cluster);
	cJSON_Delete(model);
	return status;
}
