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
 *     a sweep over them in order; the knapsack then picks the best throughput
 *     among the allocations that keep t.
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
 * The knapsack: value[j][k] (n x n_sizes, NAN where job j may not take k)
 * over `units` device units of `unit` devices; keep[j] marks jobs that must
 * take a size (no "nothing").  Fills choice[j] (index or -1), returns the best
 * value, or -INFINITY when no choice fits.  Ties: fewer devices, then smaller
 * sizes for earlier jobs (the table is filled in that order).
 */
static double alloc_knapsack(size_t n, const int *sizes, size_t n_sizes, const double *value,
                             const unsigned char *must, int unit, int units, int *choice, int *used,
                             uniap_code *rc)
{
	size_t W = (size_t)units + 1, j, k;
	double *best = NULL, result = -INFINITY;
	short *pick = NULL;
	int d;

	*rc = UNIAP_OK;
	best = malloc((n + 1) * W * sizeof(*best));
	pick = malloc(n * W * sizeof(*pick));
	if (!best || !pick) {
		*rc = UNIAP_E_NOMEM;
		goto out;
	}
	/* best[j][d]: jobs 0 .. j-1 on exactly d units (-INF: impossible) */
	for (d = 0; d <= units; d++)
		best[d] = d == 0 ? 0 : -INFINITY;
	for (j = 0; j < n; j++) {
		const double *prev = best + j * W;
		double *cur = best + (j + 1) * W;

		for (d = 0; d <= units; d++) {
			double v = must[j] ? -INFINITY : prev[d];
			short p = -1;

			for (k = 0; k < n_sizes; k++) {
				int u = sizes[k] / unit;
				double x = value[j * n_sizes + k];

				if (isnan(x) || u > d || prev[d - u] == -INFINITY)
					continue;
				if (prev[d - u] + x > v) {
					v = prev[d - u] + x;
					p = (short)k;
				}
			}
			cur[d] = v;
			pick[j * W + (size_t)d] = p;
		}
	}
	/* the best value, on the fewest units */
	{
		int at = -1;

		for (d = 0; d <= units; d++)
			if (best[n * W + (size_t)d] > result) {
				result = best[n * W + (size_t)d];
				at = d;
			}
		if (at < 0)
			goto out;
		*used = at * unit;
		for (j = n; j-- > 0;) {
			short p = pick[j * W + (size_t)at];

			choice[j] = p;
			if (p >= 0)
				at -= sizes[p] / unit;
		}
	}
out:
	free(best);
	free(pick);
	return result;
}

/* The throughput objective's value of job j at size k: weight x thr / its best. */
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
 * the least it runs on).  0 when it has no size with a plan at all.
 */
static double alloc_fair_ref(const struct alloc_job *job, const int *sizes, size_t n_sizes, double share)
{
	double ref = 0, first = 0;
	size_t k;

	for (k = 0; k < n_sizes; k++) {
		if (!alloc_allowed(job, sizes, k))
			continue;
		if (first == 0)
			first = job->throughput[k];
		if (sizes[k] <= share)
			ref = job->throughput[k];
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

/*
 * The jobs must run (must[j]) but do not fit together: the error names the
 * smallest set of them that does not fit, the ones with the largest smallest
 * size with a plan, taken until their sum exceeds the devices (a set of fewer
 * jobs has a smaller sum, so none is smaller), and says that no smaller set
 * fails.  order is scratch ([n]).
 */
static uniap_code alloc_no_fit(const struct alloc_job *jobs, size_t n, const int *sizes, size_t n_sizes,
                               int devices, const unsigned char *must, size_t *order, struct uniap_err *err)
{
	char names[512];
	size_t j, q, m = 0, used = 0, len = 0;
	long sum = 0;
	int least[ALLOC_MAX_JOBS];

	for (j = 0; j < n; j++) {
		size_t k;

		least[j] = 0;
		for (k = 0; k < n_sizes && !least[j]; k++)
			if (alloc_allowed(&jobs[j], sizes, k))
				least[j] = sizes[k];
		if (must[j])
			order[m++] = j;
	}
	/* largest smallest size first (ties by index) */
	for (j = 1; j < m; j++)
		for (q = j; q > 0 && least[order[q - 1]] < least[order[q]]; q--) {
			size_t t = order[q - 1];

			order[q - 1] = order[q];
			order[q] = t;
		}
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

uniap_code alloc_solve(const struct alloc_job *jobs, size_t n, const int *sizes, size_t n_sizes, int devices,
                       enum alloc_objective objective, double restart_cost, struct alloc_result *out,
                       struct uniap_err *err)
{
	double *value = NULL, *ref = NULL, *levels = NULL, best;
	unsigned char *must = NULL;
	int *choice = NULL, unit = 0, units, used = 0;
	size_t j, k, n_levels = 0;
	uniap_code rc = UNIAP_OK;

	memset(out, 0, sizeof(*out));
	if (n < 1 || n > ALLOC_MAX_JOBS)
		return err_set(err, UNIAP_E_INVALID, "jobs: must have 1 to %d entries, got %zu", ALLOC_MAX_JOBS, n);
	if (n_sizes < 1 || n_sizes > ALLOC_MAX_SIZES || devices < 1)
		return err_set(err, UNIAP_E_INVALID, "sizes: must have 1 to %d entries and devices >= 1",
		               ALLOC_MAX_SIZES);
	for (k = 0; k < n_sizes; k++) {
		if (sizes[k] < 1 || (k > 0 && sizes[k] <= sizes[k - 1]))
			return err_set(err, UNIAP_E_INVALID, "sizes[%zu]: must be ascending and >= 1, got %d", k,
			               sizes[k]);
		unit = alloc_gcd(unit, sizes[k]);
	}
	if (!(restart_cost >= 0) || !isfinite(restart_cost))
		return err_set(err, UNIAP_E_INVALID, "restart_cost: must be finite and >= 0, got %g", restart_cost);
	for (j = 0; j < n; j++) {
		const struct alloc_job *a = &jobs[j];

		if (a->current < -1 || a->current >= (int)n_sizes)
			return err_set(err, UNIAP_E_INVALID, "jobs[%zu].current: must be -1 or a size index below %zu, got %d",
			               j, n_sizes, a->current);
		if (!(a->weight > 0) || !isfinite(a->weight))
			return err_set(err, UNIAP_E_INVALID, "jobs[%zu].weight: must be > 0, got %g", j, a->weight);
		if (a->min_devices < 0 || a->max_devices < 0 || (a->max_devices > 0 && a->max_devices < a->min_devices))
			return err_set(err, UNIAP_E_INVALID, "jobs[%zu].max_devices: must be >= min_devices (%d), got %d",
			               j, a->min_devices, a->max_devices);
		if (objective == ALLOC_DEADLINE && !(a->samples > 0 && isfinite(a->samples)))
			return err_set(err, UNIAP_E_INVALID, "jobs[%zu].samples: the deadline objective needs the "
			               "samples to go, > 0, got %g", j, a->samples);
		for (k = 0; k < n_sizes; k++)
			if (!(a->throughput[k] >= 0) || !isfinite(a->throughput[k]))
				return err_set(err, UNIAP_E_INVALID, "jobs[%zu].throughput[%zu]: must be finite and >= 0", j,
				               k);
	}
	units = devices / unit;
	if ((double)n * ((double)units + 1) > ALLOC_MAX_TABLE)
		return err_set(err, UNIAP_E_LIMIT, "allocation: %zu jobs x %d device units is over the table cap", n,
		               units);
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

		must[j] = jobs[j].min_devices > 0 || objective != ALLOC_THROUGHPUT;
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
	/* the bottleneck objectives: the best threshold t among the scores, by a sweep from the best */
	if (objective != ALLOC_THROUGHPUT) {
		size_t li;
		double t = -INFINITY;

		for (j = 0; j < n; j++)
			for (k = 0; k < n_sizes; k++)
				if (alloc_allowed(&jobs[j], sizes, k))
					levels[n_levels++] = alloc_score(objective, &jobs[j], k, ref[j]);
		qsort(levels, n_levels, sizeof(*levels), alloc_cmp_desc);
		for (li = 0; li < n_levels && !(t > -INFINITY); li++) {
			long need = 0;

			if (li > 0 && levels[li] == levels[li - 1])
				continue;
			for (j = 0; j < n && need <= devices; j++) {
				int got = 0;

				for (k = 0; k < n_sizes && !got; k++)
					if (alloc_allowed(&jobs[j], sizes, k) &&
					    alloc_score(objective, &jobs[j], k, ref[j]) >= levels[li]) {
						need += sizes[k];
						got = 1;
					}
				if (!got)
					need = (long)devices + 1;
			}
			if (need <= devices)
				t = levels[li];
		}
		if (!(t > -INFINITY)) {
			size_t *order = malloc(n * sizeof(*order));

			rc = order ? alloc_no_fit(jobs, n, sizes, n_sizes, devices, must, order, err)
			           : err_set(err, UNIAP_E_NOMEM, "allocation: out of memory");
			free(order);
			goto out;
		}
		out->objective = objective == ALLOC_FAIR ? t : -t;
		/* keep the sizes that reach t */
		for (j = 0; j < n; j++)
			for (k = 0; k < n_sizes; k++)
				value[j * n_sizes + k] = alloc_allowed(&jobs[j], sizes, k) &&
				                                 alloc_score(objective, &jobs[j], k, ref[j]) >= t
				                         ? alloc_value(&jobs[j], sizes, n_sizes, k, restart_cost)
				                         : NAN;
	} else {
		for (j = 0; j < n; j++)
			for (k = 0; k < n_sizes; k++)
				value[j * n_sizes + k] = alloc_allowed(&jobs[j], sizes, k)
				                         ? alloc_value(&jobs[j], sizes, n_sizes, k, restart_cost)
				                         : NAN;
	}
	best = alloc_knapsack(n, sizes, n_sizes, value, must, unit, units, choice, &used, &rc);
	if (rc != UNIAP_OK) {
		err_set(err, rc, "allocation: out of memory");
		goto out;
	}
	if (best == -INFINITY) {
		size_t *order = malloc(n * sizeof(*order));

		rc = order ? alloc_no_fit(jobs, n, sizes, n_sizes, devices, must, order, err)
		           : err_set(err, UNIAP_E_NOMEM, "allocation: out of memory");
		free(order);
		goto out;
	}
	memcpy(out->size_index, choice, n * sizeof(*choice));
	out->throughput_value = best;
	out->devices_used = used;
	if (objective == ALLOC_THROUGHPUT)
		out->objective = best;
out:
	free(value);
	free(ref);
	free(levels);
	free(must);
	free(choice);
	if (rc != UNIAP_OK)
		alloc_result_release(out);
	return rc;
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
