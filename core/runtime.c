/*
 * runtime.c - the runtimes' rows (see runtime.h; docs/cost-model.md,
 * "Runtime profile", states each term with its source).
 */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

/*
 * Host time per kernel: PyTorch eager spends about 5-25 us of CPU per
 * operator before its kernel starts (Python, the ATen dispatcher, autograd's
 * node, backend selection, cudaLaunchKernel; "From PyTorch op to kernel
 * launch", jiahuanglin.xyz, and Horace He, "Making Deep Learning Go Brrrr
 * From First Principles", 2022, on the overhead-bound regime): 10 us, the
 * low half, for every PyTorch runtime (none of them captures CUDA graphs by
 * default).
 *
 * Passes over the gradients each iteration: zeroing them (write 4 bytes per
 * fp32 gradient) and the norm of the gradient clipping (read 4): 8 bytes per
 * parameter, in every runtime (Megatron-LM --clip-grad 1.0 by default,
 * DeepSpeed gradient_clipping, PyTorch clip_grad_norm_).
 *
 * Bucket copies: a gradient copied into its reduction bucket and back, read
 * and written each way, 16 bytes of fp32 (PyTorch DDP's default
 * gradient_as_bucket_view=False, DeepSpeed's flattened buffer).
 */
#define RUNTIME_HOST_S 10e-6
#define RUNTIME_GRAD_PASS_BYTES 8
#define RUNTIME_BUCKET_COPY_BYTES 16
struct runtime_row {
	struct cost_runtime rt;
	const char *source;
};

static const struct runtime_row runtime_rows[] = {
	{
		{.name = RUNTIME_DEFAULT, .sync = COST_SYNC_LAST, .host_s_per_kernel = RUNTIME_HOST_S,
		 .eager_attention = 0, .param_pass_bytes = RUNTIME_GRAD_PASS_BYTES, .bucket_copy_bytes = 0},
		"the planner's default: Megatron-LM's (below), the runtime the catalog's fused kernel "
		"counts and memory-bound bytes describe",
	},
	{
		{.name = "megatron-lm", .sync = COST_SYNC_LAST, .host_s_per_kernel = RUNTIME_HOST_S,
		 .eager_attention = 0, .param_pass_bytes = RUNTIME_GRAD_PASS_BYTES, .bucket_copy_bytes = 0},
		"Megatron-LM core_v0.15.3: --overlap-grad-reduce (the export sets it) launches the bucketed "
		"gradient reduction in the last micro-batch's backward (megatron/core/distributed, "
		"no_sync for the others); gradients live in one contiguous buffer (no copy); "
		"FusedScaleMaskSoftmax (megatron/core/fusions/fused_softmax.py)",
	},
	{
		{.name = "pytorch", .sync = COST_SYNC_LAST, .host_s_per_kernel = RUNTIME_HOST_S,
		 .eager_attention = 1, .param_pass_bytes = RUNTIME_GRAD_PASS_BYTES, .bucket_copy_bytes = RUNTIME_BUCKET_COPY_BYTES},
		"PyTorch eager with HuggingFace Transformers models, DDP and FairScale FSDP (the UniAP "
		"paper's runtime, its appendix 'Training detail'): DDP reduces buckets during the last "
		"micro-batch's backward (no_sync for the others; Li et al., VLDB 2020, sections 3.2.3-3.2.4) "
		"and copies each gradient into its bucket and back (gradient_as_bucket_view=False, the "
		"default: 4 + 4 bytes each way); HuggingFace attention runs scale, mask add, softmax (in fp32 "
		"under mixed precision, cast back) and dropout as separate kernels (BertSelfAttention, "
		"T5Attention, LlamaAttention's eager path): eager_attention_bytes_per_sample",
	},
	{
		{.name = "galvatron", .sync = COST_SYNC_LAST, .host_s_per_kernel = RUNTIME_HOST_S,
		 .eager_attention = 1, .param_pass_bytes = RUNTIME_GRAD_PASS_BYTES, .bucket_copy_bytes = RUNTIME_BUCKET_COPY_BYTES},
		"Galvatron 2.4.0: PyTorch DDP and FSDP wrappers per layer over HuggingFace-style models "
		"(galvatron/core/runtime), so the PyTorch row's terms",
	},
	{
		{.name = "deepspeed", .sync = COST_SYNC_AFTER, .host_s_per_kernel = RUNTIME_HOST_S,
		 .eager_attention = 1, .param_pass_bytes = RUNTIME_GRAD_PASS_BYTES, .bucket_copy_bytes = RUNTIME_BUCKET_COPY_BYTES},
		"DeepSpeed 0.19.5: without ZeRO the engine all-reduces the gradients at the accumulation "
		"boundary after backward (engine.allreduce_gradients; zero_optimization.overlap_comm is "
		"false by default), flattening them into a buffer and back (allreduce_bucket); "
		"HuggingFace models in eager PyTorch",
	},
	{
		{.name = "megatron-deepspeed", .sync = COST_SYNC_AFTER, .host_s_per_kernel = RUNTIME_HOST_S,
		 .eager_attention = 0, .param_pass_bytes = RUNTIME_GRAD_PASS_BYTES, .bucket_copy_bytes = RUNTIME_BUCKET_COPY_BYTES},
		"Megatron-DeepSpeed (the UniAP paper's EnvD runs, its section 4): Megatron-LM's model code "
		"with its fused softmax, trained by the DeepSpeed engine, whose gradient all-reduce follows "
		"the backward and flattens the gradients (the DeepSpeed row)",
	},
};

#define N_ROWS (sizeof(runtime_rows) / sizeof(runtime_rows[0]))

const struct cost_runtime *runtime_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < N_ROWS; i++)
		if (strcmp(runtime_rows[i].rt.name, name) == 0)
			return &runtime_rows[i].rt;
	return NULL;
}

const struct cost_runtime *runtime_at(size_t i)
{
	return i < N_ROWS ? &runtime_rows[i].rt : NULL;
}

size_t runtime_count(void)
{
	return N_ROWS;
}

const char *runtime_source(const struct cost_runtime *r)
{
	size_t i;

	for (i = 0; i < N_ROWS; i++)
		if (r == &runtime_rows[i].rt)
			return runtime_rows[i].source;
	return "";
}

void runtime_names(char *buf, size_t n)
{
	size_t i, used = 0;

	if (n == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i < N_ROWS && used < n; i++) {
		int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", runtime_rows[i].rt.name);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}
