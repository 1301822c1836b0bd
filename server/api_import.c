/*
 * api_import.c - the imports of POST /v1/clusters and /v1/models
 * (?format=galvatron, ?format=nccl-tests): the request body names the input
 * files (parsed JSON for Galvatron, text for nccl-tests); json/galvatron.h
 * and json/nccl.h build the document, which then replaces the body and is
 * validated and stored like an uploaded one (api_doc_create in api.c).
 *
 * Every body member is checked (type, range, no unknown keys); messages start
 * with "body.<member>" so the problem carries its JSON pointer.  A choice the
 * importer wants from the caller (UNIAP_E_ARG there) is a 422 here: it is a
 * fault of the body, not of the URL.  Only a bad ?format= is a 400.
 *
 * Never: store anything itself, or keep state between requests.
 */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "catalog.h"
#include "docref.h"
#include "galvatron.h"
#include "jdecode.h"
#include "jencode.h"
#include "nccl.h"
#include "store.h"

/* Refuses members of obj not in keys (NULL-terminated). */
static uniap_code imp_keys(const cJSON *obj, const char *const *keys, struct uniap_err *err)
{
	const cJSON *m;
	size_t i;

	cJSON_ArrayForEach(m, obj) {
		for (i = 0; keys[i] && strcmp(keys[i], m->string) != 0; i++)
			;
		if (!keys[i])
			return err_set(err, UNIAP_E_INVALID, "body.%.64s: unknown member", m->string);
	}
	return UNIAP_OK;
}

/* body.key as an object (a parsed file); NULL and no error when absent and optional. */
static uniap_code imp_file(const cJSON *body, const char *key, int required, const cJSON **out,
                           struct uniap_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);

	*out = NULL;
	if (!v)
		return required ? err_set(err, UNIAP_E_INVALID, "body.%s: required", key) : UNIAP_OK;
	if (!cJSON_IsObject(v))
		return err_set(err, UNIAP_E_INVALID, "body.%s: must be the file's JSON object, got %s", key,
		               jdec_type_name(v));
	*out = v;
	return UNIAP_OK;
}

/* body.key as an integer in [lo, hi]; *out untouched when absent and optional. */
static uniap_code imp_int(const cJSON *body, const char *key, int required, double lo, double hi, long *out,
                          struct uniap_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);

	if (!v)
		return required ? err_set(err, UNIAP_E_INVALID, "body.%s: required", key) : UNIAP_OK;
	if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi ||
	    v->valuedouble != (double)(long)v->valuedouble)
		return err_set(err, UNIAP_E_INVALID, "body.%s: must be an integer %.0f..%.0f", key, lo, hi);
	*out = (long)v->valuedouble;
	return UNIAP_OK;
}

/* body.key as a number in [lo, hi]; *out untouched when absent. */
static uniap_code imp_num(const cJSON *body, const char *key, double lo, double hi, double *out,
                          struct uniap_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);

	if (!v)
		return UNIAP_OK;
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
		return err_set(err, UNIAP_E_INVALID, "body.%s: must be a number %g..%g", key, lo, hi);
	*out = v->valuedouble;
	return UNIAP_OK;
}

/* Sets doc's "name" to body.name when the body has one (checked by the document's decoder). */
static uniap_code imp_name(const cJSON *body, cJSON *doc, struct uniap_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "name");
	cJSON *s;

	if (!v)
		return UNIAP_OK;
	if (!cJSON_IsString(v))
		return err_set(err, UNIAP_E_INVALID, "body.name: must be a string, got %s", jdec_type_name(v));
	s = cJSON_CreateString(v->valuestring);
	if (!s)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	if (cJSON_GetObjectItemCaseSensitive(doc, "name"))
		cJSON_ReplaceItemInObjectCaseSensitive(doc, "name", s);
	else if (!cJSON_AddItemToObject(doc, "name", s)) {
		cJSON_Delete(s);
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	}
	return UNIAP_OK;
}

/* ------------------------------------------------------------ galvatron */

static uniap_code imp_galv_cluster(const cJSON *body, cJSON **out, struct uniap_err *err)
{
	static const char *const keys[] = { "name",     "nodes", "gpus_per_node", "memory_bytes", "reserved_bytes",
		                            "allreduce", "p2p",   "overlap",       "sp_time",      NULL };
	struct galv_hw_input in = {
		.memory_bytes = GALV_DEFAULT_MEMORY_GIB * 1073741824.0,
		.reserved_bytes = GALV_DEFAULT_RESERVED_GIB * 1073741824.0,
		.allreduce_name = "body.allreduce",
		.p2p_name = "body.p2p",
		.overlap_name = "body.overlap",
		.sp_time_name = "body.sp_time",
	};
	long nodes = 0, gpus = 0;
	uniap_code rc;

	if ((rc = imp_keys(body, keys, err)) != UNIAP_OK ||
	    (rc = imp_int(body, "nodes", 1, 1, MODEL_MAX_DEVICES, &nodes, err)) != UNIAP_OK ||
	    (rc = imp_int(body, "gpus_per_node", 1, 1, 1024, &gpus, err)) != UNIAP_OK ||
	    (rc = imp_num(body, "memory_bytes", 1, 1125899906842624.0, &in.memory_bytes, err)) != UNIAP_OK ||
	    (rc = imp_num(body, "reserved_bytes", 0, 1125899906842624.0, &in.reserved_bytes, err)) != UNIAP_OK ||
	    (rc = imp_file(body, "allreduce", 1, &in.allreduce, err)) != UNIAP_OK ||
	    (rc = imp_file(body, "p2p", 0, &in.p2p, err)) != UNIAP_OK ||
	    (rc = imp_file(body, "overlap", 0, &in.overlap, err)) != UNIAP_OK ||
	    (rc = imp_file(body, "sp_time", 0, &in.sp_time, err)) != UNIAP_OK)
		return rc;
	if (in.reserved_bytes >= in.memory_bytes)
		return err_set(err, UNIAP_E_INVALID, "body.reserved_bytes: must be less than memory_bytes (%.0f)",
		               in.memory_bytes);
	in.nodes = (int)nodes;
	in.gpus_per_node = (int)gpus;
	return galv_cluster_json(&in, out, NULL, err);
}

static uniap_code imp_galv_model(const cJSON *body, cJSON **out, struct uniap_err *err)
{
	static const char *const keys[] = { "name", "config", "computation", "memory", "precision",
		                            "seq",  "bsz",    "sequence_parallel", NULL };
	struct galv_model_input in = {
		.config_name = "body.config",
		.computation_name = "body.computation",
		.memory_name = "body.memory",
		.precision = "bf16",
	};
	const cJSON *prec = cJSON_GetObjectItemCaseSensitive(body, "precision");
	const cJSON *sp = cJSON_GetObjectItemCaseSensitive(body, "sequence_parallel");
	uniap_code rc;

	if ((rc = imp_keys(body, keys, err)) != UNIAP_OK ||
	    (rc = imp_file(body, "config", 1, &in.config, err)) != UNIAP_OK ||
	    (rc = imp_file(body, "computation", 1, &in.computation, err)) != UNIAP_OK ||
	    (rc = imp_file(body, "memory", 1, &in.memory, err)) != UNIAP_OK ||
	    (rc = imp_int(body, "seq", 0, 1, 999999999, &in.seq, err)) != UNIAP_OK ||
	    (rc = imp_int(body, "bsz", 0, 1, 999999999, &in.bsz, err)) != UNIAP_OK)
		return rc;
	if (prec) {
		if (!cJSON_IsString(prec) || (strcmp(prec->valuestring, "bf16") != 0 &&
		                              strcmp(prec->valuestring, "fp16") != 0 && strcmp(prec->valuestring, "fp32") != 0))
			return err_set(err, UNIAP_E_INVALID, "body.precision: must be \"bf16\", \"fp16\" or \"fp32\"");
		in.precision = prec->valuestring;
	}
	if (sp && !cJSON_IsBool(sp))
		return err_set(err, UNIAP_E_INVALID, "body.sequence_parallel: must be a boolean, got %s", jdec_type_name(sp));
	in.sequence_parallel = sp && cJSON_IsTrue(sp);
	if ((rc = galv_model_json(&in, out, NULL, err)) != UNIAP_OK)
		return rc;
	if (!cJSON_GetObjectItemCaseSensitive(body, "name")) {
		/* the importer names the model after the config's file name, here "body.config" */
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(*out, "name");

		if (cJSON_IsString(n) && strncmp(n->valuestring, "body.config", 11) == 0) {
			char name[160];
			cJSON *s;

			snprintf(name, sizeof(name), "galvatron%.128s", n->valuestring + 11);
			s = cJSON_CreateString(name);
			if (!s || !cJSON_ReplaceItemInObjectCaseSensitive(*out, "name", s)) {
				cJSON_Delete(s);
				return err_set(err, UNIAP_E_NOMEM, "out of memory");
			}
		}
	}
	return UNIAP_OK;
}

/* ------------------------------------------------------------ nccl-tests */

/* A plain cJSON tree of cluster c (jenc_cluster writes raw numbers). */
static uniap_code imp_cluster_tree(const struct cluster_profile *c, cJSON **out, struct uniap_err *err)
{
	cJSON *raw = jenc_cluster(c);
	char *text = raw ? jenc_print(raw, 0) : NULL;
	uniap_code rc = text ? jdec_parse(text, strlen(text), "body.base", out, err)
	                     : err_set(err, UNIAP_E_NOMEM, "out of memory");

	cJSON_free(text);
	cJSON_Delete(raw);
	return rc;
}

/* body.base: an inline cluster (borrowed into *base), a catalog name or a stored id (owned into *owned). */
static uniap_code imp_base(struct http_request *req, const cJSON *v, const cJSON **base, cJSON **owned,
                           struct uniap_err *err)
{
	const struct api_app *app = req->app;
	struct cluster_profile c = { 0 };
	struct store_doc d = { 0 };
	int64_t id = 0;
	uniap_code rc;

	if (!v)
		return err_set(err, UNIAP_E_INVALID, "body.base: required");
	if (cJSON_IsObject(v)) {
		*base = v;
		return UNIAP_OK;
	}
	if (cJSON_IsString(v) && api_parse_id(v->valuestring, &id) != 0) {
		if (!catalog_has(CATALOG_CLUSTER, v->valuestring))
			return catalog_unknown(CATALOG_CLUSTER, v->valuestring, "body.base", DOCREF_CATALOG_HINT, UNIAP_E_INVALID,
			                       err);
		rc = catalog_cluster(v->valuestring, &c, err);
		if (rc == UNIAP_OK)
			rc = imp_cluster_tree(&c, owned, err);
		cluster_release(&c);
		*base = *owned;
		return rc;
	}
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble < 1 || v->valuedouble > 9007199254740991.0 ||
		    v->valuedouble != (double)(int64_t)v->valuedouble)
			return err_set(err, UNIAP_E_INVALID, "body.base: an id must be an integer >= 1");
		id = (int64_t)v->valuedouble;
	} else if (!cJSON_IsString(v)) {
		return err_set(err, UNIAP_E_INVALID, "body.base: must be an id, a catalog name or a cluster document, got %s",
		               jdec_type_name(v));
	}
	rc = store_doc_get(app->store, api_principal(req)->tenant_id, id, &d, err);
	if (rc == UNIAP_E_NOTFOUND || (rc == UNIAP_OK && d.kind != STORE_DOC_CLUSTER))
		rc = err_set(err, UNIAP_E_INVALID, "body.base: no cluster with id %lld", (long long)id);
	else if (rc == UNIAP_OK)
		rc = jdec_parse(d.body, (size_t)d.bytes, "body.base", owned, err);
	store_doc_release(&d);
	*base = *owned;
	return rc;
}

static uniap_code imp_nccl(struct http_request *req, const cJSON *body, cJSON **out, struct uniap_err *err)
{
	static const char *const keys[] = { "name", "base", "ranks", "outputs", NULL };
	static const char *const item_keys[] = { "kind", "text", NULL };
	const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(body, "outputs"), *item, *base = NULL;
	struct nccl_input in[NCCL_MAX_INPUTS];
	char names[NCCL_MAX_INPUTS][32];
	cJSON *owned = NULL;
	long ranks = 0;
	size_t n = 0;
	uniap_code rc;

	if ((rc = imp_keys(body, keys, err)) != UNIAP_OK ||
	    (rc = imp_int(body, "ranks", 0, 2, NCCL_MAX_RANKS, &ranks, err)) != UNIAP_OK)
		return rc;
	if (!cJSON_IsArray(outputs) || cJSON_GetArraySize(outputs) < 1 ||
	    cJSON_GetArraySize(outputs) > NCCL_MAX_INPUTS)
		return err_set(err, UNIAP_E_INVALID,
		               "body.outputs: must be an array of 1..%d nccl-tests outputs (strings)", NCCL_MAX_INPUTS);
	memset(in, 0, sizeof(in));
	cJSON_ArrayForEach(item, outputs) {
		const cJSON *text = item, *kind = NULL;

		snprintf(names[n], sizeof(names[n]), "body.outputs[%zu]", n);
		if (cJSON_IsObject(item)) {
			struct uniap_err e2;

			err_clear(&e2);
			if (imp_keys(item, item_keys, &e2) != UNIAP_OK)
				return err_set(err, UNIAP_E_INVALID, "%s: members are \"kind\" and \"text\"", names[n]);
			text = cJSON_GetObjectItemCaseSensitive(item, "text");
			kind = cJSON_GetObjectItemCaseSensitive(item, "kind");
			if (kind && (!cJSON_IsString(kind) || nccl_kind_parse(kind->valuestring) == NCCL_KIND_NONE))
				return err_set(err, UNIAP_E_INVALID,
				               "%s.kind: must be all_reduce, all_gather, reduce_scatter, alltoall or sendrecv",
				               names[n]);
		}
		if (!cJSON_IsString(text))
			return err_set(err, UNIAP_E_INVALID,
			               "%s: must be the text of an nccl-tests run (a string, or {\"kind\", \"text\"})", names[n]);
		in[n].text = text->valuestring;
		in[n].len = strlen(text->valuestring);
		in[n].name = names[n];
		in[n].kind = kind ? nccl_kind_parse(kind->valuestring) : NCCL_KIND_NONE;
		n++;
	}
	if ((rc = imp_base(req, cJSON_GetObjectItemCaseSensitive(body, "base"), &base, &owned, err)) == UNIAP_OK)
		rc = nccl_cluster_json(base, "body.base", in, n, (int)ranks, out, NULL, err);
	cJSON_Delete(owned);
	return rc;
}

/* ------------------------------------------------------------ dispatch */

/* The importers write numbers as raw cJSON items (jenc_number: shortest exact
 * text); the decoders read plain numbers, so *doc is printed and parsed again. */
static uniap_code imp_plain(cJSON **doc, struct uniap_err *err)
{
	char *text = cJSON_PrintUnformatted(*doc);
	cJSON *plain = NULL;
	uniap_code rc;

	if (!text)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	rc = jdec_parse(text, strlen(text), "document", &plain, err);
	cJSON_free(text);
	if (rc == UNIAP_OK) {
		cJSON_Delete(*doc);
		*doc = plain;
	}
	return rc;
}

int api_import(struct http_request *req, struct http_response *res, int cluster)
{
	const char *format = http_request_query(req, "format");
	struct uniap_err err;
	cJSON *doc = NULL;
	uniap_code rc;
	char detail[160];

	if (!format)
		return 0;
	err_clear(&err);
	if (strcmp(format, "galvatron") != 0 && !(cluster && strcmp(format, "nccl-tests") == 0)) {
		snprintf(detail, sizeof(detail), "format: must be %s, got \"%.64s\"",
		         cluster ? "\"galvatron\" or \"nccl-tests\"" : "\"galvatron\"", format);
		api_problem(req, res, UNIAP_E_ARG, detail);
		return -1;
	}
	if (!cJSON_IsObject(req->json))
		rc = err_set(&err, UNIAP_E_INVALID, "body: must be an object, got %s", jdec_type_name(req->json));
	else if (strcmp(format, "nccl-tests") == 0)
		rc = imp_nccl(req, req->json, &doc, &err);
	else
		rc = cluster ? imp_galv_cluster(req->json, &doc, &err) : imp_galv_model(req->json, &doc, &err);
	if (rc == UNIAP_OK)
		rc = imp_plain(&doc, &err);
	if (rc == UNIAP_OK)
		rc = imp_name(req->json, doc, &err);
	if (rc != UNIAP_OK) {
		if (err.code == UNIAP_E_ARG)
			err.code = UNIAP_E_INVALID; /* a choice the body must make: the body's fault */
		api_fail(req, res, &err);
		cJSON_Delete(doc);
		return -1;
	}
	cJSON_Delete(req->json);
	req->json = doc;
	return 0;
}
