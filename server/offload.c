/*
 * offload.c - the bounded pool of request work (offload.h).
 *
 * The tasks live in one table of queue_cap + OFFLOAD_RESERVE slots: a slot
 * is free, queued, running or done.  A thread takes, of the queued tasks
 * whose tenant holds fewer than threads - 1 threads (one tenant never holds
 * them all), the one whose tenant runs the fewest, the oldest among those:
 * the tenants are served in turn, not in arrival order.  It runs it with no
 * lock held, marks it done and calls notify.  A done task stays in its slot
 * until the waiter takes it, or, abandoned, is freed at once.
 *
 * Reserve: a tenant with nothing running is never left waiting behind
 * others.  When such a tenant's task is queued and no thread is idle, a
 * reserve thread starts (up to OFFLOAD_RESERVE of them, kept once started);
 * a reserve thread takes only a task of a tenant with nothing running.  A
 * tenant with nothing queued or running is admitted past queue_cap, into
 * the reserve's slots.  So however many tenants keep the regular threads
 * busy, another's evaluation starts at once (docs/http.md, "Heavy requests").
 * Lock order: o->mu alone; never held across fn, free_fn or notify.
 */
#include "offload.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define OFFLOAD_THREADS_MAX 64
#define OFFLOAD_RESERVE 16 /* reserve threads, and table slots past queue_cap, for idle tenants */

enum offload_state { OFFLOAD_FREE, OFFLOAD_QUEUED, OFFLOAD_RUNNING, OFFLOAD_DONE };

struct offload_task {
	enum offload_state state;
	int64_t id;
	int64_t tenant;
	offload_fn fn;
	offload_free_fn free_fn;
	void *arg;
	int abandoned;
};

struct offload {
	struct offload_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;           /* a task was queued, or stopping */
	int stopping;
	int64_t next_id;
	struct offload_stats stats;
	struct offload_task *tasks;  /* [slots] */
	int slots;                   /* cfg.queue_cap + OFFLOAD_RESERVE */
	pthread_t threads[OFFLOAD_THREADS_MAX + OFFLOAD_RESERVE]; /* the regular ones, then the reserve */
	int n_threads, n_reserve;    /* started */
	int idle;                    /* threads waiting for a task */
};

struct offload_worker {
	struct offload *o;
	int reserve;
};

/* Under o->mu: the slot holding task id, or NULL. */
static struct offload_task *offload_find(struct offload *o, int64_t id)
{
	int i;

	for (i = 0; i < o->slots; i++)
		if (o->tasks[i].state != OFFLOAD_FREE && o->tasks[i].id == id)
			return &o->tasks[i];
	return NULL;
}

/* Under o->mu: tasks of tenant running now. */
static int offload_running_of(const struct offload *o, int64_t tenant)
{
	int i, n = 0;

	for (i = 0; i < o->slots; i++)
		n += o->tasks[i].state == OFFLOAD_RUNNING && o->tasks[i].tenant == tenant;
	return n;
}

/* Threads one tenant may hold at once: all but one, so another tenant always finds one. */
static int offload_tenant_threads(const struct offload *o)
{
	return o->cfg.threads > 1 ? o->cfg.threads - 1 : 1;
}

/*
 * Under o->mu: the task a thread takes next, or NULL: of the queued tasks its
 * kind may take (a reserve thread: a tenant with nothing running; a regular
 * one: a tenant below its share of the threads), the one whose tenant runs
 * the fewest, the oldest among those.
 */
static struct offload_task *offload_pick(const struct offload *o, int reserve)
{
	struct offload_task *best = NULL;
	int i, best_run = 0;

	for (i = 0; i < o->slots; i++) {
		struct offload_task *t = &o->tasks[i];
		int run;

		if (t->state != OFFLOAD_QUEUED)
			continue;
		run = offload_running_of(o, t->tenant);
		if (reserve ? run > 0 : run >= offload_tenant_threads(o))
			continue;
		if (!best || run < best_run || (run == best_run && t->id < best->id)) {
			best = t;
			best_run = run;
		}
	}
	return best;
}

/* Under o->mu: queued tasks of tenants with nothing running, one per tenant. */
static int offload_idle_tenants_waiting(const struct offload *o)
{
	int i, j, n = 0;

	for (i = 0; i < o->slots; i++) {
		const struct offload_task *t = &o->tasks[i];

		if (t->state != OFFLOAD_QUEUED || offload_running_of(o, t->tenant) > 0)
			continue;
		for (j = 0; j < i; j++)
			if (o->tasks[j].state == OFFLOAD_QUEUED && o->tasks[j].tenant == t->tenant)
				break;
		n += j == i;
	}
	return n;
}

static void *offload_thread(void *arg)
{
	struct offload_worker *w = arg;
	struct offload *o = w->o;
	int reserve = w->reserve;

	free(w);
	pthread_mutex_lock(&o->mu);
	for (;;) {
		struct offload_task *t = offload_pick(o, reserve);

		if (!t) {
			if (o->stopping)
				break;
			o->idle++;
			pthread_cond_wait(&o->cv, &o->mu);
			o->idle--;
			continue;
		}
		t->state = OFFLOAD_RUNNING;
		o->stats.queued--;
		o->stats.running++;
		pthread_mutex_unlock(&o->mu);
		t->fn(t->arg); /* the slot is ours while running: nobody else writes fn or arg */
		pthread_mutex_lock(&o->mu);
		o->stats.running--;
		o->stats.finished++;
		/* a tenant runs one fewer: a task another thread skipped may be its to take now */
		pthread_cond_broadcast(&o->cv);
		if (t->abandoned) {
			void *a = t->arg;
			offload_free_fn f = t->free_fn;

			memset(t, 0, sizeof(*t));
			pthread_mutex_unlock(&o->mu);
			f(a);
			pthread_mutex_lock(&o->mu);
			continue;
		}
		t->state = OFFLOAD_DONE;
		pthread_mutex_unlock(&o->mu);
		if (o->cfg.notify)
			o->cfg.notify(o->cfg.notify_ctx);
		pthread_mutex_lock(&o->mu);
	}
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

/* Starts a thread (a reserve one or a regular one); 0 ok, -1 none started.  o->mu held once running. */
static int offload_spawn(struct offload *o, int reserve)
{
	struct offload_worker *w = malloc(sizeof(*w));

	if (!w)
		return -1;
	w->o = o;
	w->reserve = reserve;
	if (pthread_create(&o->threads[o->n_threads], NULL, offload_thread, w) != 0) {
		free(w);
		return -1;
	}
	o->n_threads++;
	o->n_reserve += reserve;
	return 0;
}

uniap_code offload_start(const struct offload_config *cfg, struct offload **out, struct uniap_err *err)
{
	struct offload *o = calloc(1, sizeof(*o));
	int i;

	if (!o)
		return err_set(err, UNIAP_E_NOMEM, "offload: out of memory");
	o->cfg = *cfg;
	if (o->cfg.threads == 0)
		o->cfg.threads = OFFLOAD_DEFAULT_THREADS;
	if (o->cfg.queue_cap == 0)
		o->cfg.queue_cap = OFFLOAD_DEFAULT_QUEUE;
	if (o->cfg.per_tenant == 0)
		o->cfg.per_tenant = OFFLOAD_DEFAULT_PER_TENANT;
	if (o->cfg.threads < 1 || o->cfg.threads > OFFLOAD_THREADS_MAX || o->cfg.queue_cap < o->cfg.threads ||
	    o->cfg.queue_cap > 4096 || o->cfg.per_tenant < 1) {
		free(o);
		return err_set(err, UNIAP_E_ARG, "offload: threads 1..%d, queue >= threads and <= 4096, per tenant >= 1",
		               OFFLOAD_THREADS_MAX);
	}
	o->slots = o->cfg.queue_cap + OFFLOAD_RESERVE;
	o->tasks = calloc((size_t)o->slots, sizeof(*o->tasks));
	if (!o->tasks) {
		free(o);
		return err_set(err, UNIAP_E_NOMEM, "offload: out of memory");
	}
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	for (i = 0; i < o->cfg.threads; i++) {
		if (offload_spawn(o, 0) != 0) {
			offload_free(o);
			return err_set(err, UNIAP_E_INTERNAL, "offload: cannot start a thread");
		}
	}
	*out = o;
	return UNIAP_OK;
}

uniap_code offload_submit(struct offload *o, int64_t tenant, offload_fn fn, void *arg, offload_free_fn free_fn,
                          int64_t *key, struct uniap_err *err)
{
	struct offload_task *slot = NULL;
	int i, mine = 0, in = 0;
	uniap_code rc = UNIAP_OK;

	pthread_mutex_lock(&o->mu);
	for (i = 0; i < o->slots; i++) {
		struct offload_task *t = &o->tasks[i];

		/* a finished task not yet taken still holds its slot, but no longer counts as work */
		if (t->state == OFFLOAD_QUEUED || t->state == OFFLOAD_RUNNING) {
			in++;
			mine += t->tenant == tenant;
		} else if (t->state == OFFLOAD_FREE && !slot) {
			slot = t;
		}
	}
	if (o->stopping)
		rc = err_set(err, UNIAP_E_CANCELED, "the service is stopping");
	else if (mine >= o->cfg.per_tenant) {
		o->stats.refused_rate++;
		rc = err_set(err, UNIAP_E_RATE, "evaluations: %d of this tenant are queued or running, the limit", mine);
	} else if (!slot || (mine > 0 && in >= o->cfg.queue_cap)) { /* a tenant with none in: the reserve */
		o->stats.refused_busy++;
		rc = err_set(err, UNIAP_E_BUSY, "evaluations: %d are queued or running, the limit", in);
	} else {
		slot->state = OFFLOAD_QUEUED;
		slot->id = ++o->next_id;
		slot->tenant = tenant;
		slot->fn = fn;
		slot->free_fn = free_fn;
		slot->arg = arg;
		slot->abandoned = 0;
		o->stats.submitted++;
		o->stats.queued++;
		*key = -slot->id;
		/* a tenant with nothing running must not wait: a reserve thread when no thread is idle */
		if (o->n_reserve < OFFLOAD_RESERVE && o->idle < offload_idle_tenants_waiting(o))
			(void)offload_spawn(o, 1); /* none started: the task waits for a thread, as before */
		pthread_cond_broadcast(&o->cv);
	}
	pthread_mutex_unlock(&o->mu);
	if (rc != UNIAP_OK)
		free_fn(arg);
	return rc;
}

int offload_version(struct offload *o, int64_t key, int64_t *version)
{
	struct offload_task *t;
	int rc = -1;

	if (!o || key >= 0)
		return -1;
	pthread_mutex_lock(&o->mu);
	if ((t = offload_find(o, -key)) != NULL) {
		*version = t->state == OFFLOAD_DONE;
		rc = 0;
	}
	pthread_mutex_unlock(&o->mu);
	return rc;
}

void *offload_take(struct offload *o, int64_t key)
{
	struct offload_task *t;
	void *arg = NULL;

	if (!o || key >= 0)
		return NULL;
	pthread_mutex_lock(&o->mu);
	if ((t = offload_find(o, -key)) != NULL && t->state == OFFLOAD_DONE) {
		arg = t->arg;
		memset(t, 0, sizeof(*t));
	}
	pthread_mutex_unlock(&o->mu);
	return arg;
}

void offload_abandon(struct offload *o, int64_t key)
{
	struct offload_task *t;
	void *arg = NULL;
	offload_free_fn f = NULL;

	if (!o || key >= 0)
		return;
	pthread_mutex_lock(&o->mu);
	if ((t = offload_find(o, -key)) != NULL) {
		o->stats.abandoned++;
		if (t->state == OFFLOAD_RUNNING) {
			t->abandoned = 1; /* the thread frees it when the work ends */
		} else {
			if (t->state == OFFLOAD_QUEUED)
				o->stats.queued--;
			arg = t->arg;
			f = t->free_fn;
			memset(t, 0, sizeof(*t));
		}
	}
	pthread_mutex_unlock(&o->mu);
	if (f)
		f(arg);
}

void offload_get_stats(struct offload *o, struct offload_stats *out)
{
	pthread_mutex_lock(&o->mu);
	*out = o->stats;
	out->reserve_started = o->n_reserve;
	pthread_mutex_unlock(&o->mu);
}

void offload_free(struct offload *o)
{
	int i;

	if (!o)
		return;
	pthread_mutex_lock(&o->mu);
	o->stopping = 1;
	/* what was never started is dropped; what runs ends by its own time cap */
	for (i = 0; i < o->slots; i++)
		if (o->tasks[i].state == OFFLOAD_QUEUED) {
			o->tasks[i].state = OFFLOAD_DONE;
			o->tasks[i].fn = NULL;
		}
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	for (i = 0; i < o->n_threads; i++)
		pthread_join(o->threads[i], NULL);
	for (i = 0; i < o->slots; i++)
		if (o->tasks[i].state != OFFLOAD_FREE && o->tasks[i].free_fn)
			o->tasks[i].free_fn(o->tasks[i].arg);
	pthread_cond_destroy(&o->cv);
	pthread_mutex_destroy(&o->mu);
	free(o->tasks);
	free(o);
}
