/*
 * test_store.c - the store (server/store.h) on either backend: migrations (fresh, reopen,
 * a newer database refused, embedded text equal to migrations/ files), tenants
 * and hashed keys, tenant isolation, idempotency, the job state machine,
 * recovery after close and after kill -9, per-tenant limits, the cost cache's LRU eviction,
 * and 4 threads writing jobs through the pool (also run under TSan).
 *
 * Every test works in its own temporary directory under /tmp and removes it.
 * Threads only record what they saw (cmocka is not thread-safe); the test
 * thread asserts.  Run from the repository root (reads migrations/).
 *
 * With UNIAP_TEST_PG set to a PostgreSQL URL (tests/cli/pg.sh starts a
 * server of its own and sets it), every test runs against that database
 * instead, its schema emptied before each test; the two that are about
 * SQLite files only (bad paths, a full disk) say they are skipped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "store.h"

struct fx {
	char dir[64];
	char path[512];             /* the SQLite file, or the PostgreSQL URL */
};

/* The PostgreSQL URL under test, NULL for SQLite files. */
static const char *pg_url(void)
{
	const char *u = getenv("UNIAP_TEST_PG");

	return u && *u ? u : NULL;
}

/* The backend's migrations: what a fresh database records. */
static size_t mig_count(void)
{
	return pg_url() ? store_pg_migrations_count : store_migrations_count;
}

static int mig_latest(void)
{
	return pg_url() ? store_pg_migrations[store_pg_migrations_count - 1].version
			: store_migrations[store_migrations_count - 1].version;
}

/* Runs sql on the PostgreSQL database under test; the first column of the
 * first row as an integer (0 when none). */
static int64_t pg_sql(const char *sql)
{
	PGconn *c = PQconnectdb(pg_url());
	PGresult *r;
	int64_t v = 0;

	if (PQstatus(c) != CONNECTION_OK)
		print_error("postgres: %s", PQerrorMessage(c));
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
		print_error("postgres: %s: %s", sql, PQresultErrorMessage(r));
	assert_true(PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK);
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
		v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	PQfinish(c);
	return v;
}


/* Two instance ids (STORE_OWNER_CHARS hex digits) for the lease tests; a
 * lease of 0 ms runs out at once, as a dead runner's would. */
#define OWNER_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define OWNER_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/uniap-store-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/store.db", f->dir);
	if (pg_url()) {
		/* every test on an empty database: the schema dropped, made again by store_open */
		snprintf(f->path, sizeof(f->path), "%s", pg_url());
		pg_sql("SET client_min_messages = warning; DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public");
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	static const char *const suffixes[] = { "", "-wal", "-shm", "-journal", "-reserve" };
	char p[600];

	for (size_t i = 0; !pg_url() && i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", f->path, suffixes[i]);
		unlink(p);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

static struct store *open_ok(const struct fx *f, int pool, int64_t cache_max_bytes)
{
	struct store_opts o = { .pool_size = pool, .cache_max_bytes = cache_max_bytes };
	struct uniap_err err = { 0 };
	struct store *s = NULL;
	uniap_code rc = store_open(f->path, &o, &s, &err);

	if (rc != UNIAP_OK)
		print_error("store_open: %s\n", err.msg);
	assert_int_equal(rc, UNIAP_OK);
	return s;
}

/* Owned contents of a file (NUL-terminated), NULL when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!fp)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		if (buf) {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	fclose(fp);
	return buf;
}

/* Runs one SQL statement on the file through its own connection; returns the
 * first column of the first row as an integer (0 when none). */
static int64_t raw_sql(const struct fx *f, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = 0;

	if (pg_url())
		return pg_sql(sql);
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	int rc = sqlite3_step(st);
	assert_true(rc == SQLITE_ROW || rc == SQLITE_DONE);
	if (rc == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* 1 when needle[0..nlen) occurs in hay[0..hlen) (memmem is a GNU extension). */
static int contains(const char *hay, size_t hlen, const void *needle, size_t nlen)
{
	for (size_t i = 0; i + nlen <= hlen; i++)
		if (memcmp(hay + i, needle, nlen) == 0)
			return 1;
	return 0;
}

static void hex(const unsigned char *h, char out[65])
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* ---- hashing ---- */

static void test_sha256(void **state)
{
	static const struct { const char *in; const char *want; } cases[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
		  "klmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	unsigned char h[32];
	char got[65];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		store_sha256(cases[i].in, strlen(cases[i].in), h);
		hex(h, got);
		assert_string_equal(got, cases[i].want);
	}
}

/* ---- migrations ---- */

static void test_migrations_fresh_and_reopen(void **state)
{
	struct fx *f = *state;
	int latest = mig_latest(), v = 0;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);

	assert_int_equal(store_schema_version(s, &v, &err), UNIAP_OK);
	assert_int_equal(v, latest);
	assert_string_equal(store_backend_name(s), pg_url() ? "postgres" : "sqlite");
	store_close(s);
	assert_int_equal(raw_sql(f, "SELECT count(*) FROM schema_migrations"), (int64_t)mig_count());
	assert_int_equal(raw_sql(f, pg_url() ? "SELECT count(*) FROM information_schema.tables"
					      " WHERE table_schema = 'public'"
					      " AND table_name IN ('tenants', 'documents', 'jobs', 'cost_cache')"
					    : "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
					      " AND name IN ('tenants', 'documents', 'jobs', 'cost_cache')"), 4);

	/* reopening applies nothing twice */
	s = open_ok(f, 2, 0);
	assert_int_equal(store_schema_version(s, &v, &err), UNIAP_OK);
	assert_int_equal(v, latest);
	store_close(s);
	assert_int_equal(raw_sql(f, "SELECT count(*) FROM schema_migrations"), (int64_t)mig_count());
	if (!pg_url())
		assert_int_equal(raw_sql(f, "SELECT count(*) FROM pragma_journal_mode"
					    " WHERE journal_mode = 'wal'"), 1);
}

static void test_migrations_newer_refused(void **state)
{
	struct fx *f = *state;
	int latest = mig_latest();
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 1, 0);
	char want[128], sql[160];

	store_close(s);
	snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations VALUES (%d, '9999_future.sql', 0)",
		 latest + 1);
	raw_sql(f, sql);
	s = NULL;
	assert_int_equal(store_open(f->path, NULL, &s, &err), UNIAP_E_INVALID);
	assert_null(s);
	snprintf(want, sizeof(want), "database schema version %d is newer than this uniapd (%d)",
		 latest + 1, latest);
	assert_string_equal(err.msg, want);
}

static void test_migrations_bad_paths(void **state)
{
	struct uniap_err err = { 0 };
	struct store *s = NULL;
	struct store_opts o = { .pool_size = STORE_POOL_MAX + 1 };

	(void)state;
	if (pg_url()) {
		/* a server that does not answer (a port nobody listens on; 1 is privileged) */
		assert_int_equal(store_open("postgres://uniap@127.0.0.1:1/none?connect_timeout=2", NULL, &s, &err),
				 UNIAP_E_UNAVAILABLE);
		assert_null(s);
		assert_null(strstr(err.msg, "secret"));
		assert_int_equal(store_open("postgres://uniap:secret@127.0.0.1:1/none?connect_timeout=2", NULL,
					    &s, &err), UNIAP_E_UNAVAILABLE);
		assert_null(strstr(err.msg, "secret")); /* a password is never echoed */
		return;
	}
	assert_int_equal(store_open(":memory:", NULL, &s, &err), UNIAP_E_ARG);
	assert_int_equal(store_open("", NULL, &s, &err), UNIAP_E_ARG);
	assert_int_equal(store_open("/tmp/x.db", &o, &s, &err), UNIAP_E_ARG);
	assert_int_equal(store_open("/nonexistent-dir/x/y.db", NULL, &s, &err), UNIAP_E_IO);
	assert_null(s);
}

static int is_sql_name(const char *n)
{
	size_t len = strlen(n);

	return len > 9 && strcmp(n + len - 4, ".sql") == 0;
}

/* The files of dir against the embedded list ms[0..count). */
static void migrations_equal_files(const char *dir, const struct store_migration *ms, size_t count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t files = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		if (is_sql_name(e->d_name))
			files++;
	closedir(d);
	assert_int_equal(files, count);
	for (size_t i = 0; i < count; i++) {
		const struct store_migration *m = &ms[i];
		char path[256], prefix[8];
		size_t len = 0;
		char *text;

		assert_int_equal(m->version, (int)i + 1);   /* in order, no gaps */
		snprintf(prefix, sizeof(prefix), "%04d_", m->version);
		assert_memory_equal(m->name, prefix, 5);
		snprintf(path, sizeof(path), "%s/%s", dir, m->name);
		text = slurp(path, &len);
		assert_non_null(text);
		assert_int_equal(len, strlen(m->sql));
		assert_memory_equal(text, m->sql, len);
		free(text);
	}
}

static void test_migrations_embedded_equal_files(void **state)
{
	(void)state;
	migrations_equal_files("migrations", store_migrations, store_migrations_count);
	migrations_equal_files("migrations/postgres", store_pg_migrations, store_pg_migrations_count);
}

/* ---- tenants ---- */

static void test_tenants(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key_a[STORE_KEY_CHARS + 1], key_b[STORE_KEY_CHARS + 1], key_c[STORE_KEY_CHARS + 1];
	unsigned char hash_a[32];
	struct store_tenant t, *list = NULL;
	int64_t a = 0, b = 0, c = 0, next = -1;
	size_t n = 0, flen = 0;
	char *file;

	assert_int_equal(store_tenant_add(s, "alpha", 2, 1000, &a, key_a, &err), UNIAP_OK);
	assert_int_equal(store_tenant_add(s, "beta", 2, 1000, &b, key_b, &err), UNIAP_OK);
	assert_int_equal(store_tenant_add(s, "gamma", 2, 1000, &c, key_c, &err), UNIAP_OK);
	assert_int_equal(strlen(key_a), STORE_KEY_CHARS);
	assert_memory_equal(key_a, "uk_", 3);
	assert_string_not_equal(key_a, key_b);
	assert_int_equal(store_tenant_add(s, "alpha", 1, 1, &c, key_c, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "tenant.name"));
	assert_int_equal(store_tenant_add(s, "", 1, 1, &c, key_c, &err), UNIAP_E_INVALID);

	assert_int_equal(store_tenant_lookup(s, key_a, &t, &err), UNIAP_OK);
	assert_int_equal(t.id, a);
	assert_string_equal(t.name, "alpha");
	assert_int_equal(t.max_concurrent_jobs, 2);
	assert_int_equal(t.max_stored_bytes, 1000);
	assert_int_equal(t.revoked_at_ms, 0);
	assert_int_equal(store_tenant_lookup(s, key_b, &t, &err), UNIAP_OK);
	assert_int_equal(t.id, b);
	key_c[10] = key_c[10] == '0' ? '1' : '0';   /* a near miss */
	assert_int_equal(store_tenant_lookup(s, key_c, &t, &err), UNIAP_E_NOTFOUND);
	assert_int_equal(store_tenant_lookup(s, "nope", &t, &err), UNIAP_E_NOTFOUND);

	{
		/* revoking cancels the tenant's queued jobs at once, never another tenant's; its
		 * running job is left to the server running it, which asks store_tenant_revoked */
		int64_t jq1, jr, claimed = 0;
		int existed, revoked = 1;
		size_t canceled = 0;
		struct store_job job;

		assert_int_equal(store_job_create(s, b, NULL, "{}", 2, &jr, &existed, &err), UNIAP_OK);
		assert_int_equal(store_job_claim(s, OWNER_A, 0, &claimed, NULL, &err), UNIAP_OK);
		assert_int_equal(claimed, jr);
		assert_int_equal(store_job_create(s, b, NULL, "{}", 2, &jq1, &existed, &err), UNIAP_OK);
		assert_int_equal(store_tenant_revoked(s, b, &revoked, &err), UNIAP_OK);
		assert_int_equal(revoked, 0);
		assert_int_equal(store_tenant_revoke(s, b, &canceled, &err), UNIAP_OK);
		assert_int_equal(canceled, 1); /* beta may have 2 jobs: one running, one queued */
		assert_int_equal(store_tenant_revoked(s, b, &revoked, &err), UNIAP_OK);
		assert_int_equal(revoked, 1);
		assert_int_equal(store_tenant_revoked(s, a, &revoked, &err), UNIAP_OK);
		assert_int_equal(revoked, 0);
		assert_int_equal(store_job_get(s, b, jq1, &job, &err), UNIAP_OK);
		assert_int_equal(job.state, STORE_JOB_CANCELED);
		assert_non_null(strstr(job.error, "tenant was revoked"));
		store_job_release(&job);
		assert_int_equal(store_job_get(s, b, jr, &job, &err), UNIAP_OK);
		assert_int_equal(job.state, STORE_JOB_RUNNING);
		store_job_release(&job);
		/* the queue no longer holds b's jobs */
		assert_int_equal(store_job_claim(s, OWNER_A, 0, &claimed, NULL, &err), UNIAP_OK);
		assert_int_equal(claimed, 0);
	}
	/* a revoked key is known but refused (403), and says so; an unknown one stays unknown */
	assert_int_equal(store_tenant_lookup(s, key_b, &t, &err), UNIAP_E_FORBIDDEN);
	assert_int_equal(t.id, b);
	assert_true(t.revoked_at_ms > 0);
	assert_non_null(strstr(err.msg, "was revoked"));
	assert_int_equal(store_tenant_lookup(s, key_c, &t, &err), UNIAP_E_NOTFOUND);
	assert_int_equal(store_tenant_lookup(s, key_a, &t, &err), UNIAP_OK);
	assert_int_equal(store_tenant_revoke(s, 999, NULL, &err), UNIAP_E_NOTFOUND);

	/* quotas: only the fields >= 0 change; the job budget starts at 0 (none of its own) */
	{
		struct store_tenant_quota q = { -1, -1, 12.5 }, q2 = { 5, -1, -1 }, bad = { -1, -1, INFINITY };

		assert_int_equal(store_tenant_get(s, a, &t, &err), UNIAP_OK);
		assert_string_equal(t.name, "alpha");
		assert_true(t.max_job_worker_s == 0);
		assert_int_equal(store_tenant_set_quota(s, a, &q, &err), UNIAP_OK);
		assert_int_equal(store_tenant_set_quota(s, a, &q2, &err), UNIAP_OK);
		assert_int_equal(store_tenant_lookup(s, key_a, &t, &err), UNIAP_OK);
		assert_int_equal(t.max_concurrent_jobs, 5);
		assert_int_equal(t.max_stored_bytes, 1000);
		assert_true(t.max_job_worker_s == 12.5);
		assert_int_equal(store_tenant_set_quota(s, a, &bad, &err), UNIAP_E_INVALID);
		assert_non_null(strstr(err.msg, "max_job_worker_s"));
		assert_int_equal(store_tenant_set_quota(s, 999, &q, &err), UNIAP_E_NOTFOUND);
		assert_int_equal(store_tenant_get(s, 999, &t, &err), UNIAP_E_NOTFOUND);
		q2.max_concurrent_jobs = 2;
		assert_int_equal(store_tenant_set_quota(s, a, &q2, &err), UNIAP_OK);
	}

	/* pages of 2 */
	assert_int_equal(store_tenant_list(s, 0, 2, &list, &n, &next, &err), UNIAP_OK);
	assert_int_equal(n, 2);
	assert_int_equal(list[0].id, a);
	assert_true(list[0].max_job_worker_s == 12.5);
	assert_true(list[1].max_job_worker_s == 0);
	assert_int_equal(list[1].id, b);
	assert_true(list[1].revoked_at_ms > 0);
	assert_int_equal(next, b);
	free(list);
	assert_int_equal(store_tenant_list(s, next, 2, &list, &n, &next, &err), UNIAP_OK);
	assert_int_equal(n, 1);
	assert_string_equal(list[0].name, "gamma");
	assert_int_equal(next, 0);
	free(list);
	store_close(s);

	if (pg_url()) {
		/* only the hash is in the database: no row of it, as text, holds the key */
		char sql[400], hx[65], part[33];

		store_sha256(key_a, strlen(key_a), hash_a);
		hex(hash_a, hx);
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM tenants WHERE name = 'alpha' AND key_hash = '\\x%s'", hx);
		assert_int_equal(raw_sql(f, sql), 1);
		memcpy(part, key_a + 3, 32);
		part[32] = '\0';
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM tenants t WHERE t::text LIKE '%%%s%%'", part);
		assert_int_equal(raw_sql(f, sql), 0);
		return;
	}
	/* only the hash is in the file (closing checkpointed the WAL into it) */
	file = slurp(f->path, &flen);
	assert_non_null(file);
	store_sha256(key_a, strlen(key_a), hash_a);
	assert_false(contains(file, flen, key_a, strlen(key_a)));
	assert_false(contains(file, flen, key_a + 3, 32));
	assert_true(contains(file, flen, hash_a, sizeof(hash_a)));
	assert_true(contains(file, flen, "alpha", 5));
	free(file);
}

/* ---- documents and isolation ---- */

static void test_documents_and_isolation(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key[STORE_KEY_CHARS + 1];
	int64_t a, b, ids[5], next = -1, job = 0, cursor = 0;
	unsigned char h[32];
	struct store_doc d, *docs = NULL;
	struct store_job j, *jobs = NULL;
	size_t n = 0, total = 0;
	int existed = -1;

	assert_int_equal(store_tenant_add(s, "a", 5, 100000, &a, key, &err), UNIAP_OK);
	assert_int_equal(store_tenant_add(s, "b", 5, 100000, &b, key, &err), UNIAP_OK);
	for (int i = 0; i < 5; i++) {
		char name[16], body[32];

		snprintf(name, sizeof(name), "doc%d", i);
		snprintf(body, sizeof(body), "{\"n\":%d}", i);
		assert_int_equal(store_doc_put(s, a, i % 2 ? STORE_DOC_MODEL : STORE_DOC_CLUSTER, name,
					       body, strlen(body), &ids[i], &err), UNIAP_OK);
	}
	assert_int_equal(store_doc_get(s, a, ids[1], &d, &err), UNIAP_OK);
	assert_string_equal(d.body, "{\"n\":1}");
	assert_int_equal(d.bytes, 7);
	assert_int_equal(d.kind, STORE_DOC_MODEL);
	assert_string_equal(d.name, "doc1");
	store_sha256("{\"n\":1}", 7, h);
	assert_memory_equal(d.sha256, h, 32);
	store_doc_release(&d);

	/* pages of 2: 2 + 2 + 1 */
	do {
		assert_int_equal(store_doc_list(s, a, cursor, 2, &docs, &n, &next, &err), UNIAP_OK);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(docs[i].id, ids[total + i]);
			assert_null(docs[i].body);
		}
		total += n;
		free(docs);
		cursor = next;
	} while (next);
	assert_int_equal(total, 5);

	/* tenant b sees none of a's documents */
	assert_int_equal(store_doc_get(s, b, ids[0], &d, &err), UNIAP_E_NOTFOUND);
	assert_int_equal(store_doc_delete(s, b, STORE_DOC_CLUSTER, ids[0], &err), UNIAP_E_NOTFOUND);
	/* the kind is checked: a's cluster is no model */
	assert_int_equal(store_doc_delete(s, a, STORE_DOC_MODEL, ids[0], &err), UNIAP_E_NOTFOUND);
	assert_int_equal(store_doc_list(s, b, 0, 10, &docs, &n, &next, &err), UNIAP_OK);
	assert_int_equal(n, 0);
	free(docs);
	assert_int_equal(store_doc_delete(s, a, STORE_DOC_CLUSTER, ids[0], &err), UNIAP_OK);
	assert_int_equal(store_doc_get(s, a, ids[0], &d, &err), UNIAP_E_NOTFOUND);

	/* nor of a's jobs */
	assert_int_equal(store_job_create(s, a, NULL, "{}", 2, &job, &existed, &err), UNIAP_OK);
	assert_int_equal(existed, 0);
	assert_int_equal(store_job_get(s, b, job, &j, &err), UNIAP_E_NOTFOUND);
	assert_int_equal(store_job_transition(s, b, job, STORE_JOB_CANCELED, NULL, 0, NULL, NULL, &err),
			 UNIAP_E_NOTFOUND);
	assert_int_equal(store_job_list(s, b, NULL, 0, 10, &jobs, &n, &next, &err), UNIAP_OK);
	assert_int_equal(n, 0);
	store_jobs_free(jobs, n);
	assert_int_equal(store_job_list(s, a, NULL, 0, 10, &jobs, &n, &next, &err), UNIAP_OK);
	assert_int_equal(n, 1);
	assert_int_equal(jobs[0].id, job);
	store_jobs_free(jobs, n);
	assert_int_equal(store_job_get(s, a, job, &j, &err), UNIAP_OK);
	assert_string_equal(j.request, "{}");
	assert_int_equal(j.state, STORE_JOB_QUEUED);
	store_job_release(&j);
	store_close(s);
}

/* ---- jobs ---- */

static void test_idempotency(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key[STORE_KEY_CHARS + 1];
	int64_t a, b, j1 = 0, j2 = 0, j3 = 0;
	int existed = -1;

	assert_int_equal(store_tenant_add(s, "a", 10, (int64_t)1 << 30, &a, key, &err), UNIAP_OK);
	assert_int_equal(store_tenant_add(s, "b", 10, (int64_t)1 << 30, &b, key, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, a, "k1", "{\"x\":1}", 7, &j1, &existed, &err), UNIAP_OK);
	assert_int_equal(existed, 0);
	assert_int_equal(store_job_create(s, a, "k1", "{\"x\":1}", 7, &j2, &existed, &err), UNIAP_OK);
	assert_int_equal(existed, 1);
	assert_int_equal(j2, j1);
	assert_int_equal(store_job_create(s, a, "k1", "{\"x\":2}", 7, &j3, &existed, &err),
			 UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "Idempotency-Key"));
	/* the key is per tenant */
	assert_int_equal(store_job_create(s, b, "k1", "{\"x\":2}", 7, &j3, &existed, &err), UNIAP_OK);
	assert_int_equal(existed, 0);
	assert_true(j3 != j1);
	assert_int_equal(store_job_create(s, a, "", "{}", 2, &j3, &existed, &err), UNIAP_E_INVALID);
	{
		/* the kind of migration 0005: kept and read back; a key names one kind's request */
		struct store_job j;
		int64_t jc = 0;

		assert_int_equal(store_job_create_kind(s, a, STORE_JOB_CALIBRATION, "k1", "{\"x\":1}", 7, &jc,
						       &existed, &err), UNIAP_E_INVALID);
		assert_int_equal(store_job_create_kind(s, a, STORE_JOB_CALIBRATION, "kc", "{\"x\":1}", 7, &jc,
						       &existed, &err), UNIAP_OK);
		assert_int_equal(store_job_get(s, a, jc, &j, &err), UNIAP_OK);
		assert_int_equal(j.kind, STORE_JOB_CALIBRATION);
		assert_string_equal(store_job_kind_name(j.kind), "calibration");
		store_job_release(&j);
		assert_int_equal(store_job_get(s, a, j1, &j, &err), UNIAP_OK);
		assert_int_equal(j.kind, STORE_JOB_PLAN);
		store_job_release(&j);
		assert_string_equal(store_job_kind_name(STORE_JOB_KIND_COUNT), "unknown");
	}
	{
		/* the body hash of migration 0002: found by key, scoped by tenant */
		unsigned char h[STORE_SHA256_BYTES], got[STORE_SHA256_BYTES];
		int64_t id = 0;
		int has = -1;

		store_sha256("body", 4, h);
		assert_int_equal(store_job_find_idem(s, a, "k1", &id, got, &has, &err), UNIAP_OK);
		assert_int_equal(id, j1);
		assert_int_equal(has, 0);
		assert_int_equal(store_job_set_body_hash(s, a, j1, h, &err), UNIAP_OK);
		assert_int_equal(store_job_find_idem(s, a, "k1", &id, got, &has, &err), UNIAP_OK);
		assert_int_equal(has, 1);
		assert_memory_equal(got, h, sizeof(h));
		assert_int_equal(store_job_set_body_hash(s, b, j1, h, &err), UNIAP_E_NOTFOUND);
		assert_int_equal(store_job_find_idem(s, a, "k2", &id, got, &has, &err), UNIAP_E_NOTFOUND);
	}
	store_close(s);
}

static void drive(struct store *s, int64_t t, int64_t id, enum store_job_state to)
{
	struct uniap_err err = { 0 };

	switch (to) {
	case STORE_JOB_QUEUED: return;
	case STORE_JOB_CANCELED:
		assert_int_equal(store_job_transition(s, t, id, to, NULL, 0, "by user", NULL, &err), UNIAP_OK);
		return;
	default:
		assert_int_equal(store_job_transition(s, t, id, STORE_JOB_RUNNING, NULL, 0, NULL, NULL, &err),
				 UNIAP_OK);
		if (to != STORE_JOB_RUNNING)
			assert_int_equal(store_job_transition(s, t, id, to, "{\"ok\":1}", 8, "boom", NULL,
							      &err), UNIAP_OK);
	}
}

static void test_state_machine(void **state)
{
	/* legal[from][to] */
	static const int legal[STORE_JOB_STATE_COUNT][STORE_JOB_STATE_COUNT] = {
		/*              queued running succeeded failed canceled */
		[STORE_JOB_QUEUED] = { 0, 1, 0, 0, 1 },
		[STORE_JOB_RUNNING] = { 0, 0, 1, 1, 1 },
		[STORE_JOB_SUCCEEDED] = { 0, 0, 0, 0, 0 },
		[STORE_JOB_FAILED] = { 0, 0, 0, 0, 0 },
		[STORE_JOB_CANCELED] = { 0, 0, 0, 0, 0 },
	};
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 1, 0);
	char key[STORE_KEY_CHARS + 1];
	struct store_job j;
	int64_t t, id;
	int existed;

	assert_int_equal(store_tenant_add(s, "t", 100, (int64_t)1 << 30, &t, key, &err), UNIAP_OK);
	for (int from = 0; from < STORE_JOB_STATE_COUNT; from++)
		for (int to = 0; to < STORE_JOB_STATE_COUNT; to++) {
			assert_int_equal(store_job_transition_legal(from, to), legal[from][to]);
			assert_int_equal(store_job_create(s, t, NULL, "{}", 2, &id, &existed, &err),
					 UNIAP_OK);
			drive(s, t, id, from);
			uniap_code rc = store_job_transition(s, t, id, to, "{\"r\":2}", 7, "e2", NULL, &err);
			assert_int_equal(rc, legal[from][to] ? UNIAP_OK : UNIAP_E_INVALID);
			if (rc != UNIAP_OK)
				assert_non_null(strstr(err.msg, "cannot go from"));
			assert_int_equal(store_job_get(s, t, id, &j, &err), UNIAP_OK);
			assert_int_equal(j.state, legal[from][to] ? to : from);
			if (j.state == STORE_JOB_SUCCEEDED) {
				assert_non_null(j.result);
				assert_true(j.finished_at_ms > 0);
			}
			if (j.state == STORE_JOB_RUNNING)
				assert_true(j.started_at_ms > 0 && j.finished_at_ms == 0);
			if (j.state == STORE_JOB_FAILED)
				assert_non_null(j.error);
			store_job_release(&j);
		}
	store_close(s);
}

/* Retention: only finished jobs older than the cut go, oldest first, of every
 * tenant, in batches; queued and running ones stay; a purged job's
 * Idempotency-Key makes a new job. */
static void test_purge(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key[STORE_KEY_CHARS + 1], idem[16];
	int64_t t[2], id[2][STORE_JOB_STATE_COUNT], again;
	size_t purged = 99, total = 0, calls = 0;
	struct store_job j;
	int existed;

	assert_int_equal(store_tenant_add(s, "a", 100, (int64_t)1 << 30, &t[0], key, &err), UNIAP_OK);
	assert_int_equal(store_tenant_add(s, "b", 100, (int64_t)1 << 30, &t[1], key, &err), UNIAP_OK);
	for (int k = 0; k < 2; k++)
		for (int st = 0; st < STORE_JOB_STATE_COUNT; st++) {
			snprintf(idem, sizeof(idem), "k%d", st);
			assert_int_equal(store_job_create(s, t[k], idem, "{}", 2, &id[k][st], &existed, &err),
					 UNIAP_OK);
			drive(s, t[k], id[k][st], (enum store_job_state)st);
		}
	/* nothing finished more than an hour ago */
	assert_int_equal(store_jobs_purge(s, 3600 * 1000, 100, &purged, &err), UNIAP_OK);
	assert_int_equal(purged, 0);
	usleep(5000); /* every finished job is now some milliseconds old */
	/* two at a time until a call purges fewer than it may */
	do {
		assert_int_equal(store_jobs_purge(s, 1, 2, &purged, &err), UNIAP_OK);
		assert_true(purged <= 2);
		total += purged;
		calls++;
	} while (purged == 2 && calls < 10);
	assert_int_equal(total, 6); /* succeeded, failed, canceled of two tenants */
	for (int k = 0; k < 2; k++)
		for (int st = 0; st < STORE_JOB_STATE_COUNT; st++) {
			int kept = st == STORE_JOB_QUEUED || st == STORE_JOB_RUNNING;

			assert_int_equal(store_job_get(s, t[k], id[k][st], &j, &err),
					 kept ? UNIAP_OK : UNIAP_E_NOTFOUND);
			if (kept) {
				assert_int_equal(j.state, st);
				store_job_release(&j);
			}
		}
	/* a purged job's key is free again; a kept one's still finds its job */
	snprintf(idem, sizeof(idem), "k%d", STORE_JOB_SUCCEEDED);
	assert_int_equal(store_job_create(s, t[0], idem, "{}", 2, &again, &existed, &err), UNIAP_OK);
	assert_false(existed);
	assert_true(again != id[0][STORE_JOB_SUCCEEDED]);
	snprintf(idem, sizeof(idem), "k%d", STORE_JOB_QUEUED);
	assert_int_equal(store_job_create(s, t[0], idem, "{}", 2, &again, &existed, &err), UNIAP_OK);
	assert_true(existed);
	assert_int_equal(again, id[0][STORE_JOB_QUEUED]);
	store_close(s);
}

static void test_progress_and_recovery(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key[STORE_KEY_CHARS + 1];
	int64_t t, run, queued, claimed = -1;
	double tpi = 0.75;
	size_t requeued = 99;
	struct store_job j;
	int existed;

	assert_int_equal(store_tenant_add(s, "t", 10, (int64_t)1 << 30, &t, key, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{\"a\":1}", 7, &run, &existed, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{\"a\":2}", 7, &queued, &existed, &err),
			 UNIAP_OK);
	assert_int_equal(store_job_progress(s, run, 1, 4, NULL, NULL, NULL, &err), UNIAP_E_INVALID);
	assert_int_equal(store_job_claim(s, OWNER_A, 0, &claimed, NULL, &err), UNIAP_OK);
	assert_int_equal(claimed, run);
	assert_int_equal(store_job_progress(s, run, 5, 4, NULL, NULL, NULL, &err), UNIAP_E_ARG);
	assert_int_equal(store_job_progress(s, run, 2, 4, &tpi, NULL, NULL, &err), UNIAP_OK);
	assert_int_equal(store_job_get(s, STORE_ANY_TENANT, run, &j, &err), UNIAP_OK);
	assert_int_equal(j.state, STORE_JOB_RUNNING);
	assert_int_equal(j.progress_done, 2);
	assert_int_equal(j.progress_total, 4);
	assert_true(j.has_best_tpi);
	assert_true(j.best_tpi_s == 0.75);
	{
		/* every write grows the version (migration 0004): claim, then progress */
		int64_t v = -1, v2 = -1;

		assert_true(j.version >= 2);
		assert_int_equal(store_job_version(s, t, run, &v, &err), UNIAP_OK);
		assert_int_equal(v, j.version);
		assert_int_equal(store_job_version(s, t + 1, run, &v, &err), UNIAP_E_NOTFOUND);
		assert_int_equal(store_job_version(s, t, queued, &v2, &err), UNIAP_OK);
		assert_int_equal(v2, 0);
		assert_int_equal(store_job_progress(s, run, 3, 4, &tpi, NULL, NULL, &err), UNIAP_OK);
		assert_int_equal(store_job_version(s, STORE_ANY_TENANT, run, &v2, &err), UNIAP_OK);
		assert_int_equal(v2, j.version + 1);
	}
	{
		/* the proven bound (migration 0009): written with the counts, NULL clears it, a
		 * change of the bound alone is a new version, a negative one is refused */
		double lb = 0.5, bad = -1;
		int64_t v = -1, v2 = -1;
		struct store_job j2;

		assert_false(j.has_bound);
		assert_int_equal(store_job_progress(s, run, 3, 4, NULL, &lb, NULL, &err), UNIAP_OK);
		assert_int_equal(store_job_get(s, t, run, &j2, &err), UNIAP_OK);
		assert_true(j2.has_bound);
		assert_true(j2.bound_s == 0.5);
		assert_true(j2.best_tpi_s == 0.75); /* NULL keeps the best */
		store_job_release(&j2);
		assert_int_equal(store_job_version(s, t, run, &v, &err), UNIAP_OK);
		lb = 0.625;
		assert_int_equal(store_job_progress(s, run, 3, 4, &tpi, &lb, NULL, &err), UNIAP_OK);
		assert_int_equal(store_job_version(s, t, run, &v2, &err), UNIAP_OK);
		assert_int_equal(v2, v + 1);
		assert_int_equal(store_job_progress(s, run, 3, 4, &tpi, &bad, NULL, &err), UNIAP_E_ARG);
		assert_non_null(strstr(err.msg, "bound_s"));
		assert_int_equal(store_job_get(s, t, run, &j2, &err), UNIAP_OK);
		assert_true(j2.bound_s == 0.625);
		store_job_release(&j2);
		assert_int_equal(store_job_progress(s, run, 3, 4, &tpi, NULL, NULL, &err), UNIAP_OK);
		assert_int_equal(store_job_get(s, t, run, &j2, &err), UNIAP_OK);
		assert_false(j2.has_bound);
		store_job_release(&j2);
		lb = 0.5;
		assert_int_equal(store_job_progress(s, run, 3, 4, &tpi, &lb, NULL, &err), UNIAP_OK);
	}
	store_job_release(&j);
	store_close(s);   /* the runner "dies" without finishing */

	s = open_ok(f, 2, 0);
	assert_int_equal(store_jobs_recover(s, &requeued, &err), UNIAP_OK);
	assert_int_equal(requeued, 1);
	assert_int_equal(store_job_get(s, t, run, &j, &err), UNIAP_OK);
	assert_int_equal(j.state, STORE_JOB_QUEUED);
	assert_int_equal(j.progress_done, 0);
	assert_false(j.has_best_tpi);
	assert_false(j.has_bound);
	assert_int_equal(j.started_at_ms, 0);
	store_job_release(&j);
	assert_int_equal(store_jobs_recover(s, &requeued, &err), UNIAP_OK);
	assert_int_equal(requeued, 0);
	/* both are found again, oldest first */
	assert_int_equal(store_job_claim(s, OWNER_A, 0, &claimed, NULL, &err), UNIAP_OK);
	assert_int_equal(claimed, run);
	assert_int_equal(store_job_claim(s, OWNER_A, 0, &claimed, NULL, &err), UNIAP_OK);
	assert_int_equal(claimed, queued);
	assert_int_equal(store_job_claim(s, OWNER_A, 0, &claimed, NULL, &err), UNIAP_OK);
	assert_int_equal(claimed, 0);
	store_close(s);
}

/* The child of test_kill9_recovery: opens the store, leaves one job running
 * and one queued, and kills itself without closing anything.  No cmocka here;
 * a failure is exit status 1 (the parent sees no SIGKILL). */
static void kill9_child(const struct fx *f)
{
	struct store_opts o = { .pool_size = 2 };
	struct uniap_err err = { 0 };
	char key[STORE_KEY_CHARS + 1];
	struct store *s = NULL;
	int64_t t, a, b, claimed = 0;
	double tpi = 2.5;
	int existed;

	if (store_open(f->path, &o, &s, &err) != UNIAP_OK ||
	    store_tenant_add(s, "t", 10, (int64_t)1 << 30, &t, key, &err) != UNIAP_OK ||
	    store_job_create(s, t, "a", "{\"a\":1}", 7, &a, &existed, &err) != UNIAP_OK ||
	    store_job_create(s, t, "b", "{\"b\":1}", 7, &b, &existed, &err) != UNIAP_OK ||
	    store_job_claim(s, OWNER_A, 0, &claimed, NULL, &err) != UNIAP_OK || claimed != a ||
	    store_job_progress(s, a, 3, 9, &tpi, NULL, NULL, &err) != UNIAP_OK)
		_exit(1);
	kill(getpid(), SIGKILL);
	_exit(1);
}

/* One owner per job (migration 0006): a claim takes a lease; writes under a
 * stale owner or token are refused; recovery takes only expired leases; a
 * renewal keeps a job its owner's. */
static void test_leases(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key[STORE_KEY_CHARS + 1], owner[STORE_OWNER_CHARS + 1], other[STORE_OWNER_CHARS + 1];
	struct store_lease la, lb, stale;
	struct store_job j;
	int64_t t, live, dead, claimed = 0, expires;
	size_t requeued = 99;
	double tpi = 1.5;
	int existed;

	assert_int_equal(store_owner_new(owner, &err), UNIAP_OK);
	assert_int_equal(store_owner_new(other, &err), UNIAP_OK);
	assert_int_equal(strlen(owner), STORE_OWNER_CHARS);
	assert_true(strspn(owner, "0123456789abcdef") == STORE_OWNER_CHARS);
	assert_string_not_equal(owner, other);
	assert_int_equal(store_job_claim(s, "short", 1000, &claimed, NULL, &err), UNIAP_E_ARG);
	assert_int_equal(store_tenant_add(s, "t", 10, (int64_t)1 << 30, &t, key, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{\"a\":1}", 7, &live, &existed, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{\"a\":2}", 7, &dead, &existed, &err), UNIAP_OK);

	/* the claim sets owner, expiry and token 1 */
	assert_int_equal(store_job_claim(s, owner, 60000, &claimed, &la, &err), UNIAP_OK);
	assert_int_equal(claimed, live);
	assert_string_equal(la.owner, owner);
	assert_int_equal(la.token, 1);
	expires = raw_sql(f, "SELECT lease_expires_at - started_at FROM jobs WHERE lease_token = 1"
			     " AND state = 'running'");
	/* PostgreSQL: started_at by this clock, the expiry by the server's (the same machine here) */
	assert_true(expires >= 60000 && expires < 61000);
	/* another instance's lease that ran out (0 ms) */
	assert_int_equal(store_job_claim(s, OWNER_B, 0, &claimed, &lb, &err), UNIAP_OK);
	assert_int_equal(claimed, dead);

	/* recovery takes only the expired one; the live job stays its owner's */
	assert_int_equal(store_jobs_recover(s, &requeued, &err), UNIAP_OK);
	assert_int_equal(requeued, 1);
	assert_int_equal(store_job_get(s, t, live, &j, &err), UNIAP_OK);
	assert_int_equal(j.state, STORE_JOB_RUNNING);
	store_job_release(&j);

	/* the dead owner's writes are refused once another claim took its job */
	assert_int_equal(store_job_claim(s, other, 60000, &claimed, &stale, &err), UNIAP_OK);
	assert_int_equal(claimed, dead);
	assert_int_equal(stale.token, 2);
	assert_int_equal(store_job_progress(s, dead, 1, 2, &tpi, NULL, &lb, &err), UNIAP_E_CONFLICT);
	assert_non_null(strstr(err.msg, "lost its lease"));
	assert_int_equal(store_job_renew(s, dead, &lb, 60000, NULL, &err), UNIAP_E_CONFLICT);
	assert_int_equal(store_job_requeue(s, dead, &lb, &err), UNIAP_E_CONFLICT);
	assert_int_equal(store_job_transition(s, STORE_ANY_TENANT, dead, STORE_JOB_SUCCEEDED, "{}", 2, NULL,
					      &lb, &err), UNIAP_E_CONFLICT);
	/* the same owner with an old token is stale too */
	memcpy(lb.owner, other, sizeof(lb.owner));
	lb.token = 1;
	assert_int_equal(store_job_progress(s, dead, 1, 2, &tpi, NULL, &lb, &err), UNIAP_E_CONFLICT);
	/* the new owner's writes go through */
	assert_int_equal(store_job_progress(s, dead, 1, 2, &tpi, NULL, &stale, &err), UNIAP_OK);
	assert_int_equal(store_job_transition(s, STORE_ANY_TENANT, dead, STORE_JOB_SUCCEEDED, "{}", 2, NULL,
					      &stale, &err), UNIAP_OK);
	/* a finished job holds no lease: a second final write is a lost lease, not a transition */
	assert_int_equal(store_job_transition(s, STORE_ANY_TENANT, dead, STORE_JOB_SUCCEEDED, "{}", 2, NULL,
					      &stale, &err), UNIAP_E_CONFLICT);
	assert_int_equal(raw_sql(f, "SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL"), 1);

	/* a renewal pushes the expiry; a lease that runs out is recovered, a renewed one not */
	assert_int_equal(store_job_renew(s, live, &la, 0, NULL, &err), UNIAP_OK);
	usleep(2000);
	assert_int_equal(store_job_renew(s, live, &la, 60000, NULL, &err), UNIAP_OK);
	assert_int_equal(store_jobs_recover(s, &requeued, &err), UNIAP_OK);
	assert_int_equal(requeued, 0);
	assert_int_equal(store_job_renew(s, live, &la, 0, NULL, &err), UNIAP_OK);
	usleep(2000);
	assert_int_equal(store_jobs_recover(s, &requeued, &err), UNIAP_OK);
	assert_int_equal(requeued, 1);
	assert_int_equal(store_job_renew(s, live, &la, 60000, NULL, &err), UNIAP_E_CONFLICT);

	/* a running row from before the migration (no lease) counts as expired */
	assert_int_equal(store_job_claim(s, owner, 60000, &claimed, &la, &err), UNIAP_OK);
	assert_int_equal(claimed, live);
	assert_int_equal(la.token, 2);
	store_close(s);
	raw_sql(f, "UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL WHERE state = 'running'");
	s = open_ok(f, 2, 0);
	assert_int_equal(store_jobs_recover(s, &requeued, &err), UNIAP_OK);
	assert_int_equal(requeued, 1);
	store_close(s);
}

/* Fair claims across tenants (migration 0007): tenant a queues 4 jobs, then
 * b queues 2 and c 1; claims go to the tenant with the fewest running jobs,
 * ties to the one served least recently, each tenant's oldest job first. */
static void test_fair_claim(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key[STORE_KEY_CHARS + 1];
	int64_t a, b, c, ja[4], jb[2], jc, claimed = 0;
	int existed, i;

	assert_int_equal(store_tenant_add(s, "a", 10, (int64_t)1 << 30, &a, key, &err), UNIAP_OK);
	assert_int_equal(store_tenant_add(s, "b", 10, (int64_t)1 << 30, &b, key, &err), UNIAP_OK);
	assert_int_equal(store_tenant_add(s, "c", 10, (int64_t)1 << 30, &c, key, &err), UNIAP_OK);
	for (i = 0; i < 4; i++)
		assert_int_equal(store_job_create(s, a, NULL, "{}", 2, &ja[i], &existed, &err), UNIAP_OK);
	for (i = 0; i < 2; i++)
		assert_int_equal(store_job_create(s, b, NULL, "{}", 2, &jb[i], &existed, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, c, NULL, "{}", 2, &jc, &existed, &err), UNIAP_OK);

	{
		/* a, b, c each once (none running, never served: oldest first), then a and b
		 * again in the order they were served, then a's last two */
		const int64_t want[] = { ja[0], jb[0], jc, ja[1], jb[1], ja[2], ja[3], 0 };

		for (i = 0; i < (int)(sizeof(want) / sizeof(want[0])); i++) {
			assert_int_equal(store_job_claim(s, OWNER_A, 60000, &claimed, NULL, &err), UNIAP_OK);
			assert_int_equal(claimed, want[i]);
		}
	}
	/* with a's jobs all running and b's finished, b's new job goes first though a
	 * was served longer ago */
	for (i = 0; i < 2; i++)
		assert_int_equal(store_job_transition(s, b, jb[i], STORE_JOB_SUCCEEDED, "{}", 2, NULL, NULL, &err),
				 UNIAP_OK);
	assert_int_equal(store_job_transition(s, c, jc, STORE_JOB_SUCCEEDED, "{}", 2, NULL, NULL, &err), UNIAP_OK);
	assert_int_equal(store_job_transition(s, a, ja[0], STORE_JOB_SUCCEEDED, "{}", 2, NULL, NULL, &err),
			 UNIAP_OK);
	assert_int_equal(store_job_create(s, a, NULL, "{}", 2, &ja[0], &existed, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, b, NULL, "{}", 2, &jb[0], &existed, &err), UNIAP_OK);
	assert_int_equal(store_job_claim(s, OWNER_A, 60000, &claimed, NULL, &err), UNIAP_OK);
	assert_int_equal(claimed, jb[0]);
	/* the spare thread's claim takes only a tenant with nothing running: not a's */
	assert_int_equal(store_job_claim_idle(s, OWNER_A, 60000, &claimed, NULL, &err), UNIAP_OK);
	assert_int_equal(claimed, 0);
	assert_int_equal(store_job_create(s, c, NULL, "{}", 2, &jc, &existed, &err), UNIAP_OK);
	assert_int_equal(store_job_claim_idle(s, OWNER_A, 60000, &claimed, NULL, &err), UNIAP_OK);
	assert_int_equal(claimed, jc);
	assert_int_equal(store_job_claim(s, OWNER_A, 60000, &claimed, NULL, &err), UNIAP_OK);
	assert_int_equal(claimed, ja[0]);
	store_close(s);
}

static void test_kill9_recovery(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	enum store_job_state queued = STORE_JOB_QUEUED;
	struct store_job *jobs = NULL;
	struct store *s;
	size_t requeued = 0, n = 0;
	int64_t next = 0, claimed = 0;
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		kill9_child(f);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	s = open_ok(f, 2, 0);
	assert_int_equal(store_jobs_recover(s, &requeued, &err), UNIAP_OK);
	assert_int_equal(requeued, 1);
	assert_int_equal(store_job_list(s, raw_sql(f, "SELECT id FROM tenants"), &queued, 0, 10, &jobs, &n, &next, &err), UNIAP_OK);
	assert_int_equal(n, 2);
	assert_string_equal(jobs[0].idempotency_key, "a");
	assert_int_equal(jobs[0].progress_done, 0);
	assert_string_equal(jobs[1].idempotency_key, "b");
	assert_int_equal(store_job_claim(s, OWNER_A, 0, &claimed, NULL, &err), UNIAP_OK);
	assert_int_equal(claimed, jobs[0].id);
	store_jobs_free(jobs, n);
	store_close(s);
}

static void test_limits(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key[STORE_KEY_CHARS + 1], body[100];
	int64_t t, j1, j2, j3, d1, d2, d3;
	int existed;

	memset(body, 'x', sizeof(body));
	assert_int_equal(store_tenant_add(s, "t", 2, 100, &t, key, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{}", 2, &j1, &existed, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{}", 2, &j2, &existed, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{}", 2, &j3, &existed, &err), UNIAP_E_RATE);
	assert_int_equal(store_job_transition(s, t, j1, STORE_JOB_CANCELED, NULL, 0, NULL, NULL, &err),
			 UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{}", 2, &j3, &existed, &err), UNIAP_OK);

	assert_int_equal(store_doc_put(s, t, STORE_DOC_MODEL, "m", body, 60, &d1, &err), UNIAP_OK);
	assert_int_equal(store_doc_put(s, t, STORE_DOC_MODEL, "m", body, 50, &d2, &err), UNIAP_E_LIMIT);
	assert_non_null(strstr(err.msg, "max_stored_bytes"));
	/* the jobs' requests count too: 3 jobs x 2 bytes + 60 + 34 is the 100 */
	assert_int_equal(store_doc_put(s, t, STORE_DOC_MODEL, "m", body, 35, &d2, &err), UNIAP_E_LIMIT);
	assert_non_null(strstr(err.msg, "documents and jobs count"));
	assert_int_equal(store_doc_put(s, t, STORE_DOC_MODEL, "m", body, 34, &d2, &err), UNIAP_OK);
	assert_int_equal(store_doc_put(s, t, STORE_DOC_MODEL, "m", body, 1, &d3, &err), UNIAP_E_LIMIT);
	assert_int_equal(store_doc_delete(s, t, STORE_DOC_MODEL, d1, &err), UNIAP_OK);
	assert_int_equal(store_doc_put(s, t, STORE_DOC_MODEL, "m", body, 60, &d3, &err), UNIAP_OK);
	/* a revoked tenant stores nothing */
	assert_int_equal(store_tenant_revoke(s, t, NULL, &err), UNIAP_OK);
	assert_int_equal(store_doc_put(s, t, STORE_DOC_MODEL, "m", body, 0, &d3, &err),
			 UNIAP_E_NOTFOUND);
	store_close(s);
}

/*
 * A full store (max_db_bytes, which fails writes as a full disk does): the
 * write that finds no room is UNIAP_E_NOSPACE, the health says full and
 * failing, the reserve file is given back, new content is refused at once,
 * a delete still commits and makes room: the reserve is back, the health
 * clear, and a document fits again.  The probe writes while healthy.
 */
static void test_full(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store_opts o = { .pool_size = 2, .max_db_bytes = 400 * 1024 };
	struct store *s = NULL;
	struct store_health h;
	char key[STORE_KEY_CHARS + 1], reserve[600], *body = malloc(20000);
	int64_t t, first = 0, id = 0, job = 0;
	int n, existed;
	uniap_code rc = UNIAP_OK;

	if (pg_url()) {
		free(body);
		skip(); /* a full SQLite file (--max-db-bytes, the reserve file): SQLite's own */
	}
	assert_non_null(body);
	memset(body, 'x', 20000);
	assert_int_equal(store_open(f->path, &o, &s, &err), UNIAP_OK);
	snprintf(reserve, sizeof(reserve), "%s-reserve", f->path);
	assert_int_equal(access(reserve, F_OK), 0);
	assert_int_equal(store_probe(s, &err), UNIAP_OK);
	store_health(s, &h);
	assert_int_equal(h.full + h.failing, 0);
	assert_int_equal(store_tenant_add(s, "t", 2, (int64_t)1 << 30, &t, key, &err), UNIAP_OK);
	for (n = 0; n < 100; n++) {
		rc = store_doc_put(s, t, STORE_DOC_MODEL, "m", body, 20000, &id, &err);
		if (rc != UNIAP_OK)
			break;
		if (!first)
			first = id;
	}
	assert_int_equal(rc, UNIAP_E_NOSPACE);
	assert_true(n >= 2);
	assert_non_null(strstr(err.msg, "deletes still work"));
	store_health(s, &h);
	assert_int_equal(h.full, 1);
	assert_int_equal(h.failing, 1);
	assert_int_equal(access(reserve, F_OK), -1);
	/* refused before any write: a small job too */
	assert_int_equal(store_job_create(s, t, NULL, "{}", 2, &job, &existed, &err), UNIAP_E_NOSPACE);
	assert_non_null(strstr(err.msg, "the store is full"));
	assert_int_equal(store_doc_delete(s, t, STORE_DOC_MODEL, first, &err), UNIAP_OK);
	store_health(s, &h);
	assert_int_equal(h.full + h.failing, 0);
	assert_int_equal(access(reserve, F_OK), 0);
	assert_int_equal(store_doc_put(s, t, STORE_DOC_MODEL, "m", body, 20000, &id, &err), UNIAP_OK);
	store_close(s);
	free(body);
}

/* ---- cost cache ---- */

static void test_cache(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 100);
	unsigned char ka[32], kb[32], kc[32];
	char big[101], *body = NULL;
	size_t bytes = 0;
	int64_t entries = 0, total = 0;

	memset(big, 'z', sizeof(big));
	store_sha256("a", 1, ka);
	store_sha256("b", 1, kb);
	store_sha256("c", 1, kc);
	assert_int_equal(store_cache_get(s, ka, &body, &bytes, &err), UNIAP_E_NOTFOUND);
	assert_int_equal(store_cache_put(s, ka, big, 40, &err), UNIAP_OK);
	assert_int_equal(store_cache_put(s, kb, big, 40, &err), UNIAP_OK);
	assert_int_equal(store_cache_get(s, ka, &body, &bytes, &err), UNIAP_OK);   /* a is now MRU */
	assert_int_equal(bytes, 40);
	assert_memory_equal(body, big, 40);
	assert_int_equal(body[40], '\0');
	free(body);
	assert_int_equal(store_cache_put(s, kc, big, 40, &err), UNIAP_OK);          /* evicts b */
	assert_int_equal(store_cache_get(s, kb, &body, &bytes, &err), UNIAP_E_NOTFOUND);
	assert_int_equal(store_cache_get(s, ka, &body, &bytes, &err), UNIAP_OK);
	free(body);
	assert_int_equal(store_cache_stats(s, &entries, &total, &err), UNIAP_OK);
	assert_int_equal(entries, 2);
	assert_int_equal(total, 80);
	/* a replaced entry becomes the most recent: c at 60 bytes still fits
	 * beside a (100), at 61 it evicts a, now the least recently used */
	assert_int_equal(store_cache_put(s, kc, big, 60, &err), UNIAP_OK);
	assert_int_equal(store_cache_stats(s, &entries, &total, &err), UNIAP_OK);
	assert_int_equal(entries, 2);
	assert_int_equal(total, 100);
	assert_int_equal(store_cache_put(s, kc, big, 61, &err), UNIAP_OK);
	assert_int_equal(store_cache_stats(s, &entries, &total, &err), UNIAP_OK);
	assert_int_equal(entries, 1);
	assert_int_equal(total, 61);
	assert_int_equal(store_cache_put(s, ka, big, 101, &err), UNIAP_E_LIMIT);
	assert_int_equal(store_cache_put(s, ka, big, 0, &err), UNIAP_OK);
	assert_int_equal(store_cache_get(s, ka, &body, &bytes, &err), UNIAP_OK);
	assert_int_equal(bytes, 0);
	free(body);
	store_close(s);
	assert_int_equal(raw_sql(f, "SELECT hits FROM cost_cache WHERE bytes = 0"), 1);
	assert_int_equal(raw_sql(f, "SELECT count(*) FROM cost_cache"), 2);
}

/* ---- concurrency: 4 threads x 50 jobs through one store ---- */

#define THREADS 4
#define JOBS_PER_THREAD 50

struct worker {
	struct store *s;
	int64_t tenant;
	int index;
	int failures;
	char first_error[UNIAP_ERR_MSG_MAX];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct uniap_err err = { 0 };

	for (int i = 0; i < JOBS_PER_THREAD; i++) {
		char idem[32], req[64];
		int64_t id = 0;
		int existed = 0;
		double tpi = 1.0 + i;
		uniap_code rc;

		snprintf(idem, sizeof(idem), "w%d-%d", w->index, i);
		snprintf(req, sizeof(req), "{\"w\":%d,\"i\":%d}", w->index, i);
		rc = store_job_create(w->s, w->tenant, idem, req, strlen(req), &id, &existed, &err);
		if (rc == UNIAP_OK)
			rc = store_job_transition(w->s, w->tenant, id, STORE_JOB_RUNNING, NULL, 0, NULL, NULL,
						  &err);
		if (rc == UNIAP_OK)
			rc = store_job_progress(w->s, id, 1, 2, &tpi, NULL, NULL, &err);
		if (rc == UNIAP_OK)
			rc = store_job_transition(w->s, w->tenant, id, STORE_JOB_SUCCEEDED, req,
						  strlen(req), NULL, NULL, &err);
		if (rc != UNIAP_OK && w->failures++ == 0)
			memcpy(w->first_error, err.msg, sizeof(w->first_error));
	}
	return NULL;
}

static void test_concurrent_jobs(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, THREADS, 0);
	char key[STORE_KEY_CHARS + 1];
	struct worker w[THREADS];
	pthread_t th[THREADS];
	enum store_job_state done = STORE_JOB_SUCCEEDED;
	struct store_job *jobs = NULL;
	int64_t t, cursor = 0, next = 0;
	size_t n = 0, total = 0;

	assert_int_equal(store_tenant_add(s, "busy", THREADS, (int64_t)1 << 30, &t, key, &err), UNIAP_OK);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .s = s, .tenant = t, .index = i };
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	for (int i = 0; i < THREADS; i++) {
		if (w[i].failures)
			print_error("worker %d: %d failures, first: %s\n", i, w[i].failures,
				    w[i].first_error);
		assert_int_equal(w[i].failures, 0);
	}
	do {
		assert_int_equal(store_job_list(s, t, &done, cursor, 64, &jobs, &n, &next, &err),
				 UNIAP_OK);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(jobs[i].progress_done, 1);
		total += n;
		store_jobs_free(jobs, n);
		cursor = next;
	} while (next);
	assert_int_equal(total, THREADS * JOBS_PER_THREAD);
	store_close(s);
	assert_int_equal(raw_sql(f, "SELECT count(*) FROM jobs"), THREADS * JOBS_PER_THREAD);
	assert_int_equal(raw_sql(f, "SELECT count(DISTINCT idempotency_key) FROM jobs"),
			 THREADS * JOBS_PER_THREAD);
}

/* What a client asks of a running job through any replica (store_job_ask) reaches
 * its runner with the next renewal; a cancel survives the runner's death. */
static void test_ask(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key[STORE_KEY_CHARS + 1];
	struct store_lease la, lb;
	enum store_job_ask asked = STORE_ASK_NONE;
	struct store_job j;
	size_t requeued = 9;
	int64_t t, u, a, b, id = 0;
	int existed;

	assert_int_equal(store_tenant_add(s, "t", 10, 1 << 20, &t, key, &err), UNIAP_OK);
	assert_int_equal(store_tenant_add(s, "u", 10, 1 << 20, &u, key, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{}", 2, &a, &existed, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{ }", 3, &b, &existed, &err), UNIAP_OK);
	/* only a running job is asked */
	assert_int_equal(store_job_ask(s, t, a, STORE_ASK_CANCEL, &err), UNIAP_E_CONFLICT);
	assert_int_equal(store_job_claim(s, OWNER_A, 60000, &id, &la, &err), UNIAP_OK);
	assert_int_equal(id, a);
	assert_int_equal(store_job_renew(s, a, &la, 60000, &asked, &err), UNIAP_OK);
	assert_int_equal(asked, STORE_ASK_NONE);
	/* another tenant's job is not there */
	assert_int_equal(store_job_ask(s, u, a, STORE_ASK_CANCEL, &err), UNIAP_E_NOTFOUND);
	assert_int_equal(store_job_ask(s, t, a, STORE_ASK_STOP, &err), UNIAP_OK);
	assert_int_equal(store_job_renew(s, a, &la, 60000, &asked, &err), UNIAP_OK);
	assert_int_equal(asked, STORE_ASK_STOP);
	assert_int_equal(store_job_ask(s, t, a, STORE_ASK_CANCEL, &err), UNIAP_OK);
	assert_int_equal(store_job_ask(s, t, a, STORE_ASK_STOP, &err), UNIAP_OK); /* no softer */
	assert_int_equal(store_job_renew(s, a, &la, 60000, &asked, &err), UNIAP_OK);
	assert_int_equal(asked, STORE_ASK_CANCEL);
	/* its runner dies (the lease runs out): the job ends canceled, not queued again */
	assert_int_equal(store_job_renew(s, a, &la, 0, NULL, &err), UNIAP_OK);
	usleep(2000);
	assert_int_equal(store_jobs_recover(s, &requeued, &err), UNIAP_OK);
	assert_int_equal(requeued, 0);
	assert_int_equal(store_job_get(s, t, a, &j, &err), UNIAP_OK);
	assert_int_equal(j.state, STORE_JOB_CANCELED);
	assert_non_null(j.error);
	assert_string_equal(j.error, "canceled by the client");
	store_job_release(&j);
	/* a stop does not outlive a requeue: the next run starts unasked */
	assert_int_equal(store_job_claim(s, OWNER_B, 60000, &id, &lb, &err), UNIAP_OK);
	assert_int_equal(id, b);
	assert_int_equal(store_job_ask(s, t, b, STORE_ASK_STOP, &err), UNIAP_OK);
	assert_int_equal(store_job_requeue(s, b, &lb, &err), UNIAP_OK);
	assert_int_equal(store_job_claim(s, OWNER_A, 60000, &id, &la, &err), UNIAP_OK);
	assert_int_equal(id, b);
	assert_int_equal(store_job_renew(s, b, &la, 60000, &asked, &err), UNIAP_OK);
	assert_int_equal(asked, STORE_ASK_NONE);
	/* the old owner's renewal is fenced off */
	assert_int_equal(store_job_renew(s, b, &lb, 60000, &asked, &err), UNIAP_E_CONFLICT);
	store_close(s);
}

/*
 * Shared jobs (PostgreSQL; docs/scale.md, "One job across replicas"): a unit
 * is claimed only while the job runs with that run open to the claimer's
 * build; it is the first claimer's, busy to the others while its lease runs,
 * taken over once it ran out, the next claimer's when given up, done for all
 * once put (the first put wins); another build's unit starts afresh and its
 * facts never count; the incumbent is the least TPI put for the run and
 * build; renewals reach only the jobs named; the find skips the owner's own
 * jobs, other builds, young shares and the keys it is told to skip; a
 * requeue drops the share and keeps the units; the job's final transition
 * deletes both.  SQLite shares nothing.
 */
#define CLAIM(run, pp, c, owner, build, lease) \
	store_unit_claim(s, id, run, pp, 1, c, owner, build, lease, &st, &facts, &bytes, &inc, &over, &err)

static void test_shared_units(void **state)
{
	struct fx *f = *state;
	struct uniap_err err = { 0 };
	struct store *s = open_ok(f, 2, 0);
	char key[STORE_KEY_CHARS + 1], *facts = NULL;
	struct store_lease la;
	enum store_unit_state st;
	size_t bytes = 0;
	double inc = 0;
	int64_t t, id, claimed = 0, found = 0, skip, other = 999999;
	int existed, over = 0, run = -1, open = 0;

	assert_int_equal(store_tenant_add(s, "t", 10, (int64_t)1 << 30, &t, key, &err), UNIAP_OK);
	assert_int_equal(store_job_create(s, t, NULL, "{\"a\":1}", 7, &id, &existed, &err), UNIAP_OK);
	if (!pg_url()) {
		assert_false(store_shares(s));
		assert_int_equal(CLAIM(0, 1, 1, OWNER_B, "b1", 1000), UNIAP_E_CONFLICT);
		assert_null(facts);
		store_close(s);
		return;
	}
	assert_true(store_shares(s));
	/* a queued job has no units to claim */
	assert_int_equal(CLAIM(0, 1, 1, OWNER_B, "b1", 1000), UNIAP_E_CONFLICT);
	assert_int_equal(store_job_claim(s, OWNER_A, 60000, &claimed, &la, &err), UNIAP_OK);
	assert_int_equal(claimed, id);
	/* running, but no run open: still none */
	assert_int_equal(CLAIM(0, 1, 1, OWNER_B, "b1", 1000), UNIAP_E_CONFLICT);
	/* only the owner opens one */
	la.token++;
	assert_int_equal(store_job_share(s, id, &la, 0, "b1", &err), UNIAP_E_CONFLICT);
	la.token--;
	assert_int_equal(store_job_share(s, id, &la, 0, "b1", &err), UNIAP_OK);
	/* open to b1, run 0 only */
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b2", 1000), UNIAP_E_CONFLICT);
	assert_int_equal(CLAIM(1, 2, 4, OWNER_B, "b1", 1000), UNIAP_E_CONFLICT);

	/* first claim: the claimer's; another's is busy; the claimer's again is its own */
	assert_int_equal(CLAIM(0, 2, 4, OWNER_A, "b1", 60000), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_MINE);
	assert_false(over);
	assert_true(isinf(inc));
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b1", 60000), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_BUSY);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_A, "b1", 60000), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_MINE);
	assert_false(over);
	/* given up: the next claimer's at once, not a take-over */
	assert_int_equal(store_unit_put(s, id, 0, 2, 1, 4, OWNER_A, "b1", NULL, 0, INFINITY, &err), UNIAP_OK);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b1", 0), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_MINE);
	assert_false(over);
	/* B's lease (0 ms) ran out: A takes it over */
	assert_int_equal(CLAIM(0, 2, 4, OWNER_A, "b1", 0), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_MINE);
	assert_true(over);
	/* a renewal of another job's units leaves A's to run out; of this job's, keeps it */
	assert_int_equal(store_units_renew(s, OWNER_A, &other, 1, 60000, &err), UNIAP_OK);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b1", 0), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_MINE);
	assert_true(over);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_A, "b1", 0), UNIAP_OK);
	assert_int_equal(store_units_renew(s, OWNER_A, &id, 1, 60000, &err), UNIAP_OK);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b1", 60000), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_BUSY);
	/* put: done for everyone, facts as put; a later put changes nothing */
	assert_int_equal(store_unit_put(s, id, 0, 2, 1, 4, OWNER_A, "b1", "facts-a", 7, 2.5, &err), UNIAP_OK);
	assert_int_equal(store_unit_put(s, id, 0, 2, 1, 4, OWNER_B, "b1", "facts-b", 7, 1.0, &err), UNIAP_OK);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b1", 60000), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_DONE);
	assert_int_equal(bytes, 7);
	assert_memory_equal(facts, "facts-a", 7);
	free(facts);
	facts = NULL;
	assert_true(inc == 2.5);
	/* the incumbent is the least TPI put in this run; a unit without a plan does not count */
	assert_int_equal(CLAIM(0, 4, 8, OWNER_B, "b1", 60000), UNIAP_OK);
	assert_int_equal(store_unit_put(s, id, 0, 4, 1, 8, OWNER_B, "b1", "x", 1, 2.0, &err), UNIAP_OK);
	assert_int_equal(CLAIM(0, 8, 8, OWNER_B, "b1", 60000), UNIAP_OK);
	assert_int_equal(store_unit_put(s, id, 0, 8, 1, 8, OWNER_B, "b1", "y", 1, INFINITY, &err), UNIAP_OK);
	assert_int_equal(CLAIM(0, 1, 1, OWNER_B, "b1", 60000), UNIAP_OK);
	assert_true(inc == 2.0);

	/* the find: not the owner's own job, not another build, not a young share, not a skipped
	 * run; then the job; its helpers see the run open */
	assert_int_equal(store_job_share_open(s, id, 0, "b1", &open, &err), UNIAP_OK);
	assert_true(open);
	assert_int_equal(store_job_share_open(s, id, 0, "b2", &open, &err), UNIAP_OK);
	assert_false(open);
	assert_int_equal(store_job_share_open(s, id, 1, "b1", &open, &err), UNIAP_OK);
	assert_false(open);
	assert_int_equal(store_job_share_find(s, OWNER_A, "b1", 0, NULL, 0, &found, &run, &err), UNIAP_OK);
	assert_int_equal(found, 0);
	assert_int_equal(store_job_share_find(s, OWNER_B, "b2", 0, NULL, 0, &found, &run, &err), UNIAP_OK);
	assert_int_equal(found, 0);
	assert_int_equal(store_job_share_find(s, OWNER_B, "b1", 3600000, NULL, 0, &found, &run, &err), UNIAP_OK);
	assert_int_equal(found, 0);
	skip = id * 16;
	assert_int_equal(store_job_share_find(s, OWNER_B, "b1", 0, &skip, 1, &found, &run, &err), UNIAP_OK);
	assert_int_equal(found, 0);
	assert_int_equal(store_job_share_find(s, OWNER_B, "b1", 0, NULL, 0, &found, &run, &err), UNIAP_OK);
	assert_int_equal(found, id);
	assert_int_equal(run, 0);

	/* another build opens the same run (a requeued job, a new owner): b1's facts are not
	 * taken, the unit starts afresh, and b1's incumbent does not count */
	assert_int_equal(store_job_share(s, id, &la, 0, "b2", &err), UNIAP_OK);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b1", 60000), UNIAP_E_CONFLICT);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b2", 60000), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_MINE);
	assert_null(facts);
	assert_true(isinf(inc));
	/* b1's late put finds nothing of its build */
	assert_int_equal(store_unit_put(s, id, 0, 2, 1, 4, OWNER_A, "b1", "old", 3, 0.5, &err), UNIAP_OK);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_A, "b2", 60000), UNIAP_OK);
	assert_int_equal(st, STORE_UNIT_BUSY);
	assert_true(isinf(inc));

	/* closed: nobody finds it or claims in it */
	assert_int_equal(store_job_share(s, id, &la, -1, "b2", &err), UNIAP_OK);
	assert_int_equal(store_job_share_open(s, id, 0, "b2", &open, &err), UNIAP_OK);
	assert_false(open);
	assert_int_equal(store_job_share_find(s, OWNER_B, "b2", 0, NULL, 0, &found, &run, &err), UNIAP_OK);
	assert_int_equal(found, 0);
	assert_int_equal(CLAIM(0, 8, 8, OWNER_B, "b2", 60000), UNIAP_E_CONFLICT);

	/* a requeue drops the share and keeps the units (their facts are the next run's) */
	assert_int_equal(store_job_share(s, id, &la, 0, "b2", &err), UNIAP_OK);
	assert_int_equal(store_job_requeue(s, id, &la, &err), UNIAP_OK);
	assert_int_equal(raw_sql(f, "SELECT count(*) FROM job_shares"), 0);
	assert_true(raw_sql(f, "SELECT count(*) FROM job_units") > 0);
	assert_int_equal(store_job_claim(s, OWNER_A, 60000, &claimed, &la, &err), UNIAP_OK);
	assert_int_equal(claimed, id);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b2", 60000), UNIAP_E_CONFLICT);
	/* the job ends: its final transition deletes its units and share in its transaction */
	assert_int_equal(store_job_share(s, id, &la, 0, "b2", &err), UNIAP_OK);
	assert_int_equal(store_job_transition(s, STORE_ANY_TENANT, id, STORE_JOB_SUCCEEDED, "{}", 2, NULL, &la, &err),
			 UNIAP_OK);
	assert_int_equal(CLAIM(0, 2, 4, OWNER_B, "b2", 60000), UNIAP_E_CONFLICT);
	assert_int_equal(raw_sql(f, "SELECT count(*) FROM job_units"), 0);
	assert_int_equal(raw_sql(f, "SELECT count(*) FROM job_shares"), 0);
	assert_null(facts);
	store_close(s);
}
#undef CLAIM

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256),
		cmocka_unit_test_setup_teardown(test_migrations_fresh_and_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrations_newer_refused, setup, teardown),
		cmocka_unit_test(test_migrations_bad_paths),
		cmocka_unit_test(test_migrations_embedded_equal_files),
		cmocka_unit_test_setup_teardown(test_tenants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_documents_and_isolation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idempotency, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_machine, setup, teardown),
		cmocka_unit_test_setup_teardown(test_purge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_progress_and_recovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill9_recovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fair_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_jobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_units, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
