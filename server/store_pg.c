/*
 * store_pg.c - the store's PostgreSQL backend (store_backend.h, store.h):
 * one server that many uniapd replicas share.  Its semantics are
 * store_sqlite.c's (codes, messages, limits, fair claims, leases and their
 * fencing, pagination, the cost cache's LRU); what SQLite gets from its one
 * writer, the server enforces across replicas here: the tenant's row FOR
 * UPDATE before a limit check, advisory locks for the service's queue, the
 * cache and migrations, FOR UPDATE SKIP LOCKED in claims, and the job's row
 * locked in the transaction of every write that names a lease.  Replicas
 * hear of queued jobs and of cancels through LISTEN/NOTIFY (store_listen).
 *
 * Thread safety: any thread may call any function.  s->mu guards only the
 * pool's free list and is never held while libpq runs; a connection belongs
 * to one caller between call_begin() and call_end().  The listener thread
 * has a connection of its own.  The health (store_health) is atomics.
 *
 * Wire format: every parameter is bound in binary (int8 and float8 as their
 * big-endian bits, text and bytea as their bytes) with its type named, and
 * every result is asked for in binary, so bodies come back byte for byte.
 * Times are the replicas' own clocks (store_now_ms), bound like any value,
 * but for leases: their expiry is written and compared by the server's clock
 * (PG_NOW_MS), so replicas on machines whose clocks disagree never take a
 * live owner's job nor keep a dead one's.
 *
 * Never: format a value into SQL, hold s->mu during a query, give a
 * connection back inside a transaction, echo the URL's password (scrub()),
 * or keep a plain API key.
 */
#include "store_backend.h"

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define DEFAULT_POOL 4
#define DEFAULT_CACHE_MAX_BYTES ((int64_t)256 << 20)

#define PG_RETRIES 3            /* a transaction that deadlocked or failed to serialise runs again */
#define PG_PARAMS_MAX 8
#define PG_CONNECT_TIMEOUT_S 5  /* the listener's connect (the pool's: connect_timeout, conn_params) */
#define PG_LISTEN_POLL_MS 1000  /* the listener looks at its stop flag at least this often */
#define PG_RECONNECT_MS 500     /* the listener's wait between connects */
#define PG_CHANNEL "uniap_jobs"
/* The server's clock in Unix milliseconds: every lease's expiry, written and compared */
#define PG_NOW_MS "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
#define PG_CONN_KEYS 9          /* conn_params' keywords and the NULL after them */
/* A statement's answer, and a free pooled connection, are waited for this long at most: a
 * server that hangs (stopped, not gone: its kernel still acknowledges every packet, so neither
 * keepalives nor the TCP user timeout notice) fails the call as unavailable instead of holding
 * the request thread; the connection is then dropped and made anew */
#define PG_QUERY_TIMEOUT_MS 10000
/* The server ends a session of ours that sits inside a transaction, idle, this long
 * (idle_in_transaction_session_timeout, in conn_params' options): a replica frozen mid-
 * transaction (SIGSTOP, a VM paused, swapping) would otherwise hold its row locks for as long as
 * it is frozen, and every other replica's recovery of its expired leases, which updates those
 * rows, would wait on them (their calls time out after PG_QUERY_TIMEOUT_MS and run again, to wait
 * again).  Ours run statement after statement with nothing between them that takes time, so a
 * live replica never comes near it; the frozen one, resumed, finds its session gone, and its
 * next call reconnects and is fenced by the lease it lost meanwhile. */
#define PG_IDLE_IN_TX "-c idle_in_transaction_session_timeout=10000"

/* Advisory lock keys: fixed, "uniap" and what they guard in ASCII. */
#define PG_LOCK_MIGRATE INT64_C(0x756e6961706d6967)   /* "uniapmig": one replica migrates at a time */
#define PG_LOCK_QUEUE INT64_C(0x756e696170717565)     /* "uniapque": the service's queue count */
#define PG_LOCK_CACHE INT64_C(0x756e696170636163)     /* "uniapcac": the cache's total and eviction */

/* The OIDs of the types bound and read (fixed in every PostgreSQL, pg_type.dat). */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_TEXT 25
#define OID_FLOAT8 701

#define PG_SECRETS 3            /* the URL's password as written (user info, query) and as decoded */

struct pg_slot {
	PGconn *conn;               /* owned */
	int reset;                  /* its last call lost the connection: PQreset before the next; its holder's */
};

struct store_pg {
	struct store base;          /* first: store.c hands this around */
	pthread_mutex_t mu;         /* guards free_slots and n_free */
	pthread_cond_t cv;          /* signalled when a connection is put back */
	struct pg_slot slots[STORE_POOL_MAX];
	int free_slots[STORE_POOL_MAX];
	int n_slots, n_free;        /* n_slots: fixed once open returns */
	char *url;                  /* owned; zeroed before it is freed */
	char *secret[PG_SECRETS];   /* owned, may be NULL: what scrub() hides */
	int64_t cache_max_bytes;
	int64_t max_queued_jobs;
	int64_t max_stored_jobs;
	/* the health (store_health): read by any thread, lock-free */
	atomic_llong write_since_ms[STORE_POOL_MAX]; /* CLOCK_MONOTONIC ms at which slot i's write began; 0 none */
	atomic_int failing;         /* the last call failed: the server does not answer, an I/O error, no space */
	atomic_int full;            /* the server said disk full (53100); cleared by the next committed write */
	/* the listener (store_listen): started once, stopped and joined by close */
	int listening;              /* under mu */
	pthread_t listener;
	int wake[2];                /* a pipe: close writes a byte and the listener stops at once */
	atomic_int stop;
	store_event_fn fn;
	void *ctx;
	PGconn *listen_conn;        /* the first connection, handed to the thread (which owns it then) */
};

static const struct store_backend store_pg_backend;

static struct store_pg *pg_of(struct store *base)
{
	return (struct store_pg *)base; /* base is the first member */
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- messages ---- */

/*
 * Copies in (libpq's or the server's message) into out[0..cap) on one line,
 * every secret of s (may be NULL) replaced by "***": libpq echoes the URL in
 * some of its parse errors.
 */
static void scrub(const struct store_pg *s, const char *in, char *out, size_t cap)
{
	size_t o = 0;

	while (in && *in && o + 1 < cap) {
		int hit = 0;

		for (int i = 0; s && i < PG_SECRETS && !hit; i++) {
			size_t n = s->secret[i] ? strlen(s->secret[i]) : 0;

			if (n && strncmp(in, s->secret[i], n) == 0) {
				for (const char *r = "***"; *r && o + 1 < cap; r++)
					out[o++] = *r;
				in += n;
				hit = 1;
			}
		}
		if (hit)
			continue;
		if (*in == '\n' || *in == '\r' || *in == '\t') {
			if (o > 0 && out[o - 1] != ' ')
				out[o++] = ' ';
			in++;
			continue;
		}
		out[o++] = *in++;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

/* The connection's last message, scrubbed, as UNIAP_E_UNAVAILABLE. */
static uniap_code conn_unavailable(const struct store_pg *s, PGconn *c, struct uniap_err *err)
{
	char msg[UNIAP_ERR_MSG_MAX];

	scrub(s, c ? PQerrorMessage(c) : "out of memory", msg, sizeof(msg));
	return err_set(err, UNIAP_E_UNAVAILABLE, "store: postgres: %s", msg[0] ? msg : "the server does not answer");
}

/* ---- parameters: every value bound, in binary ---- */

struct pg_params {
	int n;
	Oid types[PG_PARAMS_MAX];
	const char *values[PG_PARAMS_MAX];  /* borrowed; NULL with word[i] unset: SQL NULL */
	int lengths[PG_PARAMS_MAX];
	int word[PG_PARAMS_MAX];            /* 1: the value is words[i] (so a copy of the struct stays valid) */
	uint64_t words[PG_PARAMS_MAX];      /* int8 and float8 values, big-endian */
};

static void p_add(struct pg_params *p, Oid type, const void *v, int len)
{
	assert(p->n < PG_PARAMS_MAX); /* the statements are constants: a bug, not input */
	p->types[p->n] = type;
	p->values[p->n] = v;
	p->lengths[p->n] = len;
	p->n++;
}

static void p_i64(struct pg_params *p, int64_t v)
{
	p->words[p->n] = htobe64((uint64_t)v);
	p->word[p->n] = 1;
	p_add(p, OID_INT8, NULL, 8);
}

static void p_f64(struct pg_params *p, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	p->words[p->n] = htobe64(bits);
	p->word[p->n] = 1;
	p_add(p, OID_FLOAT8, NULL, 8);
}

static void p_null(struct pg_params *p, Oid type)
{
	p_add(p, type, NULL, 0);
}

/* text (borrowed, NUL-terminated; NULL: SQL NULL) */
static void p_text(struct pg_params *p, const char *text)
{
	p_add(p, OID_TEXT, text, text ? (int)strlen(text) : 0);
}

/* bytes of data (borrowed; callers cap bytes at INT32_MAX), never NULL */
static void p_bytes(struct pg_params *p, const void *data, size_t bytes)
{
	p_add(p, OID_BYTEA, bytes && data ? data : "", bytes && data ? (int)bytes : 0);
}

/* ---- results, binary ---- */

static int col_null(const PGresult *r, int row, int col)
{
	return row >= PQntuples(r) || col >= PQnfields(r) || PQgetisnull(r, row, col);
}

static int64_t col_i64(const PGresult *r, int row, int col)
{
	const char *v;
	uint64_t u8 = 0;
	uint32_t u4 = 0;
	uint16_t u2 = 0;
	int len;

	if (col_null(r, row, col))
		return 0;
	v = PQgetvalue(r, row, col);
	len = PQgetlength(r, row, col);
	switch (PQftype(r, col)) {
	case OID_INT8:
		if (len != 8)
			return 0;
		memcpy(&u8, v, 8);
		return (int64_t)be64toh(u8);
	case OID_INT4:
		if (len != 4)
			return 0;
		memcpy(&u4, v, 4);
		return (int32_t)be32toh(u4);
	case OID_INT2:
		if (len != 2)
			return 0;
		memcpy(&u2, v, 2);
		return (int16_t)be16toh(u2);
	case OID_BOOL:
		return len == 1 && v[0] != 0;
	default:
		return 0; /* every query casts what it reads to one of these */
	}
}

static double col_f64(const PGresult *r, int row, int col)
{
	uint64_t bits;
	double d;

	if (col_null(r, row, col) || PQftype(r, col) != OID_FLOAT8 || PQgetlength(r, row, col) != 8)
		return 0.0;
	memcpy(&bits, PQgetvalue(r, row, col), 8);
	bits = be64toh(bits);
	memcpy(&d, &bits, sizeof(d));
	return d;
}

/* A text column (libpq ends every value with a NUL, binary ones too); "" when NULL. */
static const char *col_str(const PGresult *r, int row, int col)
{
	return col_null(r, row, col) ? "" : PQgetvalue(r, row, col);
}

static void col_text(const PGresult *r, int row, int col, char *dst, size_t cap)
{
	snprintf(dst, cap, "%s", col_str(r, row, col));
}

/* Owned NUL-terminated copy of a bytea or text column (NULL column -> *out NULL). */
static uniap_code col_dup(const PGresult *r, int row, int col, char **out, size_t *bytes,
			  struct uniap_err *err)
{
	size_t n;

	*out = NULL;
	if (bytes)
		*bytes = 0;
	if (col_null(r, row, col))
		return UNIAP_OK;
	n = (size_t)PQgetlength(r, row, col);
	*out = malloc(n + 1);
	if (!*out)
		return err_set(err, UNIAP_E_NOMEM, "store: column of %zu bytes: out of memory", n);
	if (n)
		memcpy(*out, PQgetvalue(r, row, col), n);
	(*out)[n] = '\0';
	if (bytes)
		*bytes = n;
	return UNIAP_OK;
}

/* Rows an INSERT, UPDATE or DELETE changed. */
static int64_t res_changes(const PGresult *r)
{
	const char *t = PQcmdTuples((PGresult *)r);
	char *end;
	long long n;

	if (!t || !*t)
		return 0;
	n = strtoll(t, &end, 10);
	return *end == '\0' && n > 0 ? n : 0;
}

/* ---- one call on one pooled connection ---- */

struct pg_call {
	struct store_pg *s;
	int slot;
	PGconn *conn;
	uniap_code fail;            /* the code of the last statement that failed (UNIAP_OK: none) */
	char sqlstate[6];           /* its SQLSTATE, "" when none */
	char constraint[64];        /* the constraint it broke, "" when none */
	int lost;                   /* the connection broke: reset it before its next use */
	int hung;                   /* a statement got no answer in PG_QUERY_TIMEOUT_MS: no retry */
	int retry;                  /* the body asks for its transaction again (a unique race it lost) */
};

static int state_is(const struct pg_call *k, const char *sqlstate)
{
	return strcmp(k->sqlstate, sqlstate) == 0;
}

/*
 * Fills err from a statement that failed (res may be NULL) and maps its
 * SQLSTATE: a broken connection or a server going away is
 * UNIAP_E_UNAVAILABLE, disk full UNIAP_E_NOSPACE, a broken constraint or bad
 * data UNIAP_E_INVALID (SQLite's CONSTRAINT), a lock or statement timeout
 * UNIAP_E_TIMEOUT (SQLite's BUSY), a deadlock or serialization failure that
 * outlived its retries UNIAP_E_BUSY, anything else UNIAP_E_IO.
 */
static uniap_code pg_fail(struct pg_call *k, const PGresult *res, const char *what, struct uniap_err *err)
{
	const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *con = res ? PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME) : NULL;
	char text[UNIAP_ERR_MSG_MAX];
	uniap_code code;

	snprintf(k->sqlstate, sizeof(k->sqlstate), "%s", st ? st : "");
	snprintf(k->constraint, sizeof(k->constraint), "%s", con ? con : "");
	scrub(k->s, msg ? msg : PQerrorMessage(k->conn), text, sizeof(text));
	if (PQstatus(k->conn) != CONNECTION_OK || strncmp(k->sqlstate, "08", 2) == 0 ||
	    state_is(k, "57P01") || state_is(k, "57P02") || state_is(k, "57P03")) {
		code = UNIAP_E_UNAVAILABLE;
		k->lost = 1;
	} else if (!res) {
		code = UNIAP_E_NOMEM; /* libpq could not make a result */
	} else if (state_is(k, "53100")) {
		code = UNIAP_E_NOSPACE;
	} else if (strncmp(k->sqlstate, "23", 2) == 0 || strncmp(k->sqlstate, "22", 2) == 0) {
		code = UNIAP_E_INVALID;
	} else if (state_is(k, "55P03") || state_is(k, "57014")) {
		code = UNIAP_E_TIMEOUT;
	} else if (state_is(k, "40001") || state_is(k, "40P01")) {
		code = UNIAP_E_BUSY;
	} else {
		code = UNIAP_E_IO;
	}
	k->fail = code;
	return err_set(err, code, "store: postgres: %s: %s%s", what, text[0] ? text : "failed",
		       code == UNIAP_E_NOSPACE ? " (new content is refused until there is room; deletes still work)" : "");
}

/*
 * Sends sql and waits for its answer at most PG_QUERY_TIMEOUT_MS: the result
 * (owned, PQclear; NULL when libpq failed: PQerrorMessage says why), or NULL
 * with k->hung set when the server did not answer in time (the connection is
 * then marked lost: it is dropped and made anew before its next use).
 */
static PGresult *q_exec(struct pg_call *k, const char *sql, int n, const Oid *types, const char *const *values,
			const int *lengths, const int *formats)
{
	int64_t deadline = mono_ms() + PG_QUERY_TIMEOUT_MS;
	PGresult *res = NULL, *r;
	int f;

	if (!PQsendQueryParams(k->conn, sql, n, types, values, lengths, formats, 1))
		return NULL;
	/* the query out (a large bind may not go at once), then its results in */
	while ((f = PQflush(k->conn)) != 0 || PQisBusy(k->conn)) {
		struct pollfd pfd = { .fd = PQsocket(k->conn), .events = POLLIN | (f == 1 ? POLLOUT : 0) };
		int64_t left = deadline - mono_ms();
		int got;

		if (f < 0 || pfd.fd < 0)
			return NULL;
		if (left <= 0 || (got = poll(&pfd, 1, (int)left)) == 0)
			goto hung;
		if (got < 0 && errno != EINTR)
			return NULL;
		if (got > 0 && (pfd.revents & (POLLIN | POLLERR | POLLHUP)) && !PQconsumeInput(k->conn))
			return NULL;
		if (f == 0 && !PQisBusy(k->conn))
			break;
	}
	/* one statement: its result, then the NULL that ends the query */
	while ((r = PQgetResult(k->conn)) != NULL) {
		if (!res)
			res = r;
		else
			PQclear(r);
		while (PQisBusy(k->conn)) { /* more to read: wait for all of it within the same deadline */
			struct pollfd pfd = { .fd = PQsocket(k->conn), .events = POLLIN };
			int64_t left = deadline - mono_ms();
			int got = left > 0 ? poll(&pfd, 1, (int)left) : 0;

			if (got < 0 && errno == EINTR)
				continue;
			if (got == 0) { /* the deadline passed */
				PQclear(res);
				goto hung;
			}
			if (got < 0 || !PQconsumeInput(k->conn)) {
				PQclear(res);
				return NULL;
			}
		}
	}
	return res;
hung:
	k->hung = 1;
	k->lost = 1;
	return NULL;
}

/* Runs sql with p (may be NULL); *out (may be NULL: not wanted; owned, PQclear) gets the rows. */
static uniap_code q_run(struct pg_call *k, const char *sql, const struct pg_params *p, PGresult **out,
			const char *what, struct uniap_err *err)
{
	const char *values[PG_PARAMS_MAX];
	int formats[PG_PARAMS_MAX];
	int n = p ? p->n : 0;
	PGresult *res;
	ExecStatusType st;
	uniap_code rc;

	if (out)
		*out = NULL;
	for (int i = 0; i < n; i++) {
		values[i] = p->word[i] ? (const char *)&p->words[i] : p->values[i];
		formats[i] = 1;
	}
	res = q_exec(k, sql, n, p ? p->types : NULL, values, p ? p->lengths : NULL, formats);
	if (!res && k->hung) {
		k->fail = UNIAP_E_UNAVAILABLE;
		return err_set(err, UNIAP_E_UNAVAILABLE, "store: postgres: %s: no answer within %d s (the server hangs or "
		               "is overloaded)", what, PG_QUERY_TIMEOUT_MS / 1000);
	}
	st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		if (out)
			*out = res;
		else
			PQclear(res);
		return UNIAP_OK;
	}
	rc = pg_fail(k, res, what, err);
	PQclear(res);
	return rc;
}

/* Runs a write; *changes (may be NULL) gets the rows it changed. */
static uniap_code q_write(struct pg_call *k, const char *sql, const struct pg_params *p, int64_t *changes,
			  const char *what, struct uniap_err *err)
{
	PGresult *res = NULL;
	uniap_code rc = q_run(k, sql, p, &res, what, err);

	if (rc == UNIAP_OK && changes)
		*changes = res_changes(res);
	PQclear(res);
	return rc;
}

/* One int64 from the first row's first column (0 when no row). */
static uniap_code q_i64(struct pg_call *k, const char *sql, const struct pg_params *p, int64_t *v,
			const char *what, struct uniap_err *err)
{
	PGresult *res = NULL;
	uniap_code rc = q_run(k, sql, p, &res, what, err);

	if (rc == UNIAP_OK)
		*v = col_i64(res, 0, 0);
	PQclear(res);
	return rc;
}

static void q_rollback(struct pg_call *k)
{
	PGTransactionStatusType ts = PQtransactionStatus(k->conn);

	if (!k->hung && (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR))
		PQclear(q_exec(k, "ROLLBACK", 0, NULL, NULL, NULL, NULL));
}

/* ---- the pool ---- */

/*
 * 1 when the server closed an idle connection (it restarted or ended the
 * session): something waits on its socket, the server's last words (read
 * as a notice) and then the end of the stream.  Reads without blocking.
 */
static int conn_hung_up(PGconn *c)
{
	for (int round = 0; round < 4; round++) {
		struct pollfd pfd = { .fd = PQsocket(c), .events = POLLIN };

		if (pfd.fd < 0)
			return 1;
		if (poll(&pfd, 1, 0) <= 0)
			return 0;
		if (!PQconsumeInput(c) || PQstatus(c) != CONNECTION_OK)
			return 1;
	}
	return 0;
}

static void call_end(struct pg_call *k);

/* Makes c anew (bounded by connect_timeout), sending without blocking as conn_open's do (q_exec). */
static void conn_reset(PGconn *c)
{
	PQreset(c);
	if (PQstatus(c) == CONNECTION_OK)
		PQsetnonblocking(c, 1);
}

/*
 * Takes a connection for one call (waiting while all are in use); one that
 * broke or whose server hung up is reset first.  On failure (the server does
 * not answer: UNIAP_E_UNAVAILABLE) the connection is already back.
 */
static uniap_code call_begin(struct store_pg *s, struct pg_call *k, struct uniap_err *err)
{
	struct pg_slot *sl;

	struct timespec until;

	memset(k, 0, sizeof(*k));
	k->s = s;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += PG_QUERY_TIMEOUT_MS / 1000;
	pthread_mutex_lock(&s->mu);
	while (s->n_free == 0)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT && s->n_free == 0) {
			/* every connection is held by a call that waits on the server */
			pthread_mutex_unlock(&s->mu);
			return err_set(err, UNIAP_E_UNAVAILABLE, "store: postgres: no connection free within %d s (the "
			               "server hangs or is overloaded)", PG_QUERY_TIMEOUT_MS / 1000);
		}
	k->slot = s->free_slots[--s->n_free];
	pthread_mutex_unlock(&s->mu);
	sl = &s->slots[k->slot];
	k->conn = sl->conn;
	if (sl->reset || PQstatus(k->conn) != CONNECTION_OK || conn_hung_up(k->conn)) {
		conn_reset(k->conn);
		sl->reset = 0;
	}
	if (PQstatus(k->conn) != CONNECTION_OK) {
		uniap_code rc = conn_unavailable(s, k->conn, err);

		k->fail = rc;
		k->lost = 1;
		call_end(k);
		return rc;
	}
	return UNIAP_OK;
}

/* Gives the connection back (rolled back, marked for a reset when it broke) and records the health. */
static void call_end(struct pg_call *k)
{
	struct store_pg *s = k->s;

	if (!k->lost && PQstatus(k->conn) == CONNECTION_OK)
		q_rollback(k);
	if (k->lost || PQstatus(k->conn) != CONNECTION_OK || PQtransactionStatus(k->conn) != PQTRANS_IDLE)
		s->slots[k->slot].reset = 1;
	if (k->fail == UNIAP_E_NOSPACE)
		atomic_store(&s->full, 1);
	atomic_store(&s->failing, k->fail == UNIAP_E_UNAVAILABLE || k->fail == UNIAP_E_IO ||
				   k->fail == UNIAP_E_NOSPACE);
	atomic_store(&s->write_since_ms[k->slot], 0);
	pthread_mutex_lock(&s->mu);
	s->free_slots[s->n_free++] = k->slot;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/*
 * One statement in autocommit on a pooled connection: the reads, and the
 * cache's hit count (store_cache_get).  *res (owned, PQclear) gets the rows.
 * A connection found broken is reset and the statement sent once more: it is
 * a read, or a write whose second run is harmless.
 */
static uniap_code pg_query(struct store_pg *s, const char *sql, const struct pg_params *p, PGresult **res,
			   const char *what, struct uniap_err *err)
{
	struct pg_call k;
	uniap_code rc = call_begin(s, &k, err);

	if (rc != UNIAP_OK)
		return rc;
	rc = q_run(&k, sql, p, res, what, err);
	if (rc == UNIAP_E_UNAVAILABLE && !k.hung) { /* broken, not hung: a new connection may answer */
		conn_reset(k.conn);
		if (PQstatus(k.conn) == CONNECTION_OK) {
			k.lost = 0;
			k.fail = UNIAP_OK;
			rc = q_run(&k, sql, p, res, what, err);
		}
	}
	call_end(&k);
	return rc;
}

/* The body of a write transaction: its statements on k; its outputs go through arg. */
typedef uniap_code (*pg_body)(struct pg_call *k, void *arg, struct uniap_err *err);

/*
 * Runs body(k, arg, err) in one transaction on a pooled connection: BEGIN,
 * body, COMMIT.  A deadlock or serialization failure (40P01, 40001), or a
 * body that asks (k->retry: it lost a unique race), runs again from BEGIN,
 * up to PG_RETRIES times; so a body sets its outputs afresh on every run.  A
 * connection found broken at BEGIN (nothing of the transaction ran) is reset
 * and the transaction tried once more.  Whatever fails is rolled back before
 * the connection goes back; a commit clears store_health's full.
 */
static uniap_code pg_write(struct store_pg *s, pg_body body, void *arg, struct uniap_err *err)
{
	struct pg_call k;
	int tries = 0, reconnected = 0;
	uniap_code rc = call_begin(s, &k, err);

	if (rc != UNIAP_OK)
		return rc;
	for (;;) {
		k.fail = UNIAP_OK;
		k.sqlstate[0] = k.constraint[0] = '\0';
		k.retry = 0;
		atomic_store(&s->write_since_ms[k.slot], mono_ms() | 1);
		rc = q_run(&k, "BEGIN", NULL, NULL, "begin", err);
		if (rc == UNIAP_E_UNAVAILABLE && !reconnected && !k.hung) {
			reconnected = 1;
			conn_reset(k.conn);
			if (PQstatus(k.conn) == CONNECTION_OK) {
				k.lost = 0;
				continue;
			}
			rc = conn_unavailable(s, k.conn, err);
			break;
		}
		if (rc == UNIAP_OK)
			rc = body(&k, arg, err);
		if (rc == UNIAP_OK)
			rc = q_run(&k, "COMMIT", NULL, NULL, "commit", err);
		if (rc == UNIAP_OK) {
			atomic_store(&s->full, 0);
			break;
		}
		if (k.lost || PQstatus(k.conn) != CONNECTION_OK)
			break;
		q_rollback(&k);
		if (tries++ < PG_RETRIES && (k.retry || state_is(&k, "40001") || state_is(&k, "40P01")))
			continue;
		break;
	}
	call_end(&k);
	return rc;
}

/* A write of one statement: its text, values and name; changes is its output. */
struct one_arg {
	const char *sql;
	const char *what;
	struct pg_params p;
	int64_t changes;
};

static uniap_code one_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct one_arg *a = arg;

	a->changes = 0;
	return q_write(k, a->sql, &a->p, &a->changes, a->what, err);
}

/* Inside a transaction: tells every replica's listener (payload borrowed), on commit. */
static uniap_code notify(struct pg_call *k, const char *payload, struct uniap_err *err)
{
	struct pg_params p = { 0 };

	p_text(&p, PG_CHANNEL);
	p_text(&p, payload);
	return q_write(k, "SELECT pg_notify($1, $2)", &p, NULL, "notify", err);
}

/* ---- connections ---- */

/*
 * Connection parameters: uniapd's defaults first, then the URL, which may
 * override any of them (libpq takes the last of a repeated keyword).
 * Keepalives and the TCP user timeout make a server that vanished without a
 * word a broken connection within about a minute, the listener's included;
 * connect_timeout bounds a reset's wait for a server that does not answer;
 * options ends a session frozen inside a transaction (PG_IDLE_IN_TX).
 */
static void conn_params(const struct store_pg *s, const char *keys[PG_CONN_KEYS],
			const char *vals[PG_CONN_KEYS])
{
	static const char *const k[] = { "connect_timeout", "application_name", "keepalives_idle",
					  "keepalives_interval", "keepalives_count", "tcp_user_timeout", "options",
					  "dbname", NULL };
	static const char *const v[] = { "5", "uniapd", "30", "10", "3", "60000", PG_IDLE_IN_TX, NULL, NULL };
	int i;

	for (i = 0; k[i]; i++) {
		keys[i] = k[i];
		vals[i] = v[i] ? v[i] : s->url;
	}
	keys[i] = vals[i] = NULL;
}

static void notice_ignore(void *arg, const char *message)
{
	(void)arg;
	(void)message; /* "relation ... already exists, skipping": the store prints nothing */
}

/* A new connection (owned: PQfinish); UNIAP_E_UNAVAILABLE when the server does not answer. */
static uniap_code conn_open(const struct store_pg *s, PGconn **out, struct uniap_err *err)
{
	const char *keys[PG_CONN_KEYS], *vals[PG_CONN_KEYS];
	PGconn *c;

	conn_params(s, keys, vals);
	c = PQconnectdbParams(keys, vals, 1);
	if (!c)
		return err_set(err, UNIAP_E_NOMEM, "store: postgres: out of memory");
	if (PQstatus(c) != CONNECTION_OK) {
		uniap_code rc = conn_unavailable(s, c, err);

		PQfinish(c);
		return rc;
	}
	PQsetNoticeProcessor(c, notice_ignore, NULL);
	/* a statement is sent without blocking, so that its whole wait is q_exec's to bound
	 * (PQexec, used for migrations only, blocks whatever this says) */
	PQsetnonblocking(c, 1);
	*out = c;
	return UNIAP_OK;
}

/* ---- migrations ---- */

static uniap_code read_version(struct pg_call *k, int *version, struct uniap_err *err)
{
	int64_t v = 0;
	uniap_code rc = q_i64(k, "SELECT coalesce(max(version), 0) FROM schema_migrations", NULL, &v,
			      "schema version", err);

	if (rc == UNIAP_OK)
		*version = (int)v;
	return rc;
}

/*
 * Each migration in a transaction of its own that first takes
 * PG_LOCK_MIGRATE, so replicas starting together migrate once: the one that
 * waited re-reads the version and finds nothing left to do.
 */
static uniap_code migrate(struct pg_call *k, struct uniap_err *err)
{
	int latest = store_pg_migrations[store_pg_migrations_count - 1].version, cur = 0;
	uniap_code rc = UNIAP_OK;

	for (size_t i = 0; i < store_pg_migrations_count && rc == UNIAP_OK; i++) {
		const struct store_migration *m = &store_pg_migrations[i];
		struct pg_params lock = { 0 }, rec = { 0 };
		PGresult *res;

		p_i64(&lock, PG_LOCK_MIGRATE);
		rc = q_run(k, "BEGIN", NULL, NULL, "begin", err);
		if (rc == UNIAP_OK)
			rc = q_write(k, "SELECT pg_advisory_xact_lock($1)", &lock, NULL, "migration lock", err);
		if (rc == UNIAP_OK)
			rc = q_write(k, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
				     " name TEXT NOT NULL, applied_at BIGINT NOT NULL)", NULL, NULL,
				     "schema_migrations", err);
		if (rc == UNIAP_OK)
			rc = read_version(k, &cur, err);
		if (rc != UNIAP_OK)
			break;
		if (cur > latest) {
			rc = err_set(err, UNIAP_E_INVALID, "database schema version %d is newer than this uniapd (%d)",
				     cur, latest);
			break;
		}
		if (cur >= m->version) {
			rc = q_run(k, "COMMIT", NULL, NULL, "commit", err);
			continue;
		}
		/* the file's text from the binary: several statements, one simple query */
		res = PQexec(k->conn, m->sql);
		if (!res || PQresultStatus(res) != PGRES_COMMAND_OK)
			rc = pg_fail(k, res, m->name, err);
		PQclear(res);
		if (rc != UNIAP_OK)
			break;
		p_i64(&rec, m->version);
		p_text(&rec, m->name);
		p_i64(&rec, store_now_ms());
		rc = q_write(k, "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1::int, $2, $3)",
			     &rec, NULL, "record migration", err);
		if (rc == UNIAP_OK)
			rc = q_run(k, "COMMIT", NULL, NULL, "commit", err);
	}
	q_rollback(k);
	return rc;
}

/* ---- open / close ---- */

/* The URL's password as written: "user:PASSWORD@" of the user info, "password=PASSWORD" of the query. */
static void url_secrets(struct store_pg *s, const char *url)
{
	const char *p = strstr(url, "://"), *end, *at = NULL, *colon, *q;
	PQconninfoOption *opts;
	char *msg = NULL;

	if (p) {
		p += 3;
		end = p + strcspn(p, "/?");
		for (const char *c = p; c < end; c++)
			if (*c == '@')
				at = c;
		colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
		if (colon && colon + 1 < at)
			s->secret[0] = strndup(colon + 1, (size_t)(at - colon - 1));
	}
	q = strchr(url, '?');
	while (q && *q) {
		q++;
		if (strncmp(q, "password=", 9) == 0 && q[9] && q[9] != '&') {
			s->secret[1] = strndup(q + 9, strcspn(q + 9, "&"));
			break;
		}
		q = strchr(q, '&');
	}
	opts = PQconninfoParse(url, &msg);
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val && *o->val)
			s->secret[2] = strdup(o->val);
	PQconninfoFree(opts);
	PQfreemem(msg);
}

static void zfree(char *p)
{
	if (p) {
		explicit_bzero(p, strlen(p));
		free(p);
	}
}

static void listen_stop(struct store_pg *s);

static void pg_close(struct store *base)
{
	struct store_pg *s = pg_of(base);

	if (!s)
		return;
	listen_stop(s);
	for (int i = 0; i < s->n_slots; i++)
		PQfinish(s->slots[i].conn);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	zfree(s->url);
	for (int i = 0; i < PG_SECRETS; i++)
		zfree(s->secret[i]);
	free(s);
}

uniap_code store_pg_open(const char *url, const struct store_opts *opts, struct store **out,
			 struct uniap_err *err)
{
	struct store_pg *s = NULL;
	int pool = opts && opts->pool_size ? opts->pool_size : DEFAULT_POOL;
	char *msg = NULL;
	PQconninfoOption *parsed;
	uniap_code rc = UNIAP_OK;

	if (!url || !*url)
		return err_set(err, UNIAP_E_ARG, "store: postgres: the URL is empty");
	if (pool < 1 || pool > STORE_POOL_MAX)
		return err_set(err, UNIAP_E_ARG, "store: pool_size: must be 1..%d, got %d", STORE_POOL_MAX, pool);
	if (opts && opts->cache_max_bytes < 0)
		return err_set(err, UNIAP_E_ARG, "store: cache_max_bytes: must be >= 0");
	if (opts && opts->max_queued_jobs < 0)
		return err_set(err, UNIAP_E_ARG, "store: max_queued_jobs: must be >= 0");
	if (!PQisthreadsafe())
		return err_set(err, UNIAP_E_INTERNAL, "store: libpq was built without threads");
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(err, UNIAP_E_NOMEM, "store: out of memory");
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->wake[0] = s->wake[1] = -1;
	s->url = strdup(url);
	if (!s->url) {
		rc = err_set(err, UNIAP_E_NOMEM, "store: out of memory");
		goto out;
	}
	url_secrets(s, url);
	s->cache_max_bytes = opts && opts->cache_max_bytes ? opts->cache_max_bytes : DEFAULT_CACHE_MAX_BYTES;
	s->max_queued_jobs = opts && opts->max_queued_jobs > 0 ? opts->max_queued_jobs : STORE_DEFAULT_MAX_QUEUED;
	s->max_stored_jobs = opts && opts->max_stored_jobs > 0 ? opts->max_stored_jobs
							       : STORE_DEFAULT_MAX_STORED_JOBS;
	/* opts->max_db_bytes is SQLite's file cap: a PostgreSQL server's room is its operator's */
	for (int i = 0; i < STORE_POOL_MAX; i++)
		atomic_init(&s->write_since_ms[i], 0);
	atomic_init(&s->failing, 0);
	atomic_init(&s->full, 0);
	atomic_init(&s->stop, 0);

	/* a URL libpq cannot read is the operator's mistake, not an unavailable server */
	parsed = PQconninfoParse(url, &msg);
	if (!parsed) {
		char text[UNIAP_ERR_MSG_MAX];

		scrub(s, msg ? msg : "out of memory", text, sizeof(text));
		rc = err_set(err, msg ? UNIAP_E_ARG : UNIAP_E_NOMEM, "store: postgres: the URL: %s", text);
		PQfreemem(msg);
		goto out;
	}
	PQconninfoFree(parsed);

	for (int i = 0; i < pool && rc == UNIAP_OK; i++) {
		rc = conn_open(s, &s->slots[i].conn, err);
		if (rc != UNIAP_OK)
			break;
		s->free_slots[s->n_free++] = i;
		s->n_slots = i + 1;
		/* migrate on the first connection before opening the others */
		if (i == 0) {
			struct pg_call k;

			rc = call_begin(s, &k, err);
			if (rc == UNIAP_OK) {
				rc = migrate(&k, err);
				call_end(&k);
			}
		}
	}
out:
	if (rc != UNIAP_OK) {
		pg_close(&s->base);
		return rc;
	}
	s->base.be = &store_pg_backend;
	*out = &s->base;
	return UNIAP_OK;
}

static void pg_health(struct store *base, struct store_health *h)
{
	struct store_pg *s = pg_of(base);
	int64_t now = mono_ms(), oldest = 0;

	for (int i = 0; i < s->n_slots; i++) {
		int64_t since = atomic_load(&s->write_since_ms[i]);

		if (since && now - since > oldest)
			oldest = now - since;
	}
	h->writing_ms = oldest;
	h->failing = atomic_load(&s->failing);
	h->full = atomic_load(&s->full);
}

/* SELECT 1: whether the server answers (GET /readyz, through store_health's failing). */
static uniap_code pg_probe(struct store *base, struct uniap_err *err)
{
	PGresult *res = NULL;
	uniap_code rc = pg_query(pg_of(base), "SELECT 1", NULL, &res, "probe", err);

	PQclear(res);
	return rc;
}

static uniap_code pg_schema_version(struct store *base, int *version, struct uniap_err *err)
{
	PGresult *res = NULL;
	uniap_code rc = pg_query(pg_of(base), "SELECT coalesce(max(version), 0) FROM schema_migrations", NULL, &res,
				 "schema version", err);

	if (rc == UNIAP_OK)
		*version = (int)col_i64(res, 0, 0);
	PQclear(res);
	return rc;
}

/* ---- pagination ---- */

static uniap_code page_args(int64_t cursor, size_t *limit, struct uniap_err *err)
{
	if (cursor < 0)
		return err_set(err, UNIAP_E_ARG, "cursor: must be >= 0, got %lld", (long long)cursor);
	if (*limit == 0)
		*limit = STORE_PAGE_MAX;
	if (*limit > STORE_PAGE_MAX)
		return err_set(err, UNIAP_E_ARG, "limit: must be <= %d, got %zu", STORE_PAGE_MAX, *limit);
	return UNIAP_OK;
}

/*
 * Runs sql (whose first column is the row id, ordered by it, LIMIT limit + 1)
 * and reads at most limit rows into a new array *arr (owned: free(); elem
 * bytes each) with from_row; *n the rows read, *next the id of the last one
 * when a further row exists, else 0 (all written only on success).
 */
static uniap_code page_read(struct store_pg *s, const char *sql, const struct pg_params *p, size_t elem,
			    size_t limit, void (*from_row)(const PGresult *, int, void *), const char *what,
			    void **arr, size_t *n, int64_t *next, struct uniap_err *err)
{
	PGresult *res = NULL;
	size_t rows, k;
	void *a;
	uniap_code rc = pg_query(s, sql, p, &res, what, err);

	if (rc != UNIAP_OK)
		return rc;
	rows = (size_t)PQntuples(res);
	k = rows > limit ? limit : rows;
	a = calloc(k ? k : 1, elem);
	if (!a) {
		PQclear(res);
		return err_set(err, UNIAP_E_NOMEM, "store: out of memory");
	}
	for (size_t i = 0; i < k; i++)
		from_row(res, (int)i, (char *)a + i * elem);
	*next = rows > limit ? col_i64(res, (int)k - 1, 0) : 0;
	*arr = a;
	*n = k;
	PQclear(res);
	return UNIAP_OK;
}

/* ---- tenants ---- */

#define TENANT_COLS "id, name, created_at, coalesce(revoked_at, 0), max_concurrent_jobs, " \
		    "max_stored_bytes, max_job_worker_s"
#define TENANT_NCOLS 7 /* the columns of TENANT_COLS: a query's next one is at this index */

static void tenant_from_row(const PGresult *r, int row, struct store_tenant *t)
{
	memset(t, 0, sizeof(*t));
	t->id = col_i64(r, row, 0);
	col_text(r, row, 1, t->name, sizeof(t->name));
	t->created_at_ms = col_i64(r, row, 2);
	t->revoked_at_ms = col_i64(r, row, 3);
	t->max_concurrent_jobs = col_i64(r, row, 4);
	t->max_stored_bytes = col_i64(r, row, 5);
	t->max_job_worker_s = col_f64(r, row, 6);
}

static void tenant_from_row_any(const PGresult *r, int row, void *p)
{
	tenant_from_row(r, row, p);
}

struct tenant_add_arg {
	const char *name;
	const unsigned char *hash;
	int64_t max_concurrent_jobs, max_stored_bytes;
	int64_t id;                 /* out */
};

static uniap_code tenant_add_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct tenant_add_arg *a = arg;
	struct pg_params p = { 0 };
	int64_t id = 0;
	uniap_code rc;

	p_text(&p, a->name);
	p_bytes(&p, a->hash, STORE_SHA256_BYTES);
	p_i64(&p, store_now_ms());
	p_i64(&p, a->max_concurrent_jobs);
	p_i64(&p, a->max_stored_bytes);
	rc = q_i64(k, "INSERT INTO tenants (name, key_hash, created_at, max_concurrent_jobs, max_stored_bytes)"
		   " VALUES ($1, $2, $3, $4, $5) RETURNING id", &p, &id, "add tenant", err);
	if (rc != UNIAP_OK && state_is(k, "23505") && strcmp(k->constraint, "tenants_name_key") == 0)
		rc = err_set(err, UNIAP_E_INVALID, "tenant.name: \"%s\" already exists", a->name);
	a->id = id;
	return rc;
}

static uniap_code pg_tenant_add(struct store *base, const char *name, int64_t max_concurrent_jobs,
				int64_t max_stored_bytes, int64_t *id, char key_out[STORE_KEY_CHARS + 1],
				struct uniap_err *err)
{
	unsigned char hash[STORE_SHA256_BYTES];
	char key[STORE_KEY_CHARS + 1];
	struct tenant_add_arg a = { name, hash, max_concurrent_jobs, max_stored_bytes, 0 };
	uniap_code rc;

	if (!name || !*name || strlen(name) > STORE_NAME_MAX)
		return err_set(err, UNIAP_E_INVALID, "tenant.name: must be 1..%d bytes", STORE_NAME_MAX);
	if (max_concurrent_jobs < 0 || max_stored_bytes < 0)
		return err_set(err, UNIAP_E_INVALID, "tenant: limits must be >= 0");
	rc = store_key_new(key, hash, err);
	if (rc != UNIAP_OK)
		return rc;
	rc = pg_write(pg_of(base), tenant_add_tx, &a, err);
	if (rc == UNIAP_OK) {
		*id = a.id;
		memcpy(key_out, key, sizeof(key));
	}
	explicit_bzero(key, sizeof(key));
	return rc;
}

static uniap_code pg_tenant_list(struct store *base, int64_t cursor, size_t limit, struct store_tenant **out,
				 size_t *n, int64_t *next, struct uniap_err *err)
{
	struct pg_params p = { 0 };
	void *arr = NULL;
	uniap_code rc = page_args(cursor, &limit, err);

	if (rc != UNIAP_OK)
		return rc;
	p_i64(&p, cursor);
	p_i64(&p, (int64_t)limit + 1);
	rc = page_read(pg_of(base), "SELECT " TENANT_COLS " FROM tenants WHERE id > $1 ORDER BY id LIMIT $2", &p,
		       sizeof(**out), limit, tenant_from_row_any, "list tenants", &arr, n, next, err);
	if (rc == UNIAP_OK)
		*out = arr;
	return rc;
}

struct revoke_arg {
	int64_t id;
	int64_t canceled;           /* out */
};

/*
 * The tenant's row is taken last: a claim holds its job's row and then waits
 * for the tenant's (the served update), so a revoke that held the tenant's
 * row while it waited for that job would deadlock with every claim of the
 * tenant's jobs.  So: its queued jobs first (waiting for claims of them to
 * end), then the tenant, then once more the queued jobs made meanwhile, by
 * creates that held the row before it (SKIP LOCKED: a claim that holds one
 * makes it running, which the replica running it stops, store_tenant_revoked).
 */
static uniap_code tenant_revoke_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct revoke_arg *a = arg;
	struct pg_params p = { 0 };
	int64_t changed = 0, first = 0, late = 0;
	uniap_code rc;

	a->canceled = 0;
	p_i64(&p, store_now_ms());
	p_i64(&p, a->id);
	rc = q_write(k, "UPDATE jobs SET state = 'canceled', finished_at = $1,"
		     " error = 'canceled: the tenant was revoked' WHERE tenant_id = $2 AND state = 'queued'",
		     &p, &first, "cancel the tenant's queued jobs", err);
	if (rc == UNIAP_OK)
		rc = q_write(k, "UPDATE tenants SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2", &p, &changed,
			     "revoke tenant", err);
	if (rc == UNIAP_OK && changed == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "tenant %lld: not found", (long long)a->id);
	if (rc == UNIAP_OK)
		rc = q_write(k, "UPDATE jobs SET state = 'canceled', finished_at = $1,"
			     " error = 'canceled: the tenant was revoked' WHERE id IN (SELECT id FROM jobs"
			     " WHERE tenant_id = $2 AND state = 'queued' FOR UPDATE SKIP LOCKED)",
			     &p, &late, "cancel the tenant's queued jobs", err);
	a->canceled = first + late;
	return rc;
}

static uniap_code pg_tenant_revoke(struct store *base, int64_t id, size_t *canceled, struct uniap_err *err)
{
	struct revoke_arg a = { id, 0 };
	uniap_code rc;

	if (canceled)
		*canceled = 0;
	rc = pg_write(pg_of(base), tenant_revoke_tx, &a, err);
	if (rc == UNIAP_OK && canceled)
		*canceled = (size_t)a.canceled;
	return rc;
}

static uniap_code pg_tenant_set_quota(struct store *base, int64_t id, const struct store_tenant_quota *q,
				      struct uniap_err *err)
{
	struct one_arg a = {
		.sql = "UPDATE tenants SET"
		       " max_concurrent_jobs = CASE WHEN $1 >= 0 THEN $1 ELSE max_concurrent_jobs END,"
		       " max_stored_bytes = CASE WHEN $2 >= 0 THEN $2 ELSE max_stored_bytes END,"
		       " max_job_worker_s = CASE WHEN $3 >= 0 THEN $3 ELSE max_job_worker_s END"
		       " WHERE id = $4",
		.what = "set tenant quota",
	};
	uniap_code rc;

	if (!(q->max_job_worker_s < 0 || isfinite(q->max_job_worker_s)))
		return err_set(err, UNIAP_E_INVALID, "max_job_worker_s: must be finite");
	p_i64(&a.p, q->max_concurrent_jobs);
	p_i64(&a.p, q->max_stored_bytes);
	p_f64(&a.p, q->max_job_worker_s);
	p_i64(&a.p, id);
	rc = pg_write(pg_of(base), one_tx, &a, err);
	if (rc == UNIAP_OK && a.changes == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "tenant %lld: not found", (long long)id);
	return rc;
}

static uniap_code pg_tenant_get(struct store *base, int64_t id, struct store_tenant *out, struct uniap_err *err)
{
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	uniap_code rc;

	memset(out, 0, sizeof(*out));
	p_i64(&p, id);
	rc = pg_query(pg_of(base), "SELECT " TENANT_COLS " FROM tenants WHERE id = $1", &p, &res, "tenant", err);
	if (rc == UNIAP_OK && PQntuples(res) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "tenant %lld: not found", (long long)id);
	if (rc == UNIAP_OK)
		tenant_from_row(res, 0, out);
	PQclear(res);
	return rc;
}

static uniap_code pg_tenant_lookup(struct store *base, const char *key, struct store_tenant *out,
				   struct uniap_err *err)
{
	unsigned char hash[STORE_SHA256_BYTES];
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	uniap_code rc;

	if (!key)
		return err_set(err, UNIAP_E_NOTFOUND, "api key: unknown");
	/* found by the hash of the presented key (the index's timing tells only of SHA-256
	 * values of keys the caller chose); compared again in constant time all the same */
	store_sha256(key, strlen(key), hash);
	p_bytes(&p, hash, sizeof(hash));
	rc = pg_query(pg_of(base), "SELECT " TENANT_COLS ", key_hash FROM tenants WHERE key_hash = $1", &p, &res,
		      "look up key", err);
	if (rc != UNIAP_OK)
		return rc;
	if (PQntuples(res) == 0 || col_null(res, 0, TENANT_NCOLS) ||
	    PQgetlength(res, 0, TENANT_NCOLS) != STORE_SHA256_BYTES ||
	    !store_hash_equal((const unsigned char *)PQgetvalue(res, 0, TENANT_NCOLS), hash)) {
		rc = err_set(err, UNIAP_E_NOTFOUND, "api key: unknown");
	} else {
		tenant_from_row(res, 0, out);
		if (out->revoked_at_ms)
			rc = err_set(err, UNIAP_E_FORBIDDEN,
				     "api key: tenant \"%s\" was revoked; ask the operator for a new key", out->name);
	}
	PQclear(res);
	return rc;
}

/* ---- documents ---- */

static const char *const doc_kind_names[] = { "cluster", "model" };

#define DOC_COLS "id, tenant_id, kind, name, bytes, sha256, created_at"

static void doc_from_row(const PGresult *r, int row, struct store_doc *d)
{
	memset(d, 0, sizeof(*d));
	d->id = col_i64(r, row, 0);
	d->tenant_id = col_i64(r, row, 1);
	d->kind = strcmp(col_str(r, row, 2), "model") == 0 ? STORE_DOC_MODEL : STORE_DOC_CLUSTER;
	col_text(r, row, 3, d->name, sizeof(d->name));
	d->bytes = col_i64(r, row, 4);
	if (!col_null(r, row, 5) && PQgetlength(r, row, 5) == STORE_SHA256_BYTES)
		memcpy(d->sha256, PQgetvalue(r, row, 5), STORE_SHA256_BYTES);
	d->created_at_ms = col_i64(r, row, 6);
}

static void doc_from_row_any(const PGresult *r, int row, void *p)
{
	doc_from_row(r, row, p);
}

/*
 * Inside the caller's transaction: the active tenant's limits, its row
 * locked FOR UPDATE until the transaction ends, so one tenant's creates and
 * uploads check their limits one at a time, on every replica.
 */
static uniap_code tenant_lock(struct pg_call *k, int64_t tenant_id, int64_t *max_jobs, int64_t *max_bytes,
			      struct uniap_err *err)
{
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	uniap_code rc;

	p_i64(&p, tenant_id);
	rc = q_run(k, "SELECT max_concurrent_jobs, max_stored_bytes FROM tenants"
		   " WHERE id = $1 AND revoked_at IS NULL FOR UPDATE", &p, &res, "tenant limits", err);
	if (rc == UNIAP_OK && PQntuples(res) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "tenant %lld: not found", (long long)tenant_id);
	if (rc == UNIAP_OK) {
		*max_jobs = col_i64(res, 0, 0);
		*max_bytes = col_i64(res, 0, 1);
	}
	PQclear(res);
	return rc;
}

/* What a tenant stores: its documents' bytes and its jobs' requests and results. */
#define USED_BYTES_SQL "(SELECT coalesce(sum(bytes), 0) FROM documents WHERE tenant_id = $1)::bigint +" \
		       " (SELECT coalesce(sum(length(request)::bigint + coalesce(length(result), 0)), 0)" \
		       " FROM jobs WHERE tenant_id = $1)::bigint"

struct doc_put_arg {
	int64_t tenant_id;
	enum store_doc_kind kind;
	const char *name;
	const void *body;
	size_t bytes;
	const unsigned char *hash;
	int64_t id;                 /* out */
};

static uniap_code doc_put_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct doc_put_arg *a = arg;
	struct pg_params p = { 0 }, ins = { 0 };
	int64_t max_jobs, max_bytes, used = 0;
	uniap_code rc;

	a->id = 0;
	rc = tenant_lock(k, a->tenant_id, &max_jobs, &max_bytes, err);
	p_i64(&p, a->tenant_id);
	if (rc == UNIAP_OK)
		rc = q_i64(k, "SELECT " USED_BYTES_SQL, &p, &used, "stored bytes", err);
	if (rc != UNIAP_OK)
		return rc;
	if (used + (int64_t)a->bytes > max_bytes)
		return err_set(err, UNIAP_E_LIMIT, "documents: %lld + %zu bytes exceed the tenant's"
			       " max_stored_bytes %lld (documents and jobs count)", (long long)used, a->bytes,
			       (long long)max_bytes);
	p_i64(&ins, a->tenant_id);
	p_text(&ins, doc_kind_names[a->kind]);
	p_text(&ins, a->name);
	p_i64(&ins, (int64_t)a->bytes);
	p_bytes(&ins, a->hash, STORE_SHA256_BYTES);
	p_i64(&ins, store_now_ms());
	p_bytes(&ins, a->body, a->bytes);
	return q_i64(k, "INSERT INTO documents (tenant_id, kind, name, bytes, sha256, created_at, body)"
		     " VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id", &ins, &a->id, "put document", err);
}

static uniap_code pg_doc_put(struct store *base, int64_t tenant_id, enum store_doc_kind kind, const char *name,
			     const void *body, size_t bytes, int64_t *id, struct uniap_err *err)
{
	unsigned char hash[STORE_SHA256_BYTES];
	struct doc_put_arg a = { tenant_id, kind, name, body, bytes, hash, 0 };
	uniap_code rc;

	if ((int)kind < 0 || kind > STORE_DOC_MODEL)
		return err_set(err, UNIAP_E_INVALID, "document.kind: must be cluster or model");
	if (!name || !*name || strlen(name) > STORE_NAME_MAX)
		return err_set(err, UNIAP_E_INVALID, "document.name: must be 1..%d bytes", STORE_NAME_MAX);
	if (bytes > (size_t)INT32_MAX)
		return err_set(err, UNIAP_E_LIMIT, "document: %zu bytes is too large", bytes);
	store_sha256(body, bytes, hash);
	rc = pg_write(pg_of(base), doc_put_tx, &a, err);
	if (rc == UNIAP_OK)
		*id = a.id;
	return rc;
}

static uniap_code pg_doc_get(struct store *base, int64_t tenant_id, int64_t id, struct store_doc *out,
			     struct uniap_err *err)
{
	struct pg_params p = { 0 };
	struct store_doc d;
	PGresult *res = NULL;
	uniap_code rc;

	p_i64(&p, id);
	p_i64(&p, tenant_id);
	rc = pg_query(pg_of(base), "SELECT " DOC_COLS ", body FROM documents WHERE id = $1 AND tenant_id = $2", &p,
		      &res, "document", err);
	if (rc == UNIAP_OK && PQntuples(res) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "document %lld: not found", (long long)id);
	if (rc == UNIAP_OK) {
		doc_from_row(res, 0, &d);
		rc = col_dup(res, 0, 7, &d.body, NULL, err);
		if (rc == UNIAP_OK)
			*out = d;
	}
	PQclear(res);
	return rc;
}

static uniap_code pg_doc_list(struct store *base, int64_t tenant_id, int64_t cursor, size_t limit,
			      struct store_doc **out, size_t *n, int64_t *next, struct uniap_err *err)
{
	struct pg_params p = { 0 };
	void *arr = NULL;
	uniap_code rc = page_args(cursor, &limit, err);

	if (rc != UNIAP_OK)
		return rc;
	p_i64(&p, tenant_id);
	p_i64(&p, cursor);
	p_i64(&p, (int64_t)limit + 1);
	rc = page_read(pg_of(base), "SELECT " DOC_COLS " FROM documents WHERE tenant_id = $1 AND id > $2"
		       " ORDER BY id LIMIT $3", &p, sizeof(**out), limit, doc_from_row_any, "list documents", &arr,
		       n, next, err);
	if (rc == UNIAP_OK)
		*out = arr;
	return rc;
}

/* A one-statement write "... WHERE id = $1 AND tenant_id = $2 [AND ... $3]"; no row changed
 * is UNIAP_E_NOTFOUND naming what and id.  extra (may be NULL) is bound to $3. */
static uniap_code write_scoped(struct store_pg *s, const char *sql, int64_t id, int64_t tenant_id,
			       const char *extra, const char *what, struct uniap_err *err)
{
	struct one_arg a = { .sql = sql, .what = what };
	uniap_code rc;

	p_i64(&a.p, id);
	p_i64(&a.p, tenant_id);
	if (extra)
		p_text(&a.p, extra);
	rc = pg_write(s, one_tx, &a, err);
	if (rc == UNIAP_OK && a.changes == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "%s %lld: not found", what, (long long)id);
	return rc;
}

static uniap_code pg_doc_delete(struct store *base, int64_t tenant_id, enum store_doc_kind kind, int64_t id,
				struct uniap_err *err)
{
	if ((unsigned)kind >= sizeof(doc_kind_names) / sizeof(doc_kind_names[0]))
		return err_set(err, UNIAP_E_ARG, "document: kind %d: unknown", (int)kind);
	return write_scoped(pg_of(base), "DELETE FROM documents WHERE id = $1 AND tenant_id = $2 AND kind = $3", id,
			    tenant_id, doc_kind_names[kind], doc_kind_names[kind], err);
}

/* ---- jobs ---- */

static uniap_code pg_job_delete(struct store *base, int64_t tenant_id, int64_t id, struct uniap_err *err)
{
	return write_scoped(pg_of(base), "DELETE FROM jobs WHERE id = $1 AND tenant_id = $2"
			    " AND state IN ('succeeded', 'failed', 'canceled')", id, tenant_id, NULL, "job", err);
}

#define JOB_COLS "id, tenant_id, state, coalesce(idempotency_key, ''), progress_done, " \
		 "progress_total, best_tpi_s, created_at, coalesce(started_at, 0), " \
		 "coalesce(finished_at, 0), version, kind, bound_s"
#define JOB_NCOLS 13   /* columns of JOB_COLS: a query's own columns follow */

static void job_from_row(const PGresult *r, int row, struct store_job *j)
{
	memset(j, 0, sizeof(*j));
	j->id = col_i64(r, row, 0);
	j->tenant_id = col_i64(r, row, 1);
	if (store_job_state_parse(col_str(r, row, 2), &j->state) != 0)
		j->state = STORE_JOB_FAILED;   /* the CHECK constraint rules this out */
	col_text(r, row, 3, j->idempotency_key, sizeof(j->idempotency_key));
	j->progress_done = col_i64(r, row, 4);
	j->progress_total = col_i64(r, row, 5);
	j->has_best_tpi = !col_null(r, row, 6);
	j->best_tpi_s = col_f64(r, row, 6);
	j->created_at_ms = col_i64(r, row, 7);
	j->started_at_ms = col_i64(r, row, 8);
	j->finished_at_ms = col_i64(r, row, 9);
	j->version = col_i64(r, row, 10);
	if (store_job_kind_parse(col_str(r, row, 11), &j->kind) != 0)
		j->kind = STORE_JOB_PLAN;      /* the CHECK constraint allows only the kinds' names */
	j->has_bound = !col_null(r, row, 12);
	j->bound_s = col_f64(r, row, 12);
}

static void job_from_row_any(const PGresult *r, int row, void *p)
{
	job_from_row(r, row, p);
}

/* Inside the caller's transaction: the id of the job with this key (0: none); the same key
 * with another request or kind is UNIAP_E_INVALID naming Idempotency-Key. */
static uniap_code idem_find(struct pg_call *k, int64_t tenant_id, enum store_job_kind kind, const char *idem_key,
			    const unsigned char *hash, int64_t *id, struct uniap_err *err)
{
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	uniap_code rc;

	*id = 0;
	p_i64(&p, tenant_id);
	p_text(&p, idem_key);
	rc = q_run(k, "SELECT id, request_sha256, kind FROM jobs WHERE tenant_id = $1 AND idempotency_key = $2", &p,
		   &res, "idempotency key", err);
	if (rc == UNIAP_OK && PQntuples(res) > 0) {
		if (PQgetlength(res, 0, 1) != STORE_SHA256_BYTES ||
		    memcmp(PQgetvalue(res, 0, 1), hash, STORE_SHA256_BYTES) != 0 ||
		    strcmp(col_str(res, 0, 2), store_job_kind_name(kind)) != 0)
			rc = err_set(err, UNIAP_E_INVALID, "Idempotency-Key: \"%s\" was already used"
				     " with a different request body", idem_key);
		else
			*id = col_i64(res, 0, 0);
	}
	PQclear(res);
	return rc;
}

static uniap_code pg_job_find_idem(struct store *base, int64_t tenant_id, const char *idem_key, int64_t *id,
				   unsigned char body_sha256[STORE_SHA256_BYTES], int *has_body_sha256,
				   struct uniap_err *err)
{
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	uniap_code rc;

	p_i64(&p, tenant_id);
	p_text(&p, idem_key);
	rc = pg_query(pg_of(base), "SELECT id, body_sha256 FROM jobs WHERE tenant_id = $1 AND idempotency_key = $2",
		      &p, &res, "idempotency key", err);
	if (rc == UNIAP_OK && PQntuples(res) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "Idempotency-Key: no job");
	if (rc == UNIAP_OK) {
		*id = col_i64(res, 0, 0);
		*has_body_sha256 = !col_null(res, 0, 1) && PQgetlength(res, 0, 1) == STORE_SHA256_BYTES;
		if (*has_body_sha256)
			memcpy(body_sha256, PQgetvalue(res, 0, 1), STORE_SHA256_BYTES);
	}
	PQclear(res);
	return rc;
}

static uniap_code pg_job_set_body_hash(struct store *base, int64_t tenant_id, int64_t id,
				       const unsigned char body_sha256[STORE_SHA256_BYTES], struct uniap_err *err)
{
	struct one_arg a = { .sql = "UPDATE jobs SET body_sha256 = $1 WHERE id = $2 AND tenant_id = $3",
			     .what = "job body hash" };
	uniap_code rc;

	p_bytes(&a.p, body_sha256, STORE_SHA256_BYTES);
	p_i64(&a.p, id);
	p_i64(&a.p, tenant_id);
	rc = pg_write(pg_of(base), one_tx, &a, err);
	if (rc == UNIAP_OK && a.changes == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "job %lld: no such job", (long long)id);
	return rc;
}

struct create_arg {
	struct store_pg *s;
	int64_t tenant_id;
	enum store_job_kind kind;
	const char *idem_key;       /* may be NULL */
	const void *request;
	size_t bytes;
	const unsigned char *hash;
	int64_t id;                 /* out */
	int existed;                /* out */
};

/*
 * The tenant's row (FOR UPDATE) serialises its creates, so its limits and
 * its Idempotency-Key hold across replicas; PG_LOCK_QUEUE serialises the
 * count of the service's queue.  The checks are sq_job_create's, in its
 * order.  A create that still meets another with its key at the unique index
 * runs again and finds that job.
 */
static uniap_code job_create_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct create_arg *a = arg;
	struct store_pg *s = a->s;
	struct pg_params p = { 0 }, lock = { 0 }, ins = { 0 };
	int64_t max_jobs = 0, max_bytes = 0, stored, used, active, queued = 0;
	PGresult *res = NULL;
	uniap_code rc;

	a->id = 0;
	a->existed = 0;
	rc = tenant_lock(k, a->tenant_id, &max_jobs, &max_bytes, err);
	if (rc == UNIAP_OK && a->idem_key)
		rc = idem_find(k, a->tenant_id, a->kind, a->idem_key, a->hash, &a->id, err);
	if (rc != UNIAP_OK || a->id) {
		a->existed = a->id != 0;
		return rc;
	}
	/* what the tenant stores bounds its jobs too: their count, and their bytes with its documents' */
	p_i64(&p, a->tenant_id);
	rc = q_run(k, "SELECT (SELECT count(*) FROM jobs WHERE tenant_id = $1), " USED_BYTES_SQL ","
		   " (SELECT count(*) FROM jobs WHERE tenant_id = $1 AND state IN ('queued', 'running'))", &p, &res,
		   "tenant usage", err);
	if (rc != UNIAP_OK)
		return rc;
	stored = col_i64(res, 0, 0);
	used = col_i64(res, 0, 1);
	active = col_i64(res, 0, 2);
	PQclear(res);
	if (stored >= s->max_stored_jobs)
		return err_set(err, UNIAP_E_LIMIT, "jobs: the tenant stores %lld, the limit (--max-stored-jobs); "
			       "DELETE /v1/jobs/{id} removes a finished one", (long long)stored);
	if (used + (int64_t)a->bytes > max_bytes)
		return err_set(err, UNIAP_E_LIMIT, "jobs: %lld + %zu bytes exceed the tenant's max_stored_bytes %lld"
			       " (documents and jobs count)", (long long)used, a->bytes, (long long)max_bytes);
	if (active >= max_jobs)
		return err_set(err, UNIAP_E_RATE, "jobs: the tenant already has %lld queued or running,"
			       " its max_concurrent_jobs", (long long)active);
	p_i64(&lock, PG_LOCK_QUEUE);
	rc = q_write(k, "SELECT pg_advisory_xact_lock($1)", &lock, NULL, "queue lock", err);
	if (rc == UNIAP_OK)
		rc = q_i64(k, "SELECT count(*) FROM jobs WHERE state = 'queued'", NULL, &queued, "queued jobs", err);
	if (rc != UNIAP_OK)
		return rc;
	if (queued >= s->max_queued_jobs)
		return err_set(err, UNIAP_E_BUSY, "jobs: the service's queue is full (%lld queued)", (long long)queued);
	p_i64(&ins, a->tenant_id);
	p_bytes(&ins, a->hash, STORE_SHA256_BYTES);
	p_text(&ins, a->idem_key);
	p_i64(&ins, store_now_ms());
	p_bytes(&ins, a->request, a->bytes);
	p_text(&ins, store_job_kind_name(a->kind));
	rc = q_i64(k, "INSERT INTO jobs (tenant_id, state, request_sha256, idempotency_key, created_at, request, kind)"
		   " VALUES ($1, 'queued', $2, $3, $4, $5, $6) RETURNING id", &ins, &a->id, "create job", err);
	if (rc != UNIAP_OK && a->idem_key && state_is(k, "23505") && strcmp(k->constraint, "jobs_idempotency") == 0)
		k->retry = 1;
	if (rc == UNIAP_OK)
		rc = notify(k, "queued", err);
	return rc;
}

static uniap_code pg_job_create(struct store *base, int64_t tenant_id, enum store_job_kind kind,
				const char *idem_key, const void *request, size_t bytes, int64_t *id, int *existed,
				struct uniap_err *err)
{
	unsigned char hash[STORE_SHA256_BYTES];
	struct create_arg a = { pg_of(base), tenant_id, kind, idem_key, request, bytes, hash, 0, 0 };
	uniap_code rc;

	if (idem_key && (!*idem_key || strlen(idem_key) > STORE_IDEM_KEY_MAX))
		return err_set(err, UNIAP_E_INVALID, "Idempotency-Key: must be 1..%d bytes", STORE_IDEM_KEY_MAX);
	if (bytes > (size_t)INT32_MAX)
		return err_set(err, UNIAP_E_LIMIT, "job request: %zu bytes is too large", bytes);
	if ((int)kind < 0 || kind >= STORE_JOB_KIND_COUNT)
		return err_set(err, UNIAP_E_ARG, "job kind: %d is not a kind", (int)kind);
	store_sha256(request, bytes, hash);
	rc = pg_write(pg_of(base), job_create_tx, &a, err);
	if (rc == UNIAP_OK) {
		*existed = a.existed;
		*id = a.id;
	}
	return rc;
}

static uniap_code pg_job_version(struct store *base, int64_t tenant_id, int64_t id, int64_t *version,
				 struct uniap_err *err)
{
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	uniap_code rc;

	p_i64(&p, id);
	p_i64(&p, tenant_id);
	rc = pg_query(pg_of(base), "SELECT version FROM jobs WHERE id = $1 AND ($2 = 0 OR tenant_id = $2)", &p, &res,
		      "job", err);
	if (rc == UNIAP_OK && PQntuples(res) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "job %lld: not found", (long long)id);
	if (rc == UNIAP_OK)
		*version = col_i64(res, 0, 0);
	PQclear(res);
	return rc;
}

static uniap_code pg_job_get(struct store *base, int64_t tenant_id, int64_t id, struct store_job *out,
			     struct uniap_err *err)
{
	struct pg_params p = { 0 };
	struct store_job j;
	PGresult *res = NULL;
	uniap_code rc;

	memset(&j, 0, sizeof(j));
	p_i64(&p, id);
	p_i64(&p, tenant_id);
	rc = pg_query(pg_of(base), "SELECT " JOB_COLS ", request, result, error FROM jobs"
		      " WHERE id = $1 AND ($2 = 0 OR tenant_id = $2)", &p, &res, "job", err);
	if (rc == UNIAP_OK && PQntuples(res) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "job %lld: not found", (long long)id);
	if (rc == UNIAP_OK) {
		job_from_row(res, 0, &j);
		rc = col_dup(res, 0, JOB_NCOLS, &j.request, &j.request_bytes, err);
	}
	if (rc == UNIAP_OK)
		rc = col_dup(res, 0, JOB_NCOLS + 1, &j.result, &j.result_bytes, err);
	if (rc == UNIAP_OK)
		rc = col_dup(res, 0, JOB_NCOLS + 2, &j.error, NULL, err);
	PQclear(res);
	if (rc != UNIAP_OK)
		store_job_release(&j);
	else
		*out = j;
	return rc;
}

static uniap_code pg_job_list(struct store *base, int64_t tenant_id, const enum store_job_state *state,
			      int64_t cursor, size_t limit, struct store_job **out, size_t *n, int64_t *next,
			      struct uniap_err *err)
{
	static const char *const sql_all = "SELECT " JOB_COLS " FROM jobs WHERE tenant_id = $1"
					   " AND id > $2 ORDER BY id LIMIT $3";
	static const char *const sql_state = "SELECT " JOB_COLS " FROM jobs WHERE tenant_id = $1"
					     " AND id > $2 AND state = $4 ORDER BY id LIMIT $3";
	struct pg_params p = { 0 };
	void *arr = NULL;
	uniap_code rc = page_args(cursor, &limit, err);

	if (rc != UNIAP_OK)
		return rc;
	if (state && ((int)*state < 0 || *state >= STORE_JOB_STATE_COUNT))
		return err_set(err, UNIAP_E_ARG, "state: unknown job state %d", (int)*state);
	p_i64(&p, tenant_id);
	p_i64(&p, cursor);
	p_i64(&p, (int64_t)limit + 1);
	if (state)
		p_text(&p, store_job_state_name(*state));
	rc = page_read(pg_of(base), state ? sql_state : sql_all, &p, sizeof(**out), limit, job_from_row_any,
		       "list jobs", &arr, n, next, err);
	if (rc == UNIAP_OK)
		*out = arr;
	return rc;
}

/* A job's row as a write that names it sees it, locked FOR UPDATE for the rest of its transaction. */
struct job_row {
	int found;
	int64_t tenant_id;
	enum store_job_state state;
	int has_owner;
	char owner[2 * STORE_OWNER_CHARS + 1];   /* room to tell a longer stored owner from ours */
	int64_t token;
	enum store_job_ask ask;
};

static uniap_code job_lock(struct pg_call *k, int64_t id, struct job_row *jr, struct uniap_err *err)
{
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	uniap_code rc;

	memset(jr, 0, sizeof(*jr));
	p_i64(&p, id);
	rc = q_run(k, "SELECT tenant_id, state, lease_owner, lease_token, ask FROM jobs WHERE id = $1 FOR UPDATE",
		   &p, &res, "job", err);
	if (rc == UNIAP_OK && PQntuples(res) > 0 && store_job_state_parse(col_str(res, 0, 1), &jr->state) == 0) {
		jr->found = 1;
		jr->tenant_id = col_i64(res, 0, 0);
		jr->has_owner = !col_null(res, 0, 2);
		col_text(res, 0, 2, jr->owner, sizeof(jr->owner));
		jr->token = col_i64(res, 0, 3);
		jr->ask = store_job_ask_parse(col_str(res, 0, 4));
	}
	PQclear(res);
	return rc;
}

/* UNIAP_OK when lease is NULL or the locked job runs under exactly lease's owner and token;
 * UNIAP_E_CONFLICT otherwise (the runner that holds lease must stop working on the job). */
static uniap_code lease_check(const struct job_row *jr, int64_t id, const struct store_lease *lease,
			      struct uniap_err *err)
{
	if (!lease)
		return UNIAP_OK;
	if (!jr->found)
		return err_set(err, UNIAP_E_CONFLICT, "job %lld: lost its lease: the job is gone", (long long)id);
	if (jr->state != STORE_JOB_RUNNING || !jr->has_owner || strcmp(jr->owner, lease->owner) != 0 ||
	    jr->token != lease->token)
		return err_set(err, UNIAP_E_CONFLICT, "job %lld: lost its lease (token %lld): the job is %s"
			       " under token %lld", (long long)id, (long long)lease->token,
			       store_job_state_name(jr->state), (long long)jr->token);
	return UNIAP_OK;
}

/* The locked job as tenant_id sees it (STORE_ANY_TENANT: any); UNIAP_E_NOTFOUND when it does not. */
static uniap_code job_scoped(const struct job_row *jr, int64_t tenant_id, int64_t id, struct uniap_err *err)
{
	if (!jr->found || (tenant_id != STORE_ANY_TENANT && jr->tenant_id != tenant_id))
		return err_set(err, UNIAP_E_NOTFOUND, "job %lld: not found", (long long)id);
	return UNIAP_OK;
}

struct transition_arg {
	int64_t tenant_id, id;
	enum store_job_state to;
	const void *result;
	size_t result_bytes;
	const char *error_msg;
	const struct store_lease *lease;
};

/*
 * Job id no longer runs (k holds its row for update: the same order as a unit
 * claim, jobs row then units): its share goes, so that no helper joins or
 * claims in it, and with units (a final state) its units too.  A requeued
 * job keeps its units, whose facts its next run takes.
 */
static uniap_code job_shares_drop(struct pg_call *k, int64_t id, int units, struct uniap_err *err)
{
	struct pg_params p = { 0 };
	uniap_code rc;

	p_i64(&p, id);
	rc = q_write(k, "DELETE FROM job_shares WHERE job_id = $1", &p, NULL, "drop a job's share", err);
	if (rc == UNIAP_OK && units)
		rc = q_write(k, "DELETE FROM job_units WHERE job_id = $1", &p, NULL, "drop a job's units", err);
	return rc;
}

static uniap_code job_transition_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct transition_arg *a = arg;
	struct pg_params p = { 0 };
	struct job_row jr;
	int64_t now = store_now_ms();
	uniap_code rc = job_lock(k, a->id, &jr, err);

	if (rc == UNIAP_OK)
		rc = lease_check(&jr, a->id, a->lease, err);
	if (rc == UNIAP_OK)
		rc = job_scoped(&jr, a->tenant_id, a->id, err);
	if (rc != UNIAP_OK)
		return rc;
	if (!store_job_transition_legal(jr.state, a->to))
		return err_set(err, UNIAP_E_INVALID, "job %lld: state: cannot go from %s to %s", (long long)a->id,
			       store_job_state_name(jr.state), store_job_state_name(a->to));
	p_text(&p, store_job_state_name(a->to));
	if (a->to == STORE_JOB_RUNNING) {
		p_i64(&p, now);
		p_null(&p, OID_INT8);
	} else {
		p_null(&p, OID_INT8);
		p_i64(&p, now);
	}
	if (a->to == STORE_JOB_SUCCEEDED && a->result)
		p_bytes(&p, a->result, a->result_bytes);
	else
		p_null(&p, OID_BYTEA);
	p_text(&p, (a->to == STORE_JOB_FAILED || a->to == STORE_JOB_CANCELED) ? a->error_msg : NULL);
	p_i64(&p, a->id);
	rc = q_write(k, "UPDATE jobs SET state = $1, started_at = coalesce($2, started_at),"
		     " finished_at = $3, result = coalesce($4, result), error = coalesce($5, error),"
		     " lease_owner = CASE WHEN $1 = 'running' THEN lease_owner END,"
		     " lease_expires_at = CASE WHEN $1 = 'running' THEN lease_expires_at END"
		     " WHERE id = $6", &p, NULL, "job state", err);
	if (rc == UNIAP_OK && a->to != STORE_JOB_RUNNING)
		rc = job_shares_drop(k, a->id, 1, err);
	return rc;
}

static uniap_code pg_job_transition(struct store *base, int64_t tenant_id, int64_t id, enum store_job_state to,
				    const void *result, size_t result_bytes, const char *error_msg,
				    const struct store_lease *lease, struct uniap_err *err)
{
	struct transition_arg a = { tenant_id, id, to, result, result_bytes, error_msg, lease };

	if ((int)to < 0 || to >= STORE_JOB_STATE_COUNT)
		return err_set(err, UNIAP_E_ARG, "state: unknown job state %d", (int)to);
	if (result_bytes > (size_t)INT32_MAX)
		return err_set(err, UNIAP_E_LIMIT, "job result: %zu bytes is too large", result_bytes);
	return pg_write(pg_of(base), job_transition_tx, &a, err);
}

struct progress_arg {
	int64_t id, done, total;
	const double *best_tpi_s, *bound_s;
	const struct store_lease *lease;
};

static uniap_code job_progress_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct progress_arg *a = arg;
	struct pg_params p = { 0 };
	struct job_row jr;
	uniap_code rc = job_lock(k, a->id, &jr, err);

	if (rc == UNIAP_OK)
		rc = lease_check(&jr, a->id, a->lease, err);
	if (rc == UNIAP_OK)
		rc = job_scoped(&jr, STORE_ANY_TENANT, a->id, err);
	if (rc != UNIAP_OK)
		return rc;
	if (jr.state != STORE_JOB_RUNNING)
		return err_set(err, UNIAP_E_INVALID, "job %lld: progress: only while running, state is %s",
			       (long long)a->id, store_job_state_name(jr.state));
	p_i64(&p, a->done);
	p_i64(&p, a->total);
	if (a->best_tpi_s)
		p_f64(&p, *a->best_tpi_s);
	else
		p_null(&p, OID_FLOAT8);
	p_i64(&p, a->id);
	if (a->bound_s)
		p_f64(&p, *a->bound_s);
	else
		p_null(&p, OID_FLOAT8);
	return q_write(k, "UPDATE jobs SET progress_done = $1, progress_total = $2,"
		       " best_tpi_s = coalesce($3, best_tpi_s), bound_s = $5 WHERE id = $4", &p, NULL,
		       "job progress", err);
}

static uniap_code pg_job_progress(struct store *base, int64_t id, int64_t done, int64_t total,
				  const double *best_tpi_s, const double *bound_s, const struct store_lease *lease,
				  struct uniap_err *err)
{
	struct progress_arg a = { id, done, total, best_tpi_s, bound_s, lease };

	if (done < 0 || total < done)
		return err_set(err, UNIAP_E_ARG, "progress: must be 0 <= done <= total, got %lld/%lld",
			       (long long)done, (long long)total);
	if (bound_s && !(*bound_s >= 0))
		return err_set(err, UNIAP_E_ARG, "progress: bound_s: must be >= 0, got %g", *bound_s);
	return pg_write(pg_of(base), job_progress_tx, &a, err);
}

struct claim_arg {
	const char *owner;
	int64_t lease_ms;
	int idle_only;
	int64_t id, token;          /* out */
	int raced;                  /* out: an idle-only claim met another claim of the same tenant */
};

/*
 * One statement: the fair order of sq_job_claim (the tenant with the fewest
 * running jobs, ties to the one served least recently, never served first,
 * then the oldest job; ordering every queued job so gives the same first
 * one as ordering each tenant's oldest), the first job no other claim holds
 * (FOR UPDATE SKIP LOCKED: two replicas never take the same job nor wait on
 * each other), marked running under the lease, and its tenant marked served.
 * Claims that picked the same tenant at once meet at its row (the served
 * update): an idle-only one that finds, after that, another job of the
 * tenant running has lost the race and runs again (pg_write), so it takes
 * only a tenant with nothing running, as with SQLite's one writer.  Plain
 * claims keep what they took: at worst one tenant got two jobs where the
 * order of one writer would have given the second to the next tenant.
 */
static uniap_code job_claim_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct claim_arg *a = arg;
	struct pg_params p = { 0 }, others = { 0 };
	PGresult *res = NULL;
	int64_t now = store_now_ms(), running = 0;
	uniap_code rc;

	a->id = a->token = 0;
	a->raced = 0;
	p_i64(&p, now);
	p_text(&p, a->owner);
	p_i64(&p, a->lease_ms);
	p_i64(&p, a->idle_only);
	rc = q_run(k, "WITH pick AS (SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
		   " LEFT JOIN (SELECT tenant_id, count(*) AS n FROM jobs WHERE state = 'running'"
		   " GROUP BY tenant_id) r ON r.tenant_id = j.tenant_id"
		   " WHERE j.state = 'queued' AND ($4 = 0 OR r.n IS NULL)"
		   " ORDER BY coalesce(r.n, 0), coalesce(t.last_served_seq, 0), j.id"
		   " LIMIT 1 FOR UPDATE OF j SKIP LOCKED),"
		   " claimed AS (UPDATE jobs SET state = 'running', started_at = $1, lease_owner = $2,"
		   " lease_expires_at = " PG_NOW_MS " + $3, lease_token = lease_token + 1 FROM pick"
		   " WHERE jobs.id = pick.id AND jobs.state = 'queued' RETURNING jobs.id, jobs.tenant_id, jobs.lease_token),"
		   " served AS (UPDATE tenants SET last_served_seq = nextval('tenant_served_seq') FROM claimed"
		   " WHERE tenants.id = claimed.tenant_id)"
		   " SELECT id, lease_token, tenant_id FROM claimed", &p, &res, "claim job", err);
	if (rc == UNIAP_OK && PQntuples(res) > 0) {
		a->id = col_i64(res, 0, 0);
		a->token = col_i64(res, 0, 1);
		p_i64(&others, col_i64(res, 0, 2));
		p_i64(&others, a->id);
	}
	PQclear(res);
	if (rc == UNIAP_OK && a->id && a->idle_only)
		rc = q_i64(k, "SELECT count(*) FROM jobs WHERE tenant_id = $1 AND state = 'running' AND id <> $2",
			   &others, &running, "claim job", err);
	if (rc == UNIAP_OK && running > 0) {
		a->raced = 1;
		k->retry = 1;
		rc = err_set(err, UNIAP_E_CONFLICT, "claim: another claim took the tenant's first job");
	}
	return rc;
}

static uniap_code pg_job_claim(struct store *base, const char *owner, int64_t lease_ms, int idle_only,
			       int64_t *id, struct store_lease *lease, struct uniap_err *err)
{
	struct claim_arg a = { owner, lease_ms, idle_only != 0, 0, 0, 0 };
	uniap_code rc;

	if (!owner || strlen(owner) != STORE_OWNER_CHARS)
		return err_set(err, UNIAP_E_ARG, "claim: owner: must be %d hex digits", STORE_OWNER_CHARS);
	if (lease_ms < 0)
		return err_set(err, UNIAP_E_ARG, "claim: lease_ms: must be >= 0, got %lld", (long long)lease_ms);
	rc = pg_write(pg_of(base), job_claim_tx, &a, err);
	if (rc == UNIAP_E_CONFLICT && a.raced) {
		/* lost every race (claims of one tenant all at once): none for this thread now */
		rc = UNIAP_OK;
		a.id = 0;
	}
	if (rc == UNIAP_OK) {
		*id = a.id;
		if (lease && a.id) {
			memcpy(lease->owner, owner, STORE_OWNER_CHARS + 1);
			lease->token = a.token;
		}
	}
	return rc;
}

struct renew_arg {
	int64_t id, lease_ms;
	const struct store_lease *lease;
	enum store_job_ask asked;   /* out */
};

static uniap_code job_renew_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct renew_arg *a = arg;
	struct pg_params p = { 0 };
	struct job_row jr;
	uniap_code rc = job_lock(k, a->id, &jr, err);

	a->asked = STORE_ASK_NONE;
	if (rc == UNIAP_OK)
		rc = lease_check(&jr, a->id, a->lease, err);
	if (rc != UNIAP_OK)
		return rc;
	p_i64(&p, a->lease_ms);
	p_i64(&p, a->id);
	rc = q_write(k, "UPDATE jobs SET lease_expires_at = " PG_NOW_MS " + $1 WHERE id = $2", &p, NULL,
		     "renew job lease", err);
	if (rc == UNIAP_OK)
		a->asked = jr.ask;
	return rc;
}

static uniap_code pg_job_renew(struct store *base, int64_t id, const struct store_lease *lease, int64_t lease_ms,
			       enum store_job_ask *asked, struct uniap_err *err)
{
	struct renew_arg a = { id, lease_ms, lease, STORE_ASK_NONE };
	uniap_code rc;

	if (!lease || lease_ms < 0)
		return err_set(err, UNIAP_E_ARG, "renew: needs a lease and lease_ms >= 0");
	rc = pg_write(pg_of(base), job_renew_tx, &a, err);
	if (rc == UNIAP_OK && asked)
		*asked = a.asked;
	return rc;
}

struct ask_arg {
	int64_t tenant_id, id;
	enum store_job_ask ask;
};

static uniap_code job_ask_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct ask_arg *a = arg;
	struct pg_params p = { 0 };
	struct job_row jr;
	enum store_job_ask now_asked;
	char payload[64];
	uniap_code rc = job_lock(k, a->id, &jr, err);

	if (rc == UNIAP_OK)
		rc = job_scoped(&jr, a->tenant_id, a->id, err);
	if (rc == UNIAP_OK && jr.state != STORE_JOB_RUNNING)
		rc = err_set(err, UNIAP_E_CONFLICT, "job %lld: %s, not running", (long long)a->id,
			     store_job_state_name(jr.state));
	if (rc != UNIAP_OK)
		return rc;
	/* a cancel stays a cancel: a later stop does not soften it (nor does the event say stop) */
	now_asked = jr.ask == STORE_ASK_CANCEL ? STORE_ASK_CANCEL : a->ask;
	if (now_asked != jr.ask) {
		p_i64(&p, a->id);
		p_text(&p, store_job_ask_name(now_asked));
		rc = q_write(k, "UPDATE jobs SET ask = $2 WHERE id = $1", &p, NULL, "ask job", err);
	}
	snprintf(payload, sizeof(payload), "%s %lld", store_job_ask_name(now_asked), (long long)a->id);
	if (rc == UNIAP_OK)
		rc = notify(k, payload, err);
	return rc;
}

static uniap_code pg_job_ask(struct store *base, int64_t tenant_id, int64_t id, enum store_job_ask ask,
			     struct uniap_err *err)
{
	struct ask_arg a = { tenant_id, id, ask };

	return pg_write(pg_of(base), job_ask_tx, &a, err);
}

struct recover_arg {
	int64_t requeued;           /* out */
};

static uniap_code jobs_recover_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct recover_arg *a = arg;
	struct pg_params p = { 0 }, q = { 0 };
	uniap_code rc;

	a->requeued = 0;
	/* a job its client asked to cancel ends canceled rather than run again */
	p_i64(&p, store_now_ms());
	p_text(&p, STORE_CANCELED_MSG);
	rc = q_write(k, "UPDATE jobs SET state = 'canceled', finished_at = $1, error = $2,"
		     " lease_owner = NULL, lease_expires_at = NULL WHERE state = 'running' AND ask = 'cancel'"
		     " AND (lease_expires_at IS NULL OR lease_expires_at <= " PG_NOW_MS ")", &p, NULL, "recover canceled jobs",
		     err);
	if (rc != UNIAP_OK)
		return rc;
	/* the token stays: the next claim makes it larger than any old owner's */
	rc = q_write(k, "UPDATE jobs SET state = 'queued', started_at = NULL,"
		     " progress_done = 0, progress_total = 0, best_tpi_s = NULL, bound_s = NULL,"
		     " lease_owner = NULL, lease_expires_at = NULL, ask = NULL"
		     " WHERE state = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= " PG_NOW_MS ")", &q,
		     &a->requeued, "recover jobs", err);
	/* the shares of jobs that no longer run (requeued here or canceled) go, and the units of
	 * those that ended; a requeued job keeps its units for its next run */
	if (rc == UNIAP_OK)
		rc = q_write(k, "DELETE FROM job_shares s USING jobs j WHERE j.id = s.job_id AND j.state <> 'running'",
			     NULL, NULL, "recover jobs' shares", err);
	if (rc == UNIAP_OK)
		rc = q_write(k, "DELETE FROM job_units u USING jobs j WHERE j.id = u.job_id"
			     " AND j.state IN ('succeeded', 'failed', 'canceled')", NULL, NULL, "recover jobs' units", err);
	if (rc == UNIAP_OK && a->requeued > 0)
		rc = notify(k, "queued", err);
	return rc;
}

static uniap_code pg_jobs_recover(struct store *base, size_t *requeued, struct uniap_err *err)
{
	struct recover_arg a = { 0 };
	uniap_code rc = pg_write(pg_of(base), jobs_recover_tx, &a, err);

	if (rc == UNIAP_OK)
		*requeued = (size_t)a.requeued;
	return rc;
}

static uniap_code pg_jobs_purge(struct store *base, int64_t age_ms, size_t max, size_t *purged,
				struct uniap_err *err)
{
	/* finished_at is set exactly when a job reaches a final state (index jobs_finished); a
	 * row another replica's purge holds is left to it */
	struct one_arg a = { .sql = "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs"
				    " WHERE finished_at IS NOT NULL AND finished_at < $1"
				    " AND state IN ('succeeded', 'failed', 'canceled')"
				    " ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
			     .what = "purge jobs" };
	uniap_code rc;

	p_i64(&a.p, store_now_ms() - age_ms);
	p_i64(&a.p, (int64_t)(max ? max : 1));
	rc = pg_write(pg_of(base), one_tx, &a, err);
	if (purged)
		*purged = rc == UNIAP_OK ? (size_t)a.changes : 0;
	return rc;
}

struct requeue_arg {
	int64_t id;
	const struct store_lease *lease;
};

static uniap_code job_requeue_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct requeue_arg *a = arg;
	struct pg_params p = { 0 };
	struct job_row jr;
	int64_t changed = 0;
	uniap_code rc = UNIAP_OK;

	if (a->lease) {
		rc = job_lock(k, a->id, &jr, err);
		if (rc == UNIAP_OK)
			rc = lease_check(&jr, a->id, a->lease, err);
	}
	p_i64(&p, a->id);
	if (rc == UNIAP_OK)
		rc = q_write(k, "UPDATE jobs SET state = 'queued', started_at = NULL,"
			     " progress_done = 0, progress_total = 0, best_tpi_s = NULL, bound_s = NULL,"
			     " lease_owner = NULL, lease_expires_at = NULL, ask = NULL"
			     " WHERE id = $1 AND state = 'running'", &p, &changed, "requeue job", err);
	if (rc == UNIAP_OK && !changed)
		rc = err_set(err, UNIAP_E_CONFLICT, "job %lld: not running", (long long)a->id);
	if (rc == UNIAP_OK)
		rc = job_shares_drop(k, a->id, 0, err);
	if (rc == UNIAP_OK)
		rc = notify(k, "queued", err);
	return rc;
}

static uniap_code pg_job_requeue(struct store *base, int64_t id, const struct store_lease *lease,
				 struct uniap_err *err)
{
	struct requeue_arg a = { id, lease };

	return pg_write(pg_of(base), job_requeue_tx, &a, err);
}

static uniap_code pg_job_counts(struct store *base, int64_t counts[STORE_JOB_STATE_COUNT], struct uniap_err *err)
{
	PGresult *res = NULL;
	uniap_code rc = pg_query(pg_of(base), "SELECT state, count(*) FROM jobs GROUP BY state", NULL, &res,
				 "count jobs", err);

	memset(counts, 0, STORE_JOB_STATE_COUNT * sizeof(counts[0]));
	for (int i = 0; rc == UNIAP_OK && i < PQntuples(res); i++) {
		enum store_job_state st;

		if (store_job_state_parse(col_str(res, i, 0), &st) == 0)
			counts[st] = col_i64(res, i, 1);
	}
	PQclear(res);
	return rc;
}

/* ---- cost cache ---- */

/* A hit counts and becomes the most recently used, in one statement (a miss writes nothing). */
static uniap_code pg_cache_get(struct store *base, const unsigned char key[STORE_SHA256_BYTES], char **body,
			       size_t *bytes, struct uniap_err *err)
{
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	char *copy = NULL;
	size_t n = 0;
	uniap_code rc;

	p_i64(&p, store_now_ms());
	p_bytes(&p, key, STORE_SHA256_BYTES);
	rc = pg_query(pg_of(base), "UPDATE cost_cache SET hits = hits + 1, last_used_at = $1,"
		      " last_used_seq = nextval('cost_cache_seq') WHERE key = $2 RETURNING body", &p, &res,
		      "cache get", err);
	if (rc == UNIAP_OK && PQntuples(res) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "cost cache: no entry");
	if (rc == UNIAP_OK)
		rc = col_dup(res, 0, 0, &copy, &n, err);
	PQclear(res);
	if (rc != UNIAP_OK)
		return rc;
	*body = copy;
	*bytes = n;
	return UNIAP_OK;
}

struct cache_put_arg {
	const unsigned char *key;
	const void *body;
	size_t bytes;
	int64_t max_bytes;
};

/*
 * Under PG_LOCK_CACHE (the puts of every replica one at a time, so the total
 * is exact): upsert as the most recent entry, then evict the least recently
 * used until the rest fits, in one statement: the entries kept are the most
 * recent ones whose running total stays within the cap, exactly those
 * sq_cache_put's loop keeps.  The new entry fits by itself and is the most
 * recent, so it stays.  The cache is a cache: its commit does not wait for
 * the flush (a crash may lose the last entries, never corrupt them).
 */
static uniap_code cache_put_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct cache_put_arg *a = arg;
	struct pg_params lock = { 0 }, p = { 0 }, cap = { 0 };
	uniap_code rc;

	p_i64(&lock, PG_LOCK_CACHE);
	rc = q_write(k, "SET LOCAL synchronous_commit TO off", NULL, NULL, "cache put", err);
	if (rc == UNIAP_OK)
		rc = q_write(k, "SELECT pg_advisory_xact_lock($1)", &lock, NULL, "cache lock", err);
	if (rc != UNIAP_OK)
		return rc;
	p_bytes(&p, a->key, STORE_SHA256_BYTES);
	p_i64(&p, (int64_t)a->bytes);
	p_i64(&p, store_now_ms());
	p_bytes(&p, a->body, a->bytes);
	rc = q_write(k, "INSERT INTO cost_cache (key, bytes, created_at, last_used_at, last_used_seq, body)"
		     " VALUES ($1, $2, $3, $3, nextval('cost_cache_seq'), $4)"
		     " ON CONFLICT (key) DO UPDATE SET bytes = excluded.bytes, last_used_at = excluded.last_used_at,"
		     " last_used_seq = excluded.last_used_seq, body = excluded.body", &p, NULL, "cache put", err);
	if (rc != UNIAP_OK)
		return rc;
	p_i64(&cap, a->max_bytes);
	return q_write(k, "DELETE FROM cost_cache WHERE key IN (SELECT key FROM (SELECT key, sum(bytes) OVER"
		       " (ORDER BY last_used_seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto"
		       " FROM cost_cache) w WHERE upto > $1)", &cap, NULL, "cache evict", err);
}

static uniap_code pg_cache_put(struct store *base, const unsigned char key[STORE_SHA256_BYTES], const void *body,
			       size_t bytes, struct uniap_err *err)
{
	struct store_pg *s = pg_of(base);
	struct cache_put_arg a = { key, body, bytes, s->cache_max_bytes };

	if ((int64_t)bytes > s->cache_max_bytes || bytes > (size_t)INT32_MAX)
		return err_set(err, UNIAP_E_LIMIT, "cost cache: an entry of %zu bytes exceeds"
			       " cache_max_bytes %lld", bytes, (long long)s->cache_max_bytes);
	return pg_write(s, cache_put_tx, &a, err);
}

static uniap_code pg_cache_stats(struct store *base, int64_t *entries, int64_t *bytes, struct uniap_err *err)
{
	PGresult *res = NULL;
	uniap_code rc = pg_query(pg_of(base), "SELECT count(*), coalesce(sum(bytes), 0)::bigint FROM cost_cache",
				 NULL, &res, "cache stats", err);

	if (rc == UNIAP_OK) {
		*entries = col_i64(res, 0, 0);
		*bytes = col_i64(res, 0, 1);
	}
	PQclear(res);
	return rc;
}

/* ---- the listener: LISTEN uniap_jobs on a connection of its own ---- */

/* Waits up to ms for close's byte on the wake pipe or, when fd >= 0, for fd to be ready for
 * events (*ready, may be NULL, says so); 1 when the listener must stop. */
static int listen_wait(struct store_pg *s, int fd, short events, int ms, int *ready)
{
	struct pollfd pfd[2] = { { .fd = s->wake[0], .events = POLLIN }, { .fd = fd, .events = events } };

	if (ready)
		*ready = 0;
	if (atomic_load(&s->stop))
		return 1;
	if (poll(pfd, fd >= 0 ? 2 : 1, ms) < 0) {
		if (errno != EINTR)
			usleep(10000); /* poll itself failed: do not spin */
		return atomic_load(&s->stop);
	}
	if (ready)
		*ready = fd >= 0 && pfd[1].revents != 0; /* POLLERR and POLLHUP too: the read says what */
	return atomic_load(&s->stop) || (pfd[0].revents & POLLIN);
}

/*
 * A connection that listens on PG_CHANNEL (owned: PQfinish), or NULL.  The
 * connect is libpq's asynchronous one, so close never waits for it longer
 * than the wake pipe takes; it gives up after PG_CONNECT_TIMEOUT_S.
 */
static PGconn *listen_connect(struct store_pg *s)
{
	const char *keys[PG_CONN_KEYS], *vals[PG_CONN_KEYS];
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	int64_t until = mono_ms() + PG_CONNECT_TIMEOUT_S * 1000;
	PGconn *c;
	PGresult *res;

	conn_params(s, keys, vals);
	c = PQconnectStartParams(keys, vals, 1);
	if (!c)
		return NULL;
	while (PQstatus(c) != CONNECTION_BAD && st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
		int ready = 0;

		if (mono_ms() >= until ||
		    listen_wait(s, PQsocket(c), st == PGRES_POLLING_READING ? POLLIN : POLLOUT, 250, &ready))
			break;
		if (ready)
			st = PQconnectPoll(c);
	}
	if (st != PGRES_POLLING_OK || PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, notice_ignore, NULL);
	res = PQexec(c, "LISTEN " PG_CHANNEL);
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
		PQclear(res);
		PQfinish(c);
		return NULL;
	}
	PQclear(res);
	return c;
}

/* "queued", "cancel <id>", "stop <id>" to fn; anything else is not ours and is dropped. */
static void listen_deliver(struct store_pg *s, const char *payload)
{
	static const struct { const char *word; enum store_event ev; } kinds[] = {
		{ "cancel ", STORE_EVENT_CANCEL }, { "stop ", STORE_EVENT_STOP },
	};

	if (strcmp(payload, "queued") == 0) {
		s->fn(s->ctx, STORE_EVENT_QUEUED, 0);
		return;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i].word);
		char *end;
		long long id;

		if (strncmp(payload, kinds[i].word, n) != 0)
			continue;
		errno = 0;
		id = strtoll(payload + n, &end, 10);
		if (errno == 0 && end != payload + n && *end == '\0' && id > 0)
			s->fn(s->ctx, kinds[i].ev, (int64_t)id);
		return;
	}
}

static void listen_drain(struct store_pg *s, PGconn *c)
{
	PGnotify *n;

	while ((n = PQnotifies(c)) != NULL) {
		if (strcmp(n->relname, PG_CHANNEL) == 0 && n->extra)
			listen_deliver(s, n->extra);
		PQfreemem(n);
	}
}

/*
 * The listener thread: waits on its connection's socket and the wake pipe,
 * hands each notification to fn; a connection that drops is made again every
 * PG_RECONNECT_MS, and once it listens again fn hears
 * STORE_EVENT_RECONNECTED (what came meanwhile was missed).
 */
static void *listen_main(void *arg)
{
	struct store_pg *s = arg;
	PGconn *c = s->listen_conn;

	s->listen_conn = NULL;
	if (c)
		listen_drain(s, c); /* what came with the LISTEN's answer */
	while (!atomic_load(&s->stop)) {
		int ready = 0;

		if (!c || PQstatus(c) != CONNECTION_OK) {
			PQfinish(c);
			c = listen_connect(s);
			if (!c) {
				if (listen_wait(s, -1, 0, PG_RECONNECT_MS, NULL))
					break;
				continue;
			}
			s->fn(s->ctx, STORE_EVENT_RECONNECTED, 0);
			listen_drain(s, c);
			continue;
		}
		if (listen_wait(s, PQsocket(c), POLLIN, PG_LISTEN_POLL_MS, &ready))
			break;
		if (!ready)
			continue;
		if (!PQconsumeInput(c) || PQstatus(c) != CONNECTION_OK) {
			PQfinish(c);
			c = NULL;
			continue;
		}
		listen_drain(s, c);
	}
	PQfinish(c);
	return NULL;
}

/*
 * Starts the listener.  Its first connection is made here, so events of
 * writes after this returns are not missed; a server that does not answer
 * now is no reason to fail: the thread connects when it can and says
 * STORE_EVENT_RECONNECTED then.
 */
static uniap_code pg_listen(struct store *base, store_event_fn fn, void *ctx, struct uniap_err *err)
{
	struct store_pg *s = pg_of(base);
	uniap_code rc = UNIAP_OK;
	int busy;

	pthread_mutex_lock(&s->mu);
	busy = s->listening;
	s->listening = 1;
	pthread_mutex_unlock(&s->mu);
	if (busy)
		return err_set(err, UNIAP_E_ARG, "listen: the store listens already");
	s->fn = fn;
	s->ctx = ctx;
	if (pipe(s->wake) != 0) {
		s->wake[0] = s->wake[1] = -1;
		rc = err_set(err, UNIAP_E_IO, "store: listen: pipe: %s", strerror(errno));
		goto out;
	}
	(void)fcntl(s->wake[0], F_SETFD, FD_CLOEXEC);
	(void)fcntl(s->wake[1], F_SETFD, FD_CLOEXEC);
	s->listen_conn = listen_connect(s);
	if (pthread_create(&s->listener, NULL, listen_main, s) != 0) {
		PQfinish(s->listen_conn);
		s->listen_conn = NULL;
		rc = err_set(err, UNIAP_E_INTERNAL, "store: listen: cannot start a thread");
	}
out:
	if (rc != UNIAP_OK) {
		if (s->wake[0] >= 0) {
			close(s->wake[0]);
			close(s->wake[1]);
		}
		s->wake[0] = s->wake[1] = -1;
		pthread_mutex_lock(&s->mu);
		s->listening = 0;
		pthread_mutex_unlock(&s->mu);
	}
	return rc;
}

/* Stops and joins the listener, if one runs (close; no call is in flight). */
static void listen_stop(struct store_pg *s)
{
	int running;

	pthread_mutex_lock(&s->mu);
	running = s->listening;
	s->listening = 0;
	pthread_mutex_unlock(&s->mu);
	if (!running)
		return;
	atomic_store(&s->stop, 1);
	if (write(s->wake[1], "x", 1) < 0) {
		/* the flag alone stops it within PG_LISTEN_POLL_MS */
	}
	pthread_join(s->listener, NULL);
	close(s->wake[0]);
	close(s->wake[1]);
}


/* ---- shared jobs: units and shares (store.h; migration postgres/0003) ---- */

struct unit_arg {
	int64_t job, c, lease_ms;
	int run, pp, vs;
	const char *owner, *build;
	const void *facts;         /* put: NULL gives the claim up */
	size_t bytes;
	double tpi_s;
	enum store_unit_state state; /* claim: out */
	char *out;                   /* claim: out, owned */
	size_t out_bytes;
	double incumbent;            /* claim: out */
	int taken_over;              /* claim: out: from another owner whose lease ran out */
};

static void unit_key(struct pg_params *p, const struct unit_arg *a)
{
	p_i64(p, a->job);
	p_i64(p, a->run);
	p_i64(p, a->pp);
	p_i64(p, a->vs);
	p_i64(p, a->c);
}

#define UNIT_WHERE "job_id = $1 AND run = $2 AND pp = $3 AND vs = $4 AND microbatches = $5"

/* "{k1,k2,...}" of keys[0..n): an array literal for "= ANY ($n::text::bigint[])"; owned (free) or NULL. */
static char *i64_array(const int64_t *keys, size_t n)
{
	size_t cap = 3 + 21 * n, len, i;
	char *list = malloc(cap);

	if (!list)
		return NULL;
	len = (size_t)snprintf(list, cap, "{");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(list + len, cap - len, "%s%lld", i ? "," : "", (long long)keys[i]);
	snprintf(list + len, cap - len, "}");
	return list;
}

static uniap_code unit_claim_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct unit_arg *a = arg;
	struct pg_params p = { 0 }, q = { 0 }, r = { 0 };
	PGresult *res = NULL;
	int64_t changed = 0;
	int found = 0, expired = 0, done = 0, free_row = 0, other_build = 0;
	uniap_code rc;

	free(a->out);
	a->out = NULL;
	a->out_bytes = 0;
	a->incumbent = INFINITY;
	a->state = STORE_UNIT_BUSY;
	a->taken_over = 0;
	/* the job runs with this run open to this build; the job's row locked shared, so its end
	 * (the transition locks it for update and deletes the units: job_shares_drop) comes after
	 * this claim and no claim after it.  Only that row: store_job_share locks the job, then
	 * the share */
	p_i64(&p, a->job);
	p_i64(&p, a->run);
	p_text(&p, a->build);
	rc = q_run(k, "SELECT 1 FROM jobs j JOIN job_shares s ON s.job_id = j.id WHERE j.id = $1 AND"
		   " j.state = 'running' AND s.run = $2 AND s.build = $3 FOR SHARE OF j", &p, &res, "claim unit", err);
	if (rc == UNIAP_OK && PQntuples(res) == 0)
		rc = err_set(err, UNIAP_E_CONFLICT, "job %lld: not running with run %d open to this build",
			     (long long)a->job, a->run);
	PQclear(res);
	if (rc != UNIAP_OK)
		return rc;
	unit_key(&q, a);
	p_text(&q, a->owner);
	p_text(&q, a->build);
	rc = q_run(k, "SELECT owner IS NULL OR owner = $6, lease_expires_at <= " PG_NOW_MS ", facts, build <> $7"
		   " FROM job_units WHERE " UNIT_WHERE " FOR UPDATE", &q, &res, "claim unit", err);
	if (rc == UNIAP_OK && PQntuples(res) > 0) {
		found = 1;
		free_row = col_i64(res, 0, 0) != 0;
		expired = col_i64(res, 0, 1) != 0;
		other_build = col_i64(res, 0, 3) != 0;
		done = !col_null(res, 0, 2) && !other_build;
		if (done)
			rc = col_dup(res, 0, 2, &a->out, &a->out_bytes, err);
	}
	PQclear(res);
	if (rc != UNIAP_OK)
		return rc;
	memset(&q, 0, sizeof(q));
	unit_key(&q, a);
	p_text(&q, a->owner);
	p_i64(&q, a->lease_ms);
	p_text(&q, a->build);
	if (!found) {
		rc = q_write(k, "INSERT INTO job_units (job_id, run, pp, vs, microbatches, owner, lease_expires_at, build)"
			     " VALUES ($1, $2, $3, $4, $5, $6, " PG_NOW_MS " + $7, $8)"
			     " ON CONFLICT (job_id, run, pp, vs, microbatches) DO NOTHING", &q, &changed, "claim unit", err);
		if (rc == UNIAP_OK && changed == 0) {
			k->retry = 1; /* another claim made the row first: look at it */
			return err_set(err, UNIAP_E_CONFLICT, "claim unit: raced");
		}
		if (rc == UNIAP_OK)
			a->state = STORE_UNIT_MINE;
	} else if (done) {
		a->state = STORE_UNIT_DONE;
	} else if (free_row || expired || other_build) {
		/* another build's unit starts afresh: its facts are not this build's to take */
		rc = q_write(k, "UPDATE job_units SET owner = $6, lease_expires_at = " PG_NOW_MS " + $7, build = $8,"
			     " facts = CASE WHEN build = $8 THEN facts END, tpi_s = CASE WHEN build = $8 THEN tpi_s END"
			     " WHERE " UNIT_WHERE, &q, NULL, "claim unit", err);
		if (rc == UNIAP_OK) {
			a->state = STORE_UNIT_MINE;
			a->taken_over = !free_row && !other_build;
		}
	}
	if (rc != UNIAP_OK)
		return rc;
	p_i64(&r, a->job);
	p_i64(&r, a->run);
	p_text(&r, a->build);
	rc = q_run(k, "SELECT min(tpi_s) FROM job_units WHERE job_id = $1 AND run = $2 AND build = $3"
		   " AND facts IS NOT NULL", &r, &res, "claim unit", err);
	if (rc == UNIAP_OK && !col_null(res, 0, 0))
		a->incumbent = col_f64(res, 0, 0);
	PQclear(res);
	return rc;
}

static uniap_code pg_unit_claim(struct store *base, int64_t job, int run, int pp, int vs, int64_t c,
				const char *owner, const char *build, int64_t lease_ms, enum store_unit_state *state,
				char **facts, size_t *facts_bytes, double *incumbent, int *taken_over,
				struct uniap_err *err)
{
	struct unit_arg a = { .job = job, .c = c, .lease_ms = lease_ms, .run = run, .pp = pp, .vs = vs,
			      .owner = owner, .build = build, .incumbent = INFINITY };
	uniap_code rc = pg_write(pg_of(base), unit_claim_tx, &a, err);

	if (rc != UNIAP_OK) {
		free(a.out);
		return rc;
	}
	*state = a.state;
	*facts = a.out;
	*facts_bytes = a.out_bytes;
	*incumbent = a.incumbent;
	*taken_over = a.taken_over;
	return UNIAP_OK;
}

static uniap_code unit_put_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct unit_arg *a = arg;
	struct pg_params p = { 0 };

	unit_key(&p, a);
	p_text(&p, a->build);
	if (!a->facts) {
		p_text(&p, a->owner);
		return q_write(k, "UPDATE job_units SET owner = NULL, lease_expires_at = NULL WHERE " UNIT_WHERE
			       " AND build = $6 AND owner = $7 AND facts IS NULL", &p, NULL, "give a unit up", err);
	}
	p_bytes(&p, a->facts, a->bytes);
	if (isfinite(a->tpi_s))
		p_f64(&p, a->tpi_s);
	else
		p_null(&p, OID_FLOAT8);
	/* the row is there (the claim made it) unless the job ended and took its units along */
	return q_write(k, "UPDATE job_units SET facts = $7, tpi_s = $8, owner = NULL, lease_expires_at = NULL"
		       " WHERE " UNIT_WHERE " AND build = $6 AND facts IS NULL", &p, NULL, "put a unit", err);
}

static uniap_code pg_unit_put(struct store *base, int64_t job, int run, int pp, int vs, int64_t c, const char *owner,
			      const char *build, const void *facts, size_t bytes, double tpi_s, struct uniap_err *err)
{
	struct unit_arg a = { .job = job, .c = c, .run = run, .pp = pp, .vs = vs, .owner = owner, .build = build,
			      .facts = facts, .bytes = bytes, .tpi_s = tpi_s };

	return pg_write(pg_of(base), unit_put_tx, &a, err);
}

struct units_renew_arg {
	const char *owner, *jobs;
	int64_t lease_ms;
};

static uniap_code units_renew_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct units_renew_arg *a = arg;
	struct pg_params p = { 0 };

	p_text(&p, a->owner);
	p_i64(&p, a->lease_ms);
	p_text(&p, a->jobs);
	return q_write(k, "UPDATE job_units SET lease_expires_at = " PG_NOW_MS " + $2 WHERE owner = $1"
		       " AND facts IS NULL AND job_id = ANY ($3::text::bigint[])", &p, NULL, "renew units", err);
}

static uniap_code pg_units_renew(struct store *base, const char *owner, const int64_t *jobs, size_t n_jobs,
				 int64_t lease_ms, struct uniap_err *err)
{
	struct units_renew_arg a = { owner, i64_array(jobs, n_jobs), lease_ms };
	uniap_code rc;

	if (!a.jobs)
		return err_set(err, UNIAP_E_NOMEM, "renew units: out of memory");
	rc = pg_write(pg_of(base), units_renew_tx, &a, err);
	free((char *)a.jobs);
	return rc;
}

struct share_arg {
	int64_t job;
	const struct store_lease *lease;
	int run;
	const char *build;
};

static uniap_code job_share_tx(struct pg_call *k, void *arg, struct uniap_err *err)
{
	struct share_arg *a = arg;
	struct pg_params p = { 0 };
	struct job_row jr;
	uniap_code rc = job_lock(k, a->job, &jr, err);

	if (rc == UNIAP_OK)
		rc = lease_check(&jr, a->job, a->lease, err);
	if (rc != UNIAP_OK)
		return rc;
	p_i64(&p, a->job);
	if (a->run < 0)
		return q_write(k, "DELETE FROM job_shares WHERE job_id = $1", &p, NULL, "close a job's share", err);
	p_i64(&p, a->run);
	p_text(&p, a->build);
	return q_write(k, "INSERT INTO job_shares (job_id, run, build, open_since)"
		       " VALUES ($1, $2, $3, " PG_NOW_MS ") ON CONFLICT (job_id) DO UPDATE"
		       " SET run = EXCLUDED.run, build = EXCLUDED.build, open_since = EXCLUDED.open_since",
		       &p, NULL, "open a job's share", err);
}

static uniap_code pg_job_share(struct store *base, int64_t job, const struct store_lease *lease, int run,
			       const char *build, struct uniap_err *err)
{
	struct share_arg a = { job, lease, run, build };

	return pg_write(pg_of(base), job_share_tx, &a, err);
}

static uniap_code pg_job_share_open(struct store *base, int64_t job, int run, const char *build, int *open,
				    struct uniap_err *err)
{
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	uniap_code rc;

	p_i64(&p, job);
	p_i64(&p, run);
	p_text(&p, build);
	rc = pg_query(pg_of(base), "SELECT 1 FROM job_shares s JOIN jobs j ON j.id = s.job_id WHERE s.job_id = $1"
		      " AND s.run = $2 AND s.build = $3 AND j.state = 'running'", &p, &res, "is a job's share open",
		      err);
	if (rc == UNIAP_OK)
		*open = PQntuples(res) > 0;
	PQclear(res);
	return rc;
}

static uniap_code pg_job_share_find(struct store *base, const char *owner, const char *build, int64_t min_age_ms,
				    const int64_t *skip, size_t n_skip, int64_t *job, int *run,
				    struct uniap_err *err)
{
	struct pg_params p = { 0 };
	PGresult *res = NULL;
	char *list = i64_array(skip, n_skip);
	uniap_code rc;

	*job = 0;
	*run = -1;
	if (!list)
		return err_set(err, UNIAP_E_NOMEM, "find a shared job: out of memory");
	p_text(&p, owner);
	p_text(&p, build);
	p_i64(&p, min_age_ms);
	p_text(&p, list);
	rc = pg_query(pg_of(base), "SELECT s.job_id, s.run::bigint FROM job_shares s JOIN jobs j ON j.id = s.job_id"
		      " WHERE j.state = 'running' AND j.kind = 'plan' AND j.lease_owner IS DISTINCT FROM $1"
		      " AND s.build = $2 AND s.open_since <= " PG_NOW_MS " - $3"
		      " AND NOT (s.job_id * 16 + s.run = ANY ($4::text::bigint[]))"
		      " ORDER BY (SELECT count(DISTINCT u.owner) FROM job_units u WHERE u.job_id = s.job_id"
		      " AND u.run = s.run AND u.owner IS NOT NULL), s.open_since, s.job_id LIMIT 1",
		      &p, &res, "find a shared job", err);
	if (rc == UNIAP_OK && PQntuples(res) > 0) {
		*job = col_i64(res, 0, 0);
		*run = (int)col_i64(res, 0, 1);
	}
	PQclear(res);
	free(list);
	return rc;
}

static const struct store_backend store_pg_backend = {
	.name = "postgres",
	.close = pg_close,
	.health = pg_health,
	.probe = pg_probe,
	.schema_version = pg_schema_version,
	.tenant_add = pg_tenant_add,
	.tenant_list = pg_tenant_list,
	.tenant_revoke = pg_tenant_revoke,
	.tenant_set_quota = pg_tenant_set_quota,
	.tenant_get = pg_tenant_get,
	.tenant_lookup = pg_tenant_lookup,
	.doc_put = pg_doc_put,
	.doc_get = pg_doc_get,
	.doc_list = pg_doc_list,
	.doc_delete = pg_doc_delete,
	.job_create = pg_job_create,
	.job_find_idem = pg_job_find_idem,
	.job_set_body_hash = pg_job_set_body_hash,
	.job_get = pg_job_get,
	.job_version = pg_job_version,
	.job_list = pg_job_list,
	.job_transition = pg_job_transition,
	.job_progress = pg_job_progress,
	.job_delete = pg_job_delete,
	.job_claim = pg_job_claim,
	.job_renew = pg_job_renew,
	.job_ask = pg_job_ask,
	.job_requeue = pg_job_requeue,
	.job_counts = pg_job_counts,
	.jobs_purge = pg_jobs_purge,
	.jobs_recover = pg_jobs_recover,
	.cache_get = pg_cache_get,
	.cache_put = pg_cache_put,
	.cache_stats = pg_cache_stats,
	.unit_claim = pg_unit_claim,
	.unit_put = pg_unit_put,
	.units_renew = pg_units_renew,
	.job_share = pg_job_share,
	.job_share_open = pg_job_share_open,
	.job_share_find = pg_job_share_find,
	.listen = pg_listen,
};
