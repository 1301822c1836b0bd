/*
 * test_offload.c - the evaluation threads (server/offload.h): a task runs on
 * a pool thread and its waiter takes the result once its version says done;
 * the caps answer RATE (one tenant's share) and BUSY (the whole pool); one
 * tenant never holds every thread, so another tenant's task starts while it
 * has work queued; an abandoned task is freed whether it was queued or
 * running.  Runs under TSan too (make test).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "offload.h"

/* A gate the tasks wait at until the test opens it. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open;
	int notified;
	atomic_int freed;
};

struct task {
	struct gate *g;
	atomic_int ran;
};

static void task_run(void *arg)
{
	struct task *t = arg;

	pthread_mutex_lock(&t->g->mu);
	while (!t->g->open)
		pthread_cond_wait(&t->g->cv, &t->g->mu);
	pthread_mutex_unlock(&t->g->mu);
	atomic_store(&t->ran, 1);
}

static void task_free(void *arg)
{
	struct task *t = arg;

	atomic_fetch_add(&t->g->freed, 1);
	free(t);
}

static void notify(void *ctx)
{
	struct gate *g = ctx;

	pthread_mutex_lock(&g->mu);
	g->notified++;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static struct task *task_new(struct gate *g)
{
	struct task *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->g = g;
	atomic_init(&t->ran, 0);
	return t;
}

static void gate_init(struct gate *g, int open)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->open = open;
	g->notified = 0;
	atomic_init(&g->freed, 0);
}

static void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* Waits (bounded) until n notifications came. */
static void wait_notified(struct gate *g, int n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&g->mu);
	while (g->notified < n)
		assert_int_equal(pthread_cond_timedwait(&g->cv, &g->mu, &ts), 0);
	pthread_mutex_unlock(&g->mu);
}

/* Waits (bounded) until `running` tasks run. */
static void wait_running(struct offload *o, int64_t running)
{
	struct offload_stats st;
	int i;

	for (i = 0; i < 3000; i++) {
		offload_get_stats(o, &st);
		if (st.running == running)
			return;
		nanosleep(&(struct timespec){ 0, 10000000L }, NULL);
	}
	fail_msg("running stayed %lld, want %lld", (long long)st.running, (long long)running);
}

static void test_run_and_take(void **state)
{
	struct gate g;
	struct offload_config cfg = { .threads = 2, .notify = notify, .notify_ctx = &g };
	struct offload *o = NULL;
	struct task *t;
	int64_t key = 0, v = -5;
	struct uniap_err err;

	(void)state;
	gate_init(&g, 1);
	assert_int_equal(offload_start(&cfg, &o, &err), UNIAP_OK);
	t = task_new(&g);
	assert_int_equal(offload_submit(o, 1, task_run, t, task_free, &key, &err), UNIAP_OK);
	assert_true(key < 0);
	wait_notified(&g, 1);
	assert_int_equal(offload_version(o, key, &v), 0);
	assert_int_equal(v, 1);
	assert_ptr_equal(offload_take(o, key), t);
	assert_int_equal(atomic_load(&t->ran), 1);
	/* taken: the key is gone, and the arg is the caller's */
	assert_int_equal(offload_version(o, key, &v), -1);
	assert_null(offload_take(o, key));
	assert_int_equal(offload_version(o, 7, &v), -1); /* job ids are not its keys */
	task_free(t);
	offload_free(o);
}

static void test_caps(void **state)
{
	struct gate g;
	struct offload_config cfg = { .threads = 2, .queue_cap = 3, .per_tenant = 2 };
	struct offload *o = NULL;
	int64_t key;
	struct uniap_err err;

	(void)state;
	gate_init(&g, 0);
	assert_int_equal(offload_start(&cfg, &o, &err), UNIAP_OK);
	assert_int_equal(offload_submit(o, 1, task_run, task_new(&g), task_free, &key, &err), UNIAP_OK);
	assert_int_equal(offload_submit(o, 1, task_run, task_new(&g), task_free, &key, &err), UNIAP_OK);
	/* tenant 1's share is full: RATE, and the refused arg is freed */
	assert_int_equal(offload_submit(o, 1, task_run, task_new(&g), task_free, &key, &err), UNIAP_E_RATE);
	assert_int_equal(atomic_load(&g.freed), 1);
	assert_int_equal(offload_submit(o, 2, task_run, task_new(&g), task_free, &key, &err), UNIAP_OK);
	/* the pool is full: BUSY for a tenant with a task in */
	assert_int_equal(offload_submit(o, 2, task_run, task_new(&g), task_free, &key, &err), UNIAP_E_BUSY);
	assert_int_equal(atomic_load(&g.freed), 2);
	/* but a tenant with none in is admitted into the reserve */
	assert_int_equal(offload_submit(o, 3, task_run, task_new(&g), task_free, &key, &err), UNIAP_OK);
	gate_open(&g);
	offload_free(o); /* frees the four finished, never taken */
	assert_int_equal(atomic_load(&g.freed), 6);
}

static void test_tenant_never_holds_every_thread(void **state)
{
	struct gate g;
	struct offload_config cfg = { .threads = 2 };
	struct offload *o = NULL;
	int64_t k1, k2, k3;
	struct uniap_err err;
	struct offload_stats st;

	(void)state;
	gate_init(&g, 0);
	assert_int_equal(offload_start(&cfg, &o, &err), UNIAP_OK);
	assert_int_equal(offload_submit(o, 1, task_run, task_new(&g), task_free, &k1, &err), UNIAP_OK);
	assert_int_equal(offload_submit(o, 1, task_run, task_new(&g), task_free, &k2, &err), UNIAP_OK);
	wait_running(o, 1);
	/* tenant 1's second task waits although a thread is idle: it is kept for others */
	nanosleep(&(struct timespec){ 0, 100000000L }, NULL);
	offload_get_stats(o, &st);
	assert_int_equal(st.running, 1);
	assert_int_equal(st.queued, 1);
	assert_int_equal(offload_submit(o, 2, task_run, task_new(&g), task_free, &k3, &err), UNIAP_OK);
	wait_running(o, 2);
	/* abandoned while queued: freed at once; while running: when it ends */
	offload_abandon(o, k2);
	assert_int_equal(atomic_load(&g.freed), 1);
	offload_abandon(o, k1);
	assert_int_equal(atomic_load(&g.freed), 1);
	gate_open(&g);
	wait_running(o, 0);
	offload_free(o);
	assert_int_equal(atomic_load(&g.freed), 3);
}

/*
 * Two tenants keep both threads busy (one task each running, one more each
 * queued); three more tenants arrive with one task each: every one starts at
 * once on a reserve thread, while the busy tenants' queued tasks still wait.
 */
static void test_idle_tenant_never_waits(void **state)
{
	struct gate g;
	struct offload_config cfg = { .threads = 2 };
	struct offload *o = NULL;
	int64_t key;
	struct uniap_err err;
	struct offload_stats st;
	int tenant, i;

	(void)state;
	gate_init(&g, 0);
	assert_int_equal(offload_start(&cfg, &o, &err), UNIAP_OK);
	for (tenant = 1; tenant <= 2; tenant++)
		for (i = 0; i < 2; i++)
			assert_int_equal(offload_submit(o, tenant, task_run, task_new(&g), task_free, &key, &err), UNIAP_OK);
	wait_running(o, 2);
	for (tenant = 3; tenant <= 5; tenant++)
		assert_int_equal(offload_submit(o, tenant, task_run, task_new(&g), task_free, &key, &err), UNIAP_OK);
	wait_running(o, 5);
	offload_get_stats(o, &st);
	assert_int_equal(st.queued, 2);
	/* at least one per newcomer (more when a regular thread had not reached its wait yet) */
	assert_true(st.reserve_started >= 3);
	gate_open(&g);
	wait_running(o, 0);
	offload_free(o);
	assert_int_equal(atomic_load(&g.freed), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_and_take),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_tenant_never_holds_every_thread),
		cmocka_unit_test(test_idle_tenant_never_waits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
