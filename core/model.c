/*
 * model.c - rules of the cluster and model profiles, the helpers every cost
 * formula uses (c_dtype, TP lookup), and the topological order of the layer
 * graph.
 *
 * The validators check every rule a profile must obey, whoever filled it (the
 * JSON decoder, the catalog, a test), and name the offending field with the
 * same path the JSON document uses, rooted at "cluster" / "model".  Paths
 * into model.graph.layers use the index of the layer in the struct, that is
 * after "repeat" expansion; such messages also quote the layer's name.
 *
 * Never: JSON, I/O, globals, or asserts on input here.
 */
#include "model.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ranges of the documents (see schema/cluster.schema.json, schema/model.schema.json). */
#define MODEL_MAX_NODES 1048576
#define MODEL_MAX_DEVICES_PER_NODE 1024
#define MODEL_MAX_MEMORY_BYTES 1125899906842624.0 /* 2^50 */
#define MODEL_MAX_BW_BYTES_PER_S 1e15             /* 1e6 GB/s */
#define MODEL_MIN_BW_BYTES_PER_S 1e6              /* 0.001 GB/s: below it costs overflow */
#define MODEL_GB 1e9
#define MODEL_MAX_CCOC 10.0
#define MODEL_MAX_TP 65536
#define MODEL_MAX_FORWARD_S 1e4
#define MODEL_MAX_PARAMETERS 1e13
#define MODEL_MAX_BYTES_PER_SAMPLE 1e15
#define MODEL_MAX_TP_ALLREDUCES 64
#define MODEL_MAX_PEAK_FLOPS_PER_S 1e18           /* 1e6 TFLOP/s */
#define MODEL_MAX_FLOPS_PER_SAMPLE 1e21
#define MODEL_MAX_FIXED_S 1.0                     /* a fixed or latency term of 1 s */
#define MODEL_MAX_KERNELS 100000
#define MODEL_MAX_GEMM_DIM 1e9
#define MODEL_TFLOPS 1e12

static const char *const model_coll_names[CLUSTER_COLL_COUNT] = {
	[CLUSTER_ALLREDUCE] = "allreduce",
	[CLUSTER_ALLGATHER] = "allgather",
	[CLUSTER_REDUCE_SCATTER] = "reduce_scatter",
};

/* ------------------------------------------------------------------ helpers */

/* 1 when s (borrowed, may be NULL) is a name of 1..MODEL_MAX_NAME bytes;
 * empty names are allowed only when allow_empty. */
static int model_name_ok(const char *s, int allow_empty)
{
	size_t len;

	if (!s)
		return 0;
	len = strnlen(s, MODEL_MAX_NAME + 1);
	return len <= MODEL_MAX_NAME && (allow_empty || len > 0);
}

/* Checks an optional name field; path is the field's full path. */
static uniap_code model_check_name(const char *s, int required, const char *path, struct uniap_err *err)
{
	if (!s && !required)
		return UNIAP_OK;
	if (!s)
		return err_set(err, UNIAP_E_INVALID, "%s: is required", path);
	if (!model_name_ok(s, !required))
		return err_set(err, UNIAP_E_INVALID, "%s: must be %s at most %d bytes, got %zu",
		               path, required ? "a non-empty name of" : "a name of", MODEL_MAX_NAME,
		               strnlen(s, MODEL_MAX_NAME + 1));
	return UNIAP_OK;
}

/* 1 when lo < v <= hi (NaN fails). */
static int model_in_open_closed(double v, double lo, double hi)
{
	return v > lo && v <= hi;
}

/* 1 when lo <= v <= hi (NaN fails). */
static int model_in_closed(double v, double lo, double hi)
{
	return v >= lo && v <= hi;
}

/* A bandwidth in bytes/s, reported in the document's unit (GB/s). */
static uniap_code model_check_bw(double bw_bytes_per_s, const char *path, struct uniap_err *err)
{
	if (!model_in_closed(bw_bytes_per_s, MODEL_MIN_BW_BYTES_PER_S, MODEL_MAX_BW_BYTES_PER_S))
		return err_set(err, UNIAP_E_INVALID, "%s.bandwidth_gb_per_s: must be >= %g and <= %g, got %g",
		               path, MODEL_MIN_BW_BYTES_PER_S / MODEL_GB, MODEL_MAX_BW_BYTES_PER_S / MODEL_GB,
		               bw_bytes_per_s / MODEL_GB);
	return UNIAP_OK;
}

/* ------------------------------------------------------------------ cluster */

int cluster_devices(const struct cluster_profile *c)
{
	return c->nodes * c->devices_per_node;
}

uniap_code cluster_set_memory_margin(struct cluster_profile *c, double margin, const char *field,
                                     struct uniap_err *err)
{
	if (!model_in_closed(margin, 0.0, MODEL_MAX_MEMORY_FRACTION))
		return err_set(err, UNIAP_E_INVALID, "%s: must be >= 0 and <= %g, got %g", field,
		               MODEL_MAX_MEMORY_FRACTION, margin);
	if (!(c->reserved_bytes + margin * c->memory_bytes < c->memory_bytes))
		return err_set(err, UNIAP_E_INVALID,
		               "%s: the cluster's reserved_bytes plus the margin must leave memory, got %g of %g", field,
		               c->reserved_bytes + margin * c->memory_bytes, c->memory_bytes);
	c->memory_margin = margin;
	return UNIAP_OK;
}

/* Peak throughput: absent (both 0, efficiency 0) or both precisions in
 * (0, 1e6] TFLOP/s with an efficiency in (0, 1]. */
static uniap_code cluster_check_peak(const struct cluster_profile *c, struct uniap_err *err)
{
	static const char *const names[2] = {"fp32", "mixed"};
	int i;

	if (c->peak_flops_per_s[0] == 0.0 && c->peak_flops_per_s[1] == 0.0) {
		if (c->compute_efficiency != 0.0)
			return err_set(err, UNIAP_E_INVALID,
			               "cluster.device.compute_efficiency: requires cluster.device.peak_tflops");
		return UNIAP_OK;
	}
	for (i = 0; i < 2; i++)
		if (!model_in_open_closed(c->peak_flops_per_s[i], 0.0, MODEL_MAX_PEAK_FLOPS_PER_S))
			return err_set(err, UNIAP_E_INVALID,
			               "cluster.device.peak_tflops.%s: must be > 0 and <= %g, got %g", names[i],
			               MODEL_MAX_PEAK_FLOPS_PER_S / MODEL_TFLOPS, c->peak_flops_per_s[i] / MODEL_TFLOPS);
	if (c->peak_fp8_flops_per_s != 0.0 &&
	    !model_in_open_closed(c->peak_fp8_flops_per_s, 0.0, MODEL_MAX_PEAK_FLOPS_PER_S))
		return err_set(err, UNIAP_E_INVALID, "cluster.device.peak_tflops.fp8: must be > 0 and <= %g, got %g",
		               MODEL_MAX_PEAK_FLOPS_PER_S / MODEL_TFLOPS, c->peak_fp8_flops_per_s / MODEL_TFLOPS);
	if (!model_in_open_closed(c->compute_efficiency, 0.0, 1.0))
		return err_set(err, UNIAP_E_INVALID, "cluster.device.compute_efficiency: must be > 0 and <= 1, got %g",
		               c->compute_efficiency);
	return UNIAP_OK;
}

static uniap_code cluster_check_scalars(const struct cluster_profile *c, struct uniap_err *err)
{
	uniap_code rc;

	rc = model_check_name(c->name, 0, "cluster.name", err);
	if (rc != UNIAP_OK)
		return rc;
	if (c->nodes < 1 || c->nodes > MODEL_MAX_NODES)
		return err_set(err, UNIAP_E_INVALID, "cluster.nodes: must be between 1 and %d, got %d",
		               MODEL_MAX_NODES, c->nodes);
	if (c->devices_per_node < 1 || c->devices_per_node > MODEL_MAX_DEVICES_PER_NODE)
		return err_set(err, UNIAP_E_INVALID,
		               "cluster.devices_per_node: must be between 1 and %d, got %d",
		               MODEL_MAX_DEVICES_PER_NODE, c->devices_per_node);
	if ((long long)c->nodes * c->devices_per_node > MODEL_MAX_DEVICES)
		return err_set(err, UNIAP_E_LIMIT,
		               "cluster.devices_per_node: nodes * devices_per_node must be <= %d, got %lld",
		               MODEL_MAX_DEVICES, (long long)c->nodes * c->devices_per_node);
	rc = model_check_name(c->device_name, 0, "cluster.device.name", err);
	if (rc != UNIAP_OK)
		return rc;
	if (!model_in_open_closed(c->memory_bytes, 0.0, MODEL_MAX_MEMORY_BYTES))
		return err_set(err, UNIAP_E_INVALID,
		               "cluster.device.memory_bytes: must be > 0 and <= 2^50, got %g", c->memory_bytes);
	if (!(c->reserved_bytes >= 0.0 && c->reserved_bytes < c->memory_bytes))
		return err_set(err, UNIAP_E_INVALID,
		               "cluster.device.reserved_bytes: must be >= 0 and < memory_bytes (%g), got %g",
		               c->memory_bytes, c->reserved_bytes);
	if (!model_in_closed(c->gemm_half_dim, 0.0, MODEL_MAX_GEMM_DIM))
		return err_set(err, UNIAP_E_INVALID, "cluster.device.gemm_half_dim: must be >= 0 and <= %g, got %g",
		               MODEL_MAX_GEMM_DIM, c->gemm_half_dim);
	if (!model_in_closed(c->memory_bandwidth_bytes_per_s, 0.0, MODEL_MAX_BW_BYTES_PER_S))
		return err_set(err, UNIAP_E_INVALID,
		               "cluster.device.memory_bandwidth_gb_per_s: must be >= 0 and <= %g, got %g",
		               MODEL_MAX_BW_BYTES_PER_S / 1e9, c->memory_bandwidth_bytes_per_s / 1e9);
	if (!model_in_closed(c->kernel_overhead_s, 0.0, MODEL_MAX_FIXED_S))
		return err_set(err, UNIAP_E_INVALID, "cluster.device.kernel_overhead_us: must be >= 0 and <= %g, got %g",
		               MODEL_MAX_FIXED_S * 1e6, c->kernel_overhead_s * 1e6);
	if (!model_in_closed(c->memory_fragmentation, 0.0, MODEL_MAX_MEMORY_FRACTION))
		return err_set(err, UNIAP_E_INVALID, "cluster.device.memory_fragmentation: must be >= 0 and <= %g, got %g",
		               MODEL_MAX_MEMORY_FRACTION, c->memory_fragmentation);
	if (!model_in_closed(c->memory_margin, 0.0, MODEL_MAX_MEMORY_FRACTION))
		return err_set(err, UNIAP_E_INVALID, "cluster.device.memory_margin: must be >= 0 and <= %g, got %g",
		               MODEL_MAX_MEMORY_FRACTION, c->memory_margin);
	if (!(c->reserved_bytes + c->memory_margin * c->memory_bytes < c->memory_bytes))
		return err_set(err, UNIAP_E_INVALID,
		               "cluster.device.reserved_bytes: reserved_bytes plus the margin must leave memory, got %g of %g",
		               c->reserved_bytes + c->memory_margin * c->memory_bytes, c->memory_bytes);
	if (!model_in_closed(c->overlap_coefficient, 1.0, MODEL_MAX_CCOC))
		return err_set(err, UNIAP_E_INVALID,
		               "cluster.overlap_coefficient: must be between 1 and %g, got %g", MODEL_MAX_CCOC,
		               c->overlap_coefficient);
	return cluster_check_peak(c, err);
}

static uniap_code cluster_check_levels(const struct cluster_profile *c, struct uniap_err *err)
{
	int total = cluster_devices(c);
	int has_node_level = 0;
	char path[64];
	size_t i;
	uniap_code rc;

	if (c->n_levels > MODEL_MAX_LEVELS)
		return err_set(err, UNIAP_E_LIMIT, "cluster.hierarchy: must have at most %d entries, got %zu",
		               MODEL_MAX_LEVELS, c->n_levels);
	if (c->n_levels < 1 || !c->levels)
		return err_set(err, UNIAP_E_INVALID, "cluster.hierarchy: must have at least 1 entry, got 0");
	for (i = 0; i < c->n_levels; i++) {
		const struct cluster_level *l = &c->levels[i];

		snprintf(path, sizeof(path), "cluster.hierarchy[%zu].name", i);
		rc = model_check_name(l->name, 1, path, err);
		if (rc != UNIAP_OK)
			return rc;
		snprintf(path, sizeof(path), "cluster.hierarchy[%zu]", i);
		if (l->devices < 1)
			return err_set(err, UNIAP_E_INVALID, "%s.devices: must be >= 1, got %d", path, l->devices);
		if (i > 0 && l->devices <= c->levels[i - 1].devices)
			return err_set(err, UNIAP_E_INVALID,
			               "%s.devices: must be greater than the previous level's %d, got %d", path,
			               c->levels[i - 1].devices, l->devices);
		if (i > 0 && l->devices % c->levels[i - 1].devices != 0)
			return err_set(err, UNIAP_E_INVALID,
			               "cluster.hierarchy[%zu].devices: must divide %d, got %d", i - 1,
			               l->devices, c->levels[i - 1].devices);
		rc = model_check_bw(l->bw_bytes_per_s, path, err);
		if (rc != UNIAP_OK)
			return rc;
		if (!model_in_closed(l->latency_s, 0.0, MODEL_MAX_FIXED_S))
			return err_set(err, UNIAP_E_INVALID, "%s.latency_us: must be >= 0 and <= %g, got %g", path,
			               MODEL_MAX_FIXED_S * 1e6, l->latency_s * 1e6);
		if (l->shared_by < 0 || (i > 0 && l->shared_by > c->levels[i - 1].devices) ||
		    (i == 0 && l->shared_by > 1))
			return err_set(err, UNIAP_E_INVALID,
			               "%s.shared_by: must be between 1 and the devices of the level below (%d), got %d",
			               path, i > 0 ? c->levels[i - 1].devices : 1, l->shared_by);
		if (l->devices == c->devices_per_node)
			has_node_level = 1;
	}
	if (c->levels[c->n_levels - 1].devices != total)
		return err_set(err, UNIAP_E_INVALID,
		               "cluster.hierarchy[%zu].devices: the last level must span every device (%d), got %d",
		               c->n_levels - 1, total, c->levels[c->n_levels - 1].devices);
	if (c->nodes > 1 && !has_node_level)
		return err_set(err, UNIAP_E_INVALID,
		               "cluster.hierarchy: with %d nodes one level must have devices_per_node (%d) devices",
		               c->nodes, c->devices_per_node);
	return UNIAP_OK;
}

static uniap_code cluster_check_coll(const struct cluster_profile *c, enum cluster_coll kind,
                                     struct uniap_err *err)
{
	const struct cluster_bw *t = c->coll[kind];
	size_t n = c->n_coll[kind];
	int total = cluster_devices(c);
	char path[80];
	size_t i, j;
	uniap_code rc;

	if (n > MODEL_MAX_BW_ENTRIES)
		return err_set(err, UNIAP_E_LIMIT, "cluster.collectives.%s: must have at most %d entries, got %zu",
		               model_coll_names[kind], MODEL_MAX_BW_ENTRIES, n);
	if (n > 0 && !t)
		return err_set(err, UNIAP_E_INVALID, "cluster.collectives.%s: missing entries",
		               model_coll_names[kind]);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "cluster.collectives.%s[%zu]", model_coll_names[kind], i);
		if (t[i].size < 2 || t[i].size > total)
			return err_set(err, UNIAP_E_INVALID, "%s.size: must be between 2 and %d, got %d", path,
			               total, t[i].size);
		if (t[i].consecutive != 0 && t[i].consecutive != 1)
			return err_set(err, UNIAP_E_INVALID,
			               "%s.placement: must be \"consecutive\" or \"strided\", got %d", path,
			               t[i].consecutive);
		rc = model_check_bw(t[i].bw_bytes_per_s, path, err);
		if (rc != UNIAP_OK)
			return rc;
		for (j = 0; j < i; j++)
			if (t[j].size == t[i].size && t[j].consecutive == t[i].consecutive)
				return err_set(err, UNIAP_E_INVALID,
				               "%s: duplicate of entry %zu (size %d, placement %s)", path, j,
				               t[i].size, t[i].consecutive ? "consecutive" : "strided");
	}
	return UNIAP_OK;
}

static uniap_code cluster_check_p2p(const struct cluster_profile *c, struct uniap_err *err)
{
	int total = cluster_devices(c);
	char path[48];
	size_t i, j;
	uniap_code rc;

	if (c->n_p2p > MODEL_MAX_BW_ENTRIES)
		return err_set(err, UNIAP_E_LIMIT, "cluster.p2p: must have at most %d entries, got %zu",
		               MODEL_MAX_BW_ENTRIES, c->n_p2p);
	if (c->n_p2p > 0 && !c->p2p)
		return err_set(err, UNIAP_E_INVALID, "cluster.p2p: missing entries");
	for (i = 0; i < c->n_p2p; i++) {
		const struct cluster_p2p *p = &c->p2p[i];

		snprintf(path, sizeof(path), "cluster.p2p[%zu]", i);
		if (p->pp < 2 || total % p->pp != 0)
			return err_set(err, UNIAP_E_INVALID, "%s.pp: must be >= 2 and divide %d, got %d", path,
			               total, p->pp);
		rc = model_check_bw(p->bw_bytes_per_s, path, err);
		if (rc != UNIAP_OK)
			return rc;
		for (j = 0; j < i; j++)
			if (c->p2p[j].pp == p->pp)
				return err_set(err, UNIAP_E_INVALID, "%s: duplicate of entry %zu (pp %d)", path, j,
				               p->pp);
	}
	return UNIAP_OK;
}

uniap_code cluster_validate(const struct cluster_profile *c, struct uniap_err *err)
{
	uniap_code rc;
	int k;

	if (!c)
		return err_set(err, UNIAP_E_ARG, "cluster: missing profile");
	rc = cluster_check_scalars(c, err);
	if (rc == UNIAP_OK)
		rc = cluster_check_levels(c, err);
	for (k = 0; rc == UNIAP_OK && k < CLUSTER_COLL_COUNT; k++)
		rc = cluster_check_coll(c, (enum cluster_coll)k, err);
	if (rc == UNIAP_OK)
		rc = cluster_check_p2p(c, err);
	return rc;
}

void cluster_release(struct cluster_profile *c)
{
	size_t i;
	int k;

	if (!c)
		return;
	free(c->name);
	free(c->device_name);
	for (i = 0; c->levels && i < c->n_levels; i++)
		free(c->levels[i].name);
	free(c->levels);
	for (k = 0; k < CLUSTER_COLL_COUNT; k++)
		free(c->coll[k]);
	free(c->p2p);
	memset(c, 0, sizeof(*c));
}

/* A copy of n elements of size bytes from src into *dst (NULL when n == 0); 0 on out of memory. */
static int model_dup_array(void **dst, const void *src, size_t n, size_t size)
{
	*dst = NULL;
	if (n == 0 || !src)
		return 1;
	*dst = malloc(n * size);
	if (!*dst)
		return 0;
	memcpy(*dst, src, n * size);
	return 1;
}

/* A copy of s (NULL stays NULL) into *dst; 0 on out of memory. */
static int model_dup_str(char **dst, const char *s)
{
	*dst = s ? strdup(s) : NULL;
	return !s || *dst;
}

uniap_code cluster_copy(const struct cluster_profile *src, struct cluster_profile *out, struct uniap_err *err)
{
	size_t i;
	int k, ok;

	*out = *src;
	out->name = NULL;
	out->device_name = NULL;
	out->levels = NULL;
	out->p2p = NULL;
	for (k = 0; k < CLUSTER_COLL_COUNT; k++)
		out->coll[k] = NULL;
	ok = model_dup_str(&out->name, src->name) && model_dup_str(&out->device_name, src->device_name) &&
	     model_dup_array((void **)&out->levels, src->levels, src->n_levels, sizeof(*src->levels)) &&
	     model_dup_array((void **)&out->p2p, src->p2p, src->n_p2p, sizeof(*src->p2p));
	for (k = 0; ok && k < CLUSTER_COLL_COUNT; k++)
		ok = model_dup_array((void **)&out->coll[k], src->coll[k], src->n_coll[k], sizeof(*src->coll[k]));
	/* the level names were copied as pointers: clear them all before any strdup can fail */
	for (i = 0; out->levels && i < out->n_levels; i++)
		out->levels[i].name = NULL;
	for (i = 0; ok && out->levels && i < out->n_levels; i++)
		ok = model_dup_str(&out->levels[i].name, src->levels[i].name);
	if (!ok) {
		if (!out->levels)
			out->n_levels = 0;
		cluster_release(out);
		return err_set(err, UNIAP_E_NOMEM, "cluster: out of memory");
	}
	return UNIAP_OK;
}

/* -------------------------------------------------------------------- model */

double model_c_dtype(const struct model_profile *m)
{
	/* Paper §3.2: bytes of model states (parameters, gradients, optimizer
	 * states) per byte of parameters.  Mixed precision doubles it because
	 * the fp32 master copy and optimizer states are kept per fp16 element. */
	double fp32;

	if (m->state_bytes_per_parameter > 0)
		return m->state_bytes_per_parameter / model_param_elem_bytes(m);
	switch (m->optimizer) {
	case MODEL_SGD:
		fp32 = 2.0;
		break;
	case MODEL_SGD_MOMENTUM:
		fp32 = 3.0;
		break;
	case MODEL_ADAM:
	default:
		fp32 = 4.0;
		break;
	}
	return m->precision == MODEL_MIXED ? 2.0 * fp32 : fp32;
}

/* gcd(a, b) of non-negative ints; gcd(a, 0) = a */
static int model_gcd(int a, int b)
{
	while (b) {
		int r = a % b;

		a = b;
		b = r;
	}
	return a;
}

int model_experts_gcd(const struct model_profile *m)
{
	int g = 0;
	size_t i;

	for (i = 0; i < m->n_types; i++)
		g = model_gcd(m->types[i].experts, g);
	return g;
}

int model_heads_gcd(const struct model_profile *m)
{
	int g = 0;
	size_t i;

	for (i = 0; i < m->n_types; i++)
		if (m->types[i].kv_bytes_per_sample > 0)
			g = model_gcd(m->types[i].attention_heads, g);
	return g;
}

int model_shape_heads_gcd(const struct model_profile *m)
{
	if (!m->shape.known || m->shape.heads <= 0 || m->shape.heads > INT_MAX || m->shape.kv_heads > INT_MAX)
		return 0;
	return model_gcd((int)m->shape.heads, m->shape.kv_heads > 0 ? (int)m->shape.kv_heads : (int)m->shape.heads);
}

double model_param_elem_bytes(const struct model_profile *m)
{
	return m->precision == MODEL_MIXED ? 2.0 : 4.0;
}

double model_tp_lookup(const struct model_tp_value *t, size_t n, int tp)
{
	double base = 0.0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (t[i].tp == tp)
			return t[i].value;
		if (t[i].tp == 1)
			base = t[i].value;
	}
	return tp > 0 ? base / tp : base;
}

/* Checks a TP table; path is the field's path ("model.layer_types[0].forward_s_per_sample"). */
static uniap_code model_check_tp_table(const struct model_tp_value *t, size_t n, double lo_excl,
                                       int lo_inclusive, double hi, const char *path,
                                       struct uniap_err *err)
{
	int has_one = 0;
	size_t i, j;

	if (n > MODEL_MAX_TP_ENTRIES)
		return err_set(err, UNIAP_E_LIMIT, "%s: must have at most %d tp entries, got %zu", path,
		               MODEL_MAX_TP_ENTRIES, n);
	if (n > 0 && !t)
		return err_set(err, UNIAP_E_INVALID, "%s: missing entries", path);
	for (i = 0; i < n; i++) {
		int ok = lo_inclusive ? model_in_closed(t[i].value, lo_excl, hi)
		                      : model_in_open_closed(t[i].value, lo_excl, hi);

		if (t[i].tp < 1 || t[i].tp > MODEL_MAX_TP)
			return err_set(err, UNIAP_E_INVALID, "%s: tp size must be between 1 and %d, got %d", path,
			               MODEL_MAX_TP, t[i].tp);
		if (!ok)
			return err_set(err, UNIAP_E_INVALID, "%s[\"%d\"]: must be %s %g and <= %g, got %g", path,
			               t[i].tp, lo_inclusive ? ">=" : ">", lo_excl, hi, t[i].value);
		for (j = 0; j < i; j++)
			if (t[j].tp == t[i].tp)
				return err_set(err, UNIAP_E_INVALID, "%s[\"%d\"]: duplicate tp size", path, t[i].tp);
		if (t[i].tp == 1)
			has_one = 1;
	}
	if (!has_one)
		return err_set(err, UNIAP_E_INVALID, "%s: must have an entry for tp 1", path);
	return UNIAP_OK;
}


/* Largest expert count of a MoE layer (DeepSeek-V3 and Qwen3 have 256 and 128). */
#define MODEL_MAX_EXPERTS 4096

/* The mixture-of-experts fields of layer type t (path: "model.layer_types[i]"):
 * all zero on a dense layer; on a MoE layer each part within its whole. */
static uniap_code model_check_experts(const struct model_layer_type *t, const char *path, struct uniap_err *err)
{
	static const char *const names[] = { "expert_parameters", "expert_flops_per_sample", "expert_gemm_dim",
	                                     "expert_tokens_per_sample", "expert_activation_bytes_per_sample",
	                                     "dispatch_bytes_per_sample" };
	const double vals[] = { t->expert_parameters, t->expert_flops_per_sample, t->expert_gemm_dim,
	                        t->expert_tokens_per_sample, t->expert_activation_bytes_per_sample,
	                        t->dispatch_bytes_per_sample };
	size_t i;

	if (t->experts < 0 || t->experts > MODEL_MAX_EXPERTS)
		return err_set(err, UNIAP_E_INVALID, "%s.experts: must be between 0 and %d, got %d", path,
		               MODEL_MAX_EXPERTS, t->experts);
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		if (!model_in_closed(vals[i], 0.0, MODEL_MAX_BYTES_PER_SAMPLE))
			return err_set(err, UNIAP_E_INVALID, "%s.%s: must be >= 0 and <= %g, got %g", path, names[i],
			               MODEL_MAX_BYTES_PER_SAMPLE, vals[i]);
		if (t->experts == 0 && vals[i] != 0)
			return err_set(err, UNIAP_E_INVALID, "%s.%s: given on a layer without experts (experts 0)", path,
			               names[i]);
	}
	if (t->kernels_per_local_expert < 0 || t->kernels_per_local_expert > MODEL_MAX_KERNELS)
		return err_set(err, UNIAP_E_INVALID, "%s.kernels_per_local_expert: must be between 0 and %d, got %d",
		               path, MODEL_MAX_KERNELS, t->kernels_per_local_expert);
	if (t->experts == 0 && t->kernels_per_local_expert != 0)
		return err_set(err, UNIAP_E_INVALID,
		               "%s.kernels_per_local_expert: given on a layer without experts (experts 0)", path);
	if (t->experts == 0 && t->expert_sync)
		return err_set(err, UNIAP_E_INVALID, "%s.expert_sync: given on a layer without experts (experts 0)", path);
	if (t->experts == 0) {
		if (t->expert_load != 0)
			return err_set(err, UNIAP_E_INVALID, "%s.expert_load: given on a layer without experts (experts 0)",
			               path);
		return UNIAP_OK;
	}
	if (!(t->expert_load == 0 || model_in_closed(t->expert_load, 1.0, 64.0)))
		return err_set(err, UNIAP_E_INVALID, "%s.expert_load: must be between 1 and 64 (1: balanced), got %g",
		               path, t->expert_load);
	if (t->n_forward_s > 0)
		return err_set(err, UNIAP_E_INVALID,
		               "%s.experts: a layer with experts is priced from forward_flops_per_sample, not a measured "
		               "forward_s_per_sample", path);
	if (t->expert_parameters > t->parameters)
		return err_set(err, UNIAP_E_INVALID, "%s.expert_parameters: part of parameters %g, got %g", path,
		               t->parameters, t->expert_parameters);
	if (t->expert_parameters != floor(t->expert_parameters))
		return err_set(err, UNIAP_E_INVALID, "%s.expert_parameters: must be an integer, got %g", path,
		               t->expert_parameters);
	if (t->expert_flops_per_sample > t->forward_flops_per_sample)
		return err_set(err, UNIAP_E_INVALID, "%s.expert_flops_per_sample: part of forward_flops_per_sample %g, "
		               "got %g", path, t->forward_flops_per_sample, t->expert_flops_per_sample);
	if (t->expert_activation_bytes_per_sample > model_tp_lookup(t->activation_bytes, t->n_activation_bytes, 1))
		return err_set(err, UNIAP_E_INVALID,
		               "%s.expert_activation_bytes_per_sample: part of activation_bytes_per_sample at tp 1 (%g), "
		               "got %g", path, model_tp_lookup(t->activation_bytes, t->n_activation_bytes, 1),
		               t->expert_activation_bytes_per_sample);
	return UNIAP_OK;
}

/* A per-sample byte count in [0, 1e15]. */
static uniap_code model_check_bytes(double v, const char *path, const char *field, struct uniap_err *err)
{
	if (!model_in_closed(v, 0.0, MODEL_MAX_BYTES_PER_SAMPLE))
		return err_set(err, UNIAP_E_INVALID, "%s.%s: must be >= 0 and <= %g, got %g", path, field,
		               MODEL_MAX_BYTES_PER_SAMPLE, v);
	return UNIAP_OK;
}

static uniap_code model_check_type(const struct model_profile *m, size_t i, struct uniap_err *err)
{
	const struct model_layer_type *t = &m->types[i];
	char path[64], field[112];
	size_t j;
	uniap_code rc;

	snprintf(path, sizeof(path), "model.layer_types[%zu]", i);
	snprintf(field, sizeof(field), "%s.name", path);
	rc = model_check_name(t->name, 1, field, err);
	if (rc != UNIAP_OK)
		return rc;
	for (j = 0; j < i; j++)
		if (m->types[j].name && strcmp(m->types[j].name, t->name) == 0)
			return err_set(err, UNIAP_E_INVALID, "%s: duplicate layer type name \"%s\"", field, t->name);
	snprintf(field, sizeof(field), "%s.forward_s_per_sample", path);
	if (t->n_forward_s > 0 && t->forward_flops_per_sample != 0.0)
		return err_set(err, UNIAP_E_INVALID,
		               "%s: must give exactly one of forward_s_per_sample and forward_flops_per_sample",
		               path);
	if (t->n_forward_s == 0 && t->forward_flops_per_sample != 0.0) {
		if (!model_in_open_closed(t->forward_flops_per_sample, 0.0, MODEL_MAX_FLOPS_PER_SAMPLE))
			return err_set(err, UNIAP_E_INVALID, "%s.forward_flops_per_sample: must be > 0 and <= %g, got %g",
			               path, MODEL_MAX_FLOPS_PER_SAMPLE, t->forward_flops_per_sample);
	} else {
		rc = model_check_tp_table(t->forward_s, t->n_forward_s, 0.0, 0, MODEL_MAX_FORWARD_S, field, err);
		if (rc != UNIAP_OK)
			return rc;
	}
	if (!(model_in_closed(t->parameters, 0.0, MODEL_MAX_PARAMETERS) && t->parameters == floor(t->parameters)))
		return err_set(err, UNIAP_E_INVALID, "%s.parameters: must be an integer >= 0 and <= %g, got %g",
		               path, MODEL_MAX_PARAMETERS, t->parameters);
	snprintf(field, sizeof(field), "%s.activation_bytes_per_sample", path);
	rc = model_check_tp_table(t->activation_bytes, t->n_activation_bytes, 0.0, 1,
	                          MODEL_MAX_BYTES_PER_SAMPLE, field, err);
	if (rc == UNIAP_OK)
		rc = model_check_bytes(t->output_bytes_per_sample, path, "output_bytes_per_sample", err);
	if (rc == UNIAP_OK)
		rc = model_check_bytes(t->checkpoint_bytes_per_sample, path, "checkpoint_bytes_per_sample", err);
	if (rc != UNIAP_OK)
		return rc;
	if (t->tp_allreduces_per_pass < 0 || t->tp_allreduces_per_pass > MODEL_MAX_TP_ALLREDUCES)
		return err_set(err, UNIAP_E_INVALID, "%s.tp_allreduces_per_pass: must be between 0 and %d, got %d",
		               path, MODEL_MAX_TP_ALLREDUCES, t->tp_allreduces_per_pass);
	if (!model_in_closed(t->forward_fixed_s, 0.0, MODEL_MAX_FIXED_S))
		return err_set(err, UNIAP_E_INVALID, "%s.forward_fixed_s: must be >= 0 and <= %g, got %g", path,
		               MODEL_MAX_FIXED_S, t->forward_fixed_s);
	if (t->kernels_per_pass < 0 || t->kernels_per_pass > MODEL_MAX_KERNELS)
		return err_set(err, UNIAP_E_INVALID, "%s.kernels_per_pass: must be between 0 and %d, got %d", path,
		               MODEL_MAX_KERNELS, t->kernels_per_pass);
	if (!model_in_closed(t->gemm_dim, 0.0, MODEL_MAX_GEMM_DIM) ||
	    !model_in_closed(t->tokens_per_sample, 0.0, MODEL_MAX_GEMM_DIM))
		return err_set(err, UNIAP_E_INVALID, "%s.%s: must be >= 0 and <= %g, got %g", path,
		               model_in_closed(t->gemm_dim, 0.0, MODEL_MAX_GEMM_DIM) ? "tokens_per_sample" : "gemm_dim",
		               MODEL_MAX_GEMM_DIM,
		               model_in_closed(t->gemm_dim, 0.0, MODEL_MAX_GEMM_DIM) ? t->tokens_per_sample : t->gemm_dim);
	if (rc == UNIAP_OK)
		rc = model_check_bytes(t->attention_bytes_per_sample, path, "attention_bytes_per_sample", err);
	if (rc == UNIAP_OK)
		rc = model_check_bytes(t->attention_memory_bound_bytes_per_sample, path,
		                       "attention_memory_bound_bytes_per_sample", err);
	if (rc != UNIAP_OK)
		return rc;
	if (!model_in_closed(t->attention_flops_per_sample, 0.0, MODEL_MAX_FLOPS_PER_SAMPLE))
		return err_set(err, UNIAP_E_INVALID, "%s.attention_flops_per_sample: must be >= 0 and <= %g, got %g",
		               path, MODEL_MAX_FLOPS_PER_SAMPLE, t->attention_flops_per_sample);
	if (t->attention_bytes_per_sample > model_tp_lookup(t->activation_bytes, t->n_activation_bytes, 1))
		return err_set(err, UNIAP_E_INVALID,
		               "%s.attention_bytes_per_sample: must not exceed activation_bytes_per_sample at tp 1 "
		               "(%g), of which it is a part, got %g", path,
		               model_tp_lookup(t->activation_bytes, t->n_activation_bytes, 1),
		               t->attention_bytes_per_sample);
	if (t->n_memory_bound_bytes > 0) {
		snprintf(field, sizeof(field), "%s.memory_bound_bytes_per_sample", path);
		rc = model_check_tp_table(t->memory_bound_bytes, t->n_memory_bound_bytes, 0.0, 1,
		                          MODEL_MAX_BYTES_PER_SAMPLE, field, err);
		if (rc != UNIAP_OK)
			return rc;
	}
	if (!model_in_closed(t->kv_bytes_per_sample, 0.0, MODEL_MAX_BYTES_PER_SAMPLE))
		return err_set(err, UNIAP_E_INVALID, "%s.kv_bytes_per_sample: must be >= 0 and <= %g, got %g", path,
		               MODEL_MAX_BYTES_PER_SAMPLE, t->kv_bytes_per_sample);
	if (!model_in_closed(t->fp8_saved_bytes_per_sample + t->fp8_saved_split_bytes_per_sample, 0.0,
	                     model_tp_lookup(t->activation_bytes, t->n_activation_bytes, 1)) ||
	    t->fp8_saved_bytes_per_sample < 0 || t->fp8_saved_split_bytes_per_sample < 0)
		return err_set(err, UNIAP_E_INVALID,
		               "%s.fp8_saved_bytes_per_sample: with fp8_saved_split_bytes_per_sample, a part of "
		               "activation_bytes_per_sample at tp 1 (%g), got %g and %g", path,
		               model_tp_lookup(t->activation_bytes, t->n_activation_bytes, 1), t->fp8_saved_bytes_per_sample,
		               t->fp8_saved_split_bytes_per_sample);
	if (t->attention_heads < 0 || t->attention_heads > 1000000)
		return err_set(err, UNIAP_E_INVALID, "%s.attention_heads: must be between 0 and 1000000, got %d", path,
		               t->attention_heads);
	if (!model_in_closed(t->ulysses_bytes_per_sample, 0.0, MODEL_MAX_BYTES_PER_SAMPLE))
		return err_set(err, UNIAP_E_INVALID, "%s.ulysses_bytes_per_sample: must be >= 0 and <= %g, got %g", path,
		               MODEL_MAX_BYTES_PER_SAMPLE, t->ulysses_bytes_per_sample);
	if (!model_in_closed(t->context_flops_per_sample, 0.0, t->forward_flops_per_sample))
		return err_set(err, UNIAP_E_INVALID,
		               "%s.context_flops_per_sample: part of forward_flops_per_sample %g, got %g", path,
		               t->forward_flops_per_sample, t->context_flops_per_sample);
	return model_check_experts(t, path, err);
}

/* Layer names and types; duplicates found by sorting indices by name. */
struct model_name_ref {
	const char *name;
	size_t index;
};

static int model_name_ref_cmp(const void *a, const void *b)
{
	const struct model_name_ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Layer names are unique: sorts (name, index) pairs and reports the later of the first duplicate. */
static uniap_code model_check_layer_names(const struct model_profile *m, struct uniap_err *err)
{
	struct model_name_ref *refs = malloc(m->n_layers * sizeof(*refs));
	size_t i;
	uniap_code rc = UNIAP_OK;

	if (!refs) {
		rc = err_set(err, UNIAP_E_NOMEM, "model.graph.layers: out of memory");
		goto out;
	}
	for (i = 0; i < m->n_layers; i++) {
		refs[i].name = m->layers[i].name;
		refs[i].index = i;
	}
	qsort(refs, m->n_layers, sizeof(*refs), model_name_ref_cmp);
	for (i = 1; i < m->n_layers; i++) {
		if (strcmp(refs[i - 1].name, refs[i].name) == 0) {
			rc = err_set(err, UNIAP_E_INVALID, "model.graph.layers[%zu].name: duplicate layer name \"%s\"",
			             refs[i].index, refs[i].name);
			goto out;
		}
	}
out:
	free(refs);
	return rc;
}

static uniap_code model_check_layers(const struct model_profile *m, struct uniap_err *err)
{
	char path[80];
	size_t i;
	uniap_code rc;

	if (m->n_layers > MODEL_MAX_LAYERS)
		return err_set(err, UNIAP_E_LIMIT, "model.graph.layers: must have at most %d layers, got %zu",
		               MODEL_MAX_LAYERS, m->n_layers);
	if (m->n_layers < 1 || !m->layers)
		return err_set(err, UNIAP_E_INVALID, "model.graph.layers: must have at least 1 layer, got 0");
	for (i = 0; i < m->n_layers; i++) {
		snprintf(path, sizeof(path), "model.graph.layers[%zu].name", i);
		rc = model_check_name(m->layers[i].name, 1, path, err);
		if (rc != UNIAP_OK)
			return rc;
		if (m->layers[i].type >= m->n_types)
			return err_set(err, UNIAP_E_INVALID,
			               "model.graph.layers[%zu].type: layer \"%s\" has type index %zu, only %zu types",
			               i, m->layers[i].name, m->layers[i].type, m->n_types);
	}
	return model_check_layer_names(m, err);
}

static int model_edge_ref_cmp(const void *a, const void *b)
{
	const struct model_edge *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return 0;
}

/* An edge with its position in model.graph.edges, for finding duplicates by sorting. */
struct model_edge_ref {
	struct model_edge e;
	size_t index;
};

static int model_edge_idx_cmp(const void *a, const void *b)
{
	const struct model_edge_ref *x = a, *y = b;
	int c = model_edge_ref_cmp(&x->e, &y->e);

	if (c != 0)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* No duplicate edges, no isolated layers (when n_layers > 1); endpoints already in range. */
static uniap_code model_check_edge_set(const struct model_profile *m, struct uniap_err *err)
{
	struct model_edge_ref *refs = malloc((m->n_edges ? m->n_edges : 1) * sizeof(*refs));
	unsigned char *touched = calloc(m->n_layers, 1);
	size_t i;
	uniap_code rc = UNIAP_OK;

	if (!refs || !touched) {
		rc = err_set(err, UNIAP_E_NOMEM, "model.graph.edges: out of memory");
		goto out;
	}
	for (i = 0; i < m->n_edges; i++) {
		refs[i].e = m->edges[i];
		refs[i].index = i;
		touched[m->edges[i].from] = 1;
		touched[m->edges[i].to] = 1;
	}
	qsort(refs, m->n_edges, sizeof(*refs), model_edge_idx_cmp);
	for (i = 1; i < m->n_edges; i++) {
		if (model_edge_ref_cmp(&refs[i - 1].e, &refs[i].e) == 0) {
			rc = err_set(err, UNIAP_E_INVALID,
			             "model.graph.edges[%zu]: duplicate of edges[%zu] (\"%s\" -> \"%s\")",
			             refs[i].index, refs[i - 1].index, m->layers[refs[i].e.from].name,
			             m->layers[refs[i].e.to].name);
			goto out;
		}
	}
	for (i = 0; m->n_layers > 1 && i < m->n_layers; i++) {
		if (!touched[i]) {
			rc = err_set(err, UNIAP_E_INVALID, "model.graph.layers[%zu]: layer \"%s\" has no edges", i,
			             m->layers[i].name);
			goto out;
		}
	}
out:
	free(refs);
	free(touched);
	return rc;
}

/* Endpoints in range and no self-loops, then model_check_edge_set(). */
static uniap_code model_check_edges(const struct model_profile *m, struct uniap_err *err)
{
	size_t i;

	if (m->n_edges > MODEL_MAX_EDGES)
		return err_set(err, UNIAP_E_LIMIT, "model.graph.edges: must have at most %d edges, got %zu",
		               MODEL_MAX_EDGES, m->n_edges);
	if (m->n_edges > 0 && !m->edges)
		return err_set(err, UNIAP_E_INVALID, "model.graph.edges: missing entries");
	for (i = 0; i < m->n_edges; i++) {
		const struct model_edge *e = &m->edges[i];

		if (e->from >= m->n_layers || e->to >= m->n_layers)
			return err_set(err, UNIAP_E_INVALID,
			               "model.graph.edges[%zu]: endpoint out of range (%zu -> %zu, %zu layers)", i,
			               e->from, e->to, m->n_layers);
		if (e->from == e->to)
			return err_set(err, UNIAP_E_INVALID, "model.graph.edges[%zu]: self-loop on layer \"%s\"", i,
			               m->layers[e->from].name);
	}
	return model_check_edge_set(m, err);
}

uniap_code model_validate(const struct model_profile *m, struct uniap_err *err)
{
	size_t *order = NULL;
	size_t i;
	uniap_code rc = UNIAP_OK;

	if (!m) {
		rc = err_set(err, UNIAP_E_ARG, "model: missing profile");
		goto out;
	}
	rc = model_check_name(m->name, 0, "model.name", err);
	if (rc == UNIAP_OK && m->shape.known) {
		const struct model_shape *sh = &m->shape;

		if (sh->layers < 1 || (size_t)sh->layers > m->n_layers)
			rc = err_set(err, UNIAP_E_INVALID, "model.shape.layers: must be in [1, %zu] (the graph's layers), got %ld",
			             m->n_layers, sh->layers);
		else if (sh->hidden < 1 || sh->heads < 1 || sh->seq_len < 1 || sh->vocab < 1 || sh->ffn_hidden < 1)
			rc = err_set(err, UNIAP_E_INVALID, "model.shape: hidden, heads, ffn_hidden, seq_len and vocab must be >= 1");
		else if (sh->kv_heads < 1 || sh->heads % sh->kv_heads != 0)
			rc = err_set(err, UNIAP_E_INVALID, "model.shape.kv_heads: must divide heads (%ld), got %ld", sh->heads,
			             sh->kv_heads);
		else if (sh->hidden % sh->heads != 0)
			rc = err_set(err, UNIAP_E_INVALID, "model.shape.heads: must divide hidden (%ld), got %ld", sh->hidden,
			             sh->heads);
	}
	if (rc != UNIAP_OK)
		goto out;
	if (m->precision != MODEL_FP32 && m->precision != MODEL_MIXED) {
		rc = err_set(err, UNIAP_E_INVALID, "model.precision: must be \"fp32\" or \"mixed\", got %d",
		             (int)m->precision);
		goto out;
	}
	if (!model_in_closed(m->state_bytes_per_parameter, 0.0, 64.0))
		return err_set(err, UNIAP_E_INVALID, "model.state_bytes_per_parameter: must be >= 0 and <= 64, got %g",
		               m->state_bytes_per_parameter);
	if (m->optimizer != MODEL_ADAM && m->optimizer != MODEL_SGD_MOMENTUM && m->optimizer != MODEL_SGD) {
		rc = err_set(err, UNIAP_E_INVALID,
		             "model.optimizer: must be \"adam\", \"sgd_momentum\" or \"sgd\", got %d",
		             (int)m->optimizer);
		goto out;
	}
	if (m->n_types > MODEL_MAX_TYPES) {
		rc = err_set(err, UNIAP_E_LIMIT, "model.layer_types: must have at most %d entries, got %zu",
		             MODEL_MAX_TYPES, m->n_types);
		goto out;
	}
	if (m->n_types < 1 || !m->types) {
		rc = err_set(err, UNIAP_E_INVALID, "model.layer_types: must have at least 1 entry, got 0");
		goto out;
	}
	for (i = 0; rc == UNIAP_OK && i < m->n_types; i++)
		rc = model_check_type(m, i, err);
	if (rc == UNIAP_OK)
		rc = model_check_layers(m, err);
	if (rc == UNIAP_OK)
		rc = model_check_edges(m, err);
	if (rc != UNIAP_OK)
		goto out;
	order = malloc(m->n_layers * sizeof(*order));
	if (!order) {
		rc = err_set(err, UNIAP_E_NOMEM, "model.graph: out of memory");
		goto out;
	}
	rc = model_topo_order(m, order, err);
out:
	free(order);
	return rc;
}

/* ------------------------------------------------------- topological order */

/* A binary min-heap of layer indices (ready layers, smallest index first). */
static void model_heap_push(size_t *heap, size_t *n, size_t v)
{
	size_t i = (*n)++;

	while (i > 0 && heap[(i - 1) / 2] > v) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = v;
}

static size_t model_heap_pop(size_t *heap, size_t *n)
{
	size_t top = heap[0], last = heap[--(*n)], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && heap[c + 1] < heap[c])
			c++;
		if (heap[c] >= last)
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (*n > 0)
		heap[i] = last;
	return top;
}

/*
 * Names a layer on a cycle among the layers Kahn could not order (indeg > 0).
 * Every such layer has a remaining predecessor, so walking predecessors n
 * times lands on a cycle; then the smallest index on that cycle is reported,
 * which makes the message deterministic.
 */
static size_t model_cycle_layer(const struct model_profile *m, const size_t *indeg, const size_t *pstart,
                                const size_t *pred)
{
	size_t v = 0, start, best, i, k;

	while (v < m->n_layers && indeg[v] == 0)
		v++;
	/* walk back along the smallest remaining predecessor */
	for (i = 0; i < m->n_layers; i++) {
		size_t next = SIZE_MAX;

		for (k = pstart[v]; k < pstart[v + 1]; k++)
			if (indeg[pred[k]] > 0 && pred[k] < next)
				next = pred[k];
		v = next;
	}
	start = v;
	best = v;
	do {
		size_t next = SIZE_MAX;

		for (k = pstart[v]; k < pstart[v + 1]; k++)
			if (indeg[pred[k]] > 0 && pred[k] < next)
				next = pred[k];
		v = next;
		if (v < best)
			best = v;
	} while (v != start);
	return best;
}

uniap_code model_topo_order(const struct model_profile *m, size_t *order, struct uniap_err *err)
{
	size_t n = m->n_layers, e;
	size_t *indeg = NULL, *sstart = NULL, *succ = NULL, *pstart = NULL, *pred = NULL, *heap = NULL;
	size_t n_heap = 0, n_out = 0, v, k;
	uniap_code rc = UNIAP_OK;

	if (n == 0)
		goto out;
	for (e = 0; e < m->n_edges; e++) {
		if (m->edges[e].from >= n || m->edges[e].to >= n) {
			rc = err_set(err, UNIAP_E_INVALID, "model.graph.edges[%zu]: endpoint out of range", e);
			goto out;
		}
	}
	indeg = calloc(n, sizeof(*indeg));
	sstart = calloc(n + 1, sizeof(*sstart));
	pstart = calloc(n + 1, sizeof(*pstart));
	succ = malloc((m->n_edges ? m->n_edges : 1) * sizeof(*succ));
	pred = malloc((m->n_edges ? m->n_edges : 1) * sizeof(*pred));
	heap = malloc(n * sizeof(*heap));
	if (!indeg || !sstart || !pstart || !succ || !pred || !heap) {
		rc = err_set(err, UNIAP_E_NOMEM, "model.graph: out of memory");
		goto out;
	}
	/* CSR adjacency, successors and predecessors, in edge order */
	for (e = 0; e < m->n_edges; e++) {
		sstart[m->edges[e].from + 1]++;
		pstart[m->edges[e].to + 1]++;
	}
	for (v = 0; v < n; v++) {
		sstart[v + 1] += sstart[v];
		pstart[v + 1] += pstart[v];
	}
	for (e = 0; e < m->n_edges; e++) {
		size_t f = m->edges[e].from, t = m->edges[e].to;

		succ[sstart[f] + indeg[f]++] = t; /* indeg used as a fill cursor here */
	}
	memset(indeg, 0, n * sizeof(*indeg));
	for (e = 0; e < m->n_edges; e++) {
		size_t t = m->edges[e].to;

		pred[pstart[t] + indeg[t]++] = m->edges[e].from;
	}
	for (v = 0; v < n; v++)
		if (indeg[v] == 0)
			model_heap_push(heap, &n_heap, v);
	while (n_heap > 0) {
		v = model_heap_pop(heap, &n_heap);
		order[n_out++] = v;
		for (k = sstart[v]; k < sstart[v + 1]; k++)
			if (--indeg[succ[k]] == 0)
				model_heap_push(heap, &n_heap, succ[k]);
	}
	if (n_out < n) {
		v = model_cycle_layer(m, indeg, pstart, pred);
		rc = err_set(err, UNIAP_E_INVALID, "model.graph: cycle through layer \"%s\"",
		             m->layers[v].name ? m->layers[v].name : "?");
	}
out:
	free(indeg);
	free(sstart);
	free(succ);
	free(pstart);
	free(pred);
	free(heap);
	return rc;
}

void model_release(struct model_profile *m)
{
	size_t i;

	if (!m)
		return;
	free(m->name);
	for (i = 0; m->types && i < m->n_types; i++) {
		free(m->types[i].name);
		free(m->types[i].forward_s);
		free(m->types[i].activation_bytes);
		free(m->types[i].memory_bound_bytes);
	}
	free(m->types);
	for (i = 0; m->layers && i < m->n_layers; i++)
		free(m->layers[i].name);
	free(m->layers);
	free(m->edges);
	memset(m, 0, sizeof(*m));
}
