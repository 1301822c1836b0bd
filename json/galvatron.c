/*
 * galvatron.c - Galvatron v2.4.0 profile files to uniap cluster and model
 * documents (see galvatron.h; docs/galvatron.md states every rule).
 *
 * Input grammar (anything else is an "unknown key" error):
 *   allreduce_bandwidth_*:  allreduce_size_<k>_consec_<0|1>     GB/s (bus bandwidth)
 *   p2p_bandwidth_*:        pp_size_<k>                          GB/s
 *   overlap_coefficient:    overlap_coe                          factor >= 1
 *   sp_time_*:              <allreduce|all2all>_size_<k>_<m>MB_time   ms (checked, not used)
 *   computation_profiling:  layertype_<i>[_bsz<B>][_seq<S>]      ms per sample per layer
 *                           layertype_other[_<i>][_bsz<B>][_seq<S>|_seq[<S>,..]]  ms per sample
 *                           layernum[<n>,..]_bsz<B>[_seq<S>|_seq[..]]  ms per batch (raw totals)
 *   memory_profiling:       layertype_<i>[_sp] -> {<seq>: E} or E,
 *                             E = {parameter_size, tp_activation_per_bsz_dict: {<tp>: MB, checkpoint: MB}}
 *                           other_memory_<pp_off|pp_on_first|pp_on_last>[_sp] -> {<seq>: O} or O,
 *                             O = {model_states: MB or {<tp>: MB}, activation: MB or {<tp>: MB}}
 *                           <pp>_<tp>_<dp>[_c][_vtp][_sp] -> {raw measurements: numbers} (checked, not used)
 * MB is 2^20 bytes (torch.cuda memory statistics / 2^20).
 *
 * Never: print, exit, keep state, or trust a number before checking it.
 */
#include "galvatron.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jdecode.h"
#include "jencode.h"
#include "model.h"

#define GALV_MIB 1048576.0
#define GALV_GB 1e9
/* Most layer types one Galvatron model has (Swin: one per stage). */
#define GALV_MAX_TYPES 16
/* Most members of one input object, and names read from one folder. */
#define GALV_MAX_KEYS 4096
#define GALV_MAX_DIR_NAMES 4096
/* Longest path built from a folder and a file name. */
#define GALV_PATH_MAX 4096
/* Largest integer inside a key or a config value. */
#define GALV_MAX_INT 999999999L
/* Largest bandwidth accepted (GB/s), as the cluster schema. */
#define GALV_MAX_BW_GBPS 1e6
/* Largest time (ms) and memory (MB) accepted from a profile. */
#define GALV_MAX_MS 1e7
#define GALV_MAX_MB 1e9
/* Floor of an imported forward time: the schema needs > 0, Galvatron clamps
 * a negative "other" time to 0 (Swin's is 0). */
#define GALV_MIN_FORWARD_S 1e-9
/* Model states bytes per parameter in Galvatron's profiles (fp32 parameter,
 * gradient and two Adam moments: "model_states_to_param_size_ratio" 4 on MB of
 * 4-byte parameters). */
#define GALV_STATE_BYTES_PER_PARAM 16.0
#define GALV_PARAM_SIZE_BYTES_PER_PARAM 4.0

/* ---------------------------------------------------------------- helpers */

static const char *galv_basename(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Appends printf-style text to rep (may be NULL), cutting at its capacity. */
static void galv_note(struct galv_report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void galv_note(struct galv_report *rep, const char *fmt, ...)
{
	size_t len;
	va_list ap;

	if (!rep)
		return;
	len = strnlen(rep->text, sizeof(rep->text));
	if (len + 1 >= sizeof(rep->text))
		return;
	va_start(ap, fmt);
	vsnprintf(rep->text + len, sizeof(rep->text) - len, fmt, ap);
	va_end(ap);
}

/* Appends text to a bounded buffer buf (cap bytes, NUL-terminated). */
static void galv_append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void galv_append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strnlen(buf, cap);
	va_list ap;

	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

/* obj (from file) must be an object with at most GALV_MAX_KEYS members and no duplicate key. */
static uniap_code galv_check_object(const cJSON *obj, const char *file, const char *key, struct uniap_err *err)
{
	const cJSON *c, *d;
	size_t n = 0;

	if (!cJSON_IsObject(obj)) {
		if (key)
			return err_set(err, UNIAP_E_INVALID, "%s: %s: must be an object, got %s", file, key,
			               jdec_type_name(obj));
		return err_set(err, UNIAP_E_INVALID, "%s: must be a JSON object, got %s", file, jdec_type_name(obj));
	}
	for (c = obj->child; c; c = c->next) {
		if (++n > GALV_MAX_KEYS)
			return err_set(err, UNIAP_E_LIMIT, "%s: %s: more than %d members", file, key ? key : "document",
			               GALV_MAX_KEYS);
		if (!c->string)
			return err_set(err, UNIAP_E_INVALID, "%s: %s: member without a key", file, key ? key : "document");
		for (d = obj->child; d != c; d = d->next)
			if (strcmp(d->string, c->string) == 0)
				return err_set(err, UNIAP_E_INVALID, "%s: %s%s%.128s: duplicate key", file, key ? key : "",
				               key ? "." : "", c->string);
	}
	return UNIAP_OK;
}

enum galv_lo {
	GALV_GE0, /* >= 0 */
	GALV_GT0, /* > 0 */
};

/* v (file, key) as a finite number that is lo and <= hi. */
static uniap_code galv_number(const cJSON *v, const char *file, const char *key, enum galv_lo lo, double hi,
                              double *out, struct uniap_err *err)
{
	double x;

	if (!cJSON_IsNumber(v))
		return err_set(err, UNIAP_E_INVALID, "%s: %s: must be a number, got %s", file, key, jdec_type_name(v));
	x = v->valuedouble;
	if (!isfinite(x))
		return err_set(err, UNIAP_E_INVALID, "%s: %s: must be a finite number", file, key);
	if (lo == GALV_GT0 && !(x > 0))
		return err_set(err, UNIAP_E_INVALID, "%s: %s: must be > 0, got %.15g", file, key, x);
	if (lo == GALV_GE0 && !(x >= 0))
		return err_set(err, UNIAP_E_INVALID, "%s: %s: must be >= 0, got %.15g", file, key, x);
	if (x > hi)
		return err_set(err, UNIAP_E_INVALID, "%s: %s: must be <= %g, got %.15g", file, key, hi, x);
	*out = x;
	return UNIAP_OK;
}

/*
 * Decodes the printed text of doc (borrowed) as a model (is_model) or cluster
 * document: what is written is what is checked (numbers are raw cJSON items
 * that only the printer understands).
 */
static uniap_code galv_check_doc(const cJSON *doc, int is_model, struct uniap_err *err)
{
	char *text = jenc_print(doc, 0);
	struct cluster_profile c = { 0 };
	struct model_profile m = { 0 };
	uniap_code rc;

	if (!text)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	if (is_model)
		rc = jdec_model(text, strlen(text), &m, err);
	else
		rc = jdec_cluster(text, strlen(text), &c, err);
	model_release(&m);
	cluster_release(&c);
	cJSON_free(text);
	return rc;
}

/* buf (GALV_PATH_MAX) = "dir/name"; UNIAP_E_LIMIT when it does not fit. */
static uniap_code galv_join(char *buf, const char *dir, const char *name, struct uniap_err *err)
{
	int w = snprintf(buf, GALV_PATH_MAX, "%s/%s", dir, name);

	if (w < 0 || w >= GALV_PATH_MAX)
		return err_set(err, UNIAP_E_LIMIT, "%.64s...: path longer than %d bytes", dir, GALV_PATH_MAX - 1);
	return UNIAP_OK;
}

uniap_code galv_load(const char *path, cJSON **out, struct uniap_err *err)
{
	char *text = NULL;
	size_t len = 0, i;
	uniap_code rc;

	if (!out || !path)
		return err_set(err, UNIAP_E_ARG, "galv_load: missing argument");
	*out = NULL;
	rc = jdec_read_file(path, GALV_MAX_FILE_BYTES, &text, &len, err);
	if (rc != UNIAP_OK)
		goto out;
	for (i = 0; i < len && strchr(" \t\r\n", text[i]); i++)
		;
	if (i == len) {
		rc = err_set(err, UNIAP_E_MALFORMED, "%s: empty file", path);
		goto out;
	}
	rc = jdec_parse(text, len, path, out, err);
	if (rc != UNIAP_OK)
		goto out;
	rc = galv_check_object(*out, path, NULL, err);
out:
	if (rc != UNIAP_OK) {
		cJSON_Delete(*out);
		*out = NULL;
	}
	free(text);
	return rc;
}

/* ------------------------------------------------------------ key grammar */

/* Consumes lit at *p. */
static int galv_eat(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*p, lit, n) != 0)
		return 0;
	*p += n;
	return 1;
}

/* Consumes a decimal integer in [0, GALV_MAX_INT] without sign or leading zeros. */
static int galv_eat_uint(const char **p, long *out)
{
	const char *s = *p;
	long v = 0;
	int n = 0;

	if (*s < '0' || *s > '9')
		return 0;
	if (*s == '0' && s[1] >= '0' && s[1] <= '9')
		return 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (++n > 9)
			return 0;
		v = v * 10 + (*s - '0');
	}
	*p = s;
	*out = v;
	return 1;
}

/* A sequence length (n = 1) or a bracketed list of them (listed), n = 0 when absent. */
struct galv_seq {
	size_t n;
	int listed;
	long v[GALV_MAX_TYPES];
};

/* Consumes "[a,b,..]" (1..GALV_MAX_TYPES positive integers). */
static int galv_eat_list(const char **p, struct galv_seq *q)
{
	const char *s = *p;

	if (*s++ != '[')
		return 0;
	q->n = 0;
	q->listed = 1;
	for (;;) {
		if (q->n == GALV_MAX_TYPES || !galv_eat_uint(&s, &q->v[q->n]) || q->v[q->n] < 1)
			return 0;
		q->n++;
		if (*s == ']')
			break;
		if (*s++ != ',')
			return 0;
	}
	*p = s + 1;
	return 1;
}

/* Consumes an optional "_seq<S>" or "_seq[..]" (list only when allow_list). */
static int galv_eat_seq(const char **p, struct galv_seq *q, int allow_list)
{
	memset(q, 0, sizeof(*q));
	if (!galv_eat(p, "_seq"))
		return 1;
	if (**p == '[')
		return allow_list && galv_eat_list(p, q);
	if (!galv_eat_uint(p, &q->v[0]) || q->v[0] < 1)
		return 0;
	q->n = 1;
	return 1;
}

/* Consumes an optional "_bsz<B>" (B >= 1); *bsz = 0 when absent. */
static int galv_eat_bsz(const char **p, long *bsz)
{
	*bsz = 0;
	if (!galv_eat(p, "_bsz"))
		return 1;
	return galv_eat_uint(p, bsz) && *bsz >= 1;
}

/* "<prefix><N>nodes_<G>gpus_per_node.json" -> N, G (both >= 1). */
static int galv_parse_hw_name(const char *name, const char *prefix, long *nodes, long *gpus)
{
	const char *p = name;

	return galv_eat(&p, prefix) && galv_eat_uint(&p, nodes) && *nodes >= 1 && galv_eat(&p, "nodes_") &&
	       galv_eat_uint(&p, gpus) && *gpus >= 1 && galv_eat(&p, "gpus_per_node.json") && *p == '\0';
}

/* ------------------------------------------------------------- hardware */

struct galv_ar {
	long size;
	int consecutive;
	double gbps;
};

struct galv_p2p {
	long pp;
	double gbps;
};

static int galv_ar_cmp(const void *a, const void *b)
{
	const struct galv_ar *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return y->consecutive - x->consecutive;
}

static int galv_p2p_cmp(const void *a, const void *b)
{
	const struct galv_p2p *x = a, *y = b;

	return x->pp < y->pp ? -1 : x->pp > y->pp;
}

static uniap_code galv_read_allreduce(const struct galv_hw_input *in, long devices, struct galv_ar *ar,
                                      size_t *n_ar, struct uniap_err *err)
{
	const char *file = in->allreduce_name;
	const cJSON *c;
	uniap_code rc;

	*n_ar = 0;
	if ((rc = galv_check_object(in->allreduce, file, NULL, err)) != UNIAP_OK)
		return rc;
	for (c = in->allreduce->child; c; c = c->next) {
		const char *p = c->string;
		long size = 0, consec = 0;
		double gbps;

		if (!galv_eat(&p, "allreduce_size_") || !galv_eat_uint(&p, &size) || !galv_eat(&p, "_consec_") ||
		    !galv_eat_uint(&p, &consec) || consec > 1 || *p != '\0')
			return err_set(err, UNIAP_E_INVALID,
			               "%s: %.128s: unknown key (expected allreduce_size_<k>_consec_<0|1>)", file, c->string);
		if (size < 2 || size > devices)
			return err_set(err, UNIAP_E_INVALID, "%s: %s: group size must be between 2 and the %ld devices",
			               file, c->string, devices);
		if ((rc = galv_number(c, file, c->string, GALV_GT0, GALV_MAX_BW_GBPS, &gbps, err)) != UNIAP_OK)
			return rc;
		if (*n_ar == MODEL_MAX_BW_ENTRIES)
			return err_set(err, UNIAP_E_LIMIT, "%s: more than %d entries", file, MODEL_MAX_BW_ENTRIES);
		ar[*n_ar].size = size;
		ar[*n_ar].consecutive = (int)consec;
		ar[*n_ar].gbps = gbps;
		(*n_ar)++;
	}
	if (*n_ar == 0)
		return err_set(err, UNIAP_E_INVALID, "%s: no allreduce_size_<k>_consec_<0|1> entries", file);
	qsort(ar, *n_ar, sizeof(*ar), galv_ar_cmp);
	return UNIAP_OK;
}

static uniap_code galv_read_p2p(const struct galv_hw_input *in, long devices, struct galv_p2p *p2p,
                                size_t *n_p2p, struct uniap_err *err)
{
	const char *file = in->p2p_name ? in->p2p_name : "p2p";
	const cJSON *c;
	uniap_code rc;

	*n_p2p = 0;
	if (!in->p2p)
		return UNIAP_OK;
	if ((rc = galv_check_object(in->p2p, file, NULL, err)) != UNIAP_OK)
		return rc;
	for (c = in->p2p->child; c; c = c->next) {
		const char *p = c->string;
		long pp = 0;
		double gbps;

		if (!galv_eat(&p, "pp_size_") || !galv_eat_uint(&p, &pp) || *p != '\0')
			return err_set(err, UNIAP_E_INVALID, "%s: %.128s: unknown key (expected pp_size_<k>)", file,
			               c->string);
		if (pp < 2 || devices % pp != 0)
			return err_set(err, UNIAP_E_INVALID, "%s: %s: pipeline degree must be >= 2 and divide the %ld devices",
			               file, c->string, devices);
		if ((rc = galv_number(c, file, c->string, GALV_GT0, GALV_MAX_BW_GBPS, &gbps, err)) != UNIAP_OK)
			return rc;
		if (*n_p2p == MODEL_MAX_BW_ENTRIES)
			return err_set(err, UNIAP_E_LIMIT, "%s: more than %d entries", file, MODEL_MAX_BW_ENTRIES);
		p2p[*n_p2p].pp = pp;
		p2p[*n_p2p].gbps = gbps;
		(*n_p2p)++;
	}
	qsort(p2p, *n_p2p, sizeof(*p2p), galv_p2p_cmp);
	return UNIAP_OK;
}

static uniap_code galv_read_overlap(const struct galv_hw_input *in, double *ccoc, struct uniap_err *err)
{
	const char *file = in->overlap_name ? in->overlap_name : "overlap";
	const cJSON *c;
	uniap_code rc;

	*ccoc = 1.0;
	if (!in->overlap)
		return UNIAP_OK;
	if ((rc = galv_check_object(in->overlap, file, NULL, err)) != UNIAP_OK)
		return rc;
	for (c = in->overlap->child; c; c = c->next)
		if (strcmp(c->string, "overlap_coe") != 0)
			return err_set(err, UNIAP_E_INVALID, "%s: %.128s: unknown key (expected overlap_coe)", file,
			               c->string);
	c = cJSON_GetObjectItemCaseSensitive(in->overlap, "overlap_coe");
	if (!c)
		return err_set(err, UNIAP_E_INVALID, "%s: overlap_coe: missing", file);
	if ((rc = galv_number(c, file, "overlap_coe", GALV_GT0, 10.0, ccoc, err)) != UNIAP_OK)
		return rc;
	if (*ccoc < 1.0)
		return err_set(err, UNIAP_E_INVALID, "%s: overlap_coe: must be >= 1 (a slowdown factor), got %.15g",
		               file, *ccoc);
	return UNIAP_OK;
}

/* sp_time files are checked (so a corrupt one is reported) but not used; returns the entry count. */
static uniap_code galv_check_sp_time(const struct galv_hw_input *in, long devices, size_t *n,
                                     struct uniap_err *err)
{
	const char *file = in->sp_time_name ? in->sp_time_name : "sp_time";
	const cJSON *c;
	uniap_code rc;

	*n = 0;
	if (!in->sp_time)
		return UNIAP_OK;
	if ((rc = galv_check_object(in->sp_time, file, NULL, err)) != UNIAP_OK)
		return rc;
	for (c = in->sp_time->child; c; c = c->next) {
		const char *p = c->string;
		long size = 0, mb = 0;
		double ms;

		if (!(galv_eat(&p, "allreduce_size_") || galv_eat(&p, "all2all_size_")) || !galv_eat_uint(&p, &size) ||
		    !galv_eat(&p, "_") || !galv_eat_uint(&p, &mb) || !galv_eat(&p, "MB_time") || *p != '\0')
			return err_set(err, UNIAP_E_INVALID,
			               "%s: %.128s: unknown key (expected <allreduce|all2all>_size_<k>_<m>MB_time)", file,
			               c->string);
		if (size < 2 || size > devices || mb < 1)
			return err_set(err, UNIAP_E_INVALID,
			               "%s: %s: group size must be between 2 and the %ld devices, message >= 1 MB", file,
			               c->string, devices);
		if ((rc = galv_number(c, file, c->string, GALV_GT0, GALV_MAX_MS, &ms, err)) != UNIAP_OK)
			return rc;
		(*n)++;
	}
	return UNIAP_OK;
}

/*
 * The hierarchy: a node level (devices_per_node) with the best consecutive
 * all-reduce bandwidth of a group inside one node, and with nodes > 1 a
 * cluster level with the worst bandwidth of a group that crosses nodes
 * (Galvatron's strided groups take every (W/k)-th rank of all W devices, so
 * with several nodes they always cross nodes; a consecutive group crosses
 * nodes when k > devices_per_node).  Fallbacks when no entry qualifies: the
 * best entry of any kind for the node level; the worst p2p, else the worst
 * entry of any kind, for the cluster level.
 */
static void galv_hierarchy(const struct galv_ar *ar, size_t n_ar, const struct galv_p2p *p2p, size_t n_p2p,
                           long nodes, long gpus, double *node_gbps, double *cluster_gbps)
{
	double best_in = 0, best_any = 0, worst_cross = 0, worst_p2p = 0, worst_any = 0;
	size_t i;

	for (i = 0; i < n_ar; i++) {
		int crosses = nodes > 1 && (!ar[i].consecutive || ar[i].size > gpus);

		if (ar[i].consecutive && ar[i].size <= gpus && ar[i].gbps > best_in)
			best_in = ar[i].gbps;
		if (ar[i].gbps > best_any)
			best_any = ar[i].gbps;
		if (crosses && (worst_cross == 0 || ar[i].gbps < worst_cross))
			worst_cross = ar[i].gbps;
		if (worst_any == 0 || ar[i].gbps < worst_any)
			worst_any = ar[i].gbps;
	}
	for (i = 0; i < n_p2p; i++)
		if (worst_p2p == 0 || p2p[i].gbps < worst_p2p)
			worst_p2p = p2p[i].gbps;
	*node_gbps = best_in > 0 ? best_in : best_any;
	*cluster_gbps = worst_cross > 0 ? worst_cross : worst_p2p > 0 ? worst_p2p : worst_any;
}

/* Adds {name, devices, bandwidth_gb_per_s} to the array levels. */
static int galv_add_level(cJSON *levels, const char *name, long devices, double gbps)
{
	cJSON *l = cJSON_CreateObject();

	if (!l || !cJSON_AddItemToArray(levels, l)) {
		cJSON_Delete(l);
		return 0;
	}
	return cJSON_AddStringToObject(l, "name", name) && jenc_add_num(l, "devices", (double)devices) &&
	       jenc_add_num(l, "bandwidth_gb_per_s", gbps);
}

static cJSON *galv_cluster_doc(const struct galv_hw_input *in, const struct galv_ar *ar, size_t n_ar,
                               const struct galv_p2p *p2p, size_t n_p2p, double ccoc, double node_gbps,
                               double cluster_gbps)
{
	cJSON *doc = cJSON_CreateObject(), *dev, *levels, *coll, *table, *pp;
	char name[64];
	size_t i;
	int ok;

	snprintf(name, sizeof(name), "galvatron-a100-%dx%d", in->nodes, in->gpus_per_node);
	ok = doc && cJSON_AddStringToObject(doc, "name", name) && jenc_add_num(doc, "nodes", in->nodes) &&
	     jenc_add_num(doc, "devices_per_node", in->gpus_per_node);
	dev = ok ? cJSON_AddObjectToObject(doc, "device") : NULL;
	ok = dev && cJSON_AddStringToObject(dev, "name", "NVIDIA A100 (Galvatron v2.4.0 profile)") &&
	     jenc_add_num(dev, "memory_bytes", in->memory_bytes) &&
	     jenc_add_num(dev, "reserved_bytes", in->reserved_bytes);
	levels = ok ? cJSON_AddArrayToObject(doc, "hierarchy") : NULL;
	ok = levels && galv_add_level(levels, "node", in->gpus_per_node, node_gbps);
	if (ok && in->nodes > 1)
		ok = galv_add_level(levels, "cluster", (long)in->nodes * in->gpus_per_node, cluster_gbps);
	coll = ok ? cJSON_AddObjectToObject(doc, "collectives") : NULL;
	table = coll ? cJSON_AddArrayToObject(coll, "allreduce") : NULL;
	ok = table != NULL;
	for (i = 0; ok && i < n_ar; i++) {
		cJSON *e = cJSON_CreateObject();

		ok = e && cJSON_AddItemToArray(table, e);
		if (!ok) {
			cJSON_Delete(e);
			break;
		}
		ok = jenc_add_num(e, "size", (double)ar[i].size) &&
		     cJSON_AddStringToObject(e, "placement", ar[i].consecutive ? "consecutive" : "strided") &&
		     jenc_add_num(e, "bandwidth_gb_per_s", ar[i].gbps);
	}
	if (ok && n_p2p > 0) {
		pp = cJSON_AddArrayToObject(doc, "p2p");
		ok = pp != NULL;
		for (i = 0; ok && i < n_p2p; i++) {
			cJSON *e = cJSON_CreateObject();

			ok = e && cJSON_AddItemToArray(pp, e);
			if (!ok) {
				cJSON_Delete(e);
				break;
			}
			ok = jenc_add_num(e, "pp", (double)p2p[i].pp) && jenc_add_num(e, "bandwidth_gb_per_s", p2p[i].gbps);
		}
	}
	ok = ok && jenc_add_num(doc, "overlap_coefficient", ccoc);
	if (!ok) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

uniap_code galv_cluster_json(const struct galv_hw_input *in, cJSON **out, struct galv_report *rep,
                             struct uniap_err *err)
{
	struct galv_ar ar[MODEL_MAX_BW_ENTRIES];
	struct galv_p2p p2p[MODEL_MAX_BW_ENTRIES];
	size_t n_ar = 0, n_p2p = 0, n_sp = 0;
	double ccoc = 1.0, node_gbps = 0, cluster_gbps = 0;
	long devices;
	cJSON *doc = NULL;
	uniap_code rc;

	if (!out || !in || !in->allreduce || !in->allreduce_name)
		return err_set(err, UNIAP_E_ARG, "galv_cluster_json: missing argument");
	*out = NULL;
	if (in->nodes < 1 || in->gpus_per_node < 1 ||
	    (long long)in->nodes * in->gpus_per_node > MODEL_MAX_DEVICES)
		return err_set(err, UNIAP_E_ARG, "nodes (%d) and gpus per node (%d) must be >= 1, at most %d devices",
		               in->nodes, in->gpus_per_node, MODEL_MAX_DEVICES);
	if (!(in->memory_bytes > 0) || !(in->reserved_bytes >= 0) || !(in->reserved_bytes < in->memory_bytes))
		return err_set(err, UNIAP_E_ARG, "device memory must be > 0 and reserved memory in [0, memory)");
	devices = (long)in->nodes * in->gpus_per_node;
	if ((rc = galv_read_allreduce(in, devices, ar, &n_ar, err)) != UNIAP_OK)
		goto out;
	if ((rc = galv_read_p2p(in, devices, p2p, &n_p2p, err)) != UNIAP_OK)
		goto out;
	if ((rc = galv_read_overlap(in, &ccoc, err)) != UNIAP_OK)
		goto out;
	if ((rc = galv_check_sp_time(in, devices, &n_sp, err)) != UNIAP_OK)
		goto out;
	galv_hierarchy(ar, n_ar, p2p, n_p2p, in->nodes, in->gpus_per_node, &node_gbps, &cluster_gbps);
	doc = galv_cluster_doc(in, ar, n_ar, p2p, n_p2p, ccoc, node_gbps, cluster_gbps);
	if (!doc) {
		rc = err_set(err, UNIAP_E_NOMEM, "out of memory");
		goto out;
	}
	rc = galv_check_doc(doc, 0, err);
	if (rc != UNIAP_OK) {
		err_prefix(err, "%s: the imported cluster breaks a rule", in->allreduce_name);
		goto out;
	}
	galv_note(rep, "cluster: %d node(s) x %d GPUs, %zu all-reduce entries, %zu p2p entries, overlap %.6g\n",
	          in->nodes, in->gpus_per_node, n_ar, n_p2p, ccoc);
	galv_note(rep, "cluster: hierarchy node %.6g GB/s", node_gbps);
	if (in->nodes > 1)
		galv_note(rep, ", cluster %.6g GB/s", cluster_gbps);
	galv_note(rep, "\n");
	if (in->sp_time)
		galv_note(rep, "cluster: %s: %zu timings checked, not used (see docs/galvatron.md)\n",
		          in->sp_time_name ? galv_basename(in->sp_time_name) : "sp_time", n_sp);
	*out = doc;
	doc = NULL;
out:
	cJSON_Delete(doc);
	return rc;
}

/* ---------------------------------------------------------------- folders */

struct galv_names {
	char **v;
	size_t n;
};

static void galv_names_release(struct galv_names *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->v[i]);
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

static int galv_str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular-looking names of dir (sorted, at most GALV_MAX_DIR_NAMES); release with galv_names_release(). */
static uniap_code galv_list_dir(const char *dir, struct galv_names *d, struct uniap_err *err)
{
	DIR *h;
	struct dirent *e;
	uniap_code rc = UNIAP_OK;

	d->v = NULL;
	d->n = 0;
	h = opendir(dir);
	if (!h)
		return err_set(err, UNIAP_E_IO, "%s: cannot open folder: %s", dir, strerror(errno));
	d->v = calloc(GALV_MAX_DIR_NAMES, sizeof(*d->v));
	if (!d->v) {
		rc = err_set(err, UNIAP_E_NOMEM, "%s: out of memory", dir);
		goto out;
	}
	while ((e = readdir(h)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (d->n == GALV_MAX_DIR_NAMES) {
			rc = err_set(err, UNIAP_E_LIMIT, "%s: more than %d entries", dir, GALV_MAX_DIR_NAMES);
			goto out;
		}
		d->v[d->n] = strdup(e->d_name);
		if (!d->v[d->n]) {
			rc = err_set(err, UNIAP_E_NOMEM, "%s: out of memory", dir);
			goto out;
		}
		d->n++;
	}
	qsort(d->v, d->n, sizeof(*d->v), galv_str_cmp);
out:
	closedir(h);
	if (rc != UNIAP_OK)
		galv_names_release(d);
	return rc;
}

static int galv_names_has(const struct galv_names *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (strcmp(d->v[i], name) == 0)
			return 1;
	return 0;
}

/* Picks the file set (nodes x gpus) of dir; messages list the sets found. */
static uniap_code galv_pick_set(const char *dir, const struct galv_names *d, long want_nodes, long want_gpus,
                                long *nodes, long *gpus, struct uniap_err *err)
{
	char sets[256] = "";
	size_t i, found = 0;

	for (i = 0; i < d->n; i++) {
		long n, g;

		if (!galv_parse_hw_name(d->v[i], "allreduce_bandwidth_", &n, &g))
			continue;
		galv_append(sets, sizeof(sets), "%s%ldx%ld", sets[0] ? ", " : "", n, g);
		if ((want_nodes && n != want_nodes) || (want_gpus && g != want_gpus))
			continue;
		found++;
		*nodes = n;
		*gpus = g;
	}
	if (!sets[0])
		return err_set(err, UNIAP_E_NOTFOUND,
		               "%s: no allreduce_bandwidth_<N>nodes_<G>gpus_per_node.json (not a Galvatron hardware_configs folder?)",
		               dir);
	if (found == 0)
		return err_set(err, UNIAP_E_NOTFOUND,
		               "%s: no file set matches --nodes %ld --gpus-per-node %ld (sets, nodes x GPUs: %s)", dir,
		               want_nodes, want_gpus, sets);
	if (found > 1)
		return err_set(err, UNIAP_E_ARG,
		               "%s: several file sets (%s): pick one with --nodes and --gpus-per-node", dir, sets);
	return UNIAP_OK;
}

/* A path for an optional file: explicit wins, else dir/name when it exists, else "" (absent). */
static uniap_code galv_optional_path(char *buf, const char *explicit_path, const char *dir,
                                     const struct galv_names *d, const char *name, struct uniap_err *err)
{
	buf[0] = '\0';
	if (explicit_path) {
		if (strlen(explicit_path) >= GALV_PATH_MAX)
			return err_set(err, UNIAP_E_LIMIT, "path longer than %d bytes", GALV_PATH_MAX - 1);
		memcpy(buf, explicit_path, strlen(explicit_path) + 1);
		return UNIAP_OK;
	}
	if (dir && galv_names_has(d, name))
		return galv_join(buf, dir, name, err);
	return UNIAP_OK;
}

uniap_code galv_import_cluster(const struct galv_hw_opts *o, cJSON **out, struct galv_report *rep,
                               struct uniap_err *err)
{
	struct galv_names d = { 0 };
	struct galv_hw_input in = { 0 };
	char ar_path[GALV_PATH_MAX], p2p_path[GALV_PATH_MAX], ov_path[GALV_PATH_MAX], sp_path[GALV_PATH_MAX];
	char name[160];
	cJSON *ar = NULL, *p2p = NULL, *ov = NULL, *sp = NULL;
	long nodes = 0, gpus = 0;
	uniap_code rc = UNIAP_OK;

	if (!out || !o)
		return err_set(err, UNIAP_E_ARG, "galv_import_cluster: missing argument");
	*out = NULL;
	if (!o->dir && !o->allreduce_path)
		return err_set(err, UNIAP_E_ARG, "--hardware DIR or --allreduce FILE: required");
	if (o->nodes < 0 || o->gpus_per_node < 0)
		return err_set(err, UNIAP_E_ARG, "--nodes and --gpus-per-node must be >= 1");
	if (o->dir && (rc = galv_list_dir(o->dir, &d, err)) != UNIAP_OK)
		goto out;
	if (o->allreduce_path) {
		if (!galv_parse_hw_name(galv_basename(o->allreduce_path), "allreduce_bandwidth_", &nodes, &gpus)) {
			if (!o->nodes || !o->gpus_per_node) {
				rc = err_set(err, UNIAP_E_ARG,
				             "%s: the name does not tell the nodes and GPUs per node: give --nodes and --gpus-per-node",
				             o->allreduce_path);
				goto out;
			}
		}
		if (o->nodes)
			nodes = o->nodes;
		if (o->gpus_per_node)
			gpus = o->gpus_per_node;
		if ((rc = galv_optional_path(ar_path, o->allreduce_path, NULL, &d, "", err)) != UNIAP_OK)
			goto out;
	} else {
		if ((rc = galv_pick_set(o->dir, &d, o->nodes, o->gpus_per_node, &nodes, &gpus, err)) != UNIAP_OK)
			goto out;
		snprintf(name, sizeof(name), "allreduce_bandwidth_%ldnodes_%ldgpus_per_node.json", nodes, gpus);
		if ((rc = galv_join(ar_path, o->dir, name, err)) != UNIAP_OK)
			goto out;
	}
	snprintf(name, sizeof(name), "p2p_bandwidth_%ldnodes_%ldgpus_per_node.json", nodes, gpus);
	if ((rc = galv_optional_path(p2p_path, o->p2p_path, o->dir, &d, name, err)) != UNIAP_OK)
		goto out;
	snprintf(name, sizeof(name), "sp_time_%ldnodes_%ldgpus_per_node.json", nodes, gpus);
	if ((rc = galv_optional_path(sp_path, o->sp_time_path, o->dir, &d, name, err)) != UNIAP_OK)
		goto out;
	if ((rc = galv_optional_path(ov_path, o->overlap_path, o->dir, &d, "overlap_coefficient.json", err)) !=
	    UNIAP_OK)
		goto out;
	if (nodes > MODEL_MAX_DEVICES || gpus > MODEL_MAX_DEVICES) {
		rc = err_set(err, UNIAP_E_INVALID, "%s: more than %d devices", ar_path, MODEL_MAX_DEVICES);
		goto out;
	}
	if ((rc = galv_load(ar_path, &ar, err)) != UNIAP_OK)
		goto out;
	if (p2p_path[0] && (rc = galv_load(p2p_path, &p2p, err)) != UNIAP_OK)
		goto out;
	if (ov_path[0] && (rc = galv_load(ov_path, &ov, err)) != UNIAP_OK)
		goto out;
	if (sp_path[0] && (rc = galv_load(sp_path, &sp, err)) != UNIAP_OK)
		goto out;
	in.nodes = (int)nodes;
	in.gpus_per_node = (int)gpus;
	in.memory_bytes = o->memory_bytes;
	in.reserved_bytes = o->reserved_bytes;
	in.allreduce = ar;
	in.allreduce_name = ar_path;
	in.p2p = p2p;
	in.p2p_name = p2p_path;
	in.overlap = ov;
	in.overlap_name = ov_path;
	in.sp_time = sp;
	in.sp_time_name = sp_path;
	galv_note(rep, "cluster: files %s%s%s%s%s%s%s\n", galv_basename(ar_path), p2p ? ", " : "",
	          p2p ? galv_basename(p2p_path) : "", ov ? ", " : "", ov ? galv_basename(ov_path) : "",
	          sp ? ", " : "", sp ? galv_basename(sp_path) : "");
	if (!p2p)
		galv_note(rep, "cluster: no p2p file: stage-to-stage transfers use the hierarchy\n");
	if (!ov)
		galv_note(rep, "cluster: no overlap_coefficient.json: overlap coefficient 1\n");
	rc = galv_cluster_json(&in, out, rep, err);
out:
	cJSON_Delete(ar);
	cJSON_Delete(p2p);
	cJSON_Delete(ov);
	cJSON_Delete(sp);
	galv_names_release(&d);
	return rc;
}

/* ------------------------------------------------------------------ model */

enum galv_family { GALV_BERT, GALV_GPT, GALV_LLAMA, GALV_VIT, GALV_SWIN, GALV_T5 };

static const char *const galv_family_names[] = { "bert", "gpt", "llama", "vit", "swin", "t5" };

/* What the hyper-parameter file says, with the chosen sequence length per layer type. */
struct galv_arch {
	enum galv_family family;
	size_t n_types;
	long layers[GALV_MAX_TYPES];
	long hidden[GALV_MAX_TYPES];
	long heads[GALV_MAX_TYPES];
	long seq[GALV_MAX_TYPES];
	long vocab;      /* vocab_size; 0: the config gives none (then no model shape) */
	long ffn_hidden; /* the MLP's inner size (BERT, GPT, Llama) */
	char name[MODEL_MAX_NAME - 15]; /* the config's file name without ".json" (room for "-seq<S>") */
};

/* Config member key as an integer in [lo, hi]; absent: error when required, else *out untouched. */
static uniap_code galv_cfg_int(const cJSON *cfg, const char *file, const char *key, long lo, long hi,
                               int required, long *out, struct uniap_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
	double x;

	if (!v) {
		if (required)
			return err_set(err, UNIAP_E_INVALID, "%s: %s: missing", file, key);
		return UNIAP_OK;
	}
	if (!cJSON_IsNumber(v))
		return err_set(err, UNIAP_E_INVALID, "%s: %s: must be an integer, got %s", file, key, jdec_type_name(v));
	x = v->valuedouble;
	if (!isfinite(x) || x != floor(x) || x < (double)lo || x > (double)hi)
		return err_set(err, UNIAP_E_INVALID, "%s: %s: must be an integer between %ld and %ld, got %.15g", file,
		               key, lo, hi, x);
	*out = (long)x;
	return UNIAP_OK;
}

/* Config member key as an array of 1..GALV_MAX_TYPES integers in [lo, hi]. */
static uniap_code galv_cfg_ints(const cJSON *cfg, const char *file, const char *key, long lo, long hi,
                                long *out, size_t *n, struct uniap_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key), *c;
	char path[96];

	*n = 0;
	if (!v)
		return err_set(err, UNIAP_E_INVALID, "%s: %s: missing", file, key);
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > GALV_MAX_TYPES)
		return err_set(err, UNIAP_E_INVALID, "%s: %s: must be an array of 1 to %d integers", file, key,
		               GALV_MAX_TYPES);
	for (c = v->child; c; c = c->next) {
		double x = cJSON_IsNumber(c) ? c->valuedouble : NAN;

		snprintf(path, sizeof(path), "%s[%zu]", key, *n);
		if (!isfinite(x) || x != floor(x) || x < (double)lo || x > (double)hi)
			return err_set(err, UNIAP_E_INVALID, "%s: %s: must be an integer between %ld and %ld", file, path,
			               lo, hi);
		out[(*n)++] = (long)x;
	}
	return UNIAP_OK;
}

static uniap_code galv_arch_swin(const cJSON *cfg, const char *file, struct galv_arch *a, struct uniap_err *err)
{
	long heads[GALV_MAX_TYPES], embed = 0, image = 0, patch = 0;
	size_t n_heads = 0, i;
	uniap_code rc;

	a->family = GALV_SWIN;
	if ((rc = galv_cfg_ints(cfg, file, "depths", 1, 4000, a->layers, &a->n_types, err)) != UNIAP_OK ||
	    (rc = galv_cfg_ints(cfg, file, "num_heads", 1, 100000, heads, &n_heads, err)) != UNIAP_OK ||
	    (rc = galv_cfg_int(cfg, file, "embed_dim", 1, 1000000, 1, &embed, err)) != UNIAP_OK ||
	    (rc = galv_cfg_int(cfg, file, "image_size", 1, 1000000, 1, &image, err)) != UNIAP_OK ||
	    (rc = galv_cfg_int(cfg, file, "patch_size", 1, 1000000, 1, &patch, err)) != UNIAP_OK)
		return rc;
	if (n_heads != a->n_types)
		return err_set(err, UNIAP_E_INVALID, "%s: num_heads: must have one entry per stage of depths (%zu), got %zu",
		               file, a->n_types, n_heads);
	for (i = 0; i < a->n_types; i++) {
		/* Galvatron: stage i holds (image_size / patch_size / 2^i)^2 tokens, embed_dim * 2^i channels */
		long side = image / patch >> i;

		if (embed > GALV_MAX_INT >> i)
			return err_set(err, UNIAP_E_INVALID, "%s: embed_dim: too large for %zu stages", file, a->n_types);
		if (side < 1)
			return err_set(err, UNIAP_E_INVALID, "%s: image_size: too small for %zu stages of patch merging", file,
			               a->n_types);
		a->seq[i] = side * side;
		a->hidden[i] = embed << i;
		a->heads[i] = heads[i];
	}
	return UNIAP_OK;
}

/*
 * Reads the hyper-parameter file: the family by its keys (depths: Swin, d_model:
 * T5, n_embd: GPT, dim: Llama, hidden_size with image_size: ViT, hidden_size:
 * BERT), layer counts, hidden sizes, heads and the sequence length (seq_opt,
 * else the config's own: max_position_embeddings, n_positions, ViT's patches + 1).
 */
static uniap_code galv_arch_read(const cJSON *cfg, const char *file, long seq_opt, struct galv_arch *a,
                                 struct uniap_err *err)
{
	const char *base = galv_basename(file);
	size_t len = strlen(base), i;
	long seq = 0, total = 2, image = 0, patch = 0;
	uniap_code rc;

	memset(a, 0, sizeof(*a));
	if (len > 5 && strcmp(base + len - 5, ".json") == 0)
		len -= 5;
	if (len >= sizeof(a->name))
		len = sizeof(a->name) - 1;
	memcpy(a->name, base, len);
	a->name[len] = '\0';
	if ((rc = galv_check_object(cfg, file, NULL, err)) != UNIAP_OK)
		return rc;
	if (cJSON_GetObjectItemCaseSensitive(cfg, "depths")) {
		if (seq_opt)
			return err_set(err, UNIAP_E_ARG,
			               "--seq: not for swin: the sequence length of each stage follows image_size and patch_size (%s)",
			               file);
		if ((rc = galv_arch_swin(cfg, file, a, err)) != UNIAP_OK)
			return rc;
	} else {
		const char *k_hidden, *k_heads, *k_layers, *k_seq;

		a->n_types = 1;
		if (cJSON_GetObjectItemCaseSensitive(cfg, "d_model")) {
			a->family = GALV_T5;
			k_hidden = "d_model", k_heads = "num_heads", k_layers = "num_layers", k_seq = "n_positions";
		} else if (cJSON_GetObjectItemCaseSensitive(cfg, "n_embd")) {
			a->family = GALV_GPT;
			k_hidden = "n_embd", k_heads = "n_head", k_layers = "n_layer", k_seq = "n_positions";
		} else if (cJSON_GetObjectItemCaseSensitive(cfg, "dim")) {
			a->family = GALV_LLAMA;
			k_hidden = "dim", k_heads = "n_heads", k_layers = "n_layers", k_seq = "n_positions";
		} else if (cJSON_GetObjectItemCaseSensitive(cfg, "hidden_size")) {
			int vit = cJSON_GetObjectItemCaseSensitive(cfg, "image_size") != NULL;

			a->family = vit ? GALV_VIT : GALV_BERT;
			k_hidden = "hidden_size", k_heads = "num_attention_heads", k_layers = "num_hidden_layers";
			k_seq = vit ? NULL : "max_position_embeddings";
		} else {
			return err_set(err, UNIAP_E_INVALID,
			               "%s: unknown model family (expected one of the keys hidden_size, n_embd, dim, d_model, depths)",
			               file);
		}
		if ((rc = galv_cfg_int(cfg, file, k_hidden, 1, 1000000, 1, &a->hidden[0], err)) != UNIAP_OK ||
		    (rc = galv_cfg_int(cfg, file, k_heads, 1, 100000, 1, &a->heads[0], err)) != UNIAP_OK ||
		    (rc = galv_cfg_int(cfg, file, k_layers, 1, 4000, 1, &a->layers[0], err)) != UNIAP_OK)
			return rc;
		if (k_seq && (rc = galv_cfg_int(cfg, file, k_seq, 1, GALV_MAX_INT, 0, &seq, err)) != UNIAP_OK)
			return rc;
		if (a->family == GALV_VIT) {
			/* (image_size / patch_size)^2 patches and the class token */
			if ((rc = galv_cfg_int(cfg, file, "image_size", 1, 1000000, 1, &image, err)) != UNIAP_OK ||
			    (rc = galv_cfg_int(cfg, file, "patch_size", 1, 1000000, 1, &patch, err)) != UNIAP_OK)
				return rc;
			if (image / patch < 1 || image / patch > 30000)
				return err_set(err, UNIAP_E_INVALID, "%s: image_size / patch_size must be between 1 and 30000",
				               file);
			seq = (image / patch) * (image / patch) + 1;
		}
		if (a->family == GALV_T5) {
			/* encoder and decoder layer types; num_decoder_layers defaults to num_layers */
			a->n_types = 2;
			a->layers[1] = a->layers[0];
			if ((rc = galv_cfg_int(cfg, file, "num_decoder_layers", 1, 4000, 0, &a->layers[1], err)) != UNIAP_OK)
				return rc;
			a->hidden[1] = a->hidden[0];
			a->heads[1] = a->heads[0];
		}
		/* what a runtime's launcher needs (model.shape): the vocabulary and the MLP size of
		 * the language models; HuggingFace's defaults when absent (n_inner, intermediate_size:
		 * 4h), Meta's Llama rule (2/3 of 4h rounded up to multiple_of, 256 by default) */
		if (a->family == GALV_GPT || a->family == GALV_LLAMA || a->family == GALV_BERT) {
			long mult = 256;

			a->ffn_hidden = 4 * a->hidden[0];
			if ((rc = galv_cfg_int(cfg, file, "vocab_size", 1, GALV_MAX_INT, 0, &a->vocab, err)) != UNIAP_OK ||
			    (a->family == GALV_GPT &&
			     (rc = galv_cfg_int(cfg, file, "n_inner", 1, GALV_MAX_INT, 0, &a->ffn_hidden, err)) != UNIAP_OK) ||
			    (a->family == GALV_BERT &&
			     (rc = galv_cfg_int(cfg, file, "intermediate_size", 1, GALV_MAX_INT, 0, &a->ffn_hidden, err)) !=
			             UNIAP_OK) ||
			    (a->family == GALV_LLAMA &&
			     (rc = galv_cfg_int(cfg, file, "multiple_of", 1, 1000000, 0, &mult, err)) != UNIAP_OK))
				return rc;
			if (a->family == GALV_LLAMA) {
				long f = 2 * (4 * a->hidden[0]) / 3;

				a->ffn_hidden = mult * ((f + mult - 1) / mult);
			}
		}
		if (seq_opt)
			seq = seq_opt;
		if (seq < 1)
			return err_set(err, UNIAP_E_ARG, "%s: %s: missing, so the sequence length is unknown: give --seq", file,
			               k_seq ? k_seq : "sequence length");
		for (i = 0; i < a->n_types; i++)
			a->seq[i] = seq;
	}
	for (i = 0; i < a->n_types; i++)
		total += a->layers[i];
	if (total > MODEL_MAX_LAYERS)
		return err_set(err, UNIAP_E_LIMIT, "%s: %ld layers, more than %d", file, total, MODEL_MAX_LAYERS);
	return UNIAP_OK;
}

/* "<s>" for one layer type, "[s0,s1,..]" for several: how Galvatron keys model-wide entries. */
static void galv_seq_key(const struct galv_arch *a, char *buf, size_t cap)
{
	size_t i;

	buf[0] = '\0';
	if (a->n_types == 1) {
		snprintf(buf, cap, "%ld", a->seq[0]);
		return;
	}
	galv_append(buf, cap, "[");
	for (i = 0; i < a->n_types; i++)
		galv_append(buf, cap, "%s%ld", i ? "," : "", a->seq[i]);
	galv_append(buf, cap, "]");
}

/* ------------------------------------------------------ computation profile */

enum galv_ckind {
	GALV_C_LAYER, /* layertype_<i>[_bsz<B>][_seq<S>]: ms per sample of one layer */
	GALV_C_OTHER, /* layertype_other[_<i>][_bsz<B>][_seq..]: ms per sample of the rest */
	GALV_C_TOTAL, /* layernum[..]_bsz<B>[_seq..]: ms of one batch of a test model */
};

struct galv_crec {
	enum galv_ckind kind;
	long type;
	long bsz; /* 0: not in the key */
	struct galv_seq seq;
	struct galv_seq layernum;
	double ms;
	const char *key;
};

static int galv_parse_ckey(const char *key, struct galv_crec *r)
{
	const char *p = key;
	long index = 0;

	memset(r, 0, sizeof(*r));
	r->type = -1;
	r->key = key;
	if (galv_eat(&p, "layernum")) {
		r->kind = GALV_C_TOTAL;
		if (!galv_eat_list(&p, &r->layernum) || !galv_eat_bsz(&p, &r->bsz) || r->bsz == 0)
			return 0;
	} else if (galv_eat(&p, "layertype_other")) {
		r->kind = GALV_C_OTHER;
		if (p[0] == '_' && p[1] >= '0' && p[1] <= '9') {
			p++;
			if (!galv_eat_uint(&p, &index) || index >= GALV_MAX_TYPES)
				return 0;
		}
		if (!galv_eat_bsz(&p, &r->bsz))
			return 0;
	} else if (galv_eat(&p, "layertype_")) {
		r->kind = GALV_C_LAYER;
		if (!galv_eat_uint(&p, &r->type) || r->type >= GALV_MAX_TYPES || !galv_eat_bsz(&p, &r->bsz))
			return 0;
	} else {
		return 0;
	}
	if (!galv_eat_seq(&p, &r->seq, r->kind != GALV_C_LAYER))
		return 0;
	return *p == '\0';
}

static uniap_code galv_read_computation(const cJSON *comp, const char *file, struct galv_crec **out,
                                        size_t *n_out, struct uniap_err *err)
{
	struct galv_crec *r = NULL;
	const cJSON *c;
	size_t n = 0;
	uniap_code rc;

	*out = NULL;
	*n_out = 0;
	if ((rc = galv_check_object(comp, file, NULL, err)) != UNIAP_OK)
		return rc;
	r = calloc((size_t)cJSON_GetArraySize(comp) + 1, sizeof(*r));
	if (!r)
		return err_set(err, UNIAP_E_NOMEM, "%s: out of memory", file);
	for (c = comp->child; c; c = c->next, n++) {
		if (!galv_parse_ckey(c->string, &r[n])) {
			rc = err_set(err, UNIAP_E_INVALID,
			             "%s: %.128s: unknown key (expected layertype_<i>[_bsz<B>][_seq<S>], "
			             "layertype_other[_<i>][_bsz<B>][_seq<S>] or layernum[<n>,..]_bsz<B>[_seq<S>])",
			             file, c->string);
			goto out;
		}
		rc = galv_number(c, file, c->string, r[n].kind == GALV_C_LAYER ? GALV_GT0 : GALV_GE0, GALV_MAX_MS,
		                 &r[n].ms, err);
		if (rc != UNIAP_OK)
			goto out;
	}
	*out = r;
	*n_out = n;
	r = NULL;
out:
	free(r);
	return rc;
}

/* 1 when a key's sequence part q fits the chosen lengths of a: for layer type `type`, or model-wide (-1). */
static int galv_seq_fits(const struct galv_seq *q, const struct galv_arch *a, long type)
{
	size_t i;

	if (q->n == 0)
		return 1;
	if (type >= 0)
		return q->n == 1 && q->v[0] == a->seq[type];
	if (q->n == 1) {
		for (i = 0; i < a->n_types; i++)
			if (a->seq[i] != q->v[0])
				return 0;
		return 1;
	}
	if (q->n != a->n_types)
		return 0;
	for (i = 0; i < q->n; i++)
		if (q->v[i] != a->seq[i])
			return 0;
	return 1;
}

/*
 * The entry of kind (and layer type) for the chosen sequence lengths and bsz
 * (0: any): the largest profiled batch size wins, a key with a batch size
 * beats one without, a key with a sequence length beats one without.
 */
static const struct galv_crec *galv_pick(const struct galv_crec *r, size_t n, enum galv_ckind kind, long type,
                                         const struct galv_arch *a, long bsz)
{
	const struct galv_crec *best = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		if (r[i].kind != kind || (kind == GALV_C_LAYER && r[i].type != type))
			continue;
		if (!galv_seq_fits(&r[i].seq, a, kind == GALV_C_LAYER ? type : -1) || (bsz && r[i].bsz != bsz))
			continue;
		if (!best || r[i].bsz > best->bsz || (r[i].bsz == best->bsz && r[i].seq.n > best->seq.n))
			best = &r[i];
	}
	return best;
}

/* The raw total to derive the "other" time from: the largest bsz, then the fewest layers. */
static const struct galv_crec *galv_pick_total(const struct galv_crec *r, size_t n, const struct galv_arch *a,
                                               long bsz)
{
	const struct galv_crec *best = NULL;
	long best_layers = 0;
	size_t i, j;

	for (i = 0; i < n; i++) {
		long layers = 0;

		if (r[i].kind != GALV_C_TOTAL || r[i].layernum.n != a->n_types || !galv_seq_fits(&r[i].seq, a, -1) ||
		    (bsz && r[i].bsz != bsz))
			continue;
		for (j = 0; j < r[i].layernum.n; j++)
			layers += r[i].layernum.v[j];
		if (!best || r[i].bsz > best->bsz || (r[i].bsz == best->bsz && layers < best_layers)) {
			best = &r[i];
			best_layers = layers;
		}
	}
	return best;
}

/* The sequence lengths profiled for a layer type, for messages. */
static void galv_profiled_seqs(const struct galv_crec *r, size_t n, long type, char *buf, size_t cap)
{
	size_t i, j;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		int seen = 0;

		if (r[i].kind != GALV_C_LAYER || r[i].type != type || r[i].seq.n != 1)
			continue;
		for (j = 0; j < i && !seen; j++)
			seen = r[j].kind == GALV_C_LAYER && r[j].type == type && r[j].seq.n == 1 &&
			       r[j].seq.v[0] == r[i].seq.v[0];
		if (!seen)
			galv_append(buf, cap, "%s%ld", buf[0] ? " " : "", r[i].seq.v[0]);
	}
	if (!buf[0])
		snprintf(buf, cap, "none in the keys");
}

/*
 * Forward time of one micro-batch of b samples, fitted as alpha + beta * b
 * (ms) over the batch sizes a profile measured (docs/galvatron.md, "Forward
 * time").  n_points < 2: no fit (one batch size, or --profile-bsz); the
 * caller keeps the per-sample time of the entry it picked.
 */
struct galv_fit {
	size_t n_points;
	long bsz_lo, bsz_hi;
	double alpha_ms, beta_ms;
	double max_residual_pct;
	double negative_alpha_ms; /* < 0: the free fit's intercept, refitted through the origin */
};

/* Most distinct batch sizes one fit reads (Galvatron profiles 1..16). */
#define GALV_MAX_FIT_POINTS 256

/*
 * Least squares of T(b) = b * ms(b) over every batch size profiled for kind
 * (and layer type) at the chosen sequence lengths; per batch size the entry
 * galv_pick would choose (a key with a sequence length beats one without).
 * An intercept below 0 is refitted through the origin: beta = sum bT / sum b^2.
 */
static void galv_fit_batch(const struct galv_crec *r, size_t n, enum galv_ckind kind, long type,
                           const struct galv_arch *a, struct galv_fit *f)
{
	const struct galv_crec *pt[GALV_MAX_FIT_POINTS];
	double sb = 0, st = 0, sbb = 0, sbt = 0, mb, mt, var = 0, cov = 0;
	size_t i, j, m = 0;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < n; i++) {
		if (r[i].kind != kind || (kind == GALV_C_LAYER && r[i].type != type) || r[i].bsz < 1 ||
		    !galv_seq_fits(&r[i].seq, a, kind == GALV_C_LAYER ? type : -1))
			continue;
		for (j = 0; j < m && pt[j]->bsz != r[i].bsz; j++)
			;
		if (j < m) {
			if (r[i].seq.n > pt[j]->seq.n)
				pt[j] = &r[i];
		} else if (m < GALV_MAX_FIT_POINTS) {
			pt[m++] = &r[i];
		}
	}
	if (m < 2)
		return;
	for (i = 0; i < m; i++) {
		double b = (double)pt[i]->bsz, t = b * pt[i]->ms;

		sb += b;
		st += t;
		sbb += b * b;
		sbt += b * t;
	}
	mb = sb / (double)m;
	mt = st / (double)m;
	for (i = 0; i < m; i++) {
		double b = (double)pt[i]->bsz, t = b * pt[i]->ms;

		var += (b - mb) * (b - mb);
		cov += (b - mb) * (t - mt);
	}
	f->beta_ms = cov / var;
	f->alpha_ms = mt - f->beta_ms * mb;
	if (f->alpha_ms < 0) {
		f->negative_alpha_ms = f->alpha_ms;
		f->alpha_ms = 0;
		f->beta_ms = sbt / sbb;
	}
	if (!(f->beta_ms > 0))
		return; /* a time that falls with the batch: no fit, n_points stays 0 */
	f->n_points = m;
	f->bsz_lo = f->bsz_hi = pt[0]->bsz;
	for (i = 0; i < m; i++) {
		double b = (double)pt[i]->bsz, t = b * pt[i]->ms;
		double res = t > 0 ? fabs(f->alpha_ms + f->beta_ms * b - t) / t * 100.0 : 0;

		if (res > f->max_residual_pct)
			f->max_residual_pct = res;
		if (pt[i]->bsz < f->bsz_lo)
			f->bsz_lo = pt[i]->bsz;
		if (pt[i]->bsz > f->bsz_hi)
			f->bsz_hi = pt[i]->bsz;
	}
}

/* One line of the import report for a fit of `what` from keys `keys`. */
static void galv_note_fit(struct galv_report *rep, const char *what, const char *keys, const struct galv_fit *f)
{
	galv_note(rep, "model: forward of %s fitted over %s (bsz %ld..%ld, %zu sizes): alpha %.6g ms + beta %.6g "
	          "ms/sample, max residual %.3g %%\n", what, keys, f->bsz_lo, f->bsz_hi, f->n_points, f->alpha_ms,
	          f->beta_ms, f->max_residual_pct);
	if (f->negative_alpha_ms < 0)
		galv_note(rep, "model: forward of %s: the free fit's alpha %.6g ms is below 0, refitted through the "
		          "origin (alpha 0)\n", what, f->negative_alpha_ms);
}

/*
 * Forward time of every layer type and of the "other" parts: beta in ms per
 * sample (layer_ms, other_ms) and alpha in ms per micro-batch (layer_fixed_ms,
 * other_fixed_ms; 0 without a fit).  bsz (0: any) is --profile-bsz: one batch
 * size, no fit.
 */
static uniap_code galv_times(const struct galv_crec *r, size_t n, const char *file, const struct galv_arch *a,
                             long bsz, double *layer_ms, double *layer_fixed_ms, double *other_ms,
                             double *other_fixed_ms, struct galv_report *rep, struct uniap_err *err)
{
	const struct galv_crec *best, *total;
	struct galv_fit fit;
	long max_type = -1;
	char seqs[256], seqkey[160], what[64], keys[64];
	size_t i, j;
	int any_other = 0;

	for (i = 0; i < n; i++) {
		if (r[i].kind == GALV_C_LAYER && r[i].type > max_type)
			max_type = r[i].type;
		any_other |= r[i].kind == GALV_C_OTHER;
	}
	if ((size_t)(max_type + 1) != a->n_types)
		return err_set(err, UNIAP_E_INVALID, "%s: profiles %ld layer type(s), the config (%s, %s) has %zu", file,
		               max_type + 1, a->name, galv_family_names[a->family], a->n_types);
	for (i = 0; i < a->n_types; i++) {
		best = galv_pick(r, n, GALV_C_LAYER, (long)i, a, bsz);
		if (!best) {
			galv_profiled_seqs(r, n, (long)i, seqs, sizeof(seqs));
			if (bsz)
				return err_set(err, UNIAP_E_NOTFOUND,
				               "%s: layertype_%zu: no entry for seq %ld and bsz %ld (profiled seqs: %s)", file, i,
				               a->seq[i], bsz, seqs);
			return err_set(err, UNIAP_E_NOTFOUND, "%s: layertype_%zu: no entry for seq %ld (profiled seqs: %s)",
			               file, i, a->seq[i], seqs);
		}
		layer_ms[i] = best->ms;
		layer_fixed_ms[i] = 0;
		if (!bsz)
			galv_fit_batch(r, n, GALV_C_LAYER, (long)i, a, &fit);
		if (!bsz && fit.n_points >= 2) {
			layer_ms[i] = fit.beta_ms;
			layer_fixed_ms[i] = fit.alpha_ms;
			snprintf(what, sizeof(what), "layer type %zu", i);
			snprintf(keys, sizeof(keys), "layertype_%zu_bsz<B>", i);
			galv_note_fit(rep, what, keys, &fit);
		} else {
			galv_note(rep, "model: forward of layer type %zu from %s = %.6g ms per sample (one batch size: no "
			          "fixed time)\n", i, best->key, best->ms);
		}
	}
	galv_seq_key(a, seqkey, sizeof(seqkey));
	*other_fixed_ms = 0;
	best = galv_pick(r, n, GALV_C_OTHER, -1, a, bsz);
	if (best) {
		*other_ms = best->ms;
		if (!bsz)
			galv_fit_batch(r, n, GALV_C_OTHER, -1, a, &fit);
		if (!bsz && fit.n_points >= 2) {
			*other_ms = fit.beta_ms;
			*other_fixed_ms = fit.alpha_ms;
			galv_note_fit(rep, "embedding + head (split 1/2 : 1/2)", "layertype_other_bsz<B>", &fit);
		} else {
			galv_note(rep, "model: forward of embedding + head from %s = %.6g ms per sample, split 1/2 : 1/2\n",
			          best->key, best->ms);
		}
		return UNIAP_OK;
	}
	if (any_other)
		return err_set(err, UNIAP_E_NOTFOUND, "%s: layertype_other: no entry for seq %s%s", file, seqkey,
		               bsz ? " and the bsz given" : "");
	/* Galvatron's own rule: other = (T(base) - sum_i n_i * T_i(bsz)) / bsz, clamped
	 * at 0, with T_i(b) = alpha_i + beta_i * b the layers' fitted time (b * t_i
	 * without a fit) */
	total = galv_pick_total(r, n, a, bsz);
	if (!total)
		return err_set(err, UNIAP_E_NOTFOUND,
		               "%s: layertype_other: missing, and no layernum[..] total for seq %s to derive it from", file,
		               seqkey);
	*other_ms = total->ms;
	for (j = 0; j < a->n_types; j++)
		*other_ms -= (double)total->layernum.v[j] * (layer_fixed_ms[j] + (double)total->bsz * layer_ms[j]);
	*other_ms /= (double)total->bsz;
	if (*other_ms < 0)
		*other_ms = 0;
	galv_note(rep, "model: no layertype_other: derived from %s = %.6g ms per sample, split 1/2 : 1/2\n",
	          total->key, *other_ms);
	return UNIAP_OK;
}

/* ----------------------------------------------------------- memory profile */

enum { GALV_PP_OFF, GALV_PP_FIRST, GALV_PP_LAST, GALV_N_OTHER };

static const char *const galv_other_names[GALV_N_OTHER] = { "pp_off", "pp_on_first", "pp_on_last" };

struct galv_mem {
	const cJSON *layer[2][GALV_MAX_TYPES]; /* [sequence parallel][type] */
	const cJSON *other[2][GALV_N_OTHER];
	size_t n_raw;
};

/* A table by TP size in MB: tp (1..65536) -> value, "1" required. */
struct galv_tp_table {
	struct model_tp_value v[MODEL_MAX_TP_ENTRIES];
	size_t n;
};

static int galv_tp_cmp(const void *a, const void *b)
{
	const struct model_tp_value *x = a, *y = b;

	return x->tp - y->tp;
}

static double galv_tp_one(const struct galv_tp_table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].tp == 1)
			return t->v[i].value;
	return 0;
}

/*
 * v (file, path) as MB by TP size: a number (allow_number: TP size 1) or an
 * object {<tp>: MB} that has "1"; with ckpt, the object's "checkpoint" member
 * goes to *ckpt (*has_ckpt = 1).
 */
static uniap_code galv_read_tp(const cJSON *v, const char *file, const char *path, int allow_number,
                               struct galv_tp_table *t, double *ckpt, int *has_ckpt, struct uniap_err *err)
{
	const cJSON *c;
	char key[320];
	uniap_code rc;

	t->n = 0;
	if (allow_number && cJSON_IsNumber(v)) {
		t->v[0].tp = 1;
		t->n = 1;
		return galv_number(v, file, path, GALV_GE0, GALV_MAX_MB, &t->v[0].value, err);
	}
	if (allow_number && !cJSON_IsObject(v))
		return err_set(err, UNIAP_E_INVALID, "%s: %s: must be a number or an object by TP size, got %s", file,
		               path, jdec_type_name(v));
	if ((rc = galv_check_object(v, file, path, err)) != UNIAP_OK)
		return rc;
	for (c = v->child; c; c = c->next) {
		const char *p = c->string;
		long tp = 0;

		snprintf(key, sizeof(key), "%s.%.64s", path, c->string);
		if (ckpt && strcmp(c->string, "checkpoint") == 0) {
			if ((rc = galv_number(c, file, key, GALV_GE0, GALV_MAX_MB, ckpt, err)) != UNIAP_OK)
				return rc;
			*has_ckpt = 1;
			continue;
		}
		if (!galv_eat_uint(&p, &tp) || *p != '\0' || tp < 1 || tp > 65536)
			return err_set(err, UNIAP_E_INVALID, "%s: %s: unknown key (expected a TP size 1..65536%s)", file, key,
			               ckpt ? " or checkpoint" : "");
		if (t->n == MODEL_MAX_TP_ENTRIES)
			return err_set(err, UNIAP_E_LIMIT, "%s: %s: more than %d TP sizes", file, path, MODEL_MAX_TP_ENTRIES);
		t->v[t->n].tp = (int)tp;
		if ((rc = galv_number(c, file, key, GALV_GE0, GALV_MAX_MB, &t->v[t->n].value, err)) != UNIAP_OK)
			return rc;
		t->n++;
	}
	qsort(t->v, t->n, sizeof(t->v[0]), galv_tp_cmp);
	if (t->n == 0 || t->v[0].tp != 1)
		return err_set(err, UNIAP_E_INVALID, "%s: %s.1: missing (the TP size 1 entry is required)", file, path);
	return UNIAP_OK;
}

/* Only allowed keys in obj (file, path). */
static uniap_code galv_only_keys(const cJSON *obj, const char *file, const char *path, const char *k1,
                                 const char *k2, struct uniap_err *err)
{
	const cJSON *c;

	for (c = obj->child; c; c = c->next)
		if (strcmp(c->string, k1) != 0 && strcmp(c->string, k2) != 0)
			return err_set(err, UNIAP_E_INVALID, "%s: %s.%.64s: unknown key (expected %s and %s)", file, path,
			               c->string, k1, k2);
	return UNIAP_OK;
}

/* A required member of obj. */
static uniap_code galv_required(const cJSON *obj, const char *file, const char *path, const char *key,
                                const cJSON **out, struct uniap_err *err)
{
	*out = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!*out)
		return err_set(err, UNIAP_E_INVALID, "%s: %s.%s: missing", file, path, key);
	return UNIAP_OK;
}

/* Raw per-strategy measurements: an object of numbers (checked, not used). */
static uniap_code galv_check_raw(const cJSON *v, const char *file, const char *key, struct uniap_err *err)
{
	const cJSON *c;
	char path[320];
	uniap_code rc;

	if ((rc = galv_check_object(v, file, key, err)) != UNIAP_OK)
		return rc;
	for (c = v->child; c; c = c->next) {
		snprintf(path, sizeof(path), "%s.%.128s", key, c->string);
		if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble))
			return err_set(err, UNIAP_E_INVALID, "%s: %s: must be a finite number, got %s", file, path,
			               jdec_type_name(c));
	}
	return UNIAP_OK;
}

static uniap_code galv_read_memory(const cJSON *mem, const char *file, struct galv_mem *m, struct uniap_err *err)
{
	const cJSON *c;
	uniap_code rc;

	memset(m, 0, sizeof(*m));
	if ((rc = galv_check_object(mem, file, NULL, err)) != UNIAP_OK)
		return rc;
	for (c = mem->child; c; c = c->next) {
		const char *p = c->string;
		long t = 0, x = 0;
		int which;

		if (galv_eat(&p, "layertype_")) {
			if (galv_eat_uint(&p, &t) && t < GALV_MAX_TYPES) {
				int sp = galv_eat(&p, "_sp");

				if (*p == '\0') {
					m->layer[sp][t] = c;
					continue;
				}
			}
		} else if (galv_eat(&p, "other_memory_")) {
			for (which = 0; which < GALV_N_OTHER; which++)
				if (galv_eat(&p, galv_other_names[which]))
					break;
			if (which < GALV_N_OTHER) {
				int sp = galv_eat(&p, "_sp");

				if (*p == '\0') {
					m->other[sp][which] = c;
					continue;
				}
			}
		} else if (galv_eat_uint(&p, &x) && galv_eat(&p, "_") && galv_eat_uint(&p, &x) && galv_eat(&p, "_") &&
		           galv_eat_uint(&p, &x)) {
			(void)(galv_eat(&p, "_c") + galv_eat(&p, "_vtp") + galv_eat(&p, "_sp"));
			if (*p == '\0') {
				if ((rc = galv_check_raw(c, file, c->string, err)) != UNIAP_OK)
					return rc;
				m->n_raw++;
				continue;
			}
		}
		return err_set(err, UNIAP_E_INVALID,
		               "%s: %.128s: unknown key (expected layertype_<i>[_sp], "
		               "other_memory_<pp_off|pp_on_first|pp_on_last>[_sp] or <pp>_<tp>_<dp>[_c][_vtp][_sp])",
		               file, c->string);
	}
	return UNIAP_OK;
}

/*
 * v (file, key) is one entry (it has the member marker) or a map from sequence
 * length to entries; *entry is the one for seqkey, *path names it.
 */
static uniap_code galv_seq_entry(const cJSON *v, const char *file, const char *key, const char *marker,
                                 const char *seqkey, const cJSON **entry, char *path, size_t cap,
                                 struct uniap_err *err)
{
	char have[256] = "";
	const cJSON *c;
	uniap_code rc;

	if ((rc = galv_check_object(v, file, key, err)) != UNIAP_OK)
		return rc;
	if (cJSON_GetObjectItemCaseSensitive(v, marker)) {
		snprintf(path, cap, "%s", key);
		*entry = v;
		return UNIAP_OK;
	}
	for (c = v->child; c; c = c->next) {
		const char *p = c->string;
		struct galv_seq q;
		long s;

		if (!(p[0] == '[' ? galv_eat_list(&p, &q) : galv_eat_uint(&p, &s)) || *p != '\0')
			return err_set(err, UNIAP_E_INVALID, "%s: %s.%.64s: unknown key (expected %s or a sequence length)",
			               file, key, c->string, marker);
		galv_append(have, sizeof(have), "%s%s", have[0] ? " " : "", c->string);
	}
	*entry = cJSON_GetObjectItemCaseSensitive(v, seqkey);
	if (!*entry)
		return err_set(err, UNIAP_E_NOTFOUND, "%s: %s: no entry for sequence length %s (profiled: %s)", file, key,
		               seqkey, have[0] ? have : "none");
	snprintf(path, cap, "%s.%s", key, seqkey);
	return UNIAP_OK;
}

/* One layer type's memory: parameter MB (fp32), activation MB per sample by TP size, checkpoint MB. */
struct galv_layer_mem {
	double param_mb;
	struct galv_tp_table act;
	double ckpt_mb;
	int has_ckpt;
};

static uniap_code galv_layer_mem(const cJSON *v, const char *file, const char *key, long seq,
                                 struct galv_layer_mem *lm, struct uniap_err *err)
{
	const cJSON *e, *x;
	char seqkey[32], path[200], sub[260];
	uniap_code rc;

	memset(lm, 0, sizeof(*lm));
	snprintf(seqkey, sizeof(seqkey), "%ld", seq);
	if ((rc = galv_seq_entry(v, file, key, "parameter_size", seqkey, &e, path, sizeof(path), err)) != UNIAP_OK)
		return rc;
	if ((rc = galv_check_object(e, file, path, err)) != UNIAP_OK ||
	    (rc = galv_only_keys(e, file, path, "parameter_size", "tp_activation_per_bsz_dict", err)) != UNIAP_OK ||
	    (rc = galv_required(e, file, path, "parameter_size", &x, err)) != UNIAP_OK)
		return rc;
	snprintf(sub, sizeof(sub), "%s.parameter_size", path);
	if ((rc = galv_number(x, file, sub, GALV_GE0, GALV_MAX_MB, &lm->param_mb, err)) != UNIAP_OK)
		return rc;
	if ((rc = galv_required(e, file, path, "tp_activation_per_bsz_dict", &x, err)) != UNIAP_OK)
		return rc;
	snprintf(sub, sizeof(sub), "%s.tp_activation_per_bsz_dict", path);
	return galv_read_tp(x, file, sub, 0, &lm->act, &lm->ckpt_mb, &lm->has_ckpt, err);
}

/* The non-layer memory of one pipeline position: model states and activation per sample, MB by TP size. */
struct galv_other_mem {
	struct galv_tp_table states;
	struct galv_tp_table act;
};

static uniap_code galv_other_mem(const cJSON *v, const char *file, const char *key, const char *seqkey,
                                 struct galv_other_mem *om, struct uniap_err *err)
{
	const cJSON *e, *x;
	char path[200], sub[260];
	uniap_code rc;

	memset(om, 0, sizeof(*om));
	if ((rc = galv_seq_entry(v, file, key, "model_states", seqkey, &e, path, sizeof(path), err)) != UNIAP_OK)
		return rc;
	if ((rc = galv_check_object(e, file, path, err)) != UNIAP_OK ||
	    (rc = galv_only_keys(e, file, path, "model_states", "activation", err)) != UNIAP_OK ||
	    (rc = galv_required(e, file, path, "model_states", &x, err)) != UNIAP_OK)
		return rc;
	snprintf(sub, sizeof(sub), "%s.model_states", path);
	if ((rc = galv_read_tp(x, file, sub, 1, &om->states, NULL, NULL, err)) != UNIAP_OK)
		return rc;
	if ((rc = galv_required(e, file, path, "activation", &x, err)) != UNIAP_OK)
		return rc;
	snprintf(sub, sizeof(sub), "%s.activation", path);
	return galv_read_tp(x, file, sub, 1, &om->act, NULL, NULL, err);
}

/* Picks the plain or "_sp" variant and reads every layer type and the first/last-stage "other" memory. */
static uniap_code galv_memory(const struct galv_mem *m, const char *file, const struct galv_arch *a,
                              int want_sp, struct galv_layer_mem *lm, struct galv_other_mem *first,
                              struct galv_other_mem *last, struct galv_report *rep, struct uniap_err *err)
{
	struct galv_other_mem off;
	char key[64], seqkey[160];
	const char *suffix;
	size_t i, n = 0;
	int sp = want_sp ? 1 : m->layer[0][0] ? 0 : 1;
	uniap_code rc;

	suffix = sp ? "_sp" : "";
	if (!m->layer[sp][0]) {
		if (want_sp)
			return err_set(err, UNIAP_E_NOTFOUND,
			               "%s: layertype_0_sp: missing (no sequence-parallel profile: drop --sequence-parallel)",
			               file);
		return err_set(err, UNIAP_E_NOTFOUND,
		               "%s: layertype_0: missing (only the raw measurements of %zu strategy run(s), no processed "
		               "layertype_<i> entries: Galvatron's memory post-processing was not run)",
		               file, m->n_raw);
	}
	for (i = 0; i < GALV_MAX_TYPES; i++)
		if (m->layer[sp][i])
			n = i + 1;
	if (n != a->n_types)
		return err_set(err, UNIAP_E_INVALID, "%s: profiles %zu layer type(s), the config (%s, %s) has %zu", file,
		               n, a->name, galv_family_names[a->family], a->n_types);
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "layertype_%zu%s", i, suffix);
		if (!m->layer[sp][i])
			return err_set(err, UNIAP_E_INVALID, "%s: %s: missing", file, key);
		if ((rc = galv_layer_mem(m->layer[sp][i], file, key, a->seq[i], &lm[i], err)) != UNIAP_OK)
			return rc;
	}
	galv_seq_key(a, seqkey, sizeof(seqkey));
	for (i = 0; i < GALV_N_OTHER; i++) {
		struct galv_other_mem *om = i == GALV_PP_FIRST ? first : i == GALV_PP_LAST ? last : &off;

		snprintf(key, sizeof(key), "other_memory_%s%s", galv_other_names[i], suffix);
		if (!m->other[sp][i]) {
			if (i == GALV_PP_OFF)
				continue; /* not used: the split comes from the pp_on entries */
			return err_set(err, UNIAP_E_INVALID, "%s: %s: missing", file, key);
		}
		if ((rc = galv_other_mem(m->other[sp][i], file, key, seqkey, om, err)) != UNIAP_OK)
			return rc;
	}
	galv_note(rep, "model: memory from layertype_<i>%s and other_memory_pp_on_first/last%s (%s variant)\n",
	          suffix, suffix, sp ? "sequence-parallel" : "plain");
	return UNIAP_OK;
}

/* ------------------------------------------------------- model document */

struct galv_type_out {
	const char *name;
	double forward_s;
	double forward_fixed_s; /* alpha of the fit; 0: not written */
	double parameters;
	const struct galv_tp_table *act_mb;
	double output_bytes;
	double checkpoint_bytes;
	int tp_allreduces;
};

static int galv_add_type(cJSON *types, const struct galv_type_out *t)
{
	cJSON *o = cJSON_CreateObject(), *act;
	char tp[16];
	size_t i;
	int ok;

	if (!o || !cJSON_AddItemToArray(types, o)) {
		cJSON_Delete(o);
		return 0;
	}
	ok = cJSON_AddStringToObject(o, "name", t->name) && jenc_add_num(o, "forward_s_per_sample", t->forward_s) &&
	     (t->forward_fixed_s == 0 || jenc_add_num(o, "forward_fixed_s", t->forward_fixed_s)) &&
	     jenc_add_num(o, "parameters", t->parameters);
	act = ok ? cJSON_AddObjectToObject(o, "activation_bytes_per_sample") : NULL;
	ok = act != NULL;
	for (i = 0; ok && i < t->act_mb->n; i++) {
		snprintf(tp, sizeof(tp), "%d", t->act_mb->v[i].tp);
		ok = jenc_add_num(act, tp, t->act_mb->v[i].value * GALV_MIB);
	}
	return ok && jenc_add_num(o, "output_bytes_per_sample", t->output_bytes) &&
	       jenc_add_num(o, "checkpoint_bytes_per_sample", t->checkpoint_bytes) &&
	       jenc_add_num(o, "tp_allreduces_per_pass", t->tp_allreduces);
}

static int galv_add_layer(cJSON *layers, const char *name, const char *type, long repeat)
{
	cJSON *l = cJSON_CreateObject();

	if (!l || !cJSON_AddItemToArray(layers, l)) {
		cJSON_Delete(l);
		return 0;
	}
	return cJSON_AddStringToObject(l, "name", name) && cJSON_AddStringToObject(l, "type", type) &&
	       (repeat == 0 || jenc_add_num(l, "repeat", (double)repeat));
}

static int galv_add_edge(cJSON *edges, const char *from, const char *to)
{
	cJSON *e = cJSON_CreateArray();

	if (!e || !cJSON_AddItemToArray(edges, e)) {
		cJSON_Delete(e);
		return 0;
	}
	return cJSON_AddItemToArray(e, cJSON_CreateString(from)) && cJSON_AddItemToArray(e, cJSON_CreateString(to));
}

/* T5: embed -> enc chain; embed -> dec.0; the last encoder layer -> every decoder layer; dec chain -> head. */
static int galv_t5_edges(cJSON *graph, const struct galv_arch *a)
{
	cJSON *edges = cJSON_AddArrayToObject(graph, "edges");
	char from[48], to[48];
	long i;
	int ok = edges != NULL;

	ok = ok && galv_add_edge(edges, "embed", "enc.0") && galv_add_edge(edges, "embed", "dec.0");
	for (i = 0; ok && i + 1 < a->layers[0]; i++) {
		snprintf(from, sizeof(from), "enc.%ld", i);
		snprintf(to, sizeof(to), "enc.%ld", i + 1);
		ok = galv_add_edge(edges, from, to);
	}
	snprintf(from, sizeof(from), "enc.%ld", a->layers[0] - 1);
	for (i = 0; ok && i < a->layers[1]; i++) {
		snprintf(to, sizeof(to), "dec.%ld", i);
		ok = galv_add_edge(edges, from, to);
	}
	for (i = 0; ok && i + 1 < a->layers[1]; i++) {
		char f2[48];

		snprintf(f2, sizeof(f2), "dec.%ld", i);
		snprintf(to, sizeof(to), "dec.%ld", i + 1);
		ok = galv_add_edge(edges, f2, to);
	}
	snprintf(from, sizeof(from), "dec.%ld", a->layers[1] - 1);
	return ok && galv_add_edge(edges, from, "head");
}

/* Everything the document is made of, in uniap units. */
struct galv_model_parts {
	const struct galv_arch *arch;
	int mixed;
	double elem_bytes;
	double layer_ms[GALV_MAX_TYPES];       /* beta: ms per sample */
	double layer_fixed_ms[GALV_MAX_TYPES]; /* alpha: ms per micro-batch, 0 without a fit */
	struct galv_layer_mem lm[GALV_MAX_TYPES];
	double other_ms;
	double other_fixed_ms;
	struct galv_other_mem first;
	struct galv_other_mem last;
};

static const char *galv_layer_type_name(const struct galv_arch *a, size_t i, char *buf, size_t cap)
{
	switch (a->family) {
	case GALV_SWIN:
		snprintf(buf, cap, "swin_stage%zu", i);
		break;
	case GALV_T5:
		snprintf(buf, cap, "%s", i == 0 ? "t5_encoder_layer" : "t5_decoder_layer");
		break;
	default:
		snprintf(buf, cap, "%s_layer", galv_family_names[a->family]);
		break;
	}
	return buf;
}

static cJSON *galv_model_doc(const struct galv_model_parts *mp)
{
	const struct galv_arch *a = mp->arch;
	struct galv_type_out t;
	cJSON *doc = cJSON_CreateObject(), *types, *graph, *layers;
	char name[MODEL_MAX_NAME + 1], tname[48], lname[48];
	/* Galvatron's EmbeddingLMHeadTimeCostModel: half of the "other" time each */
	double other_s = mp->other_ms / 2 / 1000.0;
	size_t i;
	int ok;

	if (other_s < GALV_MIN_FORWARD_S)
		other_s = GALV_MIN_FORWARD_S;
	if (a->family == GALV_SWIN)
		snprintf(name, sizeof(name), "%s", a->name);
	else
		snprintf(name, sizeof(name), "%s-seq%ld", a->name, a->seq[0]);
	ok = doc && cJSON_AddStringToObject(doc, "name", name) &&
	     cJSON_AddStringToObject(doc, "precision", mp->mixed ? "mixed" : "fp32") &&
	     cJSON_AddStringToObject(doc, "optimizer", "adam");
	types = ok ? cJSON_AddArrayToObject(doc, "layer_types") : NULL;
	ok = types != NULL;
	/* embedding: the first pipeline stage's non-layer part */
	t.name = "embedding";
	t.forward_s = other_s;
	t.forward_fixed_s = mp->other_fixed_ms / 2 / 1000.0;
	t.parameters = floor(galv_tp_one(&mp->first.states) * GALV_MIB / GALV_STATE_BYTES_PER_PARAM + 0.5);
	t.act_mb = &mp->first.act;
	t.output_bytes = (double)a->seq[0] * (double)a->hidden[0] * mp->elem_bytes;
	t.checkpoint_bytes = galv_tp_one(&mp->first.act) * GALV_MIB;
	t.tp_allreduces = 1;
	ok = ok && galv_add_type(types, &t);
	for (i = 0; ok && i < a->n_types; i++) {
		double f = mp->layer_ms[i] / 1000.0;

		t.name = galv_layer_type_name(a, i, tname, sizeof(tname));
		t.forward_s = f < GALV_MIN_FORWARD_S ? GALV_MIN_FORWARD_S : f;
		t.forward_fixed_s = mp->layer_fixed_ms[i] / 1000.0;
		t.parameters = floor(mp->lm[i].param_mb * GALV_MIB / GALV_PARAM_SIZE_BYTES_PER_PARAM + 0.5);
		t.act_mb = &mp->lm[i].act;
		t.output_bytes = (double)a->seq[i] * (double)a->hidden[i] * mp->elem_bytes;
		t.checkpoint_bytes = mp->lm[i].has_ckpt ? mp->lm[i].ckpt_mb * GALV_MIB : t.output_bytes;
		t.tp_allreduces = a->family == GALV_T5 && i == 1 ? 3 : 2;
		ok = galv_add_type(types, &t);
	}
	/* head: the last pipeline stage's non-layer part; its output is the loss */
	t.name = "head";
	t.forward_s = other_s;
	t.forward_fixed_s = mp->other_fixed_ms / 2 / 1000.0;
	t.parameters = floor(galv_tp_one(&mp->last.states) * GALV_MIB / GALV_STATE_BYTES_PER_PARAM + 0.5);
	t.act_mb = &mp->last.act;
	t.output_bytes = 4;
	t.checkpoint_bytes = galv_tp_one(&mp->last.act) * GALV_MIB;
	t.tp_allreduces = 1;
	ok = ok && galv_add_type(types, &t);
	graph = ok ? cJSON_AddObjectToObject(doc, "graph") : NULL;
	layers = graph ? cJSON_AddArrayToObject(graph, "layers") : NULL;
	ok = layers && galv_add_layer(layers, "embed", "embedding", 0);
	for (i = 0; ok && i < a->n_types; i++) {
		if (a->family == GALV_SWIN)
			snprintf(lname, sizeof(lname), "stage%zu", i);
		else if (a->family == GALV_T5)
			snprintf(lname, sizeof(lname), "%s", i == 0 ? "enc" : "dec");
		else
			snprintf(lname, sizeof(lname), "layer");
		ok = galv_add_layer(layers, lname, galv_layer_type_name(a, i, tname, sizeof(tname)), a->layers[i]);
	}
	ok = ok && galv_add_layer(layers, "head", "head", 0);
	if (ok && a->family == GALV_T5)
		ok = galv_t5_edges(graph, a);
	if (ok && a->vocab > 0 && a->hidden[0] % a->heads[0] == 0) {
		/* model.shape (schema/model.schema.json): GPT-2 (HuggingFace), Llama (Meta) and BERT */
		cJSON *sh = cJSON_AddObjectToObject(doc, "shape");
		int llama = a->family == GALV_LLAMA;

		ok = sh && cJSON_AddBoolToObject(sh, "encoder", a->family == GALV_BERT) &&
		     cJSON_AddNumberToObject(sh, "layers", (double)a->layers[0]) &&
		     cJSON_AddNumberToObject(sh, "hidden", (double)a->hidden[0]) &&
		     cJSON_AddNumberToObject(sh, "heads", (double)a->heads[0]) &&
		     cJSON_AddNumberToObject(sh, "ffn_hidden", (double)a->ffn_hidden) &&
		     cJSON_AddNumberToObject(sh, "seq_len", (double)a->seq[0]) &&
		     cJSON_AddNumberToObject(sh, "vocab", (double)a->vocab) &&
		     cJSON_AddStringToObject(sh, "mlp", llama ? "swiglu" : "gelu") &&
		     cJSON_AddStringToObject(sh, "norm", llama ? "rmsnorm" : "layernorm") &&
		     cJSON_AddStringToObject(sh, "positions", llama ? "rotary" : "learned") &&
		     cJSON_AddBoolToObject(sh, "biases", !llama) && cJSON_AddBoolToObject(sh, "tied_embeddings", !llama);
	}
	if (!ok) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

uniap_code galv_model_json(const struct galv_model_input *in, cJSON **out, struct galv_report *rep,
                           struct uniap_err *err)
{
	struct galv_arch arch;
	struct galv_model_parts *mp = NULL;
	struct galv_crec *recs = NULL;
	struct galv_mem mem;
	size_t n_recs = 0, i;
	cJSON *doc = NULL;
	uniap_code rc;

	if (!out || !in || !in->config || !in->config_name || !in->computation || !in->computation_name ||
	    !in->memory || !in->memory_name || !in->precision)
		return err_set(err, UNIAP_E_ARG, "galv_model_json: missing argument");
	*out = NULL;
	if (in->seq < 0 || in->seq > GALV_MAX_INT || in->bsz < 0 || in->bsz > GALV_MAX_INT)
		return err_set(err, UNIAP_E_ARG, "--seq and --profile-bsz must be >= 1");
	mp = calloc(1, sizeof(*mp));
	if (!mp)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	if (strcmp(in->precision, "bf16") == 0 || strcmp(in->precision, "fp16") == 0) {
		mp->mixed = 1;
		mp->elem_bytes = 2;
	} else if (strcmp(in->precision, "fp32") == 0) {
		mp->elem_bytes = 4;
	} else {
		rc = err_set(err, UNIAP_E_INVALID, "%s: precision must be bf16, fp16 or fp32, got \"%.16s\"",
		             in->computation_name, in->precision);
		goto out;
	}
	if ((rc = galv_arch_read(in->config, in->config_name, in->seq, &arch, err)) != UNIAP_OK)
		goto out;
	mp->arch = &arch;
	galv_note(rep, "model: %s (%s, %zu layer type(s)), sequence length", arch.name, galv_family_names[arch.family],
	          arch.n_types);
	for (i = 0; i < arch.n_types; i++)
		galv_note(rep, " %ld", arch.seq[i]);
	galv_note(rep, ", precision %s\n", in->precision);
	if ((rc = galv_read_computation(in->computation, in->computation_name, &recs, &n_recs, err)) != UNIAP_OK)
		goto out;
	if ((rc = galv_times(recs, n_recs, in->computation_name, &arch, in->bsz, mp->layer_ms, mp->layer_fixed_ms,
	                     &mp->other_ms, &mp->other_fixed_ms, rep,
	                     err)) != UNIAP_OK)
		goto out;
	if ((rc = galv_read_memory(in->memory, in->memory_name, &mem, err)) != UNIAP_OK)
		goto out;
	if ((rc = galv_memory(&mem, in->memory_name, &arch, in->sequence_parallel, mp->lm, &mp->first, &mp->last,
	                      rep, err)) != UNIAP_OK)
		goto out;
	doc = galv_model_doc(mp);
	if (!doc) {
		rc = err_set(err, UNIAP_E_NOMEM, "out of memory");
		goto out;
	}
	rc = galv_check_doc(doc, 1, err);
	if (rc != UNIAP_OK) {
		err_prefix(err, "%s: the imported model breaks a rule", in->memory_name);
		goto out;
	}
	*out = doc;
	doc = NULL;
out:
	cJSON_Delete(doc);
	free(recs);
	free(mp);
	return rc;
}

/* ------------------------------------------------------- profile lookup */

#define GALV_PREC_MAX 8
#define GALV_SUFFIX_MAX 256

/* "<kind>_profiling_<bf16|fp16|fp32>_<suffix>.json" -> prec, suffix. */
static int galv_parse_profile_name(const char *name, const char *kind, char *prec, char *suffix)
{
	static const char *const precs[] = { "bf16", "fp16", "fp32" };
	const char *p = name;
	size_t i, len;

	if (!galv_eat(&p, kind) || !galv_eat(&p, "_profiling_"))
		return 0;
	for (i = 0; i < 3; i++)
		if (galv_eat(&p, precs[i]))
			break;
	if (i == 3 || !galv_eat(&p, "_"))
		return 0;
	len = strlen(p);
	if (len <= 5 || len - 5 >= GALV_SUFFIX_MAX || strcmp(p + len - 5, ".json") != 0)
		return 0;
	snprintf(prec, GALV_PREC_MAX, "%s", precs[i]);
	memcpy(suffix, p, len - 5);
	suffix[len - 5] = '\0';
	return 1;
}

/*
 * Does a profile suffix fit the config?  "hidden<H>_head<N>[_seqlen<S>]" must
 * match the hidden size and heads (of the first layer type) and the chosen
 * sequence length; any other suffix is a model name that must equal the
 * config's file name or prefix it up to a '-' ("swin-huge" for
 * swin-huge-patch4-window7-224.json).  Returns 0 (no), 1 (yes), 2 (yes, with
 * a matching seqlen: preferred).
 */
static int galv_profile_fits(const char *suffix, const struct galv_arch *a)
{
	const char *p = suffix;
	long h = 0, n = 0, s = 0;
	size_t len;

	if (galv_eat(&p, "hidden") && galv_eat_uint(&p, &h) && galv_eat(&p, "_head") && galv_eat_uint(&p, &n)) {
		if (galv_eat(&p, "_seqlen") && !galv_eat_uint(&p, &s))
			return 0;
		if (*p != '\0' || h != a->hidden[0] || n != a->heads[0])
			return 0;
		if (s)
			return s == a->seq[0] ? 2 : 0;
		return 1;
	}
	len = strlen(suffix);
	return strncmp(a->name, suffix, len) == 0 && (a->name[len] == '\0' || a->name[len] == '-');
}

/* Finds the computation + memory pair of dir that fits a; fills both paths and the precision. */
static uniap_code galv_find_profile(const char *dir, const struct galv_arch *a, char *comp_path, char *mem_path,
                                    char *prec, struct uniap_err *err)
{
	struct galv_names d = { 0 };
	char suffix[GALV_SUFFIX_MAX], p[GALV_PREC_MAX], best_suffix[GALV_SUFFIX_MAX] = "", best_prec[GALV_PREC_MAX] = "";
	char seen[512] = "", tied[512] = "", name[GALV_SUFFIX_MAX + 64];
	int best = 0, n_best = 0;
	size_t i;
	uniap_code rc;

	if ((rc = galv_list_dir(dir, &d, err)) != UNIAP_OK)
		return rc;
	for (i = 0; i < d.n; i++) {
		int fit;

		if (!galv_parse_profile_name(d.v[i], "computation", p, suffix))
			continue;
		galv_append(seen, sizeof(seen), "%s%s_%s", seen[0] ? ", " : "", p, suffix);
		fit = galv_profile_fits(suffix, a);
		if (fit == 0 || fit < best)
			continue;
		if (fit > best) {
			best = fit;
			n_best = 0;
			tied[0] = '\0';
		}
		n_best++;
		galv_append(tied, sizeof(tied), "%s%s", tied[0] ? ", " : "", d.v[i]);
		snprintf(best_suffix, sizeof(best_suffix), "%s", suffix);
		snprintf(best_prec, sizeof(best_prec), "%s", p);
	}
	if (best == 0) {
		rc = err_set(err, UNIAP_E_NOTFOUND,
		             "%s: no profile fits %s (%s, hidden %ld, heads %ld, seq %ld); profiles here: %s", dir, a->name,
		             galv_family_names[a->family], a->hidden[0], a->heads[0], a->seq[0], seen[0] ? seen : "none");
		goto out;
	}
	if (n_best > 1) {
		rc = err_set(err, UNIAP_E_ARG, "%s: several profiles fit %s (%s): pick one with --computation and --memory",
		             dir, a->name, tied);
		goto out;
	}
	snprintf(name, sizeof(name), "computation_profiling_%s_%s.json", best_prec, best_suffix);
	if ((rc = galv_join(comp_path, dir, name, err)) != UNIAP_OK)
		goto out;
	snprintf(name, sizeof(name), "memory_profiling_%s_%s.json", best_prec, best_suffix);
	if (!galv_names_has(&d, name)) {
		rc = err_set(err, UNIAP_E_NOTFOUND, "%s: %s: missing (the memory partner of computation_profiling_%s_%s.json)",
		             dir, name, best_prec, best_suffix);
		goto out;
	}
	if ((rc = galv_join(mem_path, dir, name, err)) != UNIAP_OK)
		goto out;
	snprintf(prec, GALV_PREC_MAX, "%s", best_prec);
out:
	galv_names_release(&d);
	return rc;
}

uniap_code galv_import_model(const struct galv_model_opts *o, cJSON **out, struct galv_report *rep,
                             struct uniap_err *err)
{
	struct galv_model_input in = { 0 };
	struct galv_arch arch;
	char comp_path[GALV_PATH_MAX], mem_path[GALV_PATH_MAX], prec[GALV_PREC_MAX], suffix[GALV_SUFFIX_MAX];
	cJSON *cfg = NULL, *comp = NULL, *mem = NULL;
	uniap_code rc;

	if (!out || !o)
		return err_set(err, UNIAP_E_ARG, "galv_import_model: missing argument");
	*out = NULL;
	if (!o->config_path)
		return err_set(err, UNIAP_E_ARG, "--config: required");
	if (!o->computation_path != !o->memory_path)
		return err_set(err, UNIAP_E_ARG, "--computation and --memory: give both or neither");
	if (!o->dir && !o->computation_path)
		return err_set(err, UNIAP_E_ARG, "--model-dir DIR (or --computation and --memory): required");
	if ((rc = galv_load(o->config_path, &cfg, err)) != UNIAP_OK)
		goto out;
	if ((rc = galv_arch_read(cfg, o->config_path, o->seq, &arch, err)) != UNIAP_OK)
		goto out;
	if (o->computation_path) {
		if (!galv_parse_profile_name(galv_basename(o->computation_path), "computation", prec, suffix)) {
			rc = err_set(err, UNIAP_E_ARG,
			             "%s: the name does not tell the precision (expected computation_profiling_<bf16|fp16|fp32>_*.json)",
			             o->computation_path);
			goto out;
		}
		if (strlen(o->computation_path) >= GALV_PATH_MAX || strlen(o->memory_path) >= GALV_PATH_MAX) {
			rc = err_set(err, UNIAP_E_LIMIT, "path longer than %d bytes", GALV_PATH_MAX - 1);
			goto out;
		}
		snprintf(comp_path, sizeof(comp_path), "%s", o->computation_path);
		snprintf(mem_path, sizeof(mem_path), "%s", o->memory_path);
	} else if ((rc = galv_find_profile(o->dir, &arch, comp_path, mem_path, prec, err)) != UNIAP_OK) {
		goto out;
	}
	if ((rc = galv_load(comp_path, &comp, err)) != UNIAP_OK || (rc = galv_load(mem_path, &mem, err)) != UNIAP_OK)
		goto out;
	galv_note(rep, "model: files %s, %s, %s\n", galv_basename(o->config_path), galv_basename(comp_path),
	          galv_basename(mem_path));
	in.config = cfg;
	in.config_name = o->config_path;
	in.computation = comp;
	in.computation_name = comp_path;
	in.memory = mem;
	in.memory_name = mem_path;
	in.precision = prec;
	in.seq = o->seq;
	in.bsz = o->bsz;
	in.sequence_parallel = o->sequence_parallel;
	rc = galv_model_json(&in, out, rep, err);
out:
	cJSON_Delete(cfg);
	cJSON_Delete(comp);
	cJSON_Delete(mem);
	return rc;
}
