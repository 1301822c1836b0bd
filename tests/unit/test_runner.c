/*
 * test_runner.c - the job runner on a real store: jobs claimed by two job
 * threads on one worker pool reach succeeded with the optimizer's own
 * answer; a repeated job is answered from the cost cache with the same plan;
 * cancel stops a running job; a stop re-queues what it could not finish; a
 * bad stored request fails its job only.  Runs under TSan too (make test).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fixtures.h"
#include "jdecode.h"
#include "jencode.h"
#include "runner.h"
#include "store.h"

struct fx {
	char dir[64];
	char path[96];
	struct store *store;
	int64_t tenant;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct uniap_err err;
	char key[STORE_KEY_CHARS + 1];

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/uniap-runner-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/store.db", f->dir);
	if (store_open(f->path, NULL, &f->store, &err) != UNIAP_OK ||
	    store_tenant_add(f->store, "t", 100, 1 << 30, &f->tenant, key, &err) != UNIAP_OK) {
		print_error("setup: %s\n", err.msg);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	static const char *const suffixes[] = { "", "-wal", "-shm", "-journal", "-reserve" };
	char p[128];

	store_close(f->store);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", f->path, suffixes[i]);
		unlink(p);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

/* A stored request for a chain of n layers on devices GPUs (one node) at batch. */
static char *request_text(size_t n_layers, int devices, long batch, double mem)
{
	struct cluster_profile cl;
	struct model_profile m;
	int dev[1] = { devices };
	double bw[1] = { 10 };
	cJSON *o = cJSON_CreateObject(), *sum = cJSON_AddObjectToObject(o, "summary");
	char *text;

	assert_int_equal(fx_cluster(&cl, 1, devices, dev, bw, 1, mem, 0, 1), 0);
	assert_int_equal(fx_model_chain(&m, n_layers, MODEL_FP32, 4e-3, 0, 12e6, 2e8, 0, 2e6, 2e6), 0);
	assert_non_null(cJSON_AddNumberToObject(sum, "batch", (double)batch));
	assert_non_null(cJSON_AddStringToObject(sum, "cluster", "inline"));
	assert_non_null(cJSON_AddStringToObject(sum, "model", "inline"));
	assert_true(cJSON_AddItemToObject(o, "cluster", jenc_cluster(&cl)));
	assert_true(cJSON_AddItemToObject(o, "model", jenc_model(&m)));
	text = cJSON_PrintUnformatted(o);
	assert_non_null(text);
	cJSON_Delete(o);
	model_release(&m);
	cluster_release(&cl);
	return text;
}

static int64_t submit(struct fx *f, const char *text)
{
	int64_t id = 0;
	int existed = 0;
	struct uniap_err err;

	assert_int_equal(store_job_create(f->store, f->tenant, NULL, text, strlen(text), &id, &existed, &err),
	                 UNIAP_OK);
	return id;
}

/* Polls job id until it leaves queued/running (or 120 s); returns its state. */
static enum store_job_state wait_final(struct fx *f, int64_t id, struct store_job *out)
{
	struct uniap_err err;
	int i;

	for (i = 0; i < 12000; i++) {
		assert_int_equal(store_job_get(f->store, f->tenant, id, out, &err), UNIAP_OK);
		if (out->state != STORE_JOB_QUEUED && out->state != STORE_JOB_RUNNING)
			return out->state;
		store_job_release(out);
		usleep(10000);
	}
	fail_msg("job %lld did not finish", (long long)id);
	return STORE_JOB_FAILED;
}

/* The TPI of a succeeded job's plan, from its result document. */
static double result_tpi(const struct store_job *j, int *cached)
{
	cJSON *root = cJSON_Parse(j->result), *plan, *c;
	double tpi;

	assert_non_null(root);
	plan = cJSON_GetObjectItemCaseSensitive(root, "plan");
	assert_true(cJSON_IsObject(plan));
	tpi = cJSON_GetObjectItemCaseSensitive(plan, "tpi_s")->valuedouble;
	*cached = 0;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "candidates"))
		*cached += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "cached"));
	cJSON_Delete(root);
	return tpi;
}

/* The optimizer's own answer for a stored request. */
static double direct_tpi(const char *text)
{
	struct runner_request rq;
	struct uop_result r;
	struct uniap_err err;
	double tpi;

	assert_int_equal(runner_request_decode(text, strlen(text), &rq, &err), UNIAP_OK);
	rq.opts.threads = 1;
	rq.opts.inline_solve = 1;
	assert_int_equal(uop_run(&rq.cluster, &rq.model, &rq.opts, NULL, &r, &err), UNIAP_OK);
	assert_true(r.best >= 0);
	tpi = r.eval.tpi_s;
	uop_result_release(&r);
	runner_request_release(&rq);
	return tpi;
}

static struct runner *start(struct fx *f, int jobs)
{
	struct runner_config c;
	struct runner *r = NULL;
	struct uniap_err err;

	memset(&c, 0, sizeof(c));
	c.store = f->store;
	c.jobs = jobs;
	c.workers = 2;
	assert_int_equal(runner_start(&c, &r, &err), UNIAP_OK);
	return r;
}

/* Eight jobs of four shapes, two job threads: each succeeds with the optimizer's answer;
 * the repeated shapes come (at least partly) from the cache with the same plan. */
static void test_jobs_succeed(void **state)
{
	struct fx *f = *state;
	struct runner *r = start(f, 2);
	struct runner_stats st;
	char *req[4];
	double want[4];
	int64_t ids[8], puts_before;
	int i, cached_total = 0;

	for (i = 0; i < 4; i++) {
		req[i] = request_text(3 + (size_t)i, 4, 4 << (i % 2), 16e9);
		want[i] = direct_tpi(req[i]);
	}
	for (i = 0; i < 4; i++)
		ids[i] = submit(f, req[i]);
	runner_wake(r);
	for (i = 0; i < 4; i++) {
		struct store_job j;
		int cached;

		assert_int_equal(wait_final(f, ids[i], &j), STORE_JOB_SUCCEEDED);
		assert_true(result_tpi(&j, &cached) == want[i]);
		assert_int_equal(j.progress_done, j.progress_total);
		store_job_release(&j);
	}
	/* what the first round left in the cache: on a busy machine a write may give up on the
	 * writer lock (STORE_WRITE_WAIT_MS), and then there is nothing to hit */
	runner_get_stats(r, &st);
	puts_before = st.cache_puts;
	for (i = 4; i < 8; i++)
		ids[i] = submit(f, req[i - 4]);
	runner_wake(r);
	for (i = 4; i < 8; i++) {
		struct store_job j;
		int cached;

		assert_int_equal(wait_final(f, ids[i], &j), STORE_JOB_SUCCEEDED);
		assert_true(result_tpi(&j, &cached) == want[i - 4]);
		cached_total += cached;
		store_job_release(&j);
	}
	/* the job thread counts a job in its stats just after writing its final state: wait for it */
	for (i = 0;; i++) {
		runner_get_stats(r, &st);
		if (st.finished[STORE_JOB_SUCCEEDED] >= 8 || i >= 3000)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	if (puts_before > 0) {
		assert_true(cached_total > 0);
		assert_true(st.cache_hits > 0);
	}
	assert_int_equal(st.finished[STORE_JOB_SUCCEEDED], 8);
	assert_int_equal(st.solve_count, 8);
	runner_free(r);
	for (i = 0; i < 4; i++)
		cJSON_free(req[i]);
}

/* A request the runner cannot decode fails that job, with the message, and the next one runs. */
static void test_bad_request_fails_only_its_job(void **state)
{
	struct fx *f = *state;
	struct runner *r = start(f, 1);
	char *good = request_text(3, 2, 4, 16e9);
	int64_t bad_id = submit(f, "{\"summary\":{\"batch\":0},\"cluster\":{},\"model\":{}}");
	int64_t good_id = submit(f, good);
	struct store_job j;

	runner_wake(r);
	assert_int_equal(wait_final(f, bad_id, &j), STORE_JOB_FAILED);
	assert_non_null(j.error);
	assert_non_null(strstr(j.error, "request.summary.batch"));
	store_job_release(&j);
	assert_int_equal(wait_final(f, good_id, &j), STORE_JOB_SUCCEEDED);
	store_job_release(&j);
	runner_free(r);
	cJSON_free(good);
}

/* Waits until job id is running; 0 when it finished first. */
static int wait_running(struct fx *f, int64_t id)
{
	struct uniap_err err;
	int i;

	for (i = 0; i < 6000; i++) {
		struct store_job j;
		enum store_job_state s;

		assert_int_equal(store_job_get(f->store, f->tenant, id, &j, &err), UNIAP_OK);
		s = j.state;
		store_job_release(&j);
		if (s == STORE_JOB_RUNNING)
			return 1;
		if (s != STORE_JOB_QUEUED)
			return 0;
		usleep(5000);
	}
	return 0;
}

/* A slow job: a 24-layer chain on 16 GPUs at batch 256, recompute on (many candidates). */
static char *slow_request(void)
{
	char *text = request_text(24, 16, 256, 16e9);
	cJSON *o = cJSON_Parse(text), *sum = cJSON_GetObjectItemCaseSensitive(o, "summary");
	char *out;

	assert_non_null(cJSON_AddTrueToObject(sum, "recompute"));
	out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	cJSON_free(text);
	return out;
}

/* runner_cancel stops a running job: canceled, with the client's message. */
static void test_cancel_running(void **state)
{
	struct fx *f = *state;
	struct runner *r = start(f, 1);
	char *slow = slow_request();
	int64_t id = submit(f, slow);
	struct store_job j;

	runner_wake(r);
	assert_true(wait_running(f, id));
	assert_int_equal(runner_cancel(r, id), 1);
	assert_int_equal(wait_final(f, id, &j), STORE_JOB_CANCELED);
	assert_non_null(strstr(j.error, "canceled"));
	store_job_release(&j);
	assert_int_equal(runner_cancel(r, id), 0); /* no longer running here */
	runner_free(r);
	cJSON_free(slow);
}

/* A stop with no grace puts the running job back in the queue, progress cleared. */
static void test_stop_requeues(void **state)
{
	struct fx *f = *state;
	struct runner *r = start(f, 1);
	char *slow = slow_request();
	int64_t id = submit(f, slow);
	struct store_job j;
	struct uniap_err err;

	runner_wake(r);
	assert_true(wait_running(f, id));
	runner_stop(r, 0);
	assert_int_equal(store_job_get(f->store, f->tenant, id, &j, &err), UNIAP_OK);
	assert_int_equal(j.state, STORE_JOB_QUEUED);
	assert_int_equal(j.progress_done, 0);
	store_job_release(&j);
	runner_free(r);
	cJSON_free(slow);
}

/* Mutated stored requests never crash the decoder: each is decoded or refused with a message. */
static void test_request_decode_mutants(void **state)
{
	char *good = request_text(4, 4, 8, 16e9);
	size_t n = strlen(good), i;
	unsigned long rng = 12345;
	struct uniap_err err;
	int ok = 0, refused = 0;

	(void)state;
	for (i = 0; i < 3000; i++) {
		char *m = malloc(n + 8); /* up to four inserted bytes */
		size_t len = n, k, at;
		struct runner_request rq;

		assert_non_null(m);
		memcpy(m, good, n + 1);
		for (k = 0; k < 1 + i % 4; k++) {
			rng = rng * 6364136223846793005UL + 1442695040888963407UL;
			at = (size_t)(rng >> 33) % len;
			switch ((rng >> 20) % 3) {
			case 0: m[at] = (char)(rng >> 40); break;                       /* overwrite */
			case 1: memmove(m + at, m + at + 1, len - at); len--; break;     /* delete */
			default: memmove(m + at + 1, m + at, len - at + 1); m[at] = "{}[]\",:0-e9"[(rng >> 44) % 11]; len++; break;
			}
			if (len < 2)
				break;
		}
		err_clear(&err);
		if (runner_request_decode(m, len, &rq, &err) == UNIAP_OK) {
			ok++;
			runner_request_release(&rq);
		} else {
			refused++;
			assert_true(err.msg[0] != '\0');
		}
		free(m);
	}
	assert_true(refused > 0);
	cJSON_free(good);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_jobs_succeed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_request_fails_only_its_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_requeues, setup, teardown),
		cmocka_unit_test(test_request_decode_mutants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
