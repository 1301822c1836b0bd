/*
 * alloc.c - exact allocation of a cluster's devices among jobs (alloc.h).
 *
 * The devices are the only resource (alloc.h says why the nodes need no
 * constraint of their own), so:
 *   - throughput is a multiple-choice knapsack: best[j][d] the largest
 *     weighted normalised throughput of jobs 0 .. j-1 on at most d device
 *     units (the gcd of the sizes), each job taking one size or, when its
 *     minimum allows, nothing;
 *   - fair and deadline are bottleneck problems: for a threshold t, each job
 *     needs its smallest size whose ratio reaches t (whose finish is within
 *     t); t is feasible when those sizes fit together, so the best t is the
 *     largest (least) feasible one among the values the curves take, found by
 *     a binary search over them in order; the knapsack then picks the best
 *     throughput among the allocations that keep t;
 *   - missed is the knapsack with a met deadline worth more than any sum of
 *     throughput values;
 *   - several pools make the knapsack's state the units each pool gives out
 *     (a mixed-radix number), and the feasibility of a threshold a knapsack
 *     too.
 * Ties go to the fewer devices, then to the earlier jobs' smaller sizes, so the
 * answer depends on the input alone.
 *
 * Thread safety: reentrant.  Never: I/O, globals.
 */
#include "alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *alloc_objective_name(enum alloc_objective o)
{
	switch (o) {
	case ALLOC_THROUGHPUT: return "throughput";
	case ALLOC_FAIR: return "fair";
	case ALLOC_DEADLINE: return "deadline";
	case ALLOC_MISSED: return "missed";
	}
	return "unknown";
}

int alloc_objective_parse(const char *s)
{
	if (!s)
		return -1;
	if (strcmp(s, "throughput") == 0)
		return ALLOC_THROUGHPUT;
	if (strcmp(s, "fair") == 0)
		return ALLOC_FAIR;
	if (strcmp(s, "deadline") == 0)
		return ALLOC_DEADLINE;
	if (strcmp(s, "missed") == 0)
		return ALLOC_MISSED;
	return -1;
}

size_t alloc_sizes(int nodes, int per_node, int *out, size_t max)
{
	size_t n = 0;
	int s, k;

	if (nodes < 1 || per_node < 1)
		return 0;
	for (s = 1; s < per_node; s *= 2)
		if (per_node % s == 0) {
			if (n >= max)
				return 0;
			out[n++] = s;
		}
	for (k = 1; k <= nodes; k = k < ALLOC_EVERY_NODES ? k + 1 : k * 2 > nodes && k < nodes ? nodes : k * 2) {
		if (n >= max)
			return 0;
		out[n++] = k * per_node;
	}
	return n;
}

void alloc_result_release(struct alloc_result *r)
{
	if (!r)
		return;
	free(r->size_index);
	memset(r, 0, sizeof(*r));
}

static int alloc_gcd(int a, int b)
{
	while (b) {
		int t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* 1 when job j may take size index k: within its bounds, with a plan there. */
static int alloc_allowed(const struct alloc_job *j, const int *sizes, size_t k)
{
	return sizes[k] >= j->min_devices && (j->max_devices <= 0 || sizes[k] <= j->max_devices) &&
	       j->throughput[k] > 0;
}

/*
 * The space of the knapsack: a state is how many device units each pool has
 * given out, a mixed-radix number (pool p's digit has units[p] + 1 values,
 * worth stride[p]); a unit of pool p is the gcd of its sizes.
 */
struct alloc_space {
	size_t n_pools;
	int unit[ALLOC_MAX_POOLS], units[ALLOC_MAX_POOLS];
	size_t stride[ALLOC_MAX_POOLS], states;
	const int *pool_of; /* [n_sizes] */
};

/* Pool p's digit of state s. */
static int alloc_digit(const struct alloc_space *sp, size_t s, size_t p)
{
	return (int)(s / sp->stride[p] % (size_t)(sp->units[p] + 1));
}

/* The devices state s stands for. */
static long alloc_state_devices(const struct alloc_space *sp, size_t s)
{
	long d = 0;
	size_t p;

	for (p = 0; p < sp->n_pools; p++)
		d += (long)alloc_digit(sp, s, p) * sp->unit[p];
	return d;
}

/*
 * The knapsack: value[j][k] (n x n_sizes, NAN where job j may not take k)
 * over the states of sp; must[j] marks jobs that must take a size (no
 * "nothing").  Fills choice[j] (index or -1), returns the best value, or
 * -INFINITY when no choice fits.  Ties: fewer devices, then the lower state,
 * then smaller sizes for earlier jobs (the table is filled in that order).
 */
static double alloc_knapsack(const struct alloc_space *sp, size_t n, const int *sizes, size_t n_sizes,
                             const double *value, const unsigned char *must, int *choice, int *used,
                             uniap_code *rc)
{
	size_t W = sp->states, P = sp->n_pools, j, k, s, d;
	double *prev = NULL, *cur = NULL, result = -INFINITY;
	short *pick = NULL;
	int *digit = NULL;
	size_t *cand = NULL, n_cand, c;
	long at_dev = 0;

	*rc = UNIAP_OK;
	prev = malloc(W * sizeof(*prev));
	cur = malloc(W * sizeof(*cur));
	pick = malloc(n * W * sizeof(*pick));
	digit = malloc(W * P * sizeof(*digit));
	cand = malloc(n_sizes * sizeof(*cand));
	if (!prev || !cur || !pick || !digit || !cand) {
		*rc = UNIAP_E_NOMEM;
		goto out;
	}
	for (s = 0; s < W; s++)
		for (d = 0; d < P; d++)
			digit[s * P + d] = alloc_digit(sp, s, d);
	/* prev[s]: jobs 0 .. j-1 on exactly the units of state s (-INF: impossible) */
	for (s = 0; s < W; s++)
		prev[s] = s == 0 ? 0 : -INFINITY;
	for (j = 0; j < n; j++) {
		double *t;

		/* the sizes job j may take, in order */
		for (k = 0, n_cand = 0; k < n_sizes; k++)
			if (!isnan(value[j * n_sizes + k]))
				cand[n_cand++] = k;
		for (s = 0; s < W; s++) {
			double v = must[j] ? -INFINITY : prev[s];
			short p = -1;

			for (c = 0; c < n_cand; c++) {
				size_t pool = (size_t)sp->pool_of[cand[c]], back;
				int u = sizes[cand[c]] / sp->unit[pool];
				double x = value[j * n_sizes + cand[c]];

				k = cand[c];
				if (u > digit[s * P + pool])
					continue;
				back = s - (size_t)u * sp->stride[pool];
				if (prev[back] == -INFINITY)
					continue;
				if (prev[back] + x > v) {
					v = prev[back] + x;
					p = (short)k;
				}
			}
			cur[s] = v;
			pick[j * W + s] = p;
		}
		t = prev;
		prev = cur;
		cur = t;
	}
	/* the best value, on the fewest devices */
	{
		size_t at = W;

		for (s = 0; s < W; s++) {
			long dv;

			if (prev[s] == -INFINITY || prev[s] < result)
				continue;
			dv = alloc_state_devices(sp, s);
			if (prev[s] > result || dv < at_dev) {
				result = prev[s];
				at = s;
				at_dev = dv;
			}
		}
		if (at == W)
			goto out;
		*used = (int)at_dev;
		for (j = n; j-- > 0;) {
			short p = pick[j * W + at];

			choice[j] = p;
			if (p >= 0) {
				size_t pool = (size_t)sp->pool_of[p];

				at -= (size_t)(sizes[p] / sp->unit[pool]) * sp->stride[pool];
			}
		}
	}
out:
	free(prev);
	free(cur);
	free(pick);
	free(digit);
	free(cand);
	return result;
}

/* The throughput objective's value of job j at size k: weight x thr / its best (over every pool). */
static double alloc_norm_value(const struct alloc_job *job, const int *sizes, size_t n_sizes, size_t k)
{
	double top = 0;
	size_t q;

	for (q = 0; q < n_sizes; q++)
		if (alloc_allowed(job, sizes, q) && job->throughput[q] > top)
			top = job->throughput[q];
	return top > 0 ? job->weight * job->throughput[k] / top : 0;
}

/*
 * Fair: job j's reference throughput, that of the largest allowed size with a
 * plan at most the equal share `share` (or, when none, of its smallest size
 * with a plan: a job that cannot run on an equal share is measured against
 * the least it runs on); where pools offer the same size, the best of them.
 * 0 when it has no size with a plan at all.
 */
static double alloc_fair_ref(const struct alloc_job *job, const int *sizes, size_t n_sizes, double share)
{
	double ref = 0, first = 0;
	int ref_size = 0, first_size = 0;
	size_t k;

	for (k = 0; k < n_sizes; k++) {
		double t = job->throughput[k];

		if (!alloc_allowed(job, sizes, k))
			continue;
		if (first_size == 0 || sizes[k] < first_size || (sizes[k] == first_size && t > first)) {
			first_size = sizes[k];
			first = t;
		}
		if (sizes[k] <= share && (sizes[k] > ref_size || (sizes[k] == ref_size && t > ref))) {
			ref_size = sizes[k];
			ref = t;
		}
	}
	return ref > 0 ? ref : first;
}

/* The score of job j at size k under a bottleneck objective (larger is better). */
static double alloc_score(enum alloc_objective o, const struct alloc_job *job, size_t k, double ref)
{
	if (o == ALLOC_FAIR)
		return job->throughput[k] / ref;
	return -job->samples / job->throughput[k]; /* deadline: minus the finish time */
}

/* 1 when job j finishes its samples by its deadline at size k (the missed objective). */
static int alloc_meets(const struct alloc_job *job, size_t k)
{
	return job->deadline_s > 0 && job->throughput[k] > 0 && job->samples / job->throughput[k] <= job->deadline_s;
}

static int alloc_cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The throughput objective's value of job j at size k, less the restart cost of a move (alloc.h). */
static double alloc_value(const struct alloc_job *job, const int *sizes, size_t n_sizes, size_t k, double restart)
{
	double v = alloc_norm_value(job, sizes, n_sizes, k);

	if (job->current >= 0 && (size_t)job->current != k)
		v -= job->weight * restart;
	return v;
}

/* Job j's smallest allowed size with a plan, over every pool (0: none). */
static int alloc_least(const struct alloc_job *job, const int *sizes, size_t n_sizes)
{
	int least = 0;
	size_t k;

	for (k = 0; k < n_sizes; k++)
		if (alloc_allowed(job, sizes, k) && (least == 0 || sizes[k] < least))
			least = sizes[k];
	return least;
}

/* Job j's jobs of the largest smallest size first (ties by index): order[0 .. m) of the must ones. */
static size_t alloc_order_must(const struct alloc_job *jobs, size_t n, const int *sizes, size_t n_sizes,
                               const unsigned char *must, size_t *order, int *least)
{
	size_t j, q, m = 0;

	for (j = 0; j < n; j++) {
		least[j] = alloc_least(&jobs[j], sizes, n_sizes);
		if (must[j])
			order[m++] = j;
	}
	for (j = 1; j < m; j++)
		for (q = j; q > 0 && least[order[q - 1]] < least[order[q]]; q--) {
			size_t t = order[q - 1];

			order[q - 1] = order[q];
			order[q] = t;
		}
	return m;
}

/*
 * The jobs must run (must[j]) but do not fit together on one pool of
 * `devices`: the error names the smallest set of them that does not fit, the
 * ones with the largest smallest size with a plan, taken until their sum
 * exceeds the devices (a set of fewer jobs has a smaller sum, so none is
 * smaller), and says that no smaller set fails.  order is scratch ([n]).
 */
static uniap_code alloc_no_fit(const struct alloc_job *jobs, size_t n, const int *sizes, size_t n_sizes,
                               int devices, const unsigned char *must, size_t *order, struct uniap_err *err)
{
	char names[512];
	size_t q, m, used = 0, len = 0;
	long sum = 0;
	int least[ALLOC_MAX_JOBS];

	m = alloc_order_must(jobs, n, sizes, n_sizes, must, order, least);
	names[0] = '\0';
	for (q = 0; q < m && sum <= devices; q++) {
		const char *nm = jobs[order[q]].name ? jobs[order[q]].name : "";
		int w = snprintf(names + len, sizeof(names) - len, "%s%s (%d)", q ? ", " : "", nm, least[order[q]]);

		if (w > 0 && len + (size_t)w < sizeof(names))
			len += (size_t)w;
		sum += least[order[q]];
		used++;
	}
	if (sum <= devices) /* cannot happen when called: the minimums do not fit */
		return err_set(err, UNIAP_E_INFEASIBLE, "allocation: the jobs do not fit together on %d devices", devices);
	return err_set(err, UNIAP_E_INFEASIBLE, "allocation: %zu jobs cannot run together on %d devices: %s need "
	               "%ld at their smallest sizes with a plan (no set of fewer jobs exceeds the devices)",
	               used, devices, names, sum);
}

/*
 * 1 when job j has a smaller allowed size than k in k's pool that reaches
 * score t under *o (o NULL: any allowed size): for feasibility, k need not be
 * tried.
 */
static int alloc_smaller_in_pool(const struct alloc_space *sp, const struct alloc_job *job, const int *sizes,
                                 size_t k, const enum alloc_objective *o, double ref, double t)
{
	size_t q;

	for (q = k; q-- > 0 && sp->pool_of[q] == sp->pool_of[k];)
		if (alloc_allowed(job, sizes, q) && (!o || alloc_score(*o, job, q, ref) >= t))
			return 1;
	return 0;
}

/*
 * 1 when the jobs with in[j] can all run together, each on any allowed size
 * with a plan in any pool (a knapsack without values); -1 out of memory.
 */
static int alloc_fits(const struct alloc_space *sp, const struct alloc_job *jobs, size_t n, const int *sizes,
                      size_t n_sizes, const unsigned char *in, double *value, int *choice)
{
	size_t j, k;
	int used = 0;
	uniap_code rc;
	double v;

	/* a job's smallest size in a pool fits wherever a larger one there does: the others need no try */
	for (j = 0; j < n; j++)
		for (k = 0; k < n_sizes; k++)
			value[j * n_sizes + k] = in[j] && alloc_allowed(&jobs[j], sizes, k) &&
			                                 !alloc_smaller_in_pool(sp, &jobs[j], sizes, k, NULL, 0, 0)
			                         ? 0
			                         : NAN;
	v = alloc_knapsack(sp, n, sizes, n_sizes, value, in, choice, &used, &rc);
	if (rc != UNIAP_OK)
		return -1;
	return v > -INFINITY;
}

/*
 * The pools' version of alloc_no_fit: a set of the must jobs that cannot run
 * together and from which no job can be left out and still fail (a deletion
 * filter over the jobs of the largest smallest size first: each is left out
 * when the rest still fail).  With several pools a smallest such set is a
 * harder problem than the allocation; an irreducible one names what to drop.
 */
static uniap_code alloc_no_fit_pools(const struct alloc_space *sp, const struct alloc_job *jobs, size_t n,
                                     const int *sizes, size_t n_sizes, const unsigned char *must,
                                     struct uniap_err *err)
{
	char names[512];
	size_t *order = malloc(n * sizeof(*order)), q, m, len = 0, count = 0;
	unsigned char *in = malloc(n);
	double *value = malloc(n * n_sizes * sizeof(*value));
	int *choice = malloc(n * sizeof(*choice)), least[ALLOC_MAX_JOBS];
	uniap_code rc = UNIAP_OK;

	if (!order || !in || !value || !choice) {
		rc = err_set(err, UNIAP_E_NOMEM, "allocation: out of memory");
		goto out;
	}
	m = alloc_order_must(jobs, n, sizes, n_sizes, must, order, least);
	memcpy(in, must, n);
	for (q = 0; q < m; q++) {
		int f;

		in[order[q]] = 0;
		f = alloc_fits(sp, jobs, n, sizes, n_sizes, in, value, choice);
		if (f < 0) {
			rc = err_set(err, UNIAP_E_NOMEM, "allocation: out of memory");
			goto out;
		}
		if (f) /* the rest fit without it: it is part of the reason */
			in[order[q]] = 1;
	}
	names[0] = '\0';
	for (q = 0; q < m; q++) {
		const char *nm;
		int w;

		if (!in[order[q]])
			continue;
		nm = jobs[order[q]].name ? jobs[order[q]].name : "";
		w = snprintf(names + len, sizeof(names) - len, "%s%s (%d)", count ? ", " : "", nm, least[order[q]]);
		if (w > 0 && len + (size_t)w < sizeof(names))
			len += (size_t)w;
		count++;
	}
	rc = err_set(err, UNIAP_E_INFEASIBLE, "allocation: %zu jobs cannot run together in the %zu pools: %s at their "
	             "smallest sizes with a plan (each job runs inside one pool; without any one of them the "
	             "others fit)", count, sp->n_pools, names);
out:
	free(order);
	free(in);
	free(value);
	free(choice);
	return rc;
}

/* The jobs that must run do not fit: the error, for one pool or several. */
static uniap_code alloc_fail_fit(const struct alloc_space *sp, const struct alloc_job *jobs, size_t n,
                                 const int *sizes, size_t n_sizes, int devices, const unsigned char *must,
                                 struct uniap_err *err)
{
	size_t *order;
	uniap_code rc;

	if (sp->n_pools > 1)
		return alloc_no_fit_pools(sp, jobs, n, sizes, n_sizes, must, err);
	order = malloc(n * sizeof(*order));
	rc = order ? alloc_no_fit(jobs, n, sizes, n_sizes, devices, must, order, err)
	           : err_set(err, UNIAP_E_NOMEM, "allocation: out of memory");
	free(order);
	return rc;
}

/*
 * Bottleneck objectives: 1 when every job can reach score t together (each
 * job's sizes whose score reaches t); one pool: each job's smallest such size,
 * summed; several: a knapsack over the pools.  -1 out of memory.
 */
static int alloc_reaches(const struct alloc_space *sp, const struct alloc_job *jobs, size_t n, const int *sizes,
                         size_t n_sizes, int devices, enum alloc_objective objective, const double *ref, double t,
                         const unsigned char *must, double *value, int *choice)
{
	size_t j, k;

	if (sp->n_pools == 1) {
		long need = 0;

		for (j = 0; j < n && need <= devices; j++) {
			int got = 0;

			for (k = 0; k < n_sizes && !got; k++)
				if (alloc_allowed(&jobs[j], sizes, k) && alloc_score(objective, &jobs[j], k, ref[j]) >= t) {
					need += sizes[k];
					got = 1;
				}
			if (!got)
				return 0;
		}
		return need <= devices;
	}
	{
		int used = 0;
		uniap_code rc;
		double v;

		/* each job's smallest size reaching t in each pool (a larger one there fits no better) */
		for (j = 0; j < n; j++)
			for (k = 0; k < n_sizes; k++)
				value[j * n_sizes + k] = alloc_allowed(&jobs[j], sizes, k) &&
				                                 alloc_score(objective, &jobs[j], k, ref[j]) >= t &&
				                                 !alloc_smaller_in_pool(sp, &jobs[j], sizes, k, &objective, ref[j], t)
				                         ? 0
				                         : NAN;
		v = alloc_knapsack(sp, n, sizes, n_sizes, value, must, choice, &used, &rc);
		if (rc != UNIAP_OK)
			return -1;
		return v > -INFINITY;
	}
}

uniap_code alloc_solve_pools(const struct alloc_job *jobs, size_t n, const int *sizes, size_t n_sizes,
                             const struct alloc_pools *pools, enum alloc_objective objective, double restart_cost,
                             struct alloc_result *out, struct uniap_err *err)
{
	double *value = NULL, *ref = NULL, *levels = NULL, best, big = 1;
	unsigned char *must = NULL;
	int *choice = NULL, *zeros = NULL, used = 0, devices = 0;
	size_t j, k, p, n_levels = 0;
	struct alloc_space sp;
	uniap_code rc = UNIAP_OK;

	memset(out, 0, sizeof(*out));
	memset(&sp, 0, sizeof(sp));
	if (n < 1 || n > ALLOC_MAX_JOBS)
		return err_set(err, UNIAP_E_INVALID, "jobs: must have 1 to %d entries, got %zu", ALLOC_MAX_JOBS, n);
	if (!pools || pools->n < 1 || pools->n > ALLOC_MAX_POOLS)
		return err_set(err, UNIAP_E_INVALID, "pools: must have 1 to %d entries", ALLOC_MAX_POOLS);
	if (n_sizes < 1 || n_sizes > ALLOC_MAX_SIZES * pools->n)
		return err_set(err, UNIAP_E_INVALID, "sizes: must have 1 to %d entries per pool", ALLOC_MAX_SIZES);
	if ((int)objective < 0 || (int)objective >= ALLOC_OBJECTIVE_COUNT)
		return err_set(err, UNIAP_E_INVALID, "objective: unknown (%d)", (int)objective);
	sp.n_pools = pools->n;
	for (p = 0; p < pools->n; p++) {
		if (pools->devices[p] < 1)
			return err_set(err, UNIAP_E_INVALID, "pools[%zu].devices: must be >= 1, got %d", p, pools->devices[p]);
		devices += pools->devices[p];
	}
	for (k = 0; k < n_sizes; k++) {
		int pk = pools->pool_of ? pools->pool_of[k] : 0;

		if (pk < 0 || (size_t)pk >= pools->n || (k > 0 && pools->pool_of && pk < pools->pool_of[k - 1]))
			return err_set(err, UNIAP_E_INVALID, "sizes[%zu]: its pool must be in [0, %zu) and not below the "
			               "previous size's, got %d", k, pools->n, pk);
		if (sizes[k] < 1 || (k > 0 && (pools->pool_of ? pools->pool_of[k - 1] : 0) == pk && sizes[k] <= sizes[k - 1]))
			return err_set(err, UNIAP_E_INVALID, "sizes[%zu]: must be ascending within a pool and >= 1, got %d", k,
			               sizes[k]);
		sp.unit[pk] = alloc_gcd(sp.unit[pk], sizes[k]);
	}
	if (!pools->pool_of && pools->n != 1)
		return err_set(err, UNIAP_E_INVALID, "pools: several pools need the pool of each size");
	if (!pools->pool_of && !(zeros = calloc(n_sizes, sizeof(*zeros))))
		return err_set(err, UNIAP_E_NOMEM, "allocation: out of memory");
	sp.pool_of = pools->pool_of ? pools->pool_of : zeros;
	sp.states = 1;
	for (p = 0; p < pools->n; p++) {
		if (sp.unit[p] == 0) /* a pool without sizes: nothing runs there */
			sp.unit[p] = pools->devices[p];
		sp.units[p] = pools->devices[p] / sp.unit[p];
		sp.stride[p] = sp.states;
		if ((double)sp.states * ((double)sp.units[p] + 1) * (double)n > ALLOC_MAX_TABLE)
			{
			rc = err_set(err, UNIAP_E_LIMIT, "allocation: %zu jobs over the pools' device units is over the "
			               "table cap", n);
			goto out;
		}
		sp.states *= (size_t)sp.units[p] + 1;
	}
	if (!(restart_cost >= 0) || !isfinite(restart_cost))
		{
			rc = err_set(err, UNIAP_E_INVALID, "restart_cost: must be finite and >= 0, got %g", restart_cost);
			goto out;
		}
	for (j = 0; j < n; j++) {
		const struct alloc_job *a = &jobs[j];

		if (a->current < -1 || a->current >= (int)n_sizes)
			{
			rc = err_set(err, UNIAP_E_INVALID, "jobs[%zu].current: must be -1 or a size index below %zu, got %d",
			               j, n_sizes, a->current);
			goto out;
		}
		if (!(a->weight > 0) || !isfinite(a->weight))
			{
			rc = err_set(err, UNIAP_E_INVALID, "jobs[%zu].weight: must be > 0, got %g", j, a->weight);
			goto out;
		}
		if (a->min_devices < 0 || a->max_devices < 0 || (a->max_devices > 0 && a->max_devices < a->min_devices))
			{
			rc = err_set(err, UNIAP_E_INVALID, "jobs[%zu].max_devices: must be >= min_devices (%d), got %d",
			               j, a->min_devices, a->max_devices);
			goto out;
		}
		if (!(a->deadline_s >= 0) || !isfinite(a->deadline_s))
			{
			rc = err_set(err, UNIAP_E_INVALID, "jobs[%zu].deadline_s: must be finite and >= 0, got %g", j,
			               a->deadline_s);
			goto out;
		}
		if ((objective == ALLOC_DEADLINE || (objective == ALLOC_MISSED && a->deadline_s > 0)) &&
		    !(a->samples > 0 && isfinite(a->samples)))
			{
			rc = err_set(err, UNIAP_E_INVALID, "jobs[%zu].samples: the %s objective needs the samples to go, "
			               "> 0, got %g", j, alloc_objective_name(objective), a->samples);
			goto out;
		}
		for (k = 0; k < n_sizes; k++)
			if (!(a->throughput[k] >= 0) || !isfinite(a->throughput[k]))
				{
			rc = err_set(err, UNIAP_E_INVALID, "jobs[%zu].throughput[%zu]: must be finite and >= 0", j,
				               k);
			goto out;
		}
		big += 2 * a->weight * (1 + restart_cost);
	}
	value = malloc(n * n_sizes * sizeof(*value));
	ref = calloc(n, sizeof(*ref));
	levels = malloc((n * n_sizes + 1) * sizeof(*levels));
	must = calloc(n, 1);
	choice = malloc(n * sizeof(*choice));
	out->size_index = malloc(n * sizeof(*out->size_index));
	if (!value || !ref || !levels || !must || !choice || !out->size_index) {
		rc = err_set(err, UNIAP_E_NOMEM, "allocation: out of memory");
		goto out;
	}
	/* every job with a minimum must run, and must have a size to run on */
	for (j = 0; j < n; j++) {
		int any = 0;

		must[j] = jobs[j].min_devices > 0 || objective == ALLOC_FAIR || objective == ALLOC_DEADLINE;
		for (k = 0; k < n_sizes; k++)
			any |= alloc_allowed(&jobs[j], sizes, k);
		if (must[j] && !any) {
			rc = err_set(err, UNIAP_E_INFEASIBLE, "jobs[%zu] (%s): no allowed size between %d and %d devices "
			             "has a plan that fits", j, jobs[j].name ? jobs[j].name : "", jobs[j].min_devices,
			             jobs[j].max_devices);
			goto out;
		}
		if (objective == ALLOC_FAIR)
			ref[j] = alloc_fair_ref(&jobs[j], sizes, n_sizes, (double)devices / (double)n);
	}
	if (objective == ALLOC_FAIR || objective == ALLOC_DEADLINE) {
		/* the best threshold t among the scores: feasibility only grows as t loosens, so a
		 * binary search over the distinct values in order, from the best */
		size_t lo, hi, w = 0;
		double t;

		for (j = 0; j < n; j++)
			for (k = 0; k < n_sizes; k++)
				if (alloc_allowed(&jobs[j], sizes, k))
					levels[n_levels++] = alloc_score(objective, &jobs[j], k, ref[j]);
		qsort(levels, n_levels, sizeof(*levels), alloc_cmp_desc);
		for (k = 0; k < n_levels; k++)
			if (w == 0 || levels[k] != levels[w - 1])
				levels[w++] = levels[k];
		n_levels = w;
		lo = 0;
		hi = n_levels; /* the first feasible level is in [lo, hi]; hi = n_levels: none */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			int f = alloc_reaches(&sp, jobs, n, sizes, n_sizes, devices, objective, ref, levels[mid], must, value,
			                      choice);

			if (f < 0) {
				rc = err_set(err, UNIAP_E_NOMEM, "allocation: out of memory");
				goto out;
			}
			if (f)
				hi = mid;
			else
				lo = mid + 1;
		}
		if (lo == n_levels) {
			rc = alloc_fail_fit(&sp, jobs, n, sizes, n_sizes, devices, must, err);
			goto out;
		}
		t = levels[lo];
		out->objective = objective == ALLOC_FAIR ? t : -t;
		/* keep the sizes that reach t */
		for (j = 0; j < n; j++)
			for (k = 0; k < n_sizes; k++)
				value[j * n_sizes + k] = alloc_allowed(&jobs[j], sizes, k) &&
				                                 alloc_score(objective, &jobs[j], k, ref[j]) >= t
				                         ? alloc_value(&jobs[j], sizes, n_sizes, k, restart_cost)
				                         : NAN;
	} else {
		/* throughput; missed: a met deadline outweighs every throughput value (big exceeds
		 * the range of their sum), so the knapsack meets the most, then the best throughput */
		for (j = 0; j < n; j++)
			for (k = 0; k < n_sizes; k++)
				value[j * n_sizes + k] =
					alloc_allowed(&jobs[j], sizes, k)
						? alloc_value(&jobs[j], sizes, n_sizes, k, restart_cost) +
						          (objective == ALLOC_MISSED && alloc_meets(&jobs[j], k) ? big : 0)
						: NAN;
	}
	best = alloc_knapsack(&sp, n, sizes, n_sizes, value, must, choice, &used, &rc);
	if (rc != UNIAP_OK) {
		err_set(err, rc, "allocation: out of memory");
		goto out;
	}
	if (best == -INFINITY) {
		rc = alloc_fail_fit(&sp, jobs, n, sizes, n_sizes, devices, must, err);
		goto out;
	}
	memcpy(out->size_index, choice, n * sizeof(*choice));
	out->devices_used = used;
	{
		double thr = 0;
		int missed = 0;

		for (j = 0; j < n; j++) {
			int kk = choice[j];

			if (kk >= 0)
				thr += alloc_value(&jobs[j], sizes, n_sizes, (size_t)kk, restart_cost);
			if (jobs[j].deadline_s > 0 && (kk < 0 || !alloc_meets(&jobs[j], (size_t)kk)))
				missed++;
		}
		out->throughput_value = thr;
		if (objective == ALLOC_THROUGHPUT)
			out->objective = thr;
		if (objective == ALLOC_MISSED)
			out->objective = missed;
	}
out:
	free(value);
	free(ref);
	free(levels);
	free(must);
	free(choice);
	free(zeros);
	if (rc != UNIAP_OK)
		alloc_result_release(out);
	return rc;
}

uniap_code alloc_solve(const struct alloc_job *jobs, size_t n, const int *sizes, size_t n_sizes, int devices,
                       enum alloc_objective objective, double restart_cost, struct alloc_result *out,
                       struct uniap_err *err)
{
	struct alloc_pools one = { 1, &devices, NULL };

	if (devices < 1) {
		memset(out, 0, sizeof(*out));
		return err_set(err, UNIAP_E_INVALID, "sizes: must have 1 to %d entries and devices >= 1", ALLOC_MAX_SIZES);
	}
	if (n_sizes > ALLOC_MAX_SIZES) {
		memset(out, 0, sizeof(*out));
		return err_set(err, UNIAP_E_INVALID, "sizes: must have 1 to %d entries and devices >= 1", ALLOC_MAX_SIZES);
	}
	return alloc_solve_pools(jobs, n, sizes, n_sizes, &one, objective, restart_cost, out, err);
}

/* 1 when devices d .. d + s - 1 are all free. */
static int alloc_free(const unsigned char *used, int d, int s)
{
	int i;

	for (i = d; i < d + s; i++)
		if (used[i])
			return 0;
	return 1;
}

/* 1 when job size s may start at device d: whole nodes from a node's start, a share aligned inside one node. */
static int alloc_aligned(int d, int s, int per_node, int total)
{
	if (d < 0 || d + s > total)
		return 0;
	return s >= per_node ? d % per_node == 0 : d % s == 0 && d / per_node == (d + s - 1) / per_node;
}

/* Places the jobs not placed yet, largest first (ties by index): the first free aligned slot. */
static int alloc_place_rest(const struct alloc_result *r, size_t n, const int *sizes, int per_node, int total,
                            const size_t *order, unsigned char *used, int *first_device)
{
	size_t q;
	int d;

	for (q = 0; q < n; q++) {
		size_t j = order[q];
		int s = r->size_index[j] < 0 ? 0 : sizes[r->size_index[j]], step;

		if (s == 0 || first_device[j] >= 0)
			continue;
		step = s >= per_node ? per_node : s;
		for (d = 0; d + s <= total; d += step)
			if (alloc_aligned(d, s, per_node, total) && alloc_free(used, d, s))
				break;
		if (d + s > total)
			return -1;
		memset(used + d, 1, (size_t)s);
		first_device[j] = d;
	}
	return 0;
}

int alloc_place(const struct alloc_result *r, size_t n, const int *sizes, int nodes, int per_node,
                const int *keep, int *first_device)
{
	size_t j, q, *order = calloc(n ? n : 1, sizeof(*order));
	int total = nodes * per_node, kept = 0;
	unsigned char *used = calloc((size_t)total, 1);

	if (!order || !used) {
		free(order);
		free(used);
		return -1;
	}
	/* largest first, ties by job index (an insertion sort: stable) */
	for (j = 0; j < n; j++)
		order[j] = j;
	for (j = 1; j < n; j++)
		for (q = j; q > 0; q--) {
			int a = r->size_index[order[q - 1]], b = r->size_index[order[q]];
			size_t t;

			if ((a < 0 ? 0 : sizes[a]) >= (b < 0 ? 0 : sizes[b]))
				break;
			t = order[q - 1];
			order[q - 1] = order[q];
			order[q] = t;
		}
	for (j = 0; j < n; j++)
		first_device[j] = -1;
	/* the kept jobs where they are, when their devices are free and aligned */
	for (q = 0; keep && q < n; q++) {
		int s;

		j = order[q];
		s = r->size_index[j] < 0 ? 0 : sizes[r->size_index[j]];
		if (s > 0 && keep[j] >= 0 && alloc_aligned(keep[j], s, per_node, total) && alloc_free(used, keep[j], s)) {
			memset(used + keep[j], 1, (size_t)s);
			first_device[j] = keep[j];
			kept++;
		}
	}
	/* the rest; when the kept ones leave no room (they pack worse than largest-first, which
	 * always fits: alloc.h), everything afresh */
	if (alloc_place_rest(r, n, sizes, per_node, total, order, used, first_device) != 0) {
		memset(used, 0, (size_t)total);
		for (j = 0; j < n; j++)
			first_device[j] = -1;
		kept = 0;
		if (alloc_place_rest(r, n, sizes, per_node, total, order, used, first_device) != 0)
			kept = -1;
	}
	free(order);
	free(used);
	return kept;
}

uniap_code cluster_slice(const struct cluster_profile *c, int devices, struct cluster_profile *out,
                         struct uniap_err *err)
{
	int total = cluster_devices(c), k;
	size_t i, keep = 0;
	uniap_code rc;

	if (devices < 1 || devices > total)
		return err_set(err, UNIAP_E_INVALID, "devices: must be in [1, %d], got %d", total, devices);
	if (devices >= c->devices_per_node ? devices % c->devices_per_node != 0 : c->devices_per_node % devices != 0)
		return err_set(err, UNIAP_E_INVALID, "devices: %d is neither whole nodes of %d nor a share dividing one",
		               devices, c->devices_per_node);
	rc = cluster_copy(c, out, err);
	if (rc != UNIAP_OK)
		return rc;
	if (devices >= c->devices_per_node) {
		out->nodes = devices / c->devices_per_node;
	} else {
		out->nodes = 1;
		out->devices_per_node = devices;
	}
	/* the levels below the size, then one spanning it with the first level's that reaches it */
	for (i = 0; i < out->n_levels && out->levels[i].devices < devices; i++)
		keep++;
	if (keep < out->n_levels) {
		struct cluster_level *l = &out->levels[keep];

		if (keep > 0 && devices % out->levels[keep - 1].devices != 0) {
			cluster_release(out);
			return err_set(err, UNIAP_E_INVALID, "devices: %d does not divide into the %s level's groups of %d",
			               devices, out->levels[keep - 1].name, out->levels[keep - 1].devices);
		}
		l->devices = devices;
		if (l->shared_by > 1 && keep > 0 && l->shared_by > out->levels[keep - 1].devices)
			l->shared_by = out->levels[keep - 1].devices;
		for (i = keep + 1; i < out->n_levels; i++)
			free(out->levels[i].name);
		out->n_levels = keep + 1;
	}
	/* measured collectives of groups that still fit, pipelines that still divide */
	for (k = 0; k < CLUSTER_COLL_COUNT; k++) {
		size_t w = 0;

		for (i = 0; i < out->n_coll[k]; i++)
			if (out->coll[k][i].size <= devices)
				out->coll[k][w++] = out->coll[k][i];
		out->n_coll[k] = w;
	}
	{
		size_t w = 0;

		for (i = 0; i < out->n_p2p; i++)
			if (out->p2p[i].pp <= devices && devices % out->p2p[i].pp == 0)
				out->p2p[w++] = out->p2p[i];
		out->n_p2p = w;
	}
	rc = cluster_validate(out, err);
	if (rc != UNIAP_OK)
		cluster_release(out);
	return rc;
}
