/*
 * runs.h - the measured-runs document (schema/runs.schema.json) that
 * `uniap calibrate` fits a cluster to, decoded into structs, resolved into
 * the calib_run views of core/calib.h, and the calibration report as JSON.
 * Shared by the CLI and the service.
 *
 * Decoding checks every JSON rule (types, ranges, unknown and duplicate keys,
 * exactly one layout per run, exactly one of iteration_s / samples_per_s,
 * unique names) and names the path at fault ("runs[1].measured: give exactly
 * one of iteration_s, samples_per_s"); models given inline or by catalog name
 * are decoded / built here.  What needs the cluster (a uniform or Megatron-LM
 * layout as a plan, per-stage memory against pp) is checked by runs_resolve().
 *
 * Result codes: UNIAP_E_MALFORMED (bad JSON), UNIAP_E_INVALID (a broken
 * rule), UNIAP_E_LIMIT (caps), UNIAP_E_NOMEM, UNIAP_E_ARG (NULL arguments).
 *
 * Ownership: inputs are borrowed.  A decoded struct runs_doc is owned by the
 * caller (runs_doc_release(), also after a failure).  cJSON results are owned
 * by the caller (cJSON_Delete()).
 *
 * Never: print, exit, read files, or keep state between calls (thread-safe).
 */
#ifndef UNIAP_RUNS_H
#define UNIAP_RUNS_H

#include <stddef.h>

#include "calib.h"
#include "err.h"
#include "model.h"
#include "plan.h"

struct cJSON;

/* Bytes of the list of Megatron-LM arguments a run's string had that were not read. */
#define RUNS_IGNORED_MAX 512

enum runs_layout {
	RUNS_PLAN = 0,  /* "plan": a plan document */
	RUNS_UNIFORM,   /* "uniform": degrees */
	RUNS_MEGATRON,  /* "megatron": a Megatron-LM argument string */
};

struct runs_run {
	char *name;
	char *source;                /* may be NULL */
	long model;                  /* index into runs_doc.models; -1: the default model */
	long batch;                  /* global batch */
	enum cost_schedule schedule;
	enum runs_layout layout;
	char runtime[32];            /* the runtime it ran on (runtime.h): the run's "runtime", else the
	                                document's; "" for the default */
	struct plan_doc plan;        /* RUNS_PLAN: as decoded; otherwise built by runs_resolve() */
	struct calib_uniform uniform;/* RUNS_UNIFORM, RUNS_MEGATRON */
	char *megatron;              /* RUNS_MEGATRON: the argument string */
	char ignored_args[RUNS_IGNORED_MAX]; /* RUNS_MEGATRON: arguments not read ("" none) */
	double iteration_s;          /* measured.iteration_s, 0 when not given */
	double samples_per_s;        /* measured.samples_per_s, 0 when not given */
	double *peak_memory_bytes;   /* measured, per stage; NULL when not given */
	size_t n_peak_memory_bytes;
	int oom;
};

struct runs_doc {
	struct runs_run *runs;
	size_t n_runs;
	struct model_profile *models; /* the models the document names (inline or catalog) */
	size_t n_models;
	long default_model;           /* index of the document's "model", -1 when absent */
	char runtime[32];             /* the document's "runtime", "" when absent */
};

/* Decodes text (len bytes, need not be NUL-terminated), messages rooted at "runs". */
uniap_code runs_decode(const char *text, size_t len, struct runs_doc *out, struct uniap_err *err);

/* The same from a parsed object root; messages rooted at path (NULL: none, "runs[0]..."). */
uniap_code runs_decode_json(const struct cJSON *root, const char *path, struct runs_doc *out,
                            struct uniap_err *err);

void runs_doc_release(struct runs_doc *d);

/*
 * Builds each run's plan for cluster c (borrowed, validated) where the run
 * gives a layout, checks per-stage memory lists against pp, and fills
 * *out (new array of d->n_runs entries, free(); it borrows from d, which must
 * outlive it).  Each run's model: its own, else the document's, else
 * default_model (borrowed; may be NULL).  May be called again with another
 * cluster.
 */
uniap_code runs_resolve(struct runs_doc *d, const struct cluster_profile *c,
                        const struct model_profile *default_model, struct calib_run **out,
                        struct uniap_err *err);

/* What the report says; every pointer borrowed. */
struct runs_report_in {
	const char *cluster_name;                 /* may be NULL */
	const struct runs_doc *doc;
	const struct calib_run *runs;             /* [doc->n_runs] */
	const struct calib_prediction *datasheet; /* [n_runs]: on the input cluster */
	const struct calib_prediction *fitted;    /* [n_runs] or NULL: no fit (--predict-only) */
	const double *loo_iteration_s;            /* [n_runs] or NULL: no leave-one-out */
	const struct calib_param *params;         /* fitted parameters (with fitted != NULL) */
	size_t n_params;
	const struct calib_fit_info *info;
	double prior_weight;
	const char *refused;                      /* why the fit is refused (calib_check_bounds), or NULL */
};

/* The report documented in docs/calibration.md; NULL on out of memory. */
struct cJSON *runs_report(const struct runs_report_in *in);

/*
 * The "calibration" record of a calibrated cluster document: runs used,
 * fitted parameters, errors, date (borrowed string, "YYYY-MM-DD").  NULL on
 * out of memory.
 */
struct cJSON *runs_calibration_record(const struct runs_report_in *in, const char *date);

/* ----------------------------------------------------- one whole calibration */

/* What runs_calibrate() asks for; every pointer borrowed. */
struct runs_calibrate_in {
	const struct cluster_profile *cluster;    /* validated */
	const struct model_profile *default_model;/* may be NULL (runs_resolve) */
	const char *const *fit;                   /* parameter names, or NULL: the default selection */
	size_t n_fit;
	int leave_one_out;
	int predict_only;                         /* predictions on the cluster only: no fit */
	struct calib_options opt;                 /* prior weight, iterations, cancel hook, and a
	                                             progress hook told (fits done, fits) after the
	                                             fit and each leave-one-out fold: 1 + folds in all */
};

/* Everything one calibration holds (runs_calibrate); runs_calibration_release() frees it. */
struct runs_calibration {
	struct calib_run *runs;                   /* [doc->n_runs], borrowing from the doc */
	size_t n_runs;
	struct calib_prediction *datasheet;       /* [n_runs] on the input cluster */
	struct calib_prediction *fitted;          /* [n_runs] on the calibrated cluster; NULL: no fit */
	double *loo;                              /* [n_runs] or NULL */
	struct calib_param *params;
	size_t n_params;
	struct calib_fit_info info;
	struct cluster_profile calibrated;        /* zeroed when no fit */
	char refused[UNIAP_ERR_MSG_MAX];              /* the fit sits on a bound: why ("" otherwise); the
	                                             fitted predictions and leave-one-out are still
	                                             filled, for the report, and runs_calibrate fails */
};

/*
 * What `uniap calibrate` and the service's calibration jobs do: resolves d's
 * runs on in->cluster, predicts them, selects the parameters (in->fit, or
 * calib_params_default), fits, applies, predicts on the calibrated cluster
 * and, when asked, runs leave-one-out.  Messages name runs as "runs[i]"
 * (the caller prefixes its document); a bad in->fit name is UNIAP_E_ARG
 * naming "--fit".  UNIAP_E_CANCELED when in->opt.cancel stopped it.  *out
 * (caller's, zeroed here) is released with runs_calibration_release(), also
 * after a failure; d must outlive it.
 */
uniap_code runs_calibrate(struct runs_doc *d, const struct runs_calibrate_in *in, struct runs_calibration *out,
                          struct uniap_err *err);
void runs_calibration_release(struct runs_calibration *s);

/* The report input of a calibration (pointers into s and d, borrowed). */
struct runs_report_in runs_calibration_report_in(const struct runs_doc *d, const struct runs_calibration *s,
                                                 const char *cluster_name, double prior_weight);

/*
 * The calibrated cluster document of s (a fit, s->fitted set) with its
 * "calibration" record dated date (borrowed, "YYYY-MM-DD"); name (borrowed,
 * may be NULL) replaces the document's name.  NULL on out of memory; the
 * caller owns it (cJSON_Delete()).
 */
struct cJSON *runs_calibrated_cluster(const struct runs_doc *d, const struct runs_calibration *s,
                                      double prior_weight, const char *name, const char *date);

#endif
