/*
 * fuzz_import.h - what the importer targets (fuzz_galvatron_cluster.c,
 * fuzz_galvatron_model.c, fuzz_nccl.c) share: an importer's document must
 * decode, as galvatron.h and nccl.h promise ("the documents produced are
 * checked ... so they always decode").
 *
 * Thread safety: stateless.  Never: keep state between inputs.
 */
#ifndef UNIAP_FUZZ_IMPORT_H
#define UNIAP_FUZZ_IMPORT_H

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "jdecode.h"

/* Prints doc (borrowed) and decodes it as a cluster (cluster != 0) or a model. */
static inline void fuzz_import_decodes(const cJSON *doc, int cluster)
{
	struct uniap_err err = { 0 };
	char *text = cJSON_PrintUnformatted(doc);
	uniap_code rc;

	if (!text)
		return; /* out of memory: nothing to check */
	if (cluster) {
		struct cluster_profile c;

		rc = jdec_cluster(text, strlen(text), &c, &err);
		if (rc == UNIAP_OK)
			cluster_release(&c);
	} else {
		struct model_profile m;

		rc = jdec_model(text, strlen(text), &m, &err);
		if (rc == UNIAP_OK)
			model_release(&m);
	}
	FUZZ_CHECK(rc == UNIAP_OK || rc == UNIAP_E_NOMEM, "imported %s does not decode: %s: \"%s\"\n%s",
	           cluster ? "cluster" : "model", uniap_code_name(rc), err.msg, text);
	cJSON_free(text);
}

/* The codes the Galvatron importers may answer (galvatron.h). */
#define FUZZ_GALV_CODES                                                                 \
	(FUZZ_CODE(UNIAP_E_INVALID) | FUZZ_CODE(UNIAP_E_MALFORMED) | FUZZ_CODE(UNIAP_E_NOTFOUND) | \
	 FUZZ_CODE(UNIAP_E_ARG) | FUZZ_CODE(UNIAP_E_LIMIT) | FUZZ_CODE(UNIAP_E_NOMEM))

/*
 * A Galvatron importer's outcome: UNIAP_OK with a document that decodes as
 * a cluster (cluster != 0) or a model, or one of FUZZ_GALV_CODES with no
 * document and a message rooted at "fz" (UNIAP_E_ARG's at anything).  Frees
 * out (taken, may be NULL).
 */
static inline void fuzz_galv_outcome(uniap_code rc, cJSON *out, const struct uniap_err *err, int cluster)
{
	if (rc == UNIAP_OK) {
		FUZZ_CHECK(out != NULL, "UNIAP_OK without a document");
		fuzz_import_decodes(out, cluster);
	} else {
		fuzz_check_err(rc, err, FUZZ_GALV_CODES, rc == UNIAP_E_ARG ? NULL : "fz");
		FUZZ_CHECK(out == NULL, "%s with a document", uniap_code_name(rc));
	}
	cJSON_Delete(out);
}

/* Member key of obj (borrowed) when it is an object, else NULL. */
static inline const cJSON *fuzz_import_object(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsObject(v) ? v : NULL;
}

/* Member key of obj (borrowed) as an integer in [lo, hi], else fallback. */
static inline long fuzz_import_int(const cJSON *obj, const char *key, long lo, long hi, long fallback)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= (double)lo && v->valuedouble <= (double)hi))
		return fallback;
	return (long)v->valuedouble;
}

#endif
