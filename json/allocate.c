/*
 * allocate.c - the allocation engine (allocate.h, docs/allocation.md): pools
 * and their sizes, the curves (reused from earlier reports wherever the slice
 * of the pool is the same, shared between jobs that plan alike, the rest
 * planned by the caller's planner), the exact allocation (core/alloc.c), the
 * placement on each pool's nodes and the report (jobs.c).
 *
 * Never: print, exit, read files, keep state.
 */
#include "allocate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jdec_int.h"
#include "jdecode.h"
#include "jencode.h"

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

/* An earlier report (borrowed, duplicated into cur) given as `what` ("current" or "curves"). */
static uniap_code allocate_load_current(const cJSON *report, const char *what, struct allocate_current *cur,
                                        struct uniap_err *err)
{
	const cJSON *sz, *pools, *it;
	uniap_code rc;

	if (!(cur->root = cJSON_Duplicate(report, 1)))
		return err_set(err, UNIAP_E_NOMEM, "%s: out of memory", what);
	sz = cJSON_GetObjectItemCaseSensitive(cur->root, "sizes");
	cur->jobs = cJSON_GetObjectItemCaseSensitive(cur->root, "jobs");
	pools = cJSON_GetObjectItemCaseSensitive(cur->root, "pools");
	if (!cJSON_IsArray(sz) || !cJSON_IsArray(cur->jobs))
		return err_set(err, UNIAP_E_INVALID, "%s: must be a report of uniap allocate (sizes, jobs, cluster or "
		               "pools)", what);
	if (!pools) {
		const cJSON *cl = cJSON_GetObjectItemCaseSensitive(cur->root, "cluster");
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(cl, "name");

		return allocate_load_pool(sz, cl, cJSON_IsString(nm) ? nm->valuestring : "", what, cur, err);
	}
	/* several pools: their sizes are the report's, in turn */
	cJSON_ArrayForEach(it, pools) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
		const cJSON *first = cJSON_GetObjectItemCaseSensitive(it, "first_size");
		const cJSON *count = cJSON_GetObjectItemCaseSensitive(it, "sizes_count");
		cJSON *part;
		char p[48];
		int i;

		snprintf(p, sizeof(p), "%s.pools[%zu]", what, cur->n_pools);
		if (cur->n_pools >= ALLOC_MAX_POOLS || !cJSON_IsString(nm) || !cJSON_IsNumber(first) ||
		    !cJSON_IsNumber(count) || first->valuedouble != (double)cur->n_sizes || count->valuedouble < 1 ||
		    count->valuedouble > ALLOC_MAX_SIZES || first->valuedouble + count->valuedouble > cJSON_GetArraySize(sz))
			return err_set(err, UNIAP_E_INVALID, "%s: must be a pool of a report of uniap allocate (name, "
			               "first_size, sizes_count, cluster; at most %d pools)", p, ALLOC_MAX_POOLS);
		if (!(part = cJSON_CreateArray()))
			return err_set(err, UNIAP_E_NOMEM, "%s: out of memory", what);
		for (i = (int)first->valuedouble; i < (int)(first->valuedouble + count->valuedouble); i++) {
			const cJSON *x = cJSON_GetArrayItem(sz, i);

			cJSON_AddItemToArray(part, cJSON_IsNumber(x) ? cJSON_CreateNumber(x->valuedouble) : cJSON_CreateNull());
		}
		rc = allocate_load_pool(part, cJSON_GetObjectItemCaseSensitive(it, "cluster"), nm->valuestring, p, cur, err);
		cJSON_Delete(part);
		if (rc != UNIAP_OK)
			return rc;
	}
	if (cur->n_pools == 0 || cur->n_sizes != (size_t)cJSON_GetArraySize(sz))
		return err_set(err, UNIAP_E_INVALID, "%s.pools: must cover the report's sizes", what);
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
		                                    "deadline_s", "tenant" };
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

/* A pool of the allocation: one cluster given. */
struct allocate_pool {
	const struct cluster_profile *cluster; /* as given (borrowed) */
	struct cluster_profile logical;  /* its nodes in service, as a cluster of their own */
	int have_logical;
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
				if (strlen(pools[q].cluster->name) == len && strncmp(pools[q].cluster->name, p, len) == 0)
					break;
			if (q == n_pools && e2 == colon && idx >= 0 && (size_t)idx < n_pools)
				q = (size_t)idx;
			if (q == n_pools)
				return err_set(err, UNIAP_E_ARG, "drain: no pool named \"%.*s\" (a cluster's name or its "
				               "0-based index)", (int)(len > 64 ? 64 : len), p);
			pool = q;
			p = colon + 1;
		} else if (n_pools > 1) {
			return err_set(err, UNIAP_E_ARG, "drain: with several clusters each node is POOL:NODE, got \"%.64s\"",
			               arg);
		}
		v = strtol(p, &end, 10);
		if (end == p || v < 0 || v >= pools[pool].cluster->nodes || (*end && *end != ','))
			return err_set(err, UNIAP_E_ARG, "drain: must be node indices 0 .. %d of %s, comma-separated, got "
			               "\"%.64s\"", pools[pool].cluster->nodes - 1, pools[pool].cluster->name, arg);
		for (k = 0; k < pools[pool].n_drained; k++)
			if (pools[pool].drained[k] == (int)v)
				return err_set(err, UNIAP_E_ARG, "drain: node %ld of %s is listed twice", v,
				               pools[pool].cluster->name);
		pools[pool].drained[pools[pool].n_drained++] = (int)v;
		if (pools[pool].n_drained >= (size_t)pools[pool].cluster->nodes)
			return err_set(err, UNIAP_E_ARG, "drain: must leave at least one of the %d nodes of %s, got \"%.64s\"",
			               pools[pool].cluster->nodes, pools[pool].cluster->name, arg);
		p = *end ? end + 1 : end;
	}
	return UNIAP_OK;
}


/* What names curve point (job j, devices of cluster) for the point cache: owned text, NULL out of memory. */
static char *allocate_point_what(const cJSON *key, const struct cluster_profile *slice)
{
	cJSON *o = cJSON_CreateObject(), *c = jenc_cluster(slice);
	char *text = NULL;

	/* a slice's name says where it was cut from, not what it is */
	if (c)
		cJSON_DeleteItemFromObjectCaseSensitive(c, "name");
	if (o && c && cJSON_AddItemToObject(o, "job", cJSON_Duplicate(key, 1)) && cJSON_AddItemToObject(o, "slice", c)) {
		c = NULL;
		text = cJSON_PrintUnformatted(o);
	}
	cJSON_Delete(c);
	cJSON_Delete(o);
	return text;
}

/*
 * A curve point: samples/s (0: nothing fits) and its plan (owned, NULL without
 * one), from the point cache when it has it (*cached 1), else planned (and put
 * in the cache unless the request cut the run short).
 */
static uniap_code allocate_curve_point(const struct allocate_request *rq, const struct cluster_profile *cluster,
                                       size_t j, const cJSON *key, int devices, double *thr, cJSON **plan,
                                       int *cached, struct uniap_err *err)
{
	const struct jobs_job *jb = &rq->doc->jobs[j];
	struct cluster_profile slice;
	struct uop_options o;
	struct uop_result r;
	char *what = NULL;
	int proven = 0;
	uniap_code rc;

	*thr = 0;
	*plan = NULL;
	*cached = 0;
	rc = cluster_slice(cluster, devices, &slice, err);
	if (rc != UNIAP_OK)
		return rc;
	if (rq->point_get && (what = allocate_point_what(key, &slice)) && rq->point_get(rq->cache_ctx, what, thr, plan)) {
		*cached = 1;
		free(what);
		cluster_release(&slice);
		return UNIAP_OK;
	}
	uop_options_init(&o);
	o.batch = jb->batch;
	o.schedule = jb->schedule;
	o.recompute = jb->recompute;
	o.zero = jb->zero;
	o.sp = jb->sp;
	o.selective = jb->selective;
	o.fp8 = jb->fp8;
	memset(&r, 0, sizeof(r));
	rc = rq->plan(rq->plan_ctx, &slice, &rq->doc->models[jb->model], &o, &r, err);
	if (rc == UNIAP_OK && r.best >= 0 && r.eval.tpi_s > 0) {
		*thr = (double)jb->batch / r.eval.tpi_s;
		*plan = jenc_plan(&r.cand, r.stage, r.strategy, &r.eval);
		if (!*plan)
			rc = err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
		/* the answer at this time limit (the cache's key has it), unless a stop, a deadline or
		 * a budget of this request cut it short */
		proven = !r.stopped && !r.deadline_passed && !r.budget_spent;
	} else if (rc == UNIAP_OK) {
		/* nothing fits: likewise */
		proven = !r.stopped && !r.deadline_passed && !r.budget_spent;
	} else if (rc == UNIAP_E_ARG || rc == UNIAP_E_INFEASIBLE) {
		/* a batch this size cannot split, an option it cannot run: no plan here */
		err_clear(err);
		rc = UNIAP_OK;
		proven = 1;
	}
	if (rc == UNIAP_OK && proven && rq->point_put && (what || (what = allocate_point_what(key, &slice))))
		rq->point_put(rq->cache_ctx, what, *thr, *plan);
	free(what);
	uop_result_release(&r);
	cluster_release(&slice);
	return rc;
}

/* The state allocate_run and allocate_check share: the pools, their sizes, the earlier reports. */
struct allocate_setup {
	struct allocate_pool pools[ALLOC_MAX_POOLS];
	int sizes[ALLOC_MAX_SIZES * ALLOC_MAX_POOLS], pool_of[ALLOC_MAX_SIZES * ALLOC_MAX_POOLS];
	int pool_devices[ALLOC_MAX_POOLS];
	size_t n_sizes;
	struct allocate_current cur, cache;
};

static void allocate_setup_release(struct allocate_setup *su, size_t n_pools)
{
	size_t p;

	allocate_current_release(&su->cur);
	allocate_current_release(&su->cache);
	for (p = 0; p < n_pools && p < ALLOC_MAX_POOLS; p++) {
		free(su->pools[p].drained);
		free(su->pools[p].node_map);
		if (su->pools[p].have_logical)
			cluster_release(&su->pools[p].logical);
	}
}

/* Pools (names, drained nodes, sizes) and earlier reports; the caller releases su either way. */
static uniap_code allocate_setup(const struct allocate_request *rq, struct allocate_setup *su, struct uniap_err *err)
{
	struct allocate_pool *pools = su->pools;
	struct allocate_current *cur = &su->cur, *cache = &su->cache;
	int *sizes = su->sizes, *pool_of = su->pool_of, *pool_devices = su->pool_devices, i;
	size_t *n_sizes = &su->n_sizes, n_pools = rq->n_pools, p, q, k;
	uniap_code rc = UNIAP_OK;

	if (n_pools < 1 || n_pools > ALLOC_MAX_POOLS)
		return err_set(err, UNIAP_E_ARG, "clusters: must be 1 to %d pools, got %zu", ALLOC_MAX_POOLS, n_pools);
	/* the pools: each cluster given, its nodes in service, its sizes */
	for (p = 0; p < n_pools; p++) {
		struct allocate_pool *pl = &pools[p];

		pl->cluster = &rq->clusters[p];
		for (q = 0; q < p; q++)
			if (strcmp(pools[q].cluster->name, pl->cluster->name) == 0) {
				rc = err_set(err, UNIAP_E_ARG, "clusters: two are named \"%.64s\"; a pool is known by its "
				             "cluster's name", pl->cluster->name);
				goto out;
			}
		pl->drained = calloc((size_t)pl->cluster->nodes, sizeof(*pl->drained));
		pl->node_map = calloc((size_t)pl->cluster->nodes, sizeof(*pl->node_map));
		if (!pl->drained || !pl->node_map) {
			rc = err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
			goto out;
		}
	}
	if (rq->drain && (rc = allocate_parse_drain(rq->drain, pools, n_pools, err)) != UNIAP_OK)
		goto out;
	for (p = 0; p < n_pools; p++) {
		struct allocate_pool *pl = &pools[p];
		size_t got;

		for (i = 0, q = 0; i < pl->cluster->nodes; i++) {
			for (k = 0; k < pl->n_drained && pl->drained[k] != i; k++)
				;
			if (k == pl->n_drained)
				pl->node_map[q++] = i;
		}
		rc = cluster_slice(pl->cluster, (int)q * pl->cluster->devices_per_node, &pl->logical, err);
		if (rc != UNIAP_OK)
			goto out;
		pl->have_logical = 1;
		pl->first = *n_sizes;
		got = alloc_sizes(pl->logical.nodes, pl->logical.devices_per_node, sizes + *n_sizes, ALLOC_MAX_SIZES);
		if (got == 0) {
			rc = err_set(err, UNIAP_E_LIMIT, "cluster %s: more than %d allocation sizes (%d nodes)",
			             pl->cluster->name, ALLOC_MAX_SIZES, pl->logical.nodes);
			goto out;
		}
		for (k = *n_sizes; k < *n_sizes + got; k++)
			pool_of[k] = (int)p;
		pl->n_sizes = got;
		*n_sizes += got;
		pool_devices[p] = cluster_devices(&pl->logical);
	}
	if (rq->current && (rc = allocate_load_current(rq->current, "current", cur, err)) != UNIAP_OK)
		goto out;
	if (rq->curves && (rc = allocate_load_current(rq->curves, "curves", cache, err)) != UNIAP_OK)
		goto out;
out:
	return rc;
}

uniap_code allocate_check(const struct allocate_request *rq, struct uniap_err *err)
{
	struct allocate_setup *su = calloc(1, sizeof(*su));
	uniap_code rc;

	if (!su)
		return err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
	rc = allocate_setup(rq, su, err);
	allocate_setup_release(su, rq->n_pools);
	free(su);
	return rc;
}

uniap_code allocate_run(const struct allocate_request *rq, cJSON **report, struct uniap_err *err)
{
	const struct jobs_doc *doc = rq->doc;
	struct allocate_setup *su = calloc(1, sizeof(*su));
	struct allocate_pool *pools = su ? su->pools : NULL;
	struct jobs_report_pool rpools[ALLOC_MAX_POOLS];
	struct alloc_pools ap;
	struct allocate_current *cur = su ? &su->cur : NULL, *cache = su ? &su->cache : NULL;
	struct alloc_job *aj = NULL;
	struct jobs_report_job *rj = NULL;
	struct jobs_report_frame frame;
	struct alloc_result r, best_r;
	double *thr = NULL, best_thr = 0;
	cJSON **plans = NULL, **keys = NULL;
	const char **ended = NULL;
	int *sizes = su ? su->sizes : NULL, *pool_of = su ? su->pool_of : NULL;
	int *first = NULL, *keep = NULL, *pfirst = NULL, *masked = NULL, stopped = 0;
	unsigned char *reuse = NULL;
	long runs = 0, from_cache = 0;
	size_t n_sizes = 0, n_pools = rq->n_pools, n_ended = 0, j, k, q, p, done = 0, total = 0, unplanned = 0;
	uniap_code rc = UNIAP_OK;

	*report = NULL;
	memset(rpools, 0, sizeof(rpools));
	memset(&r, 0, sizeof(r));
	memset(&best_r, 0, sizeof(best_r));
	memset(&frame, 0, sizeof(frame));
	if (!su)
		return err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
	if (!rq->plan) {
		free(su);
		return err_set(err, UNIAP_E_ARG, "allocate_run: no planner");
	}
	if ((rc = allocate_setup(rq, su, err)) != UNIAP_OK)
		goto out;
	n_sizes = su->n_sizes;
	thr = calloc(doc->n_jobs * n_sizes, sizeof(*thr));
	plans = calloc(doc->n_jobs * n_sizes, sizeof(*plans));
	reuse = calloc(doc->n_jobs * n_sizes, 1);
	keys = calloc(doc->n_jobs, sizeof(*keys));
	aj = calloc(doc->n_jobs, sizeof(*aj));
	rj = calloc(doc->n_jobs, sizeof(*rj));
	first = calloc(doc->n_jobs, sizeof(*first));
	pfirst = calloc(doc->n_jobs, sizeof(*pfirst));
	masked = calloc(doc->n_jobs, sizeof(*masked));
	keep = calloc(doc->n_jobs, sizeof(*keep));
	ended = calloc(cur->jobs ? (size_t)cJSON_GetArraySize(cur->jobs) + 1 : 1, sizeof(*ended));
	if (!thr || !plans || !reuse || !keys || !aj || !rj || !first || !pfirst || !masked || !keep || !ended) {
		rc = err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
		goto out;
	}
	/* what a job's curve depends on: its spec without name, weight, bounds, samples and deadline */
	for (j = 0; j < doc->n_jobs; j++) {
		if (!(keys[j] = allocate_key(doc->jobs[j].spec))) {
			rc = err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
			goto out;
		}
		for (k = 0; k < n_sizes; k++)
			total += sizes[k] >= doc->jobs[j].min_devices &&
			         (doc->jobs[j].max_devices <= 0 || sizes[k] <= doc->jobs[j].max_devices);
	}
	/* which sizes carry over from the current allocation and the cache: the same slice of the pool */
	for (p = 0; p < n_pools; p++) {
		const struct allocate_src_pool *cp = allocate_src_pool(cur, pools[p].cluster->name, n_pools);
		const struct allocate_src_pool *hp = allocate_src_pool(cache, pools[p].cluster->name, n_pools);

		for (k = 0; k < pools[p].n_sizes; k++) {
			int s = sizes[pools[p].first + k];

			pools[p].same_slice[k] = cp && cp->have_cluster && allocate_same_slice(&cp->cluster, &pools[p].logical, s);
			pools[p].cache_slice[k] = hp && hp->have_cluster && allocate_same_slice(&hp->cluster, &pools[p].logical, s);
		}
	}
	/* the curves: the planner on every size each job may take, unless an earlier report has it */
	for (j = 0; j < doc->n_jobs; j++) {
		const struct jobs_job *jb = &doc->jobs[j];
		const cJSON *old = allocate_current_job(cur, jb->name);
		const cJSON *spec = old ? cJSON_GetObjectItemCaseSensitive(old, "spec") : NULL;
		const cJSON *curve = old ? cJSON_GetObjectItemCaseSensitive(old, "curve") : NULL;
		const cJSON *opool = old ? cJSON_GetObjectItemCaseSensitive(old, "pool") : NULL;
		int same = spec && jb->spec && cJSON_Compare(spec, jb->spec, 1) && cJSON_IsArray(curve) &&
		           (size_t)cJSON_GetArraySize(curve) == cur->n_sizes;
		int prev = old ? allocate_int(old, "devices", 0) : 0;
		const cJSON *by_key = same ? NULL : allocate_curve_by_key(cur, keys[j]);
		const cJSON *cached = allocate_curve_by_key(cache, keys[j]);
		/* the pool it runs on: named in a report of several pools, the only one otherwise */
		const char *prev_pool = cJSON_IsString(opool) ? opool->valuestring
		                        : cur->n_pools == 1 ? cur->pools[0].name : NULL;

		aj[j].current = -1;
		rj[j].previous_devices = prev > 0 ? prev : -1;
		rj[j].previous_first_device = prev > 0 ? allocate_int(old, "first_device", -1) : -1;
		rj[j].previous_pool = prev > 0 ? prev_pool : NULL;
		for (k = 0; k < n_sizes; k++) {
			struct allocate_pool *pl = &pools[pool_of[k]];
			const struct allocate_src_pool *cp = allocate_src_pool(cur, pl->cluster->name, n_pools);
			const struct allocate_src_pool *hp = allocate_src_pool(cache, pl->cluster->name, n_pools);
			size_t kp = k - pl->first; /* the size's index in its pool */
			int here = prev > 0 && prev_pool && cp && strcmp(cp->name, prev_pool) == 0, planned = 0;

			if (here && sizes[k] == prev)
				aj[j].current = (int)k;
			if (sizes[k] < jb->min_devices || (jb->max_devices > 0 && sizes[k] > jb->max_devices))
				continue;
			if (same && allocate_point(cp, curve, pl->same_slice, kp, sizes[k], &thr[j * n_sizes + k])) {
				/* the job itself in the current allocation (its curve, and its plan where it stays) */
				reuse[j * n_sizes + k] = 1;
				if (here && prev == sizes[k] && thr[j * n_sizes + k] > 0) {
					const cJSON *pl_doc = cJSON_GetObjectItemCaseSensitive(old, "plan");

					if (cJSON_IsObject(pl_doc) && !(plans[j * n_sizes + k] = cJSON_Duplicate(pl_doc, 1))) {
						rc = err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
						goto out;
					}
				}
			} else if (allocate_point(cp, by_key, pl->same_slice, kp, sizes[k], &thr[j * n_sizes + k]) ||
			           allocate_point(hp, cached, pl->cache_slice, kp, sizes[k], &thr[j * n_sizes + k])) {
				/* another job of the current allocation, or of the curves cache, that plans alike */
				reuse[j * n_sizes + k] = 1;
			} else {
				/* an earlier job of the same model, batch and options has this point: share it */
				for (q = 0; q < j && !(reuse[q * n_sizes + k] && cJSON_Compare(keys[q], keys[j], 1)); q++)
					;
				if (q < j) {
					thr[j * n_sizes + k] = thr[q * n_sizes + k];
					reuse[j * n_sizes + k] = 1;
					if (plans[q * n_sizes + k] &&
					    !(plans[j * n_sizes + k] = cJSON_Duplicate(plans[q * n_sizes + k], 1))) {
						rc = err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
						goto out;
					}
				} else if (stopped || (rq->stopped && (stopped = rq->stopped(rq->stopped_ctx)) != 0)) {
					/* stopped: no more planner runs; the point has no plan, and the report says so */
					unplanned++;
				} else {
					int hit = 0;

					reuse[j * n_sizes + k] = 1;
					rc = allocate_curve_point(rq, &pl->logical, j, keys[j], sizes[k], &thr[j * n_sizes + k],
					                          &plans[j * n_sizes + k], &hit, err);
					planned = !hit;
					runs += !hit;
					from_cache += hit;
					if (rc != UNIAP_OK) {
						if (n_pools > 1)
							err_prefix(err, "jobs[%zu] (%s) on %d devices of %s", j, jb->name, sizes[k],
							           pl->cluster->name);
						else
							err_prefix(err, "jobs[%zu] (%s) on %d devices", j, jb->name, sizes[k]);
						goto out;
					}
				}
			}
			done++;
			if (rq->progress)
				rq->progress(rq->progress_ctx, done, total, jb->name, pl->cluster->name, sizes[k], planned,
				             thr[j * n_sizes + k]);
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
	ap.devices = su->pool_devices;
	ap.pool_of = pool_of;
	rc = alloc_solve_pools(aj, doc->n_jobs, sizes, n_sizes, &ap, rq->objective, cur->root ? rq->restart_cost : 0, &r,
	                       err);
	if (rc != UNIAP_OK)
		goto out;
	/* the price of fairness: against the throughput objective's optimum (the same restart costs) */
	if (rq->objective != ALLOC_THROUGHPUT &&
	    alloc_solve_pools(aj, doc->n_jobs, sizes, n_sizes, &ap, ALLOC_THROUGHPUT, cur->root ? rq->restart_cost : 0,
	                      &best_r, err) == UNIAP_OK)
		best_thr = best_r.objective;
	err_clear(err);
	/* the plans of the sizes chosen whose curve point carried over without its plan */
	for (j = 0; j < doc->n_jobs; j++) {
		int kk = r.size_index[j];

		if (kk < 0 || plans[j * n_sizes + (size_t)kk] || rq->no_plans ||
		    stopped || (rq->stopped && (stopped = rq->stopped(rq->stopped_ctx)) != 0))
			continue;
		{
			int hit = 0;

			rc = allocate_curve_point(rq, &pools[pool_of[kk]].logical, j, keys[j], sizes[kk],
			                          &thr[j * n_sizes + (size_t)kk], &plans[j * n_sizes + (size_t)kk], &hit, err);
			runs += !hit;
			from_cache += hit;
		}
		if (rc != UNIAP_OK) {
			err_prefix(err, "jobs[%zu] (%s) on %d devices", j, doc->jobs[j].name, sizes[kk]);
			goto out;
		}
	}
	/* a job that keeps its pool and size stays on its devices where they are still in service */
	for (j = 0; j < doc->n_jobs; j++) {
		int kk = r.size_index[j], pf = rj[j].previous_first_device, node;
		struct allocate_pool *pl = kk >= 0 ? &pools[pool_of[kk]] : NULL;

		keep[j] = -1;
		if (!pl || rj[j].previous_devices != sizes[kk] || pf < 0 || !rj[j].previous_pool ||
		    (n_pools > 1 && strcmp(rj[j].previous_pool, pl->cluster->name) != 0))
			continue;
		node = pf / pl->cluster->devices_per_node;
		for (q = 0; q < (size_t)pl->logical.nodes && pl->node_map[q] != node; q++)
			;
		/* whole nodes stay only when none of them was drained: their last one is still the
		 * same distance from the first */
		if (q < (size_t)pl->logical.nodes) {
			int span = sizes[kk] / pl->cluster->devices_per_node;

			if (span <= 1 || (q + (size_t)span <= (size_t)pl->logical.nodes &&
			                  pl->node_map[q + (size_t)span - 1] == node + span - 1))
				keep[j] = (int)q * pl->cluster->devices_per_node + pf % pl->cluster->devices_per_node;
		}
	}
	/* each pool's jobs on its nodes */
	for (j = 0; j < doc->n_jobs; j++)
		first[j] = -1;
	for (p = 0; p < n_pools; p++) {
		struct alloc_result m = r;

		m.size_index = masked;
		for (j = 0; j < doc->n_jobs; j++)
			masked[j] = r.size_index[j] >= 0 && (size_t)pool_of[r.size_index[j]] == p ? r.size_index[j] : -1;
		if (alloc_place(&m, doc->n_jobs, sizes, pools[p].logical.nodes, pools[p].logical.devices_per_node, keep,
		                pfirst) < 0) {
			rc = err_set(err, UNIAP_E_INTERNAL, "allocate: the allocation does not fit the nodes of %s",
			             pools[p].cluster->name);
			goto out;
		}
		for (j = 0; j < doc->n_jobs; j++)
			if (masked[j] >= 0)
				first[j] = pfirst[j];
	}
	for (j = 0; j < doc->n_jobs; j++) {
		rj[j].curve = thr + j * n_sizes;
		rj[j].plan = r.size_index[j] >= 0 ? plans[j * n_sizes + (size_t)r.size_index[j]] : NULL;
		rj[j].first_device = first[j];
	}
	/* the jobs of the current allocation that are gone */
	if (cur->jobs) {
		const cJSON *it;

		cJSON_ArrayForEach(it, cur->jobs) {
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");

			for (j = 0; cJSON_IsString(n) && j < doc->n_jobs && strcmp(doc->jobs[j].name, n->valuestring) != 0; j++)
				;
			if (cJSON_IsString(n) && j == doc->n_jobs)
				ended[n_ended++] = n->valuestring;
		}
	}
	for (p = 0; p < n_pools; p++) {
		rpools[p].name = pools[p].cluster->name;
		rpools[p].cluster = pools[p].cluster;
		rpools[p].node_map = pools[p].node_map;
		rpools[p].drained = pools[p].drained;
		rpools[p].n_drained = pools[p].n_drained;
		rpools[p].first = pools[p].first;
		rpools[p].n_sizes = pools[p].n_sizes;
	}
	frame.pools = rpools;
	frame.n_pools = n_pools;
	frame.replanning = cur->root != NULL;
	frame.ended = ended;
	frame.n_ended = n_ended;
	frame.planner_runs = runs;
	frame.cached_points = rq->point_get ? from_cache : -1;
	frame.stopped = stopped;
	frame.unplanned_points = unplanned;
	*report = jobs_report(doc, sizes, n_sizes, pool_of, rq->objective, &r, best_thr, rj, &frame);
	if (!*report)
		rc = err_set(err, UNIAP_E_NOMEM, "allocate: out of memory");
out:
	for (j = 0; plans && j < doc->n_jobs * n_sizes; j++)
		cJSON_Delete(plans[j]);
	free(plans);
	for (j = 0; keys && j < doc->n_jobs; j++)
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
	alloc_result_release(&r);
	alloc_result_release(&best_r);
	allocate_setup_release(su, n_pools);
	free(su);
	return rc;
}

uniap_code allocate_options_json(const cJSON *obj, const char *path, double max_time_limit_s,
                                 struct allocate_options *o, struct uniap_err *err)
{
	static const char *const objectives[ALLOC_OBJECTIVE_COUNT] = { "throughput", "fair", "deadline", "missed" };
	const cJSON *v;
	char p[JDEC_PATH_MAX];
	int x = 0;
	uniap_code rc;

	memset(o, 0, sizeof(*o));
	o->objective = ALLOC_THROUGHPUT;
	rc = jdec_get(obj, "objective", path, 0, p, &v, err);
	if (rc == UNIAP_OK && v && (rc = jdec_enum_value(v, p, objectives, ALLOC_OBJECTIVE_COUNT, &x, err)) == UNIAP_OK)
		o->objective = (enum alloc_objective)x;
	if (rc == UNIAP_OK)
		rc = jdec_num(obj, "restart_cost", path, 0, 0.05, 0, 1e6, &o->restart_cost, err);
	if (rc == UNIAP_OK)
		rc = jdec_get(obj, "drain", path, 0, p, &v, err);
	if (rc == UNIAP_OK && v)
		rc = jdec_str_value(v, p, 1, 4096, &o->drain, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(obj, "no_plans", path, 0, &o->no_plans, err);
	if (rc == UNIAP_OK)
		rc = jdec_num(obj, "time_limit_s", path, 0, 10, 0.001, max_time_limit_s > 0 ? max_time_limit_s : 86400,
		              &o->time_limit_s, err);
	return rc;
}
