/*
 * uop.h - the unified optimization process (paper Algorithm 1): enumerate the
 * candidates (pipeline degree pp, micro-batch count c) of a search space,
 * build each candidate's cost matrices, solve them concurrently in isolated
 * worker processes (core/pool.h: CBC is not safe on two threads of one
 * process), share the best TPI found so far to prune the rest, and return
 * the best plan with a proof status.
 *
 * Search spaces:
 *   unified  every pp dividing n (pp <= layers) x every c dividing B, all strategies
 *            (pp = 1 with c > 1 is gradient accumulation, a superset of the paper)
 *   inter    the same candidates, each stage purely data parallel
 *   intra    pp = 1 only, every c
 *   uniform  Megatron-style: one dp x tp (tp on consecutive ranks) for every layer and
 *            an equal split of the layers in index order; every (pp, c, strategy) is
 *            evaluated, none is solved
 *
 * Runtime targets (uop_options.target, target.h) narrow a space to the plans
 * one runtime executes: Megatron-LM and DeepSpeed (one strategy for every
 * layer) by enumerating every (pp, c, strategy, allowed split); Galvatron by
 * solving each candidate per class of its tied embedding and head.  The
 * result reports the target's schedule when it differs from the one asked.
 *
 * Never: I/O, printing, globals.  The caller's pool (if any) is borrowed.
 */
#ifndef UNIAP_UOP_H
#define UNIAP_UOP_H

#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cost.h"
#include "opt.h"
#include "plan.h"
#include "pool.h"
#include "target.h"

enum uop_space {
	UOP_SPACE_UNIFIED = 0,
	UOP_SPACE_INTER,
	UOP_SPACE_INTRA,
	UOP_SPACE_UNIFORM,
};

const char *uop_space_name(enum uop_space s);
/* Parses "unified"/"inter"/"intra"/"uniform"; 0 on success, -1 otherwise. */
int uop_space_parse(const char *s, enum uop_space *out);

/*
 * Memos: what earlier runs proved about a candidate, kept by the caller (the
 * service keeps them in its SQLite cost cache).  Two parts per candidate:
 *   facts     a struct opt_result: bound_s is a proven lower bound on the
 *             candidate's optimum TPI (INFINITY: nothing fits), stage/strategy
 *             (may be NULL) the best plan known and tpi_s its TPI; a plan whose
 *             TPI the bound reaches is the candidate's optimum.  Small.
 *   matrices  the candidate's cost matrices (without dominated strategies,
 *             which keeps the optimum) that the facts' plan indexes.  Large.
 * Both stay true whatever the options (time limit, gap) of the run that found
 * them.  A run reads every candidate's facts first: it decides what it can
 * from them alone (proven infeasible, bound above the best TPI, proven optimum
 * that is not the best) and reads or rebuilds matrices only for the rest.  A
 * plan whose matrices had to be rebuilt is used only if its TPI recomputes
 * equal on them.  Keys are (pp, virtual_stages, microbatches) within one problem: cluster,
 * model, batch, schedule, recompute and space are the caller's to fold into
 * its keys, with UOP_MEMO_FORMAT.  Every callback is optional and may be
 * called from any thread, no lock held; get_* fill caller-owned structs
 * (opt_result_release / cost_candidate_release) and return 1 on a hit, 0 on a
 * miss; put borrows facts and cand (cand NULL: the matrices stored are still
 * the ones the facts index).
 */
struct uop_memo_ops {
	int (*get_facts)(void *ctx, int pp, int virtual_stages, long microbatches, struct opt_result *facts);
	int (*get_matrices)(void *ctx, int pp, int virtual_stages, long microbatches, struct cost_candidate *cand);
	void (*put)(void *ctx, int pp, int virtual_stages, long microbatches, const struct opt_result *facts,
	            const struct cost_candidate *cand);
	void *ctx;
};

/*
 * Sharing: one problem's candidates solved by several runs at once, each in
 * its own process (the service's replicas on one PostgreSQL database solving
 * one job: docs/scale.md, "One job across replicas").  One run is the main
 * run, whose result is the answer; the others are helpers, whose results are
 * thrown away.  Every run goes through its candidates in its own order and,
 * before it builds one its bounds leave open, claims it:
 *   UOP_SHARE_MINE  this run solves it and then hands over what it decided
 *                   with put() (facts NULL: nothing, the claim is given up:
 *                   a failed solve, the deadline, a stop, a cancel);
 *   UOP_SHARE_BUSY  another run holds it now: a helper leaves it, the main
 *                   run comes back to it (every 0.1 s once nothing else is
 *                   left, backing off to 0.8 s while nothing moves) until it is done there or its claim is given up
 *                   or runs out (then it is MINE);
 *   UOP_SHARE_DONE  another run decided it: *facts (filled, caller-owned) is
 *                   what that run's put() said, plan and solve seconds
 *                   included, and the run records it as if solved here; a
 *                   plan that could be the run's best is checked first (its
 *                   matrices rebuilt, reduced as a solve reduces them, and
 *                   its TPI recomputed), else the candidate is solved here;
 *   UOP_SHARE_END   stop claiming: a helper ends (the main run solves it).
 * Each claim also sets *incumbent (INFINITY: none) to the least TPI any run
 * of the problem has put so far; bounds and solver cutoffs use the least of it
 * and the run's own best, always with the tie tolerance, so that a plan that
 * ties the incumbent is still found and the earlier candidate wins the tie as
 * in a run alone.  Candidates decided by bounds alone are never claimed.  A
 * shared run must have no deadline (a deadline is one process's clock).
 * Both callbacks may be called from any thread, no lock held.
 */
enum uop_share_claim {
	UOP_SHARE_MINE = 0,
	UOP_SHARE_BUSY,
	UOP_SHARE_DONE,
	UOP_SHARE_END,
};

struct uop_share_ops {
	enum uop_share_claim (*claim)(void *ctx, int pp, int virtual_stages, long microbatches,
	                              struct opt_result *facts, double *incumbent);
	void (*put)(void *ctx, int pp, int virtual_stages, long microbatches, const struct opt_result *facts);
	int helper;  /* 1: a helper run (leaves BUSY candidates; its result is not an answer) */
	void *ctx;
};

/* Bumped whenever the cost model or the memo layout changes: part of every cache key. */
#define UOP_MEMO_FORMAT 7 /* 7: transfers block (a stage's cycle); 6: mixture of experts and context parallelism; 5: runtime profiles; 4: one micro-batch in flight without a pipeline; 3: latency, contention, efficiency curve, honest memory */

/*
 * Progress of a run, as its callback sees it.  bound_s is a proven lower bound
 * on the run's optimum TPI (over every candidate, solved or not), and so on
 * the TPI of any plan of its space: the least of the decided candidates' bounds,
 * the solver-free bounds of those not decided yet (the bound pass computes one
 * for every candidate before any solve) and best_tpi_s.  0 while some
 * candidate has no bound yet (before the bound pass, and always in the
 * uniform space and under a one-strategy target, where candidates are
 * evaluated, not bounded).
 */
struct uop_progress {
	size_t done, total;  /* candidates decided, of the grid */
	double best_tpi_s;   /* the best plan's TPI so far; INFINITY: none yet */
	double bound_s;      /* see above; 0: none yet; INFINITY: nothing fits */
};

typedef void (*uop_progress_fn)(void *ctx, const struct uop_progress *p);

struct uop_options {
	long batch;                 /* global batch B >= 1 */
	enum cost_schedule schedule;
	int virtual_stages;         /* interleaved: model chunks per device, 2 .. COST_MAX_VIRTUAL_STAGES,
	                               or 0: every v of UOP_VIRTUAL_SEARCH_MIN .. _MAX is a candidate
	                               (the one-strategy megatron target: every v up to
	                               COST_MAX_VIRTUAL_STAGES that Megatron-LM can split);
	                               candidates need c a multiple of pp and pp v <= layers */
	enum uop_space space;
	int recompute;              /* offer activation checkpointing per layer */
	int zero;                   /* offer ZeRO-1 and ZeRO-2 per replicated layer */
	int sp;                     /* offer sequence parallelism per layer with tp > 1 */
	int selective;              /* offer selective recomputation (the attention core) per layer */
	int fp8;                    /* FP8 training (cost_options.fp8), where the target runs it */
	int cp;                     /* context parallelism (cost_options.cp) for every candidate; 0/1: none */
	int cp_a2a;                 /* its Ulysses all-to-all variant (cost_options.cp_a2a) */
	int uneven;                 /* also the micro-batch counts that leave the last micro-batch
	                               smaller (cost_chunk_count), where the target runs them */
	enum target_kind target;    /* TARGET_ANY, or only the plans that runtime executes (target.h):
	                               its schedule, strategies, split; not with the uniform space */
	const struct cost_runtime *runtime; /* borrowed: the runtime the costs are priced for (runtime.h);
	                               NULL: the target's (target_runtime()) */
	int threads;                /* candidates solved at once (worker processes), >= 1 */
	double time_limit_s;        /* per candidate; <= 0: none */
	double budget_worker_s;     /* the whole run's cap on worker seconds (the sum of its candidate
	                               solves' wall seconds); once spent, no further candidate starts
	                               and the rest report status "budget"; <= 0: none */
	double deadline_s;          /* the whole run's deadline, opt_clock_s() seconds: no candidate
	                               starts past it (the rest report status "deadline"), a solve
	                               gets at most the time left (its time_limit_s is cut to it) and
	                               a build stops at it; the best plan so far comes back, with the
	                               bound proven so far; <= 0: none */
	double rel_gap;             /* per candidate MILP gap; 0 = prove optimality */
	int early_stop;             /* the paper's appendix-E rules */
	int every_candidate;        /* solve each candidate to its own optimum: none is pruned,
	                               decided or cut off by another's plan or bound (a bound that
	                               proves nothing fits still decides one), so every row of the
	                               result is that (pp, c)'s best TPI; the best plan is the same,
	                               found slower.  Time limit, deadline, budget and stop apply */
	int makespan;               /* 1F1B: the objective is each plan's iteration as run (the makespan
	                               of cost_candidate.makespan), exact on the MILP; every other
	                               schedule's formula is its makespan already */
	int inline_solve;           /* solve in this process, one at a time (no workers) */
	uint64_t tag;               /* pool tag of this run's tasks (for pool_cancel_tag) */
	uint64_t group;             /* pool group of this run's tasks (a tenant: pool.h); 0: the tag */
	uop_progress_fn progress;   /* optional, called from any thread, no lock held */
	void *progress_ctx;
	const atomic_int *cancel;   /* optional: when *cancel becomes non-zero the run stops */
	const atomic_int *stop;     /* optional: when *stop becomes non-zero (a signal handler may set
	                               it) the run stops but still answers, like at its deadline: no
	                               candidate starts (status "stopped"), the running solves are
	                               killed within 50 ms (status "canceled"), and uop_run returns
	                               UNIAP_OK with the best plan so far and result.stopped set */
	const struct uop_memo_ops *memo; /* optional: reuse and record candidates' matrices and facts */
	const struct uop_share_ops *share; /* optional: share the candidates with other runs (above);
	                                  not with deadline_s */
	pthread_mutex_t *solve_lock; /* optional (borrowed): held around every solve made in this
	                                process (inline_solve, or a sanitizer build), so that callers
	                                running several uop_run at once never have CBC on two
	                                threads; solves in worker processes do not take it */
};

/* Defaults: gpipe, unified, threads = online cores, 60 s, gap 0, no early stop. */
void uop_options_init(struct uop_options *o);

#define UOP_NOTE_MAX 192

/* The model chunks per device the interleaved schedule tries when none is given. */
#define UOP_VIRTUAL_SEARCH_MIN 2
#define UOP_VIRTUAL_SEARCH_MAX 4

/* One candidate of the run, as reported. */
struct uop_candidate {
	int pp;
	int virtual_stages;  /* v: model chunks per device (interleaved, pp > 1); 1 otherwise */
	long microbatches;
	char status[16];     /* optimal, feasible, infeasible, pruned, unknown, error, crashed,
	                        timeout, canceled, budget (never solved: the run's budget_worker_s
	                        was spent), deadline (never solved, or its build cut short: the
	                        run's deadline_s passed), stopped (never solved: *opts->stop was
	                        set) (uniform: evaluated, infeasible) */
	double tpi_s;        /* INFINITY when none */
	double bound_s;      /* proven lower bound (INFINITY when proven infeasible) */
	double solve_s;
	const char *method;  /* static string: "dp-chain", "milp", "lower-bound", "evaluate", ... */
	char strategy[STRATEGY_NAME_MAX]; /* uniform space: the strategy; "" otherwise */
	char note[UOP_NOTE_MAX];          /* why infeasible / pruned / failed; "" otherwise */
	int cached;          /* the matrices (and facts) came from opts->memo */
	int shared;          /* decided by another run sharing the problem (opts->share) */
};

struct uop_result {
	struct uop_candidate *candidates; /* owned, n_candidates */
	size_t n_candidates;
	long best;                  /* index of the winner, -1 when nothing is feasible */
	struct cost_candidate cand; /* the winner's cost matrices (owned) */
	int *stage;                 /* owned, cand.n_layers */
	size_t *strategy;           /* owned, cand.n_layers */
	struct plan_eval eval;      /* the winner evaluated with the audit formula */
	int optimal;                /* the winner is proven optimal over the whole space */
	double bound_s;             /* proven lower bound over the whole space */
	double gap;                 /* (tpi - bound) / tpi; 0 when optimal */
	double solve_s;             /* wall seconds of the whole run */
	double worker_s;            /* worker seconds its candidate solves took (the budget's measure) */
	int budget_spent;           /* opts->budget_worker_s ran out: candidates were left unsolved */
	int deadline_passed;        /* opts->deadline_s passed: candidates were left unsolved */
	int stopped;                /* *opts->stop was set: candidates were left unsolved */
};

/*
 * Runs the process for cluster and model (borrowed, validated) with opts.
 * pool (borrowed) runs the solves; NULL makes a private pool of opts->threads
 * workers for the run.  On UNIAP_OK *out is owned by the caller
 * (uop_result_release()); out->best < 0 means no candidate is feasible (the
 * candidates' notes say why).  UNIAP_E_CANCELED when *opts->cancel was set.
 */
uniap_code uop_run(const struct cluster_profile *cluster, const struct model_profile *model,
                   const struct uop_options *opts, struct pool *pool, struct uop_result *out,
                   struct uniap_err *err);

void uop_result_release(struct uop_result *r);

#endif
