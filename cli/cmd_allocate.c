/*
 * cmd_allocate.c - `uniap allocate`: share one cluster among many training
 * jobs (docs/allocation.md).  Each job's throughput curve comes from the
 * planner, one run per allowed size on the cluster cut to that size
 * (cluster_slice); core/alloc.c then picks every job's size exactly for the
 * objective and places it on nodes and GPUs.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "alloc.h"
#include "cli.h"
#include "jdecode.h"
#include "jencode.h"
#include "jobs.h"
#include "uop.h"

static const char allocate_usage[] =
	"usage: uniap allocate --cluster FILE --jobs FILE [--objective O]\n"
	"                      [--threads N] [--time-limit S] [--quiet] [--pretty]\n"
	"\n"
	"Shares the cluster among the jobs of the jobs document (schema/jobs.schema.json:\n"
	"{\"jobs\": [{name, model, batch, weight, min_devices, max_devices, samples,\n"
	"schedule, recompute, zero, sequence_parallel, selective_recompute, fp8}]}).\n"
	"Each job may get a power-of-two share of one node or whole nodes; its\n"
	"throughput at every such size is the planner's optimum on the cluster cut to\n"
	"that size (sizes without a plan that fits are marked null, never guessed).\n"
	"The allocation is exact for the objective (docs/allocation.md):\n"
	"  throughput  the largest sum of weight x throughput / the job's best (default)\n"
	"  fair        the largest least throughput relative to an equal share, then\n"
	"              the throughput objective; reports the price of fairness\n"
	"  deadline    the earliest latest finish (samples / throughput; every job needs\n"
	"              \"samples\"), then the throughput objective\n"
	"Prints {objective, value, throughput_value, [price_of_fairness,] devices,\n"
	"devices_used, sizes, jobs:[{name, devices, first_device, nodes,\n"
	"throughput_samples_per_s, normalized_throughput, [finish_s,] curve, plan}]}.\n"
	"\n"
	"  --cluster FILE     cluster profile or catalog name\n"
	"  --jobs FILE        jobs document\n"
	"  --objective O      throughput (default), fair or deadline\n"
	"  --threads N        candidates solved at once per planner run (default: cores)\n"
	"  --time-limit S     per candidate of each planner run (default 10)\n"
	"  --quiet            no progress lines on stderr\n"
	"  --pretty           indent the JSON\n"
	"\n"
	"Exit status: 0 allocated, 1 bad input, 2 bad command line, 3 the jobs cannot\n"
	"all run (their minimums, or a job with no size that fits; stderr names them).\n";

/* The planner's optimum for job j on `devices` devices: samples/s (0: nothing fits) and its plan. */
static uniap_code allocate_curve_point(const struct cluster_profile *cluster, const struct jobs_doc *d, size_t j,
                                       int devices, int threads, double limit, double *thr, cJSON **plan,
                                       struct uniap_err *err)
{
	const struct jobs_job *jb = &d->jobs[j];
	struct cluster_profile slice;
	struct uop_options o;
	struct uop_result r;
	uniap_code rc;

	*thr = 0;
	*plan = NULL;
	rc = cluster_slice(cluster, devices, &slice, err);
	if (rc != UNIAP_OK)
		return rc;
	uop_options_init(&o);
	o.batch = jb->batch;
	o.schedule = jb->schedule;
	o.recompute = jb->recompute;
	o.zero = jb->zero;
	o.sp = jb->sp;
	o.selective = jb->selective;
	o.fp8 = jb->fp8;
	o.threads = threads;
	o.time_limit_s = limit;
	memset(&r, 0, sizeof(r));
	rc = uop_run(&slice, &d->models[jb->model], &o, NULL, &r, err);
	if (rc == UNIAP_OK && r.best >= 0 && r.eval.tpi_s > 0) {
		*thr = (double)jb->batch / r.eval.tpi_s;
		*plan = jenc_plan(&r.cand, r.stage, r.strategy, &r.eval);
		if (!*plan)
			rc = err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
	} else if (rc == UNIAP_E_ARG || rc == UNIAP_E_INFEASIBLE) {
		/* a batch this size cannot split, an option it cannot run: no plan here */
		rc = UNIAP_OK;
	}
	uop_result_release(&r);
	cluster_release(&slice);
	return rc;
}

int cli_cmd_allocate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cluster", required_argument, NULL, 'c' },   { "jobs", required_argument, NULL, 'j' },
		{ "objective", required_argument, NULL, 'o' }, { "threads", required_argument, NULL, 't' },
		{ "time-limit", required_argument, NULL, 'l' }, { "quiet", no_argument, NULL, 'q' },
		{ "pretty", no_argument, NULL, 'p' },           { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cluster_path = NULL, *jobs_path = NULL;
	struct cluster_profile cluster;
	struct jobs_doc doc;
	struct alloc_job *aj = NULL;
	struct jobs_report_job *rj = NULL;
	struct alloc_result r, best_r;
	struct uniap_err err;
	double *thr = NULL, limit = 10, best_thr = 0;
	cJSON **plans = NULL, *report = NULL;
	int sizes[ALLOC_MAX_SIZES], *first = NULL, objective = ALLOC_THROUGHPUT, quiet = 0, pretty = 0, opt;
	long threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1, v;
	size_t n_sizes = 0, j, k;
	char *text = NULL, *out = NULL;
	size_t len = 0;
	int status = CLI_EXIT_ERROR, have_cluster = 0;

	memset(&doc, 0, sizeof(doc));
	memset(&r, 0, sizeof(r));
	memset(&best_r, 0, sizeof(best_r));
	err_clear(&err);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'c') {
			cluster_path = optarg;
		} else if (opt == 'j') {
			jobs_path = optarg;
		} else if (opt == 'o') {
			objective = alloc_objective_parse(optarg);
			if (objective < 0)
				err_set(&err, UNIAP_E_ARG, "--objective: must be throughput, fair or deadline, got \"%.64s\"",
				        optarg);
		} else if (opt == 't') {
			if (cli_parse_long("--threads", optarg, 1, 256, &v, &err) == UNIAP_OK)
				threads = v;
		} else if (opt == 'l') {
			cli_parse_double("--time-limit", optarg, 0.001, 86400, &limit, &err);
		} else if (opt == 'q') {
			quiet = 1;
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
	if (!cluster_path || !jobs_path)
		return cli_usage_error("allocate", "--cluster and --jobs are required");
	if (cli_load_cluster(cluster_path, &cluster, &err) != UNIAP_OK)
		return cli_fail("allocate", &err);
	have_cluster = 1;
	if (jdec_read_file(jobs_path, CLI_MAX_DOC_BYTES, &text, &len, &err) != UNIAP_OK ||
	    jobs_decode(text, len, &doc, &err) != UNIAP_OK) {
		err_prefix(&err, "%s", jobs_path);
		status = cli_fail("allocate", &err);
		goto out;
	}
	n_sizes = alloc_sizes(cluster.nodes, cluster.devices_per_node, sizes, ALLOC_MAX_SIZES);
	if (n_sizes == 0) {
		err_set(&err, UNIAP_E_LIMIT, "cluster: more than %d allocation sizes (%d nodes)", ALLOC_MAX_SIZES,
		        cluster.nodes);
		status = cli_fail("allocate", &err);
		goto out;
	}
	thr = calloc(doc.n_jobs * n_sizes, sizeof(*thr));
	plans = calloc(doc.n_jobs * n_sizes, sizeof(*plans));
	aj = calloc(doc.n_jobs, sizeof(*aj));
	rj = calloc(doc.n_jobs, sizeof(*rj));
	first = calloc(doc.n_jobs, sizeof(*first));
	if (!thr || !plans || !aj || !rj || !first) {
		err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
		status = cli_fail("allocate", &err);
		goto out;
	}
	/* the curves: the planner on every size each job may take */
	for (j = 0; j < doc.n_jobs; j++) {
		const struct jobs_job *jb = &doc.jobs[j];

		for (k = 0; k < n_sizes; k++) {
			if (sizes[k] < jb->min_devices || (jb->max_devices > 0 && sizes[k] > jb->max_devices))
				continue;
			if (allocate_curve_point(&cluster, &doc, j, sizes[k], (int)threads, limit, &thr[j * n_sizes + k],
			                         &plans[j * n_sizes + k], &err) != UNIAP_OK) {
				err_prefix(&err, "jobs[%zu] (%s) on %d devices", j, jb->name, sizes[k]);
				status = cli_fail("allocate", &err);
				goto out;
			}
			if (!quiet)
				fprintf(stderr, "uniap allocate: %s on %d devices: %s\n", jb->name, sizes[k],
				        thr[j * n_sizes + k] > 0 ? "planned" : "nothing fits");
		}
		aj[j].name = jb->name;
		aj[j].weight = jb->weight;
		aj[j].min_devices = (int)jb->min_devices;
		aj[j].max_devices = (int)jb->max_devices;
		aj[j].samples = jb->samples;
		aj[j].throughput = thr + j * n_sizes;
	}
	if (alloc_solve(aj, doc.n_jobs, sizes, n_sizes, cluster_devices(&cluster), (enum alloc_objective)objective, &r,
	                &err) != UNIAP_OK) {
		status = err.code == UNIAP_E_INFEASIBLE ? (fprintf(stderr, "uniap allocate: %s\n", err.msg),
		                                           CLI_EXIT_INFEASIBLE)
		                                        : cli_fail("allocate", &err);
		goto out;
	}
	/* the price of fairness: against the throughput objective's optimum */
	if (objective != ALLOC_THROUGHPUT &&
	    alloc_solve(aj, doc.n_jobs, sizes, n_sizes, cluster_devices(&cluster), ALLOC_THROUGHPUT, &best_r, &err) ==
	            UNIAP_OK)
		best_thr = best_r.objective;
	if (alloc_place(&r, doc.n_jobs, sizes, cluster.nodes, cluster.devices_per_node, first) != 0) {
		err_set(&err, UNIAP_E_INTERNAL, "allocate: the allocation does not fit the nodes");
		status = cli_fail("allocate", &err);
		goto out;
	}
	for (j = 0; j < doc.n_jobs; j++) {
		rj[j].curve = thr + j * n_sizes;
		rj[j].plan = r.size_index[j] >= 0 ? plans[j * n_sizes + (size_t)r.size_index[j]] : NULL;
		rj[j].first_device = first[j];
	}
	report = jobs_report(&doc, sizes, n_sizes, cluster_devices(&cluster), cluster.devices_per_node,
	                     (enum alloc_objective)objective, &r, best_thr, rj);
	out = report ? jenc_print(report, pretty) : NULL;
	if (!out || cli_write(out) != 0) {
		err_set(&err, out ? UNIAP_E_IO : UNIAP_E_NOMEM, "stdout: write failed");
		status = cli_fail("allocate", &err);
		goto out;
	}
	status = CLI_EXIT_OK;
out:
	for (j = 0; plans && j < doc.n_jobs * n_sizes; j++)
		cJSON_Delete(plans[j]);
	free(plans);
	free(thr);
	free(aj);
	free(rj);
	free(first);
	free(text);
	cJSON_free(out);
	cJSON_Delete(report);
	alloc_result_release(&r);
	alloc_result_release(&best_r);
	jobs_doc_release(&doc);
	if (have_cluster)
		cluster_release(&cluster);
	return status;
}
