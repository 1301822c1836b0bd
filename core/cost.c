/*
 * cost.c - the cost model: prices every (layer, strategy) and every (edge,
 * strategy pair) of one candidate.  Every formula is written down, with its
 * source, in docs/cost-model.md; the comments here only point at it.
 *
 * Units: seconds, bytes, bytes per second.  Never: I/O, solving.
 */
#include "cost.h"
#include "fracmemo.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *cost_schedule_name(enum cost_schedule s)
{
	return s == COST_INTERLEAVED ? "interleaved" : s == COST_1F1B ? "1f1b" : "gpipe";
}

int cost_schedule_parse(const char *s, enum cost_schedule *out)
{
	if (strcmp(s, "gpipe") == 0)
		*out = COST_GPIPE;
	else if (strcmp(s, "1f1b") == 0)
		*out = COST_1F1B;
	else if (strcmp(s, "interleaved") == 0)
		*out = COST_INTERLEAVED;
	else
		return -1;
	return 0;
}

double cost_overlap_s(double x, double y, double ccoc)
{
	double hi = x > y ? x : y, lo = x > y ? y : x;

	return hi + (ccoc - 1.0) * lo;
}

/* Measured entry (size, placement) in one table, or 0. */
static double cost_table_bw(const struct cluster_bw *t, size_t n, int size, int consecutive)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].size == size && t[i].consecutive == consecutive)
			return t[i].bw_bytes_per_s;
	return 0;
}

/*
 * Groups of one dimension (size, stride) inside a stage that have a member in
 * one block of `block` consecutive ranks: they all run the same collective at
 * the same time, so they share the block's links (docs/cost-model.md,
 * "Contention").
 */
static int cost_groups_in_block(int size, int stride, int stage_devices, long block)
{
	long span = (long)size * stride, ids = (long)stage_devices / size, n = 0, r;
	long limit = block < stage_devices ? block : stage_devices;
	unsigned char *mark = ids > 0 ? calloc((size_t)ids, 1) : NULL;

	if (!mark)
		return 1; /* no contention assumed when out of memory: never fails */
	for (r = 0; r < limit; r++) {
		/* group id of rank r: its offset inside the span, then which span */
		long id = (r % stride) + (r / span) * stride;

		if (id < ids && !mark[id]) {
			mark[id] = 1;
			n++;
		}
	}
	free(mark);
	return n > 0 ? (int)n : 1;
}

/*
 * Bandwidth of the hierarchy level lv for `concurrent` transfers that leave
 * one group of the level below at once: the group's links (devices /
 * shared_by of them) are shared evenly (docs/cost-model.md, "Contention").
 */
static double cost_level_bw(const struct cluster_profile *c, size_t lv, long concurrent)
{
	const struct cluster_level *l = &c->levels[lv];
	long block, links, per_link;

	if (lv == 0 || l->shared_by <= 1 || concurrent <= 1)
		return l->bw_bytes_per_s;
	block = c->levels[lv - 1].devices;
	links = block / l->shared_by;
	if (links < 1)
		links = 1;
	per_link = (concurrent + links - 1) / links;
	return l->bw_bytes_per_s / (double)per_link;
}

/*
 * Bus bandwidth of a collective (docs/cost-model.md, "Bandwidth lookup"): the
 * measured entry of the same kind, size and placement (all-gather and
 * reduce-scatter borrow the all-reduce table when theirs is absent); else the
 * bandwidth of the smallest hierarchy level that holds every group, shared by
 * the groups that cross the same link.
 */
static double cost_bus_bw_at(const struct cluster_profile *c, enum cluster_coll kind, int size,
                             int stride, int stage_devices, int lv)
{
	enum cluster_coll k = c->n_coll[kind] ? kind : CLUSTER_ALLREDUCE;
	double bw = cost_table_bw(c->coll[k], c->n_coll[k], size, stride == 1);

	if (bw > 0)
		return bw;
	if (lv > 0 && c->levels[lv].shared_by > 1)
		return cost_level_bw(c, (size_t)lv,
		                     cost_groups_in_block(size, stride, stage_devices, c->levels[lv - 1].devices));
	return c->levels[lv].bw_bytes_per_s;
}

/* The same, finding the group's level (lv above) first. */
static double cost_bus_bw(const struct cluster_profile *c, enum cluster_coll kind, int size,
                          int stride, int stage_devices, int pp)
{
	return cost_bus_bw_at(c, kind, size, stride, stage_devices,
	                      strategy_group_level(c, size, stride, stage_devices, pp));
}

double cost_collective_s(const struct cluster_profile *c, enum cluster_coll kind, double bytes,
                         int size, int stride, int stage_devices, int pp)
{
	double factor, steps;
	int lv;

	if (size <= 1 || bytes <= 0)
		return 0;
	/* nccl-tests bus-bandwidth factors: 2(n-1)/n for all-reduce, (n-1)/n
	 * otherwise; a ring takes 2(n-1) resp. (n-1) steps of the level's latency */
	factor = (double)(size - 1) / size;
	steps = size - 1;
	if (kind == CLUSTER_ALLREDUCE) {
		factor *= 2;
		steps *= 2;
	}
	lv = strategy_group_level(c, size, stride, stage_devices, pp);
	return steps * c->levels[lv].latency_s +
	       bytes * factor / cost_bus_bw_at(c, kind, size, stride, stage_devices, lv);
}

double cost_alltoall_s(const struct cluster_profile *c, double bytes, int size, int stride, int stage_devices,
                       int pp)
{
	double worst = 0;
	long below = 1; /* members of the group inside one block of the level below */
	int lv, top;

	if (size <= 1 || bytes <= 0)
		return 0;
	top = strategy_group_level(c, size, stride, stage_devices, pp);
	for (lv = 0; lv <= top; lv++) {
		long block = c->levels[lv].devices;
		long inside = lv == top ? size : block / stride < 1 ? 1 : block / stride < size ? block / stride : size;
		double bw;

		if (inside <= below)
			continue;
		/* every rank of a block below sends through this level's links at once */
		bw = lv > 0 ? cost_level_bw(c, (size_t)lv, stage_devices < c->levels[lv - 1].devices
		                                                 ? stage_devices : c->levels[lv - 1].devices)
		            : c->levels[lv].bw_bytes_per_s;
		/* the share of a rank's bytes bound for members first reached at this level */
		if (bytes * (double)(inside - below) / size / bw > worst)
			worst = bytes * (double)(inside - below) / size / bw;
		below = inside;
	}
	return (double)(size - 1) * c->levels[top].latency_s + worst;
}

/* Point-to-point link between consecutive stages (docs/cost-model.md,
 * "Cross-stage R'"): the smallest hierarchy level holding rank r and rank
 * r + stage_devices for every r (the same rank of two neighbouring stages);
 * its latency, and its bandwidth shared by the stage's devices that send
 * through one link at once.  A measured entry replaces the bandwidth. */
static void cost_p2p_link(const struct cluster_profile *c, int pp, int stage_devices, double *bw,
                          double *latency)
{
	long n = (long)pp * stage_devices, r;
	size_t i, lv;

	for (lv = 0; lv + 1 < c->n_levels; lv++) {
		long block = c->levels[lv].devices;

		for (r = 0; r + stage_devices < n; r++)
			if (r / block != (r + stage_devices) / block)
				break;
		if (r + stage_devices >= n)
			break;
	}
	*latency = c->levels[lv].latency_s;
	*bw = lv > 0 ? cost_level_bw(c, lv, stage_devices < c->levels[lv - 1].devices
	                                        ? stage_devices : c->levels[lv - 1].devices)
	             : c->levels[lv].bw_bytes_per_s;
	for (i = 0; i < c->n_p2p; i++)
		if (c->p2p[i].pp == pp)
			*bw = c->p2p[i].bw_bytes_per_s;
}

static long cost_ceil_div(long a, long b)
{
	return (a + b - 1) / b;
}

/* Achieved fraction of peak for a layer's GEMMs of size d (docs/cost-model.md,
 * "Layer time"): compute_efficiency * d / (d + gemm_half_dim), flat without
 * a curve or a shape. */
static double cost_efficiency(const struct cluster_profile *c, const struct model_layer_type *t, int tp,
                              double samples)
{
	double d;

	if (!(c->gemm_half_dim > 0) || !(t->gemm_dim > 0))
		return c->compute_efficiency;
	d = t->gemm_dim / tp;
	if (t->tokens_per_sample > 0 && samples * t->tokens_per_sample < d)
		d = samples * t->tokens_per_sample;
	return c->compute_efficiency * d / (d + c->gemm_half_dim);
}

/* Forward time of one micro-batch of `samples` samples on one device at TP
 * size tp (§Layer time): the fixed part plus the profiled time per sample, or
 * the FLOPs over the achieved peak plus the memory-bound bytes over the
 * memory bandwidth plus the kernel launches.  With sequence parallelism (sp)
 * the memory-bound operations run on 1/tp of the sequence (§Sequence
 * parallelism).  The runtime rt (§Runtime profile) scales the attention
 * core's memory-bound bytes and bounds the pass below by the host's time to
 * issue its kernels; a profiled time was measured under its runtime and is
 * taken as it is.  a2a_s: the layer's forward all-to-alls (dispatch and
 * combine); *sync_extra: what a host synchronisation before the dispatch
 * (expert_sync) adds to the pass and a2a_s together. */
static double cost_forward_s(const struct cluster_profile *c, const struct model_profile *m,
                             const struct model_layer_type *t, int tp, int sp, int ep, int etp,
                             double samples, const struct cost_runtime *rt, int fp8, double a2a_s,
                             double *sync_extra)
{
	double per_sample, mem = 0, device, host, pass, eff, fp8_flops = fp8 ? t->fp8_flops_per_sample : 0;

	double expert = t->experts > 0 ? t->expert_flops_per_sample : 0, expert_s = 0;
	/* launches of one forward pass: the layer's own and, on a MoE layer, its local experts' GEMMs */
	double expert_kernels = t->experts > 0 ? (double)t->kernels_per_local_expert * t->experts / (ep > 0 ? ep : 1) : 0;
	double kernels = t->kernels_per_pass + expert_kernels;

	if (t->n_forward_s > 0) {
		*sync_extra = 0;
		return t->forward_fixed_s + samples * model_tp_lookup(t->forward_s, t->n_forward_s, tp);
	}
	/* a MoE layer's routed experts run as one grouped GEMM whose rows per
	 * expert are the tokens routed to each local expert, the busiest rank's
	 * share of them (§Mixture of experts); under FP8 they are FP8 GEMMs */
	if (expert > 0) {
		/* experts split over tp (etp = tp): every token, 1/tp of the width; whole
		 * (etp 1, sequence parallel): the rank's 1/tp of the tokens, all of it */
		double rows = samples * t->expert_tokens_per_sample * ep / t->experts / (tp / etp);
		double d = t->expert_gemm_dim / etp;
		double eff_e = c->compute_efficiency, load = t->expert_load > 1 ? t->expert_load : 1;

		if (c->gemm_half_dim > 0 && d > 0) {
			if (rows > 0 && rows < d)
				d = rows;
			eff_e = c->compute_efficiency * d / (d + c->gemm_half_dim);
		}
		expert_s = load * expert / ((fp8_flops > 0 ? c->peak_fp8_flops_per_s : c->peak_flops_per_s[m->precision]) *
		                            eff_e) / tp;
		if (fp8_flops > 0)
			fp8_flops = fmax(0, fp8_flops - expert);
	}
	/* under FP8 the linear layers' GEMMs run at the FP8 peak, the rest (the
	 * attention core, norms, embedding, head) at the mixed one (§FP8) */
	eff = cost_efficiency(c, t, tp, samples);
	per_sample = (t->forward_flops_per_sample - expert - fp8_flops) / (c->peak_flops_per_s[m->precision] * eff) / tp +
	             (fp8_flops > 0 ? fp8_flops / (c->peak_fp8_flops_per_s * eff) / tp : 0) + expert_s;
	if (t->n_memory_bound_bytes > 0 && c->memory_bandwidth_bytes_per_s > 0) {
		mem = model_tp_lookup(t->memory_bound_bytes, t->n_memory_bound_bytes, tp);
		if (sp)
			mem = fmin(mem, model_tp_lookup(t->memory_bound_bytes, t->n_memory_bound_bytes, 1) / tp);
		if (rt->eager_attention)
			mem += t->eager_attention_bytes_per_sample / tp;
		if (fp8_flops > 0)
			mem += t->fp8_cast_bytes_per_sample / tp;
		mem /= c->memory_bandwidth_bytes_per_s;
	}
	device = t->forward_fixed_s + kernels * c->kernel_overhead_s + samples * (per_sample + mem);
	host = kernels * rt->host_s_per_kernel;
	pass = fmax(device, host);
	/* dropless routing: the host waits for the device before each dispatch,
	 * so it starts the experts' half (B: the dispatch, the local experts'
	 * GEMMs and launches, the combine) with no work queued, and the device
	 * follows it kernel by kernel; from one wait to the next (B, then the
	 * next layer's half before its dispatch, A) the iteration takes the
	 * longest of: the device throughout (D + a2a), the host throughout (H),
	 * and the host through B's launches, then the device through the combine
	 * and A (H_b + a2a_s / 2 + D_a).  sync_extra is what the last adds to
	 * pass + a2a_s (§Mixture of experts, "Host time") */
	*sync_extra = 0;
	if (t->experts > 0 && t->expert_sync) {
		double dev_b = samples * expert_s + expert_kernels * c->kernel_overhead_s;
		double host_b = expert_kernels * rt->host_s_per_kernel;

		*sync_extra = fmax(0, host_b + a2a_s / 2 + (device - dev_b) - (pass + a2a_s));
	}
	return pass;
}

/* Bytes of device memory one optimizer step moves per parameter: Adam reads
 * parameter, gradient and both moments and writes parameter and moments (fp32:
 * 4 * 4 + 3 * 4 = 28; mixed precision also reads the fp16 gradient and writes
 * the fp16 copy: 30); SGD with momentum 20 / 22, plain SGD 12 / 14
 * (docs/cost-model.md, "Optimizer step"). */
static double cost_optimizer_bytes_per_param(const struct model_profile *m)
{
	double b;

	switch (m->optimizer) {
	case MODEL_SGD:
		b = 12;
		break;
	case MODEL_SGD_MOMENTUM:
		b = 20;
		break;
	case MODEL_ADAM:
	default:
		b = 28;
		break;
	}
	return m->precision == MODEL_MIXED ? b + 2 : b;
}

/*
 * Bytes per parameter of the optimizer's own states, which ZeRO-1 shards
 * (docs/cost-model.md, "ZeRO"): Adam's two moments, SGD's momentum, and with
 * mixed precision the fp32 master copy.  Never more than the model states.
 */
static double cost_optimizer_state_bytes(const struct model_profile *m)
{
	double fp32 = m->optimizer == MODEL_SGD ? 0 : m->optimizer == MODEL_SGD_MOMENTUM ? 4 : 8;
	double o = m->precision == MODEL_MIXED ? fp32 + 4 : fp32;
	double all = model_c_dtype(m) * model_param_elem_bytes(m);

	return o < all ? o : all;
}

/* The expert-parallel size of s on layer type t: 1 on a layer without experts. */
static int cost_ep(const struct model_layer_type *t, const struct strategy *s)
{
	return t->experts > 0 ? strategy_ep(s) : 1;
}

/* The expert tensor-parallel size of s on t: its tp, or 1 under etp1 on a layer with experts. */
static int cost_etp(const struct model_layer_type *t, const struct strategy *s)
{
	return t->experts > 0 ? strategy_etp(s) : s->degree[STRATEGY_TP];
}

/* The replicas of a rank's experts (expert data parallelism): the tp x dp / (etp x ep) ranks
 * outside its ep group and its expert tp group (fsdp is 1 wherever ep or etp1 is used). */
static int cost_xdp(const struct model_layer_type *t, const struct strategy *s)
{
	return s->degree[STRATEGY_TP] * s->degree[STRATEGY_DP] / (cost_etp(t, s) * cost_ep(t, s));
}

/* The rank strides of t's ep groups and of its expert replicas under s. */
static int cost_ep_stride(const struct model_layer_type *t, const struct strategy *s)
{
	return t->experts > 0 && s->etp1 ? 1 : s->stride[STRATEGY_DP];
}

static int cost_xdp_stride(const struct model_layer_type *t, const struct strategy *s)
{
	return cost_ep_stride(t, s) * cost_ep(t, s);
}

/* 1 when sequence parallelism changes layer type t under s: s shards the
 * sequence over its tp group and t is one of the layers with TP all-reduces
 * (a transformer layer), which Megatron-LM's sequence parallelism splits. */
static int cost_sp_applies(const struct model_layer_type *t, const struct strategy *s)
{
	return s->sp && s->degree[STRATEGY_TP] > 1 && t->tp_allreduces_per_pass > 0;
}

/* Time A of one layer type under one strategy, per micro-batch (§Layer time). */
static double cost_layer_time(const struct cluster_profile *c, const struct model_profile *m,
                              const struct model_layer_type *t, const struct strategy *s,
                              const struct strategy_set *set, long mb_size, long microbatches,
                              const struct cost_runtime *rt, int fp8, int cp_a2a)
{
	int dp = s->degree[STRATEGY_DP], tp = s->degree[STRATEGY_TP], fs = s->degree[STRATEGY_FSDP];
	int D = set->stage_devices, pp = set->pp;
	double ccoc = c->overlap_coefficient;
	/* the rank's samples, and under context parallelism its 1/cp of each one's tokens: per-token
	 * work scales with `share`, samples x 1/cp (§Context parallelism) */
	double samples = (double)cost_ceil_div(mb_size, strategy_batch_width(s));
	double share = samples / strategy_cp(s);
	int sp = cost_sp_applies(t, s);
	/* expert-parallel, expert tensor-parallel and expert-data-parallel sizes */
	int ep = cost_ep(t, s), etp = cost_etp(t, s), xdp = cost_xdp(t, s);
	int ep_stride = cost_ep_stride(t, s), xdp_stride = cost_xdp_stride(t, s);
	/* a MoE layer's expert parameters are shared out over ep ranks and
	 * replicated over the other dp / ep (§Mixture of experts) */
	double expert_params = t->experts > 0 ? t->expert_parameters : 0;
	double expert_bytes = expert_params * model_param_elem_bytes(m);
	double param_bytes = t->parameters * model_param_elem_bytes(m);
	double dense_bytes = param_bytes - expert_bytes;
	/* each routed token goes out and comes back (dispatch and combine) in
	 * the forward pass and again in the backward pass: four all-to-alls over
	 * the ep group, of the busiest rank's tokens, each TP rank sending its
	 * 1/tp of them under sequence parallelism */
	double a2a = ep > 1 ? cost_alltoall_s(c, share * t->dispatch_bytes_per_sample *
	                                             (t->expert_load > 1 ? t->expert_load : 1) / (sp ? tp : 1),
	                                      ep, ep_stride, D, pp) : 0;
	/* the forward pass; sync_extra: what a host synchronisation before the
	 * dispatch adds to it and its dispatch and combine */
	double sync_extra;
	double fwd = cost_forward_s(c, m, t, tp, sp, ep, etp, share, rt, fp8, 2 * a2a, &sync_extra);
	double out_bytes = share * t->output_bytes_per_sample;
	/* each TP all-reduce, or under sequence parallelism its reduce-scatter and
	 * the all-gather before the next GEMM (§Sequence parallelism) */
	/* with the experts whole on each rank (etp 1), the MoE MLP needs no tp collective */
	double tp_pass = (t->tp_allreduces_per_pass - (t->experts > 0 && etp == 1 && tp > 1 ? 1 : 0)) *
		(sp ? cost_collective_s(c, CLUSTER_REDUCE_SCATTER, out_bytes, tp, s->stride[STRATEGY_TP], D, pp) +
		      cost_collective_s(c, CLUSTER_ALLGATHER, out_bytes, tp, s->stride[STRATEGY_TP], D, pp)
		    : cost_collective_s(c, CLUSTER_ALLREDUCE, out_bytes, tp, s->stride[STRATEGY_TP], D, pp));
	double gather = cost_collective_s(c, CLUSTER_ALLGATHER, param_bytes / tp, fs,
	                                  s->stride[STRATEGY_FSDP], D, pp);
	double scatter = cost_collective_s(c, CLUSTER_REDUCE_SCATTER, param_bytes / tp, fs,
	                                   s->stride[STRATEGY_FSDP], D, pp);
	double shard = (double)tp * fs * (s->zero ? dp : 1), per_mb_comm, sync, after, step, forward,
	       recompute, backward, last, ring_fwd = 0, ring_bwd = 0;

	/* The data-parallel gradient reduction (§Layer time, "Communication"):
	 * once per iteration, at the last micro-batch, or for ZeRO-2 its
	 * reduce-scatter after every micro-batch (DeepSpeed's stage 2); ZeRO-1/2
	 * gather the updated parameters after the optimizer step, outside any
	 * backward pass (§ZeRO). */
	per_mb_comm = gather + scatter;
	after = 0;
	if (s->zero == 0) {
		sync = cost_collective_s(c, CLUSTER_ALLREDUCE, dense_bytes / ((double)tp * fs), dp,
		                         s->stride[STRATEGY_DP], D, pp) +
		       cost_collective_s(c, CLUSTER_ALLREDUCE, expert_bytes / ((double)etp * fs * ep), xdp, xdp_stride,
		                         D, pp);
	} else {
		double rs = cost_collective_s(c, CLUSTER_REDUCE_SCATTER, dense_bytes / tp, dp,
		                              s->stride[STRATEGY_DP], D, pp) +
		            cost_collective_s(c, CLUSTER_REDUCE_SCATTER, expert_bytes / ((double)etp * ep), xdp,
		                              xdp_stride, D, pp);

		after = cost_collective_s(c, CLUSTER_ALLGATHER, dense_bytes / tp, dp, s->stride[STRATEGY_DP], D, pp) +
		        cost_collective_s(c, CLUSTER_ALLGATHER, expert_bytes / ((double)etp * ep), xdp, xdp_stride,
		                          D, pp);
		if (s->zero == 2) {
			per_mb_comm += rs;
			sync = 0;
		} else {
			sync = rs;
		}
	}
	/* the optimizer step updates the rank's shard of the optimizer states;
	 * the runtime's own passes over the gradients go with it (§Runtime profile) */
	/* (a rank's expert parameters are 1/ep of them; ZeRO shards their
	 * optimizer states over the dp / ep replicas: the same 1/dp in all) */
	step = c->memory_bandwidth_bytes_per_s > 0
		? ((t->parameters - expert_params) / shard *
		           (cost_optimizer_bytes_per_param(m) + rt->param_pass_bytes +
		            (dp > 1 && s->zero == 0 ? rt->bucket_copy_bytes : 0)) +
		   (expert_params > 0 ? expert_params / ((double)etp * fs * ep * (s->zero ? xdp : 1)) *
		                                (cost_optimizer_bytes_per_param(m) + rt->param_pass_bytes +
		                                 (xdp > 1 && s->zero == 0 ? rt->bucket_copy_bytes : 0))
		                      : 0)) /
		          c->memory_bandwidth_bytes_per_s
		: 0;
	/* FP8: the layer's weights cast to FP8 once per iteration (Transformer
	 * Engine's is_first_microbatch caching): read 2, write 1 byte (§FP8) */
	if (fp8 && t->fp8_flops_per_sample > 0 && c->memory_bandwidth_bytes_per_s > 0)
		step += ((t->parameters - expert_params) / ((double)tp * fs) + expert_params / ((double)etp * fs * ep)) *
		        3 / c->memory_bandwidth_bytes_per_s;
	/* ring attention: the rank gathers its samples' keys and values from the cp group (cp - 1
	 * exchanges) in the forward pass, and again with their gradients' reduce-scatter in the
	 * backward one, each overlapped with the attention core; what it does not hide is charged */
	if (strategy_cp(s) > 1 && t->kv_bytes_per_sample > 0 && cp_a2a) {
		/* Ulysses: Q, K and V from sequence to head shards and the context back, four
		 * all-to-alls over the cp group each way, not overlapped (Megatron-LM's a2a) */
		double a2a_each = cost_alltoall_s(c, share * t->ulysses_bytes_per_sample / tp / 4, strategy_cp(s),
		                                  s->stride[STRATEGY_DP], D, pp);

		ring_fwd = 4 * a2a_each;
		ring_bwd = 4 * a2a_each;
	} else if (strategy_cp(s) > 1 && t->kv_bytes_per_sample > 0) {
		double ag = cost_collective_s(c, CLUSTER_ALLGATHER, samples * t->kv_bytes_per_sample / tp, strategy_cp(s),
		                              s->stride[STRATEGY_DP], D, pp);
		double core = t->context_flops_per_sample > 0
			? share * t->context_flops_per_sample /
			          (c->peak_flops_per_s[m->precision] * cost_efficiency(c, t, tp, share)) / tp
			: 0;

		ring_fwd = cost_overlap_s(core, ag, ccoc) - core;
		ring_bwd = cost_overlap_s(2 * core, ag + cost_collective_s(c, CLUSTER_REDUCE_SCATTER,
		                                                           samples * t->kv_bytes_per_sample / tp,
		                                                           strategy_cp(s), s->stride[STRATEGY_DP], D, pp),
		                          ccoc) - 2 * core;
	}
	forward = cost_overlap_s(fwd, gather, ccoc) + tp_pass + 2 * a2a + sync_extra + ring_fwd;
	recompute = s->recompute ? forward : 0;
	/* selective recomputation reruns the attention core only (§Selective
	 * recomputation): no parameters, no TP communication */
	if (s->selective && (t->attention_flops_per_sample > 0 || t->attention_memory_bound_bytes_per_sample > 0))
		recompute = share *
			((t->attention_flops_per_sample > 0
			      ? t->attention_flops_per_sample /
			            (c->peak_flops_per_s[m->precision] * cost_efficiency(c, t, tp, share)) / tp
			      : 0) +
			 (c->memory_bandwidth_bytes_per_s > 0
			      ? t->attention_memory_bound_bytes_per_sample / tp / c->memory_bandwidth_bytes_per_s
			      : 0));
	/* every micro-batch's backward overlaps its own FSDP traffic; the last one
	 * also the gradient reduction (COST_SYNC_LAST), else the reduction follows
	 * it; an iteration's once-only terms are charged 1/c per micro-batch */
	backward = cost_overlap_s(2 * fwd, per_mb_comm, ccoc);
	if (rt->sync == COST_SYNC_AFTER)
		last = backward + sync;
	else
		last = cost_overlap_s(2 * fwd, per_mb_comm + sync, ccoc);
	backward += (last - backward + after + step) / (double)microbatches + tp_pass + 2 * a2a + ring_bwd;
	return forward + recompute + backward;
}

/* 1 when a and b split the batch alike: the same dp and fsdp degrees and, where split, strides. */
static int cost_same_batch_layout(const struct strategy *a, const struct strategy *b)
{
	static const enum strategy_dim dims[2] = {STRATEGY_DP, STRATEGY_FSDP};
	int i;

	for (i = 0; i < 2; i++) {
		enum strategy_dim d = dims[i];

		if (a->degree[d] != b->degree[d] || (a->degree[d] > 1 && a->stride[d] != b->stride[d]))
			return 0;
	}
	return strategy_cp(a) == strategy_cp(b);
}

uniap_code cost_check_cp(const struct cluster_profile *cluster, const struct model_profile *model, int cp,
                         int cp_a2a, struct uniap_err *err)
{
	size_t i;

	if (cp <= 1)
		return cp_a2a ? err_set(err, UNIAP_E_INVALID, "cp_comm: only with context_parallel > 1") : UNIAP_OK;
	if (cluster_devices(cluster) % cp != 0)
		return err_set(err, UNIAP_E_INVALID, "context_parallel: must divide the cluster's %d devices, got %d",
		               cluster_devices(cluster), cp);
	for (i = 0; i < model->n_types; i++) {
		const struct model_layer_type *t = &model->types[i];

		if (t->n_forward_s > 0)
			return err_set(err, UNIAP_E_INVALID,
			               "context_parallel: model layer type \"%s\" is priced from measured times, which "
			               "do not say how they split over a sequence", t->name);
		if (!(t->tokens_per_sample > 0) || fmod(t->tokens_per_sample, cp) != 0)
			return err_set(err, UNIAP_E_INVALID,
			               "context_parallel: %d must divide model layer type \"%s\"'s tokens_per_sample (%g)", cp,
			               t->name, t->tokens_per_sample);
		/* Ulysses splits the heads over the cp group */
		if (cp_a2a && t->kv_bytes_per_sample > 0 && (t->attention_heads < 1 || t->attention_heads % cp != 0))
			return err_set(err, UNIAP_E_INVALID,
			               "cp_comm: a2a needs context_parallel %d to divide model layer type \"%s\"'s "
			               "attention_heads (%d)", cp, t->name, t->attention_heads);
	}
	return UNIAP_OK;
}

uniap_code cost_check_fp8(const struct cluster_profile *cluster, const struct model_profile *model,
                          struct uniap_err *err)
{
	if (model->precision != MODEL_MIXED)
		return err_set(err, UNIAP_E_INVALID, "fp8: FP8 training keeps mixed-precision weights and states; "
		               "model \"%s\" is fp32", model->name ? model->name : "");
	if (!(cluster->peak_fp8_flops_per_s > 0))
		return err_set(err, UNIAP_E_INVALID, "cluster.device.peak_tflops.fp8: required by FP8 training; device "
		               "\"%s\" gives no FP8 figure (Hopper and later have FP8 tensor cores)",
		               cluster->device_name ? cluster->device_name : "");
	return UNIAP_OK;
}

static uniap_code cost_check_options(const struct cluster_profile *cluster,
                                     const struct model_profile *model,
                                     const struct cost_options *opt, struct uniap_err *err)
{
	int n = cluster_devices(cluster);
	size_t i;

	for (i = 0; i < model->n_types; i++)
		if (model->types[i].n_forward_s == 0 && !(cluster->peak_flops_per_s[model->precision] > 0 &&
		                                          cluster->compute_efficiency > 0))
			return err_set(err, UNIAP_E_INVALID,
			               "cluster.device.peak_tflops: required by model layer type \"%s\" which gives "
			               "forward_flops_per_sample",
			               model->types[i].name);
	for (i = 0; opt->selective && i < model->n_types; i++)
		if (model->types[i].attention_flops_per_sample > 0 &&
		    !(cluster->peak_flops_per_s[model->precision] > 0 && cluster->compute_efficiency > 0))
			return err_set(err, UNIAP_E_INVALID,
			               "cluster.device.peak_tflops: required by model layer type \"%s\" which gives "
			               "attention_flops_per_sample (selective recomputation)",
			               model->types[i].name);
	if (opt->cp > 1) {
		uniap_code rc = cost_check_cp(cluster, model, opt->cp, opt->cp_a2a, err);

		if (rc != UNIAP_OK)
			return rc;
		if (opt->pp < 1 || n % opt->pp != 0 || (n / opt->pp) % opt->cp != 0)
			return err_set(err, UNIAP_E_INVALID,
			               "context_parallel: must divide the devices of a stage (%d / pp %d), got %d", n, opt->pp,
			               opt->cp);
	}
	if (opt->fp8) {
		uniap_code rc = cost_check_fp8(cluster, model, err);

		if (rc != UNIAP_OK)
			return rc;
	}
	if (opt->batch < 1 || opt->batch > COST_MAX_BATCH)
		return err_set(err, UNIAP_E_ARG, "batch: must be in [1, %ld], got %ld", COST_MAX_BATCH,
		               opt->batch);
	if (opt->pp < 1 || n % opt->pp != 0)
		return err_set(err, UNIAP_E_ARG, "pp: must divide the device count %d, got %d", n,
		               opt->pp);
	if ((size_t)opt->pp > model->n_layers)
		return err_set(err, UNIAP_E_ARG, "pp: must not exceed the layer count %zu, got %d",
		               model->n_layers, opt->pp);
	if (opt->uneven && (opt->microbatches < 1 || opt->microbatches > opt->batch ||
	                    !cost_chunk_count(opt->batch, opt->microbatches)))
		return err_set(err, UNIAP_E_ARG,
		               "microbatches: must split batch %ld into micro-batches of ceil(%ld / c) samples, "
		               "the last smaller, exactly c of them; %ld does not", opt->batch, opt->batch,
		               opt->microbatches);
	if (!opt->uneven && (opt->microbatches < 1 || opt->batch % opt->microbatches != 0))
		return err_set(err, UNIAP_E_ARG, "microbatches: must divide batch %ld, got %ld",
		               opt->batch, opt->microbatches);
	if (opt->schedule == COST_INTERLEAVED && opt->pp > 1) {
		if (opt->virtual_stages < 2 || opt->virtual_stages > COST_MAX_VIRTUAL_STAGES)
			return err_set(err, UNIAP_E_ARG, "virtual_stages: must be in [2, %d] for the interleaved "
			               "schedule, got %d", COST_MAX_VIRTUAL_STAGES, opt->virtual_stages);
		if ((size_t)opt->pp * (size_t)opt->virtual_stages > model->n_layers)
			return err_set(err, UNIAP_E_ARG, "virtual_stages: pp %d x %d model chunks exceed the "
			               "layer count %zu", opt->pp, opt->virtual_stages, model->n_layers);
		if (opt->microbatches % opt->pp != 0)
			return err_set(err, UNIAP_E_ARG, "microbatches: the interleaved schedule needs a multiple "
			               "of pp %d, got %ld", opt->pp, opt->microbatches);
	}
	return UNIAP_OK;
}

/* 1 when x <= y in each of the v chunks */
static int cost_row_le(const long *x, const long *y, int v)
{
	int j;

	for (j = 0; j < v; j++)
		if (x[j] > y[j])
			return 0;
	return 1;
}

/*
 * Activations in flight per model chunk under Megatron-LM's interleaved 1F1B
 * (schedules.py, forward_backward_pipelining_with_interleaving): device d of
 * pp runs c * v forward units, unit u on its chunk (u mod (pp v)) / pp, and
 * the backward units in the reverse chunk order; it warms up with
 * min(c v, 2 (pp - d - 1) + (v - 1) pp) forwards (all of them when c = pp),
 * then alternates one forward and one backward, then drains.  inflight[i]
 * for stage i = d + pp j is the most micro-batches chunk j of device d holds
 * at once over that order.  The device's peak is not the sum of those (its
 * chunks peak at different moments): the moments that can be its peak are
 * those right before a backward, and of them only the ones no other moment
 * exceeds in every chunk matter.  *peaks gets those rows, {d, h_0 .. h_{v-1}}
 * each, *n_peaks their count (docs/cost-model.md, "Interleaved 1F1B").
 * Returns 0, or -1 out of memory.
 */
static int cost_interleaved_inflight(int pp, int v, long c, long *inflight, long **peaks, size_t *n_peaks)
{
	long total = c * v, held[COST_MAX_VIRTUAL_STAGES], f, b, warm, *rows = NULL, *all = NULL;
	size_t n_rows = 0, n_all = 0, cap = 0, r, q, first;
	int d, j, last_fwd;

	*peaks = NULL;
	*n_peaks = 0;
	for (d = 0; d < pp; d++) {
		memset(held, 0, sizeof(held));
		for (j = 0; j < v; j++)
			inflight[d + pp * j] = 0;
		warm = c == pp ? total : 2L * (pp - d - 1) + (long)(v - 1) * pp;
		if (warm > total)
			warm = total;
		n_rows = 0;
		/* f forwards and b backwards done; the forward unit f goes before backward b */
		for (f = 0, b = 0, last_fwd = 0; b < total;) {
			if (f < total && (f < warm || f - warm <= b)) {
				j = (int)((f % ((long)pp * v)) / pp);
				if (++held[j] > inflight[d + pp * j])
					inflight[d + pp * j] = held[j];
				f++;
				last_fwd = 1;
				continue;
			}
			if (last_fwd) {
				/* a moment right before a backward: a candidate peak */
				if (n_rows == cap) {
					size_t nc = cap ? cap * 2 : 64;
					long *g = realloc(rows, nc * (size_t)v * sizeof(*rows));

					if (!g)
						goto nomem;
					rows = g;
					cap = nc;
				}
				memcpy(rows + n_rows * (size_t)v, held, (size_t)v * sizeof(*rows));
				n_rows++;
			}
			last_fwd = 0;
			j = v - 1 - (int)((b % ((long)pp * v)) / pp);
			held[j]--;
			b++;
		}
		/* keep the rows no other row dominates (equal rows once): each row in turn
		 * is dropped if a kept row dominates it, else it drops the kept rows it
		 * dominates and is kept */
		first = n_all;
		for (r = 0; r < n_rows; r++) {
			const long *x = rows + r * (size_t)v;
			int dominated = 0;

			for (q = first; q < n_all && !dominated; q++)
				dominated = cost_row_le(x, all + q * (size_t)(v + 1) + 1, v);
			if (dominated)
				continue;
			for (q = first; q < n_all;)
				if (cost_row_le(all + q * (size_t)(v + 1) + 1, x, v)) {
					memmove(all + q * (size_t)(v + 1), all + (q + 1) * (size_t)(v + 1),
					        (n_all - q - 1) * (size_t)(v + 1) * sizeof(*all));
					n_all--;
				} else {
					q++;
				}
			{
				long *g = realloc(all, (n_all + 1) * (size_t)(v + 1) * sizeof(*all));

				if (!g)
					goto nomem;
				all = g;
			}
			all[n_all * (size_t)(v + 1)] = d;
			memcpy(all + n_all * (size_t)(v + 1) + 1, x, (size_t)v * sizeof(*all));
			n_all++;
		}
	}
	free(rows);
	*peaks = all;
	*n_peaks = n_all;
	return 0;
nomem:
	free(rows);
	free(all);
	return -1;
}

long cost_device_inflight(const struct cost_candidate *c, int d)
{
	int v = cost_virtual(c), j;
	long best = -1, sum;
	size_t r;

	for (r = 0; r < c->n_peaks && c->peaks; r++) {
		const long *h = c->peaks + r * (size_t)(v + 1);

		if (h[0] != d)
			continue;
		for (sum = 0, j = 0; j < v; j++)
			sum += h[1 + j];
		if (sum > best)
			best = sum;
	}
	if (best >= 0)
		return best;
	for (sum = 0, j = 0; j < v; j++)
		sum += c->inflight[d + c->pp * j];
	return sum;
}

double cost_device_activation(const struct cost_candidate *c, int d, const double *act)
{
	int v = cost_virtual(c), j, any = 0;
	double best = 0, sum;
	size_t r;

	for (r = 0; r < c->n_peaks && c->peaks; r++) {
		const long *h = c->peaks + r * (size_t)(v + 1);

		if (h[0] != d)
			continue;
		any = 1;
		for (sum = 0, j = 0; j < v; j++)
			sum += (double)h[1 + j] * act[j];
		if (sum > best)
			best = sum;
	}
	if (any)
		return best;
	for (sum = 0, j = 0; j < v; j++)
		sum += (double)c->inflight[d + c->pp * j] * act[j];
	return sum;
}

int cost_chunk_count(long batch, long c)
{
	long size;

	if (batch < 1 || c < 1 || c > batch)
		return 0;
	size = (batch + c - 1) / c;
	return (batch + size - 1) / size == c;
}

/* 1 when s belongs to the search space of filter. */
static int cost_filter_keeps(const struct strategy *s, enum cost_filter filter)
{
	switch (filter) {
	case COST_FILTER_DP_ONLY:
		return s->degree[STRATEGY_TP] == 1 && s->degree[STRATEGY_FSDP] == 1;
	case COST_FILTER_MEGATRON:
		return s->degree[STRATEGY_FSDP] == 1 &&
		       (s->n_order < 2 || s->order[0] == STRATEGY_TP);
	case COST_FILTER_ALL:
	default:
		return 1;
	}
}

/* Drops strategies outside the search space, those a runtime's rules (keep,
 * from target.h) do not place on a transformer layer and those whose batch
 * width exceeds the micro-batch size (docs/cost-model.md, micro-batches). */
static void cost_filter_strategies(struct strategy_set *set, long mb_size, enum cost_filter filter,
                                   const struct cost_keep *keep, int experts, int ulysses_heads, int tp_heads)
{
	size_t i, kept = 0;

	for (i = 0; i < set->count; i++)
		if (strategy_batch_width(&set->items[i]) <= mb_size &&
		    /* the runtime splits the heads and key-value heads over tp */
		    !(tp_heads > 0 && tp_heads % set->items[i].degree[STRATEGY_TP] != 0) &&
		    /* Ulysses: the heads split over tp x cp */
		    !(ulysses_heads > 0 && ulysses_heads % (set->items[i].degree[STRATEGY_TP] * strategy_cp(&set->items[i]))) &&
		    !(keep->moe_tp_needs_sp && experts > 0 && set->items[i].degree[STRATEGY_TP] > 1 &&
		      !set->items[i].sp) &&
		    cost_filter_keeps(&set->items[i], filter) &&
		    (!keep->ok || keep->ok(keep->ctx, &set->items[i], set->pp)) &&
		    (!keep->microbatch_per_rank || mb_size % strategy_batch_width(&set->items[i]) == 0))
			set->items[kept++] = set->items[i];
	set->count = kept;
}

/*
 * The transient buffers of fully-sharded layers (docs/cost-model.md,
 * "Memory"): the gathered parameters of the layer computing and of the one
 * prefetched, and with one micro-batch its unsharded gradient before the
 * reduce-scatter; the largest such layer of any strategy offered.
 */
static double cost_fsdp_transient(const struct model_profile *m, const struct strategy_set *set,
                                  const size_t *used, size_t n_used, long microbatches)
{
	double elem = model_param_elem_bytes(m), transient = 0;
	size_t u, k, n = used ? n_used : set->count;

	for (k = 0; k < n; k++) {
		const struct strategy *s = &set->items[used ? used[k] : k];

		if (s->degree[STRATEGY_FSDP] <= 1)
			continue;
		for (u = 0; u < m->n_types; u++) {
			double b = (microbatches > 1 ? 2.0 : 3.0) * m->types[u].parameters * elem /
			           s->degree[STRATEGY_TP];

			if (b > transient)
				transient = b;
		}
	}
	return transient;
}

/*
 * The bytes a plan may allocate on each device (docs/cost-model.md,
 * "Memory"): the device memory less the safety margin, the framework's
 * reserved bytes and the FSDP transient buffers, over 1 + fragmentation.
 */
static double cost_memory_limit(const struct cluster_profile *c, double transient)
{
	double limit = (c->memory_bytes * (1.0 - c->memory_margin) - c->reserved_bytes - transient) /
	               (1.0 + c->memory_fragmentation);

	return limit > 0 ? limit : 0;
}

double cost_admission_bytes(const struct cost_keep *keep, double memory_bytes)
{
	double share = memory_bytes > keep->admission_cache_above_bytes ? keep->admission_cache_share : 0;

	if (!(keep->admission_cache_share > 0) && !(keep->admission_fixed_bytes > 0))
		return INFINITY;
	return fmax(0, memory_bytes * (1 - share) - keep->admission_fixed_bytes);
}

double cost_plan_memory_limit(const struct cluster_profile *cluster, const struct model_profile *model,
                              const struct cost_candidate *cand, const size_t *strategy)
{
	return cost_memory_limit(cluster, cost_fsdp_transient(model, &cand->strategies, strategy, cand->n_layers,
	                                                      cand->microbatches));
}

/* FP8 training (§FP8): the FP8 copy of a layer's weights beside its
 * mixed-precision states, 1 byte per parameter, sharded like the parameters;
 * 0 without FP8 or for a layer with no FP8 GEMM. */
static double cost_fp8_weight_bytes(int fp8, const struct model_layer_type *t, const struct strategy *s)
{
	double expert = t->experts > 0 ? t->expert_parameters : 0;

	return fp8 && t->fp8_flops_per_sample > 0
		? (t->parameters - expert) / ((double)s->degree[STRATEGY_TP] * s->degree[STRATEGY_FSDP]) +
		          expert / ((double)cost_etp(t, s) * cost_ep(t, s) * s->degree[STRATEGY_FSDP])
		: 0;
}

/*
 * Model states of one layer of type t under s (§Memory): c_dtype * P * e /
 * (tp * fsdp); under ZeRO-1 the optimizer's states, under ZeRO-2 also the
 * gradients, divided by dp (§ZeRO).
 */
static double cost_states_part(const struct model_profile *m, const struct strategy *s, double params, int tp,
                               int zdp)
{
	double e = model_param_elem_bytes(m), all = model_c_dtype(m) * e, opt, grad, per_param;

	if (s->zero == 0)
		return all * params / ((double)tp * s->degree[STRATEGY_FSDP]);
	opt = cost_optimizer_state_bytes(m);
	grad = all - opt - e > 0 ? all - opt - e : 0; /* what is left after the parameter itself */
	per_param = all - opt + opt / zdp;
	if (s->zero >= 2)
		per_param -= grad - grad / zdp;
	return per_param * params / tp;
}

/* cost_states_part's bytes split into the parameters themselves, their
 * gradients and the optimizer's states (its fp32 copy and moments), each as
 * sharded by the strategy: adds them to part[0..2].  Their sum is
 * cost_states_part's up to rounding (for the memory breakdown only: every
 * rule reads cost_states_part). */
static void cost_states_split(const struct model_profile *m, const struct strategy *s, double params, int tp,
                              int zdp, double *part)
{
	double e = model_param_elem_bytes(m), all = model_c_dtype(m) * e, opt = cost_optimizer_state_bytes(m);
	double grad = all - opt - e > 0 ? all - opt - e : 0, w = all - opt - grad, shard; /* opt <= all */

	if (s->zero == 0) {
		shard = (double)tp * s->degree[STRATEGY_FSDP];
		part[0] += w * params / shard;
		part[1] += grad * params / shard;
		part[2] += opt * params / shard;
		return;
	}
	part[0] += w * params / tp;
	part[1] += (s->zero >= 2 ? grad / zdp : grad) * params / tp;
	part[2] += opt / zdp * params / tp;
}

/* (a MoE layer's expert parameters: 1/ep of them on a rank, their ZeRO
 * shards over the dp / ep replicas; §Mixture of experts) */
static double cost_states_bytes(const struct model_profile *m, const struct model_layer_type *t,
                                const struct strategy *s)
{
	int ep = cost_ep(t, s);
	double expert = t->experts > 0 ? t->expert_parameters : 0;

	return cost_states_part(m, s, t->parameters - expert, s->degree[STRATEGY_TP], s->degree[STRATEGY_DP]) +
	       (expert > 0 ? cost_states_part(m, s, expert / ep, cost_etp(t, s), cost_xdp(t, s)) : 0);
}

/* FSDP under gradient accumulation keeps the layer's gradient unsharded
 * between micro-batches (§Memory): the part beyond its shard. */
static double cost_accumulation_bytes(const struct model_profile *m, const struct model_layer_type *t,
                                      const struct strategy *s, long microbatches)
{
	if (s->degree[STRATEGY_FSDP] <= 1 || microbatches <= 1)
		return 0;
	return t->parameters * model_param_elem_bytes(m) / s->degree[STRATEGY_TP] *
	       (1.0 - 1.0 / s->degree[STRATEGY_FSDP]);
}

uniap_code cost_stage_memory(const struct cluster_profile *cluster, const struct model_profile *model,
                             const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                             struct cost_stage_memory *out, struct uniap_err *err)
{
	size_t K = cost_k(cand), u;
	double transient, *act;
	int i, j;

	if (cand->n_layers != model->n_layers)
		return err_set(err, UNIAP_E_INVALID, "layers: the candidate has %zu, the model %zu", cand->n_layers,
		               model->n_layers);
	for (u = 0; u < cand->n_layers; u++)
		if (stage[u] < 0 || stage[u] >= cost_stages(cand) || strategy[u] >= K)
			return err_set(err, UNIAP_E_INVALID, "layers[%zu]: stage %d or strategy %zu out of range", u,
			               stage[u], strategy[u]);
	act = calloc((size_t)cost_stages(cand), sizeof(*act));
	if (!act)
		return err_set(err, UNIAP_E_NOMEM, "stage memory: out of memory");
	transient = cost_fsdp_transient(model, &cand->strategies, strategy, cand->n_layers, cand->microbatches);
	memset(out, 0, (size_t)cand->pp * sizeof(*out));
	for (u = 0; u < cand->n_layers; u++) {
		const struct model_layer_type *t = &model->types[model->layers[u].type];
		const struct strategy *s = &cand->strategies.items[strategy[u]];
		struct cost_stage_memory *o = &out[stage[u] % cand->pp]; /* the stage's device */
		size_t at = u * K + strategy[u];

		o->model_states_bytes += cost_states_bytes(model, t, s) + cost_fp8_weight_bytes(cand->fp8, t, s);
		{
			int ep = cost_ep(t, s);
			double expert = t->experts > 0 ? t->expert_parameters : 0, part[3] = { 0, 0, 0 };

			cost_states_split(model, s, t->parameters - expert, s->degree[STRATEGY_TP], s->degree[STRATEGY_DP],
			                  part);
			if (expert > 0)
				cost_states_split(model, s, expert / ep, cost_etp(t, s), cost_xdp(t, s), part);
			o->weight_bytes += part[0] + cost_fp8_weight_bytes(cand->fp8, t, s);
			o->gradient_bytes += part[1];
			o->optimizer_bytes += part[2];
		}
		o->fsdp_accumulation_bytes += cost_accumulation_bytes(model, t, s, cand->microbatches);
		/* the audit sum, term for term as plan_evaluate adds it: per layer
		 * without peak rows, else the fixed sum, then the device's peak */
		if (cand->n_peaks > 0) {
			o->allocated_bytes += cand->memory_fixed_bytes[at];
			act[stage[u]] += cand->memory_per_microbatch_bytes[at];
		} else {
			double a = (double)cand->inflight[stage[u]] * cand->memory_per_microbatch_bytes[at];

			o->allocated_bytes += cand->memory_fixed_bytes[at] + a;
			o->activation_bytes += a;
		}
	}
	for (i = 0; i < cand->pp; i++) {
		struct cost_stage_memory *o = &out[i];
		double chunk[COST_MAX_VIRTUAL_STAGES];
		int v = cost_virtual(cand);

		if (cand->n_peaks > 0) {
			for (j = 0; j < v; j++)
				chunk[j] = act[i + cand->pp * j];
			o->activation_bytes = cost_device_activation(cand, i, chunk);
			o->allocated_bytes += o->activation_bytes;
		}
		o->inflight_microbatches = cost_device_inflight(cand, i);
		o->memory_limit_bytes = cost_memory_limit(cluster, transient);
		o->fragmentation_bytes = cluster->memory_fragmentation * o->allocated_bytes;
		o->fsdp_transient_bytes = transient;
		o->reserved_bytes = cluster->reserved_bytes;
		o->margin_bytes = cluster->memory_margin * cluster->memory_bytes;
		o->device_memory_bytes = cluster->memory_bytes;
		o->free_bytes = o->device_memory_bytes - o->margin_bytes - o->reserved_bytes -
		                o->fsdp_transient_bytes - o->fragmentation_bytes - o->allocated_bytes;
	}
	free(act);
	return UNIAP_OK;
}

double cost_table_bytes(const struct model_profile *model, size_t K, int layers_only)
{
	double k = (double)K, edges = layers_only ? 0 : (double)model->n_edges;

	/* cost_alloc's tables (3 per layer, 2 per edge), then cost_build's scratch: a
	 * table per layer type and two reshard tables (frac, lay_frac) */
	return 8.0 * (3.0 * (double)model->n_layers * k + 2.0 * edges * k * k + (double)model->n_types * k +
	              2.0 * k * k);
}

static uniap_code cost_alloc(struct cost_candidate *out, const struct model_profile *model,
                             size_t K, int layers_only)
{
	size_t L = model->n_layers, e, u, n_edges = layers_only ? 0 : model->n_edges;

	out->n_layers = L;
	out->inflight = calloc((size_t)cost_stages(out), sizeof(*out->inflight));
	out->layer_names = calloc(L, sizeof(*out->layer_names));
	out->time_s = calloc(L * K, sizeof(double));
	out->memory_fixed_bytes = calloc(L * K, sizeof(double));
	out->memory_per_microbatch_bytes = calloc(L * K, sizeof(double));
	out->edges = calloc(n_edges ? n_edges : 1, sizeof(*out->edges));
	if (!out->inflight || !out->layer_names || !out->time_s || !out->memory_fixed_bytes ||
	    !out->memory_per_microbatch_bytes || !out->edges)
		return UNIAP_E_NOMEM;
	out->n_edges = n_edges;
	for (u = 0; u < L; u++)
		if (!(out->layer_names[u] = strdup(model->layers[u].name)))
			return UNIAP_E_NOMEM;
	for (e = 0; e < n_edges; e++) {
		out->edges[e].from = model->edges[e].from;
		out->edges[e].to = model->edges[e].to;
		out->edges[e].same_stage_s = calloc(K * K, sizeof(double));
		out->edges[e].cross_stage_s = calloc(K * K, sizeof(double));
		if (!out->edges[e].same_stage_s || !out->edges[e].cross_stage_s)
			return UNIAP_E_NOMEM;
	}
	return UNIAP_OK;
}

/* 1 when the build's deadline (opt->deadline_s, 0: none) has passed; asked once per row of
 * K, so a build of any size stops within one row's work past it. */
static int cost_past_deadline(const struct cost_options *opt)
{
	struct timespec ts;

	if (opt->deadline_s <= 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 > opt->deadline_s;
}

static uniap_code cost_deadline_error(struct uniap_err *err)
{
	return err_set(err, UNIAP_E_LIMIT, "cost matrices: the build ran past its time limit");
}

uniap_code cost_build(const struct cluster_profile *cluster, const struct model_profile *model,
                      const struct cost_options *opt, struct cost_candidate *out,
                      struct uniap_err *err)
{
	uniap_code rc;
	double *frac = NULL, *type_time = NULL, *lay_frac = NULL;
	size_t K, L = model->n_layers, u, k, l, e, *pair_edge = NULL, *lay = NULL, *rep = NULL, n_lay = 0;
	int i, D;
	double stage_bw, p2p_bw = 0, p2p_latency = 0;

	memset(out, 0, sizeof(*out));
	if ((rc = cost_check_options(cluster, model, opt, err)) != UNIAP_OK)
		return rc;
	out->pp = opt->pp;
	out->microbatches = opt->microbatches;
	/* every micro-batch but the last has ceil(B / c) samples (§Micro-batches) */
	out->microbatch_size = (opt->batch + opt->microbatches - 1) / opt->microbatches;
	out->batch = opt->batch;
	out->schedule = opt->schedule;
	out->fp8 = opt->fp8;
	out->makespan = opt->makespan;
	out->cp = opt->cp > 1 ? opt->cp : 1;
	out->cp_a2a = opt->cp > 1 && opt->cp_a2a;
	out->runtime = opt->runtime.name;
	out->virtual_stages = opt->schedule == COST_INTERLEAVED && opt->pp > 1 ? opt->virtual_stages : 1;
	rc = strategy_enumerate_cp(cluster, opt->pp,
	                                (opt->recompute ? STRATEGY_WITH_RECOMPUTE : 0) |
	                                        (opt->zero ? STRATEGY_WITH_ZERO : 0) | (opt->sp ? STRATEGY_WITH_SP : 0) |
	                                        (opt->selective ? STRATEGY_WITH_SELECTIVE : 0),
	                                model_experts_gcd(model), opt->cp > 1 ? opt->cp : 1, &out->strategies, err);
	if (rc != UNIAP_OK)
		goto out;
	cost_filter_strategies(&out->strategies, out->microbatch_size, opt->filter, &opt->keep,
	                       model_experts_gcd(model), out->cp_a2a ? model_heads_gcd(model) : 0,
	                       opt->keep.tp_divides_heads ? model_shape_heads_gcd(model) : 0);
	K = out->strategies.count;
	out->memory_limit_bytes =
		cost_memory_limit(cluster, cost_fsdp_transient(model, &out->strategies, NULL, 0, out->microbatches));
	out->device_memory_bytes = cluster->memory_bytes;
	/* a runtime that admits less than the device holds: its plans keep to both */
	out->memory_limit_bytes = fmin(out->memory_limit_bytes, cost_admission_bytes(&opt->keep, cluster->memory_bytes));
	if (K == 0) {
		rc = err_set(err, UNIAP_E_INFEASIBLE,
		             "microbatches: no strategy of the search space fits micro-batches of %ld "
		             "samples on %d devices per stage", out->microbatch_size,
		             out->strategies.stage_devices);
		goto out;
	}
	D = out->strategies.stage_devices;
	if (opt->budget) {
		double need = cost_table_bytes(model, K, opt->layers_only);

		if (opt->budget->max_bytes > 0 && need > opt->budget->max_bytes) {
			rc = err_set(err, UNIAP_E_LIMIT,
			             "cost tables: they need about %.0f MiB (%zu strategies per layer, %zu layers, "
			             "%zu edges), over the budget of %.0f MiB",
			             need / 1048576.0, K, model->n_layers, opt->layers_only ? (size_t)0 : model->n_edges,
			             opt->budget->max_bytes / 1048576.0);
			goto out;
		}
		if (opt->budget->take && opt->budget->take(opt->budget->ctx, need) != 0) {
			rc = err_set(err, UNIAP_E_BUSY, "cost tables: %.0f MiB are not free now", need / 1048576.0);
			goto out;
		}
	}
	if ((rc = cost_alloc(out, model, K, opt->layers_only)) != UNIAP_OK) {
		err_set(err, rc, "cost matrices: out of memory");
		goto out;
	}
	for (i = 0; i < out->pp; i++) {
		long behind = out->pp - i; /* 1F1B: stage i holds min(c, pp - i) (0-based) */

		out->inflight[i] = opt->schedule == COST_1F1B && behind < out->microbatches
			? behind : out->microbatches;
	}
	if (cost_virtual(out) > 1 && cost_interleaved_inflight(out->pp, out->virtual_stages, out->microbatches,
	                                                       out->inflight, &out->peaks, &out->n_peaks) != 0) {
		rc = err_set(err, UNIAP_E_NOMEM, "cost matrices: out of memory");
		goto out;
	}
	/* no pipeline: the micro-batches are gradient accumulation, each one's forward and
	 * backward done before the next starts, under either schedule (docs/cost-model.md) */
	if (out->pp == 1)
		out->inflight[0] = 1;

	/* layer costs depend on the layer type only: price each type once */
	type_time = calloc(model->n_types * K, sizeof(double));
	frac = calloc(K * K, sizeof(double));
	lay_frac = calloc(K * K, sizeof(double));
	lay = calloc(K, sizeof(size_t));
	rep = calloc(K, sizeof(size_t));
	if (!type_time || !frac || !lay_frac || !lay || !rep) {
		rc = err_set(err, UNIAP_E_NOMEM, "cost matrices: out of memory");
		goto out;
	}
	for (u = 0; u < model->n_types; u++)
		for (k = 0; k < K; k++) {
			if (cost_past_deadline(opt)) {
				rc = cost_deadline_error(err);
				goto out;
			}
			type_time[u * K + k] = cost_layer_time(cluster, model, &model->types[u],
			                                       &out->strategies.items[k],
			                                       &out->strategies, out->microbatch_size,
			                                       out->microbatches, &opt->runtime, opt->fp8,
			                                       out->cp_a2a);
		}
	for (u = 0; u < L; u++) {
		const struct model_layer_type *t = &model->types[model->layers[u].type];

		for (k = 0; k < K; k++) {
			const struct strategy *s = &out->strategies.items[k];
			double samples = (double)cost_ceil_div(out->microbatch_size,
			                                       strategy_batch_width(s));
			int sp = cost_sp_applies(t, s), tp = s->degree[STRATEGY_TP];
			/* sequence parallelism shards every activation, and the checkpointed
			 * input, over the tp group (§Sequence parallelism) */
			double per_sample = s->recompute
				? (sp ? t->checkpoint_bytes_per_sample / tp : t->checkpoint_bytes_per_sample)
				: sp ? fmin(model_tp_lookup(t->activation_bytes, t->n_activation_bytes, 1) / tp,
				            model_tp_lookup(t->activation_bytes, t->n_activation_bytes, tp))
				     : model_tp_lookup(t->activation_bytes, t->n_activation_bytes, tp);

			/* selective recomputation keeps all but the attention core's (§Selective
			 * recomputation) */
			if (s->selective)
				per_sample = fmax(0, per_sample - t->attention_bytes_per_sample / tp);
			/* FP8 keeps the GEMMs' inputs in 1 byte (§FP8); not with full recomputation,
			 * which keeps only the layer's input */
			if (opt->fp8 && !s->recompute && t->fp8_flops_per_sample > 0)
				per_sample = fmax(0, per_sample - t->fp8_saved_bytes_per_sample / (sp ? tp : 1) -
				                          t->fp8_saved_split_bytes_per_sample / tp);
			/* the busiest rank keeps its experts' activations for load x the balanced
			 * tokens (§Mixture of experts) */
			if (!s->recompute && t->experts > 0 && t->expert_load > 1)
				per_sample += (t->expert_load - 1) * t->expert_activation_bytes_per_sample / tp;

			out->time_s[u * K + k] = type_time[model->layers[u].type * K + k];
			out->memory_fixed_bytes[u * K + k] = cost_states_bytes(model, t, s) +
				cost_accumulation_bytes(model, t, s, out->microbatches) + cost_fp8_weight_bytes(opt->fp8, t, s);
			/* context parallelism keeps 1/cp of each sample's tokens (§Context parallelism) */
			out->memory_per_microbatch_bytes[u * K + k] = samples * per_sample / strategy_cp(s);
		}
	}

	if (opt->layers_only) {
		rc = UNIAP_OK;
		goto out;
	}

	/* resharding (§Resharding): R inside a stage, R' across stages */
	/* the fraction depends only on the two batch layouts (dp and fsdp degrees and
	 * strides): rep[j] is the first strategy of layout j, lay[k] the layout of k */
	for (k = 0; k < K; k++) {
		const struct strategy *sk = &out->strategies.items[k];

		for (l = 0; l < n_lay; l++)
			if (cost_same_batch_layout(sk, &out->strategies.items[rep[l]]))
				break;
		if (l == n_lay)
			rep[n_lay++] = k;
		lay[k] = l;
	}
	for (k = 0; k < n_lay; k++) {
		if (cost_past_deadline(opt)) {
			rc = cost_deadline_error(err);
			goto out;
		}
		for (l = 0; l < n_lay; l++)
			lay_frac[k * n_lay + l] = frac_memo_get(opt->frac_memo, &out->strategies.items[rep[k]],
			                                        &out->strategies.items[rep[l]], D);
	}
	for (k = 0; k < K; k++)
		for (l = 0; l < K; l++)
			frac[k * K + l] = lay_frac[lay[k] * n_lay + lay[l]];
	/* pair_edge[type_from * n_types + type_to]: the first edge of that pair (SIZE_MAX: none
	 * yet); left out (no sharing) for models with more than 1024 layer types */
	if (model->n_types <= 1024) {
		pair_edge = malloc(model->n_types * model->n_types * sizeof(*pair_edge));
		if (!pair_edge) {
			rc = err_set(err, UNIAP_E_NOMEM, "cost matrices: out of memory");
			goto out;
		}
		for (e = 0; e < model->n_types * model->n_types; e++)
			pair_edge[e] = SIZE_MAX;
	}
	stage_bw = D > 1 ? cost_bus_bw(cluster, CLUSTER_ALLGATHER, D, 1, D, out->pp) : 0;
	if (out->pp > 1)
		cost_p2p_link(cluster, out->pp, D, &p2p_bw, &p2p_latency);
	for (e = 0; e < out->n_edges; e++) {
		const struct model_layer_type *t =
			&model->types[model->layers[out->edges[e].from].type];
		const struct model_layer_type *t2 =
			&model->types[model->layers[out->edges[e].to].type];
		double micro_bytes = (double)out->microbatch_size * t->output_bytes_per_sample;
		size_t *seen = pair_edge ? &pair_edge[model->layers[out->edges[e].from].type * model->n_types +
		                                       model->layers[out->edges[e].to].type]
		                         : NULL;

		if (cost_past_deadline(opt)) {
			rc = cost_deadline_error(err);
			goto out;
		}
		/* an edge's matrices depend on its two layer types only: a model of repeated
		 * blocks prices each pair of types once and copies it */
		if (seen && *seen != SIZE_MAX) {
			memcpy(out->edges[e].same_stage_s, out->edges[*seen].same_stage_s, K * K * sizeof(double));
			memcpy(out->edges[e].cross_stage_s, out->edges[*seen].cross_stage_s, K * K * sizeof(double));
			continue;
		}
		if (seen)
			*seen = e;
		for (k = 0; k < K; k++) {
			const struct strategy *sk = &out->strategies.items[k];
			long wk = strategy_batch_width(sk);
			/* a sequence-parallel output leaves its shards for a layer that wants the
			 * whole sequence: all-gather forward, reduce-scatter backward over the
			 * sender's tp group (§Sequence parallelism) */
			double out_k = (double)cost_ceil_div(out->microbatch_size, wk) * t->output_bytes_per_sample /
			               strategy_cp(sk);
			double gather = cost_sp_applies(t, sk)
				? cost_collective_s(cluster, CLUSTER_ALLGATHER, out_k, sk->degree[STRATEGY_TP],
				                    sk->stride[STRATEGY_TP], D, out->pp) +
				  cost_collective_s(cluster, CLUSTER_REDUCE_SCATTER, out_k, sk->degree[STRATEGY_TP],
				                    sk->stride[STRATEGY_TP], D, out->pp)
				: 0;

			for (l = 0; l < K; l++) {
				const struct strategy *sl = &out->strategies.items[l];
				long wl = strategy_batch_width(sl);
				double per_dev_fwd = (double)cost_ceil_div(out->microbatch_size, wl) *
					t->output_bytes_per_sample / strategy_cp(sl);
				double per_dev_bwd = (double)cost_ceil_div(out->microbatch_size, wk) *
					t->output_bytes_per_sample / strategy_cp(sk);
				double sw = gather > 0 && !(cost_sp_applies(t2, sl) &&
				                            sl->degree[STRATEGY_TP] == sk->degree[STRATEGY_TP] &&
				                            sl->stride[STRATEGY_TP] == sk->stride[STRATEGY_TP])
					? gather : 0;

				out->edges[e].same_stage_s[k * K + l] = (D > 1
					? 2 * frac[k * K + l] * micro_bytes / stage_bw : 0) + sw;
				out->edges[e].cross_stage_s[k * K + l] = out->pp > 1
					? 2 * p2p_latency + (per_dev_fwd + per_dev_bwd) / p2p_bw + sw : 0;
			}
		}
	}
	rc = UNIAP_OK;
out:
	free(frac);
	free(type_time);
	free(pair_edge);
	free(lay_frac);
	free(lay);
	free(rep);
	if (rc != UNIAP_OK)
		cost_candidate_release(out);
	return rc;
}

void cost_candidate_release(struct cost_candidate *c)
{
	size_t e, u;

	if (!c)
		return;
	if (c->edges)
		for (e = 0; e < c->n_edges; e++) {
			free(c->edges[e].same_stage_s);
			free(c->edges[e].cross_stage_s);
		}
	free(c->edges);
	if (c->layer_names)
		for (u = 0; u < c->n_layers; u++)
			free(c->layer_names[u]);
	free(c->layer_names);
	free(c->inflight);
	free(c->peaks);
	free(c->time_s);
	free(c->memory_fixed_bytes);
	free(c->memory_per_microbatch_bytes);
	strategy_set_release(&c->strategies);
	memset(c, 0, sizeof(*c));
}
