/*
 * plan.h - a plan (an assignment of every layer to a stage and a strategy)
 * and its evaluation against a candidate's cost matrices with the audit
 * formula of cost.h.
 *
 * Never: search for plans here (that is the optimizer's job); no I/O.
 */
#ifndef UNIAP_PLAN_H
#define UNIAP_PLAN_H

#include <stddef.h>

#include "cost.h"
#include "err.h"

#define PLAN_REASON_MAX 256

/* The result of evaluating one assignment. */
struct plan_eval {
	int valid;                    /* stage order and non-empty stages hold */
	int fits;                     /* every stage within memory_limit_bytes */
	double tpi_s;                 /* audit-format TPI (computed even if !fits); under the makespan
	                                 objective (cost_candidate.makespan, 1F1B, pp > 1) the
	                                 iteration as run, the longest path of sched_graph_build */
	double formula_tpi_s;         /* the audit formula itself: tpi_s but under the makespan
	                                 objective, where it is the upper bound tpi_s is below */
	int pp;                       /* stages: the pipeline degree, times v when interleaved */
	int devices;                  /* pipeline devices (groups): pp / v */
	int virtual_stages;           /* v: stage i runs on device i mod devices */
	double *stage_time_s;         /* [pp]  p_i */
	double *comm_time_s;          /* [pp-1] o_j (NULL when pp == 1) */
	double *stage_memory_bytes;   /* [pp]: stage i's layers, their activations at its own peak */
	double *device_memory_bytes;  /* [devices]: the sum over each device's stages, or with peak
	                                 rows (interleaved, cost.h) their fixed sum and the device's
	                                 peak activations: what must fit */
	char reason[PLAN_REASON_MAX]; /* why !valid or !fits; "" otherwise */
};

/*
 * Evaluates the assignment stage[u] in [0, cost_stages(cand)), strategy[u] in [0, K) (both
 * borrowed, n_layers entries) on cand.  Out-of-range entries are UNIAP_E_INVALID
 * naming "layers[u]"; order/emptiness/memory violations are not errors: they
 * set valid/fits = 0 and reason.  Caller releases out with plan_eval_release().
 */
uniap_code plan_evaluate(const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                         struct plan_eval *out, struct uniap_err *err);

void plan_eval_release(struct plan_eval *e);

/*
 * A plan as the documents carry it.  Layer u is on stages[stage[u]] and uses
 * strategy_names[u]; names are resolved against a candidate's dictionary.
 */
struct plan_doc {
	int pp;
	long microbatches;
	long microbatch_size;
	long batch;             /* the global batch; 0 when the document gives none (microbatches x
	                           microbatch_size, or the caller's) */
	enum cost_schedule schedule;
	int virtual_stages;     /* interleaved: model chunks per device (>= 2); 0 or 1 otherwise.
	                           stage[u] is then in [0, pp * virtual_stages) */
	double tpi_s;
	double throughput_samples_per_s;
	char runtime[32];       /* the runtime it is priced for (runtime.h); "" for the default */
	int fp8;                /* trained in FP8 (cost_options.fp8) */
	int cp;                 /* context-parallel size (cost_options.cp); 0 or 1: none */
	int cp_a2a;             /* its all-to-all (Ulysses) variant (cost_options.cp_a2a) */
	int makespan;           /* "objective": "makespan": tpi_s is the 1F1B iteration as run
	                           (cost_options.makespan) */
	size_t n_layers;
	char **layer_names;     /* owned, [n_layers] */
	int *stage;             /* owned, [n_layers] */
	char **strategy_names;  /* owned, [n_layers] */
	int *recompute;         /* owned, [n_layers]: the plan's recompute flag per layer */
	int *zero;              /* owned, [n_layers] or NULL (all 0): the ZeRO stage per layer */
	int *sp;                /* owned, [n_layers] or NULL (all 0): sequence parallelism per layer */
	int *selective;         /* owned, [n_layers] or NULL (all 0): selective recomputation per layer */
	int *ep;                /* owned, [n_layers] or NULL (all 1): the expert-parallel size per layer */
	int *etp1;              /* owned, [n_layers] or NULL (all 0): experts not split over tp (etp 1) */
};

void plan_doc_release(struct plan_doc *p);

/* 1 if any layer of p (borrowed) uses activation checkpointing. */
int plan_doc_recompute(const struct plan_doc *p);

/* 1 if any layer of p (borrowed) uses ZeRO-1 or ZeRO-2 (its zero field, or
 * a "+z" strategy name): its dictionary needs the ZeRO variants. */
int plan_doc_zero(const struct plan_doc *p);

/* 1 if any layer of p (borrowed) uses sequence parallelism (its sp field, or
 * a "+sp" strategy name): its dictionary needs the sequence-parallel variants. */
int plan_doc_sp(const struct plan_doc *p);

/* 1 if any layer of p (borrowed) recomputes selectively (its selective
 * field, or a "+sel" strategy name). */
int plan_doc_selective(const struct plan_doc *p);

/*
 * Checks that the plan p fits the candidate cand built for it (same pp,
 * microbatches, microbatch_size, schedule; layer names equal to the
 * candidate's, in order; every strategy name in cand's dictionary with a
 * matching recompute flag) and fills stage/strategy (caller-owned, n_layers
 * entries).  UNIAP_E_INVALID names the plan path at fault ("plan.layers[3]...").
 */
uniap_code plan_doc_resolve(const struct plan_doc *p, const struct cost_candidate *cand, int *stage,
                            size_t *strategy, struct uniap_err *err);

/* A plan document applied to its candidate: the matrices, the assignment, the evaluation (all owned). */
struct plan_applied {
	struct cost_candidate cand;
	int *stage;           /* [cand.n_layers] */
	size_t *strategy;     /* [cand.n_layers] */
	struct plan_eval eval;
};

/*
 * Builds the candidate plan p (borrowed) was made for on cluster and model
 * (borrowed, validated) - p's pp, microbatches, schedule and recompute, at
 * batch (0: microbatches x microbatch_size; otherwise it must equal that) -
 * resolves p on it and evaluates it into *out (release with
 * plan_applied_release, also after a failure).  Messages start with "plan".
 */
uniap_code plan_doc_apply(const struct cluster_profile *cluster, const struct model_profile *model,
                          long batch, const struct plan_doc *p, struct plan_applied *out,
                          struct uniap_err *err);

/* plan_doc_apply with a deadline: CLOCK_MONOTONIC seconds (opt_clock_s) past which the
 * cost build gives up, UNIAP_E_LIMIT "plan: cost matrices: the build ran past its time
 * limit"; 0: none; and a memory budget (borrowed; NULL: none) the cost tables must fit
 * before they are allocated (cost_options.budget: UNIAP_E_LIMIT or UNIAP_E_BUSY, "plan:
 * cost tables: ...").  What the service's evaluate uses, so that no request runs unbounded
 * in time or memory. */
uniap_code plan_doc_apply_until(const struct cluster_profile *cluster, const struct model_profile *model,
                                long batch, const struct plan_doc *p, double deadline_s,
                                const struct cost_budget *budget, struct plan_applied *out, struct uniap_err *err);
void plan_applied_release(struct plan_applied *a);

#endif
