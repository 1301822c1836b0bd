/*
 * target.c - the runtime targets' rules (one table) and the exact search of
 * a candidate under them (see target.h; docs/export.md, "Runtime targets").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "target.h"

#define SCHED(s) (1u << (unsigned)(s))

/*
 * The rules, one row per runtime.  Sources: Megatron-LM's argument parser
 * (megatron/training/arguments.py, core_v0.15.3: --decoder-first/last-pipeline-
 * num-layers, 1F1B and interleaved schedules only, tensor-parallel ranks
 * consecutive and data-parallel outside them, no ZeRO-3, the model built from
 * its shape flags); DeepSpeed 0.14
 * (runtime/pipe/module.py PipelineModule and runtime/utils.py
 * partition_uniform; runtime/pipe/engine.py: ZeRO stages 0 and 1 with the
 * pipeline engine; TrainSchedule is 1F1B; AutoTP training with ZeRO 0-2);
 * Galvatron 2.4.0 (galvatron/core/arguments.py and the strategy configs of
 * its search engine: per-layer tp_sizes_enc, tp_consecutive_flags,
 * dp_types_enc 0 ddp or 1 zero-3, checkpoint, pp_division of transformer
 * layers, vtp and embed_sdp for the embedding and head, pipeline_type gpipe
 * or pipedream_flush).
 */
#define ZERO(z) (1u << (z))

static const struct target_rules target_table[TARGET_COUNT] = {
	[TARGET_ANY] = {
		.kind = TARGET_ANY, .name = "any", .runtime = "any runtime",
		.source = "the planner's own search space",
		.schedules = SCHED(COST_GPIPE) | SCHED(COST_1F1B) | SCHED(COST_INTERLEAVED),
		.schedule_default = COST_GPIPE,
		.fsdp = 1, .dp_with_fsdp = 1, .fsdp_with_pp = 1, .fsdp_with_tp = 1,
		.zero_stages = ZERO(1) | ZERO(2), .zero2_with_pp = 1, .sp = 1, .selective = 1, .uneven = 1,
		.fp8 = 1, .ep = 1, .cp = 1, .split = TARGET_SPLIT_ANY,
	},
	[TARGET_MEGATRON] = {
		.kind = TARGET_MEGATRON, .name = "megatron", .runtime = "megatron-lm",
		.source = "Megatron-LM core_v0.15.3, megatron/training/arguments.py",
		/* interleaved: --num-layers-per-virtual-pipeline-stage, equal model chunks */
		.schedules = SCHED(COST_1F1B) | SCHED(COST_INTERLEAVED), .schedule_default = COST_1F1B,
		.one_strategy = 1, .tp_consecutive = 1, .needs_blocks = 1, .microbatch_per_rank = 1,
		.zero_stages = ZERO(1), /* --use-distributed-optimizer */
		.sp = 1,                /* --sequence-parallel */
		.selective = 1,         /* --recompute-granularity selective */
		.fp8 = 1,               /* --fp8-format hybrid (Transformer Engine) */
		.ep = 1,                /* --expert-model-parallel-size, carved out of the dp group */
		.cp = 1,                /* --context-parallel-size, --cp-comm-type p2p (ring attention) */
		/* validate_args: "When using MoE and tensor parallelism, sequence
		 * parallelism must be used" */
		.moe_tp_needs_sp = 1,
		/* TransformerConfig.__post_init__: num_attention_heads and num_query_groups "must be
		 * a multiple of tensor_model_parallel_size" */
		.tp_divides_heads = 1,
		.needs_shape = 1, .split = TARGET_SPLIT_MEGATRON,
	},
	[TARGET_DEEPSPEED] = {
		.kind = TARGET_DEEPSPEED, .name = "deepspeed", .runtime = "deepspeed",
		.source = "DeepSpeed 0.14, deepspeed/runtime/pipe/module.py and runtime/utils.py",
		.schedules = SCHED(COST_1F1B), .schedule_default = COST_1F1B,
		.one_strategy = 1, .fsdp = 1, .tp_consecutive = 1, .microbatch_per_rank = 1,
		.zero_stages = ZERO(1) | ZERO(2), /* zero_optimization.stage */
		.split = TARGET_SPLIT_DS_UNIFORM,
	},
	[TARGET_GALVATRON] = {
		.kind = TARGET_GALVATRON, .name = "galvatron", .runtime = "galvatron",
		.source = "Galvatron 2.4.0, galvatron/core/arguments.py and its strategy configs",
		.schedules = SCHED(COST_GPIPE) | SCHED(COST_1F1B), .schedule_default = COST_GPIPE,
		.fsdp = 1, .fsdp_with_pp = 1, .fsdp_with_tp = 1, .ends_tied = 1, .needs_blocks = 1,
		.zero_stages = ZERO(2), .zero2_with_pp = 1, .one_dp_type = 1, /* --default_dp_type zero2 */
		.uneven = 1, /* chunks: torch.chunk of the batch, the last chunk smaller */
		.split = TARGET_SPLIT_BLOCKS,
		/* its search admits a stage when layers + embedding/head + 1024 MB of
		 * PyTorch context fit 0.8 x the budget (20 % kept for the allocator's
		 * cache on budgets above 20 GB) */
		.admission_cache_share = 0.2, .admission_cache_above_bytes = 20.0 * (1 << 30),
		.admission_fixed_bytes = 1.0 * (1 << 30),
		.admission_source = "Galvatron 2.4.0's search engine: dynamic_programming.py:190-193 (mem_cache = 0.2 x "
		                    "the budget above 20 GB), cost_model.py:206 (pytorch_context_mem 1024 MB)",
	},
};

const struct target_rules *target_rules(enum target_kind t)
{
	return (unsigned)t < TARGET_COUNT ? &target_table[t] : NULL;
}

const char *target_name(enum target_kind t)
{
	return (unsigned)t < TARGET_COUNT ? target_table[t].name : "unknown";
}

int target_parse(const char *s, enum target_kind *out)
{
	int i;

	for (i = 0; s && i < TARGET_COUNT; i++)
		if (strcmp(s, target_table[i].name) == 0) {
			*out = (enum target_kind)i;
			return 0;
		}
	return -1;
}

enum cost_schedule target_schedule(enum target_kind t, enum cost_schedule sched)
{
	const struct target_rules *r = target_rules(t);

	if (!r || (r->schedules & SCHED(sched)))
		return sched;
	/* interleaved 1F1B, where the runtime has no virtual stages: its plain 1F1B */
	if (sched == COST_INTERLEAVED && (r->schedules & SCHED(COST_1F1B)))
		return COST_1F1B;
	return r->schedule_default;
}

/* tp groups on consecutive ranks, or nothing to place. */
static int target_tp_consecutive(const struct strategy *s)
{
	return s->degree[STRATEGY_TP] == 1 || strategy_batch_width(s) == 1 || s->stride[STRATEGY_TP] == 1;
}

/* A layer that replicates its states over dp (dp > 1, no fsdp): the ones a ZeRO-1/2 stage applies to. */
static int target_replicated(const struct strategy *s)
{
	return s->degree[STRATEGY_DP] > 1 && s->degree[STRATEGY_FSDP] == 1;
}

/* The reason s breaks a per-layer rule of r (NULL when it does not). */
static const char *target_strategy_why(const struct target_rules *r, const struct strategy *s, int pp,
                                       int end)
{
	int fsdp = s->degree[STRATEGY_FSDP] > 1;

	if (fsdp && !r->fsdp) {
		if (r->kind == TARGET_MEGATRON)
			return "has no fully sharded data parallelism (--use-distributed-optimizer shards only "
			       "the optimizer states); export it as galvatron or deepspeed";
		return "has no fully sharded data parallelism";
	}
	if (fsdp && s->degree[STRATEGY_DP] > 1 && !r->dp_with_fsdp) {
		if (r->kind == TARGET_GALVATRON)
			return "gives a layer one data-parallel type (dp_types_enc 0 ddp or 1 zero-3), not "
			       "dp and fsdp mixed";
		return "applies one zero stage to the whole data-parallel group, not dp and fsdp mixed";
	}
	if (s->selective && !r->selective) {
		if (r->kind == TARGET_GALVATRON)
			return "checkpoints whole layers (checkpoint), not the attention core alone";
		return "'s activation checkpointing recomputes whole layers, not the attention core alone";
	}
	if (s->cp > 1 && !r->cp) {
		if (r->kind == TARGET_GALVATRON)
			return "'s sequence parallelism (use_sp) is Ulysses all-to-all, not the ring attention uniap "
			       "prices for context parallelism";
		return "has no context parallelism";
	}
	if (s->ep > 1 && !r->ep) {
		if (r->kind == TARGET_DEEPSPEED)
			return "'s expert parallelism is a layer of the model's code (deepspeed.moe.layer.MoE "
			       "ep_size), not a setting of the config uniap exports";
		return "has no expert parallelism";
	}
	if (s->sp && !r->sp) {
		if (r->kind == TARGET_GALVATRON)
			return "'s use_sp is Ulysses sequence parallelism (all-to-all), not Megatron-LM's "
			       "sequence parallelism that uniap prices";
		return "has no Megatron-style sequence parallelism";
	}
	if (s->zero && !(r->zero_stages & ZERO(s->zero))) {
		if (r->kind == TARGET_MEGATRON)
			return "shards the optimizer states (--use-distributed-optimizer, zero-1), not the "
			       "gradients (zero-2)";
		if (r->kind == TARGET_GALVATRON)
			return "'s data-parallel types are ddp, zero2 and zero3 (fsdp), not zero-1";
		return "has no such zero stage";
	}
	if (s->zero == 2 && pp > 1 && !r->zero2_with_pp)
		return "'s pipeline engine supports zero stages 0 and 1 only; zero-2 needs stage 2";
	if (fsdp && pp > 1 && !r->fsdp_with_pp)
		return "'s pipeline engine supports zero stages 0 and 1 only; fsdp needs stage 3";
	if (fsdp && s->degree[STRATEGY_TP] > 1 && !r->fsdp_with_tp)
		return "'s autotp training supports zero stages 0 to 2 only; fsdp needs stage 3";
	if (r->tp_consecutive && !target_tp_consecutive(s))
		return "puts tp on consecutive ranks with the data-parallel ranks outside";
	if (end && r->ends_tied && !target_tp_consecutive(s))
		return "places the vocabulary tp (vtp) of the embedding and head on consecutive ranks";
	if (end && r->ends_tied && s->recompute)
		return "never checkpoints the embedding or head";
	return NULL;
}

int target_strategy_ok(enum target_kind t, const struct strategy *s, int pp, int end)
{
	const struct target_rules *r = target_rules(t);

	return r && target_strategy_why(r, s, pp, end) == NULL;
}

/* cost_keep's ok: ctx is the target's rules */
static int target_keep_ok(const void *ctx, const struct strategy *s, int pp)
{
	return target_strategy_why(ctx, s, pp, 0) == NULL;
}

const struct cost_runtime *target_runtime(enum target_kind t)
{
	static const char *const names[TARGET_COUNT] = {
		[TARGET_ANY] = RUNTIME_DEFAULT, [TARGET_MEGATRON] = "megatron-lm",
		[TARGET_DEEPSPEED] = "deepspeed", [TARGET_GALVATRON] = "galvatron",
	};
	const struct cost_runtime *r = (unsigned)t < TARGET_COUNT ? runtime_find(names[t]) : NULL;

	return r ? r : runtime_find(RUNTIME_DEFAULT);
}

struct cost_keep target_keep(enum target_kind t)
{
	const struct target_rules *r = target_rules(t);
	struct cost_keep k = {0};

	if (r) {
		k.ok = target_keep_ok;
		k.ctx = r;
		k.microbatch_per_rank = r->microbatch_per_rank;
		k.moe_tp_needs_sp = r->moe_tp_needs_sp;
		k.tp_divides_heads = r->tp_divides_heads;
		k.admission_cache_share = r->admission_cache_share;
		k.admission_cache_above_bytes = r->admission_cache_above_bytes;
		k.admission_fixed_bytes = r->admission_fixed_bytes;
	}
	return k;
}

void target_ds_partition_uniform(size_t n, int parts, size_t *bounds)
{
	size_t p, P = (size_t)parts, chunk, residual;

	if (n <= P) {
		for (p = 0; p <= P; p++)
			bounds[p] = p < n ? p : n;
		return;
	}
	chunk = n / P;
	residual = n - chunk * P;
	for (p = 0; p <= P; p++)
		bounds[p] = p * chunk + (p < residual ? p : residual);
}

/* Galvatron's class of an end strategy: its tp degree and whether it shards. */
static int target_same_end_class(const struct strategy *a, const struct strategy *b)
{
	return a->degree[STRATEGY_TP] == b->degree[STRATEGY_TP] &&
	       (a->degree[STRATEGY_FSDP] > 1) == (b->degree[STRATEGY_FSDP] > 1);
}

int target_megatron_chunks(const size_t *counts, int stages)
{
	int i, even = 1, counted = stages >= 2;

	for (i = 1; i < stages; i++) {
		even = even && counts[i] == counts[0];
		counted = counted && counts[i] + (i == stages - 1) == counts[0] + 1;
	}
	return even ? 1 : counted ? 2 : 0;
}

static uniap_code target_check_split(const struct target_rules *r, const struct cost_candidate *cand,
                                     const int *stage, struct uniap_err *err)
{
	size_t L = cand->n_layers, u, *counts, *bounds;
	int i, pp = cost_stages(cand);
	uniap_code rc = UNIAP_OK;

	if (r->split == TARGET_SPLIT_ANY)
		return UNIAP_OK;
	for (u = 1; u < L; u++)
		if (stage[u] < stage[u - 1])
			return err_set(err, UNIAP_E_INVALID,
			               "layers[%zu] (%s): %s cuts the layer list into contiguous stages, but "
			               "stage %d follows stage %d of layers[%zu]",
			               u, cand->layer_names[u], r->runtime, stage[u], stage[u - 1], u - 1);
	if (r->split == TARGET_SPLIT_DS_UNIFORM) {
		if (pp == 1)
			return UNIAP_OK;
		bounds = calloc((size_t)pp + 1, sizeof(*bounds));
		if (!bounds)
			return err_set(err, UNIAP_E_NOMEM, "out of memory");
		target_ds_partition_uniform(L, pp, bounds);
		for (i = 0; i < pp && rc == UNIAP_OK; i++)
			for (u = bounds[i]; u < bounds[i + 1] && rc == UNIAP_OK; u++)
				if (stage[u] != i)
					rc = err_set(err, UNIAP_E_INVALID,
					             "stages[%d]: deepspeed's PipelineModule splits the %zu layers with "
					             "partition_method \"uniform\" (layers %zu to %zu on this stage), "
					             "but layers[%zu] (%s) is on stage %d",
					             i, L, bounds[i], bounds[i + 1] - 1, u, cand->layer_names[u], stage[u]);
		free(bounds);
		return rc;
	}
	/* BLOCKS and MEGATRON: count the transformer layers per stage */
	counts = calloc((size_t)pp, sizeof(*counts));
	if (!counts)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	for (u = 1; u + 1 < L; u++)
		counts[stage[u]]++;
	for (i = 0; i < pp && rc == UNIAP_OK; i++)
		if (counts[i] == 0)
			rc = err_set(err, UNIAP_E_INVALID,
			             "stages[%d]: %s needs at least one transformer layer on every stage, got none",
			             i, r->runtime);
	/* interleaved: every model chunk the same number of transformer layers, or (with
	 * --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split)
	 * of layers with the embedding and the head counted */
	if (rc == UNIAP_OK && r->split == TARGET_SPLIT_MEGATRON && cost_virtual(cand) > 1 &&
	    target_megatron_chunks(counts, pp) == 0) {
		for (i = 1; rc == UNIAP_OK && i < pp; i++)
			if (counts[i] + (i == pp - 1) != counts[0] + 1)
				rc = err_set(err, UNIAP_E_INVALID,
				             "stages[%d]: megatron-lm's --num-layers-per-virtual-pipeline-stage gives every "
				             "model chunk the same number of transformer layers (with "
				             "--account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-"
				             "split, of layers counting the embedding and the head); stages[0] has %zu, "
				             "stages[%d] %zu", i, counts[0], i, counts[i]);
	}
	for (i = 2; rc == UNIAP_OK && r->split == TARGET_SPLIT_MEGATRON && i + 1 < pp; i++)
		if (counts[i] != counts[1])
			rc = err_set(err, UNIAP_E_INVALID,
			             "stages[%d]: megatron-lm splits the middle stages evenly "
			             "(--decoder-first/last-pipeline-num-layers set only the ends); got %zu "
			             "transformer layers, stages[1] has %zu", i, counts[i], counts[1]);
	free(counts);
	return rc;
}

static uniap_code target_check(const struct target_rules *r, const struct cost_candidate *cand,
                               const int *stage, const size_t *strategy, int check_schedule,
                               struct uniap_err *err)
{
	const struct strategy *items = cand->strategies.items, *s0, *sl;
	size_t L = cand->n_layers, u;
	const char *why;
	uniap_code rc;

	/* even an export: a plan over pp v stages needs the runtime's virtual stages */
	if (cost_virtual(cand) > 1 && !(r->schedules & SCHED(COST_INTERLEAVED)))
		return err_set(err, UNIAP_E_INVALID, "schedule: %s has no interleaved schedule (virtual pipeline "
		               "stages); the plan has %d per device", r->runtime, cost_virtual(cand));
	if (r->needs_blocks && L < 3)
		return err_set(err, UNIAP_E_INVALID,
		               "layers: %s needs an embedding, at least one transformer layer and a head "
		               "(3 layers), got %zu", r->runtime, L);
	if (r->one_strategy)
		for (u = 1; u < L; u++)
			if (strategy[u] != strategy[0])
				return err_set(err, UNIAP_E_INVALID,
				               "layers[%zu] (%s): %s uses one strategy for every layer; got %s, "
				               "layers[0] (%s) uses %s",
				               u, cand->layer_names[u], r->runtime, items[strategy[u]].name,
				               cand->layer_names[0], items[strategy[0]].name);
	for (u = 0; u < L; u++) {
		const struct strategy *s = &items[strategy[u]];
		int end = (u == 0 || u + 1 == L) && L >= 3;

		if ((why = target_strategy_why(r, s, cand->pp, end)) != NULL)
			return err_set(err, UNIAP_E_INVALID, "layers[%zu] (%s): %s%s%s, got %s",
			               u, cand->layer_names[u], r->runtime, why[0] == '\'' ? "" : " ", why, s->name);
	}
	if (r->one_dp_type) {
		size_t first = L;

		for (u = 0; u < L; u++) {
			const struct strategy *s = &items[strategy[u]];

			if (!target_replicated(s))
				continue;
			if (first == L)
				first = u;
			else if (s->zero != items[strategy[first]].zero)
				return err_set(err, UNIAP_E_INVALID,
				               "layers[%zu] (%s): %s gives every replicated layer one data-parallel "
				               "type (default_dp_type ddp or zero2); got %s, layers[%zu] (%s) uses %s",
				               u, cand->layer_names[u], r->runtime, s->name, first,
				               cand->layer_names[first], items[strategy[first]].name);
		}
	}
	if (r->ends_tied && L >= 3) {
		s0 = &items[strategy[0]];
		sl = &items[strategy[L - 1]];
		if (!target_same_end_class(s0, sl))
			return err_set(err, UNIAP_E_INVALID,
			               "layers[%zu] (%s): %s gives the embedding and head one strategy (vtp, "
			               "embed_sdp), got %s, layers[0] (%s) uses %s",
			               L - 1, cand->layer_names[L - 1], r->runtime, sl->name, cand->layer_names[0],
			               s0->name);
	}
	if ((rc = target_check_split(r, cand, stage, err)) != UNIAP_OK)
		return rc;
	if (r->microbatch_per_rank)
		for (u = 0; u < L; u++) {
			const struct strategy *s = &items[strategy[u]];
			long w = strategy_batch_width(s);

			if (cand->microbatch_size % w != 0)
				return err_set(err, UNIAP_E_INVALID,
				               "microbatch_size: %s gives every data-parallel rank the same "
				               "micro-batch; %ld samples do not split over %ld ranks (%s)",
				               r->runtime, cand->microbatch_size, w, s->name);
			if (r->one_strategy)
				break;
		}
	if (!r->uneven && cost_batch(cand) != cand->microbatches * cand->microbatch_size)
		return err_set(err, UNIAP_E_INVALID,
		               "microbatches: %s splits the batch into equal micro-batches; %ld does not divide "
		               "batch %ld", r->runtime, cand->microbatches, cost_batch(cand));
	if (check_schedule && cand->pp > 1 && !(r->schedules & SCHED(cand->schedule)))
		return err_set(err, UNIAP_E_INVALID, "schedule: %s does not run %s pipelines",
		               r->runtime, cost_schedule_name(cand->schedule));
	return UNIAP_OK;
}

uniap_code target_check_plan(enum target_kind t, const struct cost_candidate *cand, const int *stage,
                             const size_t *strategy, struct uniap_err *err)
{
	const struct target_rules *r = target_rules(t);

	if (!r)
		return err_set(err, UNIAP_E_ARG, "target: unknown (%d)", (int)t);
	return target_check(r, cand, stage, strategy, 1, err);
}

/* Every device's allocated bytes (memory_fixed + inflight x per micro-batch,
 * summed over its stages) within r's admission rule, or UNIAP_E_INFEASIBLE
 * naming the device. */
static uniap_code target_check_admission(const struct target_rules *r, const struct cost_candidate *cand,
                                         const int *stage, const size_t *strategy, struct uniap_err *err)
{
	struct cost_keep keep = target_keep(r->kind);
	double limit = cost_admission_bytes(&keep, cand->device_memory_bytes), worst = 0;
	size_t K = cost_k(cand), u;
	int d, at = 0;

	if (!isfinite(limit) || !(cand->device_memory_bytes > 0))
		return UNIAP_OK;
	for (d = 0; d < cand->pp; d++) {
		double sum = 0;

		for (u = 0; u < cand->n_layers; u++)
			if (stage[u] % cand->pp == d)
				sum += cand->memory_fixed_bytes[u * K + strategy[u]] +
				       (double)cand->inflight[stage[u]] * cand->memory_per_microbatch_bytes[u * K + strategy[u]];
		if (sum > worst) {
			worst = sum;
			at = d;
		}
	}
	if (worst <= limit * (1 + 1e-12))
		return UNIAP_OK;
	return err_set(err, UNIAP_E_INFEASIBLE,
	               "stage %d: %.2f GiB of model states and activations exceed %s's own memory admission, "
	               "%.2f GiB on a %.0f GiB device (%s); the device would hold it, but %s's planner would "
	               "not accept it", at, worst / (1 << 30), r->runtime, limit / (1 << 30),
	               cand->device_memory_bytes / (1 << 30), r->admission_source, r->runtime);
}

uniap_code target_check_export(enum target_kind t, const struct cost_candidate *cand, const int *stage,
                               const size_t *strategy, struct uniap_err *err)
{
	const struct target_rules *r = target_rules(t);
	uniap_code rc;

	if (!r)
		return err_set(err, UNIAP_E_ARG, "target: unknown (%d)", (int)t);
	if ((rc = target_check(r, cand, stage, strategy, 0, err)) != UNIAP_OK)
		return rc;
	return target_check_admission(r, cand, stage, strategy, err);
}

/* ------------------------------------------------------------ pinned ends */

/*
 * The candidate of one Galvatron end class x on the strategies kept by
 * keep[k] (the dictionary of one data-parallel type): layers 0 and L-1 use
 * strategy x and are folded into layers 1 and L-2 (their costs, and the costs
 * of the edges between them, added to those layers' rows; their other edges
 * moved to those layers with x's row or column), so the embedding and the
 * head stay on the stages of a transformer layer; then every layer u gets an
 * edge to u+1 of cost 0 where none exists, so the stages follow the layer
 * order.  Layer j of *out is layer j + 1 of cand; its strategy k' is cand's
 * idx[k'] (idx: caller-owned, K entries).
 */
static uniap_code target_pin_ends(const struct cost_candidate *cand, size_t x, const unsigned char *keep,
                                  size_t *idx, struct cost_candidate *out, struct uniap_err *err)
{
	size_t L = cand->n_layers, K0 = cost_k(cand), K = 0, n = L - 2, u, k, l, e, E = 0, j;
	size_t *group = NULL;
	unsigned char *pinned = NULL, *has_next = NULL;

	for (k = 0; k < K0; k++)
		if (keep[k])
			idx[K++] = k;
	memset(out, 0, sizeof(*out));
	*out = *cand;
	out->inflight = NULL;
	out->layer_names = NULL;
	out->time_s = out->memory_fixed_bytes = out->memory_per_microbatch_bytes = NULL;
	out->edges = NULL;
	out->strategies.items = NULL;
	out->strategies.count = K;
	out->n_layers = n;
	out->n_edges = 0;
	out->strategies.items = malloc((K ? K : 1) * sizeof(*out->strategies.items));
	out->inflight = malloc((size_t)cost_stages(cand) * sizeof(*out->inflight));
	out->layer_names = calloc(n, sizeof(*out->layer_names));
	out->time_s = calloc(n * K + 1, sizeof(double));
	out->memory_fixed_bytes = calloc(n * K + 1, sizeof(double));
	out->memory_per_microbatch_bytes = calloc(n * K + 1, sizeof(double));
	out->edges = calloc(cand->n_edges + n, sizeof(*out->edges));
	group = malloc(L * sizeof(*group));
	pinned = calloc(L, 1);
	has_next = calloc(n, 1);
	if (!out->strategies.items || !out->inflight || !out->layer_names || !out->time_s ||
	    !out->memory_fixed_bytes || !out->memory_per_microbatch_bytes || !out->edges || !group ||
	    !pinned || !has_next)
		goto nomem;
	for (k = 0; k < K; k++)
		out->strategies.items[k] = cand->strategies.items[idx[k]];
	memcpy(out->inflight, cand->inflight, (size_t)cost_stages(cand) * sizeof(*out->inflight));
	for (u = 0; u < L; u++)
		group[u] = u == 0 ? 0 : (u + 1 == L ? n - 1 : u - 1);
	pinned[0] = pinned[L - 1] = 1;
	for (j = 0; j < n; j++)
		if (!(out->layer_names[j] = strdup(cand->layer_names[j + 1])))
			goto nomem;
	/* layer rows: a pinned layer adds its x entry to every entry of its group */
	for (u = 0; u < L; u++)
		for (k = 0; k < K; k++) {
			size_t src = u * K0 + (pinned[u] ? x : idx[k]), dst = group[u] * K + k;

			out->time_s[dst] += cand->time_s[src];
			out->memory_fixed_bytes[dst] += cand->memory_fixed_bytes[src];
			out->memory_per_microbatch_bytes[dst] += cand->memory_per_microbatch_bytes[src];
		}
	for (e = 0; e < cand->n_edges; e++) {
		const struct cost_edge *ce = &cand->edges[e];
		size_t a = ce->from, b = ce->to, ga = group[a], gb = group[b];

		if (ga == gb) {
			/* inside one group: always one stage, a cost of the group's own strategy */
			for (k = 0; k < K; k++)
				out->time_s[ga * K + k] +=
					ce->same_stage_s[(pinned[a] ? x : idx[k]) * K0 + (pinned[b] ? x : idx[k])];
			continue;
		}
		{
			struct cost_edge *d = &out->edges[E++];

			d->from = ga;
			d->to = gb;
			d->same_stage_s = malloc((K ? K * K : 1) * sizeof(double));
			d->cross_stage_s = malloc((K ? K * K : 1) * sizeof(double));
			if (!d->same_stage_s || !d->cross_stage_s) {
				out->n_edges = E;
				goto nomem;
			}
			for (k = 0; k < K; k++)
				for (l = 0; l < K; l++) {
					size_t s = (pinned[a] ? x : idx[k]) * K0 + (pinned[b] ? x : idx[l]);

					d->same_stage_s[k * K + l] = ce->same_stage_s[s];
					d->cross_stage_s[k * K + l] = ce->cross_stage_s[s];
				}
			if (gb == ga + 1)
				has_next[ga] = 1;
		}
	}
	for (j = 0; j + 1 < n; j++) {
		struct cost_edge *d;

		if (has_next[j])
			continue;
		d = &out->edges[E++];
		d->from = j;
		d->to = j + 1;
		d->same_stage_s = calloc(K * K + 1, sizeof(double));
		d->cross_stage_s = calloc(K * K + 1, sizeof(double));
		if (!d->same_stage_s || !d->cross_stage_s) {
			out->n_edges = E;
			goto nomem;
		}
	}
	out->n_edges = E;
	free(group);
	free(pinned);
	free(has_next);
	return UNIAP_OK;
nomem:
	if (out->n_edges < E)
		out->n_edges = E;
	free(group);
	free(pinned);
	free(has_next);
	cost_candidate_release(out);
	return err_set(err, UNIAP_E_NOMEM, "target: out of memory");
}

/*
 * The dictionary of data-parallel type `type` (0 ddp, 2 zero2) under r's one
 * dp type rule: keep[k] = 0 for the replicated strategies of the other type.
 * Returns 0 when type 2 has no strategy of its own (nothing new to solve).
 */
static int target_dp_type_keep(const struct target_rules *r, const struct cost_candidate *cand, int type,
                               unsigned char *keep)
{
	size_t K = cost_k(cand), k;
	int own = type == 0;

	for (k = 0; k < K; k++) {
		const struct strategy *s = &cand->strategies.items[k];

		keep[k] = !r->one_dp_type || !target_replicated(s) || s->zero == type;
		if (keep[k] && target_replicated(s) && s->zero == type)
			own = 1;
	}
	return own;
}

/* The classes of Galvatron's ends: the strategies an end may use, one per (tp, sharded). */
static size_t target_end_classes(enum target_kind t, const struct cost_candidate *cand,
                                 const unsigned char *keep, size_t *xs)
{
	size_t K = cost_k(cand), k, i, n = 0;

	for (k = 0; k < K; k++) {
		const struct strategy *s = &cand->strategies.items[k];
		int dup = 0;

		if (!keep[k] || !target_strategy_ok(t, s, cand->pp, 1))
			continue;
		for (i = 0; i < n && !dup; i++)
			dup = target_same_end_class(&cand->strategies.items[xs[i]], s);
		if (!dup)
			xs[n++] = k;
	}
	return n;
}

uniap_code target_solve(enum target_kind t, const struct cost_candidate *cand,
                        const struct opt_options *opts, struct opt_result *out, struct uniap_err *err)
{
	const struct target_rules *r = target_rules(t);
	struct opt_options o;
	size_t L = cand->n_layers, K, *xs = NULL, *idx = NULL, n_x = 0, i, u;
	unsigned char *keep = NULL; /* [2 * K]: the dictionaries of dp types 0 and 2 */
	int *xtype = NULL;
	double t0 = opt_clock_s(), deadline, bound = INFINITY;
	int all_proven = 1, any_pruned = 0, all_infeasible = 1;
	uniap_code rc = UNIAP_OK;

	if (!r)
		return err_set(err, UNIAP_E_ARG, "target: unknown (%d)", (int)t);
	if (r->one_strategy)
		return err_set(err, UNIAP_E_ARG, "target: %s plans are enumerated, not solved", r->name);
	if (!r->ends_tied)
		return opt_solve(cand, opts, out, err);
	if ((rc = opt_candidate_check(cand, err)) != UNIAP_OK) {
		opt_result_init(out);
		out->status = OPT_ERROR;
		return rc;
	}
	opt_result_init(out);
	out->n_layers = L;
	K = cost_k(cand);
	if (L < 3 || (size_t)cost_stages(cand) > L - 2) {
		out->status = OPT_INFEASIBLE;
		out->bound_s = INFINITY;
		snprintf(out->note, sizeof(out->note), "%s needs a transformer layer on each of the %d stages",
		         r->runtime, cost_stages(cand));
		out->solve_s = opt_clock_s() - t0;
		return UNIAP_OK;
	}
	if (opts)
		o = *opts;
	else
		opt_options_init(&o);
	deadline = o.time_limit_s > 0 && isfinite(o.time_limit_s) ? t0 + o.time_limit_s : INFINITY;
	xs = malloc(2 * K * sizeof(*xs));
	xtype = malloc(2 * K * sizeof(*xtype));
	idx = malloc(K * sizeof(*idx));
	keep = malloc(2 * K);
	if (!xs || !xtype || !idx || !keep) {
		free(xs);
		free(xtype);
		free(idx);
		free(keep);
		return err_set(err, UNIAP_E_NOMEM, "target: out of memory");
	}
	/* one pinned candidate per (dp type, end class) */
	for (i = 0; i < 2; i++) {
		size_t n, j;

		if (!target_dp_type_keep(r, cand, (int)i * 2, keep + i * K))
			continue;
		n = target_end_classes(t, cand, keep + i * K, xs + n_x);
		for (j = 0; j < n; j++)
			xtype[n_x + j] = (int)i;
		n_x += n;
	}
	for (i = 0; i < n_x; i++) {
		struct cost_candidate pc;
		struct opt_result pr;
		struct opt_options po = o;
		double now = opt_clock_s();

		if (now >= deadline) {
			all_proven = 0;
			all_infeasible = 0;
			bound = 0; /* nothing is known of the classes left */
			snprintf(out->note, sizeof(out->note), "time limit: %zu of %zu end classes solved", i, n_x);
			break;
		}
		if (isfinite(deadline))
			po.time_limit_s = deadline - now;
		if (isfinite(out->tpi_s) && out->tpi_s < po.cutoff_tpi)
			po.cutoff_tpi = out->tpi_s;
		if ((rc = target_pin_ends(cand, xs[i], keep + (size_t)xtype[i] * K, idx, &pc, err)) != UNIAP_OK)
			break;
		opt_result_init(&pr);
		rc = opt_solve(&pc, &po, &pr, err);
		cost_candidate_release(&pc);
		if (rc != UNIAP_OK) {
			opt_result_release(&pr);
			break;
		}
		if (pr.status != OPT_INFEASIBLE)
			all_infeasible = 0;
		if (pr.status == OPT_PRUNED)
			any_pruned = 1;
		if (pr.status == OPT_FEASIBLE || pr.status == OPT_UNKNOWN) {
			all_proven = 0;
			if (pr.note[0])
				snprintf(out->note, sizeof(out->note), "%s", pr.note);
		}
		if (pr.bound_s < bound)
			bound = pr.bound_s;
		if (pr.stage && pr.strategy && isfinite(pr.tpi_s)) {
			int *st = malloc(L * sizeof(*st));
			size_t *sg = malloc(L * sizeof(*sg));
			double tpi;

			if (!st || !sg) {
				free(st);
				free(sg);
				opt_result_release(&pr);
				rc = err_set(err, UNIAP_E_NOMEM, "target: out of memory");
				break;
			}
			for (u = 0; u < L; u++) {
				size_t j = u == 0 ? 0 : (u + 1 == L ? L - 3 : u - 1);

				st[u] = pr.stage[j];
				sg[u] = (u == 0 || u + 1 == L) ? xs[i] : idx[pr.strategy[j]];
			}
			tpi = opt_tpi(cand, st, sg);
			if (isfinite(tpi) && tpi < out->tpi_s) {
				free(out->stage);
				free(out->strategy);
				out->stage = st;
				out->strategy = sg;
				out->tpi_s = tpi;
				out->method = pr.method;
			} else {
				free(st);
				free(sg);
			}
		}
		out->nodes += pr.nodes;
		opt_result_release(&pr);
	}
	free(xs);
	free(xtype);
	free(idx);
	free(keep);
	out->solve_s = opt_clock_s() - t0;
	if (rc != UNIAP_OK) {
		opt_result_release(out);
		out->status = OPT_ERROR;
		return rc;
	}
	if (n_x == 0) {
		out->status = OPT_INFEASIBLE;
		out->bound_s = INFINITY;
		out->gap = INFINITY;
		snprintf(out->note, sizeof(out->note), "%s: no strategy of this stage size fits the embedding "
		         "and head (tp on consecutive ranks, one data-parallel type, no recompute)", r->runtime);
		return UNIAP_OK;
	}
	if (isfinite(out->tpi_s)) {
		/* optimal when the classes' bounds (an optimal class's bound is its plan's TPI,
		 * a pruned one's at least the cutoff) reach the plan within the asked gap */
		if (bound > out->tpi_s)
			bound = out->tpi_s;
		out->bound_s = bound;
		out->gap = (out->tpi_s - bound) / out->tpi_s;
		if (out->gap < 1e-12)
			out->gap = 0;
		out->status = out->gap <= (o.rel_gap > 0 ? o.rel_gap : 0) ? OPT_OPTIMAL : OPT_FEASIBLE;
		if (out->status == OPT_OPTIMAL)
			out->note[0] = '\0';
	} else if (all_infeasible) {
		out->status = OPT_INFEASIBLE;
		out->bound_s = INFINITY;
		out->gap = INFINITY;
	} else if (all_proven && any_pruned) {
		out->status = OPT_PRUNED;
		out->bound_s = bound;
		out->gap = INFINITY;
	} else {
		out->status = OPT_UNKNOWN;
		out->bound_s = bound;
		out->gap = INFINITY;
	}
	return UNIAP_OK;
}
