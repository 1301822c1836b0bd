/*
 * brute.h - test support: the obviously-correct oracle for the optimizer.
 * Enumerates every stage assignment and every strategy vector of a (tiny)
 * candidate and evaluates each with its own transcription of the audit
 * formula of cost.h.  Shares no code with core/opt.c.
 *
 * Never: use it on instances with more than BRUTE_MAX_EVALS evaluations.
 */
#ifndef UNIAP_TEST_BRUTE_H
#define UNIAP_TEST_BRUTE_H

#include <stddef.h>

#include "cost.h"

#define BRUTE_MAX_EVALS 20000000.0

/*
 * The audit TPI of (stage, strategy) (borrowed, n_layers each) on c
 * (borrowed), or INFINITY when invalid or over memory.
 */
double brute_tpi(const struct cost_candidate *c, const int *stage, const size_t *strategy);

/*
 * Minimum TPI over every plan of c (borrowed); INFINITY when none is valid.
 * When stage/strategy (caller-owned, n_layers each) are not NULL they get a
 * best plan.  Returns -1 when the instance is too big to enumerate, else 0.
 * *evals (may be NULL) receives the number of plans evaluated.
 */
int brute_solve(const struct cost_candidate *c, double *best, int *stage, size_t *strategy,
                double *evals);

/* Odometers of n digits in [0, base) (stage and strategy vectors): advance
 * d; 0 when it wrapped around to all zeros. */
int brute_next_int(int *d, size_t n, int base);
int brute_next_size(size_t *d, size_t n, size_t base);

#endif
