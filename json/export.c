/*
 * export.c - a plan in the formats of export.h.  Each target has a check
 * that refuses what it cannot express (naming the layer or field) and a
 * writer; docs/export.md says why each rule holds.
 *
 * Never: change the plan to make it fit a target; no I/O.
 */
#include "export.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jencode.h"
#include "schedsim.h"
#include "target.h"

static const struct {
	const char *name;
	const char *media_type;
} exp_formats[EXP_FORMAT_COUNT] = {
	[EXP_JSON] = { "json", "application/json" },
	[EXP_TEXT] = { "text", "text/plain; charset=utf-8" },
	[EXP_GALVATRON] = { "galvatron", "application/json" },
	[EXP_MEGATRON] = { "megatron", "text/plain; charset=utf-8" },
	[EXP_DEEPSPEED] = { "deepspeed", "application/json" },
	[EXP_CHROME_TRACE] = { "chrome-trace", "application/json" },
};

int exp_format_parse(const char *s, enum exp_format *out)
{
	int i;

	for (i = 0; s && i < EXP_FORMAT_COUNT; i++) {
		if (strcmp(s, exp_formats[i].name) == 0) {
			*out = (enum exp_format)i;
			return 0;
		}
	}
	return -1;
}

const char *exp_format_name(enum exp_format f)
{
	return (unsigned)f < EXP_FORMAT_COUNT ? exp_formats[f].name : "unknown";
}

const char *exp_format_media_type(enum exp_format f)
{
	return (unsigned)f < EXP_FORMAT_COUNT ? exp_formats[f].media_type : "application/octet-stream";
}

/* ---- a capped text buffer ---- */

struct exp_buf {
	char *data;     /* owned, NUL-terminated when len > 0 */
	size_t len;
	size_t cap;
	uniap_code rc;  /* the first failure; later appends are no-ops */
};

static void exp_buf_printf(struct exp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void exp_buf_printf(struct exp_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->rc != UNIAP_OK)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->rc = UNIAP_E_INTERNAL;
		return;
	}
	if (b->len + (size_t)n + 1 > EXP_MAX_BYTES) {
		b->rc = UNIAP_E_LIMIT;
		return;
	}
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		if (cap > EXP_MAX_BYTES)
			cap = EXP_MAX_BYTES;
		p = realloc(b->data, cap);
		if (!p) {
			b->rc = UNIAP_E_NOMEM;
			return;
		}
		b->data = p;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Hands the buffer to *out and *len, or frees it and reports its failure. */
static uniap_code exp_buf_finish(struct exp_buf *b, char **out, size_t *len, struct uniap_err *err)
{
	if (b->rc == UNIAP_OK && !b->data)
		exp_buf_printf(b, "%s", "");
	if (b->rc != UNIAP_OK) {
		uniap_code rc = b->rc;

		free(b->data);
		memset(b, 0, sizeof(*b));
		if (rc == UNIAP_E_LIMIT)
			return err_set(err, rc, "export: output exceeds %zu bytes", EXP_MAX_BYTES);
		return err_set(err, rc, rc == UNIAP_E_NOMEM ? "out of memory" : "export: formatting failed");
	}
	*out = b->data;
	*len = b->len;
	return UNIAP_OK;
}

/* root (taken) printed into *out (free()able); pretty, with a final newline. */
static uniap_code exp_json_finish(cJSON *root, char **out, size_t *len, struct uniap_err *err)
{
	char *text = root ? jenc_print(root, 1) : NULL;
	uniap_code rc = UNIAP_OK;

	cJSON_Delete(root);
	if (!text)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	*len = strlen(text);
	if (*len >= EXP_MAX_BYTES) {
		rc = err_set(err, UNIAP_E_LIMIT, "export: output exceeds %zu bytes", EXP_MAX_BYTES);
	} else if (!(*out = malloc(*len + 1))) {
		rc = err_set(err, UNIAP_E_NOMEM, "out of memory");
	} else {
		memcpy(*out, text, *len + 1);
	}
	cJSON_free(text);
	return rc;
}

/* The shortest of %.15g..%.17g that reads back as v (what jenc_number prints). */
static void exp_fmt_double(char *buf, size_t n, double v)
{
	int prec;

	for (prec = 15; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* ---- shared checks ---- */

static const struct strategy *exp_strategy(const struct cost_candidate *cand, const size_t *strategy,
                                           size_t u)
{
	return &cand->strategies.items[strategy[u]];
}

static int exp_batch_width(const struct strategy *s)
{
	return s->degree[STRATEGY_DP] * s->degree[STRATEGY_FSDP];
}

/* 1 when tp groups are consecutive ranks (or there is nothing to place). */
static int exp_tp_consecutive(const struct strategy *s)
{
	return s->degree[STRATEGY_TP] == 1 || exp_batch_width(s) == 1 || s->stride[STRATEGY_TP] == 1;
}

/* counts[i] = transformer layers (1 .. n-2) on stage i; each must be >= 1. */
static uniap_code exp_stage_counts(const char *target, const struct cost_candidate *cand, const int *stage,
                                   size_t *counts, struct uniap_err *err)
{
	size_t u;
	int i;

	for (i = 0; i < cost_stages(cand); i++)
		counts[i] = 0;
	for (u = 1; u + 1 < cand->n_layers; u++)
		counts[stage[u]]++;
	for (i = 0; i < cost_stages(cand); i++)
		if (counts[i] == 0)
			return err_set(err, UNIAP_E_INVALID,
			               "stages[%d]: %s needs at least one transformer layer on every stage, "
			               "got none", i, target);
	return UNIAP_OK;
}

/* Per-device micro-batch: microbatch_size / (dp * fsdp / cp), which must divide (the cp ranks of a
 * dp group share their samples, each holding part of every sequence). */
static uniap_code exp_per_device_microbatch(const char *target, const struct cost_candidate *cand,
                                            const struct strategy *s, long *out, struct uniap_err *err)
{
	long w = strategy_batch_width(s);

	if (cand->microbatch_size % w != 0)
		return err_set(err, UNIAP_E_INVALID,
		               "microbatch_size: %s gives every data-parallel rank the same micro-batch; "
		               "%ld samples do not split over %ld ranks (%s)",
		               target, cand->microbatch_size, w, s->name);
	*out = cand->microbatch_size / w;
	return UNIAP_OK;
}

/* ---- text ---- */

/* The layers of one stage as "name xN, name xM" runs of equal strategies. */
static void exp_text_runs(struct exp_buf *b, const struct cost_candidate *cand, const int *stage,
                          const size_t *strategy, int s)
{
	size_t u, n = cand->n_layers, run_start = n;
	int first = 1;

	for (u = 0; u <= n; u++) {
		int same = u < n && stage[u] == s && run_start < n && strategy[u] == strategy[run_start];

		if (same)
			continue;
		if (run_start < n) {
			exp_buf_printf(b, "%s%s x%zu", first ? "" : ", ",
			               exp_strategy(cand, strategy, run_start)->name, u - run_start);
			first = 0;
		}
		run_start = u < n && stage[u] == s ? u : n;
	}
}

uniap_code exp_plan_text(const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                         const struct plan_eval *ev, const char *prefix, const char *suffix,
                         char **out, size_t *len, struct uniap_err *err)
{
	struct exp_buf b = { 0 };
	int s;

	exp_buf_printf(&b, "plan: %spp %d microbatches %ld microbatch_size %ld schedule %s",
	               prefix ? prefix : "", cand->pp, cand->microbatches, cand->microbatch_size,
	               cost_schedule_name(cand->schedule));
	if (cost_virtual(cand) > 1)
		exp_buf_printf(&b, " virtual_stages %d", cost_virtual(cand));
	exp_buf_printf(&b, " tpi %.6g s throughput %.6g samples/s%s\n", ev->tpi_s,
	               (double)cost_batch(cand) / ev->tpi_s, suffix ? suffix : "");
	for (s = 0; s < cost_stages(cand); s++) {
		/* interleaved: memory is the device's, its v stages together */
		double mem = cost_virtual(cand) > 1 ? ev->device_memory_bytes[s % cand->pp] : ev->stage_memory_bytes[s];

		exp_buf_printf(&b, "  stage %d: ", s);
		if (cost_virtual(cand) > 1)
			exp_buf_printf(&b, "(device %d) ", s % cand->pp);
		exp_text_runs(&b, cand, stage, strategy, s);
		exp_buf_printf(&b, "; time %.6g s, memory %.3f GiB of %.3f GiB%s\n", ev->stage_time_s[s],
		               mem / 1073741824.0, cand->memory_limit_bytes / 1073741824.0,
		               mem > cand->memory_limit_bytes ? " (over the limit)" : "");
	}
	return exp_buf_finish(&b, out, len, err);
}

/* ---- galvatron ---- */

#define GALV "galvatron"

/* "a,b,c" of f(layer u) over the transformer layers into b. */
static void exp_galv_list(struct exp_buf *b, const struct cost_candidate *cand, const size_t *strategy,
                          int (*f)(const struct strategy *))
{
	size_t u;

	for (u = 1; u + 1 < cand->n_layers; u++)
		exp_buf_printf(b, "%s%d", u > 1 ? "," : "", f(exp_strategy(cand, strategy, u)));
}

static int exp_galv_tp(const struct strategy *s) { return s->degree[STRATEGY_TP]; }
static int exp_galv_consec(const struct strategy *s) { return exp_tp_consecutive(s); }
static int exp_galv_sdp(const struct strategy *s) { return s->degree[STRATEGY_FSDP] > 1; }
static int exp_galv_ckpt(const struct strategy *s) { return s->recompute != 0; }
static int exp_galv_zero(const struct strategy *s) { (void)s; return 0; }

/* Galvatron's default_dp_type: "zero2" when the replicated layers use ZeRO-2
 * (target_check_export held that they all do, or none), else "ddp". */
static const char *exp_galv_dp_type(const struct cost_candidate *cand, const size_t *strategy)
{
	size_t u;

	for (u = 0; u < cand->n_layers; u++)
		if (exp_strategy(cand, strategy, u)->zero == 2)
			return "zero2";
	return "ddp";
}

static int exp_add_string(cJSON *o, const char *key, struct exp_buf *b)
{
	return b->rc == UNIAP_OK && cJSON_AddStringToObject(o, key, b->data ? b->data : "") != NULL;
}

static uniap_code exp_galvatron(const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                                char **out, size_t *len, struct uniap_err *err)
{
	static const struct {
		const char *key;
		int (*f)(const struct strategy *);
	} lists[] = {
		{ "tp_sizes_enc", exp_galv_tp },
		{ "tp_consecutive_flags", exp_galv_consec },
		{ "dp_types_enc", exp_galv_sdp },
		{ "use_sp", exp_galv_zero },
		{ "checkpoint", exp_galv_ckpt },
	};
	const struct strategy *e;
	size_t *counts = NULL, i;
	struct exp_buf b = { 0 };
	cJSON *root = NULL;
	uniap_code rc;
	int ok, s;

	if ((rc = target_check_export(TARGET_GALVATRON, cand, stage, strategy, err)) != UNIAP_OK)
		return rc;
	counts = calloc((size_t)cand->pp, sizeof(*counts));
	if (!counts)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	if ((rc = exp_stage_counts(GALV, cand, stage, counts, err)) != UNIAP_OK)
		goto out;
	e = exp_strategy(cand, strategy, 0);
	root = cJSON_CreateObject();
	ok = root && cJSON_AddNumberToObject(root, "pp_deg", cand->pp);
	for (i = 0; ok && i < sizeof(lists) / sizeof(lists[0]); i++) {
		b.len = 0;
		if (b.data)
			b.data[0] = '\0';
		exp_galv_list(&b, cand, strategy, lists[i].f);
		ok = exp_add_string(root, lists[i].key, &b);
	}
	ok = ok && cJSON_AddNumberToObject(root, "global_bsz",
	                                   (double)cost_batch(cand)) &&
	     cJSON_AddNumberToObject(root, "chunks", (double)cand->microbatches);
	b.len = 0;
	if (b.data)
		b.data[0] = '\0';
	for (s = 0; s < cand->pp; s++)
		exp_buf_printf(&b, "%s%zu", s ? "," : "", counts[s]);
	ok = ok && exp_add_string(root, "pp_division", &b) &&
	     cJSON_AddStringToObject(root, "pipeline_type",
	                             cand->schedule == COST_1F1B ? "pipedream_flush" : "gpipe") &&
	     cJSON_AddStringToObject(root, "default_dp_type", exp_galv_dp_type(cand, strategy)) &&
	     cJSON_AddNumberToObject(root, "vtp", e->degree[STRATEGY_TP]) &&
	     cJSON_AddNumberToObject(root, "vsp", 0) &&
	     cJSON_AddNumberToObject(root, "embed_sdp", e->degree[STRATEGY_FSDP] > 1);
	if (!ok) {
		rc = err_set(err, b.rc == UNIAP_E_LIMIT ? UNIAP_E_LIMIT : UNIAP_E_NOMEM,
		             b.rc == UNIAP_E_LIMIT ? "export: output too large" : "out of memory");
		goto out;
	}
	rc = exp_json_finish(root, out, len, err);
	root = NULL;
out:
	cJSON_Delete(root);
	free(b.data);
	free(counts);
	return rc;
}

/* ---- megatron ---- */

#define MEGATRON "megatron-lm"

/* Megatron-LM builds the model from its shape: the model must give one, of these layers. */
static uniap_code exp_megatron_shape(const struct model_profile *model, const struct cost_candidate *cand,
                                     struct uniap_err *err)
{
	if (!model || !model->shape.known)
		return err_set(err, UNIAP_E_INVALID,
		               "model.shape: megatron-lm builds the model from its shape (layers, hidden, heads, "
		               "ffn_hidden, seq_len, vocab, ...), which this model document does not give; the "
		               "catalog's BERT, GPT and Llama and documents with an architecture carry it");
	if ((size_t)model->shape.layers + 2 != cand->n_layers)
		return err_set(err, UNIAP_E_INVALID,
		               "model.shape.layers: %ld transformer layers, but the graph has %zu between the "
		               "embedding and the head", model->shape.layers, cand->n_layers - 2);
	return UNIAP_OK;
}

/* The model flags of Megatron-LM (tests/data/runtimes/megatron-lm-*.flags) from model->shape. */
static void exp_megatron_model(struct exp_buf *b, const struct model_profile *model)
{
	const struct model_shape *sh = &model->shape;

	exp_buf_printf(b, "--hidden-size %ld\n--num-attention-heads %ld\n--ffn-hidden-size %ld\n"
	               "--seq-length %ld\n--max-position-embeddings %ld\n", sh->hidden, sh->heads, sh->ffn_hidden,
	               sh->seq_len, sh->seq_len);
	if (sh->kv_heads < sh->heads)
		exp_buf_printf(b, "--group-query-attention\n--num-query-groups %ld\n", sh->kv_heads);
	if (sh->mlp == MODEL_SHAPE_SWIGLU)
		exp_buf_printf(b, "--swiglu\n");
	exp_buf_printf(b, "--normalization %s\n--position-embedding-type %s\n",
	               sh->norm == MODEL_SHAPE_RMSNORM ? "RMSNorm" : "LayerNorm",
	               sh->positions == MODEL_SHAPE_ROTARY ? "rope" : "learned_absolute");
	if (!sh->biases)
		exp_buf_printf(b, "--disable-bias-linear\n");
	if (!sh->tied_embeddings)
		exp_buf_printf(b, "--untie-embeddings-and-output-weights\n");
	/* fused kernels never store the attention scores; the unfused path does, as priced */
	exp_buf_printf(b, "--attention-backend %s\n", sh->flash_attention ? "flash" : "unfused");
	if (model->precision == MODEL_MIXED)
		exp_buf_printf(b, "--fp16\n");
	if (sh->head_dim > 0)
		exp_buf_printf(b, "--kv-channels %ld\n", sh->head_dim);
	if (sh->kv_lora_rank > 0) {
		exp_buf_printf(b, "--multi-latent-attention\n");
		if (sh->q_lora_rank > 0)
			exp_buf_printf(b, "--q-lora-rank %ld\n", sh->q_lora_rank);
		exp_buf_printf(b, "--kv-lora-rank %ld\n--qk-head-dim %ld\n--qk-pos-emb-head-dim %ld\n--v-head-dim %ld\n",
		               sh->kv_lora_rank, sh->qk_nope_head_dim, sh->qk_rope_head_dim, sh->v_head_dim);
	}
	if (sh->window > 0) {
		long k;

		/* (left, right) keys a query sees; the pattern's 1 is a windowed layer */
		exp_buf_printf(b, "--window-size %ld,0\n--window-attn-skip-freq [", sh->window);
		for (k = 0; k < sh->layers; k++)
			exp_buf_printf(b, "%s%d", k ? "," : "", k % (sh->window_every > 0 ? sh->window_every : 1) == 0);
		exp_buf_printf(b, "]\n");
	}
	if (sh->experts > 0) {
		long every = sh->moe_every > 0 ? sh->moe_every : 1, k;

		/* the alltoall dispatcher and grouped GEMM that the MoE layer is priced with */
		/* ... with the fused router and permutation whose launches the catalog counts (docs/catalog.md) */
		exp_buf_printf(b, "--num-experts %ld\n--moe-router-topk %ld\n--moe-ffn-hidden-size %ld\n"
		               "--moe-grouped-gemm\n--moe-token-dispatcher-type alltoall\n--moe-router-fusion\n"
		               "--moe-permute-fusion\n", sh->experts, sh->top_k, sh->moe_ffn_hidden);
		if (sh->shared_ffn_hidden > 0)
			exp_buf_printf(b, "--moe-shared-expert-intermediate-size %ld\n", sh->shared_ffn_hidden);
		if (sh->router_sigmoid)
			exp_buf_printf(b, "--moe-router-score-function sigmoid\n");
		/* a capacity factor is priced padded to capacity, with static shapes and no host wait */
		if (sh->capacity_factor > 0)
			exp_buf_printf(b, "--moe-expert-capacity-factor %g\n--moe-pad-expert-input-to-capacity\n",
			               sh->capacity_factor);
		if (every > 1 || sh->moe_first_dense > 0) {
			/* the pattern's 1 is a MoE layer */
			exp_buf_printf(b, "--moe-layer-freq [");
			for (k = 0; k < sh->layers; k++)
				exp_buf_printf(b, "%s%d", k ? "," : "",
				               k >= sh->moe_first_dense && (k - sh->moe_first_dense) % every == 0);
			exp_buf_printf(b, "]\n");
		}
	}
}

static uniap_code exp_megatron(const struct model_profile *model, const struct cost_candidate *cand,
                               const int *stage, const size_t *strategy, const struct plan_eval *ev, char **out,
                               size_t *len, struct uniap_err *err)
{
	const struct strategy *s = exp_strategy(cand, strategy, 0);
	size_t *counts = NULL, n_blocks = cand->n_layers - 2;
	int tp = s->degree[STRATEGY_TP], dp = s->degree[STRATEGY_DP], i, even = 1;
	struct exp_buf b = { 0 };
	char tpi[32];
	long mbs = 0;
	uniap_code rc;

	if ((rc = target_check_export(TARGET_MEGATRON, cand, stage, strategy, err)) != UNIAP_OK ||
	    (rc = exp_per_device_microbatch(MEGATRON, cand, s, &mbs, err)) != UNIAP_OK ||
	    (rc = exp_megatron_shape(model, cand, err)) != UNIAP_OK)
		return rc;
	if (model->shape.experts > 0 && tp > 1 && !s->sp)
		return err_set(err, UNIAP_E_INVALID,
		               "layers[0] (%s): megatron-lm runs a MoE model with tensor parallelism only with "
		               "sequence parallelism (--sequence-parallel), got %s", cand->layer_names[0], s->name);
	if (model_shape_heads_gcd(model) % tp != 0)
		return err_set(err, UNIAP_E_INVALID,
		               "layers[0] (%s): megatron-lm needs --tensor-model-parallel-size %d to divide "
		               "--num-attention-heads %ld and --num-query-groups %ld", cand->layer_names[0], tp,
		               model->shape.heads, model->shape.kv_heads > 0 ? model->shape.kv_heads : model->shape.heads);
	if (strategy_ep(s) > 1 && model->shape.experts % strategy_ep(s) != 0)
		return err_set(err, UNIAP_E_INVALID,
		               "layers[0] (%s): --expert-model-parallel-size %d must divide --num-experts %ld",
		               cand->layer_names[0], strategy_ep(s), model->shape.experts);
	counts = calloc((size_t)cost_stages(cand), sizeof(*counts));
	if (!counts)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	if ((rc = exp_stage_counts(MEGATRON, cand, stage, counts, err)) != UNIAP_OK)
		goto out;
	/* uneven: only the first and last stage differ (target_check_export held the middle);
	 * interleaved: every model chunk holds counts[0], or with the embedding and the head
	 * counted as layers counts[0] + 1 (target_megatron_chunks; target_check_export held them) */
	for (i = 1; i < cost_stages(cand); i++)
		even = even && counts[i] == counts[0];
	exp_fmt_double(tpi, sizeof(tpi), ev->tpi_s);
	exp_buf_printf(&b, "# Megatron-LM arguments of a uniap plan, one per line (drop the comments:\n"
	               "#   grep -v '^#' FILE | xargs python %s ...)\n"
	               "# tpi_s %s (predicted seconds per iteration), %d devices = pp %d x tp %d x dp %d\n"
	               "# layers: %s on stage 0, %zu transformer layers, %s on stage %d\n",
	               model->shape.encoder ? "pretrain_bert.py" : "pretrain_gpt.py", tpi, cand->pp * tp * dp, cand->pp, tp,
	               dp, cand->layer_names[0], n_blocks, cand->layer_names[cand->n_layers - 1], cost_stages(cand) - 1);
	if (cost_virtual(cand) > 1 && target_megatron_chunks(counts, cost_stages(cand)) == 2)
		exp_buf_printf(&b, "# interleaved 1F1B: %d model chunks of %zu layers per device, the embedding "
		               "and the head counted as layers; stage i of the plan is chunk i / %d of pipeline rank "
		               "i mod %d\n", cost_virtual(cand), counts[0] + 1, cand->pp, cand->pp);
	else if (cost_virtual(cand) > 1)
		exp_buf_printf(&b, "# interleaved 1F1B: %d model chunks of %zu transformer layers per device; "
		               "stage i of the plan is chunk i / %d of pipeline rank i mod %d\n", cost_virtual(cand),
		               counts[0], cand->pp, cand->pp);
	exp_buf_printf(&b, "# vocabulary %ld tokens: the tokenizer's (Megatron-LM pads it to a multiple of "
	               "128 x tp)\n", model->shape.vocab);
	if (model->precision == MODEL_MIXED)
		exp_buf_printf(&b, "# mixed precision as --fp16; --bf16 is the same plan on devices that have it\n");
	if (cand->schedule == COST_GPIPE && cand->pp > 1)
		exp_buf_printf(&b, "# planned with gpipe; megatron-lm runs 1f1b, which keeps no more "
		               "micro-batches in flight\n");
	if (!ev->fits)
		exp_buf_printf(&b, "# warning: the plan exceeds the memory limit (%s)\n", ev->reason);
	exp_buf_printf(&b, "--tensor-model-parallel-size %d\n--pipeline-model-parallel-size %d\n"
	               "--num-layers %zu\n", tp, cand->pp, n_blocks);
	if (cost_virtual(cand) > 1 && target_megatron_chunks(counts, cost_stages(cand)) == 2)
		exp_buf_printf(&b, "--num-layers-per-virtual-pipeline-stage %zu\n"
		               "--account-for-embedding-in-pipeline-split\n--account-for-loss-in-pipeline-split\n",
		               counts[0] + 1);
	else if (cost_virtual(cand) > 1)
		exp_buf_printf(&b, "--num-layers-per-virtual-pipeline-stage %zu\n", counts[0]);
	else if (!even)
		exp_buf_printf(&b, "--decoder-first-pipeline-num-layers %zu\n"
		               "--decoder-last-pipeline-num-layers %zu\n", counts[0], counts[cand->pp - 1]);
	exp_megatron_model(&b, model);
	exp_buf_printf(&b, "--micro-batch-size %ld\n--global-batch-size %ld\n", mbs,
	               cost_batch(cand));
	if (s->sp)
		exp_buf_printf(&b, "--sequence-parallel\n");
	/* context parallelism as ring attention over the inner cp of the dp group: Megatron-LM's
	 * order tp-cp-ep-dp-pp puts cp right outside tp, inside dp */
	if (strategy_cp(s) > 1)
		exp_buf_printf(&b, "--context-parallel-size %d\n--cp-comm-type %s\n", strategy_cp(s),
		               cand->cp_a2a ? "a2a" : "p2p");
	/* experts over the inner ep ranks of the dp group (Megatron-Core carves its expert groups out of
	 * the data-parallel ones), split like the dense layers over tp */
	if (model->shape.experts > 0)
		exp_buf_printf(&b, "--expert-model-parallel-size %d\n--expert-tensor-parallel-size %d\n", strategy_ep(s),
		               strategy_etp(s));
	if (s->zero == 1)
		exp_buf_printf(&b, "--use-distributed-optimizer\n");
	/* FP8 training: Transformer Engine's hybrid recipe, E4M3 forward and E5M2 gradients (§FP8) */
	if (cand->fp8)
		exp_buf_printf(&b, "--fp8-format hybrid\n");
	/* the reduction in the last micro-batch's backward, as the megatron-lm runtime is priced
	 * (core/runtime.c); without it Megatron-LM reduces after the whole backward */
	if (dp > 1)
		exp_buf_printf(&b, "--overlap-grad-reduce\n");
	if (s->recompute)
		exp_buf_printf(&b, "--recompute-granularity full\n--recompute-method uniform\n"
		               "--recompute-num-layers 1\n");
	else if (s->selective && model->shape.kv_lora_rank > 0)
		exp_buf_printf(&b, "--recompute-granularity selective\n--recompute-modules core_attn mla_up_proj\n");
	else if (s->selective)
		exp_buf_printf(&b, "--recompute-granularity selective\n");
	rc = exp_buf_finish(&b, out, len, err);
out:
	if (rc != UNIAP_OK)
		free(b.data);
	free(counts);
	return rc;
}

/* ---- deepspeed ---- */

#define DEEPSPEED "deepspeed"

static uniap_code exp_deepspeed(const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                                char **out, size_t *len, struct uniap_err *err)
{
	const struct strategy *s = exp_strategy(cand, strategy, 0);
	cJSON *root = NULL, *o;
	long mbs = 0;
	uniap_code rc;
	int ok;

	if ((rc = target_check_export(TARGET_DEEPSPEED, cand, stage, strategy, err)) != UNIAP_OK ||
	    (rc = exp_per_device_microbatch(DEEPSPEED, cand, s, &mbs, err)) != UNIAP_OK)
		return rc;
	root = cJSON_CreateObject();
	ok = root &&
	     cJSON_AddNumberToObject(root, "train_batch_size",
	                             (double)cost_batch(cand)) &&
	     cJSON_AddNumberToObject(root, "train_micro_batch_size_per_gpu", (double)mbs) &&
	     cJSON_AddNumberToObject(root, "gradient_accumulation_steps", (double)cand->microbatches);
	o = ok ? cJSON_AddObjectToObject(root, "zero_optimization") : NULL;
	ok = o && cJSON_AddNumberToObject(o, "stage", s->degree[STRATEGY_FSDP] > 1 ? 3 : s->zero);
	if (ok && s->degree[STRATEGY_TP] > 1) {
		o = cJSON_AddObjectToObject(root, "tensor_parallel");
		ok = o && cJSON_AddNumberToObject(o, "autotp_size", s->degree[STRATEGY_TP]);
	}
	if (ok && s->recompute) {
		o = cJSON_AddObjectToObject(root, "activation_checkpointing");
		ok = o && cJSON_AddBoolToObject(o, "partition_activations", 0) &&
		     cJSON_AddBoolToObject(o, "cpu_checkpointing", 0) &&
		     cJSON_AddBoolToObject(o, "contiguous_memory_optimization", 0);
	}
	if (ok && cand->pp > 1) {
		/* the stage count and split are PipelineModule's constructor arguments
		 * (num_stages, partition_method="uniform": target_check_export held the
		 * split), not config keys; the pipeline object's key DeepSpeed reads: */
		o = cJSON_AddObjectToObject(root, "pipeline");
		ok = o && cJSON_AddNumberToObject(o, "activation_checkpoint_interval", s->recompute ? 1 : 0);
	}
	if (!ok) {
		cJSON_Delete(root);
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	}
	return exp_json_finish(root, out, len, err);
}

/* ---- entry points ---- */

/*
 * A refused export names the way out: the other runtimes whose rules the plan
 * meets (it exports there as it is), and the target that plans for this
 * runtime (target.h: its optimum always exports).
 */
static uniap_code exp_refused(uniap_code rc, enum target_kind t, const struct cost_candidate *cand,
                              const int *stage, const size_t *strategy, struct uniap_err *err)
{
	static const enum target_kind others[] = { TARGET_GALVATRON, TARGET_MEGATRON, TARGET_DEEPSPEED };
	size_t i, n;
	int listed = 0;

	/* a missing model field is no matter of planning: no advice */
	if (rc != UNIAP_E_INVALID || !err || strncmp(err->msg, "model.", 6) == 0)
		return rc;
	for (i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		struct uniap_err e2;

		if (others[i] == t || target_check_export(others[i], cand, stage, strategy, &e2) != UNIAP_OK)
			continue;
		n = strlen(err->msg);
		snprintf(err->msg + n, sizeof(err->msg) - n, "%s%s", listed ? ", " : "; this plan exports as ",
		         target_name(others[i]));
		listed = 1;
	}
	n = strlen(err->msg);
	snprintf(err->msg + n, sizeof(err->msg) - n,
	         "; for a plan that exports, plan with --target %s (uniap plan --target %s)", target_name(t),
	         target_name(t));
	return rc;
}

/* ---- chrome-trace: one iteration as Chrome's trace event format ---- */

/* s as a JSON string (quotes included). */
static void exp_buf_json_str(struct exp_buf *b, const char *s)
{
	exp_buf_printf(b, "\"");
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			exp_buf_printf(b, "\\%c", ch);
		else if (ch < 0x20)
			exp_buf_printf(b, "\\u%04x", ch);
		else
			exp_buf_printf(b, "%c", ch);
	}
	exp_buf_printf(b, "\"");
}

/* A stage's layers: its first and last (by index) and how many it holds, how many recompute. */
struct exp_stage_span {
	size_t first, last, count, recomputed;
};

/* Tracks: rank d's compute is tid 3d, its link's activations 3d + 1, gradients 3d + 2. */
static void exp_trace_event(struct exp_buf *b, const char *name, const char *cat, int tid, double start_s,
                            double dur_s, int *first)
{
	char ts[40], dur[40];

	exp_fmt_double(ts, sizeof(ts), start_s * 1e6);
	exp_fmt_double(dur, sizeof(dur), dur_s * 1e6);
	exp_buf_printf(b, "%s\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%s,\"dur\":%s,\"cat\":\"%s\",\"name\":", *first ? "" : ",",
	               tid, ts, dur, cat);
	exp_buf_json_str(b, name);
	*first = 0;
}

static void exp_trace_meta(struct exp_buf *b, const char *what, int tid, const char *name, int *first)
{
	exp_buf_printf(b, "%s\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":", *first ? "" : ",", tid,
	               what);
	exp_buf_json_str(b, name);
	exp_buf_printf(b, "}}");
	exp_buf_printf(b, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
	               tid, tid);
	*first = 0;
}

/*
 * The trace of one iteration (schedsim.h's list schedule on the plan's own stage
 * and transfer times): every forward and backward unit on its rank's track,
 * named by micro-batch, stage and layer range ("recompute+backward" where the
 * stage recomputes), the transfers on their link's tracks, one per direction,
 * and the idle time of each rank as "bubble" events.  otherData carries the
 * plan's TPI beside the drawn length (equal under GPipe; docs/export.md).
 */
static uniap_code exp_chrome_trace(const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                                   const struct plan_eval *ev, char **out, size_t *len, struct uniap_err *err)
{
	const int S = ev->pp, P = ev->devices > 0 ? ev->devices : 1;
	struct sched_input in = { P, S, cand->microbatches, cand->schedule, ev->stage_time_s, ev->comm_time_s };
	struct exp_stage_span *span = calloc((size_t)S, sizeof(*span));
	double *last_end = calloc((size_t)P, sizeof(*last_end));
	struct exp_buf b = { 0 };
	struct sched sc;
	char name[512], num[40];
	int first = 1, d;
	size_t u, i;
	uniap_code rc;

	if (!span || !last_end) {
		free(span);
		free(last_end);
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	}
	if ((rc = sched_simulate(&in, &sc, err)) != UNIAP_OK) {
		free(span);
		free(last_end);
		return rc;
	}
	for (u = 0; u < cand->n_layers; u++) {
		struct exp_stage_span *sp = &span[stage[u]];
		const struct strategy *st = exp_strategy(cand, strategy, u);

		if (sp->count == 0 || u < sp->first)
			sp->first = u;
		if (sp->count == 0 || u > sp->last)
			sp->last = u;
		sp->count++;
		sp->recomputed += st->recompute || st->selective;
	}
	exp_buf_printf(&b, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"format\":\"uniap plan, one iteration\",");
	exp_fmt_double(num, sizeof(num), ev->tpi_s);
	exp_buf_printf(&b, "\"tpi_s\":%s,", num);
	exp_fmt_double(num, sizeof(num), sc.length_s);
	exp_buf_printf(&b, "\"drawn_s\":%s,\"pp\":%d,\"virtual_stages\":%d,\"microbatches\":%ld,\"schedule\":\"%s\","
	               "\"forward_share\":\"1/3\"},\n\"traceEvents\":[", num, P, S / P, cand->microbatches,
	               cost_schedule_name(cand->schedule));
	snprintf(name, sizeof(name), "uniap plan: pp %d, %ld micro-batches, %s", P, cand->microbatches,
	         cost_schedule_name(cand->schedule));
	exp_buf_printf(&b, "\n{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":");
	exp_buf_json_str(&b, name);
	exp_buf_printf(&b, "}}");
	first = 0;
	for (d = 0; d < P; d++) {
		snprintf(name, sizeof(name), "rank %d: compute", d);
		exp_trace_meta(&b, "thread_name", 3 * d, name, &first);
		if (S > 1 && (d < P - 1 || S > P)) {
			snprintf(name, sizeof(name), "link %d -> %d: activations", d, (d + 1) % P);
			exp_trace_meta(&b, "thread_name", 3 * d + 1, name, &first);
			snprintf(name, sizeof(name), "link %d <- %d: gradients", d, (d + 1) % P);
			exp_trace_meta(&b, "thread_name", 3 * d + 2, name, &first);
		}
	}
	for (i = 0; i < sc.n_blocks && b.rc == UNIAP_OK; i++) {
		const struct sched_block *bl = &sc.blocks[i];
		const struct exp_stage_span *sp = &span[bl->stage];
		const char *cat;
		int tid;

		switch (bl->kind) {
		case SCHED_FORWARD:
		case SCHED_BACKWARD:
			if (bl->start_s > last_end[bl->rank]) {
				exp_trace_event(&b, "bubble", "bubble", 3 * bl->rank, last_end[bl->rank],
				                bl->start_s - last_end[bl->rank], &first);
				exp_buf_printf(&b, "}");
			}
			last_end[bl->rank] = bl->start_s + bl->dur_s;
			cat = bl->kind == SCHED_FORWARD ? "forward" : sp->recomputed ? "recompute+backward" : "backward";
			snprintf(name, sizeof(name), "%s mb %ld, stage %d: %s..%s", cat, bl->micro, bl->stage,
			         cand->layer_names[sp->first], cand->layer_names[sp->last]);
			tid = 3 * bl->rank;
			exp_trace_event(&b, name, cat, tid, bl->start_s, bl->dur_s, &first);
			exp_buf_printf(&b, ",\"args\":{\"microbatch\":%ld,\"stage\":%d,\"layers\":%zu,\"recomputed_layers\":%zu,"
			               "\"first_layer\":", bl->micro, bl->stage, sp->count, sp->recomputed);
			exp_buf_json_str(&b, cand->layer_names[sp->first]);
			exp_buf_printf(&b, ",\"last_layer\":");
			exp_buf_json_str(&b, cand->layer_names[sp->last]);
			exp_buf_printf(&b, "}}");
			break;
		case SCHED_TRANSFER_FORWARD:
		case SCHED_TRANSFER_BACKWARD:
			cat = bl->kind == SCHED_TRANSFER_FORWARD ? "activations" : "gradients";
			snprintf(name, sizeof(name), "%s mb %ld, stage %d %s %d", cat, bl->micro, bl->stage,
			         bl->kind == SCHED_TRANSFER_FORWARD ? "->" : "<-", bl->stage + 1);
			tid = 3 * bl->rank + (bl->kind == SCHED_TRANSFER_FORWARD ? 1 : 2);
			exp_trace_event(&b, name, cat, tid, bl->start_s, bl->dur_s, &first);
			exp_buf_printf(&b, ",\"args\":{\"microbatch\":%ld,\"boundary\":%d}}", bl->micro, bl->stage);
			break;
		}
	}
	for (d = 0; d < P; d++)
		if (sc.length_s > last_end[d]) {
			exp_trace_event(&b, "bubble", "bubble", 3 * d, last_end[d], sc.length_s - last_end[d], &first);
			exp_buf_printf(&b, "}");
		}
	exp_buf_printf(&b, "\n]}\n");
	sched_release(&sc);
	free(span);
	free(last_end);
	return exp_buf_finish(&b, out, len, err);
}

uniap_code exp_plan(enum exp_format f, const struct model_profile *model, const struct cost_candidate *cand,
                    const int *stage, const size_t *strategy, const struct plan_eval *ev, char **out,
                    size_t *len, struct uniap_err *err)
{
	*out = NULL;
	*len = 0;
	if (!ev->valid)
		return err_set(err, UNIAP_E_INVALID, "plan: not a valid placement (%s)", ev->reason);
	if (ev->pp != cost_stages(cand) || cand->n_layers == 0)
		return err_set(err, UNIAP_E_INVALID, "plan: the evaluation does not belong to the candidate");
	switch (f) {
	case EXP_JSON:
		return exp_json_finish(jenc_plan(cand, stage, strategy, ev), out, len, err);
	case EXP_TEXT:
		return exp_plan_text(cand, stage, strategy, ev, NULL, NULL, out, len, err);
	case EXP_GALVATRON:
		return exp_refused(exp_galvatron(cand, stage, strategy, out, len, err), TARGET_GALVATRON, cand,
		                   stage, strategy, err);
	case EXP_MEGATRON:
		return exp_refused(exp_megatron(model, cand, stage, strategy, ev, out, len, err), TARGET_MEGATRON, cand,
		                   stage, strategy, err);
	case EXP_DEEPSPEED:
		return exp_refused(exp_deepspeed(cand, stage, strategy, out, len, err), TARGET_DEEPSPEED, cand,
		                   stage, strategy, err);
	case EXP_CHROME_TRACE:
		return exp_chrome_trace(cand, stage, strategy, ev, out, len, err);
	}
	return err_set(err, UNIAP_E_ARG, "format: unknown export format %d", (int)f);
}

uniap_code exp_plan_doc(enum exp_format f, const struct cluster_profile *cluster,
                        const struct model_profile *model, const struct plan_doc *p, char **out,
                        size_t *len, struct uniap_err *err)
{
	struct plan_applied a;
	uniap_code rc = plan_doc_apply(cluster, model, 0, p, &a, err);

	*out = NULL;
	*len = 0;
	if (rc == UNIAP_OK)
		rc = exp_plan(f, model, &a.cand, a.stage, a.strategy, &a.eval, out, len, err);
	plan_applied_release(&a);
	return rc;
}
