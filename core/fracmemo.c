/*
 * fracmemo.c - the reshard-fraction memo (fracmemo.h): layouts interned to
 * small ids, fractions kept per pair of ids, both in open-addressed tables.
 *
 * Thread safety: one mutex per memo around every table access; the fraction
 * is computed with it released, so two threads may compute one pair at once
 * (both get the same value; the second insert finds the first).
 * Never: I/O, globals, asserts on input.
 */
#include "fracmemo.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FRAC_MEMO_DEFAULT_PAIRS ((size_t)1 << 20)
#define FRAC_MEMO_LAYOUT_INTS 6

/* What strategy_reshard_fraction() reads of a strategy, and the device count. */
struct frac_layout {
	int v[FRAC_MEMO_LAYOUT_INTS]; /* dp degree, dp stride, fsdp degree, fsdp stride, cp, D */
};

struct frac_slot_layout {
	struct frac_layout key;
	uint32_t id; /* 0: empty; else id + 1 */
};

struct frac_slot_pair {
	uint64_t key; /* (id a + 1) << 32 | (id b + 1); 0: empty */
	double frac;
};

struct frac_memo {
	pthread_mutex_t mu;
	size_t max_pairs;
	struct frac_slot_layout *lay; /* owned, [n_lay_slots] */
	size_t n_lay_slots, n_lay;
	struct frac_slot_pair *pair;  /* owned, [n_pair_slots] */
	size_t n_pair_slots, n_pair;
	size_t hits, misses;
};

static uint64_t frac_mix(uint64_t h)
{
	/* the finaliser of MurmurHash3: every input bit moves every output bit */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static uint64_t frac_layout_hash(const struct frac_layout *k)
{
	uint64_t h = 0;
	int i;

	for (i = 0; i < FRAC_MEMO_LAYOUT_INTS; i++)
		h = frac_mix(h ^ (uint64_t)(uint32_t)k->v[i]);
	return h;
}

/* A stride decides nothing for a dimension that does not split (degree 1). */
static void frac_layout_of(const struct strategy *s, int D, struct frac_layout *k)
{
	int dp = s->degree[STRATEGY_DP], fs = s->degree[STRATEGY_FSDP];

	memset(k, 0, sizeof(*k));
	k->v[0] = dp;
	k->v[1] = dp > 1 ? s->stride[STRATEGY_DP] : 0;
	k->v[2] = fs;
	k->v[3] = fs > 1 ? s->stride[STRATEGY_FSDP] : 0;
	k->v[4] = strategy_cp(s);
	k->v[5] = D;
}

struct frac_memo *frac_memo_new(size_t max_pairs)
{
	struct frac_memo *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return NULL;
	}
	m->max_pairs = max_pairs ? max_pairs : FRAC_MEMO_DEFAULT_PAIRS;
	return m;
}

void frac_memo_free(struct frac_memo *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m->lay);
	free(m->pair);
	free(m);
}

/* Grows the layout table to twice its slots (at least 64).  -1 when out of memory. */
static int frac_lay_grow(struct frac_memo *m)
{
	size_t n = m->n_lay_slots ? 2 * m->n_lay_slots : 64, i, j;
	struct frac_slot_layout *t = calloc(n, sizeof(*t));

	if (!t)
		return -1;
	for (i = 0; i < m->n_lay_slots; i++)
		if (m->lay[i].id) {
			for (j = frac_layout_hash(&m->lay[i].key) & (n - 1); t[j].id; j = (j + 1) & (n - 1))
				;
			t[j] = m->lay[i];
		}
	free(m->lay);
	m->lay = t;
	m->n_lay_slots = n;
	return 0;
}

/* The id of layout k, interned when new; UINT32_MAX when it cannot be (out of memory). */
static uint32_t frac_lay_id(struct frac_memo *m, const struct frac_layout *k)
{
	size_t j;

	if (2 * (m->n_lay + 1) > m->n_lay_slots && (m->n_lay >= UINT32_MAX - 1 || frac_lay_grow(m) != 0))
		return UINT32_MAX;
	for (j = frac_layout_hash(k) & (m->n_lay_slots - 1); m->lay[j].id; j = (j + 1) & (m->n_lay_slots - 1))
		if (memcmp(&m->lay[j].key, k, sizeof(*k)) == 0)
			return m->lay[j].id - 1;
	m->lay[j].key = *k;
	m->lay[j].id = (uint32_t)++m->n_lay;
	return m->lay[j].id - 1;
}

/* The pair table's slot of key: its entry, or the empty slot where it goes. */
static struct frac_slot_pair *frac_pair_slot(struct frac_memo *m, uint64_t key)
{
	size_t j;

	for (j = frac_mix(key) & (m->n_pair_slots - 1); m->pair[j].key && m->pair[j].key != key;
	     j = (j + 1) & (m->n_pair_slots - 1))
		;
	return &m->pair[j];
}

static int frac_pair_grow(struct frac_memo *m)
{
	size_t n = m->n_pair_slots ? 2 * m->n_pair_slots : 1024, i, old = m->n_pair_slots;
	struct frac_slot_pair *t = calloc(n, sizeof(*t)), *o = m->pair;

	if (!t)
		return -1;
	m->pair = t;
	m->n_pair_slots = n;
	for (i = 0; i < old; i++)
		if (o[i].key)
			*frac_pair_slot(m, o[i].key) = o[i];
	free(o);
	return 0;
}

double frac_memo_get(struct frac_memo *m, const struct strategy *a, const struct strategy *b, int D)
{
	struct frac_layout ka, kb;
	uint32_t ia, ib;
	uint64_t key = 0;
	double f;

	if (!m)
		return strategy_reshard_fraction(a, b, D);
	frac_layout_of(a, D, &ka);
	frac_layout_of(b, D, &kb);
	pthread_mutex_lock(&m->mu);
	ia = frac_lay_id(m, &ka);
	ib = ia == UINT32_MAX ? UINT32_MAX : frac_lay_id(m, &kb);
	if (ib != UINT32_MAX) {
		key = ((uint64_t)ia + 1) << 32 | ((uint64_t)ib + 1);
		if (m->n_pair_slots) {
			struct frac_slot_pair *p = frac_pair_slot(m, key);

			if (p->key == key) {
				m->hits++;
				f = p->frac;
				pthread_mutex_unlock(&m->mu);
				return f;
			}
		}
	}
	m->misses++;
	pthread_mutex_unlock(&m->mu);
	f = strategy_reshard_fraction(a, b, D);
	if (!key)
		return f;
	pthread_mutex_lock(&m->mu);
	if (m->n_pair < m->max_pairs && (2 * (m->n_pair + 1) <= m->n_pair_slots || frac_pair_grow(m) == 0)) {
		struct frac_slot_pair *p = frac_pair_slot(m, key);

		if (!p->key) {
			p->key = key;
			p->frac = f;
			m->n_pair++;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return f;
}

void frac_memo_counts(struct frac_memo *m, size_t *hits, size_t *misses)
{
	pthread_mutex_lock(&m->mu);
	*hits = m->hits;
	*misses = m->misses;
	pthread_mutex_unlock(&m->mu);
}
