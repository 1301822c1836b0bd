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

/* A pool of an earlier report (--current, --curves): its sizes in the report's curves and its cluster. */
struct allocate_src_pool {
	const char *name;         /* borrowed from the report */
	int sizes[ALLOC_MAX_SIZES];
	size_t n_sizes, first;    /* the curves' entries first .. first + n_sizes - 1 */
	struct cluster_profile cluster;
	int have_cluster;
};

/* An earlier report (the allocation in force, or a curve cache): per job name its spec, pool,
 * devices, first device and curve, and per pool its sizes and cluster. */
struct allocate_current {
	cJSON *root;
	const cJSON *jobs;
	struct allocate_src_pool pools[ALLOC_MAX_POOLS];
	size_t n_pools, n_sizes;  /* n_sizes: every pool's, the length of a curve */
};

static void allocate_current_release(struct allocate_current *cur)
{
	size_t p;

	for (p = 0; p < cur->n_pools; p++)
		if (cur->pools[p].have_cluster)
			cluster_release(&cur->pools[p].cluster);
	cJSON_Delete(cur->root);
	memset(cur, 0, sizeof(*cur));
}

/* One pool of a report: sizes (numbers) and cluster (an object) under path. */
static uniap_code allocate_load_pool(const cJSON *sz, const cJSON *cl, const char *name, const char *path,
                                     struct allocate_current *cur, struct uniap_err *err)
{
	struct allocate_src_pool *sp = &cur->pools[cur->n_pools];
	char p[64];
	const cJSON *it;
	uniap_code rc;

	if (!cJSON_IsArray(sz) || !cJSON_IsObject(cl))
		return err_set(err, UNIAP_E_INVALID, "%s: must be a report of uniap allocate (sizes, jobs, cluster or "
		               "pools)", path);
	sp->name = name;
	sp->first = cur->n_sizes;
	cJSON_ArrayForEach(it, sz) {
		if (!cJSON_IsNumber(it) || sp->n_sizes >= ALLOC_MAX_SIZES)
			return err_set(err, UNIAP_E_INVALID, "%s.sizes: must be at most %d numbers", path, ALLOC_MAX_SIZES);
		sp->sizes[sp->n_sizes++] = (int)it->valuedouble;
	}
	snprintf(p, sizeof(p), "%s.cluster", path);
	rc = jdec_cluster_json(cl, p, &sp->cluster, err);
	sp->have_cluster = rc == UNIAP_OK;
	cur->n_sizes += sp->n_sizes;
	cur->n_pools++;
	return rc;
}

static uniap_code allocate_load_current(const char *path, struct allocate_current *cur, struct uniap_err *err)
{
	char *text = NULL;
	size_t len = 0;
	const cJSON *sz, *pools, *it;
	uniap_code rc = jdec_read_file(path, CLI_MAX_DOC_BYTES, &text, &len, err);

	if (rc == UNIAP_OK)
		rc = jdec_parse(text, len, "current", &cur->root, err);
	free(text);
	if (rc != UNIAP_OK)
		return rc;
	sz = cJSON_GetObjectItemCaseSensitive(cur->root, "sizes");
	cur->jobs = cJSON_GetObjectItemCaseSensitive(cur->root, "jobs");
	pools = cJSON_GetObjectItemCaseSensitive(cur->root, "pools");
	if (!cJSON_IsArray(sz) || !cJSON_IsArray(cur->jobs))
		return err_set(err, UNIAP_E_INVALID, "current: must be a report of uniap allocate (sizes, jobs, cluster or "
		               "pools)");
	if (!pools) {
		const cJSON *cl = cJSON_GetObjectItemCaseSensitive(cur->root, "cluster");
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(cl, "name");

		return allocate_load_pool(sz, cl, cJSON_IsString(nm) ? nm->valuestring : "", "current", cur, err);
	}
	/* several pools: their sizes are the report's, in turn */
	cJSON_ArrayForEach(it, pools) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
		const cJSON *first = cJSON_GetObjectItemCaseSensitive(it, "first_size");
		const cJSON *count = cJSON_GetObjectItemCaseSensitive(it, "sizes_count");
		cJSON *part;
		char p[32];
		int i;

		snprintf(p, sizeof(p), "current.pools[%zu]", cur->n_pools);
		if (cur->n_pools >= ALLOC_MAX_POOLS || !cJSON_IsString(nm) || !cJSON_IsNumber(first) ||
		    !cJSON_IsNumber(count) || (size_t)first->valuedouble != cur->n_sizes || count->valuedouble < 1 ||
		    first->valuedouble + count->valuedouble > cJSON_GetArraySize(sz))
			return err_set(err, UNIAP_E_INVALID, "%s: must be a pool of a report of uniap allocate (name, "
			               "first_size, sizes_count, cluster; at most %d pools)", p, ALLOC_MAX_POOLS);
		if (!(part = cJSON_CreateArray()))
			return err_set(err, UNIAP_E_NOMEM, "current: out of memory");
		for (i = (int)first->valuedouble; i < (int)(first->valuedouble + count->valuedouble); i++)
			cJSON_AddItemToArray(part, cJSON_CreateNumber(cJSON_GetArrayItem(sz, i)->valuedouble));
		rc = allocate_load_pool(part, cJSON_GetObjectItemCaseSensitive(it, "cluster"), nm->valuestring, p, cur, err);
		cJSON_Delete(part);
		if (rc != UNIAP_OK)
			return rc;
	}
	if (cur->n_pools == 0 || cur->n_sizes != (size_t)cJSON_GetArraySize(sz))
		return err_set(err, UNIAP_E_INVALID, "current.pools: must cover the report's sizes");
	return UNIAP_OK;
}

/* The pool of src that is the pool named name of an allocation of n_now pools: one pool each,
 * whatever their names, or the one of that name; NULL: none. */
static const struct allocate_src_pool *allocate_src_pool(const struct allocate_current *src, const char *name,
                                                         size_t n_now)
{
	size_t p;

	if (src->n_pools == 1 && n_now == 1)
		return &src->pools[0];
	for (p = 0; p < src->n_pools; p++)
		if (strcmp(src->pools[p].name, name) == 0)
			return &src->pools[p];
	return NULL;
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
	static const char *const not_planning[] = { "name", "weight", "min_devices", "max_devices", "samples",
		                                    "deadline_s" };
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

/* The curve point of src's curve (NULL: none) for size k of the allocation (pool sp of src, NULL:
 * none), when the slice is the same: 1 and *thr. */
static int allocate_point(const struct allocate_src_pool *sp, const cJSON *curve, const unsigned char *same_slice,
                          size_t k, int devices, double *thr)
{
	size_t q;
	const cJSON *x;

	if (!curve || !sp || !same_slice[k])
		return 0;
	for (q = 0; q < sp->n_sizes && sp->sizes[q] != devices; q++)
		;
	if (q == sp->n_sizes)
		return 0;
	x = cJSON_GetArrayItem(curve, (int)(sp->first + q));
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

/* A pool of the allocation: one cluster given with --cluster. */
struct allocate_pool {
	struct cluster_profile cluster;  /* as given */
	struct cluster_profile logical;  /* its nodes in service, as a cluster of their own */
	int have_cluster, have_logical;
	int *drained, *node_map;         /* [cluster.nodes]: the drained nodes; node i of logical is
	                                    node_map[i] of the cluster */
	size_t n_drained;
	size_t first, n_sizes;           /* its sizes in the allocation's list */
	unsigned char same_slice[ALLOC_MAX_SIZES], cache_slice[ALLOC_MAX_SIZES]; /* per size of the pool */
};

/*
 * --drain LIST: comma-separated nodes, each NODE (one pool) or POOL:NODE (POOL
 * a pool's name or 0-based index), each below its pool's nodes, none twice,
 * leaving each pool a node.
 */
static uniap_code allocate_parse_drain(const char *arg, struct allocate_pool *pools, size_t n_pools,
                                       struct uniap_err *err)
{
	const char *p = arg;

	while (*p) {
		const char *colon = strchr(p, ':'), *comma = strchr(p, ',');
		size_t pool = 0, k;
		char *end;
		long v;

		if (colon && (!comma || colon < comma)) {
			size_t len = (size_t)(colon - p), q;
			char *e2;
			long idx = strtol(p, &e2, 10);

			for (q = 0; q < n_pools; q++)
				if (strlen(pools[q].cluster.name) == len && strncmp(pools[q].cluster.name, p, len) == 0)
					break;
			if (q == n_pools && e2 == colon && idx >= 0 && (size_t)idx < n_pools)
				q = (size_t)idx;
			if (q == n_pools)
				return err_set(err, UNIAP_E_ARG, "--drain: no pool named \"%.*s\" (a cluster's name or its "
				               "0-based index)", (int)(len > 64 ? 64 : len), p);
			pool = q;
			p = colon + 1;
		} else if (n_pools > 1) {
			return err_set(err, UNIAP_E_ARG, "--drain: with several clusters each node is POOL:NODE, got \"%.64s\"",
			               arg);
		}
		v = strtol(p, &end, 10);
		if (end == p || v < 0 || v >= pools[pool].cluster.nodes || (*end && *end != ','))
			return err_set(err, UNIAP_E_ARG, "--drain: must be node indices 0 .. %d of %s, comma-separated, got "
			               "\"%.64s\"", pools[pool].cluster.nodes - 1, pools[pool].cluster.name, arg);
		for (k = 0; k < pools[pool].n_drained; k++)
			if (pools[pool].drained[k] == (int)v)
				return err_set(err, UNIAP_E_ARG, "--drain: node %ld of %s is listed twice", v,
				               pools[pool].cluster.name);
		pools[pool].drained[pools[pool].n_drained++] = (int)v;
		if (pools[pool].n_drained >= (size_t)pools[pool].cluster.nodes)
			return err_set(err, UNIAP_E_ARG, "--drain: must leave at least one of the %d nodes of %s, got \"%.64s\"",
			               pools[pool].cluster.nodes, pools[pool].cluster.name, arg);
		p = *end ? end + 1 : end;
	}
	return UNIAP_OK;
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
	const char *cluster_paths[ALLOC_MAX_POOLS], *jobs_path = NULL, *current_path = NULL, *drain_arg = NULL;
	const char *curves_path = NULL;
	struct allocate_pool pools[ALLOC_MAX_POOLS];
	struct jobs_report_pool rpools[ALLOC_MAX_POOLS];
	int pool_devices[ALLOC_MAX_POOLS];
	struct alloc_pools ap;
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
	int sizes[ALLOC_MAX_SIZES * ALLOC_MAX_POOLS], pool_of[ALLOC_MAX_SIZES * ALLOC_MAX_POOLS];
	int *first = NULL, *keep = NULL, *pfirst = NULL, *masked = NULL;
	int objective = ALLOC_THROUGHPUT, quiet = 0, pretty = 0, opt, i;
	unsigned char *reuse = NULL;
	int no_plans = 0;
	long threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1, v, runs = 0;
	size_t n_sizes = 0, n_pools = 0, n_ended = 0, j, k, q, p;
	char *text = NULL, *out = NULL;
	size_t len = 0;
	int status = CLI_EXIT_ERROR;

	memset(pools, 0, sizeof(pools));
	memset(rpools, 0, sizeof(rpools));
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
			if (n_pools >= ALLOC_MAX_POOLS)
				err_set(&err, UNIAP_E_ARG, "--cluster: at most %d clusters (pools)", ALLOC_MAX_POOLS);
			else
				cluster_paths[n_pools++] = optarg;
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
				err_set(&err, UNIAP_E_ARG, "--objective: must be throughput, fair, deadline or missed, got "
				        "\"%.64s\"", optarg);
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
	if (n_pools == 0 || !jobs_path)
		return cli_usage_error("allocate", "--cluster and --jobs are required");
	/* the pools: each cluster given, its nodes in service, its sizes */
	for (p = 0; p < n_pools; p++) {
		struct allocate_pool *pl = &pools[p];

		if (cli_load_cluster(cluster_paths[p], &pl->cluster, &err) != UNIAP_OK) {
			status = cli_fail("allocate", &err);
			goto out;
		}
		pl->have_cluster = 1;
		for (q = 0; q < p; q++)
			if (strcmp(pools[q].cluster.name, pl->cluster.name) == 0) {
				err_set(&err, UNIAP_E_ARG, "--cluster: two clusters are named \"%.64s\"; a pool is known by its "
				        "cluster's name", pl->cluster.name);
				status = cli_usage_error("allocate", err.msg);
				goto out;
			}
		pl->drained = calloc((size_t)pl->cluster.nodes, sizeof(*pl->drained));
		pl->node_map = calloc((size_t)pl->cluster.nodes, sizeof(*pl->node_map));
		if (!pl->drained || !pl->node_map) {
			err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
			status = cli_fail("allocate", &err);
			goto out;
		}
	}
	if (drain_arg && allocate_parse_drain(drain_arg, pools, n_pools, &err) != UNIAP_OK) {
		status = cli_usage_error("allocate", err.msg);
		goto out;
	}
	for (p = 0; p < n_pools; p++) {
		struct allocate_pool *pl = &pools[p];
		size_t got;

		for (i = 0, q = 0; i < pl->cluster.nodes; i++) {
			for (k = 0; k < pl->n_drained && pl->drained[k] != i; k++)
				;
			if (k == pl->n_drained)
				pl->node_map[q++] = i;
		}
		if (cluster_slice(&pl->cluster, (int)q * pl->cluster.devices_per_node, &pl->logical, &err) != UNIAP_OK) {
			status = cli_fail("allocate", &err);
			goto out;
		}
		pl->have_logical = 1;
		pl->first = n_sizes;
		got = alloc_sizes(pl->logical.nodes, pl->logical.devices_per_node, sizes + n_sizes, ALLOC_MAX_SIZES);
		if (got == 0) {
			err_set(&err, UNIAP_E_LIMIT, "cluster %s: more than %d allocation sizes (%d nodes)", pl->cluster.name,
			        ALLOC_MAX_SIZES, pl->logical.nodes);
			status = cli_fail("allocate", &err);
			goto out;
		}
		for (k = n_sizes; k < n_sizes + got; k++)
			pool_of[k] = (int)p;
		pl->n_sizes = got;
		n_sizes += got;
		pool_devices[p] = cluster_devices(&pl->logical);
	}
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
	thr = calloc(doc.n_jobs * n_sizes, sizeof(*thr));
	plans = calloc(doc.n_jobs * n_sizes, sizeof(*plans));
	reuse = calloc(doc.n_jobs * n_sizes, 1);
	keys = calloc(doc.n_jobs, sizeof(*keys));
	aj = calloc(doc.n_jobs, sizeof(*aj));
	rj = calloc(doc.n_jobs, sizeof(*rj));
	first = calloc(doc.n_jobs, sizeof(*first));
	pfirst = calloc(doc.n_jobs, sizeof(*pfirst));
	masked = calloc(doc.n_jobs, sizeof(*masked));
	keep = calloc(doc.n_jobs, sizeof(*keep));
	ended = calloc(cur.jobs ? (size_t)cJSON_GetArraySize(cur.jobs) + 1 : 1, sizeof(*ended));
	if (!thr || !plans || !reuse || !keys || !aj || !rj || !first || !pfirst || !masked || !keep || !ended) {
		err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
		status = cli_fail("allocate", &err);
		goto out;
	}
	/* what a job's curve depends on: its spec without name, weight, bounds, samples and deadline */
	for (j = 0; j < doc.n_jobs; j++)
		if (!(keys[j] = allocate_key(doc.jobs[j].spec))) {
			err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
			status = cli_fail("allocate", &err);
			goto out;
		}
	/* which sizes carry over from the current allocation and the cache: the same slice of the pool */
	for (p = 0; p < n_pools; p++) {
		const struct allocate_src_pool *cp = allocate_src_pool(&cur, pools[p].cluster.name, n_pools);
		const struct allocate_src_pool *hp = allocate_src_pool(&cache, pools[p].cluster.name, n_pools);

		for (k = 0; k < pools[p].n_sizes; k++) {
			int s = sizes[pools[p].first + k];

			pools[p].same_slice[k] = cp && cp->have_cluster && allocate_same_slice(&cp->cluster, &pools[p].logical, s);
			pools[p].cache_slice[k] = hp && hp->have_cluster && allocate_same_slice(&hp->cluster, &pools[p].logical, s);
		}
	}
	/* the curves: the planner on every size each job may take, unless an earlier report has it */
	for (j = 0; j < doc.n_jobs; j++) {
		const struct jobs_job *jb = &doc.jobs[j];
		const cJSON *old = allocate_current_job(&cur, jb->name);
		const cJSON *spec = old ? cJSON_GetObjectItemCaseSensitive(old, "spec") : NULL;
		const cJSON *curve = old ? cJSON_GetObjectItemCaseSensitive(old, "curve") : NULL;
		const cJSON *opool = old ? cJSON_GetObjectItemCaseSensitive(old, "pool") : NULL;
		int same = spec && jb->spec && cJSON_Compare(spec, jb->spec, 1) && cJSON_IsArray(curve) &&
		           (size_t)cJSON_GetArraySize(curve) == cur.n_sizes;
		int prev = old ? allocate_int(old, "devices", 0) : 0;
		const cJSON *by_key = same ? NULL : allocate_curve_by_key(&cur, keys[j]);
		const cJSON *cached = allocate_curve_by_key(&cache, keys[j]);
		/* the pool it runs on: named in a report of several pools, the only one otherwise */
		const char *prev_pool = cJSON_IsString(opool) ? opool->valuestring
		                        : cur.n_pools == 1 ? cur.pools[0].name : NULL;

		aj[j].current = -1;
		rj[j].previous_devices = prev > 0 ? prev : -1;
		rj[j].previous_first_device = prev > 0 ? allocate_int(old, "first_device", -1) : -1;
		rj[j].previous_pool = prev > 0 ? prev_pool : NULL;
		for (k = 0; k < n_sizes; k++) {
			struct allocate_pool *pl = &pools[pool_of[k]];
			const struct allocate_src_pool *cp = allocate_src_pool(&cur, pl->cluster.name, n_pools);
			const struct allocate_src_pool *hp = allocate_src_pool(&cache, pl->cluster.name, n_pools);
			size_t kp = k - pl->first; /* the size's index in its pool */
			int here = prev > 0 && prev_pool && cp && strcmp(cp->name, prev_pool) == 0;

			if (here && sizes[k] == prev)
				aj[j].current = (int)k;
			if (sizes[k] < jb->min_devices || (jb->max_devices > 0 && sizes[k] > jb->max_devices))
				continue;
			/* the job itself in the current allocation (its curve, and its plan where it stays) */
			if (same && allocate_point(cp, curve, pl->same_slice, kp, sizes[k], &thr[j * n_sizes + k])) {
				reuse[j * n_sizes + k] = 1;
				if (here && prev == sizes[k] && thr[j * n_sizes + k] > 0) {
					const cJSON *pl_doc = cJSON_GetObjectItemCaseSensitive(old, "plan");

					if (cJSON_IsObject(pl_doc) && !(plans[j * n_sizes + k] = cJSON_Duplicate(pl_doc, 1))) {
						err_set(&err, UNIAP_E_NOMEM, "allocate: out of memory");
						status = cli_fail("allocate", &err);
						goto out;
					}
				}
				continue;
			}
			/* another job of the current allocation, or of the curves cache, that plans alike */
			if (allocate_point(cp, by_key, pl->same_slice, kp, sizes[k], &thr[j * n_sizes + k]) ||
			    allocate_point(hp, cached, pl->cache_slice, kp, sizes[k], &thr[j * n_sizes + k])) {
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
			if (allocate_curve_point(&pl->logical, &doc, j, sizes[k], (int)threads, limit, &thr[j * n_sizes + k],
			                         &plans[j * n_sizes + k], &err) != UNIAP_OK) {
				if (n_pools > 1)
					err_prefix(&err, "jobs[%zu] (%s) on %d devices of %s", j, jb->name, sizes[k],
					           pl->cluster.name);
				else
					err_prefix(&err, "jobs[%zu] (%s) on %d devices", j, jb->name, sizes[k]);
				status = cli_fail("allocate", &err);
				goto out;
			}
			if (!quiet)
				fprintf(stderr, "uniap allocate: %s on %d devices%s%s: %s\n", jb->name, sizes[k],
				        n_pools > 1 ? " of " : "", n_pools > 1 ? pl->cluster.name : "",
				        thr[j * n_sizes + k] > 0 ? "planned" : "nothing fits");
		}
		aj[j].name = jb->name;
		aj[j].weight = jb->weight;
		aj[j].min_devices = (int)jb->min_devices;
		aj[j].max_devices = (int)jb->max_devices;
		aj[j].samples = jb->samples;
		aj[j].deadline_s = jb->deadline_s;
		aj[j].throughput = thr + j * n_sizes;
	}
	ap.n = n_pools;
	ap.devices = pool_devices;
	ap.pool_of = pool_of;
	if (alloc_solve_pools(aj, doc.n_jobs, sizes, n_sizes, &ap, (enum alloc_objective)objective,
	                      cur.root ? restart : 0, &r, &err) != UNIAP_OK) {
		status = allocate_fail(&err);
		goto out;
	}
	/* the price of fairness: against the throughput objective's optimum (the same restart costs) */
	if (objective != ALLOC_THROUGHPUT &&
	    alloc_solve_pools(aj, doc.n_jobs, sizes, n_sizes, &ap, ALLOC_THROUGHPUT, cur.root ? restart : 0, &best_r,
	                      &err) == UNIAP_OK)
		best_thr = best_r.objective;
	/* the plans of the sizes chosen whose curve point carried over without its plan */
	for (j = 0; j < doc.n_jobs; j++) {
		int kk = r.size_index[j];

		if (kk < 0 || plans[j * n_sizes + (size_t)kk] || no_plans)
			continue;
		runs++;
		if (allocate_curve_point(&pools[pool_of[kk]].logical, &doc, j, sizes[kk], (int)threads, limit,
		                         &thr[j * n_sizes + (size_t)kk], &plans[j * n_sizes + (size_t)kk], &err) != UNIAP_OK) {
			err_prefix(&err, "jobs[%zu] (%s) on %d devices", j, doc.jobs[j].name, sizes[kk]);
			status = cli_fail("allocate", &err);
			goto out;
		}
	}
	/* a job that keeps its pool and size stays on its devices where they are still in service */
	for (j = 0; j < doc.n_jobs; j++) {
		int kk = r.size_index[j], pf = rj[j].previous_first_device, node;
		struct allocate_pool *pl = kk >= 0 ? &pools[pool_of[kk]] : NULL;

		keep[j] = -1;
		if (!pl || rj[j].previous_devices != sizes[kk] || pf < 0 || !rj[j].previous_pool ||
		    (n_pools > 1 && strcmp(rj[j].previous_pool, pl->cluster.name) != 0))
			continue;
		node = pf / pl->cluster.devices_per_node;
		for (q = 0; q < (size_t)pl->logical.nodes && pl->node_map[q] != node; q++)
			;
		/* whole nodes stay only when none of them was drained: their last one is still the
		 * same distance from the first */
		if (q < (size_t)pl->logical.nodes) {
			int span = sizes[kk] / pl->cluster.devices_per_node;

			if (span <= 1 || (q + (size_t)span <= (size_t)pl->logical.nodes &&
			                  pl->node_map[q + (size_t)span - 1] == node + span - 1))
				keep[j] = (int)q * pl->cluster.devices_per_node + pf % pl->cluster.devices_per_node;
		}
	}
	/* each pool's jobs on its nodes */
	for (j = 0; j < doc.n_jobs; j++)
		first[j] = -1;
	for (p = 0; p < n_pools; p++) {
		struct alloc_result m = r;

		m.size_index = masked;
		for (j = 0; j < doc.n_jobs; j++)
			masked[j] = r.size_index[j] >= 0 && (size_t)pool_of[r.size_index[j]] == p ? r.size_index[j] : -1;
		if (alloc_place(&m, doc.n_jobs, sizes, pools[p].logical.nodes, pools[p].logical.devices_per_node, keep,
		                pfirst) < 0) {
			err_set(&err, UNIAP_E_INTERNAL, "allocate: the allocation does not fit the nodes of %s",
			        pools[p].cluster.name);
			status = cli_fail("allocate", &err);
			goto out;
		}
		for (j = 0; j < doc.n_jobs; j++)
			if (masked[j] >= 0)
				first[j] = pfirst[j];
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
	for (p = 0; p < n_pools; p++) {
		rpools[p].name = pools[p].cluster.name;
		rpools[p].cluster = &pools[p].cluster;
		rpools[p].node_map = pools[p].node_map;
		rpools[p].drained = pools[p].drained;
		rpools[p].n_drained = pools[p].n_drained;
		rpools[p].first = pools[p].first;
		rpools[p].n_sizes = pools[p].n_sizes;
	}
	frame.pools = rpools;
	frame.n_pools = n_pools;
	frame.replanning = cur.root != NULL;
	frame.ended = ended;
	frame.n_ended = n_ended;
	frame.planner_runs = runs;
	report = jobs_report(&doc, sizes, n_sizes, pool_of, (enum alloc_objective)objective, &r, best_thr, rj, &frame);
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
	free(pfirst);
	free(masked);
	free(keep);
	free(ended);
	free(text);
	cJSON_free(out);
	cJSON_Delete(report);
	allocate_current_release(&cur);
	allocate_current_release(&cache);
	alloc_result_release(&r);
	alloc_result_release(&best_r);
	jobs_doc_release(&doc);
	for (p = 0; p < n_pools; p++) {
		free(pools[p].drained);
		free(pools[p].node_map);
		if (pools[p].have_logical)
			cluster_release(&pools[p].logical);
		if (pools[p].have_cluster)
			cluster_release(&pools[p].cluster);
	}
	return status;
}
