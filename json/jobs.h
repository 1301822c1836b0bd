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
	size_t model;             /* index into jobs_doc.models */
	long batch;               /* global batch, >= 1 */
	double weight;            /* > 0, default 1 */
	long min_devices;         /* 0: may get nothing (the throughput objective) */
	long max_devices;         /* 0: no cap */
	double samples;           /* samples to go; 0 when not given */
	enum cost_schedule schedule; /* default gpipe, as uniap plan */
	int recompute, zero, sp, selective, fp8;
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
	int first_device;         /* -1: nothing */
};

/*
 * The allocation report: objective and its value, the throughput value, the
 * price of fairness (when best_throughput > 0: 1 - this allocation's
 * throughput value / the throughput objective's optimum), the sizes, and per
 * job its devices, nodes, throughput, normalised throughput, finish time
 * (when it has samples to go), curve and plan.  Returns an owned object,
 * NULL on out of memory.
 */
struct cJSON *jobs_report(const struct jobs_doc *d, const int *sizes, size_t n_sizes, int devices,
                          int per_node, enum alloc_objective objective, const struct alloc_result *r,
                          double best_throughput, const struct jobs_report_job *jobs);

#endif
