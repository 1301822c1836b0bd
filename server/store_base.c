/*
 * store_base.c - what the store's front (store.c), its backends
 * (store_sqlite.c, store_pg.c) and their callers share (store.h): SHA-256
 * and constant-time compares (nettle), the clock, random keys and owner
 * ids, the names of job states, kinds and asks, the legal transitions, and
 * the release of what the store returns (store.h and store_backend.h).
 * Uses no other file of the store.
 *
 * Thread safety: reentrant; no state.
 * Never: open or touch a database.
 */
#include "store_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <nettle/memops.h>
#include <nettle/sha2.h>

/* ---- SHA-256: nettle's, a well-kept Debian library ---- */

void store_sha256(const void *data, size_t bytes, unsigned char out[STORE_SHA256_BYTES])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, bytes, data);
	sha256_digest(&ctx, STORE_SHA256_BYTES, out);
}

int store_hash_equal(const unsigned char *a, const unsigned char *b)
{
	return memeql_sec(a, b, STORE_SHA256_BYTES);
}

/* ---- shared helpers ---- */

int64_t store_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uniap_code store_random_bytes(unsigned char *buf, size_t n, struct uniap_err *err)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return err_set(err, UNIAP_E_IO, "store: getrandom: %s", strerror(errno));
		}
		got += (size_t)r;
	}
	return UNIAP_OK;
}

uniap_code store_key_new(char key[STORE_KEY_CHARS + 1], unsigned char hash[STORE_SHA256_BYTES],
			 struct uniap_err *err)
{
	unsigned char secret[32];
	uniap_code rc = store_random_bytes(secret, sizeof(secret), err);

	if (rc != UNIAP_OK)
		return rc;
	memcpy(key, "uk_", 3);
	for (size_t i = 0; i < sizeof(secret); i++)
		snprintf(key + 3 + 2 * i, 3, "%02x", secret[i]);
	store_sha256(key, STORE_KEY_CHARS, hash);
	memset(secret, 0, sizeof(secret));
	return UNIAP_OK;
}

uniap_code store_owner_new(char owner[STORE_OWNER_CHARS + 1], struct uniap_err *err)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[STORE_OWNER_CHARS / 2];
	uniap_code rc = store_random_bytes(raw, sizeof(raw), err);

	if (rc != UNIAP_OK)
		return rc;
	for (size_t i = 0; i < sizeof(raw); i++) {
		owner[2 * i] = hex[raw[i] >> 4];
		owner[2 * i + 1] = hex[raw[i] & 15];
	}
	owner[STORE_OWNER_CHARS] = '\0';
	return UNIAP_OK;
}

/* ---- names ---- */

static const char *const job_state_names[STORE_JOB_STATE_COUNT] = {
	[STORE_JOB_QUEUED] = "queued",
	[STORE_JOB_RUNNING] = "running",
	[STORE_JOB_SUCCEEDED] = "succeeded",
	[STORE_JOB_FAILED] = "failed",
	[STORE_JOB_CANCELED] = "canceled",
};

const char *store_job_state_name(enum store_job_state st)
{
	if ((int)st < 0 || st >= STORE_JOB_STATE_COUNT)
		return "unknown";
	return job_state_names[st];
}

int store_job_state_parse(const char *name, enum store_job_state *st)
{
	for (int i = 0; i < STORE_JOB_STATE_COUNT; i++)
		if (name && strcmp(name, job_state_names[i]) == 0) {
			*st = (enum store_job_state)i;
			return 0;
		}
	return -1;
}

static const char *const job_kind_names[STORE_JOB_KIND_COUNT] = {
	[STORE_JOB_PLAN] = "plan",
	[STORE_JOB_CALIBRATION] = "calibration",
	[STORE_JOB_ALLOCATION] = "allocation",
};

const char *store_job_kind_name(enum store_job_kind kind)
{
	if ((int)kind < 0 || kind >= STORE_JOB_KIND_COUNT)
		return "unknown";
	return job_kind_names[kind];
}

int store_job_kind_parse(const char *name, enum store_job_kind *kind)
{
	for (int i = 0; i < STORE_JOB_KIND_COUNT; i++)
		if (name && strcmp(name, job_kind_names[i]) == 0) {
			*kind = (enum store_job_kind)i;
			return 0;
		}
	return -1;
}

const char *store_job_ask_name(enum store_job_ask ask)
{
	return ask == STORE_ASK_CANCEL ? "cancel" : ask == STORE_ASK_STOP ? "stop" : "";
}

enum store_job_ask store_job_ask_parse(const char *name)
{
	if (name && strcmp(name, "cancel") == 0)
		return STORE_ASK_CANCEL;
	if (name && strcmp(name, "stop") == 0)
		return STORE_ASK_STOP;
	return STORE_ASK_NONE;
}

int store_job_transition_legal(enum store_job_state from, enum store_job_state to)
{
	switch (from) {
	case STORE_JOB_QUEUED: return to == STORE_JOB_RUNNING || to == STORE_JOB_CANCELED;
	case STORE_JOB_RUNNING:
		return to == STORE_JOB_SUCCEEDED || to == STORE_JOB_FAILED || to == STORE_JOB_CANCELED;
	default: return 0;
	}
}

/* ---- releases: plain memory, the same for every backend ---- */

void store_doc_release(struct store_doc *d)
{
	if (!d)
		return;
	free(d->body);
	d->body = NULL;
}

void store_job_release(struct store_job *j)
{
	if (!j)
		return;
	free(j->request);
	free(j->result);
	free(j->error);
	j->request = j->result = j->error = NULL;
}

void store_jobs_free(struct store_job *jobs, size_t n)
{
	if (!jobs)
		return;
	for (size_t i = 0; i < n; i++)
		store_job_release(&jobs[i]);
	free(jobs);
}
