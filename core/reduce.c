/*
 * reduce.c - dominated-strategy removal (see reduce.h).
 *
 * Edge matrices are compared once per distinct matrix: chains of identical
 * layers repeat the same K x K tables, so the O(K^3) check runs on a handful
 * of them, not on every edge.
 */
#include "reduce.h"

#include <stdlib.h>
#include <string.h>

/* 1 when matrix m (K x K) lets l replace k at either end. */
static int reduce_edge_ok(const double *m, size_t K, size_t k, size_t l)
{
	size_t j;

	for (j = 0; j < K; j++)
		if (m[j * K + l] > m[j * K + k] || m[l * K + j] > m[k * K + j])
			return 0;
	return 1;
}

/* 1 when the per-layer arrays let l replace k on every layer. */
static int reduce_layers_ok(const struct cost_candidate *c, size_t k, size_t l)
{
	size_t K = cost_k(c), u;

	for (u = 0; u < c->n_layers; u++) {
		size_t a = u * K + k, b = u * K + l;

		if (c->time_s[b] > c->time_s[a] ||
		    c->memory_fixed_bytes[b] > c->memory_fixed_bytes[a] ||
		    c->memory_per_microbatch_bytes[b] > c->memory_per_microbatch_bytes[a])
			return 0;
	}
	return 1;
}

/* Equal costs everywhere: l and k are interchangeable. */
static int reduce_layers_equal(const struct cost_candidate *c, size_t k, size_t l)
{
	return reduce_layers_ok(c, k, l) && reduce_layers_ok(c, l, k);
}

/* Indices of the distinct same/cross matrices among the edges. */
static size_t reduce_distinct(const struct cost_candidate *c, const double **mats)
{
	size_t K = cost_k(c), e, i, n = 0;
	int side;

	for (e = 0; e < c->n_edges; e++)
		for (side = 0; side < 2; side++) {
			const double *m = side ? c->edges[e].cross_stage_s : c->edges[e].same_stage_s;

			for (i = 0; i < n; i++)
				if (memcmp(mats[i], m, K * K * sizeof(double)) == 0)
					break;
			if (i == n)
				mats[n++] = m;
		}
	return n;
}

static uniap_code reduce_copy(const struct cost_candidate *c, const unsigned char *keep,
                              struct cost_candidate *out, struct uniap_err *err)
{
	size_t K = cost_k(c), K2 = 0, u, k, l, e, a, b;

	memset(out, 0, sizeof(*out));
	for (k = 0; k < K; k++)
		K2 += keep[k];
	*out = *c;
	out->inflight = NULL;
	out->peaks = NULL;
	out->n_peaks = 0;
	out->layer_names = NULL;
	out->time_s = out->memory_fixed_bytes = out->memory_per_microbatch_bytes = NULL;
	out->edges = NULL;
	out->strategies.items = calloc(K2, sizeof(*out->strategies.items));
	out->strategies.count = K2;
	out->inflight = calloc((size_t)cost_stages(c), sizeof(*out->inflight));
	out->layer_names = calloc(c->n_layers, sizeof(*out->layer_names));
	out->time_s = calloc(c->n_layers * K2, sizeof(double));
	out->memory_fixed_bytes = calloc(c->n_layers * K2, sizeof(double));
	out->memory_per_microbatch_bytes = calloc(c->n_layers * K2, sizeof(double));
	out->edges = calloc(c->n_edges ? c->n_edges : 1, sizeof(*out->edges));
	if (!out->strategies.items || !out->inflight || !out->layer_names || !out->time_s ||
	    !out->memory_fixed_bytes || !out->memory_per_microbatch_bytes || !out->edges)
		goto nomem;
	memcpy(out->inflight, c->inflight, (size_t)cost_stages(c) * sizeof(*out->inflight));
	if (c->n_peaks > 0) {
		size_t w = c->n_peaks * (size_t)(cost_virtual(c) + 1);

		out->peaks = malloc(w * sizeof(*out->peaks));
		if (!out->peaks)
			goto nomem;
		memcpy(out->peaks, c->peaks, w * sizeof(*out->peaks));
		out->n_peaks = c->n_peaks;
	}
	for (k = 0, a = 0; k < K; k++)
		if (keep[k])
			out->strategies.items[a++] = c->strategies.items[k];
	for (u = 0; u < c->n_layers; u++) {
		if (!(out->layer_names[u] = strdup(c->layer_names[u])))
			goto nomem;
		for (k = 0, a = 0; k < K; k++)
			if (keep[k]) {
				out->time_s[u * K2 + a] = c->time_s[u * K + k];
				out->memory_fixed_bytes[u * K2 + a] = c->memory_fixed_bytes[u * K + k];
				out->memory_per_microbatch_bytes[u * K2 + a] =
					c->memory_per_microbatch_bytes[u * K + k];
				a++;
			}
	}
	for (e = 0; e < c->n_edges; e++) {
		struct cost_edge *d = &out->edges[e];

		d->from = c->edges[e].from;
		d->to = c->edges[e].to;
		d->same_stage_s = calloc(K2 * K2, sizeof(double));
		d->cross_stage_s = calloc(K2 * K2, sizeof(double));
		if (!d->same_stage_s || !d->cross_stage_s)
			goto nomem;
		for (k = 0, a = 0; k < K; k++) {
			if (!keep[k])
				continue;
			for (l = 0, b = 0; l < K; l++) {
				if (!keep[l])
					continue;
				d->same_stage_s[a * K2 + b] = c->edges[e].same_stage_s[k * K + l];
				d->cross_stage_s[a * K2 + b] = c->edges[e].cross_stage_s[k * K + l];
				b++;
			}
			a++;
		}
	}
	return UNIAP_OK;
nomem:
	cost_candidate_release(out);
	return err_set(err, UNIAP_E_NOMEM, "strategy reduction: out of memory");
}

uniap_code reduce_dominated(const struct cost_candidate *cand, struct cost_candidate *out,
                            size_t *removed, struct uniap_err *err)
{
	size_t K = cost_k(cand), k, l, i, n_mats, dropped = 0;
	const double **mats = calloc(2 * cand->n_edges + 1, sizeof(*mats));
	unsigned char *keep = malloc(K ? K : 1);
	uniap_code rc;

	if (!mats || !keep) {
		free(mats);
		free(keep);
		return err_set(err, UNIAP_E_NOMEM, "strategy reduction: out of memory");
	}
	memset(keep, 1, K);
	n_mats = reduce_distinct(cand, mats);
	for (k = 0; k < K; k++)
		for (l = 0; l < K && keep[k]; l++) {
			int ok;

			/* l must survive itself; among equals only the first survives */
			if (l == k || !keep[l] || (l > k && reduce_layers_equal(cand, k, l)))
				continue;
			ok = reduce_layers_ok(cand, k, l);
			for (i = 0; ok && i < n_mats; i++)
				ok = reduce_edge_ok(mats[i], K, k, l);
			if (ok) {
				keep[k] = 0;
				dropped++;
			}
		}
	rc = reduce_copy(cand, keep, out, err);
	if (removed)
		*removed = dropped;
	free(mats);
	free(keep);
	return rc;
}
