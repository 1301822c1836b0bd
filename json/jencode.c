/*
 * jencode.c - JSON encoders (see jencode.h).  A failed allocation anywhere
 * deletes the partial tree and returns NULL.
 */
#include "jencode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

#define JENC_GB 1e9      /* bandwidths are written in GB/s */
#define JENC_TFLOPS 1e12 /* peaks in TFLOP/s */

/*
 * A number printed with the fewest significant digits (15..17) that read
 * back to exactly the same double.  cJSON's own printer accepts 15 digits
 * when they come back within an epsilon, which is not exact; an audit must
 * be.  Non-finite values become null.
 */
cJSON *jenc_number(double v)
{
	char buf[40];
	int digits;

	if (!isfinite(v))
		return cJSON_CreateNull();
	for (digits = 15; digits <= 17; digits++) {
		snprintf(buf, sizeof(buf), "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return cJSON_CreateRaw(buf);
}

/* Adds item to obj under key; on failure deletes item and returns 0. */
static int jenc_add(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		return 0;
	if (!cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return 0;
	}
	return 1;
}

int jenc_add_num(cJSON *obj, const char *key, double v)
{
	return jenc_add(obj, key, jenc_number(v));
}

/* Appends item (taken; NULL means it could not be made) to arr; 0 on failure. */
static int jenc_append(cJSON *arr, cJSON *item)
{
	if (!item)
		return 0;
	if (!cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		return 0;
	}
	return 1;
}

static cJSON *jenc_doubles(const double *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; a && i < n; i++)
		if (!jenc_append(a, jenc_number(v[i]))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

/* A K x K row-major matrix as an array of rows. */
static cJSON *jenc_matrix(const double *v, size_t K)
{
	cJSON *a = cJSON_CreateArray();
	size_t k;

	for (k = 0; a && k < K; k++)
		if (!jenc_append(a, jenc_doubles(v + k * K, K))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

cJSON *jenc_strategy(const struct strategy *s)
{
	cJSON *o = cJSON_CreateObject(), *placement;
	int j, ok;

	if (!o)
		return NULL;
	ok = cJSON_AddStringToObject(o, "name", s->name) &&
	     jenc_add_num(o, "dp", s->degree[STRATEGY_DP]) &&
	     jenc_add_num(o, "tp", s->degree[STRATEGY_TP]) &&
	     jenc_add_num(o, "fsdp", s->degree[STRATEGY_FSDP]) &&
	     cJSON_AddBoolToObject(o, "recompute", s->recompute) &&
	     (!s->zero || jenc_add_num(o, "zero", s->zero)) &&
	     (!s->sp || cJSON_AddBoolToObject(o, "sp", 1)) &&
	     (s->cp <= 1 || jenc_add_num(o, "cp", s->cp)) &&
	     (s->ep <= 1 || jenc_add_num(o, "ep", s->ep)) &&
	     (!s->etp1 || jenc_add_num(o, "etp", 1)) &&
	     (!s->selective || cJSON_AddBoolToObject(o, "selective", 1)) &&
	     (placement = cJSON_AddArrayToObject(o, "placement"));
	for (j = 0; ok && j < s->n_order; j++)
		ok = jenc_append(placement, cJSON_CreateString(strategy_dim_name(s->order[j])));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *jenc_longs(const long *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; a && i < n; i++)
		if (!jenc_append(a, jenc_number((double)v[i]))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

/* The interleaved peak rows of c (cost.h): [[device, h_0, .., h_{v-1}], ..]. */
static cJSON *jenc_peaks(const struct cost_candidate *c)
{
	cJSON *a = cJSON_CreateArray();
	size_t r, w = (size_t)cost_virtual(c) + 1;

	for (r = 0; a && r < c->n_peaks; r++)
		if (!jenc_append(a, jenc_longs(c->peaks + r * w, w))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

cJSON *jenc_costs(const struct cost_candidate *c)
{
	cJSON *root = cJSON_CreateObject(), *layers, *edges, *names = NULL;
	size_t K = cost_k(c), u, k, e;
	int ok;

	if (!root)
		return NULL;
	ok = jenc_add_num(root, "pp", c->pp) &&
	     jenc_add_num(root, "microbatches", (double)c->microbatches) &&
	     jenc_add_num(root, "microbatch_size", (double)c->microbatch_size) &&
	     cJSON_AddStringToObject(root, "schedule", cost_schedule_name(c->schedule)) &&
	     (cost_virtual(c) == 1 || jenc_add_num(root, "virtual_stages", cost_virtual(c))) &&
	     /* the TPI's cycle (README, "The audit format"): a transfer holds its sender and receiver,
	      * or under interleaving overlaps compute (Megatron-LM's overlap_p2p_comm) */
	     cJSON_AddStringToObject(root, "transfers", cost_virtual(c) > 1 ? "overlapped" : "blocking") &&
	     /* the TPI is the 1F1B iteration as run, not the formula (README, "The audit format") */
	     (!opt_makespan_objective(c) || cJSON_AddStringToObject(root, "objective", "makespan")) &&
	     (!c->runtime || strcmp(c->runtime, RUNTIME_DEFAULT) == 0 ||
	      cJSON_AddStringToObject(root, "runtime", c->runtime)) &&
	     (!c->fp8 || cJSON_AddBoolToObject(root, "fp8", 1)) &&
	     (c->cp <= 1 || jenc_add_num(root, "context_parallel", c->cp)) &&
	     (!c->cp_a2a || cJSON_AddStringToObject(root, "cp_comm", "a2a")) &&
	     jenc_add_num(root, "memory_limit_bytes", c->memory_limit_bytes) &&
	     jenc_add(root, "inflight_microbatches", jenc_longs(c->inflight, (size_t)cost_stages(c))) &&
	     (c->n_peaks == 0 || jenc_add(root, "memory_peaks", jenc_peaks(c))) &&
	     (layers = cJSON_AddArrayToObject(root, "layers")) &&
	     (edges = cJSON_AddArrayToObject(root, "edges"));
	if (ok && (names = cJSON_CreateArray()))
		for (k = 0; ok && k < K; k++)
			ok = jenc_append(names, cJSON_CreateString(c->strategies.items[k].name));
	ok = ok && names;
	for (u = 0; ok && u < c->n_layers; u++) {
		cJSON *l = cJSON_CreateObject();

		ok = jenc_append(layers, l) &&
		     cJSON_AddStringToObject(l, "name", c->layer_names[u]) &&
		     jenc_add(l, "strategies", cJSON_Duplicate(names, 1)) &&
		     jenc_add(l, "time_s", jenc_doubles(c->time_s + u * K, K)) &&
		     jenc_add(l, "memory_fixed_bytes", jenc_doubles(c->memory_fixed_bytes + u * K, K)) &&
		     jenc_add(l, "memory_per_microbatch_bytes",
		              jenc_doubles(c->memory_per_microbatch_bytes + u * K, K));
	}
	for (e = 0; ok && e < c->n_edges; e++) {
		cJSON *x = cJSON_CreateObject();

		ok = jenc_append(edges, x) &&
		     jenc_add_num(x, "from", (double)c->edges[e].from) &&
		     jenc_add_num(x, "to", (double)c->edges[e].to) &&
		     jenc_add(x, "same_stage_s", jenc_matrix(c->edges[e].same_stage_s, K)) &&
		     jenc_add(x, "cross_stage_s", jenc_matrix(c->edges[e].cross_stage_s, K));
	}
	cJSON_Delete(names);
	if (!ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

static cJSON *jenc_stages(const struct cost_candidate *c, const int *stage,
                          const struct plan_eval *ev)
{
	cJSON *stages = cJSON_CreateArray();
	int i, d, D = c->strategies.stage_devices, ok = stages != NULL;
	size_t u;

	for (i = 0; ok && i < cost_stages(c); i++) {
		cJSON *s = cJSON_CreateObject(), *devs = NULL, *lay = NULL;

		/* interleaved: stage i runs on the devices of pipeline rank i mod pp */
		ok = jenc_append(stages, s) && (devs = cJSON_AddArrayToObject(s, "devices")) &&
		     (lay = cJSON_AddArrayToObject(s, "layers"));
		for (d = 0; ok && d < D; d++)
			ok = jenc_append(devs, jenc_number((double)(i % c->pp) * D + d));
		for (u = 0; ok && u < c->n_layers; u++)
			if (stage[u] == i)
				ok = jenc_append(lay, jenc_number((double)u));
		/* transfer_s: o_i, the boundary after stage i (a drawing of the schedule needs it; the
		 * audit TPI is sum p + sum o + (c - 1) max_i (o_(i-1) + p_i + o_i), cost.h) */
		ok = ok && jenc_add_num(s, "time_s", ev->stage_time_s[i]) &&
		     (i + 1 >= cost_stages(c) || jenc_add_num(s, "transfer_s", ev->comm_time_s[i])) &&
		     jenc_add_num(s, "memory_bytes", ev->stage_memory_bytes[i]) &&
		     (cost_virtual(c) == 1 ||
		      jenc_add_num(s, "rank_memory_bytes", ev->device_memory_bytes[i % c->pp]));
	}
	if (!ok) {
		cJSON_Delete(stages);
		return NULL;
	}
	return stages;
}

cJSON *jenc_plan(const struct cost_candidate *c, const int *stage, const size_t *strategy,
                 const struct plan_eval *ev)
{
	cJSON *root = cJSON_CreateObject(), *layers;
	double batch = (double)cost_batch(c);
	size_t u;
	int ok;

	if (!root)
		return NULL;
	ok = jenc_add_num(root, "pp", c->pp) &&
	     jenc_add_num(root, "microbatches", (double)c->microbatches) &&
	     jenc_add_num(root, "microbatch_size", (double)c->microbatch_size) &&
	     /* only when the last micro-batch is smaller: the batch is not their product */
	     (cost_batch(c) == c->microbatches * c->microbatch_size || jenc_add_num(root, "batch", batch)) &&
	     cJSON_AddStringToObject(root, "schedule", cost_schedule_name(c->schedule)) &&
	     (cost_virtual(c) == 1 || jenc_add_num(root, "virtual_stages", cost_virtual(c))) &&
	     (!c->runtime || strcmp(c->runtime, RUNTIME_DEFAULT) == 0 ||
	      cJSON_AddStringToObject(root, "runtime", c->runtime)) &&
	     (!c->fp8 || cJSON_AddBoolToObject(root, "fp8", 1)) &&
	     (c->cp <= 1 || jenc_add_num(root, "context_parallel", c->cp)) &&
	     (!c->cp_a2a || cJSON_AddStringToObject(root, "cp_comm", "a2a")) &&
	     /* the makespan objective: tpi_s is the iteration as run, the formula beside it */
	     (!opt_makespan_objective(c) ||
	      (cJSON_AddStringToObject(root, "objective", "makespan") &&
	       jenc_add_num(root, "formula_tpi_s", ev->formula_tpi_s))) &&
	     jenc_add_num(root, "tpi_s", ev->tpi_s) &&
	     jenc_add_num(root, "throughput_samples_per_s",
	                             ev->tpi_s > 0 ? batch / ev->tpi_s : 0) &&
	     jenc_add_num(root, "memory_limit_bytes", c->memory_limit_bytes) &&
	     jenc_add(root, "stages", jenc_stages(c, stage, ev)) &&
	     (layers = cJSON_AddArrayToObject(root, "layers"));
	for (u = 0; ok && u < c->n_layers; u++) {
		cJSON *l = cJSON_CreateObject();

		ok = jenc_append(layers, l) && cJSON_AddStringToObject(l, "name", c->layer_names[u]) &&
		     jenc_add_num(l, "stage", stage[u]) &&
		     jenc_add(l, "strategy", jenc_strategy(&c->strategies.items[strategy[u]]));
	}
	if (!ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* One stage's memory object (struct cost_stage_memory), bytes per device. */
static cJSON *jenc_stage_memory(const struct cost_stage_memory *m)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !jenc_add_num(o, "model_states_bytes", m->model_states_bytes) ||
	    !jenc_add_num(o, "weight_bytes", m->weight_bytes) ||
	    !jenc_add_num(o, "gradient_bytes", m->gradient_bytes) ||
	    !jenc_add_num(o, "optimizer_state_bytes", m->optimizer_bytes) ||
	    !jenc_add_num(o, "fsdp_accumulation_bytes", m->fsdp_accumulation_bytes) ||
	    !jenc_add_num(o, "activation_bytes", m->activation_bytes) ||
	    !jenc_add_num(o, "allocated_bytes", m->allocated_bytes) ||
	    !jenc_add_num(o, "memory_limit_bytes", m->memory_limit_bytes) ||
	    !jenc_add_num(o, "fragmentation_bytes", m->fragmentation_bytes) ||
	    !jenc_add_num(o, "fsdp_transient_bytes", m->fsdp_transient_bytes) ||
	    !jenc_add_num(o, "reserved_bytes", m->reserved_bytes) ||
	    !jenc_add_num(o, "margin_bytes", m->margin_bytes) ||
	    !jenc_add_num(o, "free_bytes", m->free_bytes) ||
	    !jenc_add_num(o, "device_memory_bytes", m->device_memory_bytes)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *jenc_evaluation(const struct cost_candidate *c, const struct plan_eval *ev,
                       const struct cost_stage_memory *mem)
{
	cJSON *root = cJSON_CreateObject(), *stages;
	double batch = (double)cost_batch(c);
	int i, ok;

	if (!root)
		return NULL;
	ok = cJSON_AddBoolToObject(root, "feasible", ev->valid && ev->fits) &&
	     cJSON_AddBoolToObject(root, "valid", ev->valid) &&
	     cJSON_AddBoolToObject(root, "fits_memory", ev->fits) &&
	     cJSON_AddStringToObject(root, "reason", ev->reason) &&
	     jenc_add_num(root, "tpi_s", ev->tpi_s) &&
	     jenc_add_num(root, "throughput_samples_per_s",
	                             ev->tpi_s > 0 ? batch / ev->tpi_s : 0) &&
	     jenc_add_num(root, "memory_limit_bytes", c->memory_limit_bytes) &&
	     (stages = cJSON_AddArrayToObject(root, "stages"));
	for (i = 0; ok && i < cost_stages(c); i++) {
		cJSON *s = cJSON_CreateObject();

		/* interleaved: memory is the device's (pipeline rank i mod pp), its stages together
		 * at its peak; memory_bytes is the stage's own, at the stage's own peak */
		ok = jenc_append(stages, s) && jenc_add_num(s, "time_s", ev->stage_time_s[i]) &&
		     jenc_add_num(s, "memory_bytes", ev->stage_memory_bytes[i]) &&
		     (cost_virtual(c) == 1 ||
		      jenc_add_num(s, "rank_memory_bytes", ev->device_memory_bytes[i % c->pp])) &&
		     jenc_add_num(s, "inflight_microbatches", (double)c->inflight[i]) &&
		     (cost_virtual(c) == 1 || jenc_add_num(s, "device", i % c->pp)) &&
		     (!mem || jenc_add(s, "memory", jenc_stage_memory(&mem[i % c->pp])));
	}
	ok = ok && jenc_add(root, "comm_time_s",
	                    cost_stages(c) > 1 ? jenc_doubles(ev->comm_time_s, (size_t)cost_stages(c) - 1)
	                                       : cJSON_CreateArray());
	if (!ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

char *jenc_print(const cJSON *root, int pretty)
{
	char *text = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
	size_t n;
	char *out;

	if (!text)
		return NULL;
	n = strlen(text);
	out = cJSON_malloc(n + 2);
	if (out) {
		memcpy(out, text, n);
		out[n] = '\n';
		out[n + 1] = '\0';
	}
	cJSON_free(text);
	return out;
}

/* ------------------------------------------------------ profile documents */

/* Adds key: string s to obj; 0 on out of memory. */
static int jenc_add_str(cJSON *obj, const char *key, const char *s)
{
	return jenc_add(obj, key, cJSON_CreateString(s));
}

/* One measured-bandwidth table {size, placement, bandwidth_gb_per_s}[]. */
static cJSON *jenc_bw_table(const struct cluster_bw *t, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;
	int ok = a != NULL;

	for (i = 0; ok && i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		ok = jenc_append(a, o) && jenc_add_num(o, "size", t[i].size) &&
		     jenc_add_str(o, "placement", t[i].consecutive ? "consecutive" : "strided") &&
		     jenc_add_num(o, "bandwidth_gb_per_s", t[i].bw_bytes_per_s / JENC_GB);
	}
	if (!ok) {
		cJSON_Delete(a);
		return NULL;
	}
	return a;
}

static int jenc_cluster_device(cJSON *root, const struct cluster_profile *c)
{
	cJSON *dev = cJSON_CreateObject(), *peak;

	if (!jenc_add(root, "device", dev))
		return 0;
	if (c->device_name && !jenc_add_str(dev, "name", c->device_name))
		return 0;
	if (!jenc_add_num(dev, "memory_bytes", c->memory_bytes) ||
	    !jenc_add_num(dev, "reserved_bytes", c->reserved_bytes) ||
	    !jenc_add_num(dev, "memory_fragmentation", c->memory_fragmentation) ||
	    !jenc_add_num(dev, "memory_margin", c->memory_margin))
		return 0;
	if ((c->memory_bandwidth_bytes_per_s > 0 &&
	     !jenc_add_num(dev, "memory_bandwidth_gb_per_s", c->memory_bandwidth_bytes_per_s / JENC_GB)) ||
	    (c->kernel_overhead_s > 0 && !jenc_add_num(dev, "kernel_overhead_us", c->kernel_overhead_s * 1e6)))
		return 0;
	if (c->peak_flops_per_s[MODEL_FP32] == 0 && c->peak_flops_per_s[MODEL_MIXED] == 0)
		return 1;
	peak = cJSON_CreateObject();
	return jenc_add(dev, "peak_tflops", peak) &&
	       jenc_add_num(peak, "fp32", c->peak_flops_per_s[MODEL_FP32] / JENC_TFLOPS) &&
	       jenc_add_num(peak, "mixed", c->peak_flops_per_s[MODEL_MIXED] / JENC_TFLOPS) &&
	       (!(c->peak_fp8_flops_per_s > 0) || jenc_add_num(peak, "fp8", c->peak_fp8_flops_per_s / JENC_TFLOPS)) &&
	       jenc_add_num(dev, "compute_efficiency", c->compute_efficiency) &&
	       (c->gemm_half_dim == 0 || jenc_add_num(dev, "gemm_half_dim", c->gemm_half_dim));
}

cJSON *jenc_cluster(const struct cluster_profile *c)
{
	static const char *const kinds[CLUSTER_COLL_COUNT] = { "allreduce", "allgather", "reduce_scatter" };
	cJSON *root = cJSON_CreateObject(), *levels, *coll = NULL, *p2p;
	size_t i;
	int k, ok = root != NULL;

	ok = ok && (!c->name || jenc_add_str(root, "name", c->name)) && jenc_add_num(root, "nodes", c->nodes) &&
	     jenc_add_num(root, "devices_per_node", c->devices_per_node) && jenc_cluster_device(root, c);
	levels = ok ? cJSON_CreateArray() : NULL;
	ok = ok && jenc_add(root, "hierarchy", levels);
	for (i = 0; ok && i < c->n_levels; i++) {
		cJSON *o = cJSON_CreateObject();

		ok = jenc_append(levels, o) && jenc_add_str(o, "name", c->levels[i].name) &&
		     jenc_add_num(o, "devices", c->levels[i].devices) &&
		     jenc_add_num(o, "bandwidth_gb_per_s", c->levels[i].bw_bytes_per_s / JENC_GB) &&
		     (c->levels[i].latency_s == 0 || jenc_add_num(o, "latency_us", c->levels[i].latency_s * 1e6)) &&
		     (c->levels[i].shared_by <= 1 || jenc_add_num(o, "shared_by", c->levels[i].shared_by)) &&
		     (!(c->levels[i].link_bytes_per_s > 0) ||
		      jenc_add_num(o, "link_gb_per_s", c->levels[i].link_bytes_per_s / JENC_GB));
	}
	for (k = 0; ok && k < CLUSTER_COLL_COUNT; k++) {
		if (c->n_coll[k] == 0)
			continue;
		if (!coll) {
			coll = cJSON_CreateObject();
			ok = jenc_add(root, "collectives", coll);
		}
		ok = ok && jenc_add(coll, kinds[k], jenc_bw_table(c->coll[k], c->n_coll[k]));
	}
	if (ok && c->n_p2p > 0) {
		p2p = cJSON_CreateArray();
		ok = jenc_add(root, "p2p", p2p);
		for (i = 0; ok && i < c->n_p2p; i++) {
			cJSON *o = cJSON_CreateObject();

			ok = jenc_append(p2p, o) && jenc_add_num(o, "pp", c->p2p[i].pp) &&
			     jenc_add_num(o, "bandwidth_gb_per_s", c->p2p[i].bw_bytes_per_s / JENC_GB);
		}
	}
	ok = ok && jenc_add_num(root, "overlap_coefficient", c->overlap_coefficient);
	if (!ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* A TP table as {"1": v1, "2": v2, ...}. */
static cJSON *jenc_tp_table(const struct model_tp_value *t, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	char key[16];
	size_t i;
	int ok = o != NULL;

	for (i = 0; ok && i < n; i++) {
		snprintf(key, sizeof(key), "%d", t[i].tp);
		ok = jenc_add_num(o, key, t[i].value);
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *jenc_layer_type(const struct model_layer_type *t)
{
	cJSON *o = cJSON_CreateObject();
	int ok = o && jenc_add_str(o, "name", t->name);

	if (ok && t->n_forward_s > 0)
		ok = jenc_add(o, "forward_s_per_sample", jenc_tp_table(t->forward_s, t->n_forward_s));
	else if (ok)
		ok = jenc_add_num(o, "forward_flops_per_sample", t->forward_flops_per_sample);
	ok = ok && jenc_add_num(o, "parameters", t->parameters) &&
	     jenc_add(o, "activation_bytes_per_sample", jenc_tp_table(t->activation_bytes, t->n_activation_bytes)) &&
	     jenc_add_num(o, "output_bytes_per_sample", t->output_bytes_per_sample) &&
	     jenc_add_num(o, "checkpoint_bytes_per_sample", t->checkpoint_bytes_per_sample) &&
	     jenc_add_num(o, "tp_allreduces_per_pass", t->tp_allreduces_per_pass) &&
	     (t->forward_fixed_s == 0 || jenc_add_num(o, "forward_fixed_s", t->forward_fixed_s)) &&
	     (t->kernels_per_pass == 0 || jenc_add_num(o, "kernels_per_pass", t->kernels_per_pass)) &&
	     (t->gemm_dim == 0 || jenc_add_num(o, "gemm_dim", t->gemm_dim)) &&
	     (t->tokens_per_sample == 0 || jenc_add_num(o, "tokens_per_sample", t->tokens_per_sample)) &&
	     (t->n_memory_bound_bytes == 0 ||
	      jenc_add(o, "memory_bound_bytes_per_sample", jenc_tp_table(t->memory_bound_bytes, t->n_memory_bound_bytes))) &&
	     (t->attention_bytes_per_sample == 0 ||
	      jenc_add_num(o, "attention_bytes_per_sample", t->attention_bytes_per_sample)) &&
	     (t->attention_flops_per_sample == 0 ||
	      jenc_add_num(o, "attention_flops_per_sample", t->attention_flops_per_sample)) &&
	     (t->attention_memory_bound_bytes_per_sample == 0 ||
	      jenc_add_num(o, "attention_memory_bound_bytes_per_sample", t->attention_memory_bound_bytes_per_sample)) &&
	     (t->eager_attention_bytes_per_sample == 0 ||
	      jenc_add_num(o, "eager_attention_bytes_per_sample", t->eager_attention_bytes_per_sample)) &&
	     (t->fp8_flops_per_sample == 0 || jenc_add_num(o, "fp8_flops_per_sample", t->fp8_flops_per_sample)) &&
	     (t->fp8_cast_bytes_per_sample == 0 ||
	      jenc_add_num(o, "fp8_cast_bytes_per_sample", t->fp8_cast_bytes_per_sample)) &&
	     (t->fp8_saved_bytes_per_sample == 0 ||
	      jenc_add_num(o, "fp8_saved_bytes_per_sample", t->fp8_saved_bytes_per_sample)) &&
	     (t->fp8_saved_split_bytes_per_sample == 0 ||
	      jenc_add_num(o, "fp8_saved_split_bytes_per_sample", t->fp8_saved_split_bytes_per_sample)) &&
	     (t->kv_bytes_per_sample == 0 || jenc_add_num(o, "kv_bytes_per_sample", t->kv_bytes_per_sample)) &&
	     (t->context_flops_per_sample == 0 ||
	      jenc_add_num(o, "context_flops_per_sample", t->context_flops_per_sample)) &&
	     (t->attention_heads == 0 || jenc_add_num(o, "attention_heads", t->attention_heads)) &&
	     (t->ulysses_bytes_per_sample == 0 ||
	      jenc_add_num(o, "ulysses_bytes_per_sample", t->ulysses_bytes_per_sample)) &&
	     (t->experts == 0 ||
	      (jenc_add_num(o, "experts", t->experts) && jenc_add_num(o, "expert_parameters", t->expert_parameters) &&
	       jenc_add_num(o, "expert_flops_per_sample", t->expert_flops_per_sample) &&
	       jenc_add_num(o, "expert_gemm_dim", t->expert_gemm_dim) &&
	       jenc_add_num(o, "expert_tokens_per_sample", t->expert_tokens_per_sample) &&
	       jenc_add_num(o, "expert_activation_bytes_per_sample", t->expert_activation_bytes_per_sample) &&
	       jenc_add_num(o, "dispatch_bytes_per_sample", t->dispatch_bytes_per_sample) &&
	       (t->expert_load == 0 || jenc_add_num(o, "expert_load", t->expert_load)) &&
	       (t->kernels_per_local_expert == 0 ||
	        jenc_add_num(o, "kernels_per_local_expert", t->kernels_per_local_expert)) &&
	       (!t->expert_sync || cJSON_AddBoolToObject(o, "expert_sync", 1))));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *jenc_model(const struct model_profile *m)
{
	static const char *const precisions[] = { "fp32", "mixed" };           /* enum model_precision */
	static const char *const optimizers[] = { "adam", "sgd_momentum", "sgd" }; /* enum model_optimizer */
	cJSON *root = cJSON_CreateObject(), *types, *graph, *layers, *edges;
	size_t i;
	int ok = root != NULL;

	ok = ok && (!m->name || jenc_add_str(root, "name", m->name)) &&
	     jenc_add_str(root, "precision", precisions[m->precision == MODEL_MIXED]) &&
	     jenc_add_str(root, "optimizer", optimizers[m->optimizer <= MODEL_SGD ? m->optimizer : 0]) &&
	     (m->state_bytes_per_parameter == 0 || jenc_add_num(root, "state_bytes_per_parameter", m->state_bytes_per_parameter));
	types = ok ? cJSON_CreateArray() : NULL;
	ok = ok && jenc_add(root, "layer_types", types);
	for (i = 0; ok && i < m->n_types; i++)
		ok = jenc_append(types, jenc_layer_type(&m->types[i]));
	graph = ok ? cJSON_CreateObject() : NULL;
	ok = ok && jenc_add(root, "graph", graph);
	layers = ok ? cJSON_CreateArray() : NULL;
	ok = ok && jenc_add(graph, "layers", layers);
	for (i = 0; ok && i < m->n_layers; i++) {
		cJSON *o = cJSON_CreateObject();

		ok = jenc_append(layers, o) && jenc_add_str(o, "name", m->layers[i].name) &&
		     jenc_add_str(o, "type", m->types[m->layers[i].type].name);
	}
	edges = ok ? cJSON_CreateArray() : NULL;
	ok = ok && jenc_add(graph, "edges", edges);
	for (i = 0; ok && i < m->n_edges; i++) {
		cJSON *e = cJSON_CreateArray();

		ok = jenc_append(edges, e) && jenc_append(e, cJSON_CreateString(m->layers[m->edges[i].from].name)) &&
		     jenc_append(e, cJSON_CreateString(m->layers[m->edges[i].to].name));
	}
	if (ok && m->shape.known) {
		const struct model_shape *sh = &m->shape;
		cJSON *o = cJSON_CreateObject();

		ok = jenc_add(root, "shape", o) && cJSON_AddBoolToObject(o, "encoder", sh->encoder) &&
		     cJSON_AddNumberToObject(o, "layers", (double)sh->layers) &&
		     cJSON_AddNumberToObject(o, "hidden", (double)sh->hidden) &&
		     cJSON_AddNumberToObject(o, "heads", (double)sh->heads) &&
		     cJSON_AddNumberToObject(o, "kv_heads", (double)sh->kv_heads) &&
		     cJSON_AddNumberToObject(o, "ffn_hidden", (double)sh->ffn_hidden) &&
		     cJSON_AddNumberToObject(o, "seq_len", (double)sh->seq_len) &&
		     cJSON_AddNumberToObject(o, "vocab", (double)sh->vocab) &&
		     jenc_add_str(o, "mlp", sh->mlp == MODEL_SHAPE_SWIGLU ? "swiglu" : "gelu") &&
		     jenc_add_str(o, "norm", sh->norm == MODEL_SHAPE_RMSNORM ? "rmsnorm" : "layernorm") &&
		     jenc_add_str(o, "positions", sh->positions == MODEL_SHAPE_ROTARY ? "rotary" : "learned") &&
		     cJSON_AddBoolToObject(o, "biases", sh->biases) &&
		     cJSON_AddBoolToObject(o, "tied_embeddings", sh->tied_embeddings) &&
		     cJSON_AddBoolToObject(o, "flash_attention", sh->flash_attention) &&
		     (sh->head_dim == 0 || cJSON_AddNumberToObject(o, "head_dim", (double)sh->head_dim)) &&
		     (sh->window == 0 || (cJSON_AddNumberToObject(o, "window", (double)sh->window) &&
		                          cJSON_AddNumberToObject(o, "window_every", (double)sh->window_every))) &&
		     (sh->experts == 0 ||
		      (cJSON_AddNumberToObject(o, "experts", (double)sh->experts) &&
		       cJSON_AddNumberToObject(o, "top_k", (double)sh->top_k) &&
		       cJSON_AddNumberToObject(o, "moe_ffn_hidden", (double)sh->moe_ffn_hidden) &&
		       (sh->shared_ffn_hidden == 0 ||
		        cJSON_AddNumberToObject(o, "shared_ffn_hidden", (double)sh->shared_ffn_hidden)) &&
		       cJSON_AddNumberToObject(o, "moe_every", (double)sh->moe_every) &&
		       (sh->moe_first_dense == 0 ||
		        cJSON_AddNumberToObject(o, "moe_first_dense", (double)sh->moe_first_dense)) &&
		       (sh->capacity_factor == 0 || cJSON_AddNumberToObject(o, "capacity_factor", sh->capacity_factor)) &&
		       (!sh->router_sigmoid || cJSON_AddBoolToObject(o, "router_sigmoid", 1)))) &&
		     (sh->kv_lora_rank == 0 ||
		      ((sh->q_lora_rank == 0 || cJSON_AddNumberToObject(o, "q_lora_rank", (double)sh->q_lora_rank)) &&
		       cJSON_AddNumberToObject(o, "kv_lora_rank", (double)sh->kv_lora_rank) &&
		       cJSON_AddNumberToObject(o, "qk_nope_head_dim", (double)sh->qk_nope_head_dim) &&
		       cJSON_AddNumberToObject(o, "qk_rope_head_dim", (double)sh->qk_rope_head_dim) &&
		       cJSON_AddNumberToObject(o, "v_head_dim", (double)sh->v_head_dim)));
	}
	if (!ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

uniap_code jenc_evaluate_report(const struct cluster_profile *cluster, const struct model_profile *model,
                                long batch, const struct plan_doc *p, double deadline_s,
                                const struct cost_budget *budget, cJSON **report, int *feasible, int *matches,
                                struct uniap_err *err)
{
	struct plan_applied a;
	struct cost_stage_memory *mem = NULL;
	uniap_code rc = plan_doc_apply_until(cluster, model, batch, p, deadline_s, budget, &a, err);

	if (rc != UNIAP_OK)
		goto out;
	mem = calloc((size_t)a.cand.pp, sizeof(*mem));
	if (!mem) {
		rc = err_set(err, UNIAP_E_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = cost_stage_memory(cluster, model, &a.cand, a.stage, a.strategy, mem, err)) != UNIAP_OK)
		goto out;
	*feasible = a.eval.valid && a.eval.fits;
	*matches = fabs(a.eval.tpi_s - p->tpi_s) <= 1e-9 * fmax(1.0, fabs(a.eval.tpi_s));
	*report = jenc_evaluation(&a.cand, &a.eval, mem);
	if (!*report || !jenc_add_num(*report, "plan_tpi_s", p->tpi_s) ||
	    !cJSON_AddBoolToObject(*report, "tpi_matches", *matches)) {
		cJSON_Delete(*report);
		*report = NULL;
		rc = err_set(err, UNIAP_E_NOMEM, "out of memory");
	}
out:
	free(mem);
	plan_applied_release(&a);
	return rc;
}

/* ------------------------------------------------------------ run report */

static cJSON *jenc_candidates(const struct uop_result *r)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i;

	for (i = 0; arr && i < r->n_candidates; i++) {
		const struct uop_candidate *c = &r->candidates[i];
		cJSON *o = cJSON_CreateObject();
		int ok;

		if (!jenc_append(arr, o))
			break;
		ok = cJSON_AddNumberToObject(o, "pp", c->pp) &&
		     (c->virtual_stages <= 1 || cJSON_AddNumberToObject(o, "virtual_stages", c->virtual_stages)) &&
		     cJSON_AddNumberToObject(o, "microbatches", (double)c->microbatches) &&
		     cJSON_AddStringToObject(o, "status", c->status) &&
		     jenc_add_num(o, "tpi_s", c->tpi_s) && jenc_add_num(o, "solve_s", c->solve_s) &&
		     jenc_add_num(o, "bound", c->bound_s) &&
		     cJSON_AddStringToObject(o, "method", c->method ? c->method : "none") &&
		     (!c->strategy[0] || cJSON_AddStringToObject(o, "strategy", c->strategy)) &&
		     (!c->note[0] || cJSON_AddStringToObject(o, "note", c->note)) &&
		     cJSON_AddBoolToObject(o, "cached", c->cached) &&
		     (!c->shared || cJSON_AddBoolToObject(o, "shared", 1));
		if (!ok)
			break;
	}
	if (arr && i < r->n_candidates) {
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}

int jenc_add_run_report(cJSON *obj, const struct uop_result *r, enum uop_space space)
{
	cJSON *cands = jenc_candidates(r);

	if (!cands || !cJSON_AddItemToObject(obj, "candidates", cands)) {
		cJSON_Delete(cands);
		return 0;
	}
	return cJSON_AddStringToObject(obj, "space", uop_space_name(space)) &&
	       cJSON_AddBoolToObject(obj, "optimal", r->optimal) &&
	       jenc_add_num(obj, "claim_tolerance", OPT_CLAIM_TOLERANCE) && jenc_add_num(obj, "gap", r->gap) &&
	       jenc_add_num(obj, "bound_s", r->bound_s) && jenc_add_num(obj, "solve_s", r->solve_s);
}

double jenc_target_price(const struct uop_result *r, const struct uop_result *any)
{
	if (!any || r->best < 0 || any->best < 0 || !(any->eval.tpi_s > 0))
		return NAN;
	return r->eval.tpi_s / any->eval.tpi_s - 1;
}

cJSON *jenc_targets(const enum target_kind *targets, const struct uop_result *rs, const char *const *errors,
                    size_t n, const struct uop_result *any)
{
	cJSON *arr = cJSON_CreateArray();
	size_t i;

	for (i = 0; arr && i < n; i++) {
		const struct uop_result *r = &rs[i];
		cJSON *o = cJSON_CreateObject();
		const char *error = errors ? errors[i] : NULL;
		double price = error ? NAN : jenc_target_price(r, any);
		int ok = o && cJSON_AddItemToArray(arr, o) &&
		         cJSON_AddStringToObject(o, "target", target_name(targets[i])) &&
		         cJSON_AddStringToObject(o, "runtime", target_rules(targets[i])->runtime) &&
		         cJSON_AddStringToObject(o, "status", error ? "error" : r->best < 0 ? "infeasible"
		                                              : r->optimal ? "optimal" : "feasible");

		if (!o)
			break;
		if (ok && error) {
			ok = cJSON_AddStringToObject(o, "error", error) != NULL && jenc_add(o, "plan", cJSON_CreateNull());
			if (!ok) {
				cJSON_Delete(arr);
				return NULL;
			}
			continue;
		}
		if (ok && r->best >= 0)
			ok = jenc_add_num(o, "tpi_s", r->eval.tpi_s) && cJSON_AddNumberToObject(o, "pp", r->cand.pp) &&
			     (cost_virtual(&r->cand) == 1 ||
			      cJSON_AddNumberToObject(o, "virtual_stages", cost_virtual(&r->cand))) &&
			     cJSON_AddNumberToObject(o, "microbatches", (double)r->cand.microbatches) &&
			     cJSON_AddStringToObject(o, "schedule", cost_schedule_name(r->cand.schedule)) &&
			     jenc_add_num(o, "gap", r->gap) && jenc_add_num(o, "bound_s", r->bound_s);
		if (ok && isfinite(price))
			ok = jenc_add_num(o, "price", price);
		ok = ok && jenc_add_num(o, "solve_s", r->solve_s);
		if (ok)
			ok = jenc_add(o, "plan", r->best >= 0 ? jenc_plan(&r->cand, r->stage, r->strategy, &r->eval)
			                                       : cJSON_CreateNull());
		if (!ok) {
			cJSON_Delete(arr);
			return NULL;
		}
	}
	if (arr && i < n) {
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}
