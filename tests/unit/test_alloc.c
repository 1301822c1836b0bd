/*
 * test_alloc.c - the exact allocation (core/alloc.c) against brute force:
 * on random small instances (up to 5 jobs, up to 4 nodes of 1 to 8 devices,
 * curves with holes, weights, minimums and caps) every objective's value and
 * the throughput value it keeps equal the best over every combination of
 * sizes; the same for clusters of two or three pools (each job inside one);
 * the placement puts each job on its own devices, whole nodes for node-sized
 * jobs and one node for shares; slicing a catalog cluster gives valid
 * clusters of every allowed size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "catalog.h"

static unsigned long rng = 4242;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005UL + 1442695040888963407UL;
	return (unsigned)((rng >> 33) % n);
}

#define MAXJ 5
#define MAXP 3

struct inst {
	int nodes, per_node, sizes[ALLOC_MAX_SIZES]; /* pool 0's; with pools, every pool's sizes in turn */
	size_t n, n_sizes;
	size_t n_pools;             /* 1: one cluster of nodes x per_node */
	int pool_nodes[MAXP], pool_per[MAXP], pool_devices[MAXP], pool_of[ALLOC_MAX_SIZES];
	size_t pool_first[MAXP + 1]; /* pool p's sizes: pool_first[p] .. pool_first[p + 1] */
	double restart; /* re-planning: the restart cost (0: a first allocation) */
	double thr[MAXJ][ALLOC_MAX_SIZES];
	struct alloc_job jobs[MAXJ];
};

static void make(struct inst *in, int pooled)
{
	static const int per[] = { 1, 2, 4, 8 };
	size_t j, k, p;

	memset(in, 0, sizeof(*in));
	in->n_pools = pooled ? 2 + rnd(2) : 1;
	for (p = 0; p < in->n_pools; p++) {
		size_t got;

		/* several pools: fewer nodes and jobs, so that brute force stays quick */
		in->pool_nodes[p] = 1 + (int)rnd(pooled ? 2 : 4);
		in->pool_per[p] = per[rnd(pooled ? 3 : 4)];
		in->pool_devices[p] = in->pool_nodes[p] * in->pool_per[p];
		in->pool_first[p] = in->n_sizes;
		got = alloc_sizes(in->pool_nodes[p], in->pool_per[p], in->sizes + in->n_sizes,
		                  ALLOC_MAX_SIZES - in->n_sizes);
		assert_true(got > 0);
		for (k = in->n_sizes; k < in->n_sizes + got; k++)
			in->pool_of[k] = (int)p;
		in->n_sizes += got;
	}
	in->pool_first[in->n_pools] = in->n_sizes;
	in->nodes = in->pool_nodes[0];
	in->per_node = in->pool_per[0];
	in->n = 1 + rnd(pooled ? 3 : MAXJ);
	for (j = 0; j < in->n; j++) {
		struct alloc_job *a = &in->jobs[j];
		double t = 0;

		for (k = 0; k < in->n_sizes; k++) {
			/* mostly growing with the size, sometimes not, sometimes no plan */
			t += rnd(4) == 0 ? -(double)rnd(3) : (double)(1 + rnd(5));
			in->thr[j][k] = rnd(6) == 0 || t <= 0 ? 0 : t;
		}
		a->name = "job";
		a->weight = 1 + rnd(3);
		a->min_devices = rnd(3) == 0 ? in->sizes[rnd((unsigned)in->n_sizes)] : 0;
		a->max_devices = rnd(4) == 0 ? in->sizes[rnd((unsigned)in->n_sizes)] : 0;
		if (a->max_devices > 0 && a->max_devices < a->min_devices)
			a->max_devices = 0;
		a->samples = 100 * (1 + rnd(9));
		a->deadline_s = rnd(3) == 0 ? 0 : 10.0 * (1 + rnd(30));
		a->throughput = in->thr[j];
		a->current = rnd(2) ? -1 : (int)rnd((unsigned)in->n_sizes);
	}
	in->restart = rnd(3) == 0 ? 0 : 0.1 * rnd(5);
}

static int allowed(const struct inst *in, size_t j, size_t k)
{
	const struct alloc_job *a = &in->jobs[j];

	return in->sizes[k] >= a->min_devices && (a->max_devices <= 0 || in->sizes[k] <= a->max_devices) &&
	       a->throughput[k] > 0;
}

static double best_of(const struct inst *in, size_t j)
{
	double b = 0;
	size_t k;

	for (k = 0; k < in->n_sizes; k++)
		if (allowed(in, j, k) && in->thr[j][k] > b)
			b = in->thr[j][k];
	return b;
}

static int total_devices(const struct inst *in)
{
	int d = 0;
	size_t p;

	for (p = 0; p < in->n_pools; p++)
		d += in->pool_devices[p];
	return d;
}

/* the fair reference (alloc.h): the largest allowed size with a plan within the equal share,
 * else the smallest with a plan; the best pool where several have that size */
static double fair_ref(const struct inst *in, size_t j)
{
	double share = (double)total_devices(in) / (double)in->n, ref = 0, first = 0;
	int ref_size = 0, first_size = 0;
	size_t k;

	for (k = 0; k < in->n_sizes; k++) {
		int s = in->sizes[k];

		if (!allowed(in, j, k))
			continue;
		if (first_size == 0 || s < first_size || (s == first_size && in->thr[j][k] > first)) {
			first_size = s;
			first = in->thr[j][k];
		}
		if (s <= share && (s > ref_size || (s == ref_size && in->thr[j][k] > ref))) {
			ref_size = s;
			ref = in->thr[j][k];
		}
	}
	return ref > 0 ? ref : first;
}

/*
 * Brute force: every job takes one allowed size or (throughput objective and no minimum)
 * nothing; the best primary objective, then the best throughput value among those.
 * Returns 0 with *prim and *thr set, or -1 when nothing fits.
 */
static int brute(const struct inst *in, enum alloc_objective o, double *prim, double *thr)
{
	int pick[MAXJ], found = 0;
	size_t j;

	for (j = 0; j < in->n; j++)
		pick[j] = -1;
	for (;;) {
		int ok = 1, used[MAXP] = { 0 }, fits = 1;
		double p = o == ALLOC_THROUGHPUT || o == ALLOC_MISSED ? 0 : INFINITY, t = 0;
		size_t q;

		for (j = 0; j < in->n && ok; j++) {
			int k = pick[j];

			if (k < 0) {
				ok = (o == ALLOC_THROUGHPUT || o == ALLOC_MISSED) && in->jobs[j].min_devices == 0;
				if (o == ALLOC_MISSED && in->jobs[j].deadline_s > 0)
					p -= 1;
				continue;
			}
			ok = allowed(in, j, (size_t)k);
			if (!ok)
				break;
			used[in->pool_of[k]] += in->sizes[k];
			if (o == ALLOC_MISSED && in->jobs[j].deadline_s > 0 &&
			    in->jobs[j].samples / in->thr[j][k] > in->jobs[j].deadline_s)
				p -= 1;
			t += in->jobs[j].weight * in->thr[j][k] / best_of(in, j);
			if (in->jobs[j].current >= 0 && in->jobs[j].current != k)
				t -= in->jobs[j].weight * in->restart; /* a move costs its restart */
			if (o == ALLOC_FAIR)
				p = fmin(p, in->thr[j][k] / fair_ref(in, j));
			if (o == ALLOC_DEADLINE)
				p = fmin(p, -in->jobs[j].samples / in->thr[j][k]);
		}
		for (q = 0; q < in->n_pools; q++)
			fits &= used[q] <= in->pool_devices[q];
		if (ok && fits) {
			if (o == ALLOC_THROUGHPUT)
				p = t;
			if (!found || p > *prim + 1e-12 || (fabs(p - *prim) <= 1e-12 && t > *thr + 1e-12)) {
				*prim = p;
				*thr = t;
				found = 1;
			}
		}
		/* next combination: each pick in -1 .. n_sizes - 1 */
		for (j = 0; j < in->n; j++) {
			if (++pick[j] < (int)in->n_sizes)
				break;
			pick[j] = -1;
		}
		if (j == in->n)
			break;
	}
	if (found && (o == ALLOC_DEADLINE || o == ALLOC_MISSED))
		*prim = -*prim;
	return found ? 0 : -1;
}

/* Places pool p's jobs (the others masked out) and checks each is on its own devices,
 * whole nodes for node-sized jobs and one node for shares. */
static void check_place(const struct inst *in, const struct alloc_result *r, const int *keep, size_t p)
{
	int first[MAXJ], owner[32], d, idx[MAXJ], nodes = in->pool_nodes[p], per = in->pool_per[p];
	struct alloc_result m = { idx, 0, 0, 0 };
	size_t j;

	for (j = 0; j < in->n; j++)
		idx[j] = r->size_index[j] >= 0 && (size_t)in->pool_of[r->size_index[j]] == p ? r->size_index[j] : -1;
	assert_true(alloc_place(&m, in->n, in->sizes, nodes, per, keep, first) >= 0);
	for (d = 0; d < 32; d++)
		owner[d] = -1;
	for (j = 0; j < in->n; j++) {
		int s = idx[j] < 0 ? 0 : in->sizes[idx[j]];

		if (s == 0) {
			assert_int_equal(first[j], -1);
			continue;
		}
		assert_true(first[j] >= 0 && first[j] + s <= nodes * per);
		if (s >= per)
			assert_int_equal(first[j] % per, 0); /* whole nodes */
		else
			assert_int_equal(first[j] / per, (first[j] + s - 1) / per); /* one node */
		for (d = first[j]; d < first[j] + s; d++) {
			assert_int_equal(owner[d], -1);
			owner[d] = (int)j;
		}
	}
}

static void test_matches_brute_force(void **state)
{
	int trial, o, solved = 0, infeasible = 0, pooled_solved = 0;

	(void)state;
	for (trial = 0; trial < 900; trial++) {
		struct inst in;
		int pooled = trial % 3 == 2;

		make(&in, pooled);
		for (o = ALLOC_THROUGHPUT; o < ALLOC_OBJECTIVE_COUNT; o++) {
			struct alloc_result r;
			struct uniap_err err;
			struct alloc_pools pools = { in.n_pools, in.pool_devices, in.pool_of };
			double prim = 0, thr = 0;
			int b = brute(&in, (enum alloc_objective)o, &prim, &thr);
			/* one pool: alloc_solve (the one-pool case) and alloc_solve_pools agree */
			uniap_code rc = pooled ? alloc_solve_pools(in.jobs, in.n, in.sizes, in.n_sizes, &pools,
			                                           (enum alloc_objective)o, in.restart, &r, &err)
			                       : alloc_solve(in.jobs, in.n, in.sizes, in.n_sizes, in.nodes * in.per_node,
			                                     (enum alloc_objective)o, in.restart, &r, &err);
			size_t p;

			if (b != 0) {
				if (rc != UNIAP_E_INFEASIBLE)
					fail_msg("trial %d objective %s: brute force finds nothing, alloc_solve %d", trial,
					         alloc_objective_name((enum alloc_objective)o), (int)rc);
				if (pooled)
					assert_true(strstr(err.msg, "without any one of them the others fit") ||
					            strstr(err.msg, "no allowed size"));
				infeasible++;
				continue;
			}
			if (rc != UNIAP_OK)
				fail_msg("trial %d objective %s: %s", trial, alloc_objective_name((enum alloc_objective)o),
				         err.msg);
			if (fabs(r.objective - prim) > 1e-9 * (1 + fabs(prim)) ||
			    fabs(r.throughput_value - thr) > 1e-9 * (1 + fabs(thr)))
				fail_msg("trial %d objective %s%s: alloc %.12g (throughput %.12g), brute %.12g (%.12g)", trial,
				         alloc_objective_name((enum alloc_objective)o), pooled ? " (pools)" : "", r.objective,
				         r.throughput_value, prim, thr);
			assert_true(r.devices_used <= total_devices(&in));
			if (!pooled) {
				struct alloc_result r1;

				assert_int_equal(alloc_solve_pools(in.jobs, in.n, in.sizes, in.n_sizes, &pools,
				                                   (enum alloc_objective)o, in.restart, &r1, &err), UNIAP_OK);
				assert_memory_equal(r.size_index, r1.size_index, in.n * sizeof(int));
				alloc_result_release(&r1);
			}
			for (p = 0; p < in.n_pools; p++)
				check_place(&in, &r, NULL, p);
			if (!pooled) {
				/* re-placing with some jobs asked to stay on random devices: still a placement;
				 * asked to stay where they are: every job stays */
				int keep[MAXJ], again[MAXJ], placed = 0;
				size_t q;

				assert_true(alloc_place(&r, in.n, in.sizes, in.nodes, in.per_node, NULL, keep) >= 0);
				for (q = 0; q < in.n; q++)
					placed += keep[q] >= 0;
				assert_int_equal(alloc_place(&r, in.n, in.sizes, in.nodes, in.per_node, keep, again), placed);
				assert_memory_equal(keep, again, in.n * sizeof(int));

				for (q = 0; q < in.n; q++)
					keep[q] = rnd(2) ? -1 : (int)rnd((unsigned)(in.nodes * in.per_node));
				check_place(&in, &r, keep, 0);
			}
			solved++;
			pooled_solved += pooled;
			alloc_result_release(&r);
		}
	}
	fprintf(stderr, "allocation: %d solved (%d on pools), %d infeasible, all equal to brute force\n", solved,
	        pooled_solved, infeasible);
	assert_true(solved > 1500 && pooled_solved > 300 && infeasible > 0);
}

static void test_errors(void **state)
{
	double thr[3] = { 1, 2, 3 };
	int sizes[3] = { 1, 2, 4 };
	struct alloc_job j[2] = { { "a", 1, 0, 0, 10, thr, -1, 0 }, { "b", 1, 4, 0, 10, thr, -1, 0 } };
	struct alloc_result r;
	struct uniap_err err;

	(void)state;
	j[0].weight = 0;
	assert_int_equal(alloc_solve(j, 2, sizes, 3, 4, ALLOC_THROUGHPUT, 0, &r, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "jobs[0].weight"));
	j[0].weight = 1;
	j[0].min_devices = 4; /* both want 4 of 4 devices */
	assert_int_equal(alloc_solve(j, 2, sizes, 3, 4, ALLOC_THROUGHPUT, 0, &r, &err), UNIAP_E_INFEASIBLE);
	assert_non_null(strstr(err.msg, "2 jobs cannot run together on 4 devices: a (4), b (4) need 8"));
	{
		/* the smallest set that does not fit: the largest minimums first until they exceed the
		 * devices (d has no minimum and is never named) */
		struct alloc_job k[4] = { { "a", 1, 1, 0, 10, thr, -1, 0 }, { "b", 1, 4, 0, 10, thr, -1, 0 },
			                  { "c", 1, 2, 0, 10, thr, -1, 0 }, { "d", 1, 0, 0, 10, thr, -1, 0 } };

		assert_int_equal(alloc_solve(k, 4, sizes, 3, 6, ALLOC_THROUGHPUT, 0, &r, &err), UNIAP_E_INFEASIBLE);
		assert_non_null(strstr(err.msg, "3 jobs cannot run together on 6 devices: b (4), c (2), a (1) need 7"));
	}
	assert_int_equal(alloc_solve(j, 2, sizes, 3, 8, ALLOC_THROUGHPUT, -1, &r, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "restart_cost"));
	j[0].samples = 0;
	j[0].min_devices = 0;
	assert_int_equal(alloc_solve(j, 2, sizes, 3, 8, ALLOC_DEADLINE, 0, &r, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "jobs[0].samples"));
	j[0].deadline_s = 60; /* missed: a job with a deadline needs its samples to go */
	assert_int_equal(alloc_solve(j, 2, sizes, 3, 8, ALLOC_MISSED, 0, &r, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "jobs[0].samples: the missed objective"));
	{
		/* pools: three jobs of 4 in two pools of 4; any two fit, so all three are named */
		double t6[6] = { 1, 2, 3, 1, 2, 3 };
		int sz[6] = { 1, 2, 4, 1, 2, 4 }, of[6] = { 0, 0, 0, 1, 1, 1 }, dev[2] = { 4, 4 };
		struct alloc_pools pools = { 2, dev, of };
		struct alloc_job k[4] = { { "a", 1, 4, 0, 10, t6, -1, 0 }, { "b", 1, 4, 0, 10, t6, -1, 0 },
			                  { "c", 1, 4, 0, 10, t6, -1, 0 }, { "d", 1, 0, 0, 10, t6, -1, 0 } };

		assert_int_equal(alloc_solve_pools(k, 4, sz, 6, &pools, ALLOC_THROUGHPUT, 0, &r, &err), UNIAP_E_INFEASIBLE);
		assert_non_null(strstr(err.msg, "3 jobs cannot run together in the 2 pools: a (4), b (4), c (4)"));
		k[2].min_devices = 2; /* now a and b take a pool each and c has no room: still all three */
		assert_int_equal(alloc_solve_pools(k, 4, sz, 6, &pools, ALLOC_THROUGHPUT, 0, &r, &err), UNIAP_E_INFEASIBLE);
		assert_non_null(strstr(err.msg, "3 jobs cannot run together in the 2 pools: a (4), b (4), c (2)"));
		k[2].min_devices = 0; /* without c's minimum: a in one pool, b in the other, c and d nothing */
		assert_int_equal(alloc_solve_pools(k, 4, sz, 6, &pools, ALLOC_THROUGHPUT, 0, &r, &err), UNIAP_OK);
		assert_int_equal(of[r.size_index[0]] + of[r.size_index[1]], 1);
		assert_int_equal(r.devices_used, 8);
		alloc_result_release(&r);
		of[3] = 2; /* a pool that does not exist */
		assert_int_equal(alloc_solve_pools(k, 4, sz, 6, &pools, ALLOC_THROUGHPUT, 0, &r, &err), UNIAP_E_INVALID);
		assert_non_null(strstr(err.msg, "sizes[3]: its pool"));
	}
	assert_int_equal(alloc_objective_parse("missed"), ALLOC_MISSED);
	assert_int_equal(alloc_objective_parse("fair"), ALLOC_FAIR);
	assert_int_equal(alloc_objective_parse("fastest"), -1);
}

static void test_slice(void **state)
{
	struct cluster_profile c, s;
	struct uniap_err err;
	int sizes[ALLOC_MAX_SIZES];
	size_t n, k;

	(void)state;
	assert_int_equal(catalog_cluster("dgx-h100-x4", &c, &err), UNIAP_OK);
	n = alloc_sizes(c.nodes, c.devices_per_node, sizes, ALLOC_MAX_SIZES);
	assert_int_equal(n, 3 + 4); /* 1, 2, 4 of a node, then 1 to 4 nodes */
	for (k = 0; k < n; k++) {
		assert_int_equal(cluster_slice(&c, sizes[k], &s, &err), UNIAP_OK);
		assert_int_equal(cluster_devices(&s), sizes[k]);
		assert_int_equal(s.levels[s.n_levels - 1].devices, sizes[k]);
		/* a share of a node keeps NVLink's bandwidth; whole nodes keep the network above it */
		assert_true(s.levels[s.n_levels - 1].bw_bytes_per_s ==
		            c.levels[sizes[k] <= c.devices_per_node ? 0 : c.n_levels - 1].bw_bytes_per_s);
		cluster_release(&s);
	}
	assert_int_equal(cluster_slice(&c, 12, &s, &err), UNIAP_E_INVALID);
	assert_int_equal(cluster_slice(&c, 3, &s, &err), UNIAP_E_INVALID);
	cluster_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_brute_force),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_slice),
	};

	return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
