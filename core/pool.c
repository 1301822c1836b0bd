/*
 * pool.c - a bounded thread pool whose threads each fork one worker process
 * per task, supervise it (reply, deadline, cancel) and reap it.
 *
 * Never: run a task in this process; call a callback with pool->mu held;
 * block in pool_submit()/pool_cancel*(); signal or reap a pid the pool did
 * not fork; touch pool->mu (or any lock) in a child.
 *
 * Lock order and ownership
 * ------------------------
 * - pool->mu is the only lock.  It guards every mutable field of struct pool,
 *   of its entries and of the shared part of its worker slots (marked "mu").
 *   It is a leaf: nothing else is locked while it is held, no callback runs
 *   under it, and nothing blocks under it (the only system calls made with it
 *   held are non-blocking reads/writes of the attention pipes).  So a caller
 *   may hold its own lock L around pool_submit()/pool_cancel*() (order
 *   L -> pool->mu), and callbacks, which run with no pool lock, may take L.
 * - Only the worker thread that forked a child signals and reaps it;
 *   pool_cancel*() set a flag and write one byte to that worker's attention
 *   pipe.  A pid is therefore never signalled after it was reaped (no risk of
 *   hitting a recycled pid), and reaping needs no lock.
 * - The worker's own supervision state (pid, reply pipe, pidfd, reply
 *   buffer) lives on its stack: unshared, unlocked.
 * - entries[] (queue_cap slots) and workers[] (threads + spare_threads slots) are allocated
 *   once by pool_new() and owned by the pool.  A queued entry holds a copy of
 *   the caller's struct pool_task; the buffers it points to stay the
 *   caller's.  A slot is released when a worker takes the task (so queue_cap
 *   caps tasks waiting to start), or, for a task canceled while queued, after
 *   its done callback returned.
 * - The reply buffer is owned by the worker thread and freed after the done
 *   callback; the callback only borrows it.
 *
 * In the child (after fork() only the forking thread exists): no pool lock,
 * no pool memory except the worker's stack copy of the task, no stdio, no
 * exit(): reset signals, point fd 3 at the reply pipe, close the rest, run
 * the work function, write the reply, _exit().  See docs/pool.md.
 */
#define _GNU_SOURCE /* pipe2, close_range: this file is Linux-specific anyway (pidfd) */

#include "pool.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The longest time limit accepted (seconds); also rejects inf and NaN. */
#define POOL_TIME_LIMIT_MAX_S 1e9

/* Exit status of a child that could not set up or write its reply, or
 * found its parent gone. */
#define POOL_CHILD_EXIT_IO 120

enum pool_entry_state {
	POOL_ENTRY_FREE = 0,
	POOL_ENTRY_PENDING,    /* waiting for a worker */
	POOL_ENTRY_CANCELED,   /* canceled while waiting; its callback is due */
	POOL_ENTRY_COMPLETING, /* its CANCELED callback is running */
};

struct pool_entry {
	struct pool_entry *prev, *next; /* mu: in free_list, pending or canceled */
	enum pool_entry_state state;    /* mu */
	pool_ticket id;                 /* mu */
	struct pool_task task;          /* mu; a copy; the buffers are the caller's */
};

struct pool_list {
	struct pool_entry *head, *tail;
};

/*
 * Round-robin over groups, then tags: a worker takes the pending task whose
 * group got a worker least recently (one not in served_groups[] never did, or
 * long ago: it goes first), among those the one whose tag did, the oldest of
 * that tag; so each group's next task goes in turn, and within a group each
 * tag's, and one large group cannot hold every worker while others wait.
 * Each table remembers the POOL_SERVED_TAGS most recent keys; the oldest
 * entry makes room for a new one.
 */
#define POOL_SERVED_TAGS 64

struct pool_served {
	uint64_t tag;   /* a tag or a group */
	uint64_t seq;   /* start_seq when it last got a worker; 0: free entry */
};

struct pool_worker {
	struct pool *pool;
	pthread_t thread;
	int attn_r, attn_w;   /* attention pipe (non-blocking): written under mu */
	int spare;            /* one of the spare_threads (immutable) */
	int busy;             /* mu: owns a task, from taking it to the end of done */
	pool_ticket id;       /* mu: that task */
	uint64_t tag;         /* mu */
	uint64_t group;       /* mu: that task's group (its tag when it named none) */
	int cancel_requested; /* mu */
	int finishing;        /* mu: outcome being decided; too late to cancel */
};

struct pool {
	struct pool_config cfg;      /* immutable after pool_new */
	pthread_mutex_t mu;
	pthread_cond_t work_cv;      /* mu: an entry to take, or shutting down */
	pthread_cond_t idle_cv;      /* mu: a task finished (pool_wait_tag) */
	int have_mu, have_work_cv, have_idle_cv;
	struct pool_entry *entries;  /* [cfg.queue_cap] */
	struct pool_list free_list;  /* mu */
	struct pool_list pending;    /* mu: in submission order; taken round-robin over tags */
	struct pool_served served[POOL_SERVED_TAGS]; /* mu: when each recent tag last got a worker */
	struct pool_served served_groups[POOL_SERVED_TAGS]; /* mu: when each recent group did */
	uint64_t start_seq;          /* mu: tasks started so far (the clock of served[]) */
	struct pool_list canceled;   /* mu: FIFO */
	struct pool_worker *workers; /* [cfg.threads + cfg.spare_threads], the spare ones last */
	int n_workers;               /* cfg.threads + cfg.spare_threads */
	int n_started;               /* threads running; written only before publication */
	int n_idle;                  /* mu: threads waiting on work_cv */
	int shutting_down;           /* mu */
	pool_ticket next_id;         /* mu */
};

/* Where the supervision of one child stopped. */
enum pool_stop {
	POOL_STOP_EXITED,  /* the child exited by itself */
	POOL_STOP_CANCEL,  /* its task was canceled */
	POOL_STOP_TIMEOUT, /* its deadline passed */
	POOL_STOP_BAD,     /* its reply broke the protocol (or a syscall failed) */
};

/* The parent's side of one reply. */
struct pool_reply {
	unsigned char hdr_bytes[sizeof(struct pool_reply_header)];
	size_t hdr_got;
	struct pool_reply_header hdr; /* valid once hdr_got == sizeof hdr_bytes */
	unsigned char *buf;           /* owned: hdr.len bytes */
	size_t got;
	int bad;                      /* the reply is unusable: msg says why */
	char msg[POOL_MSG_MAX];
};

static const char *const pool_status_names[] = {
	[POOL_OK] = "ok",
	[POOL_CRASHED] = "crashed",
	[POOL_TIMEOUT] = "timeout",
	[POOL_CANCELED] = "canceled",
	[POOL_ERROR] = "error",
};

const char *pool_status_name(enum pool_status status)
{
	if ((int)status < 0 || (size_t)status >= sizeof(pool_status_names) / sizeof(pool_status_names[0]))
		return "unknown";
	return pool_status_names[status];
}

static double pool_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pool_msg(char *msg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pool_msg(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, POOL_MSG_MAX, fmt, ap);
	va_end(ap);
}

/* Thread-safe strerror into buf (borrowed, POOL_MSG_MAX bytes); returns the text. */
static const char *pool_strerror(int errnum, char *buf)
{
	return strerror_r(errnum, buf, POOL_MSG_MAX); /* GNU variant: may return a static string */
}

/* ---- lists (mu held) ---- */

static void pool_list_push(struct pool_list *l, struct pool_entry *e)
{
	e->next = NULL;
	e->prev = l->tail;
	if (l->tail)
		l->tail->next = e;
	else
		l->head = e;
	l->tail = e;
}

static void pool_list_remove(struct pool_list *l, struct pool_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = NULL;
}

static void pool_entry_release(struct pool *p, struct pool_entry *e)
{
	memset(&e->task, 0, sizeof(e->task));
	e->id = 0;
	e->state = POOL_ENTRY_FREE;
	pool_list_push(&p->free_list, e);
}

/* ---- attention pipes ---- */

/* Reads fd (non-blocking) empty.  Called with mu held so that a byte written
 * after it (also under mu) is never lost. */
static void pool_drain(int fd)
{
	char buf[64];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		return; /* EAGAIN (empty) or end of file */
	}
}

/* Wakes w out of poll() (mu held).  A full pipe already holds a wake-up. */
static void pool_poke(struct pool_worker *w)
{
	if (write(w->attn_w, "!", 1) < 0) {
		/* EAGAIN: a byte is pending already */
	}
}

/* Someone must complete the entries on the canceled list (mu held): an idle
 * thread if there is one, else every busy one notices through its pipe. */
static void pool_kick_canceled(struct pool *p)
{
	if (p->n_idle > 0) {
		pthread_cond_signal(&p->work_cv);
		return;
	}
	for (int i = 0; i < p->n_started; i++)
		if (p->workers[i].busy)
			pool_poke(&p->workers[i]);
}

/* Takes the oldest canceled queued entry, if any, and calls its done
 * callback (POOL_CANCELED, no child).  Called without mu; returns 1 if it
 * completed one. */
static int pool_complete_one_canceled(struct pool *p)
{
	struct pool_entry *e;
	struct pool_task task;
	struct pool_outcome o;

	pthread_mutex_lock(&p->mu);
	e = p->canceled.head;
	if (!e) {
		pthread_mutex_unlock(&p->mu);
		return 0;
	}
	pool_list_remove(&p->canceled, e);
	e->state = POOL_ENTRY_COMPLETING; /* still counted by pool_wait_tag */
	task = e->task;
	memset(&o, 0, sizeof(o));
	o.id = e->id;
	pthread_mutex_unlock(&p->mu);

	o.tag = task.tag;
	o.status = POOL_CANCELED;
	pool_msg(o.msg, "canceled before it started");
	task.done(task.ctx, &o);

	pthread_mutex_lock(&p->mu);
	pool_entry_release(p, e);
	pthread_cond_broadcast(&p->idle_cv);
	pthread_mutex_unlock(&p->mu);
	return 1;
}

/* ---- the child ----
 *
 * Its system calls go straight to the kernel (syscall()), not through the C
 * library's wrappers: under -fsanitize=thread/address those wrappers are
 * interceptors that allocate and lock inside the sanitizer runtime, and gcc
 * 12's runtimes do not take those locks around fork(), so a lock another
 * parent thread held at fork time would stay locked forever in the child.
 * Plain builds lose nothing: the calls are the same. */

static long pool_child_write(int fd, const void *buf, size_t len)
{
	return syscall(SYS_write, fd, buf, len);
}

static void pool_child_close(int fd)
{
	(void)syscall(SYS_close, fd);
}

static int pool_child_write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *at = buf;

	while (len > 0) {
		long n = pool_child_write(fd, at, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		at += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Default dispositions and an empty mask: the parent's handlers (a test
 * framework's SIGSEGV handler, a server's SIGTERM handler) must not run in the
 * child, and a crash must end it by the signal, which the parent reports. */
static void pool_child_reset_signals(void)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &sa, NULL); /* EINVAL for the C library's own: fine */
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Leaves 0, 1, 2 and POOL_CHILD_REPLY_FD open, nothing else: descriptors of
 * the parent (other children's reply pipes, attention pipes, sockets) must
 * not be held open by this child. */
static void pool_child_close_fds(void)
{
	struct rlimit rl;
	unsigned int first = POOL_CHILD_REPLY_FD + 1;

#ifdef SYS_close_range
	if (syscall(SYS_close_range, first, ~0U, 0) == 0)
		return;
#endif
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT_MAX)
		rl.rlim_cur = 65536;
	for (int fd = (int)first; fd < (int)rl.rlim_cur; fd++)
		pool_child_close(fd);
}

/* Runs in the child of pool_run(): sets up descriptors and signals, runs the
 * work function, writes the reply to POOL_CHILD_REPLY_FD and leaves with
 * _exit(), never returning.  task points into the forking thread's stack
 * (its copy in this process). */
__attribute__((noreturn))
static void pool_child_main(const struct pool_task *task, int reply_fd, size_t cap, pid_t parent)
{
	struct pool_reply_header hdr;
	void *out = NULL;
	size_t out_len = 0;
	long fd;
	int rc;

	pool_child_reset_signals();
	/* Should the parent die (crash, SIGKILL) this child dies too instead of
	 * solving on for nobody.  The signal follows the forking thread, which
	 * outlives the child: it reaps it before it can exit. */
	(void)syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0L, 0L, 0L);
	if (syscall(SYS_getppid) != parent)
		_exit(POOL_CHILD_EXIT_IO); /* it died before the line above */
	if (reply_fd != POOL_CHILD_REPLY_FD) {
		if (syscall(SYS_dup3, reply_fd, POOL_CHILD_REPLY_FD, 0) < 0)
			_exit(POOL_CHILD_EXIT_IO);
		if (reply_fd < POOL_CHILD_REPLY_FD)
			pool_child_close(reply_fd); /* the parent ran with 0-2 closed */
	}
	pool_child_close_fds();
	fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);
	if (fd >= 0 && fd != STDIN_FILENO) {
		(void)syscall(SYS_dup3, (int)fd, STDIN_FILENO, 0);
		pool_child_close((int)fd);
	}

	rc = task->work(task->in, task->in_len, &out, &out_len, task->arg);
	if (!out)
		out_len = 0;

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = POOL_REPLY_MAGIC;
	hdr.work_rc = rc;
	hdr.len = out_len;
	if (pool_child_write_all(POOL_CHILD_REPLY_FD, &hdr, sizeof(hdr)) != 0)
		_exit(POOL_CHILD_EXIT_IO);
	/* Over the cap: the header alone tells the parent, which refuses it. */
	if (out_len <= cap && pool_child_write_all(POOL_CHILD_REPLY_FD, out, out_len) != 0)
		_exit(POOL_CHILD_EXIT_IO);
	/* _exit: no atexit handlers, no flush of stdio buffers copied from the
	 * parent, no sanitizer leak check of a heap we are about to drop. */
	_exit(0);
}

/* ---- the parent's side of one child ---- */

static void pool_reply_fail(struct pool_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pool_reply_fail(struct pool_reply *r, const char *fmt, ...)
{
	va_list ap;

	if (r->bad)
		return; /* keep the first reason */
	r->bad = 1;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
}

static void pool_reply_check_header(struct pool_reply *r, size_t cap)
{
	memcpy(&r->hdr, r->hdr_bytes, sizeof(r->hdr));
	if (r->hdr.magic != POOL_REPLY_MAGIC) {
		pool_reply_fail(r, "malformed reply: bad magic 0x%08x", (unsigned)r->hdr.magic);
		return;
	}
	if (r->hdr.len > cap) {
		pool_reply_fail(r, "reply of %llu bytes is over the cap of %zu bytes",
		                (unsigned long long)r->hdr.len, cap);
		return;
	}
	if (r->hdr.len > 0) {
		r->buf = malloc((size_t)r->hdr.len);
		if (!r->buf)
			pool_reply_fail(r, "out of memory for a reply of %llu bytes", (unsigned long long)r->hdr.len);
	}
}

/*
 * Reads what fd (non-blocking) holds now into r.  Returns 1 at end of file,
 * 0 when it would block or the reply went bad (r->bad).  Reads at most
 * header + cap bytes + one more chunk, so a child that writes forever cannot
 * keep the parent here.
 */
static int pool_reply_read(struct pool_reply *r, int fd, size_t cap)
{
	unsigned char extra[64];
	char ebuf[POOL_MSG_MAX];

	while (!r->bad) {
		void *dst;
		size_t want;
		ssize_t n;

		if (r->hdr_got < sizeof(r->hdr_bytes)) {
			dst = r->hdr_bytes + r->hdr_got;
			want = sizeof(r->hdr_bytes) - r->hdr_got;
		} else if (r->got < r->hdr.len) {
			dst = r->buf + r->got;
			want = (size_t)r->hdr.len - r->got;
		} else {
			dst = extra;
			want = sizeof(extra);
		}
		n = read(fd, dst, want);
		if (n == 0)
			return 1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			pool_reply_fail(r, "reading the reply: %s", pool_strerror(errno, ebuf));
			return 0;
		}
		if (dst == extra) {
			pool_reply_fail(r, "malformed reply: longer than the %llu bytes its header announced",
			                (unsigned long long)r->hdr.len);
		} else if (r->hdr_got < sizeof(r->hdr_bytes)) {
			r->hdr_got += (size_t)n;
			if (r->hdr_got == sizeof(r->hdr_bytes))
				pool_reply_check_header(r, cap);
		} else {
			r->got += (size_t)n;
		}
	}
	return 0;
}

/*
 * Woken through the attention pipe while supervising: returns 1 if this
 * worker's own task was canceled; otherwise completes the canceled queued
 * tasks (there may be no idle thread to do it) and returns 0.
 */
static int pool_attend(struct pool_worker *w)
{
	struct pool *p = w->pool;
	int cancel;

	pthread_mutex_lock(&p->mu);
	pool_drain(w->attn_r);
	cancel = w->cancel_requested;
	pthread_mutex_unlock(&p->mu);
	if (cancel)
		return 1;
	while (pool_complete_one_canceled(p))
		;
	return 0;
}

/*
 * Watches one child until it exits, its deadline (deadline_s on the
 * pool_now_s() clock; 0 for none) passes, its task is canceled, or its reply
 * goes bad.  With a pidfd the child's exit is seen directly; without one
 * (Linux < 5.3) end of file on the reply pipe stands for it.  Never busy-waits:
 * one poll() over the attention pipe, the reply pipe and the pidfd.
 */
static enum pool_stop pool_supervise(struct pool_worker *w, int reply_fd, int pidfd, double deadline_s,
                                     struct pool_reply *r)
{
	size_t cap = w->pool->cfg.max_output_bytes;
	char ebuf[POOL_MSG_MAX];
	int eof = 0;

	for (;;) {
		struct pollfd pfd[3];
		nfds_t n = 0;
		int i_reply = -1, i_pid = -1, timeout_ms = -1, rc;

		if (eof && pidfd < 0)
			return POOL_STOP_EXITED;
		if (deadline_s > 0) {
			double left_s = deadline_s - pool_now_s();
			/* Rounded up, so a wake-up never comes before the deadline; once
			 * it passed, one last look (timeout 0) at what is ready. */
			if (left_s <= 0)
				timeout_ms = 0;
			else if (left_s >= (double)(INT_MAX / 1000))
				timeout_ms = INT_MAX;
			else
				timeout_ms = (int)(left_s * 1000.0) + 1;
		}
		pfd[n++] = (struct pollfd){ .fd = w->attn_r, .events = POLLIN };
		if (!eof) {
			i_reply = (int)n;
			pfd[n++] = (struct pollfd){ .fd = reply_fd, .events = POLLIN };
		}
		if (pidfd >= 0) {
			i_pid = (int)n;
			pfd[n++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		}
		rc = poll(pfd, n, timeout_ms);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			pool_reply_fail(r, "poll: %s", pool_strerror(errno, ebuf));
			return POOL_STOP_BAD;
		}
		if (rc == 0) {
			if (deadline_s > 0 && pool_now_s() >= deadline_s)
				return POOL_STOP_TIMEOUT;
			continue;
		}
		if (pfd[0].revents && pool_attend(w))
			return POOL_STOP_CANCEL;
		if (i_reply >= 0 && pfd[i_reply].revents) {
			if (pool_reply_read(r, reply_fd, cap))
				eof = 1;
			if (r->bad)
				return POOL_STOP_BAD;
		}
		if (i_pid >= 0 && pfd[i_pid].revents) {
			/* It exited: all it wrote fits in the pipe buffer now. */
			if (!eof)
				(void)pool_reply_read(r, reply_fd, cap);
			return r->bad ? POOL_STOP_BAD : POOL_STOP_EXITED;
		}
	}
}

static int pool_pidfd_open(pid_t pid)
{
#if defined(SYS_pidfd_open) && !defined(POOL_NO_PIDFD)
	long fd = syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -1 : (int)fd;
#else
	(void)pid;
	return -1;
#endif
}

/* waitpid(pid) until it is reaped; returns 0, or -1 with errno (ECHILD:
 * someone else reaped it, e.g. SIGCHLD set to SIG_IGN). */
static int pool_reap(pid_t pid, int *wstatus)
{
	for (;;) {
		if (waitpid(pid, wstatus, 0) == pid)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* Turns how supervision stopped and how the child ended into an outcome. */
static void pool_judge(struct pool_outcome *o, enum pool_stop stop, int wstatus, const struct pool_reply *r,
                       double time_limit_s)
{
	const char *abbrev;

	switch (stop) {
	case POOL_STOP_TIMEOUT:
		o->status = POOL_TIMEOUT;
		pool_msg(o->msg, "time limit of %g s expired; child killed", time_limit_s);
		return;
	case POOL_STOP_BAD:
		o->status = POOL_ERROR;
		pool_msg(o->msg, "%s; child killed", r->msg);
		return;
	case POOL_STOP_CANCEL:
		o->status = POOL_CANCELED; /* the caller's flag decides; see pool_run */
		return;
	case POOL_STOP_EXITED:
		break;
	}
	if (WIFSIGNALED(wstatus)) {
		o->status = POOL_CRASHED;
		o->signal = WTERMSIG(wstatus);
		abbrev = sigabbrev_np(o->signal);
		pool_msg(o->msg, "child killed by signal %d (SIG%s)", o->signal, abbrev ? abbrev : "?");
		return;
	}
	if (!WIFEXITED(wstatus)) {
		o->status = POOL_CRASHED;
		pool_msg(o->msg, "child ended abnormally (wait status 0x%x)", (unsigned)wstatus);
		return;
	}
	if (WEXITSTATUS(wstatus) != 0) {
		o->status = POOL_CRASHED;
		o->exit_code = WEXITSTATUS(wstatus);
		pool_msg(o->msg, "child exited with status %d%s", o->exit_code,
		         o->exit_code == POOL_CHILD_EXIT_IO ? " (could not set up or write its reply)" : "");
		return;
	}
	o->status = POOL_ERROR;
	if (r->hdr_got == 0) {
		pool_msg(o->msg, "child exited without a reply");
		return;
	}
	if (r->hdr_got < sizeof(r->hdr_bytes)) {
		pool_msg(o->msg, "malformed reply: %zu of %zu header bytes", r->hdr_got, sizeof(r->hdr_bytes));
		return;
	}
	if (r->got < r->hdr.len) {
		pool_msg(o->msg, "malformed reply: %zu of the %llu bytes its header announced", r->got,
		         (unsigned long long)r->hdr.len);
		return;
	}
	o->status = POOL_OK;
	o->work_rc = r->hdr.work_rc;
	o->out = r->buf;
	o->out_len = (size_t)r->hdr.len;
}

/* Runs one task taken from the queue: fork, supervise, reap, call done. */
static void pool_run(struct pool_worker *w, const struct pool_task *task, pool_ticket id)
{
	struct pool *p = w->pool;
	size_t cap = p->cfg.max_output_bytes;
	struct pool_outcome o;
	struct pool_reply r;
	char ebuf[POOL_MSG_MAX];
	int rp[2] = { -1, -1 };
	int pidfd = -1, wstatus = 0, canceled;
	enum pool_stop stop;
	pid_t pid = 0, parent = getpid();
	double start_s = pool_now_s();

	memset(&o, 0, sizeof(o));
	memset(&r, 0, sizeof(r));
	o.id = id;
	o.tag = task->tag;
	o.status = POOL_ERROR;

	pthread_mutex_lock(&p->mu);
	canceled = w->cancel_requested;
	pthread_mutex_unlock(&p->mu);
	if (canceled)
		goto finish;

	if (pipe2(rp, O_CLOEXEC) != 0) {
		pool_msg(o.msg, "pipe: %s", pool_strerror(errno, ebuf));
		goto finish;
	}
	pid = fork();
	if (pid < 0) {
		pid = 0;
		pool_msg(o.msg, "fork: %s", pool_strerror(errno, ebuf));
		goto finish;
	}
	if (pid == 0)
		pool_child_main(task, rp[1], cap, parent); /* never returns */
	(void)close(rp[1]);
	rp[1] = -1;
	o.pid = pid;

	/* From here on, every path kills (unless it exited) and reaps the child. */
	if (fcntl(rp[0], F_SETFL, O_NONBLOCK) != 0) {
		pool_reply_fail(&r, "fcntl: %s", pool_strerror(errno, ebuf));
		stop = POOL_STOP_BAD;
	} else {
		pidfd = pool_pidfd_open(pid);
		if (task->started)
			task->started(task->ctx, id, pid);
		stop = pool_supervise(w, rp[0], pidfd, task->time_limit_s > 0 ? start_s + task->time_limit_s : 0, &r);
	}
	if (stop != POOL_STOP_EXITED)
		(void)kill(pid, SIGKILL); /* ours and not yet reaped: cannot be a recycled pid */
	if (pool_reap(pid, &wstatus) != 0)
		pool_msg(o.msg, "waitpid(%d): %s (was SIGCHLD ignored?)", (int)pid, pool_strerror(errno, ebuf));
	else
		pool_judge(&o, stop, wstatus, &r, task->time_limit_s);

finish:
	pthread_mutex_lock(&p->mu);
	w->finishing = 1;
	canceled = w->cancel_requested;
	pthread_mutex_unlock(&p->mu);
	if (canceled) {
		/* pool_cancel() answered UNIAP_OK: the outcome is CANCELED whatever the child did */
		o.status = POOL_CANCELED;
		o.work_rc = o.signal = o.exit_code = 0;
		o.out = NULL;
		o.out_len = 0;
		pool_msg(o.msg, "%s", pid ? "canceled while running" : "canceled before it started");
	}
	o.wall_s = pid ? pool_now_s() - start_s : 0;
	task->done(task->ctx, &o);

	free(r.buf);
	if (rp[0] >= 0)
		(void)close(rp[0]);
	if (rp[1] >= 0)
		(void)close(rp[1]); /* fork failed */
	if (pidfd >= 0)
		(void)close(pidfd);
}

/* A task's group: the one it names, else its tag. */
static uint64_t pool_task_group(const struct pool_task *t)
{
	return t->group ? t->group : t->tag;
}

/* When key last got a worker by table (0: not among the recent ones); mu held. */
static uint64_t pool_served_seq(const struct pool_served *table, uint64_t key)
{
	for (int i = 0; i < POOL_SERVED_TAGS; i++)
		if (table[i].seq && table[i].tag == key)
			return table[i].seq;
	return 0;
}

/* Records in table that key got a worker at seq; mu held. */
static void pool_served_mark(struct pool_served *table, uint64_t key, uint64_t seq)
{
	int slot = 0;

	for (int i = 0; i < POOL_SERVED_TAGS; i++) {
		if (table[i].seq && table[i].tag == key) {
			slot = i;
			break;
		}
		if (table[i].seq < table[slot].seq)
			slot = i; /* a free entry (0) or the least recent */
	}
	table[slot].tag = key;
	table[slot].seq = seq;
}

/* 1 when every regular (not spare) thread owns a task; mu held.  Busy, not
 * "not waiting": a regular thread that is starting up or between two tasks
 * takes the next task itself. */
static int pool_regular_all_busy(const struct pool *p)
{
	for (int i = 0; i < p->cfg.threads; i++)
		if (!p->workers[i].busy)
			return 0;
	return 1;
}

/* 1 when a task of group is running (or in its done callback); mu held. */
static int pool_group_running(const struct pool *p, uint64_t group)
{
	for (int i = 0; i < p->n_workers; i++)
		if (p->workers[i].busy && p->workers[i].group == group)
			return 1;
	return 0;
}

/* The pending entry that worker w starts next (round-robin over groups, then
 * tags, above), or NULL when it may take none: a spare thread takes only a
 * task whose group has nothing running, and only while every regular thread
 * is busy.  mu held.  O(pending x (POOL_SERVED_TAGS + workers)): queue_cap is small. */
static struct pool_entry *pool_next_pending(const struct pool *p, const struct pool_worker *w)
{
	struct pool_entry *best = NULL, *e;
	uint64_t best_g = 0, best_t = 0;

	if (w->spare && !pool_regular_all_busy(p))
		return NULL;
	for (e = p->pending.head; e; e = e->next) {
		uint64_t group = pool_task_group(&e->task), g, t;

		if (w->spare && pool_group_running(p, group))
			continue;
		g = pool_served_seq(p->served_groups, group);
		t = pool_served_seq(p->served, e->task.tag);
		if (!best || g < best_g || (g == best_g && t < best_t)) {
			best = e;
			best_g = g;
			best_t = t;
			if (g == 0 && t == 0)
				break; /* neither was served lately: nothing goes before it */
		}
	}
	return best;
}

static void *pool_worker_main(void *arg)
{
	struct pool_worker *w = arg;
	struct pool *p = w->pool;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (p->canceled.head) {
			pthread_mutex_unlock(&p->mu);
			(void)pool_complete_one_canceled(p);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		struct pool_entry *e = p->pending.head ? pool_next_pending(p, w) : NULL;

		if (e) {
			struct pool_task task = e->task;
			pool_ticket id = e->id;

			p->start_seq++;
			pool_served_mark(p->served, task.tag, p->start_seq);
			pool_served_mark(p->served_groups, pool_task_group(&task), p->start_seq);
			pool_list_remove(&p->pending, e);
			pool_entry_release(p, e); /* queue_cap counts tasks waiting to start */
			w->busy = 1;
			w->id = id;
			w->tag = task.tag;
			w->group = pool_task_group(&task);
			/* every regular thread may be busy now: a spare may take what is left */
			if (p->cfg.spare_threads > 0 && !w->spare && p->pending.head)
				pthread_cond_broadcast(&p->work_cv);
			w->cancel_requested = 0;
			w->finishing = 0;
			pool_drain(w->attn_r); /* stale wake-ups of earlier tasks */
			pthread_mutex_unlock(&p->mu);

			pool_run(w, &task, id);

			pthread_mutex_lock(&p->mu);
			w->busy = 0;
			w->id = 0;
			pthread_cond_broadcast(&p->idle_cv);
			/* a group has one task fewer running: a spare thread may take its next */
			if (p->cfg.spare_threads > 0 && p->pending.head)
				pthread_cond_broadcast(&p->work_cv);
			continue;
		}
		if (p->shutting_down)
			break;
		p->n_idle++;
		pthread_cond_wait(&p->work_cv, &p->mu);
		p->n_idle--;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Stops and joins the threads (which complete whatever is queued as
 * CANCELED), then frees everything; p may be half-built by pool_new(). */
static void pool_destroy(struct pool *p)
{
	if (p->n_started > 0) {
		pthread_mutex_lock(&p->mu);
		p->shutting_down = 1;
		pthread_cond_broadcast(&p->work_cv);
		pthread_mutex_unlock(&p->mu);
		for (int i = 0; i < p->n_started; i++)
			pthread_join(p->workers[i].thread, NULL);
	}
	assert(!p->pending.head && !p->canceled.head);
	if (p->workers) {
		for (int i = 0; i < p->n_workers; i++) {
			if (p->workers[i].attn_r >= 0)
				(void)close(p->workers[i].attn_r);
			if (p->workers[i].attn_w >= 0)
				(void)close(p->workers[i].attn_w);
		}
	}
	if (p->have_idle_cv)
		pthread_cond_destroy(&p->idle_cv);
	if (p->have_work_cv)
		pthread_cond_destroy(&p->work_cv);
	if (p->have_mu)
		pthread_mutex_destroy(&p->mu);
	free(p->workers);
	free(p->entries);
	free(p);
}

static uniap_code pool_check_config(const struct pool_config *cfg, struct uniap_err *err)
{
	if (cfg->threads < 1 || cfg->threads > POOL_THREADS_MAX)
		return err_set(err, UNIAP_E_ARG, "pool_config.threads: must be in [1, %d], got %d", POOL_THREADS_MAX,
		               cfg->threads);
	if (cfg->spare_threads < 0 || cfg->spare_threads > POOL_THREADS_MAX)
		return err_set(err, UNIAP_E_ARG, "pool_config.spare_threads: must be in [0, %d], got %d",
		               POOL_THREADS_MAX, cfg->spare_threads);
	if (cfg->queue_cap < 1 || cfg->queue_cap > POOL_QUEUE_CAP_MAX)
		return err_set(err, UNIAP_E_ARG, "pool_config.queue_cap: must be in [1, %d], got %d",
		               POOL_QUEUE_CAP_MAX, cfg->queue_cap);
	if (cfg->max_output_bytes < 1 || cfg->max_output_bytes > POOL_OUTPUT_CAP_MAX)
		return err_set(err, UNIAP_E_ARG, "pool_config.max_output_bytes: must be in [1, %zu], got %zu",
		               POOL_OUTPUT_CAP_MAX, cfg->max_output_bytes);
	return UNIAP_OK;
}

uniap_code pool_new(const struct pool_config *cfg, struct pool **out, struct uniap_err *err)
{
	struct pool *p = NULL;
	sigset_t all, old;
	int masked = 0;
	uniap_code rc;
	char ebuf[POOL_MSG_MAX];

	if (!out || !cfg)
		return err_set(err, UNIAP_E_ARG, "pool_new: cfg and out must not be NULL");
	*out = NULL;
	rc = pool_check_config(cfg, err);
	if (rc != UNIAP_OK)
		return rc;

	p = calloc(1, sizeof(*p));
	if (!p)
		return err_set(err, UNIAP_E_NOMEM, "pool: out of memory");
	p->cfg = *cfg;
	p->next_id = 1;
	p->entries = calloc((size_t)cfg->queue_cap, sizeof(*p->entries));
	p->n_workers = cfg->threads + cfg->spare_threads;
	p->workers = calloc((size_t)p->n_workers, sizeof(*p->workers));
	if (!p->entries || !p->workers) {
		rc = err_set(err, UNIAP_E_NOMEM, "pool: out of memory for %d queue slots and %d threads",
		             cfg->queue_cap, cfg->threads);
		goto out;
	}
	for (int i = 0; i < p->n_workers; i++) {
		p->workers[i].pool = p;
		p->workers[i].spare = i >= cfg->threads;
		p->workers[i].attn_r = p->workers[i].attn_w = -1;
	}
	for (int i = 0; i < cfg->queue_cap; i++)
		pool_entry_release(p, &p->entries[i]);

	p->have_mu = pthread_mutex_init(&p->mu, NULL) == 0;
	p->have_work_cv = pthread_cond_init(&p->work_cv, NULL) == 0;
	p->have_idle_cv = pthread_cond_init(&p->idle_cv, NULL) == 0;
	if (!p->have_mu || !p->have_work_cv || !p->have_idle_cv) {
		rc = err_set(err, UNIAP_E_INTERNAL, "pool: cannot initialize a mutex or condition variable");
		goto out;
	}
	for (int i = 0; i < p->n_workers; i++) {
		int fds[2];
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
			rc = err_set(err, UNIAP_E_INTERNAL, "pool: pipe: %s", pool_strerror(errno, ebuf));
			goto out;
		}
		p->workers[i].attn_r = fds[0];
		p->workers[i].attn_w = fds[1];
	}

	/* Pool threads block every signal: signals are for the application's
	 * threads, and poll() is then never cut short by them. */
	sigfillset(&all);
	masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
	for (int i = 0; i < p->n_workers; i++) {
		int e = pthread_create(&p->workers[i].thread, NULL, pool_worker_main, &p->workers[i]);
		if (e != 0) {
			rc = err_set(err, UNIAP_E_INTERNAL, "pool: starting thread %d of %d: %s", i + 1, p->n_workers,
			             pool_strerror(e, ebuf));
			goto out;
		}
		p->n_started++;
	}
	rc = UNIAP_OK;
out:
	if (masked)
		(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != UNIAP_OK)
		pool_destroy(p);
	else
		*out = p;
	return rc;
}

static uniap_code pool_check_task(const struct pool_task *t, struct uniap_err *err)
{
	if (!t)
		return err_set(err, UNIAP_E_ARG, "pool_submit: task must not be NULL");
	if (!t->work)
		return err_set(err, UNIAP_E_ARG, "pool_task.work: must not be NULL");
	if (!t->done)
		return err_set(err, UNIAP_E_ARG, "pool_task.done: must not be NULL");
	if (!t->in && t->in_len > 0)
		return err_set(err, UNIAP_E_ARG, "pool_task.in: must not be NULL when in_len is %zu", t->in_len);
	if (!(t->time_limit_s >= 0 && t->time_limit_s <= POOL_TIME_LIMIT_MAX_S))
		return err_set(err, UNIAP_E_ARG, "pool_task.time_limit_s: must be in [0, %g], got %g",
		               POOL_TIME_LIMIT_MAX_S, t->time_limit_s);
	return UNIAP_OK;
}

uniap_code pool_submit(struct pool *p, const struct pool_task *task, pool_ticket *out_id, struct uniap_err *err)
{
	struct pool_entry *e;
	pool_ticket id = 0;
	uniap_code rc;

	if (out_id)
		*out_id = 0;
	if (!p)
		return err_set(err, UNIAP_E_ARG, "pool_submit: pool must not be NULL");
	rc = pool_check_task(task, err);
	if (rc != UNIAP_OK)
		return rc;

	pthread_mutex_lock(&p->mu);
	if (p->shutting_down) {
		rc = err_set(err, UNIAP_E_CANCELED, "pool: shutting down");
		goto out;
	}
	e = p->free_list.head;
	if (!e) {
		rc = err_set(err, UNIAP_E_LIMIT, "pool: queue full (%d tasks waiting)", p->cfg.queue_cap);
		goto out;
	}
	pool_list_remove(&p->free_list, e);
	e->task = *task;
	e->id = id = p->next_id++;
	e->state = POOL_ENTRY_PENDING;
	pool_list_push(&p->pending, e);
	/* with spare threads a woken one may not take it: wake all, each decides */
	if (p->cfg.spare_threads > 0)
		pthread_cond_broadcast(&p->work_cv);
	else
		pthread_cond_signal(&p->work_cv);
out:
	pthread_mutex_unlock(&p->mu);
	if (rc == UNIAP_OK && out_id)
		*out_id = id;
	return rc;
}

/* Cancels what matches (one id, or every task with tag when by_tag); mu held.
 * Returns how many tasks it canceled now; *already counts those that were
 * canceled before (their outcome is CANCELED too). */
static size_t pool_cancel_locked(struct pool *p, int by_tag, uint64_t tag, pool_ticket id, size_t *already)
{
	size_t n = 0, queued = 0;

	*already = 0;
	for (int i = 0; i < p->cfg.queue_cap; i++) {
		struct pool_entry *e = &p->entries[i];
		if (e->state == POOL_ENTRY_FREE || (by_tag ? e->task.tag != tag : e->id != id))
			continue;
		if (e->state == POOL_ENTRY_PENDING) {
			pool_list_remove(&p->pending, e);
			e->state = POOL_ENTRY_CANCELED;
			pool_list_push(&p->canceled, e);
			queued++;
		} else {
			(*already)++; /* CANCELED or COMPLETING */
		}
	}
	for (int i = 0; i < p->n_started; i++) {
		struct pool_worker *w = &p->workers[i];
		if (!w->busy || (by_tag ? w->tag != tag : w->id != id))
			continue;
		if (w->cancel_requested) {
			(*already)++;
		} else if (!w->finishing) {
			w->cancel_requested = 1;
			pool_poke(w);
			n++;
		}
	}
	if (queued > 0)
		pool_kick_canceled(p);
	return n + queued;
}

uniap_code pool_cancel(struct pool *p, pool_ticket id, struct uniap_err *err)
{
	size_t n, already;

	if (!p)
		return err_set(err, UNIAP_E_ARG, "pool_cancel: pool must not be NULL");
	if (id == 0)
		return err_set(err, UNIAP_E_NOTFOUND, "pool: no task 0");
	pthread_mutex_lock(&p->mu);
	n = pool_cancel_locked(p, 0, 0, id, &already);
	pthread_mutex_unlock(&p->mu);
	if (n + already == 0)
		return err_set(err, UNIAP_E_NOTFOUND, "pool: task %llu is not queued or running",
		               (unsigned long long)id);
	return UNIAP_OK;
}

uniap_code pool_cancel_tag(struct pool *p, uint64_t tag, size_t *n_canceled, struct uniap_err *err)
{
	size_t n, already;

	if (n_canceled)
		*n_canceled = 0;
	if (!p)
		return err_set(err, UNIAP_E_ARG, "pool_cancel_tag: pool must not be NULL");
	pthread_mutex_lock(&p->mu);
	n = pool_cancel_locked(p, 1, tag, 0, &already);
	pthread_mutex_unlock(&p->mu);
	if (n_canceled)
		*n_canceled = n;
	return UNIAP_OK;
}

/* Tasks with tag queued, running or in their callback (mu held). */
static size_t pool_count_tag_locked(const struct pool *p, uint64_t tag)
{
	size_t n = 0;

	for (int i = 0; i < p->cfg.queue_cap; i++)
		if (p->entries[i].state != POOL_ENTRY_FREE && p->entries[i].task.tag == tag)
			n++;
	for (int i = 0; i < p->n_started; i++)
		if (p->workers[i].busy && p->workers[i].tag == tag)
			n++;
	return n;
}

static int pool_is_own_thread(const struct pool *p)
{
	pthread_t self = pthread_self();

	for (int i = 0; i < p->n_started; i++)
		if (pthread_equal(self, p->workers[i].thread))
			return 1;
	return 0;
}

uniap_code pool_wait_tag(struct pool *p, uint64_t tag, struct uniap_err *err)
{
	if (!p)
		return err_set(err, UNIAP_E_ARG, "pool_wait_tag: pool must not be NULL");
	if (pool_is_own_thread(p))
		return err_set(err, UNIAP_E_ARG, "pool_wait_tag: called from a pool thread, it would wait for itself");
	pthread_mutex_lock(&p->mu);
	while (pool_count_tag_locked(p, tag) > 0)
		pthread_cond_wait(&p->idle_cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	return UNIAP_OK;
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->shutting_down = 1;
	while (p->pending.head) {
		struct pool_entry *e = p->pending.head;
		pool_list_remove(&p->pending, e);
		e->state = POOL_ENTRY_CANCELED;
		pool_list_push(&p->canceled, e);
	}
	for (int i = 0; i < p->n_started; i++) {
		struct pool_worker *w = &p->workers[i];
		if (w->busy && !w->finishing)
			w->cancel_requested = 1;
		if (w->busy)
			pool_poke(w);
	}
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->mu);
	pool_destroy(p);
}
