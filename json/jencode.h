/*
 * jencode.h - JSON encoding of the planner's outputs: the audit format of a
 * candidate's cost matrices, plan documents and plan evaluations; and of the
 * input documents (cluster and model profiles, for the built-in catalog).
 *
 * Numbers are printed by cJSON, which uses the shortest of %.15g/%.17g that
 * reads back to the same double, so an independent checker recomputes exactly
 * what the planner computed.  Shared by the CLI and the service.
 *
 * Ownership: every cJSON * returned is owned by the caller (cJSON_Delete);
 * every char * is owned by the caller (cJSON_free).  NULL means out of memory.
 */
#ifndef UNIAP_JENCODE_H
#define UNIAP_JENCODE_H

#include <cjson/cJSON.h>

#include "cost.h"
#include "model.h"
#include "plan.h"
#include "uop.h"

/* v as a JSON number with the fewest digits (15..17) that read back exactly;
 * null when not finite. */
cJSON *jenc_number(double v);

/* Adds key: jenc_number(v) to obj (borrowed); returns 0 on out of memory. */
int jenc_add_num(cJSON *obj, const char *key, double v);

/* The audit format of cand (borrowed). */
cJSON *jenc_costs(const struct cost_candidate *cand);

/* The strategy object {name, dp, tp, fsdp, recompute, zero (only when > 0), sp and selective
 * (only when on), placement} of s. */
cJSON *jenc_strategy(const struct strategy *s);

/*
 * The plan document of assignment (stage[u], strategy[u]) on cand, evaluated
 * as ev (all borrowed): pp, microbatches, microbatch_size, schedule, tpi_s,
 * throughput_samples_per_s, stages[{devices, layers, time_s, memory_bytes}],
 * layers[{name, stage, strategy}].  batch is microbatches * microbatch_size.
 */
cJSON *jenc_plan(const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                 const struct plan_eval *ev);

/*
 * The evaluation report {feasible, valid, fits, reason, tpi_s, ...}; with mem
 * (borrowed, cand->pp entries; NULL: left out) each stage also gets its
 * "memory" object (struct cost_stage_memory's fields, in bytes).  Returns an
 * owned object (cJSON_Delete), NULL on out of memory.
 */
cJSON *jenc_evaluation(const struct cost_candidate *cand, const struct plan_eval *ev,
                       const struct cost_stage_memory *mem);

/*
 * The cluster / model profile document of c / m (borrowed; validated), in the
 * schema/cluster.schema.json / schema/model.schema.json format: decoding it
 * with jdec_cluster()/jdec_model() gives back an equal profile (bandwidths and
 * peaks up to the rounding of the GB/s and TFLOP/s units).  Every layer is
 * listed (no "repeat") and every edge is written.
 */
cJSON *jenc_cluster(const struct cluster_profile *c);
cJSON *jenc_model(const struct model_profile *m);

/*
 * Adds the report of a planning run r (borrowed) to obj (borrowed): "candidates"
 * [{pp, microbatches, status, tpi_s, solve_s, bound, method, strategy?, note?,
 * cached}], "space", "optimal", "gap", "bound_s", "solve_s".  0 on out of memory.
 */
int jenc_add_run_report(cJSON *obj, const struct uop_result *r, enum uop_space space);

/*
 * Runtime targets planned side by side (docs/export.md, "Runtime targets"):
 * the price of target result r against the unconstrained one any (both
 * borrowed; any may be NULL): r's TPI over any's minus 1, NAN when either
 * has no plan.  jenc_targets: the "targets" array, one object per
 * targets[i] / rs[i] (borrowed, n each): target, runtime, status
 * (optimal|feasible|infeasible), tpi_s, pp, microbatches, schedule, gap,
 * bound_s, price (when known), solve_s and plan (the plan document, null
 * when none fits); where errors (may be NULL) has a
 * message for i, the target could not plan this model (its rs[i] is not
 * read): status "error" and error.  New (caller-owned), or NULL out of
 * memory.
 */
double jenc_target_price(const struct uop_result *r, const struct uop_result *any);
cJSON *jenc_targets(const enum target_kind *targets, const struct uop_result *rs, const char *const *errors,
                    size_t n, const struct uop_result *any);

/* Prints root (borrowed) with a trailing newline; NULL on out of memory. */
char *jenc_print(const cJSON *root, int pretty);

/*
 * What `uniap evaluate` prints: builds the cost candidate for plan p
 * (borrowed) on cluster and model (borrowed) at batch, evaluates the plan and
 * fills *report (owned, cJSON_Delete) with jenc_evaluation() plus
 * "plan_tpi_s" and "tpi_matches"; *feasible and *matches as in the report.
 * Messages are rooted at "plan".  deadline_s (CLOCK_MONOTONIC seconds, 0: none) and
 * budget (borrowed, NULL: none) bound the cost build (plan_doc_apply_until).
 */
uniap_code jenc_evaluate_report(const struct cluster_profile *cluster, const struct model_profile *model,
                                long batch, const struct plan_doc *p, double deadline_s,
                                const struct cost_budget *budget, cJSON **report, int *feasible, int *matches,
                                struct uniap_err *err);

#endif
