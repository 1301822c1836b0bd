/*
 * uop.c - the unified optimization process (see uop.h).
 *
 * The calling thread enumerates candidates, builds each one's cost matrices,
 * drops those whose lower bound cannot beat the best TPI found so far, and
 * hands the rest to the pool with that TPI as the solver's cutoff, keeping at
 * most opts->threads in flight.  Completions arrive on pool threads
 * (uop_done), which record the candidate's outcome and the new best under
 * run->lock and wake the calling thread.
 *
 * Lock order: run->lock only; it is never held while calling the pool, the
 * solver or a progress callback.
 * Ownership: each in-flight slot owns its cost matrices; a completion that
 * beats the best moves them into the result, otherwise frees them.
 */
#include "uop.h"

#include "fracmemo.h"
#include "reduce.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Under gcc 12's AddressSanitizer and ThreadSanitizer a forked child of a
 * multithreaded process may hang in the sanitizer's allocator (its locks are
 * not reset across fork; docs/pool.md), and the solver allocates.  Such
 * builds therefore solve inline, one candidate at a time; the pool itself is
 * tested under both sanitizers with children that do not allocate.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UOP_FORCE_INLINE 1
#else
#define UOP_FORCE_INLINE 0
#endif

/* Relative slack of every pruning test, so that ties are solved, not pruned. */
#define UOP_TIE_TOLERANCE 1e-9

/* Seconds past the run's deadline after which a worker still solving is killed. */
#define UOP_DEADLINE_GRACE_S 0.25

static const char *const uop_space_names[] = { "unified", "inter", "intra", "uniform" };

const char *uop_space_name(enum uop_space s)
{
	return (unsigned)s < 4 ? uop_space_names[s] : "unknown";
}

int uop_space_parse(const char *s, enum uop_space *out)
{
	int i;

	for (i = 0; i < 4; i++)
		if (strcmp(s, uop_space_names[i]) == 0) {
			*out = (enum uop_space)i;
			return 0;
		}
	return -1;
}

void uop_options_init(struct uop_options *o)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(o, 0, sizeof(*o));
	o->schedule = COST_GPIPE;
	o->space = UOP_SPACE_UNIFIED;
	o->threads = cores > 0 && cores < POOL_THREADS_MAX ? (int)cores : 1;
	o->time_limit_s = 60;
}

void uop_result_release(struct uop_result *r)
{
	if (!r)
		return;
	free(r->candidates);
	free(r->stage);
	free(r->strategy);
	plan_eval_release(&r->eval);
	cost_candidate_release(&r->cand);
	memset(r, 0, sizeof(*r));
	r->best = -1;
}

/* ------------------------------------------------------------ memos */

/*
 * What two results together prove about one candidate (either may be NULL):
 * the better plan and the larger bound.  *out is a shallow view: its arrays
 * borrow those of a or b, so it must never be released.
 */
static void uop_facts_merge(const struct opt_result *a, const struct opt_result *b,
                            struct opt_result *out)
{
	const struct opt_result *plan = NULL, *both[2] = { a, b };
	double bound = 0;
	int i;

	opt_result_init(out);
	for (i = 0; i < 2; i++) {
		const struct opt_result *r = both[i];

		if (!r)
			continue;
		if (r->stage && r->strategy && isfinite(r->tpi_s) && (!plan || r->tpi_s < plan->tpi_s))
			plan = r;
		if (r->status != OPT_ERROR && r->bound_s > bound)
			bound = r->bound_s;
	}
	if (plan) {
		out->tpi_s = plan->tpi_s;
		out->n_layers = plan->n_layers;
		out->stage = plan->stage;
		out->strategy = plan->strategy;
		out->method = plan->method;
		if (bound > plan->tpi_s)
			bound = plan->tpi_s;
		out->status = bound >= plan->tpi_s * (1 - 1e-12) ? OPT_OPTIMAL : OPT_FEASIBLE;
	} else {
		out->status = isinf(bound) ? OPT_INFEASIBLE : bound > 0 ? OPT_PRUNED : OPT_UNKNOWN;
		out->method = a && a->method ? a->method : b && b->method ? b->method : OPT_METHOD_NONE;
	}
	out->bound_s = bound;
	out->gap = plan ? (plan->tpi_s - bound) / plan->tpi_s : INFINITY;
}

/* 1 when f holds a plan whose TPI its bound reaches: the candidate's optimum. */
static int uop_facts_proven(const struct opt_result *f)
{
	return f->stage && f->strategy && isfinite(f->tpi_s) && f->bound_s >= f->tpi_s * (1 - 1e-12);
}

/*
 * Hands what is known of a candidate (known and found merged) to the caller's
 * memo store, with the matrices when with_matrices (they are not stored yet).
 */
static void uop_memo_put(const struct uop_options *o, const struct cost_candidate *cand,
                         int with_matrices, const struct opt_result *known,
                         const struct opt_result *found)
{
	struct opt_result merged;

	if (!o->memo || !o->memo->put)
		return;
	uop_facts_merge(known, found, &merged);
	if (merged.status == OPT_UNKNOWN && !(known && known->stage))
		return; /* nothing proven: not worth a row */
	o->memo->put(o->memo->ctx, cand->pp, cost_virtual(cand), cand->microbatches, &merged,
	             with_matrices ? cand : NULL);
}

/* Hands what this run decided about a claimed candidate to the other runs (facts NULL: the
 * claim is given up, nothing decided). */
static void uop_share_put(const struct uop_options *o, int pp, int v, long c, const struct opt_result *facts)
{
	if (o->share && o->share->put)
		o->share->put(o->share->ctx, pp, v, c, facts);
}

/* ------------------------------------------------------------- the run */

struct uop_run;

struct uop_slot {
	struct uop_run *run;
	size_t index;               /* into out->candidates */
	struct cost_candidate cand; /* owned */
	struct opt_options opt;
	double lower_bound_s;       /* uop_lower_bound(): valid whatever the solver says */
	struct opt_result known;    /* the memo's facts on a cache hit (owned); status OPT_UNKNOWN otherwise */
	int has_known;
	int decided;                /* known proves the candidate's optimum: recorded without a solve */
	int matrices_cached;        /* cand came from the memo store */
	int reduced;                /* cand had its dominated strategies removed in this run */
	int claimed;                /* this run claimed the candidate (opts->share): what it decides,
	                               or nothing, goes to share->put */
	int again;                  /* a later round's solve (uop_rounds): prev is the candidate before
	                               it; done is not counted twice, and an answer no better than
	                               prev's keeps prev's plan, with the larger bound */
	struct uop_candidate prev;
	int *start_stage;           /* owned or NULL: the quick plan of cand (uop_start), whose TPI
	                               start_tpi is held in run->start_best; whatever the solve
	                               answers, the candidate ends with a plan at most this good */
	size_t *start_strategy;     /* owned or NULL */
	double start_tpi;
	/* a solve in a worker, from its start to its completion, is on run->flight (lock):
	 * a better plan recorded meanwhile that its bound cannot beat stops it (uop_supersede) */
	pool_ticket ticket;         /* guarded by run->lock; 0 until started */
	int superseded;             /* guarded by run->lock: canceled for a plan at or below its bound */
	struct uop_slot *flight_next; /* guarded by run->lock */
};

static void uop_slot_free(struct uop_slot *slot)
{
	cost_candidate_release(&slot->cand);
	opt_result_release(&slot->known);
	free(slot->start_stage);
	free(slot->start_strategy);
	free(slot);
}

struct uop_run {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const struct uop_options *opts;
	struct uop_result *out;
	size_t in_flight;           /* guarded by lock */
	size_t done;                /* guarded by lock */
	double best_tpi;            /* guarded by lock */
	double shared_best;         /* guarded by lock: the least incumbent a share claim told (INFINITY) */
	double start_best;          /* guarded by lock: the least start_tpi of a dispatched slot (INFINITY) */
	double worker_s;            /* guarded by lock: wall seconds of the solves so far */
	int budget_spent;           /* guarded by lock: worker_s reached opts->budget_worker_s */
	int deadline_passed;        /* guarded by lock: a candidate was left for opts->deadline_s */
	int stopped;                /* guarded by lock: a candidate was left for opts->stop */
	int stop_seen;              /* guarded by lock: the running solves were canceled for opts->stop */
	int bounded;                /* set before any solve: every candidate's bound_s is a proven
	                               bound (the bound pass ran); candidates' bound_s guarded by lock */
	struct pool *pool;          /* the solves' pool (NULL: inline); set before any solve */
	struct uop_slot *flight;    /* guarded by lock: the slots whose solve started in a worker */
	struct frac_memo *frac;     /* owned: the reshard fractions of the run's builds (the parent's
	                               only: a worker builds nothing); NULL: none (out of memory) */
	uniap_code fail;            /* first internal failure, guarded by lock */
	struct uniap_err fail_err;
};

static void uop_progress(struct uop_run *run)
{
	struct uop_progress p = { 0, run->out->n_candidates, INFINITY, 0 };
	size_t i;

	if (!run->opts->progress)
		return;
	pthread_mutex_lock(&run->lock);
	p.done = run->done;
	p.best_tpi_s = run->best_tpi;
	if (run->bounded) {
		/* every candidate's bound: a decided one's, or the bound pass's */
		p.bound_s = run->best_tpi;
		for (i = 0; i < run->out->n_candidates; i++)
			if (run->out->candidates[i].bound_s < p.bound_s)
				p.bound_s = run->out->candidates[i].bound_s;
	}
	pthread_mutex_unlock(&run->lock);
	run->opts->progress(run->opts->progress_ctx, &p);
}

/* Sets candidate c's bound under the run's lock (progress reads every bound). */
static void uop_set_bound(struct uop_run *run, struct uop_candidate *c, double bound_s)
{
	pthread_mutex_lock(&run->lock);
	c->bound_s = bound_s;
	pthread_mutex_unlock(&run->lock);
}

/*
 * 1 unless a reported TPI (finite: a plan was reported) disagrees with the
 * TPI recomputed from the plan, beyond rounding; a plan that recomputes to
 * infinity (invalid or over memory) always disagrees.
 */
static int uop_tpi_agrees(double reported, double recomputed)
{
	return !isfinite(reported) ||
	       (isfinite(recomputed) && fabs(recomputed - reported) <= 1e-9 * fabs(recomputed));
}

/*
 * Candidate c after a later round's solve, prev before it (caller holds the
 * lock): the better plan of the two stays (the run's best already took the
 * new one if it is better), the larger bound holds, seconds add up, and a
 * plan the bound reaches is optimal.
 */
static void uop_merge_again(struct uop_candidate *c, const struct uop_candidate *prev)
{
	double bound = c->bound_s > prev->bound_s ? c->bound_s : prev->bound_s;

	if (isfinite(prev->tpi_s) && !(c->tpi_s < prev->tpi_s)) {
		memcpy(c->status, prev->status, sizeof(c->status));
		memcpy(c->note, prev->note, sizeof(c->note));
		c->method = prev->method;
		c->tpi_s = prev->tpi_s;
	}
	c->bound_s = bound;
	c->solve_s += prev->solve_s;
	if (isfinite(c->tpi_s) && c->bound_s >= c->tpi_s) {
		snprintf(c->status, sizeof(c->status), "optimal");
		c->bound_s = c->tpi_s;
	}
}

/*
 * The TPI candidates' bounds are held against (run->lock held): the least of
 * the run's best plan, a share's incumbent, and the start of a dispatched
 * solve, each a plan that exists: a slot's start is its own answer whenever
 * its solve brings no better one (uop_record, uop_done).
 */
static double uop_pruning(const struct uop_run *run)
{
	double p = run->best_tpi;

	if (run->opts->every_candidate)
		return INFINITY; /* each candidate is solved to its own optimum */

	if (run->shared_best < p)
		p = run->shared_best;
	if (run->start_best < p)
		p = run->start_best;
	return p;
}

static void uop_settle_by_bound(struct uop_run *run, struct uop_candidate *c, const char *status,
                                double lb, int cached);
static void uop_settle_claimed(struct uop_run *run, struct uop_candidate *c, const char *status,
                               double lb, int cached);

/*
 * Stops the running solves that cannot win (run->lock held): a first-round
 * solve whose candidate's proven bound is at or above the least plan the run
 * prunes by (uop_pruning) cannot give a better plan, so its worker is killed
 * and uop_done settles it "pruned", as if its turn had come after that plan.
 * Only the pool is called (pool_cancel marks and returns; the completion comes
 * later on a pool thread).
 */
static void uop_supersede(struct uop_run *run)
{
	double p = uop_pruning(run);
	struct uop_slot *s;

	/* after a stop the run has canceled them all: they end as the stop says */
	if (!isfinite(p) || !run->pool || run->stop_seen)
		return;
	for (s = run->flight; s; s = s->flight_next)
		if (!s->superseded && !s->again && s->ticket != 0 &&
		    s->lower_bound_s >= p * (1 + UOP_TIE_TOLERANCE) &&
		    pool_cancel(run->pool, s->ticket, NULL) == UNIAP_OK)
			s->superseded = 1;
}

/* The pool started slot's solve (a pool thread): it joins run->flight. */
static void uop_started(void *ctx, pool_ticket id, pid_t pid)
{
	struct uop_slot *slot = ctx;
	struct uop_run *run = slot->run;

	(void)pid;
	pthread_mutex_lock(&run->lock);
	slot->ticket = id;
	slot->flight_next = run->flight;
	run->flight = slot;
	uop_supersede(run); /* a plan found while it was queued may stop it already */
	pthread_mutex_unlock(&run->lock);
}

/* Takes slot off run->flight (a no-op when it never started); 1 when it was superseded. */
static int uop_landed(struct uop_run *run, struct uop_slot *slot)
{
	struct uop_slot **p;
	int superseded;

	pthread_mutex_lock(&run->lock);
	for (p = &run->flight; *p; p = &(*p)->flight_next)
		if (*p == slot) {
			*p = slot->flight_next;
			break;
		}
	superseded = slot->superseded;
	pthread_mutex_unlock(&run->lock);
	return superseded;
}

/* Records a solved candidate; takes ownership of slot->cand and r's arrays. */
static void uop_record(struct uop_run *run, struct uop_slot *slot, struct opt_result *r)
{
	struct uop_candidate *c = &run->out->candidates[slot->index];
	struct uop_result *out = run->out;
	double tpi = INFINITY;

	/* never trust a reported TPI: recompute it on the parent's matrices */
	if (r->stage && r->strategy && r->n_layers == slot->cand.n_layers)
		tpi = opt_tpi(&slot->cand, r->stage, r->strategy);
	if (slot->start_stage && (!(tpi <= slot->start_tpi) || !uop_tpi_agrees(r->tpi_s, tpi)) &&
	    (r->status != OPT_PRUNED || slot->start_tpi < slot->opt.cutoff_tpi)) {
		/* the solve ended without a plan as good as its start (a limit, or a plan that
		 * does not recompute): the start is the answer, as the run's pruning counted on */
		char why[sizeof(r->note)];

		if (!uop_tpi_agrees(r->tpi_s, tpi))
			snprintf(why, sizeof(why), "solver reported %.17g, recomputed %.17g", r->tpi_s, tpi);
		else
			snprintf(why, sizeof(why), "%s", r->note[0] ? r->note : "no plan as good as its start");
		snprintf(r->note, sizeof(r->note), "%.*s: its start is the answer", (int)sizeof(r->note) - 32, why);
		free(r->stage);
		free(r->strategy);
		r->stage = slot->start_stage;
		r->strategy = slot->start_strategy;
		slot->start_stage = NULL;
		slot->start_strategy = NULL;
		r->n_layers = slot->cand.n_layers;
		r->tpi_s = tpi = slot->start_tpi;
		r->status = OPT_FEASIBLE;
		r->bound_s = fmin(r->bound_s, tpi);
	}
	if (r->status == OPT_FEASIBLE && uop_tpi_agrees(r->tpi_s, tpi) && isfinite(tpi) &&
	    tpi <= slot->lower_bound_s * (1 + UOP_TIE_TOLERANCE)) {
		/* the plan meets the candidate's proven lower bound (uop_lower_bound): optimal,
		 * whatever the solver could not prove in its time */
		r->status = OPT_OPTIMAL;
		r->bound_s = fmin(slot->lower_bound_s, tpi);
		snprintf(r->note, sizeof(r->note), "its plan meets the candidate's lower bound %.9g s",
		         slot->lower_bound_s);
	}
	if (!slot->decided && !slot->again && uop_tpi_agrees(r->tpi_s, tpi))
		uop_memo_put(run->opts, &slot->cand, !slot->matrices_cached || slot->reduced,
		             slot->has_known ? &slot->known : NULL, r);
	if (slot->claimed)
		uop_share_put(run->opts, c->pp, c->virtual_stages, c->microbatches,
		              uop_tpi_agrees(r->tpi_s, tpi) ? r : NULL);
	pthread_mutex_lock(&run->lock);
	snprintf(c->status, sizeof(c->status), "%s", opt_status_name(r->status));
	c->method = r->method;
	c->solve_s = r->solve_s;
	c->bound_s = r->bound_s > slot->lower_bound_s ? r->bound_s : slot->lower_bound_s;
	c->tpi_s = tpi;
	snprintf(c->note, sizeof(c->note), "%.*s", (int)sizeof(c->note) - 1, r->note);
	if (!uop_tpi_agrees(r->tpi_s, tpi)) {
		snprintf(c->status, sizeof(c->status), "error");
		snprintf(c->note, sizeof(c->note), "solver reported %.17g, recomputed %.17g", r->tpi_s, tpi);
		c->tpi_s = INFINITY;
	} else if (isfinite(tpi) && (tpi < run->best_tpi ||
	                             (tpi == run->best_tpi && (long)slot->index < out->best))) {
		/* ties go to the earlier candidate, so the answer does not depend on timing */
		run->best_tpi = tpi;
		out->best = (long)slot->index;
		cost_candidate_release(&out->cand);
		out->cand = slot->cand;
		memset(&slot->cand, 0, sizeof(slot->cand));
		free(out->stage);
		free(out->strategy);
		out->stage = r->stage;
		out->strategy = r->strategy;
		r->stage = NULL;
		r->strategy = NULL;
		uop_supersede(run);
	}
	if (slot->again) {
		uop_merge_again(c, &slot->prev);
		pthread_mutex_unlock(&run->lock);
		return;
	}
	run->done++;
	pthread_mutex_unlock(&run->lock);
}

static void uop_fail_candidate(struct uop_run *run, struct uop_slot *slot, const char *status,
                               const char *note)
{
	struct uop_candidate *c = &run->out->candidates[slot->index];

	if (slot->claimed)
		uop_share_put(run->opts, c->pp, c->virtual_stages, c->microbatches, NULL);
	pthread_mutex_lock(&run->lock);
	if (slot->again) {
		/* a later round failed: the first round's answer stands */
		pthread_mutex_unlock(&run->lock);
		return;
	}
	snprintf(c->status, sizeof(c->status), "%s", status);
	snprintf(c->note, sizeof(c->note), "%.*s", (int)sizeof(c->note) - 1, note);
	c->bound_s = slot->lower_bound_s; /* the solver proved nothing; the simple bound stands */
	run->done++;
	pthread_mutex_unlock(&run->lock);
}

/*
 * The last thing a completion does: after it the calling thread may return
 * from uop_run and free run, so nothing may touch run or slot afterwards.
 */
static void uop_finish(struct uop_run *run)
{
	pthread_mutex_lock(&run->lock);
	run->in_flight--;
	pthread_cond_broadcast(&run->cond);
	pthread_mutex_unlock(&run->lock);
}

/* Runs in the worker process: solve and send the packed result back. */
static int uop_work(const void *in, size_t in_len, void **out, size_t *out_len, void *arg)
{
	struct uop_slot *slot = arg;
	struct opt_result r;
	struct uniap_err err;
	unsigned char *buf = NULL;
	size_t len = 0;

	(void)in;
	(void)in_len;
	opt_result_init(&r);
	if (target_solve(slot->run->opts->target, &slot->cand, &slot->opt, &r, &err) != UNIAP_OK)
		snprintf(r.note, sizeof(r.note), "%.*s", (int)sizeof(r.note) - 1, err.msg);
	if (opt_result_pack(&r, &buf, &len, &err) != UNIAP_OK)
		return 1;
	*out = buf;
	*out_len = len;
	return 0;
}

/* Completion of a worker, on a pool thread. */
/* Adds seconds of one solve to the run's worker seconds; any thread. */
static void uop_spend(struct uop_run *run, double seconds)
{
	pthread_mutex_lock(&run->lock);
	run->worker_s += seconds;
	if (run->opts->budget_worker_s > 0 && run->worker_s >= run->opts->budget_worker_s)
		run->budget_spent = 1;
	pthread_mutex_unlock(&run->lock);
}

/* A solve with a start that brought no result: the start is recorded as its answer
 * (uop_record), why says what happened to the solve. */
static void uop_record_start(struct uop_run *run, struct uop_slot *slot, double wall_s, const char *why)
{
	struct opt_result r;

	opt_result_init(&r);
	r.status = OPT_UNKNOWN;
	r.method = OPT_METHOD_MILP;
	r.solve_s = wall_s;
	snprintf(r.note, sizeof(r.note), "%.*s", (int)sizeof(r.note) - 1, why);
	uop_record(run, slot, &r);
	opt_result_release(&r);
}

static void uop_done(void *ctx, const struct pool_outcome *o)
{
	struct uop_slot *slot = ctx;
	struct uop_run *run = slot->run;
	struct opt_result r;
	struct uniap_err err;
	int superseded = uop_landed(run, slot);

	uop_spend(run, o->wall_s);

	if (superseded && o->status == POOL_CANCELED) {
		/* stopped by a better plan (uop_supersede): pruned by its bound, as it would have
		 * been had its turn come after that plan */
		struct uop_candidate *c = &run->out->candidates[slot->index];
		double best;

		pthread_mutex_lock(&run->lock);
		best = uop_pruning(run);
		c->solve_s = o->wall_s;
		snprintf(c->note, sizeof(c->note), "lower bound %.6g s is not below the best TPI %.6g s (its solve was stopped)",
		         slot->lower_bound_s, best);
		pthread_mutex_unlock(&run->lock);
		if (slot->claimed)
			uop_settle_claimed(run, c, "pruned", slot->lower_bound_s, slot->has_known);
		else
			uop_settle_by_bound(run, c, "pruned", slot->lower_bound_s, slot->has_known);
	} else if (o->status == POOL_TIMEOUT && run->opts->deadline_s > 0 && opt_clock_s() >= run->opts->deadline_s &&
	    !slot->start_stage) {
		/* killed for the run's deadline (uop_dispatch): left for it, like one never started */
		uop_fail_candidate(run, slot, "deadline", "not solved: still solving when the run's deadline passed");
		pthread_mutex_lock(&run->lock);
		run->deadline_passed = 1;
		pthread_mutex_unlock(&run->lock);
	} else if ((o->status != POOL_OK || o->work_rc != 0) && slot->start_stage) {
		/* the solve failed (a worker killed at its hard limit, say): its start is the answer,
		 * as the run's pruning already counted on */
		char why[OPT_NOTE_MAX];

		snprintf(why, sizeof(why), "%s (%.*s)", o->status == POOL_OK ? "error" : pool_status_name(o->status),
		         (int)sizeof(why) / 2, o->msg[0] ? o->msg : "the worker could not pack its result");
		uop_record_start(run, slot, o->wall_s, why);
		if (o->status == POOL_TIMEOUT && run->opts->deadline_s > 0 && opt_clock_s() >= run->opts->deadline_s) {
			pthread_mutex_lock(&run->lock);
			run->deadline_passed = 1;
			pthread_mutex_unlock(&run->lock);
		}
	} else if (o->status != POOL_OK || o->work_rc != 0) {
		uop_fail_candidate(run, slot, o->status == POOL_OK ? "error" : pool_status_name(o->status),
		                   o->msg[0] ? o->msg : "the worker could not pack its result");
	} else if (opt_result_unpack(o->out, o->out_len, &r, &err) != UNIAP_OK) {
		if (slot->start_stage)
			uop_record_start(run, slot, o->wall_s, err.msg);
		else
			uop_fail_candidate(run, slot, "error", err.msg);
	} else {
		uop_record(run, slot, &r);
		opt_result_release(&r);
	}
	uop_slot_free(slot);
	uop_progress(run);
	uop_finish(run);
}

/*
 * Lagrangian bound on S = sum_u A[u][k_u] under the memory that all stages
 * hold together: sum_u (fixed + m_in * per_mb) <= pp * limit, where m_in is
 * the smallest in-flight count.  For any lambda >= 0,
 *   S >= sum_u min_k (A + lambda * mem) - lambda * pp * limit
 * (weak duality), so every lambda tried gives a valid bound; the best is kept.
 * Returns INFINITY when even the least memory of every layer cannot fit.
 */
static double uop_time_bound(const struct cost_candidate *c)
{
	size_t K = cost_k(c), u, k;
	long m_in = c->inflight[0];
	double cap = (double)c->pp * c->memory_limit_bytes, least_mem = 0, plain = 0, best, scale;
	int j, i;

	for (i = 1; i < cost_stages(c); i++)
		if (c->inflight[i] < m_in)
			m_in = c->inflight[i];
	/* with peak rows a device holds at least one row: sum_j h_j a_j >= min_j h_j
	 * sum_j a_j, so the count every device surely holds in each chunk is the
	 * least over devices of the best row's least entry */
	if (c->n_peaks > 0) {
		int d, v = cost_virtual(c);
		size_t r;

		m_in = -1;
		for (d = 0; d < c->pp; d++) {
			long top = 0;

			for (r = 0; r < c->n_peaks; r++) {
				const long *h = c->peaks + r * (size_t)(v + 1);
				long low = h[1];

				if (h[0] != d)
					continue;
				for (j = 1; j < v; j++)
					if (h[1 + j] < low)
						low = h[1 + j];
				if (low > top)
					top = low;
			}
			if (m_in < 0 || top < m_in)
				m_in = top;
		}
	}
	for (u = 0; u < c->n_layers; u++) {
		double t = INFINITY, m = INFINITY;

		for (k = 0; k < K; k++) {
			size_t at = u * K + k;
			double mem = c->memory_fixed_bytes[at] + (double)m_in * c->memory_per_microbatch_bytes[at];

			if (c->time_s[at] < t)
				t = c->time_s[at];
			if (mem < m)
				m = mem;
		}
		plain += t;
		least_mem += m;
	}
	if (least_mem > cap)
		return INFINITY;
	best = plain;
	scale = cap > 0 ? plain / cap : 0;
	for (j = -12; j <= 12 && scale > 0; j++) {
		double lambda = scale * pow(2.0, j), sum = -lambda * cap;

		for (u = 0; u < c->n_layers; u++) {
			double v = INFINITY;

			for (k = 0; k < K; k++) {
				size_t at = u * K + k;
				double x = c->time_s[at] + lambda * (c->memory_fixed_bytes[at] +
					(double)m_in * c->memory_per_microbatch_bytes[at]);

				if (x < v)
					v = x;
			}
			sum += v;
		}
		if (sum > best)
			best = sum;
	}
	return best;
}

/* 1 when m's n - 1 edges are u -> u + 1, each u once: a chain in index order. */
static int uop_model_chain(const struct model_profile *m)
{
	unsigned char *seen;
	size_t e;
	int ok = 1;

	if (m->n_layers == 0 || m->n_edges != m->n_layers - 1)
		return 0;
	seen = calloc(m->n_layers, 1);
	if (!seen)
		return 0;
	for (e = 0; e < m->n_edges && ok; e++) {
		size_t f = m->edges[e].from;

		if (f + 1 >= m->n_layers || m->edges[e].to != f + 1 || seen[f])
			ok = 0;
		else
			seen[f] = 1;
	}
	free(seen);
	return ok;
}

/* A valid lower bound on a candidate's TPI: sum p >= S (R, R' >= 0) and
 * the bottleneck T >= max(S / pp, P), P the packing bound of the layers'
 * least times on pp devices (opt_packing_bound: whole layers), so TPI >= S +
 * (c - 1) * T; interleaved, the device loads sum to sum p too, so TPI >= S / v
 * + (c - 1/v) * T, and T >= the devices' loads >= opt_rank_bound (whole
 * layers within each device's memory; chain: the model is a chain, so its
 * ends sit on the first and last devices).  With edges (not a layers_only
 * build) sum o >= opt_transfer_bound joins sum p >= S.  Interleaved, the
 * counts' TPI bound too (opt_rank_tpi_bound; both from opt_rank_bounds).  INFINITY when the memory
 * cannot fit at all.  Under the makespan objective (opt_makespan_objective), which the formula
 * bounds from above, only what the iteration as run must take: one micro-batch's round trip
 * (sum p + sum o), K (sum p + sum o / c) (opt_makespan_factor) and c times the busiest
 * stage's compute (T's share of p alone: a rank's sends and receives of one call overlap). */
static double uop_lower_bound(const struct cost_candidate *c, int chain)
{
	double sum_p = uop_time_bound(c), sum = sum_p + opt_transfer_bound(c), t, *least;
	size_t K = cost_k(c), u, k;
	int v = cost_virtual(c), ms = opt_makespan_objective(c);

	if (isinf(sum))
		return INFINITY; /* not INF + 0 * INF = NaN when c = 1 */
	if (ms)
		t = sum_p / c->pp;
	/* the devices' loads sum to sum p; without interleaving the cycles sum to
	 * sum p + 2 sum o less the ends' */
	else
		t = (v > 1 ? sum_p : sum) / c->pp;
	least = malloc((c->n_layers ? c->n_layers : 1) * sizeof(double));
	if (least) { /* out of memory: the mean alone, still a bound */
		for (u = 0; u < c->n_layers; u++) {
			least[u] = INFINITY;
			for (k = 0; k < K; k++)
				least[u] = fmin(least[u], c->time_s[u * K + k]);
			if (!isfinite(least[u]))
				least[u] = 0;
		}
		t = fmax(t, opt_packing_bound(least, c->n_layers, c->pp));
		free(least);
	}
	if (v > 1 && ms) {
		/* interleaved as run: a device computes its c P_d one unit after another */
		t = fmax(t, opt_rank_bound(c, chain));
		if (isinf(t))
			return INFINITY;
		return fmax(sum, (double)c->microbatches * t);
	}
	if (v > 1) {
		double counts_tpi;

		/* the counts' loads, and their own sums, where memory makes some devices slower */
		t = fmax(t, opt_rank_bounds(c, chain, sum - sum_p, &counts_tpi));
		if (isinf(t))
			return INFINITY;
		return fmax(sum / v + ((double)c->microbatches - 1.0 / v) * t, counts_tpi);
	}
	if (ms)
		return fmax(fmax(sum, (double)c->microbatches * t),
		            opt_makespan_factor(c->microbatches, c->pp) * (sum_p + (sum - sum_p) / (double)c->microbatches));
	return sum + (double)(c->microbatches - 1) * t;
}

/* ------------------------------------------------------ enumeration */

/* A growing array of longs (uop_divisors, uop_chunk_counts). */
struct uop_longs {
	long *v;
	size_t n, cap;
};

/* Appends x; -1 (and v freed) when out of memory. */
static int uop_longs_push(struct uop_longs *l, long x)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		long *w = realloc(l->v, cap * sizeof(*w));

		if (!w) {
			free(l->v);
			l->v = NULL;
			return -1;
		}
		l->v = w;
		l->cap = cap;
	}
	l->v[l->n++] = x;
	return 0;
}

/*
 * Every divisor of n (n >= 1) in increasing order, into an owned array
 * (free()); *count of them.  O(sqrt n): the small ones, then their
 * cofactors.  Every one, however many (a batch of 1441440 has 288): the grid
 * has no cap, so an optimum over it is one over every candidate.  -1 when
 * out of memory.
 */
static int uop_divisors(long n, long **out, size_t *count)
{
	struct uop_longs l = { NULL, 0, 0 };
	size_t i, small;
	long d;

	*out = NULL;
	*count = 0;
	for (d = 1; d <= n / d; d++)
		if (n % d == 0 && uop_longs_push(&l, d) != 0)
			return -1;
	/* the cofactors of the small ones, largest small first: increasing */
	small = l.n;
	for (i = small; i-- > 0;)
		if (n / l.v[i] != l.v[i] && uop_longs_push(&l, n / l.v[i]) != 0)
			return -1;
	*out = l.v;
	*count = l.n;
	return 0;
}

/* Stages whose boundaries fit on the stack in uop_target_split (more: malloc). */
#define UOP_STACK_STAGES 256

/*
 * The chunk counts of n (cost_chunk_count) in increasing order, into an
 * owned array (free()): each micro-batch size ceil(n / c) once (O(sqrt n) of
 * them).  -1 when out of memory.
 */
static int uop_chunk_counts(long n, long **out, size_t *count)
{
	struct uop_longs l = { NULL, 0, 0 };
	long c = 1;

	*out = NULL;
	*count = 0;
	/* c is a chunk count; the next one is the first c whose micro-batches are smaller */
	while (c <= n) {
		long size = (n + c - 1) / c;

		if (uop_longs_push(&l, c) != 0)
			return -1;
		if (size == 1)
			break;
		c = (n + size - 2) / (size - 1);
	}
	*out = l.v;
	*count = l.n;
	return 0;
}

/* 1 when Megatron-LM can cut L layers (an embedding, L - 2 transformer layers, a head) into
 * S model chunks: equal chunks of transformer layers, or equal chunks counting the embedding
 * and the head as layers (uop_next_split). */
static int uop_megatron_chunks(size_t L, size_t S)
{
	return L >= 3 && S > 0 && ((L - 2) % S == 0 || (L % S == 0 && L / S >= 2));
}

/* Fills the (pp, c) grid of the space. */
static uniap_code uop_grid(const struct cluster_profile *cl, const struct model_profile *m,
                           const struct uop_options *o, struct uop_result *out,
                           struct uniap_err *err)
{
	const struct target_rules *r = target_rules(o->target);
	long *pps = NULL, *cs = NULL;
	size_t n_pp = 0, n_c = 0, i, j;
	/* a one-strategy Megatron-LM plan is evaluated, not searched: every v whose model chunks
	 * Megatron-LM can split (uop_megatron_chunks), up to the cost model's most */
	int megatron_v = !o->virtual_stages && r && r->one_strategy && r->split == TARGET_SPLIT_MEGATRON;
	/* interleaved: the v given, or each of the search range */
	int v_lo = o->virtual_stages ? o->virtual_stages : UOP_VIRTUAL_SEARCH_MIN;
	int v_hi = o->virtual_stages ? o->virtual_stages
	                             : megatron_v ? COST_MAX_VIRTUAL_STAGES : UOP_VIRTUAL_SEARCH_MAX, v;
	size_t n_v = o->schedule == COST_INTERLEAVED ? (size_t)(v_hi - v_lo + 1) : 1;
	int bad;

	bad = uop_divisors(cluster_devices(cl), &pps, &n_pp);
	/* uneven micro-batches only where the target's runtime splits a batch so */
	if (!bad)
		bad = o->uneven && (!r || r->uneven) ? uop_chunk_counts(o->batch, &cs, &n_c)
		                                     : uop_divisors(o->batch, &cs, &n_c);
	/* pipeline degrees past the layer count never make a candidate: not counted */
	while (!bad && n_pp > 0 && (size_t)pps[n_pp - 1] > m->n_layers)
		n_pp--;
	if (!bad && n_pp > 0 && n_c > SIZE_MAX / n_pp / n_v)
		bad = 1;
	out->candidates = bad ? NULL : calloc(n_pp * n_c * n_v > 0 ? n_pp * n_c * n_v : 1, sizeof(*out->candidates));
	if (!out->candidates) {
		free(pps);
		free(cs);
		return err_set(err, UNIAP_E_NOMEM, "candidates: out of memory for %zu pipeline degrees x %zu micro-batch"
		               " counts", n_pp, n_c);
	}
	for (i = 0; i < n_pp; i++) {
		if ((size_t)pps[i] > m->n_layers || (o->space == UOP_SPACE_INTRA && pps[i] > 1))
			continue;
		/* context parallelism splits each stage's devices: cp divides them */
		if (o->cp > 1 && (cluster_devices(cl) / pps[i]) % o->cp != 0)
			continue;
		/* without a pipeline (pp 1) there is nothing to interleave: v = 1 */
		int interleave = o->schedule == COST_INTERLEAVED && pps[i] > 1;

		for (v = interleave ? v_lo : 1; v <= (interleave ? v_hi : 1); v++)
		for (j = 0; j < n_c; j++) {
			struct uop_candidate *c;

			/* interleaved: pp v model chunks of one layer or more, c a multiple of pp */
			if (v > 1 && ((size_t)pps[i] * (size_t)v > m->n_layers || cs[j] % pps[i] != 0))
				continue;
			if (v > 1 && megatron_v && !uop_megatron_chunks(m->n_layers, (size_t)pps[i] * (size_t)v))
				continue;
			c = &out->candidates[out->n_candidates++];
			c->virtual_stages = v;

			c->pp = (int)pps[i];
			c->microbatches = cs[j];
			c->tpi_s = INFINITY;
			c->bound_s = 0;
			c->method = "none";
			snprintf(c->status, sizeof(c->status), "unknown");
		}
	}
	free(pps);
	free(cs);
	return UNIAP_OK;
}

static int uop_canceled(const struct uop_options *o)
{
	return o->cancel && atomic_load(o->cancel);
}

/* Waits (run->lock held) until fewer than limit candidates are in flight. */
static void uop_wait_below(struct uop_run *run, size_t limit)
{
	while (run->in_flight >= limit && run->in_flight > 0) {
		struct timespec until;

		if (!run->opts->stop) {
			pthread_cond_wait(&run->cond, &run->lock);
			continue;
		}
		/* a stop (a signal handler's flag: nobody signals cond) is looked at every 50 ms;
		 * it kills the running solves (pool_cancel_tag waits for nothing) */
		if (atomic_load(run->opts->stop) && !run->stop_seen) {
			run->stop_seen = 1;
			if (run->pool)
				pool_cancel_tag(run->pool, run->opts->tag, NULL, NULL);
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 50 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&run->cond, &run->lock, &until);
	}
}

/* Solves one built candidate, inline or through the pool.  Takes slot. */
static uniap_code uop_dispatch(struct uop_run *run, struct pool *pool, struct uop_slot *slot,
                               struct uniap_err *err)
{
	const struct uop_options *o = run->opts;

	pthread_mutex_lock(&run->lock);
	run->in_flight++;
	/* a little above the best, so a tie is still found and broken by index */
	if (slot->start_stage && slot->start_tpi < run->start_best)
		run->start_best = slot->start_tpi;
	slot->opt.cutoff_tpi = uop_pruning(run) * (1 + UOP_TIE_TOLERANCE);
	slot->opt.bound_s = isfinite(slot->lower_bound_s) ? slot->lower_bound_s : 0;
	pthread_mutex_unlock(&run->lock);
	if (!pool) {
		struct opt_result r;
		struct uniap_err serr;

		double t0;

		opt_result_init(&r);
		/* in this process: CBC must never run on two threads at once (coin-or/Cbc #332) */
		if (o->solve_lock)
			pthread_mutex_lock(o->solve_lock);
		t0 = opt_clock_s();
		if (target_solve(o->target, &slot->cand, &slot->opt, &r, &serr) != UNIAP_OK)
			snprintf(r.note, sizeof(r.note), "%.*s", (int)sizeof(r.note) - 1, serr.msg);
		uop_spend(run, opt_clock_s() - t0);
		if (o->solve_lock)
			pthread_mutex_unlock(o->solve_lock);
		uop_record(run, slot, &r);
		opt_result_release(&r);
		uop_slot_free(slot);
		uop_progress(run);
		uop_finish(run);
		return UNIAP_OK;
	}
	for (;;) {
		struct pool_task t = {
			.work = uop_work, .arg = slot, .started = uop_started, .done = uop_done, .ctx = slot,
			.tag = o->tag, .group = o->group,
			.time_limit_s = slot->opt.time_limit_s > 0 ? slot->opt.time_limit_s + 5 : 0,
		};
		uniap_code rc;

		/* a solve that overruns its limit (CBC does, in its preprocessing) is killed soon
		 * after the run's deadline, not 5 s after its own limit: the deadline holds */
		if (o->deadline_s > 0) {
			double hard = o->deadline_s - opt_clock_s() + UOP_DEADLINE_GRACE_S;

			if (hard < UOP_DEADLINE_GRACE_S)
				hard = UOP_DEADLINE_GRACE_S;
			if (t.time_limit_s <= 0 || hard < t.time_limit_s)
				t.time_limit_s = hard;
		}
		rc = pool_submit(pool, &t, NULL, err);

		if (rc == UNIAP_OK)
			return UNIAP_OK;
		if (rc != UNIAP_E_LIMIT) {
			uop_fail_candidate(run, slot, "error", err->msg);
			uop_slot_free(slot);
			uop_finish(run);
			return rc;
		}
		/* a shared pool is full: wait for one of ours to finish, then retry */
		if (uop_canceled(o)) {
			uop_fail_candidate(run, slot, "canceled", "the run was canceled");
			uop_slot_free(slot);
			uop_finish(run);
			return err_set(err, UNIAP_E_CANCELED, "canceled");
		}
		{
			int waited;

			pthread_mutex_lock(&run->lock);
			waited = run->in_flight > 1; /* this slot is counted already */
			if (waited)
				uop_wait_below(run, run->in_flight);
			pthread_mutex_unlock(&run->lock);
			if (!waited)
				usleep(20000);
		}
	}
}

/* Solve order: a candidate whose memo proves its optimum first, the best of
 * them leading (a repeated run then finds its winner at once and decides the
 * rest from their facts); then the candidates the exact programs take before
 * those only the MILP takes (interleaved ones: CBC proves them slowly, and
 * stops as soon as its bound passes the incumbent it is given as cutoff);
 * within each, the one with the fewest strategies (its micro-batches are
 * small, so it is quick to solve and usually good), so that a strong
 * incumbent prunes the slow candidates early.  After the bound pass the
 * candidate of least bound moves to the head, behind the memo's proven ones
 * (uop_least_bound_first).  Order only changes the speed: ties are broken by
 * grid index whatever the order. */
struct uop_order {
	size_t index;
	double proven;  /* the memo's proven optimum TPI; INFINITY when none */
	int milp;       /* 1: only the MILP solves it (interleaved) */
	size_t work;
};

static int uop_order_cmp(const void *a, const void *b)
{
	const struct uop_order *x = a, *y = b;

	if (x->proven != y->proven)
		return x->proven < y->proven ? -1 : 1;
	/* equal proven optima: the earlier candidate wins the tie, so it goes first */
	if (isfinite(x->proven))
		return x->index < y->index ? -1 : x->index > y->index;
	if (x->milp != y->milp)
		return x->milp < y->milp ? -1 : 1;
	if (x->work != y->work)
		return x->work < y->work ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static struct uop_order *uop_solve_order(const struct cluster_profile *cl, const struct uop_options *o,
                                         const struct uop_result *out, const struct opt_result *known,
                                         const char *has)
{
	struct uop_order *ord = calloc(out->n_candidates ? out->n_candidates : 1, sizeof(*ord));
	size_t i, k;

	if (!ord)
		return NULL;
	for (i = 0; i < out->n_candidates; i++) {
		struct strategy_set set;
		long mb = o->batch / out->candidates[i].microbatches;

		ord[i].index = i;
		ord[i].proven = has[i] && uop_facts_proven(&known[i]) ? known[i].tpi_s : INFINITY;
		ord[i].milp = out->candidates[i].virtual_stages > 1;
		ord[i].work = (size_t)-1;
		if (strategy_enumerate(cl, out->candidates[i].pp,
		                       (o->recompute ? STRATEGY_WITH_RECOMPUTE : 0) | (o->zero ? STRATEGY_WITH_ZERO : 0) |
		                       (o->sp ? STRATEGY_WITH_SP : 0) | (o->selective ? STRATEGY_WITH_SELECTIVE : 0),
		                       &set, NULL) != UNIAP_OK)
			continue;
		ord[i].work = 0;
		for (k = 0; k < set.count; k++)
			ord[i].work += strategy_batch_width(&set.items[k]) <= mb;
		strategy_set_release(&set);
	}
	qsort(ord, out->n_candidates, sizeof(*ord), uop_order_cmp);
	return ord;
}

/* Every candidate's facts from the memo store (has[i] = 1 on a hit). */
static void uop_memo_facts(const struct uop_options *o, const struct model_profile *m,
                           const struct uop_result *out, struct opt_result *known, char *has)
{
	size_t i;

	for (i = 0; i < out->n_candidates; i++) {
		opt_result_init(&known[i]);
		if (!o->memo || !o->memo->get_facts ||
		    o->memo->get_facts(o->memo->ctx, out->candidates[i].pp, out->candidates[i].virtual_stages,
		                       out->candidates[i].microbatches, &known[i]) != 1)
			continue;
		/* a plan for another shape is a key collision or a caller's bug: as with a plan that
		 * does not recompute (uop_known_verifies), none of these facts is trusted */
		if ((known[i].stage || known[i].strategy) &&
		    (!known[i].stage || !known[i].strategy || known[i].n_layers != m->n_layers)) {
			opt_result_release(&known[i]);
			opt_result_init(&known[i]);
			continue;
		}
		if (!(known[i].bound_s >= 0))
			known[i].bound_s = 0;
		has[i] = 1;
	}
}

/* The memo's matrices of the slot's candidate into slot->cand; 1 on a hit of the right shape. */
static int uop_memo_matrices(const struct uop_options *o, const struct model_profile *m,
                             const struct uop_candidate *c, struct uop_slot *slot)
{
	if (!o->memo || !o->memo->get_matrices ||
	    o->memo->get_matrices(o->memo->ctx, c->pp, c->virtual_stages, c->microbatches, &slot->cand) != 1)
		return 0;
	if (slot->cand.pp != c->pp || cost_virtual(&slot->cand) != c->virtual_stages ||
	    slot->cand.microbatches != c->microbatches ||
	    slot->cand.n_layers != m->n_layers || opt_candidate_check(&slot->cand, NULL) != UNIAP_OK) {
		cost_candidate_release(&slot->cand);
		return 0;
	}
	return 1;
}

/* Records a bound-only fact (pruned or infeasible before any solve) of candidate c. */
static void uop_memo_put_bound(const struct uop_options *o, const struct uop_candidate *c,
                               double bound)
{
	struct opt_result f;

	if (!o->memo || !o->memo->put)
		return;
	opt_result_init(&f);
	f.status = isinf(bound) ? OPT_INFEASIBLE : OPT_PRUNED;
	f.bound_s = bound;
	f.method = OPT_METHOD_LOWER_BOUND;
	/* facts without a plan index no matrices: none are stored with them */
	o->memo->put(o->memo->ctx, c->pp, c->virtual_stages, c->microbatches, &f, NULL);
}

/* One more candidate decided without a solve. */
static void uop_count_done(struct uop_run *run)
{
	pthread_mutex_lock(&run->lock);
	run->done++;
	pthread_mutex_unlock(&run->lock);
	uop_progress(run);
}

/*
 * Decides candidate c (index) from its memo's facts alone, when they suffice:
 * proven infeasible, a bound at or above the best TPI, or a proven optimum
 * that cannot win (worse than the best, or equal to it at a later index: ties
 * go to the earlier candidate, as in uop_record).  1 when decided.
 */
static int uop_decide_from_facts(struct uop_run *run, struct uop_candidate *c, size_t index,
                                 const struct opt_result *f, double best, long best_index)
{
	if (isinf(f->bound_s)) {
		snprintf(c->status, sizeof(c->status), "infeasible");
		snprintf(c->note, sizeof(c->note), "proven before (cached): no plan fits the memory");
		c->method = OPT_METHOD_LOWER_BOUND;
		uop_set_bound(run, c, INFINITY);
	} else if (isfinite(best) && uop_facts_proven(f) &&
	           (f->tpi_s > best || (f->tpi_s == best && (long)index > best_index))) {
		snprintf(c->status, sizeof(c->status), "optimal");
		snprintf(c->note, sizeof(c->note), "proven before (cached)");
		c->method = f->method ? f->method : OPT_METHOD_NONE;
		c->tpi_s = f->tpi_s;
		uop_set_bound(run, c, f->bound_s);
	} else if (isfinite(best) && f->bound_s >= best * (1 + UOP_TIE_TOLERANCE)) {
		snprintf(c->status, sizeof(c->status), "pruned");
		snprintf(c->note, sizeof(c->note), "lower bound %.6g s (cached) is not below the best TPI %.6g s",
		         f->bound_s, best);
		c->method = OPT_METHOD_LOWER_BOUND;
		uop_set_bound(run, c, f->bound_s);
	} else {
		return 0;
	}
	c->cached = 1;
	c->solve_s = 0;
	uop_count_done(run);
	return 1;
}

/* Candidate c (note already written) is decided by its lower bound lb: status
 * "infeasible" or "pruned"; a fresh bound (cached 0: not from the memo) goes to
 * the memo store. */
static void uop_settle_by_bound(struct uop_run *run, struct uop_candidate *c, const char *status,
                                double lb, int cached)
{
	/* under the lock: a superseded solve settles from a pool thread (uop_done) */
	pthread_mutex_lock(&run->lock);
	snprintf(c->status, sizeof(c->status), "%s", status);
	c->bound_s = lb;
	c->method = OPT_METHOD_LOWER_BOUND;
	pthread_mutex_unlock(&run->lock);
	if (!cached)
		uop_memo_put_bound(run->opts, c, lb);
	uop_count_done(run);
}

/* Hands a bound-only decision (lb: INFINITY infeasible, else pruned; method, note c's) of a
 * candidate this run claimed to the other runs. */
static void uop_share_put_bound(struct uop_run *run, const struct uop_candidate *c, double lb,
                                const char *method)
{
	struct opt_result f;

	opt_result_init(&f);
	f.status = isinf(lb) ? OPT_INFEASIBLE : OPT_PRUNED;
	f.bound_s = lb;
	f.method = method;
	snprintf(f.note, sizeof(f.note), "%.*s", (int)sizeof(f.note) - 1, c->note);
	uop_share_put(run->opts, c->pp, c->virtual_stages, c->microbatches, &f);
}

/* uop_settle_by_bound for a candidate this run claimed: the other runs learn the bound too. */
static void uop_settle_claimed(struct uop_run *run, struct uop_candidate *c, const char *status,
                               double lb, int cached)
{
	uop_share_put_bound(run, c, lb, OPT_METHOD_LOWER_BOUND);
	uop_settle_by_bound(run, c, status, lb, cached);
}

/* Removes slot->cand's dominated strategies (same optimum, smaller problem). */
static void uop_reduce(struct uop_slot *slot)
{
	struct cost_candidate reduced;

	if (reduce_dominated(&slot->cand, &reduced, NULL, NULL) == UNIAP_OK) {
		cost_candidate_release(&slot->cand);
		slot->cand = reduced;
	}
	slot->reduced = 1;
}

/* The slot's matrices, built; the memo's plan indexes reduced matrices, so with one
 * they are reduced the same way at once. */
static uniap_code uop_build(const struct cluster_profile *cl, const struct model_profile *m,
                            const struct cost_options *co, struct uop_slot *slot, struct uniap_err *err)
{
	uniap_code rc = cost_build(cl, m, co, &slot->cand, err);

	if (rc == UNIAP_OK && slot->known.stage)
		uop_reduce(slot);
	return rc;
}

/* 1 when the memo's plan recomputes to the memo's TPI on the slot's matrices. */
static int uop_known_verifies(const struct uop_slot *slot)
{
	double t;

	if (slot->known.n_layers != slot->cand.n_layers || !isfinite(slot->known.tpi_s))
		return 0;
	t = opt_tpi(&slot->cand, slot->known.stage, slot->known.strategy);
	return uop_tpi_agrees(slot->known.tpi_s, t);
}

/* Drops the memo's facts of the slot: the candidate is treated as never seen. */
static void uop_forget_known(struct uop_slot *slot)
{
	opt_result_release(&slot->known);
	opt_result_init(&slot->known);
	slot->has_known = 0;
}

/* 1 once the run's deadline (if any) has passed. */
static int uop_past_deadline(const struct uop_options *o)
{
	return o->deadline_s > 0 && opt_clock_s() >= o->deadline_s;
}

/* Reports candidate c as left unsolved for the run's deadline (note: why). */
static void uop_deadline_candidate(struct uop_run *run, struct uop_candidate *c, const char *note)
{
	snprintf(c->status, sizeof(c->status), "deadline");
	snprintf(c->note, sizeof(c->note), "%s", note);
	pthread_mutex_lock(&run->lock);
	run->deadline_passed = 1;
	pthread_mutex_unlock(&run->lock);
	uop_count_done(run);
}

/* Candidate c's build options (full matrices) in the run's space. */
static struct cost_options uop_cost_options(const struct uop_run *run, const struct uop_candidate *c)
{
	const struct uop_options *o = run->opts;
	struct cost_options co = {
		.batch = o->batch, .pp = c->pp, .microbatches = c->microbatches,
		.schedule = o->schedule, .virtual_stages = c->virtual_stages,
		.recompute = o->recompute, .zero = o->zero, .sp = o->sp,
		.selective = o->selective, .uneven = o->uneven, .fp8 = o->fp8, .cp = o->cp, .cp_a2a = o->cp_a2a,
		.makespan = o->makespan,
		.filter = o->space == UOP_SPACE_INTER ? COST_FILTER_DP_ONLY : COST_FILTER_ALL,
		.keep = target_keep(o->target), .deadline_s = o->deadline_s,
		.runtime = o->runtime ? *o->runtime : *target_runtime(o->target),
		.frac_memo = run->frac,
	};

	return co;
}

/*
 * The bound pass, before any solve: every candidate's solver-free bound
 * (uop_lower_bound, and the memo's bound when larger) from its layer costs
 * alone (cost_options.layers_only: no edge matrices, a small part of a full
 * build) into its bound_s.  With it, a candidate that cannot fit or cannot
 * beat the best plan is decided without building its matrices, and a run cut
 * short (deadline, stop) still bounds the candidates it never started, so its
 * answer carries a finite gap.  A candidate the pass could not reach (the
 * deadline, stop or cancel came first, or the build failed) keeps bound 0;
 * the pass then ends and run->bounded stays 0.  A candidate whose layers alone
 * prove it infeasible gets bound INFINITY and its note.
 */
static void uop_bound_pass(struct uop_run *run, const struct cluster_profile *cl,
                           const struct model_profile *m, const struct uop_order *ord,
                           const struct opt_result *known, const char *has)
{
	const struct uop_options *o = run->opts;
	struct uop_result *out = run->out;
	size_t n;

	for (n = 0; n < out->n_candidates; n++) {
		size_t i = ord[n].index;
		struct uop_candidate *c = &out->candidates[i];
		struct cost_options co = uop_cost_options(run, c);
		struct cost_candidate cand;
		struct uniap_err berr;
		uniap_code brc;
		double lb;

		if (uop_canceled(o) || uop_past_deadline(o) || (o->stop && atomic_load(o->stop)))
			return;
		co.layers_only = 1;
		brc = cost_build(cl, m, &co, &cand, &berr);
		if (brc == UNIAP_E_INFEASIBLE) {
			lb = INFINITY;
			snprintf(c->note, sizeof(c->note), "%.*s", (int)sizeof(c->note) - 1, berr.msg);
		} else if (brc != UNIAP_OK) {
			return; /* the full build meets the same failure and reports it */
		} else {
			lb = uop_lower_bound(&cand, uop_model_chain(m));
			cost_candidate_release(&cand);
			if (isinf(lb))
				snprintf(c->note, sizeof(c->note),
				         "even the least memory of every layer exceeds what the %d stages hold", c->pp);
		}
		if (has[i] && known[i].bound_s > lb)
			lb = known[i].bound_s;
		uop_set_bound(run, c, lb);
	}
	pthread_mutex_lock(&run->lock);
	run->bounded = 1;
	pthread_mutex_unlock(&run->lock);
	uop_progress(run);
}

/* After the bound pass: the open candidate of least bound moves to the head of
 * the order, behind the candidates the memo proved (the relative order of the
 * rest is kept).  Its bound is the least any candidate can reach, so it is the
 * likeliest winner, and solved first its plan prunes the others by their
 * bounds at once. */
static void uop_least_bound_first(const struct uop_run *run, struct uop_order *ord)
{
	const struct uop_result *out = run->out;
	size_t n, head = 0, pick = (size_t)-1;
	double least = INFINITY;

	if (!run->bounded)
		return; /* the pass stopped early: the bounds it left unset are no order */
	while (head < out->n_candidates && isfinite(ord[head].proven))
		head++;
	for (n = head; n < out->n_candidates; n++) {
		const struct uop_candidate *c = &out->candidates[ord[n].index];

		if (strcmp(c->status, "unknown") == 0 && c->bound_s < least) {
			least = c->bound_s;
			pick = n;
		}
	}
	if (pick != (size_t)-1 && pick > head) {
		struct uop_order keep = ord[pick];

		memmove(ord + head + 1, ord + head, (pick - head) * sizeof(*ord));
		ord[head] = keep;
	}
}

/* Candidates after position n of ord still open: not decided, their bound below best. */
static size_t uop_open_after(const struct uop_result *out, const struct uop_order *ord, size_t n, double best)
{
	size_t m, open = 0;

	for (m = n + 1; m < out->n_candidates; m++) {
		const struct uop_candidate *c = &out->candidates[ord[m].index];

		if (strcmp(c->status, "unknown") == 0 && isfinite(c->bound_s) &&
		    !(isfinite(best) && c->bound_s >= best * (1 + UOP_TIE_TOLERANCE)))
			open++;
	}
	return open;
}

/*
 * A candidate's turn: UNIAP_E_CANCELED (err set) when the run is canceled;
 * else waits until fewer than limit solves run and reads the best TPI, its
 * candidate (best_index may be NULL) and whether the budget is spent;
 * *pruning (may be NULL) gets the TPI bounds are held against: the least of
 * the best and the incumbent of the runs sharing the problem.
 */
static uniap_code uop_next_turn_shared(struct uop_run *run, size_t limit, double *best, double *pruning,
                                       long *best_index, int *spent, struct uniap_err *err)
{
	if (uop_canceled(run->opts))
		return err_set(err, UNIAP_E_CANCELED, "canceled");
	pthread_mutex_lock(&run->lock);
	uop_wait_below(run, limit);
	/* every_candidate: no best prunes, decides or shortens another candidate */
	*best = run->opts->every_candidate ? INFINITY : run->best_tpi;
	if (pruning)
		*pruning = uop_pruning(run);
	if (best_index)
		*best_index = run->out->best;
	*spent = run->budget_spent;
	pthread_mutex_unlock(&run->lock);
	return UNIAP_OK;
}

static uniap_code uop_next_turn(struct uop_run *run, size_t limit, double *best, long *best_index,
                                int *spent, struct uniap_err *err)
{
	return uop_next_turn_shared(run, limit, best, NULL, best_index, spent, err);
}

/* Rounds after the first: at most this many, each only with this much time left. */
#define UOP_MAX_ROUNDS 8
#define UOP_ROUND_MIN_S 0.5

/* Sorts n candidate indices by bound, least first (insertion: a round picks few). */
static void uop_sort_by_bound(size_t *idx, size_t n, const struct uop_candidate *cs)
{
	size_t a, b;

	for (a = 1; a < n; a++) {
		size_t x = idx[a];

		for (b = a; b > 0 && cs[idx[b - 1]].bound_s > cs[x].bound_s; b--)
			idx[b] = idx[b - 1];
		idx[b] = x;
	}
}

/*
 * Later rounds of a run with a deadline: once every solve of the round before
 * has ended, the candidates whose solve its share of the deadline cut short,
 * still open (a plan not proven, or none; bound below the best), are solved
 * again, least bound first, each with its share of the time now left (fewer
 * candidates, longer shares) and the best TPI as cutoff.  Until the deadline
 * is near, nothing is open, the run's budget is spent, or UOP_MAX_ROUNDS.  A
 * later round's answer merges
 * with the first's (uop_merge_again): nothing proven is lost.
 */
static uniap_code uop_rounds(struct uop_run *run, const struct cluster_profile *cl,
                             const struct model_profile *m, struct pool *pool, char *cut,
                             struct uniap_err *err)
{
	const struct uop_options *o = run->opts;
	struct uop_result *out = run->out;
	size_t limit = pool ? (size_t)(o->threads > 0 ? o->threads : 1) : 1, *pick, n_pick, i, j;
	uniap_code rc = UNIAP_OK;
	int round;

	if (o->deadline_s <= 0)
		return UNIAP_OK;
	pick = calloc(out->n_candidates ? out->n_candidates : 1, sizeof(*pick));
	if (!pick)
		return err_set(err, UNIAP_E_NOMEM, "candidates: out of memory");
	for (round = 1; round < UOP_MAX_ROUNDS && rc == UNIAP_OK; round++) {
		double best = INFINITY;
		int spent = 0;

		pthread_mutex_lock(&run->lock);
		uop_wait_below(run, 1);
		best = o->every_candidate ? INFINITY : run->best_tpi;
		spent = run->budget_spent;
		pthread_mutex_unlock(&run->lock);
		if (spent || uop_canceled(o) || (o->stop && atomic_load(o->stop)) ||
		    o->deadline_s - opt_clock_s() < UOP_ROUND_MIN_S)
			break;
		for (n_pick = 0, i = 0; i < out->n_candidates; i++) {
			const struct uop_candidate *c = &out->candidates[i];

			if (cut[i] && (strcmp(c->status, "feasible") == 0 || strcmp(c->status, "unknown") == 0) &&
			    !(isfinite(best) && c->bound_s >= best * (1 + UOP_TIE_TOLERANCE)))
				pick[n_pick++] = i;
			cut[i] = 0;
		}
		if (n_pick == 0)
			break;
		uop_sort_by_bound(pick, n_pick, out->candidates);
		for (j = 0; j < n_pick && rc == UNIAP_OK; j++) {
			struct uop_candidate *c = &out->candidates[pick[j]];
			struct cost_options co = uop_cost_options(run, c);
			struct uop_slot *slot;
			struct uniap_err berr;
			double left, share;

			if ((rc = uop_next_turn(run, limit, &best, NULL, &spent, err)) != UNIAP_OK)
				break;
			left = o->deadline_s - opt_clock_s();
			if (spent || left < UOP_ROUND_MIN_S || (o->stop && atomic_load(o->stop)))
				break;
			if (isfinite(best) && c->bound_s >= best * (1 + UOP_TIE_TOLERANCE))
				continue; /* the best moved past it during this round */
			slot = calloc(1, sizeof(*slot));
			if (!slot) {
				rc = err_set(err, UNIAP_E_NOMEM, "candidates: out of memory");
				break;
			}
			slot->run = run;
			slot->index = pick[j];
			slot->again = 1;
			opt_result_init(&slot->known);
			opt_options_init(&slot->opt);
			slot->opt.rel_gap = o->rel_gap;
			slot->opt.early_stop = o->early_stop;
			if (uop_build(cl, m, &co, slot, &berr) != UNIAP_OK) {
				uop_slot_free(slot);
				continue; /* built before, so only the deadline stops it: the first answer stands */
			}
			uop_reduce(slot);
			pthread_mutex_lock(&run->lock);
			slot->prev = *c;
			slot->lower_bound_s = c->bound_s;
			pthread_mutex_unlock(&run->lock);
			share = left * (double)limit / (double)(n_pick - j);
			slot->opt.time_limit_s = o->time_limit_s > 0 && o->time_limit_s < left ? o->time_limit_s : left;
			if (share < slot->opt.time_limit_s) {
				slot->opt.time_limit_s = share;
				cut[pick[j]] = 1;
			}
			rc = uop_dispatch(run, pool, slot, err);
		}
	}
	free(pick);
	return rc;
}

/* What uop_solve_all's turns share. */
struct uop_turns {
	const struct cluster_profile *cl;
	const struct model_profile *m;
	struct pool *pool;
	const struct uop_order *ord;
	struct opt_result *known;   /* [candidate]: the memo's facts (has) */
	char *has;
	char *cut;                  /* [candidate]: its last solve's limit was its share of the deadline */
	size_t limit;               /* solves at once */
};

/* How a candidate's turn ended. */
enum uop_turn_end {
	UOP_TURN_TAKEN = 0,         /* decided, dispatched, or left (deadline, budget, stop) */
	UOP_TURN_BUSY,              /* another run sharing the problem holds it: come back later */
	UOP_TURN_END,               /* a helper stops claiming */
};

/* Frees a slot that will not be solved; its claim (if any) is given up, undecided. */
static void uop_slot_drop(struct uop_run *run, struct uop_slot *slot)
{
	const struct uop_candidate *c = &run->out->candidates[slot->index];

	if (slot->claimed)
		uop_share_put(run->opts, c->pp, c->virtual_stages, c->microbatches, NULL);
	uop_slot_free(slot);
}

/* A share claim's incumbent, kept when it is the least seen. */
static void uop_share_seen(struct uop_run *run, double incumbent)
{
	pthread_mutex_lock(&run->lock);
	if (incumbent < run->shared_best)
		run->shared_best = incumbent;
	pthread_mutex_unlock(&run->lock);
}

/*
 * Candidate c (index i) as another run sharing the problem decided it (f,
 * taken over).  A plan that cannot be the run's best (above its best TPI or
 * the runs' incumbent, or none) is recorded as that run reported it; one that could is checked
 * first: the matrices rebuilt and reduced as a solve reduces them, and the
 * plan's TPI recomputed on them.  *taken = 0 when it does not check out
 * (the candidate is then solved here).
 */
static uniap_code uop_take_shared(struct uop_run *run, const struct uop_turns *t, struct uop_candidate *c,
                                  size_t i, struct opt_result *f, int *taken, struct uniap_err *err)
{
	struct cost_options co = uop_cost_options(run, c);
	struct uop_slot *slot;
	struct uniap_err berr;
	double best;
	int plan = f->stage && f->strategy && f->n_layers == t->m->n_layers && isfinite(f->tpi_s);

	*taken = 0;
	/* a plan above the incumbent of the runs (or the run's own best, or a dispatched
	 * solve's start) cannot win: the incumbent's candidate is done too, and taken when
	 * its turn comes; the start's ends with a plan at least that good */
	pthread_mutex_lock(&run->lock);
	best = uop_pruning(run);
	pthread_mutex_unlock(&run->lock);
	if (!plan || !(f->tpi_s <= best * (1 + UOP_TIE_TOLERANCE))) {
		uop_spend(run, f->solve_s > 0 ? f->solve_s : 0);
		pthread_mutex_lock(&run->lock);
		snprintf(c->status, sizeof(c->status), "%s", opt_status_name(f->status));
		snprintf(c->note, sizeof(c->note), "%.*s", (int)sizeof(c->note) - 1, f->note);
		c->method = f->method ? f->method : OPT_METHOD_NONE;
		c->solve_s = f->solve_s;
		c->tpi_s = plan ? f->tpi_s : INFINITY;
		if (f->status != OPT_ERROR && f->bound_s > c->bound_s)
			c->bound_s = plan && f->bound_s > f->tpi_s ? f->tpi_s : f->bound_s;
		c->shared = 1;
		run->done++;
		pthread_mutex_unlock(&run->lock);
		uop_progress(run);
		*taken = 1;
		return UNIAP_OK;
	}
	slot = calloc(1, sizeof(*slot));
	if (!slot)
		return err_set(err, UNIAP_E_NOMEM, "candidates: out of memory");
	slot->run = run;
	slot->index = i;
	slot->known = *f;
	opt_result_init(f);
	slot->has_known = 1;
	slot->decided = 1; /* the run that solved it put it in the memo */
	if (uop_build(t->cl, t->m, &co, slot, &berr) == UNIAP_OK && uop_known_verifies(slot)) {
		struct opt_result r = slot->known;

		opt_result_init(&slot->known);
		slot->lower_bound_s = c->bound_s;
		uop_spend(run, r.solve_s > 0 ? r.solve_s : 0);
		c->shared = 1;
		uop_record(run, slot, &r);
		opt_result_release(&r);
		*taken = 1;
	}
	uop_slot_free(slot);
	if (*taken)
		uop_progress(run);
	return UNIAP_OK;
}

/*
 * Candidate ord[n]'s turn: decided from the memo's facts or its bound, left
 * for the budget, the deadline or a stop, claimed (opts->share), built,
 * bounded and dispatched.  *end says how it ended.
 */
/*
 * Interleaved candidates go to the MILP, which starts from the quick plan
 * (opt_quick_plan).  The parent makes the same plan before dispatching the
 * solve, so that its TPI prunes the candidates dispatched after it while the
 * solve runs (uop_pruning); a fraction of a second, where such a solve runs
 * to its limit.  Not for the targets that solve otherwise (ends tied, one
 * strategy), nor for a later round's solve, nor within UOP_START_MIN_LEFT_S of
 * the run's deadline.
 */
#define UOP_START_MIN_LEFT_S 2.0
static void uop_start(const struct uop_options *o, struct uop_slot *slot)
{
	const struct target_rules *r = target_rules(o->target);
	size_t n = slot->cand.n_layers;
	double t;

	if (cost_virtual(&slot->cand) < 2 || !r || r->one_strategy || r->ends_tied || slot->again)
		return;
	/* up to about a second on long chains: not when the run's deadline is that close */
	if (o->deadline_s > 0 && o->deadline_s - opt_clock_s() < UOP_START_MIN_LEFT_S)
		return;
	slot->start_stage = malloc(n * sizeof(int));
	slot->start_strategy = malloc(n * sizeof(size_t));
	if (slot->start_stage && slot->start_strategy &&
	    opt_quick_plan(&slot->cand, 0, slot->start_stage, slot->start_strategy, &t) == 1) {
		slot->start_tpi = t;
		return;
	}
	free(slot->start_stage);
	free(slot->start_strategy);
	slot->start_stage = NULL;
	slot->start_strategy = NULL;
}

static uniap_code uop_turn(struct uop_run *run, const struct uop_turns *t, size_t n, enum uop_turn_end *end,
                           struct uniap_err *err)
{
	const struct uop_options *o = run->opts;
	struct uop_result *out = run->out;
	const struct cluster_profile *cl = t->cl;
	const struct model_profile *m = t->m;
	const struct uop_order *ord = t->ord;
	struct opt_result *known = t->known;
	const char *has = t->has;
	char *cut = t->cut;
	size_t i = ord[n].index, limit = t->limit;
	struct uop_candidate *c = &out->candidates[i];
	struct cost_options co = uop_cost_options(run, c);
	struct uop_slot *slot;
	struct uniap_err berr;
	double lb, best = INFINITY, pruning = INFINITY;
	long best_index = -1;
	uniap_code brc, rc;
	int spent = 0, claimed = 0;

	*end = UOP_TURN_TAKEN;
	if ((rc = uop_next_turn_shared(run, limit, &best, &pruning, &best_index, &spent, err)) != UNIAP_OK)
		return rc;
	if (has[i] && uop_decide_from_facts(run, c, i, &known[i], best, best_index))
		return UNIAP_OK;
	/* the bound pass's bound decides it without matrices (note written by the pass),
	 * even past the deadline or budget: a true claim that costs nothing */
	if (isinf(c->bound_s)) {
		uop_settle_by_bound(run, c, "infeasible", INFINITY, has[i]);
		return UNIAP_OK;
	}
	if (isfinite(pruning) && c->bound_s >= pruning * (1 + UOP_TIE_TOLERANCE)) {
		snprintf(c->note, sizeof(c->note), "lower bound %.6g s is not below the best TPI %.6g s",
		         c->bound_s, pruning);
		uop_settle_by_bound(run, c, "pruned", c->bound_s, has[i]);
		return UNIAP_OK;
	}
	if (spent) {
		/* the run's worker seconds are spent: what is left is reported, not solved */
		snprintf(c->status, sizeof(c->status), "budget");
		snprintf(c->note, sizeof(c->note), "not solved: the run's budget of %.6g worker seconds ran out",
		         o->budget_worker_s);
		uop_count_done(run);
		return UNIAP_OK;
	}
	if (uop_past_deadline(o)) {
		uop_deadline_candidate(run, c, "not solved: the run's deadline passed");
		return UNIAP_OK;
	}
	if (o->stop && atomic_load(o->stop)) {
		snprintf(c->status, sizeof(c->status), "stopped");
		snprintf(c->note, sizeof(c->note), "not solved: the run was stopped");
		pthread_mutex_lock(&run->lock);
		run->stopped = 1;
		pthread_mutex_unlock(&run->lock);
		uop_count_done(run);
		return UNIAP_OK;
	}
	if (o->share && o->share->claim) {
		struct opt_result f;
		double incumbent = INFINITY;
		enum uop_share_claim cl_rc;
		int taken = 0;

		opt_result_init(&f);
		cl_rc = o->share->claim(o->share->ctx, c->pp, c->virtual_stages, c->microbatches, &f, &incumbent);
		uop_share_seen(run, incumbent);
		if (cl_rc == UOP_SHARE_BUSY || (cl_rc == UOP_SHARE_END && o->share->helper)) {
			opt_result_release(&f);
			*end = cl_rc == UOP_SHARE_BUSY ? UOP_TURN_BUSY : UOP_TURN_END;
			return UNIAP_OK;
		}
		if (cl_rc == UOP_SHARE_DONE) {
			rc = uop_take_shared(run, t, c, i, &f, &taken, err);
			opt_result_release(&f);
			if (rc != UNIAP_OK || taken)
				return rc;
			/* its plan did not check out here: solved here, unclaimed */
		}
		opt_result_release(&f);
		claimed = cl_rc == UOP_SHARE_MINE;
		if (o->every_candidate)
			incumbent = INFINITY;
		if (claimed && isfinite(incumbent) && incumbent < pruning &&
		    c->bound_s >= incumbent * (1 + UOP_TIE_TOLERANCE)) {
			snprintf(c->note, sizeof(c->note), "lower bound %.6g s is not below the best TPI %.6g s",
			         c->bound_s, incumbent);
			uop_settle_claimed(run, c, "pruned", c->bound_s, has[i]);
			return UNIAP_OK;
		}
		if (incumbent < pruning)
			pruning = incumbent;
	}

	slot = calloc(1, sizeof(*slot));
	if (!slot) {
		if (claimed)
			uop_share_put(o, c->pp, c->virtual_stages, c->microbatches, NULL);
		return err_set(err, UNIAP_E_NOMEM, "candidates: out of memory");
	}
	slot->run = run;
	slot->index = i;
	slot->claimed = claimed;
	opt_options_init(&slot->opt);
	slot->opt.time_limit_s = o->time_limit_s;
	slot->opt.rel_gap = o->rel_gap;
	slot->opt.early_stop = o->early_stop;
	opt_result_init(&slot->known);
	if (has[i]) {
		slot->known = known[i];
		opt_result_init(&known[i]);
		slot->has_known = 1;
		slot->matrices_cached = uop_memo_matrices(o, m, c, slot);
	}
	brc = slot->matrices_cached ? UNIAP_OK : uop_build(cl, m, &co, slot, &berr);
	if (brc == UNIAP_OK && slot->known.stage && !uop_known_verifies(slot)) {
		/* the memo's plan does not recompute to its TPI on these matrices: its facts
		 * (and matrices, when they came from it too) are not trusted; solve afresh and
		 * let the new facts replace them */
		uop_forget_known(slot);
		if (slot->matrices_cached) {
			cost_candidate_release(&slot->cand);
			slot->matrices_cached = 0;
			brc = uop_build(cl, m, &co, slot, &berr);
		}
	}
	if (brc == UNIAP_E_LIMIT && o->deadline_s > 0 && uop_past_deadline(o)) {
		uop_slot_drop(run, slot);
		uop_deadline_candidate(run, c, "not solved: the run's deadline passed while its matrices were built");
		return UNIAP_OK;
	}
	if (brc == UNIAP_E_INFEASIBLE) {
		snprintf(c->note, sizeof(c->note), "%.*s", (int)sizeof(c->note) - 1, berr.msg);
		uop_slot_free(slot);
		if (claimed)
			uop_share_put_bound(run, c, INFINITY, c->method ? c->method : OPT_METHOD_NONE);
		snprintf(c->status, sizeof(c->status), "infeasible");
		uop_set_bound(run, c, INFINITY);
		uop_count_done(run);
		return UNIAP_OK;
	}
	if (brc != UNIAP_OK) {
		uop_slot_drop(run, slot);
		*err = berr;
		return brc;
	}
	lb = uop_lower_bound(&slot->cand, uop_model_chain(m));
	if (slot->has_known && slot->known.bound_s > lb)
		lb = slot->known.bound_s;
	slot->lower_bound_s = lb;
	c->cached = slot->has_known;
	if (isinf(lb)) {
		snprintf(c->note, sizeof(c->note),
		         "even the least memory of every layer exceeds what the %d stages hold", c->pp);
		if (claimed)
			uop_settle_claimed(run, c, "infeasible", lb, slot->has_known);
		else
			uop_settle_by_bound(run, c, "infeasible", lb, slot->has_known);
		uop_slot_free(slot);
		return UNIAP_OK;
	}
	if (slot->has_known && uop_facts_proven(&slot->known)) {
		/* the memo proves this candidate's optimum: nothing to solve */
		struct opt_result r = slot->known;

		opt_result_init(&slot->known);
		slot->decided = 1;
		r.solve_s = 0;
		snprintf(r.note, sizeof(r.note), "proven before (cached)");
		uop_record(run, slot, &r);
		opt_result_release(&r);
		uop_slot_free(slot);
		uop_progress(run);
		return UNIAP_OK;
	}
	/* a plan at or above best * (1 + tolerance) is worse than best, never a tie; a
	 * bound cached from a solve pruned at that cutoff reaches it exactly */
	if (isfinite(pruning) && lb >= pruning * (1 + UOP_TIE_TOLERANCE)) {
		snprintf(c->note, sizeof(c->note),
		         "lower bound %.6g s is not below the best TPI %.6g s%s", lb, pruning,
		         slot->has_known ? " (bound cached)" : "");
		if (claimed)
			uop_settle_claimed(run, c, "pruned", lb, slot->has_known);
		else
			uop_settle_by_bound(run, c, "pruned", lb, slot->has_known);
		uop_slot_free(slot);
		return UNIAP_OK;
	}
	/* solve without dominated strategies; a memo's plan indexes its own matrices */
	if (!slot->reduced && !(slot->matrices_cached && slot->known.stage))
		uop_reduce(slot);
	uop_start(o, slot);
	if (slot->start_stage && slot->start_tpi <= slot->lower_bound_s * (1 + UOP_TIE_TOLERANCE)) {
		/* its start meets its proven lower bound: optimal, nothing to solve */
		struct opt_result r;

		opt_result_init(&r);
		r.status = OPT_FEASIBLE; /* uop_record certifies it by the bound */
		r.method = OPT_METHOD_QUICK;
		r.n_layers = slot->cand.n_layers;
		r.stage = slot->start_stage;
		r.strategy = slot->start_strategy;
		slot->start_stage = NULL;
		slot->start_strategy = NULL;
		r.tpi_s = slot->start_tpi;
		r.bound_s = slot->lower_bound_s;
		uop_record(run, slot, &r);
		opt_result_release(&r);
		uop_slot_free(slot);
		uop_progress(run);
		return UNIAP_OK;
	}
	/* the solve gets at most the run's time left */
	if (o->deadline_s > 0) {
		double left = o->deadline_s - opt_clock_s();

		if (left <= 0) {
			uop_slot_drop(run, slot);
			uop_deadline_candidate(run, c, "not solved: the run's deadline passed");
			return UNIAP_OK;
		}
		if (slot->opt.time_limit_s <= 0 || left < slot->opt.time_limit_s)
			slot->opt.time_limit_s = left;
		/* and its share of it: the candidates still open (after this one, not decided,
		 * bound below the best) share the time left on the run's workers, so that
		 * each gets a solve and its bound (an anytime DP's root bound, at least)
		 * instead of the last ones none; time one leaves unused goes to the rest */
		{
			double share = left * (double)limit / (double)(uop_open_after(out, ord, n, best) + 1);

			if (share < slot->opt.time_limit_s) {
				slot->opt.time_limit_s = share;
				cut[i] = 1;
			}
		}
	}
	return uop_dispatch(run, t->pool, slot, err);
}

/* Waits up to seconds (< 1) for one of the run's solves to end (turns came back busy). */
static void uop_pause(struct uop_run *run, double seconds)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)(seconds * 1e9);
	while (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&run->lock);
	pthread_cond_timedwait(&run->cond, &run->lock, &until);
	pthread_mutex_unlock(&run->lock);
}

/* The solver spaces: build, bound, dispatch each candidate. */
static uniap_code uop_solve_all(struct uop_run *run, const struct cluster_profile *cl,
                                const struct model_profile *m, struct pool *pool,
                                struct uniap_err *err)
{
	const struct uop_options *o = run->opts;
	struct uop_result *out = run->out;
	size_t n, i, limit = pool ? (size_t)(o->threads > 0 ? o->threads : 1) : 1, n_busy = 0;
	size_t count = out->n_candidates ? out->n_candidates : 1;
	struct opt_result *known = calloc(count, sizeof(*known));
	char *has = calloc(count, 1);
	struct uop_order *ord = NULL;
	char *cut = NULL;           /* [candidate]: its last solve's limit was its share of the deadline */
	char *busy = NULL;          /* [position in ord]: another run sharing the problem held it */
	struct uop_turns turns;
	enum uop_turn_end end = UOP_TURN_TAKEN;
	uniap_code rc = UNIAP_OK;
	double pause;

	if (known && has) {
		uop_memo_facts(o, m, out, known, has);
		ord = uop_solve_order(cl, o, out, known, has);
	}
	if (!ord) {
		free(known);
		free(has);
		return err_set(err, UNIAP_E_NOMEM, "candidates: out of memory");
	}
	uop_bound_pass(run, cl, m, ord, known, has);
	uop_least_bound_first(run, ord);
	cut = calloc(count, 1);
	busy = calloc(count, 1);
	if (!cut || !busy) {
		free(known);
		free(has);
		free(ord);
		free(cut);
		free(busy);
		return err_set(err, UNIAP_E_NOMEM, "candidates: out of memory");
	}
	turns = (struct uop_turns){ cl, m, pool, ord, known, has, cut, limit };
	for (n = 0; n < out->n_candidates && rc == UNIAP_OK && end != UOP_TURN_END; n++) {
		rc = uop_turn(run, &turns, n, &end, err);
		if (end == UOP_TURN_BUSY && !o->share->helper) {
			busy[n] = 1;
			n_busy++;
		}
	}
	/* the candidates other runs held: back to them until each is decided, here or there
	 * (a claim that runs out, its run gone, comes back MINE) */
	pause = 0.1;
	while (rc == UNIAP_OK && n_busy > 0) {
		size_t before = n_busy;

		for (n = 0; n < out->n_candidates && rc == UNIAP_OK; n++) {
			if (!busy[n])
				continue;
			rc = uop_turn(run, &turns, n, &end, err);
			if (end != UOP_TURN_BUSY) {
				busy[n] = 0;
				n_busy--;
			}
		}
		/* nothing moved: look again in 0.1 s, backing off to every 0.8 s */
		if (rc == UNIAP_OK && n_busy == before) {
			uop_pause(run, pause);
			pause = pause < 0.8 ? 2 * pause : 0.8;
		} else {
			pause = 0.1;
		}
	}
	free(busy);
	if (rc == UNIAP_OK)
		rc = uop_rounds(run, cl, m, pool, cut, err);
	/* on cancel, stop or failure, stop our running workers instead of waiting for them */
	if ((rc != UNIAP_OK || (o->stop && atomic_load(o->stop))) && pool)
		pool_cancel_tag(pool, o->tag, NULL, NULL);
	pthread_mutex_lock(&run->lock);
	uop_wait_below(run, 1);
	out->worker_s = run->worker_s;
	out->budget_spent = run->budget_spent && o->budget_worker_s > 0;
	out->deadline_passed = run->deadline_passed;
	out->stopped = run->stopped || run->stop_seen;
	/* a candidate left unsolved (deadline, budget, stop) whose bound the final best
	 * reaches cannot win: say so (the best may have come after it was left) */
	for (i = 0; rc == UNIAP_OK && i < out->n_candidates; i++) {
		struct uop_candidate *c = &out->candidates[i];

		if ((strcmp(c->status, "deadline") == 0 || strcmp(c->status, "budget") == 0 ||
		     strcmp(c->status, "stopped") == 0) && !o->every_candidate && isfinite(run->best_tpi) &&
		    c->bound_s >= run->best_tpi * (1 + UOP_TIE_TOLERANCE)) {
			snprintf(c->note, sizeof(c->note), "lower bound %.6g s is not below the best TPI %.6g s",
			         c->bound_s, run->best_tpi);
			snprintf(c->status, sizeof(c->status), "pruned");
			c->method = OPT_METHOD_LOWER_BOUND;
		}
	}
	pthread_mutex_unlock(&run->lock);
	for (i = 0; i < out->n_candidates; i++)
		opt_result_release(&known[i]);
	free(known);
	free(has);
	free(ord);
	free(cut);
	return rc;
}

/*
 * The splits a one-strategy target allows for L layers on pp stages, one at a
 * time: *it starts at 0; each call writes the next split into stage and
 * returns 1, or returns 0 when there are no more.  Megatron-LM: a transformer
 * layers on the first stage (with the embedding), b on the last (with the
 * head), m on each middle stage, a, b, m >= 1; DeepSpeed: partition_uniform.
 */
static int uop_next_split(const struct target_rules *r, size_t L, int pp, int v, size_t *it, int *stage)
{
	size_t u, n = L >= 2 ? L - 2 : 0, i = (*it)++;

	/* Megatron-LM interleaved (pp here counts the pp v stages): model chunks of n / pp
	 * transformer layers, the embedding on the first and the head on the last; or, with
	 * --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split,
	 * chunks of L / pp layers with the embedding and the head counted as layers (the first
	 * and last chunks one transformer layer fewer).  With pp >= 3 stages at most one applies
	 * (both would need pp to divide L - (L - 2) = 2). */
	if (v > 1 && r->split == TARGET_SPLIT_MEGATRON) {
		if (i > 0 || n == 0)
			return 0;
		if (n % (size_t)pp == 0) {
			stage[0] = 0;
			for (u = 0; u < n; u++)
				stage[u + 1] = (int)(u / (n / (size_t)pp));
			stage[L - 1] = pp - 1;
			return 1;
		}
		if (L % (size_t)pp != 0 || L / (size_t)pp < 2)
			return 0;
		for (u = 0; u < L; u++)
			stage[u] = (int)(u / (L / (size_t)pp));
		return 1;
	}

	if (pp == 1 || r->split == TARGET_SPLIT_EQUAL) {
		if (i > 0)
			return 0;
		for (u = 0; u < L; u++)
			stage[u] = (int)(u * (size_t)pp / L);
		return 1;
	}
	if (r->split == TARGET_SPLIT_DS_UNIFORM) {
		size_t b[UOP_STACK_STAGES + 1], *bounds = b, p;
		int s;

		if (i > 0 || (size_t)pp > L)
			return 0;
		if ((size_t)pp > UOP_STACK_STAGES && !(bounds = malloc(((size_t)pp + 1) * sizeof(*bounds))))
			return 0;
		target_ds_partition_uniform(L, pp, bounds);
		for (s = 0; s < pp; s++)
			for (p = bounds[s]; p < bounds[s + 1]; p++)
				stage[p] = s;
		if (bounds != b)
			free(bounds);
		return 1;
	}
	/* Megatron-LM: index i walks (m, a) with m the middle count (pp = 2: none) */
	{
		size_t mid = (size_t)pp - 2, m, a = 0, b, rest, k = i, pos;
		int s;

		if (n < (size_t)pp)
			return 0;
		for (m = mid ? 1 : 0;; m++) {
			if (mid && m * mid + 2 > n)
				return 0;
			rest = n - m * mid; /* a + b */
			if (k < rest - 1) {
				a = k + 1;
				break;
			}
			k -= rest - 1;
			if (!mid)
				return 0;
		}
		b = rest - a;
		stage[0] = 0;
		pos = 1;
		for (u = 0; u < a; u++)
			stage[pos++] = 0;
		for (s = 1; s <= (int)mid; s++)
			for (u = 0; u < m; u++)
				stage[pos++] = s;
		for (u = 0; u < b; u++)
			stage[pos++] = pp - 1;
		stage[pos] = pp - 1;
		return 1;
	}
}

/* The uniform space as one-strategy rules: one dp x tp for every layer, the equal split. */
static const struct target_rules uop_uniform_rules = {
	.kind = TARGET_ANY, .name = "uniform", .runtime = "the uniform space",
	.source = "uop.h", .one_strategy = 1, .split = TARGET_SPLIT_EQUAL,
};

/*
 * One strategy for every layer: a one-strategy target (Megatron-LM, DeepSpeed;
 * r its rules, its dictionary filtered by cost_build) or the uniform space
 * (r = &uop_uniform_rules, filter COST_FILTER_MEGATRON).  Every (pp, c) of
 * the grid, every strategy of the dictionary and every split r allows,
 * evaluated with the audit formula; one reported candidate per (pp, c,
 * strategy), with its best split.  Exact by enumeration.
 */
static uniap_code uop_one_strategy(struct uop_run *run, const struct cluster_profile *cl,
                                   const struct model_profile *m, const struct target_rules *r,
                                   enum cost_filter filter, struct uniap_err *err)
{
	const struct uop_options *o = run->opts;
	struct uop_result *out = run->out;
	struct uop_candidate *grid = out->candidates;
	size_t n_grid = out->n_candidates, i, cap = 0, L = m->n_layers;
	int *stage = calloc(L, sizeof(*stage)), *best_stage = calloc(L, sizeof(*best_stage));
	size_t *strat = calloc(L, sizeof(*strat));
	uniap_code rc = UNIAP_OK;

	out->candidates = NULL;
	out->n_candidates = 0;
	if (!stage || !strat || !best_stage) {
		rc = err_set(err, UNIAP_E_NOMEM, "candidates: out of memory");
		goto out;
	}
	for (i = 0; i < n_grid && rc == UNIAP_OK; i++) {
		struct cost_options co = {
			.batch = o->batch, .pp = grid[i].pp, .microbatches = grid[i].microbatches,
			.schedule = o->schedule, .virtual_stages = grid[i].virtual_stages,
			.recompute = o->recompute, .zero = o->zero, .sp = o->sp,
			.selective = o->selective, .uneven = o->uneven, .filter = filter, .fp8 = o->fp8, .cp = o->cp,
			.cp_a2a = o->cp_a2a, .makespan = o->makespan,
			.keep = target_keep(o->target),
			.runtime = o->runtime ? *o->runtime : *target_runtime(o->target),
			.frac_memo = run->frac,
		};
		struct cost_candidate cand;
		struct uniap_err berr;
		size_t k, u, best_k = (size_t)-1;

		if (uop_canceled(o)) {
			rc = err_set(err, UNIAP_E_CANCELED, "canceled");
			break;
		}
		if (r->needs_blocks && (L < 3 || (size_t)grid[i].pp * (size_t)grid[i].virtual_stages > L - 2)) {
			run->done++;
			uop_progress(run);
			continue;
		}
		rc = cost_build(cl, m, &co, &cand, &berr);
		if (rc == UNIAP_E_INFEASIBLE) {
			rc = UNIAP_OK;
			run->done++;
			uop_progress(run);
			continue;
		}
		if (rc != UNIAP_OK) {
			*err = berr;
			break;
		}
		for (k = 0; k < cost_k(&cand) && rc == UNIAP_OK; k++) {
			struct uop_candidate *c;
			double t0 = opt_clock_s(), best = INFINITY;
			size_t it = 0, n_splits = 0;

			if (out->n_candidates == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				struct uop_candidate *g = realloc(out->candidates, ncap * sizeof(*g));

				if (!g) {
					rc = err_set(err, UNIAP_E_NOMEM, "candidates: out of memory");
					break;
				}
				out->candidates = g;
				cap = ncap;
			}
			for (u = 0; u < L; u++)
				strat[u] = k;
			c = &out->candidates[out->n_candidates++];
			memset(c, 0, sizeof(*c));
			while (uop_next_split(r, L, cost_stages(&cand), cost_virtual(&cand), &it, stage)) {
				double t = opt_tpi(&cand, stage, strat);

				n_splits++;
				if (n_splits == 1 || t < best) {
					if (t < best)
						best = t;
					memcpy(best_stage, stage, L * sizeof(*stage));
				}
			}
			c->pp = cand.pp;
			c->virtual_stages = cost_virtual(&cand);
			c->microbatches = cand.microbatches;
			c->method = "evaluate";
			snprintf(c->strategy, sizeof(c->strategy), "%s", cand.strategies.items[k].name);
			c->tpi_s = best;
			c->bound_s = best;
			snprintf(c->status, sizeof(c->status), "%s", isfinite(best) ? "evaluated" : "infeasible");
			if (!isfinite(best) && n_splits > 0) {
				struct plan_eval ev;

				/* why the first split fails (memory, mostly); every split failed */
				if ((rc = plan_evaluate(&cand, best_stage, strat, &ev, err)) != UNIAP_OK)
					break;
				char why[UOP_NOTE_MAX + PLAN_REASON_MAX];

				if (n_splits == 1)
					snprintf(why, sizeof(why), "%s", ev.reason);
				else
					snprintf(why, sizeof(why), "%zu splits, none fits: %s", n_splits, ev.reason);
				snprintf(c->note, sizeof(c->note), "%.*s", (int)sizeof(c->note) - 1, why);
				plan_eval_release(&ev);
			} else if (n_splits == 0) {
				snprintf(c->note, sizeof(c->note), "%s has no split of %zu layers into %d stages",
				         r->runtime, L, cost_stages(&cand));
			}
			c->solve_s = opt_clock_s() - t0;
			if (isfinite(best) && best < run->best_tpi) {
				run->best_tpi = best;
				out->best = (long)out->n_candidates - 1;
				best_k = k;
				memcpy(out->stage, best_stage, L * sizeof(*stage));
			}
		}
		if (best_k < cost_k(&cand)) {
			/* this (pp, c) holds the new winner: keep its matrices */
			cost_candidate_release(&out->cand);
			out->cand = cand;
			for (u = 0; u < L; u++)
				out->strategy[u] = best_k;
		} else {
			cost_candidate_release(&cand);
		}
		run->done++;
		uop_progress(run);
	}
out:
	free(grid);
	free(stage);
	free(best_stage);
	free(strat);
	return rc;
}

uniap_code uop_run(const struct cluster_profile *cluster, const struct model_profile *model,
                   const struct uop_options *opts, struct pool *pool, struct uop_result *out,
                   struct uniap_err *err)
{
	struct uop_run run;
	struct uop_options eff;
	struct pool *own = NULL;
	uniap_code rc;
	double t0 = opt_clock_s();
	size_t i;

	memset(out, 0, sizeof(*out));
	out->best = -1;
	if (opts->batch < 1)
		return err_set(err, UNIAP_E_ARG, "batch: must be >= 1, got %ld", opts->batch);
	if (opts->threads < 1 || opts->threads > POOL_THREADS_MAX)
		return err_set(err, UNIAP_E_ARG, "threads: must be in [1, %d], got %d", POOL_THREADS_MAX,
		               opts->threads);
	if (!target_rules(opts->target))
		return err_set(err, UNIAP_E_ARG, "target: unknown (%d)", (int)opts->target);
	if (opts->target != TARGET_ANY && opts->space == UOP_SPACE_UNIFORM)
		return err_set(err, UNIAP_E_ARG,
		               "target: the uniform space is one Megatron-style shape already; plan %s on "
		               "the unified, inter or intra space", target_name(opts->target));
	if (opts->fp8 && !target_rules(opts->target)->fp8)
		return err_set(err, UNIAP_E_ARG, "fp8: %s does not train in FP8 (%s); plan it for megatron or without "
		               "a target", target_rules(opts->target)->runtime, target_rules(opts->target)->source);
	if (opts->cp > 1 && !target_rules(opts->target)->cp)
		return err_set(err, UNIAP_E_ARG, "context_parallel: %s has no context parallelism (ring attention; %s); "
		               "plan it for megatron or without a target", target_rules(opts->target)->runtime,
		               target_rules(opts->target)->source);
	if (opts->cp > 1 && cluster_devices(cluster) % opts->cp != 0)
		return err_set(err, UNIAP_E_ARG, "context_parallel: must divide the cluster's %d devices, got %d",
		               cluster_devices(cluster), opts->cp);
	if (target_rules(opts->target)->needs_shape && !model->shape.known)
		return err_set(err, UNIAP_E_INVALID,
		               "model.shape: %s builds the model from its shape (layers, hidden, heads, ...), "
		               "which this model document does not give; the catalog's BERT, GPT and Llama and "
		               "documents with an architecture carry it", target_rules(opts->target)->runtime);
	/* a target plans with the schedule its runtime runs */
	eff = *opts;
	eff.schedule = target_schedule(opts->target, opts->schedule);
	if (eff.schedule == COST_INTERLEAVED && eff.virtual_stages != 0 &&
	    (eff.virtual_stages < 2 || eff.virtual_stages > COST_MAX_VIRTUAL_STAGES))
		return err_set(err, UNIAP_E_ARG, "virtual_stages: must be 0 (search %d to %d, the megatron target "
		               "every v it can split) or in [2, %d] for the interleaved schedule, got %d",
		               UOP_VIRTUAL_SEARCH_MIN, UOP_VIRTUAL_SEARCH_MAX, COST_MAX_VIRTUAL_STAGES,
		               eff.virtual_stages);
	if (opts->share && opts->deadline_s > 0)
		return err_set(err, UNIAP_E_ARG, "share: a shared run has no deadline (a deadline is one process's clock)");
	opts = &eff;
	memset(&run, 0, sizeof(run));
	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.cond, NULL);
	run.opts = opts;
	run.out = out;
	run.best_tpi = INFINITY;
	run.shared_best = INFINITY;
	run.start_best = INFINITY;
	run.frac = frac_memo_new(0);
	if ((rc = uop_grid(cluster, model, opts, out, err)) != UNIAP_OK)
		goto out;
	out->stage = calloc(model->n_layers, sizeof(*out->stage));
	out->strategy = calloc(model->n_layers, sizeof(*out->strategy));
	if (!out->stage || !out->strategy) {
		rc = err_set(err, UNIAP_E_NOMEM, "plan: out of memory");
		goto out;
	}
	if (opts->space == UOP_SPACE_UNIFORM) {
		rc = uop_one_strategy(&run, cluster, model, &uop_uniform_rules, COST_FILTER_MEGATRON, err);
	} else if (target_rules(opts->target)->one_strategy) {
		rc = uop_one_strategy(&run, cluster, model, target_rules(opts->target),
		                      opts->space == UOP_SPACE_INTER ? COST_FILTER_DP_ONLY : COST_FILTER_ALL, err);
	} else {
		int solve_inline = opts->inline_solve || UOP_FORCE_INLINE;

		if (!pool && !solve_inline) {
			struct pool_config pc = { .threads = opts->threads, .queue_cap = 2 * opts->threads,
			                          .max_output_bytes = OPT_PACK_MAX };

			if ((rc = pool_new(&pc, &own, err)) != UNIAP_OK)
				goto out;
			pool = own;
		}
		run.pool = solve_inline ? NULL : pool;
		rc = uop_solve_all(&run, cluster, model, run.pool, err);
	}
	if (rc != UNIAP_OK)
		goto out;

	/* the proof: every candidate's bound against the winner */
	out->bound_s = INFINITY;
	for (i = 0; i < out->n_candidates; i++)
		if (out->candidates[i].bound_s < out->bound_s)
			out->bound_s = out->candidates[i].bound_s;
	if (out->best >= 0) {
		double tpi = out->candidates[out->best].tpi_s;

		if (out->bound_s > tpi)
			out->bound_s = tpi;
		out->gap = (tpi - out->bound_s) / tpi;
		if (out->gap < 1e-9)
			out->gap = 0;
		out->optimal = out->gap <= (opts->rel_gap > 0 ? opts->rel_gap : 0);
		rc = plan_evaluate(&out->cand, out->stage, out->strategy, &out->eval, err);
	} else {
		out->gap = INFINITY;
	}
out:
	if (own) {
		if (rc != UNIAP_OK)
			pool_cancel_tag(own, opts->tag, NULL, NULL);
		pool_free(own);
	} else if (pool && rc != UNIAP_OK) {
		pool_cancel_tag(pool, opts->tag, NULL, NULL);
		pool_wait_tag(pool, opts->tag, NULL);
	}
	out->solve_s = opt_clock_s() - t0;
	frac_memo_free(run.frac);
	pthread_cond_destroy(&run.cond);
	pthread_mutex_destroy(&run.lock);
	if (rc != UNIAP_OK)
		uop_result_release(out);
	return rc;
}
