/*
 * allocation.c - allocation jobs (allocation.h): the request checked and
 * written at submission, and decoded on the job thread.
 *
 * Submission builds the stored request and then decodes it with the very
 * function the job thread uses (allocation_decode_json), adding the engine's
 * own checks (allocate_check: pool names, drained nodes, earlier reports), so
 * the two cannot disagree and a request that would fail at once is a 422.
 */
#include "allocation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "docref.h"
#include "jdecode.h"
#include "jencode.h"

static const char *const allocation_keys[] = { "cluster", "clusters", "jobs", "objective", "restart_cost", "drain",
	                                       "no_plans", "time_limit_s", "current", "curves", NULL };

void allocation_input_release(struct allocation_input *in)
{
	size_t p;

	if (!in)
		return;
	for (p = 0; p < in->n_pools; p++)
		cluster_release(&in->clusters[p]);
	jobs_doc_release(&in->doc);
	cJSON_Delete(in->root);
	memset(in, 0, sizeof(*in));
}

void allocation_engine_request(const struct allocation_input *in, struct allocate_request *rq)
{
	memset(rq, 0, sizeof(*rq));
	rq->clusters = in->clusters;
	rq->n_pools = in->n_pools;
	rq->doc = &in->doc;
	rq->drain = in->opts.drain;
	rq->current = in->current;
	rq->curves = in->curves;
	rq->objective = in->opts.objective;
	rq->restart_cost = in->opts.restart_cost;
	rq->no_plans = in->opts.no_plans;
}

/* Decodes a stored request already parsed (root owned by in from here on). */
static uniap_code allocation_decode_json(cJSON *root, struct allocation_input *in, struct uniap_err *err)
{
	const cJSON *sum, *cl, *it, *jobs;
	char *text = NULL;
	uniap_code rc = UNIAP_OK;

	memset(in, 0, sizeof(*in));
	in->root = root;
	sum = cJSON_GetObjectItemCaseSensitive(root, "summary");
	cl = cJSON_GetObjectItemCaseSensitive(root, "clusters");
	jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
	if (!cJSON_IsObject(sum) || !cJSON_IsArray(cl) || !cJSON_IsObject(jobs))
		return err_set(err, UNIAP_E_INVALID, "request: must have summary, clusters and jobs");
	rc = allocate_options_json(sum, "request.summary", 0, &in->opts, err);
	cJSON_ArrayForEach(it, cl) {
		char p[32];

		if (rc != UNIAP_OK)
			break;
		if (in->n_pools >= ALLOC_MAX_POOLS)
			return err_set(err, UNIAP_E_INVALID, "request.clusters: at most %d", ALLOC_MAX_POOLS);
		snprintf(p, sizeof(p), "request.clusters[%zu]", in->n_pools);
		rc = jdec_cluster_json(it, p, &in->clusters[in->n_pools], err);
		if (rc == UNIAP_OK)
			in->n_pools++;
	}
	if (rc == UNIAP_OK && in->n_pools == 0)
		rc = err_set(err, UNIAP_E_INVALID, "request.clusters: must name 1 to %d clusters", ALLOC_MAX_POOLS);
	if (rc == UNIAP_OK && !(text = cJSON_PrintUnformatted(jobs)))
		rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
	if (rc == UNIAP_OK)
		rc = jobs_decode(text, strlen(text), &in->doc, err);
	cJSON_free(text);
	in->current = cJSON_GetObjectItemCaseSensitive(root, "current");
	in->curves = cJSON_GetObjectItemCaseSensitive(root, "curves");
	return rc;
}

uniap_code allocation_decode(const char *text, size_t len, struct allocation_input *in, struct uniap_err *err)
{
	cJSON *root = NULL;
	uniap_code rc;

	memset(in, 0, sizeof(*in));
	rc = jdec_parse(text, len, "request", &root, err);
	if (rc != UNIAP_OK)
		return rc;
	return allocation_decode_json(root, in, err);
}

/* The reference a request gave: an id, a catalog name, or "inline". */
static cJSON *allocation_ref(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return cJSON_CreateNumber(v->valuedouble);
	if (cJSON_IsString(v))
		return cJSON_CreateString(v->valuestring);
	return cJSON_CreateString("inline");
}

/* An engine or decoder message as a field of the body ("drain: ..." -> "body.drain: ..."). */
static uniap_code allocation_body_path(uniap_code rc, struct uniap_err *err)
{
	char msg[UNIAP_ERR_MSG_MAX + 8];

	if (rc == UNIAP_OK || strncmp(err->msg, "body", 4) == 0)
		return rc;
	snprintf(msg, sizeof(msg), "body.%s", err->msg);
	return err_set(err, rc == UNIAP_E_ARG || rc == UNIAP_E_LIMIT ? UNIAP_E_INVALID : rc, "%.*s",
	               UNIAP_ERR_MSG_MAX - 1, msg);
}

uniap_code allocation_request(struct store *store, int64_t tenant, const cJSON *body, double max_time_limit_s,
                              char **text, struct uniap_err *err)
{
	const cJSON *one = cJSON_GetObjectItemCaseSensitive(body, "cluster");
	const cJSON *many = cJSON_GetObjectItemCaseSensitive(body, "clusters");
	const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(body, "jobs"), *it, *v;
	struct allocate_options opts;
	struct allocation_input in;
	struct allocate_request rq;
	cJSON *o = cJSON_CreateObject(), *sum = NULL, *cl = NULL, *refs = NULL, *jd = NULL, *list = NULL, *j;
	size_t i = 0, k;
	uniap_code rc = UNIAP_OK;

	*text = NULL;
	memset(&in, 0, sizeof(in));
	if (!o)
		return err_set(err, UNIAP_E_NOMEM, "request: out of memory");
	if (!cJSON_IsObject(body))
		rc = err_set(err, UNIAP_E_INVALID, "body: must be an object");
	for (it = body ? body->child : NULL; rc == UNIAP_OK && it; it = it->next) {
		for (k = 0; allocation_keys[k] && strcmp(allocation_keys[k], it->string) != 0; k++)
			;
		if (!allocation_keys[k])
			rc = err_set(err, UNIAP_E_INVALID, "body.%.64s: unknown member", it->string);
	}
	if (rc == UNIAP_OK && !one == !many)
		rc = err_set(err, UNIAP_E_INVALID, "body: give \"cluster\" (one) or \"clusters\" (pools), not %s",
		             one ? "both" : "neither");
	if (rc == UNIAP_OK && many && (!cJSON_IsArray(many) || cJSON_GetArraySize(many) < 1 ||
	                               cJSON_GetArraySize(many) > ALLOC_MAX_POOLS))
		rc = err_set(err, UNIAP_E_INVALID, "body.clusters: must be an array of 1 to %d clusters", ALLOC_MAX_POOLS);
	if (rc == UNIAP_OK)
		rc = allocate_options_json(body, "body", max_time_limit_s, &opts, err);
	if (rc == UNIAP_OK && (!cJSON_IsArray(jobs) || cJSON_GetArraySize(jobs) < 1))
		rc = err_set(err, UNIAP_E_INVALID, "body.jobs: must be an array of 1 to %d jobs (a jobs document's)",
		             ALLOC_MAX_JOBS);
	for (k = 0; rc == UNIAP_OK && k < 2; k++) {
		v = cJSON_GetObjectItemCaseSensitive(body, k ? "curves" : "current");
		if (v && !cJSON_IsObject(v))
			rc = err_set(err, UNIAP_E_INVALID, "body.%s: must be a report of an allocation (an object), got %s",
			             k ? "curves" : "current", jdec_type_name(v));
	}
	/* the summary: options as given and what the client named */
	if (rc == UNIAP_OK && !(sum = cJSON_AddObjectToObject(o, "summary")))
		rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
	for (k = 3; rc == UNIAP_OK && k < 8; k++)
		if ((v = cJSON_GetObjectItemCaseSensitive(body, allocation_keys[k])) &&
		    !cJSON_AddItemToObject(sum, allocation_keys[k], cJSON_Duplicate(v, 1)))
			rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
	if (rc == UNIAP_OK && (!(refs = cJSON_AddArrayToObject(sum, "clusters")) ||
	                       !(cl = cJSON_AddArrayToObject(o, "clusters"))))
		rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
	/* the clusters, resolved and written whole */
	for (it = one ? one : many ? many->child : NULL; rc == UNIAP_OK && it; it = one ? NULL : it->next, i++) {
		struct cluster_profile c;
		char p[32];
		cJSON *doc;

		if (one)
			snprintf(p, sizeof(p), "body.cluster");
		else
			snprintf(p, sizeof(p), "body.clusters[%zu]", i);
		memset(&c, 0, sizeof(c));
		rc = docref_cluster(store, tenant, it, p, &c, err);
		if (rc == UNIAP_OK && (!(doc = jenc_cluster(&c)) || !cJSON_AddItemToArray(cl, doc) ||
		                       !cJSON_AddItemToArray(refs, allocation_ref(it))))
			rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
		cluster_release(&c);
	}
	/* the jobs, with models given by stored id written inline */
	if (rc == UNIAP_OK && (!(jd = cJSON_AddObjectToObject(o, "jobs")) ||
	                       !(list = cJSON_AddArrayToObject(jd, "jobs"))))
		rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
	for (i = 0, it = rc == UNIAP_OK ? jobs->child : NULL; it; it = it->next) {
		char p[32];

		snprintf(p, sizeof(p), "body.jobs[%zu]", i++);
		if (!(j = cJSON_Duplicate(it, 1)) || !cJSON_AddItemToArray(list, j)) {
			cJSON_Delete(j);
			rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
			break;
		}
		if (cJSON_IsObject(j) && (rc = docref_inline(store, tenant, j, "model", STORE_DOC_MODEL, p, err)) != UNIAP_OK)
			break;
	}
	for (k = 0; rc == UNIAP_OK && k < 2; k++)
		if ((v = cJSON_GetObjectItemCaseSensitive(body, k ? "curves" : "current")) &&
		    !cJSON_AddItemToObject(o, k ? "curves" : "current", cJSON_Duplicate(v, 1)))
			rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
	if (rc == UNIAP_OK && !(*text = cJSON_PrintUnformatted(o)))
		rc = err_set(err, UNIAP_E_NOMEM, "request: out of memory");
	/* decoded as the job thread will, then the engine's own checks */
	if (rc == UNIAP_OK) {
		rc = allocation_decode(*text, strlen(*text), &in, err);
		if (rc != UNIAP_OK && strncmp(err->msg, "jobs", 4) == 0)
			rc = allocation_body_path(rc, err);
	}
	if (rc == UNIAP_OK) {
		allocation_engine_request(&in, &rq);
		rc = allocation_body_path(allocate_check(&rq, err), err);
	}
	/* what alloc_solve would refuse only after the planning */
	for (k = 0; rc == UNIAP_OK && opts.objective == ALLOC_DEADLINE && k < in.doc.n_jobs; k++)
		if (!(in.doc.jobs[k].samples > 0))
			rc = err_set(err, UNIAP_E_INVALID, "body.jobs[%zu].samples: the deadline objective needs the samples "
			             "to go", k);
	allocation_input_release(&in);
	cJSON_Delete(o);
	if (rc != UNIAP_OK) {
		cJSON_free(*text);
		*text = NULL;
	}
	return rc;
}
