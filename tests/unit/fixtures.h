/*
 * fixtures.h - small profiles built in C for the unit tests, so the cost and
 * strategy tests do not depend on the JSON decoder.  Everything returned is
 * owned by the caller: cluster_release()/model_release().
 */
#ifndef UNIAP_TEST_FIXTURES_H
#define UNIAP_TEST_FIXTURES_H

#include "model.h"

/*
 * A cluster of nodes x per_node devices with n_levels hierarchy levels
 * (devices[i], bw_gbps[i] in GB/s), memory/reserved in bytes, CCOC ccoc and
 * no measured tables.  Returns 0 on success.
 */
int fx_cluster(struct cluster_profile *c, int nodes, int per_node, const int *devices,
               const double *bw_gbps, size_t n_levels, double memory, double reserved, double ccoc);

/* Adds a measured entry to a cluster's table of kind. */
int fx_cluster_add_bw(struct cluster_profile *c, enum cluster_coll kind, int size, int consecutive,
                      double bw_gbps);

/*
 * A chain model of n_layers layers of one type: forward fwd1 s/sample at tp 1
 * and fwd2 at tp 2 (0 = absent), params, activation act1 bytes at tp 1 and
 * act2 at tp 2 (0 = absent), output bytes, checkpoint bytes.
 */
int fx_model_chain(struct model_profile *m, size_t n_layers, enum model_precision prec,
                   double fwd1, double fwd2, double params, double act1, double act2, double out,
                   double ckpt);

/*
 * Gives m (a chain from fx_model_chain: embedding, blocks, head) a GPT-like
 * shape of its n_layers - 2 transformer layers, hidden h, heads a (what the
 * megatron export and target need).
 */
void fx_model_shape(struct model_profile *m, long h, long a);

/* Adds an edge to a model. */
int fx_model_add_edge(struct model_profile *m, size_t from, size_t to);

#endif
