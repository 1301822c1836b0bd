/*
 * allocate.h - the allocation engine behind `uniap allocate` and POST
 * /v1/allocations (docs/allocation.md): given pools (clusters, one device
 * type each), a jobs document and optionally the allocation in force and a
 * curve cache (earlier reports), it plans each job's throughput curve with the
 * caller's planner, reusing every point an earlier report has for the same
 * slice, solves the allocation exactly (core/alloc.h), places it on nodes and
 * writes the report (jobs.h).
 *
 * The planner is the caller's (allocate_plan_fn): the CLI runs uop_run with
 * its own worker pool, uniapd on its shared pool with the tenant's cost cache,
 * cancel and stop flags.  Progress and "stop planning" are callbacks too.
 *
 * Thread safety: one call per request; no globals.  Never: print, exit, read
 * files, keep state between calls.
 */
#ifndef UNIAP_ALLOCATE_H
#define UNIAP_ALLOCATE_H

#include <stddef.h>

#include "alloc.h"
#include "err.h"
#include "jobs.h"
#include "model.h"
#include "uop.h"

struct cJSON;

/*
 * Runs the planner on slice (a pool cut to one allocation size) for model
 * with opts (batch, schedule and the job's options filled in; the caller adds
 * threads, limits, pool hooks) into *out, as uop_run does.  UNIAP_E_ARG and
 * UNIAP_E_INFEASIBLE mean "no plan at this size"; any other error stops the
 * allocation (UNIAP_E_CANCELED for a canceled job).
 */
typedef uniap_code (*allocate_plan_fn)(void *ctx, const struct cluster_profile *slice,
                                       const struct model_profile *model, struct uop_options *opts,
                                       struct uop_result *out, struct uniap_err *err);

/* The options of an allocation request (uniapd's body; the CLI's flags say the same). */
struct allocate_options {
	enum alloc_objective objective; /* "objective", default throughput */
	double restart_cost;            /* "restart_cost", default 0.05 */
	const char *drain;              /* "drain", borrowed from the object; NULL: none */
	int no_plans;                   /* "no_plans", default false */
	double time_limit_s;            /* "time_limit_s": per candidate of each planner run, default 10 */
};

/*
 * Reads the options of obj (borrowed; *o borrows from it): "objective" (one
 * of alloc_objective_name's), "restart_cost" (0 .. 1e6), "drain" (1 .. 4096
 * bytes), "no_plans" (boolean), "time_limit_s" (0.001 .. max_time_limit_s;
 * <= 0: 86400).  Errors name path.KEY; other keys are the caller's to check.
 */
uniap_code allocate_options_json(const struct cJSON *obj, const char *path, double max_time_limit_s,
                                 struct allocate_options *o, struct uniap_err *err);

struct allocate_request {
	const struct cluster_profile *clusters; /* borrowed, [n_pools]: the pools as given (names differ) */
	size_t n_pools;                 /* 1 .. ALLOC_MAX_POOLS */
	const struct jobs_doc *doc;     /* borrowed */
	const char *drain;              /* nodes out of service, "3,17" or with pools "POOL:3"; NULL: none */
	const struct cJSON *current;    /* the allocation in force (a report), borrowed; NULL: none */
	const struct cJSON *curves;     /* a report whose curves are a cache, borrowed; NULL: none */
	enum alloc_objective objective;
	double restart_cost;            /* with current: a move's cost (alloc_solve) */
	int no_plans;                   /* leave out the plans of reused points (no planner run for them) */
	allocate_plan_fn plan;          /* the planner */
	void *plan_ctx;
	/* each curve point as it is settled (reused or planned): done of total so far; NULL: none */
	void (*progress)(void *ctx, size_t done, size_t total, const char *job, const char *pool, int devices,
	                 int planned, double thr);
	void *progress_ctx;
	/* 1 when the caller wants no more planner runs (stop and keep what there is): the points
	 * not planned yet count as having no plan and the report says "stopped"; NULL: never */
	int (*stopped)(void *ctx);
	void *stopped_ctx;
	/*
	 * A curve-point cache (uniapd keeps one per tenant in its cost cache); NULL: none.  what
	 * names a point: the job's planning members (its spec without name, weight, bounds,
	 * samples and deadline) and the pool cut to the size, as canonical JSON; the caller adds
	 * its own scope and limits.  get: 1 with *thr and *plan (owned by the engine; NULL: no
	 * plan there) when it knows the point.  put: after a planner run that no stop, deadline or
	 * budget of the request cut short (the planner's answer under its time limit per candidate,
	 * which the caller keys the point by).  A point from the cache is no planner run; the
	 * report counts them as cached_points.
	 */
	int (*point_get)(void *ctx, const char *what, double *thr, struct cJSON **plan);
	void (*point_put)(void *ctx, const char *what, double thr, const struct cJSON *plan);
	void *cache_ctx;
};

/*
 * Allocates: on UNIAP_OK *report is the allocation report (owned; jobs.h,
 * jobs_report).  UNIAP_E_ARG for a bad drain list or two pools of one name;
 * UNIAP_E_INVALID for a report given as current or curves that is not one
 * (the message names "current" or "curves"); UNIAP_E_INFEASIBLE, naming the
 * jobs, when the jobs that must run cannot; a planner error as it came,
 * prefixed with the job and size.
 */
uniap_code allocate_run(const struct allocate_request *rq, struct cJSON **report, struct uniap_err *err);

/*
 * What allocate_run checks before it plans anything: the pools' names, the
 * drain list and the earlier reports (the planner and the jobs are not
 * used).  uniapd refuses a request with these errors at submission.
 */
uniap_code allocate_check(const struct allocate_request *rq, struct uniap_err *err);

#endif
