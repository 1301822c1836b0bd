/*
 * jdecode.h - decoding the cluster profile, model profile and plan documents
 * from JSON (the schema/ documents) into the structs of core/.
 *
 * The decoder checks JSON types, integrality, finiteness, enums, unknown and
 * duplicate keys, nesting depth and array caps, resolves names (layer types,
 * edge endpoints), expands "repeat", then calls cluster_validate() /
 * model_validate() for every other rule.  Every message starts with the path
 * of the field at fault ("cluster.hierarchy[1].devices: must divide 16, got
 * 6"), rooted at the caller's path prefix ("cluster", or "body.cluster" for a
 * document embedded in a request body).
 *
 * Result codes: UNIAP_E_MALFORMED for bad JSON syntax ("cluster: malformed
 * json at byte N"), UNIAP_E_LIMIT for a size cap (nesting deeper than
 * JDEC_MAX_DEPTH, arrays over the MODEL_MAX_* caps), UNIAP_E_INVALID for a
 * broken rule, UNIAP_E_NOMEM, UNIAP_E_IO (files), UNIAP_E_ARG (NULL args).
 *
 * Ownership: text and cJSON trees are borrowed.  *out is overwritten (not
 * released first); on success the caller owns it and frees it with
 * cluster_release() / model_release() / plan_doc_release(); on failure it has
 * been released and zeroed.
 *
 * Never: print, exit, or keep state between calls (thread-safe apart from
 * cJSON's own global error pointer, which this module never reads).
 */
#ifndef UNIAP_JDECODE_H
#define UNIAP_JDECODE_H

#include <stddef.h>

#include "err.h"
#include "model.h"
#include "plan.h"

struct cJSON;

/* Containers (objects, arrays) nested deeper than this are refused (UNIAP_E_LIMIT). */
#define JDEC_MAX_DEPTH 64
/* Longest path in a message; longer ones are truncated. */
#define JDEC_PATH_MAX 256

/*
 * Reads the file at path (borrowed) into a new NUL-terminated buffer:
 * *out_text (owned by the caller, free()) and *out_len (without the NUL).
 * UNIAP_E_IO naming path when it cannot be read, UNIAP_E_LIMIT when it holds
 * more than max_bytes bytes.  On failure *out_text is NULL.
 */
uniap_code jdec_read_file(const char *path, size_t max_bytes, char **out_text, size_t *out_len,
                          struct uniap_err *err);

/*
 * Parses len bytes of text (borrowed; need not be NUL-terminated) as one JSON
 * value with nothing but whitespace after it, and refuses nesting deeper than
 * JDEC_MAX_DEPTH.  Messages start with path (borrowed).  On success the caller
 * owns *out and frees it with cJSON_Delete(); on failure *out is NULL.
 */
uniap_code jdec_parse(const char *text, size_t len, const char *path, struct cJSON **out,
                      struct uniap_err *err);

/* Decodes a cluster profile from JSON text (borrowed), messages rooted at "cluster". */
uniap_code jdec_cluster(const char *text, size_t len, struct cluster_profile *out, struct uniap_err *err);

/* Decodes a model profile from JSON text (borrowed), messages rooted at "model". */
uniap_code jdec_model(const char *text, size_t len, struct model_profile *out, struct uniap_err *err);

/* Decodes a plan document from JSON text (borrowed), messages rooted at "plan". */
uniap_code jdec_plan(const char *text, size_t len, struct plan_doc *out, struct uniap_err *err);

/*
 * The same from an already parsed value root (borrowed; must be an object),
 * messages rooted at path (borrowed, e.g. "body.cluster"; NULL means the
 * default root).  Messages of cluster_validate()/model_validate() are
 * re-rooted from "cluster"/"model" to path.
 */
uniap_code jdec_cluster_json(const struct cJSON *root, const char *path, struct cluster_profile *out,
                             struct uniap_err *err);
uniap_code jdec_model_json(const struct cJSON *root, const char *path, struct model_profile *out,
                           struct uniap_err *err);
uniap_code jdec_plan_json(const struct cJSON *root, const char *path, struct plan_doc *out,
                          struct uniap_err *err);

/* "object", "array", "string", "number", "boolean", "null" or "invalid": the
 * JSON type of v (borrowed), for error messages. */
const char *jdec_type_name(const struct cJSON *v);

#endif
