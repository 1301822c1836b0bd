/*
 * opt.h - the optimizer's public face: solve one candidate (pp, c, cost
 * matrices) for the stage placement and per-layer strategy that minimise the
 * audit TPI of cost.h, and carry candidates and results across a pipe.
 *
 *   opt_solve()      picks the fastest exact path for the instance: an exact
 *                    dynamic program when the layer graph is a chain in index
 *                    order (core/dp_chain.c, dp_stages.c, dp_sweep.c), another over the ideals of a narrow
 *                    DAG (core/dp_dag.c), else the MILP (core/milp.c, the
 *                    only file that includes CBC), whose "optimal" is claimed
 *                    only when certified (docs/optimizer.md).  Every path
 *                    reports, as tpi_s, opt_tpi() of its own assignment,
 *                    never a solver float.  Under the makespan objective
 *                    (cost_candidate.makespan) only the MILP answers.
 *   opt_tpi()        the audit formula of cost.h on one assignment, or under
 *                    the makespan objective the iteration as run (schedsim.h).
 *
 * Files: opt.c picks the path, opt_base.c holds what the paths share
 * (opt_tpi, checks, results), opt_pack.c the byte format; the paths use
 * opt_base.c only, never opt.c, so no file of the optimizer calls back up.
 *   opt_*_pack()     a compact, versioned, little-endian byte format; the
 *   opt_*_unpack()   unpackers reject truncated or garbage buffers with
 *                    UNIAP_E_INVALID and never read out of bounds.
 *
 * Thread safety: opt_tpi, the DP and the pack functions are reentrant.  The
 * MILP is not: CBC 2.10.8 keeps global state (docs/optimizer.md), so run at
 * most one MILP per process at a time; parallel solves need processes.
 *
 * Never: I/O, globals, printing; nothing here knows about HTTP or SQLite.
 */
#ifndef UNIAP_OPT_H
#define UNIAP_OPT_H

#include <stddef.h>
#include <stdint.h>

#include "cost.h"
#include "err.h"

/*
 * The relative tolerance of every claim a result makes ("optimal", a bound,
 * "pruned", "infeasible"; docs/optimizer.md, "Certification"): optimal means
 * no plan of the candidate is faster by more than this fraction of its TPI.
 * The DPs' claims hold to 1e-12 (summation order); the MILP's, when
 * certified, to CBC's tolerances, about 1e-7 of a model scaled to about 1
 * whose kept costs span at most 1e6 (measured: 6.8e-8); stated with margin.
 */
#define OPT_CLAIM_TOLERANCE 1e-6

enum opt_status {
	OPT_OPTIMAL = 0, /* the plan is proven optimal (gap 0, or the requested rel_gap if > 0: see gap) */
	OPT_FEASIBLE,    /* a plan, not proven optimal (a limit was hit); bound_s is a proven lower bound */
	OPT_INFEASIBLE,  /* proven: no valid plan fits the memory limit */
	OPT_PRUNED,      /* proven: no valid plan has TPI < cutoff_tpi (or none exists at all) */
	OPT_UNKNOWN,     /* a limit was hit before any plan was found; bound_s (0: none) is still
	                    a proven lower bound (the chain DPs give theirs) */
	OPT_ERROR,       /* the solve failed; the returned code and err say why */
	OPT_STATUS_COUNT
};

/* "optimal", "feasible", ...; "unknown-status" when out of range. */
const char *opt_status_name(enum opt_status s);

/* Which path opt_solve takes; AUTO unless a test or benchmark forces one. */
enum opt_path {
	OPT_PATH_AUTO = 0,
	OPT_PATH_MILP,      /* always the MILP (any graph) */
	OPT_PATH_DP_CHAIN,  /* the per-layer label DP; UNIAP_E_ARG if not a chain */
	OPT_PATH_DP_STAGES, /* the stage-block DP; UNIAP_E_ARG if not a chain */
	OPT_PATH_DP_DAG,    /* the ideal DP for narrow DAGs; UNIAP_E_LIMIT when too wide */
	OPT_PATH_DP_SWEEP,  /* the bottleneck sweep; UNIAP_E_ARG if not a chain */
	OPT_PATH_COUNT
};

struct opt_options {
	double time_limit_s;   /* wall-clock limit of one solve; <= 0 or INFINITY: none */
	double rel_gap;        /* MILP stops once (tpi - bound) / tpi <= rel_gap; 0: prove optimality */
	double cutoff_tpi;     /* a TPI already achieved elsewhere; INFINITY when none.  The solve
	                          may stop (OPT_PRUNED) once it proves nothing beats it. */
	int early_stop;        /* paper appendix E, rule 1: past early_stop_after_s, stop once the gap is
	                          under early_stop_gap (rule 2, stop once the bound reaches cutoff_tpi,
	                          always holds: the cutoff is given to CBC) */
	double early_stop_after_s; /* 15 in the paper */
	double early_stop_gap;     /* 0.04 in the paper */
	int threads_inside_cbc;/* threads of CBC's own parallel branch and bound; <= 1: one */
	enum opt_path path;    /* OPT_PATH_AUTO normally */
	size_t dp_label_cap;   /* most labels the DP may hold (dp-dag: live entries of its trace,
	                          compacted when it fills); past it opt_solve falls back to the
	                          MILP ("milp-after-dp-cap"); 0: the default cap */
	long dp_dag_trial;     /* labels each dp-dag run may make when the states its ideals could
	                          hold are estimated over dp_label_cap (a trial: past it the MILP
	                          answers, the note says so); 0: OPT_DP_DAG_TRIAL_DEFAULT */
	int dp_no_incumbent;   /* 1: the DPs skip their heuristic incumbent, so the exact search alone
	                          must find the optimum (tests); 0 normally */
	long dp_work_limit;    /* labels after which dp-chain and dp-stages stop as when time_limit_s
	                          passes, with the same anytime answer, but the same on every machine
	                          however busy (tests of the anytime answers); dp-sweep counts the
	                          entries of its block runs (the quick plan's chunk starts); 0: none */
	double bound_s;        /* a lower bound on the candidate's optimum the caller has proven (the
	                          unified process's); the MILP's start searches longer, up to twice
	                          its work, for a plan that meets it (to 1e-9), and such a plan is
	                          the answer, OPT_OPTIMAL, with no MILP.  0: none */
};

#define OPT_DP_LABEL_CAP_DEFAULT ((size_t)2 << 20)
/* a sixteenth of the default cap: the skip graphs of width 8 estimated at 2e6 states and more
 * need 1e3 to 1e5 labels; parallel branches fail it in about 0.3 s (docs/optimizer.md) */
#define OPT_DP_DAG_TRIAL_DEFAULT 131072L

/* Defaults: 60 s, rel_gap 0, no cutoff, no early stop (15 s / 4 % when on), 1 thread, AUTO path. */
void opt_options_init(struct opt_options *o);

/* AUTO sends chains whose dp-stages block table (L^2 K^2 entries) is larger to dp-sweep
 * (docs/optimizer.md, "dp-sweep", has the measurements behind the line) */
#define OPT_DP_SWEEP_ABOVE 2097152.0

/* Method names a result can carry (static strings). */
#define OPT_METHOD_NONE "none"
#define OPT_METHOD_DP_CHAIN "dp-chain"
#define OPT_METHOD_DP_STAGES "dp-stages"
#define OPT_METHOD_MILP "milp"
#define OPT_METHOD_MILP_AFTER_CAP "milp-after-dp-cap"
#define OPT_METHOD_LOWER_BOUND "lower-bound" /* decided by a bound, never solved (uop) */
#define OPT_METHOD_DP_DAG "dp-dag"
#define OPT_METHOD_DP_SWEEP "dp-sweep"
#define OPT_METHOD_QUICK "quick-plan" /* the quick plan met the candidate's lower bound, never solved (uop) */

#define OPT_NOTE_MAX 160

struct opt_result {
	enum opt_status status;
	double tpi_s;        /* opt_tpi() of (stage, strategy); INFINITY when there is no plan */
	double bound_s;      /* proven lower bound on the optimum TPI: tpi_s when OPT_OPTIMAL with gap 0,
	                        INFINITY when OPT_INFEASIBLE, >= cutoff_tpi when OPT_PRUNED, 0 if unknown */
	double gap;          /* (tpi_s - bound_s) / tpi_s, 0 when proven optimal, INFINITY without a plan */
	double solve_s;      /* wall-clock seconds of the solve */
	size_t n_layers;
	int *stage;          /* owned, [n_layers], 0-based; NULL when there is no plan */
	size_t *strategy;    /* owned, [n_layers]; NULL when there is no plan */
	long nodes;          /* MILP: branch-and-bound nodes; DP: labels created */
	const char *method;  /* one of the OPT_METHOD_* strings (static) */
	char note[OPT_NOTE_MAX]; /* why a fallback or a limit happened; "" otherwise */
};

/* Monotonic wall clock in seconds (for deadlines and solve_s). */
double opt_clock_s(void);

/* Zeroes r (status OPT_UNKNOWN, tpi INFINITY, method "none"). */
void opt_result_init(struct opt_result *r);

/* Frees what r owns and re-initialises it; NULL-safe, idempotent. */
void opt_result_release(struct opt_result *r);

/*
 * Solves cand (borrowed).  opts (borrowed) may be NULL for the defaults.
 * out (caller-owned, initialised or not) is overwritten; release it with
 * opt_result_release().  Returns UNIAP_OK whenever out->status says what
 * happened (optimal, feasible, infeasible, pruned, unknown); UNIAP_E_INVALID
 * naming the field for a malformed candidate (negative or NaN costs, edge
 * out of range, ...), UNIAP_E_NOMEM, UNIAP_E_SOLVER (CBC failed), UNIAP_E_ARG
 * (a DP path forced on a non-chain); then out->status is OPT_ERROR.
 */
uniap_code opt_solve(const struct cost_candidate *cand, const struct opt_options *opts,
                     struct opt_result *out, struct uniap_err *err);

/*
 * The audit TPI (cost.h) of the assignment stage[u], strategy[u] (borrowed,
 * n_layers entries) on cand (borrowed): INFINITY if an index is out of
 * range, a stage is empty, an edge goes backwards, or a stage is over memory.
 * Where opt_makespan_objective(cand), the iteration's makespan as run
 * instead (schedsim.h's blocking 1F1B, the longest path of sched_graph_build),
 * which is at most the formula; INFINITY as well when out of memory.
 */
double opt_tpi(const struct cost_candidate *cand, const int *stage, const size_t *strategy);

/*
 * 1 when cand's objective is the 1F1B makespan as run rather than the audit
 * formula (cand->makespan with 1F1B, pp > 1): the dynamic programs and the
 * solver-free bounds, which are built on the formula, do not apply, and
 * opt_solve answers with the MILP's makespan rows (docs/optimizer.md, "The
 * makespan objective").  Elsewhere the formula is the makespan already.
 */
int opt_makespan_objective(const struct cost_candidate *cand);

/*
 * K(c, pp) = 1 / (1 - (1 - 1/c)^pp): every 1F1B plan's makespan as run is at
 * least K (sum p + sum o / c).  Stage i's rank computes its c micro-batches
 * (c p_i) between the first forward reaching it and the last backward
 * leaving it, each of which crosses the stages before it, so the makespan is
 * at least L_i = sum_{j<i} (p_j + o_j) + c p_i; the average of the L_i with
 * weights w_j = (K / c)(1 - 1/c)^(pp-1-j), which sum to 1, gives every p_j
 * the coefficient K and every o_j at least K / c.  K >= max(1, c / pp).
 */
double opt_makespan_factor(long c, int pp);

/*
 * A valid plan of cand (borrowed), found fast and claimed to be nothing more:
 * the MILP's and dp-dag's warm start (opt.c).  A topological order is cut
 * into stages of about equal least time with the fastest strategy per layer;
 * a device over memory first has its layers switched to smaller strategies
 * and then loses layers to a neighbouring stage; what is still over memory
 * then goes through a local search that minimises the bytes over the limit
 * (phase 1), and a valid plan through one that minimises the TPI (phase 2):
 * one-layer moves, shifts of one layer over a run of boundaries on chains
 * (what balances interleaved devices), moves that make room by switching
 * other layers' strategies, and random kicks from the best plan (a fixed
 * seed) until a quarter of them in a row find nothing better.  An
 * interleaved chain also gets five more starts, each searched the same way:
 * a counts cut (each device a balanced count of the body's layers within its
 * memory) and four cuts of its chunks as a 1F1B chain by dp-sweep, bounded by
 * work; the best plan of all is the answer.  Deterministic;
 * its work is bounded by work (units of layers + edges + memory rows
 * evaluated, per phase and start; at least OPT_QUICK_WORK, about 0.2 s on an
 * 82-layer interleaved candidate, its starts about a second more; 0 for
 * that), and the kicks scale with it.
 * Writes stage[n_layers] and strategy[n_layers] (borrowed) and returns 1 with
 * *tpi = opt_tpi() of them; 0 when it found no valid plan (or ran out of
 * memory), the arrays then meaningless.  The MILP's start gets more work with
 * a longer time limit (opt.c, opt_quick_work).
 */
#define OPT_QUICK_WORK 4e8
int opt_quick_plan(const struct cost_candidate *cand, double work, int *stage, size_t *strategy, double *tpi);
/* opt_quick_plan, its search ending early once its plan's TPI is at most
 * target (a lower bound the caller holds: nothing can be better); 0: never. */
int opt_quick_plan_to(const struct cost_candidate *cand, double work, double target, int *stage, size_t *strategy,
                      double *tpi);

/*
 * opt_tpi(), and into *spread (borrowed, may be NULL) the sum of the squares
 * of the terms its maximum is taken over (the stage cycles; interleaved, the
 * device and link loads), INFINITY where the TPI is: among plans of one TPI,
 * the one whose bottleneck terms are more even, which a local search prefers
 * so that it can leave a tie at the maximum one term at a time (opt.c).
 */
double opt_tpi_spread(const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                      double *spread);

/*
 * Checks what every solver path relies on: pp >= 1, K >= 1, n_layers >= 1,
 * c >= 1, arrays present, every cost finite and >= 0, memory limit >= 0 (may
 * be INFINITY), inflight >= 0, edges in range and not self-loops, and the
 * size caps of model.h / strategy.h.  UNIAP_E_INVALID names the field.
 */
uniap_code opt_candidate_check(const struct cost_candidate *cand, struct uniap_err *err);

/* 1 when the edges are exactly u -> u+1 for u = 0 .. n_layers-2, each once (any order). */
int opt_is_chain(const struct cost_candidate *cand);

/*
 * The successor lists of cand's edges (borrowed) in compressed form: the
 * successors of layer u are succ[start[u]] .. succ[start[u+1] - 1], in edge
 * order.  *start (n_layers + 1 entries) and *succ are owned (free()).
 * 0 ok, -1 out of memory (both NULL).
 */
int opt_successors(const struct cost_candidate *cand, size_t **start, size_t **succ);

/*
 * The memory of each of c's pp devices under an assignment (stage, strategy
 * as for opt_tpi), into mem[pp] (borrowed): opt_tpi's own figures, which it
 * holds to the limit.  0, or -1 on a bad assignment or out of memory.
 */
int opt_device_memory(const struct cost_candidate *c, const int *stage, const size_t *strategy, double *mem);

/*
 * A lower bound on the most any of m machines carries when whole items of
 * the given sizes (least, n of them, >= 0) are spread over them: the mean,
 * the largest, and Dell'Amico and Martello's bound for every k >= 1 (of the
 * km + 1 largest items one machine holds k + 1).  With the layers' least
 * times and m devices it bounds T from below in every plan (milp.c, uop.c).
 * Sorts least (borrowed) in place, decreasing.
 */
double opt_packing_bound(double *least, size_t n, int m);

/*
 * A lower bound on the most any device carries, max_d P_d (a device's sum of
 * p_i over its stages: its cycle without interleaving is at least that), from
 * whole layers and the memory of the device that holds them
 * (docs/optimizer.md, "The rank bound").  Layers with equal costs under
 * every strategy form a type; for each type of n_t layers, G_d(m) is the
 * least time device d needs to hold m of them within its memory, every
 * strategy mix counted (an exact multiset search over the strategies), each
 * at its chunks' least in-flight count under each of d's peak rows, and each
 * of its chunks holding some layer.  Every plan gives its devices counts m_d
 * summing to n_t with P_d >= G_d(m_d), so max_d P_d >= min over such counts
 * of max_d G_d(m_d): the bound for the type; the largest over types is
 * returned.  When chain is 1 (the caller knows c's model is a chain: a
 * layers_only build has no edges to tell), layer 0 is on device 0's first
 * chunk and the last layer on device pp - 1's last, and their least time and
 * memory count there.  On a chain whose two most common types have two or
 * more members each, it is also at least the least bottleneck for which
 * counts of both that v runs of the chain can hold, one per device, add up to
 * both totals, each kind at its least time (opt_runs_bound in opt_base.c:
 * alternating kinds).  Same-stage costs and transfers count as 0.  Its cost is held to
 * tens of milliseconds: past a front size the fronts' neighbours merge and
 * past twice a device's share of layers G grows by least times, either only
 * lowering the bound.  INFINITY when no counts fit the memory (then no plan
 * does); 0 when nothing is known (out of memory).  Deterministic, no I/O.
 */
double opt_rank_bound(const struct cost_candidate *c, int chain);
/* 1 when layers u and w of c cost the same under every strategy (time and both
 * memories, bit for bit): one type, for the rank bound and the quick plan's
 * counts cut. */
int opt_same_costs(const struct cost_candidate *c, size_t u, size_t w);
/* Each layer's type into type[] (the first layer with its costs) and each
 * type's members into count[] (at its first layer; 0 elsewhere); both
 * caller-owned, n_layers entries.  O(n^2 K) at worst. */
void opt_layer_types(const struct cost_candidate *c, size_t *type, size_t *count);
/* qsort's comparison of doubles, ascending (no NaN). */
int opt_double_cmp(const void *a, const void *b);
/* The finite ones of x[0 .. n - 1], sorted ascending, into an owned array (free()),
 * *count of them; NULL when out of memory.  The candidate values of the counts
 * bounds' and cuts' bottleneck sweeps. */
double *opt_sorted_finite(const double *x, size_t n, size_t *count);
/* opt_rank_bound with each front held to front_cap points and searched up to
 * top_count layers per device (0: its own choices, from a fixed work budget
 * and twice a device's share): weaker when small, never above the least load
 * (the tests reach the merging and the extension with it). */
double opt_rank_bound_with(const struct cost_candidate *c, int chain, size_t front_cap, size_t top_count);

/*
 * A lower bound on c's TPI from the same counts (docs/optimizer.md, "The rank
 * bound"): a device's least time for its count bounds its load and the loads
 * sum to sum p, so TPI >= (sum_d G_d(m_d) + the other layers' least times +
 * transfers) / v + (c - 1/v) max_d G_d(m_d), least over the counts (each G_d
 * by its lower convex hull); transfers is a bound on sum o
 * (opt_transfer_bound).  Where memory forces slower strategies on some
 * devices, their time counts in the sum too.  0 when nothing is known,
 * INFINITY when no counts fit.
 */
double opt_rank_tpi_bound(const struct cost_candidate *c, int chain, double transfers);
/* Both from one pass over the counts: returns opt_rank_bound's and writes
 * opt_rank_tpi_bound's into *tpi_lb. */
double opt_rank_bounds(const struct cost_candidate *c, int chain, double transfers, double *tpi_lb);

/*
 * A lower bound on sum o, the transfers of a plan of c, when c is a chain
 * (opt_is_chain; else 0): each of its S - 1 boundaries is crossed by its own
 * edge, at least that edge's least cross_stage_s, so sum o is at least the
 * S - 1 least of those.  0 without edges (a layers_only build).
 */
double opt_transfer_bound(const struct cost_candidate *c);

/* Copies src into a note (dst: OPT_NOTE_MAX bytes), cut to fit; for the optimizer's own files. */
void opt_note_copy(char *dst, const char *src);

/* ------------------------------------------------------------ serialization */

/* Largest buffer the unpackers accept (and the packers produce). */
#define OPT_PACK_MAX ((size_t)1 << 30)

/*
 * Packs cand (borrowed, checked with opt_candidate_check) into a new buffer
 * *buf (returned, owned by the caller, free()) of *len bytes.  Everything is
 * carried: costs, inflight, layer names, the strategy dictionary.
 */
uniap_code opt_candidate_pack(const struct cost_candidate *cand, unsigned char **buf, size_t *len,
                              struct uniap_err *err);

/*
 * Rebuilds a candidate from buf (borrowed, len bytes).  On success *out is
 * owned by the caller and freed with cost_candidate_release(); every array is
 * malloc'd the way cost_build() allocates.  Truncated, oversized or garbage
 * input gives UNIAP_E_INVALID and leaves *out zeroed.
 */
uniap_code opt_candidate_unpack(const unsigned char *buf, size_t len, struct cost_candidate *out,
                                struct uniap_err *err);

/* Packs r (borrowed) into a new buffer *buf (owned by the caller, free()). */
uniap_code opt_result_pack(const struct opt_result *r, unsigned char **buf, size_t *len,
                           struct uniap_err *err);

/*
 * Rebuilds a result from buf (borrowed).  *out is overwritten (not released
 * first) and owned by the caller (opt_result_release()).  UNIAP_E_INVALID on
 * truncated or garbage input; *out is then initialised and owns nothing.
 */
uniap_code opt_result_unpack(const unsigned char *buf, size_t len, struct opt_result *out,
                             struct uniap_err *err);

#endif
