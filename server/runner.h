/*
 * runner.h - uniapd's job runner: job threads that claim queued jobs from
 * the store and run them - a plan job's unified optimization process
 * (core/uop.h) on one shared worker pool, a calibration job's fit
 * (calibration.h) on the job thread itself, polling its cancel flag and
 * time limit - recording progress, results and transitions.
 *
 * Threads and processes: `jobs` job threads each run one job at a time, and
 * up to spare_jobs spare job threads each run only a job of a tenant that has
 * none running (a tenant's first job never waits behind other tenants',
 * however many of them are saturated, up to spare_jobs such tenants at once:
 * docs/jobs.md); all their candidate solves go to one pool of `workers`
 * forked worker processes (core/pool.h: CBC is never called from two threads
 * of one process), grouped by tenant, with spare_jobs spare workers too.  HTTP
 * threads never wait for a job: they queue it in the store and wake the
 * runner.  A job's candidates are memoized in the store's cost cache
 * (runner_memo_key), so a repeated or overlapping request reuses them.
 *
 * A job request as stored (runner_request_*): {"summary": {"batch",
 * "schedule", "space", "time_limit_s", "deadline_s", "gap", "recompute", "zero", "sequence_parallel",
 * "selective_recompute", "uneven_microbatches", "early_stop", "every_candidate",
 * "cluster": ref, "model": ref}, "cluster": document, "model": document} -
 * the documents resolved at submission, so a job never depends on documents
 * deleted later; the refs say what the client named (an id, a catalog name
 * or "inline").
 *
 * One owner per job: every claim takes a lease (store.h, struct store_lease)
 * that runner_lease_tick renews, and every write about a running job names
 * it; when a write is refused (the lease ran out and another uniapd on the
 * same database claimed the job) the job stops here without another write.
 *
 * Never: call CBC in this process outside uop (which uses the pool), hold
 * the runner lock across a solve, or answer HTTP.
 */
#ifndef UNIAP_RUNNER_H
#define UNIAP_RUNNER_H

#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "store.h"
#include "uop.h"

struct runner;
struct cJSON;

/* Most job threads a runner has (--jobs). */
#define RUNNER_MAX_JOBS 64
/* Most spare job threads (--spare-jobs), each with a spare pool worker. */
#define RUNNER_SPARE_MAX 16

struct runner_config {
	struct store *store;     /* borrowed; outlives the runner */
	int jobs;                /* job threads, 1..RUNNER_MAX_JOBS; 0: 2 */
	int spare_jobs;          /* 0..RUNNER_SPARE_MAX: up to this many more job threads and as many more
	                            pool workers, each only for a tenant with nothing running there; a
	                            spare thread starts when the last idle one claims a job; 0: none */
	int workers;             /* solver processes at once (shared), 1..POOL_THREADS_MAX; 0: online cores */
	int no_cache;            /* 1: never read or write the cost cache */
	FILE *log;               /* one JSON line per job transition; NULL: none */
	double job_budget_worker_s; /* a plan job's cap on worker seconds (its candidate solves' wall
	                            seconds, all targets together); < 0: none; 0: RUNNER_DEFAULT_JOB_BUDGET_S */
	double lease_s;          /* a claim's lease, renewed every lease_s/3 (runner_lease_tick);
	                            1..86400; 0: RUNNER_DEFAULT_LEASE_S */
	int no_share;            /* 1: never share a plan job's candidates with other instances, nor
	                            help theirs (store_shares(): PostgreSQL; docs/scale.md, "One job
	                            across replicas") */
	const char *build;       /* borrowed: this build's version (instances of other builds never
	                            share a job: their cost models may differ); NULL: "unknown" */
};

/* An idle job thread helps another instance's job only once its run has been open this long. */
#define RUNNER_SHARE_AFTER_MS 1000

/* Worker seconds a plan job may spend by default (--job-budget; docs/jobs.md, "Budget"):
 * two hours of one worker, far above any catalog problem, a stop for runaway ones. */
#define RUNNER_DEFAULT_JOB_BUDGET_S 7200.0

/* How long a running job stays this process's without a renewal (docs/jobs.md, "Leases"). */
#define RUNNER_DEFAULT_LEASE_S 30.0

/* What a stored request holds, decoded. */
struct runner_request {
	struct cluster_profile cluster;
	struct model_profile model;
	struct uop_options opts;  /* batch, schedule, space, recompute, zero, sp, selective, uneven,
	                             time_limit_s, rel_gap, early_stop, every_candidate */
	enum target_kind targets[TARGET_COUNT]; /* "targets", in order; {any} when absent */
	size_t n_targets;
	int targets_given;        /* the request named "targets" */
};

/*
 * Decodes a stored job request text[0..len) (borrowed) into *out (owned by
 * the caller, runner_request_release).  Errors name the field ("request.batch").
 */
uniap_code runner_request_decode(const char *text, size_t len, struct runner_request *out,
                                 struct uniap_err *err);
void runner_request_release(struct runner_request *r);

/*
 * The planning options of a request object obj (borrowed): "batch" (required,
 * integer 1..1e9), "schedule" ("gpipe"|"1f1b"), "space", "time_limit_s"
 * (0.001..max_time_limit_s, where the argument max_time_limit_s <= 0 means
 * 86400), "deadline_s" (0.001..1e9, left in o->deadline_s as seconds from the
 * job's start, not a time: runner_run_job adds its start), "gap" (0..1),
 * "recompute", "zero", "sequence_parallel",
 * "selective_recompute", "uneven_microbatches" and
 * "early_stop" and "every_candidate" (booleans); "cluster", "model" and "memory_margin"
 * (runner_margin_json) are the caller's to read;
 * any other key, or a key given twice, is refused.  Messages are rooted at
 * root ("body").
 */
uniap_code runner_options_json(const struct cJSON *obj, const char *root, double max_time_limit_s,
                               struct uop_options *o, struct uniap_err *err);

/*
 * A request's "targets" (obj borrowed): an array of 1 to 4 distinct runtime
 * targets ("any", "megatron", "deepspeed", "galvatron"; target.h), in order,
 * into targets[] / *n; absent: {any}, *given 0.  A runtime target with space
 * "uniform" is refused (space is read from o, already decoded).  Messages are
 * rooted at root ("body.targets[1]").
 */
uniap_code runner_targets_json(const struct cJSON *obj, const char *root, const struct uop_options *o,
                               enum target_kind *targets, size_t *n, int *given, struct uniap_err *err);

/*
 * A request's "memory_margin" (obj borrowed; absent: nothing to do), a number
 * in [0, 0.5], replaces the memory_margin of the request's cluster c
 * (borrowed, validated).  Applied before the cost cache's key is computed
 * (runner_memo_base hashes the cluster document), so matrices built under one
 * margin are never reused under another.  Messages are rooted at root
 * ("body.memory_margin").
 */
uniap_code runner_margin_json(const struct cJSON *obj, const char *root, struct cluster_profile *c,
                              struct uniap_err *err);

/*
 * The cost-cache key base of a request of tenant: SHA-256 of the memo format,
 * the scope (the tenant, or "global" when the cluster and the model are both
 * catalog documents as published), the canonical cluster and model documents
 * and every option the matrices depend on (batch, schedule, recompute, the
 * strategy filter of the space).  A candidate's key is SHA-256(base, pp,
 * microbatches[, virtual stages]).
 */
uniap_code runner_memo_base(const struct runner_request *r, int64_t tenant, unsigned char out[STORE_SHA256_BYTES],
                            struct uniap_err *err);

/* Starts the threads and the worker pool; *out owned (runner_free). */
uniap_code runner_start(const struct runner_config *cfg, struct runner **out, struct uniap_err *err);

/* A job was queued: wake an idle job thread (never blocks on a solve). */
void runner_wake(struct runner *r);

/*
 * Asks the runner to stop the running job id (a plan's workers are killed, a
 * calibration stops at its next evaluation); the job thread then records it
 * as canceled.  Returns 1 when the job was
 * running here, 0 otherwise.
 */
int runner_cancel(struct runner *r, int64_t id);

/*
 * Asks the runner to end the running plan job id now and keep what it has
 * (uop_options.stop): no candidate starts, the running solves are killed
 * within 50 ms, and the job succeeds with the best plan so far (not proven;
 * the candidates left say "stopped" or "canceled"), or fails saying none
 * came.  Returns 1 when the job was running here, 0 otherwise.  Never waits.
 */
int runner_stop_job(struct runner *r, int64_t id);

/*
 * Stops every running job whose tenant was revoked (`uniapd tenant revoke`,
 * from another process, cancels only the queued ones); they end canceled,
 * "the tenant was revoked".  Called about once a second by uniapd.  Returns
 * how many it stopped.
 */
size_t runner_cancel_revoked(struct runner *r);

/*
 * Renews the lease of every job running here that was not renewed for a
 * third of the lease; a job whose lease is lost (it ran out and another
 * instance claimed the job) stops here at once and nothing more is written
 * about it.  A renewal also reads what a client asked of the job through
 * another uniapd on the database (store_job_ask): a cancel or a stop then
 * reaches the job here even when the event that said so was missed.  Called
 * about once a second by uniapd.  Returns how many were lost.
 */
size_t runner_lease_tick(struct runner *r);

/*
 * What the store's listener (store_listen) calls with another replica's
 * event, or its own: a queued job or a listener that reconnected wakes the
 * job threads; a cancel or stop asked through any replica reaches the job
 * if it runs here (and is ignored otherwise).  ctx is the runner; any thread.
 */
void runner_on_store_event(void *ctx, enum store_event ev, int64_t job);

/* This process's instance id, the owner of its leases (STORE_OWNER_CHARS hex digits; r borrowed). */
const char *runner_owner(const struct runner *r);

/*
 * Stops claiming jobs, lets the running ones finish for up to grace_s
 * seconds, then stops them and puts them back in the queue (they run again
 * at the next start); joins the threads and stops the pool.  Idempotent.
 */
void runner_stop(struct runner *r, double grace_s);

/* Stops (grace 0) if needed and frees r (NULL-safe). */
void runner_free(struct runner *r);

struct runner_stats {
	int64_t finished[STORE_JOB_STATE_COUNT]; /* jobs this process ended in each final state */
	int64_t running;                         /* jobs running now */
	double solve_seconds_sum;                /* wall seconds of finished runs */
	int64_t solve_count;
	int64_t solve_bucket[8];                 /* runs <= 0.1, 0.5, 1, 5, 10, 30, 60, 300 s */
	int64_t cache_hits, cache_misses, cache_puts;
	int64_t share_joins;                     /* runs of other instances' jobs this one helped */
	int64_t share_units_put;                 /* candidates this instance solved for a shared run */
	int64_t share_units_taken;               /* candidates its own jobs took from other instances */
};

extern const double runner_solve_buckets[8];

/* A consistent copy of the counters. */
void runner_get_stats(struct runner *r, struct runner_stats *out);

/*
 * Writes one JSON line for a job transition to log (NULL-safe):
 * {"ts", "event": "job", "job", "tenant", "from", "to", "detail"?}.
 */
void runner_log_transition(FILE *log, int64_t job, int64_t tenant, const char *from, const char *to,
                           const char *detail);

#endif
