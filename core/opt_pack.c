/*
 * opt_pack.c - candidates and results across a pipe (opt.h, opt_*_pack and
 * opt_*_unpack): the worker processes' byte format.
 *
 * Thread safety: reentrant.
 * Never: I/O, globals, asserts on input; a buffer is never read out of bounds.
 */
#include "opt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ serialization */

/*
 * Format (little-endian): magic "UAPC"/"UAPR", u32 version, fields in a fixed
 * order, then a u32 FNV-1a checksum of everything before it.  Doubles travel
 * as their IEEE-754 bits.  Every count is checked against a cap and against
 * the bytes left before anything is allocated.
 */
#define OPT_PACK_VERSION 6u /* 2: a strategy's ZeRO stage and sequence parallelism; 3: the batch;
                               4: virtual stages; 5: the interleaved peak rows; 6: the makespan
                               objective */
#define OPT_NAME_PACK_MAX 4096u

struct opt_wbuf {
	unsigned char *p;
	size_t n, cap;
	int failed;
};

static void opt_w_bytes(struct opt_wbuf *w, const void *src, size_t len)
{
	if (w->failed)
		return;
	if (len > OPT_PACK_MAX - w->n) {
		w->failed = 1;
		return;
	}
	if (w->n + len > w->cap) {
		size_t nc = w->cap ? w->cap : 256;
		unsigned char *np;

		while (nc < w->n + len)
			nc *= 2;
		np = realloc(w->p, nc);
		if (!np) {
			w->failed = 1;
			return;
		}
		w->p = np;
		w->cap = nc;
	}
	memcpy(w->p + w->n, src, len);
	w->n += len;
}

static void opt_w_u64(struct opt_wbuf *w, uint64_t v)
{
	unsigned char b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	opt_w_bytes(w, b, 8);
}

static void opt_w_u32(struct opt_wbuf *w, uint32_t v)
{
	unsigned char b[4];
	int i;

	for (i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	opt_w_bytes(w, b, 4);
}

static void opt_w_i64(struct opt_wbuf *w, int64_t v)
{
	opt_w_u64(w, (uint64_t)v);
}

static void opt_w_f64(struct opt_wbuf *w, double v)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	opt_w_u64(w, b);
}

static void opt_w_str(struct opt_wbuf *w, const char *s)
{
	size_t len;

	if (!s) {
		opt_w_u32(w, UINT32_MAX);
		return;
	}
	len = strlen(s);
	if (len > OPT_NAME_PACK_MAX) {
		w->failed = 1;
		return;
	}
	opt_w_u32(w, (uint32_t)len);
	opt_w_bytes(w, s, len);
}

static uint32_t opt_fnv1a(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static uniap_code opt_w_finish(struct opt_wbuf *w, unsigned char **buf, size_t *len,
                               struct uniap_err *err)
{
	if (!w->failed)
		opt_w_u32(w, opt_fnv1a(w->p, w->n));
	if (w->failed) {
		free(w->p);
		*buf = NULL;
		*len = 0;
		return err_set(err, UNIAP_E_NOMEM, "pack: out of memory or over %zu bytes", OPT_PACK_MAX);
	}
	*buf = w->p;
	*len = w->n;
	return UNIAP_OK;
}

struct opt_rbuf {
	const unsigned char *p;
	size_t n, at;
	int failed;
};

static int opt_r_bytes(struct opt_rbuf *r, void *dst, size_t len)
{
	if (r->failed || len > r->n - r->at) {
		r->failed = 1;
		if (dst && len <= 8)
			memset(dst, 0, len);
		return -1;
	}
	if (dst)
		memcpy(dst, r->p + r->at, len);
	r->at += len;
	return 0;
}

static uint64_t opt_r_u64(struct opt_rbuf *r)
{
	unsigned char b[8];
	uint64_t v = 0;
	int i;

	if (opt_r_bytes(r, b, 8) != 0)
		return 0;
	for (i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static uint32_t opt_r_u32(struct opt_rbuf *r)
{
	unsigned char b[4];
	uint32_t v = 0;
	int i;

	if (opt_r_bytes(r, b, 4) != 0)
		return 0;
	for (i = 0; i < 4; i++)
		v |= (uint32_t)b[i] << (8 * i);
	return v;
}

static int64_t opt_r_i64(struct opt_rbuf *r)
{
	return (int64_t)opt_r_u64(r);
}

static int32_t opt_r_i32(struct opt_rbuf *r)
{
	return (int32_t)opt_r_u32(r);
}

static double opt_r_f64(struct opt_rbuf *r)
{
	uint64_t b = opt_r_u64(r);
	double v;

	memcpy(&v, &b, sizeof(v));
	return v;
}

/* Bytes left. */
static size_t opt_r_left(const struct opt_rbuf *r)
{
	return r->failed ? 0 : r->n - r->at;
}

/* Reads a string into a new allocation (*out, NULL for a packed NULL); 0 on success. */
static int opt_r_str(struct opt_rbuf *r, char **out, size_t max)
{
	uint32_t len = opt_r_u32(r);

	*out = NULL;
	if (r->failed)
		return -1;
	if (len == UINT32_MAX)
		return 0;
	if (len > max || len > opt_r_left(r)) {
		r->failed = 1;
		return -1;
	}
	*out = malloc((size_t)len + 1);
	if (!*out)
		return -2;
	opt_r_bytes(r, *out, len);
	(*out)[len] = '\0';
	if (strlen(*out) != len) { /* an embedded NUL */
		free(*out);
		*out = NULL;
		r->failed = 1;
		return -1;
	}
	return 0;
}

/* Checks magic, version and the trailing checksum; on success r covers the body. */
static int opt_r_open(struct opt_rbuf *r, const unsigned char *buf, size_t len, const char *magic)
{
	uint32_t sum;

	memset(r, 0, sizeof(*r));
	if (!buf || len < 12 || len > OPT_PACK_MAX || memcmp(buf, magic, 4) != 0)
		return -1;
	sum = (uint32_t)buf[len - 4] | (uint32_t)buf[len - 3] << 8 | (uint32_t)buf[len - 2] << 16 |
	      (uint32_t)buf[len - 1] << 24;
	if (sum != opt_fnv1a(buf, len - 4))
		return -1;
	r->p = buf;
	r->n = len - 4;
	r->at = 4;
	if (opt_r_u32(r) != OPT_PACK_VERSION)
		return -1;
	return 0;
}

static void opt_w_strategy(struct opt_wbuf *w, const struct strategy *s)
{
	int d;

	for (d = 0; d < STRATEGY_DIMS; d++) {
		opt_w_u32(w, (uint32_t)s->degree[d]);
		opt_w_u32(w, (uint32_t)s->order[d]);
		opt_w_u32(w, (uint32_t)s->stride[d]);
		opt_w_u32(w, (uint32_t)s->level[d]);
	}
	opt_w_u32(w, (uint32_t)s->n_order);
	opt_w_u32(w, (uint32_t)s->recompute);
	opt_w_u32(w, (uint32_t)s->zero);
	opt_w_u32(w, (uint32_t)s->sp);
	opt_w_str(w, s->name);
}

static int opt_r_strategy(struct opt_rbuf *r, struct strategy *s)
{
	char *name = NULL;
	int d, rc;

	for (d = 0; d < STRATEGY_DIMS; d++) {
		s->degree[d] = opt_r_i32(r);
		s->order[d] = opt_r_i32(r);
		s->stride[d] = opt_r_i32(r);
		s->level[d] = opt_r_i32(r);
	}
	s->n_order = opt_r_i32(r);
	s->recompute = opt_r_i32(r);
	s->zero = opt_r_i32(r);
	s->sp = opt_r_i32(r);
	rc = opt_r_str(r, &name, STRATEGY_NAME_MAX - 1);
	if (rc != 0)
		return rc;
	if (name)
		memcpy(s->name, name, strlen(name) + 1);
	else
		s->name[0] = '\0';
	free(name);
	return (s->n_order < 0 || s->n_order > STRATEGY_DIMS || s->zero < 0 || s->zero > 2 || s->sp < 0 ||
	        s->sp > 1) ? -1 : 0;
}

uniap_code opt_candidate_pack(const struct cost_candidate *c, unsigned char **buf, size_t *len,
                              struct uniap_err *err)
{
	struct opt_wbuf w = {0};
	size_t K, i, e;
	uniap_code rc;

	*buf = NULL;
	*len = 0;
	rc = opt_candidate_check(c, err);
	if (rc != UNIAP_OK)
		return rc;
	K = cost_k(c);
	opt_w_bytes(&w, "UAPC", 4);
	opt_w_u32(&w, OPT_PACK_VERSION);
	opt_w_i64(&w, c->pp);
	opt_w_i64(&w, c->microbatches);
	opt_w_i64(&w, c->microbatch_size);
	opt_w_i64(&w, c->batch);
	opt_w_u32(&w, (uint32_t)c->schedule);
	opt_w_u32(&w, c->makespan ? 1 : 0);
	opt_w_i64(&w, cost_virtual(c));
	opt_w_f64(&w, c->memory_limit_bytes);
	opt_w_u64(&w, c->n_layers);
	opt_w_u64(&w, K);
	opt_w_u64(&w, c->n_edges);
	opt_w_i64(&w, c->strategies.stage_devices);
	opt_w_i64(&w, c->strategies.pp);
	opt_w_u32(&w, c->strategies.items ? 1 : 0);
	opt_w_u32(&w, c->layer_names ? 1 : 0);
	for (i = 0; i < (size_t)cost_stages(c); i++)
		opt_w_i64(&w, c->inflight[i]);
	opt_w_u64(&w, c->n_peaks);
	for (i = 0; i < c->n_peaks * (size_t)(cost_virtual(c) + 1); i++)
		opt_w_i64(&w, c->peaks[i]);
	if (c->strategies.items)
		for (i = 0; i < K; i++)
			opt_w_strategy(&w, &c->strategies.items[i]);
	if (c->layer_names)
		for (i = 0; i < c->n_layers; i++)
			opt_w_str(&w, c->layer_names[i]);
	for (i = 0; i < c->n_layers * K; i++)
		opt_w_f64(&w, c->time_s[i]);
	for (i = 0; i < c->n_layers * K; i++)
		opt_w_f64(&w, c->memory_fixed_bytes[i]);
	for (i = 0; i < c->n_layers * K; i++)
		opt_w_f64(&w, c->memory_per_microbatch_bytes[i]);
	for (e = 0; e < c->n_edges; e++) {
		opt_w_u64(&w, c->edges[e].from);
		opt_w_u64(&w, c->edges[e].to);
		for (i = 0; i < K * K; i++)
			opt_w_f64(&w, c->edges[e].same_stage_s[i]);
		for (i = 0; i < K * K; i++)
			opt_w_f64(&w, c->edges[e].cross_stage_s[i]);
	}
	return opt_w_finish(&w, buf, len, err);
}

static int opt_r_f64s(struct opt_rbuf *r, double **out, size_t n)
{
	size_t i;

	*out = NULL;
	if (n > opt_r_left(r) / 8) {
		r->failed = 1;
		return -1;
	}
	*out = malloc((n ? n : 1) * sizeof(double));
	if (!*out)
		return -2;
	for (i = 0; i < n; i++)
		(*out)[i] = opt_r_f64(r);
	return 0;
}

uniap_code opt_candidate_unpack(const unsigned char *buf, size_t len, struct cost_candidate *c,
                                struct uniap_err *err)
{
	struct opt_rbuf r;
	uint64_t n, K, ne;
	int64_t pp, sd, spp, vs;
	uint32_t has_items, has_names, ms;
	size_t i, e;
	int nomem = 0, x;
	uniap_code rc = UNIAP_OK;

	memset(c, 0, sizeof(*c));
	if (opt_r_open(&r, buf, len, "UAPC") != 0)
		return err_set(err, UNIAP_E_INVALID, "candidate buffer: bad magic, version or checksum");
	pp = opt_r_i64(&r);
	c->microbatches = (long)opt_r_i64(&r);
	c->microbatch_size = (long)opt_r_i64(&r);
	c->batch = (long)opt_r_i64(&r);
	x = (int)opt_r_u32(&r);
	ms = opt_r_u32(&r);
	vs = opt_r_i64(&r);
	c->memory_limit_bytes = opt_r_f64(&r);
	n = opt_r_u64(&r);
	K = opt_r_u64(&r);
	ne = opt_r_u64(&r);
	sd = opt_r_i64(&r);
	spp = opt_r_i64(&r);
	has_items = opt_r_u32(&r);
	has_names = opt_r_u32(&r);
	if (r.failed || pp < 1 || pp > MODEL_MAX_LAYERS || n < 1 || n > MODEL_MAX_LAYERS || K < 1 ||
	    K > STRATEGY_MAX_COUNT || ne > MODEL_MAX_EDGES ||
	    (x != COST_GPIPE && x != COST_1F1B && x != COST_INTERLEAVED) || vs < 1 ||
	    vs > COST_MAX_VIRTUAL_STAGES || pp * vs > MODEL_MAX_LAYERS ||
	    has_items > 1 || has_names > 1 || ms > 1 || sd < 0 || sd > MODEL_MAX_DEVICES || spp < 0 ||
	    spp > MODEL_MAX_DEVICES) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: header out of range");
		goto out;
	}
	c->schedule = (enum cost_schedule)x;
	c->makespan = (int)ms;
	c->pp = (int)pp;
	c->virtual_stages = (int)vs;
	c->strategies.stage_devices = (int)sd;
	c->strategies.pp = (int)spp;
	if ((uint64_t)(pp * vs) > opt_r_left(&r) / 8) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated");
		goto out;
	}
	c->inflight = calloc((size_t)(pp * vs), sizeof(*c->inflight));
	if (!c->inflight) {
		nomem = 1;
		goto out;
	}
	for (i = 0; i < (size_t)(pp * vs); i++)
		c->inflight[i] = (long)opt_r_i64(&r);
	{
		uint64_t np = opt_r_u64(&r);

		if (r.failed || np > (uint64_t)COST_MAX_PEAK_ROWS || np * (uint64_t)(vs + 1) > opt_r_left(&r) / 8) {
			rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: peak rows out of range or truncated");
			goto out;
		}
		if (np > 0) {
			c->peaks = malloc((size_t)np * (size_t)(vs + 1) * sizeof(*c->peaks));
			if (!c->peaks) {
				nomem = 1;
				goto out;
			}
			for (i = 0; i < (size_t)np * (size_t)(vs + 1); i++)
				c->peaks[i] = (long)opt_r_i64(&r);
			c->n_peaks = (size_t)np;
		}
	}
	c->strategies.count = (size_t)K;
	if (has_items) {
		/* each strategy takes at least 60 bytes */
		if (K > opt_r_left(&r) / 60) {
			rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated");
			goto out;
		}
		c->strategies.items = calloc((size_t)K, sizeof(*c->strategies.items));
		if (!c->strategies.items) {
			nomem = 1;
			goto out;
		}
		for (i = 0; i < K && !r.failed; i++) {
			x = opt_r_strategy(&r, &c->strategies.items[i]);
			if (x == -2) {
				nomem = 1;
				goto out;
			}
			if (x != 0)
				r.failed = 1;
		}
	} else {
		/* the optimizer needs only the count: zeroed items keep the layout of cost_build() */
		c->strategies.items = calloc((size_t)K, sizeof(*c->strategies.items));
		if (!c->strategies.items) {
			nomem = 1;
			goto out;
		}
	}
	c->n_layers = (size_t)n;
	if (has_names && !r.failed) {
		if (n > opt_r_left(&r) / 4) {
			r.failed = 1;
		} else {
			c->layer_names = calloc((size_t)n, sizeof(char *));
			if (!c->layer_names) {
				nomem = 1;
				goto out;
			}
			for (i = 0; i < n && !r.failed; i++)
				if (opt_r_str(&r, &c->layer_names[i], OPT_NAME_PACK_MAX) == -2) {
					nomem = 1;
					goto out;
				}
		}
	}
	if (r.failed || n * K > opt_r_left(&r) / 24) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated or malformed");
		goto out;
	}
	if (opt_r_f64s(&r, &c->time_s, n * K) == -2 ||
	    opt_r_f64s(&r, &c->memory_fixed_bytes, n * K) == -2 ||
	    opt_r_f64s(&r, &c->memory_per_microbatch_bytes, n * K) == -2) {
		nomem = 1;
		goto out;
	}
	if (r.failed || (ne > 0 && ne > opt_r_left(&r) / (16 + 16 * K * K))) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated or malformed");
		goto out;
	}
	c->n_edges = (size_t)ne;
	if (ne > 0) {
		c->edges = calloc((size_t)ne, sizeof(*c->edges));
		if (!c->edges) {
			nomem = 1;
			goto out;
		}
	}
	for (e = 0; e < ne && !r.failed; e++) {
		c->edges[e].from = (size_t)opt_r_u64(&r);
		c->edges[e].to = (size_t)opt_r_u64(&r);
		if (opt_r_f64s(&r, &c->edges[e].same_stage_s, K * K) == -2 ||
		    opt_r_f64s(&r, &c->edges[e].cross_stage_s, K * K) == -2) {
			nomem = 1;
			goto out;
		}
	}
	if (r.failed || opt_r_left(&r) != 0) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated or trailing bytes");
		goto out;
	}
	rc = opt_candidate_check(c, err);
	if (rc != UNIAP_OK)
		err_prefix(err, "candidate buffer");
out:
	if (nomem)
		rc = err_set(err, UNIAP_E_NOMEM, "candidate buffer: out of memory");
	if (rc != UNIAP_OK)
		cost_candidate_release(c);
	return rc;
}

static const char *const opt_methods[] = {
	OPT_METHOD_NONE, OPT_METHOD_DP_CHAIN, OPT_METHOD_DP_STAGES, OPT_METHOD_MILP,
	OPT_METHOD_MILP_AFTER_CAP, OPT_METHOD_LOWER_BOUND, OPT_METHOD_DP_DAG, OPT_METHOD_DP_SWEEP,
	OPT_METHOD_QUICK,
};
#define OPT_N_METHODS (sizeof(opt_methods) / sizeof(opt_methods[0]))

uniap_code opt_result_pack(const struct opt_result *res, unsigned char **buf, size_t *len,
                           struct uniap_err *err)
{
	struct opt_wbuf w = {0};
	uint32_t m = 0, i;
	size_t u;
	int has_plan = res->stage && res->strategy;

	*buf = NULL;
	*len = 0;
	for (i = 0; i < OPT_N_METHODS; i++)
		if (res->method && strcmp(res->method, opt_methods[i]) == 0)
			m = i;
	if (res->n_layers > MODEL_MAX_LAYERS)
		return err_set(err, UNIAP_E_INVALID, "result.n_layers: must be <= %d", MODEL_MAX_LAYERS);
	opt_w_bytes(&w, "UAPR", 4);
	opt_w_u32(&w, OPT_PACK_VERSION);
	opt_w_u32(&w, (uint32_t)res->status);
	opt_w_f64(&w, res->tpi_s);
	opt_w_f64(&w, res->bound_s);
	opt_w_f64(&w, res->gap);
	opt_w_f64(&w, res->solve_s);
	opt_w_i64(&w, res->nodes);
	opt_w_u32(&w, m);
	opt_w_str(&w, res->note);
	opt_w_u64(&w, res->n_layers);
	opt_w_u32(&w, has_plan ? 1 : 0);
	if (has_plan)
		for (u = 0; u < res->n_layers; u++) {
			opt_w_u32(&w, (uint32_t)res->stage[u]);
			opt_w_u64(&w, res->strategy[u]);
		}
	return opt_w_finish(&w, buf, len, err);
}

uniap_code opt_result_unpack(const unsigned char *buf, size_t len, struct opt_result *out,
                             struct uniap_err *err)
{
	struct opt_rbuf r;
	uint32_t status, m, has_plan;
	uint64_t n;
	char *note = NULL;
	size_t u;
	uniap_code rc = UNIAP_OK;

	opt_result_init(out);
	if (opt_r_open(&r, buf, len, "UAPR") != 0)
		return err_set(err, UNIAP_E_INVALID, "result buffer: bad magic, version or checksum");
	status = opt_r_u32(&r);
	out->tpi_s = opt_r_f64(&r);
	out->bound_s = opt_r_f64(&r);
	out->gap = opt_r_f64(&r);
	out->solve_s = opt_r_f64(&r);
	out->nodes = (long)opt_r_i64(&r);
	m = opt_r_u32(&r);
	if (opt_r_str(&r, &note, OPT_NOTE_MAX - 1) == -2) {
		rc = err_set(err, UNIAP_E_NOMEM, "result buffer: out of memory");
		goto out;
	}
	n = opt_r_u64(&r);
	has_plan = opt_r_u32(&r);
	if (r.failed || status >= OPT_STATUS_COUNT || m >= OPT_N_METHODS || n > MODEL_MAX_LAYERS ||
	    has_plan > 1 || isnan(out->tpi_s) || isnan(out->bound_s) || isnan(out->gap) ||
	    isnan(out->solve_s)) {
		rc = err_set(err, UNIAP_E_INVALID, "result buffer: header out of range");
		goto out;
	}
	out->status = (enum opt_status)status;
	out->method = opt_methods[m];
	if (note)
		opt_note_copy(out->note, note);
	out->n_layers = (size_t)n;
	if (has_plan) {
		if (n == 0 || n > opt_r_left(&r) / 12) {
			rc = err_set(err, UNIAP_E_INVALID, "result buffer: truncated");
			goto out;
		}
		out->stage = calloc((size_t)n, sizeof(*out->stage));
		out->strategy = calloc((size_t)n, sizeof(*out->strategy));
		if (!out->stage || !out->strategy) {
			rc = err_set(err, UNIAP_E_NOMEM, "result buffer: out of memory");
			goto out;
		}
		for (u = 0; u < n; u++) {
			uint32_t s = opt_r_u32(&r);
			uint64_t k = opt_r_u64(&r);

			if (s > MODEL_MAX_LAYERS || k >= STRATEGY_MAX_COUNT) {
				rc = err_set(err, UNIAP_E_INVALID, "result buffer: layer %zu out of range", u);
				goto out;
			}
			out->stage[u] = (int)s;
			out->strategy[u] = (size_t)k;
		}
	}
	if (r.failed || opt_r_left(&r) != 0)
		rc = err_set(err, UNIAP_E_INVALID, "result buffer: truncated or trailing bytes");
out:
	free(note);
	if (rc != UNIAP_OK)
		opt_result_release(out);
	return rc;
}
