/*
 * dp_int.h - what the chain DPs share (dp.h; dp_inst.c, dp_chain.c,
 * dp_stages.c, dp_sweep.c): the read-only view of one candidate with its
 * bounds (struct dp_inst), the bound and pruning rules, and the driver that
 * runs dp-chain's beam before an exact program.  Not a public header.
 *
 * Notation (cost.h): A[u][k] layer time, R_u[k][l] / R'_u[k][l] the same-stage /
 * cross-stage cost of the chain edge u -> u+1, mem(u, i, k) = Mf[u][k] +
 * inflight[i] * Mm[u][k].  On a chain every stage is a block of consecutive
 * layers, only the edge that leaves a block crosses a communication stage and
 * it crosses exactly one, so
 *   TPI = S + (c - 1) * M,  S = sum of every p_i and o_j,  M = max of them.
 * dp-chain and dp-stages keep, for each state, only the labels no other
 * label of the same state dominates; a label is dropped only when another one
 * is at least as good in every quantity the future can depend on, so the
 * optimum survives.  Both first run dp-chain with a beam (a few labels per
 * state) to get a valid plan whose TPI is an upper bound U, then the exact
 * program, which drops a partial plan only when a lower bound of every
 * completion exceeds U (times 1 + 1e-12, against rounding) or reaches the
 * caller's cutoff.  If the exact program finds nothing better, the beam plan
 * is optimal.  dp-sweep needs no labels and no beam: a shortest path per
 * bottleneck threshold, thresholds swept down from above.
 *
 * Memory sums are accumulated in layer order exactly as opt_tpi() does, so a
 * stage the DP accepts is one opt_tpi() accepts; the one exception, dp-sweep's
 * downward run for the last stage, says how it stays honest (dpw_block).
 *
 * Files: dp_inst.c (the instance and its bounds) is below dp_chain.c (dp-chain
 * and the driver), which is below dp_stages.c; dp_sweep.c uses dp_inst.c only.
 *
 * Never: CBC, I/O, globals, asserts on input.
 */
#ifndef UNIAP_DP_INT_H
#define UNIAP_DP_INT_H

#include <math.h>
#include <stdint.h>

#include "dp.h"

#define DP_NONE SIZE_MAX
#define DP_SLACK 1e-12 /* relative slack on the incumbent bound, against rounding */
#define DP_BEAM 4      /* labels per state in the incumbent runs */
#define DP_TABLE_MAX 33554432.0 /* entries of the dp-stages block table (256 MiB) */
#define DP_NPRICE 13   /* memory prices of the Lagrangian bound: base * 4^(-6..6) */

/* The read-only view of one candidate plus the search's bounds and counters. */
struct dp_inst {
	const struct cost_candidate *cand;
	size_t n_layers, k;
	int pp;
	long c;
	const double *time_s, *mem_fixed, *mem_micro;
	const long *inflight;
	double limit;
	const struct cost_edge **chain; /* owned array of borrowed edges, [n_layers - 1]: u -> u+1 */
	int mem_binds;                  /* 0: no stage can ever exceed the limit */
	double *rem_s;                  /* owned, [n_layers + 1]: least time still to come after layer
	                                   u (layers > u and edges >= u) */
	double *rem_layers_s;           /* owned, [n_layers + 1]: least time of the layers > u */
	double *edge_cut_s;             /* owned, [n_layers]: what crossing a stage boundary at edge
	                                   u -> u+1 adds to its least cost (min R' - min(min R, min R')) */
	double *edge_rmin_s;            /* owned, [n_layers]: the least R' of edge u -> u+1 */
	double *cut_extra_s;            /* owned, [n_layers + 1]: least over the edges e >= u of what
	                                   crossing a stage boundary adds to e's least cost
	                                   (min R'_e - min(min R_e, min R'_e)) */
	double *cut_least_s;            /* owned, [n_layers + 1]: least R' over the edges e >= u: every
	                                   communication stage o is at least that */
	double *part_s;                 /* owned, [pp * n_layers] (NULL when over its budget): the
	                                   least sum of the partition bound (dp_partition_init) for an
	                                   open stage s at layer u */
	double *part_m;                 /* owned, [pp * n_layers]: its least bottleneck */
	double *rem_peak_s;             /* owned, [n_layers + 1]: max over the layers w > u of the least
	                                   time of a strategy of w that fits the limit alone at the least
	                                   in-flight count: some stage holds w, so its time is >= that */
	double *rem_guess_s;            /* owned, [n_layers + 1]: beam only, a guess of the time of the
	                                   layers > u: each at its fastest strategy within a per-layer
	                                   share of the memory limit (not a bound) */
	double price[DP_NPRICE];        /* memory prices of the Lagrangian bound, s/byte */
	double *lag;                    /* owned, [(s * DP_NPRICE + j) * (n_layers + 1) + u] (NULL when
	                                   memory never binds): with lag_rows == pp the staged
	                                   tables C[s][u] (dp_lagrange_staged); with 1, the pooled
	                                   sum over layers w > u of min_k A[w][k] + price[j] *
	                                   mem_lb(w, k), mem_lb at the least in-flight count */
	size_t lag_rows;                /* pp (staged), or 1 (pooled, for large pp x n) */
	double deadline_s;              /* opt_clock_s() value; INFINITY when none */
	long work_limit;                /* labels past which the time is up as at the deadline; 0: none */
	double cutoff_s;                /* drop partial plans whose lower bound reaches it */
	double ub_s;                    /* TPI of the incumbent plan; INFINITY when none */
	size_t cap;                     /* label cap */
	size_t beam;                    /* 0: exact; else labels kept per state */
	double lambda;                  /* beam only: price of a byte of open-stage memory, s/byte */
	long labels;                    /* labels created (reported as nodes; dp-sweep: the entries of
	                                   its block runs, counted against work_limit only) */
	int cut_pruned;                 /* a partial plan was dropped against the cutoff */
	int timed_out;                  /* the incumbent's passes ran out of time (it has a plan) */
};

/* Builds d for cand (a chain; borrowed, as opts) with its bound tables; dp_inst_release frees it. */
uniap_code dp_inst_init(struct dp_inst *d, const struct cost_candidate *cand,
                               const struct opt_options *o, struct uniap_err *err);
void dp_inst_release(struct dp_inst *d);
/*
 * A lower bound of the final TPI of a partial plan ending at layer u (sum_s,
 * max_s, open_s, an open stage of mem_b bytes; stages_left stages for the
 * layers after u, the open one included); INFINITY when none fits (dp_inst.c).
 */
double dp_lower_bound(const struct dp_inst *d, size_t u, int stages_left, double sum_s,
                             double max_s, double open_s, double mem_b);
/* A lower bound of every plan's TPI (the least dp_lower_bound over layer 0's strategies). */
double dp_root_bound(const struct dp_inst *d);
/* 1 when no plan fits memory, proven by layer 0's strategies and the partition bound (every
 * start over the limit alone or with no completion that fits); 0 when not proven (with the
 * partition bound over its budget, only a layer 0 that fits nowhere proves it). */
int dp_root_infeasible(const struct dp_inst *d);
/* The size caps of a run, checked before any (stages: also dp-stages' block table). */
uniap_code dp_check_caps(const struct dp_inst *d, int stages, struct uniap_err *err);
/* same[a] (L entries): layers a.. and a+1.. are identical for this many layers. */
void dp_same_init(const struct dp_inst *d, size_t *same);

/* An exact program on d into stage/strategy (n_layers each); *found = 0 when it found no plan. */
typedef uniap_code (*dp_exact_fn)(struct dp_inst *d, int *stage, size_t *strategy, double *tpi_s,
                                  int *found, struct uniap_err *err);

/* dp-chain on d (dp_chain.c): exact, or with d->beam labels per state. */
uniap_code dpc_run(struct dp_inst *d, int *stage_out, size_t *strategy_out, double *tpi_s,
                          int *found, struct uniap_err *err);

/*
 * The driver (dp_chain.c): the beam incumbent, then exact bounded by it;
 * fills out as dp.h says.  stages: exact is dp-stages (its caps apply).
 */
uniap_code dp_drive(const struct cost_candidate *cand, const struct opt_options *opts,
                    struct opt_result *out, dp_exact_fn exact, int stages, const char *method,
                    struct uniap_err *err);

static inline double dp_mem(const struct dp_inst *d, size_t u, int stage, size_t k)
{
	return d->mem_fixed[u * d->k + k] + (double)d->inflight[stage] * d->mem_micro[u * d->k + k];
}

static inline uniap_code dp_check_time(const struct dp_inst *d, struct uniap_err *err)
{
	if ((isfinite(d->deadline_s) && opt_clock_s() > d->deadline_s) ||
	    (d->work_limit > 0 && d->labels >= d->work_limit))
		return err_set(err, UNIAP_E_TIMEOUT, "dp: time limit reached");
	return UNIAP_OK;
}

/* The beam's guess of the final TPI: dp_lower_bound with rem_guess_s for the layers to come. */
static inline double dp_beam_key(const struct dp_inst *d, size_t u, int stages_left, double sum_s,
                                 double max_s, double open_s)
{
	double m = fmax(max_s, open_s), rest = d->rem_guess_s[u];

	if (stages_left > 0)
		m = fmax(m, (open_s + rest) / stages_left);
	return sum_s + rest + (double)(d->c - 1) * m;
}

/* 1 when no completion of a partial plan with lower bound lb can beat the cutoff or the incumbent
 * (lb INFINITY: it has no valid completion at all, which claims nothing about the cutoff). */
static inline int dp_prune(struct dp_inst *d, double lb)
{
	if (isinf(lb))
		return 1;
	if (lb >= d->cutoff_s) {
		d->cut_pruned = 1;
		return 1;
	}
	return lb > d->ub_s * (1 + DP_SLACK);
}

/*
 * Notes that a stage was dropped for being over dp_stage_cap: a claim about the
 * cutoff when the cutoff (not the incumbent) set the cap, so that a search that
 * finds nothing says pruned, not infeasible.  Returns 1 (for use in conditions).
 */
static inline int dp_cap_drop(struct dp_inst *d)
{
	if (d->cutoff_s <= d->ub_s * (1 + DP_SLACK))
		d->cut_pruned = 1;
	return 1;
}

/* The largest stage (or communication) time an improving plan can have: c * p <= TPI. */
static inline double dp_stage_cap(const struct dp_inst *d)
{
	double b = fmin(d->cutoff_s, d->ub_s * (1 + DP_SLACK));

	return b / (double)d->c * (1 + DP_SLACK);
}

#endif
