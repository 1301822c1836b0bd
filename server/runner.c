/*
 * runner.c - job threads over one shared worker pool (runner.h).
 *
 * Life of a job here: a job thread claims it (queued -> running) under
 * r->lock and registers it in its slot, so that runner_cancel() always finds
 * a running job; decodes the stored request; runs uop_run() on the shared
 * pool with the job id as the pool tag, the slot's cancel flag, a progress
 * callback (throttled writes to the store) and the cost-cache memo; then
 * records succeeded (the plan report), failed (the message) or canceled, or
 * puts the job back in the queue when the runner is stopping.
 *
 * Lock order: r->lock, then nothing (store calls made under it take only the
 * store's own pool lock).  Each slot's progress_lock is held across its progress
 * write (store locks only inside it), never with r->lock.
 */
#include "runner.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "allocation.h"
#include "calibration.h"
#include "catalog.h"
#include "jdecode.h"
#include "jencode.h"
#include "pool.h"
#include "runtime.h"

#define RUNNER_JOBS_MAX 64
#define RUNNER_PROGRESS_EVERY_S 0.25  /* at most this often a progress write per job */
#define RUNNER_IDLE_POLL_S 1.0        /* a job thread looks at the queue this often unwoken */
#define RUNNER_PUSHED_POLL_S 30.0     /* ... and this often when the store pushes events
                                         (store_listens: LISTEN/NOTIFY wakes it; a safety net) */
#define RUNNER_RETRY_S 0.5            /* a job's store call waits this long between tries on a
                                         database that does not answer (runner_db_retry) */
#define RUNNER_MATRICES_MAX (8.0 * 1024 * 1024) /* larger cost matrices are not cached */

const double runner_solve_buckets[8] = { 0.1, 0.5, 1, 5, 10, 30, 60, 300 };

#define RUNNER_CANCEL_REVOKED 2 /* user_cancel: the tenant was revoked */
#define RUNNER_HELPED_MAX 64      /* the runs of other instances' jobs a replica remembers having helped */
/* A helper's solves carry the job id with this bit as their pool tag, so that stopping a
 * helper never kills the solves of the same job's own run here (the job requeued to this
 * instance while it helped), and the reverse */
#define RUNNER_HELP_TAG ((uint64_t)1 << 62)

struct runner_slot {
	struct runner *r;
	pthread_t thread;
	int started;
	int spare;                    /* a spare thread: claims only jobs of tenants with none running */
	int64_t job;                  /* guarded by r->lock: the running job, 0 when idle */
	int helping;                  /* guarded by r->lock: job is another instance's, this thread
	                                 only solves units of it (runner_help_job): no lease of its own */
	int help_run;                 /* guarded by r->lock: the run of job it helps */
	int64_t tenant;
	atomic_int cancel;            /* the job's uop cancel flag */
	atomic_int stop;              /* the job's uop stop flag: end now with the best plan so far */
	atomic_int lost;              /* a store write said the job's lease is lost: stop, write nothing */
	struct store_lease lease;     /* guarded by r->lock while set; the job thread reads its own */
	double renewed_s;             /* guarded by r->lock: opt_clock_s() of the last renewal */
	int user_cancel;              /* guarded by r->lock: runner_cancel asked (not a stop);
	                                 RUNNER_CANCEL_REVOKED: runner_cancel_revoked */
	pthread_mutex_t progress_lock;
	double last_progress_s;       /* guarded by progress_lock */
	int bound_sent;               /* guarded by progress_lock: this run's first bound was written */
	size_t done_before;           /* guarded by progress_lock: candidates of the job's earlier
	                                 target runs, added to the progress of the current one */
	unsigned char memo_base[STORE_SHA256_BYTES];
};

struct runner {
	struct runner_config cfg;
	struct pool *pool;
	pthread_mutex_t lock;
	pthread_cond_t wake;          /* a job was queued, or stopping */
	pthread_cond_t idle;          /* a slot went idle (for runner_stop's grace wait) */
	pthread_mutex_t solve_lock;   /* solves made in this process (sanitizer builds solve inline):
	                                 one at a time across the job threads, CBC is not thread-safe */
	int stopping;                 /* guarded by lock: no new claims */
	int pending_wakes;            /* guarded by lock */
	int64_t wake_gen;             /* guarded by lock: grows with every runner_wake (a helper leaves
	                                 its job for the queue's) */
	double units_renewed_s;       /* guarded by lock: opt_clock_s() of the last units' renewal */
	int helping;                  /* guarded by lock: a job thread looks for or helps another
	                                 instance's job (runner_help_next) */
	int64_t helped[RUNNER_HELPED_MAX]; /* guarded by lock: job * 16 + run of the runs helped lately
	                                 (a ring), never joined again */
	size_t n_helped;              /* guarded by lock: entries written, ever */
	int stopped;
	char owner[STORE_OWNER_CHARS + 1]; /* this process's instance id: the owner of its leases */
	int64_t lease_ms;
	struct runner_stats stats;    /* guarded by lock */
	int n_slots;                  /* jobs + spare_jobs; a spare slot's thread starts when needed */
	struct runner_slot slots[RUNNER_JOBS_MAX + RUNNER_SPARE_MAX]; /* the --jobs threads, then the spares */
};

/* ------------------------------------------------------------ log */

static void runner_log_line(FILE *log, const char *event, int64_t job, int64_t tenant, const char *from,
                            const char *to, const char *detail);

void runner_log_transition(FILE *log, int64_t job, int64_t tenant, const char *from, const char *to,
                           const char *detail)
{
	runner_log_line(log, "job", job, tenant, from, to, detail);
}

/* One JSON line {"ts", "event", "job", "tenant", "from", "to", "detail"?} on log (NULL-safe). */
static void runner_log_line(FILE *log, const char *event, int64_t job, int64_t tenant, const char *from,
                            const char *to, const char *detail)
{
	cJSON *o;
	char *line = NULL, when[96];
	struct timespec ts;
	struct tm tm;

	if (!log)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
	         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (ts.tv_nsec / 1000000) % 1000);
	o = cJSON_CreateObject();
	if (o && cJSON_AddStringToObject(o, "ts", when) && cJSON_AddStringToObject(o, "event", event) &&
	    cJSON_AddNumberToObject(o, "job", (double)job) &&
	    cJSON_AddNumberToObject(o, "tenant", (double)tenant) &&
	    cJSON_AddStringToObject(o, "from", from) && cJSON_AddStringToObject(o, "to", to) &&
	    (!detail || cJSON_AddStringToObject(o, "detail", detail)))
		line = cJSON_PrintUnformatted(o);
	if (line) {
		flockfile(log);
		fputs(line, log);
		fputc('\n', log);
		fflush(log);
		funlockfile(log);
	}
	cJSON_free(line);
	cJSON_Delete(o);
}

/* ------------------------------------------------------------ requests */

void runner_request_release(struct runner_request *r)
{
	if (!r)
		return;
	cluster_release(&r->cluster);
	model_release(&r->model);
	memset(r, 0, sizeof(*r));
}

uniap_code runner_request_decode(const char *text, size_t len, struct runner_request *out,
                                 struct uniap_err *err)
{
	cJSON *root = NULL;
	uniap_code rc;

	memset(out, 0, sizeof(*out));
	if ((rc = jdec_parse(text, len, "request", &root, err)) != UNIAP_OK)
		return rc;
	rc = runner_options_json(cJSON_GetObjectItemCaseSensitive(root, "summary"), "request.summary", 0,
	                         &out->opts, err);
	if (rc == UNIAP_OK)
		rc = runner_targets_json(cJSON_GetObjectItemCaseSensitive(root, "summary"), "request.summary",
		                         &out->opts, out->targets, &out->n_targets, &out->targets_given, err);
	if (rc == UNIAP_OK)
		rc = jdec_cluster_json(cJSON_GetObjectItemCaseSensitive(root, "cluster"), "request.cluster",
		                       &out->cluster, err);
	/* the stored cluster already carries it; applied again for a request stored without */
	if (rc == UNIAP_OK)
		rc = runner_margin_json(cJSON_GetObjectItemCaseSensitive(root, "summary"), "request.summary",
		                        &out->cluster, err);
	if (rc == UNIAP_OK)
		rc = jdec_model_json(cJSON_GetObjectItemCaseSensitive(root, "model"), "request.model",
		                     &out->model, err);
	cJSON_Delete(root);
	if (rc != UNIAP_OK)
		runner_request_release(out);
	return rc;
}

/* A boolean member key of obj into *out (absent: unchanged). */
static uniap_code runner_bool(const cJSON *obj, const char *root, const char *key, int *out,
                              struct uniap_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!v)
		return UNIAP_OK;
	if (!cJSON_IsBool(v))
		return err_set(err, UNIAP_E_INVALID, "%s.%s: must be a boolean, got %s", root, key,
		               jdec_type_name(v));
	*out = cJSON_IsTrue(v);
	return UNIAP_OK;
}

/* A number member key of obj in [lo, hi] into *out (absent: unchanged unless required). */
static uniap_code runner_number(const cJSON *obj, const char *root, const char *key, double lo,
                                double hi, int integer, int required, double *out,
                                struct uniap_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!v) {
		if (required)
			return err_set(err, UNIAP_E_INVALID, "%s.%s: required", root, key);
		return UNIAP_OK;
	}
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
	    (integer && v->valuedouble != floor(v->valuedouble)))
		return err_set(err, UNIAP_E_INVALID, "%s.%s: must be %s in [%g, %g], got %s%s", root, key,
		               integer ? "an integer" : "a number", lo, hi,
		               cJSON_IsNumber(v) ? "" : "a ", cJSON_IsNumber(v) ? "out of range" : jdec_type_name(v));
	*out = v->valuedouble;
	return UNIAP_OK;
}

static const char *const runner_request_keys[] = {
	"cluster", "model", "batch", "schedule", "space", "time_limit_s", "deadline_s", "gap", "recompute", "zero",
	"sequence_parallel", "selective_recompute", "uneven_microbatches", "virtual_stages",
	"early_stop", "memory_margin", "targets", "runtime", "fp8", "context_parallel", "cp_comm",
	"every_candidate", "objective",
};

uniap_code runner_options_json(const cJSON *obj, const char *root, double max_time_limit_s,
                               struct uop_options *o, struct uniap_err *err)
{
	const cJSON *v;
	double batch = 0, limit, gap = 0, vs = 0, deadline = 0, cpv = 1;
	uniap_code rc;
	size_t k;

	if (!cJSON_IsObject(obj))
		return err_set(err, UNIAP_E_INVALID, "%s: must be an object, got %s", root,
		               jdec_type_name(obj));
	for (v = obj->child; v; v = v->next) {
		const cJSON *w;

		for (w = obj->child; w != v; w = w->next)
			if (v->string && w->string && strcmp(v->string, w->string) == 0)
				return err_set(err, UNIAP_E_INVALID, "%s.%.64s: given twice", root, v->string);
		for (k = 0; k < sizeof(runner_request_keys) / sizeof(runner_request_keys[0]); k++)
			if (v->string && strcmp(v->string, runner_request_keys[k]) == 0)
				break;
		if (k == sizeof(runner_request_keys) / sizeof(runner_request_keys[0]))
			return err_set(err, UNIAP_E_INVALID, "%s.%.64s: unknown field", root,
			               v->string ? v->string : "?");
	}
	uop_options_init(o);
	if (max_time_limit_s <= 0)
		max_time_limit_s = 86400;
	limit = o->time_limit_s < max_time_limit_s ? o->time_limit_s : max_time_limit_s;
	if ((rc = runner_number(obj, root, "batch", 1, 1e9, 1, 1, &batch, err)) != UNIAP_OK ||
	    (rc = runner_number(obj, root, "time_limit_s", 0.001, max_time_limit_s, 0, 0, &limit, err)) != UNIAP_OK ||
	    (rc = runner_number(obj, root, "deadline_s", 0.001, 1e9, 0, 0, &deadline, err)) != UNIAP_OK ||
	    (rc = runner_number(obj, root, "gap", 0, 1, 0, 0, &gap, err)) != UNIAP_OK ||
	    (rc = runner_bool(obj, root, "recompute", &o->recompute, err)) != UNIAP_OK ||
	    (rc = runner_bool(obj, root, "zero", &o->zero, err)) != UNIAP_OK ||
	    (rc = runner_bool(obj, root, "sequence_parallel", &o->sp, err)) != UNIAP_OK ||
	    (rc = runner_bool(obj, root, "selective_recompute", &o->selective, err)) != UNIAP_OK ||
	    (rc = runner_bool(obj, root, "fp8", &o->fp8, err)) != UNIAP_OK ||
	    (rc = runner_bool(obj, root, "uneven_microbatches", &o->uneven, err)) != UNIAP_OK ||
	    (rc = runner_bool(obj, root, "early_stop", &o->early_stop, err)) != UNIAP_OK ||
	    (rc = runner_bool(obj, root, "every_candidate", &o->every_candidate, err)) != UNIAP_OK ||
	    (rc = runner_number(obj, root, "virtual_stages", 2, COST_MAX_VIRTUAL_STAGES, 1, 0, &vs, err)) != UNIAP_OK ||
	    (rc = runner_number(obj, root, "context_parallel", 1, MODEL_MAX_DEVICES, 1, 0, &cpv, err)) != UNIAP_OK)
		/* absent: 0, each v of UOP_VIRTUAL_SEARCH_MIN .. _MAX a candidate */
		return rc;
	o->virtual_stages = (int)vs;
	o->cp = (int)cpv;
	v = cJSON_GetObjectItemCaseSensitive(obj, "cp_comm");
	if (v && (!cJSON_IsString(v) || (strcmp(v->valuestring, "p2p") != 0 && strcmp(v->valuestring, "a2a") != 0)))
		return err_set(err, UNIAP_E_INVALID, "%s.cp_comm: must be \"p2p\" or \"a2a\"", root);
	o->cp_a2a = v && strcmp(v->valuestring, "a2a") == 0;
	if (o->cp_a2a && o->cp <= 1)
		return err_set(err, UNIAP_E_INVALID, "%s.cp_comm: only with context_parallel > 1", root);
	v = cJSON_GetObjectItemCaseSensitive(obj, "objective");
	if (v && (!cJSON_IsString(v) ||
	          (strcmp(v->valuestring, "formula") != 0 && strcmp(v->valuestring, "makespan") != 0)))
		return err_set(err, UNIAP_E_INVALID, "%s.objective: must be \"formula\" or \"makespan\"", root);
	o->makespan = v && strcmp(v->valuestring, "makespan") == 0;
	o->batch = (long)batch;
	o->time_limit_s = limit;
	o->deadline_s = deadline; /* seconds from the job's start: runner_run_job makes it a time */
	o->rel_gap = gap;
	v = cJSON_GetObjectItemCaseSensitive(obj, "schedule");
	if (v && (!cJSON_IsString(v) || cost_schedule_parse(v->valuestring, &o->schedule) != 0))
		return err_set(err, UNIAP_E_INVALID, "%s.schedule: must be \"gpipe\", \"1f1b\" or \"interleaved\"",
		               root);
	if (cJSON_GetObjectItemCaseSensitive(obj, "virtual_stages") && o->schedule != COST_INTERLEAVED)
		return err_set(err, UNIAP_E_INVALID, "%s.virtual_stages: only with \"schedule\": \"interleaved\"", root);
	v = cJSON_GetObjectItemCaseSensitive(obj, "space");
	if (v && (!cJSON_IsString(v) || uop_space_parse(v->valuestring, &o->space) != 0))
		return err_set(err, UNIAP_E_INVALID,
		               "%s.space: must be \"unified\", \"inter\", \"intra\" or \"uniform\"", root);
	v = cJSON_GetObjectItemCaseSensitive(obj, "runtime");
	if (v && (!cJSON_IsString(v) || !(o->runtime = runtime_find(v->valuestring)))) {
		char names[256];

		runtime_names(names, sizeof(names));
		return err_set(err, UNIAP_E_INVALID, "%s.runtime: must be one of %s", root, names);
	}
	return UNIAP_OK;
}

uniap_code runner_targets_json(const cJSON *obj, const char *root, const struct uop_options *o,
                               enum target_kind *targets, size_t *n, int *given, struct uniap_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "targets"), *t;
	size_t i, k = 0;

	*n = 0;
	*given = v != NULL;
	if (!v) {
		targets[(*n)++] = TARGET_ANY;
		return UNIAP_OK;
	}
	if (!cJSON_IsArray(v))
		return err_set(err, UNIAP_E_INVALID, "%s.targets: must be an array of target names, got %s", root,
		               jdec_type_name(v));
	if (cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > TARGET_COUNT)
		return err_set(err, UNIAP_E_INVALID, "%s.targets: must hold 1 to %d names, got %d", root,
		               TARGET_COUNT, cJSON_GetArraySize(v));
	cJSON_ArrayForEach(t, v) {
		enum target_kind kind;

		if (!cJSON_IsString(t) || target_parse(t->valuestring, &kind) != 0)
			return err_set(err, UNIAP_E_INVALID,
			               "%s.targets[%zu]: must be \"any\", \"megatron\", \"deepspeed\" or "
			               "\"galvatron\"", root, k);
		for (i = 0; i < *n; i++)
			if (targets[i] == kind)
				return err_set(err, UNIAP_E_INVALID, "%s.targets[%zu]: \"%s\" given twice", root, k,
				               target_name(kind));
		if (kind != TARGET_ANY && o->space == UOP_SPACE_UNIFORM)
			return err_set(err, UNIAP_E_INVALID,
			               "%s.targets[%zu]: the uniform space is one Megatron-style shape already; plan "
			               "\"%s\" on the unified, inter or intra space", root, k, target_name(kind));
		targets[(*n)++] = kind;
		k++;
	}
	return UNIAP_OK;
}

uniap_code runner_margin_json(const cJSON *obj, const char *root, struct cluster_profile *c,
                              struct uniap_err *err)
{
	char field[96];
	double margin = 0;
	uniap_code rc;

	if (!cJSON_GetObjectItemCaseSensitive(obj, "memory_margin"))
		return UNIAP_OK;
	if ((rc = runner_number(obj, root, "memory_margin", 0, MODEL_MAX_MEMORY_FRACTION, 0, 0, &margin, err)) !=
	    UNIAP_OK)
		return rc;
	snprintf(field, sizeof(field), "%s.memory_margin", root);
	return cluster_set_memory_margin(c, margin, field, err);
}

/* The canonical text of the catalog entry called name (kind 'c' cluster, 'm' model) after
 * one pass through the job's stored request (encoded, decoded, encoded again, as text is:
 * doubles do not print back to the same digits); owned (cJSON_free), NULL if none. */
static char *runner_catalog_text(char kind, const char *name)
{
	struct cluster_profile cp;
	struct model_profile mp;
	cJSON *doc = NULL;
	char *text = NULL;
	int i;

	if (kind == 'c' ? catalog_cluster(name, &cp, NULL) != UNIAP_OK : catalog_model(name, &mp, NULL) != UNIAP_OK)
		return NULL;
	for (i = 0; i < 2; i++) {
		doc = kind == 'c' ? jenc_cluster(&cp) : jenc_model(&mp);
		if (kind == 'c')
			cluster_release(&cp);
		else
			model_release(&mp);
		text = doc ? cJSON_PrintUnformatted(doc) : NULL;
		cJSON_Delete(doc);
		if (i == 1 || !text ||
		    (kind == 'c' ? jdec_cluster(text, strlen(text), &cp, NULL) : jdec_model(text, strlen(text), &mp, NULL)) !=
		            UNIAP_OK)
			break;
		cJSON_free(text);
		text = NULL;
	}
	return text;
}

/*
 * 1 when text is, byte for byte, the canonical document of the catalog entry
 * called name: a public document, whose cache entries may be shared by every
 * tenant.
 */
static int runner_is_catalog(char kind, const char *name, const char *text)
{
	char *canon = name && text ? runner_catalog_text(kind, name) : NULL;
	int same = canon && strcmp(canon, text) == 0;

	cJSON_free(canon);
	return same;
}

uniap_code runner_memo_base(const struct runner_request *r, int64_t tenant, unsigned char out[STORE_SHA256_BYTES],
                            struct uniap_err *err)
{
	cJSON *c = jenc_cluster(&r->cluster), *m = jenc_model(&r->model);
	char *ct = c ? cJSON_PrintUnformatted(c) : NULL, *mt = m ? cJSON_PrintUnformatted(m) : NULL;
	char head[320], scope[48];
	size_t hl, cl, ml;
	char *all = NULL;
	uniap_code rc = UNIAP_OK;

	/* scoped to the tenant, so that "cached" never tells one tenant of another's documents;
	 * a problem made only of catalog documents is public and shares one global scope */
	if (ct && mt && runner_is_catalog('c', r->cluster.name, ct) && runner_is_catalog('m', r->model.name, mt))
		snprintf(scope, sizeof(scope), "global");
	else
		snprintf(scope, sizeof(scope), "tenant %lld", (long long)tenant);
	/* unified and intra offer every strategy; inter only pure data parallelism */
	/* each candidate's key carries its virtual stages (runner_memo_key) */
	snprintf(head, sizeof(head), "uniap-memo %d\nscope %s\nbatch %ld schedule %s recompute %d%s%s%s%s filter %s%s%s\n",
	         UOP_MEMO_FORMAT, scope, r->opts.batch,
	         cost_schedule_name(target_schedule(r->opts.target, r->opts.schedule)), r->opts.recompute,
	         r->opts.zero ? " zero 1" : "", r->opts.sp ? " sp 1" : "", r->opts.selective ? " selective 1" : "",
	         r->opts.uneven ? " uneven 1" : "",
	         r->opts.space == UOP_SPACE_INTER ? "dp" : r->opts.space == UOP_SPACE_UNIFORM ? "megatron" : "all",
	         r->opts.target != TARGET_ANY ? " target " : "",
	         r->opts.target != TARGET_ANY ? target_name(r->opts.target) : "");
	if (r->opts.fp8 && strlen(head) + 5 < sizeof(head))
		snprintf(head + strlen(head), sizeof(head) - strlen(head), "fp8 1\n");
	/* the makespan objective prices 1F1B candidates differently (and their bounds) */
	if (r->opts.makespan && strlen(head) + 20 < sizeof(head))
		snprintf(head + strlen(head), sizeof(head) - strlen(head), "objective makespan\n");
	if (r->opts.cp > 1 && strlen(head) + 32 < sizeof(head))
		snprintf(head + strlen(head), sizeof(head) - strlen(head), "context_parallel %d%s\n", r->opts.cp,
		         r->opts.cp_a2a ? " a2a" : "");
	/* a runtime other than the target's prices every candidate differently */
	if (r->opts.runtime && strlen(head) + strlen(r->opts.runtime->name) + 10 < sizeof(head))
		snprintf(head + strlen(head), sizeof(head) - strlen(head), "runtime %s\n", r->opts.runtime->name);
	if (!ct || !mt) {
		rc = err_set(err, UNIAP_E_NOMEM, "cache key: out of memory");
		goto out;
	}
	hl = strlen(head);
	cl = strlen(ct);
	ml = strlen(mt);
	all = malloc(hl + cl + ml + 2);
	if (!all) {
		rc = err_set(err, UNIAP_E_NOMEM, "cache key: out of memory");
		goto out;
	}
	memcpy(all, head, hl);
	memcpy(all + hl, ct, cl);
	all[hl + cl] = '\n';
	memcpy(all + hl + cl + 1, mt, ml);
	all[hl + cl + 1 + ml] = '\n';
	store_sha256(all, hl + cl + ml + 2, out);
out:
	free(all);
	cJSON_free(ct);
	cJSON_free(mt);
	cJSON_Delete(c);
	cJSON_Delete(m);
	return rc;
}

/* ------------------------------------------------------------ memo on the store */

/* The cache key of part ('f' facts, 'm' matrices) of candidate (pp, vs, c) of the slot's job;
 * without virtual stages (vs 1) the key is the one it always was. */
static void runner_memo_key(const struct runner_slot *slot, int pp, int vs, long c, char part,
                            unsigned char key[STORE_SHA256_BYTES])
{
	unsigned char buf[STORE_SHA256_BYTES + 25];
	uint64_t v[3] = { (uint64_t)pp, (uint64_t)c, (uint64_t)vs };
	int i, j, n = vs > 1 ? 3 : 2;

	memcpy(buf, slot->memo_base, STORE_SHA256_BYTES);
	for (i = 0; i < n; i++)
		for (j = 0; j < 8; j++)
			buf[STORE_SHA256_BYTES + 8 * i + j] = (unsigned char)(v[i] >> (8 * j));
	buf[STORE_SHA256_BYTES + 8 * n] = (unsigned char)part;
	store_sha256(buf, STORE_SHA256_BYTES + 8 * (size_t)n + 1, key);
}

static void runner_count(struct runner *r, int64_t *counter)
{
	pthread_mutex_lock(&r->lock);
	(*counter)++;
	pthread_mutex_unlock(&r->lock);
}

/* The cached bytes of part of candidate (pp, c); owned (free) or NULL on a miss. */
static char *runner_cache_read(struct runner_slot *slot, int pp, int vs, long c, char part, size_t *bytes)
{
	unsigned char key[STORE_SHA256_BYTES];
	char *body = NULL;

	runner_memo_key(slot, pp, vs, c, part, key);
	if (store_cache_get(slot->r->cfg.store, key, &body, bytes, NULL) != UNIAP_OK)
		return NULL;
	return body;
}

static void runner_cache_write(struct runner_slot *slot, int pp, int vs, long c, char part,
                               const unsigned char *buf, size_t len)
{
	unsigned char key[STORE_SHA256_BYTES];

	runner_memo_key(slot, pp, vs, c, part, key);
	/* an entry over the cache's cap is simply not kept */
	if (store_cache_put(slot->r->cfg.store, key, buf, len, NULL) == UNIAP_OK)
		runner_count(slot->r, &slot->r->stats.cache_puts);
}

static int runner_memo_facts(void *ctx, int pp, int vs, long c, struct opt_result *facts)
{
	struct runner_slot *slot = ctx;
	size_t bytes = 0;
	char *body = runner_cache_read(slot, pp, vs, c, 'f', &bytes);
	int hit = body && opt_result_unpack((const unsigned char *)body, bytes, facts, NULL) == UNIAP_OK;

	free(body);
	runner_count(slot->r, hit ? &slot->r->stats.cache_hits : &slot->r->stats.cache_misses);
	return hit;
}

static int runner_memo_matrices(void *ctx, int pp, int vs, long c, struct cost_candidate *cand)
{
	struct runner_slot *slot = ctx;
	size_t bytes = 0;
	char *body = runner_cache_read(slot, pp, vs, c, 'm', &bytes);
	int hit = body && opt_candidate_unpack((const unsigned char *)body, bytes, cand, NULL) == UNIAP_OK;

	free(body);
	return hit;
}

/* The bytes of cand's cost arrays (what its packed form is mostly made of). */
static double runner_matrices_bytes(const struct cost_candidate *cand)
{
	double k = (double)cost_k(cand);

	return 8.0 * (3.0 * k * (double)cand->n_layers + 2.0 * k * k * (double)cand->n_edges);
}

static void runner_memo_put(void *ctx, int pp, int vs, long c, const struct opt_result *facts,
                            const struct cost_candidate *cand)
{
	struct runner_slot *slot = ctx;
	unsigned char *buf = NULL;
	size_t len = 0;

	/* the matrices first (facts whose plan has no matrices are rebuilt and checked), and
	 * only when small: a large model on many devices has matrices of 10-100 MB that would
	 * evict every other entry, while rebuilding them costs less than solving */
	if (cand && runner_matrices_bytes(cand) <= RUNNER_MATRICES_MAX &&
	    opt_candidate_pack(cand, &buf, &len, NULL) == UNIAP_OK)
		runner_cache_write(slot, pp, vs, c, 'm', buf, len);
	free(buf);
	buf = NULL;
	if (opt_result_pack(facts, &buf, &len, NULL) == UNIAP_OK)
		runner_cache_write(slot, pp, vs, c, 'f', buf, len);
	free(buf);
}


/* ------------------------------------------------------------ one job across instances */

/*
 * A shared run's callbacks (uop.h, "Sharing"; docs/scale.md, "One job across
 * replicas"): the units of run `run` of job `job` in the store.  The main run
 * (the job's owner) and helpers (runner_help_job) use the same ones.  claim
 * runs on the run's own thread; put on any (a worker's answer is recorded on
 * a pool thread), so the counters it writes are atomic.
 */
struct runner_share {
	struct runner_slot *slot;
	int64_t job;
	int run;
	int helper;
	int64_t wake_gen;             /* a helper's: r->wake_gen when it joined */
	int left_for_queue;           /* a helper's: it ended because a job was queued */
	atomic_llong put, taken, given_up;
};

/* 1 when a run of opts is worth sharing: its candidates are solved (not every plan of one
 * strategy evaluated: the uniform space and one-strategy targets) and it has no deadline. */
static int runner_shareable(const struct runner *r, const struct uop_options *o)
{
	return !r->cfg.no_share && store_shares(r->cfg.store) && o->space != UOP_SPACE_UNIFORM &&
	       !target_rules(o->target)->one_strategy && o->deadline_s <= 0;
}

static const char *runner_build(const struct runner *r)
{
	return r->cfg.build ? r->cfg.build : "unknown";
}

static enum uop_share_claim runner_share_claim(void *ctx, int pp, int vs, long c, struct opt_result *facts,
                                               double *incumbent)
{
	struct runner_share *sh = ctx;
	struct runner *r = sh->slot->r;
	enum store_unit_state st;
	char *body = NULL;
	size_t bytes = 0;
	int over = 0;

	*incumbent = INFINITY;
	if (sh->helper) {
		int64_t gen;
		int own = 0, k;

		pthread_mutex_lock(&r->lock);
		gen = r->wake_gen;
		for (k = 0; k < r->n_slots; k++)
			own |= r->slots[k].job == sh->job && !r->slots[k].helping;
		pthread_mutex_unlock(&r->lock);
		if (gen != sh->wake_gen) {
			/* a job was queued: this thread's first duty is the queue */
			sh->left_for_queue = 1;
			return UOP_SHARE_END;
		}
		if (own)
			return UOP_SHARE_END; /* the job came back to this instance as its own: it runs it */
	}
	/* a store that does not answer, or a job no longer running: a helper ends, the main
	 * run solves it unclaimed (its own writes then say whether it still owns the job) */
	if (store_unit_claim(r->cfg.store, sh->job, sh->run, pp, vs, c, r->owner, runner_build(r), r->lease_ms, &st,
	                     &body, &bytes, incumbent, &over, NULL) != UNIAP_OK)
		return UOP_SHARE_END;
	if (st == STORE_UNIT_BUSY)
		return UOP_SHARE_BUSY;
	if (st == STORE_UNIT_DONE) {
		int ok = opt_result_unpack((const unsigned char *)body, bytes, facts, NULL) == UNIAP_OK;

		free(body);
		if (!ok)
			return UOP_SHARE_END;
		atomic_fetch_add(&sh->taken, 1);
		return UOP_SHARE_DONE;
	}
	free(body);
	if (over) {
		/* another instance held it and its lease ran out (it died, or hangs): its work
		 * on it is lost, and done again here */
		char detail[128];

		snprintf(detail, sizeof(detail), "run %d: took over candidate pp %d v %d c %ld from another instance",
		         sh->run, pp, vs, c);
		runner_log_line(r->cfg.log, "share", sh->job, sh->slot->tenant, "busy", "mine", detail);
	}
	return UOP_SHARE_MINE;
}

static void runner_share_put(void *ctx, int pp, int vs, long c, const struct opt_result *facts)
{
	struct runner_share *sh = ctx;
	struct runner *r = sh->slot->r;
	unsigned char *buf = NULL;
	size_t len = 0;

	if (facts && opt_result_pack(facts, &buf, &len, NULL) != UNIAP_OK)
		facts = NULL; /* not packable: given up, so another solves it */
	if (store_unit_put(r->cfg.store, sh->job, sh->run, pp, vs, c, r->owner, runner_build(r), facts ? buf : NULL,
	                   len, facts && facts->stage ? facts->tpi_s : INFINITY, NULL) == UNIAP_OK)
		atomic_fetch_add(facts ? &sh->put : &sh->given_up, 1);
	free(buf);
}

static void runner_share_init(struct runner_share *sh, struct runner_slot *slot, int64_t job, int run, int helper)
{
	memset(sh, 0, sizeof(*sh));
	sh->slot = slot;
	sh->job = job;
	sh->run = run;
	sh->helper = helper;
	atomic_init(&sh->put, 0);
	atomic_init(&sh->taken, 0);
	atomic_init(&sh->given_up, 0);
}

/* ------------------------------------------------------------ running one job */

/* The job's lease is lost (another instance holds the job now): stop its
 * work at the next candidate; nothing more is written about it.  Any thread. */
static void runner_lost(struct runner_slot *slot)
{
	atomic_store(&slot->lost, 1);
	atomic_store(&slot->cancel, 1);
}

/*
 * The optimizer calls this from any thread.  The write happens under the
 * slot's progress lock, so writes land in the order they were decided and an
 * older count never overwrites a newer one (two threads could otherwise race
 * past the lock and leave "23 of 24" on a finished job).
 */
static void runner_progress(void *ctx, const struct uop_progress *p)
{
	struct runner_slot *slot = ctx;
	double now = opt_clock_s();

	pthread_mutex_lock(&slot->progress_lock);
	/* the first proven bound (the bound pass's end, with nothing done yet) goes out at
	 * once, like the last count */
	if (p->done == p->total || now - slot->last_progress_s >= RUNNER_PROGRESS_EVERY_S ||
	    (p->bound_s > 0 && !slot->bound_sent)) {
		slot->last_progress_s = now;
		slot->bound_sent |= p->bound_s > 0;
		if (store_job_progress(slot->r->cfg.store, slot->job, (int64_t)(slot->done_before + p->done),
		                       (int64_t)(slot->done_before + p->total),
		                       isfinite(p->best_tpi_s) ? &p->best_tpi_s : NULL,
		                       p->bound_s > 0 && isfinite(p->bound_s) ? &p->bound_s : NULL,
		                       &slot->lease, NULL) == UNIAP_E_CONFLICT)
			runner_lost(slot);
	}
	pthread_mutex_unlock(&slot->progress_lock);
}

/*
 * The job's result document: {"plan": plan document or null, candidates, space,
 * optimal, ...} of the first target's run, with "target" when the request named
 * targets and "targets" (jenc_targets) when it ran several.
 */
static char *runner_result(const struct runner_request *req, const struct uop_result *rs,
                           const char *const *errors, size_t n_runs, size_t *len)
{
	const struct uop_result *res = &rs[0], *any = NULL;
	enum uop_space space = req->opts.space;
	cJSON *o = cJSON_CreateObject(), *plan = NULL, *arr;
	char *text = NULL;
	size_t i;

	if (!o)
		return NULL;
	for (i = 0; i < n_runs; i++)
		if (req->targets[i] == TARGET_ANY && !errors[i])
			any = &rs[i];
	if (req->targets_given && !cJSON_AddStringToObject(o, "target", target_name(req->targets[0]))) {
		cJSON_Delete(o);
		return NULL;
	}
	if (n_runs > 1) {
		arr = jenc_targets(req->targets, rs, errors, n_runs, any);
		if (!arr || !cJSON_AddItemToObject(o, "targets", arr)) {
			cJSON_Delete(arr);
			cJSON_Delete(o);
			return NULL;
		}
	}
	if (res->best >= 0)
		plan = jenc_plan(&res->cand, res->stage, res->strategy, &res->eval);
	else
		plan = cJSON_CreateNull();
	if (plan && cJSON_AddItemToObject(o, "plan", plan)) {
		plan = NULL;
		if (jenc_add_run_report(o, res, space))
			text = cJSON_PrintUnformatted(o);
	}
	cJSON_Delete(plan);
	cJSON_Delete(o);
	if (text)
		*len = strlen(text);
	return text;
}

static void runner_finish_stats(struct runner *r, enum store_job_state st, double seconds)
{
	int b;

	pthread_mutex_lock(&r->lock);
	r->stats.finished[st]++;
	if (st == STORE_JOB_SUCCEEDED) {
		r->stats.solve_seconds_sum += seconds;
		r->stats.solve_count++;
		for (b = 0; b < 8; b++)
			if (seconds <= runner_solve_buckets[b])
				r->stats.solve_bucket[b]++;
	}
	pthread_mutex_unlock(&r->lock);
}

/* Logs that this process stopped working on the slot's job because its lease
 * is lost (msg: the store's refusal, or NULL); returns -1 (nothing recorded). */
static int runner_log_lost(struct runner_slot *slot, const char *msg)
{
	char detail[UNIAP_ERR_MSG_MAX + 64];

	snprintf(detail, sizeof(detail), "lost the lease, stopped working on the job%s%.400s",
	         msg ? ": " : "", msg ? msg : "");
	runner_log_transition(slot->r->cfg.log, slot->job, slot->tenant, "running", "running", detail);
	return -1;
}

/*
 * 1 when a store call of a running job that returned rc is to be made again:
 * the database does not answer (a PostgreSQL restart, UNIAP_E_UNAVAILABLE),
 * which the job is not at fault for.  It is waited for, a try every
 * RUNNER_RETRY_S, for up to one lease from the first try (*until, 0 before
 * it): past it the lease has run out and the job is another runner's to run
 * again, which the fencing of the job's writes then says.
 */
static int runner_db_retry(const struct runner *r, uniap_code rc, double *until)
{
	if (rc != UNIAP_E_UNAVAILABLE)
		return 0;
	if (*until == 0)
		*until = opt_clock_s() + r->cfg.lease_s;
	if (opt_clock_s() >= *until)
		return 0;
	usleep((useconds_t)(RUNNER_RETRY_S * 1e6));
	return 1;
}

/* Ends job id as `to`, logs it, counts it; -1 when the store did not record it. */
static int runner_end(struct runner_slot *slot, enum store_job_state to, const char *result,
                      size_t result_len, const char *msg, double seconds)
{
	struct runner *r = slot->r;
	struct uniap_err err;
	char detail[UNIAP_ERR_MSG_MAX + 64];
	double until = 0;
	uniap_code rc;

	err_clear(&err);
	if (atomic_load(&slot->lost))
		return runner_log_lost(slot, NULL);
	do
		rc = store_job_transition(r->cfg.store, STORE_ANY_TENANT, slot->job, to, result, result_len, msg,
		                          &slot->lease, &err);
	while (!atomic_load(&slot->lost) && runner_db_retry(r, rc, &until));
	if (rc != UNIAP_OK) {
		if (err.code == UNIAP_E_CONFLICT)
			return runner_log_lost(slot, err.msg);
		runner_log_transition(r->cfg.log, slot->job, slot->tenant, "running", "running", err.msg);
		return -1;
	}
	if (msg)
		snprintf(detail, sizeof(detail), "%.512s", msg);
	else
		snprintf(detail, sizeof(detail), "solve %.3f s", seconds);
	runner_log_transition(r->cfg.log, slot->job, slot->tenant, "running", store_job_state_name(to), detail);
	runner_finish_stats(r, to, seconds);
	return 0;
}

/*
 * Ends a job whose work was canceled: by its client (canceled), or because
 * the service is stopping (back to the queue, so the next start runs it
 * again).  Returns 0 when it was one of these, -1 otherwise.
 */
static int runner_end_canceled(struct runner_slot *slot, int user_cancel, int stopping)
{
	struct uniap_err err;

	err_clear(&err);
	if (atomic_load(&slot->lost)) {
		runner_log_lost(slot, NULL);
		return 0;
	}
	if (user_cancel) {
		runner_end(slot, STORE_JOB_CANCELED, NULL, 0,
		           user_cancel == RUNNER_CANCEL_REVOKED ? "canceled: the tenant was revoked" : "canceled by the client",
		           0);
		return 0;
	}
	if (!stopping)
		return -1;
	if (atomic_load(&slot->lost))
		runner_log_lost(slot, NULL);
	else if (store_job_requeue(slot->r->cfg.store, slot->job, &slot->lease, &err) == UNIAP_OK)
		runner_log_transition(slot->r->cfg.log, slot->job, slot->tenant, "running", "queued",
		                      "the service stopped before the job finished");
	else if (err.code == UNIAP_E_CONFLICT)
		runner_log_lost(slot, err.msg);
	return 0;
}

/* ------------------------------------------------------------ calibration jobs */

/* What the cancel hook of a calibration reads (the job thread's own). */
struct runner_calib_ctx {
	struct runner_slot *slot;
	double deadline_s;            /* opt_clock_s() past which the job stops */
	int timed_out;
};

static int runner_calib_cancel(void *ctx)
{
	struct runner_calib_ctx *cc = ctx;

	if (atomic_load(&cc->slot->cancel))
		return 1;
	if (opt_clock_s() > cc->deadline_s) {
		cc->timed_out = 1;
		return 1;
	}
	return 0;
}

/* Fits done of all (the fit, then each leave-one-out fold) as the job's progress (throttled). */
static void runner_calib_progress(void *ctx, size_t done, size_t total)
{
	struct runner_calib_ctx *cc = ctx;
	struct uop_progress p = { done, total, INFINITY, 0 };

	runner_progress(cc->slot, &p);
}

static void runner_calib_limit(void *ctx, double time_limit_s)
{
	struct runner_calib_ctx *cc = ctx;

	cc->deadline_s = opt_clock_s() + time_limit_s;
}

/*
 * A calibration job (calibration.h), fitted here on the job thread: there is
 * no solve to hand to the pool, and the cancel hook polls the slot's cancel
 * flag and the request's time limit between evaluations of the fit.  The
 * calibrated cluster is stored as a new document of the tenant before the
 * job succeeds, and deleted again when the job cannot be recorded, so a
 * failure leaves the stored documents as they were.
 */
static void runner_run_calibration(struct runner_slot *slot, const struct store_job *job, double t0)
{
	struct runner *r = slot->r;
	struct runner_calib_ctx cc = { .slot = slot, .deadline_s = t0 + CALIBRATION_DEFAULT_TIME_LIMIT_S };
	struct calibration_output out;
	struct uniap_err err;
	char *text = NULL, msg[UNIAP_ERR_MSG_MAX + 64];
	size_t len = 0;
	int64_t doc_id = 0;
	int user_cancel, stopping;
	uniap_code rc;

	err_clear(&err);
	slot->last_progress_s = 0;
	rc = calibration_run(job->request, job->request_bytes, runner_calib_cancel, runner_calib_progress, &cc,
	                     runner_calib_limit, &out, &err);
	pthread_mutex_lock(&r->lock);
	user_cancel = slot->user_cancel;
	stopping = r->stopping;
	pthread_mutex_unlock(&r->lock);
	/* a cancel that came after the fit still wins: nothing is stored then */
	if (rc == UNIAP_OK && (user_cancel || stopping))
		rc = err_set(&err, UNIAP_E_CANCELED, "calibration: canceled");
	if (rc == UNIAP_OK)
		rc = store_doc_put(r->cfg.store, job->tenant_id, STORE_DOC_CLUSTER, out.name, out.cluster,
		                   strlen(out.cluster), &doc_id, &err);
	if (rc == UNIAP_OK && !(text = calibration_result(out.report, doc_id, out.name, &len)))
		rc = err_set(&err, UNIAP_E_NOMEM, "result: out of memory");
	if (rc == UNIAP_OK) {
		/* unrecorded, the job would name no cluster: the new one goes again */
		if (runner_end(slot, STORE_JOB_SUCCEEDED, text, len, NULL, opt_clock_s() - t0) != 0)
			store_doc_delete(r->cfg.store, job->tenant_id, STORE_DOC_CLUSTER, doc_id, NULL);
	} else if (rc == UNIAP_E_CANCELED && runner_end_canceled(slot, user_cancel, stopping) == 0) {
		/* ended above */
	} else if (rc == UNIAP_E_CANCELED && cc.timed_out) {
		snprintf(msg, sizeof(msg), "time_limit_s: the calibration ran past its limit of %.3g s",
		         cc.deadline_s - t0);
		runner_end(slot, STORE_JOB_FAILED, NULL, 0, msg, 0);
	} else {
		runner_end(slot, STORE_JOB_FAILED, NULL, 0, err.msg, 0);
	}
	cJSON_free(text);
	calibration_output_release(&out);
}

/* ------------------------------------------------------------ allocation jobs */

/* What the planner and hooks of an allocation read (the job thread's own). */
struct runner_alloc_ctx {
	struct runner_slot *slot;
	double time_limit_s;          /* per candidate of each planner run */
};

/*
 * The allocation's planner (allocate_plan_fn): one curve point as a plan job
 * would plan it, on the shared pool under the job's tag and the tenant's
 * group, with the job's cancel and stop flags; the cache it uses is the
 * curve-point cache below, not the candidates' memo.
 */
static uniap_code runner_alloc_plan(void *ctx, const struct cluster_profile *slice, const struct model_profile *model,
                                    struct uop_options *opts, struct uop_result *out, struct uniap_err *err)
{
	struct runner_alloc_ctx *ac = ctx;
	struct runner_slot *slot = ac->slot;
	struct runner *r = slot->r;

	opts->threads = r->cfg.workers;
	opts->time_limit_s = ac->time_limit_s;
	opts->tag = (uint64_t)slot->job;
	opts->group = (uint64_t)slot->tenant;
	opts->cancel = &slot->cancel;
	opts->stop = &slot->stop;
	opts->solve_lock = &r->solve_lock;
	/* no candidate memos: the allocation keeps whole curve points (runner_point_get/put),
	 * a few kB each, where a run's candidate matrices (up to RUNNER_MATRICES_MAX each) would
	 * fill the cache and evict the points of the allocation's own earlier runs */
	opts->memo = NULL;
	return uop_run(slice, model, opts, r->pool, out, err);
}

/* Each settled curve point: the job's progress, at most every RUNNER_PROGRESS_EVERY_S. */
static void runner_alloc_progress(void *ctx, size_t done, size_t total, const char *job, const char *pool,
                                  int devices, int planned, double thr)
{
	struct runner_alloc_ctx *ac = ctx;
	struct runner_slot *slot = ac->slot;
	double now = opt_clock_s();

	(void)job;
	(void)pool;
	(void)devices;
	(void)planned;
	(void)thr;
	pthread_mutex_lock(&slot->progress_lock);
	if (done == total || now - slot->last_progress_s >= RUNNER_PROGRESS_EVERY_S) {
		slot->last_progress_s = now;
		if (store_job_progress(slot->r->cfg.store, slot->job, (int64_t)done, (int64_t)total, NULL, NULL,
		                       &slot->lease, NULL) == UNIAP_E_CONFLICT)
			runner_lost(slot);
	}
	pthread_mutex_unlock(&slot->progress_lock);
}

/*
 * The curve-point cache (allocate.h point_get/put): entries of the cost cache
 * keyed by the SHA-256 of the tenant, the planner's time limit per candidate
 * and what names the point (the job's planning members and the slice), so a
 * point is never another tenant's; its body is {"thr", "plan"}.  Nothing is
 * put while the job is stopping (a stopped run is no proven answer).
 */
static void runner_point_key(const struct runner_alloc_ctx *ac, const char *what, unsigned char key[STORE_SHA256_BYTES])
{
	size_t wl = strlen(what);
	char head[96];
	int hl = snprintf(head, sizeof(head), "uniap-curve-point 1\ntenant %lld\ntime_limit %.17g\n",
	                  (long long)ac->slot->tenant, ac->time_limit_s);
	char *buf = malloc((size_t)hl + wl);

	if (!buf) { /* no key: a key that matches nothing a point was put under */
		memset(key, 0, STORE_SHA256_BYTES);
		return;
	}
	memcpy(buf, head, (size_t)hl);
	memcpy(buf + hl, what, wl);
	store_sha256(buf, (size_t)hl + wl, key);
	free(buf);
}

static int runner_point_get(void *ctx, const char *what, double *thr, cJSON **plan)
{
	struct runner_alloc_ctx *ac = ctx;
	unsigned char key[STORE_SHA256_BYTES];
	char *body = NULL;
	size_t bytes = 0;
	cJSON *o = NULL;
	const cJSON *t, *p;
	int hit = 0;

	runner_point_key(ac, what, key);
	if (store_cache_get(ac->slot->r->cfg.store, key, &body, &bytes, NULL) == UNIAP_OK &&
	    (o = cJSON_ParseWithLength(body, bytes)) != NULL) {
		t = cJSON_GetObjectItemCaseSensitive(o, "thr");
		p = cJSON_GetObjectItemCaseSensitive(o, "plan");
		if (cJSON_IsNumber(t) && t->valuedouble >= 0 && (cJSON_IsNull(p) || cJSON_IsObject(p))) {
			*thr = t->valuedouble;
			*plan = cJSON_IsObject(p) ? cJSON_DetachItemFromObjectCaseSensitive(o, "plan") : NULL;
			hit = !cJSON_IsObject(p) || *plan != NULL;
		}
	}
	cJSON_Delete(o);
	free(body);
	runner_count(ac->slot->r, hit ? &ac->slot->r->stats.cache_hits : &ac->slot->r->stats.cache_misses);
	return hit;
}

static void runner_point_put(void *ctx, const char *what, double thr, const cJSON *plan)
{
	struct runner_alloc_ctx *ac = ctx;
	unsigned char key[STORE_SHA256_BYTES];
	cJSON *o;
	char *text = NULL;

	if (atomic_load(&ac->slot->stop) || atomic_load(&ac->slot->cancel))
		return;
	o = cJSON_CreateObject();
	if (o && cJSON_AddNumberToObject(o, "thr", thr) &&
	    (plan ? cJSON_AddItemToObject(o, "plan", cJSON_Duplicate(plan, 1)) != 0 : cJSON_AddNullToObject(o, "plan") != NULL))
		text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return;
	runner_point_key(ac, what, key);
	/* an entry over the cache's cap is simply not kept */
	if (store_cache_put(ac->slot->r->cfg.store, key, (const unsigned char *)text, strlen(text), NULL) == UNIAP_OK)
		runner_count(ac->slot->r, &ac->slot->r->stats.cache_puts);
	cJSON_free(text);
}

/* 1 once the client asked the job to stop (POST /v1/jobs/{id}/stop): plan no more points. */
static int runner_alloc_stopped(void *ctx)
{
	struct runner_alloc_ctx *ac = ctx;

	return atomic_load(&ac->slot->stop) != 0;
}

/*
 * An allocation job (allocation.h): the engine of `uniap allocate` on the job
 * thread, its curve points planned on the shared pool (runner_alloc_plan).  A
 * stop ends the planning and allocates on the points planned so far (the
 * report says "stopped"); a cancel ends it with nothing.
 */
static void runner_run_allocation(struct runner_slot *slot, const struct store_job *job, double t0)
{
	struct runner *r = slot->r;
	struct runner_alloc_ctx ac = { .slot = slot };
	struct allocation_input in;
	struct allocate_request rq;
	struct uniap_err err;
	cJSON *report = NULL;
	char *text = NULL;
	int user_cancel, stopping;
	uniap_code rc;

	err_clear(&err);
	slot->last_progress_s = 0;
	rc = allocation_decode(job->request, job->request_bytes, &in, &err);
	if (rc == UNIAP_OK) {
		allocation_engine_request(&in, &rq);
		ac.time_limit_s = in.opts.time_limit_s;
		rq.plan = runner_alloc_plan;
		rq.plan_ctx = &ac;
		rq.progress = runner_alloc_progress;
		rq.progress_ctx = &ac;
		rq.stopped = runner_alloc_stopped;
		rq.stopped_ctx = &ac;
		if (!r->cfg.no_cache) {
			rq.point_get = runner_point_get;
			rq.point_put = runner_point_put;
			rq.cache_ctx = &ac;
		}
		rc = allocate_run(&rq, &report, &err);
	}
	pthread_mutex_lock(&r->lock);
	user_cancel = slot->user_cancel;
	stopping = r->stopping;
	pthread_mutex_unlock(&r->lock);
	if (rc == UNIAP_OK && !(text = cJSON_PrintUnformatted(report)))
		rc = err_set(&err, UNIAP_E_NOMEM, "result: out of memory");
	if (rc == UNIAP_OK)
		runner_end(slot, STORE_JOB_SUCCEEDED, text, strlen(text), NULL, opt_clock_s() - t0);
	else if (rc == UNIAP_E_CANCELED && runner_end_canceled(slot, user_cancel, stopping) == 0)
		; /* canceled by the client, or the grace period ran out: the next start runs it again */
	else
		runner_end(slot, STORE_JOB_FAILED, NULL, 0, err.msg, 0);
	cJSON_free(text);
	cJSON_Delete(report);
	allocation_input_release(&in);
}

/* Several targets are priced against the unconstrained optimum: it is planned too, last. */
static void runner_targets_expand(struct runner_request *req)
{
	size_t i;

	for (i = 0; i < req->n_targets && req->targets[i] != TARGET_ANY; i++)
		;
	if (req->n_targets > 1 && i == req->n_targets)
		req->targets[req->n_targets++] = TARGET_ANY;
}

/*
 * Helps run `run` of job slot->job, another instance's (docs/scale.md, "One
 * job across replicas"): the same request, options and cost cache as its
 * owner's run, every candidate claimed first, the units it can claim solved
 * here and put in the store; the result is thrown away (the owner's run takes
 * the units).  It ends when nothing is left to claim, the job stops running,
 * or a job is queued (this thread's first duty).  *left_for_queue says the last.
 */
static void runner_help_job(struct runner_slot *slot, int run, int *left_for_queue)
{
	struct runner *r = slot->r;
	struct store_job job;
	struct runner_request req;
	struct uop_result res;
	struct uop_memo_ops memo = { runner_memo_facts, runner_memo_matrices, runner_memo_put, slot };
	struct runner_share share;
	struct uop_share_ops share_ops = { runner_share_claim, runner_share_put, 1, &share };
	struct uniap_err err;
	char detail[160];
	double t0 = opt_clock_s();
	uniap_code rc;

	*left_for_queue = 0;
	memset(&req, 0, sizeof(req));
	if (store_job_get(r->cfg.store, STORE_ANY_TENANT, slot->job, &job, &err) != UNIAP_OK)
		return;
	rc = job.kind == STORE_JOB_PLAN ? runner_request_decode(job.request, job.request_bytes, &req, &err)
	                                : UNIAP_E_ARG;
	pthread_mutex_lock(&r->lock);
	slot->tenant = job.tenant_id;
	pthread_mutex_unlock(&r->lock);
	store_job_release(&job);
	if (rc != UNIAP_OK)
		return;
	runner_targets_expand(&req);
	if (run < 0 || (size_t)run >= req.n_targets) {
		runner_request_release(&req);
		return;
	}
	req.opts.target = req.targets[run];
	if (!runner_shareable(r, &req.opts) || (!r->cfg.no_cache &&
	    runner_memo_base(&req, slot->tenant, slot->memo_base, &err) != UNIAP_OK)) {
		runner_request_release(&req);
		return;
	}
	runner_share_init(&share, slot, slot->job, run, 1);
	pthread_mutex_lock(&r->lock);
	share.wake_gen = r->wake_gen;
	r->stats.share_joins++;
	pthread_mutex_unlock(&r->lock);
	snprintf(detail, sizeof(detail), "run %d: helping another instance's job", run);
	runner_log_line(r->cfg.log, "share", slot->job, slot->tenant, "idle", "helping", detail);
	req.opts.threads = r->cfg.workers;
	req.opts.tag = (uint64_t)slot->job | RUNNER_HELP_TAG;
	req.opts.group = (uint64_t)slot->tenant;
	req.opts.cancel = &slot->cancel;
	req.opts.stop = &slot->stop;
	req.opts.memo = r->cfg.no_cache ? NULL : &memo;
	req.opts.solve_lock = &r->solve_lock;
	req.opts.budget_worker_s = 0; /* the owner counts these solves against the job's budget */
	req.opts.share = &share_ops;
	rc = uop_run(&req.cluster, &req.model, &req.opts, r->pool, &res, &err);
	if (rc == UNIAP_OK)
		uop_result_release(&res);
	*left_for_queue = share.left_for_queue;
	snprintf(detail, sizeof(detail), "run %d: %lld candidates solved here, %lld given up, %.3f s%s", run,
	         (long long)atomic_load(&share.put), (long long)atomic_load(&share.given_up), opt_clock_s() - t0,
	         share.left_for_queue ? "; left for a queued job" : rc == UNIAP_E_CANCELED ? "; canceled" : "");
	runner_log_line(r->cfg.log, "share", slot->job, slot->tenant, "helping", "idle", detail);
	pthread_mutex_lock(&r->lock);
	r->stats.share_units_put += atomic_load(&share.put);
	pthread_mutex_unlock(&r->lock);
	runner_request_release(&req);
}

static void runner_run_job(struct runner_slot *slot)
{
	struct runner *r = slot->r;
	struct store_job job;
	struct runner_request req;
	struct uop_result rs[TARGET_COUNT];
	char errors_buf[TARGET_COUNT][UNIAP_ERR_MSG_MAX];
	const char *errors[TARGET_COUNT] = { NULL };
	size_t n_runs = 0, i, done_before = 0;
	struct uop_memo_ops memo = { runner_memo_facts, runner_memo_matrices, runner_memo_put, slot };
	struct runner_share share;
	struct uop_share_ops share_ops = { runner_share_claim, runner_share_put, 0, &share };
	struct uniap_err err;
	uniap_code rc;
	double t0 = opt_clock_s(), spent_worker_s = 0, budget = r->cfg.job_budget_worker_s;
	double until = 0; /* runner_db_retry's: one lease from the job's first read that found no database */
	int user_cancel, stopping, budget_out = 0, budget_by_tenant = 0, deadline_out = 0, stop_out = 0;
	double deadline = 0;

	err_clear(&err);
	memset(rs, 0, sizeof(rs));
	memset(&req, 0, sizeof(req));
	do
		rc = store_job_get(r->cfg.store, STORE_ANY_TENANT, slot->job, &job, &err);
	while (runner_db_retry(r, rc, &until));
	if (rc == UNIAP_E_UNAVAILABLE) {
		/* still none: leave the job to its lease, which runs out; recovery queues it again */
		runner_log_transition(r->cfg.log, slot->job, 0, "running", "running", err.msg);
		return;
	}
	if (rc != UNIAP_OK) {
		runner_end(slot, STORE_JOB_FAILED, NULL, 0, err.msg, 0);
		return;
	}
	pthread_mutex_lock(&r->lock); /* runner_cancel_revoked reads it */
	slot->tenant = job.tenant_id;
	pthread_mutex_unlock(&r->lock);
	runner_log_transition(r->cfg.log, slot->job, slot->tenant, "queued", "running", NULL);
	if (job.kind == STORE_JOB_CALIBRATION) {
		runner_run_calibration(slot, &job, t0);
		store_job_release(&job);
		return;
	}
	if (job.kind == STORE_JOB_ALLOCATION) {
		runner_run_allocation(slot, &job, t0);
		store_job_release(&job);
		return;
	}
	rc = runner_request_decode(job.request, job.request_bytes, &req, &err);
	store_job_release(&job);
	if (rc == UNIAP_OK) {
		/* the tenant's own cap, when it has one below the operator's (docs/jobs.md, "Budget") */
		struct store_tenant t;

		do
			rc = store_tenant_get(r->cfg.store, slot->tenant, &t, &err);
		while (runner_db_retry(r, rc, &until));
		if (rc == UNIAP_E_UNAVAILABLE) {
			runner_log_transition(r->cfg.log, slot->job, slot->tenant, "running", "running", err.msg);
			runner_request_release(&req);
			return;
		}
		if (rc == UNIAP_OK && t.max_job_worker_s > 0 && (budget <= 0 || t.max_job_worker_s < budget)) {
			budget = t.max_job_worker_s;
			budget_by_tenant = 1;
		}
	}
	if (rc == UNIAP_OK)
		runner_targets_expand(&req);
	/* one deadline for all the job's target runs, from its start */
	if (rc == UNIAP_OK && req.opts.deadline_s > 0) {
		deadline = req.opts.deadline_s;
		req.opts.deadline_s += t0;
	}
	for (n_runs = 0; rc == UNIAP_OK && n_runs < req.n_targets; n_runs++) {
		req.opts.target = req.targets[n_runs];
		if (!r->cfg.no_cache)
			rc = runner_memo_base(&req, slot->tenant, slot->memo_base, &err);
		if (rc != UNIAP_OK)
			break;
		req.opts.threads = r->cfg.workers;
		req.opts.tag = (uint64_t)slot->job;
		req.opts.group = (uint64_t)slot->tenant; /* the pool's round-robin and spare worker go by tenant */
		req.opts.progress = runner_progress;
		req.opts.progress_ctx = slot;
		req.opts.cancel = &slot->cancel;
		req.opts.stop = &slot->stop;
		req.opts.memo = r->cfg.no_cache ? NULL : &memo;
		req.opts.solve_lock = &r->solve_lock;
		/* other instances may solve this run's candidates with it (docs/scale.md) */
		req.opts.share = NULL;
		runner_share_init(&share, slot, slot->job, (int)n_runs, 0);
		if (runner_shareable(r, &req.opts) &&
		    store_job_share(r->cfg.store, slot->job, &slot->lease, (int)n_runs, runner_build(r), NULL) == UNIAP_OK) {
			req.opts.share = &share_ops;
		}
		/* what the earlier targets' runs left of the job's budget (a tiny one solves nothing) */
		req.opts.budget_worker_s = budget <= 0 ? 0 : budget - spent_worker_s > 0 ? budget - spent_worker_s : 1e-9;
		pthread_mutex_lock(&slot->progress_lock);
		slot->last_progress_s = 0;
		slot->done_before = done_before;
		slot->bound_sent = 0;
		pthread_mutex_unlock(&slot->progress_lock);
		rc = uop_run(&req.cluster, &req.model, &req.opts, r->pool, &rs[n_runs], &err);
		if (rc == UNIAP_E_INVALID && n_runs > 0) {
			/* a later target that cannot plan this model (megatron without model.shape):
			 * said in its entry, the others stand */
			snprintf(errors_buf[n_runs], sizeof(errors_buf[n_runs]), "%s", err.msg);
			errors[n_runs] = errors_buf[n_runs];
			memset(&rs[n_runs], 0, sizeof(rs[n_runs]));
			rs[n_runs].best = -1;
			err_clear(&err);
			rc = UNIAP_OK;
		}
		if (req.opts.share) {
			/* no helper joins a run that is over (the next run opens itself) */
			store_job_share(r->cfg.store, slot->job, &slot->lease, -1, runner_build(r), NULL);
			pthread_mutex_lock(&r->lock);
			r->stats.share_units_put += atomic_load(&share.put);
			r->stats.share_units_taken += atomic_load(&share.taken);
			pthread_mutex_unlock(&r->lock);
		}
		if (rc == UNIAP_OK) {
			done_before += rs[n_runs].n_candidates;
			spent_worker_s += rs[n_runs].worker_s;
			budget_out |= rs[n_runs].budget_spent;
			deadline_out |= rs[n_runs].deadline_passed;
			stop_out |= rs[n_runs].stopped;
		}
	}
	pthread_mutex_lock(&r->lock);
	user_cancel = slot->user_cancel;
	stopping = r->stopping;
	pthread_mutex_unlock(&r->lock);
	if (rc == UNIAP_OK) {
		size_t len = 0;
		char *text = runner_result(&req, rs, errors, n_runs, &len);

		/* the finished job's progress is its result's: every candidate of every run done */
		pthread_mutex_lock(&slot->progress_lock);
		if (store_job_progress(r->cfg.store, slot->job, (int64_t)done_before, (int64_t)done_before,
		                       rs[0].best >= 0 ? &rs[0].eval.tpi_s : NULL,
		                       rs[0].best >= 0 && isfinite(rs[0].bound_s) ? &rs[0].bound_s : NULL,
		                       &slot->lease, NULL) == UNIAP_E_CONFLICT)
			runner_lost(slot);
		pthread_mutex_unlock(&slot->progress_lock);
		if (budget_out && rs[0].best < 0) {
			char msg[160];

			snprintf(msg, sizeof(msg), "budget: the job spent its %.6g worker seconds (%s) before"
			         " any candidate gave a plan", budget,
			         budget_by_tenant ? "the tenant's max_job_worker_s" : "--job-budget");
			runner_end(slot, STORE_JOB_FAILED, NULL, 0, msg, 0);
		} else if (stop_out && rs[0].best < 0) {
			runner_end(slot, STORE_JOB_FAILED, NULL, 0,
			           "stopped: the client stopped the job before any candidate gave a plan", 0);
		} else if (deadline_out && rs[0].best < 0) {
			char msg[160];

			snprintf(msg, sizeof(msg), "deadline: the job's deadline_s of %.6g passed before any candidate"
			         " gave a plan", deadline);
			runner_end(slot, STORE_JOB_FAILED, NULL, 0, msg, 0);
		} else if (text)
			runner_end(slot, STORE_JOB_SUCCEEDED, text, len, NULL, opt_clock_s() - t0);
		else
			runner_end(slot, STORE_JOB_FAILED, NULL, 0, "result: out of memory", 0);
		cJSON_free(text);
	} else if (rc == UNIAP_E_CANCELED && runner_end_canceled(slot, user_cancel, stopping) == 0) {
		/* canceled by the client, or the grace period ran out: the next start runs it again */
	} else {
		runner_end(slot, STORE_JOB_FAILED, NULL, 0, err.msg, 0);
	}
	for (i = 0; i < n_runs && i < TARGET_COUNT; i++)
		uop_result_release(&rs[i]);
	runner_request_release(&req);
}

/* ------------------------------------------------------------ threads */

static void runner_deadline(struct timespec *ts, double seconds)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)seconds;
	ts->tv_nsec += (long)((seconds - floor(seconds)) * 1e9);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* 1 when a regular (not spare) job thread has no job; r->lock held. */
static int runner_regular_idle(const struct runner *r)
{
	for (int i = 0; i < r->n_slots; i++)
		if (!r->slots[i].spare && r->slots[i].job == 0)
			return 1;
	return 0;
}

static void *runner_thread(void *arg);

/*
 * r->lock held, a spare slot just claimed a job: when no started spare thread
 * is left idle, the next spare slot's thread starts, so the next tenant that
 * arrives with nothing running finds one waiting (up to spare_jobs of them;
 * docs/jobs.md, "Fairness").  A thread that cannot start is left unstarted.
 */
static void runner_spare_more(struct runner *r)
{
	int i, next = -1;

	for (i = r->cfg.jobs; i < r->n_slots; i++) {
		if (r->slots[i].started && r->slots[i].job == 0)
			return;
		if (!r->slots[i].started && next < 0)
			next = i;
	}
	if (next >= 0 && !r->stopping && pthread_create(&r->slots[next].thread, NULL, runner_thread, &r->slots[next]) == 0)
		r->slots[next].started = 1;
}

/*
 * r->lock held, the slot's thread found no queued job: when sharing, it looks
 * for a run of another instance's job to help (store_job_share_find), helps
 * it (the lock dropped meanwhile) and returns 1; 0 when there is none.
 */
static int runner_help_next(struct runner_slot *slot)
{
	struct runner *r = slot->r;
	int64_t skip[RUNNER_HELPED_MAX], job = 0;
	size_t n_skip = r->n_helped < RUNNER_HELPED_MAX ? r->n_helped : RUNNER_HELPED_MAX;
	int run = -1, left = 0;

	/* one thread of an instance helps at a time (looking included): a second would race
	 * the first for the same cores, and the others stay free for the queue */
	if (r->cfg.no_share || !store_shares(r->cfg.store) || r->stopping || r->helping)
		return 0;
	r->helping = 1;
	memcpy(skip, r->helped, n_skip * sizeof(*skip));
	pthread_mutex_unlock(&r->lock);
	if (store_job_share_find(r->cfg.store, r->owner, runner_build(r), RUNNER_SHARE_AFTER_MS, skip, n_skip, &job,
	                         &run, NULL) != UNIAP_OK)
		job = 0;
	pthread_mutex_lock(&r->lock);
	if (job == 0 || r->stopping) {
		r->helping = 0;
		return 0;
	}
	slot->job = job;
	slot->helping = 1;
	slot->help_run = run;
	slot->renewed_s = opt_clock_s(); /* runner_lease_tick looks whether the run is still open */
	slot->tenant = 0;
	slot->user_cancel = 0;
	atomic_store(&slot->cancel, 0);
	atomic_store(&slot->stop, 0);
	atomic_store(&slot->lost, 0);
	pthread_mutex_unlock(&r->lock);

	runner_help_job(slot, run, &left);

	pthread_mutex_lock(&r->lock);
	/* never again, unless it left for the queue: a run is helped once, to its end */
	if (!left)
		r->helped[r->n_helped++ % RUNNER_HELPED_MAX] = job * 16 + run;
	slot->job = 0;
	slot->helping = 0;
	r->helping = 0;
	pthread_cond_broadcast(&r->idle);
	return 1;
}

static void *runner_thread(void *arg)
{
	struct runner_slot *slot = arg;
	struct runner *r = slot->r;

	pthread_mutex_lock(&r->lock);
	while (!r->stopping) {
		int64_t id = 0;
		struct store_lease lease;
		struct timespec ts;

		/* claimed and registered under the lock: a running job is always findable;
		 * the spare thread claims only while every regular one runs a job */
		if (slot->spare && runner_regular_idle(r))
			id = 0;
		else if ((slot->spare ? store_job_claim_idle : store_job_claim)(r->cfg.store, r->owner, r->lease_ms,
		                                                                &id, &lease, NULL) != UNIAP_OK)
			id = 0;
		if (id == 0 && !slot->spare && runner_help_next(slot))
			continue;
		if (id == 0) {
			if (r->pending_wakes > 0) {
				r->pending_wakes = 0;
				continue;
			}
			/* pushed events say when a job is queued, not when another instance's job opens
			 * to helpers: a sharing instance keeps looking every second */
			runner_deadline(&ts, store_listens(r->cfg.store) && (r->cfg.no_share || !store_shares(r->cfg.store))
			                     ? RUNNER_PUSHED_POLL_S : RUNNER_IDLE_POLL_S);
			pthread_cond_timedwait(&r->wake, &r->lock, &ts);
			continue;
		}
		slot->job = id;
		if (slot->spare)
			runner_spare_more(r);
		slot->tenant = 0;
		slot->user_cancel = 0;
		slot->lease = lease;
		slot->renewed_s = opt_clock_s();
		atomic_store(&slot->cancel, 0);
		atomic_store(&slot->stop, 0);
		atomic_store(&slot->lost, 0);
		pthread_mutex_unlock(&r->lock);

		runner_run_job(slot);

		pthread_mutex_lock(&r->lock);
		slot->job = 0;
		pthread_cond_broadcast(&r->idle);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

uniap_code runner_start(const struct runner_config *cfg, struct runner **out, struct uniap_err *err)
{
	struct runner *r;
	struct pool_config pc;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	uniap_code rc;
	int i;

	if (!cfg->store)
		return err_set(err, UNIAP_E_ARG, "runner: store: required");
	if (cfg->spare_jobs < 0 || cfg->spare_jobs > RUNNER_SPARE_MAX)
		return err_set(err, UNIAP_E_ARG, "--spare-jobs: must be 0..%d, got %d", RUNNER_SPARE_MAX, cfg->spare_jobs);
	if (cfg->jobs < 0 || cfg->jobs > RUNNER_JOBS_MAX)
		return err_set(err, UNIAP_E_ARG, "--jobs: must be 1..%d, got %d", RUNNER_JOBS_MAX, cfg->jobs);
	if (!(cfg->lease_s == 0 || (cfg->lease_s >= 1 && cfg->lease_s <= 86400)))
		return err_set(err, UNIAP_E_ARG, "--lease: must be 1..86400 seconds, got %g", cfg->lease_s);
	if (cfg->workers < 0 || cfg->workers > POOL_THREADS_MAX)
		return err_set(err, UNIAP_E_ARG, "--workers: must be 1..%d, got %d", POOL_THREADS_MAX,
		               cfg->workers);
	r = calloc(1, sizeof(*r));
	if (!r)
		return err_set(err, UNIAP_E_NOMEM, "runner: out of memory");
	r->cfg = *cfg;
	if (r->cfg.jobs == 0)
		r->cfg.jobs = 2;
	if (r->cfg.workers == 0)
		r->cfg.workers = cores > 0 && cores < POOL_THREADS_MAX ? (int)cores : 1;
	if (r->cfg.lease_s == 0)
		r->cfg.lease_s = RUNNER_DEFAULT_LEASE_S;
	if (r->cfg.job_budget_worker_s == 0)
		r->cfg.job_budget_worker_s = RUNNER_DEFAULT_JOB_BUDGET_S;
	r->lease_ms = (int64_t)llround(r->cfg.lease_s * 1000);
	if ((rc = store_owner_new(r->owner, err)) != UNIAP_OK) {
		free(r);
		return rc;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->wake, NULL);
	pthread_cond_init(&r->idle, NULL);
	pthread_mutex_init(&r->solve_lock, NULL);
	pc.threads = r->cfg.workers;
	pc.spare_threads = r->cfg.spare_jobs; /* a worker kept per spare job thread (runner.h) */
	pc.queue_cap = 2 * r->cfg.workers * (r->cfg.jobs + r->cfg.spare_jobs + 1); /* room for the spares' jobs */
	pc.max_output_bytes = OPT_PACK_MAX;
	if ((rc = pool_new(&pc, &r->pool, err)) != UNIAP_OK) {
		pthread_mutex_destroy(&r->solve_lock);
		pthread_cond_destroy(&r->idle);
		pthread_cond_destroy(&r->wake);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return rc;
	}
	r->n_slots = r->cfg.jobs + r->cfg.spare_jobs;
	for (i = 0; i < r->n_slots; i++) {
		struct runner_slot *s = &r->slots[i];

		s->r = r;
		s->spare = i >= r->cfg.jobs;
		atomic_init(&s->cancel, 0);
		atomic_init(&s->stop, 0);
		atomic_init(&s->lost, 0);
		pthread_mutex_init(&s->progress_lock, NULL);
	}
	/* the regular threads and the first spare; the other spares start as needed */
	for (i = 0; i < r->n_slots && i <= r->cfg.jobs; i++) {
		struct runner_slot *s = &r->slots[i];
		int prc;

		pthread_mutex_lock(&r->lock);
		prc = pthread_create(&s->thread, NULL, runner_thread, s);
		s->started = prc == 0;
		pthread_mutex_unlock(&r->lock);
		if (prc != 0) {
			runner_free(r);
			return err_set(err, UNIAP_E_INTERNAL, "runner: cannot start a job thread");
		}
	}
	*out = r;
	return UNIAP_OK;
}

void runner_wake(struct runner *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->pending_wakes++;
	r->wake_gen++;
	/* every idle thread: a spare one may not take the job, another must */
	pthread_cond_broadcast(&r->wake);
	pthread_mutex_unlock(&r->lock);
}

/* Sets the cancel flag (cancel: user_cancel too) or the stop flag of the slot running
 * job id; 1 when one runs it here. */
static int runner_flag_job(struct runner *r, int64_t id, int cancel)
{
	int i, found = 0;

	if (!r || id <= 0)
		return 0;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->n_slots; i++)
		if (r->slots[i].job == id) {
			if (cancel) {
				r->slots[i].user_cancel = 1;
				atomic_store(&r->slots[i].cancel, 1);
			} else {
				atomic_store(&r->slots[i].stop, 1);
			}
			/* a helper stops too, but the job runs elsewhere: not found here, so the
			 * caller asks its owner through the database */
			found |= !r->slots[i].helping;
		}
	pthread_mutex_unlock(&r->lock);
	return found;
}

int runner_cancel(struct runner *r, int64_t id)
{
	int found = runner_flag_job(r, id, 1);

	if (found)
		pool_cancel_tag(r->pool, (uint64_t)id, NULL, NULL);
	if (r && id > 0)
		pool_cancel_tag(r->pool, (uint64_t)id | RUNNER_HELP_TAG, NULL, NULL); /* a helper's, if any */
	return found;
}

int runner_stop_job(struct runner *r, int64_t id)
{
	return runner_flag_job(r, id, 0);
}

size_t runner_cancel_revoked(struct runner *r)
{
	int64_t jobs[RUNNER_JOBS_MAX + RUNNER_SPARE_MAX], tenants[RUNNER_JOBS_MAX + RUNNER_SPARE_MAX];
	size_t n = 0, i, stopped = 0;
	int k, revoked;

	if (!r)
		return 0;
	pthread_mutex_lock(&r->lock);
	/* a helper is not counted: the job's owner stops it, and its next claim ends the helper */
	for (k = 0; k < r->n_slots; k++)
		if (r->slots[k].job > 0 && r->slots[k].tenant > 0 && !r->slots[k].helping) {
			jobs[n] = r->slots[k].job;
			tenants[n++] = r->slots[k].tenant;
		}
	pthread_mutex_unlock(&r->lock);
	/* the store is asked without the lock: job threads take it between jobs */
	for (i = 0; i < n; i++) {
		int found = 0;

		if (store_tenant_revoked(r->cfg.store, tenants[i], &revoked, NULL) != UNIAP_OK || !revoked)
			continue;
		pthread_mutex_lock(&r->lock);
		for (k = 0; k < r->n_slots; k++)
			if (r->slots[k].job == jobs[i] && !r->slots[k].user_cancel) {
				r->slots[k].user_cancel = RUNNER_CANCEL_REVOKED;
				atomic_store(&r->slots[k].cancel, 1);
				found = 1;
			}
		pthread_mutex_unlock(&r->lock);
		if (found) {
			pool_cancel_tag(r->pool, (uint64_t)jobs[i], NULL, NULL);
			pool_cancel_tag(r->pool, (uint64_t)jobs[i] | RUNNER_HELP_TAG, NULL, NULL);
			stopped++;
		}
	}
	return stopped;
}

size_t runner_lease_tick(struct runner *r)
{
	int64_t jobs[RUNNER_JOBS_MAX + RUNNER_SPARE_MAX];
	struct store_lease leases[RUNNER_JOBS_MAX + RUNNER_SPARE_MAX];
	double now = opt_clock_s(), every = r ? r->cfg.lease_s / 3 : 0;
	size_t n = 0, i, lost = 0;
	int k;

	if (!r)
		return 0;
	pthread_mutex_lock(&r->lock);
	/* the units this instance holds of the jobs it runs or helps now; any other unit of its
	 * (a put that was lost, a run it left) is left to run out, so that another takes it */
	if (!r->cfg.no_share && store_shares(r->cfg.store) && now - r->units_renewed_s >= every) {
		int64_t working[RUNNER_JOBS_MAX + RUNNER_SPARE_MAX];
		size_t n_working = 0;

		r->units_renewed_s = now;
		for (k = 0; k < r->n_slots; k++)
			if (r->slots[k].job > 0)
				working[n_working++] = r->slots[k].job;
		pthread_mutex_unlock(&r->lock);
		store_units_renew(r->cfg.store, r->owner, working, n_working, r->lease_ms, NULL);
		pthread_mutex_lock(&r->lock);
	}
	/* a run this instance helps that is over (its owner ended it, or the job): the helper's
	 * solves stop now rather than finish for nobody */
	for (k = 0; k < r->n_slots; k++)
		if (r->slots[k].job > 0 && r->slots[k].helping && !atomic_load(&r->slots[k].cancel) &&
		    now - r->slots[k].renewed_s >= every) {
			int64_t job = r->slots[k].job;
			int run = r->slots[k].help_run, open = 1;

			r->slots[k].renewed_s = now;
			pthread_mutex_unlock(&r->lock);
			if (store_job_share_open(r->cfg.store, job, run, runner_build(r), &open, NULL) != UNIAP_OK)
				open = 1; /* a passing store error: the next tick looks again */
			pthread_mutex_lock(&r->lock);
			if (!open && r->slots[k].job == job && r->slots[k].helping && r->slots[k].help_run == run) {
				atomic_store(&r->slots[k].cancel, 1);
				pthread_mutex_unlock(&r->lock);
				pool_cancel_tag(r->pool, (uint64_t)job | RUNNER_HELP_TAG, NULL, NULL);
				pthread_mutex_lock(&r->lock);
			}
		}
	for (k = 0; k < r->n_slots; k++)
		if (r->slots[k].job > 0 && !r->slots[k].helping && !atomic_load(&r->slots[k].lost) &&
		    now - r->slots[k].renewed_s >= every) {
			r->slots[k].renewed_s = now;
			jobs[n] = r->slots[k].job;
			leases[n++] = r->slots[k].lease;
		}
	pthread_mutex_unlock(&r->lock);
	/* the store is written without the lock, as in runner_cancel_revoked */
	for (i = 0; i < n; i++) {
		struct uniap_err err;
		enum store_job_ask asked = STORE_ASK_NONE;
		uniap_code rc;
		int found = 0;

		err_clear(&err);
		rc = store_job_renew(r->cfg.store, jobs[i], &leases[i], r->lease_ms, &asked, &err);
		/* a client asked another uniapd on this database (the event may have been missed) */
		if (rc == UNIAP_OK && asked == STORE_ASK_CANCEL)
			runner_cancel(r, jobs[i]);
		else if (rc == UNIAP_OK && asked == STORE_ASK_STOP)
			runner_stop_job(r, jobs[i]);
		if (rc != UNIAP_E_CONFLICT)
			continue; /* renewed, or a passing store error: the next tick tries again */
		pthread_mutex_lock(&r->lock);
		for (k = 0; k < r->n_slots; k++)
			if (r->slots[k].job == jobs[i] && r->slots[k].lease.token == leases[i].token) {
				runner_lost(&r->slots[k]);
				found = 1;
			}
		pthread_mutex_unlock(&r->lock);
		if (found) {
			pool_cancel_tag(r->pool, (uint64_t)jobs[i], NULL, NULL);
			lost++;
		}
	}
	return lost;
}

void runner_on_store_event(void *ctx, enum store_event ev, int64_t job)
{
	struct runner *r = ctx;

	switch (ev) {
	case STORE_EVENT_QUEUED:
	case STORE_EVENT_RECONNECTED: runner_wake(r); break;
	case STORE_EVENT_CANCEL: runner_cancel(r, job); break;
	case STORE_EVENT_STOP: runner_stop_job(r, job); break;
	}
}

const char *runner_owner(const struct runner *r)
{
	return r->owner;
}

void runner_stop(struct runner *r, double grace_s)
{
	struct timespec ts;
	int i, busy;

	if (!r || r->stopped)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = 1;
	pthread_cond_broadcast(&r->wake);
	runner_deadline(&ts, grace_s > 0 ? grace_s : 0);
	for (;;) {
		for (busy = 0, i = 0; i < r->n_slots; i++)
			busy += r->slots[i].job != 0;
		if (!busy || pthread_cond_timedwait(&r->idle, &r->lock, &ts) == ETIMEDOUT)
			break;
	}
	/* what is still running stops now and goes back to the queue (pool_cancel_tag
	 * never waits, and pool callbacks take r->lock with no pool lock held) */
	for (i = 0; i < r->n_slots; i++)
		if (r->slots[i].job != 0) {
			atomic_store(&r->slots[i].cancel, 1);
			pool_cancel_tag(r->pool, (uint64_t)r->slots[i].job | (r->slots[i].helping ? RUNNER_HELP_TAG : 0),
			                NULL, NULL);
		}
	pthread_mutex_unlock(&r->lock);
	for (i = 0; i < r->n_slots; i++)
		if (r->slots[i].started) {
			pthread_join(r->slots[i].thread, NULL);
			r->slots[i].started = 0;
		}
	pool_free(r->pool);
	r->pool = NULL;
	r->stopped = 1;
}

void runner_free(struct runner *r)
{
	int i;

	if (!r)
		return;
	runner_stop(r, 0);
	for (i = 0; i < r->n_slots; i++)
		pthread_mutex_destroy(&r->slots[i].progress_lock);
	pthread_mutex_destroy(&r->solve_lock);
	pthread_cond_destroy(&r->idle);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void runner_get_stats(struct runner *r, struct runner_stats *out)
{
	int i;

	pthread_mutex_lock(&r->lock);
	*out = r->stats;
	out->running = 0;
	for (i = 0; i < r->n_slots; i++)
		out->running += r->slots[i].job != 0 && !r->slots[i].helping;
	pthread_mutex_unlock(&r->lock);
}
