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
	"                      [--current FILE [--restart-cost F]] [--drain NODES]\n"
	"                      [--curves FILE] [--no-plans]\n"
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
	"devices_used, planner_runs, sizes, drained_nodes, jobs:[{name, devices,\n"
	"first_device, nodes, throughput_samples_per_s, normalized_throughput,\n"
	"[finish_s,] [previous_devices, moved,] curve, plan, spec}], [moves, ended,]\n"
	"cluster}.\n"
	"Re-planning after a change: give the allocation in force with --current\n"
	"(this command's output) and the jobs and cluster as they are now; jobs whose\n"
	"spec and cluster slice are unchanged reuse their curves and plans (no planner\n"
	"run), and a job given another size than it runs on costs its weight x the\n"
	"restart cost, so jobs move only for a gain larger than that.  --drain takes\n"
	"nodes (0-based, comma-separated) out of service: their jobs move.\n"
	"\n"
	"  --cluster FILE     cluster profile or catalog name\n"
	"  --jobs FILE        jobs document\n"
	"  --objective O      throughput (default), fair or deadline\n"
	"  --current FILE     the allocation in force (a report of this command)\n"
	"  --restart-cost F   with --current: the normalised throughput a move costs,\n"
	"                     a restart's minutes over the allocation's (default 0.05)\n"
	"  --drain NODES      nodes out of service, e.g. 3,17\n"
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

/* The allocation in force (--current): per job name its spec, devices, first device and curve. */
struct allocate_current {
	cJSON *root;
	const cJSON *jobs;
	int sizes[ALLOC_MAX_SIZES];
	size_t n_sizes;
	struct cluster_profile cluster;
	int have_cluster;
};

static uniap_code allocate_load_current(const char *path, struct allocate_current *cur, struct uniap_err *err)
{
	char *text = NULL;
	size_t len = 0;
	const cJSON *sz, *it, *cl;
	uniap_code rc = jdec_read_file(path, CLI_MAX_DOC_BYTES, &text, &len, err);

	if (rc == UNIAP_OK)
		rc = jdec_parse(text, len, "current", &cur->root, err);
	free(text);
	if (rc != UNIAP_OK)
		return rc;
	sz = cJSON_GetObjectItemCaseSensitive(cur->root, "sizes");
	cur->jobs = cJSON_GetObjectItemCaseSensitive(cur->root, "jobs");
	cl = cJSON_GetObjectItemCaseSensitive(cur->root, "cluster");
	if (!cJSON_IsArray(sz) || !cJSON_IsArray(cur->jobs) || !cJSON_IsObject(cl))
		return err_set(err, UNIAP_E_INVALID, "current: must be a report of uniap allocate (sizes, jobs, cluster)");
	cJSON_ArrayForEach(it, sz) {
		if (!cJSON_IsNumber(it) || cur->n_sizes >= ALLOC_MAX_SIZES)
			return err_set(err, UNIAP_E_INVALID, "current.sizes: must be at most %d numbers", ALLOC_MAX_SIZES);
		cur->sizes[cur->n_sizes++] = (int)it->valuedouble;
	}
	rc = jdec_cluster_json(cl, "current.cluster", &cur->cluster, err);
	cur->have_cluster = rc == UNIAP_OK;
	return rc;
}

/* The current allocation's job named name, or NULL. */
static const cJSON *allocate_current_job(const struct allocate_current *cur, const char *name)
{
	const cJSON *it, *n;

	if (!cur->root)
		return NULL;
	cJSON_ArrayForEach(it, cur->jobs) {
		n = cJSON_GetObjectItemCaseSensitive(it, "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return it;
	}
	return NULL;
}

/* What a job's curve depends on: its spec without name, weight, bounds and samples (owned; NULL: none). */
static cJSON *allocate_key(const cJSON *spec)
{
	static const char *const not_planning[] = { "name", "weight", "min_devices", "max_devices", "samples" };
	cJSON *k = cJSON_IsObject(spec) ? cJSON_Duplicate(spec, 1) : NULL;
	size_t i;

	for (i = 0; k && i < sizeof(not_planning) / sizeof(not_planning[0]); i++)
		cJSON_DeleteItemFromObjectCaseSensitive(k, not_planning[i]);
	return k;
}

/* The curve of a job of the report src whose spec plans like key (any name), or NULL. */
static const cJSON *allocate_curve_by_key(const struct allocate_current *src, const cJSON *key)
{
	const cJSON *it;

	if (!src->root || !key)
		return NULL;
	cJSON_ArrayForEach(it, src->jobs) {
		cJSON *k = allocate_key(cJSON_GetObjectItemCaseSensitive(it, "spec"));
		const cJSON *curve = cJSON_GetObjectItemCaseSensitive(it, "curve");
		int same = k && cJSON_Compare(k, key, 1) && cJSON_IsArray(curve) &&
		           (size_t)cJSON_GetArraySize(curve) == src->n_sizes;

		cJSON_Delete(k);
		if (same)
			return curve;
	}
	return NULL;
}

/* The curve point of src's curve (NULL: none) at `devices`, when the slice is the same: 1 and *thr. */
static int allocate_point(const struct allocate_current *src, const cJSON *curve, const unsigned char *same_slice,
                          size_t k, int devices, double *thr)
{
	size_t q;
	const cJSON *x;

	if (!curve || !same_slice[k])
		return 0;
	for (q = 0; q < src->n_sizes && src->sizes[q] != devices; q++)
		;
	if (q == src->n_sizes)
		return 0;
	x = cJSON_GetArrayItem(curve, (int)q);
	*thr = cJSON_IsNumber(x) && x->valuedouble > 0 ? x->valuedouble : 0;
	return 1;
}

static int allocate_int(const cJSON *o, const char *key, int dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? (int)v->valuedouble : dflt;
}

/* 1 when a and b are the same document, numbers within 1e-9 relative (a document read back from a
 * report has its bandwidths and peaks rounded by the GB/s and TFLOP/s units: jencode.h). */
static int allocate_json_close(const cJSON *a, const cJSON *b)
{
	const cJSON *x, *y;

	if (!a || !b || (a->type & 0xFF) != (b->type & 0xFF))
		return 0;
	if (cJSON_IsNumber(a))
		return fabs(a->valuedouble - b->valuedouble) <= 1e-9 * fmax(fabs(a->valuedouble), fabs(b->valuedouble));
	if (cJSON_IsString(a))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (!cJSON_IsArray(a) && !cJSON_IsObject(a))
		return 1; /* true, false, null: the type says it */
	for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
		if ((cJSON_IsObject(a) && strcmp(x->string, y->string) != 0) || !allocate_json_close(x, y))
			return 0;
	return !x && !y;
}

/* 1 when the slices of a and b at `devices` are the same cluster (a curve point carries over). */
static int allocate_same_slice(const struct cluster_profile *a, const struct cluster_profile *b, int devices)
{
	struct cluster_profile sa, sb;
	struct uniap_err e;
	cJSON *ja = NULL, *jb = NULL;
	int same = 0;

	if (cluster_slice(a, devices, &sa, &e) != UNIAP_OK)
		return 0;
	if (cluster_slice(b, devices, &sb, &e) == UNIAP_OK) {
		/* the slices' names differ with the node count they came from: compare the rest */
		free(sa.name);
		sa.name = NULL;
		free(sb.name);
		sb.name = NULL;
		ja = jenc_cluster(&sa);
		jb = jenc_cluster(&sb);
		same = allocate_json_close(ja, jb);
		cJSON_Delete(ja);
		cJSON_Delete(jb);
		cluster_release(&sb);
	}
	cluster_release(&sa);
	return same;
}

/* --drain LIST: node indices, comma-separated, each below nodes, none twice. */
static uniap_code allocate_parse_drain(const char *arg, int nodes, int *out, size_t *n, struct uniap_err *err)
{
	const char *p = arg;

	*n = 0;
	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);
		size_t k;

		if (end == p || v < 0 || v >= nodes || (*end && *end != ','))
			return err_set(err, UNIAP_E_ARG, "--drain: must be node indices 0 .. %d, comma-separated, got \"%.64s\"",
			               nodes - 1, arg);
		for (k = 0; k < *n; k++)
			if (out[k] == (int)v)
				return err_set(err, UNIAP_E_ARG, "--drain: node %ld is listed twice", v);
		out[(*n)++] = (int)v;
		p = *end ? end + 1 : end;
	}
	if (*n == 0 || *n >= (size_t)nodes)
		return err_set(err, UNIAP_E_ARG, "--drain: must leave at least one of the %d nodes, got \"%.64s\"", nodes, arg);
	return UNIAP_OK;
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
	const char *cluster_path = NULL, *jobs_path = NULL, *current_path = NULL, *drain_arg = NULL, *curves_path = NULL;
	struct cluster_profile cluster, logical;
	struct jobs_doc doc;
	struct allocate_current cur, cache;
	struct alloc_job *aj = NULL;
	struct jobs_report_job *rj = NULL;
	struct jobs_report_frame frame;
	struct alloc_result r, best_r;
	struct uniap_err err;
	double *thr = NULL, limit = 10, best_thr = 0, restart = 0.05;
	cJSON **plans = NULL, **keys = NULL, *report = NULL;
	const char **ended = NULL;
	int sizes[ALLOC_MAX_SIZES], *first = NULL, *keep = NULL, *node_map = NULL, *drained = NULL;
	int objective = ALLOC_THROUGHPUT, quiet = 0, pretty = 0, opt, have_cluster = 0, have_logical = 0, i;
	unsigned char *reuse = NULL, same_slice[ALLOC_MAX_SIZES], cache_slice[ALLOC_MAX_SIZES];
	int no_plans = 0;
	long threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1, v, runs = 0;
	size_t n_sizes = 0, n_drained = 0, n_ended = 0, j, k, q;
	char *text = NULL, *out = NULL;
	size_t len = 0;
	int status = CLI_EXIT_ERROR;

	memset(&doc, 0, sizeof(doc));
	memset(&cur, 0, sizeof(cur));
	memset(&cache, 0, sizeof(cache));
	memset(&r, 0, sizeof(r));
	memset(&best_r, 0, sizeof(best_r));
	memset(&frame, 0, sizeof(frame));
	err_clear(&err);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'c') {
			cluster_path = optarg;
		} else if (opt == 'j') {
			jobs_path = optarg;
		} else if (opt == 'C') {
			current_path = optarg;
		} else if (opt == 'd') {
			drain_arg = optarg;
		} else if (opt == 'u') {
			curves_path = optarg;
		} else if (opt == 'n') {
			no_plans = 1;
		} else if (opt == 'r') {
			cli_parse_double("--restart-cost", optarg, 0, 1e6, &restart, &err);
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
	drained = calloc((size_t)cluster.nodes, sizeof(*drained));
	node_map = calloc((size_t)cluster.nodes, sizeof(*node_map));
	if (!drained || !node_map) {
		err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
		status = cli_fail("allocate", &err);
		goto out;
	}
	if (drain_arg && allocate_parse_drain(drain_arg, cluster.nodes, drained, &n_drained, &err) != UNIAP_OK) {
		status = cli_usage_error("allocate", err.msg);
		goto out;
	}
	/* the nodes in service, as a cluster of their own: node i of it is node_map[i] of the cluster */
	for (i = 0, q = 0; i < cluster.nodes; i++) {
		for (k = 0; k < n_drained && drained[k] != i; k++)
			;
		if (k == n_drained)
			node_map[q++] = i;
	}
	if (cluster_slice(&cluster, (int)q * cluster.devices_per_node, &logical, &err) != UNIAP_OK) {
		status = cli_fail("allocate", &err);
		goto out;
	}
	have_logical = 1;
	if (jdec_read_file(jobs_path, CLI_MAX_DOC_BYTES, &text, &len, &err) != UNIAP_OK ||
	    jobs_decode(text, len, &doc, &err) != UNIAP_OK) {
		err_prefix(&err, "%s", jobs_path);
		status = cli_fail("allocate", &err);
		goto out;
	}
	if (current_path && allocate_load_current(current_path, &cur, &err) != UNIAP_OK) {
		err_prefix(&err, "%s", current_path);
		status = cli_fail("allocate", &err);
		goto out;
	}
	if (curves_path && allocate_load_current(curves_path, &cache, &err) != UNIAP_OK) {
		err_prefix(&err, "%s", curves_path);
		status = cli_fail("allocate", &err);
		goto out;
	}
	n_sizes = alloc_sizes(logical.nodes, logical.devices_per_node, sizes, ALLOC_MAX_SIZES);
	if (n_sizes == 0) {
		err_set(&err, UNIAP_E_LIMIT, "cluster: more than %d allocation sizes (%d nodes)", ALLOC_MAX_SIZES,
		        logical.nodes);
		status = cli_fail("allocate", &err);
		goto out;
	}
	thr = calloc(doc.n_jobs * n_sizes, sizeof(*thr));
	plans = calloc(doc.n_jobs * n_sizes, sizeof(*plans));
	reuse = calloc(doc.n_jobs * n_sizes, 1);
	keys = calloc(doc.n_jobs, sizeof(*keys));
	aj = calloc(doc.n_jobs, sizeof(*aj));
	rj = calloc(doc.n_jobs, sizeof(*rj));
	first = calloc(doc.n_jobs, sizeof(*first));
	keep = calloc(doc.n_jobs, sizeof(*keep));
	ended = calloc(cur.jobs ? (size_t)cJSON_GetArraySize(cur.jobs) + 1 : 1, sizeof(*ended));
	if (!thr || !plans || !reuse || !keys || !aj || !rj || !first || !keep || !ended) {
		err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
		status = cli_fail("allocate", &err);
		goto out;
	}
	/* what a job's curve depends on: its spec without name, weight, bounds and samples */
	for (j = 0; j < doc.n_jobs; j++)
		if (!(keys[j] = allocate_key(doc.jobs[j].spec))) {
			err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
			status = cli_fail("allocate", &err);
			goto out;
		}
	/* which sizes carry over from the current allocation: the same slice of the cluster */
	for (k = 0; k < n_sizes; k++) {
		same_slice[k] = cur.have_cluster && allocate_same_slice(&cur.cluster, &logical, sizes[k]);
		cache_slice[k] = cache.have_cluster && allocate_same_slice(&cache.cluster, &logical, sizes[k]);
	}
	/* the curves: the planner on every size each job may take, unless the current allocation has it */
	for (j = 0; j < doc.n_jobs; j++) {
		const struct jobs_job *jb = &doc.jobs[j];
		const cJSON *old = allocate_current_job(&cur, jb->name);
		const cJSON *spec = old ? cJSON_GetObjectItemCaseSensitive(old, "spec") : NULL;
		const cJSON *curve = old ? cJSON_GetObjectItemCaseSensitive(old, "curve") : NULL;
		int same = spec && jb->spec && cJSON_Compare(spec, jb->spec, 1) && cJSON_IsArray(curve) &&
		           (size_t)cJSON_GetArraySize(curve) == cur.n_sizes;
		int prev = old ? allocate_int(old, "devices", 0) : 0;
		const cJSON *by_key = same ? NULL : allocate_curve_by_key(&cur, keys[j]);
		const cJSON *cached = allocate_curve_by_key(&cache, keys[j]);

		aj[j].current = -1;
		rj[j].previous_devices = prev > 0 ? prev : -1;
		rj[j].previous_first_device = prev > 0 ? allocate_int(old, "first_device", -1) : -1;
		for (k = 0; k < n_sizes; k++) {
			if (prev > 0 && sizes[k] == prev)
				aj[j].current = (int)k;
			if (sizes[k] < jb->min_devices || (jb->max_devices > 0 && sizes[k] > jb->max_devices))
				continue;
			/* the job itself in the current allocation (its curve, and its plan where it stays) */
			if (same && same_slice[k]) {
				for (q = 0; q < cur.n_sizes && cur.sizes[q] != sizes[k]; q++)
					;
				if (q < cur.n_sizes) {
					const cJSON *x = cJSON_GetArrayItem(curve, (int)q);

					thr[j * n_sizes + k] = cJSON_IsNumber(x) && x->valuedouble > 0 ? x->valuedouble : 0;
					reuse[j * n_sizes + k] = 1;
					if (prev == sizes[k] && thr[j * n_sizes + k] > 0) {
						const cJSON *pl = cJSON_GetObjectItemCaseSensitive(old, "plan");

						if (cJSON_IsObject(pl) && !(plans[j * n_sizes + k] = cJSON_Duplicate(pl, 1))) {
							err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
							status = cli_fail("allocate", &err);
							goto out;
						}
					}
					continue;
				}
			}
			/* another job of the current allocation, or of the curves cache, that plans alike */
			if (allocate_point(&cur, by_key, same_slice, k, sizes[k], &thr[j * n_sizes + k]) ||
			    allocate_point(&cache, cached, cache_slice, k, sizes[k], &thr[j * n_sizes + k])) {
				reuse[j * n_sizes + k] = 1;
				continue;
			}
			/* an earlier job of the same model, batch and options has this point: share it */
			for (q = 0; q < j && !(reuse[q * n_sizes + k] && cJSON_Compare(keys[q], keys[j], 1)); q++)
				;
			if (q < j) {
				thr[j * n_sizes + k] = thr[q * n_sizes + k];
				reuse[j * n_sizes + k] = 1;
				if (plans[q * n_sizes + k] && !(plans[j * n_sizes + k] = cJSON_Duplicate(plans[q * n_sizes + k], 1))) {
					err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
					status = cli_fail("allocate", &err);
					goto out;
				}
				continue;
			}
			runs++;
			reuse[j * n_sizes + k] = 1;
			if (allocate_curve_point(&logical, &doc, j, sizes[k], (int)threads, limit, &thr[j * n_sizes + k],
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
	if (alloc_solve(aj, doc.n_jobs, sizes, n_sizes, cluster_devices(&logical), (enum alloc_objective)objective,
	                cur.root ? restart : 0, &r, &err) != UNIAP_OK) {
		status = err.code == UNIAP_E_INFEASIBLE ? (fprintf(stderr, "uniap allocate: %s\n", err.msg),
		                                           CLI_EXIT_INFEASIBLE)
		                                        : cli_fail("allocate", &err);
		goto out;
	}
	/* the price of fairness: against the throughput objective's optimum (the same restart costs) */
	if (objective != ALLOC_THROUGHPUT &&
	    alloc_solve(aj, doc.n_jobs, sizes, n_sizes, cluster_devices(&logical), ALLOC_THROUGHPUT,
	                cur.root ? restart : 0, &best_r, &err) == UNIAP_OK)
		best_thr = best_r.objective;
	/* the plans of the sizes chosen whose curve point carried over without its plan */
	for (j = 0; j < doc.n_jobs; j++) {
		int kk = r.size_index[j];

		if (kk < 0 || plans[j * n_sizes + (size_t)kk] || no_plans)
			continue;
		runs++;
		if (allocate_curve_point(&logical, &doc, j, sizes[kk], (int)threads, limit, &thr[j * n_sizes + (size_t)kk],
		                         &plans[j * n_sizes + (size_t)kk], &err) != UNIAP_OK) {
			err_prefix(&err, "jobs[%zu] (%s) on %d devices", j, doc.jobs[j].name, sizes[kk]);
			status = cli_fail("allocate", &err);
			goto out;
		}
	}
	/* a job that keeps its size stays on its devices where they are still in service */
	for (j = 0; j < doc.n_jobs; j++) {
		int pf = rj[j].previous_first_device, node = pf >= 0 ? pf / cluster.devices_per_node : -1;

		keep[j] = -1;
		if (r.size_index[j] < 0 || rj[j].previous_devices != sizes[r.size_index[j]] || node < 0)
			continue;
		for (q = 0; q < (size_t)logical.nodes && node_map[q] != node; q++)
			;
		/* whole nodes stay only when none of them was drained: their last one is still the
		 * same distance from the first */
		if (q < (size_t)logical.nodes) {
			int span = sizes[r.size_index[j]] / cluster.devices_per_node;

			if (span <= 1 || (q + (size_t)span <= (size_t)logical.nodes &&
			                  node_map[q + (size_t)span - 1] == node + span - 1))
				keep[j] = (int)q * cluster.devices_per_node + pf % cluster.devices_per_node;
		}
	}
	if (alloc_place(&r, doc.n_jobs, sizes, logical.nodes, logical.devices_per_node, keep, first) < 0) {
		err_set(&err, UNIAP_E_INTERNAL, "allocate: the allocation does not fit the nodes");
		status = cli_fail("allocate", &err);
		goto out;
	}
	for (j = 0; j < doc.n_jobs; j++) {
		rj[j].curve = thr + j * n_sizes;
		rj[j].plan = r.size_index[j] >= 0 ? plans[j * n_sizes + (size_t)r.size_index[j]] : NULL;
		rj[j].first_device = first[j];
	}
	/* the jobs of the current allocation that are gone */
	if (cur.jobs) {
		const cJSON *it;

		cJSON_ArrayForEach(it, cur.jobs) {
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");

			for (j = 0; cJSON_IsString(n) && j < doc.n_jobs && strcmp(doc.jobs[j].name, n->valuestring) != 0; j++)
				;
			if (cJSON_IsString(n) && j == doc.n_jobs)
				ended[n_ended++] = n->valuestring;
		}
	}
	frame.cluster = &cluster;
	frame.node_map = node_map;
	frame.drained = drained;
	frame.n_drained = n_drained;
	frame.replanning = cur.root != NULL;
	frame.ended = ended;
	frame.n_ended = n_ended;
	frame.planner_runs = runs;
	report = jobs_report(&doc, sizes, n_sizes, cluster.devices_per_node, (enum alloc_objective)objective, &r,
	                     best_thr, rj, &frame);
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
	for (j = 0; keys && j < doc.n_jobs; j++)
		cJSON_Delete(keys[j]);
	free(keys);
	free(thr);
	free(reuse);
	free(aj);
	free(rj);
	free(first);
	free(keep);
	free(ended);
	free(node_map);
	free(drained);
	free(text);
	cJSON_free(out);
	cJSON_Delete(report);
	cJSON_Delete(cur.root);
	if (cur.have_cluster)
		cluster_release(&cur.cluster);
	cJSON_Delete(cache.root);
	if (cache.have_cluster)
		cluster_release(&cache.cluster);
	alloc_result_release(&r);
	alloc_result_release(&best_r);
	jobs_doc_release(&doc);
	if (have_logical)
		cluster_release(&logical);
	if (have_cluster)
		cluster_release(&cluster);
	return status;
}
