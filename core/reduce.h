/*
 * reduce.h - exact removal of dominated strategies from a candidate.
 *
 * Strategy k is dominated by strategy l when, for every layer, l takes no
 * more time and no more memory (fixed and per micro-batch) than k, and for
 * every edge and every strategy j at the other end, resharding to or from l
 * costs no more than to or from k, inside a stage and across stages.
 * Switching every layer that uses k to l then raises no stage time, no
 * communication time and no stage memory, so the optimum over the remaining
 * strategies equals the optimum over all of them.  Among strategies with
 * equal costs everywhere the first one is kept.
 *
 * Never: I/O; the candidate given is not modified.
 */
#ifndef UNIAP_REDUCE_H
#define UNIAP_REDUCE_H

#include "cost.h"
#include "err.h"

/*
 * Builds in *out (owned by the caller, cost_candidate_release()) a copy of
 * cand (borrowed) without its dominated strategies; the kept strategies stay
 * in their order.  *removed (may be NULL) receives how many were dropped.
 */
uniap_code reduce_dominated(const struct cost_candidate *cand, struct cost_candidate *out,
                            size_t *removed, struct uniap_err *err);

#endif
