/*
 * strategy.c - enumeration of the strategy dictionary (see strategy.h).
 *
 * For D = n / pp devices a strategy is a map from the D ranks of a stage to
 * coordinates along the used dimensions: rank r has coordinate
 * (r / stride[d]) % degree[d] along d, strides growing from the inner
 * (consecutive) dimension outwards.  Everything else (which hierarchy level a
 * group lives on, which batch shard a rank holds) follows from that map.
 */
#include "strategy.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const strategy_dim_names[STRATEGY_DIMS] = { "dp", "tp", "fsdp" };

const char *strategy_dim_name(enum strategy_dim d)
{
	return (unsigned)d < STRATEGY_DIMS ? strategy_dim_names[d] : "?";
}

int strategy_batch_width(const struct strategy *s)
{
	return s->degree[STRATEGY_DP] / strategy_cp(s) * s->degree[STRATEGY_FSDP];
}

int strategy_coord(const struct strategy *s, int rank, enum strategy_dim d)
{
	if (s->degree[d] <= 1)
		return 0;
	return (rank / s->stride[d]) % s->degree[d];
}

int strategy_batch_shard(const struct strategy *s, int rank)
{
	/* the inner cp of the dp coordinate splits the sequence; the rest the batch */
	int dp = strategy_coord(s, rank, STRATEGY_DP) / strategy_cp(s);
	int fs = strategy_coord(s, rank, STRATEGY_FSDP);

	/* the dimension with the larger stride is the outer, more significant one */
	if (s->stride[STRATEGY_DP] > s->stride[STRATEGY_FSDP])
		return dp * s->degree[STRATEGY_FSDP] + fs;
	return fs * (s->degree[STRATEGY_DP] / strategy_cp(s)) + dp;
}

int strategy_seq_shard(const struct strategy *s, int rank)
{
	return strategy_coord(s, rank, STRATEGY_DP) % strategy_cp(s);
}

static long strategy_gcd(long x, long y)
{
	while (y) {
		long t = x % y;

		x = y;
		y = t;
	}
	return x;
}

/*
 * A rank's coordinate along one dimension while the ranks are visited in
 * steps of `step`: val = floor(r / stride) mod degree, advanced by counting
 * (cnt of per = stride / step visits) instead of dividing.  A dimension that
 * does not split keeps val 0.
 */
struct reshard_walk {
	long per, cnt, deg, val;
};

static void reshard_walk_init(struct reshard_walk *w, const struct strategy *s, enum strategy_dim dim, long step)
{
	w->cnt = 0;
	w->val = 0;
	w->deg = s->degree[dim] > 1 ? s->degree[dim] : 1;
	w->per = s->degree[dim] > 1 && s->stride[dim] > 0 ? s->stride[dim] / step : LONG_MAX;
}

/* strategy_batch_shard from the rank's dp and fsdp coordinates */
static long reshard_shard(const struct strategy *s, long dpc, long fs)
{
	long dp = dpc / strategy_cp(s);

	if (s->stride[STRATEGY_DP] > s->stride[STRATEGY_FSDP])
		return dp * s->degree[STRATEGY_FSDP] + fs;
	return fs * (s->degree[STRATEGY_DP] / strategy_cp(s)) + dp;
}

/*
 * Fraction of a micro-batch that the worst rank lacks when a tensor laid out
 * by strategy a (batch split into width(a) shards) is needed in layout b.
 */
double strategy_reshard_fraction(const struct strategy *a, const struct strategy *b, int D)
{
	double wa = strategy_batch_width(a), wb = strategy_batch_width(b);
	double worst = 0;
	long period = 1, step = 0;
	int r, d;

	/*
	 * A rank's coordinate in a dim is floor(r / stride) mod degree: periodic in r with
	 * stride x degree, and constant on blocks of `step` = gcd of the strides.  So the
	 * shard pair of rank r repeats with the lcm of those periods, and the multiples of
	 * step below it (and below D) see every pair the D ranks have.
	 */
	for (d = 0; d < 4; d++) {
		const struct strategy *s = d < 2 ? a : b;
		enum strategy_dim dim = d % 2 ? STRATEGY_FSDP : STRATEGY_DP;
		long x = (long)s->stride[dim] * s->degree[dim];

		if (s->degree[dim] <= 1 || s->stride[dim] <= 0)
			continue;
		step = strategy_gcd(step, s->stride[dim]);
		if (period < D)
			period = period / strategy_gcd(period, x) * x;
	}
	if (period < D)
		D = (int)period;
	if (step <= 0)
		step = D; /* neither splits the batch: every rank holds all of it */
	/*
	 * In units of 1 / (wa wb) the shards are integer intervals: a's shard ha is
	 * [ha wb, (ha + 1) wb), b's shard hb is [hb wa, (hb + 1) wa), so the overlap is
	 * an exact integer and the worst rank is the one with the least overlap; none
	 * (a whole b shard missing) cannot be beaten, so the scan stops there.
	 */
	{
		/* with context parallelism a shard is a batch interval times a sequence interval:
		 * in units of 1 / (ca cb) of the sequence, a's chunk sa is [sa cb, (sa + 1) cb),
		 * b's [sb ca, (sb + 1) ca); the tokens held are the product of the overlaps */
		long iwa = (long)wa, iwb = (long)wb, ca = strategy_cp(a), cb = strategy_cp(b);
		long least = iwa * ca;
		struct reshard_walk wk[4];

		/* the coordinates by counting, not dividing: each moves on by one every
		 * stride / step visited ranks (step divides every stride that splits) */
		for (d = 0; d < 4; d++)
			reshard_walk_init(&wk[d], d < 2 ? a : b, d % 2 ? STRATEGY_FSDP : STRATEGY_DP, step);
		for (r = 0; r < D && least > 0; r += (int)step) {
			long ha = reshard_shard(a, wk[0].val, wk[1].val), hb = reshard_shard(b, wk[2].val, wk[3].val);
			long sa = wk[0].val % ca, sb = wk[2].val % cb;
			long lo = ha * iwb > hb * iwa ? ha * iwb : hb * iwa;
			long hi = (ha + 1) * iwb < (hb + 1) * iwa ? (ha + 1) * iwb : (hb + 1) * iwa;
			long slo = sa * cb > sb * ca ? sa * cb : sb * ca;
			long shi = (sa + 1) * cb < (sb + 1) * ca ? (sa + 1) * cb : (sb + 1) * ca;
			long have = (hi > lo ? hi - lo : 0) * (shi > slo ? shi - slo : 0);

			if (have < least)
				least = have;
			for (d = 0; d < 4; d++)
				if (++wk[d].cnt == wk[d].per) {
					wk[d].cnt = 0;
					if (++wk[d].val == wk[d].deg)
						wk[d].val = 0;
				}
		}
		worst = (double)(iwa * ca - least) / (wa * wb * (double)ca * (double)cb);
	}
	return worst < 1e-12 ? 0 : worst;
}

int strategy_group_level(const struct cluster_profile *c, int size, int stride, int stage_devices,
                         int pp)
{
	long span = (long)(size - 1) * stride + 1, period = (long)stride * size;
	long total = (long)pp * stage_devices;
	size_t lv;

	if (size <= 1 || c->n_levels == 0)
		return 0;
	for (lv = 0; lv < c->n_levels; lv++) {
		long block = c->levels[lv].devices, st_end, r_end, g;
		int fits = 1;
		int st, r;

		/* the group at rank 0 of stage 0 spans more than a block: it cannot fit */
		if (span > block)
			continue;
		/* groups that tile every stage all lie in [0, total): one block holds them */
		if (block >= total && stage_devices % period == 0)
			return (int)lv;
		/* Whether the group led by global rank off + r fits depends on (off + r) mod block
		 * (its last member is a fixed distance on), and whether r leads a group on r mod
		 * period.  So the stages repeat after block / gcd(stage_devices, block) of them,
		 * and the ranks of a stage after lcm(period, block): checking those is checking
		 * all (the plain scan over every rank of every stage took 16,384 steps per level
		 * and strategy on 16,384 devices, most of a build's time). */
		g = strategy_gcd(stage_devices, block);
		st_end = block / g < pp ? block / g : pp;
		g = strategy_gcd(period, block);
		r_end = period / g <= stage_devices / block + 1 ? period / g * block : stage_devices;
		if (r_end > stage_devices)
			r_end = stage_devices;
		for (st = 0; st < st_end && fits; st++) {
			long off = (long)st * stage_devices;

			for (r = 0; r < r_end && fits; r++) {
				long first, last;

				/* r is the first member of its group iff its coordinate is 0 */
				if ((r / stride) % size != 0)
					continue;
				first = off + r;
				last = first + (long)(size - 1) * stride;
				if (first / block != last / block)
					fits = 0;
			}
		}
		if (fits)
			return (int)lv;
	}
	return (int)c->n_levels - 1;
}

/* Appends one strategy built from degrees and an inner-to-outer order. */
static void strategy_fill(struct strategy *s, const struct cluster_profile *c, int pp,
                          int stage_devices, const int degree[STRATEGY_DIMS], const int *order,
                          int n_order, int rc, int sp, int zero, int ep, int etp1, int cp)
{
	int j, stride = 1;
	size_t len = 0;

	memset(s, 0, sizeof(*s));
	for (j = 0; j < STRATEGY_DIMS; j++) {
		s->degree[j] = degree[j];
		s->stride[j] = 1;
		s->level[j] = -1;
	}
	s->n_order = n_order;
	s->recompute = rc == 1;
	s->selective = rc == 2;
	s->zero = zero;
	s->sp = sp;
	s->ep = ep > 1 ? ep : 1;
	s->etp1 = etp1;
	s->cp = cp > 1 ? cp : 1;
	for (j = 0; j < n_order; j++) {
		int d = order[j];

		s->order[j] = d;
		s->stride[d] = stride;
		s->level[d] = strategy_group_level(c, degree[d], stride, stage_devices, pp);
		stride *= degree[d];
		len += (size_t)snprintf(s->name + len, sizeof(s->name) - len, "%s%s%d",
		                        j ? "." : "", strategy_dim_names[d], degree[d]);
	}
	if (n_order == 0)
		len = (size_t)snprintf(s->name, sizeof(s->name), "single");
	if (sp)
		len += (size_t)snprintf(s->name + len, sizeof(s->name) - len, "+sp");
	if (cp > 1)
		len += (size_t)snprintf(s->name + len, sizeof(s->name) - len, "+cp%d", cp);
	if (ep > 1 || etp1)
		len += (size_t)snprintf(s->name + len, sizeof(s->name) - len, "+ep%d", ep > 1 ? ep : 1);
	if (etp1)
		len += (size_t)snprintf(s->name + len, sizeof(s->name) - len, "+etp1");
	if (zero)
		len += (size_t)snprintf(s->name + len, sizeof(s->name) - len, "+z%d", zero);
	if (rc == 1)
		snprintf(s->name + len, sizeof(s->name) - len, "+rc");
	else if (rc == 2)
		snprintf(s->name + len, sizeof(s->name) - len, "+sel");
}

/* Permutations of dims[0..n) in lexicographic order; calls back each. */
static int strategy_next_perm(int *a, int n)
{
	int i = n - 2, j, t;

	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return 0;
	j = n - 1;
	while (a[j] <= a[i])
		j--;
	t = a[i]; a[i] = a[j]; a[j] = t;
	for (i++, j = n - 1; i < j; i++, j--) {
		t = a[i]; a[i] = a[j]; a[j] = t;
	}
	return 1;
}

uniap_code strategy_enumerate(const struct cluster_profile *c, int pp, int with,
                              struct strategy_set *out, struct uniap_err *err)
{
	return strategy_enumerate_experts(c, pp, with, 0, out, err);
}

uniap_code strategy_enumerate_experts(const struct cluster_profile *c, int pp, int with, int experts,
                                      struct strategy_set *out, struct uniap_err *err)
{
	return strategy_enumerate_cp(c, pp, with, experts, 1, out, err);
}

uniap_code strategy_enumerate_cp(const struct cluster_profile *c, int pp, int with, int experts, int cp,
                                 struct strategy_set *out, struct uniap_err *err)
{
	int n = cluster_devices(c), recompute = with & STRATEGY_WITH_RECOMPUTE;
	int D, dp, tp, rc, z, q, ep, e1;
	size_t cap = 64;

	memset(out, 0, sizeof(*out));
	if (pp < 1 || n % pp != 0)
		return err_set(err, UNIAP_E_ARG, "pp: must divide the device count %d, got %d", n, pp);
	if (cp < 1 || (n / pp) % cp != 0)
		return err_set(err, UNIAP_E_ARG, "context_parallel: must divide the %d devices of a stage, got %d", n / pp,
		               cp);
	D = n / pp;
	out->items = calloc(cap, sizeof(*out->items));
	if (!out->items)
		return err_set(err, UNIAP_E_NOMEM, "strategy dictionary: out of memory");
	out->stage_devices = D;
	out->pp = pp;
	for (rc = 0; rc <= 2; rc++) {
		/* 0 none, 1 full recompute, 2 selective */
		if ((rc == 1 && !recompute) || (rc == 2 && !(with & STRATEGY_WITH_SELECTIVE)))
			continue;
		for (dp = 1; dp <= D; dp++) {
			if (D % dp)
				continue;
			/* context parallelism: the inner cp ranks of the dp group */
			if (cp > 1 && dp % cp)
				continue;
			for (tp = 1; tp <= D / dp; tp++) {
				int degree[STRATEGY_DIMS];
				int order[STRATEGY_DIMS];
				int n_order = 0, d;

				if ((D / dp) % tp)
					continue;
				degree[STRATEGY_DP] = dp;
				degree[STRATEGY_TP] = tp;
				degree[STRATEGY_FSDP] = D / dp / tp;
				for (d = 0; d < STRATEGY_DIMS; d++)
					if (degree[d] > 1)
						order[n_order++] = d;
				do {
					/* ZeRO-1/2 shard over a dp group; fsdp is stage 3 already */
					int zmax = (with & STRATEGY_WITH_ZERO) && dp > 1 && degree[STRATEGY_FSDP] == 1
						? 2 : 0;
					/* sequence parallelism shards along a tp group */
					int qmax = (with & STRATEGY_WITH_SP) && tp > 1;

					/* etp1: sequence parallel, tp inner and dp (if any) right outside */
					int e1ok = experts > 0 && tp > 1 && degree[STRATEGY_FSDP] == 1 &&
					           order[0] == STRATEGY_TP;

					for (q = 0; q <= qmax; q++)
					for (e1 = 0; e1 <= (q && e1ok); e1++)
					for (ep = 1; ep <= (e1 ? tp * dp : dp); ep++)
					for (z = 0; z <= zmax; z++) {
						/* experts shared out over the inner ep ranks of each dp
						 * group (ep divides dp), or under etp1 over runs of ep
						 * ranks of the tp x dp block; ep divides every MoE
						 * layer's experts */
						if (e1 ? (tp * dp) % ep || experts % ep
						       : ep > 1 && (experts <= 0 || dp % ep || experts % ep ||
						                    degree[STRATEGY_FSDP] > 1))
							break;
						if (out->count == cap) {
							struct strategy *grown;

							if (cap >= STRATEGY_MAX_COUNT) {
								strategy_set_release(out);
								return err_set(err, UNIAP_E_LIMIT,
								               "strategy dictionary: more than %d strategies",
								               STRATEGY_MAX_COUNT);
							}
							grown = realloc(out->items, 2 * cap * sizeof(*grown));
							if (!grown) {
								strategy_set_release(out);
								return err_set(err, UNIAP_E_NOMEM,
								               "strategy dictionary: out of memory");
							}
							out->items = grown;
							cap *= 2;
						}
						strategy_fill(&out->items[out->count++], c, pp, D, degree, order,
						              n_order, rc, q, z, ep, e1, cp);
					}
				} while (strategy_next_perm(order, n_order));
			}
		}
	}
	return UNIAP_OK;
}

long strategy_find(const struct strategy_set *set, const char *name)
{
	size_t i;

	for (i = 0; i < set->count; i++)
		if (strcmp(set->items[i].name, name) == 0)
			return (long)i;
	return -1;
}

void strategy_set_release(struct strategy_set *set)
{
	if (!set)
		return;
	free(set->items);
	memset(set, 0, sizeof(*set));
}
