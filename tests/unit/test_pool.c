/*
 * test_pool.c - the process pool (core/pool.h): results, crashes, time
 * limits, cancellation, the queue cap, corrupt replies, tags, shutdown.
 *
 * Also built and run under ThreadSanitizer and ASan+UBSan (make test-tsan,
 * make test-asan).  The work functions run in forked children of a
 * multithreaded process, so they stay simple: no locks, no stdio, no threads,
 * no cmocka calls.  Callbacks run in pool threads, so they only record what
 * they saw (cmocka is not thread-safe); the test thread asserts.  Every test
 * frees its pool and checks that no child is left unreaped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

/* Longest any single wait in a test may take before it fails (seconds). */
#define TEST_WAIT_S 20

/* Time limit of tasks that should end by themselves: a child stuck by a bug
 * then fails its test (POOL_TIMEOUT) instead of hanging it. */
#define SAFE_S 30.0

/* ---- work functions (run in the child) ----
 *
 * They return static memory and never malloc: under gcc 12's TSan and ASan
 * the sanitizer allocator is not fork-safe, and a child that allocates can
 * block forever on an allocator lock some parent thread held at fork time
 * (seen under TSan).  Each child has its own copy of the static buffers. */

/* Longest input of the many-tasks test. */
#define MAX_IN 100100

/* dst[k] for k < 3 * in_len, derived from in (the same in parent and child). */
static void fill_bytes(const unsigned char *in, size_t in_len, unsigned char *dst)
{
	for (size_t k = 0; k < 3 * in_len; k++)
		dst[k] = (unsigned char)(in[k % in_len] * 31u + k);
}

static int fill_rc(size_t in_len)
{
	return (int)(in_len % 7);
}

/* out = 3 * in_len bytes derived from in; returns in_len % 7. */
static int work_fill(const void *in, size_t in_len, void **out, size_t *out_len, void *arg)
{
	static unsigned char fill_out[3 * MAX_IN];

	(void)arg;
	if (in_len == 0)
		return 0;
	if (in_len > MAX_IN)
		return -1;
	fill_bytes(in, in_len, fill_out);
	*out = fill_out;
	*out_len = 3 * in_len;
	return fill_rc(in_len);
}

static int work_hang(const void *in, size_t in_len, void **out, size_t *out_len, void *arg)
{
	(void)in, (void)in_len, (void)out, (void)out_len, (void)arg;
	for (;;)
		pause();
	return 0; /* not reached */
}

/* arg: a signal number */
static int work_raise(const void *in, size_t in_len, void **out, size_t *out_len, void *arg)
{
	(void)in, (void)in_len, (void)out, (void)out_len;
	raise((int)(intptr_t)arg);
	_exit(99); /* not reached */
}

/* arg: an exit status */
static int work_exit(const void *in, size_t in_len, void **out, size_t *out_len, void *arg)
{
	(void)in, (void)in_len, (void)out, (void)out_len;
	_exit((int)(intptr_t)arg);
}

/* arg: how many bytes to return (at most SIZED_MAX) */
#define SIZED_MAX (10 * 8192)
static int work_sized(const void *in, size_t in_len, void **out, size_t *out_len, void *arg)
{
	static unsigned char sized_out[SIZED_MAX];
	size_t n = (size_t)(intptr_t)arg;

	(void)in, (void)in_len;
	if (n > SIZED_MAX)
		return -1;
	memset(sized_out, 'x', n);
	*out = sized_out;
	*out_len = n;
	return 0;
}

/* Corrupt children: each writes its own bytes to the reply pipe by hand. */
enum bad_reply {
	BAD_PARTIAL_HEADER_EXIT,  /* 5 header bytes, then exit 0 */
	BAD_PARTIAL_HEADER_ABORT, /* 5 header bytes, then abort() */
	BAD_MAGIC,                /* 16 bytes of garbage */
	BAD_ENDLESS_GARBAGE,      /* garbage forever */
	BAD_TRUNCATED,            /* header says 100 bytes, 10 follow, exit 0 */
	BAD_TOO_LONG,             /* header says 4 bytes, 4000 follow */
	BAD_HEADER_OVER_CAP,      /* header says cap + 1, then writes forever */
	BAD_NO_REPLY,             /* closes the pipe, exits 0 */
};

static void child_write(const void *buf, size_t len)
{
	const char *at = buf;

	while (len > 0) {
		ssize_t n = write(POOL_CHILD_REPLY_FD, at, len);
		if (n <= 0)
			_exit(98);
		at += n;
		len -= (size_t)n;
	}
}

/* arg: an enum bad_reply; in: the pool's max_output_bytes as a size_t */
static int work_bad_reply(const void *in, size_t in_len, void **out, size_t *out_len, void *arg)
{
	struct pool_reply_header h = { POOL_REPLY_MAGIC, 0, 0 };
	unsigned char junk[4096];
	size_t cap;

	(void)out, (void)out_len, (void)in_len;
	memcpy(&cap, in, sizeof(cap));
	memset(junk, 0xa5, sizeof(junk));
	switch ((enum bad_reply)(intptr_t)arg) {
	case BAD_PARTIAL_HEADER_EXIT:
		child_write(&h, 5);
		_exit(0);
	case BAD_PARTIAL_HEADER_ABORT:
		child_write(&h, 5);
		abort();
	case BAD_MAGIC:
		child_write(junk, sizeof(h));
		_exit(0);
	case BAD_ENDLESS_GARBAGE:
		for (;;)
			child_write(junk, sizeof(junk));
	case BAD_TRUNCATED:
		h.len = 100;
		child_write(&h, sizeof(h));
		child_write(junk, 10);
		_exit(0);
	case BAD_TOO_LONG:
		h.len = 4;
		child_write(&h, sizeof(h));
		child_write(junk, 4000);
		_exit(0);
	case BAD_HEADER_OVER_CAP:
		h.len = (uint64_t)cap + 1;
		child_write(&h, sizeof(h));
		for (;;)
			child_write(junk, sizeof(junk));
	case BAD_NO_REPLY:
		close(POOL_CHILD_REPLY_FD);
		_exit(0);
	}
	_exit(97);
}

/* ---- recording outcomes (callbacks run in pool threads) ---- */

enum rec_action {
	ACT_NONE,
	ACT_WAIT_TAG, /* done calls pool_wait_tag (must refuse: a pool thread) */
	ACT_SUBMIT,   /* done calls pool_submit (refused while pool_free runs) */
};

struct col;

struct rec {
	struct col *col;
	enum rec_action action;
	uniap_code action_rc;
	int n_started;
	int start_seq;         /* 1 for the first task of the col to start, 2 for the next, ... */
	int n_done;
	pid_t started_pid;
	struct pool_outcome o; /* o.out is cleared: the bytes are copied to out */
	unsigned char *out;
	size_t out_len;
};

struct col {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pool *pool;
	struct rec *recs;
	size_t n;
	int n_starts;          /* mu: tasks of this col started so far */
};

static void col_init(struct col *c, size_t n)
{
	assert_int_equal(pthread_mutex_init(&c->mu, NULL), 0);
	assert_int_equal(pthread_cond_init(&c->cv, NULL), 0);
	c->pool = NULL;
	c->n = n;
	c->n_starts = 0;
	c->recs = calloc(n, sizeof(*c->recs));
	assert_non_null(c->recs);
	for (size_t i = 0; i < n; i++)
		c->recs[i].col = c;
}

static void col_release(struct col *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->recs[i].out);
	free(c->recs);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
}

static void on_started(void *ctx, pool_ticket id, pid_t pid)
{
	struct rec *r = ctx;

	(void)id;
	pthread_mutex_lock(&r->col->mu);
	r->n_started++;
	r->start_seq = ++r->col->n_starts;
	r->started_pid = pid;
	pthread_cond_broadcast(&r->col->cv);
	pthread_mutex_unlock(&r->col->mu);
}

static void on_done(void *ctx, const struct pool_outcome *o)
{
	struct rec *r = ctx;
	unsigned char *copy = NULL;
	uniap_code action_rc = UNIAP_OK;

	if (r->action == ACT_WAIT_TAG) {
		action_rc = pool_wait_tag(r->col->pool, o->tag, NULL);
	} else if (r->action == ACT_SUBMIT) {
		struct pool_task t = { .work = work_fill, .done = on_done, .ctx = r };
		action_rc = pool_submit(r->col->pool, &t, NULL, NULL);
	}
	if (o->out_len > 0) {
		copy = malloc(o->out_len);
		if (copy)
			memcpy(copy, o->out, o->out_len);
	}
	pthread_mutex_lock(&r->col->mu);
	r->n_done++;
	r->action_rc = action_rc;
	r->o = *o;
	r->o.out = NULL;
	free(r->out);
	r->out = copy;
	r->out_len = copy ? o->out_len : 0;
	pthread_cond_broadcast(&r->col->cv);
	pthread_mutex_unlock(&r->col->mu);
}

/* Waits until recs[i] has started (what = 0) or is done (what = 1). */
static void col_wait(struct col *c, size_t i, int what)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += TEST_WAIT_S;
	pthread_mutex_lock(&c->mu);
	while ((what ? c->recs[i].n_done : c->recs[i].n_started) == 0 && rc == 0)
		rc = pthread_cond_timedwait(&c->cv, &c->mu, &until);
	pthread_mutex_unlock(&c->mu);
	assert_int_equal(rc, 0);
}

/* A snapshot of recs[i] taken under the lock. */
static struct rec col_get(struct col *c, size_t i)
{
	struct rec r;

	pthread_mutex_lock(&c->mu);
	r = c->recs[i];
	pthread_mutex_unlock(&c->mu);
	return r;
}

static struct pool *make_pool(int threads, int queue_cap, size_t max_output_bytes)
{
	struct pool_config cfg = { threads, queue_cap, max_output_bytes, 0 };
	struct pool *p = NULL;
	struct uniap_err err;

	err_clear(&err);
	assert_int_equal(pool_new(&cfg, &p, &err), UNIAP_OK);
	assert_non_null(p);
	return p;
}

static pool_ticket submit_group(struct pool *p, struct rec *r, pool_work_fn work, const void *in,
                                size_t in_len, void *arg, uint64_t tag, uint64_t group, double time_limit_s)
{
	struct pool_task t = {
		.work = work, .in = in, .in_len = in_len, .arg = arg, .started = on_started,
		.done = on_done, .ctx = r, .tag = tag, .group = group, .time_limit_s = time_limit_s,
	};
	struct uniap_err err;
	pool_ticket id = 0;

	err_clear(&err);
	assert_int_equal(pool_submit(p, &t, &id, &err), UNIAP_OK);
	assert_true(id != 0);
	return id;
}

static pool_ticket submit(struct pool *p, struct rec *r, pool_work_fn work, const void *in, size_t in_len,
                          void *arg, uint64_t tag, double time_limit_s)
{
	return submit_group(p, r, work, in, in_len, arg, tag, 0, time_limit_s);
}

/* No child of this process is left, reaped or not. */
static void assert_no_children(void)
{
	int st;

	assert_int_equal(waitpid(-1, &st, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* pid was reaped (by the pool): it is no longer a child of ours. */
static void assert_reaped(pid_t pid)
{
	int st;

	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- tests ---- */

static void test_config_and_task_checks(void **state)
{
	static const struct {
		struct pool_config cfg;
		const char *field;
	} bad_cfg[] = {
		{ { 0, 4, 1024, 0 }, "pool_config.threads" },
		{ { -1, 4, 1024, 0 }, "pool_config.threads" },
		{ { POOL_THREADS_MAX + 1, 4, 1024, 0 }, "pool_config.threads" },
		{ { 1, 0, 1024, 0 }, "pool_config.queue_cap" },
		{ { 1, POOL_QUEUE_CAP_MAX + 1, 1024, 0 }, "pool_config.queue_cap" },
		{ { 1, 4, 0, 0 }, "pool_config.max_output_bytes" },
		{ { 1, 4, POOL_OUTPUT_CAP_MAX + 1, 0 }, "pool_config.max_output_bytes" },
		{ { 1, 4, 1024, -1 }, "pool_config.spare_threads" },
		{ { 1, 4, 1024, POOL_THREADS_MAX + 1 }, "pool_config.spare_threads" },
	};
	struct pool_task good = { .work = work_fill, .done = on_done };
	struct pool_task bad_task[5];
	const char *bad_task_field[5] = {
		"pool_task.work", "pool_task.done", "pool_task.in", "pool_task.time_limit_s", "pool_task.time_limit_s",
	};
	struct uniap_err err;
	struct pool *p;
	pool_ticket id;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_cfg) / sizeof(bad_cfg[0]); i++) {
		p = (struct pool *)&err; /* must be reset to NULL */
		err_clear(&err);
		assert_int_equal(pool_new(&bad_cfg[i].cfg, &p, &err), UNIAP_E_ARG);
		assert_null(p);
		assert_non_null(strstr(err.msg, bad_cfg[i].field));
	}

	for (size_t i = 0; i < 5; i++)
		bad_task[i] = good;
	bad_task[0].work = NULL;
	bad_task[1].done = NULL;
	bad_task[2].in_len = 3;
	bad_task[3].time_limit_s = -1;
	bad_task[4].time_limit_s = NAN;
	p = make_pool(1, 1, 16);
	for (size_t i = 0; i < 5; i++) {
		id = 7;
		err_clear(&err);
		assert_int_equal(pool_submit(p, &bad_task[i], &id, &err), UNIAP_E_ARG);
		assert_int_equal(id, 0);
		assert_non_null(strstr(err.msg, bad_task_field[i]));
	}
	assert_string_equal(pool_status_name(POOL_TIMEOUT), "timeout");
	assert_string_equal(pool_status_name((enum pool_status)42), "unknown");
	pool_free(p);
	pool_free(NULL);
	assert_no_children();
}

#define MANY 64

/* Task i's input: lengths from 0 to past the pipe buffer (64 KiB). */
static size_t many_input(size_t i, unsigned char *buf)
{
	size_t len = i == 0 ? 0 : (i % 8 == 7 ? 100000 + i : i * 37);

	for (size_t k = 0; k < len; k++)
		buf[k] = (unsigned char)(i * 131 + k * 7);
	return len;
}

/* Runs the MANY tasks on a pool of `threads`, checks them against the
 * function run in this process, and keeps the outputs in c. */
static void run_many(struct col *c, int threads)
{
	unsigned char *inputs = malloc((size_t)MANY * 100000 + MANY * MANY);
	size_t *lens = calloc(MANY, sizeof(*lens));
	size_t *offs = calloc(MANY, sizeof(*offs));
	struct uniap_err err;
	struct pool *p;

	assert_non_null(inputs);
	assert_non_null(lens);
	assert_non_null(offs);
	col_init(c, MANY);
	p = make_pool(threads, MANY, 1 << 20);
	for (size_t i = 0, off = 0; i < MANY; i++) {
		offs[i] = off;
		lens[i] = many_input(i, inputs + off);
		off += lens[i];
		submit(p, &c->recs[i], work_fill, inputs + offs[i], lens[i], NULL, 1, SAFE_S);
	}
	err_clear(&err);
	assert_int_equal(pool_wait_tag(p, 1, &err), UNIAP_OK);
	for (size_t i = 0; i < MANY; i++) {
		struct rec r = col_get(c, i);
		size_t want_len = 3 * lens[i];
		unsigned char *want = malloc(want_len + 1);
		int want_rc = lens[i] ? fill_rc(lens[i]) : 0;

		assert_non_null(want);
		if (lens[i])
			fill_bytes(inputs + offs[i], lens[i], want);

		assert_int_equal(r.n_done, 1);
		assert_int_equal(r.n_started, 1);
		assert_int_equal(r.o.status, POOL_OK);
		assert_string_equal(r.o.msg, "");
		assert_int_equal(r.o.work_rc, want_rc);
		assert_int_equal(r.o.tag, 1);
		assert_int_equal(r.o.pid, r.started_pid);
		assert_true(r.o.wall_s > 0);
		assert_int_equal(r.out_len, want_len);
		if (want_len)
			assert_memory_equal(r.out, want, want_len);
		free(want);
	}
	pool_free(p);
	free(offs);
	free(lens);
	free(inputs);
}

static void test_many_tasks_concurrent_equals_sequential(void **state)
{
	struct col seq, par;

	(void)state;
	run_many(&seq, 1);
	run_many(&par, 4);
	for (size_t i = 0; i < MANY; i++) {
		assert_int_equal(seq.recs[i].out_len, par.recs[i].out_len);
		if (seq.recs[i].out_len)
			assert_memory_equal(seq.recs[i].out, par.recs[i].out, seq.recs[i].out_len);
		assert_int_equal(seq.recs[i].o.work_rc, par.recs[i].o.work_rc);
	}
	col_release(&seq);
	col_release(&par);
	assert_no_children();
}

static void test_crash_fails_only_its_task(void **state)
{
	enum { N = 12 };
	unsigned char in[N][8];
	struct col c;
	struct pool *p;

	(void)state;
	col_init(&c, N);
	p = make_pool(3, N, 1024);
	for (size_t i = 0; i < N; i++) {
		memset(in[i], (int)i + 1, sizeof(in[i]));
		if (i % 4 == 1)
			submit(p, &c.recs[i], work_raise, NULL, 0, (void *)(intptr_t)SIGSEGV, 0, 10);
		else if (i % 4 == 3)
			submit(p, &c.recs[i], work_raise, NULL, 0, (void *)(intptr_t)SIGABRT, 0, 10);
		else if (i == 6)
			submit(p, &c.recs[i], work_exit, NULL, 0, (void *)(intptr_t)3, 0, 10);
		else
			submit(p, &c.recs[i], work_fill, in[i], sizeof(in[i]), NULL, 0, 10);
	}
	assert_int_equal(pool_wait_tag(p, 0, NULL), UNIAP_OK);
	for (size_t i = 0; i < N; i++) {
		struct rec r = col_get(&c, i);

		assert_int_equal(r.n_done, 1);
		assert_reaped(r.o.pid);
		if (i % 2 == 1) {
			assert_int_equal(r.o.status, POOL_CRASHED);
			assert_int_equal(r.o.signal, i % 4 == 1 ? SIGSEGV : SIGABRT);
			assert_int_equal(r.o.exit_code, 0);
			assert_non_null(strstr(r.o.msg, "signal"));
			assert_int_equal(r.out_len, 0);
		} else if (i == 6) {
			assert_int_equal(r.o.status, POOL_CRASHED);
			assert_int_equal(r.o.signal, 0);
			assert_int_equal(r.o.exit_code, 3);
		} else {
			assert_int_equal(r.o.status, POOL_OK);
			assert_int_equal(r.out_len, 3 * sizeof(in[i]));
		}
	}
	pool_free(p);
	col_release(&c);
	assert_no_children();
}

static void test_timeout_kills_and_pool_goes_on(void **state)
{
	unsigned char in[4] = { 1, 2, 3, 4 };
	struct col c;
	struct pool *p;
	struct rec r;

	(void)state;
	col_init(&c, 3);
	p = make_pool(2, 4, 1024);
	submit(p, &c.recs[0], work_hang, NULL, 0, NULL, 0, 0.3);
	submit(p, &c.recs[1], work_fill, in, sizeof(in), NULL, 0, 5);
	col_wait(&c, 0, 1);
	r = col_get(&c, 0);
	assert_int_equal(r.o.status, POOL_TIMEOUT);
	assert_non_null(strstr(r.o.msg, "time limit"));
	assert_true(r.o.wall_s >= 0.3);
	assert_true(r.o.wall_s < 5);
	assert_int_equal(r.o.pid, r.started_pid);
	assert_reaped(r.o.pid);

	submit(p, &c.recs[2], work_fill, in, sizeof(in), NULL, 0, 5);
	assert_int_equal(pool_wait_tag(p, 0, NULL), UNIAP_OK);
	assert_int_equal(col_get(&c, 1).o.status, POOL_OK);
	assert_int_equal(col_get(&c, 2).o.status, POOL_OK);
	assert_int_equal(col_get(&c, 0).n_done, 1);
	pool_free(p);
	col_release(&c);
	assert_no_children();
}

static void test_cancel_queued_and_running(void **state)
{
	unsigned char in[4] = { 9, 8, 7, 6 };
	struct col c;
	struct pool *p;
	struct uniap_err err;
	pool_ticket running, queued;
	struct rec r;

	(void)state;
	col_init(&c, 3);
	p = make_pool(1, 4, 1024);
	running = submit(p, &c.recs[0], work_hang, NULL, 0, NULL, 0, 0);
	col_wait(&c, 0, 0);
	queued = submit(p, &c.recs[1], work_fill, in, sizeof(in), NULL, 0, SAFE_S);

	/* Queued: completes CANCELED without running, while the only thread
	 * is still busy with the hanging child. */
	assert_int_equal(pool_cancel(p, queued, NULL), UNIAP_OK);
	col_wait(&c, 1, 1);
	r = col_get(&c, 1);
	assert_int_equal(r.o.status, POOL_CANCELED);
	assert_int_equal(r.o.id, queued);
	assert_int_equal(r.o.pid, 0);
	assert_int_equal(r.n_started, 0);
	assert_int_equal(col_get(&c, 0).n_done, 0);

	/* Running: its child is killed and reaped. */
	assert_int_equal(pool_cancel(p, running, NULL), UNIAP_OK);
	col_wait(&c, 0, 1);
	r = col_get(&c, 0);
	assert_int_equal(r.o.status, POOL_CANCELED);
	assert_int_equal(r.o.pid, r.started_pid);
	assert_int_equal(r.o.signal, 0);
	assert_reaped(r.started_pid);

	/* Once the callbacks have returned, the tickets are gone. */
	assert_int_equal(pool_wait_tag(p, 0, NULL), UNIAP_OK);
	err_clear(&err);
	assert_int_equal(pool_cancel(p, running, &err), UNIAP_E_NOTFOUND);
	assert_non_null(strstr(err.msg, "not queued or running"));
	assert_int_equal(pool_cancel(p, queued, NULL), UNIAP_E_NOTFOUND);
	assert_int_equal(pool_cancel(p, 0, NULL), UNIAP_E_NOTFOUND);
	assert_int_equal(pool_cancel(p, 12345, NULL), UNIAP_E_NOTFOUND);

	/* The pool still works. */
	submit(p, &c.recs[2], work_fill, in, sizeof(in), NULL, 0, SAFE_S);
	assert_int_equal(pool_wait_tag(p, 0, NULL), UNIAP_OK);
	assert_int_equal(col_get(&c, 2).o.status, POOL_OK);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(col_get(&c, i).n_done, 1);
	pool_free(p);
	col_release(&c);
	assert_no_children();
}

static void test_queue_full_is_refused_at_once(void **state)
{
	unsigned char in[4] = { 1, 1, 2, 3 };
	struct pool_task t = {
		.work = work_fill, .in = in, .in_len = sizeof(in), .done = on_done, .time_limit_s = SAFE_S,
	};
	struct col c;
	struct pool *p;
	struct uniap_err err;
	pool_ticket hang, id = 5;
	double t0;

	(void)state;
	col_init(&c, 5);
	p = make_pool(1, 2, 1024);
	hang = submit(p, &c.recs[0], work_hang, NULL, 0, NULL, 0, 0);
	col_wait(&c, 0, 0); /* taken by the thread: the queue is empty again */
	submit(p, &c.recs[1], work_fill, in, sizeof(in), NULL, 0, SAFE_S);
	submit(p, &c.recs[2], work_fill, in, sizeof(in), NULL, 0, SAFE_S);

	t.ctx = &c.recs[3];
	err_clear(&err);
	t0 = now_s();
	assert_int_equal(pool_submit(p, &t, &id, &err), UNIAP_E_LIMIT);
	assert_true(now_s() - t0 < 5); /* the hung task never ends: a blocked submit would wait for ever */
	assert_int_equal(id, 0);
	assert_non_null(strstr(err.msg, "queue full"));

	assert_int_equal(pool_cancel(p, hang, NULL), UNIAP_OK);
	assert_int_equal(pool_wait_tag(p, 0, NULL), UNIAP_OK);
	assert_int_equal(col_get(&c, 1).o.status, POOL_OK);
	assert_int_equal(col_get(&c, 2).o.status, POOL_OK);
	assert_int_equal(col_get(&c, 3).n_done, 0); /* refused: never called */

	t.ctx = &c.recs[4];
	assert_int_equal(pool_submit(p, &t, &id, NULL), UNIAP_OK);
	assert_int_equal(pool_wait_tag(p, 0, NULL), UNIAP_OK);
	assert_int_equal(col_get(&c, 4).o.status, POOL_OK);
	pool_free(p);
	col_release(&c);
	assert_no_children();
}

static void test_bad_replies_fail_without_hanging(void **state)
{
	enum { CAP = 8192 };
	static const struct {
		pool_work_fn work;
		intptr_t arg;
		enum pool_status status;
		const char *msg;
	} cases[] = {
		{ work_bad_reply, BAD_PARTIAL_HEADER_EXIT, POOL_ERROR, "5 of 16 header bytes" },
		{ work_bad_reply, BAD_PARTIAL_HEADER_ABORT, POOL_CRASHED, "signal 6" },
		{ work_bad_reply, BAD_MAGIC, POOL_ERROR, "bad magic" },
		{ work_bad_reply, BAD_ENDLESS_GARBAGE, POOL_ERROR, "bad magic" },
		{ work_bad_reply, BAD_TRUNCATED, POOL_ERROR, "10 of the 100 bytes" },
		{ work_bad_reply, BAD_TOO_LONG, POOL_ERROR, "longer than the 4 bytes" },
		{ work_bad_reply, BAD_HEADER_OVER_CAP, POOL_ERROR, "over the cap of 8192 bytes" },
		{ work_bad_reply, BAD_NO_REPLY, POOL_ERROR, "without a reply" },
		{ work_sized, CAP + 1, POOL_ERROR, "reply of 8193 bytes is over the cap" },
		{ work_sized, 10 * CAP, POOL_ERROR, "over the cap" },
		{ work_sized, CAP, POOL_OK, "" },
		{ work_sized, 0, POOL_OK, "" },
	};
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	size_t cap = CAP;
	struct col c;
	struct pool *p;

	(void)state;
	col_init(&c, N);
	p = make_pool(2, N, CAP);
	for (size_t i = 0; i < N; i++)
		submit(p, &c.recs[i], cases[i].work, &cap, sizeof(cap), (void *)cases[i].arg, 0, 10);
	assert_int_equal(pool_wait_tag(p, 0, NULL), UNIAP_OK);
	for (size_t i = 0; i < N; i++) {
		struct rec r = col_get(&c, i);

		print_message("case %zu: %s: %s (%.3f s)\n", i, pool_status_name(r.o.status), r.o.msg, r.o.wall_s);
		assert_int_equal(r.n_done, 1);
		assert_int_equal(r.o.status, cases[i].status);
		assert_non_null(strstr(r.o.msg, cases[i].msg));
		assert_reaped(r.o.pid);
		if (cases[i].status == POOL_OK)
			assert_int_equal(r.out_len, (size_t)cases[i].arg);
		else
			assert_int_equal(r.out_len, 0);
	}
	pool_free(p);
	col_release(&c);
	assert_no_children();
}

static void test_tags_cancel_and_wait_by_group(void **state)
{
	unsigned char in[4] = { 5, 6, 7, 8 };
	struct col c;
	struct pool *p;
	size_t n = 99;

	(void)state;
	col_init(&c, 6);
	p = make_pool(1, 8, 1024);
	c.pool = p;

	/* A callback may not wait on the pool (it would wait for itself). */
	c.recs[0].action = ACT_WAIT_TAG;
	submit(p, &c.recs[0], work_fill, in, sizeof(in), NULL, 3, SAFE_S);
	assert_int_equal(pool_wait_tag(p, 3, NULL), UNIAP_OK);
	assert_int_equal(col_get(&c, 0).action_rc, UNIAP_E_ARG);

	/* Job 1 runs a hanging task; job 2 has three queued behind it. */
	submit(p, &c.recs[1], work_hang, NULL, 0, NULL, 1, 0);
	col_wait(&c, 1, 0);
	for (size_t i = 2; i < 5; i++)
		submit(p, &c.recs[i], work_fill, in, sizeof(in), NULL, 2, SAFE_S);
	assert_int_equal(pool_cancel_tag(p, 2, &n, NULL), UNIAP_OK);
	assert_int_equal(n, 3);
	assert_int_equal(pool_wait_tag(p, 2, NULL), UNIAP_OK); /* returns while job 1 still runs */
	for (size_t i = 2; i < 5; i++) {
		assert_int_equal(col_get(&c, i).o.status, POOL_CANCELED);
		assert_int_equal(col_get(&c, i).o.tag, 2);
	}
	assert_int_equal(col_get(&c, 1).n_done, 0);

	assert_int_equal(pool_cancel_tag(p, 99, &n, NULL), UNIAP_OK);
	assert_int_equal(n, 0);
	assert_int_equal(pool_cancel_tag(p, 1, &n, NULL), UNIAP_OK);
	assert_int_equal(n, 1);
	assert_int_equal(pool_wait_tag(p, 1, NULL), UNIAP_OK);
	assert_int_equal(col_get(&c, 1).o.status, POOL_CANCELED);
	assert_reaped(col_get(&c, 1).started_pid);

	submit(p, &c.recs[5], work_fill, in, sizeof(in), NULL, 2, SAFE_S);
	assert_int_equal(pool_wait_tag(p, 2, NULL), UNIAP_OK);
	assert_int_equal(col_get(&c, 5).o.status, POOL_OK);
	pool_free(p);
	col_release(&c);
	assert_no_children();
}

/* With the one worker held by task 0 (hanging, tag and group tags[0]), queues
 * tasks 1..n-1 with tags[i] and groups[i] (0: the tag), frees the worker, and
 * checks that task i was the want_seq[i]-th to start. */
static void check_turns(const uint64_t *tags, const uint64_t *groups, const int *want_seq, size_t n)
{
	unsigned char in[4] = { 1, 2, 3, 4 };
	struct col c;
	struct pool *p;
	size_t k = 0;

	col_init(&c, n);
	p = make_pool(1, 16, 1024);
	c.pool = p;
	submit_group(p, &c.recs[0], work_hang, NULL, 0, NULL, tags[0], groups[0], 0);
	col_wait(&c, 0, 0);
	for (size_t i = 1; i < n; i++)
		submit_group(p, &c.recs[i], work_fill, in, sizeof(in), NULL, tags[i], groups[i], SAFE_S);
	assert_int_equal(pool_cancel_tag(p, tags[0], &k, NULL), UNIAP_OK);
	assert_int_equal(k, 1);
	for (size_t i = 0; i < n; i++)
		col_wait(&c, i, 1);
	for (size_t i = 0; i < n; i++) {
		struct rec r = col_get(&c, i);

		assert_int_equal(r.o.status, i == 0 ? POOL_CANCELED : POOL_OK);
		assert_int_equal(r.o.tag, tags[i]);
		assert_int_equal(r.start_seq, want_seq[i]);
	}
	pool_free(p);
	col_release(&c);
	assert_no_children();
}

/* Round-robin over tags: with the one worker busy, job 1 queues three tasks,
 * job 2 three, job 3 one; once the worker is free they start 1, 2, 3, 1, 2,
 * 1, 2 (FIFO within a job), not in submission order. */
static void test_tags_take_turns(void **state)
{
	static const uint64_t tags[8] = { 9, 1, 1, 1, 2, 2, 2, 3 };
	static const uint64_t groups[8] = { 0 };
	static const int want_seq[8] = { 1, 2, 5, 7, 3, 6, 8, 4 };

	(void)state;
	check_turns(tags, groups, want_seq, 8);
}

/* Round-robin over groups first: with the one worker busy, group 1 queues
 * two tasks of job 1 and two of job 2, group 2 one of job 3 and one of job
 * 4; tasks 1..6 start in the order 1, 5, 3, 6, 2, 4 (groups alternate;
 * within group 1 its jobs alternate), where tags alone would have let group
 * 1 start three of its four before group 2's second. */
static void test_groups_take_turns(void **state)
{
	static const uint64_t tags[7] = { 9, 1, 1, 2, 2, 3, 4 };
	static const uint64_t groups[7] = { 9, 1, 1, 1, 1, 2, 2 };
	static const int want_seq[7] = { 1, 2, 6, 4, 7, 3, 5 };

	(void)state;
	check_turns(tags, groups, want_seq, 7);
}

/* A spare thread: while group 1's task holds the one regular thread, group
 * 1's next task waits (the spare never takes a task of a group with one
 * running, though it is idle), and group 2's tasks, submitted after it, run
 * to the end on the spare; once group 1's first ends, its second starts. */
static void test_spare_thread_serves_idle_groups(void **state)
{
	unsigned char in[4] = { 1, 2, 3, 4 };
	struct pool_config cfg = { .threads = 1, .queue_cap = 8, .max_output_bytes = 1024, .spare_threads = 1 };
	struct uniap_err err;
	struct col c;
	struct pool *p = NULL;
	size_t n = 0;

	(void)state;
	err_clear(&err);
	assert_int_equal(pool_new(&cfg, &p, &err), UNIAP_OK);
	col_init(&c, 4);
	c.pool = p;
	submit_group(p, &c.recs[0], work_hang, NULL, 0, NULL, 1, 1, 0);
	col_wait(&c, 0, 0);
	submit_group(p, &c.recs[1], work_hang, NULL, 0, NULL, 2, 1, 0);
	submit_group(p, &c.recs[2], work_fill, in, sizeof(in), NULL, 3, 2, SAFE_S);
	col_wait(&c, 2, 1);
	submit_group(p, &c.recs[3], work_fill, in, sizeof(in), NULL, 4, 2, SAFE_S);
	col_wait(&c, 3, 1);
	assert_int_equal(col_get(&c, 2).o.status, POOL_OK);
	assert_int_equal(col_get(&c, 3).o.status, POOL_OK);
	assert_int_equal(col_get(&c, 1).n_started, 0);
	assert_int_equal(col_get(&c, 0).n_done, 0);

	assert_int_equal(pool_cancel_tag(p, 1, &n, NULL), UNIAP_OK);
	assert_int_equal(n, 1);
	col_wait(&c, 1, 0);
	assert_int_equal(col_get(&c, 0).o.status, POOL_CANCELED);
	assert_int_equal(pool_cancel_tag(p, 2, &n, NULL), UNIAP_OK);
	col_wait(&c, 1, 1);
	assert_int_equal(col_get(&c, 1).o.status, POOL_CANCELED);
	pool_free(p);
	col_release(&c);
	assert_no_children();
}

static void test_free_cancels_everything(void **state)
{
	enum { N = 5 };
	unsigned char in[4] = { 4, 3, 2, 1 };
	struct col c;
	struct pool *p;

	(void)state;
	col_init(&c, N);
	p = make_pool(2, 8, 1024);
	c.pool = p;
	submit(p, &c.recs[0], work_hang, NULL, 0, NULL, 0, 0);
	submit(p, &c.recs[1], work_hang, NULL, 0, NULL, 0, 0);
	col_wait(&c, 0, 0);
	col_wait(&c, 1, 0);
	c.recs[4].action = ACT_SUBMIT;
	for (size_t i = 2; i < N; i++)
		submit(p, &c.recs[i], work_fill, in, sizeof(in), NULL, 0, SAFE_S);
	pool_free(p);
	for (size_t i = 0; i < N; i++) {
		struct rec r = col_get(&c, i);

		assert_int_equal(r.n_done, 1);
		assert_int_equal(r.o.status, POOL_CANCELED);
		if (i < 2) {
			assert_int_equal(r.o.pid, r.started_pid);
			assert_reaped(r.started_pid);
		} else {
			assert_int_equal(r.o.pid, 0);
			assert_int_equal(r.n_started, 0);
		}
	}
	assert_int_equal(col_get(&c, 4).action_rc, UNIAP_E_CANCELED);
	col_release(&c);
	assert_no_children();
}

static void on_started_report_pid(void *ctx, pool_ticket id, pid_t pid)
{
	(void)id;
	if (write(*(int *)ctx, &pid, sizeof(pid)) != sizeof(pid)) {
		/* the test then fails reading it */
	}
}

static void on_done_ignore(void *ctx, const struct pool_outcome *o)
{
	(void)ctx, (void)o;
}

/* A parent killed outright takes its children with it (PR_SET_PDEATHSIG):
 * a helper process runs a pool with a hanging task and is SIGKILLed; this
 * process, a subreaper, inherits the orphan and must see it die. */
static void test_parent_death_kills_children(void **state)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	pid_t helper, child = 0, got;
	int fds[2], st = 0, waited = 0;

	(void)state;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L), 0);
	assert_int_equal(pipe(fds), 0);
	helper = fork();
	assert_true(helper >= 0);
	if (helper == 0) {
		struct pool_config cfg = { 1, 1, 64, 0 };
		struct pool_task t = {
			.work = work_hang, .started = on_started_report_pid, .done = on_done_ignore, .ctx = &fds[1],
		};
		struct pool *p;

		close(fds[0]);
		if (pool_new(&cfg, &p, NULL) != UNIAP_OK || pool_submit(p, &t, NULL, NULL) != UNIAP_OK)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &child, sizeof(child)), sizeof(child));
	close(fds[0]);
	assert_true(child > 0);
	assert_int_equal(kill(helper, SIGKILL), 0);
	assert_int_equal(waitpid(helper, &st, 0), helper);
	/* -1 (ECHILD) until the orphan is reparented to us, 0 while it lives */
	while ((got = waitpid(child, &st, WNOHANG)) != child && waited++ < TEST_WAIT_S * 100)
		nanosleep(&tick, NULL);
	assert_int_equal(got, child);
	/* SIGKILL, or an early exit if the helper died before the child armed it */
	assert_true((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) || (WIFEXITED(st) && WEXITSTATUS(st) != 0));
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0L, 0L, 0L, 0L), 0);
	assert_no_children();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_and_task_checks),
		cmocka_unit_test(test_many_tasks_concurrent_equals_sequential),
		cmocka_unit_test(test_crash_fails_only_its_task),
		cmocka_unit_test(test_timeout_kills_and_pool_goes_on),
		cmocka_unit_test(test_cancel_queued_and_running),
		cmocka_unit_test(test_queue_full_is_refused_at_once),
		cmocka_unit_test(test_bad_replies_fail_without_hanging),
		cmocka_unit_test(test_tags_cancel_and_wait_by_group),
		cmocka_unit_test(test_tags_take_turns),
		cmocka_unit_test(test_groups_take_turns),
		cmocka_unit_test(test_spare_thread_serves_idle_groups),
		cmocka_unit_test(test_free_cancels_everything),
		cmocka_unit_test(test_parent_death_kills_children),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
