/*
 * fracmemo.h - a memo of reshard fractions (strategy_reshard_fraction) shared
 * by the cost builds of one planning run.
 *
 * The fraction of a tensor a rank lacks between two layouts depends only on
 * the two batch layouts (dp and fsdp degrees and strides, cp) and the stage's
 * device count, and the candidates of one run with the same pipeline degree
 * ask for the same pairs again (their micro-batch counts differ, their
 * layouts do not).  The walk over the ranks is most of a build on clusters
 * of many devices, so a run keeps what it computed: a lookup returns exactly
 * what strategy_reshard_fraction() returns.
 *
 * Thread safety: any number of threads may call frac_memo_get() on one memo
 * (an internal mutex guards the tables; the walk itself runs outside it).
 * Never: I/O, globals; a memo past its entry cap keeps answering (computing
 * what it cannot store).
 */
#ifndef UNIAP_FRACMEMO_H
#define UNIAP_FRACMEMO_H

#include <stddef.h>

#include "strategy.h"

struct frac_memo;

/* A new, empty memo holding at most max_pairs fractions (0: a default of 1 Mi); the caller
 * frees it with frac_memo_free().  NULL when out of memory. */
struct frac_memo *frac_memo_new(size_t max_pairs);

/* Frees m and all it holds; NULL is a no-op.  No call on m may be running. */
void frac_memo_free(struct frac_memo *m);

/* strategy_reshard_fraction(a, b, D) (a, b borrowed), from the memo when it holds the pair
 * of layouts, else computed (and kept while the memo is under its cap and has memory); m
 * NULL: computed, nothing kept. */
double frac_memo_get(struct frac_memo *m, const struct strategy *a, const struct strategy *b, int D);

/* Lookups answered from the memo and pairs computed so far (for tests and benchmarks). */
void frac_memo_counts(struct frac_memo *m, size_t *hits, size_t *misses);

#endif
