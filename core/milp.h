/*
 * milp.h - the exact MILP of one candidate for any layer graph (the paper's
 * MIQP of §3.3 linearised, with stage order and multi-stage edge charges),
 * solved with CBC.  pp = 1 is the paper's appendix-C QIP.  docs/optimizer.md
 * has the variables, constraints and why every linearisation is exact.
 *
 * Not thread-safe: CBC 2.10.8 keeps global state in its command-line driver,
 * so at most one milp_solve may run per process at a time (use processes).
 *
 * Never: include CBC's header anywhere but milp.c.
 */
#ifndef UNIAP_MILP_H
#define UNIAP_MILP_H

#include <stddef.h>

#include "cost.h"
#include "err.h"
#include "opt.h"

/* Caps on the model built (columns, nonzeros): past them UNIAP_E_LIMIT. */
#define MILP_MAX_COLS ((size_t)4 << 20)
#define MILP_MAX_NONZEROS ((size_t)32 << 20)

/* 1 when cand's model would be over the column cap (milp_solve's UNIAP_E_LIMIT before
 * it builds anything), 0 otherwise: what a caller checks before preparing a start. */
int milp_over_cap(const struct cost_candidate *cand);

/*
 * Solves cand (borrowed, passed opt_candidate_check) with opts (borrowed).
 * start_stage/start_strategy (borrowed, n_layers each, both or neither NULL)
 * are a valid plan given to CBC as a MIP start.  Fills out (initialised by
 * the caller): status, stage/strategy (owned by out), bound_s, gap, nodes,
 * method, note; tpi_s is recomputed by the caller with opt_tpi.  Returns
 * UNIAP_E_SOLVER when CBC fails, UNIAP_E_LIMIT when the model is over the
 * caps, UNIAP_E_NOMEM; then out owns nothing.
 */
uniap_code milp_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                      const int *start_stage, const size_t *start_strategy, struct opt_result *out,
                      struct uniap_err *err);

#endif
