/*
 * calib.h - calibration: fitting a cluster profile's hardware parameters
 * (compute efficiency, level bandwidths, overlap coefficient, reserved
 * memory, ...) to measured training runs, by nonlinear least squares on
 * log(predicted / measured) iteration time with a ridge pull towards the
 * document's values (docs/calibration.md gives the objective).
 *
 * What can be fitted is a table of data (calib.c, calib_defs[]): each row
 * names a double field of struct cluster_profile or of every struct
 * cluster_level by its offset, its bounds and how they scale; adding a
 * field is one row.  A run is a plan (a struct plan_doc; calib_uniform_plan()
 * builds one from uniform degrees or a Megatron-LM argument string) with its
 * measured iteration time, per-stage peak memory and/or an out-of-memory
 * flag.  Predictions go through plan_doc_apply() (cost_build + plan_evaluate),
 * exactly what `uniap evaluate` computes.
 *
 * Thread safety: every function works on its arguments only and may run in
 * several threads at once, once calib_global_init() has run (it changes
 * GSL's process-wide error handler, so call it from main() before threads
 * start).
 *
 * Ownership: stated per prototype; inputs are borrowed.
 *
 * Never: I/O, JSON, globals (the table is constant) here.
 */
#ifndef UNIAP_CALIB_H
#define UNIAP_CALIB_H

#include <stddef.h>

#include "cost.h"
#include "err.h"
#include "model.h"
#include "plan.h"

#define CALIB_NAME_MAX 64
/* Runs one fit may use (documents carry at most this many). */
#define CALIB_MAX_RUNS 1024
/* Parameters one fit may have (table rows times hierarchy levels). */
#define CALIB_MAX_PARAMS 64
/* Ridge weight when the caller gives none: lambda of docs/calibration.md. */
#define CALIB_DEFAULT_PRIOR_WEIGHT 0.01
#define CALIB_DEFAULT_MAX_ITERATIONS 200

/* ------------------------------------------------------------ parameters */

/* Where a fitted field lives. */
enum calib_where {
	CALIB_CLUSTER = 0, /* a double of struct cluster_profile */
	CALIB_LEVEL,       /* a double of each struct cluster_level: one parameter per level */
};

/* How a row's bounds read. */
enum calib_bounds {
	CALIB_ABSOLUTE = 0, /* in the field's own unit */
	CALIB_FACTOR,       /* factors of the document's value (fitted as a scale) */
	CALIB_OF_MEMORY,    /* fractions of device.memory_bytes */
};

/* What a parameter moves: iteration times, or memory only. */
enum calib_effect {
	CALIB_TIME = 0,
	CALIB_MEMORY,
};

/* When the default selection (calib_params_default) fits a row. */
enum calib_default {
	CALIB_DEFAULT_NEVER = 0,  /* only when --fit names it */
	CALIB_DEFAULT_FLOPS,      /* some run's model takes its time from FLOPs */
	CALIB_DEFAULT_LEVEL_USED, /* per level: some run's plan communicates over the level */
	CALIB_DEFAULT_MEMORY,     /* some run measured peak memory or ran out of memory */
	CALIB_DEFAULT_MEASURED,   /* the cluster has measured tables and some run communicates */
};

/* One row of the parameter table (static; see calib_def()). */
struct calib_param_def {
	const char *name;          /* "device.compute_efficiency"; per level: the field after
	                              "hierarchy[I]." ("bandwidth") */
	enum calib_where where;
	size_t offset;             /* offsetof() the double in its struct (rows without get/set) */
	/* A field that is not one double (e.g. a scale of the measured tables):
	 * get reads it, set writes it relative to the document as given, so set
	 * is applied once to a fresh copy.  NULL for offset rows. */
	double (*get)(const struct cluster_profile *c, size_t level);
	void (*set)(struct cluster_profile *c, size_t level, double v);
	enum calib_bounds bounds;
	double lo, hi;             /* lo > 0: fitted and pulled to the prior in log space */
	enum calib_effect effect;
	enum calib_default by_default;
	const char *unit;          /* of the field: "fraction", "bytes/s", "bytes", ... */
};

/* Rows of the table, and row i (static, never freed; NULL when out of range). */
size_t calib_def_count(void);
const struct calib_param_def *calib_def(size_t i);

/* One fitted parameter of a given cluster. */
struct calib_param {
	char name[CALIB_NAME_MAX];  /* "hierarchy[1].bandwidth", "overlap_coefficient" */
	size_t def;                 /* row of the table */
	size_t level;               /* for CALIB_LEVEL rows */
	double prior;               /* the document's value (field unit) */
	double lo, hi;              /* bounds in the field unit */
	double value;               /* the fitted value (prior before a fit) */
};

/* The field a parameter names, read from / written to c (borrowed).  For a
 * row with its own setter (a scale) the write is relative to c as it is. */
double calib_param_get(const struct cluster_profile *c, const struct calib_param *p);
void calib_param_set(struct cluster_profile *c, const struct calib_param *p, double v);

/*
 * Every parameter c (borrowed, validated) offers, in table order, levels in
 * order.  On success the caller owns *out (free()), *n its length.
 */
uniap_code calib_params_all(const struct cluster_profile *c, struct calib_param **out, size_t *n,
                            struct uniap_err *err);

/*
 * The parameters named in names (borrowed, n_names entries, e.g.
 * "device.compute_efficiency", "hierarchy[0].bandwidth", or
 * "hierarchy.bandwidth" for every level), in table order, no duplicates.
 * UNIAP_E_ARG naming "--fit" and the known names for an unknown name.
 * Caller frees *out.
 */
uniap_code calib_params_select(const struct cluster_profile *c, const char *const *names, size_t n_names,
                               struct calib_param **out, size_t *n, struct uniap_err *err);

/* ------------------------------------------------------------------ runs */

/* A measured run: what ran (borrowed plan and model) and what was measured. */
struct calib_run {
	const char *name;                   /* borrowed */
	const struct model_profile *model;  /* borrowed, validated */
	const struct plan_doc *plan;        /* borrowed */
	long batch;                         /* global batch = microbatches x microbatch_size */
	double iteration_s;                 /* measured time per iteration; 0: not measured */
	const double *peak_memory_bytes;    /* borrowed, [plan->pp] measured per stage, or NULL */
	int oom;                            /* the run ran out of memory */
};

/* A prediction of one run on one cluster. */
struct calib_prediction {
	double iteration_s;          /* TPI of the plan's candidate */
	int fits;                    /* every stage within the memory limit */
	int pp;
	/* owned, [pp]: what the device holds at the stage's peak, as a memory
	 * profiler reports it: the stage's bytes with fragmentation, the
	 * reserved bytes and the FSDP transients (docs/cost-model.md, "Memory") */
	double *peak_memory_bytes;
	double capacity_bytes;       /* memory_bytes less the safety margin: a run fits when every peak is below */
	char reason[PLAN_REASON_MAX];/* why it does not fit; "" otherwise */
};

/*
 * Predicts run (borrowed) on c (borrowed, validated) with plan_doc_apply().
 * Errors name "runs[...]" only through the caller: messages start with
 * "plan".  Caller releases *out with calib_prediction_release() (also after
 * a failure).
 */
uniap_code calib_predict(const struct cluster_profile *c, const struct calib_run *run,
                         struct calib_prediction *out, struct uniap_err *err);
void calib_prediction_release(struct calib_prediction *p);

/*
 * The default parameters to fit for runs (borrowed, n_runs) on c (borrowed),
 * by each row's by_default: device.compute_efficiency when some run's model
 * gives FLOPs (it has no effect otherwise), the bandwidth of every hierarchy
 * level some run's plan communicates over (its strategies' groups, its
 * stage-to-stage transfers), and device.reserved_bytes when some run
 * measured peak memory or ran out of memory.  Caller frees *out.
 */
uniap_code calib_params_default(const struct cluster_profile *c, const struct calib_run *runs, size_t n_runs,
                                struct calib_param **out, size_t *n, struct uniap_err *err);

/* ------------------------------------------------------------------- fit */

struct calib_options {
	double prior_weight;   /* lambda >= 0; the ridge term's weight */
	int max_iterations;    /* 0: CALIB_DEFAULT_MAX_ITERATIONS */
	/* NULL, or polled with cancel_ctx (borrowed) before every evaluation of
	 * the objective (several per fit iteration) and before every
	 * leave-one-out fold, from the calling thread: nonzero stops the work
	 * with UNIAP_E_CANCELED (a caller's cancel or time limit) */
	int (*cancel)(void *cancel_ctx);
	void *cancel_ctx;
	/* NULL, or called with progress_ctx (borrowed) from the calling thread
	 * as leave-one-out starts (0 of folds) and after each of its folds */
	void (*progress)(void *progress_ctx, size_t done, size_t total);
	void *progress_ctx;
	int allow_bounds;      /* keep a fit whose parameters sit on their bounds (calib_check_bounds) */
};

struct calib_fit_info {
	double cost;           /* the objective at the solution (docs/calibration.md) */
	double cost_initial;   /* the objective at the priors */
	size_t n_residuals;    /* data residuals (time, memory, OOM hinge), ridge rows excluded */
	int iterations;
	int converged;         /* 0: stopped at max_iterations or without progress */
};

/*
 * Fits params (borrowed; n_params entries, from calib_params_*) to runs
 * (borrowed, n_runs entries; skip == i leaves run i out, -1 none) starting
 * from c (borrowed, validated), writing each params[i].value.  The cluster c
 * is not changed.  UNIAP_E_CANCELED when opt->cancel asked to stop (params
 * then hold no fitted values).  UNIAP_E_INVALID when no run measured anything usable,
 * UNIAP_E_ARG for an empty or oversize parameter list or a negative weight.
 * *info (may be NULL) is filled on success.
 */
uniap_code calib_fit(const struct cluster_profile *c, const struct calib_run *runs, size_t n_runs, long skip,
                     const struct calib_options *opt, struct calib_param *params, size_t n_params,
                     struct calib_fit_info *info, struct uniap_err *err);

/*
 * A copy of c (borrowed) with params' values set, validated.  On success the
 * caller owns *out (cluster_release()); on failure *out is zeroed.
 */
uniap_code calib_apply(const struct cluster_profile *c, const struct calib_param *params, size_t n_params,
                       struct cluster_profile *out, struct uniap_err *err);

/* Within this share of its (log, when the lower bound is > 0) range a
 * fitted parameter counts as sitting on that bound. */
#define CALIB_BOUND_SHARE 0.01

/* -1 when p's value sits on its lower bound, 1 on its upper, 0 inside. */
int calib_on_bound(const struct calib_param *p);

/*
 * UNIAP_OK when no parameter of params (borrowed) sits on a bound; else
 * UNIAP_E_INFEASIBLE naming each one with its bound and prior: a fit that
 * needs a bandwidth above its link or an efficiency at zero is explaining a
 * term the cost model lacks, and is refused (docs/calibration.md, "Bounds").
 * err may be NULL.
 */
uniap_code calib_check_bounds(const struct calib_param *params, size_t n_params, struct uniap_err *err);

/*
 * Leave-one-out: for each run i with a measured time, fits params (borrowed
 * template, not changed) on the other runs and predicts run i:
 * loo_iteration_s[i] (caller-owned, n_runs entries; 0 for runs without a
 * measured time, when the other runs leave nothing to fit, or when their fit
 * sits on a bound and opt->allow_bounds is 0).  opt->cancel
 * is polled before every fold and inside each fit (UNIAP_E_CANCELED).
 */
uniap_code calib_leave_one_out(const struct cluster_profile *c, const struct calib_run *runs, size_t n_runs,
                               const struct calib_options *opt, const struct calib_param *params,
                               size_t n_params, double *loo_iteration_s, struct uniap_err *err);

/* predicted / measured - 1; 0 when measured is not positive. */
double calib_rel_error(double predicted, double measured);

/* Turns GSL's abort-on-error handler off (process-wide): call once from main(). */
void calib_global_init(void);

/* ------------------------------------------------------- layouts to plans */

/* A uniform layout: every stage has the same degrees and every layer the same strategy. */
struct calib_uniform {
	int pp, tp, dp, fsdp;        /* dp 0: devices / (pp * tp * fsdp) */
	long microbatches;           /* 0: global batch / (micro_batch_size * dp * fsdp) */
	long micro_batch_size;       /* only when microbatches is 0 (Megatron-LM) */
	int recompute;
	int tp_inner;                /* TP on consecutive ranks (inside DP / FSDP) */
	int first_stage_layers;      /* 0: the even split */
	int last_stage_layers;       /* 0: the even split */
	int fp8;                     /* trained in FP8 (Megatron-LM --fp8-format) */
	int sp;                      /* sequence parallelism over tp (--sequence-parallel) */
	int zero;                    /* 1: the distributed optimizer (--use-distributed-optimizer) */
	int selective;               /* --recompute-granularity selective */
	int ep;                      /* expert-parallel size (--expert-model-parallel-size); 0/1: none */
	int cp;                      /* context-parallel size (--context-parallel-size); 0/1: none */
	int cp_a2a;                  /* --cp-comm-type a2a (Ulysses) */
	int etp1;                    /* --expert-tensor-parallel-size 1 with tp > 1 */
	int virtual_stages;          /* model chunks per device (--virtual-pipeline-model-parallel-size,
	                                or layers / pp / --num-layers-per-virtual-pipeline-stage); 0/1: none */
	int layers_per_chunk;        /* --num-layers-per-virtual-pipeline-stage, resolved against the model */
	int fsdp_all;                /* FSDP over every data-parallel rank (--use-torch-fsdp2,
	                                --use-megatron-fsdp): fsdp = devices / (pp x tp) */
};

/*
 * The strategy name of a uniform layout in the dictionary's spelling
 * ("tp2.dp4", "dp8+rc", "single"): used dimensions inner first, TP
 * innermost when tp_inner (then FSDP, then DP), outermost otherwise.
 */
void calib_uniform_strategy(const struct calib_uniform *u, char *buf, size_t cap);

/*
 * The plan document of layout u (borrowed) for model m (borrowed, validated)
 * on `devices` devices at global batch `batch` with schedule: layers in
 * topological order split into pp consecutive stages the way Megatron-LM
 * does (first_stage_layers / last_stage_layers when given, the rest as
 * evenly as possible by count, the first stages getting one more layer each
 * when the count does not divide).  Messages name fields of u as
 * "uniform.tp" etc.  On success the caller owns *out (plan_doc_release()).
 */
uniap_code calib_uniform_plan(const struct model_profile *m, int devices, long batch,
                              enum cost_schedule schedule, const struct calib_uniform *u,
                              struct plan_doc *out, struct uniap_err *err);

/*
 * Reads a Megatron-LM argument string (borrowed; "--name value" or
 * "--name=value"): --tensor-model-parallel-size, --pipeline-model-parallel-size,
 * --micro-batch-size, --global-batch-size, --decoder-first-pipeline-num-layers,
 * --decoder-last-pipeline-num-layers, --recompute-granularity full or
 * selective, --fp8-format, --sequence-parallel, --use-distributed-optimizer,
 * --expert-model-parallel-size, --expert-tensor-parallel-size,
 * --virtual-pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage,
 * --use-torch-fsdp2 / --use-megatron-fsdp, --context-parallel-size.  *u gets
 * the layout (dp 0, tp_inner 1), *global_batch the global batch (0 when not
 * given).  Arguments it does not read are appended to ignored (caller's
 * buffer of cap bytes, space-separated, truncated with "..."); flags without
 * a value are skipped.  UNIAP_E_INVALID names the argument.
 */
uniap_code calib_megatron_parse(const char *args, struct calib_uniform *u, long *global_batch, char *ignored,
                                size_t cap, struct uniap_err *err);

#endif
