/*
 * jdecode.c - JSON documents (cluster profile, model profile, plan) to the
 * structs of core/, with cJSON.
 *
 * Split of the work: this file owns everything that only exists in JSON
 * (types, integrality, finiteness, enum spellings, unknown and duplicate keys,
 * TP-size keys, "repeat" expansion, name -> index resolution, nesting depth,
 * array caps before allocating); cluster_validate()/model_validate() own every
 * rule that can be stated on the structs (ranges, nesting of the hierarchy,
 * the graph is a DAG, ...), so the catalog gets the same checks.  The plan
 * document has no core validator: all of its rules live here.
 *
 * cJSON rules (STYLE.md): parse a NUL-terminated copy with an explicit length
 * and require the terminator; check every type; numbers from valuedouble,
 * range-checked; object members looked up case-sensitively.
 *
 * Never: print, exit, keep state, or read cJSON's global error pointer.
 */
#include "jdecode.h"
#include "jdec_int.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "catalog.h"

/* Bytes per GB in the documents' bandwidth unit (GB/s). */
#define JDEC_GB 1e9
#define JDEC_TFLOPS 1e12
/* compute_efficiency when a device gives peak_tflops but no efficiency */
#define JDEC_DEFAULT_EFFICIENCY 0.5
/* Largest micro-batch count/size a plan may state (exact in a double). */
#define JDEC_MAX_COUNT 1000000000000000LL
#define JDEC_MAX_BATCH (1LL << 40) /* = COST_MAX_BATCH */
/* Number format of values quoted in messages. */
#define JDEC_G "%.15g"

/* ---------------------------------------------------------------- helpers */

const char *jdec_type_name(const cJSON *v)
{
	if (cJSON_IsObject(v))
		return "object";
	if (cJSON_IsArray(v))
		return "array";
	if (cJSON_IsString(v))
		return "string";
	if (cJSON_IsNumber(v))
		return "number";
	if (cJSON_IsBool(v))
		return "boolean";
	if (cJSON_IsNull(v))
		return "null";
	return "invalid";
}

/* Marks a path that snprintf() cut (w = its return value) with a final "..." . */
static const char *jdec_pfix(char *buf, int w)
{
	if (w < 0 || w >= JDEC_PATH_MAX)
		memcpy(buf + JDEC_PATH_MAX - 4, "...", 4);
	return buf;
}

/* buf (JDEC_PATH_MAX bytes) = "base.key"; returns buf. */
const char *jdec_pkey(char *buf, const char *base, const char *key)
{
	return jdec_pfix(buf, snprintf(buf, JDEC_PATH_MAX, "%s.%s", base, key));
}

/* buf (JDEC_PATH_MAX bytes) = "base[i]"; returns buf. */
const char *jdec_pidx(char *buf, const char *base, size_t i)
{
	return jdec_pfix(buf, snprintf(buf, JDEC_PATH_MAX, "%s[%zu]", base, i));
}

/* 1 when no container below v (at depth `depth`) is nested deeper than JDEC_MAX_DEPTH. */
static int jdec_depth_ok(const cJSON *v, int depth)
{
	const cJSON *c;

	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return 1;
	if (depth > JDEC_MAX_DEPTH)
		return 0;
	for (c = v->child; c; c = c->next)
		if (!jdec_depth_ok(c, depth + 1))
			return 0;
	return 1;
}

uniap_code jdec_check_depth(const cJSON *root, const char *path, struct uniap_err *err)
{
	if (!jdec_depth_ok(root, 1))
		return err_set(err, UNIAP_E_LIMIT, "%s: nesting deeper than %d levels", path, JDEC_MAX_DEPTH);
	return UNIAP_OK;
}

static int jdec_in_list(const char *s, const char *const *list)
{
	for (; list && *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/*
 * obj (at path) must be an object whose keys are all in allowed (NULL-ended)
 * or ignored (NULL-ended, may be NULL), each at most once.  The duplicate scan
 * is bounded: past |allowed| + |ignored| keys one is unknown or a duplicate.
 */
uniap_code jdec_keys(const cJSON *obj, const char *path, const char *const *allowed,
                            const char *const *ignored, struct uniap_err *err)
{
	const cJSON *c, *d;

	if (!cJSON_IsObject(obj))
		return err_set(err, UNIAP_E_INVALID, "%s: must be an object, got %s", path, jdec_type_name(obj));
	for (c = obj->child; c; c = c->next) {
		if (!c->string)
			return err_set(err, UNIAP_E_INVALID, "%s: member without a key", path);
		if (!jdec_in_list(c->string, allowed) && !jdec_in_list(c->string, ignored))
			return err_set(err, UNIAP_E_INVALID, "%s.%.64s: unknown key", path, c->string);
		for (d = obj->child; d != c; d = d->next)
			if (strcmp(d->string, c->string) == 0)
				return err_set(err, UNIAP_E_INVALID, "%s.%s: duplicate key", path, c->string);
	}
	return UNIAP_OK;
}

static const cJSON *jdec_member(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* v (at path) as a finite number in [lo, hi]. */
uniap_code jdec_num_value(const cJSON *v, const char *path, double lo, double hi, double *out,
                                 struct uniap_err *err)
{
	double x;

	if (!cJSON_IsNumber(v))
		return err_set(err, UNIAP_E_INVALID, "%s: must be a number, got %s", path, jdec_type_name(v));
	x = v->valuedouble;
	if (!isfinite(x))
		return err_set(err, UNIAP_E_INVALID, "%s: must be a finite number, got %g", path, x);
	if (x < lo || x > hi) {
		if (hi == DBL_MAX)
			return err_set(err, UNIAP_E_INVALID, "%s: must be >= " JDEC_G ", got " JDEC_G, path, lo, x);
		return err_set(err, UNIAP_E_INVALID, "%s: must be between " JDEC_G " and " JDEC_G ", got " JDEC_G,
		               path, lo, hi, x);
	}
	*out = x;
	return UNIAP_OK;
}

/* v (at path) as an integer in [lo, hi] (|lo|, |hi| < 2^53). */
uniap_code jdec_int_value(const cJSON *v, const char *path, long long lo, long long hi,
                                 long long *out, struct uniap_err *err)
{
	double x;

	if (!cJSON_IsNumber(v))
		return err_set(err, UNIAP_E_INVALID, "%s: must be an integer, got %s", path, jdec_type_name(v));
	x = v->valuedouble;
	if (!isfinite(x))
		return err_set(err, UNIAP_E_INVALID, "%s: must be a finite integer, got %g", path, x);
	if (x != floor(x))
		return err_set(err, UNIAP_E_INVALID, "%s: must be an integer, got " JDEC_G, path, x);
	if (x < (double)lo || x > (double)hi)
		return err_set(err, UNIAP_E_INVALID, "%s: must be an integer between %lld and %lld, got " JDEC_G,
		               path, lo, hi, x);
	*out = (long long)x;
	return UNIAP_OK;
}

/* v (at path) as a string of min_len..max_len bytes, borrowed from v. */
uniap_code jdec_str_value(const cJSON *v, const char *path, size_t min_len, size_t max_len,
                                 const char **out, struct uniap_err *err)
{
	size_t len;

	if (!cJSON_IsString(v) || !v->valuestring)
		return err_set(err, UNIAP_E_INVALID, "%s: must be a string, got %s", path, jdec_type_name(v));
	len = strlen(v->valuestring);
	if (len < min_len || len > max_len) {
		if (min_len == 0)
			return err_set(err, UNIAP_E_INVALID, "%s: must be a string of at most %zu bytes, got %zu bytes",
			               path, max_len, len);
		return err_set(err, UNIAP_E_INVALID, "%s: must be a string of %zu to %zu bytes, got %zu bytes",
		               path, min_len, max_len, len);
	}
	*out = v->valuestring;
	return UNIAP_OK;
}

/* v (at path) as one of names[0..n-1]; *out is the index. */
uniap_code jdec_enum_value(const cJSON *v, const char *path, const char *const *names, size_t n,
                                  int *out, struct uniap_err *err)
{
	char list[160] = "";
	size_t i, used = 0;

	if (!cJSON_IsString(v) || !v->valuestring)
		return err_set(err, UNIAP_E_INVALID, "%s: must be a string, got %s", path, jdec_type_name(v));
	for (i = 0; i < n; i++) {
		if (strcmp(v->valuestring, names[i]) == 0) {
			*out = (int)i;
			return UNIAP_OK;
		}
	}
	for (i = 0; i < n && used < sizeof(list); i++) {
		int w = snprintf(list + used, sizeof(list) - used, "%s\"%s\"", i ? ", " : "", names[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	return err_set(err, UNIAP_E_INVALID, "%s: must be one of %s, got \"%.64s\"", path, list,
	               v->valuestring);
}

/*
 * obj.key, required or not: *out is the member or NULL when absent (and not
 * required).  p receives the member's path.
 */
uniap_code jdec_get(const cJSON *obj, const char *key, const char *path, int required, char *p,
                           const cJSON **out, struct uniap_err *err)
{
	jdec_pkey(p, path, key);
	*out = jdec_member(obj, key);
	if (!*out && required)
		return err_set(err, UNIAP_E_INVALID, "%s: is required", p);
	return UNIAP_OK;
}

/* obj.key as a finite number in [lo, hi]; dflt when absent and not required. */
uniap_code jdec_num(const cJSON *obj, const char *key, const char *path, int required, double dflt,
                           double lo, double hi, double *out, struct uniap_err *err)
{
	char p[JDEC_PATH_MAX];
	const cJSON *v;
	uniap_code rc = jdec_get(obj, key, path, required, p, &v, err);

	if (rc != UNIAP_OK)
		return rc;
	if (!v) {
		*out = dflt;
		return UNIAP_OK;
	}
	return jdec_num_value(v, p, lo, hi, out, err);
}

/* obj.key as a finite number; ranges are left to core's validators. */
static uniap_code jdec_any_num(const cJSON *obj, const char *key, const char *path, int required,
                               double dflt, double *out, struct uniap_err *err)
{
	return jdec_num(obj, key, path, required, dflt, -DBL_MAX, DBL_MAX, out, err);
}

/* obj.key as an integer in [lo, hi]; dflt when absent and not required. */
uniap_code jdec_int(const cJSON *obj, const char *key, const char *path, int required,
                           long long dflt, long long lo, long long hi, long long *out, struct uniap_err *err)
{
	char p[JDEC_PATH_MAX];
	const cJSON *v;
	uniap_code rc = jdec_get(obj, key, path, required, p, &v, err);

	if (rc != UNIAP_OK)
		return rc;
	if (!v) {
		*out = dflt;
		return UNIAP_OK;
	}
	return jdec_int_value(v, p, lo, hi, out, err);
}

/* obj.key as an int; its range is left to core's validators. */
static uniap_code jdec_any_int(const cJSON *obj, const char *key, const char *path, int required, int dflt,
                               int *out, struct uniap_err *err)
{
	long long v = 0;
	uniap_code rc = jdec_int(obj, key, path, required, dflt, INT_MIN, INT_MAX, &v, err);

	if (rc == UNIAP_OK)
		*out = (int)v;
	return rc;
}

/* obj.key as a new string (caller frees *out); *out stays NULL when absent and not required. */
uniap_code jdec_str(const cJSON *obj, const char *key, const char *path, int required,
                           size_t min_len, size_t max_len, char **out, struct uniap_err *err)
{
	char p[JDEC_PATH_MAX];
	const cJSON *v;
	const char *s = NULL;
	uniap_code rc = jdec_get(obj, key, path, required, p, &v, err);

	if (rc != UNIAP_OK || !v)
		return rc;
	rc = jdec_str_value(v, p, min_len, max_len, &s, err);
	if (rc != UNIAP_OK)
		return rc;
	*out = strdup(s);
	if (!*out)
		return err_set(err, UNIAP_E_NOMEM, "%s: out of memory", p);
	return UNIAP_OK;
}

/*
 * obj.key as an array of min..max elements: *out is the array (NULL when
 * absent and not required), *n its length.  Over max is UNIAP_E_LIMIT.
 */
uniap_code jdec_arr(const cJSON *obj, const char *key, const char *path, int required, size_t min,
                           size_t max, const cJSON **out, size_t *n, struct uniap_err *err)
{
	char p[JDEC_PATH_MAX];
	const cJSON *v, *c;
	size_t count = 0;
	uniap_code rc = jdec_get(obj, key, path, required, p, &v, err);

	*out = NULL;
	*n = 0;
	if (rc != UNIAP_OK || !v)
		return rc;
	if (!cJSON_IsArray(v))
		return err_set(err, UNIAP_E_INVALID, "%s: must be an array, got %s", p, jdec_type_name(v));
	for (c = v->child; c; c = c->next)
		count++;
	if (count > max)
		return err_set(err, UNIAP_E_LIMIT, "%s: must have at most %zu entries, got %zu", p, max, count);
	if (count < min)
		return err_set(err, UNIAP_E_INVALID, "%s: must have at least %zu entr%s, got %zu", p, min,
		               min == 1 ? "y" : "ies", count);
	*out = v;
	*n = count;
	return UNIAP_OK;
}

/* obj.key as an object with the given keys; *out NULL when absent and not required. */
uniap_code jdec_obj(const cJSON *obj, const char *key, const char *path, int required,
                           const char *const *allowed, const cJSON **out, struct uniap_err *err)
{
	char p[JDEC_PATH_MAX];
	uniap_code rc = jdec_get(obj, key, path, required, p, out, err);

	if (rc != UNIAP_OK || !*out)
		return rc;
	return jdec_keys(*out, p, allowed, NULL, err);
}

/* Rewrites a message rooted at `from` ("cluster") to start with `to` ("body.cluster"). */
void jdec_reroot(struct uniap_err *err, const char *from, const char *to)
{
	char tmp[UNIAP_ERR_MSG_MAX];
	size_t n = strlen(from);
	char next;

	if (!err || strcmp(from, to) == 0 || strncmp(err->msg, from, n) != 0)
		return;
	next = err->msg[n];
	if (next != '.' && next != ':' && next != '[')
		return;
	snprintf(tmp, sizeof(tmp), "%s%s", to, err->msg + n);
	memcpy(err->msg, tmp, sizeof(tmp));
}

/* Names sorted for duplicate detection and lookup. */
struct jdec_name_ref {
	const char *name;
	size_t index;
};

static int jdec_name_ref_cmp(const void *a, const void *b)
{
	const struct jdec_name_ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int jdec_name_key_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct jdec_name_ref *)elem)->name);
}

/*
 * Sorts refs[0..n-1] by name; returns 1 and the later index of the first
 * duplicate pair in *dup (by position in the original order), else 0.
 */
static int jdec_names_sort(struct jdec_name_ref *refs, size_t n, size_t *dup)
{
	size_t i;
	int found = 0;

	qsort(refs, n, sizeof(*refs), jdec_name_ref_cmp);
	for (i = 1; i < n; i++) {
		if (strcmp(refs[i - 1].name, refs[i].name) == 0 && (!found || refs[i].index < *dup)) {
			*dup = refs[i].index;
			found = 1;
		}
	}
	return found;
}

/* ---------------------------------------------------------------- parsing */

uniap_code jdec_read_file(const char *path, size_t max_bytes, char **out_text, size_t *out_len,
                          struct uniap_err *err)
{
	FILE *f = NULL;
	char *buf = NULL, *nbuf;
	size_t cap = 0, len = 0, limit, n;
	char why[128];
	uniap_code rc = UNIAP_OK;

	if (!out_text || !out_len || !path) {
		rc = err_set(err, UNIAP_E_ARG, "jdec_read_file: missing argument");
		goto out;
	}
	*out_text = NULL;
	*out_len = 0;
	if (max_bytes >= SIZE_MAX - 1) {
		rc = err_set(err, UNIAP_E_ARG, "%s: max_bytes too large", path);
		goto out;
	}
	limit = max_bytes + 1; /* one byte more than allowed tells an oversize file */
	f = fopen(path, "rb");
	if (!f) {
		int e = errno;

		if (strerror_r(e, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "error %d", e);
		rc = err_set(err, UNIAP_E_IO, "%s: cannot open: %s", path, why);
		goto out;
	}
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 65536;

			if (cap >= limit)
				break;
			if (ncap > limit)
				ncap = limit;
			nbuf = realloc(buf, ncap + 1);
			if (!nbuf) {
				rc = err_set(err, UNIAP_E_NOMEM, "%s: out of memory", path);
				goto out;
			}
			buf = nbuf;
			cap = ncap;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		int e = errno;

		if (strerror_r(e, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "error %d", e);
		rc = err_set(err, UNIAP_E_IO, "%s: cannot read: %s", path, why);
		goto out;
	}
	if (len > max_bytes) {
		rc = err_set(err, UNIAP_E_LIMIT, "%s: larger than %zu bytes", path, max_bytes);
		goto out;
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf) {
			rc = err_set(err, UNIAP_E_NOMEM, "%s: out of memory", path);
			goto out;
		}
	}
	buf[len] = '\0';
	*out_text = buf;
	*out_len = len;
	buf = NULL;
out:
	if (f)
		fclose(f);
	free(buf);
	return rc;
}

uniap_code jdec_parse(const char *text, size_t len, const char *path, cJSON **out, struct uniap_err *err)
{
	char *copy = NULL;
	const char *end = NULL;
	const char *nul;
	cJSON *root = NULL;
	uniap_code rc = UNIAP_OK;

	if (!out || (!text && len > 0)) {
		rc = err_set(err, UNIAP_E_ARG, "jdec_parse: missing argument");
		goto out;
	}
	*out = NULL;
	if (!path)
		path = "document";
	nul = len > 0 ? memchr(text, '\0', len) : NULL;
	if (nul) {
		rc = err_set(err, UNIAP_E_MALFORMED, "%s: malformed json at byte %zu (nul byte)", path,
		             (size_t)(nul - text));
		goto out;
	}
	if (len > SIZE_MAX - 1) {
		rc = err_set(err, UNIAP_E_LIMIT, "%s: document too large", path);
		goto out;
	}
	{
		/* "\u0000" would become a C string terminator inside a key or name and
		 * silently cut it short; refuse it (names are C strings here) */
		size_t i;

		for (i = 0; i + 1 < len; i++) {
			if (text[i] != '\\')
				continue;
			if (text[i + 1] == 'u' && i + 5 < len && memcmp(text + i + 2, "0000", 4) == 0) {
				rc = err_set(err, UNIAP_E_INVALID,
				             "%s: strings must not contain \\u0000 (at byte %zu)", path, i);
				goto out;
			}
			i++; /* skip the escaped character */
		}
	}
	copy = malloc(len + 1);
	if (!copy) {
		rc = err_set(err, UNIAP_E_NOMEM, "%s: out of memory", path);
		goto out;
	}
	if (len > 0)
		memcpy(copy, text, len);
	copy[len] = '\0';
	root = cJSON_ParseWithLengthOpts(copy, len + 1, &end, 1);
	if (!root) {
		size_t at = end && end >= copy ? (size_t)(end - copy) : 0;

		rc = err_set(err, UNIAP_E_MALFORMED, "%s: malformed json at byte %zu", path, at > len ? len : at);
		goto out;
	}
	rc = jdec_check_depth(root, path, err);
	if (rc != UNIAP_OK)
		goto out;
	*out = root;
	root = NULL;
out:
	cJSON_Delete(root);
	free(copy);
	return rc;
}

/* ---------------------------------------------------------------- cluster */

/* obj.bandwidth_gb_per_s (required) in bytes/s. */
static uniap_code jdec_bw(const cJSON *obj, const char *path, double *bw_bytes_per_s, struct uniap_err *err)
{
	double gb = 0.0;
	uniap_code rc = jdec_any_num(obj, "bandwidth_gb_per_s", path, 1, 0.0, &gb, err);

	*bw_bytes_per_s = gb * JDEC_GB;
	return rc;
}

static uniap_code jdec_cluster_device(const cJSON *root, const char *path, struct cluster_profile *out,
                                      struct uniap_err *err)
{
	static const char *const keys[] = {"name", "memory_bytes", "reserved_bytes", "peak_tflops",
	                                   "compute_efficiency", "gemm_half_dim", "memory_bandwidth_gb_per_s",
	                                   "kernel_overhead_us", "memory_fragmentation", "memory_margin", NULL};
	static const char *const peak_keys[] = {"fp32", "mixed", NULL}; /* enum model_precision */
	char p[JDEC_PATH_MAX], pp[JDEC_PATH_MAX];
	const cJSON *dev, *peak = NULL;
	int i;
	uniap_code rc = jdec_obj(root, "device", path, 1, keys, &dev, err);

	jdec_pkey(p, path, "device");
	if (rc == UNIAP_OK)
		rc = jdec_str(dev, "name", p, 0, 0, MODEL_MAX_NAME, &out->device_name, err);
	if (rc == UNIAP_OK)
		rc = jdec_any_num(dev, "memory_bytes", p, 1, 0.0, &out->memory_bytes, err);
	if (rc == UNIAP_OK)
		rc = jdec_any_num(dev, "reserved_bytes", p, 0, 0.0, &out->reserved_bytes, err);
	if (rc == UNIAP_OK)
		rc = jdec_obj(dev, "peak_tflops", p, 0, peak_keys, &peak, err);
	jdec_pkey(pp, p, "peak_tflops");
	for (i = 0; rc == UNIAP_OK && peak && i < 2; i++) {
		rc = jdec_any_num(peak, peak_keys[i], pp, 1, 0.0, &out->peak_flops_per_s[i], err);
		out->peak_flops_per_s[i] *= JDEC_TFLOPS;
	}
	if (rc == UNIAP_OK)
		rc = jdec_any_num(dev, "compute_efficiency", p, 0, peak ? JDEC_DEFAULT_EFFICIENCY : 0.0,
		                  &out->compute_efficiency, err);
	if (rc == UNIAP_OK)
		rc = jdec_any_num(dev, "gemm_half_dim", p, 0, 0.0, &out->gemm_half_dim, err);
	if (rc == UNIAP_OK) {
		rc = jdec_any_num(dev, "memory_bandwidth_gb_per_s", p, 0, 0.0, &out->memory_bandwidth_bytes_per_s, err);
		out->memory_bandwidth_bytes_per_s *= JDEC_GB;
	}
	if (rc == UNIAP_OK) {
		rc = jdec_any_num(dev, "kernel_overhead_us", p, 0, 0.0, &out->kernel_overhead_s, err);
		out->kernel_overhead_s *= 1e-6;
	}
	if (rc == UNIAP_OK)
		rc = jdec_any_num(dev, "memory_fragmentation", p, 0, MODEL_DEFAULT_FRAGMENTATION,
		                  &out->memory_fragmentation, err);
	if (rc == UNIAP_OK)
		rc = jdec_any_num(dev, "memory_margin", p, 0, MODEL_DEFAULT_MARGIN, &out->memory_margin, err);
	return rc;
}

static uniap_code jdec_cluster_levels(const cJSON *root, const char *path, struct cluster_profile *out,
                                      struct uniap_err *err)
{
	static const char *const keys[] = {"name", "devices", "bandwidth_gb_per_s", "latency_us", "shared_by", NULL};
	char ap[JDEC_PATH_MAX], p[JDEC_PATH_MAX];
	const cJSON *arr, *it;
	size_t n, i = 0;
	uniap_code rc = jdec_arr(root, "hierarchy", path, 1, 1, MODEL_MAX_LEVELS, &arr, &n, err);

	if (rc != UNIAP_OK)
		return rc;
	out->levels = calloc(n, sizeof(*out->levels));
	if (!out->levels)
		return err_set(err, UNIAP_E_NOMEM, "%s.hierarchy: out of memory", path);
	out->n_levels = n;
	jdec_pkey(ap, path, "hierarchy");
	cJSON_ArrayForEach(it, arr) {
		struct cluster_level *l = &out->levels[i];

		jdec_pidx(p, ap, i++);
		rc = jdec_keys(it, p, keys, NULL, err);
		if (rc == UNIAP_OK)
			rc = jdec_str(it, "name", p, 1, 1, MODEL_MAX_NAME, &l->name, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_int(it, "devices", p, 1, 0, &l->devices, err);
		if (rc == UNIAP_OK)
			rc = jdec_bw(it, p, &l->bw_bytes_per_s, err);
		if (rc == UNIAP_OK) {
			rc = jdec_any_num(it, "latency_us", p, 0, 0.0, &l->latency_s, err);
			l->latency_s *= 1e-6;
		}
		if (rc == UNIAP_OK)
			rc = jdec_any_int(it, "shared_by", p, 0, 1, &l->shared_by, err);
		if (rc != UNIAP_OK)
			return rc;
	}
	return UNIAP_OK;
}

/* One measured-collective table, cluster.collectives.<kind>. */
static uniap_code jdec_cluster_coll_table(const cJSON *coll, const char *cpath, const char *kind_name,
                                          struct cluster_bw **table, size_t *n_table, struct uniap_err *err)
{
	static const char *const keys[] = {"size", "placement", "bandwidth_gb_per_s", NULL};
	static const char *const placements[] = {"consecutive", "strided"};
	char ap[JDEC_PATH_MAX], p[JDEC_PATH_MAX], fp[JDEC_PATH_MAX];
	const cJSON *arr, *it, *v;
	size_t n, i = 0;
	int placement = 0;
	uniap_code rc = jdec_arr(coll, kind_name, cpath, 0, 0, MODEL_MAX_BW_ENTRIES, &arr, &n, err);

	if (rc != UNIAP_OK || n == 0)
		return rc;
	*table = calloc(n, sizeof(**table));
	if (!*table)
		return err_set(err, UNIAP_E_NOMEM, "%s.%s: out of memory", cpath, kind_name);
	*n_table = n;
	jdec_pkey(ap, cpath, kind_name);
	cJSON_ArrayForEach(it, arr) {
		struct cluster_bw *b = &(*table)[i];

		jdec_pidx(p, ap, i++);
		rc = jdec_keys(it, p, keys, NULL, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_int(it, "size", p, 1, 0, &b->size, err);
		if (rc == UNIAP_OK)
			rc = jdec_get(it, "placement", p, 1, fp, &v, err);
		if (rc == UNIAP_OK)
			rc = jdec_enum_value(v, fp, placements, 2, &placement, err);
		if (rc == UNIAP_OK)
			rc = jdec_bw(it, p, &b->bw_bytes_per_s, err);
		if (rc != UNIAP_OK)
			return rc;
		b->consecutive = placement == 0;
	}
	return UNIAP_OK;
}

static uniap_code jdec_cluster_coll(const cJSON *root, const char *path, struct cluster_profile *out,
                                    struct uniap_err *err)
{
	/* indexed by enum cluster_coll */
	static const char *const kinds[CLUSTER_COLL_COUNT + 1] = {"allreduce", "allgather", "reduce_scatter",
	                                                          NULL};
	char cp[JDEC_PATH_MAX];
	const cJSON *coll;
	int k;
	uniap_code rc = jdec_obj(root, "collectives", path, 0, kinds, &coll, err);

	if (rc != UNIAP_OK || !coll)
		return rc;
	jdec_pkey(cp, path, "collectives");
	for (k = 0; rc == UNIAP_OK && k < CLUSTER_COLL_COUNT; k++)
		rc = jdec_cluster_coll_table(coll, cp, kinds[k], &out->coll[k], &out->n_coll[k], err);
	return rc;
}

static uniap_code jdec_cluster_p2p(const cJSON *root, const char *path, struct cluster_profile *out,
                                   struct uniap_err *err)
{
	static const char *const keys[] = {"pp", "bandwidth_gb_per_s", NULL};
	char ap[JDEC_PATH_MAX], p[JDEC_PATH_MAX];
	const cJSON *arr, *it;
	size_t n, i = 0;
	uniap_code rc = jdec_arr(root, "p2p", path, 0, 0, MODEL_MAX_BW_ENTRIES, &arr, &n, err);

	if (rc != UNIAP_OK || n == 0)
		return rc;
	out->p2p = calloc(n, sizeof(*out->p2p));
	if (!out->p2p)
		return err_set(err, UNIAP_E_NOMEM, "%s.p2p: out of memory", path);
	out->n_p2p = n;
	jdec_pkey(ap, path, "p2p");
	cJSON_ArrayForEach(it, arr) {
		struct cluster_p2p *q = &out->p2p[i];

		jdec_pidx(p, ap, i++);
		rc = jdec_keys(it, p, keys, NULL, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_int(it, "pp", p, 1, 0, &q->pp, err);
		if (rc == UNIAP_OK)
			rc = jdec_bw(it, p, &q->bw_bytes_per_s, err);
		if (rc != UNIAP_OK)
			return rc;
	}
	return UNIAP_OK;
}

uniap_code jdec_cluster_json(const cJSON *root, const char *path, struct cluster_profile *out,
                             struct uniap_err *err)
{
	static const char *const keys[] = {"name",        "nodes", "devices_per_node", "device", "hierarchy",
	                                   "collectives", "p2p",   "overlap_coefficient", NULL};
	/* written by `uniap calibrate --out` (docs/calibration.md): a record, never read for planning */
	static const char *const ignored[] = {"calibration", NULL};
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "jdec_cluster_json: out is NULL");
	memset(out, 0, sizeof(*out));
	if (!path)
		path = "cluster";
	if (!root)
		return err_set(err, UNIAP_E_ARG, "%s: missing document", path);
	rc = jdec_check_depth(root, path, err);
	if (rc == UNIAP_OK)
		rc = jdec_keys(root, path, keys, ignored, err);
	if (rc == UNIAP_OK && jdec_member(root, "calibration") && !cJSON_IsObject(jdec_member(root, "calibration")))
		rc = err_set(err, UNIAP_E_INVALID, "%s.calibration: must be an object, got %s", path,
		             jdec_type_name(jdec_member(root, "calibration")));
	if (rc == UNIAP_OK)
		rc = jdec_str(root, "name", path, 0, 0, MODEL_MAX_NAME, &out->name, err);
	if (rc == UNIAP_OK)
		rc = jdec_any_int(root, "nodes", path, 1, 0, &out->nodes, err);
	if (rc == UNIAP_OK)
		rc = jdec_any_int(root, "devices_per_node", path, 1, 0, &out->devices_per_node, err);
	if (rc == UNIAP_OK)
		rc = jdec_cluster_device(root, path, out, err);
	if (rc == UNIAP_OK)
		rc = jdec_cluster_levels(root, path, out, err);
	if (rc == UNIAP_OK)
		rc = jdec_cluster_coll(root, path, out, err);
	if (rc == UNIAP_OK)
		rc = jdec_cluster_p2p(root, path, out, err);
	if (rc == UNIAP_OK)
		rc = jdec_any_num(root, "overlap_coefficient", path, 0, 1.0, &out->overlap_coefficient, err);
	if (rc == UNIAP_OK) {
		rc = cluster_validate(out, err);
		if (rc != UNIAP_OK)
			jdec_reroot(err, "cluster", path);
	}
	if (rc != UNIAP_OK)
		cluster_release(out);
	return rc;
}

/* ------------------------------------------------------------------ model */

/*
 * A TP-size key: decimal 1..65536, no sign, no leading zeros.  Returns 1 and
 * the size in *tp when key is one.
 */
static int jdec_tp_key(const char *key, int *tp)
{
	size_t len = strlen(key), i;
	long v = 0;

	if (len == 0 || len > 5 || key[0] == '0')
		return 0;
	for (i = 0; i < len; i++) {
		if (key[i] < '0' || key[i] > '9')
			return 0;
		v = v * 10 + (key[i] - '0');
	}
	if (v < 1 || v > 65536)
		return 0;
	*tp = (int)v;
	return 1;
}

/*
 * obj.key (required): a number (the tp = 1 value) or an object of TP sizes
 * to numbers.  *out (owned by the profile, set before filling so a release
 * frees it on failure) and *n receive the table; value ranges and the
 * presence of "1" are checked by model_validate().
 */
static uniap_code jdec_tp_table(const cJSON *obj, const char *key, const char *path,
                                struct model_tp_value **out, size_t *n, struct uniap_err *err)
{
	char p[JDEC_PATH_MAX], ep[JDEC_PATH_MAX];
	const cJSON *v, *c;
	size_t count = 0;
	uniap_code rc = jdec_get(obj, key, path, 1, p, &v, err);

	if (rc != UNIAP_OK)
		return rc;
	if (!cJSON_IsNumber(v) && !cJSON_IsObject(v))
		return err_set(err, UNIAP_E_INVALID, "%s: must be a number or an object of tp sizes, got %s", p,
		               jdec_type_name(v));
	for (c = cJSON_IsObject(v) ? v->child : NULL; c; c = c->next)
		count++;
	if (count > MODEL_MAX_TP_ENTRIES)
		return err_set(err, UNIAP_E_LIMIT, "%s: must have at most %d tp entries, got %zu", p,
		               MODEL_MAX_TP_ENTRIES, count);
	*out = calloc(count ? count : 1, sizeof(**out));
	if (!*out)
		return err_set(err, UNIAP_E_NOMEM, "%s: out of memory", p);
	if (cJSON_IsNumber(v)) {
		(*out)[0].tp = 1;
		*n = 1;
		return jdec_num_value(v, p, -DBL_MAX, DBL_MAX, &(*out)[0].value, err);
	}
	for (c = v->child; c; c = c->next) {
		struct model_tp_value *e = &(*out)[(*n)++];

		jdec_pfix(ep, snprintf(ep, sizeof(ep), "%s[\"%.16s\"]", p, c->string ? c->string : ""));
		if (!c->string || !jdec_tp_key(c->string, &e->tp))
			return err_set(err, UNIAP_E_INVALID,
			               "%s: key must be a tp size from 1 to 65536 in decimal, without sign or leading "
			               "zeros",
			               ep);
		rc = jdec_num_value(c, ep, -DBL_MAX, DBL_MAX, &e->value, err);
		if (rc != UNIAP_OK)
			return rc;
	}
	return UNIAP_OK;
}

static uniap_code jdec_model_types(const cJSON *root, const char *path, struct model_profile *out,
                                   struct uniap_err *err)
{
	static const char *const keys[] = {"name",
	                                   "forward_s_per_sample",
	                                   "parameters",
	                                   "activation_bytes_per_sample",
	                                   "output_bytes_per_sample",
	                                   "checkpoint_bytes_per_sample",
	                                   "tp_allreduces_per_pass",
	                                   "forward_flops_per_sample",
	                                   "forward_fixed_s",
	                                   "kernels_per_pass",
	                                   "gemm_dim",
	                                   "tokens_per_sample",
	                                   "memory_bound_bytes_per_sample",
	                                   NULL};
	char ap[JDEC_PATH_MAX], p[JDEC_PATH_MAX];
	const cJSON *arr, *it;
	size_t n, i = 0;
	uniap_code rc = jdec_arr(root, "layer_types", path, 1, 1, MODEL_MAX_TYPES, &arr, &n, err);

	if (rc != UNIAP_OK)
		return rc;
	out->types = calloc(n, sizeof(*out->types));
	if (!out->types)
		return err_set(err, UNIAP_E_NOMEM, "%s.layer_types: out of memory", path);
	out->n_types = n;
	jdec_pkey(ap, path, "layer_types");
	cJSON_ArrayForEach(it, arr) {
		struct model_layer_type *t = &out->types[i];

		jdec_pidx(p, ap, i++);
		rc = jdec_keys(it, p, keys, NULL, err);
		if (rc == UNIAP_OK)
			rc = jdec_str(it, "name", p, 1, 1, MODEL_MAX_NAME, &t->name, err);
		/* exactly one of the two forward keys; model_validate() checks the values */
		if (rc == UNIAP_OK && jdec_member(it, "forward_flops_per_sample") &&
		    jdec_member(it, "forward_s_per_sample"))
			rc = err_set(err, UNIAP_E_INVALID,
			             "%s: must give exactly one of forward_s_per_sample and forward_flops_per_sample", p);
		if (rc == UNIAP_OK && jdec_member(it, "forward_flops_per_sample"))
			rc = jdec_any_num(it, "forward_flops_per_sample", p, 1, 0.0, &t->forward_flops_per_sample, err);
		else if (rc == UNIAP_OK)
			rc = jdec_tp_table(it, "forward_s_per_sample", p, &t->forward_s, &t->n_forward_s, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_num(it, "parameters", p, 1, 0.0, &t->parameters, err);
		if (rc == UNIAP_OK)
			rc = jdec_tp_table(it, "activation_bytes_per_sample", p, &t->activation_bytes,
			                   &t->n_activation_bytes, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_num(it, "output_bytes_per_sample", p, 1, 0.0, &t->output_bytes_per_sample, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_num(it, "checkpoint_bytes_per_sample", p, 0, t->output_bytes_per_sample,
			                  &t->checkpoint_bytes_per_sample, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_int(it, "tp_allreduces_per_pass", p, 0, 2, &t->tp_allreduces_per_pass, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_num(it, "forward_fixed_s", p, 0, 0.0, &t->forward_fixed_s, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_int(it, "kernels_per_pass", p, 0, 0, &t->kernels_per_pass, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_num(it, "gemm_dim", p, 0, 0.0, &t->gemm_dim, err);
		if (rc == UNIAP_OK)
			rc = jdec_any_num(it, "tokens_per_sample", p, 0, 0.0, &t->tokens_per_sample, err);
		if (rc == UNIAP_OK && jdec_member(it, "memory_bound_bytes_per_sample"))
			rc = jdec_tp_table(it, "memory_bound_bytes_per_sample", p, &t->memory_bound_bytes,
			                   &t->n_memory_bound_bytes, err);
		if (rc != UNIAP_OK)
			return rc;
	}
	return UNIAP_OK;
}

/* One entry of model.graph.layers as listed, before "repeat" expansion. */
struct jdec_listed_layer {
	const char *name; /* borrowed from the cJSON tree */
	size_t type;
	size_t repeat;
	int has_repeat;
};

/* Reads the listed layers into listed[] (caller-owned, n entries) and their expanded count. */
static uniap_code jdec_model_listed(const cJSON *arr, const char *ap, const struct model_profile *m,
                                    struct jdec_listed_layer *listed, size_t *total, struct uniap_err *err)
{
	static const char *const keys[] = {"name", "type", "repeat", NULL};
	char p[JDEC_PATH_MAX], fp[JDEC_PATH_MAX];
	const cJSON *it, *v;
	const char *type_name = NULL;
	size_t i = 0, k;
	long long repeat = 1;
	uniap_code rc = UNIAP_OK;

	*total = 0;
	cJSON_ArrayForEach(it, arr) {
		struct jdec_listed_layer *l = &listed[i];

		jdec_pidx(p, ap, i++);
		rc = jdec_keys(it, p, keys, NULL, err);
		if (rc == UNIAP_OK)
			rc = jdec_get(it, "name", p, 1, fp, &v, err);
		if (rc == UNIAP_OK)
			rc = jdec_str_value(v, fp, 1, MODEL_MAX_NAME, &l->name, err);
		if (rc == UNIAP_OK)
			rc = jdec_get(it, "type", p, 1, fp, &v, err);
		if (rc == UNIAP_OK)
			rc = jdec_str_value(v, fp, 1, MODEL_MAX_NAME, &type_name, err);
		if (rc == UNIAP_OK)
			rc = jdec_int(it, "repeat", p, 0, 1, 1, MODEL_MAX_LAYERS, &repeat, err);
		if (rc != UNIAP_OK)
			return rc;
		l->has_repeat = jdec_member(it, "repeat") != NULL;
		l->repeat = (size_t)repeat;
		for (k = 0; k < m->n_types && strcmp(m->types[k].name, type_name) != 0; k++)
			;
		if (k == m->n_types)
			return err_set(err, UNIAP_E_INVALID, "%s: unknown layer type \"%s\"", fp, type_name);
		l->type = k;
		*total += l->repeat;
		if (*total > MODEL_MAX_LAYERS)
			return err_set(err, UNIAP_E_LIMIT, "%s: more than %d layers after repeat expansion", ap,
			               MODEL_MAX_LAYERS);
	}
	return UNIAP_OK;
}

/* Expands listed[] into m->layers; src[u] receives the listed index of layer u. */
static uniap_code jdec_model_expand(const struct jdec_listed_layer *listed, size_t n_listed, const char *ap,
                                    struct model_profile *m, size_t *src, struct uniap_err *err)
{
	char name[MODEL_MAX_NAME + 32];
	size_t i, r, u = 0;

	for (i = 0; i < n_listed; i++) {
		for (r = 0; r < listed[i].repeat; r++, u++) {
			if (listed[i].has_repeat)
				snprintf(name, sizeof(name), "%s.%zu", listed[i].name, r);
			else
				snprintf(name, sizeof(name), "%s", listed[i].name);
			if (strlen(name) > MODEL_MAX_NAME)
				return err_set(err, UNIAP_E_INVALID,
				               "%s[%zu].name: \"%s\" must be at most %d bytes after repeat expansion", ap,
				               i, name, MODEL_MAX_NAME);
			m->layers[u].name = strdup(name);
			if (!m->layers[u].name)
				return err_set(err, UNIAP_E_NOMEM, "%s: out of memory", ap);
			m->layers[u].type = listed[i].type;
			src[u] = i;
		}
	}
	return UNIAP_OK;
}

/* An edge endpoint: a layer name (looked up in refs, sorted by name) or a 0-based index. */
static uniap_code jdec_endpoint(const cJSON *v, const char *path, const struct jdec_name_ref *refs, size_t n,
                                size_t *out, struct uniap_err *err)
{
	const struct jdec_name_ref *hit;
	long long idx = 0;
	uniap_code rc;

	if (cJSON_IsString(v) && v->valuestring) {
		hit = bsearch(v->valuestring, refs, n, sizeof(*refs), jdec_name_key_cmp);
		if (!hit)
			return err_set(err, UNIAP_E_INVALID, "%s: no layer named \"%.*s\"", path, MODEL_MAX_NAME + 8,
			               v->valuestring);
		*out = hit->index;
		return UNIAP_OK;
	}
	if (!cJSON_IsNumber(v))
		return err_set(err, UNIAP_E_INVALID, "%s: must be a layer name or index, got %s", path,
		               jdec_type_name(v));
	rc = jdec_int_value(v, path, 0, (long long)n - 1, &idx, err);
	*out = (size_t)idx;
	return rc;
}

static uniap_code jdec_model_edges(const cJSON *graph, const char *gp, const struct jdec_name_ref *refs,
                                   struct model_profile *m, struct uniap_err *err)
{
	char ap[JDEC_PATH_MAX], p[JDEC_PATH_MAX], ep[JDEC_PATH_MAX];
	const cJSON *arr, *it;
	size_t n, i = 0, u;
	uniap_code rc = jdec_arr(graph, "edges", gp, 0, 0, MODEL_MAX_EDGES, &arr, &n, err);

	if (rc != UNIAP_OK)
		return rc;
	if (!arr)
		n = m->n_layers - 1; /* no "edges": a chain in listed order */
	if (n == 0)
		return UNIAP_OK;
	m->edges = calloc(n, sizeof(*m->edges));
	if (!m->edges)
		return err_set(err, UNIAP_E_NOMEM, "%s.edges: out of memory", gp);
	m->n_edges = n;
	if (!arr) {
		for (u = 0; u < n; u++) {
			m->edges[u].from = u;
			m->edges[u].to = u + 1;
		}
		return UNIAP_OK;
	}
	jdec_pkey(ap, gp, "edges");
	cJSON_ArrayForEach(it, arr) {
		struct model_edge *e = &m->edges[i];

		jdec_pidx(p, ap, i++);
		if (!cJSON_IsArray(it))
			return err_set(err, UNIAP_E_INVALID, "%s: must be a [from, to] array, got %s", p,
			               jdec_type_name(it));
		if (cJSON_GetArraySize(it) != 2)
			return err_set(err, UNIAP_E_INVALID, "%s: must be a [from, to] array of 2 entries, got %d", p,
			               cJSON_GetArraySize(it));
		rc = jdec_endpoint(it->child, jdec_pidx(ep, p, 0), refs, m->n_layers, &e->from, err);
		if (rc == UNIAP_OK)
			rc = jdec_endpoint(it->child->next, jdec_pidx(ep, p, 1), refs, m->n_layers, &e->to, err);
		if (rc != UNIAP_OK)
			return rc;
	}
	return UNIAP_OK;
}

static uniap_code jdec_model_graph(const cJSON *root, const char *path, struct model_profile *out,
                                   struct uniap_err *err)
{
	static const char *const keys[] = {"layers", "edges", NULL};
	char gp[JDEC_PATH_MAX], ap[JDEC_PATH_MAX];
	const cJSON *graph, *arr;
	struct jdec_listed_layer *listed = NULL;
	struct jdec_name_ref *refs = NULL;
	size_t *src = NULL;
	size_t n_listed, total = 0, u, dup = 0;
	uniap_code rc = jdec_obj(root, "graph", path, 1, keys, &graph, err);

	if (rc != UNIAP_OK)
		goto out;
	jdec_pkey(gp, path, "graph");
	jdec_pkey(ap, gp, "layers");
	rc = jdec_arr(graph, "layers", gp, 1, 1, MODEL_MAX_LAYERS, &arr, &n_listed, err);
	if (rc != UNIAP_OK)
		goto out;
	listed = calloc(n_listed, sizeof(*listed));
	if (!listed) {
		rc = err_set(err, UNIAP_E_NOMEM, "%s: out of memory", ap);
		goto out;
	}
	rc = jdec_model_listed(arr, ap, out, listed, &total, err);
	if (rc != UNIAP_OK)
		goto out;
	out->layers = calloc(total, sizeof(*out->layers));
	src = calloc(total, sizeof(*src));
	refs = calloc(total, sizeof(*refs));
	if (!out->layers || !src || !refs) {
		rc = err_set(err, UNIAP_E_NOMEM, "%s: out of memory", ap);
		goto out;
	}
	out->n_layers = total;
	rc = jdec_model_expand(listed, n_listed, ap, out, src, err);
	if (rc != UNIAP_OK)
		goto out;
	for (u = 0; u < total; u++) {
		refs[u].name = out->layers[u].name;
		refs[u].index = u;
	}
	if (jdec_names_sort(refs, total, &dup)) {
		rc = err_set(err, UNIAP_E_INVALID, "%s[%zu].name: duplicate layer name \"%s\"", ap, src[dup],
		             out->layers[dup].name);
		goto out;
	}
	rc = jdec_model_edges(graph, gp, refs, out, err);
out:
	free(listed);
	free(src);
	free(refs);
	return rc;
}

/* obj.key as a boolean; dflt when absent. */
static uniap_code jdec_bool(const cJSON *obj, const char *key, const char *path, int dflt, int *out,
                            struct uniap_err *err)
{
	char p[JDEC_PATH_MAX];
	const cJSON *v;
	uniap_code rc = jdec_get(obj, key, path, 0, p, &v, err);

	if (rc != UNIAP_OK)
		return rc;
	if (!v) {
		*out = dflt;
		return UNIAP_OK;
	}
	if (!cJSON_IsBool(v))
		return err_set(err, UNIAP_E_INVALID, "%s: must be true or false, got %s", p, jdec_type_name(v));
	*out = cJSON_IsTrue(v) ? 1 : 0;
	return UNIAP_OK;
}

/* obj.key as one of names[0..n-1] (its index in *out); dflt when absent and not required. */
static uniap_code jdec_enum(const cJSON *obj, const char *key, const char *path, int required,
                            const char *const *names, size_t n, int dflt, int *out, struct uniap_err *err)
{
	char p[JDEC_PATH_MAX];
	const cJSON *v;
	uniap_code rc = jdec_get(obj, key, path, required, p, &v, err);

	*out = dflt;
	if (rc != UNIAP_OK || !v)
		return rc;
	return jdec_enum_value(v, p, names, n, out, err);
}

/* Largest size an architecture field may give (hidden, heads, seq_len, ...). */
#define JDEC_ARCH_MAX_DIM 10000000LL

/*
 * model.architecture: the hyper-parameters of a Transformer, from which
 * catalog_transformer() generates the layer types and graph (the same code
 * path as the catalog's BERT, GPT and Llama entries).  Fields, units and
 * defaults: schema/model.schema.json.
 */
static uniap_code jdec_model_arch(const cJSON *root, const char *path, struct model_profile *out,
                                  struct uniap_err *err)
{
	static const char *const keys[] = {"family", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "mlp",
	                                   "seq_len", "vocab", "flash_attention", "dropout", "biases", "norm",
	                                   "positions", "tied_embeddings", NULL};
	static const char *const families[] = {"decoder", "encoder"};  /* enum model_arch_family */
	static const char *const mlps[] = {"gelu", "swiglu"};          /* enum model_arch_mlp */
	static const char *const norms[] = {"layernorm", "rmsnorm"};   /* enum model_arch_norm */
	static const char *const positions[] = {"learned", "rotary"};  /* enum model_arch_positions */
	static const char *const dims[] = {"hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab"};
	char ap[JDEC_PATH_MAX];
	const cJSON *obj;
	struct model_arch a;
	double *dim_out[6];
	long long v = 0;
	int e = 0;
	size_t i;
	uniap_code rc = jdec_obj(root, "architecture", path, 1, keys, &obj, err);

	memset(&a, 0, sizeof(a));
	dim_out[0] = &a.hidden;
	dim_out[1] = &a.heads;
	dim_out[2] = &a.kv_heads;
	dim_out[3] = &a.ffn_hidden;
	dim_out[4] = &a.seq_len;
	dim_out[5] = &a.vocab;
	a.precision = out->precision;
	a.optimizer = out->optimizer;
	jdec_pkey(ap, path, "architecture");
	if (rc == UNIAP_OK)
		rc = jdec_enum(obj, "family", ap, 1, families, 2, 0, &e, err);
	a.family = (enum model_arch_family)e;
	if (rc == UNIAP_OK)
		rc = jdec_int(obj, "layers", ap, 1, 0, 1, MODEL_MAX_LAYERS - 2, &v, err);
	a.layers = (int)v;
	for (i = 0; rc == UNIAP_OK && i < sizeof(dims) / sizeof(dims[0]); i++) {
		/* kv_heads and ffn_hidden are optional: 0 stands for their default */
		int optional = dim_out[i] == &a.kv_heads || dim_out[i] == &a.ffn_hidden;

		rc = jdec_int(obj, dims[i], ap, !optional, 0, 1, JDEC_ARCH_MAX_DIM, &v, err);
		*dim_out[i] = (double)v;
	}
	if (rc == UNIAP_OK)
		rc = jdec_enum(obj, "mlp", ap, 0, mlps, 2, MODEL_MLP_GELU, &e, err);
	a.mlp = (enum model_arch_mlp)e;
	if (rc == UNIAP_OK)
		rc = jdec_enum(obj, "norm", ap, 0, norms, 2, MODEL_NORM_LAYERNORM, &e, err);
	a.norm = (enum model_arch_norm)e;
	if (rc == UNIAP_OK)
		rc = jdec_enum(obj, "positions", ap, 0, positions, 2, MODEL_POS_LEARNED, &e, err);
	a.positions = (enum model_arch_positions)e;
	if (rc == UNIAP_OK)
		rc = jdec_bool(obj, "flash_attention", ap, 1, &a.flash_attention, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(obj, "dropout", ap, 0, &a.dropout, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(obj, "biases", ap, 1, &a.biases, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(obj, "tied_embeddings", ap, 1, &a.tied_embeddings, err);
	if (rc == UNIAP_OK) {
		/* the generator owns the cross-field rules; its messages start
		 * "model."; it rebuilds *out, so the decoded name moves to it */
		char *name = out->name;

		out->name = NULL;
		rc = catalog_transformer(name, &a, out, err);
		free(name);
		if (rc != UNIAP_OK)
			jdec_reroot(err, "model", path);
	}
	return rc;
}

uniap_code jdec_model_json(const cJSON *root, const char *path, struct model_profile *out,
                           struct uniap_err *err)
{
	static const char *const keys[] = {"name", "precision", "optimizer", "layer_types", "graph", "architecture",
	                                   NULL};
	static const char *const precisions[] = {"fp32", "mixed"};           /* enum model_precision */
	static const char *const optimizers[] = {"adam", "sgd_momentum", "sgd"}; /* enum model_optimizer */
	char p[JDEC_PATH_MAX];
	const cJSON *v = NULL;
	int e = 0;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "jdec_model_json: out is NULL");
	memset(out, 0, sizeof(*out));
	if (!path)
		path = "model";
	if (!root)
		return err_set(err, UNIAP_E_ARG, "%s: missing document", path);
	rc = jdec_check_depth(root, path, err);
	if (rc == UNIAP_OK)
		rc = jdec_keys(root, path, keys, NULL, err);
	if (rc == UNIAP_OK)
		rc = jdec_str(root, "name", path, 0, 0, MODEL_MAX_NAME, &out->name, err);
	if (rc == UNIAP_OK)
		rc = jdec_get(root, "precision", path, 1, p, &v, err);
	if (rc == UNIAP_OK)
		rc = jdec_enum_value(v, p, precisions, 2, &e, err);
	out->precision = (enum model_precision)e;
	if (rc == UNIAP_OK)
		rc = jdec_get(root, "optimizer", path, 0, p, &v, err);
	e = MODEL_ADAM;
	if (rc == UNIAP_OK && v)
		rc = jdec_enum_value(v, p, optimizers, 3, &e, err);
	out->optimizer = (enum model_optimizer)e;
	if (rc == UNIAP_OK && jdec_member(root, "architecture")) {
		/* generated instead of given: never both */
		if (jdec_member(root, "layer_types") || jdec_member(root, "graph"))
			rc = err_set(err, UNIAP_E_INVALID,
			             "%s.architecture: give either architecture or layer_types and graph, not both", path);
		else
			rc = jdec_model_arch(root, path, out, err);
		goto out;
	}
	if (rc == UNIAP_OK)
		rc = jdec_model_types(root, path, out, err);
	if (rc == UNIAP_OK)
		rc = jdec_model_graph(root, path, out, err);
	if (rc == UNIAP_OK) {
		rc = model_validate(out, err);
		if (rc != UNIAP_OK)
			jdec_reroot(err, "model", path);
	}
out:
	if (rc != UNIAP_OK)
		model_release(out);
	return rc;
}

/* ------------------------------------------------------------------- plan */

/*
 * plan.layers[u].strategy: reads the name and recompute flag into the plan
 * and the device count dp * tp * fsdp into *width.  The placement must list
 * exactly the dimensions of degree > 1, each once (strategy.h).
 */
static uniap_code jdec_plan_strategy(const cJSON *layer, const char *lp, struct plan_doc *out, size_t u,
                                     long long *width, struct uniap_err *err)
{
	static const char *const keys[] = {"name", "dp", "tp", "fsdp", "recompute", "placement", NULL};
	static const char *const dims[] = {"dp", "tp", "fsdp"}; /* the order of degree[] below */
	char sp[JDEC_PATH_MAX], p[JDEC_PATH_MAX], ep[JDEC_PATH_MAX];
	const cJSON *s, *v, *arr, *it;
	long long degree[3] = {1, 1, 1};
	int listed[3] = {0, 0, 0};
	size_t n, i = 0;
	int d, dim = 0;
	uniap_code rc = jdec_obj(layer, "strategy", lp, 1, keys, &s, err);

	jdec_pkey(sp, lp, "strategy");
	if (rc == UNIAP_OK)
		rc = jdec_str(s, "name", sp, 1, 1, STRATEGY_NAME_MAX - 1, &out->strategy_names[u], err);
	for (d = 0; rc == UNIAP_OK && d < 3; d++)
		rc = jdec_int(s, dims[d], sp, 1, 1, 1, MODEL_MAX_DEVICES, &degree[d], err);
	if (rc == UNIAP_OK)
		rc = jdec_get(s, "recompute", sp, 1, p, &v, err);
	if (rc == UNIAP_OK && !cJSON_IsBool(v))
		rc = err_set(err, UNIAP_E_INVALID, "%s: must be a boolean, got %s", p, jdec_type_name(v));
	if (rc == UNIAP_OK)
		out->recompute[u] = cJSON_IsTrue(v);
	if (rc == UNIAP_OK)
		rc = jdec_arr(s, "placement", sp, 1, 0, 3, &arr, &n, err);
	if (rc != UNIAP_OK)
		return rc;
	jdec_pkey(p, sp, "placement");
	cJSON_ArrayForEach(it, arr) {
		rc = jdec_enum_value(it, jdec_pidx(ep, p, i++), dims, 3, &dim, err);
		if (rc != UNIAP_OK)
			return rc;
		if (listed[dim])
			return err_set(err, UNIAP_E_INVALID, "%s: duplicate dimension \"%s\"", ep, dims[dim]);
		listed[dim] = 1;
	}
	for (d = 0; d < 3; d++)
		if (listed[d] != (degree[d] > 1))
			return err_set(err, UNIAP_E_INVALID,
			               "%s: must list exactly the dimensions of degree > 1 (dp %lld, tp %lld, fsdp %lld)",
			               p, degree[0], degree[1], degree[2]);
	*width = degree[0] * degree[1] * degree[2];
	return UNIAP_OK;
}

static uniap_code jdec_plan_layers(const cJSON *root, const char *path, struct plan_doc *out,
                                   long long **width, struct uniap_err *err)
{
	static const char *const keys[] = {"name", "stage", "strategy", NULL};
	char ap[JDEC_PATH_MAX], p[JDEC_PATH_MAX];
	const cJSON *arr, *it;
	struct jdec_name_ref *refs = NULL;
	size_t n, u = 0, dup = 0;
	long long stage = 0;
	uniap_code rc = jdec_arr(root, "layers", path, 1, 1, MODEL_MAX_LAYERS, &arr, &n, err);

	if (rc != UNIAP_OK)
		goto out;
	out->layer_names = calloc(n, sizeof(*out->layer_names));
	out->strategy_names = calloc(n, sizeof(*out->strategy_names));
	out->stage = calloc(n, sizeof(*out->stage));
	out->recompute = calloc(n, sizeof(*out->recompute));
	*width = calloc(n, sizeof(**width));
	refs = calloc(n, sizeof(*refs));
	if (!out->layer_names || !out->strategy_names || !out->stage || !out->recompute || !*width || !refs) {
		rc = err_set(err, UNIAP_E_NOMEM, "%s.layers: out of memory", path);
		goto out;
	}
	out->n_layers = n;
	jdec_pkey(ap, path, "layers");
	cJSON_ArrayForEach(it, arr) {
		jdec_pidx(p, ap, u);
		rc = jdec_keys(it, p, keys, NULL, err);
		if (rc == UNIAP_OK)
			rc = jdec_str(it, "name", p, 1, 1, MODEL_MAX_NAME, &out->layer_names[u], err);
		if (rc == UNIAP_OK)
			rc = jdec_int(it, "stage", p, 1, 0, 0, out->pp - 1, &stage, err);
		if (rc == UNIAP_OK)
			rc = jdec_plan_strategy(it, p, out, u, &(*width)[u], err);
		if (rc != UNIAP_OK)
			goto out;
		out->stage[u] = (int)stage;
		refs[u].name = out->layer_names[u];
		refs[u].index = u;
		u++;
	}
	if (jdec_names_sort(refs, n, &dup))
		rc = err_set(err, UNIAP_E_INVALID, "%s[%zu].name: duplicate layer name \"%s\"", ap, dup,
		             out->layer_names[dup]);
out:
	free(refs);
	return rc;
}

/*
 * plan.stages[s]: its devices are unused by earlier stages (used[] marks
 * them), its layers are listed nowhere else (where[u] = stage + 1) and say
 * "stage": s, and each layer's strategy spans the stage's devices.
 */
static uniap_code jdec_plan_stage(const cJSON *st, const char *sp, int s, const char *path,
                                  const struct plan_doc *out, const long long *width, unsigned char *used,
                                  int *where, struct uniap_err *err)
{
	static const char *const keys[] = {"devices", "layers", "time_s", "memory_bytes", NULL};
	char p[JDEC_PATH_MAX], ep[JDEC_PATH_MAX];
	const cJSON *arr, *it;
	size_t n_dev, n, i = 0;
	long long v = 0;
	double x = 0.0;
	uniap_code rc = jdec_keys(st, sp, keys, NULL, err);

	if (rc == UNIAP_OK)
		rc = jdec_num(st, "time_s", sp, 1, 0.0, 0.0, DBL_MAX, &x, err);
	if (rc == UNIAP_OK)
		rc = jdec_num(st, "memory_bytes", sp, 1, 0.0, 0.0, DBL_MAX, &x, err);
	if (rc == UNIAP_OK)
		rc = jdec_arr(st, "devices", sp, 1, 1, MODEL_MAX_DEVICES, &arr, &n_dev, err);
	if (rc != UNIAP_OK)
		return rc;
	jdec_pkey(p, sp, "devices");
	cJSON_ArrayForEach(it, arr) {
		rc = jdec_int_value(it, jdec_pidx(ep, p, i++), 0, MODEL_MAX_DEVICES - 1, &v, err);
		if (rc != UNIAP_OK)
			return rc;
		if (used[v])
			return err_set(err, UNIAP_E_INVALID, "%s: device %lld is listed twice", ep, v);
		used[v] = 1;
	}
	rc = jdec_arr(st, "layers", sp, 1, 0, MODEL_MAX_LAYERS, &arr, &n, err);
	if (rc != UNIAP_OK)
		return rc;
	jdec_pkey(p, sp, "layers");
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		rc = jdec_int_value(it, jdec_pidx(ep, p, i++), 0, (long long)out->n_layers - 1, &v, err);
		if (rc != UNIAP_OK)
			return rc;
		if (where[v])
			return err_set(err, UNIAP_E_INVALID, "%s: layer %lld is already listed in stage %d", ep, v,
			               where[v] - 1);
		where[v] = s + 1;
		if (out->stage[v] != s)
			return err_set(err, UNIAP_E_INVALID, "%s: layer %lld (\"%s\") has stage %d in %s.layers[%lld]",
			               ep, v, out->layer_names[v], out->stage[v], path, v);
		if (width[v] != (long long)n_dev)
			return err_set(err, UNIAP_E_INVALID,
			               "%s: layer %lld's strategy \"%s\" spans %lld devices, the stage has %zu", ep, v,
			               out->strategy_names[v], width[v], n_dev);
	}
	return UNIAP_OK;
}

static uniap_code jdec_plan_stages(const cJSON *root, const char *path, const struct plan_doc *out,
                                   const long long *width, struct uniap_err *err)
{
	char ap[JDEC_PATH_MAX], sp[JDEC_PATH_MAX];
	const cJSON *arr, *it;
	unsigned char *used = NULL;
	int *where = NULL;
	size_t n, u;
	int s = 0;
	uniap_code rc = jdec_arr(root, "stages", path, 1, 0, MODEL_MAX_DEVICES, &arr, &n, err);

	if (rc != UNIAP_OK)
		goto out;
	if (n != (size_t)out->pp) {
		rc = err_set(err, UNIAP_E_INVALID, "%s.stages: must have pp = %d entries, got %zu", path, out->pp, n);
		goto out;
	}
	used = calloc(MODEL_MAX_DEVICES, 1);
	where = calloc(out->n_layers, sizeof(*where));
	if (!used || !where) {
		rc = err_set(err, UNIAP_E_NOMEM, "%s.stages: out of memory", path);
		goto out;
	}
	jdec_pkey(ap, path, "stages");
	cJSON_ArrayForEach(it, arr) {
		rc = jdec_plan_stage(it, jdec_pidx(sp, ap, (size_t)s), s, path, out, width, used, where, err);
		if (rc != UNIAP_OK)
			goto out;
		s++;
	}
	for (u = 0; u < out->n_layers; u++) {
		if (!where[u]) {
			rc = err_set(err, UNIAP_E_INVALID, "%s.layers[%zu]: layer \"%s\" is in no stage's layers", path,
			             u, out->layer_names[u]);
			goto out;
		}
	}
out:
	free(used);
	free(where);
	return rc;
}

uniap_code jdec_plan_json(const cJSON *root, const char *path, struct plan_doc *out, struct uniap_err *err)
{
	static const char *const keys[] = {"pp",     "microbatches", "microbatch_size", "schedule",
	                                   "tpi_s",  "throughput_samples_per_s",        "stages",
	                                   "layers", NULL};
	/* written by the optimizer next to the plan; accepted and ignored */
	static const char *const ignored[] = {"optimal", "gap",   "candidates", "solve_s", "space", "batch",
	                                      "cluster", "model", "devices",    "bound",   "bound_s", "status", NULL};
	static const char *const schedules[] = {"gpipe", "1f1b"};
	char p[JDEC_PATH_MAX];
	const cJSON *v = NULL;
	long long *width = NULL;
	long long x = 0;
	int sched = 0;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "jdec_plan_json: out is NULL");
	memset(out, 0, sizeof(*out));
	if (!path)
		path = "plan";
	if (!root)
		return err_set(err, UNIAP_E_ARG, "%s: missing document", path);
	rc = jdec_check_depth(root, path, err);
	if (rc == UNIAP_OK)
		rc = jdec_keys(root, path, keys, ignored, err);
	if (rc == UNIAP_OK)
		rc = jdec_int(root, "pp", path, 1, 1, 1, MODEL_MAX_DEVICES, &x, err);
	out->pp = (int)x;
	if (rc == UNIAP_OK)
		rc = jdec_int(root, "microbatches", path, 1, 1, 1, JDEC_MAX_COUNT, &x, err);
	out->microbatches = (long)x;
	if (rc == UNIAP_OK)
		rc = jdec_int(root, "microbatch_size", path, 1, 1, 1, JDEC_MAX_COUNT, &x, err);
	out->microbatch_size = (long)x;
	/* the global batch the plan implies must be representable (and sane) */
	if (rc == UNIAP_OK && out->microbatches > JDEC_MAX_BATCH / out->microbatch_size)
		rc = err_set(err, UNIAP_E_INVALID,
		             "%s.microbatch_size: microbatches x microbatch_size must be <= %lld, got %ld x %ld",
		             path, (long long)JDEC_MAX_BATCH, out->microbatches, out->microbatch_size);
	if (rc == UNIAP_OK)
		rc = jdec_get(root, "schedule", path, 1, p, &v, err);
	if (rc == UNIAP_OK)
		rc = jdec_enum_value(v, p, schedules, 2, &sched, err);
	out->schedule = sched == 1 ? COST_1F1B : COST_GPIPE;
	if (rc == UNIAP_OK)
		rc = jdec_num(root, "tpi_s", path, 1, 0.0, 0.0, DBL_MAX, &out->tpi_s, err);
	if (rc == UNIAP_OK)
		rc = jdec_num(root, "throughput_samples_per_s", path, 0, 0.0, 0.0, DBL_MAX,
		              &out->throughput_samples_per_s, err);
	if (rc == UNIAP_OK)
		rc = jdec_plan_layers(root, path, out, &width, err);
	if (rc == UNIAP_OK)
		rc = jdec_plan_stages(root, path, out, width, err);
	free(width);
	if (rc != UNIAP_OK)
		plan_doc_release(out);
	return rc;
}

/* ------------------------------------------------------- from JSON text */

uniap_code jdec_cluster(const char *text, size_t len, struct cluster_profile *out, struct uniap_err *err)
{
	cJSON *root = NULL;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "jdec_cluster: out is NULL");
	memset(out, 0, sizeof(*out));
	rc = jdec_parse(text, len, "cluster", &root, err);
	if (rc == UNIAP_OK)
		rc = jdec_cluster_json(root, "cluster", out, err);
	cJSON_Delete(root);
	return rc;
}

uniap_code jdec_model(const char *text, size_t len, struct model_profile *out, struct uniap_err *err)
{
	cJSON *root = NULL;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "jdec_model: out is NULL");
	memset(out, 0, sizeof(*out));
	rc = jdec_parse(text, len, "model", &root, err);
	if (rc == UNIAP_OK)
		rc = jdec_model_json(root, "model", out, err);
	cJSON_Delete(root);
	return rc;
}

uniap_code jdec_plan(const char *text, size_t len, struct plan_doc *out, struct uniap_err *err)
{
	cJSON *root = NULL;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "jdec_plan: out is NULL");
	memset(out, 0, sizeof(*out));
	rc = jdec_parse(text, len, "plan", &root, err);
	if (rc == UNIAP_OK)
		rc = jdec_plan_json(root, "plan", out, err);
	cJSON_Delete(root);
	return rc;
}
