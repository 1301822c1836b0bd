/*
 * jobs.c - the jobs document and the allocation report (jobs.h,
 * schema/jobs.schema.json, docs/allocation.md).
 *
 * Field readers are jdecode.c's (jdec_int.h), so messages and checks match
 * the other documents.  A job's model is a catalog name or an inline model
 * document, decoded once per job.
 *
 * Never: print, exit, read files, keep state.
 */
#include "jobs.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jdec_int.h"
#include "jdecode.h"
#include "jencode.h"

#define JOBS_MAX_NAME 128
#define JOBS_MAX_TENANT 63 /* a tenant's name (uniapd's tenant names are shorter) */
#define JOBS_MAX_BATCH 1000000000LL

void jobs_doc_release(struct jobs_doc *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; d->jobs && i < d->n_jobs; i++) {
		free(d->jobs[i].name);
		free(d->jobs[i].tenant);
		cJSON_Delete(d->jobs[i].spec);
	}
	free(d->jobs);
	for (i = 0; d->models && i < d->n_models; i++)
		model_release(&d->models[i]);
	free(d->models);
	memset(d, 0, sizeof(*d));
}

static uniap_code jobs_job(const cJSON *o, const char *jp, struct jobs_doc *d, struct jobs_job *j,
                           struct uniap_err *err)
{
	static const char *const keys[] = { "name", "model", "batch", "weight", "min_devices", "max_devices",
		                            "samples", "deadline_s", "schedule", "recompute", "zero",
		                            "sequence_parallel", "selective_recompute", "fp8", "tenant", NULL };
	static const char *const schedules[] = { "gpipe", "1f1b" };
	char p[JDEC_PATH_MAX];
	const cJSON *v;
	long long x = 0;
	int s = 0;
	uniap_code rc = jdec_keys(o, jp, keys, NULL, err);

	if (rc == UNIAP_OK)
		rc = jdec_str(o, "name", jp, 1, 1, JOBS_MAX_NAME, &j->name, err);
	if (rc == UNIAP_OK)
		rc = jdec_str(o, "tenant", jp, 0, 1, JOBS_MAX_TENANT, &j->tenant, err);
	if (rc == UNIAP_OK)
		rc = jdec_get(o, "model", jp, 1, p, &v, err);
	if (rc == UNIAP_OK)
		rc = jdec_model_ref(v, p, &d->models[d->n_models], err);
	if (rc == UNIAP_OK)
		j->model = d->n_models++;
	if (rc == UNIAP_OK)
		rc = jdec_int(o, "batch", jp, 1, 0, 1, JOBS_MAX_BATCH, &x, err);
	j->batch = (long)x;
	if (rc == UNIAP_OK)
		rc = jdec_num(o, "weight", jp, 0, 1.0, DBL_MIN, 1e9, &j->weight, err);
	if (rc == UNIAP_OK)
		rc = jdec_int(o, "min_devices", jp, 0, 0, 0, MODEL_MAX_DEVICES, &x, err);
	j->min_devices = (long)x;
	if (rc == UNIAP_OK)
		rc = jdec_int(o, "max_devices", jp, 0, 0, 0, MODEL_MAX_DEVICES, &x, err);
	j->max_devices = (long)x;
	if (rc == UNIAP_OK && j->max_devices > 0 && j->max_devices < j->min_devices)
		rc = err_set(err, UNIAP_E_INVALID, "%s.max_devices: must be >= min_devices (%ld), got %ld", jp,
		             j->min_devices, j->max_devices);
	if (rc == UNIAP_OK)
		rc = jdec_num(o, "samples", jp, 0, 0.0, DBL_MIN, 1e18, &j->samples, err);
	if (rc == UNIAP_OK)
		rc = jdec_num(o, "deadline_s", jp, 0, 0.0, DBL_MIN, 1e12, &j->deadline_s, err);
	if (rc == UNIAP_OK && j->deadline_s > 0 && !(j->samples > 0))
		rc = err_set(err, UNIAP_E_INVALID, "%s.deadline_s: a deadline needs \"samples\", the samples to go", jp);
	j->schedule = COST_GPIPE;
	if (rc == UNIAP_OK)
		rc = jdec_get(o, "schedule", jp, 0, p, &v, err);
	if (rc == UNIAP_OK && v) {
		rc = jdec_enum_value(v, p, schedules, 2, &s, err);
		j->schedule = s == 1 ? COST_1F1B : COST_GPIPE;
	}
	if (rc == UNIAP_OK)
		rc = jdec_bool(o, "recompute", jp, 0, &j->recompute, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(o, "zero", jp, 0, &j->zero, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(o, "sequence_parallel", jp, 0, &j->sp, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(o, "selective_recompute", jp, 0, &j->selective, err);
	if (rc == UNIAP_OK)
		rc = jdec_bool(o, "fp8", jp, 0, &j->fp8, err);
	return rc;
}

uniap_code jobs_decode(const char *text, size_t len, struct jobs_doc *out, struct uniap_err *err)
{
	static const char *const keys[] = { "jobs", "description", NULL };
	cJSON *root = NULL;
	const cJSON *arr, *it;
	char p[JDEC_PATH_MAX];
	size_t n = 0, i = 0, k;
	uniap_code rc;

	if (!out)
		return err_set(err, UNIAP_E_ARG, "jobs_decode: out is NULL");
	memset(out, 0, sizeof(*out));
	rc = jdec_parse(text, len, "jobs document", &root, err);
	if (rc == UNIAP_OK)
		rc = jdec_check_depth(root, "jobs document", err);
	if (rc == UNIAP_OK)
		rc = jdec_keys(root, "jobs document", keys, NULL, err);
	if (rc != UNIAP_OK)
		goto out;
	arr = cJSON_GetObjectItemCaseSensitive(root, "jobs");
	for (it = arr ? arr->child : NULL; it; it = it->next)
		n++;
	if (!arr)
		rc = err_set(err, UNIAP_E_INVALID, "jobs: is required");
	else if (!cJSON_IsArray(arr))
		rc = err_set(err, UNIAP_E_INVALID, "jobs: must be an array, got %s", jdec_type_name(arr));
	else if (n < 1 || n > ALLOC_MAX_JOBS)
		rc = err_set(err, n < 1 ? UNIAP_E_INVALID : UNIAP_E_LIMIT, "jobs: must have 1 to %d entries, got %zu",
		             ALLOC_MAX_JOBS, n);
	if (rc != UNIAP_OK)
		goto out;
	out->jobs = calloc(n, sizeof(*out->jobs));
	out->models = calloc(n, sizeof(*out->models));
	if (!out->jobs || !out->models) {
		rc = err_set(err, UNIAP_E_NOMEM, "jobs: out of memory");
		goto out;
	}
	cJSON_ArrayForEach(it, arr) {
		jdec_pidx(p, "jobs", i);
		if (!cJSON_IsObject(it)) {
			rc = err_set(err, UNIAP_E_INVALID, "%s: must be an object, got %s", p, jdec_type_name(it));
			break;
		}
		out->n_jobs = i + 1;
		rc = jobs_job(it, p, out, &out->jobs[i], err);
		if (rc == UNIAP_OK && !(out->jobs[i].spec = cJSON_Duplicate(it, 1)))
			rc = err_set(err, UNIAP_E_NOMEM, "jobs: out of memory");
		for (k = 0; rc == UNIAP_OK && k < i; k++)
			if (strcmp(out->jobs[k].name, out->jobs[i].name) == 0)
				rc = err_set(err, UNIAP_E_INVALID, "%s.name: duplicate of jobs[%zu].name \"%s\"", p, k,
				             out->jobs[i].name);
		if (rc != UNIAP_OK)
			break;
		i++;
	}
out:
	cJSON_Delete(root);
	if (rc != UNIAP_OK)
		jobs_doc_release(out);
	return rc;
}

cJSON *jobs_report(const struct jobs_doc *d, const int *sizes, size_t n_sizes, const int *pool_of,
                   enum alloc_objective objective, const struct alloc_result *r, double best_throughput,
                   const struct jobs_report_job *jobs, const struct jobs_report_frame *f)
{
	cJSON *o = cJSON_CreateObject(), *arr = NULL, *sz = NULL;
	size_t j, k, p;
	int ok = o != NULL, moves = 0, several = f->n_pools > 1;
	double devices = 0;

	for (p = 0; p < f->n_pools; p++)
		devices += cluster_devices(f->pools[p].cluster) -
		           (double)f->pools[p].n_drained * f->pools[p].cluster->devices_per_node;
	ok = ok && cJSON_AddStringToObject(o, "objective", alloc_objective_name(objective)) &&
	     jenc_add_num(o, "value", r->objective) && jenc_add_num(o, "throughput_value", r->throughput_value) &&
	     (!(best_throughput > 0) || objective == ALLOC_THROUGHPUT ||
	      jenc_add_num(o, "price_of_fairness", 1.0 - r->throughput_value / best_throughput)) &&
	     jenc_add_num(o, "devices", devices) && jenc_add_num(o, "devices_used", r->devices_used) &&
	     jenc_add_num(o, "planner_runs", (double)f->planner_runs) &&
	     (f->cached_points < 0 || jenc_add_num(o, "cached_points", (double)f->cached_points)) &&
	     (!f->stopped || (cJSON_AddBoolToObject(o, "stopped", 1) &&
	                      jenc_add_num(o, "unplanned_points", (double)f->unplanned_points))) &&
	     (sz = cJSON_AddArrayToObject(o, "sizes"));
	for (k = 0; ok && k < n_sizes; k++)
		ok = cJSON_AddItemToArray(sz, cJSON_CreateNumber(sizes[k]));
	/* one pool: its drained nodes and cluster at the top (below); several: a "pools" entry each */
	if (ok && !several) {
		cJSON *dr = cJSON_AddArrayToObject(o, "drained_nodes");

		ok = dr != NULL;
		for (k = 0; ok && k < f->pools[0].n_drained; k++)
			ok = cJSON_AddItemToArray(dr, cJSON_CreateNumber(f->pools[0].drained[k]));
	}
	if (ok && several) {
		cJSON *pa = cJSON_AddArrayToObject(o, "pools");

		ok = pa != NULL;
		for (p = 0; ok && p < f->n_pools; p++) {
			const struct jobs_report_pool *pl = &f->pools[p];
			cJSON *x = cJSON_CreateObject(), *dr = NULL;
			int used = 0;

			for (j = 0; j < d->n_jobs; j++)
				if (r->size_index[j] >= 0 && (size_t)pool_of[r->size_index[j]] == p)
					used += sizes[r->size_index[j]];
			ok = x && cJSON_AddItemToArray(pa, x) && cJSON_AddStringToObject(x, "name", pl->name) &&
			     jenc_add_num(x, "devices", cluster_devices(pl->cluster) -
			                                       (double)pl->n_drained * pl->cluster->devices_per_node) &&
			     jenc_add_num(x, "devices_used", used) && jenc_add_num(x, "first_size", (double)pl->first) &&
			     jenc_add_num(x, "sizes_count", (double)pl->n_sizes) &&
			     (dr = cJSON_AddArrayToObject(x, "drained_nodes"));
			for (k = 0; ok && k < pl->n_drained; k++)
				ok = cJSON_AddItemToArray(dr, cJSON_CreateNumber(pl->drained[k]));
			ok = ok && cJSON_AddItemToObject(x, "cluster", jenc_cluster(pl->cluster)) != 0;
		}
	}
	ok = ok && (arr = cJSON_AddArrayToObject(o, "jobs"));
	for (j = 0; ok && j < d->n_jobs; j++) {
		const struct jobs_job *jb = &d->jobs[j];
		cJSON *x = cJSON_CreateObject(), *curve = NULL;
		int kk = r->size_index[j], s = kk >= 0 ? sizes[kk] : 0, first = -1;
		const struct jobs_report_pool *pl = kk >= 0 ? &f->pools[pool_of[kk]] : NULL;
		int per_node = pl ? pl->cluster->devices_per_node : 1;
		double thr = s > 0 ? jobs[j].curve[kk] : 0, top = 0;

		for (k = 0; k < n_sizes; k++)
			top = fmax(top, jobs[j].curve[k]);
		if (s > 0)
			first = pl->node_map[jobs[j].first_device / per_node] * per_node + jobs[j].first_device % per_node;
		ok = x && cJSON_AddItemToArray(arr, x) && cJSON_AddStringToObject(x, "name", jb->name) &&
		     (!jb->tenant || cJSON_AddStringToObject(x, "tenant", jb->tenant)) &&
		     (!several || !pl || cJSON_AddStringToObject(x, "pool", pl->name)) &&
		     jenc_add_num(x, "devices", s) && jenc_add_num(x, "throughput_samples_per_s", thr) &&
		     jenc_add_num(x, "normalized_throughput", top > 0 ? thr / top : 0);
		if (ok && s > 0) {
			cJSON *nodes = cJSON_AddArrayToObject(x, "nodes");
			int nd;

			ok = nodes && jenc_add_num(x, "first_device", first);
			for (nd = jobs[j].first_device / per_node; ok && nd <= (jobs[j].first_device + s - 1) / per_node; nd++)
				ok = cJSON_AddItemToArray(nodes, cJSON_CreateNumber(pl->node_map[nd]));
			if (ok && jb->samples > 0 && thr > 0)
				ok = jenc_add_num(x, "finish_s", jb->samples / thr);
		}
		if (ok && jb->deadline_s > 0)
			ok = cJSON_AddBoolToObject(x, "meets_deadline", s > 0 && thr > 0 && jb->samples / thr <= jb->deadline_s) !=
			     NULL;
		if (ok && f->replanning) {
			int moved = jobs[j].previous_devices > 0 &&
			            (s != jobs[j].previous_devices || first != jobs[j].previous_first_device ||
			             (several && (!pl || !jobs[j].previous_pool || strcmp(pl->name, jobs[j].previous_pool) != 0)));

			moves += moved;
			ok = jenc_add_num(x, "previous_devices", jobs[j].previous_devices > 0 ? jobs[j].previous_devices : 0) &&
			     (!several || !jobs[j].previous_pool ||
			      cJSON_AddStringToObject(x, "previous_pool", jobs[j].previous_pool)) &&
			     cJSON_AddBoolToObject(x, "moved", moved) != NULL;
		}
		ok = ok && (curve = cJSON_AddArrayToObject(x, "curve"));
		for (k = 0; ok && k < n_sizes; k++)
			ok = cJSON_AddItemToArray(curve, jobs[j].curve[k] > 0 ? cJSON_CreateNumber(jobs[j].curve[k])
			                                                      : cJSON_CreateNull());
		if (ok)
			ok = jobs[j].plan ? cJSON_AddItemToObject(x, "plan", cJSON_Duplicate(jobs[j].plan, 1)) != 0
			                  : cJSON_AddNullToObject(x, "plan") != NULL;
		if (ok && jb->spec)
			ok = cJSON_AddItemToObject(x, "spec", cJSON_Duplicate(jb->spec, 1)) != 0;
	}
	if (ok && f->replanning) {
		cJSON *en = cJSON_AddArrayToObject(o, "ended");

		ok = en && jenc_add_num(o, "moves", moves);
		for (k = 0; ok && k < f->n_ended; k++)
			ok = cJSON_AddItemToArray(en, cJSON_CreateString(f->ended[k]));
	}
	if (ok && !several)
		ok = cJSON_AddItemToObject(o, "cluster", jenc_cluster(f->pools[0].cluster)) != 0;
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *jobs_report_redact(const cJSON *report, const char *tenant)
{
	static const char *const kept[] = { "pool", "devices", "first_device", "nodes", "previous_devices", "previous_pool",
		                            "moved", NULL };
	cJSON *o = cJSON_Duplicate(report, 1), *arr, *it;
	int k = 0;

	arr = o ? cJSON_GetObjectItemCaseSensitive(o, "jobs") : NULL;
	cJSON_ArrayForEach(it, arr) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "tenant");
		cJSON *x, *next;
		char name[32];
		size_t i;

		k++;
		if (cJSON_IsString(t) && tenant && strcmp(t->valuestring, tenant) == 0)
			continue;
		/* another's job: where it runs stays (the cluster is shared), what it is goes */
		for (x = it->child; x; x = next) {
			next = x->next;
			for (i = 0; kept[i] && strcmp(kept[i], x->string) != 0; i++)
				;
			if (!kept[i])
				cJSON_Delete(cJSON_DetachItemViaPointer(it, x));
		}
		snprintf(name, sizeof(name), "job %d", k);
		if (!cJSON_AddStringToObject(it, "name", name) || !cJSON_AddNumberToObject(it, "throughput_samples_per_s", 0) ||
		    !cJSON_AddNumberToObject(it, "normalized_throughput", 0) || !cJSON_AddArrayToObject(it, "curve") ||
		    !cJSON_AddNullToObject(it, "plan") || !cJSON_AddTrueToObject(it, "redacted")) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}
