/*
 * catalog.c - the built-in clusters and models (core/catalog.h).
 *
 * Clusters are constant tables of datasheet figures; a hierarchy level's bus
 * bandwidth is its link bandwidth times a named efficiency, capped by the
 * level inside it (a ring that crosses nodes also crosses the links inside
 * them); devices carry memory bandwidth, kernel overhead, the large-GEMM
 * efficiency and its roofline knee, levels their NCCL per-step latency and
 * link sharing.  Models are generated from architecture hyper-parameters
 * (struct model_arch; catalog_transformer() also serves model documents)
 * with the formulas of docs/catalog.md:
 *   forward FLOPs of a layer = 2 * matmul weights * tokens + 4 * s^2 * h
 *                              (Megatron-LM, Narayanan et al. 2021, App.)
 *                              [+ 2/3 s^2 h: flash attention's recompute]
 *   activation bytes        = Korthikanti et al. 2022 (eq. 2 with TP),
 *                              generalised to GQA, SwiGLU and flash attention
 *   memory-bound bytes      = elements of norms, softmax, dropout, activation
 *                              functions, residual adds x read+write x size
 *   output and checkpoint   = s * h * elem bytes.
 *
 * Never: JSON, I/O, mutable globals.
 */
#include "catalog.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CATALOG_GIB 1073741824.0
#define CATALOG_GB 1e9
#define CATALOG_TFLOPS 1e12
#define CATALOG_MAX_LEVELS 3
/* TP sizes given explicitly in activation tables: 1, 2, 4, ..., 1024 */
#define CATALOG_TP_ENTRIES 11

/* Named link efficiencies (bus bandwidth / datasheet link bandwidth per direction). */
#define CATALOG_EFF_NVLINK 0.8
#define CATALOG_EFF_PCIE 0.75
#define CATALOG_EFF_QPI 0.4 /* P2P across sockets is staged through host memory */
#define CATALOG_EFF_NET 0.9

/* ------------------------------------------------------------------ clusters */

struct catalog_level_def {
	const char *name;
	int devices;           /* 0: every device of the cluster (present only when nodes > 1) */
	double link_gb_per_s;  /* per device, per direction */
	double efficiency;
	double latency_us;     /* per ring step / message (docs/catalog.md, "Latency") */
	int shared_by;         /* devices of one group of the level below behind one link */
};

/* Figures of one device class (docs/catalog.md, "Devices"). */
struct catalog_device_def {
	const char *name;
	double memory_bytes;
	double reserved_bytes;
	double peak_fp32_tflops;
	double peak_mixed_tflops;
	double compute_efficiency; /* asymptotic large-GEMM fraction of peak at the precision it runs */
	double gemm_half_dim;      /* roofline knee: peak * efficiency / memory bandwidth, in GEMM rows */
	double memory_bandwidth_gb_per_s;
	double kernel_overhead_us;
	double peak_fp8_tflops;    /* dense FP8 tensor peak; 0: no FP8 */
};

struct catalog_cluster_def {
	struct catalog_entry entry;
	const struct catalog_device_def *device;
	int nodes;
	int devices_per_node;
	double overlap_coefficient;
	struct catalog_level_def levels[CATALOG_MAX_LEVELS];
};

/* Framework memory per device: CUDA context (~0.3 GiB with lazy module
 * loading, ~1 GiB without), two NCCL communicators (~0.55-0.7 GiB each) and
 * the cuBLAS workspace: about 2 GiB (docs/catalog.md, "reserved_bytes"). */
#define CATALOG_RESERVED (2 * CATALOG_GIB)

/* Kernel launch overhead: CUDA launch plus PyTorch eager dispatch that the
 * GPU does not hide; HIP on the DCU assumed twice that. */
#define CATALOG_KERNEL_US 5.0
#define CATALOG_KERNEL_US_HIP 10.0

/* Latency per ring step of NCCL's tuning model (src/graph/tuning.cc, ring,
 * Simple protocol): NVLink 3.4 us, PCIe 5.7 us, network 9.6 us; across CPU
 * sockets (host-staged) assumed 2 x PCIe; kernel TCP on 10 Gb/s Ethernet
 * assumed 30 us. */
#define CATALOG_LAT_NVLINK 3.4
#define CATALOG_LAT_PCIE 5.7
#define CATALOG_LAT_QPI 11.4
#define CATALOG_LAT_IB 9.6
#define CATALOG_LAT_TCP 30.0

static const struct catalog_device_def catalog_v100 = {
	"V100-SXM2-32GB", 32 * CATALOG_GIB, CATALOG_RESERVED, 15.7, 125, 0.9, 32, 900, CATALOG_KERNEL_US, 0
};
static const struct catalog_device_def catalog_titanxp = {
	"TITAN Xp", 12 * CATALOG_GIB, CATALOG_RESERVED, 12.1, 12.1, 0.85, 38, 547.6, CATALOG_KERNEL_US, 0
};
static const struct catalog_device_def catalog_a100_pcie = {
	"A100-PCIE-40GB", 40 * CATALOG_GIB, CATALOG_RESERVED, 19.5, 312, 0.75, 150, 1555, CATALOG_KERNEL_US, 0
};
static const struct catalog_device_def catalog_dcu = {
	"Hygon DCU Z100", 32 * CATALOG_GIB, CATALOG_RESERVED, 10.1, 20.2, 0.75, 15, 1024, CATALOG_KERNEL_US_HIP, 0
};
static const struct catalog_device_def catalog_a100_sxm = {
	"A100-SXM4-80GB", 80 * CATALOG_GIB, CATALOG_RESERVED, 19.5, 312, 0.8, 122, 2039, CATALOG_KERNEL_US, 0
};
static const struct catalog_device_def catalog_h100_sxm = {
	"H100-SXM5-80GB", 80 * CATALOG_GIB, CATALOG_RESERVED, 67, 989, 0.75, 221, 3350, CATALOG_KERNEL_US, 1979
};
/* H100's compute with more and faster memory: the same GEMM efficiency, the knee at 4.8 TB/s */
static const struct catalog_device_def catalog_h200_sxm = {
	"H200-SXM5-141GB", 140 * CATALOG_GIB, CATALOG_RESERVED, 67, 989, 0.75, 155, 4800, CATALOG_KERNEL_US, 1979
};
/* Blackwell: HGX/DGX B200 at 1000 W and the GB200 (NVL72) variant at 1200 W; the GEMM efficiency
 * of 0.7 is assumed (docs/catalog.md, "Devices") */
static const struct catalog_device_def catalog_b200 = {
	"B200-180GB", 180 * CATALOG_GIB, CATALOG_RESERVED, 80, 2250, 0.7, 197, 8000, CATALOG_KERNEL_US, 4500
};
static const struct catalog_device_def catalog_gb200 = {
	"GB200-B200-186GB", 186 * CATALOG_GIB, CATALOG_RESERVED, 90, 2500, 0.7, 219, 8000, CATALOG_KERNEL_US, 5000
};

#define CATALOG_SRC_V100 "NVIDIA Tesla V100 datasheet (SXM2: 15.7 TFLOP/s fp32, 125 tensor, 900 GB/s HBM2, " \
	"NVLink 300 GB/s)"
#define CATALOG_SRC_TITANXP "NVIDIA TITAN Xp specifications (12.1 TFLOP/s fp32, 12 GB GDDR5X 547.6 GB/s, " \
	"PCIe 3.0 x16)"
#define CATALOG_SRC_A100 "NVIDIA A100 datasheet (19.5 TFLOP/s fp32, 312 fp16/bf16 tensor dense; 40GB PCIe " \
	"1555 GB/s, 80GB SXM 2039 GB/s; PCIe 4.0 x16 31.5 GB/s; SXM NVLink 600 GB/s)"
#define CATALOG_SRC_H100 "NVIDIA H100 SXM datasheet (67 TFLOP/s fp32, 989 bf16 dense, 3.35 TB/s HBM3, NVLink " \
	"900 GB/s) and DGX H100 user guide (8 x 400 Gb/s ConnectX-7)"
#define CATALOG_SRC_H200 "NVIDIA H200 datasheet (141 GB HBM3e, taken as 140 GiB usable; 4.8 TB/s; H100's " \
	"67 TFLOP/s fp32 and 989 bf16 dense; NVLink 900 GB/s) and DGX H200 (8 x 400 Gb/s ConnectX-7)"
#define CATALOG_SRC_B200 "NVIDIA DGX B200 (8 GPUs, 1,440 GB HBM3e and 64 TB/s in all: 180 GB and 8 TB/s each; " \
	"NVLink 5 1.8 TB/s per GPU; 8 x 400 Gb/s ConnectX-7) and Blackwell's peaks at 1000 W (80 TFLOP/s fp32, " \
	"2250 bf16 dense; G. Lockwood, 'B200', from NVIDIA's Blackwell datasheet)"
#define CATALOG_SRC_GB200 "NVIDIA GB200 NVL72 (72 Blackwell GPUs in one NVLink domain, 1.8 TB/s NVLink per " \
	"GPU, up to 13.4 TB HBM3e: 186 GB and 8 TB/s per GPU) and the GB200 variant's peaks at 1200 W (90 " \
	"TFLOP/s fp32, 2500 bf16 dense; G. Lockwood, 'B200'); 400 Gb/s ConnectX-7 per GPU between racks " \
	"(DGX SuperPOD GB200 reference architecture, assumed for other racks)"
#define CATALOG_SRC_DCU "Hygon DCU Z100 public figures (about 10.1 TFLOP/s, 32 GB HBM2, PCIe host link); " \
	"fp16 = 2 x fp32 and 1024 GB/s (four HBM2 stacks of the Vega 20 class) assumed; 200 Gb/s network " \
	"with one NIC per node assumed"
#define CATALOG_SRC_UNIAP "UniAP (CVPR 2025) section 4 for the environment"
#define CATALOG_SRC_COMMON "; latency per ring step from NCCL's tuning model; efficiency = large-GEMM " \
	"fraction of peak, GEMM knee = peak x efficiency / memory bandwidth (docs/catalog.md)"

/* A node of `dev` GPUs on NVLink/NVSwitch (`nvl` GB/s per direction) and a network of `net`
 * GB/s per GPU between nodes (present only with several nodes), named `netname` */
#define CATALOG_NVLINK_NET_LEVELS(node, dev, nvl, netname, net) \
	{ { node, dev, nvl, CATALOG_EFF_NVLINK, CATALOG_LAT_NVLINK, 1 }, \
	  { netname, 0, net, CATALOG_EFF_NET, CATALOG_LAT_IB, 1 } }
#define CATALOG_ENVB_LEVELS \
	{ { "pcie_pair", 2, 15.75, CATALOG_EFF_PCIE, CATALOG_LAT_PCIE, 1 }, \
	  { "node", 4, 15.75, CATALOG_EFF_QPI, CATALOG_LAT_QPI, 2 }, \
	  { "ethernet", 0, 1.25, CATALOG_EFF_NET, CATALOG_LAT_TCP, 4 } }
#define CATALOG_ENVD_LEVELS \
	{ { "node", 4, 15.75, CATALOG_EFF_PCIE, CATALOG_LAT_PCIE, 1 }, \
	  { "network", 0, 25, CATALOG_EFF_NET, CATALOG_LAT_IB, 4 } }
#define CATALOG_SRC_ENVB CATALOG_SRC_UNIAP " and appendix topology; " CATALOG_SRC_TITANXP \
	"; PCIe 15.75 GB/s x 0.75, QPI host-staged 15.75 x 0.4 shared by a pair, Ethernet 1.25 GB/s x 0.9 " \
	"shared by the node's 4 GPUs" CATALOG_SRC_COMMON
#define CATALOG_SRC_ENVD CATALOG_SRC_UNIAP "; " CATALOG_SRC_DCU \
	"; PCIe 3.0 15.75 GB/s x 0.75, network 25 GB/s x 0.9" CATALOG_SRC_COMMON

/* Single-node or fixed clusters; dgx-* are also the base of the -xN families. */
static const struct catalog_cluster_def catalog_clusters[] = {
	{ { "enva", "EnvA: 1 node, 8 x V100-SXM2 32 GB, NVLink (UniAP section 4)",
	    CATALOG_SRC_UNIAP "; " CATALOG_SRC_V100 "; NVLink 150 GB/s per direction x 0.8" CATALOG_SRC_COMMON },
	  &catalog_v100, 1, 8, 1.2, { { "node", 8, 150, CATALOG_EFF_NVLINK, CATALOG_LAT_NVLINK, 1 } } },
	{ { "envb", "EnvB: 4 nodes x 4 TITAN Xp 12 GB, PCIe pairs joined by QPI, 10 Gb/s Ethernet",
	    CATALOG_SRC_ENVB },
	  &catalog_titanxp, 4, 4, 1.3, CATALOG_ENVB_LEVELS },
	{ { "envb-8", "EnvB-8: 2 nodes of EnvB (8 TITAN Xp 12 GB)", CATALOG_SRC_ENVB },
	  &catalog_titanxp, 2, 4, 1.3, CATALOG_ENVB_LEVELS },
	{ { "envc", "EnvC: 1 node, 8 x A100 40 GB PCIe (no NVLink bridges assumed)",
	    CATALOG_SRC_UNIAP "; " CATALOG_SRC_A100
	    "; 4 GPUs per socket on PCIe 4.0 x 0.75, across sockets host-staged x 0.4 shared by a socket's 4 GPUs "
	    "(assumed topology)" CATALOG_SRC_COMMON },
	  &catalog_a100_pcie, 1, 8, 1.3,
	  { { "socket", 4, 31.5, CATALOG_EFF_PCIE, CATALOG_LAT_PCIE, 1 },
	    { "node", 8, 31.5, CATALOG_EFF_QPI, CATALOG_LAT_QPI, 4 } } },
	{ { "envd-16", "EnvD-16: 4 nodes x 4 Hygon DCU Z100 32 GB, PCIe, 200 Gb/s network", CATALOG_SRC_ENVD },
	  &catalog_dcu, 4, 4, 1.3, CATALOG_ENVD_LEVELS },
	{ { "envd-32", "EnvD-32: 8 nodes x 4 Hygon DCU Z100 32 GB, PCIe, 200 Gb/s network", CATALOG_SRC_ENVD },
	  &catalog_dcu, 8, 4, 1.3, CATALOG_ENVD_LEVELS },
	{ { "envd-64", "EnvD-64: 16 nodes x 4 Hygon DCU Z100 32 GB, PCIe, 200 Gb/s network", CATALOG_SRC_ENVD },
	  &catalog_dcu, 16, 4, 1.3, CATALOG_ENVD_LEVELS },
	{ { "dgx-a100", "DGX A100: 8 x A100 80 GB SXM, NVSwitch",
	    CATALOG_SRC_A100 "; NVLink 300 GB/s per direction x 0.8; 200 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  &catalog_a100_sxm, 1, 8, 1.2,
	  CATALOG_NVLINK_NET_LEVELS("node", 8, 300, "infiniband", 25) },
	{ { "dgx-h100", "DGX H100: 8 x H100 80 GB SXM, NVSwitch",
	    CATALOG_SRC_H100 "; NVLink 450 GB/s per direction x 0.8; 400 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  &catalog_h100_sxm, 1, 8, 1.2,
	  CATALOG_NVLINK_NET_LEVELS("node", 8, 450, "infiniband", 50) },
	/* H100 nodes on a RoCE fabric (the common cloud build): NCCL's tuning model prices RoCE as
	 * any network transport (its NET latency), so the level is InfiniBand's figures on Ethernet */
	{ { "h100-roce", "H100 SXM node: 8 x H100 80 GB, NVSwitch, 400 Gb/s RoCE per GPU between nodes",
	    CATALOG_SRC_H100 "; NVLink 450 GB/s per direction x 0.8; 400 Gb/s RoCE per GPU x 0.9 (NCCL's network "
	    "latency)" CATALOG_SRC_COMMON },
	  &catalog_h100_sxm, 1, 8, 1.2,
	  CATALOG_NVLINK_NET_LEVELS("node", 8, 450, "roce", 50) },
	{ { "dgx-h200", "DGX H200: 8 x H200 141 GB SXM, NVSwitch",
	    CATALOG_SRC_H200 "; NVLink 450 GB/s per direction x 0.8; 400 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  &catalog_h200_sxm, 1, 8, 1.2,
	  CATALOG_NVLINK_NET_LEVELS("node", 8, 450, "infiniband", 50) },
	{ { "dgx-b200", "DGX B200: 8 x B200 180 GB, NVLink 5 NVSwitch",
	    CATALOG_SRC_B200 "; NVLink 900 GB/s per direction x 0.8; 400 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  &catalog_b200, 1, 8, 1.2,
	  CATALOG_NVLINK_NET_LEVELS("node", 8, 900, "infiniband", 50) },
	/* one NVLink domain of 72 GPUs per rack: TP, FSDP and DP groups up to 72 stay on NVLink */
	{ { "gb200-nvl72", "GB200 NVL72: one rack, 72 Blackwell GPUs of 186 GB in one NVLink domain",
	    CATALOG_SRC_GB200 "; NVLink 900 GB/s per direction x 0.8; 400 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  &catalog_gb200, 1, 72, 1.2,
	  CATALOG_NVLINK_NET_LEVELS("nvlink", 72, 900, "infiniband", 50) },
};

#define CATALOG_N_CLUSTERS (sizeof(catalog_clusters) / sizeof(catalog_clusters[0]))

/* The -xN families: name prefix and the name of their single-node base. */
struct catalog_family {
	struct catalog_entry entry;
	const char *prefix;
	const char *base;
};

static const struct catalog_family catalog_families[] = {
	{ { "dgx-a100-xN", "N DGX A100 nodes (N = 2..128, e.g. dgx-a100-x4), 200 Gb/s InfiniBand per GPU",
	    CATALOG_SRC_A100 "; NVLink 300 GB/s per direction x 0.8; 200 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  "dgx-a100-x", "dgx-a100" },
	{ { "dgx-h100-xN", "N DGX H100 nodes (N = 2..128, e.g. dgx-h100-x4), 400 Gb/s InfiniBand per GPU",
	    CATALOG_SRC_H100 "; NVLink 450 GB/s per direction x 0.8; 400 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  "dgx-h100-x", "dgx-h100" },
	{ { "h100-roce-xN", "N H100 SXM nodes (N = 2..128, e.g. h100-roce-x32), 400 Gb/s RoCE per GPU",
	    CATALOG_SRC_H100 "; NVLink 450 GB/s per direction x 0.8; 400 Gb/s RoCE per GPU x 0.9" CATALOG_SRC_COMMON },
	  "h100-roce-x", "h100-roce" },
	{ { "dgx-h200-xN", "N DGX H200 nodes (N = 2..128, e.g. dgx-h200-x4), 400 Gb/s InfiniBand per GPU",
	    CATALOG_SRC_H200 "; NVLink 450 GB/s per direction x 0.8; 400 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  "dgx-h200-x", "dgx-h200" },
	{ { "dgx-b200-xN", "N DGX B200 nodes (N = 2..128, e.g. dgx-b200-x4), 400 Gb/s InfiniBand per GPU",
	    CATALOG_SRC_B200 "; NVLink 900 GB/s per direction x 0.8; 400 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  "dgx-b200-x", "dgx-b200" },
	{ { "gb200-nvl72-xN", "N GB200 NVL72 racks (N = 2..128, e.g. gb200-nvl72-x4: 288 GPUs), 400 Gb/s per GPU "
	    "between racks",
	    CATALOG_SRC_GB200 "; NVLink 900 GB/s per direction x 0.8; 400 Gb/s InfiniBand per GPU x 0.9"
	    CATALOG_SRC_COMMON },
	  "gb200-nvl72-x", "gb200-nvl72" },
};

#define CATALOG_N_FAMILIES (sizeof(catalog_families) / sizeof(catalog_families[0]))

/* ------------------------------------------------------------------- models */

enum catalog_arch {
	CATALOG_ARCH_TRANSFORMER = 0, /* BERT, GPT, Llama: catalog_transformer() */
	CATALOG_ARCH_VIT,             /* patch embedding + class token, LayerNorm + biases, 1000-class head */
	CATALOG_ARCH_T5,              /* encoder-decoder, no biases, relative position bias, tied head */
	CATALOG_ARCH_SWIN,            /* four stages with patch merging, windowed attention */
};

/* One model: T5, ViT and Swin use the fields of `a` that their builders name
 * (T5: layers per stack; Swin: stage-1 width, heads and tokens). */
struct catalog_model_def {
	struct catalog_entry entry;
	enum catalog_arch arch;
	struct model_arch a;
};

#define CATALOG_SRC_MEGATRON "Narayanan et al. SC 2021 (Megatron-LM), Table 1: layers, hidden, heads; " \
	"vocabulary 51200, seq 2048; FLOPs: their appendix; activations: Korthikanti et al. 2022"
#define CATALOG_SRC_FORMULAS "FLOPs: Megatron-LM (Narayanan et al. 2021); activations: Korthikanti et al. 2022"

/* BERT (HuggingFace BertModel): LayerNorm + biases, GeLU, learned positions, MLM head tied */
#define CATALOG_BERT(L, h, a, s, V, prec) \
	{ .family = MODEL_ARCH_ENCODER, .layers = L, .hidden = h, .heads = a, .kv_heads = a, .ffn_hidden = 4 * (h), \
	  .seq_len = s, .vocab = V, .mlp = MODEL_MLP_GELU, .norm = MODEL_NORM_LAYERNORM, \
	  .positions = MODEL_POS_LEARNED, .flash_attention = 0, .dropout = 1, .biases = 1, .tied_embeddings = 1, \
	  .precision = prec, .optimizer = MODEL_ADAM }
/* GPT-2/3 (Megatron-LM): as BERT without token types and MLM transform, causal, LM head tied */
#define CATALOG_GPT(L, h, a, s, V) \
	{ .family = MODEL_ARCH_DECODER, .layers = L, .hidden = h, .heads = a, .kv_heads = a, .ffn_hidden = 4 * (h), \
	  .seq_len = s, .vocab = V, .mlp = MODEL_MLP_GELU, .norm = MODEL_NORM_LAYERNORM, \
	  .positions = MODEL_POS_LEARNED, .flash_attention = 0, .dropout = 1, .biases = 1, .tied_embeddings = 1, \
	  .precision = MODEL_MIXED, .optimizer = MODEL_ADAM }
/* Llama: RMSNorm, no biases, SwiGLU, RoPE, GQA, untied head, no dropout */
#define CATALOG_LLAMA(L, h, a, kv, f, s, flash) \
	{ .family = MODEL_ARCH_DECODER, .layers = L, .hidden = h, .heads = a, .kv_heads = kv, .ffn_hidden = f, \
	  .seq_len = s, .vocab = 32000, .mlp = MODEL_MLP_SWIGLU, .norm = MODEL_NORM_RMSNORM, \
	  .positions = MODEL_POS_ROTARY, .flash_attention = flash, .dropout = 0, .biases = 0, .tied_embeddings = 0, \
	  .precision = MODEL_MIXED, .optimizer = MODEL_ADAM }
/* Llama 3 / 3.1: Llama's block with a 128,256-token vocabulary, GQA with 8 KV heads, flash attention */
#define CATALOG_LLAMA3(L, h, a, kv, f, s) \
	{ .family = MODEL_ARCH_DECODER, .layers = L, .hidden = h, .heads = a, .kv_heads = kv, .ffn_hidden = f, \
	  .seq_len = s, .vocab = 128256, .mlp = MODEL_MLP_SWIGLU, .norm = MODEL_NORM_RMSNORM, \
	  .positions = MODEL_POS_ROTARY, .flash_attention = 1, .dropout = 0, .biases = 0, .tied_embeddings = 0, \
	  .precision = MODEL_MIXED, .optimizer = MODEL_ADAM }
#define CATALOG_SRC_LLAMA3 "Llama Team, 'The Llama 3 Herd of Models' (2024), Table 3 (layers, width, FFN, " \
	"heads, 8 KV heads; pre-training sequence 8192) and the HuggingFace Llama-3.1 config.json files " \
	"(vocab_size 128256); " CATALOG_SRC_FORMULAS
/* A decoder whose every block is a MoE block (SwiGLU experts, RMSNorm,
 * RoPE, flash attention, mixed precision, dropless): layers, width, heads,
 * KV heads, head width (0: h / a), vocabulary, sequence, experts, top-k,
 * expert FFN, shared-expert FFN, biases, sliding window and its period */
#define CATALOG_MOE(L, h, a, kv, hd, V, s, E, k, fe, fs, bias, win, wevery) \
	{ .family = MODEL_ARCH_DECODER, .layers = L, .hidden = h, .heads = a, .kv_heads = kv, .ffn_hidden = fe, \
	  .seq_len = s, .vocab = V, .mlp = MODEL_MLP_SWIGLU, .norm = MODEL_NORM_RMSNORM, \
	  .positions = MODEL_POS_ROTARY, .flash_attention = 1, .dropout = 0, .biases = bias, .tied_embeddings = 0, \
	  .precision = MODEL_MIXED, .optimizer = MODEL_ADAM, .head_dim = hd, .window = win, .window_every = wevery, \
	  .experts = E, .top_k = k, .moe_ffn_hidden = fe, .shared_ffn_hidden = fs, .moe_every = 1 }
#define CATALOG_SRC_MOE "; MoE layer: Megatron-Core's MoE documentation (router, top-k, grouped GEMM, " \
	"alltoall token dispatcher) and docs/catalog.md, 'Mixture of experts'; " CATALOG_SRC_FORMULAS
/* the fields T5, ViT and Swin read */
#define CATALOG_OTHER(L, h, a, f, s, V, drop, bias, norm_kind) \
	{ .family = MODEL_ARCH_ENCODER, .layers = L, .hidden = h, .heads = a, .kv_heads = a, .ffn_hidden = f, \
	  .seq_len = s, .vocab = V, .mlp = MODEL_MLP_GELU, .norm = norm_kind, .positions = MODEL_POS_LEARNED, \
	  .flash_attention = 0, .dropout = drop, .biases = bias, .tied_embeddings = 1, .precision = MODEL_FP32, \
	  .optimizer = MODEL_ADAM }

/*
 * Flash attention per entry (docs/catalog.md, "Flash attention"): the paper's
 * scenarios ran 2023 runtimes (Galvatron on HuggingFace BERT/T5/ViT/Swin,
 * Megatron-DeepSpeed on DCUs) and GPT-3's figures come from Megatron-LM 2021:
 * none of them used it.  Llama-2-70B is not a paper scenario: modern
 * runtimes use it.
 */
static const struct catalog_model_def catalog_models[] = {
	{ { "bert-huge", "BERT-Huge: 32 layers, hidden 1280, 16 heads, seq 512, fp32 (~672 M parameters)",
	    "UniAP appendix (HuggingFace BertConfig with hidden 1280, 32 layers, 16 heads, seq 512); "
	    CATALOG_SRC_FORMULAS },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_BERT(32, 1280, 16, 512, 30522, MODEL_FP32) },
	{ { "t5-large", "T5-Large: 24 + 24 layers, d_model 1024, d_ff 4096, 16 heads, seq 512, fp32 (~737 M)",
	    "Raffel et al. 2020 (T5), HuggingFace t5-large config; " CATALOG_SRC_FORMULAS },
	  CATALOG_ARCH_T5, CATALOG_OTHER(24, 1024, 16, 4096, 512, 32128, 1, 0, MODEL_NORM_RMSNORM) },
	{ { "vit-huge", "ViT-Huge: 32 layers, hidden 1280, 16 heads, 196 patches + class token, fp32 (~632 M)",
	    "Dosovitskiy et al. 2021 (ViT-H), HuggingFace ViTConfig defaults (image 224, patch 16); "
	    CATALOG_SRC_FORMULAS },
	  CATALOG_ARCH_VIT, CATALOG_OTHER(32, 1280, 16, 5120, 197, 1000, 0, 1, MODEL_NORM_LAYERNORM) },
	{ { "swin-huge", "Swin-Huge: depths 2/2/42/2, widths 320/640/1280/2560, window 7, image 224, fp32 (~1.02 B)",
	    "Liu et al. 2021 (Swin), UniAP's Swin-Huge (widths 320..2560, 42-layer stage 3); "
	    CATALOG_SRC_FORMULAS },
	  CATALOG_ARCH_SWIN, CATALOG_OTHER(48, 320, 10, 1280, 3136, 1000, 0, 1, MODEL_NORM_LAYERNORM) },
	{ { "llama-7b", "Llama-7B: 32 layers, hidden 4096, 32 heads, FFN 11008, seq 2048, mixed (6.74 B)",
	    "Touvron et al. 2023 (LLaMA), HuggingFace llama-7b config; " CATALOG_SRC_FORMULAS },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_LLAMA(32, 4096, 32, 32, 11008, 2048, 0) },
	{ { "llama-13b", "Llama-13B: 40 layers, hidden 5120, 40 heads, FFN 13824, seq 2048, mixed (13.0 B)",
	    "Touvron et al. 2023 (LLaMA), HuggingFace llama-13b config; " CATALOG_SRC_FORMULAS },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_LLAMA(40, 5120, 40, 40, 13824, 2048, 0) },
	{ { "llama-70b", "Llama-2-70B: 80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672, seq 4096, mixed, "
	    "flash attention (69.0 B)",
	    "Touvron et al. 2023 (Llama 2), HuggingFace Llama-2-70b config; " CATALOG_SRC_FORMULAS },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_LLAMA(80, 8192, 64, 8, 28672, 4096, 1) },
	{ { "llama-3.1-8b", "Llama-3.1-8B: 32 layers, hidden 4096, 32 heads, 8 KV heads, FFN 14336, seq 8192, mixed, "
	    "flash attention (8.03 B)", CATALOG_SRC_LLAMA3 },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_LLAMA3(32, 4096, 32, 8, 14336, 8192) },
	{ { "llama-3.1-70b", "Llama-3.1-70B: 80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672, seq 8192, mixed, "
	    "flash attention (70.6 B)", CATALOG_SRC_LLAMA3 },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_LLAMA3(80, 8192, 64, 8, 28672, 8192) },
	{ { "llama-3.1-405b", "Llama-3.1-405B: 126 layers, hidden 16384, 128 heads, 8 KV heads, FFN 53248, seq 8192, "
	    "mixed, flash attention (405.9 B)", CATALOG_SRC_LLAMA3 },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_LLAMA3(126, 16384, 128, 8, 53248, 8192) },
	{ { "mixtral-8x7b", "Mixtral-8x7B: 32 MoE layers, hidden 4096, 32 heads, 8 KV heads, 8 experts of FFN 14336, "
	    "top-2, seq 4096, mixed, flash attention (46.7 B, 12.9 B active)",
	    "Jiang et al. 2024 ('Mixtral of Experts'), HuggingFace mistralai/Mixtral-8x7B-v0.1 config.json "
	    "(hidden_size 4096, intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32, "
	    "num_key_value_heads 8, num_local_experts 8, num_experts_per_tok 2, vocab_size 32000); sequence 4096 "
	    "as in Megatron-LM's Mixtral examples" CATALOG_SRC_MOE },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_MOE(32, 4096, 32, 8, 0, 32000, 4096, 8, 2, 14336, 0, 0, 0, 0) },
	{ { "mixtral-8x22b", "Mixtral-8x22B: 56 MoE layers, hidden 6144, 48 heads, 8 KV heads, 8 experts of FFN 16384, "
	    "top-2, seq 4096, mixed, flash attention (141 B, 39 B active)",
	    "Mistral AI, HuggingFace mistralai/Mixtral-8x22B-v0.1 config.json (hidden_size 6144, "
	    "intermediate_size 16384, num_hidden_layers 56, num_attention_heads 48, num_key_value_heads 8, "
	    "num_local_experts 8, num_experts_per_tok 2, vocab_size 32768); sequence 4096" CATALOG_SRC_MOE },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_MOE(56, 6144, 48, 8, 0, 32768, 4096, 8, 2, 16384, 0, 0, 0, 0) },
	{ { "qwen3-30b-a3b", "Qwen3-30B-A3B: 48 MoE layers, hidden 2048, 32 heads of 128, 4 KV heads, 128 experts of FFN "
	    "768, top-8, seq 4096, mixed, flash attention (30.5 B, 3.3 B active)",
	    "Qwen Team 2025 (Qwen3 Technical Report, Table 2), HuggingFace Qwen/Qwen3-30B-A3B config.json "
	    "(hidden_size 2048, num_hidden_layers 48, num_attention_heads 32, num_key_value_heads 4, head_dim 128, "
	    "num_experts 128, num_experts_per_tok 8, moe_intermediate_size 768, vocab_size 151936, "
	    "decoder_sparse_step 1); sequence 4096; the per-head q/k norms (2 x 128 parameters) left out"
	    CATALOG_SRC_MOE },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_MOE(48, 2048, 32, 4, 128, 151936, 4096, 128, 8, 768, 0, 0, 0, 0) },
	{ { "qwen3-235b-a22b", "Qwen3-235B-A22B: 94 MoE layers, hidden 4096, 64 heads of 128, 4 KV heads, 128 experts of "
	    "FFN 1536, top-8, seq 4096, mixed, flash attention (235 B, 22 B active)",
	    "Qwen Team 2025 (Qwen3 Technical Report, Table 2), HuggingFace Qwen/Qwen3-235B-A22B config.json "
	    "(hidden_size 4096, num_hidden_layers 94, num_attention_heads 64, num_key_value_heads 4, head_dim 128, "
	    "num_experts 128, num_experts_per_tok 8, moe_intermediate_size 1536, vocab_size 151936); sequence 4096; "
	    "the per-head q/k norms left out" CATALOG_SRC_MOE },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_MOE(94, 4096, 64, 4, 128, 151936, 4096, 128, 8, 1536, 0, 0, 0, 0) },
	{ { "gpt-oss-120b", "GPT-OSS-120B: 36 MoE layers, hidden 2880, 64 heads of 64, 8 KV heads, 128 experts of FFN "
	    "2880, top-4, every other layer a 128-token sliding window, seq 4096, mixed (116.8 B, 5.1 B active)",
	    "OpenAI 2025 (gpt-oss-120b model card, Table 1), HuggingFace openai/gpt-oss-120b config.json "
	    "(hidden_size 2880, intermediate_size 2880, num_hidden_layers 36, num_attention_heads 64, "
	    "num_key_value_heads 8, head_dim 64, num_local_experts 128, experts_per_token 4, vocab_size 201088, "
	    "sliding_window 128 on the even layers, attention_bias true); sequence 4096; the attention sinks "
	    "(64 parameters a layer) left out" CATALOG_SRC_MOE },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_MOE(36, 2880, 64, 8, 64, 201088, 4096, 128, 4, 2880, 0, 1, 128, 2) },
	{ { "deepseek-v3", "DeepSeek-V3: 61 layers (3 dense, 58 MoE), hidden 7168, 128 heads of multi-head latent "
	    "attention, 256 experts of FFN 2048 + 1 shared, top-8, seq 4096, mixed (671 B, 37 B active)",
	    "DeepSeek-AI 2024 ('DeepSeek-V3 Technical Report', section 4.2: 61 layers, hidden 7168, 128 heads, "
	    "d_c 512, d'_c 1536, d^R_h 64, per-head 128; the first 3 layers dense; 1 shared and 256 routed experts "
	    "of 2048, 8 activated), HuggingFace deepseek-ai/DeepSeek-V3 config.json (intermediate_size 18432, "
	    "vocab_size 129280, sigmoid scoring); sequence 4096; the multi-token-prediction module (14 B) left out"
	    CATALOG_SRC_MOE },
	  CATALOG_ARCH_TRANSFORMER,
	  { .family = MODEL_ARCH_DECODER, .layers = 61, .hidden = 7168, .heads = 128, .kv_heads = 128,
	    .ffn_hidden = 18432, .seq_len = 4096, .vocab = 129280, .mlp = MODEL_MLP_SWIGLU,
	    .norm = MODEL_NORM_RMSNORM, .positions = MODEL_POS_ROTARY, .flash_attention = 1, .dropout = 0,
	    .biases = 0, .tied_embeddings = 0, .precision = MODEL_MIXED, .optimizer = MODEL_ADAM, .experts = 256,
	    .top_k = 8, .moe_ffn_hidden = 2048, .shared_ffn_hidden = 2048, .moe_every = 1, .moe_first_dense = 3,
	    .router_sigmoid = 1, .q_lora_rank = 1536, .kv_lora_rank = 512, .qk_nope_head_dim = 128,
	    .qk_rope_head_dim = 64, .v_head_dim = 128 } },
	{ { "gpt3-175b", "GPT-3 175B: 96 layers, hidden 12288, 96 heads, FFN 4h, seq 2048, mixed (175 B)",
	    "Brown et al. 2020 (GPT-3, Table 2.1); " CATALOG_SRC_FORMULAS },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(96, 12288, 96, 2048, 50257) },
	/* the weak-scaling GPT models of Narayanan et al. SC 2021, Table 1 (vocabulary 51200, seq 2048) */
	{ { "gpt-1.7b", "GPT 1.7B (Megatron-LM Table 1): 24 layers, hidden 2304, 24 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(24, 2304, 24, 2048, 51200) },
	{ { "gpt-3.6b", "GPT 3.6B (Megatron-LM Table 1): 30 layers, hidden 3072, 32 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(30, 3072, 32, 2048, 51200) },
	{ { "gpt-7.5b", "GPT 7.5B (Megatron-LM Table 1): 36 layers, hidden 4096, 32 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(36, 4096, 32, 2048, 51200) },
	{ { "gpt-18b", "GPT 18.4B (Megatron-LM Table 1): 40 layers, hidden 6144, 48 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(40, 6144, 48, 2048, 51200) },
	{ { "gpt-39b", "GPT 39.1B (Megatron-LM Table 1): 48 layers, hidden 8192, 64 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(48, 8192, 64, 2048, 51200) },
	{ { "gpt-76b", "GPT 76.1B (Megatron-LM Table 1): 60 layers, hidden 10240, 80 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(60, 10240, 80, 2048, 51200) },
	{ { "gpt-145b", "GPT 145.6B (Megatron-LM Table 1): 80 layers, hidden 12288, 96 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(80, 12288, 96, 2048, 51200) },
	{ { "gpt-310b", "GPT 310.1B (Megatron-LM Table 1): 96 layers, hidden 16384, 128 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(96, 16384, 128, 2048, 51200) },
	{ { "gpt-530b", "GPT 529.6B (Megatron-LM Table 1): 105 layers, hidden 20480, 128 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(105, 20480, 128, 2048, 51200) },
	{ { "gpt-1t", "GPT 1008B (Megatron-LM Table 1): 128 layers, hidden 25600, 160 heads, seq 2048, mixed",
	    CATALOG_SRC_MEGATRON },
	  CATALOG_ARCH_TRANSFORMER, CATALOG_GPT(128, 25600, 160, 2048, 51200) },
};

#define CATALOG_N_MODELS (sizeof(catalog_models) / sizeof(catalog_models[0]))

/* Swin: blocks per stage (Liu et al. 2021, Swin-H as in UniAP) and the window size. */
static const int catalog_swin_depths[4] = { 2, 2, 42, 2 };
#define CATALOG_SWIN_WINDOW_TOKENS 49.0 /* 7 x 7 */
#define CATALOG_SWIN_PATCH_INPUTS 48.0  /* 4 x 4 patch x 3 channels */

/* ------------------------------------------------------------------ listing */

size_t catalog_count(enum catalog_kind kind)
{
	return kind == CATALOG_CLUSTER ? CATALOG_N_CLUSTERS + CATALOG_N_FAMILIES : CATALOG_N_MODELS;
}

const struct catalog_entry *catalog_entry(enum catalog_kind kind, size_t index)
{
	if (kind == CATALOG_MODEL)
		return index < CATALOG_N_MODELS ? &catalog_models[index].entry : NULL;
	if (index < CATALOG_N_CLUSTERS)
		return &catalog_clusters[index].entry;
	index -= CATALOG_N_CLUSTERS;
	return index < CATALOG_N_FAMILIES ? &catalog_families[index].entry : NULL;
}

/* N of "PREFIXN" when name is one (decimal, no sign or leading zero, in range), else 0. */
static int catalog_family_nodes(const char *name, const char *prefix)
{
	size_t n = strlen(prefix), i;
	long v = 0;

	if (strncmp(name, prefix, n) != 0 || name[n] == '\0' || name[n] == '0' || strlen(name + n) > 3)
		return 0;
	for (i = n; name[i]; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		v = v * 10 + (name[i] - '0');
	}
	return v >= CATALOG_MIN_NODES && v <= CATALOG_MAX_NODES ? (int)v : 0;
}

/* The cluster definition and node count for name, or NULL. */
static const struct catalog_cluster_def *catalog_find_cluster(const char *name, int *nodes)
{
	size_t i;

	int n = 0;

	for (i = 0; i < CATALOG_N_FAMILIES && n == 0; i++) {
		n = catalog_family_nodes(name, catalog_families[i].prefix);
		if (n > 0)
			name = catalog_families[i].base;
	}
	for (i = 0; i < CATALOG_N_CLUSTERS; i++) {
		if (strcmp(name, catalog_clusters[i].entry.name) == 0) {
			*nodes = n > 0 ? n : catalog_clusters[i].nodes;
			return &catalog_clusters[i];
		}
	}
	return NULL;
}

static const struct catalog_model_def *catalog_find_model(const char *name)
{
	size_t i;

	for (i = 0; i < CATALOG_N_MODELS; i++)
		if (strcmp(name, catalog_models[i].entry.name) == 0)
			return &catalog_models[i];
	return NULL;
}

int catalog_has(enum catalog_kind kind, const char *name)
{
	int nodes = 0;

	if (!name)
		return 0;
	return kind == CATALOG_CLUSTER ? catalog_find_cluster(name, &nodes) != NULL
	                               : catalog_find_model(name) != NULL;
}

/* Edit distance of a and b (case-blind), both cut at 64 bytes. */
static size_t catalog_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, row[65];

	la = la > 64 ? 64 : la;
	lb = lb > 64 ? 64 : lb;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

const char *catalog_suggest(enum catalog_kind kind, const char *name)
{
	const char *best = NULL;
	size_t i, best_d = (size_t)-1, n = name ? strlen(name) : 0, most = n / 4 > 2 ? n / 4 : 2;

	if (!name || !*name)
		return NULL;
	for (i = 0; i < catalog_count(kind); i++) {
		size_t d = catalog_distance(name, catalog_entry(kind, i)->name);

		if (d < best_d) {
			best_d = d;
			best = catalog_entry(kind, i)->name;
		}
	}
	return best_d <= most ? best : NULL;
}

/* list (cap bytes): the names of kind, ", "-separated, ", ..." where the rest would not fit. */
static void catalog_list(enum catalog_kind kind, char *list, size_t cap)
{
	size_t i, used = 0;

	list[0] = '\0';
	for (i = 0; i < catalog_count(kind); i++) {
		const char *e = catalog_entry(kind, i)->name;

		if (used + strlen(e) + 8 >= cap) {
			snprintf(list + used, cap - used, ", ...");
			break;
		}
		used += (size_t)snprintf(list + used, cap - used, "%s%s", i ? ", " : "", e);
	}
}

uniap_code catalog_unknown(enum catalog_kind kind, const char *name, const char *path, const char *hint,
                           uniap_code code, struct uniap_err *err)
{
	char list[320];
	const char *near = catalog_suggest(kind, name);

	catalog_list(kind, list, sizeof(list));
	if (near)
		return err_set(err, code, "%s: unknown %s \"%.64s\"; did you mean %s? (%s: %s)", path,
		               kind == CATALOG_CLUSTER ? "cluster" : "model", name ? name : "", near, hint, list);
	return err_set(err, code, "%s: unknown %s \"%.64s\" (%s: %s)", path,
	               kind == CATALOG_CLUSTER ? "cluster" : "model", name ? name : "", hint, list);
}

/* UNIAP_E_NOTFOUND naming name and listing the known names of kind. */
static uniap_code catalog_not_found(enum catalog_kind kind, const char *name, struct uniap_err *err)
{
	char list[640];

	catalog_list(kind, list, sizeof(list));
	return err_set(err, UNIAP_E_NOTFOUND, "%s \"%.64s\": not in the catalog; known: %s",
	               kind == CATALOG_CLUSTER ? "cluster" : "model", name ? name : "", list);
}

/* ----------------------------------------------------------------- clusters */

static uniap_code catalog_nomem(struct uniap_err *err, const char *what)
{
	return err_set(err, UNIAP_E_NOMEM, "catalog %s: out of memory", what);
}

uniap_code catalog_cluster(const char *name, struct cluster_profile *out, struct uniap_err *err)
{
	const struct catalog_cluster_def *d;
	int nodes = 0;
	size_t i, n = 0;
	double inner_bw = 0;
	uniap_code rc = UNIAP_OK;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "catalog_cluster: out is NULL");
	memset(out, 0, sizeof(*out));
	d = name ? catalog_find_cluster(name, &nodes) : NULL;
	if (!d)
		return catalog_not_found(CATALOG_CLUSTER, name, err);
	out->name = strdup(name);
	out->device_name = strdup(d->device->name);
	out->levels = calloc(CATALOG_MAX_LEVELS, sizeof(*out->levels));
	if (!out->name || !out->device_name || !out->levels) {
		rc = catalog_nomem(err, "cluster");
		goto out;
	}
	out->nodes = nodes;
	out->devices_per_node = d->devices_per_node;
	out->memory_bytes = d->device->memory_bytes;
	out->reserved_bytes = d->device->reserved_bytes;
	out->overlap_coefficient = d->overlap_coefficient;
	out->peak_flops_per_s[MODEL_FP32] = d->device->peak_fp32_tflops * CATALOG_TFLOPS;
	out->peak_flops_per_s[MODEL_MIXED] = d->device->peak_mixed_tflops * CATALOG_TFLOPS;
	out->peak_fp8_flops_per_s = d->device->peak_fp8_tflops * CATALOG_TFLOPS;
	out->compute_efficiency = d->device->compute_efficiency;
	out->gemm_half_dim = d->device->gemm_half_dim;
	out->memory_bandwidth_bytes_per_s = d->device->memory_bandwidth_gb_per_s * CATALOG_GB;
	out->kernel_overhead_s = d->device->kernel_overhead_us / 1e6;
	out->memory_fragmentation = MODEL_DEFAULT_FRAGMENTATION;
	out->memory_margin = MODEL_DEFAULT_MARGIN;
	for (i = 0; i < CATALOG_MAX_LEVELS && d->levels[i].name; i++) {
		const struct catalog_level_def *l = &d->levels[i];
		double bw = l->link_gb_per_s * l->efficiency * CATALOG_GB;

		if (l->devices == 0 && nodes == 1)
			continue; /* the network level of a single node */
		if (n > 0 && bw > inner_bw)
			bw = inner_bw; /* a ring across this level also crosses the inner links */
		out->levels[n].name = strdup(l->name);
		if (!out->levels[n].name) {
			rc = catalog_nomem(err, "cluster");
			goto out;
		}
		out->levels[n].devices = l->devices ? l->devices : nodes * d->devices_per_node;
		out->levels[n].bw_bytes_per_s = bw;
		out->levels[n].latency_s = l->latency_us / 1e6;
		out->levels[n].shared_by = l->shared_by > 0 ? l->shared_by : 1;
		out->levels[n].link_bytes_per_s = l->link_gb_per_s * CATALOG_GB;
		inner_bw = bw;
		n++;
	}
	out->n_levels = n;
	rc = cluster_validate(out, err);
out:
	if (rc != UNIAP_OK)
		cluster_release(out);
	return rc;
}

/* ------------------------------------------------------------------- models */

double catalog_activation_bytes(double seq, double hidden, double heads, int tp, double elem_bytes,
                                int dropout)
{
	double fixed = dropout ? 10.0 : 8.0, attention = dropout ? 5.0 : 2.0;

	return seq * hidden * (fixed + 24.0 / tp + attention * heads * seq / (hidden * tp)) * elem_bytes / 2.0;
}

/*
 * One layer type as generated: activation bytes and memory-bound bytes at TP
 * size t are fixed + split / t (the Korthikanti form).
 */
struct catalog_type_spec {
	const char *name;
	double parameters;
	double flops;
	double act_fixed;
	double act_split;
	double mem_fixed;   /* memory-bound bytes read + written in one forward pass */
	double mem_split;
	double output_bytes;
	double checkpoint_bytes;
	double gemm_dim;
	double tokens;
	int tp_allreduces;
	int kernels;
	double attn_bytes;  /* the attention core's kept activations, FLOPs, memory-bound bytes */
	double attn_flops;
	double attn_mem;
	double attn_eager; /* eager_attention_bytes_per_sample */
	double fp8_flops;  /* fp8_flops_per_sample */
	double fp8_cast;   /* fp8_cast_bytes_per_sample */
	double fp8_saved;  /* fp8_saved_bytes_per_sample */
	double fp8_saved_split; /* fp8_saved_split_bytes_per_sample */
	double kv_bytes;   /* kv_bytes_per_sample */
	double heads;      /* attention_heads */
	double ulysses;    /* ulysses_bytes_per_sample */
	double context_flops; /* context_flops_per_sample */
	/* a MoE block's model_layer_type fields (0 on a dense one) */
	double experts;
	double expert_parameters;
	double expert_flops;
	double expert_gemm_dim;
	double expert_tokens;
	double expert_act;
	double dispatch_bytes;
	double expert_load;
	int kernels_per_local_expert;
	int expert_sync;
};

/* A model being built: counts of what has been filled. */
struct catalog_builder {
	struct model_profile *m;
	size_t n_types, n_layers, n_edges;
	size_t cap_types, cap_layers, cap_edges;
};

static uniap_code catalog_builder_init(struct catalog_builder *b, struct model_profile *m, const char *name,
                                       const struct model_arch *a, size_t types, size_t layers, size_t edges,
                                       struct uniap_err *err)
{
	memset(b, 0, sizeof(*b));
	b->m = m;
	b->cap_types = types;
	b->cap_layers = layers;
	b->cap_edges = edges;
	m->name = name ? strdup(name) : NULL;
	m->precision = a->precision;
	m->optimizer = a->optimizer;
	m->types = calloc(types, sizeof(*m->types));
	m->layers = calloc(layers, sizeof(*m->layers));
	m->edges = calloc(edges ? edges : 1, sizeof(*m->edges));
	if ((name && !m->name) || !m->types || !m->layers || !m->edges)
		return catalog_nomem(err, "model");
	return UNIAP_OK;
}

/* A TP table of fixed + split / tp for tp = 1, 2, 4, ..., or NULL without memory. */
static struct model_tp_value *catalog_tp_table(double fixed, double split)
{
	struct model_tp_value *t = calloc(CATALOG_TP_ENTRIES, sizeof(*t));
	int i;

	for (i = 0; t && i < CATALOG_TP_ENTRIES; i++) {
		t[i].tp = 1 << i;
		t[i].value = fixed + split / t[i].tp;
	}
	return t;
}

/* Appends a layer type; returns its index in *index. */
static uniap_code catalog_add_type(struct catalog_builder *b, const struct catalog_type_spec *s, size_t *index,
                                   struct uniap_err *err)
{
	struct model_layer_type *t;

	if (b->n_types >= b->cap_types)
		return err_set(err, UNIAP_E_INTERNAL, "catalog: too many layer types");
	t = &b->m->types[b->n_types];
	b->m->n_types = ++b->n_types;
	t->name = strdup(s->name);
	t->activation_bytes = catalog_tp_table(s->act_fixed, s->act_split);
	if (!t->name || !t->activation_bytes)
		return catalog_nomem(err, "model");
	t->n_activation_bytes = CATALOG_TP_ENTRIES;
	if (s->mem_fixed + s->mem_split > 0) {
		t->memory_bound_bytes = catalog_tp_table(s->mem_fixed, s->mem_split);
		if (!t->memory_bound_bytes)
			return catalog_nomem(err, "model");
		t->n_memory_bound_bytes = CATALOG_TP_ENTRIES;
	}
	t->forward_flops_per_sample = s->flops;
	t->parameters = s->parameters;
	t->output_bytes_per_sample = s->output_bytes;
	t->checkpoint_bytes_per_sample = s->checkpoint_bytes;
	t->tp_allreduces_per_pass = s->tp_allreduces;
	t->kernels_per_pass = s->kernels;
	t->gemm_dim = s->gemm_dim;
	t->tokens_per_sample = s->tokens;
	t->attention_bytes_per_sample = s->attn_bytes;
	t->attention_flops_per_sample = s->attn_flops;
	t->attention_memory_bound_bytes_per_sample = s->attn_mem;
	t->eager_attention_bytes_per_sample = s->attn_eager;
	t->fp8_flops_per_sample = s->fp8_flops;
	t->fp8_cast_bytes_per_sample = s->fp8_cast;
	t->fp8_saved_bytes_per_sample = s->fp8_saved;
	t->fp8_saved_split_bytes_per_sample = s->fp8_saved_split;
	t->kv_bytes_per_sample = s->kv_bytes;
	t->attention_heads = (int)s->heads;
	t->ulysses_bytes_per_sample = s->ulysses;
	t->context_flops_per_sample = s->context_flops;
	t->experts = (int)s->experts;
	t->expert_parameters = s->expert_parameters;
	t->expert_flops_per_sample = s->expert_flops;
	t->expert_gemm_dim = s->expert_gemm_dim;
	t->expert_tokens_per_sample = s->expert_tokens;
	t->expert_activation_bytes_per_sample = s->expert_act;
	t->dispatch_bytes_per_sample = s->dispatch_bytes;
	t->expert_load = s->expert_load;
	t->kernels_per_local_expert = s->kernels_per_local_expert;
	t->expert_sync = s->expert_sync;
	*index = b->n_types - 1;
	return UNIAP_OK;
}

/* Appends layer "prefix" or "prefix.k" (k >= 0) of type. */
static uniap_code catalog_add_layer(struct catalog_builder *b, const char *prefix, int k, size_t type,
                                    struct uniap_err *err)
{
	char name[MODEL_MAX_NAME];
	struct model_layer *l;

	if (b->n_layers >= b->cap_layers)
		return err_set(err, UNIAP_E_INTERNAL, "catalog: too many layers");
	if (k >= 0)
		snprintf(name, sizeof(name), "%s.%d", prefix, k);
	else
		snprintf(name, sizeof(name), "%s", prefix);
	l = &b->m->layers[b->n_layers];
	b->m->n_layers = ++b->n_layers;
	l->name = strdup(name);
	l->type = type;
	return l->name ? UNIAP_OK : catalog_nomem(err, "model");
}

static uniap_code catalog_add_edge(struct catalog_builder *b, size_t from, size_t to, struct uniap_err *err)
{
	if (b->n_edges >= b->cap_edges)
		return err_set(err, UNIAP_E_INTERNAL, "catalog: too many edges");
	b->m->edges[b->n_edges].from = from;
	b->m->edges[b->n_edges].to = to;
	b->m->n_edges = ++b->n_edges;
	return UNIAP_OK;
}

/* Parameters of one norm layer of width h. */
static double catalog_norm_params(const struct model_arch *a, double h)
{
	return a->norm == MODEL_NORM_LAYERNORM ? 2 * h : h;
}

/* Kernels of one norm: a fused LayerNorm kernel, or HuggingFace's unfused
 * RMSNorm (cast, pow, mean, add + rsqrt, scale, weight: 6). */
static int catalog_norm_kernels(const struct model_arch *a)
{
	return a->norm == MODEL_NORM_LAYERNORM ? 1 : 6;
}

/*
 * Kernels of one attention sub-layer without its norm (docs/catalog.md,
 * "Kernels per pass"): Q, K, V and output projections (4 GEMMs), RoPE on Q
 * and K (5 element-wise ops each), the attention core (one fused kernel with
 * flash attention, else QK^T, scale, mask, softmax, [dropout,] AV and the
 * head-merging copy), the residual add [and its dropout].
 */
static int catalog_attention_kernels(const struct model_arch *a)
{
	int k = 4 + (a->positions == MODEL_POS_ROTARY ? 10 : 0);

	k += a->flash_attention ? 1 : 6 + (a->dropout ? 1 : 0);
	return k + 1 + (a->dropout ? 1 : 0);
}

/*
 * A Transformer block of a over s tokens whose queries each see `keys` keys
 * (s, or the window of windowed attention), elem-byte elements.  Every
 * formula and its source: docs/catalog.md, "Models".
 */
static void catalog_block_spec(const struct model_arch *a, double elem, double s, double keys,
                               struct catalog_type_spec *out)
{
	double h = a->hidden, f = a->ffn_hidden, heads = a->heads;
	double hd = a->head_dim > 0 ? a->head_dim : h / heads, q = heads * hd; /* width of Q and of the context */
	double k = a->kv_heads * hd; /* width of K and of V */
	int swiglu = a->mlp == MODEL_MLP_SWIGLU, mla = a->kv_lora_rank > 0;
	double weights = 2 * h * q + 2 * h * k + (swiglu ? 3 : 2) * h * f;
	double biases = a->biases ? (q + 2 * k + h) + (swiglu ? 2 * f : f) + h : 0;
	double u = elem / 2; /* Korthikanti et al. count 2-byte elements (masks: 1 byte) */
	double scores = heads * s * keys;
	/* multi-head latent attention: Q and K are qk wide, V and the context vw; the latents
	 * (rq, rkv + rope) are not split over tp (Megatron-Core's MLA replicates its down
	 * projections) */
	double qk = 0, vw = 0, rq = a->q_lora_rank, rkv = a->kv_lora_rank, dr = a->qk_rope_head_dim;

	if (mla) {
		qk = heads * (a->qk_nope_head_dim + dr);
		vw = heads * a->v_head_dim;
		weights = (rq > 0 ? h * rq + rq * qk : h * qk) + h * (rkv + dr) + rkv * heads * (a->qk_nope_head_dim +
		          a->v_head_dim) + vw * h + (swiglu ? 3 : 2) * h * f;
		biases = 0;
	}

	memset(out, 0, sizeof(*out));
	out->name = "block";
	out->parameters = weights + biases + 2 * catalog_norm_params(a, h) +
	                  (mla ? catalog_norm_params(a, rkv) + (rq > 0 ? catalog_norm_params(a, rq) : 0) : 0);
	/* 2 x weights x tokens + QK^T and AV; flash attention's backward
	 * recomputes QK^T (2 s keys h more), priced as 1/3 of it in forward */
	out->flops = 2 * weights * s + 4 * s * keys * q + (a->flash_attention ? 2.0 / 3.0 * s * keys * q : 0);
	if (mla)
		out->flops = 2 * weights * s + 2 * s * keys * (qk + vw) + (a->flash_attention ? 2.0 / 3.0 * s * keys * qk : 0);
	/* kept for backward, not split by TP: both norm inputs, the QKV and MLP
	 * inputs [, the two hidden dropout masks] */
	out->act_fixed = u * s * h * (8 + (a->dropout ? 2 : 0));
	/* split: Q, K, V, the output projection's input, the MLP's inner tensors
	 * (GeLU: its input and output 4 s f; SwiGLU: gate, up and their product
	 * 6 s f), and the scores: softmax output [+ dropout mask and output], or
	 * flash attention's fp32 logsumexp per query and head */
	out->act_split = u * (4 * s * q + 4 * s * k + (swiglu ? 6 : 4) * s * f) +
	                 (a->flash_attention ? 4 * heads * s : u * (a->dropout ? 5 : 2) * scores);
	if (mla) {
		/* Q, K (qk each), V and the context (vw each), the MLP's; the latents and their
		 * normed copies (q: rq, kv: rkv + rope), kept whole on every tp rank */
		out->act_split = u * (2 * s * (2 * qk + 2 * vw) + (swiglu ? 6 : 4) * s * f) +
		                 (a->flash_attention ? 4 * heads * s : u * (a->dropout ? 5 : 2) * scores);
		out->act_fixed += u * 2 * s * (2 * rq + 2 * rkv + dr);
	}
	/* memory-bound bytes read + written: norms 2 x 2 s h, residual adds
	 * 2 x 3 s h [, hidden dropouts 2 x (2 s h + 1-byte mask)]; split: fused
	 * scale-mask-softmax 2 a s^2 [+ dropout], GeLU 2 s f or SiLU and product
	 * 5 s f, RoPE on Q and K */
	out->mem_fixed = elem * s * h * 10 + (a->dropout ? s * h * (4 * elem + 2) : 0);
	out->mem_split = (a->flash_attention ? 0 : 2 * scores * elem + (a->dropout ? scores * (2 * elem + 1) : 0)) +
	                 (swiglu ? 5 : 2) * s * f * elem +
	                 (a->positions == MODEL_POS_ROTARY ? 2 * s * (q + k) * elem : 0);
	if (mla) {
		/* RoPE on the queries' rope part and the shared key rope; the latents' norms and the
		 * copies that assemble Q and K from their nope and rope parts (read and write) */
		out->mem_split = (a->flash_attention ? 0 : 2 * scores * elem) + (swiglu ? 5 : 2) * s * f * elem +
		                 2 * s * heads * dr * elem + 4 * s * qk * elem;
		out->mem_fixed += 2 * s * dr * elem + 4 * s * (rq + rkv) * elem;
	}
	/* the attention core that selective recomputation recomputes (Korthikanti
	 * et al., §5: the 5as^2 term): its kept scores, QK^T and AV, and its
	 * softmax and dropout; nothing with flash attention, which keeps none */
	if (!a->flash_attention) {
		out->attn_bytes = u * (a->dropout ? 5 : 2) * scores;
		out->attn_flops = 4 * s * keys * q;
		out->attn_mem = 2 * scores * elem + (a->dropout ? scores * (2 * elem + 1) : 0);
		/* HuggingFace's eager attention: the scale (read and write), the
		 * mask add (read and write) and the softmax (read and write; in
		 * mixed precision computed in fp32 and cast back, as its Llama and
		 * T5 attention do: + 4 + 4 bytes) are three kernels where the fused
		 * scale-mask-softmax is one; the dropout is the same in both */
		out->attn_eager = scores * (6 * elem + (elem < 4 ? 8 : 0)) - 2 * scores * elem;
	}
	/* MLA: selective recomputation also reruns the up-projections (Megatron-LM's
	 * --recompute-modules mla_up_proj; the DeepSeek-V3 report's recomputation of MLA
	 * up-projections, 3.2.3): Q (with a q latent), K and V are not kept, their GEMMs and
	 * RoPE rerun in the backward pass */
	if (mla) {
		double uq = rq > 0 ? rq * qk : 0, ukv = rkv * heads * (a->qk_nope_head_dim + a->v_head_dim);

		out->attn_bytes += u * 2 * s * ((rq > 0 ? qk : 0) + qk + vw);
		out->attn_flops = (a->flash_attention ? 0 : 2 * s * keys * (qk + vw)) + 2 * s * (uq + ukv);
		out->attn_mem = (a->flash_attention ? 0 : out->attn_mem) + 2 * s * heads * dr * elem;
	}
	/* FP8 training (Transformer Engine): the linear layers' GEMMs (2 x weights
	 * x tokens) run in FP8; their inputs (QKV, the output projection, the MLP's
	 * up and down projections) are cast to FP8, read 2 and written 1 byte each */
	out->fp8_flops = 2 * weights * s;
	out->fp8_cast = 3 * (2 * s * h + s * q + s * f);
	/* and keeps those inputs for the backward pass in FP8, 1 byte where the activation
	 * count has elem: the QKV and MLP inputs (whole on every tp rank), the output
	 * projection's and second MLP GEMM's (split) */
	out->fp8_saved = (elem - 1) * 2 * s * h;
	out->fp8_saved_split = (elem - 1) * (s * q + s * f);
	if (mla) { /* the inputs of the down projections (h once), the up projections, the output one */
		out->fp8_cast = 3 * (2 * s * h + s * (rq + rkv + vw) + s * f);
		out->fp8_saved = (elem - 1) * s * (2 * h + rq + rkv);
		out->fp8_saved_split = (elem - 1) * s * (vw + f);
	}
	out->output_bytes = s * h * elem;
	out->checkpoint_bytes = s * h * elem;
	/* context parallelism: every token's K and V, which ring attention passes round the cp
	 * group, and the attention core it overlaps (QK^T and AV [, flash's recomputed QK^T]) */
	out->kv_bytes = 2 * s * k * elem;
	out->context_flops = 4 * s * keys * q + (a->flash_attention ? 2.0 / 3.0 * s * keys * q : 0);
	/* Ulysses: Q, K, V to head shards and the context back to sequence shards */
	out->heads = heads;
	out->ulysses = s * (2 * q + 2 * k) * elem;
	if (mla) { /* ring attention passes the up-projected K and V */
		out->kv_bytes = s * (qk + vw) * elem;
		out->context_flops = 2 * s * keys * (qk + vw) + (a->flash_attention ? 2.0 / 3.0 * s * keys * qk : 0);
		out->ulysses = s * (2 * qk + 2 * vw) * elem;
	}
	out->tp_allreduces = 2;
	out->gemm_dim = h;
	out->tokens = s;
	/* two norms, the attention sub-layer, the MLP (GeLU: 2 GEMMs + GeLU;
	 * SwiGLU: 3 GEMMs + SiLU + product), its residual add [and dropout] */
	out->kernels = 2 * catalog_norm_kernels(a) + catalog_attention_kernels(a) + (swiglu ? 5 : 3) + 1 +
	               (a->dropout ? 1 : 0);
	/* MLA: two down and two up projections where there were Q, K, V (one more GEMM, or two with
	 * a q latent), the latents' norms, the splits and concatenations of nope and rope parts */
	if (mla)
		out->kernels += (rq > 0 ? 2 : 1) + (rq > 0 ? 2 : 1) * catalog_norm_kernels(a) + 4;
}


/*
 * A MoE block (docs/catalog.md, "Mixture of experts"): the block of
 * catalog_block_spec() whose MLP is a router (h x E, kept in BF16), E routed
 * experts of FFN size fe of which top_k see each token, and shared experts of
 * total FFN size fs that see every token.  Megatron-Core's MoE layer
 * (token dispatcher alltoall, grouped GEMM) is what the kernels, the
 * permutation copies and the kept tensors follow.
 */
static void catalog_moe_block_spec(const struct model_arch *a, double elem, double s, double keys,
                                   struct catalog_type_spec *out)
{
	struct model_arch dense = *a;
	double h = a->hidden, E = a->experts, topk = a->top_k, fe = a->moe_ffn_hidden, fs = a->shared_ffn_hidden;
	int swiglu = a->mlp == MODEL_MLP_SWIGLU;
	double per_ffn = swiglu ? 3 : 2; /* weights per unit of FFN width per unit of h */
	double expert_w = per_ffn * h * fe + (a->biases ? (swiglu ? 2 : 1) * fe + h : 0); /* one expert */
	double shared_w = per_ffn * h * fs + (a->biases && fs > 0 ? (swiglu ? 2 : 1) * fs + h : 0);
	double router_w = h * E;
	double u = elem / 2;

	/* the attention half and the norms: the dense block without its MLP */
	dense.ffn_hidden = 0;
	catalog_block_spec(&dense, elem, s, keys, out);
	out->name = "moe_block";
	if (a->biases) /* the dense MLP's output bias (h) is not there */
		out->parameters -= h;
	out->parameters += router_w + E * expert_w + shared_w;
	out->expert_parameters = E * expert_w;
	out->expert_flops = 2 * topk * per_ffn * h * fe * s;
	out->flops += 2 * router_w * s + out->expert_flops + 2 * per_ffn * h * fs * s;
	/* kept: the router's fp32 logits and probabilities (2 x 4 s E bytes, not
	 * split), every routed copy of a token at the experts' input and the
	 * experts' inner tensors (GeLU 4, SwiGLU 6 per 2-byte unit of fe), the
	 * shared experts' inner tensors */
	out->expert_act = u * topk * s * (2 * h + (swiglu ? 6 : 4) * fe);
	out->act_fixed += 8 * s * E;
	out->act_split += out->expert_act + u * (swiglu ? 6 : 4) * s * fs;
	/* memory-bound: the router's softmax and top-k (fp32 read and write, 3 x
	 * 4 s E), the permutation and its inverse (each reads and writes every
	 * routed copy: 4 top_k s h elements), the experts' and shared experts'
	 * activation functions (SiLU and product 5, GeLU 2 per element) */
	out->mem_fixed += 12 * s * E + 4 * topk * s * h * elem;
	out->mem_split += (swiglu ? 5 : 2) * (topk * s * fe + s * fs) * elem;
	/* FP8: the experts' and shared experts' GEMMs; their inputs cast (the
	 * dense block counted one MLP input, s h, that is not there) */
	out->fp8_flops += out->expert_flops + 2 * per_ffn * h * fs * s;
	out->fp8_cast += 3 * (topk * s * (h + fe) + (fs > 0 ? s * (h + fs) : 0) - s * h);
	/* FP8-kept inputs: the routed copies at the experts' first GEMM and the experts' second
	 * GEMM's input, the shared experts' (the dense MLP's, s h and s f = 0, are not there) */
	out->fp8_saved += (elem - 1) * (topk * s * h + (fs > 0 ? s * h : 0) - s * h);
	out->fp8_saved_split += (elem - 1) * (topk * s * fe + s * fs);
	out->experts = E;
	out->expert_gemm_dim = fe;
	out->expert_tokens = topk * s;
	out->dispatch_bytes = topk * s * h * elem;
	out->expert_load = a->expert_load > 0 ? a->expert_load : a->capacity_factor > 1 ? a->capacity_factor : 0;
	/* the dense MLP's kernels become Megatron-Core's MoE layer's (core_v0.15,
	 * fused router and permutation, the published recipes' settings;
	 * docs/catalog.md): router 7, dispatch metadata 6 + its all-gather,
	 * permute 4, the two dispatch all-to-alls, sort by local expert 2, the
	 * activation 1, unsort 3, the combine all-to-all, unpermute 1: 28 [, the
	 * shared experts' MLP]; and per local expert the grouped linears' own
	 * GEMMs, fc1 and fc2 (Transformer Engine's GroupedLinear issues one
	 * cuBLASLt GEMM per expert) */
	out->kernels += 28 + (fs > 0 ? (swiglu ? 5 : 3) : 0) - (swiglu ? 5 : 3);
	out->kernels_per_local_expert = 2;
	/* dropless: the host waits for the per-expert token counts before the
	 * dispatch (the all-to-all's splits and the GEMMs' rows are host lists);
	 * a capacity factor is priced padded to capacity, with static shapes */
	out->expert_sync = a->capacity_factor > 0 ? 0 : 1;
}

/* 1 when block k of a is a MoE block, 2 when its attention is windowed (bits). */
static int catalog_block_kind(const struct model_arch *a, int k)
{
	int every = a->moe_every > 0 ? a->moe_every : 1, wevery = a->window_every > 0 ? a->window_every : 1;
	int moe = a->experts > 0 && k >= a->moe_first_dense && (k - a->moe_first_dense) % every == 0;
	int windowed = a->window > 0 && a->window < a->seq_len && k % wevery == 0;

	return moe | windowed << 1;
}

/* Builds the chain first -> L x middle -> last (ViT and catalog_transformer). */
static uniap_code catalog_build_chain(const char *name, const struct model_arch *a,
                                      const struct catalog_type_spec *first, const struct catalog_type_spec *middle,
                                      const struct catalog_type_spec *last, struct model_profile *m,
                                      struct uniap_err *err)
{
	struct catalog_builder b;
	size_t t_first = 0, t_mid = 0, t_last = 0, i, n = (size_t)a->layers + 2;
	int k;
	uniap_code rc = catalog_builder_init(&b, m, name, a, 3, n, n - 1, err);

	if (rc == UNIAP_OK)
		rc = catalog_add_type(&b, first, &t_first, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_type(&b, middle, &t_mid, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_type(&b, last, &t_last, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_layer(&b, first->name, -1, t_first, err);
	for (k = 0; rc == UNIAP_OK && k < a->layers; k++)
		rc = catalog_add_layer(&b, middle->name, k, t_mid, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_layer(&b, last->name, -1, t_last, err);
	for (i = 0; rc == UNIAP_OK && i + 1 < n; i++)
		rc = catalog_add_edge(&b, i, i + 1, err);
	return rc;
}

/*
 * embedding -> block.0 .. block.L-1 -> head where the blocks are of up to
 * four kinds (dense or MoE, full or windowed attention), each kind's layer
 * type made once, in the order of first use (catalog_transformer).
 */
static uniap_code catalog_build_blocks(const char *name, const struct model_arch *a, double elem,
                                       const struct catalog_type_spec *emb, const struct catalog_type_spec *head,
                                       struct model_profile *m, struct uniap_err *err)
{
	static const char *const names[4] = { "block", "moe_block", "block_window", "moe_block_window" };
	struct catalog_builder b;
	size_t t_emb = 0, t_head = 0, t_kind[4] = { 0, 0, 0, 0 }, i, n = (size_t)a->layers + 2;
	int made[4] = { 0, 0, 0, 0 }, kinds = 0, k;
	uniap_code rc;

	for (k = 0; k < a->layers; k++)
		if (!made[catalog_block_kind(a, k)]) {
			made[catalog_block_kind(a, k)] = 1;
			kinds++;
		}
	memset(made, 0, sizeof(made));
	rc = catalog_builder_init(&b, m, name, a, 2 + (size_t)kinds, n, n - 1, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_type(&b, emb, &t_emb, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_layer(&b, emb->name, -1, t_emb, err);
	for (k = 0; rc == UNIAP_OK && k < a->layers; k++) {
		int kind = catalog_block_kind(a, k);

		if (!made[kind]) {
			struct catalog_type_spec spec;
			double keys = kind & 2 ? a->window : a->seq_len;

			if (kind & 1)
				catalog_moe_block_spec(a, elem, a->seq_len, keys, &spec);
			else
				catalog_block_spec(a, elem, a->seq_len, keys, &spec);
			spec.name = names[kind];
			rc = catalog_add_type(&b, &spec, &t_kind[kind], err);
			made[kind] = 1;
		}
		if (rc == UNIAP_OK)
			rc = catalog_add_layer(&b, "block", k, t_kind[kind], err);
	}
	if (rc == UNIAP_OK)
		rc = catalog_add_type(&b, head, &t_head, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_layer(&b, head->name, -1, t_head, err);
	for (i = 0; rc == UNIAP_OK && i + 1 < n; i++)
		rc = catalog_add_edge(&b, i, i + 1, err);
	return rc;
}

/* Largest value of the integer sizes of an architecture (hidden, heads, ...). */
#define CATALOG_ARCH_MAX_DIM 1e7

/* v is an integer in [1, CATALOG_ARCH_MAX_DIM]. */
static int catalog_dim_ok(double v)
{
	return v >= 1 && v <= CATALOG_ARCH_MAX_DIM && v == floor(v);
}

/* The rules of an architecture that a decoder cannot see field by field. */
static uniap_code catalog_arch_check(const struct model_arch *a, struct uniap_err *err)
{
	static const char *const dims[] = { "hidden", "heads", "seq_len", "vocab" };
	const double vals[] = { a->hidden, a->heads, a->seq_len, a->vocab };
	size_t i;

	if (a->layers < 1 || a->layers > MODEL_MAX_LAYERS - 2)
		return err_set(err, UNIAP_E_INVALID, "model.architecture.layers: must be between 1 and %d, got %d",
		               MODEL_MAX_LAYERS - 2, a->layers);
	for (i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
		if (!catalog_dim_ok(vals[i]))
			return err_set(err, UNIAP_E_INVALID,
			               "model.architecture.%s: must be an integer between 1 and %g, got %g", dims[i],
			               CATALOG_ARCH_MAX_DIM, vals[i]);
	if (a->head_dim != 0 && !catalog_dim_ok(a->head_dim))
		return err_set(err, UNIAP_E_INVALID,
		               "model.architecture.head_dim: must be an integer between 1 and %g, got %g",
		               CATALOG_ARCH_MAX_DIM, a->head_dim);
	if (a->head_dim == 0 && fmod(a->hidden, a->heads) != 0)
		return err_set(err, UNIAP_E_INVALID, "model.architecture.heads: must divide hidden (%g) unless "
		               "head_dim is given, got %g", a->hidden, a->heads);
	if (a->kv_heads != 0 && (!catalog_dim_ok(a->kv_heads) || fmod(a->heads, a->kv_heads) != 0))
		return err_set(err, UNIAP_E_INVALID, "model.architecture.kv_heads: must divide heads (%g), got %g",
		               a->heads, a->kv_heads);
	if (a->ffn_hidden != 0 && !catalog_dim_ok(a->ffn_hidden))
		return err_set(err, UNIAP_E_INVALID,
		               "model.architecture.ffn_hidden: must be an integer between 1 and %g, got %g",
		               CATALOG_ARCH_MAX_DIM, a->ffn_hidden);
	if (a->kv_lora_rank != 0) {
		static const char *const f[] = { "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim" };
		const double v[] = { a->kv_lora_rank, a->qk_nope_head_dim, a->qk_rope_head_dim, a->v_head_dim };
		size_t j;

		for (j = 0; j < 4; j++)
			if (!catalog_dim_ok(v[j]))
				return err_set(err, UNIAP_E_INVALID,
				               "model.architecture.mla.%s: must be an integer between 1 and %g, got %g", f[j],
				               CATALOG_ARCH_MAX_DIM, v[j]);
		if (a->q_lora_rank != 0 && !catalog_dim_ok(a->q_lora_rank))
			return err_set(err, UNIAP_E_INVALID,
			               "model.architecture.mla.q_lora_rank: must be an integer between 0 and %g, got %g",
			               CATALOG_ARCH_MAX_DIM, a->q_lora_rank);
	}
	if (a->window != 0 && !catalog_dim_ok(a->window))
		return err_set(err, UNIAP_E_INVALID,
		               "model.architecture.window: must be an integer between 1 and %g, got %g",
		               CATALOG_ARCH_MAX_DIM, a->window);
	if (a->window_every < 0 || a->window_every > MODEL_MAX_LAYERS)
		return err_set(err, UNIAP_E_INVALID, "model.architecture.window_every: must be between 0 and %d, got %d",
		               MODEL_MAX_LAYERS, a->window_every);
	if (a->experts != 0) {
		if (a->experts < 1 || a->experts > 4096)
			return err_set(err, UNIAP_E_INVALID, "model.architecture.moe.experts: must be between 1 and 4096, "
			               "got %d", a->experts);
		if (a->top_k < 1 || a->top_k > a->experts)
			return err_set(err, UNIAP_E_INVALID, "model.architecture.moe.top_k: must be between 1 and experts "
			               "(%d), got %d", a->experts, a->top_k);
		if (!catalog_dim_ok(a->moe_ffn_hidden))
			return err_set(err, UNIAP_E_INVALID, "model.architecture.moe.expert_ffn_hidden: must be an integer "
			               "between 1 and %g, got %g", CATALOG_ARCH_MAX_DIM, a->moe_ffn_hidden);
		if (a->shared_ffn_hidden != 0 && !catalog_dim_ok(a->shared_ffn_hidden))
			return err_set(err, UNIAP_E_INVALID, "model.architecture.moe.shared_ffn_hidden: must be an "
			               "integer between 0 and %g, got %g", CATALOG_ARCH_MAX_DIM, a->shared_ffn_hidden);
		if (a->moe_every < 0 || a->moe_every > a->layers)
			return err_set(err, UNIAP_E_INVALID, "model.architecture.moe.every: must be between 1 and layers "
			               "(%d), got %d", a->layers, a->moe_every);
		if (a->moe_first_dense < 0 || a->moe_first_dense >= a->layers)
			return err_set(err, UNIAP_E_INVALID, "model.architecture.moe.first_dense: must be below layers "
			               "(%d), got %d", a->layers, a->moe_first_dense);
		if (a->capacity_factor != 0 && !(a->capacity_factor >= 1 && a->capacity_factor <= 64))
			return err_set(err, UNIAP_E_INVALID, "model.architecture.moe.capacity_factor: must be between 1 "
			               "and 64 (absent: dropless), got %g", a->capacity_factor);
		if (a->expert_load != 0 && !(a->expert_load >= 1 && a->expert_load <= 64))
			return err_set(err, UNIAP_E_INVALID, "model.architecture.moe.load_imbalance: must be between 1 "
			               "and 64 (1: balanced), got %g", a->expert_load);
	}
	if ((unsigned)a->family > MODEL_ARCH_ENCODER || (unsigned)a->mlp > MODEL_MLP_SWIGLU ||
	    (unsigned)a->norm > MODEL_NORM_RMSNORM || (unsigned)a->positions > MODEL_POS_ROTARY ||
	    (unsigned)a->precision > MODEL_MIXED || (unsigned)a->optimizer > MODEL_SGD)
		return err_set(err, UNIAP_E_INVALID, "model.architecture: an enumerated field is out of range");
	return UNIAP_OK;
}

/* Embedding and head of a BERT-style encoder or a GPT/Llama-style decoder. */
static void catalog_ends_spec(const struct model_arch *a, double elem, struct catalog_type_spec *emb,
                              struct catalog_type_spec *head)
{
	double h = a->hidden, s = a->seq_len, v = a->vocab;
	int learned = a->positions == MODEL_POS_LEARNED, encoder = a->family == MODEL_ARCH_ENCODER;

	memset(emb, 0, sizeof(*emb));
	memset(head, 0, sizeof(*head));
	/* word table [+ learned positions] [+ 2 token types + LayerNorm] */
	emb->name = "embedding";
	emb->parameters = v * h + (learned ? s * h : 0) + (encoder ? 2 * h + catalog_norm_params(a, h) : 0);
	emb->flops = s * h; /* the position add; a lookup is not FLOPs */
	emb->output_bytes = emb->checkpoint_bytes = emb->act_fixed = s * h * elem;
	emb->tp_allreduces = 1; /* vocabulary-parallel embedding (Megatron-LM) */
	/* gather 2 s h, position add 3 s h, token-type add 3 s h + norm 2 s h, dropout */
	emb->mem_fixed = elem * s * h * (2 + (learned ? 3 : 0) + (encoder ? 5 : 0)) +
	                 (a->dropout ? s * h * (2 * elem + 1) : 0);
	emb->kernels = 1 + (learned ? 2 : 0) + (encoder ? 2 + catalog_norm_kernels(a) : 0) + (a->dropout ? 1 : 0);
	emb->tokens = s;
	head->name = "head";
	head->output_bytes = head->checkpoint_bytes = s * h * elem;
	head->tp_allreduces = 1;
	head->act_split = s * v * 4; /* fp32 logits for the loss, vocabulary-parallel */
	head->mem_split = 8 * s * v;  /* the loss reads and writes them */
	head->gemm_dim = v;           /* the vocabulary is what TP splits */
	head->tokens = s;
	if (encoder) { /* MLM transform (dense + GeLU + norm) and decoder bias; the decoder matrix tied */
		head->parameters = h * h + (a->biases ? h + v : 0) + catalog_norm_params(a, h) +
		                   (a->tied_embeddings ? 0 : v * h);
		head->flops = 2 * s * (h * h + h * v);
		head->act_fixed = 2 * s * h * elem;
		head->mem_fixed = 4 * s * h * elem;
		head->kernels = 3 + catalog_norm_kernels(a) + 2;
	} else { /* final norm and LM head */
		head->parameters = catalog_norm_params(a, h) + (a->tied_embeddings ? 0 : v * h);
		head->flops = 2 * s * h * v;
		head->act_fixed = s * h * elem;
		head->mem_fixed = 2 * s * h * elem;
		head->kernels = catalog_norm_kernels(a) + 1 + 2;
	}
}

uniap_code catalog_transformer(const char *name, const struct model_arch *a, struct model_profile *out,
                               struct uniap_err *err)
{
	struct catalog_type_spec emb, blk, head;
	struct model_arch r;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "catalog_transformer: out is NULL");
	memset(out, 0, sizeof(*out));
	if (!a)
		return err_set(err, UNIAP_E_ARG, "catalog_transformer: a is NULL");
	rc = catalog_arch_check(a, err);
	if (rc != UNIAP_OK)
		return rc;
	r = *a;
	if (r.kv_heads == 0)
		r.kv_heads = r.heads;
	if (r.ffn_hidden == 0)
		r.ffn_hidden = 4 * r.hidden;
	catalog_block_spec(&r, r.precision == MODEL_MIXED ? 2 : 4, r.seq_len, r.seq_len, &blk);
	catalog_ends_spec(&r, r.precision == MODEL_MIXED ? 2 : 4, &emb, &head);
	if (r.experts > 0 || (r.window > 0 && r.window < r.seq_len))
		rc = catalog_build_blocks(name, &r, r.precision == MODEL_MIXED ? 2 : 4, &emb, &head, out, err);
	else
		rc = catalog_build_chain(name, &r, &emb, &blk, &head, out, err);
	if (rc == UNIAP_OK) {
		struct model_shape *sh = &out->shape;

		sh->known = 1;
		sh->encoder = r.family == MODEL_ARCH_ENCODER;
		sh->layers = r.layers;
		sh->hidden = (long)r.hidden;
		sh->heads = (long)r.heads;
		sh->kv_heads = (long)r.kv_heads;
		sh->ffn_hidden = (long)r.ffn_hidden;
		sh->seq_len = (long)r.seq_len;
		sh->vocab = (long)r.vocab;
		sh->mlp = r.mlp == MODEL_MLP_SWIGLU ? MODEL_SHAPE_SWIGLU : MODEL_SHAPE_GELU;
		sh->norm = r.norm == MODEL_NORM_RMSNORM ? MODEL_SHAPE_RMSNORM : MODEL_SHAPE_LAYERNORM;
		sh->positions = r.positions == MODEL_POS_ROTARY ? MODEL_SHAPE_ROTARY : MODEL_SHAPE_LEARNED;
		sh->biases = r.biases;
		sh->tied_embeddings = r.tied_embeddings;
		sh->flash_attention = r.flash_attention;
		sh->head_dim = r.head_dim > 0 ? (long)r.head_dim : 0;
		sh->window = r.window > 0 && r.window < r.seq_len ? (long)r.window : 0;
		sh->window_every = sh->window ? (r.window_every > 0 ? r.window_every : 1) : 0;
		sh->experts = r.experts;
		sh->router_sigmoid = r.router_sigmoid;
		if (r.kv_lora_rank > 0) {
			sh->q_lora_rank = (long)r.q_lora_rank;
			sh->kv_lora_rank = (long)r.kv_lora_rank;
			sh->qk_nope_head_dim = (long)r.qk_nope_head_dim;
			sh->qk_rope_head_dim = (long)r.qk_rope_head_dim;
			sh->v_head_dim = (long)r.v_head_dim;
		}
		if (r.experts > 0) {
			sh->top_k = r.top_k;
			sh->moe_ffn_hidden = (long)r.moe_ffn_hidden;
			sh->shared_ffn_hidden = (long)r.shared_ffn_hidden;
			sh->moe_every = r.moe_every > 0 ? r.moe_every : 1;
			sh->moe_first_dense = r.moe_first_dense;
			sh->capacity_factor = r.capacity_factor;
		}
		rc = model_validate(out, err);
	}
	if (rc != UNIAP_OK)
		model_release(out);
	return rc;
}

/* ViT: patch embedding + class token + positions -> blocks -> LayerNorm + classifier. */
static uniap_code catalog_build_vit(const struct catalog_model_def *d, struct model_profile *m,
                                    struct uniap_err *err)
{
	const struct model_arch *a = &d->a;
	struct catalog_type_spec emb, blk, head;
	double h = a->hidden, s = a->seq_len, v = a->vocab, elem = 4, patch = 3 * 16 * 16;

	catalog_block_spec(a, elem, s, s, &blk);
	memset(&emb, 0, sizeof(emb));
	memset(&head, 0, sizeof(head));
	emb.name = "embedding"; /* 16x16x3 patch projection + class token + positions */
	emb.parameters = patch * h + h + h + s * h;
	emb.flops = 2 * patch * h * (s - 1);
	emb.output_bytes = emb.checkpoint_bytes = emb.act_fixed = s * h * elem;
	emb.mem_fixed = 5 * s * h * elem; /* class-token concatenation 2 s h, position add 3 s h */
	emb.kernels = 4;                  /* convolution, flatten copy, concatenation, position add */
	emb.gemm_dim = h;
	emb.tokens = s - 1;
	head.name = "head"; /* LayerNorm over every token, class token, classifier */
	head.parameters = 2 * h + h * v + v;
	head.flops = 2 * h * v;
	head.act_fixed = s * h * elem;
	head.mem_fixed = 2 * s * h * elem;
	head.kernels = 3;
	head.output_bytes = head.checkpoint_bytes = v * elem;
	return catalog_build_chain(d->entry.name, a, &emb, &blk, &head, m, err);
}

/*
 * T5: embedding -> encoder chain; embedding -> decoder.0; last encoder layer
 * -> every decoder layer (cross-attention); decoder chain -> head.
 */
static uniap_code catalog_build_t5(const struct catalog_model_def *d, struct model_profile *m,
                                   struct uniap_err *err)
{
	const struct model_arch *a = &d->a;
	struct catalog_builder b;
	struct catalog_type_spec emb, enc, dec, head;
	double h = a->hidden, heads = a->heads, sq = a->seq_len, v = a->vocab, elem = 4, u = elem / 2;
	size_t L = (size_t)a->layers, n = 2 * L + 2, t_emb = 0, t_enc = 0, t_dec = 0, t_head = 0, i;
	size_t first_dec = 1 + L, last_enc = L, head_index = 2 * L + 1;
	int k;
	uniap_code rc = catalog_builder_init(&b, m, d->entry.name, a, 4, n, (L - 1) + 1 + 1 + L + (L - 1) + 1, err);

	if (rc != UNIAP_OK)
		return rc;
	memset(&emb, 0, sizeof(emb));
	memset(&head, 0, sizeof(head));
	emb.name = "embedding";
	emb.parameters = v * h + 2 * 32 * heads; /* shared embedding + relative position buckets of both stacks */
	emb.flops = sq * h;
	emb.output_bytes = emb.checkpoint_bytes = emb.act_fixed = sq * h * elem;
	emb.mem_fixed = sq * h * (2 * elem + 2 * elem + 1); /* gather, dropout */
	emb.kernels = 2;
	emb.tokens = sq;
	emb.tp_allreduces = 1;
	/* encoder block: no biases, RMS-style LayerNorm with a scale only (the
	 * Transformer block of catalog_block_spec() with those choices) */
	catalog_block_spec(a, elem, sq, sq, &enc);
	enc.name = "encoder_block";
	/* decoder block: one more attention sub-layer (cross-attention) with its
	 * norm: 5 s h fixed + (8 s h + 5 a s^2) / t activation bytes (Korthikanti's split) */
	dec = enc;
	dec.name = "decoder_block";
	dec.parameters += 4 * h * h + h;
	dec.flops += 2 * 4 * h * h * sq + 4 * sq * sq * h;
	dec.act_fixed += u * 5 * sq * h;
	dec.act_split += u * (8 * sq * h + 5 * heads * sq * sq);
	dec.mem_fixed += elem * sq * h * 5 + sq * h * (2 * elem + 1);
	dec.mem_split += heads * sq * sq * (4 * elem + 1);
	dec.attn_eager += heads * sq * sq * (4 * elem + (elem < 4 ? 8 : 0)); /* the cross-attention's scores too */
	dec.kernels += catalog_norm_kernels(a) + catalog_attention_kernels(a);
	dec.tp_allreduces = 3;
	head.name = "head"; /* final LayerNorms of both stacks; the LM head is tied to the embedding */
	head.parameters = 2 * h;
	head.flops = 2 * sq * h * v;
	head.act_fixed = sq * h * elem;
	head.act_split = sq * v * 4;
	head.mem_fixed = 2 * 2 * sq * h * elem;
	head.mem_split = 8 * sq * v;
	head.kernels = 2 * catalog_norm_kernels(a) + 3;
	head.gemm_dim = v;
	head.tokens = sq;
	head.output_bytes = head.checkpoint_bytes = sq * h * elem;
	head.tp_allreduces = 1;
	rc = catalog_add_type(&b, &emb, &t_emb, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_type(&b, &enc, &t_enc, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_type(&b, &dec, &t_dec, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_type(&b, &head, &t_head, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_layer(&b, "embedding", -1, t_emb, err);
	for (k = 0; rc == UNIAP_OK && k < a->layers; k++)
		rc = catalog_add_layer(&b, "encoder", k, t_enc, err);
	for (k = 0; rc == UNIAP_OK && k < a->layers; k++)
		rc = catalog_add_layer(&b, "decoder", k, t_dec, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_layer(&b, "head", -1, t_head, err);
	for (i = 0; rc == UNIAP_OK && i < L; i++) /* embedding -> encoder chain */
		rc = catalog_add_edge(&b, i, i + 1, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_edge(&b, 0, first_dec, err);
	for (i = 0; rc == UNIAP_OK && i < L; i++)
		rc = catalog_add_edge(&b, last_enc, first_dec + i, err);
	for (i = 0; rc == UNIAP_OK && i + 1 < L; i++)
		rc = catalog_add_edge(&b, first_dec + i, first_dec + i + 1, err);
	if (rc == UNIAP_OK)
		rc = catalog_add_edge(&b, head_index - 1, head_index, err);
	return rc;
}

/* Swin: patch embedding, four stages of blocks with patch merging between them, head. */
static uniap_code catalog_build_swin(const struct catalog_model_def *d, struct model_profile *m,
                                     struct uniap_err *err)
{
	static const char *const block_names[4] = { "stage1_block", "stage2_block", "stage3_block", "stage4_block" };
	static const char *const merge_names[3] = { "merge1", "merge2", "merge3" };
	static const char *const stage_names[4] = { "stage1", "stage2", "stage3", "stage4" };
	struct catalog_builder b;
	struct catalog_type_spec s;
	struct model_arch stage = d->a;
	double elem = 4, c = d->a.hidden, tokens = d->a.seq_len, w = CATALOG_SWIN_WINDOW_TOKENS;
	size_t n = 1 + 3 + 1, types[9] = { 0 }, i;
	int st, k;
	uniap_code rc;

	for (st = 0; st < 4; st++)
		n += (size_t)catalog_swin_depths[st];
	rc = catalog_builder_init(&b, m, d->entry.name, &d->a, 9, n, n - 1, err);
	if (rc != UNIAP_OK)
		return rc;
	memset(&s, 0, sizeof(s));
	s.name = "patch_embed"; /* 4x4x3 -> C projection + LayerNorm */
	s.parameters = CATALOG_SWIN_PATCH_INPUTS * c + c + 2 * c;
	s.flops = 2 * CATALOG_SWIN_PATCH_INPUTS * c * tokens;
	s.act_fixed = 2 * tokens * c * elem;
	s.mem_fixed = 3 * tokens * c * elem; /* flatten copy, LayerNorm */
	s.kernels = 3;
	s.output_bytes = s.checkpoint_bytes = tokens * c * elem;
	rc = catalog_add_type(&b, &s, &types[0], err);
	for (st = 0; rc == UNIAP_OK && st < 4; st++) {
		/* block of width c over `tokens` tokens, attention inside 7x7 windows
		 * (each query sees 49 keys), plus the relative position bias table */
		stage.hidden = c;
		stage.ffn_hidden = 4 * c;
		catalog_block_spec(&stage, elem, tokens, w, &s);
		s.name = block_names[st];
		s.parameters += (2 * 7 - 1) * (2 * 7 - 1) * stage.heads;
		s.kernels += 4; /* window partition, shift, reverse, position-bias add */
		/* HuggingFace's SwinLayer copies the tensor into windows and back
		 * (window_partition, window_reverse: view + permute + contiguous) and
		 * every second block rolls it before and after (torch.roll of the
		 * shifted windows): 3 copies read and written per block on average;
		 * SwinSelfAttention adds the relative position bias to the scores,
		 * and the shifted blocks their mask (read and write, 1.5 per block) */
		s.mem_fixed += 3 * 2 * tokens * c * elem;
		s.mem_split += 1.5 * 2 * stage.heads * tokens * w * elem;
		rc = catalog_add_type(&b, &s, &types[1 + st], err);
		if (rc != UNIAP_OK || st == 3)
			break;
		/* patch merging: 2x2 neighbours concatenated (4C), LayerNorm, linear 4C -> 2C */
		memset(&s, 0, sizeof(s));
		s.name = merge_names[st];
		s.parameters = 8 * c * c + 8 * c;
		s.flops = 2 * 8 * c * c * (tokens / 4);
		s.act_fixed = 2 * tokens * c * elem;
		s.mem_fixed = 4 * tokens * c * elem; /* concatenation copy, LayerNorm */
		s.kernels = 3;
		s.gemm_dim = 2 * c;
		s.tokens = tokens / 4;
		s.output_bytes = s.checkpoint_bytes = (tokens / 4) * 2 * c * elem;
		rc = catalog_add_type(&b, &s, &types[5 + st], err);
		c *= 2;
		stage.heads *= 2;
		stage.kv_heads *= 2;
		tokens /= 4;
	}
	if (rc == UNIAP_OK) {
		memset(&s, 0, sizeof(s));
		s.name = "head"; /* LayerNorm, average pool, classifier */
		s.parameters = 2 * c + c * d->a.vocab + d->a.vocab;
		s.flops = 2 * c * d->a.vocab + tokens * c;
		s.act_fixed = tokens * c * elem;
		s.mem_fixed = 3 * tokens * c * elem;
		s.kernels = 3;
		s.output_bytes = s.checkpoint_bytes = d->a.vocab * elem;
		rc = catalog_add_type(&b, &s, &types[8], err);
	}
	if (rc == UNIAP_OK)
		rc = catalog_add_layer(&b, "patch_embed", -1, types[0], err);
	for (st = 0; rc == UNIAP_OK && st < 4; st++) {
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "%s.block", stage_names[st]);
		for (k = 0; rc == UNIAP_OK && k < catalog_swin_depths[st]; k++)
			rc = catalog_add_layer(&b, prefix, k, types[1 + st], err);
		if (rc == UNIAP_OK && st < 3)
			rc = catalog_add_layer(&b, merge_names[st], -1, types[5 + st], err);
	}
	if (rc == UNIAP_OK)
		rc = catalog_add_layer(&b, "head", -1, types[8], err);
	for (i = 0; rc == UNIAP_OK && i + 1 < n; i++)
		rc = catalog_add_edge(&b, i, i + 1, err);
	return rc;
}

uniap_code catalog_model(const char *name, struct model_profile *out, struct uniap_err *err)
{
	const struct catalog_model_def *d;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "catalog_model: out is NULL");
	memset(out, 0, sizeof(*out));
	d = name ? catalog_find_model(name) : NULL;
	if (!d)
		return catalog_not_found(CATALOG_MODEL, name, err);
	switch (d->arch) {
	case CATALOG_ARCH_TRANSFORMER:
		return catalog_transformer(d->entry.name, &d->a, out, err);
	case CATALOG_ARCH_T5:
		rc = catalog_build_t5(d, out, err);
		break;
	case CATALOG_ARCH_SWIN:
		rc = catalog_build_swin(d, out, err);
		break;
	case CATALOG_ARCH_VIT:
	default:
		rc = catalog_build_vit(d, out, err);
		break;
	}
	if (rc == UNIAP_OK)
		rc = model_validate(out, err);
	if (rc != UNIAP_OK)
		model_release(out);
	return rc;
}
