/*
 * dp.h - exact dynamic programs for a candidate whose layer graph is a chain
 * in index order (edges exactly u -> u+1).  Both return the same optimum as
 * the MILP and the brute-force enumerator; docs/optimizer.md gives the states,
 * the labels and why each dominance rule is exact.
 *
 *   dp_chain_solve   one layer at a time; state (stage, layer, strategy of the
 *                    layer), Pareto labels on (total time so far, max of the
 *                    closed stages, open stage time, open stage memory).
 *   dp_stages_solve  one stage at a time; a table of the least time of every
 *                    block of layers [a, b] for every first/last strategy pair
 *                    under the memory limit (computed once per run of identical
 *                    layers), and an outer DP over (stage, last layer, last
 *                    strategy) with Pareto labels on (total, max).
 *
 * Both first build a valid plan with a beam version of dp-chain (skipped when
 * opts->dp_no_incumbent) and prune partial plans whose lower bound exceeds
 * it or reaches opts->cutoff_tpi.  Both fill out->stage/strategy/tpi_s/status/
 * bound/nodes/method: OPT_OPTIMAL, OPT_INFEASIBLE, or OPT_PRUNED (nothing
 * below the cutoff).  When opts->time_limit_s passes after the incumbent has
 * a plan they are anytime: OPT_FEASIBLE with that plan, a proven bound (the
 * least memory-priced lower bound over the first layer's strategies) and a
 * note.  They return UNIAP_E_LIMIT when more than opts->dp_label_cap labels
 * (or a block table over 256 MiB) would be needed, UNIAP_E_TIMEOUT when the
 * limit passes before any plan, UNIAP_E_ARG when cand is not a chain; then
 * out owns nothing.  cand must have passed opt_candidate_check().
 *
 * Never: CBC, I/O, globals.  Reentrant.
 */
#ifndef UNIAP_DP_H
#define UNIAP_DP_H

#include "cost.h"
#include "err.h"
#include "opt.h"

/* cand, opts borrowed; out (initialised) is filled and owned by the caller. */
uniap_code dp_chain_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                          struct opt_result *out, struct uniap_err *err);

/* cand, opts borrowed; out (initialised) is filled and owned by the caller. */
uniap_code dp_stages_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                           struct opt_result *out, struct uniap_err *err);

/*
 * dp-sweep: exact for chains by sweeping the bottleneck down from above.  Each
 * threshold x is a shortest path for the least sum of stage and communication
 * times with every one of them <= x, over a block table per (first strategy's
 * in-class, last strategy's out-class), classes being strategies with equal
 * cross-stage rows or columns; the sweep stops when the least sum left plus
 * (c - 1) times a proven floor of the bottleneck reaches the best plan.  No
 * incumbent; same statuses as the other DPs (OPT_FEASIBLE with a bound when
 * the time limit passes after a plan, OPT_UNKNOWN before), UNIAP_E_LIMIT when
 * the table or the states are over their caps.  out->nodes counts thresholds.
 * cand, opts borrowed; out (initialised) is filled and owned by the caller.
 */
uniap_code dp_sweep_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                          struct opt_result *out, struct uniap_err *err);

/*
 * The exact program for any acyclic layer graph (dp_dag.c): states are
 * (ideal, open stage, stage and strategy class of each frontier layer: the
 * strategies whose rows on every out-edge of the layer are equal).  It first
 * enumerates the ideals and measures the width (the largest frontier) and
 * returns UNIAP_E_LIMIT when the width exceeds 8, when the labels exceed the
 * label cap, or, where the sum over ideals of the frontier layers' class counts
 * multiplied, x pp, exceeds the cap, when a run makes more than
 * opts->dp_dag_trial labels (a trial: work, never time); UNIAP_E_ARG for a
 * cycle or an interleaved candidate.  inc_stage/inc_strategy (borrowed, may be
 * NULL) is a valid plan that bounds the search.  out->note names the width
 * and the ideal count, and the trial where there was one.
 * cand, opts borrowed; out (initialised) is filled and owned by the caller.
 */
uniap_code dp_dag_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                        const int *inc_stage, const size_t *inc_strategy, struct opt_result *out,
                        struct uniap_err *err);

#endif
