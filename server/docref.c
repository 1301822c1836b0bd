/*
 * docref.c - documents named in request bodies (docref.h).
 */
#include "docref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "catalog.h"
#include "jdecode.h"

int docref_id(const cJSON *v, int64_t *id)
{
	if (cJSON_IsNumber(v)) {
		if (!(v->valuedouble >= 1 && v->valuedouble <= 9007199254740991.0) ||
		    v->valuedouble != floor(v->valuedouble))
			return -1;
		*id = (int64_t)v->valuedouble;
		return 1;
	}
	if (cJSON_IsString(v) && v->valuestring[0] && strlen(v->valuestring) <= 18 &&
	    strspn(v->valuestring, "0123456789") == strlen(v->valuestring)) {
		*id = strtoll(v->valuestring, NULL, 10);
		return *id >= 1 ? 1 : -1;
	}
	return 0;
}

/* The tenant's stored document id of kind (NOTFOUND naming path for another kind or tenant). */
static uniap_code docref_get(struct store *store, int64_t tenant, int64_t id, enum store_doc_kind kind,
                             const char *path, struct store_doc *d, struct uniap_err *err)
{
	uniap_code rc = store_doc_get(store, tenant, id, d, err);

	if (rc == UNIAP_OK && d->kind != kind)
		rc = UNIAP_E_NOTFOUND;
	if (rc == UNIAP_E_NOTFOUND)
		rc = err_set(err, UNIAP_E_NOTFOUND, "%s: no %s with id %lld", path,
		             kind == STORE_DOC_MODEL ? "model" : "cluster", (long long)id);
	return rc;
}

uniap_code docref_inline(struct store *store, int64_t tenant, cJSON *obj, const char *key,
                         enum store_doc_kind kind, const char *path, struct uniap_err *err)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key), *doc = NULL;
	struct store_doc d = { 0 };
	char p[128];
	int64_t id = 0;
	int is_id = v ? docref_id(v, &id) : 0;
	uniap_code rc;

	snprintf(p, sizeof(p), "%s.%s", path, key);
	if (is_id == 0)
		return UNIAP_OK;
	if (is_id < 0)
		return err_set(err, UNIAP_E_INVALID, "%s: an id must be an integer >= 1", p);
	rc = docref_get(store, tenant, id, kind, p, &d, err);
	if (rc == UNIAP_OK)
		rc = jdec_parse(d.body, (size_t)d.bytes, p, &doc, err);
	if (rc == UNIAP_OK && !cJSON_ReplaceItemInObjectCaseSensitive(obj, key, doc)) {
		cJSON_Delete(doc);
		rc = err_set(err, UNIAP_E_NOMEM, "out of memory");
	}
	store_doc_release(&d);
	return rc;
}

uniap_code docref_cluster(struct store *store, int64_t tenant, const cJSON *v, const char *path,
                          struct cluster_profile *c, struct uniap_err *err)
{
	struct store_doc d = { 0 };
	int64_t id = 0;
	int is_id = v ? docref_id(v, &id) : 0;
	uniap_code rc;

	if (!v)
		return err_set(err, UNIAP_E_INVALID, "%s: required", path);
	if (is_id < 0)
		return err_set(err, UNIAP_E_INVALID, "%s: an id must be an integer >= 1", path);
	if (is_id == 0) {
		if (cJSON_IsObject(v))
			return jdec_cluster_json(v, path, c, err);
		if (!cJSON_IsString(v))
			return err_set(err, UNIAP_E_INVALID, "%s: must be an id, a catalog name or a cluster document, got %s",
			               path, jdec_type_name(v));
		if (!catalog_has(CATALOG_CLUSTER, v->valuestring))
			return catalog_unknown(CATALOG_CLUSTER, v->valuestring, path, DOCREF_CATALOG_HINT, UNIAP_E_INVALID,
			                       err);
		return catalog_cluster(v->valuestring, c, err);
	}
	rc = docref_get(store, tenant, id, STORE_DOC_CLUSTER, path, &d, err);
	if (rc == UNIAP_OK)
		rc = jdec_cluster(d.body, (size_t)d.bytes, c, err);
	if (rc != UNIAP_OK && rc != UNIAP_E_NOTFOUND)
		err_prefix(err, "%s", path);
	store_doc_release(&d);
	return rc;
}
