/*
 * store_sqlite.c - the store's SQLite backend (store_backend.h, store.h,
 * docs/store.md): one database file, the embedded default.
 *
 * Lock order: s->mu guards only the pool's free list; it is never held while
 * SQLite runs.  A connection belongs to one thread between conn_get() and
 * conn_put(), so connections are opened SQLITE_OPEN_NOMUTEX.  Every write is
 * BEGIN IMMEDIATE ... COMMIT on that connection; a function that fails rolls
 * back before it gives the connection back, so no transaction outlives a call.
 *
 * Never: format a value into SQL (every value is bound), keep a plain key,
 * or read sqlite3_errmsg after another call on the same connection.
 */
#include "store_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <stdatomic.h>

#include <sqlite3.h>

#define DEFAULT_POOL 4
#define DEFAULT_CACHE_MAX_BYTES ((int64_t)256 << 20)

#define STORE_STMT_CACHE 48 /* statements kept per connection */

struct stmt_slot {
	const char *sql;    /* the literal's address: the key */
	sqlite3_stmt *st;
	int out;            /* handed out by prep_c, not yet given back */
};

struct store_sqlite {
	struct store base;          /* first: store.c hands this around */
	pthread_mutex_t mu;         /* guards free_conns and n_free */
	pthread_cond_t cv;          /* signalled when a connection is put back */
	sqlite3 *conns[STORE_POOL_MAX];
	sqlite3 *free_conns[STORE_POOL_MAX];
	int n_conns, n_free;
	pthread_mutex_t wmu;        /* this process's writers, one at a time (begin_write) */
	int wheld[STORE_POOL_MAX];  /* wheld[i]: conns[i] holds wmu; touched only by its holder */
	int wfreed[STORE_POOL_MAX]; /* wfreed[i]: its write deleted rows (or probed a disk with room again),
	                               so a full store may take new content again; touched by its holder */
	int64_t cache_max_bytes;
	int64_t max_queued_jobs;
	int64_t max_stored_jobs;
	int64_t max_db_bytes;       /* 0: none (PRAGMA max_page_count on every connection) */
	/* the health of writes (store_health): read by any thread, lock-free */
	atomic_llong write_since_ms;/* CLOCK_MONOTONIC ms at which this process's writer took wmu; 0 none */
	atomic_int write_failing;   /* the last write failed: no space, or an I/O error */
	atomic_int full;            /* a write found no space: new content is refused until one succeeds */
	char reserve_path[4096];    /* "<db>-reserve": STORE_RESERVE_BYTES given back when the disk fills */
	struct stmt_slot stmts[STORE_POOL_MAX][STORE_STMT_CACHE];
};

static const struct store_backend store_sqlite_backend;
static void sq_close(struct store *base);

static struct store_sqlite *sq_of(struct store *base)
{
	return (struct store_sqlite *)base; /* base is the first member */
}



/*
 * The primary SQLite code of the last failure on this thread's connection,
 * from db_fail until the connection goes back (conn_put's write_outcome):
 * the statement resets a failed call makes on its way out set the
 * connection's own code back to SQLITE_OK, so a COMMIT that found the disk
 * full would otherwise go unnoticed.  A connection is one thread's from
 * conn_get to conn_put, which clears it.
 */
static _Thread_local int sq_failed;

/* Copies db's message at once into err; maps SQLite's code to ours. */
static uniap_code db_fail(struct uniap_err *err, sqlite3 *db, const char *what)
{
	int rc = sqlite3_extended_errcode(db);
	uniap_code code;

	sq_failed = rc & 0xff;
	switch (rc & 0xff) {
	case SQLITE_NOMEM: code = UNIAP_E_NOMEM; break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED: code = UNIAP_E_TIMEOUT; break;
	case SQLITE_CONSTRAINT: code = UNIAP_E_INVALID; break;
	case SQLITE_FULL: code = UNIAP_E_NOSPACE; break;
	default: code = UNIAP_E_IO; break;
	}
	return err_set(err, code, "store: %s: %s%s", what, sqlite3_errmsg(db),
		       code == UNIAP_E_NOSPACE ? " (new content is refused until there is room; deletes still work)" : "");
}

static uniap_code prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, struct uniap_err *err)
{
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
		return db_fail(err, db, "prepare");
	return UNIAP_OK;
}

/*
 * Prepared statements are kept per connection (prep_c/unprep), keyed by the
 * address of their SQL text (every statement is a string literal): SQLite
 * parses and plans each one once per connection instead of once per call.
 * Only the thread holding the connection touches its row of the cache.
 */
static int conn_index(const struct store_sqlite *s, const sqlite3 *db);

static uniap_code prep_c(struct store_sqlite *s, sqlite3 *db, const char *sql, sqlite3_stmt **st,
			 struct uniap_err *err)
{
	int c = conn_index(s, db), i;
	struct stmt_slot *t;

	if (c < 0)
		return prep(db, sql, st, err);
	t = s->stmts[c];
	for (i = 0; i < STORE_STMT_CACHE && t[i].sql; i++)
		if (t[i].sql == sql && !t[i].out) {
			t[i].out = 1;
			*st = t[i].st;
			return UNIAP_OK;
		}
	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
		return db_fail(err, db, "prepare");
	if (i < STORE_STMT_CACHE) {
		t[i].sql = sql;
		t[i].st = *st;
		t[i].out = 1;
	}
	return UNIAP_OK;
}

/* Gives a statement of prep_c back (reset, bindings cleared); NULL is a no-op. */
static void unprep(struct store_sqlite *s, sqlite3 *db, sqlite3_stmt *st)
{
	int c = conn_index(s, db), i;

	if (!st)
		return;
	for (i = 0; c >= 0 && i < STORE_STMT_CACHE && s->stmts[c][i].sql; i++)
		if (s->stmts[c][i].st == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			s->stmts[c][i].out = 0;
			return;
		}
	sqlite3_finalize(st);
}

static uniap_code exec_sql(sqlite3 *db, const char *sql, const char *what, struct uniap_err *err)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(err, db, what);
	return UNIAP_OK;
}

static uniap_code begin(sqlite3 *db, struct uniap_err *err)
{
	return exec_sql(db, "BEGIN IMMEDIATE", "begin", err);
}

/*
 * Every write of this process goes through one mutex before BEGIN IMMEDIATE,
 * so writers queue on a condition variable instead of SQLite's busy handler
 * (which sleeps 1..100 ms between tries); other processes still meet the
 * busy timeout.  The mutex is held until conn_put() gives the connection back.
 */
static int conn_index(const struct store_sqlite *s, const sqlite3 *db)
{
	for (int i = 0; i < s->n_conns; i++)
		if (s->conns[i] == db)
			return i;
	return -1;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Waits for the writers before it, at most STORE_WRITE_WAIT_MS in all and
 * never once the write in progress has been held STORE_WRITE_STUCK_MS: a
 * write that does not complete (a frozen or failing disk) costs the other
 * callers UNIAP_E_BUSY after that, never their thread, and the request
 * thread's other connections (/healthz) wait no longer than that either.  A
 * queue of quick writes is waited out (the held time restarts with each).
 */
static uniap_code begin_write(struct store_sqlite *s, sqlite3 *db, struct uniap_err *err)
{
	int i = conn_index(s, db);

	if (i >= 0) {
		int64_t start = mono_ms();

		for (;;) {
			struct timespec until;
			int64_t since = atomic_load(&s->write_since_ms), now = mono_ms();

			/* the write in progress is stuck: refuse at once, so writers do not each hold
			 * a request thread for the whole wait */
			if (since != 0 && now - since >= STORE_WRITE_STUCK_MS)
				return err_set(err, UNIAP_E_BUSY,
				               "store: a write has not completed in %lld ms; retry later",
				               (long long)(now - since));
			if (now - start >= STORE_WRITE_WAIT_MS)
				return err_set(err, UNIAP_E_BUSY, "store: the writes before this one took over %d ms; "
				               "retry later", STORE_WRITE_WAIT_MS);
			/* a slice at a time, so that a holder that gets stuck meanwhile is noticed */
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 50 * 1000000L;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			if (pthread_mutex_timedlock(&s->wmu, &until) == 0)
				break;
		}
		s->wheld[i] = 1;
		atomic_store(&s->write_since_ms, mono_ms());
	}
	return begin(db, err);
}

/* The reserve file: STORE_RESERVE_BYTES allocated beside the database. 0 ok, -1 not (none left). */
static int reserve_make(struct store_sqlite *s)
{
	int fd, rc;

	if (!s->reserve_path[0])
		return 0;
	fd = open(s->reserve_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	rc = posix_fallocate(fd, 0, STORE_RESERVE_BYTES);
	close(fd);
	if (rc != 0) {
		unlink(s->reserve_path);
		return -1;
	}
	return 0;
}

/*
 * After a writer's last call on db: a failure for want of space gives the
 * reserve back to the disk (so that deletes can commit) and refuses new
 * content (store_health.full); an I/O error marks writes failing; a
 * committed write clears both (making the reserve again first).
 */
static void write_outcome(struct store_sqlite *s, sqlite3 *db)
{
	int ec = sq_failed ? sq_failed : sqlite3_extended_errcode(db) & 0xff;

	if (ec == SQLITE_FULL) {
		atomic_store(&s->write_failing, 1);
		if (!atomic_exchange(&s->full, 1) && s->reserve_path[0])
			unlink(s->reserve_path);
	} else if (ec == SQLITE_IOERR) {
		atomic_store(&s->write_failing, 1);
	} else if (sqlite3_get_autocommit(db) && ec == SQLITE_OK) {
		int i = conn_index(s, db);

		atomic_store(&s->write_failing, 0);
		/* full until a delete made room in the file, or the disk has the reserve's room again */
		if (atomic_load(&s->full) && i >= 0 && s->wfreed[i] && reserve_make(s) == 0)
			atomic_store(&s->full, 0);
	}
}

/* The holder of db deleted rows (or found room): write_outcome may clear full. */
static void mark_freed(struct store_sqlite *s, sqlite3 *db)
{
	int i = conn_index(s, db);

	if (i >= 0)
		s->wfreed[i] = 1;
}

/* New content (a document, a job, a cache entry) while the store is full: UNIAP_E_NOSPACE. */
static uniap_code refuse_when_full(struct store_sqlite *s, const char *what, struct uniap_err *err)
{
	if (!atomic_load(&s->full))
		return UNIAP_OK;
	return err_set(err, UNIAP_E_NOSPACE, "%s: the store is full (a write found no space); deletes still work", what);
}

static uniap_code commit(sqlite3 *db, struct uniap_err *err)
{
	return exec_sql(db, "COMMIT", "commit", err);
}

/* Steps a statement that returns no row. */
static uniap_code step_done(sqlite3 *db, sqlite3_stmt *st, const char *what, struct uniap_err *err)
{
	if (sqlite3_step(st) != SQLITE_DONE)
		return db_fail(err, db, what);
	return UNIAP_OK;
}

/* Steps once: UNIAP_OK with *row = 1 on a row, 0 at the end. */
static uniap_code step_row(sqlite3 *db, sqlite3_stmt *st, int *row, const char *what,
			   struct uniap_err *err)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW) {
		*row = 1;
		return UNIAP_OK;
	}
	*row = 0;
	if (rc == SQLITE_DONE)
		return UNIAP_OK;
	return db_fail(err, db, what);
}

/* Binds bytes (possibly 0) of data as a BLOB that is never NULL. */
static int bind_bytes(sqlite3_stmt *st, int i, const void *data, size_t bytes)
{
	if (bytes == 0 || !data)
		return sqlite3_bind_zeroblob(st, i, 0);
	return sqlite3_bind_blob64(st, i, data, bytes, SQLITE_TRANSIENT);
}

/* Owned NUL-terminated copy of column i (NULL column -> *out NULL). */
static uniap_code column_dup(sqlite3_stmt *st, int i, char **out, size_t *bytes,
			     struct uniap_err *err)
{
	const void *p;
	int n;

	*out = NULL;
	if (bytes)
		*bytes = 0;
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return UNIAP_OK;
	p = sqlite3_column_blob(st, i);
	n = sqlite3_column_bytes(st, i);
	*out = malloc((size_t)n + 1);
	if (!*out)
		return err_set(err, UNIAP_E_NOMEM, "store: column of %d bytes: out of memory", n);
	if (n)
		memcpy(*out, p, (size_t)n);
	(*out)[n] = '\0';
	if (bytes)
		*bytes = (size_t)n;
	return UNIAP_OK;
}

static void column_text(sqlite3_stmt *st, int i, char *dst, size_t cap)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	size_t n = t ? (size_t)sqlite3_column_bytes(st, i) : 0;

	if (n >= cap)
		n = cap - 1;
	if (n)
		memcpy(dst, t, n);
	dst[n] = '\0';
}

/* ---- the pool ---- */

static sqlite3 *conn_get(struct store_sqlite *s)
{
	sqlite3 *db;

	pthread_mutex_lock(&s->mu);
	while (s->n_free == 0)
		pthread_cond_wait(&s->cv, &s->mu);
	db = s->free_conns[--s->n_free];
	pthread_mutex_unlock(&s->mu);
	sq_failed = 0;
	return db;
}

/* Gives db back; rolls back a transaction a failed call left open. */
static void conn_put(struct store_sqlite *s, sqlite3 *db)
{
	int i = conn_index(s, db);

	if (i >= 0 && s->wheld[i])
		write_outcome(s, db);
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	if (i >= 0 && s->wheld[i]) {
		s->wheld[i] = 0;
		s->wfreed[i] = 0;
		atomic_store(&s->write_since_ms, 0);
		pthread_mutex_unlock(&s->wmu);
	}
	pthread_mutex_lock(&s->mu);
	s->free_conns[s->n_free++] = db;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static int wal_cb(void *arg, int ncol, char **vals, char **names)
{
	(void)names;
	if (ncol >= 1 && vals[0])
		snprintf(arg, 16, "%s", vals[0]);
	return 0;
}

/*
 * A new database file is created here, empty (SQLite takes a 0-byte file for
 * an empty database) and 0600 whatever the umask: it holds every tenant's
 * documents and key hashes.  SQLite gives the -wal and -shm files the mode of
 * the database file (os_unix.c, findCreateFileMode), so they are 0600 too.
 * An existing file keeps its mode: the operator chose it.
 */
static void store_create_private(const char *path)
{
	int fd;

	if (strcmp(path, ":memory:") == 0 || strncmp(path, "file:", 5) == 0)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, S_IRUSR | S_IWUSR);
	if (fd < 0)
		return; /* it exists, or SQLite will say why it cannot be opened */
	(void)fchmod(fd, S_IRUSR | S_IWUSR);
	close(fd);
}

static uniap_code conn_open(const char *path, int64_t max_db_bytes, sqlite3 **out, struct uniap_err *err)
{
	sqlite3 *db = NULL;
	char mode[16] = "";
	uniap_code rc = UNIAP_OK;

	store_create_private(path);

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				       SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		if (!db)
			return err_set(err, UNIAP_E_NOMEM, "store: %s: out of memory", path);
		rc = err_set(err, UNIAP_E_IO, "store: %s: %s", path, sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_extended_result_codes(db, 1);
	sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
	if (sqlite3_exec(db, "PRAGMA journal_mode=WAL", wal_cb, mode, NULL) != SQLITE_OK) {
		rc = db_fail(err, db, "journal_mode");
		goto out;
	}
	if (strcmp(mode, "wal") != 0) {
		rc = err_set(err, UNIAP_E_IO, "store: %s: journal_mode: wanted wal, got %s", path,
			     mode);
		goto out;
	}
	/* synchronous=FULL: a committed write survives a power cut, not only kill -9 */
	rc = exec_sql(db, "PRAGMA foreign_keys=ON; PRAGMA synchronous=FULL", "pragma", err);
	if (rc == UNIAP_OK && max_db_bytes > 0) {
		/* the store's size cap: past it a write fails SQLITE_FULL, as on a full disk */
		char sql[96];
		int64_t page = 4096;
		sqlite3_stmt *st = NULL;

		if (sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			page = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		snprintf(sql, sizeof(sql), "PRAGMA max_page_count=%lld",
			 (long long)(max_db_bytes / (page > 0 ? page : 4096) + 1));
		rc = exec_sql(db, sql, "max_page_count", err);
	}
out:
	if (rc != UNIAP_OK) {
		sqlite3_close(db);
		return rc;
	}
	*out = db;
	return UNIAP_OK;
}

/* ---- migrations ---- */

static uniap_code read_version(sqlite3 *db, int *version, struct uniap_err *err)
{
	sqlite3_stmt *st = NULL;
	int row;
	uniap_code rc = prep(db, "SELECT coalesce(max(version), 0) FROM schema_migrations", &st, err);

	if (rc == UNIAP_OK)
		rc = step_row(db, st, &row, "schema version", err);
	if (rc == UNIAP_OK)
		*version = row ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	return rc;
}

static uniap_code migrate(sqlite3 *db, struct uniap_err *err)
{
	int latest = store_migrations[store_migrations_count - 1].version, cur = 0;
	sqlite3_stmt *st = NULL;
	uniap_code rc;

	rc = exec_sql(db, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
			  " name TEXT NOT NULL, applied_at INTEGER NOT NULL)", "schema_migrations", err);
	if (rc == UNIAP_OK)
		rc = read_version(db, &cur, err);
	if (rc != UNIAP_OK)
		return rc;
	if (cur > latest)
		return err_set(err, UNIAP_E_INVALID,
			       "database schema version %d is newer than this uniapd (%d)", cur, latest);
	for (size_t i = 0; i < store_migrations_count && rc == UNIAP_OK; i++) {
		const struct store_migration *m = &store_migrations[i];

		/* each migration in its own transaction; re-read the version inside
		 * it, since another process may have migrated meanwhile */
		rc = begin(db, err);
		if (rc == UNIAP_OK)
			rc = read_version(db, &cur, err);
		if (rc != UNIAP_OK)
			break;
		if (cur >= m->version) {
			rc = commit(db, err);
			continue;
		}
		if (sqlite3_exec(db, m->sql, NULL, NULL, NULL) != SQLITE_OK) {
			rc = db_fail(err, db, m->name);
			break;
		}
		rc = prep(db, "INSERT INTO schema_migrations (version, name, applied_at)"
			      " VALUES (?1, ?2, ?3)", &st, err);
		if (rc != UNIAP_OK)
			break;
		sqlite3_bind_int(st, 1, m->version);
		sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, store_now_ms());
		rc = step_done(db, st, "record migration", err);
		sqlite3_finalize(st);
		st = NULL;
		if (rc == UNIAP_OK)
			rc = commit(db, err);
	}
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* ---- open / close ---- */

void store_sqlite_global_init(void)
{
	/* SQLite's memory statistics take one global mutex on every allocation;
	 * the store never reads them.  Only possible before SQLite initialises. */
	if (sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK)
		sqlite3_initialize();
}

uniap_code store_sqlite_open(const char *path, const struct store_opts *opts, struct store **out,
		      struct uniap_err *err)
{
	struct store_sqlite *s = NULL;
	int pool = opts && opts->pool_size ? opts->pool_size : DEFAULT_POOL;
	uniap_code rc = UNIAP_OK;

	if (!path || !*path || strcmp(path, ":memory:") == 0 || strncmp(path, "file:", 5) == 0)
		return err_set(err, UNIAP_E_ARG, "store: path: must name a file, got \"%s\"",
			       path ? path : "(null)");
	if (pool < 1 || pool > STORE_POOL_MAX)
		return err_set(err, UNIAP_E_ARG, "store: pool_size: must be 1..%d, got %d",
			       STORE_POOL_MAX, pool);
	if (opts && opts->cache_max_bytes < 0)
		return err_set(err, UNIAP_E_ARG, "store: cache_max_bytes: must be >= 0");
	if (opts && opts->max_queued_jobs < 0)
		return err_set(err, UNIAP_E_ARG, "store: max_queued_jobs: must be >= 0");
	if (!sqlite3_threadsafe())
		return err_set(err, UNIAP_E_INTERNAL, "store: sqlite3 was built without threads");
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(err, UNIAP_E_NOMEM, "store: out of memory");
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->wmu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->cache_max_bytes = opts && opts->cache_max_bytes ? opts->cache_max_bytes
							   : DEFAULT_CACHE_MAX_BYTES;
	s->max_queued_jobs = opts && opts->max_queued_jobs > 0 ? opts->max_queued_jobs
							       : STORE_DEFAULT_MAX_QUEUED;
	s->max_stored_jobs = opts && opts->max_stored_jobs > 0 ? opts->max_stored_jobs
							       : STORE_DEFAULT_MAX_STORED_JOBS;
	s->max_db_bytes = opts && opts->max_db_bytes > 0 ? opts->max_db_bytes : 0;
	atomic_init(&s->write_since_ms, 0);
	atomic_init(&s->write_failing, 0);
	atomic_init(&s->full, 0);
	if (strlen(path) + sizeof("-reserve") <= sizeof(s->reserve_path))
		snprintf(s->reserve_path, sizeof(s->reserve_path), "%s-reserve", path);
	for (int i = 0; i < pool && rc == UNIAP_OK; i++) {
		rc = conn_open(path, s->max_db_bytes, &s->conns[i], err);
		if (rc == UNIAP_OK) {
			s->free_conns[i] = s->conns[i];
			s->n_conns = s->n_free = i + 1;
		}
		/* migrate on the first connection before opening the others */
		if (rc == UNIAP_OK && i == 0)
			rc = migrate(s->conns[0], err);
	}
	if (rc != UNIAP_OK) {
		sq_close(&s->base);
		return rc;
	}
	/* no room for it now is no reason not to start: deletes then have none either */
	(void)reserve_make(s);
	s->base.be = &store_sqlite_backend;
	*out = &s->base;
	return UNIAP_OK;
}

static void sq_health(struct store *base, struct store_health *h)
{
	struct store_sqlite *s = sq_of(base);
	int64_t since = atomic_load(&s->write_since_ms);

	h->writing_ms = since ? mono_ms() - since : 0;
	h->failing = atomic_load(&s->write_failing);
	h->full = atomic_load(&s->full);
}

static uniap_code sq_probe(struct store *base, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3 *db = conn_get(s);
	int version = 0;
	char sql[64];
	uniap_code rc = read_version(db, &version, err);

	/* the header's user_version written back as it is: one page, the smallest real write */
	if (rc == UNIAP_OK)
		rc = begin_write(s, db, err);
	if (rc == UNIAP_OK) {
		snprintf(sql, sizeof(sql), "PRAGMA user_version=%d", version);
		rc = exec_sql(db, sql, "probe", err);
	}
	/* a full disk that has room again (the reserve can be made); a full size cap needs a delete */
	if (rc == UNIAP_OK && atomic_load(&s->full) && s->max_db_bytes == 0)
		mark_freed(s, db);
	if (rc == UNIAP_OK)
		rc = commit(db, err);
	conn_put(s, db);
	return rc;
}

static void sq_close(struct store *base)
{
	struct store_sqlite *s = sq_of(base);

	if (!s)
		return;
	for (int i = 0; i < s->n_conns; i++) {
		for (int k = 0; k < STORE_STMT_CACHE && s->stmts[i][k].sql; k++)
			sqlite3_finalize(s->stmts[i][k].st);
		sqlite3_close(s->conns[i]);
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->wmu);
	free(s);
}

static uniap_code sq_schema_version(struct store *base, int *version, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3 *db = conn_get(s);
	uniap_code rc = read_version(db, version, err);

	conn_put(s, db);
	return rc;
}

/* ---- pagination ---- */

/*
 * Reads up to limit rows of st (whose first column is the row id, ordered by
 * it, LIMIT limit + 1) into arr (elem bytes each) with from_row.  *n gets the
 * rows read; *next the id of the last one when a further row exists, else 0.
 */
static uniap_code page_collect(sqlite3 *db, sqlite3_stmt *st, void *arr, size_t elem,
			       size_t limit, void (*from_row)(sqlite3_stmt *, void *),
			       const char *what, size_t *n, int64_t *next, struct uniap_err *err)
{
	uniap_code rc = UNIAP_OK;
	int64_t last_id = 0;
	int row = 1;

	*n = 0;
	*next = 0;
	while (rc == UNIAP_OK) {
		rc = step_row(db, st, &row, what, err);
		if (rc != UNIAP_OK || !row)
			break;
		if (*n == limit) {
			*next = last_id;
			break;
		}
		last_id = sqlite3_column_int64(st, 0);
		from_row(st, (char *)arr + (*n)++ * elem);
	}
	return rc;
}

/*
 * The end of every list: with rc still UNIAP_OK (the statement prepared and
 * bound with LIMIT limit + 1), collects its rows into a new array *arr
 * (owned, limit elements of elem bytes), *n and *next (all written only on
 * success); gives st and the connection back either way, and returns rc.
 */
static uniap_code page_read(struct store_sqlite *s, sqlite3 *db, sqlite3_stmt *st, uniap_code rc,
			    size_t elem, size_t limit, void (*from_row)(sqlite3_stmt *, void *),
			    const char *what, void **arr, size_t *n, int64_t *next, struct uniap_err *err)
{
	void *a = NULL;
	size_t k = 0;
	int64_t nx = 0;

	if (rc == UNIAP_OK && !(a = calloc(limit, elem)))
		rc = err_set(err, UNIAP_E_NOMEM, "store: out of memory");
	if (rc == UNIAP_OK)
		rc = page_collect(db, st, a, elem, limit, from_row, what, &k, &nx, err);
	unprep(s, db, st);
	conn_put(s, db);
	if (rc != UNIAP_OK) {
		free(a);
		return rc;
	}
	*arr = a;
	*n = k;
	*next = nx;
	return UNIAP_OK;
}

static uniap_code page_args(int64_t cursor, size_t *limit, struct uniap_err *err)
{
	if (cursor < 0)
		return err_set(err, UNIAP_E_ARG, "cursor: must be >= 0, got %lld", (long long)cursor);
	if (*limit == 0)
		*limit = STORE_PAGE_MAX;
	if (*limit > STORE_PAGE_MAX)
		return err_set(err, UNIAP_E_ARG, "limit: must be <= %d, got %zu", STORE_PAGE_MAX,
			       *limit);
	return UNIAP_OK;
}

/* ---- tenants ---- */

#define TENANT_COLS "id, name, created_at, coalesce(revoked_at, 0), max_concurrent_jobs, " \
		    "max_stored_bytes, max_job_worker_s"
#define TENANT_NCOLS 7 /* the columns of TENANT_COLS: a query's next one is at this index */

static void tenant_from_row(sqlite3_stmt *st, struct store_tenant *t)
{
	t->id = sqlite3_column_int64(st, 0);
	column_text(st, 1, t->name, sizeof(t->name));
	t->created_at_ms = sqlite3_column_int64(st, 2);
	t->revoked_at_ms = sqlite3_column_int64(st, 3);
	t->max_concurrent_jobs = sqlite3_column_int64(st, 4);
	t->max_stored_bytes = sqlite3_column_int64(st, 5);
	t->max_job_worker_s = sqlite3_column_double(st, 6);
}

static void tenant_from_row_any(sqlite3_stmt *st, void *p)
{
	tenant_from_row(st, p);
}


static uniap_code sq_tenant_add(struct store *base, const char *name, int64_t max_concurrent_jobs,
			    int64_t max_stored_bytes, int64_t *id,
			    char key_out[STORE_KEY_CHARS + 1], struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	unsigned char hash[STORE_SHA256_BYTES];
	char key[STORE_KEY_CHARS + 1];
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	uniap_code rc;

	if (!name || !*name || strlen(name) > STORE_NAME_MAX)
		return err_set(err, UNIAP_E_INVALID, "tenant.name: must be 1..%d bytes",
			       STORE_NAME_MAX);
	if (max_concurrent_jobs < 0 || max_stored_bytes < 0)
		return err_set(err, UNIAP_E_INVALID, "tenant: limits must be >= 0");
	rc = store_key_new(key, hash, err);
	if (rc != UNIAP_OK)
		return rc;

	db = conn_get(s);
	rc = begin_write(s, db, err);
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "INSERT INTO tenants (name, key_hash, created_at, max_concurrent_jobs,"
			      " max_stored_bytes) VALUES (?1, ?2, ?3, ?4, ?5)", &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, hash, sizeof(hash), SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, store_now_ms());
	sqlite3_bind_int64(st, 4, max_concurrent_jobs);
	sqlite3_bind_int64(st, 5, max_stored_bytes);
	if (sqlite3_step(st) != SQLITE_DONE) {
		if (sqlite3_extended_errcode(db) == SQLITE_CONSTRAINT_UNIQUE &&
		    strstr(sqlite3_errmsg(db), "tenants.name"))
			rc = err_set(err, UNIAP_E_INVALID, "tenant.name: \"%s\" already exists", name);
		else
			rc = db_fail(err, db, "add tenant");
		goto out;
	}
	*id = sqlite3_last_insert_rowid(db);
	rc = commit(db, err);
out:
	unprep(s, db, st);
	conn_put(s, db);
	if (rc == UNIAP_OK)
		memcpy(key_out, key, sizeof(key));
	memset(key, 0, sizeof(key));
	return rc;
}

static uniap_code sq_tenant_list(struct store *base, int64_t cursor, size_t limit,
			     struct store_tenant **out, size_t *n, int64_t *next,
			     struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	void *arr = NULL;
	sqlite3 *db;
	uniap_code rc = page_args(cursor, &limit, err);

	if (rc != UNIAP_OK)
		return rc;
	db = conn_get(s);
	rc = prep_c(s, db, "SELECT " TENANT_COLS " FROM tenants WHERE id > ?1 ORDER BY id LIMIT ?2",
		    &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, cursor);
		sqlite3_bind_int64(st, 2, (int64_t)limit + 1);
	}
	rc = page_read(s, db, st, rc, sizeof(**out), limit, tenant_from_row_any, "list tenants", &arr, n,
		       next, err);
	if (rc == UNIAP_OK)
		*out = arr;
	return rc;
}

static uniap_code sq_tenant_revoke(struct store *base, int64_t id, size_t *canceled, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL, *jobs = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = begin_write(s, db, err);
	int64_t now = store_now_ms();

	if (canceled)
		*canceled = 0;
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE tenants SET revoked_at = coalesce(revoked_at, ?1) WHERE id = ?2",
			  &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, id);
	rc = step_done(db, st, "revoke tenant", err);
	if (rc == UNIAP_OK && sqlite3_changes(db) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "tenant %lld: not found", (long long)id);
	/* its queued jobs never start (the running ones are stopped by the server that runs
	 * them: store_tenant_revoked) */
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE jobs SET state = 'canceled', finished_at = ?1,"
			  " error = 'canceled: the tenant was revoked' WHERE tenant_id = ?2 AND state = 'queued'",
			  &jobs, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(jobs, 1, now);
		sqlite3_bind_int64(jobs, 2, id);
		rc = step_done(db, jobs, "cancel the tenant's queued jobs", err);
	}
	if (rc == UNIAP_OK && canceled)
		*canceled = (size_t)sqlite3_changes(db);
	if (rc == UNIAP_OK)
		rc = commit(db, err);
out:
	unprep(s, db, jobs);
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

static uniap_code sq_tenant_set_quota(struct store *base, int64_t id, const struct store_tenant_quota *q,
				  struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	uniap_code rc;

	if (!(q->max_job_worker_s < 0 || isfinite(q->max_job_worker_s)))
		return err_set(err, UNIAP_E_INVALID, "max_job_worker_s: must be finite");
	db = conn_get(s);
	rc = begin_write(s, db, err);
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE tenants SET"
			  " max_concurrent_jobs = CASE WHEN ?1 >= 0 THEN ?1 ELSE max_concurrent_jobs END,"
			  " max_stored_bytes = CASE WHEN ?2 >= 0 THEN ?2 ELSE max_stored_bytes END,"
			  " max_job_worker_s = CASE WHEN ?3 >= 0 THEN ?3 ELSE max_job_worker_s END"
			  " WHERE id = ?4", &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, q->max_concurrent_jobs);
		sqlite3_bind_int64(st, 2, q->max_stored_bytes);
		sqlite3_bind_double(st, 3, q->max_job_worker_s);
		sqlite3_bind_int64(st, 4, id);
		rc = step_done(db, st, "set tenant quota", err);
	}
	if (rc == UNIAP_OK && sqlite3_changes(db) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "tenant %lld: not found", (long long)id);
	if (rc == UNIAP_OK)
		rc = commit(db, err);
	unprep(s, db, st); /* conn_put rolls back what failed */
	conn_put(s, db);
	return rc;
}

static uniap_code sq_tenant_get(struct store *base, int64_t id, struct store_tenant *out, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	int row = 0;
	uniap_code rc = prep_c(s, db, "SELECT " TENANT_COLS " FROM tenants WHERE id = ?1", &st, err);

	memset(out, 0, sizeof(*out));
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, id);
		rc = step_row(db, st, &row, "tenant", err);
	}
	if (rc == UNIAP_OK && !row)
		rc = err_set(err, UNIAP_E_NOTFOUND, "tenant %lld: not found", (long long)id);
	if (rc == UNIAP_OK)
		tenant_from_row(st, out);
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}


static uniap_code sq_tenant_lookup(struct store *base, const char *key, struct store_tenant *out,
			       struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	unsigned char hash[STORE_SHA256_BYTES];
	sqlite3_stmt *st = NULL;
	int row = 0;
	sqlite3 *db;
	uniap_code rc;

	if (!key)
		return err_set(err, UNIAP_E_NOTFOUND, "api key: unknown");
	/* The index finds the row by the hash of the presented key: timing can
	 * tell an attacker only about SHA-256 values of keys they chose.  The
	 * final comparison is constant-time all the same. */
	store_sha256(key, strlen(key), hash);
	db = conn_get(s);
	rc = prep_c(s, db, "SELECT " TENANT_COLS ", key_hash FROM tenants WHERE key_hash = ?1", &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_blob(st, 1, hash, sizeof(hash), SQLITE_STATIC);
	rc = step_row(db, st, &row, "look up key", err);
	if (rc != UNIAP_OK)
		goto out;
	if (!row || sqlite3_column_bytes(st, TENANT_NCOLS) != STORE_SHA256_BYTES ||
	    !store_hash_equal(sqlite3_column_blob(st, TENANT_NCOLS), hash)) {
		rc = err_set(err, UNIAP_E_NOTFOUND, "api key: unknown");
		goto out;
	}
	tenant_from_row(st, out);
	if (out->revoked_at_ms)
		rc = err_set(err, UNIAP_E_FORBIDDEN,
		             "api key: tenant \"%s\" was revoked; ask the operator for a new key", out->name);
out:
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

/* ---- documents ---- */

static const char *const doc_kind_names[] = { "cluster", "model" };

#define DOC_COLS "id, tenant_id, kind, name, bytes, sha256, created_at"

static void doc_from_row(sqlite3_stmt *st, struct store_doc *d)
{
	const unsigned char *kind = sqlite3_column_text(st, 2);
	const void *h = sqlite3_column_blob(st, 5);

	memset(d, 0, sizeof(*d));
	d->id = sqlite3_column_int64(st, 0);
	d->tenant_id = sqlite3_column_int64(st, 1);
	d->kind = kind && strcmp((const char *)kind, "model") == 0 ? STORE_DOC_MODEL
								     : STORE_DOC_CLUSTER;
	column_text(st, 3, d->name, sizeof(d->name));
	d->bytes = sqlite3_column_int64(st, 4);
	if (h && sqlite3_column_bytes(st, 5) == STORE_SHA256_BYTES)
		memcpy(d->sha256, h, STORE_SHA256_BYTES);
	d->created_at_ms = sqlite3_column_int64(st, 6);
}

static void doc_from_row_any(sqlite3_stmt *st, void *p)
{
	doc_from_row(st, p);
}

/* Reads the active tenant's limits inside the caller's transaction. */
static uniap_code tenant_limits(sqlite3 *db, int64_t tenant_id, int64_t *max_jobs,
				int64_t *max_bytes, struct uniap_err *err)
{
	sqlite3_stmt *st = NULL;
	int row = 0;
	uniap_code rc = prep(db, "SELECT max_concurrent_jobs, max_stored_bytes FROM tenants"
				 " WHERE id = ?1 AND revoked_at IS NULL", &st, err);

	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, tenant_id);
		rc = step_row(db, st, &row, "tenant limits", err);
	}
	if (rc == UNIAP_OK && !row)
		rc = err_set(err, UNIAP_E_NOTFOUND, "tenant %lld: not found", (long long)tenant_id);
	if (rc == UNIAP_OK) {
		*max_jobs = sqlite3_column_int64(st, 0);
		*max_bytes = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return rc;
}

/* What tenant stores: its documents' bytes and its jobs' requests and results. */
static uniap_code tenant_used_bytes(sqlite3 *db, int64_t tenant_id, int64_t *used, struct uniap_err *err);

/* One int64 from a one-row query, binding a to ?1 when the query has it. */
static uniap_code query_int(sqlite3 *db, const char *sql, int64_t a, int64_t *v,
			    struct uniap_err *err)
{
	sqlite3_stmt *st = NULL;
	int row = 0;
	uniap_code rc = prep(db, sql, &st, err);

	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, a);
		rc = step_row(db, st, &row, "query", err);
	}
	if (rc == UNIAP_OK)
		*v = row ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	return rc;
}

static uniap_code tenant_used_bytes(sqlite3 *db, int64_t tenant_id, int64_t *used, struct uniap_err *err)
{
	int64_t docs = 0, jobs = 0;
	uniap_code rc = query_int(db, "SELECT coalesce(sum(bytes), 0) FROM documents WHERE tenant_id = ?1",
				  tenant_id, &docs, err);

	if (rc == UNIAP_OK)
		rc = query_int(db, "SELECT coalesce(sum(length(request) + coalesce(length(result), 0)), 0)"
				   " FROM jobs WHERE tenant_id = ?1", tenant_id, &jobs, err);
	*used = docs + jobs;
	return rc;
}

static uniap_code sq_doc_put(struct store *base, int64_t tenant_id, enum store_doc_kind kind,
			 const char *name, const void *body, size_t bytes, int64_t *id,
			 struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	unsigned char hash[STORE_SHA256_BYTES];
	int64_t max_jobs, max_bytes, used = 0;
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	uniap_code rc;

	if ((int)kind < 0 || kind > STORE_DOC_MODEL)
		return err_set(err, UNIAP_E_INVALID, "document.kind: must be cluster or model");
	if (!name || !*name || strlen(name) > STORE_NAME_MAX)
		return err_set(err, UNIAP_E_INVALID, "document.name: must be 1..%d bytes",
			       STORE_NAME_MAX);
	if (bytes > (size_t)INT32_MAX)
		return err_set(err, UNIAP_E_LIMIT, "document: %zu bytes is too large", bytes);
	if ((rc = refuse_when_full(s, "document", err)) != UNIAP_OK)
		return rc;
	store_sha256(body, bytes, hash);
	db = conn_get(s);
	rc = begin_write(s, db, err);
	if (rc == UNIAP_OK)
		rc = tenant_limits(db, tenant_id, &max_jobs, &max_bytes, err);
	if (rc == UNIAP_OK)
		rc = tenant_used_bytes(db, tenant_id, &used, err);
	if (rc != UNIAP_OK)
		goto out;
	if (used + (int64_t)bytes > max_bytes) {
		rc = err_set(err, UNIAP_E_LIMIT, "documents: %lld + %zu bytes exceed the tenant's"
			     " max_stored_bytes %lld (documents and jobs count)", (long long)used, bytes,
			     (long long)max_bytes);
		goto out;
	}
	rc = prep_c(s, db, "INSERT INTO documents (tenant_id, kind, name, bytes, sha256, created_at, body)"
		      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_int64(st, 1, tenant_id);
	sqlite3_bind_text(st, 2, doc_kind_names[kind], -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (int64_t)bytes);
	sqlite3_bind_blob(st, 5, hash, sizeof(hash), SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, store_now_ms());
	bind_bytes(st, 7, body, bytes);
	rc = step_done(db, st, "put document", err);
	if (rc == UNIAP_OK) {
		*id = sqlite3_last_insert_rowid(db);
		rc = commit(db, err);
	}
out:
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

/* Steps "SELECT ... WHERE id = ?1 AND <tenant test on ?2>" to its row in *st
 * (the caller unpreps it); no row is UNIAP_E_NOTFOUND naming what and id. */
static uniap_code read_scoped(struct store_sqlite *s, sqlite3 *db, const char *sql, int64_t id,
			      int64_t tenant_id, const char *what, sqlite3_stmt **st,
			      struct uniap_err *err)
{
	int row = 0;
	uniap_code rc = prep_c(s, db, sql, st, err);

	if (rc != UNIAP_OK)
		return rc;
	sqlite3_bind_int64(*st, 1, id);
	sqlite3_bind_int64(*st, 2, tenant_id);
	rc = step_row(db, *st, &row, what, err);
	if (rc == UNIAP_OK && !row)
		rc = err_set(err, UNIAP_E_NOTFOUND, "%s %lld: not found", what, (long long)id);
	return rc;
}

static uniap_code sq_doc_get(struct store *base, int64_t tenant_id, int64_t id, struct store_doc *out,
			 struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	struct store_doc d;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = read_scoped(s, db, "SELECT " DOC_COLS ", body FROM documents"
				    " WHERE id = ?1 AND tenant_id = ?2", id, tenant_id, "document", &st, err);

	if (rc != UNIAP_OK)
		goto out;
	doc_from_row(st, &d);
	rc = column_dup(st, 7, &d.body, NULL, err);
	if (rc == UNIAP_OK)
		*out = d;
out:
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}


static uniap_code sq_doc_list(struct store *base, int64_t tenant_id, int64_t cursor, size_t limit,
			  struct store_doc **out, size_t *n, int64_t *next, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	void *arr = NULL;
	sqlite3 *db;
	uniap_code rc = page_args(cursor, &limit, err);

	if (rc != UNIAP_OK)
		return rc;
	db = conn_get(s);
	rc = prep_c(s, db, "SELECT " DOC_COLS " FROM documents WHERE tenant_id = ?1 AND id > ?2"
		    " ORDER BY id LIMIT ?3", &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, tenant_id);
		sqlite3_bind_int64(st, 2, cursor);
		sqlite3_bind_int64(st, 3, (int64_t)limit + 1);
	}
	rc = page_read(s, db, st, rc, sizeof(**out), limit, doc_from_row_any, "list documents", &arr, n,
		       next, err);
	if (rc == UNIAP_OK)
		*out = arr;
	return rc;
}

/* Runs a one-statement write "... WHERE id = ?1 AND tenant_id = ?2" in a
 * transaction; no row changed is UNIAP_E_NOTFOUND naming what and id. */
static uniap_code write_scoped_once(struct store_sqlite *s, const char *sql, int64_t id, int64_t tenant_id,
			       const char *what, struct uniap_err *err)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = begin_write(s, db, err);

	if (rc == UNIAP_OK)
		rc = prep_c(s, db, sql, &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, tenant_id);
	rc = step_done(db, st, what, err);
	if (rc == UNIAP_OK && sqlite3_changes(db) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "%s %lld: not found", what, (long long)id);
	if (rc == UNIAP_OK)
		mark_freed(s, db);
	if (rc == UNIAP_OK)
		rc = commit(db, err);
out:
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

/*
 * A delete scoped to a tenant (write_scoped_once).  One that finds the disk
 * full (before any write failed, the reserve is still there) gives the
 * reserve back (conn_put) and runs once more: deletes always go through on
 * a full disk, which is what the reserve is for.
 */
static uniap_code write_scoped(struct store_sqlite *s, const char *sql, int64_t id, int64_t tenant_id,
			       const char *what, struct uniap_err *err)
{
	uniap_code rc = write_scoped_once(s, sql, id, tenant_id, what, err);

	if (rc == UNIAP_E_NOSPACE)
		rc = write_scoped_once(s, sql, id, tenant_id, what, err);
	return rc;
}

static uniap_code sq_doc_delete(struct store *base, int64_t tenant_id, enum store_doc_kind kind, int64_t id,
			    struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	/* the kind is part of the statement's text: no body is read to check it */
	static const char *const sql[] = {
		[STORE_DOC_CLUSTER] = "DELETE FROM documents WHERE id = ?1 AND tenant_id = ?2 AND kind = 'cluster'",
		[STORE_DOC_MODEL] = "DELETE FROM documents WHERE id = ?1 AND tenant_id = ?2 AND kind = 'model'",
	};

	if ((unsigned)kind >= sizeof(sql) / sizeof(sql[0]))
		return err_set(err, UNIAP_E_ARG, "document: kind %d: unknown", (int)kind);
	return write_scoped(s, sql[kind], id, tenant_id, doc_kind_names[kind], err);
}

/* ---- jobs ---- */

static uniap_code sq_job_delete(struct store *base, int64_t tenant_id, int64_t id, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	return write_scoped(s, "DELETE FROM jobs WHERE id = ?1 AND tenant_id = ?2 "
			    "AND state IN ('succeeded', 'failed', 'canceled')",
			    id, tenant_id, "job", err);
}





#define JOB_COLS "id, tenant_id, state, coalesce(idempotency_key, ''), progress_done, " \
		 "progress_total, best_tpi_s, created_at, coalesce(started_at, 0), " \
		 "coalesce(finished_at, 0), version, kind, bound_s"
#define JOB_NCOLS 13   /* columns of JOB_COLS: a query's own columns follow */

static void job_from_row(sqlite3_stmt *st, struct store_job *j)
{
	memset(j, 0, sizeof(*j));
	j->id = sqlite3_column_int64(st, 0);
	j->tenant_id = sqlite3_column_int64(st, 1);
	if (store_job_state_parse((const char *)sqlite3_column_text(st, 2), &j->state) != 0)
		j->state = STORE_JOB_FAILED;   /* the CHECK constraint rules this out */
	column_text(st, 3, j->idempotency_key, sizeof(j->idempotency_key));
	j->progress_done = sqlite3_column_int64(st, 4);
	j->progress_total = sqlite3_column_int64(st, 5);
	j->has_best_tpi = sqlite3_column_type(st, 6) != SQLITE_NULL;
	j->best_tpi_s = j->has_best_tpi ? sqlite3_column_double(st, 6) : 0.0;
	j->created_at_ms = sqlite3_column_int64(st, 7);
	j->started_at_ms = sqlite3_column_int64(st, 8);
	j->finished_at_ms = sqlite3_column_int64(st, 9);
	j->version = sqlite3_column_int64(st, 10);
	j->kind = STORE_JOB_PLAN;      /* the CHECK constraint allows only the kinds' names */
	for (int k = 0; k < STORE_JOB_KIND_COUNT; k++)
		if (sqlite3_column_text(st, 11) &&
		    strcmp((const char *)sqlite3_column_text(st, 11), store_job_kind_name(k)) == 0)
			j->kind = (enum store_job_kind)k;
	j->has_bound = sqlite3_column_type(st, 12) != SQLITE_NULL;
	j->bound_s = j->has_bound ? sqlite3_column_double(st, 12) : 0.0;
}

static void job_from_row_any(sqlite3_stmt *st, void *p)
{
	job_from_row(st, p);
}

/* Inside the caller's transaction: the job with this key, if any. */
static uniap_code idem_find(sqlite3 *db, int64_t tenant_id, enum store_job_kind kind, const char *idem_key,
			    const unsigned char *hash, int64_t *id, struct uniap_err *err)
{
	sqlite3_stmt *st = NULL;
	int row = 0;
	uniap_code rc = prep(db, "SELECT id, request_sha256, kind FROM jobs"
				 " WHERE tenant_id = ?1 AND idempotency_key = ?2", &st, err);

	*id = 0;
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, tenant_id);
		sqlite3_bind_text(st, 2, idem_key, -1, SQLITE_STATIC);
		rc = step_row(db, st, &row, "idempotency key", err);
	}
	if (rc == UNIAP_OK && row) {
		if (sqlite3_column_bytes(st, 1) != STORE_SHA256_BYTES ||
		    memcmp(sqlite3_column_blob(st, 1), hash, STORE_SHA256_BYTES) != 0 ||
		    !sqlite3_column_text(st, 2) || strcmp((const char *)sqlite3_column_text(st, 2), store_job_kind_name(kind)) != 0)
			rc = err_set(err, UNIAP_E_INVALID, "Idempotency-Key: \"%s\" was already used"
				     " with a different request body", idem_key);
		else
			*id = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	return rc;
}

static uniap_code sq_job_find_idem(struct store *base, int64_t tenant_id, const char *idem_key, int64_t *id,
			       unsigned char body_sha256[STORE_SHA256_BYTES], int *has_body_sha256,
			       struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	int row = 0;
	sqlite3 *db = conn_get(s);
	uniap_code rc = prep_c(s, db, "SELECT id, body_sha256 FROM jobs"
				     " WHERE tenant_id = ?1 AND idempotency_key = ?2", &st, err);

	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, tenant_id);
		sqlite3_bind_text(st, 2, idem_key, -1, SQLITE_STATIC);
		rc = step_row(db, st, &row, "idempotency key", err);
	}
	if (rc == UNIAP_OK && !row)
		rc = err_set(err, UNIAP_E_NOTFOUND, "Idempotency-Key: no job");
	if (rc == UNIAP_OK) {
		*id = sqlite3_column_int64(st, 0);
		*has_body_sha256 = sqlite3_column_bytes(st, 1) == STORE_SHA256_BYTES;
		if (*has_body_sha256)
			memcpy(body_sha256, sqlite3_column_blob(st, 1), STORE_SHA256_BYTES);
	}
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

static uniap_code sq_job_set_body_hash(struct store *base, int64_t tenant_id, int64_t id,
				   const unsigned char body_sha256[STORE_SHA256_BYTES],
				   struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = begin_write(s, db, err);

	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE jobs SET body_sha256 = ?1 WHERE id = ?2 AND tenant_id = ?3", &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_blob(st, 1, body_sha256, STORE_SHA256_BYTES, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, id);
		sqlite3_bind_int64(st, 3, tenant_id);
		rc = step_done(db, st, "job body hash", err);
	}
	if (rc == UNIAP_OK && sqlite3_changes(db) == 0)
		rc = err_set(err, UNIAP_E_NOTFOUND, "job %lld: no such job", (long long)id);
	if (rc == UNIAP_OK)
		rc = commit(db, err);
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}


static uniap_code sq_job_create(struct store *base, int64_t tenant_id, enum store_job_kind kind,
				 const char *idem_key, const void *request, size_t bytes, int64_t *id,
				 int *existed, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	unsigned char hash[STORE_SHA256_BYTES];
	int64_t max_jobs, max_bytes, active = 0, found = 0, stored = 0, used = 0;
	int was = 0;
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	uniap_code rc;

	if (idem_key && (!*idem_key || strlen(idem_key) > STORE_IDEM_KEY_MAX))
		return err_set(err, UNIAP_E_INVALID, "Idempotency-Key: must be 1..%d bytes",
			       STORE_IDEM_KEY_MAX);
	if (bytes > (size_t)INT32_MAX)
		return err_set(err, UNIAP_E_LIMIT, "job request: %zu bytes is too large", bytes);
	if ((int)kind < 0 || kind >= STORE_JOB_KIND_COUNT)
		return err_set(err, UNIAP_E_ARG, "job kind: %d is not a kind", (int)kind);
	if ((rc = refuse_when_full(s, "job", err)) != UNIAP_OK)
		return rc;
	store_sha256(request, bytes, hash);
	db = conn_get(s);
	rc = begin_write(s, db, err);
	if (rc == UNIAP_OK)
		rc = tenant_limits(db, tenant_id, &max_jobs, &max_bytes, err);
	if (rc == UNIAP_OK && idem_key)
		rc = idem_find(db, tenant_id, kind, idem_key, hash, &found, err);
	was = found != 0;
	if (rc != UNIAP_OK || was)
		goto out;
	/* what the tenant stores bounds its jobs too: their count, and their bytes with its documents' */
	rc = query_int(db, "SELECT count(*) FROM jobs WHERE tenant_id = ?1", tenant_id, &stored, err);
	if (rc == UNIAP_OK && stored >= s->max_stored_jobs)
		rc = err_set(err, UNIAP_E_LIMIT, "jobs: the tenant stores %lld, the limit (--max-stored-jobs); "
			     "DELETE /v1/jobs/{id} removes a finished one", (long long)stored);
	if (rc == UNIAP_OK)
		rc = tenant_used_bytes(db, tenant_id, &used, err);
	if (rc == UNIAP_OK && used + (int64_t)bytes > max_bytes)
		rc = err_set(err, UNIAP_E_LIMIT, "jobs: %lld + %zu bytes exceed the tenant's max_stored_bytes %lld"
			     " (documents and jobs count)", (long long)used, bytes, (long long)max_bytes);
	if (rc != UNIAP_OK)
		goto out;
	rc = query_int(db, "SELECT count(*) FROM jobs WHERE tenant_id = ?1"
			   " AND state IN ('queued', 'running')", tenant_id, &active, err);
	if (rc != UNIAP_OK)
		goto out;
	if (active >= max_jobs) {
		rc = err_set(err, UNIAP_E_RATE, "jobs: the tenant already has %lld queued or running,"
			     " its max_concurrent_jobs", (long long)active);
		goto out;
	}
	rc = query_int(db, "SELECT count(*) FROM jobs WHERE state = 'queued'", 0, &active, err);
	if (rc != UNIAP_OK)
		goto out;
	if (active >= s->max_queued_jobs) {
		rc = err_set(err, UNIAP_E_BUSY, "jobs: the service's queue is full (%lld queued)",
			     (long long)active);
		goto out;
	}
	rc = prep_c(s, db, "INSERT INTO jobs (tenant_id, state, request_sha256, idempotency_key,"
		      " created_at, request, kind) VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?6)", &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_int64(st, 1, tenant_id);
	sqlite3_bind_blob(st, 2, hash, sizeof(hash), SQLITE_STATIC);
	if (idem_key)
		sqlite3_bind_text(st, 3, idem_key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, store_now_ms());
	bind_bytes(st, 5, request, bytes);
	sqlite3_bind_text(st, 6, store_job_kind_name(kind), -1, SQLITE_STATIC);
	rc = step_done(db, st, "create job", err);
	if (rc == UNIAP_OK)
		found = sqlite3_last_insert_rowid(db);
out:
	if (rc == UNIAP_OK)
		rc = commit(db, err);
	unprep(s, db, st);
	conn_put(s, db);
	if (rc == UNIAP_OK) {
		*existed = was;
		*id = found;
	}
	return rc;
}

static uniap_code sq_job_version(struct store *base, int64_t tenant_id, int64_t id, int64_t *version,
			     struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = read_scoped(s, db, "SELECT version FROM jobs WHERE id = ?1 AND (?2 = 0 OR tenant_id = ?2)",
				    id, tenant_id, "job", &st, err);

	if (rc == UNIAP_OK)
		*version = sqlite3_column_int64(st, 0);
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

static uniap_code sq_job_get(struct store *base, int64_t tenant_id, int64_t id, struct store_job *out,
			 struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	struct store_job j;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = read_scoped(s, db, "SELECT " JOB_COLS ", request, result, error FROM jobs"
				    " WHERE id = ?1 AND (?2 = 0 OR tenant_id = ?2)", id, tenant_id, "job",
				    &st, err);

	memset(&j, 0, sizeof(j));
	if (rc != UNIAP_OK)
		goto out;
	job_from_row(st, &j);
	rc = column_dup(st, JOB_NCOLS, &j.request, &j.request_bytes, err);
	if (rc == UNIAP_OK)
		rc = column_dup(st, JOB_NCOLS + 1, &j.result, &j.result_bytes, err);
	if (rc == UNIAP_OK)
		rc = column_dup(st, JOB_NCOLS + 2, &j.error, NULL, err);
out:
	unprep(s, db, st);
	conn_put(s, db);
	if (rc != UNIAP_OK)
		store_job_release(&j);
	else
		*out = j;
	return rc;
}


static uniap_code sq_job_list(struct store *base, int64_t tenant_id, const enum store_job_state *state,
			  int64_t cursor, size_t limit, struct store_job **out, size_t *n,
			  int64_t *next, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	static const char *const sql_all = "SELECT " JOB_COLS " FROM jobs WHERE tenant_id = ?1"
					   " AND id > ?2 ORDER BY id LIMIT ?3";
	static const char *const sql_state = "SELECT " JOB_COLS " FROM jobs WHERE tenant_id = ?1"
					     " AND id > ?2 AND state = ?4 ORDER BY id LIMIT ?3";
	sqlite3_stmt *st = NULL;
	void *arr = NULL;
	sqlite3 *db;
	uniap_code rc = page_args(cursor, &limit, err);

	if (rc != UNIAP_OK)
		return rc;
	if (state && ((int)*state < 0 || *state >= STORE_JOB_STATE_COUNT))
		return err_set(err, UNIAP_E_ARG, "state: unknown job state %d", (int)*state);
	db = conn_get(s);
	rc = prep_c(s, db, state ? sql_state : sql_all, &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, tenant_id);
		sqlite3_bind_int64(st, 2, cursor);
		sqlite3_bind_int64(st, 3, (int64_t)limit + 1);
		if (state)
			sqlite3_bind_text(st, 4, store_job_state_name(*state), -1, SQLITE_STATIC);
	}
	rc = page_read(s, db, st, rc, sizeof(**out), limit, job_from_row_any, "list jobs", &arr, n, next,
		       err);
	if (rc == UNIAP_OK)
		*out = arr;
	return rc;
}


/* Inside the caller's transaction: the job's state (scoped by tenant unless STORE_ANY_TENANT). */
static uniap_code job_state_of(sqlite3 *db, int64_t tenant_id, int64_t id,
			       enum store_job_state *state, struct uniap_err *err)
{
	sqlite3_stmt *st = NULL;
	int row = 0;
	uniap_code rc = prep(db, "SELECT state FROM jobs WHERE id = ?1 AND (?2 = 0 OR tenant_id = ?2)",
			     &st, err);

	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, tenant_id);
		rc = step_row(db, st, &row, "job state", err);
	}
	if (rc == UNIAP_OK && (!row || store_job_state_parse((const char *)sqlite3_column_text(st, 0), state) != 0))
		rc = err_set(err, UNIAP_E_NOTFOUND, "job %lld: not found", (long long)id);
	sqlite3_finalize(st);
	return rc;
}


/* Inside the caller's transaction: UNIAP_OK when lease is NULL or job id is
 * running under exactly lease's owner and token; UNIAP_E_CONFLICT otherwise
 * (the runner that holds lease must stop working on the job). */
static uniap_code lease_check(sqlite3 *db, int64_t id, const struct store_lease *lease, struct uniap_err *err)
{
	sqlite3_stmt *st = NULL;
	int row = 0;
	uniap_code rc;

	if (!lease)
		return UNIAP_OK;
	rc = prep(db, "SELECT state = 'running' AND lease_owner IS ?2 AND lease_token = ?3, state, lease_token"
		      " FROM jobs WHERE id = ?1", &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, lease->owner, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, lease->token);
		rc = step_row(db, st, &row, "job lease", err);
	}
	if (rc == UNIAP_OK && !row)
		rc = err_set(err, UNIAP_E_CONFLICT, "job %lld: lost its lease: the job is gone", (long long)id);
	else if (rc == UNIAP_OK && !sqlite3_column_int(st, 0))
		rc = err_set(err, UNIAP_E_CONFLICT, "job %lld: lost its lease (token %lld): the job is %s"
			     " under token %lld", (long long)id, (long long)lease->token,
			     (const char *)sqlite3_column_text(st, 1), (long long)sqlite3_column_int64(st, 2));
	sqlite3_finalize(st);
	return rc;
}

static uniap_code sq_job_transition(struct store *base, int64_t tenant_id, int64_t id,
				enum store_job_state to, const void *result, size_t result_bytes,
				const char *error_msg, const struct store_lease *lease,
				struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	enum store_job_state from = STORE_JOB_QUEUED;
	sqlite3_stmt *st = NULL;
	int64_t now = store_now_ms();
	sqlite3 *db;
	uniap_code rc;

	if ((int)to < 0 || to >= STORE_JOB_STATE_COUNT)
		return err_set(err, UNIAP_E_ARG, "state: unknown job state %d", (int)to);
	if (result_bytes > (size_t)INT32_MAX)
		return err_set(err, UNIAP_E_LIMIT, "job result: %zu bytes is too large", result_bytes);
	db = conn_get(s);
	rc = begin_write(s, db, err);
	if (rc == UNIAP_OK)
		rc = lease_check(db, id, lease, err);
	if (rc == UNIAP_OK)
		rc = job_state_of(db, tenant_id, id, &from, err);
	if (rc != UNIAP_OK)
		goto out;
	if (!store_job_transition_legal(from, to)) {
		rc = err_set(err, UNIAP_E_INVALID, "job %lld: state: cannot go from %s to %s",
			     (long long)id, store_job_state_name(from), store_job_state_name(to));
		goto out;
	}
	rc = prep_c(s, db, "UPDATE jobs SET state = ?1, started_at = coalesce(?2, started_at),"
		      " finished_at = ?3, result = coalesce(?4, result), error = coalesce(?5, error),"
		      " lease_owner = CASE WHEN ?1 = 'running' THEN lease_owner END,"
		      " lease_expires_at = CASE WHEN ?1 = 'running' THEN lease_expires_at END"
		      " WHERE id = ?6", &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_text(st, 1, store_job_state_name(to), -1, SQLITE_STATIC);
	if (to == STORE_JOB_RUNNING)
		sqlite3_bind_int64(st, 2, now);
	else
		sqlite3_bind_int64(st, 3, now);
	if (to == STORE_JOB_SUCCEEDED && result)
		bind_bytes(st, 4, result, result_bytes);
	if ((to == STORE_JOB_FAILED || to == STORE_JOB_CANCELED) && error_msg)
		sqlite3_bind_text(st, 5, error_msg, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, id);
	rc = step_done(db, st, "job state", err);
	if (rc == UNIAP_OK)
		rc = commit(db, err);
out:
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

static uniap_code sq_job_progress(struct store *base, int64_t id, int64_t done, int64_t total,
			      const double *best_tpi_s, const double *bound_s,
			      const struct store_lease *lease, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	enum store_job_state state = STORE_JOB_QUEUED;
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	uniap_code rc;

	if (done < 0 || total < done)
		return err_set(err, UNIAP_E_ARG, "progress: must be 0 <= done <= total, got %lld/%lld",
			       (long long)done, (long long)total);
	if (bound_s && !(*bound_s >= 0))
		return err_set(err, UNIAP_E_ARG, "progress: bound_s: must be >= 0, got %g", *bound_s);
	db = conn_get(s);
	rc = begin_write(s, db, err);
	if (rc == UNIAP_OK)
		rc = lease_check(db, id, lease, err);
	if (rc == UNIAP_OK)
		rc = job_state_of(db, STORE_ANY_TENANT, id, &state, err);
	if (rc != UNIAP_OK)
		goto out;
	if (state != STORE_JOB_RUNNING) {
		rc = err_set(err, UNIAP_E_INVALID, "job %lld: progress: only while running, state is %s",
			     (long long)id, store_job_state_name(state));
		goto out;
	}
	rc = prep_c(s, db, "UPDATE jobs SET progress_done = ?1, progress_total = ?2,"
		      " best_tpi_s = coalesce(?3, best_tpi_s), bound_s = ?5 WHERE id = ?4", &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_int64(st, 1, done);
	sqlite3_bind_int64(st, 2, total);
	if (best_tpi_s)
		sqlite3_bind_double(st, 3, *best_tpi_s);
	sqlite3_bind_int64(st, 4, id);
	if (bound_s)
		sqlite3_bind_double(st, 5, *bound_s);
	rc = step_done(db, st, "job progress", err);
	if (rc == UNIAP_OK)
		rc = commit(db, err);
out:
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

/* store_job_claim; idle_only: only a job of a tenant with no running job. */
static uniap_code sq_job_claim(struct store *base, const char *owner, int64_t lease_ms, int idle_only, int64_t *id,
			    struct store_lease *lease, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	int64_t found = 0, token = 0, none = 0, now = store_now_ms();
	sqlite3 *db;
	uniap_code rc;

	if (!owner || strlen(owner) != STORE_OWNER_CHARS)
		return err_set(err, UNIAP_E_ARG, "claim: owner: must be %d hex digits", STORE_OWNER_CHARS);
	if (lease_ms < 0)
		return err_set(err, UNIAP_E_ARG, "claim: lease_ms: must be >= 0, got %lld", (long long)lease_ms);
	db = conn_get(s);
	rc = begin_write(s, db, err);
	/* fair across tenants: each tenant's oldest queued job (jobs_tenant_state),
	 * the tenant with the fewest running jobs first, ties to the one served
	 * least recently (never served: first), then the oldest job */
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "SELECT q.id, (SELECT count(*) FROM jobs r WHERE r.tenant_id = q.tenant_id"
			      " AND r.state = 'running') AS running FROM (SELECT tenant_id, min(id) AS id FROM jobs"
			      " WHERE state = 'queued' GROUP BY tenant_id) q JOIN tenants t ON t.id = q.tenant_id"
			      " WHERE ?1 = 0 OR running = 0"
			      " ORDER BY running, coalesce(t.last_served_seq, 0), q.id LIMIT 1", &st, err);
	if (rc == UNIAP_OK) {
		int row = 0;

		sqlite3_bind_int(st, 1, idle_only);
		rc = step_row(db, st, &row, "pick a job", err);
		if (rc == UNIAP_OK && row)
			found = sqlite3_column_int64(st, 0);
		unprep(s, db, st);
		st = NULL;
	}
	if (rc != UNIAP_OK || !found)
		goto out;
	rc = query_int(db, "UPDATE tenants SET last_served_seq = (SELECT coalesce(max(last_served_seq), 0) + 1"
			   " FROM tenants) WHERE id = (SELECT tenant_id FROM jobs WHERE id = ?1)", found, &none, err);
	if (rc != UNIAP_OK)
		goto out;
	rc = prep_c(s, db, "UPDATE jobs SET state = 'running', started_at = ?1, lease_owner = ?3,"
		      " lease_expires_at = ?4, lease_token = lease_token + 1 WHERE id = ?2", &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, found);
	sqlite3_bind_text(st, 3, owner, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now + lease_ms);
	rc = step_done(db, st, "claim job", err);
	if (rc == UNIAP_OK)
		rc = query_int(db, "SELECT lease_token FROM jobs WHERE id = ?1", found, &token, err);
out:
	if (rc == UNIAP_OK)
		rc = commit(db, err);
	unprep(s, db, st);
	conn_put(s, db);
	if (rc == UNIAP_OK) {
		*id = found;
		if (lease && found) {
			memcpy(lease->owner, owner, STORE_OWNER_CHARS + 1);
			lease->token = token;
		}
	}
	return rc;
}



static uniap_code sq_job_renew(struct store *base, int64_t id, const struct store_lease *lease, int64_t lease_ms,
			   enum store_job_ask *asked, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	uniap_code rc;

	if (!lease || lease_ms < 0)
		return err_set(err, UNIAP_E_ARG, "renew: needs a lease and lease_ms >= 0");
	db = conn_get(s);
	rc = begin_write(s, db, err);
	if (rc == UNIAP_OK)
		rc = lease_check(db, id, lease, err);
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE jobs SET lease_expires_at = ?1 WHERE id = ?2", &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, store_now_ms() + lease_ms);
		sqlite3_bind_int64(st, 2, id);
		rc = step_done(db, st, "renew job lease", err);
	}
	unprep(s, db, st);
	st = NULL;
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "SELECT coalesce(ask, '') FROM jobs WHERE id = ?1", &st, err);
	if (rc == UNIAP_OK) {
		int row = 0;

		sqlite3_bind_int64(st, 1, id);
		rc = step_row(db, st, &row, "read the job's ask", err);
		if (rc == UNIAP_OK && asked)
			*asked = row ? store_job_ask_parse((const char *)sqlite3_column_text(st, 0)) : STORE_ASK_NONE;
	}
	if (rc == UNIAP_OK)
		rc = commit(db, err); /* on failure conn_put rolls back */
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

static uniap_code sq_job_ask(struct store *base, int64_t tenant_id, int64_t id, enum store_job_ask ask,
			     struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	enum store_job_state state;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = begin_write(s, db, err);

	if (rc == UNIAP_OK)
		rc = job_state_of(db, tenant_id, id, &state, err);
	if (rc == UNIAP_OK && state != STORE_JOB_RUNNING)
		rc = err_set(err, UNIAP_E_CONFLICT, "job %lld: %s, not running", (long long)id,
			     store_job_state_name(state));
	/* a cancel stays a cancel: a later stop does not soften it */
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE jobs SET ask = ?2 WHERE id = ?1 AND coalesce(ask, '') <> 'cancel'", &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, store_job_ask_name(ask), -1, SQLITE_STATIC);
		rc = step_done(db, st, "ask job", err);
	}
	if (rc == UNIAP_OK)
		rc = commit(db, err);
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

static uniap_code sq_jobs_recover(struct store *base, size_t *requeued, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	int changed = 0;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = begin_write(s, db, err);

	/* a job its client asked to cancel ends canceled rather than run again */
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE jobs SET state = 'canceled', finished_at = ?1, error = '" STORE_CANCELED_MSG "',"
			      " lease_owner = NULL, lease_expires_at = NULL WHERE state = 'running' AND ask = 'cancel'"
			      " AND (lease_expires_at IS NULL OR lease_expires_at <= ?1)", &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, store_now_ms());
		rc = step_done(db, st, "recover canceled jobs", err);
	}
	unprep(s, db, st);
	st = NULL;
	/* the token stays: the next claim makes it larger than any old owner's */
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE jobs SET state = 'queued', started_at = NULL,"
			      " progress_done = 0, progress_total = 0, best_tpi_s = NULL, bound_s = NULL,"
			      " lease_owner = NULL, lease_expires_at = NULL, ask = NULL"
			      " WHERE state = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= ?1)",
			      &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, store_now_ms());
		rc = step_done(db, st, "recover jobs", err);
	}
	if (rc == UNIAP_OK) {
		changed = sqlite3_changes(db);
		rc = commit(db, err);
	}
	unprep(s, db, st);
	conn_put(s, db);
	if (rc == UNIAP_OK)
		*requeued = (size_t)changed;
	return rc;
}

static uniap_code sq_jobs_purge(struct store *base, int64_t age_ms, size_t max, size_t *purged,
			    struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	int changed = 0;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = begin_write(s, db, err);

	/* finished_at is set exactly when a job reaches a final state; the partial
	 * index jobs_finished (0003) finds the oldest without a scan */
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs"
			      " WHERE finished_at IS NOT NULL AND finished_at < ?1"
			      " AND state IN ('succeeded', 'failed', 'canceled')"
			      " ORDER BY finished_at LIMIT ?2)", &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, store_now_ms() - age_ms);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)(max ? max : 1));
		rc = step_done(db, st, "purge jobs", err);
	}
	if (rc == UNIAP_OK) {
		changed = sqlite3_changes(db);
		if (changed > 0)
			mark_freed(s, db);
		rc = commit(db, err); /* on failure conn_put rolls back */
	}
	unprep(s, db, st);
	conn_put(s, db);
	if (purged)
		*purged = rc == UNIAP_OK ? (size_t)changed : 0;
	return rc;
}

static uniap_code sq_job_requeue(struct store *base, int64_t id, const struct store_lease *lease,
			     struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	int changed = 0;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = begin_write(s, db, err);

	if (rc == UNIAP_OK)
		rc = lease_check(db, id, lease, err);
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE jobs SET state = 'queued', started_at = NULL,"
			      " progress_done = 0, progress_total = 0, best_tpi_s = NULL, bound_s = NULL,"
			      " lease_owner = NULL, lease_expires_at = NULL, ask = NULL"
			      " WHERE id = ?1 AND state = 'running'", &st, err);
	if (rc == UNIAP_OK) {
		sqlite3_bind_int64(st, 1, id);
		rc = step_done(db, st, "requeue job", err);
	}
	if (rc == UNIAP_OK) {
		changed = sqlite3_changes(db);
		if (!changed)
			rc = err_set(err, UNIAP_E_CONFLICT, "job %lld: not running", (long long)id);
	}
	if (rc == UNIAP_OK)
		rc = commit(db, err); /* on failure conn_put rolls back */
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

static uniap_code sq_job_counts(struct store *base, int64_t counts[STORE_JOB_STATE_COUNT],
			    struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	sqlite3 *db = conn_get(s);
	uniap_code rc = prep_c(s, db, "SELECT state, count(*) FROM jobs GROUP BY state", &st, err);
	int row = 1;

	memset(counts, 0, STORE_JOB_STATE_COUNT * sizeof(counts[0]));
	while (rc == UNIAP_OK && (rc = step_row(db, st, &row, "count jobs", err)) == UNIAP_OK && row) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int k;

		for (k = 0; name && k < STORE_JOB_STATE_COUNT; k++)
			if (strcmp(name, store_job_state_name((enum store_job_state)k)) == 0)
				counts[k] = sqlite3_column_int64(st, 1);
	}
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

/* ---- cost cache ---- */

/*
 * The cache is a cache: its writes skip the fsync (synchronous=NORMAL, still
 * atomic in WAL mode; a power cut may lose the last entries, never corrupt
 * them).  cache_writes_end() restores FULL and gives the connection back.
 */
static uniap_code cache_writes(struct store_sqlite *s, sqlite3 *db, struct uniap_err *err)
{
	uniap_code rc = exec_sql(db, "PRAGMA synchronous=NORMAL", "pragma", err);

	return rc == UNIAP_OK ? begin_write(s, db, err) : rc;
}

static void cache_writes_end(struct store_sqlite *s, sqlite3 *db)
{
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_exec(db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
	conn_put(s, db);
}

static uniap_code sq_cache_get(struct store *base, const unsigned char key[STORE_SHA256_BYTES],
			   char **body, size_t *bytes, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	char *copy = NULL;
	size_t n = 0;
	int row = 0, touching = 0;
	sqlite3 *db = conn_get(s);
	/* the look-up is a plain read (no write lock for a miss); a hit's LRU
	 * touch is a write of its own, without fsync (cache_writes) */
	uniap_code rc = prep_c(s, db, "SELECT body FROM cost_cache WHERE key = ?1", &st, err);

	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_blob(st, 1, key, STORE_SHA256_BYTES, SQLITE_STATIC);
	rc = step_row(db, st, &row, "cache get", err);
	if (rc == UNIAP_OK && !row)
		rc = err_set(err, UNIAP_E_NOTFOUND, "cost cache: no entry");
	if (rc == UNIAP_OK)
		rc = column_dup(st, 0, &copy, &n, err);
	unprep(s, db, st);
	st = NULL;
	if (rc == UNIAP_OK) {
		touching = 1;
		rc = cache_writes(s, db, err);
	}
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "UPDATE cost_cache SET hits = hits + 1, last_used_at = ?1,"
			      " last_used_seq = (SELECT max(last_used_seq) + 1 FROM cost_cache)"
			      " WHERE key = ?2", &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_int64(st, 1, store_now_ms());
	sqlite3_bind_blob(st, 2, key, STORE_SHA256_BYTES, SQLITE_STATIC);
	rc = step_done(db, st, "cache touch", err);
	if (rc == UNIAP_OK)
		rc = commit(db, err);
out:
	unprep(s, db, st);
	if (touching)
		cache_writes_end(s, db);
	else
		conn_put(s, db); /* a miss changed nothing, not even the pragma */
	if (rc != UNIAP_OK) {
		free(copy);
		return rc;
	}
	*body = copy;
	*bytes = n;
	return UNIAP_OK;
}

static uniap_code sq_cache_put(struct store *base, const unsigned char key[STORE_SHA256_BYTES],
			   const void *body, size_t bytes, struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	int64_t total = 0, now = store_now_ms();
	sqlite3 *db;
	uniap_code rc;

	if ((int64_t)bytes > s->cache_max_bytes || bytes > (size_t)INT32_MAX)
		return err_set(err, UNIAP_E_LIMIT, "cost cache: an entry of %zu bytes exceeds"
			       " cache_max_bytes %lld", bytes, (long long)s->cache_max_bytes);
	if ((rc = refuse_when_full(s, "cost cache", err)) != UNIAP_OK)
		return rc;
	db = conn_get(s);
	rc = cache_writes(s, db, err);
	if (rc == UNIAP_OK)
		rc = prep_c(s, db, "INSERT INTO cost_cache (key, bytes, created_at, last_used_at,"
			      " last_used_seq, body) VALUES (?1, ?2, ?3, ?3,"
			      " (SELECT coalesce(max(last_used_seq), 0) + 1 FROM cost_cache), ?4)"
			      " ON CONFLICT (key) DO UPDATE SET bytes = excluded.bytes,"
			      " last_used_at = excluded.last_used_at,"
			      " last_used_seq = excluded.last_used_seq, body = excluded.body", &st, err);
	if (rc != UNIAP_OK)
		goto out;
	sqlite3_bind_blob(st, 1, key, STORE_SHA256_BYTES, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)bytes);
	sqlite3_bind_int64(st, 3, now);
	bind_bytes(st, 4, body, bytes);
	rc = step_done(db, st, "cache put", err);
	unprep(s, db, st);
	st = NULL;
	if (rc == UNIAP_OK)
		rc = query_int(db, "SELECT coalesce(sum(bytes), 0) FROM cost_cache", 0, &total, err);
	/* evict least recently used first; the new entry is the most recent and
	 * fits by itself, so it is never evicted */
	while (rc == UNIAP_OK && total > s->cache_max_bytes) {
		int64_t freed = 0;

		rc = query_int(db, "DELETE FROM cost_cache WHERE key = (SELECT key FROM cost_cache"
				   " ORDER BY last_used_seq LIMIT ?1) RETURNING bytes", 1, &freed, err);
		if (rc == UNIAP_OK && freed == 0 && sqlite3_changes(db) == 0)
			rc = err_set(err, UNIAP_E_INTERNAL, "cost cache: nothing left to evict");
		total -= freed;
	}
	if (rc == UNIAP_OK)
		rc = commit(db, err);
out:
	unprep(s, db, st);
	cache_writes_end(s, db);
	return rc;
}

static uniap_code sq_cache_stats(struct store *base, int64_t *entries, int64_t *bytes,
			     struct uniap_err *err)
{
	struct store_sqlite *s = sq_of(base);
	sqlite3_stmt *st = NULL;
	int row = 0;
	sqlite3 *db = conn_get(s);
	uniap_code rc = prep_c(s, db, "SELECT count(*), coalesce(sum(bytes), 0) FROM cost_cache", &st, err);

	if (rc == UNIAP_OK)
		rc = step_row(db, st, &row, "cache stats", err);
	if (rc == UNIAP_OK) {
		*entries = row ? sqlite3_column_int64(st, 0) : 0;
		*bytes = row ? sqlite3_column_int64(st, 1) : 0;
	}
	unprep(s, db, st);
	conn_put(s, db);
	return rc;
}

static const struct store_backend store_sqlite_backend = {
	.name = "sqlite",
	.close = sq_close,
	.health = sq_health,
	.probe = sq_probe,
	.schema_version = sq_schema_version,
	.tenant_add = sq_tenant_add,
	.tenant_list = sq_tenant_list,
	.tenant_revoke = sq_tenant_revoke,
	.tenant_set_quota = sq_tenant_set_quota,
	.tenant_get = sq_tenant_get,
	.tenant_lookup = sq_tenant_lookup,
	.doc_put = sq_doc_put,
	.doc_get = sq_doc_get,
	.doc_list = sq_doc_list,
	.doc_delete = sq_doc_delete,
	.job_create = sq_job_create,
	.job_find_idem = sq_job_find_idem,
	.job_set_body_hash = sq_job_set_body_hash,
	.job_get = sq_job_get,
	.job_version = sq_job_version,
	.job_list = sq_job_list,
	.job_transition = sq_job_transition,
	.job_progress = sq_job_progress,
	.job_delete = sq_job_delete,
	.job_claim = sq_job_claim,
	.job_renew = sq_job_renew,
	.job_ask = sq_job_ask,
	.job_requeue = sq_job_requeue,
	.job_counts = sq_job_counts,
	.jobs_purge = sq_jobs_purge,
	.jobs_recover = sq_jobs_recover,
	.cache_get = sq_cache_get,
	.cache_put = sq_cache_put,
	.cache_stats = sq_cache_stats,
	.listen = NULL,
};
