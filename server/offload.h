/*
 * offload.h - a bounded pool of threads for request work too heavy for an
 * HTTP thread (POST /v1/evaluate): a handler hands the work over, waits on
 * its key (res->wait) with its connection suspended, and answers from the
 * result when the server resumes it.  An HTTP thread therefore only ever
 * decodes and answers; health checks and other tenants' requests on the
 * same thread never wait behind a large evaluation.
 *
 * Bounds: `threads` tasks run at once, taken from the tenants in turn; at
 * most `queue_cap` tasks are queued or running in all (more: UNIAP_E_BUSY,
 * 503 with Retry-After) and at most `per_tenant` of one tenant (more:
 * UNIAP_E_RATE, 429 with Retry-After), of which at most threads - 1 (at
 * least 1) run at once.  A tenant with nothing running never waits: its task
 * gets a reserve thread when none is idle, and one with nothing in is
 * admitted past queue_cap (up to 16 such tenants at once; offload.c).  The
 * work itself carries its own time cap (the evaluation's cost build gives up
 * past a deadline: core/cost.h), so a task always ends.
 *
 * Keys: task n is waited on as key -n (negative: job ids, the other keys
 * the server watches, are positive); offload_version() is the version hook
 * for such keys.
 *
 * Threads: every function may be called from any thread; one mutex guards
 * the task table and is never held while a task runs or a callback is made.
 * Never: run a task on the caller's thread; block in offload_submit.
 */
#ifndef UNIAP_OFFLOAD_H
#define UNIAP_OFFLOAD_H

#include <stdint.h>

#include "err.h"

struct offload;

/* Runs on an offload thread: does the work of arg (the submitter's). */
typedef void (*offload_fn)(void *arg);
/* Frees arg (the task was taken, abandoned or the pool freed). */
typedef void (*offload_free_fn)(void *arg);
/* A task finished (its key's version changed): ctx is offload_config.notify_ctx. */
typedef void (*offload_notify_fn)(void *ctx);

#define OFFLOAD_DEFAULT_THREADS 2
#define OFFLOAD_DEFAULT_QUEUE 16     /* tasks queued or running in all */
#define OFFLOAD_DEFAULT_PER_TENANT 4 /* tasks queued or running of one tenant */

struct offload_config {
	int threads;              /* 0: OFFLOAD_DEFAULT_THREADS; 1..64 */
	int queue_cap;            /* 0: OFFLOAD_DEFAULT_QUEUE; >= threads */
	int per_tenant;           /* 0: OFFLOAD_DEFAULT_PER_TENANT */
	offload_notify_fn notify; /* may be NULL (waiters then find out at the watcher's tick) */
	void *notify_ctx;
};

struct offload_stats {
	int64_t submitted, refused_busy, refused_rate, finished, abandoned;
	int64_t reserve_started;  /* reserve threads started (each kept once started) */
	int64_t queued, running;  /* now */
};

/* Starts the threads; *out owned (offload_free). */
uniap_code offload_start(const struct offload_config *cfg, struct offload **out, struct uniap_err *err);

/*
 * Queues fn(arg) for tenant; arg is owned by the pool from here on, also on
 * failure (freed with free_fn).  *key is what the handler waits on.
 * UNIAP_E_BUSY when queue_cap tasks are in, UNIAP_E_RATE when per_tenant of
 * tenant's are, UNIAP_E_CANCELED once stopping; err says which cap.
 */
uniap_code offload_submit(struct offload *o, int64_t tenant, offload_fn fn, void *arg, offload_free_fn free_fn,
                          int64_t *key, struct uniap_err *err);

/* The version hook for a task key (< 0): 1 when done, 0 before; -1 for a key it does not hold. */
int offload_version(struct offload *o, int64_t key, int64_t *version);

/*
 * The finished task key: its arg (owned by the caller from here on) and the
 * task is forgotten; NULL when it is not finished (or not known).
 */
void *offload_take(struct offload *o, int64_t key);

/* The waiter gave up on key: its arg is freed when it finishes (at once when still queued). */
void offload_abandon(struct offload *o, int64_t key);

void offload_get_stats(struct offload *o, struct offload_stats *out);

/* Stops taking tasks, lets the running ones end, joins the threads, frees everything (NULL-safe). */
void offload_free(struct offload *o);

#endif
