/*
 * docref.h - a document named in a request body: a stored id of the tenant
 * (a number, or a string of digits), a catalog name, or the document inline.
 * Job requests (calibration.c, allocation.c) resolve stored ids at
 * submission and store the documents inline, so a job never depends on a
 * document deleted later.
 *
 * Thread safety: as the store.  Never: answer HTTP, keep state.
 */
#ifndef UNIAP_DOCREF_H
#define UNIAP_DOCREF_H

#include <stdint.h>

#include "err.h"

/* Where a request's unknown catalog name can see the names (catalog_unknown's hint). */
#define DOCREF_CATALOG_HINT "GET /v1/catalog describes them"
#include "model.h"
#include "store.h"

struct cJSON;

/* v as a stored id: 1 with *id, 0 when it is no id (a name, a document), -1 a bad id. */
int docref_id(const struct cJSON *v, int64_t *id);

/*
 * obj[key] (obj owned by the caller, changed in place) given as a stored id
 * of kind: replaced by the tenant's document.  A catalog name, an inline
 * document or no member at all is left as it is.  UNIAP_E_NOTFOUND "PATH.KEY:
 * no model with id N" (another tenant's id too), UNIAP_E_INVALID for a bad id.
 */
uniap_code docref_inline(struct store *store, int64_t tenant, struct cJSON *obj, const char *key,
                         enum store_doc_kind kind, const char *path, struct uniap_err *err);

/*
 * The cluster v names (borrowed): a stored id, a catalog name or an inline
 * cluster document, decoded into *c (caller releases).  Errors name path.
 */
uniap_code docref_cluster(struct store *store, int64_t tenant, const struct cJSON *v, const char *path,
                          struct cluster_profile *c, struct uniap_err *err);

#endif
