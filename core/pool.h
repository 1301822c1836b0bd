/*
 * pool.h - a bounded thread pool that runs each task in its own forked
 * worker process.
 *
 * Why processes: CBC 2.10.8 (Debian 12) gives wrong answers when two threads
 * of one process solve at once, even on separate models (coin-or/Cbc #332;
 * /work/shared/notes/cbc.md).  Every solve therefore runs in a child process;
 * the pool's threads only schedule, supervise and reap those children.  A
 * crashed or hung child fails only its own task; a time limit or a cancel
 * kills it with SIGKILL.
 *
 * Life of a task: pool_submit() copies the task descriptor into a bounded
 * queue (never blocks: UNIAP_E_LIMIT when full).  A pool thread takes the
 * queued task whose group (a tenant) got a worker least recently, and within
 * the group the one whose tag (a job) did (round-robin over groups, then
 * tags, FIFO within one), so one group cannot monopolise the workers.  Spare
 * threads (spare_threads) take only a task whose group has nothing running
 * while every other thread is busy: a solve cannot be preempted, so a group
 * that arrives while long tasks of others hold every worker still starts at
 * once (docs/pool.md, "Spare workers").  It takes it,
 * fork()s, and the child calls task->work on the input it already has in
 * memory, writes the output back through a pipe (a struct pool_reply_header,
 * then the bytes, at most max_output_bytes) and leaves with _exit().  The pool
 * thread reads the reply with poll() against the deadline and a cancel
 * signal, reaps the child, and calls task->done exactly once with the outcome.
 *
 * The pool knows nothing of solvers or of how problems are encoded: inputs
 * and outputs are byte buffers.  docs/pool.md has the design, the lock order
 * and the failure semantics.
 *
 * Never: run a task in the parent; call a callback with a pool lock held;
 * block in pool_submit() or pool_cancel*(); signal or reap a pid the pool did
 * not fork.
 */
#ifndef UNIAP_POOL_H
#define UNIAP_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/* A task's identity, unique within one pool; 0 is never a ticket. */
typedef uint64_t pool_ticket;

/* Limits on struct pool_config (caps on caps). */
#define POOL_THREADS_MAX 256
#define POOL_QUEUE_CAP_MAX (1 << 20)
#define POOL_OUTPUT_CAP_MAX ((size_t)1 << 31)

/* Longest message in struct pool_outcome, with its NUL. */
#define POOL_MSG_MAX 160

/*
 * Inside the child, the write end of the reply pipe is this descriptor; every
 * other descriptor above 2 is closed and stdin reads /dev/null.  A work
 * function must leave it alone (the tests write to it on purpose to play a
 * corrupt child).
 */
#define POOL_CHILD_REPLY_FD 3

/* The wire format of a reply: this header (native byte order), then len bytes. */
#define POOL_REPLY_MAGIC 0x31504e55u /* "UNP1" read little-endian */
struct pool_reply_header {
	uint32_t magic;  /* POOL_REPLY_MAGIC */
	int32_t work_rc; /* what the work function returned */
	uint64_t len;    /* output bytes that follow; <= max_output_bytes */
};

enum pool_status {
	POOL_OK = 0,   /* the work function returned and its reply came back intact */
	POOL_CRASHED,  /* the child died by a signal or exited with a non-zero status */
	POOL_TIMEOUT,  /* the time limit expired; the child was killed */
	POOL_CANCELED, /* pool_cancel*() or pool_free(); the child (if any) was killed */
	POOL_ERROR,    /* fork/pipe failure, malformed reply, output over the cap */
};

/* Returns a static lowercase name ("crashed"); "unknown" if out of range. */
const char *pool_status_name(enum pool_status status);

struct pool_config {
	int threads;             /* worker threads = children at once, 1..POOL_THREADS_MAX */
	int queue_cap;           /* tasks waiting to start, 1..POOL_QUEUE_CAP_MAX */
	size_t max_output_bytes; /* cap on one reply's output, 1..POOL_OUTPUT_CAP_MAX */
	int spare_threads;       /* more threads, each taking only a task of a group with nothing running,
	                            and only while the `threads` are all busy; 0..POOL_THREADS_MAX */
};

/* What became of one task; handed to its done callback. */
struct pool_outcome {
	pool_ticket id;
	uint64_t tag;
	enum pool_status status;
	int work_rc;      /* POOL_OK: the work function's return value; else 0 */
	int signal;       /* POOL_CRASHED by a signal: its number; else 0 */
	int exit_code;    /* POOL_CRASHED by exit: the non-zero status; else 0 */
	pid_t pid;        /* the child, already reaped; 0 when none was forked */
	const void *out;  /* POOL_OK: the output (NULL when out_len is 0); borrowed: */
	size_t out_len;   /*   owned by the pool, valid during the callback only */
	double wall_s;    /* from just before fork to reaping; 0 if it never ran */
	char msg[POOL_MSG_MAX]; /* what went wrong, lowercase; "" for POOL_OK */
};

/*
 * Runs IN THE CHILD.  Reads in_len bytes at in (a copy made by fork), points
 * *out at its output and stores the length in *out_len (or leaves *out NULL
 * for none), and returns a task-defined code that reaches the parent as
 * outcome.work_rc.  *out must stay valid after work returns: malloc'd or
 * static memory (the child exits right after writing it; nothing is freed).
 * It runs after a fork() of a multithreaded process: it may use glibc's
 * malloc but must not take locks that other threads of the parent may hold
 * (stdio's included), must not call exit() (which would flush the parent's
 * stdio buffers a second time), and, in a build with -fsanitize=thread or
 * =address (gcc 12), must not allocate or start threads at all: those
 * runtimes' allocators are not fork-safe.  See docs/pool.md.
 */
typedef int (*pool_work_fn)(const void *in, size_t in_len, void **out, size_t *out_len, void *arg);

/* Called in a pool thread after the child was forked (ctx borrowed). */
typedef void (*pool_started_fn)(void *ctx, pool_ticket id, pid_t pid);

/* Called once per submitted task, in a pool thread, no pool lock held. */
typedef void (*pool_done_fn)(void *ctx, const struct pool_outcome *o);

struct pool_task {
	pool_work_fn work;     /* required */
	const void *in;        /* borrowed; must stay valid and unchanged until done returns */
	size_t in_len;
	void *arg;             /* handed to work in the child (a fork-time snapshot) */
	pool_started_fn started; /* optional */
	pool_done_fn done;     /* required */
	void *ctx;             /* handed to started and done */
	uint64_t tag;          /* a job id, say: pool_cancel_tag, pool_wait_tag, and the inner unit of
	                          the round-robin that picks the next task to start */
	uint64_t group;        /* a tenant, say: the outer unit of the round-robin and of the spare
	                          threads' rule; 0: the tag is the group */
	double time_limit_s;   /* wall seconds from fork; 0 means none */
};

struct pool;

/*
 * Creates a pool with cfg (borrowed) and starts its threads.  On success
 * *out is owned by the caller: free with pool_free().  UNIAP_E_ARG names the
 * field out of range; UNIAP_E_NOMEM / UNIAP_E_INTERNAL on resource failure.
 */
uniap_code pool_new(const struct pool_config *cfg, struct pool **out, struct uniap_err *err);

/*
 * Queues a copy of task (the struct is borrowed; task->in, ->arg and ->ctx are
 * the caller's and must outlive the done callback).  Never blocks: returns
 * UNIAP_E_LIMIT at once when queue_cap tasks are waiting, UNIAP_E_CANCELED
 * once pool_free() has begun, UNIAP_E_ARG for a bad task.  On success stores
 * the ticket in *out_id (may be NULL) and done will be called exactly once;
 * on failure it is never called.
 */
uniap_code pool_submit(struct pool *pool, const struct pool_task *task, pool_ticket *out_id,
                       struct uniap_err *err);

/*
 * Cancels one task without waiting: a queued one completes with POOL_CANCELED
 * without running; a running one has its child killed (SIGKILL, by the pool
 * thread that forked it) and completes with POOL_CANCELED.  Returns UNIAP_OK
 * iff the task's outcome is or will be POOL_CANCELED; UNIAP_E_NOTFOUND when
 * the ticket is unknown or the task already finished (or is finishing) with
 * another status.
 */
uniap_code pool_cancel(struct pool *pool, pool_ticket id, struct uniap_err *err);

/*
 * Cancels every queued and running task with this tag, as pool_cancel() does,
 * without waiting.  Stores in *n_canceled (may be NULL) how many tasks this
 * call canceled.
 */
uniap_code pool_cancel_tag(struct pool *pool, uint64_t tag, size_t *n_canceled, struct uniap_err *err);

/*
 * Blocks until no task with this tag is queued, running, or inside its done
 * callback (tasks submitted with the tag meanwhile extend the wait).  Returns
 * UNIAP_E_ARG when called from a pool thread (a callback), which would wait
 * for itself.
 */
uniap_code pool_wait_tag(struct pool *pool, uint64_t tag, struct uniap_err *err);

/*
 * Cancels every queued task and kills every running child; each still gets
 * its done callback (POOL_CANCELED) in a pool thread; then joins the threads
 * and frees the pool.  Returns with no child left unreaped.  NULL is a no-op.
 * Must not be called from a callback or concurrently with another call on
 * the same pool (submit from a callback during it gets UNIAP_E_CANCELED).
 */
void pool_free(struct pool *pool);

#endif
