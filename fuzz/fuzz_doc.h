/*
 * fuzz_doc.h - the body of the document targets (fuzz_cluster.c,
 * fuzz_model.c, fuzz_plan.c): one input is one JSON document given to
 * jdec_cluster() / jdec_model() / jdec_plan() as untrusted bytes (not
 * NUL-terminated, so AddressSanitizer sees any read past the end).
 *
 * Invariants (jdecode.h): UNIAP_OK, or UNIAP_E_INVALID / _MALFORMED / _LIMIT
 * / _NOMEM with a non-empty message rooted at "cluster", "model" or "plan",
 * and the output struct released and zeroed.  A cluster or model that
 * decodes must survive the round trip jencode.h promises: jenc_cluster() /
 * jenc_model() printed and decoded again gives a profile with the same
 * shape (nodes, devices, levels; types, layers, edges).
 *
 * Thread safety: stateless.  Never: keep state between inputs.
 */
#ifndef UNIAP_FUZZ_DOC_H
#define UNIAP_FUZZ_DOC_H

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "jdecode.h"
#include "jencode.h"

enum fuzz_doc_kind { FUZZ_DOC_CLUSTER, FUZZ_DOC_MODEL, FUZZ_DOC_PLAN };

#define FUZZ_DOC_CODES                                                                  \
	(FUZZ_CODE(UNIAP_E_INVALID) | FUZZ_CODE(UNIAP_E_MALFORMED) | FUZZ_CODE(UNIAP_E_LIMIT) | \
	 FUZZ_CODE(UNIAP_E_NOMEM))

/* Prints tree (taken: deleted here) and decodes the text again as a cluster. */
static inline void fuzz_doc_cluster_again(const struct cluster_profile *c, cJSON *tree)
{
	struct cluster_profile again;
	struct uniap_err err = { 0 };
	char *text = tree ? cJSON_PrintUnformatted(tree) : NULL;
	uniap_code rc;

	cJSON_Delete(tree);
	if (!text)
		return; /* out of memory: nothing to check */
	rc = jdec_cluster(text, strlen(text), &again, &err);
	FUZZ_CHECK(rc == UNIAP_OK, "re-encoded cluster does not decode: %s: \"%s\"\n%s", uniap_code_name(rc),
	           err.msg, text);
	FUZZ_CHECK(again.nodes == c->nodes && again.devices_per_node == c->devices_per_node &&
	                   again.n_levels == c->n_levels,
	           "re-encoded cluster differs in shape\n%s", text);
	cluster_release(&again);
	cJSON_free(text);
}

/* Prints tree (taken: deleted here) and decodes the text again as a model. */
static inline void fuzz_doc_model_again(const struct model_profile *m, cJSON *tree)
{
	struct model_profile again;
	struct uniap_err err = { 0 };
	char *text = tree ? cJSON_PrintUnformatted(tree) : NULL;
	uniap_code rc;

	cJSON_Delete(tree);
	if (!text)
		return;
	rc = jdec_model(text, strlen(text), &again, &err);
	FUZZ_CHECK(rc == UNIAP_OK, "re-encoded model does not decode: %s: \"%s\"\n%s", uniap_code_name(rc),
	           err.msg, text);
	FUZZ_CHECK(again.n_types == m->n_types && again.n_layers == m->n_layers && again.n_edges == m->n_edges,
	           "re-encoded model differs in shape\n%s", text);
	model_release(&again);
	cJSON_free(text);
}

/* One input (borrowed) decoded as a document of kind. */
static inline int fuzz_doc(const uint8_t *data, size_t size, enum fuzz_doc_kind kind)
{
	const char *text = (const char *)data;
	struct uniap_err err = { 0 };
	struct cluster_profile c;
	struct model_profile m;
	struct plan_doc p;
	uniap_code rc;

	switch (kind) {
	case FUZZ_DOC_CLUSTER:
		rc = jdec_cluster(text, size, &c, &err);
		if (rc != UNIAP_OK) {
			fuzz_check_err(rc, &err, FUZZ_DOC_CODES, "cluster");
			FUZZ_CHECK(fuzz_all_zero(&c, sizeof(c)), "cluster not zeroed on failure");
			break;
		}
		fuzz_doc_cluster_again(&c, jenc_cluster(&c));
		cluster_release(&c);
		break;
	case FUZZ_DOC_MODEL:
		rc = jdec_model(text, size, &m, &err);
		if (rc != UNIAP_OK) {
			fuzz_check_err(rc, &err, FUZZ_DOC_CODES, "model");
			FUZZ_CHECK(fuzz_all_zero(&m, sizeof(m)), "model not zeroed on failure");
			break;
		}
		fuzz_doc_model_again(&m, jenc_model(&m));
		model_release(&m);
		break;
	default:
		rc = jdec_plan(text, size, &p, &err);
		if (rc != UNIAP_OK) {
			fuzz_check_err(rc, &err, FUZZ_DOC_CODES, "plan");
			FUZZ_CHECK(fuzz_all_zero(&p, sizeof(p)), "plan not zeroed on failure");
			break;
		}
		plan_doc_release(&p);
		break;
	}
	return 0;
}

#endif
