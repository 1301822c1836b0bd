/*
 * strategy.h - the strategy dictionary: every intra-layer parallel strategy
 * for the devices of one pipeline stage.
 *
 * A strategy is an ordered combination of data-parallel (dp), tensor-parallel
 * (tp) and fully-sharded data-parallel (fsdp) degrees whose product is the
 * stage's device count, plus its placement: the dimensions are listed from
 * inner (consecutive ranks) to outer, so "tp2.dp2" (tp groups {0,1},{2,3}, dp
 * groups {0,2},{1,3}) and "dp2.tp2" (its mirror) are different strategies.
 * Degrees of 1 are left out of the order.  With recompute, each strategy also
 * exists with per-layer activation checkpointing ("+rc").  With ZeRO
 * variants, each strategy that replicates (dp > 1, no fsdp) also exists with
 * its optimizer states sharded over the dp group (ZeRO-1, "+z1": Megatron-LM's
 * distributed optimizer) and with its gradients sharded too (ZeRO-2, "+z2");
 * fsdp is ZeRO-3.  With sequence parallelism, each strategy with tp > 1 also
 * exists with Megatron-LM's sequence parallelism over its tp group ("+sp").
 * With selective recomputation, each strategy also exists recomputing only
 * its layers' attention core ("+sel"; Megatron-LM's --recompute-granularity
 * selective).  With expert parallelism (a model with mixture-of-experts
 * layers), each strategy with dp > 1 and no fsdp also exists with its
 * experts shared out over the inner ep ranks of every dp group, for each ep
 * dividing dp and the experts ("+ep4": Megatron-LM's
 * --expert-model-parallel-size, whose expert groups are carved out of the
 * data-parallel ones).  A sequence-parallel strategy with tp inner and dp
 * right outside it also exists with its experts whole on each rank and
 * shared out over runs of N consecutive ranks of its tp x dp ranks, for
 * every N dividing tp x dp and the experts, N = 1 included ("+epN+etp1":
 * --expert-tensor-parallel-size 1).  Suffixes come in the order +sp,
 * +epN, +etp1, +z1/+z2, +rc/+sel; with context parallelism every strategy
 * carries "+cpN" right after "+sp" (see strategy_enumerate_experts).
 *
 * Never: costs here (cost.c prices strategies), no I/O.
 */
#ifndef UNIAP_STRATEGY_H
#define UNIAP_STRATEGY_H

#include <stddef.h>

#include "err.h"
#include "model.h"

enum strategy_dim {
	STRATEGY_DP = 0,
	STRATEGY_TP,
	STRATEGY_FSDP,
	STRATEGY_DIMS
};

#define STRATEGY_NAME_MAX 48
#define STRATEGY_MAX_COUNT 4096

struct strategy {
	int degree[STRATEGY_DIMS];    /* 1 when the dimension is unused */
	int order[STRATEGY_DIMS];     /* used dims, inner (consecutive) to outer */
	int n_order;
	int stride[STRATEGY_DIMS];    /* rank stride inside a group of each dim (1 = consecutive) */
	int level[STRATEGY_DIMS];     /* smallest hierarchy level holding every group of the dim
	                                 in every stage; -1 for unused dims */
	int recompute;                /* activation checkpointing on (the whole layer) */
	int selective;                /* only the attention core recomputed (never with recompute) */
	int sp;                       /* sequence parallelism over the tp group (tp > 1 only) */
	int zero;                     /* 0 plain replicas; 1 or 2: the ZeRO stage sharding the
	                                 optimizer states (1) and gradients (2) over dp; only
	                                 with dp > 1 and fsdp 1 (fsdp is stage 3) */
	int ep;                       /* expert parallelism: the inner ep ranks of each dp group
	                                 (stride stride[dp]) share out a MoE layer's experts, the
	                                 outer dp / ep hold replicas of them (expert data
	                                 parallelism); 0 or 1: none.  Only with fsdp 1; a layer
	                                 without experts treats the strategy as its plain dp */
	int cp;                       /* context parallelism: the inner cp ranks of each dp group
	                                 split every sample's sequence instead of the batch (ring
	                                 attention over them); 0 or 1: none.  All strategies of a
	                                 dictionary share it (strategy_enumerate_experts) */
	int etp1;                     /* expert tensor parallelism 1: a MoE layer's experts are not
	                                 split over tp; its ep groups are runs of ep consecutive
	                                 ranks of the tp x dp block (tp inner, dp next, sequence
	                                 parallel), the other tp x dp / ep ranks hold replicas
	                                 (Megatron-LM's --expert-tensor-parallel-size 1) */
	char name[STRATEGY_NAME_MAX]; /* e.g. "tp2.dp4", "fsdp8+rc", "single" */
};

struct strategy_set {
	struct strategy *items;  /* owned */
	size_t count;
	int stage_devices;       /* devices per stage: n / pp */
	int pp;
};

/* Data-parallel width dp * fsdp / cp: the number of batch shards (context parallelism splits
 * the sequence, not the batch, over its cp ranks). */
int strategy_batch_width(const struct strategy *s);

/* The context-parallel size of s: 1 when it has none. */
static inline int strategy_cp(const struct strategy *s)
{
	return s->cp > 1 ? s->cp : 1;
}

/* Name of a dimension: "dp", "tp", "fsdp". */
const char *strategy_dim_name(enum strategy_dim d);

/* What strategy_enumerate() adds to the plain dictionary (bits). */
#define STRATEGY_WITH_RECOMPUTE 1 /* "+rc" variants */
#define STRATEGY_WITH_ZERO 2      /* "+z1" and "+z2" variants of replicated strategies */
#define STRATEGY_WITH_SP 4        /* "+sp" variants of strategies with tp > 1 */
#define STRATEGY_WITH_SELECTIVE 8 /* "+sel" (selective recomputation) variants */

/* The expert-parallel size of s: 1 when it has none. */
static inline int strategy_ep(const struct strategy *s)
{
	return s->ep > 1 ? s->ep : 1;
}

/* The expert tensor-parallel size of s: 1 under etp1, else its tp. */
static inline int strategy_etp(const struct strategy *s)
{
	return s->etp1 ? 1 : s->degree[STRATEGY_TP];
}

/*
 * Builds the dictionary for pp stages of the (validated, borrowed) cluster,
 * with the variants `with` asks for (STRATEGY_WITH_* bits).  pp must divide
 * the device count.  Order: by recomputation (none, full, selective), then
 * by the degree tuple, then by placement, then by sequence parallelism, then
 * by ZeRO stage; deterministic (without variants, the same dictionary as
 * before variants existed).  On success the caller owns *out
 * (strategy_set_release()).
 */
uniap_code strategy_enumerate(const struct cluster_profile *c, int pp, int with,
                              struct strategy_set *out, struct uniap_err *err);

/*
 * strategy_enumerate() for a model with mixture-of-experts layers: experts
 * is the gcd of their expert counts (model_experts_gcd(); 0: none, the same
 * dictionary as strategy_enumerate()), and every strategy with dp > 1 and
 * no fsdp also exists with each expert-parallel size ep > 1 dividing both dp
 * and experts, right after the same strategy without it, and each
 * sequence-parallel one with tp inner and dp next to it also with +epN+etp1
 * for every N >= 1 dividing tp x dp and experts.
 */
uniap_code strategy_enumerate_experts(const struct cluster_profile *c, int pp, int with, int experts,
                                      struct strategy_set *out, struct uniap_err *err);

/*
 * strategy_enumerate_experts() with context parallelism cp >= 1: with cp > 1
 * the dictionary holds only the strategies whose dp the cp divides, each with
 * its inner cp ranks of every dp group splitting the sequence ("+cpN"; their
 * batch width is dp x fsdp / cp).  cp 1 is strategy_enumerate_experts().
 */
uniap_code strategy_enumerate_cp(const struct cluster_profile *c, int pp, int with, int experts, int cp,
                                 struct strategy_set *out, struct uniap_err *err);

/* The sequence shard of rank r under s: its coordinate in the inner cp of its dp group (0 without cp). */
int strategy_seq_shard(const struct strategy *s, int rank);

/* Index of the strategy named name in set, or -1. */
long strategy_find(const struct strategy_set *set, const char *name);

/* Frees set->items and zeroes set. */
void strategy_set_release(struct strategy_set *set);

/*
 * Rank-level helpers (ranks are 0-based within one stage):
 * the coordinate of rank r along dimension d, and the batch-shard index of r
 * (the dp and fsdp coordinates combined, outer dimension most significant).
 */
int strategy_coord(const struct strategy *s, int rank, enum strategy_dim d);
int strategy_batch_shard(const struct strategy *s, int rank);

/*
 * The fraction of a micro-batch that the worst of D ranks lacks when a tensor
 * laid out by a (batch split into strategy_batch_width(a) shards) is needed in
 * layout b (a, b borrowed).  Exact: shard overlaps are compared as integers,
 * and only the ranks that can differ are visited (the coordinates repeat with
 * the lcm of stride x degree and are constant on blocks of the strides' gcd).
 */
double strategy_reshard_fraction(const struct strategy *a, const struct strategy *b, int D);

/*
 * Index of the smallest hierarchy level of c (borrowed, validated) such that
 * every group of `size` ranks with rank stride `stride`, inside every one of
 * the pp stages of stage_devices ranks, lies within one group of that level.
 * size <= 1 returns 0.
 */
int strategy_group_level(const struct cluster_profile *c, int size, int stride, int stage_devices,
                         int pp);

#endif
