/*
 * jdec_int.h - jdecode.c's field readers, shared with the other decoders of
 * json/ (runs.c) so every document checks types, ranges, unknown and
 * duplicate keys the same way and names paths alike.  Internal to json/:
 * the CLI and the service use jdecode.h and the decoders' own headers.
 *
 * Conventions: path and key arguments are borrowed; a path buffer is
 * JDEC_PATH_MAX bytes; messages start with the field's path.  Strings
 * returned through const char ** are borrowed from the cJSON tree; char **
 * results are new (free()).  Thread-safe: no state.
 *
 * Never: print, exit, keep state.
 */
#ifndef UNIAP_JDEC_INT_H
#define UNIAP_JDEC_INT_H

#include <stddef.h>

#include "err.h"

struct cJSON;

/* buf = "base.key" / "base[i]" (truncated with "..."); returns buf. */
const char *jdec_pkey(char *buf, const char *base, const char *key);
const char *jdec_pidx(char *buf, const char *base, size_t i);

/* root nests no deeper than JDEC_MAX_DEPTH (UNIAP_E_LIMIT naming path). */
uniap_code jdec_check_depth(const struct cJSON *root, const char *path, struct uniap_err *err);

/* obj is an object whose keys are all in allowed or ignored (NULL-ended lists), each once. */
uniap_code jdec_keys(const struct cJSON *obj, const char *path, const char *const *allowed,
                     const char *const *ignored, struct uniap_err *err);

/* Single values at path: a finite number in [lo, hi], an integer in [lo, hi],
 * a string of min_len..max_len bytes, one of names[0..n). */
uniap_code jdec_num_value(const struct cJSON *v, const char *path, double lo, double hi, double *out,
                          struct uniap_err *err);
uniap_code jdec_int_value(const struct cJSON *v, const char *path, long long lo, long long hi, long long *out,
                          struct uniap_err *err);
uniap_code jdec_str_value(const struct cJSON *v, const char *path, size_t min_len, size_t max_len,
                          const char **out, struct uniap_err *err);
uniap_code jdec_enum_value(const struct cJSON *v, const char *path, const char *const *names, size_t n, int *out,
                           struct uniap_err *err);

/* Members obj.key (path of obj): *out NULL when absent and not required; p gets the member's path. */
uniap_code jdec_get(const struct cJSON *obj, const char *key, const char *path, int required, char *p,
                    const struct cJSON **out, struct uniap_err *err);
uniap_code jdec_num(const struct cJSON *obj, const char *key, const char *path, int required, double dflt,
                    double lo, double hi, double *out, struct uniap_err *err);
uniap_code jdec_int(const struct cJSON *obj, const char *key, const char *path, int required, long long dflt,
                    long long lo, long long hi, long long *out, struct uniap_err *err);
/* obj.key, when present, as the name of a runtime (runtime.h) into out (size
 * 32); out stays as it is when absent.  An unknown name is UNIAP_E_INVALID
 * naming the field and the known names. */
uniap_code jdec_runtime(const struct cJSON *obj, const char *key, const char *path, char out[32],
                        struct uniap_err *err);
uniap_code jdec_str(const struct cJSON *obj, const char *key, const char *path, int required, size_t min_len,
                    size_t max_len, char **out, struct uniap_err *err);
uniap_code jdec_arr(const struct cJSON *obj, const char *key, const char *path, int required, size_t min,
                    size_t max, const struct cJSON **out, size_t *n, struct uniap_err *err);
uniap_code jdec_obj(const struct cJSON *obj, const char *key, const char *path, int required,
                    const char *const *allowed, const struct cJSON **out, struct uniap_err *err);

/* obj.key as a boolean; dflt when absent. */
uniap_code jdec_bool(const struct cJSON *obj, const char *key, const char *path, int dflt, int *out,
                     struct uniap_err *err);
/* v (at path): a catalog model name or an inline model document, into out (caller releases);
 * an unknown name is UNIAP_E_INVALID naming path. */
uniap_code jdec_model_ref(const struct cJSON *v, const char *path, struct model_profile *out,
                          struct uniap_err *err);

/* Rewrites a message rooted at from ("model") to start with to ("runs[2].model"). */
void jdec_reroot(struct uniap_err *err, const char *from, const char *to);

#endif
