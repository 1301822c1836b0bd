/*
 * cmd_allocate.c - `uniap allocate`: share one cluster, or several pools of
 * one device type each, among many training jobs (docs/allocation.md).  Each
 * job's throughput curve comes from the planner, one run per allowed size of
 * each pool on its cluster cut to that size (cluster_slice); core/alloc.c
 * then picks every job's pool and size exactly for the objective and places
 * it on that pool's nodes and GPUs.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "alloc.h"
#include "allocate.h"
#include "cli.h"
#include "jdecode.h"
#include "jencode.h"
#include "jobs.h"
#include "uop.h"

static const char allocate_usage[] =
	"usage: uniap allocate --cluster FILE [--cluster FILE ...] --jobs FILE [--objective O]\n"
	"                      [--current FILE [--restart-cost F]] [--drain NODES]\n"
	"                      [--curves FILE] [--no-plans]\n"
	"                      [--threads N] [--time-limit S] [--quiet] [--pretty]\n"
	"\n"
	"Shares the cluster among the jobs of the jobs document (schema/jobs.schema.json:\n"
	"{\"jobs\": [{name, model, batch, weight, min_devices, max_devices, samples,\n"
	"deadline_s, schedule, recompute, zero, sequence_parallel, selective_recompute,\n"
	"fp8}]}).  Each job may get a power-of-two share of one node or whole nodes; its\n"
	"throughput at every such size is the planner's optimum on the cluster cut to\n"
	"that size (sizes without a plan that fits are marked null, never guessed).\n"
	"Several --cluster options make pools (one device type each, up to 8): each job\n"
	"runs inside one pool, on its curve there.\n"
	"The allocation is exact for the objective (docs/allocation.md):\n"
	"  throughput  the largest sum of weight x throughput / the job's best (default)\n"
	"  fair        the largest least throughput relative to an equal share, then\n"
	"              the throughput objective; reports the price of fairness\n"
	"  deadline    the earliest latest finish (samples / throughput; every job needs\n"
	"              \"samples\"), then the throughput objective\n"
	"  missed      the fewest jobs past their \"deadline_s\" (jobs without one never\n"
	"              miss), then the throughput objective\n"
	"Prints {objective, value, throughput_value, [price_of_fairness,] devices,\n"
	"devices_used, planner_runs, sizes, drained_nodes, jobs:[{name, devices,\n"
	"first_device, nodes, throughput_samples_per_s, normalized_throughput,\n"
	"[finish_s,] [meets_deadline,] [previous_devices, moved,] curve, plan, spec}],\n"
	"[moves, ended,] cluster}; with pools, \"pools\" [{name, devices, devices_used,\n"
	"first_size, sizes_count, drained_nodes, cluster}] instead of drained_nodes and\n"
	"cluster, and each job's \"pool\" (its devices and nodes are the pool's).\n"
	"Re-planning after a change: give the allocation in force with --current\n"
	"(this command's output) and the jobs and cluster as they are now; jobs whose\n"
	"spec and cluster slice are unchanged reuse their curves and plans (no planner\n"
	"run), and a job given another size than it runs on costs its weight x the\n"
	"restart cost, so jobs move only for a gain larger than that.  --drain takes\n"
	"nodes (0-based, comma-separated) out of service: their jobs move.\n"
	"\n"
	"  --cluster FILE     cluster profile or catalog name; again for another pool\n"
	"  --jobs FILE        jobs document\n"
	"  --objective O      throughput (default), fair, deadline or missed\n"
	"  --current FILE     the allocation in force (a report of this command)\n"
	"  --restart-cost F   with --current: the normalised throughput a move costs,\n"
	"                     a restart's minutes over the allocation's (default 0.05)\n"
	"  --drain NODES      nodes out of service, e.g. 3,17; with pools POOL:NODE,\n"
	"                     POOL a cluster's name or its 0-based index, e.g. 1:3\n"
	"  --curves FILE      a report of this command whose curves are reused for every\n"
	"                     job that plans alike (same model, batch and options; any\n"
	"                     name), where the cluster slice is the same: a curve cache\n"
	"  --no-plans         leave out the plans of sizes whose curve point was reused\n"
	"                     (plan null there): the sizes alone, no planner run\n"
	"  --threads N        candidates solved at once per planner run (default: cores)\n"
	"  --time-limit S     per candidate of each planner run (default 10)\n"
	"  --quiet            no progress lines on stderr\n"
	"  --pretty           indent the JSON\n"
	"\n"
	"Exit status: 0 allocated, 1 bad input, 2 bad command line, 3 the jobs cannot\n"
	"all run (their minimums, or a job with no size that fits; stderr names them).\n";

/* The CLI's planner (allocate_plan_fn): uop_run with a private pool of --threads workers. */
struct allocate_cli {
	int threads;
	double limit;
	int quiet;
};

static uniap_code allocate_cli_plan(void *ctx, const struct cluster_profile *slice, const struct model_profile *model,
                                    struct uop_options *opts, struct uop_result *out, struct uniap_err *err)
{
	const struct allocate_cli *c = ctx;

	opts->threads = c->threads;
	opts->time_limit_s = c->limit;
	return uop_run(slice, model, opts, NULL, out, err);
}

static void allocate_cli_progress(void *ctx, size_t done, size_t total, const char *job, const char *pool,
                                  int devices, int planned, double thr)
{
	const struct allocate_cli *c = ctx;

	(void)done;
	(void)total;
	if (!c->quiet && planned)
		fprintf(stderr, "uniap allocate: %s on %d devices of %s: %s\n", job, devices, pool,
		        thr > 0 ? "planned" : "nothing fits");
}

/* Reads a report given as --current or --curves (owned into *out). */
static uniap_code allocate_read_report(const char *path, cJSON **out, struct uniap_err *err)
{
	char *text = NULL;
	size_t len = 0;
	uniap_code rc = jdec_read_file(path, CLI_MAX_DOC_BYTES, &text, &len, err);

	if (rc == UNIAP_OK)
		rc = jdec_parse(text, len, "report", out, err);
	free(text);
	if (rc != UNIAP_OK)
		err_prefix(err, "%s", path);
	return rc;
}

/* Fails the command with err: exit 3 for an allocation that cannot run, else as cli_fail. */
static int allocate_fail(struct uniap_err *err)
{
	if (err->code == UNIAP_E_INFEASIBLE) {
		fprintf(stderr, "uniap allocate: %s\n", err->msg);
		return CLI_EXIT_INFEASIBLE;
	}
	return cli_fail("allocate", err);
}

int cli_cmd_allocate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cluster", required_argument, NULL, 'c' },   { "jobs", required_argument, NULL, 'j' },
		{ "objective", required_argument, NULL, 'o' }, { "threads", required_argument, NULL, 't' },
		{ "time-limit", required_argument, NULL, 'l' }, { "quiet", no_argument, NULL, 'q' },
		{ "pretty", no_argument, NULL, 'p' },           { "help", no_argument, NULL, 'h' },
		{ "current", required_argument, NULL, 'C' },   { "restart-cost", required_argument, NULL, 'r' },
		{ "drain", required_argument, NULL, 'd' },     { "curves", required_argument, NULL, 'u' },
		{ "no-plans", no_argument, NULL, 'n' },        { NULL, 0, NULL, 0 }
	};
	const char *cluster_paths[ALLOC_MAX_POOLS], *jobs_path = NULL, *current_path = NULL, *curves_path = NULL;
	struct cluster_profile clusters[ALLOC_MAX_POOLS];
	struct allocate_cli cli = { 0, 10, 0 };
	struct allocate_request rq;
	struct jobs_doc doc;
	struct uniap_err err;
	cJSON *current = NULL, *curves = NULL, *report = NULL;
	int objective = ALLOC_THROUGHPUT, pretty = 0, opt;
	long threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1, v;
	size_t n_pools = 0, n_loaded = 0, p;
	char *text = NULL, *out = NULL;
	size_t len = 0;
	int status = CLI_EXIT_ERROR;

	memset(&doc, 0, sizeof(doc));
	memset(&rq, 0, sizeof(rq));
	rq.restart_cost = 0.05;
	err_clear(&err);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'c') {
			if (n_pools >= ALLOC_MAX_POOLS)
				err_set(&err, UNIAP_E_ARG, "--cluster: at most %d clusters (pools)", ALLOC_MAX_POOLS);
			else
				cluster_paths[n_pools++] = optarg;
		} else if (opt == 'j') {
			jobs_path = optarg;
		} else if (opt == 'C') {
			current_path = optarg;
		} else if (opt == 'd') {
			rq.drain = optarg;
		} else if (opt == 'u') {
			curves_path = optarg;
		} else if (opt == 'n') {
			rq.no_plans = 1;
		} else if (opt == 'r') {
			cli_parse_double("--restart-cost", optarg, 0, 1e6, &rq.restart_cost, &err);
		} else if (opt == 'o') {
			objective = alloc_objective_parse(optarg);
			if (objective < 0)
				err_set(&err, UNIAP_E_ARG, "--objective: must be throughput, fair, deadline or missed, got "
				        "\"%.64s\"", optarg);
		} else if (opt == 't') {
			if (cli_parse_long("--threads", optarg, 1, 256, &v, &err) == UNIAP_OK)
				threads = v;
		} else if (opt == 'l') {
			cli_parse_double("--time-limit", optarg, 0.001, 86400, &cli.limit, &err);
		} else if (opt == 'q') {
			cli.quiet = 1;
		} else if (opt == 'p') {
			pretty = 1;
		} else if (opt == 'h') {
			fputs(allocate_usage, stdout);
			return CLI_EXIT_OK;
		} else {
			return cli_bad_option("allocate", argv[optind - 1]);
		}
		if (err.code != UNIAP_OK)
			return cli_usage_error("allocate", err.msg);
	}
	if (optind < argc)
		return cli_usage_error("allocate", "unexpected argument");
	if (n_pools == 0 || !jobs_path)
		return cli_usage_error("allocate", "--cluster and --jobs are required");
	cli.threads = (int)threads;
	for (p = 0; p < n_pools; p++) {
		if (cli_load_cluster(cluster_paths[p], &clusters[p], &err) != UNIAP_OK) {
			status = cli_fail("allocate", &err);
			goto out;
		}
		n_loaded++;
	}
	if (jdec_read_file(jobs_path, CLI_MAX_DOC_BYTES, &text, &len, &err) != UNIAP_OK ||
	    jobs_decode(text, len, &doc, &err) != UNIAP_OK) {
		err_prefix(&err, "%s", jobs_path);
		status = cli_fail("allocate", &err);
		goto out;
	}
	if ((current_path && allocate_read_report(current_path, &current, &err) != UNIAP_OK) ||
	    (curves_path && allocate_read_report(curves_path, &curves, &err) != UNIAP_OK)) {
		status = cli_fail("allocate", &err);
		goto out;
	}
	rq.clusters = clusters;
	rq.n_pools = n_pools;
	rq.doc = &doc;
	rq.current = current;
	rq.curves = curves;
	rq.objective = (enum alloc_objective)objective;
	rq.plan = allocate_cli_plan;
	rq.plan_ctx = &cli;
	rq.progress = allocate_cli_progress;
	rq.progress_ctx = &cli;
	if (allocate_run(&rq, &report, &err) != UNIAP_OK) {
		if (err.code == UNIAP_E_ARG) {
			char msg[UNIAP_ERR_MSG_MAX + 2];

			/* the engine names its field; here it is an option */
			snprintf(msg, sizeof(msg), "%s%s", strncmp(err.msg, "drain:", 6) == 0 ? "--" : "", err.msg);
			status = cli_usage_error("allocate", msg);
		}
		else if (err.code == UNIAP_E_INVALID && (current_path || curves_path) &&
		         (strncmp(err.msg, "current", 7) == 0 || strncmp(err.msg, "curves", 6) == 0)) {
			err_prefix(&err, "%s", strncmp(err.msg, "current", 7) == 0 ? current_path : curves_path);
			status = cli_fail("allocate", &err);
		} else
			status = allocate_fail(&err);
		goto out;
	}
	out = jenc_print(report, pretty);
	if (!out || cli_write(out) != 0) {
		err_set(&err, out ? UNIAP_E_IO : UNIAP_E_NOMEM, "stdout: write failed");
		status = cli_fail("allocate", &err);
		goto out;
	}
	status = CLI_EXIT_OK;
out:
	free(text);
	cJSON_free(out);
	cJSON_Delete(report);
	cJSON_Delete(current);
	cJSON_Delete(curves);
	jobs_doc_release(&doc);
	for (p = 0; p < n_loaded; p++)
		cluster_release(&clusters[p]);
	return status;
}
