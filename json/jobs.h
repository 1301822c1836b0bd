/*
 * jobs.h - the jobs document of `uniap allocate` (schema/jobs.schema.json,
 * docs/allocation.md): the training jobs that share one cluster, each a model
 * (a catalog name or an inline model document), a global batch, a weight,
 * optional minimum and maximum devices, samples to go, and the planner's
 * options for it; and the allocation report.
 *
 * Never: print, exit, read files, keep state.
 */
#ifndef UNIAP_JOBS_H
#define UNIAP_JOBS_H

#include <stddef.h>

#include "alloc.h"
#include "cost.h"
#include "err.h"
#include "model.h"

struct cJSON;

struct jobs_job {
	char *name;               /* owned, unique in the document */
	char *tenant;             /* owned: the tenant whose job it is in a shared allocation; NULL: the owner's */
	size_t model;             /* index into jobs_doc.models */
	long batch;               /* global batch, >= 1 */
	double weight;            /* > 0, default 1 */
	long min_devices;         /* 0: may get nothing (the throughput objective) */
	long max_devices;         /* 0: no cap */
	double samples;           /* samples to go; 0 when not given */
	double deadline_s;        /* seconds from now to finish by (the missed objective); 0: none */
	enum cost_schedule schedule; /* default gpipe, as uniap plan */
	int recompute, zero, sp, selective, fp8;
	struct cJSON *spec;       /* owned: the job's object as given (re-planning compares it) */
};

struct jobs_doc {
	struct jobs_job *jobs;
	size_t n_jobs;
	struct model_profile *models; /* owned, one per job */
	size_t n_models;
};

/* Decodes a jobs document; UNIAP_E_INVALID naming the field (duplicate names
 * included), UNIAP_E_MALFORMED for bad JSON.  Release with jobs_doc_release. */
uniap_code jobs_decode(const char *text, size_t len, struct jobs_doc *out, struct uniap_err *err);
void jobs_doc_release(struct jobs_doc *d);

/* What the report says of one job (all borrowed). */
struct jobs_report_job {
	const double *curve;      /* [n_sizes] samples/s, 0 where no plan fits (written null) */
	const struct cJSON *plan; /* the plan document at the chosen size, or NULL */
	int first_device;         /* -1: nothing; on the cluster without its drained nodes */
	int previous_devices;     /* re-planning: what it ran on before; -1: it did not run */
	int previous_first_device;/* ... and where (physical, in its pool), -1: nowhere */
	const char *previous_pool;/* ... and in which pool (NULL: unknown or one pool) */
};

/* One pool of the report: a cluster given to the allocation (all borrowed). */
struct jobs_report_pool {
	const char *name;         /* the pool's name (its cluster's) */
	const struct cluster_profile *cluster; /* as given (written whole) */
	const int *node_map;      /* [nodes left]: each node of the pool's allocation cluster -> the
	                             cluster's node (the drained ones skipped) */
	const int *drained;       /* the drained nodes, n_drained of them */
	size_t n_drained;
	size_t first, n_sizes;    /* its sizes in the allocation's size list */
};

/* The report's frame: the pools and what happened to them (all borrowed). */
struct jobs_report_frame {
	const struct jobs_report_pool *pools; /* the pools, n_pools (1 .. ALLOC_MAX_POOLS) */
	size_t n_pools;
	int replanning;           /* a --current allocation was given: moves are reported */
	const char *const *ended; /* jobs of the current allocation that are gone, n_ended */
	size_t n_ended;
	long planner_runs;        /* planner runs this allocation needed (the rest reused) */
	long cached_points;       /* curve points from the caller's point cache; -1: it had none */
	int stopped;              /* planning was stopped: unplanned_points curve points have no plan */
	size_t unplanned_points;
};

/*
 * The allocation report: objective and its value, the throughput value, the
 * price of fairness (when best_throughput > 0: 1 - this allocation's
 * throughput value / the throughput objective's optimum), the sizes (every
 * pool's in turn; pool_of[k] the pool of size k), the cluster (one pool) or
 * the pools (several: each one's name, devices, devices used, sizes, drained
 * nodes and cluster), and per job its pool (several), devices, nodes,
 * throughput, normalised throughput, finish time (when it has samples to go),
 * whether it meets its deadline (when it has one), curve, plan and spec; when
 * re-planning, whether it moves and from where, and the jobs that ended.
 * Devices and nodes are the pool's own (its node_map).  Returns an owned
 * object, NULL on out of memory.
 */
struct cJSON *jobs_report(const struct jobs_doc *d, const int *sizes, size_t n_sizes, const int *pool_of,
                          enum alloc_objective objective, const struct alloc_result *r, double best_throughput,
                          const struct jobs_report_job *jobs, const struct jobs_report_frame *frame);

/*
 * A shared allocation as tenant (borrowed; NULL: nobody's) may see it: a copy
 * of report (borrowed) where every job not marked with that tenant keeps where
 * it runs (pool, devices, first_device, nodes, the re-planning members) and
 * loses what it is: its name becomes "job N" (1-based), throughput, curve and
 * plan are emptied, spec goes, and "redacted" is true.  Owned; NULL on out of
 * memory.
 */
struct cJSON *jobs_report_redact(const struct cJSON *report, const char *tenant);

#endif
