/*
 * model.h - the planner's input documents as plain C structs: the cluster
 * profile (hardware) and the model profile (layer types + layer graph).
 *
 * These structs are filled by a decoder at the edge (json/) or by the catalog,
 * then checked by cluster_validate()/model_validate(), which enforce every
 * cross-field rule (graph is a DAG, layer types exist, hierarchy nests, ...)
 * and name the offending JSON path in the error.  After validation the rest of
 * core/ may rely on the documented invariants without re-checking them.
 *
 * Units: seconds, bytes, bytes per second; parameter counts are plain counts.
 * Never: JSON, HTTP or SQLite here.
 *
 * Ownership: every pointer inside a profile is owned by that profile and is
 * freed by cluster_release()/model_release() (free(NULL)-safe, idempotent).
 */
#ifndef UNIAP_MODEL_H
#define UNIAP_MODEL_H

#include <stddef.h>

#include "err.h"

/* Caps on document sizes: every array a decoder fills is bounded. */
#define MODEL_MAX_DEVICES 1048576
#define MODEL_MAX_LEVELS 8
#define MODEL_MAX_BW_ENTRIES 256
#define MODEL_MAX_LAYERS 4096
#define MODEL_MAX_EDGES 65536
#define MODEL_MAX_TYPES 256
#define MODEL_MAX_TP_ENTRIES 32
#define MODEL_MAX_NAME 128

/* Memory defaults of a cluster document that does not give them
 * (docs/cost-model.md, "Memory"): the caching allocator's fragmentation
 * (a fraction of the bytes a plan allocates) and a safety margin (a
 * fraction of the device memory that no plan may use). */
#define MODEL_DEFAULT_FRAGMENTATION 0.05
#define MODEL_DEFAULT_MARGIN 0.02
/* Largest fragmentation and margin a cluster or a request may give. */
#define MODEL_MAX_MEMORY_FRACTION 0.5

/* ------------------------------------------------------------------ cluster */

/*
 * One level of the device hierarchy: groups of `devices` consecutive ranks
 * (e.g. 2 = a PCIe switch pair, 8 = a node, nodes*devices_per_node = the
 * cluster).  bw_bytes_per_s is the bus bandwidth of a collective inside one
 * such group; it is the fallback when no measured entry matches.
 */
struct cluster_level {
	char *name;
	int devices;
	double bw_bytes_per_s;
	/* alpha of the alpha-beta model: seconds per step of a collective (ring
	 * step) or per point-to-point message at this level; 0 by default */
	double latency_s;
	/* devices of one group of the level below that share one link of this
	 * level (e.g. 4 GPUs behind one NIC); several groups crossing the same
	 * link at once divide its bandwidth (docs/cost-model.md); 1 by default */
	int shared_by;
	/* the physical link's bandwidth (bytes/s), which bw_bytes_per_s (what a
	 * collective achieves) never exceeds: the calibration's upper bound on it
	 * (docs/calibration.md); 0 when the document does not say */
	double link_bytes_per_s;
};

enum cluster_coll {
	CLUSTER_ALLREDUCE = 0,
	CLUSTER_ALLGATHER,
	CLUSTER_REDUCE_SCATTER,
	CLUSTER_COLL_COUNT
};

/* A measured collective: bus bandwidth (nccl-tests convention) of a group of
 * `size` devices whose ranks are consecutive (1) or strided (0). */
struct cluster_bw {
	int size;
	int consecutive;
	double bw_bytes_per_s;
};

/* Measured point-to-point bandwidth between consecutive stages of a pp-stage pipeline. */
struct cluster_p2p {
	int pp;
	double bw_bytes_per_s;
};

struct cluster_profile {
	char *name;
	int nodes;
	int devices_per_node;
	char *device_name;           /* may be NULL */
	double memory_bytes;         /* per device */
	double reserved_bytes;       /* context/workspace, subtracted from memory_bytes */
	struct cluster_level *levels;/* strictly increasing `devices`, each dividing the next;
	                                the last one spans every device */
	size_t n_levels;
	struct cluster_bw *coll[CLUSTER_COLL_COUNT];
	size_t n_coll[CLUSTER_COLL_COUNT];
	struct cluster_p2p *p2p;
	size_t n_p2p;
	double overlap_coefficient;  /* CCOC >= 1: slowdown of overlapped compute/communication */
	/* Peak dense throughput per device in FLOP/s, indexed by enum model_precision
	 * (fp32, mixed); both 0 when the document gives no "peak_tflops". */
	double peak_flops_per_s[2];
	/* dense FP8 tensor-core peak in FLOP/s (Hopper and later); 0: the device
	 * has no FP8, and FP8 training (cost_options.fp8) is refused */
	double peak_fp8_flops_per_s;
	double compute_efficiency;   /* (0, 1], fraction of peak reached; 0 without a peak */
	/* GEMM dimension at which the achieved efficiency is half of
	 * compute_efficiency: eff(d) = compute_efficiency * d / (d + gemm_half_dim);
	 * 0 keeps the efficiency flat */
	double gemm_half_dim;
	double memory_bandwidth_bytes_per_s; /* device memory; 0: memory-bound work not priced */
	double kernel_overhead_s;    /* fixed time per kernel launch; 0 by default */
	/* memory: fraction of the bytes a plan allocates that the allocator
	 * loses to fragmentation, and the fraction of memory_bytes kept free as
	 * a safety margin, both in [0, 0.5] */
	double memory_fragmentation;
	double memory_margin;
};

/* Total device count (nodes * devices_per_node). */
int cluster_devices(const struct cluster_profile *c);

/* Checks every rule of a cluster profile; borrows c.  On failure err names the path. */
uniap_code cluster_validate(const struct cluster_profile *c, struct uniap_err *err);

/*
 * Overrides the safety margin of a validated cluster c (borrowed) for one
 * request: margin in [0, MODEL_MAX_MEMORY_FRACTION] and, with c's reserved
 * bytes, leaving memory.  On failure c is unchanged and err (UNIAP_E_INVALID)
 * names `field`, the request's name for it (e.g. "--memory-margin").
 */
uniap_code cluster_set_memory_margin(struct cluster_profile *c, double margin, const char *field,
                                     struct uniap_err *err);

/* Frees everything c owns (not c itself) and zeroes it. */
void cluster_release(struct cluster_profile *c);

/*
 * A deep copy of src (borrowed) into *out (overwritten; the caller owns it and
 * frees it with cluster_release()).  On failure (UNIAP_E_NOMEM) *out is
 * zeroed.  A new pointer field of struct cluster_profile must be copied here.
 */
uniap_code cluster_copy(const struct cluster_profile *src, struct cluster_profile *out, struct uniap_err *err);

/* -------------------------------------------------------------------- model */

enum model_precision {
	MODEL_FP32 = 0,  /* c_dtype 4 with Adam */
	MODEL_MIXED,     /* fp16/bf16 mixed precision, c_dtype 8 with Adam */
};

enum model_optimizer {
	MODEL_ADAM = 0,
	MODEL_SGD_MOMENTUM,
	MODEL_SGD,
};

/* A value measured for one tensor-parallel size. */
struct model_tp_value {
	int tp;
	double value;
};

struct model_layer_type {
	char *name;
	/* forward time of one sample; entry tp = 1 is required, other TP sizes
	 * are optional (missing ones: value(1) / tp).  Exactly one of this table
	 * (n_forward_s > 0) and forward_flops_per_sample (> 0) is given. */
	struct model_tp_value *forward_s;
	size_t n_forward_s;
	double parameters;                 /* count of learnable parameters */
	/* activation bytes kept for backward, per sample per device, by TP size;
	 * tp = 1 required, missing ones: value(1) / tp */
	struct model_tp_value *activation_bytes;
	size_t n_activation_bytes;
	double output_bytes_per_sample;    /* the layer's output tensor, unsharded */
	double checkpoint_bytes_per_sample;/* kept per sample with recompute on */
	int tp_allreduces_per_pass;        /* TP all-reduces of the output per forward pass */
	/* forward FLOPs of one sample, unsharded; 0 when forward_s is given.  The
	 * time comes from the cluster's peak: flops / (peak * efficiency) / tp. */
	double forward_flops_per_sample;
	/* The parts of a pass that do not scale with the samples (all optional, 0
	 * by default; docs/cost-model.md, "Layer time"):
	 * forward_fixed_s: measured time of a forward pass independent of the
	 * micro-batch size (the alpha of alpha + beta * b); kernels_per_pass:
	 * kernels one forward pass launches (each costs the cluster's
	 * kernel_overhead_s). */
	double forward_fixed_s;
	int kernels_per_pass;
	/* Shape of the FLOPs path: the GEMM dimension tensor parallelism splits
	 * (e.g. the hidden size) and the GEMM rows one sample brings (e.g. its
	 * tokens); the efficiency curve uses min(gemm_dim / tp, rows).  0: flat. */
	double gemm_dim;
	double tokens_per_sample;
	/* bytes one sample's forward pass moves through device memory in
	 * memory-bound operations (norms, softmax, dropout, activations), by TP
	 * size; optional (n = 0), missing sizes: value(1) / tp */
	struct model_tp_value *memory_bound_bytes;
	size_t n_memory_bound_bytes;
	/* The attention core (QK^T, softmax, dropout, AV) that selective
	 * recomputation recomputes instead of keeping (all optional, 0 by
	 * default, unsharded, divided by tp; docs/cost-model.md, "Selective
	 * recomputation"): its activation bytes per sample (part of
	 * activation_bytes), its forward FLOPs and its memory-bound bytes. */
	double attention_bytes_per_sample;
	double attention_flops_per_sample;
	double attention_memory_bound_bytes_per_sample;
	/* the memory-bound bytes per sample the attention core moves beyond the
	 * fused count above when a runtime runs its scale, mask, softmax (and
	 * its casts) and dropout as separate kernels (HuggingFace's eager
	 * attention); unsharded, divided by tp; 0 by default (docs/cost-model.md,
	 * "Runtime profile") */
	double eager_attention_bytes_per_sample;
	/* FP8 training (docs/cost-model.md, "FP8"): the part of
	 * forward_flops_per_sample that runs as FP8 GEMMs (the linear layers;
	 * the attention core, norms, embedding and LM head stay in BF16), and
	 * the memory-bound bytes per sample of casting those GEMMs' inputs to FP8
	 * (read 2, write 1 per element); both unsharded, divided by tp; 0: the
	 * layer has no FP8 GEMM */
	double fp8_flops_per_sample;
	double fp8_cast_bytes_per_sample;
	/* FP8 training keeps its GEMMs' inputs for the backward pass in FP8
	 * (Transformer Engine's Linear saves the quantized input): the bytes
	 * per sample that saves against the activation bytes, in two parts, one
	 * kept whole on every tp rank (divided by tp only under sequence
	 * parallelism, like the QKV and MLP inputs) and one split by tp (like
	 * the output projection's and the MLP's second GEMM's inputs); 0: none */
	double fp8_saved_bytes_per_sample;
	double fp8_saved_split_bytes_per_sample;
	/* Mixture of experts (docs/cost-model.md, "Mixture of experts"); all 0
	 * on a dense layer.  experts: routed experts of the layer's MoE MLP;
	 * expert_parameters: their parameters (part of parameters), which expert
	 * parallelism shards; expert_flops_per_sample: the routed experts' GEMMs
	 * of one sample at balanced routing (part of forward_flops_per_sample,
	 * and of fp8_flops_per_sample when that is given), run as a grouped GEMM
	 * whose rows per expert are expert_tokens_per_sample (a sample's tokens x
	 * top-k) x samples / local experts, split by TP along expert_gemm_dim
	 * (the expert's FFN size); expert_activation_bytes_per_sample: the
	 * experts' kept activations at balanced routing (part of the tp = 1
	 * activation bytes, divided by tp); dispatch_bytes_per_sample: the bytes
	 * of one sample's routed tokens (tokens x top-k x hidden x element),
	 * sent by each token dispatch and each combine; expert_load >= 1: the
	 * busiest rank's expert tokens over the balanced share (a capacity
	 * factor, or a measured imbalance; 1 = balanced, the benchmarks' forced
	 * routing); kernels_per_local_expert: forward launches per expert held
	 * on a rank (the grouped GEMM's one GEMM per local expert, fc1 and fc2:
	 * 2), so a rank with experts / ep of them launches kernels_per_pass +
	 * this x experts / ep; expert_sync: 1 when the host waits for the
	 * device's per-expert token counts before the token dispatch (dropless
	 * routing), which splits the forward pass in two that the host cannot
	 * run ahead across */
	/* Context parallelism (docs/cost-model.md, "Context parallelism"): the
	 * bytes of one sample's keys and values (the attention's K and V over the
	 * whole sequence, unsharded, divided by tp), which ring attention passes
	 * round the cp group, and the attention core's forward FLOPs per sample
	 * (QK^T and AV, flash attention's included) that the exchange overlaps;
	 * 0 on a layer without attention */
	double kv_bytes_per_sample;
	double context_flops_per_sample;
	/* Ulysses (all-to-all) context parallelism: the attention's heads, which
	 * tp x cp must divide, and the bytes of one sample's Q, K, V and
	 * attention output over the whole sequence (unsharded, divided by tp),
	 * which its all-to-alls move between sequence and head shards; 0 on a
	 * layer without attention */
	int attention_heads;
	double ulysses_bytes_per_sample;
	int experts;
	double expert_parameters;
	double expert_flops_per_sample;
	double expert_gemm_dim;
	double expert_tokens_per_sample;
	double expert_activation_bytes_per_sample;
	double dispatch_bytes_per_sample;
	double expert_load;
	int kernels_per_local_expert;
	int expert_sync;
};

struct model_layer {
	char *name;
	size_t type;  /* index into model_profile.types */
};

struct model_edge {
	size_t from;
	size_t to;
};

/*
 * What a runtime's launcher needs to build the model (Megatron-LM's
 * --num-layers, --hidden-size, ...), beside the cost tables: written by the
 * architecture generator (the catalog's BERT, GPT and Llama, "architecture"
 * documents) and the Galvatron import, carried by a model document as "shape"
 * (schema/model.schema.json).  known = 0: the document gave none.
 */
enum model_shape_mlp { MODEL_SHAPE_GELU = 0, MODEL_SHAPE_SWIGLU };
enum model_shape_norm { MODEL_SHAPE_LAYERNORM = 0, MODEL_SHAPE_RMSNORM };
enum model_shape_positions { MODEL_SHAPE_LEARNED = 0, MODEL_SHAPE_ROTARY };

struct model_shape {
	int known;
	int encoder;          /* BERT-style (bidirectional, MLM head) rather than a decoder */
	long layers;          /* transformer layers */
	long hidden, heads, kv_heads, ffn_hidden, seq_len, vocab;
	enum model_shape_mlp mlp;
	enum model_shape_norm norm;
	enum model_shape_positions positions;
	int biases;           /* linear layers have biases */
	int tied_embeddings;  /* the head reuses the embedding matrix */
	int flash_attention;  /* fused attention kernels (no stored scores) */
	long head_dim;        /* width of one attention head; 0: hidden / heads */
	long window, window_every; /* sliding-window attention (keys per query) on every
	                              window_every-th block from block 0; 0: none */
	/* mixture of experts (0 experts: dense): routed experts, their top-k,
	 * the expert FFN size, the shared experts' total FFN size (0: none), the
	 * MoE layers (every moe_every-th layer from moe_first_dense on), the
	 * capacity factor (0: dropless) */
	long experts, top_k, moe_ffn_hidden, shared_ffn_hidden, moe_every, moe_first_dense;
	double capacity_factor;
	int router_sigmoid;   /* the router scores with a sigmoid (--moe-router-score-function sigmoid) */
	/* multi-head latent attention (kv_lora_rank > 0): Megatron-LM's
	 * --multi-latent-attention --q-lora-rank --kv-lora-rank --qk-head-dim
	 * --qk-pos-emb-head-dim --v-head-dim */
	long q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
};

struct model_profile {
	char *name;
	enum model_precision precision;
	enum model_optimizer optimizer;
	/* bytes of model states per parameter when the runtime's differ from the
	 * optimizer's and precision's (e.g. Megatron-LM's fp16 optimizer keeps
	 * fp32 main gradients too: 20); 0: 4 * c_dtype-bytes of the precision */
	double state_bytes_per_parameter;
	struct model_layer_type *types;
	size_t n_types;
	struct model_layer *layers;
	size_t n_layers;
	struct model_edge *edges;  /* a DAG over layers */
	size_t n_edges;
	struct model_shape shape;  /* for the runtimes' launchers; known = 0 when absent */
};

/* Paper §3.2: bytes of model states per byte of parameters (c_dtype). */
double model_c_dtype(const struct model_profile *m);

/* The gcd of the expert counts of m's MoE layer types: the expert-parallel
 * sizes that divide every one of them divide it; 0 when m has none. */
int model_experts_gcd(const struct model_profile *m);

/* The gcd of the attention heads of m's layer types with attention (kv_bytes_per_sample > 0): the
 * tp x cp of Ulysses context parallelism must divide it; 0 when m has none. */
int model_heads_gcd(const struct model_profile *m);

/* The gcd of m's shape's attention heads and key-value heads (kv_heads 0: the heads): the tensor-
 * parallel sizes Megatron-LM accepts divide it; 0 when m has no shape. */
int model_shape_heads_gcd(const struct model_profile *m);

/* Bytes of one parameter element: 4 for fp32, 2 for mixed precision. */
double model_param_elem_bytes(const struct model_profile *m);

/* Value of a TP table at tp: the exact entry, else value(tp = 1) / tp. */
double model_tp_lookup(const struct model_tp_value *t, size_t n, int tp);

/* Checks every rule of a model profile (types, graph is a DAG, ...); borrows m. */
uniap_code model_validate(const struct model_profile *m, struct uniap_err *err);

/*
 * Fills order (caller-owned, n_layers entries) with a topological order of
 * the layers, ties broken by index.  Returns UNIAP_E_INVALID on a cycle.
 */
uniap_code model_topo_order(const struct model_profile *m, size_t *order, struct uniap_err *err);

/* Frees everything m owns (not m itself) and zeroes it. */
void model_release(struct model_profile *m);

#endif
