/*
 * cost.h - the cost model (paper §3.2) and one candidate's cost matrices.
 *
 * A candidate is (pp, microbatches, schedule, options).  cost_build() prices
 * every layer under every strategy of the stage dictionary and every edge
 * under every pair of strategies, and records how many micro-batches of
 * activations each stage keeps in flight.  The result is exactly the "audit
 * format" printed by `uniap costs`:
 *
 *   p_i = sum of time_s[u][k_u] over the layers u of stage i
 *       + sum of same_stage_s[k_u][k_v] over edges u->v inside stage i
 *   o_j = sum of cross_stage_s[k_u][k_v] over edges u->v with
 *         stage(u) <= j < stage(v)              (j = 0 .. pp-2)
 *   TPI = sum p + sum o + (c - 1) * max_i (o_(i-1) + p_i + o_i)
 *         (o_(-1) = o_(pp-1) = 0: a stage's cycle is its receive, its
 *         compute and its send, since a transfer holds both its stages)
 *   valid: every stage non-empty, stage(u) <= stage(v) for every edge
 *   memory_i = sum over u in stage i of memory_fixed_bytes[u][k_u]
 *            + inflight[i] * memory_per_microbatch_bytes[u][k_u]
 *            <= memory_limit_bytes
 *
 * Interleaved 1F1B with v virtual stages per device has S = pp * v stages
 * (model chunks): stage i runs on device i mod pp and boundary j (stage j to
 * j+1, j = 0 .. S-2) on link j mod pp.  Megatron-LM, the one runtime of the
 * schedule, overlaps its transfers with compute (overlap_p2p_comm, which it
 * turns on with interleaving only), so with P_d the sum of p_i over device
 * d's stages and O_d the sum of o_j over link d's boundaries,
 *   TPI = (sum p + sum o) / v + (c - 1/v) * max(P u O)
 *   memory_d = sum of memory_i over device d's stages <= memory_limit_bytes
 * (with v = 1 the formula of overlapped transfers, not the one above).
 * cost_stages() is S.  When the
 * candidate has peak rows (cost_build gives them to every interleaved
 * candidate), device d holds instead, with a_j the activations of one
 * micro-batch of its chunk j (stage d + pp j),
 *   memory_d = sum of memory_fixed_bytes over its layers
 *            + max over d's rows h of sum_j h_j * a_j
 * a row being how many micro-batches each chunk holds at one moment of the
 * schedule (cost_device_activation); inflight[i] is then the most chunk i
 * ever holds, the largest h_j over the rows.
 *
 * docs/cost-model.md gives every formula with its source.  The optimizer sees
 * only this struct, never the profiles.
 *
 * Never: solve anything here; no I/O.
 */
#ifndef UNIAP_COST_H
#define UNIAP_COST_H

#include <stddef.h>

#include "err.h"
#include "model.h"
#include "strategy.h"

enum cost_schedule {
	COST_GPIPE = 0,
	COST_1F1B,
	COST_INTERLEAVED, /* 1F1B over v model chunks per device (cost_options.virtual_stages) */
};

/* Most virtual stages per device a candidate accepts. */
#define COST_MAX_VIRTUAL_STAGES 64
#define COST_MAX_PEAK_ROWS (1L << 20) /* cost_candidate.n_peaks at most */

/* "gpipe" / "1f1b" / "interleaved" */
const char *cost_schedule_name(enum cost_schedule s);
/* Parses "gpipe"/"1f1b"/"interleaved"; returns 0 on success, -1 otherwise. */
int cost_schedule_parse(const char *s, enum cost_schedule *out);

/* Which strategies a candidate offers (the search spaces of the planner). */
enum cost_filter {
	COST_FILTER_ALL = 0,   /* every dp/tp/fsdp combination and placement */
	COST_FILTER_DP_ONLY,   /* pure data parallelism (the "inter" space) */
	COST_FILTER_MEGATRON,  /* dp x tp with tp on consecutive ranks (the "uniform" space) */
};

/* Largest global batch a candidate accepts (keeps every product in range). */
#define COST_MAX_BATCH (1L << 40)

/*
 * A runtime's rules on the strategy of a transformer layer, given to the
 * cost model as data by the caller (target.h's target_keep() makes one per
 * runtime), so that the cost model never asks the runtime table itself.
 */
struct cost_keep {
	/* 1 when a transformer layer of a pp-stage plan may use s; NULL: every strategy */
	int (*ok)(const void *ctx, const struct strategy *s, int pp);
	const void *ctx;          /* borrowed, passed to ok */
	int microbatch_per_rank;  /* the micro-batch must split evenly over a strategy's batch width */
	int moe_tp_needs_sp;      /* on a model with MoE layers, tp > 1 only with sequence parallelism */
	int tp_divides_heads;     /* tp divides the model shape's attention heads and key-value heads
	                             (Megatron-LM's TransformerConfig); no rule without a shape */
	/* the runtime's own memory admission, beside the device's limit: a stage's
	 * allocated bytes <= memory_bytes x (1 - cache_share) - fixed_bytes, the
	 * cache share only on devices above cache_above_bytes; 0: none
	 * (cost_admission_bytes; Galvatron's search engine, target.c) */
	double admission_cache_share;
	double admission_cache_above_bytes;
	double admission_fixed_bytes;
};

/*
 * How a training runtime executes a plan, beside the hardware
 * (docs/cost-model.md, "Runtime profile"): the terms that make the same plan
 * cost different time under Megatron-LM and under a PyTorch-eager runtime.
 * runtime.h names the runtimes; a zeroed struct prices no runtime term (the
 * gradient reduction overlapped with the last micro-batch's backward).
 */
enum cost_sync {
	COST_SYNC_LAST = 0, /* the data-parallel gradient reduction overlaps the backward pass of the
	                       last micro-batch (bucketed, no_sync for the others) */
	COST_SYNC_AFTER,    /* it starts after the last backward pass: exposed */
};

struct cost_runtime {
	const char *name;            /* runtime.h's name; NULL when none */
	enum cost_sync sync;
	double host_s_per_kernel;    /* host time to issue one kernel (Python, dispatcher, autograd, launch):
	                                a forward pass of a FLOP-priced layer takes at least
	                                kernels_per_pass x this; 0: never host-bound */
	int eager_attention;         /* 1: the attention core's scale, mask, softmax and dropout run as
	                                separate kernels (eager_attention_bytes_per_sample is priced);
	                                0: fused */
	double param_pass_bytes;     /* device bytes moved per parameter per iteration outside the optimizer
	                                step: zeroing the gradients, reading them for the norm clip */
	double bucket_copy_bytes;    /* per parameter of a replicated layer (dp > 1, no ZeRO): gradients
	                                copied into the reduction buckets and back */
};

struct frac_memo;

struct cost_options {
	long batch;             /* global batch B in [1, COST_MAX_BATCH] */
	int pp;                 /* pipeline degree, divides the device count */
	long microbatches;      /* c, divides batch */
	enum cost_schedule schedule;
	int virtual_stages;     /* interleaved: model chunks per device, 2 .. COST_MAX_VIRTUAL_STAGES
	                           (Megatron-LM's virtual pipeline size); ignored by other schedules */
	int recompute;          /* add activation-checkpointing variants */
	int zero;               /* add ZeRO-1 and ZeRO-2 variants of replicated strategies */
	int sp;                 /* add sequence-parallel variants of strategies with tp > 1 */
	int selective;          /* add selective-recomputation variants */
	int cp_a2a;             /* context parallelism as Ulysses all-to-alls (Megatron-LM's --cp-comm-type
	                           a2a) instead of the ring; tp x cp must divide every attention's heads */
	int cp;                 /* context parallelism (docs/cost-model.md, "Context parallelism"): every
	                           strategy's inner cp ranks of its dp group split the sequence; 0 or 1:
	                           none.  Needs every layer type's tokens_per_sample, divisible by cp */
	int fp8;                /* FP8 training (docs/cost-model.md, "FP8"): the layers' FP8 GEMMs
	                           (fp8_flops_per_sample) at the cluster's FP8 peak, their input
	                           casts, an FP8 copy of their weights; needs a mixed-precision
	                           model and cluster.device.peak_tflops.fp8 */
	int uneven;             /* microbatches may leave the last micro-batch smaller: c is
	                           a chunk count of batch (cost_chunk_count), not a divisor */
	int makespan;           /* the objective of a 1F1B plan with pp > 1 is its iteration as
	                           run (schedsim.h: Megatron-LM's blocking exchanges), not the
	                           audit formula (cost_candidate.makespan) */
	enum cost_filter filter;
	struct cost_keep keep;  /* a runtime's rules for a layer's strategy (target.h's
	                           target_keep()); zero: every strategy */
	struct cost_runtime runtime; /* the runtime's terms (runtime.h); zero: none */
	double deadline_s;      /* CLOCK_MONOTONIC seconds (opt_clock_s) past which the build
	                           gives up with UNIAP_E_LIMIT; 0: none (the service's evaluate) */
	const struct cost_budget *budget; /* the memory the build's tables may take; NULL: any */
	struct frac_memo *frac_memo; /* borrowed, NULL: none; the reshard fractions earlier builds
	                                of the run computed (fracmemo.h; any thread) */
	int layers_only;        /* build the layers' costs only (time, memory) and no edge:
	                           n_edges = 0.  A fraction of a full build (the edges' reshard
	                           fractions are most of it), for bounds that sum layer costs;
	                           never for a solve or an evaluation */
};

/*
 * A memory budget for one cost build (the service's evaluate: a request's
 * share and the process's): checked once the strategies are known and before
 * any table is allocated, on the bytes cost_table_bytes() gives.
 */
struct cost_budget {
	double max_bytes;       /* one build's tables at most; more: UNIAP_E_LIMIT naming both
	                           ("cost tables: ..."); 0: no cap */
	/* then take(ctx, bytes): 0 the bytes are granted (the caller gives them back when the
	 * build's candidate is gone), non-zero refused: UNIAP_E_BUSY ("cost tables: ...");
	 * any thread; may be NULL */
	int (*take)(void *ctx, double bytes);
	void *ctx;
};

struct cost_edge {
	size_t from, to;         /* layer indices */
	double *same_stage_s;    /* [K*K], [k*K + l]: R, both ends in one stage */
	double *cross_stage_s;   /* [K*K]: R', per communication stage crossed */
};

struct cost_candidate {
	int pp;
	long microbatches;
	long microbatch_size;        /* ceil(batch / microbatches): every micro-batch but the last */
	long batch;                  /* the global batch B; 0 (hand-built): microbatches x microbatch_size */
	enum cost_schedule schedule;
	int virtual_stages;          /* v: model chunks per device, 1 unless interleaved with pp > 1 */
	int fp8;                     /* priced for FP8 training (cost_options.fp8) */
	int cp;                      /* context-parallel size of every strategy (cost_options.cp), >= 1 */
	int cp_a2a;                  /* its all-to-all (Ulysses) variant (cost_options.cp_a2a) */
	int makespan;                /* 1: a 1F1B plan with pp > 1 is priced by its makespan as run
	                                (opt_tpi: schedsim's blocking layout, an exact longest path)
	                                instead of the audit formula, its upper bound; every other
	                                candidate's formula is its makespan already */
	const char *runtime;         /* the runtime it was priced for (cost_options.runtime.name,
	                                borrowed static text), NULL when none */
	double memory_limit_bytes;
	double device_memory_bytes;  /* the cluster's memory_bytes (for a runtime's admission rule) */
	long *inflight;              /* [cost_stages()] micro-batches of activations held by stage i */
	size_t n_peaks;              /* rows of peaks; 0: a device holds the sum of its stages' */
	long *peaks;                 /* [n_peaks * (1 + v)] owned or NULL: row r is {device d, then
	                                h_0 .. h_{v-1}}, the micro-batches d's chunks hold at one
	                                moment that no other moment exceeds in every chunk */
	struct strategy_set strategies; /* owned; the same K strategies for every layer */
	size_t n_layers;
	char **layer_names;          /* owned copies */
	double *time_s;              /* [n_layers*K]: A, per micro-batch */
	double *memory_fixed_bytes;  /* [n_layers*K]: model states */
	double *memory_per_microbatch_bytes; /* [n_layers*K]: activations of one micro-batch */
	size_t n_edges;
	struct cost_edge *edges;     /* same order as the model's edges */
};

/* K: strategies per layer. */
static inline size_t cost_k(const struct cost_candidate *c) { return c->strategies.count; }

/* v of c (1 when unset): model chunks per device. */
static inline int cost_virtual(const struct cost_candidate *c)
{
	return c->virtual_stages > 1 ? c->virtual_stages : 1;
}

/* S: the stages of a plan on c, pp * v (each device holds v of them, i mod pp). */
static inline int cost_stages(const struct cost_candidate *c)
{
	return c->pp * cost_virtual(c);
}

/* The global batch of c: its batch, or microbatches x microbatch_size when it gives none. */
static inline long cost_batch(const struct cost_candidate *c)
{
	return c->batch > 0 ? c->batch : c->microbatches * c->microbatch_size;
}

/*
 * 1 when c (1 <= c <= batch) is a chunk count of batch: splitting batch into
 * micro-batches of ceil(batch / c) samples, the last one smaller (PyTorch's
 * torch.chunk, which Galvatron uses), makes exactly c of them.  Every divisor
 * is one; 64 has 15 (1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16, 22, 32, 64).
 */
int cost_chunk_count(long batch, long c);

/*
 * Builds the candidate for (validated, borrowed) cluster and model.  Fails with
 * UNIAP_E_ARG naming the option if pp does not divide the devices, pp exceeds
 * the layer count, microbatches does not divide batch, ...  On success the
 * caller owns *out and frees it with cost_candidate_release().
 */
uniap_code cost_build(const struct cluster_profile *cluster, const struct model_profile *model,
                      const struct cost_options *opt, struct cost_candidate *out,
                      struct uniap_err *err);

/* Frees everything out owns and zeroes it. */
void cost_candidate_release(struct cost_candidate *c);

/* The bytes cost_build allocates for model's tables with K strategies per
 * layer (no edge when layers_only): what cost_options.max_bytes bounds. */
double cost_table_bytes(const struct model_profile *model, size_t K, int layers_only);

/* UNIAP_OK when FP8 training can be priced for model on cluster (both
 * borrowed): a mixed-precision model and a device with an FP8 peak; else
 * UNIAP_E_INVALID naming the field (what cost_build checks with opt->fp8). */
/*
 * Context parallelism cp (cp_a2a: Ulysses) on cluster and model (borrowed, validated): cp divides
 * the cluster's devices and every layer type's tokens_per_sample, no layer type is priced from
 * measured times, and under Ulysses cp divides every attention's heads (docs/cost-model.md,
 * "Context parallelism").  cp <= 1 passes unless cp_a2a asks for Ulysses.  UNIAP_E_INVALID names
 * context_parallel or cp_comm.  cost_build checks it too (with the stage's devices).
 */
uniap_code cost_check_cp(const struct cluster_profile *cluster, const struct model_profile *model, int cp,
                         int cp_a2a, struct uniap_err *err);

uniap_code cost_check_fp8(const struct cluster_profile *cluster, const struct model_profile *model,
                          struct uniap_err *err);

/* The allocated bytes a stage may hold under keep's admission rule on a
 * device of memory_bytes; INFINITY when keep has none. */
double cost_admission_bytes(const struct cost_keep *keep, double memory_bytes);

/*
 * The memory limit of one plan (docs/cost-model.md, "Memory"): cost_build
 * reserves the FSDP transient buffers of the largest FSDP strategy its
 * dictionary offers, because the plan is not known yet (a conservative
 * constant that keeps the model linear); a given plan (strategy[], borrowed,
 * cand->n_layers entries, in range) needs only those of the FSDP strategies it
 * uses, so its limit is this one, never below cand's.  What evaluating a given
 * plan uses (plan_doc_apply); the planner keeps cand's.
 */
double cost_plan_memory_limit(const struct cluster_profile *cluster, const struct model_profile *model,
                              const struct cost_candidate *cand, const size_t *strategy);

/*
 * Where one stage's device memory goes under an assignment (docs/cost-model.md,
 * "Memory"), in bytes per device.  The audit stage memory is
 *   allocated = model_states + fsdp_accumulation + activation
 * (up to rounding; allocated itself is summed exactly as plan_evaluate sums
 * it) and the plan fits iff allocated <= memory_limit_bytes, which is the
 * same as free_bytes >= 0, because
 *   device_memory = allocated + fragmentation + fsdp_transient + reserved
 *                 + margin + free
 * with fragmentation = memory_fragmentation * allocated and margin =
 * memory_margin * device_memory.
 */
struct cost_stage_memory {
	double model_states_bytes;      /* parameters, gradients, optimizer states: c_dtype * P * e / (tp * fsdp) */
	double weight_bytes;            /* model_states_bytes split, each as sharded (up to rounding): */
	double gradient_bytes;          /*   the parameters (and FP8 copies), their gradients, and the */
	double optimizer_bytes;         /*   optimizer's states (fp32 copy, moments) */
	double fsdp_accumulation_bytes; /* FSDP layers' unsharded gradient under gradient accumulation */
	double activation_bytes;        /* inflight_microbatches x activations of one micro-batch */
	long inflight_microbatches;
	double allocated_bytes;         /* the three above: the audit format's stage memory */
	double memory_limit_bytes;      /* the candidate's limit on allocated_bytes */
	double fragmentation_bytes;     /* the allocator's loss: memory_fragmentation x allocated */
	double fsdp_transient_bytes;    /* gathered parameters of FSDP layers (the candidate's, every stage) */
	double reserved_bytes;          /* the framework's: the cluster's reserved_bytes */
	double margin_bytes;            /* safety margin: memory_margin x device memory */
	double free_bytes;              /* what is left; < 0 when the stage does not fit */
	double device_memory_bytes;     /* the cluster's memory_bytes */
};

/*
 * The activation bytes device d of c holds at its peak, act[j] (borrowed, v
 * entries) being the activations of one micro-batch of its chunk j (stage
 * d + pp j): max over d's peak rows h of sum_j h_j act[j], or without rows
 * sum_j inflight[d + pp j] act[j] (cost.h, top).  Every memory rule of the
 * optimizer, the evaluation and the tests goes through it.
 */
double cost_device_activation(const struct cost_candidate *c, int d, const double *act);

/* The chunk micro-batches device d of c holds at its fullest moment: the
 * largest sum of one of its peak rows, or without rows the sum of its
 * stages' inflight.  The inflight_microbatches of evaluations. */
long cost_device_inflight(const struct cost_candidate *c, int d);

/*
 * Fills out[0 .. cand->pp) (caller-owned) with the memory of every device (a
 * stage, or under interleaving its v stages at their peak, inflight_microbatches
 * the chunk micro-batches it then holds) for
 * the assignment stage[u], strategy[u] (borrowed, cand->n_layers entries) of
 * cand, which cost_build made from cluster and model (borrowed).  The FSDP
 * transient and memory_limit_bytes are the plan's own (cost_plan_memory_limit),
 * which is cand's limit after plan_doc_apply.  Out-of-range entries are
 * UNIAP_E_INVALID naming "layers[u]".  No I/O.
 */
uniap_code cost_stage_memory(const struct cluster_profile *cluster, const struct model_profile *model,
                             const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                             struct cost_stage_memory *out, struct uniap_err *err);

/*
 * Collective times used by the cost model, exposed for tests and the catalog.
 * bytes is the full buffer; group members `size` with rank stride `stride`
 * inside a stage of the candidate; returns seconds (0 when size == 1).
 */
double cost_collective_s(const struct cluster_profile *c, enum cluster_coll kind, double bytes,
                         int size, int stride, int stage_devices, int pp);

/*
 * Time of one all-to-all in which every member of each group (size, stride)
 * sends `bytes` in all, an equal share to every member (itself included):
 * the level's latency per peer, plus the slowest hierarchy level's share
 * over its bandwidth, the levels' links working at once (docs/cost-model.md,
 * "Mixture of experts").  0 for size <= 1 or bytes <= 0.
 */
double cost_alltoall_s(const struct cluster_profile *c, double bytes, int size, int stride, int stage_devices,
                       int pp);

/* Overlapped time of computation x and communication y with CCOC k:
 * max(x, y) + (k - 1) * min(x, y). */
double cost_overlap_s(double x, double y, double ccoc);

#endif
