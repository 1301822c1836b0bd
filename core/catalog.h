/*
 * catalog.h - built-in cluster and model profiles, so a plan needs no
 * profiling campaign: clusters from public datasheets (peak FLOP/s, memory,
 * link bandwidths times named efficiencies) and models generated from their
 * architecture hyper-parameters (FLOPs, parameters, activation bytes).
 *
 * Every figure, its formula and its source are in docs/catalog.md; each entry
 * also carries its sources as a string.  Every profile built here passes
 * cluster_validate()/model_validate().
 *
 * Never: JSON, I/O, globals (the tables are constant) here.
 */
#ifndef UNIAP_CATALOG_H
#define UNIAP_CATALOG_H

#include <stddef.h>

#include "err.h"
#include "model.h"

enum catalog_kind {
	CATALOG_CLUSTER = 0,
	CATALOG_MODEL,
};

/* Multi-node DGX variants "dgx-a100-xN" / "dgx-h100-xN" accept N in this range. */
#define CATALOG_MIN_NODES 2
#define CATALOG_MAX_NODES 128

/* One listed entry; all strings are static.  A name ending in "-xN" stands
 * for the family of names with N = CATALOG_MIN_NODES..CATALOG_MAX_NODES. */
struct catalog_entry {
	const char *name;
	const char *description; /* one line */
	const char *sources;     /* where every number comes from */
};

/* Number of listed entries of kind. */
size_t catalog_count(enum catalog_kind kind);

/* Entry index of kind (static, never freed), or NULL when index is out of range. */
const struct catalog_entry *catalog_entry(enum catalog_kind kind, size_t index);

/* 1 when name (borrowed) names an entry of kind, a "-xN" name included. */
int catalog_has(enum catalog_kind kind, const char *name);

/* The entry name of kind nearest to name (borrowed; case-blind edit distance at most a
 * quarter of its length, at least 2), static; NULL when none is that near. */
const char *catalog_suggest(enum catalog_kind kind, const char *name);

/*
 * err (code) for name (borrowed), not an entry of kind, given at path (a field, or the
 * command's option): "PATH: unknown cluster "NAME"; did you mean NEAR? (HINT: a, b, ...)",
 * the suggestion only when one is near (catalog_suggest), HINT the caller's words on where
 * the catalog is listed (a command, a route).  Returns code.
 */
uniap_code catalog_unknown(enum catalog_kind kind, const char *name, const char *path, const char *hint,
                           uniap_code code, struct uniap_err *err);

/*
 * Builds the named cluster / model (name borrowed).  On success the caller
 * owns *out and frees it with cluster_release()/model_release(); on failure
 * *out is zeroed.  UNIAP_E_NOTFOUND lists the known names when name is not
 * one of them.
 */
uniap_code catalog_cluster(const char *name, struct cluster_profile *out, struct uniap_err *err);
uniap_code catalog_model(const char *name, struct model_profile *out, struct uniap_err *err);

/*
 * Architecture hyper-parameters of a Transformer language model (a model
 * document's "architecture" object, schema/model.schema.json); the catalog's
 * BERT, GPT and Llama entries are defined by one each.  Sizes are counts;
 * 0 in kv_heads / ffn_hidden means the default (heads / 4 * hidden).
 */
enum model_arch_family {
	MODEL_ARCH_DECODER = 0, /* GPT/Llama: embedding, causal blocks, final norm + LM head */
	MODEL_ARCH_ENCODER,     /* BERT: embedding with token types + LayerNorm, blocks, MLM head */
};

enum model_arch_mlp {
	MODEL_MLP_GELU = 0, /* h -> f -> h with GeLU: 2 h f weights */
	MODEL_MLP_SWIGLU,   /* gate and up h -> f, SiLU(gate) * up, down f -> h: 3 h f weights */
};

enum model_arch_norm {
	MODEL_NORM_LAYERNORM = 0, /* scale and bias: 2 h parameters */
	MODEL_NORM_RMSNORM,       /* scale only: h parameters */
};

enum model_arch_positions {
	MODEL_POS_LEARNED = 0, /* a learned s x h table added to the token embedding */
	MODEL_POS_ROTARY,      /* RoPE: no parameters, applied to Q and K in every block */
};

struct model_arch {
	enum model_arch_family family;
	int layers;
	double hidden;
	double heads;
	double kv_heads;   /* grouped-query attention: K/V heads; 0 = heads */
	double ffn_hidden; /* MLP inner size; 0 = 4 * hidden */
	double seq_len;
	double vocab;
	enum model_arch_mlp mlp;
	enum model_arch_norm norm;
	enum model_arch_positions positions;
	int flash_attention; /* fused attention: the a*s^2 scores are never stored */
	int dropout;         /* dropout layers keep masks */
	int biases;          /* linear layers have biases */
	int tied_embeddings; /* the LM head reuses the embedding matrix */
	enum model_precision precision;
	enum model_optimizer optimizer;
	double head_dim;     /* width of one attention head; 0 = hidden / heads (then heads divide hidden) */
	/* sliding-window attention: every window_every-th block from block 0
	 * (0 = every block) lets a query see `window` keys; 0: none */
	double window;
	int window_every;
	/* Mixture of experts (docs/catalog.md, "Mixture of experts"): experts > 0
	 * makes blocks moe_first_dense, moe_first_dense + moe_every, ... MoE
	 * blocks whose MLP is a router over `experts` routed experts of FFN size
	 * moe_ffn_hidden (the mlp kind), top_k of them per token, beside shared
	 * experts of total FFN size shared_ffn_hidden (0: none); the others are
	 * dense (ffn_hidden).  capacity_factor: tokens an expert takes over the
	 * balanced share (0: dropless); expert_load: the busiest rank's expert
	 * tokens over the balanced share (0: the capacity factor, else 1) */
	int experts;
	int top_k;
	double moe_ffn_hidden;
	double shared_ffn_hidden;
	int moe_every;       /* 0 = 1 */
	int moe_first_dense;
	double capacity_factor;
	double expert_load;
	int router_sigmoid;  /* the router scores with a sigmoid (DeepSeek-V3), else a softmax: priced alike */
	/* Multi-head latent attention (DeepSeek-V2/V3; docs/catalog.md, "Multi-head
	 * latent attention"): kv_lora_rank > 0 turns it on.  Q through a rank
	 * q_lora_rank bottleneck (0: a full h x heads (nope + rope) projection), K
	 * and V up-projected from a rank kv_lora_rank latent, each head's query and
	 * key qk_nope + qk_rope wide (the rope part of K shared by the heads), its
	 * value v_head wide */
	double q_lora_rank;
	double kv_lora_rank;
	double qk_nope_head_dim;
	double qk_rope_head_dim;
	double v_head_dim;
};

/*
 * Generates the layer types and graph of a (borrows a, name may be NULL):
 * embedding -> block.0 .. block.L-1 -> head, with the formulas of
 * docs/catalog.md.  Checks the hyper-parameters first; a message names the
 * field as "model.architecture.FIELD" (e.g. kv_heads must divide heads).  On
 * success the caller owns *out (model_release()); on failure *out is zeroed.
 */
uniap_code catalog_transformer(const char *name, const struct model_arch *a, struct model_profile *out,
                               struct uniap_err *err);

/*
 * The Korthikanti et al. (2022) activation bytes per sample of one
 * Transformer layer at TP size tp: s*h*(10 + 24/tp + 5*a*s/(h*tp)) bytes with
 * 2-byte elements, times elem_bytes/2.  Without dropout (dropout = 0) the
 * three dropout tensors vanish: s*h*(8 + 24/tp + 2*a*s/(h*tp)).  Exposed for
 * tests.
 */
double catalog_activation_bytes(double seq, double hidden, double heads, int tp, double elem_bytes,
                                int dropout);

#endif
