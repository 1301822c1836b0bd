/*
 * fixtures.c - profile builders for the unit tests (see fixtures.h).
 */
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fx_cluster(struct cluster_profile *c, int nodes, int per_node, const int *devices,
               const double *bw_gbps, size_t n_levels, double memory, double reserved, double ccoc)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	c->name = strdup("fixture");
	c->nodes = nodes;
	c->devices_per_node = per_node;
	c->memory_bytes = memory;
	c->reserved_bytes = reserved;
	c->overlap_coefficient = ccoc;
	c->levels = calloc(n_levels, sizeof(*c->levels));
	if (!c->name || !c->levels)
		return -1;
	c->n_levels = n_levels;
	for (i = 0; i < n_levels; i++) {
		char name[32];

		snprintf(name, sizeof(name), "level%zu", i);
		c->levels[i].name = strdup(name);
		c->levels[i].devices = devices[i];
		c->levels[i].bw_bytes_per_s = bw_gbps[i] * 1e9;
		if (!c->levels[i].name)
			return -1;
	}
	return 0;
}

int fx_cluster_add_bw(struct cluster_profile *c, enum cluster_coll kind, int size, int consecutive,
                      double bw_gbps)
{
	struct cluster_bw *t = realloc(c->coll[kind], (c->n_coll[kind] + 1) * sizeof(*t));

	if (!t)
		return -1;
	c->coll[kind] = t;
	t[c->n_coll[kind]].size = size;
	t[c->n_coll[kind]].consecutive = consecutive;
	t[c->n_coll[kind]].bw_bytes_per_s = bw_gbps * 1e9;
	c->n_coll[kind]++;
	return 0;
}

static int fx_tp_table(struct model_tp_value **t, size_t *n, double v1, double v2)
{
	*t = calloc(2, sizeof(**t));
	if (!*t)
		return -1;
	(*t)[0].tp = 1;
	(*t)[0].value = v1;
	*n = 1;
	if (v2 > 0) {
		(*t)[1].tp = 2;
		(*t)[1].value = v2;
		*n = 2;
	}
	return 0;
}

int fx_model_chain(struct model_profile *m, size_t n_layers, enum model_precision prec,
                   double fwd1, double fwd2, double params, double act1, double act2, double out,
                   double ckpt)
{
	struct model_layer_type *t;
	size_t u;

	memset(m, 0, sizeof(*m));
	m->name = strdup("fixture");
	m->precision = prec;
	m->optimizer = MODEL_ADAM;
	m->types = calloc(1, sizeof(*m->types));
	m->layers = calloc(n_layers, sizeof(*m->layers));
	m->edges = calloc(n_layers, sizeof(*m->edges));
	if (!m->name || !m->types || !m->layers || !m->edges)
		return -1;
	m->n_types = 1;
	t = &m->types[0];
	t->name = strdup("block");
	if (!t->name || fx_tp_table(&t->forward_s, &t->n_forward_s, fwd1, fwd2) ||
	    fx_tp_table(&t->activation_bytes, &t->n_activation_bytes, act1, act2))
		return -1;
	t->parameters = params;
	t->output_bytes_per_sample = out;
	t->checkpoint_bytes_per_sample = ckpt;
	t->tp_allreduces_per_pass = 2;
	m->n_layers = n_layers;
	for (u = 0; u < n_layers; u++) {
		char name[32];

		snprintf(name, sizeof(name), "l%zu", u);
		m->layers[u].name = strdup(name);
		m->layers[u].type = 0;
		if (!m->layers[u].name)
			return -1;
		if (u > 0) {
			m->edges[m->n_edges].from = u - 1;
			m->edges[m->n_edges].to = u;
			m->n_edges++;
		}
	}
	return 0;
}

int fx_model_add_edge(struct model_profile *m, size_t from, size_t to)
{
	struct model_edge *e = realloc(m->edges, (m->n_edges + 1) * sizeof(*e));

	if (!e)
		return -1;
	m->edges = e;
	e[m->n_edges].from = from;
	e[m->n_edges].to = to;
	m->n_edges++;
	return 0;
}

void fx_model_shape(struct model_profile *m, long h, long a)
{
	struct model_shape *sh = &m->shape;

	memset(sh, 0, sizeof(*sh));
	sh->known = 1;
	sh->layers = (long)m->n_layers - 2;
	sh->hidden = h;
	sh->heads = a;
	sh->kv_heads = a;
	sh->ffn_hidden = 4 * h;
	sh->seq_len = 1024;
	sh->vocab = 50257;
	sh->biases = 1;
	sh->tied_embeddings = 1;
}
