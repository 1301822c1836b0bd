/*
 * target.h - runtime targets: the plans a training runtime can execute,
 * written once as data (one struct target_rules per runtime), and the exact
 * search of a candidate under a target's rules.
 *
 * A plan fits a target when target_check_plan() accepts it; the planner's
 * search under a target (uop.h, uop_options.target) covers exactly those
 * plans, and the exports (json/export.c) refuse exactly the others, so a
 * target's optimum always exports.  docs/export.md states every rule with
 * where it comes from.
 *
 *   strategy rules   which (dp, tp, fsdp, placement, recompute) a layer may
 *                    use: a filter on the candidate's dictionary, given to
 *                    the cost model as data (target_keep(), cost_options.keep),
 *                    applied to every layer;
 *   one strategy     Megatron-LM and DeepSpeed give every layer the same
 *                    strategy: the planner enumerates (strategy, split);
 *   ends             Galvatron gives the embedding and the head one class
 *                    (vtp, embed_sdp): target_solve() solves one pinned
 *                    candidate per class;
 *   one dp type      Galvatron's default_dp_type (ddp or zero2) holds for
 *                    every replicated layer: target_solve() solves each type
 *                    on the dictionary without the other;
 *   split            how stages cut the layer list (contiguous in index
 *                    order; per runtime: at least one transformer layer per
 *                    stage, Megatron's even middle stages, DeepSpeed's
 *                    partition_uniform);
 *   schedule         the pipeline schedules the runtime runs.
 *
 * Layer 0 and the last layer of a candidate are the embedding and the head
 * (export.h); the layers between them are the transformer layers.
 *
 * Thread safety: everything here is reentrant; the rules are constant data.
 * target_solve() runs the MILP on DAGs, with the MILP's rule: one per process.
 *
 * Never: I/O, globals that change, printing.
 */
#ifndef UNIAP_TARGET_H
#define UNIAP_TARGET_H

#include <stddef.h>

#include "cost.h"
#include "err.h"
#include "opt.h"
#include "strategy.h"

enum target_kind {
	TARGET_ANY = 0,   /* every plan of the search space */
	TARGET_MEGATRON,
	TARGET_DEEPSPEED,
	TARGET_GALVATRON,
	TARGET_COUNT
};

/* How the stages of a plan may cut the layer list. */
enum target_split {
	TARGET_SPLIT_ANY = 0,    /* any valid plan (stages follow the edges) */
	TARGET_SPLIT_BLOCKS,     /* contiguous in layer order, >= 1 transformer layer per stage */
	TARGET_SPLIT_MEGATRON,   /* BLOCKS, and the middle stages hold equal counts (only the
	                            first and last may differ) */
	TARGET_SPLIT_DS_UNIFORM, /* DeepSpeed's partition_uniform over all layers */
	TARGET_SPLIT_EQUAL,      /* layer u on stage u * pp / L: the uniform space's (uop.h), no runtime's */
};

struct target_rules {
	enum target_kind kind;
	const char *name;          /* "megatron": what --target and "targets" take */
	const char *runtime;       /* "Megatron-LM": for people */
	const char *source;        /* where the rules were read (project, version, file) */
	unsigned schedules;        /* bit (1u << enum cost_schedule) per schedule the runtime runs */
	enum cost_schedule schedule_default; /* used when the requested one is not run */
	int one_strategy;          /* every layer the same strategy (degrees, placement, recompute) */
	int fsdp;                  /* fully sharded data parallelism (ZeRO-3) at all */
	int dp_with_fsdp;          /* one layer may mix replication (dp) and sharding (fsdp) */
	int fsdp_with_pp;          /* fsdp with pp > 1 */
	int fsdp_with_tp;          /* fsdp with tp > 1 */
	int sp;                    /* sequence parallelism over the tp group */
	int selective;             /* selective recomputation (the attention core) */
	int fp8;                   /* FP8 training (Transformer Engine's FP8 GEMMs) */
	int ep;                    /* expert parallelism for MoE layers (strategy.ep > 1) */
	int cp;                    /* context parallelism (strategy.cp > 1; ring attention) */
	int moe_tp_needs_sp;       /* a MoE model with tp > 1 runs only with sequence parallelism */
	int tp_divides_heads;      /* tp divides the attention heads and the key-value heads */
	int uneven;                /* micro-batch counts that leave the last micro-batch smaller */
	unsigned zero_stages;      /* bit (1u << z) per ZeRO-1/2 data-parallel variant z the runtime runs */
	int zero2_with_pp;         /* ZeRO-2 with pp > 1 */
	int one_dp_type;           /* every replicated layer (dp > 1, no fsdp) the same ZeRO stage */
	int tp_consecutive;        /* every layer's tp groups are consecutive ranks */
	int ends_tied;             /* embedding and head: one (tp, sharded) class, tp on
	                              consecutive ranks, no recompute */
	int needs_blocks;          /* an embedding, >= 1 transformer layer and a head (3 layers) */
	int microbatch_per_rank;   /* the micro-batch splits evenly over dp x fsdp ranks */
	int needs_shape;           /* builds the model from model->shape (hidden, heads, ...) */
	enum target_split split;
	/* the runtime's own memory admission (cost_keep.admission_*): what its
	 * planner accepts, which an export must not exceed; 0: none */
	double admission_cache_share, admission_cache_above_bytes, admission_fixed_bytes;
	const char *admission_source;
};

/* The runtime row (runtime.h) that plans for t are priced under: the
 * default's for TARGET_ANY and out of range. */
const struct cost_runtime *target_runtime(enum target_kind t);

/* The rules of t (static), or NULL when t is out of range. */
const struct target_rules *target_rules(enum target_kind t);
/* "any", "megatron", "deepspeed", "galvatron"; "unknown" out of range. */
const char *target_name(enum target_kind t);
/* Parses a target name; 0 on success, -1 otherwise. */
int target_parse(const char *s, enum target_kind *out);

/*
 * The schedule a plan for t uses when sched was asked for: sched if the
 * runtime runs it, else the runtime's own (Megatron-LM and DeepSpeed run
 * 1F1B only).
 */
enum cost_schedule target_schedule(enum target_kind t, enum cost_schedule sched);

/*
 * 1 when a layer of a pp-stage plan for t may use s (borrowed).  end: the
 * layer is the embedding or the head.  Ignores the rules that tie layers
 * together (one strategy, tied ends' class).
 */
int target_strategy_ok(enum target_kind t, const struct strategy *s, int pp, int end);

/*
 * t's per-layer rules as the cost model takes them (cost_options.keep):
 * target_strategy_ok() on transformer layers and, where the runtime splits
 * the micro-batch over the ranks, that rule too.  Out of range: no rules.
 */
struct cost_keep target_keep(enum target_kind t);

/*
 * Checks that the plan (cand, stage, strategy; borrowed, cand->n_layers
 * entries, a valid placement) is one the runtime of t executes.  UNIAP_OK, or
 * UNIAP_E_INVALID with a message naming the layer, stage or field and the rule
 * ("layers[3] (block.2): megatron-lm uses one strategy for every layer; ...").
 */
uniap_code target_check_plan(enum target_kind t, const struct cost_candidate *cand, const int *stage,
                             const size_t *strategy, struct uniap_err *err);

/*
 * target_check_plan() less the schedule rule: what an export checks.  A plan
 * made for another schedule still exports (the exported config runs the
 * runtime's schedule, and says so): 1F1B keeps no more micro-batches in
 * flight than GPipe, so a plan that fits under GPipe fits under 1F1B.
 */
uniap_code target_check_export(enum target_kind t, const struct cost_candidate *cand, const int *stage,
                               const size_t *strategy, struct uniap_err *err);

/*
 * DeepSpeed's partition_uniform(n, parts) (deepspeed/runtime/utils.py): the
 * first layer of each part, bounds[0 .. parts] (bounds[parts] = n); the first
 * n % parts parts hold one layer more.  bounds has parts + 1 entries.
 */
void target_ds_partition_uniform(size_t n, int parts, size_t *bounds);

/*
 * Megatron-LM's interleaved model chunks: counts[i] the transformer layers of
 * stage i of stages (borrowed).  1 when they are all equal
 * (--num-layers-per-virtual-pipeline-stage counts[0]); 2 when they are equal
 * counting the embedding in the first and the head in the last
 * (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-
 * split, and counts[0] + 1 layers per chunk); 0 otherwise.
 */
int target_megatron_chunks(const size_t *counts, int stages);

/*
 * Solves cand (borrowed; its dictionary already filtered for t by
 * cost_build) for the best plan that t accepts, exactly like opt_solve() and
 * with its contract (out overwritten, statuses, bound, cutoff, time limit
 * for the whole call).  For t without ends or split rules this is
 * opt_solve().  For Galvatron it solves one candidate per class of the tied
 * ends, each with the ends pinned to the class's strategy and folded into
 * their neighbour transformer layer (which keeps them on its stage) and the
 * layers chained in index order; the classes' bounds combine into the
 * candidate's.  Not for one-strategy targets (UNIAP_E_ARG): the planner
 * enumerates those.
 */
uniap_code target_solve(enum target_kind t, const struct cost_candidate *cand,
                        const struct opt_options *opts, struct opt_result *out, struct uniap_err *err);

#endif
