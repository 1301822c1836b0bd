/*
 * runtime.h - training runtimes as the cost model prices them: one row of
 * terms (struct cost_runtime, cost.h) per runtime, by name, with where each
 * term comes from (docs/cost-model.md, "Runtime profile").
 *
 * A runtime target (target.h) plans for its runtime's row; a plan, a
 * measured run or a request may name another.  The rows are constant data.
 *
 * Thread safety: everything here is reentrant.
 * Never: I/O, globals that change.
 */
#ifndef UNIAP_RUNTIME_H
#define UNIAP_RUNTIME_H

#include <stddef.h>

#include "cost.h"

/* The default runtime's name: what a plan for no particular runtime is priced under. */
#define RUNTIME_DEFAULT "default"

/* The runtime named name (borrowed), or NULL when there is none. */
const struct cost_runtime *runtime_find(const char *name);

/* The i-th runtime (0 .. runtime_count() - 1), for listings; NULL out of range. */
const struct cost_runtime *runtime_at(size_t i);
size_t runtime_count(void);

/* Where runtime r's terms come from (static text), or "" when r is not a row. */
const char *runtime_source(const struct cost_runtime *r);

/* The names joined by ", " into buf (size n): for error messages. */
void runtime_names(char *buf, size_t n);

#endif
