/*
 * alloc.h - sharing one cluster among many training jobs, exactly: each job
 * gets an allocation size (whole nodes, or a power-of-two share of one node)
 * and the plan the planner found for that size, so that the cluster does the
 * most useful work by one of three objectives (docs/allocation.md):
 *
 *   throughput  maximise sum_j w_j thr_j(s_j) / best_j (each job's throughput
 *               relative to its best over every allowed size: Gavel's
 *               normalised throughput)
 *   fair        maximise min_j thr_j(s_j) / thr_j(equal share) (Gavel's and
 *               Sia's max-min fairness), then the throughput objective among
 *               the allocations that reach it
 *   deadline    minimise the latest finish max_j samples_j / thr_j(s_j), then
 *               the throughput objective among the allocations that reach it
 *   missed      minimise the number of jobs with a deadline that miss it
 *               (samples_j / thr_j(s_j) > deadline_j, or no devices), then the
 *               throughput objective
 *
 * A job's curve thr_j(s) (samples/s at each allowed size; 0: no plan fits) is
 * the caller's (the CLI runs the planner on each size: cluster_slice below).
 * Sizes below a node are powers of two dividing devices_per_node and whole
 * allocations are k nodes, so every set of sizes whose sum fits the devices
 * also fits the nodes (below-node shares pack into the free nodes by halving,
 * largest first): the devices are the only resource, and the solver is an
 * exact dynamic program over them (a knapsack; the thresholds of fair and
 * deadline by a search over the values the curves take), proven equal to
 * brute force in tests/unit/test_alloc.c.  A cluster of several pools (device
 * types: alloc_solve_pools) runs each job inside one pool: the knapsack's
 * state is then the devices each pool gives out.
 *
 * Thread safety: reentrant.  Never: I/O, globals, solver libraries.
 */
#ifndef UNIAP_ALLOC_H
#define UNIAP_ALLOC_H

#include <stddef.h>

#include "err.h"
#include "model.h"

#define ALLOC_MAX_JOBS 1024
/* pools (clusters of one device type each) one allocation shares out */
#define ALLOC_MAX_POOLS 8
#define ALLOC_MAX_SIZES 128
/* whole-node sizes: every node count up to this, then powers of two and the whole cluster */
#define ALLOC_EVERY_NODES 64
/* the dynamic program's table: jobs x the product over pools of (device units + 1), at most */
#define ALLOC_MAX_TABLE 200000000.0

enum alloc_objective { ALLOC_THROUGHPUT = 0, ALLOC_FAIR, ALLOC_DEADLINE, ALLOC_MISSED };
#define ALLOC_OBJECTIVE_COUNT 4

/* "throughput", "fair", "deadline", "missed"; and back (-1: unknown). */
const char *alloc_objective_name(enum alloc_objective o);
int alloc_objective_parse(const char *s);

struct alloc_job {
	const char *name;       /* borrowed */
	double weight;          /* > 0 */
	int min_devices;        /* 0: the job may get nothing */
	int max_devices;        /* 0: no cap */
	double samples;         /* samples to go (deadline objective; missed, with a deadline), > 0 there */
	const double *throughput; /* borrowed, [n_sizes]: samples/s at each size of the
	                             allocation's size list; 0 where no plan fits */
	int current;            /* re-planning: the size index the job runs on now, -1: none
	                           (a new job, or a first allocation) */
	double deadline_s;      /* missed objective: seconds from now to finish by; 0: none */
};

/*
 * The allowed allocation sizes of a cluster of `nodes` nodes of `per_node`
 * devices, ascending: the powers of two below per_node that divide it, then
 * k * per_node for k = 1 .. min(nodes, ALLOC_EVERY_NODES), then for the powers
 * of two k above that up to nodes, and nodes itself (each size is a planner
 * run per kind of job: a cluster of 16,384 nodes gets 64 + 9 + 1 of them).
 * Writes at most `max` into out; returns the count (0 when max is too small).
 */
size_t alloc_sizes(int nodes, int per_node, int *out, size_t max);

struct alloc_result {
	int *size_index;        /* owned, [n_jobs]: index into the sizes, -1 for nothing */
	double objective;       /* the objective's value (throughput: the weighted sum;
	                           fair: the least ratio; deadline: the latest finish, s;
	                           missed: the jobs that miss their deadline) */
	double throughput_value;/* the throughput objective of this allocation */
	int devices_used;
};

/*
 * Solves the allocation of jobs[0 .. n) (borrowed) over sizes[0 .. n_sizes)
 * (alloc_sizes' list) on `devices` devices.  restart_cost >= 0 re-plans: a job
 * that runs now (current >= 0) and is given another size loses restart_cost x
 * its weight of normalised throughput in the throughput objective (the
 * secondary one of fair and deadline), the minutes of work a restart costs
 * over the minutes the allocation is to last, so that jobs are not moved for
 * less than that.  UNIAP_E_INVALID naming
 * "jobs[j]...." for bad input; UNIAP_E_INFEASIBLE, with err naming the jobs,
 * when their minimums cannot be met together or a job's minimum has no size
 * with a plan; UNIAP_E_LIMIT when the table would exceed ALLOC_MAX_TABLE.
 * The caller releases *out with alloc_result_release.
 */
uniap_code alloc_solve(const struct alloc_job *jobs, size_t n, const int *sizes, size_t n_sizes, int devices,
                       enum alloc_objective objective, double restart_cost, struct alloc_result *out,
                       struct uniap_err *err);

/*
 * Several pools: sizes[0 .. n_sizes) are the pools' size lists one after
 * another (pool_of[k] the pool of size k, non-decreasing; each pool's sizes
 * ascending, alloc_sizes of its own cluster), jobs' throughput and current are
 * over that whole list, and a job takes one size of one pool: its curve in
 * each pool is its own (0 where it has none).  The normalised throughput is
 * against the job's best over every pool, the fair share is all the devices
 * over the jobs.  When the jobs that must run do not fit, err names a set of
 * them none of which can be left out and the rest still fail.  Otherwise as
 * alloc_solve, which is the one-pool case.
 */
struct alloc_pools {
	size_t n;               /* 1 .. ALLOC_MAX_POOLS */
	const int *devices;     /* borrowed, [n]: each pool's devices */
	const int *pool_of;     /* borrowed, [n_sizes]; NULL when n is 1 */
};

uniap_code alloc_solve_pools(const struct alloc_job *jobs, size_t n, const int *sizes, size_t n_sizes,
                             const struct alloc_pools *pools, enum alloc_objective objective, double restart_cost,
                             struct alloc_result *out, struct uniap_err *err);

void alloc_result_release(struct alloc_result *r);

/*
 * Places an allocation on the cluster's nodes: whole-node allocations on
 * consecutive nodes (largest first), the shares of a node packed into the
 * nodes left, largest first, each aligned to its size.  first_device[j] gets
 * job j's first device (-1 for nothing); its devices are first_device[j] ..
 * first_device[j] + sizes[size_index[j]] - 1.  With keep (NULL: none), a job
 * with keep[j] >= 0 stays on the devices from keep[j] when they are free and
 * aligned (re-planning: a job that keeps its size need not move); the others
 * go into the free nodes and gaps as above; when the kept jobs leave no room
 * for the others, everything is placed afresh.  Returns the number of kept
 * jobs that stay, or -1 when the allocation does not fit (which alloc_solve's
 * results never do).
 */
int alloc_place(const struct alloc_result *r, size_t n, const int *sizes, int nodes, int per_node,
                const int *keep, int *first_device);

/*
 * A copy of cluster c cut to `devices` devices: k whole nodes when devices is
 * a multiple of devices_per_node, else one node of that many devices; the
 * hierarchy keeps the levels below that size and ends with one spanning it
 * (the bandwidth of the first level that reaches it), measured collective
 * tables keep the groups that fit.  The planner prices a job's allocation on
 * it.  UNIAP_E_INVALID when the topology does not allow it (a level the size
 * does not divide into).  The caller releases *out with cluster_release.
 */
uniap_code cluster_slice(const struct cluster_profile *c, int devices, struct cluster_profile *out,
                         struct uniap_err *err);

#endif
