/*
 * main.c - uniapd's main(): the command line, the store (opened and
 * migrated before the listener starts, closed after it stops), the auth hook
 * (bearer keys looked up in the store's tenants), the HTTP server, a graceful
 * shutdown on SIGTERM/SIGINT (stop accepting, let the requests in flight
 * finish, then exit 0), and the `uniapd tenant add|list|revoke` commands.
 *
 * Exit status: 0 after a clean shutdown, 1 when the server cannot start (the
 * store cannot be opened, or its schema is newer than this binary), 2 for a
 * bad command line (--no-auth with a non-loopback --listen included).  Every
 * request is logged as one JSON line on stderr (http.c).
 *
 * Never: do request work here; keep state in globals (the signal set is
 * waited on with sigwait, no handler runs).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <nettle/memops.h>

#include "api.h"
#include "buildinfo.h"
#include "calib.h"
#include "http.h"
#include "offload.h"
#include "openapi_doc.h"
#include "route.h"
#include "routes.h"
#include "runner.h"
#include "store.h"
#include "ui.h"

#define UNIAPD_DEFAULT_LISTEN "127.0.0.1:8080"
#define UNIAPD_DEFAULT_DB "var/uniap.db"
#define UNIAPD_MAX_BODY_CAP (1024ull * 1024ull * 1024ull) /* --max-body at most 1 GiB */
#define UNIAPD_GRACE_MS 10000u                               /* in-flight requests get this long */
#define UNIAPD_TENANT_NAME_MAX 63      /* fits struct http_principal's name */
#define UNIAPD_TENANT_MAX_JOBS 4       /* a new tenant's concurrent jobs */
#define UNIAPD_TENANT_MAX_STORED_BYTES (1024ll * 1024ll * 1024ll) /* and stored bytes: 1 GiB */
#define UNIAPD_NO_AUTH_TENANT "default" /* the one tenant of --no-auth */

#define UNIAPD_MAX_TIME_LIMIT_S 600.0                        /* default --max-time-limit */
#define UNIAPD_JOB_GRACE_S 30.0                             /* running jobs get this long at a stop */
#define UNIAPD_RECOVER_EVERY_S 2                            /* expired leases are looked for this often */
#define UNIAPD_JOB_RETENTION_S (30.0 * 86400)                /* finished jobs are kept this long */
#define UNIAPD_PURGE_BATCH 500          /* finished jobs deleted per write: short write locks */

#define UNIAPD_MAX_CORS_ORIGINS 16      /* --cors-origin given at most this often */

/* Longest metrics token read from --metrics-token-file; the shortest accepted. */
#define UNIAPD_METRICS_TOKEN_MAX 256
#define UNIAPD_METRICS_TOKEN_MIN 16

struct uniapd_options {
	char host[256];                 /* --listen's host: a name or a literal, no brackets */
	unsigned short port;
	const char *db_path;
	size_t max_body_bytes, max_body_in_flight;
	int no_auth;
	int jobs, workers, no_cache, no_share;
	unsigned http_threads;
	double max_time_limit_s, grace_s, job_retention_s, evaluate_time_limit_s, lease_s, job_budget_s;
	double evaluate_memory_mib, evaluate_total_mib;
	int evaluate_threads, spare_jobs;
	long max_queued;
	long long max_stored_jobs;
	size_t max_db_bytes;
	const char *cors_origins[UNIAPD_MAX_CORS_ORIGINS]; /* borrowed from argv */
	size_t cors_origin_count;
	unsigned max_streams;
	unsigned tenant_streams;
	const char *metrics_token_file; /* --metrics-token-file (borrowed) or NULL */
	char metrics_token[UNIAPD_METRICS_TOKEN_MAX + 1]; /* read from it; "" when none */
};

static void uniapd_usage(FILE *out)
{
	fprintf(out,
	        "usage: uniapd [--listen HOST:PORT] [--db FILE|URL] [--max-body BYTES] [--max-body-in-flight BYTES]\n"
	        "              [--no-auth]\n"
	        "              [--jobs N] [--spare-jobs N] [--workers N] [--max-queued N] [--max-time-limit S]\n"
	        "              [--grace S] [--lease S] [--job-budget S] [--job-retention S] [--no-cache] [--http-threads N]\n"
	        "              [--cors-origin ORIGIN]... [--max-streams N] [--max-streams-per-tenant N]\n"
	        "              [--metrics-token-file FILE]\n"
	        "              [--evaluate-threads N] [--evaluate-time-limit S] [--evaluate-memory MIB]\n"
	        "              [--evaluate-memory-total MIB]\n"
	        "              [--max-stored-jobs N] [--max-db-bytes BYTES]\n"
	        "       uniapd tenant add|list|revoke ... (uniapd tenant --help)\n"
	        "\n"
	        "  --listen HOST:PORT  where to serve (default %s; env UNIAPD_LISTEN):\n"
	        "                      an IPv4 address, a host name (localhost:8080) or an IPv6\n"
	        "                      address in brackets ([::1]:8080, [::]:8080); port 0 picks\n"
	        "                      a free one\n"
	        "  --db FILE|URL       SQLite database file (default %s; env UNIAPD_DB), or a\n"
	        "                      PostgreSQL URL, postgres://USER@HOST:PORT/DB, that several\n"
	        "                      uniapd replicas share (docs/scale.md)\n"
	        "  --max-body BYTES    largest request body accepted (default %u)\n"
	        "  --max-body-in-flight BYTES  the bodies being received, together (default %zu,\n"
	        "                      at least --max-body; more: 503 with Retry-After)\n"
	        "  --no-auth           single tenant, no keys (\"%s\"); only with a --listen host\n"
	        "                      that is loopback (127.0.0.0/8, ::1) or resolves only to it\n"
	        "  --jobs N            plan jobs run at once (default 2)\n"
	        "  --spare-jobs N      up to N more job threads and solver processes, each only\n"
	        "                      for a tenant with nothing running there, so a tenant's\n"
	        "                      first job never waits for other tenants' to end, however\n"
	        "                      many keep the others busy (0..16, default 4; 0: none)\n"
	        "  --workers N         solver processes at once, shared by the jobs (default: cores)\n"
	        "  --max-queued N      queued jobs of all tenants before 503 (default %d)\n"
	        "  --max-time-limit S  cap on a plan's time_limit_s per candidate (default %g)\n"
	        "  --grace S           at a stop, running jobs get S seconds to finish before they\n"
	        "                      go back to the queue (default %g)\n"
	        "  --lease S           a running job stays this process's while it renews its lease\n"
	        "                      every S/3 seconds; a job whose lease ran out (its uniapd\n"
	        "                      died) is queued again by any uniapd on the database\n"
	        "                      (default %g)\n"
	        "  --job-budget S      worker seconds a plan job's candidate solves may take in\n"
	        "                      all; then it ends with the best plan so far, or fails\n"
	        "                      without one (default %g; 0: no budget)\n"
	        "  --job-retention S   finished jobs (succeeded, failed, canceled) are deleted S\n"
	        "                      seconds after they finished (default %g: 30 days); 0 keeps\n"
	        "                      them forever\n"
	        "  --no-cache          never read or write the cost-matrix cache\n"
	        "  --no-share          PostgreSQL: never solve one plan job's candidates on several\n"
	        "                      replicas (by default idle replicas help a running job)\n"
	        "  --http-threads N    request threads, each with its own connections (default: cores)\n"
	        "  --cors-origin ORIGIN  a browser origin (scheme://host[:port]) that may call the\n"
	        "                      service; repeatable, at most %d; none by default (no CORS)\n"
	        "  --max-streams N     long-polls (?wait=) and event streams open at once, apart\n"
	        "                      from the request threads (default %d; more: 503)\n"
	        "  --max-streams-per-tenant N  of those, one tenant's at most (default: a quarter\n"
	        "                      of --max-streams, at least 1; more: 429); none with --no-auth\n"
	        "  --metrics-token-file FILE  GET /metrics then needs \"Authorization: Bearer\" and\n"
	        "                      the token in FILE (its first line, %d to %d bytes; env\n"
	        "                      UNIAPD_METRICS_TOKEN_FILE); without it /metrics answers\n"
	        "                      loopback clients only\n"
	        "  --evaluate-threads N  POST /v1/evaluate's own threads (default %d); %d evaluations\n"
	        "                      queued or running at most (more: 503), %d of one tenant (429)\n"
	        "  --evaluate-time-limit S  an evaluation's cap, queueing included (default %g)\n"
	        "  --evaluate-memory MIB  an evaluation's cost tables at most, estimated from the\n"
	        "                      body's cluster and model before any is built (default %g;\n"
	        "                      more: 413)\n"
	        "  --evaluate-memory-total MIB  all evaluations' cost tables at once at most\n"
	        "                      (default %g; more: 503 with Retry-After)\n"
	        "  --max-stored-jobs N  one tenant's stored jobs, any state, at most (default %d;\n"
	        "                      more: 413); their bytes count toward its max_stored_bytes\n"
	        "  --max-db-bytes BYTES  the database's size at most; past it writes fail as on a\n"
	        "                      full disk: 507 for new content, deletes still work (default:\n"
	        "                      none)\n"
	        "  --version           the version and git commit it was built from\n"
	        "  --help              this text\n"
	        "\n"
	        "SIGTERM or SIGINT stops accepting, lets requests in flight finish and running\n"
	        "jobs finish within the grace period, and re-queues the rest.\n",
	        UNIAPD_DEFAULT_LISTEN, UNIAPD_DEFAULT_DB, HTTP_DEFAULT_MAX_BODY_BYTES, HTTP_DEFAULT_BODIES_IN_FLIGHT,
	        UNIAPD_NO_AUTH_TENANT,
	        STORE_DEFAULT_MAX_QUEUED, UNIAPD_MAX_TIME_LIMIT_S, UNIAPD_JOB_GRACE_S, RUNNER_DEFAULT_LEASE_S, RUNNER_DEFAULT_JOB_BUDGET_S, UNIAPD_JOB_RETENTION_S,
	        UNIAPD_MAX_CORS_ORIGINS, HTTP_DEFAULT_MAX_STREAMS, UNIAPD_METRICS_TOKEN_MIN, UNIAPD_METRICS_TOKEN_MAX,
	        OFFLOAD_DEFAULT_THREADS, OFFLOAD_DEFAULT_QUEUE, OFFLOAD_DEFAULT_PER_TENANT, API_EVALUATE_TIME_LIMIT_S,
	        API_EVALUATE_MAX_BYTES / 1048576.0, API_EVALUATE_TOTAL_BYTES / 1048576.0, STORE_DEFAULT_MAX_STORED_JOBS);
}

/* "HOST:PORT" or "[IPV6]:PORT" into opt->host and opt->port (the host is
 * resolved when the listener starts); 0 ok, -1 with a message on stderr. */
static int uniapd_parse_listen(const char *s, struct uniapd_options *opt)
{
	const char *host = s, *colon;
	char *end = NULL;
	unsigned long port;
	size_t hlen;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':') {
			fprintf(stderr, "uniapd: --listen: must be [IPV6]:PORT, got \"%s\"\n", s);
			return -1;
		}
		host = s + 1;
		hlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || colon == s) {
			fprintf(stderr, "uniapd: --listen: must be HOST:PORT, got \"%s\"\n", s);
			return -1;
		}
		hlen = (size_t)(colon - s);
		if (memchr(s, ':', hlen)) {
			fprintf(stderr, "uniapd: --listen: an IPv6 address goes in brackets ([::1]:8080), got \"%s\"\n", s);
			return -1;
		}
	}
	if (hlen == 0 || hlen >= sizeof(opt->host)) {
		fprintf(stderr, "uniapd: --listen: the host must be 1..%zu bytes, got \"%s\"\n", sizeof(opt->host) - 1, s);
		return -1;
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port > USHRT_MAX || colon[1] == '-' || colon[1] == '+') {
		fprintf(stderr, "uniapd: --listen: port must be 0..65535, got \"%s\"\n", colon + 1);
		return -1;
	}
	memcpy(opt->host, host, hlen);
	opt->host[hlen] = '\0';
	opt->port = (unsigned short)port;
	return 0;
}

/* --no-auth serves one tenant without keys, so its host must resolve, and only
 * to loopback addresses: whichever of them the listener binds, nothing off this
 * machine reaches it.  0 ok, -1 with a message on stderr. */
static int uniapd_check_loopback(const char *host)
{
	struct addrinfo hints, *res = NULL, *ai;
	int rc, all = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, "uniapd: --no-auth: cannot resolve the --listen host \"%s\": %s\n", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next)
		all = all && http_addr_loopback(ai->ai_addr);
	freeaddrinfo(res);
	if (!all) {
		fprintf(stderr, "uniapd: --no-auth: only with a loopback --listen host (127.0.0.0/8, ::1, or a name "
		                "resolving only to them), got \"%s\"\n", host);
		return -1;
	}
	return 0;
}

static int uniapd_parse_size(const char *name, const char *s, unsigned long long cap, size_t *out)
{
	char *end = NULL;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < 1 || v > cap) {
		fprintf(stderr, "uniapd: %s: must be 1..%llu bytes, got \"%s\"\n", name, cap, s);
		return -1;
	}
	*out = (size_t)v;
	return 0;
}

/* A number option in [lo, hi]; 0 ok, -1 with a message. */
static int uniapd_parse_num(const char *opt, const char *s, double lo, double hi, int integer, double *out)
{
	char *end = NULL;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi) || (integer && v != (double)(long)v)) {
		fprintf(stderr, "uniapd: %s: must be %s in [%g, %g], got \"%s\"\n", opt,
		        integer ? "an integer" : "a number", lo, hi, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* getopt_long's answer for an option it refused (unknown, or its value missing): exit status 2. */
static int uniapd_bad_option(const char *cmd, const char *arg)
{
	fprintf(stderr, "uniapd%s%s: unknown or incomplete option '%.64s' (see uniapd%s%s --help)\n",
	        cmd ? " " : "", cmd ? cmd : "", arg, cmd ? " " : "", cmd ? cmd : "");
	return -1;
}

enum uniapd_opt {
	UNIAPD_OPT_LISTEN = 256, UNIAPD_OPT_DB, UNIAPD_OPT_MAX_BODY, UNIAPD_OPT_NO_AUTH, UNIAPD_OPT_NO_CACHE,
	UNIAPD_OPT_JOBS, UNIAPD_OPT_WORKERS, UNIAPD_OPT_MAX_QUEUED, UNIAPD_OPT_MAX_TIME_LIMIT, UNIAPD_OPT_GRACE,
	UNIAPD_OPT_HTTP_THREADS, UNIAPD_OPT_JOB_RETENTION, UNIAPD_OPT_CORS_ORIGIN, UNIAPD_OPT_MAX_STREAMS,
	UNIAPD_OPT_MAX_JOBS, UNIAPD_OPT_MAX_BYTES, UNIAPD_OPT_METRICS_TOKEN_FILE, UNIAPD_OPT_EVALUATE_THREADS,
	UNIAPD_OPT_EVALUATE_TIME_LIMIT, UNIAPD_OPT_MAX_BODY_IN_FLIGHT, UNIAPD_OPT_MAX_STORED_JOBS, UNIAPD_OPT_MAX_DB_BYTES, UNIAPD_OPT_LEASE, UNIAPD_OPT_JOB_BUDGET,
	UNIAPD_OPT_SPARE_JOBS, UNIAPD_OPT_MAX_JOB_BUDGET, UNIAPD_OPT_TENANT_STREAMS, UNIAPD_OPT_EVALUATE_MEMORY,
	UNIAPD_OPT_EVALUATE_TOTAL, UNIAPD_OPT_NO_SHARE,
};

/* The options that take a number: their range, integer or not. */
static const struct uniapd_number_opt {
	int opt;
	const char *name;
	double lo, hi;
	int integer;
} uniapd_number_opts[] = {
	{UNIAPD_OPT_JOBS, "--jobs", 1, RUNNER_MAX_JOBS, 1},
	{UNIAPD_OPT_WORKERS, "--workers", 1, 256, 1},
	{UNIAPD_OPT_MAX_QUEUED, "--max-queued", 1, 1e7, 1},
	{UNIAPD_OPT_MAX_TIME_LIMIT, "--max-time-limit", 0.001, 86400, 0},
	{UNIAPD_OPT_GRACE, "--grace", 0, 86400, 0},
	{UNIAPD_OPT_LEASE, "--lease", 1, 86400, 0},
	{UNIAPD_OPT_SPARE_JOBS, "--spare-jobs", 0, RUNNER_SPARE_MAX, 1},
	{UNIAPD_OPT_JOB_BUDGET, "--job-budget", 0, 1e9, 0},
	{UNIAPD_OPT_HTTP_THREADS, "--http-threads", 1, 64, 1},
	{UNIAPD_OPT_JOB_RETENTION, "--job-retention", 0, 100 * 365 * 86400.0, 0},
	{UNIAPD_OPT_MAX_STREAMS, "--max-streams", 1, 100000, 1},
	{UNIAPD_OPT_TENANT_STREAMS, "--max-streams-per-tenant", 1, 100000, 1},
	{UNIAPD_OPT_MAX_JOBS, "--max-jobs", 0, 1e6, 1},
	{UNIAPD_OPT_MAX_BYTES, "--max-bytes", 0, 1e15, 1},
	{UNIAPD_OPT_MAX_JOB_BUDGET, "--max-job-budget", 0, 1e9, 0},
	{UNIAPD_OPT_EVALUATE_THREADS, "--evaluate-threads", 1, 64, 1},
	{UNIAPD_OPT_MAX_STORED_JOBS, "--max-stored-jobs", 1, 1e9, 1},
	{UNIAPD_OPT_MAX_DB_BYTES, "--max-db-bytes", 65536, 1e15, 1},
	{UNIAPD_OPT_EVALUATE_TIME_LIMIT, "--evaluate-time-limit", 0.001, 3600, 0},
	{UNIAPD_OPT_EVALUATE_MEMORY, "--evaluate-memory", 1, 1048576, 0},
	{UNIAPD_OPT_EVALUATE_TOTAL, "--evaluate-memory-total", 1, 1048576, 0},
};

/* opt's value as a number in its range; 0 ok, -1 with a message.  *x untouched for other options. */
static int uniapd_number(int opt, const char *arg, double *x)
{
	for (size_t i = 0; i < sizeof(uniapd_number_opts) / sizeof(uniapd_number_opts[0]); i++) {
		const struct uniapd_number_opt *n = &uniapd_number_opts[i];

		if (n->opt == opt)
			return uniapd_parse_num(n->name, arg, n->lo, n->hi, n->integer, x);
	}
	return 0;
}

/* --cors-origin: "http://" or "https://", a host, an optional port; no path, no trailing "/". */
static int uniapd_cors_origin(const char *v, struct uniapd_options *opt)
{
	const char *host = strncmp(v, "https://", 8) == 0 ? v + 8 : strncmp(v, "http://", 7) == 0 ? v + 7 : NULL;

	if (!host || !*host || strlen(v) > 200 || strcspn(host, "/?#@ ") != strlen(host)) {
		fprintf(stderr, "uniapd: --cors-origin: must be scheme://host[:port] as a browser sends it in "
		                "Origin, got \"%s\"\n", v);
		return -1;
	}
	if (opt->cors_origin_count >= UNIAPD_MAX_CORS_ORIGINS) {
		fprintf(stderr, "uniapd: --cors-origin: at most %d origins\n", UNIAPD_MAX_CORS_ORIGINS);
		return -1;
	}
	opt->cors_origins[opt->cors_origin_count++] = v;
	return 0;
}

/* The first line of path into token (UNIAPD_METRICS_TOKEN_MAX + 1 bytes): printable,
 * no spaces, UNIAPD_METRICS_TOKEN_MIN bytes or more.  0 ok; -1 with a message. */
static int uniapd_read_token(const char *path, char *token)
{
	FILE *f = fopen(path, "r");
	size_t n = 0, i;
	char line[UNIAPD_METRICS_TOKEN_MAX + 3];

	if (!f) {
		fprintf(stderr, "uniapd: --metrics-token-file: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fgets(line, sizeof(line), f))
		n = strcspn(line, "\r\n");
	fclose(f);
	for (i = 0; i < n; i++)
		if (line[i] <= ' ' || line[i] > '~')
			break;
	if (n < UNIAPD_METRICS_TOKEN_MIN || n > UNIAPD_METRICS_TOKEN_MAX || i < n) {
		fprintf(stderr, "uniapd: --metrics-token-file: %s: the first line must be a token of %d to %d "
		        "printable bytes without spaces\n", path, UNIAPD_METRICS_TOKEN_MIN, UNIAPD_METRICS_TOKEN_MAX);
		return -1;
	}
	memcpy(token, line, n);
	token[n] = '\0';
	return 0;
}

/* 0 ok, 1 --help given, 2 --version given, -1 bad command line (message printed). */
static int uniapd_parse_args(int argc, char **argv, struct uniapd_options *opt)
{
	static const struct option longopts[] = {
		{"listen", required_argument, NULL, UNIAPD_OPT_LISTEN},
		{"db", required_argument, NULL, UNIAPD_OPT_DB},
		{"max-body", required_argument, NULL, UNIAPD_OPT_MAX_BODY},
		{"max-body-in-flight", required_argument, NULL, UNIAPD_OPT_MAX_BODY_IN_FLIGHT},
		{"no-auth", no_argument, NULL, UNIAPD_OPT_NO_AUTH},
		{"no-cache", no_argument, NULL, UNIAPD_OPT_NO_CACHE},
		{"no-share", no_argument, NULL, UNIAPD_OPT_NO_SHARE},
		{"jobs", required_argument, NULL, UNIAPD_OPT_JOBS},
		{"workers", required_argument, NULL, UNIAPD_OPT_WORKERS},
		{"max-queued", required_argument, NULL, UNIAPD_OPT_MAX_QUEUED},
		{"max-time-limit", required_argument, NULL, UNIAPD_OPT_MAX_TIME_LIMIT},
		{"grace", required_argument, NULL, UNIAPD_OPT_GRACE},
		{"lease", required_argument, NULL, UNIAPD_OPT_LEASE},
		{"spare-jobs", required_argument, NULL, UNIAPD_OPT_SPARE_JOBS},
		{"job-budget", required_argument, NULL, UNIAPD_OPT_JOB_BUDGET},
		{"http-threads", required_argument, NULL, UNIAPD_OPT_HTTP_THREADS},
		{"job-retention", required_argument, NULL, UNIAPD_OPT_JOB_RETENTION},
		{"cors-origin", required_argument, NULL, UNIAPD_OPT_CORS_ORIGIN},
		{"max-streams", required_argument, NULL, UNIAPD_OPT_MAX_STREAMS},
		{"max-streams-per-tenant", required_argument, NULL, UNIAPD_OPT_TENANT_STREAMS},
		{"metrics-token-file", required_argument, NULL, UNIAPD_OPT_METRICS_TOKEN_FILE},
		{"evaluate-threads", required_argument, NULL, UNIAPD_OPT_EVALUATE_THREADS},
		{"max-stored-jobs", required_argument, NULL, UNIAPD_OPT_MAX_STORED_JOBS},
		{"max-db-bytes", required_argument, NULL, UNIAPD_OPT_MAX_DB_BYTES},
		{"evaluate-time-limit", required_argument, NULL, UNIAPD_OPT_EVALUATE_TIME_LIMIT},
		{"evaluate-memory", required_argument, NULL, UNIAPD_OPT_EVALUATE_MEMORY},
		{"evaluate-memory-total", required_argument, NULL, UNIAPD_OPT_EVALUATE_TOTAL},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *listen = getenv("UNIAPD_LISTEN");
	const char *db = getenv("UNIAPD_DB");
	int c;

	opt->max_body_bytes = HTTP_DEFAULT_MAX_BODY_BYTES;
	opt->grace_s = UNIAPD_JOB_GRACE_S;
	opt->lease_s = RUNNER_DEFAULT_LEASE_S;
	opt->job_budget_s = RUNNER_DEFAULT_JOB_BUDGET_S;
	opt->job_retention_s = UNIAPD_JOB_RETENTION_S;
	opt->spare_jobs = 4;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		double x = 0;

		if (uniapd_number(c, optarg, &x) != 0)
			return -1;
		switch (c) {
		case 'h': return 1;
		case 'V': return 2;
		case UNIAPD_OPT_LISTEN: listen = optarg; break;
		case UNIAPD_OPT_DB: db = optarg; break;
		case UNIAPD_OPT_MAX_BODY:
			if (uniapd_parse_size("--max-body", optarg, UNIAPD_MAX_BODY_CAP, &opt->max_body_bytes) != 0)
				return -1;
			break;
		case UNIAPD_OPT_MAX_BODY_IN_FLIGHT:
			if (uniapd_parse_size("--max-body-in-flight", optarg, 64 * UNIAPD_MAX_BODY_CAP, &opt->max_body_in_flight) != 0)
				return -1;
			break;
		case UNIAPD_OPT_NO_AUTH: opt->no_auth = 1; break;
		case UNIAPD_OPT_NO_CACHE: opt->no_cache = 1; break;
		case UNIAPD_OPT_NO_SHARE: opt->no_share = 1; break;
		case UNIAPD_OPT_JOBS: opt->jobs = (int)x; break;
		case UNIAPD_OPT_WORKERS: opt->workers = (int)x; break;
		case UNIAPD_OPT_MAX_QUEUED: opt->max_queued = (long)x; break;
		case UNIAPD_OPT_MAX_TIME_LIMIT: opt->max_time_limit_s = x; break;
		case UNIAPD_OPT_GRACE: opt->grace_s = x; break;
		case UNIAPD_OPT_LEASE: opt->lease_s = x; break;
		case UNIAPD_OPT_SPARE_JOBS: opt->spare_jobs = (int)x; break;
		case UNIAPD_OPT_JOB_BUDGET: opt->job_budget_s = x; break;
		case UNIAPD_OPT_HTTP_THREADS: opt->http_threads = (unsigned)x; break;
		case UNIAPD_OPT_JOB_RETENTION: opt->job_retention_s = x; break;
		case UNIAPD_OPT_MAX_STREAMS: opt->max_streams = (unsigned)x; break;
		case UNIAPD_OPT_TENANT_STREAMS: opt->tenant_streams = (unsigned)x; break;
		case UNIAPD_OPT_METRICS_TOKEN_FILE: opt->metrics_token_file = optarg; break;
		case UNIAPD_OPT_EVALUATE_THREADS: opt->evaluate_threads = (int)x; break;
		case UNIAPD_OPT_MAX_STORED_JOBS: opt->max_stored_jobs = (long long)x; break;
		case UNIAPD_OPT_MAX_DB_BYTES: opt->max_db_bytes = (size_t)x; break;
		case UNIAPD_OPT_EVALUATE_TIME_LIMIT: opt->evaluate_time_limit_s = x; break;
		case UNIAPD_OPT_EVALUATE_MEMORY: opt->evaluate_memory_mib = x; break;
		case UNIAPD_OPT_EVALUATE_TOTAL: opt->evaluate_total_mib = x; break;
		case UNIAPD_OPT_CORS_ORIGIN:
			if (uniapd_cors_origin(optarg, opt) != 0)
				return -1;
			break;
		default: return uniapd_bad_option(NULL, argv[optind - 1]);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uniapd: unexpected argument '%.64s' (see uniapd --help)\n", argv[optind]);
		return -1;
	}
	if (uniapd_parse_listen(listen && *listen ? listen : UNIAPD_DEFAULT_LISTEN, opt) != 0)
		return -1;
	opt->db_path = db && *db ? db : UNIAPD_DEFAULT_DB;
	if (opt->no_auth && uniapd_check_loopback(opt->host) != 0)
		return -1;
	if (!opt->metrics_token_file && getenv("UNIAPD_METRICS_TOKEN_FILE") && *getenv("UNIAPD_METRICS_TOKEN_FILE"))
		opt->metrics_token_file = getenv("UNIAPD_METRICS_TOKEN_FILE");
	if (opt->metrics_token_file && uniapd_read_token(opt->metrics_token_file, opt->metrics_token) != 0)
		return -1;
	return 0;
}

/* The offload pool's notify: an evaluation ended, its waiter is resumed now. */
struct uniapd_poke {
	_Atomic(struct http_server *) srv; /* NULL before the server starts and after it stops */
};

static void uniapd_poke(void *ctx)
{
	struct uniapd_poke *p = ctx;

	http_server_poke(atomic_load(&p->srv));
}

/* One JSON line {"msg", "error"} on stderr; error (borrowed) is escaped. */
static void uniapd_log_error(const char *what, const char *error)
{
	cJSON *o = cJSON_CreateObject();
	char *line = NULL;

	if (o && cJSON_AddStringToObject(o, "msg", what) && cJSON_AddStringToObject(o, "error", error))
		line = cJSON_PrintUnformatted(o);
	fprintf(stderr, "%s\n", line ? line : "{\"msg\":\"out of memory\"}");
	cJSON_free(line);
	cJSON_Delete(o);
}

/*
 * GET /readyz: the store is open and its writes complete - none failed last
 * (no space, an I/O error; PostgreSQL: a server that does not answer, which
 * the probe of every second finds), it is not full (new content refused until a
 * delete or the disk makes room) and no write has held the writer lock for
 * STORE_WRITE_WAIT_MS.  Read from atomics (store_health): a frozen disk
 * never blocks the answer.
 */
static int uniapd_ready(void *ctx)
{
	const struct api_app *app = ctx;
	struct store_health h;

	if (!app->store)
		return 0;
	store_health(app->store, &h);
	return !h.failing && !h.full && h.writing_ms < STORE_WRITE_WAIT_MS;
}

/*
 * Accepted keys are remembered for UNIAPD_AUTH_TTL_S by the SHA-256 of the
 * key (never the key), so a busy client costs one store read per second, not
 * one per request; a key revoked with `uniapd tenant revoke` (another
 * process) therefore stops working within that time.  Unknown keys are
 * never cached: each one is looked up.
 */
#define UNIAPD_AUTH_TTL_S 1.0
#define UNIAPD_AUTH_SLOTS 64

struct uniapd_auth_entry {
	unsigned char hash[STORE_SHA256_BYTES];
	double at;                  /* monotonic seconds of the store look-up; 0: empty */
	struct http_principal who;
};

struct uniapd_auth {
	struct api_app *app;
	pthread_mutex_t mu;         /* guards slots */
	struct uniapd_auth_entry slots[UNIAPD_AUTH_SLOTS];
};

static double uniapd_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The auth hook: key (borrowed) must be an active tenant's; a revoked
 * tenant's key is UNIAP_E_FORBIDDEN (403), an unknown one UNIAP_E_NOTFOUND. */
static uniap_code uniapd_auth(void *ctx, const char *key, struct http_principal *out,
                              struct uniap_err *err)
{
	struct uniapd_auth *a = ctx;
	struct store_tenant t;
	unsigned char hash[STORE_SHA256_BYTES];
	double now = uniapd_now_s();
	size_t n, i, victim = 0;
	int hit = 0;
	uniap_code rc;

	store_sha256(key, strlen(key), hash);
	pthread_mutex_lock(&a->mu);
	for (i = 0; i < UNIAPD_AUTH_SLOTS; i++) {
		struct uniapd_auth_entry *e = &a->slots[i];

		if (e->at > 0 && now - e->at < UNIAPD_AUTH_TTL_S && memeql_sec(e->hash, hash, STORE_SHA256_BYTES)) {
			*out = e->who;
			hit = 1;
		}
		if (e->at < a->slots[victim].at)
			victim = i;
	}
	pthread_mutex_unlock(&a->mu);
	if (hit)
		return UNIAP_OK;
	if (!a->app->store)
		return err_set(err, UNIAP_E_NOTFOUND, "api key: unknown");
	rc = store_tenant_lookup(a->app->store, key, &t, err);
	if (rc != UNIAP_OK)
		return rc;
	out->tenant_id = t.id;
	n = strnlen(t.name, sizeof(out->name) - 1); /* names longer than 63 bytes come cut */
	memcpy(out->name, t.name, n);
	out->name[n] = '\0';
	pthread_mutex_lock(&a->mu);
	memcpy(a->slots[victim].hash, hash, sizeof(hash));
	a->slots[victim].at = now;
	a->slots[victim].who = *out;
	a->slots[victim].who.authenticated = 1;
	pthread_mutex_unlock(&a->mu);
	return UNIAP_OK;
}

/* GET /v1/whoami: {"tenant": name, "id": id} of the caller. */
static void uniapd_whoami(struct http_request *req, struct http_response *res)
{
	const struct api_app *app = req->app;
	const struct http_principal *p = req->principal.authenticated ? &req->principal : &app->anonymous;
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "tenant", p->name) ||
	    !cJSON_AddNumberToObject(o, "id", (double)p->tenant_id) ||
	    http_response_set_json(res, HTTP_OK, o) != 0)
		res->status = 0; /* the dispatcher answers 500 */
	cJSON_Delete(o);
}

/* The /v1 and /ui routes (routes.h, shared with the routing fuzz target). */
#define UNIAPD_HANDLER(f) f

static const struct route uniapd_routes[] = {
	UNIAPD_ROUTES(ROUTE_AUTH, UNIAPD_HANDLER)
};
static const struct route uniapd_routes_no_auth[] = {
	UNIAPD_ROUTES(0, UNIAPD_HANDLER)
};

/* mkdir -p of the folder holding path (borrowed); 0 ok, -1 with a message in msg. */
static int uniapd_make_parent(const char *path, char *msg, size_t cap)
{
	char dir[PATH_MAX];
	char *slash;
	size_t n = strlen(path);

	if (n >= sizeof(dir)) {
		snprintf(msg, cap, "--db: path too long");
		return -1;
	}
	memcpy(dir, path, n + 1);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
			snprintf(msg, cap, "%s: %s", dir, strerror(errno));
			return -1;
		}
		*p = '/';
	}
	if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
		snprintf(msg, cap, "%s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* Creates the parent folder and opens (migrating) the store; NULL with a message in msg. */
static struct store *uniapd_open_store(const char *path, const struct uniapd_options *opt, char *msg,
                                       size_t cap)
{
	struct uniap_err err;
	struct store *s = NULL;
	struct store_opts so;

	err_clear(&err);
	memset(&so, 0, sizeof(so));
	if (opt) {
		so.max_queued_jobs = opt->max_queued;
		so.max_stored_jobs = opt->max_stored_jobs;
		so.max_db_bytes = opt->max_db_bytes;
	}
	so.pool_size = STORE_POOL_MAX;
	if (!store_is_postgres(path) && uniapd_make_parent(path, msg, cap) != 0)
		return NULL;
	if (store_open(path, &so, &s, &err) != UNIAP_OK) {
		/* a URL may hold a password: never echo one */
		snprintf(msg, cap, "%.200s: %.300s", store_is_postgres(path) ? "the PostgreSQL database" : path,
		         err.msg);
		return NULL;
	}
	return s;
}

/* The tenant called name into *out; UNIAP_E_NOTFOUND when none. */
static uniap_code uniapd_tenant_find(struct store *s, const char *name, struct store_tenant *out,
                                     struct uniap_err *err)
{
	int64_t cursor = 0;
	uniap_code rc;

	do {
		struct store_tenant *page = NULL;
		size_t n = 0, i;
		int64_t next = 0;

		rc = store_tenant_list(s, cursor, 0, &page, &n, &next, err);
		if (rc != UNIAP_OK)
			return rc;
		for (i = 0; i < n; i++)
			if (strcmp(page[i].name, name) == 0)
				break;
		if (i < n)
			*out = page[i];
		free(page);
		if (i < n)
			return UNIAP_OK;
		cursor = next;
	} while (cursor != 0);
	return err_set(err, UNIAP_E_NOTFOUND, "tenant: no tenant named \"%s\"", name);
}

/* The --no-auth tenant, created on first use; fills app->anonymous. */
static uniap_code uniapd_anonymous(struct api_app *app, struct uniap_err *err)
{
	struct store_tenant t;
	char key[STORE_KEY_CHARS + 1];
	int64_t id = 0;
	uniap_code rc = uniapd_tenant_find(app->store, UNIAPD_NO_AUTH_TENANT, &t, err);

	if (rc == UNIAP_OK)
		id = t.id;
	else if (rc == UNIAP_E_NOTFOUND)
		rc = store_tenant_add(app->store, UNIAPD_NO_AUTH_TENANT, UNIAPD_TENANT_MAX_JOBS,
		                      UNIAPD_TENANT_MAX_STORED_BYTES, &id, key, err);
	if (rc != UNIAP_OK)
		return rc;
	memset(key, 0, sizeof(key));
	app->anonymous.authenticated = 1;
	app->anonymous.tenant_id = id;
	snprintf(app->anonymous.name, sizeof(app->anonymous.name), "%s", UNIAPD_NO_AUTH_TENANT);
	return UNIAP_OK;
}

/* ---------------------------------------------------------------- uniapd tenant */

static void uniapd_tenant_usage(FILE *out, const char *cmd)
{
	if (cmd && strcmp(cmd, "add") == 0)
		fprintf(out, "usage: uniapd tenant add NAME [--db FILE|URL] [--max-jobs N] [--max-bytes N]\n"
		             "                           [--max-job-budget S]\n\n"
		             "Adds a tenant and prints its new API key once, as the last line.\n"
		             "NAME: 1..%d of A-Z a-z 0-9 . _ -\n"
		             "--max-jobs N        its queued + running jobs at most (default %d; more: 429)\n"
		             "--max-bytes N       its stored documents' and jobs' bytes at most (default %lld;\n"
		             "                    more: 413)\n"
		             "--max-job-budget S  worker seconds one of its plan jobs may spend, when below\n"
		             "                    the service's --job-budget (default 0: that one holds)\n",
		        UNIAPD_TENANT_NAME_MAX, UNIAPD_TENANT_MAX_JOBS, (long long)UNIAPD_TENANT_MAX_STORED_BYTES);
	else if (cmd && strcmp(cmd, "set") == 0)
		fprintf(out, "usage: uniapd tenant set NAME [--db FILE|URL] [--max-jobs N] [--max-bytes N]\n"
		             "                           [--max-job-budget S]\n\n"
		             "Changes the quotas given (as for tenant add; the others stay). They hold from\n"
		             "the tenant's next request, and for jobs from the next one that starts.\n");
	else if (cmd && strcmp(cmd, "list") == 0)
		fprintf(out, "usage: uniapd tenant list [--db FILE|URL]\n\n"
		             "Lists the tenants: id, name, created, revoked, quotas (never keys).\n");
	else if (cmd && strcmp(cmd, "revoke") == 0)
		fprintf(out, "usage: uniapd tenant revoke NAME [--db FILE|URL]\n\n"
		             "Revokes the tenant's key: its requests get 403 from then on (within a second).\n"
		             "Its queued jobs are canceled at once; a running uniapd stops its running jobs\n"
		             "within about a second (both end canceled, \"the tenant was revoked\").\n");
	else
		fprintf(out, "usage: uniapd tenant add NAME [--db FILE|URL] [quotas]\n"
		             "       uniapd tenant set NAME [--db FILE|URL] [quotas]\n"
		             "       uniapd tenant list [--db FILE|URL]\n"
		             "       uniapd tenant revoke NAME [--db FILE|URL]\n\n"
		             "--db FILE|URL (a SQLite file or a postgres:// URL) defaults to env UNIAPD_DB, then %s.\n",
		        UNIAPD_DEFAULT_DB);
}

static int uniapd_tenant_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n < 1 || n > UNIAPD_TENANT_NAME_MAX)
		return 0;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* Unix ms as "2026-01-02T03:04:05Z" into buf; "-" for 0. */
static void uniapd_time(int64_t ms, char *buf, size_t cap)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms == 0 || !gmtime_r(&t, &tm) || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, cap, "-");
}

static uniap_code uniapd_tenant_print(struct store *s, struct uniap_err *err)
{
	int64_t cursor = 0;
	uniap_code rc;

	printf("%-6s %-24s %-20s %-20s %-8s %-12s %s\n", "ID", "NAME", "CREATED", "REVOKED", "MAX-JOBS", "MAX-BYTES",
	       "MAX-JOB-BUDGET");
	do {
		struct store_tenant *page = NULL;
		size_t n = 0;
		int64_t next = 0;

		rc = store_tenant_list(s, cursor, 0, &page, &n, &next, err);
		if (rc != UNIAP_OK)
			return rc;
		for (size_t i = 0; i < n; i++) {
			char created[32], revoked[32];

			uniapd_time(page[i].created_at_ms, created, sizeof(created));
			uniapd_time(page[i].revoked_at_ms, revoked, sizeof(revoked));
			printf("%-6lld %-24s %-20s %-20s %-8lld %-12lld %g\n", (long long)page[i].id, page[i].name, created,
			       revoked, (long long)page[i].max_concurrent_jobs, (long long)page[i].max_stored_bytes,
			       page[i].max_job_worker_s);
		}
		free(page);
		cursor = next;
	} while (cursor != 0);
	return UNIAP_OK;
}

/* uniapd tenant CMD ...: 0 ok, 1 failed, 2 bad command line. */
static int uniapd_tenant_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"db", required_argument, NULL, UNIAPD_OPT_DB},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct option add_opts[] = {
		{"db", required_argument, NULL, UNIAPD_OPT_DB},
		{"max-jobs", required_argument, NULL, UNIAPD_OPT_MAX_JOBS},
		{"max-bytes", required_argument, NULL, UNIAPD_OPT_MAX_BYTES},
		{"max-job-budget", required_argument, NULL, UNIAPD_OPT_MAX_JOB_BUDGET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argc > 2 ? argv[2] : NULL;
	const char *db = getenv("UNIAPD_DB"), *name = NULL;
	char cmd_label[32];
	int want_name, i, c, status = 1;
	double max_jobs = -1, max_bytes = -1, max_job_budget = -1; /* -1: not given */
	int quotas = 0;
	struct store *s = NULL;
	struct store_tenant t;
	struct uniap_err err;
	char msg[512];
	uniap_code rc = UNIAP_OK;

	err_clear(&err);
	if (!cmd || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		uniapd_tenant_usage(cmd ? stdout : stderr, NULL);
		return cmd ? 0 : 2;
	}
	quotas = strcmp(cmd, "add") == 0 || strcmp(cmd, "set") == 0;
	if (!quotas && strcmp(cmd, "list") != 0 && strcmp(cmd, "revoke") != 0) {
		fprintf(stderr, "uniapd tenant: unknown command \"%s\" (see uniapd tenant --help)\n", cmd);
		return 2;
	}
	snprintf(cmd_label, sizeof(cmd_label), "tenant %s", cmd);
	want_name = strcmp(cmd, "list") != 0;
	/* argv + 2: cmd stands where getopt expects the program's name */
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc - 2, argv + 2, "h", quotas ? add_opts : opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			uniapd_tenant_usage(stdout, cmd);
			return 0;
		case UNIAPD_OPT_DB:
			db = optarg;
			break;
		case UNIAPD_OPT_MAX_JOBS:
			if (uniapd_number(c, optarg, &max_jobs) != 0)
				return 2;
			break;
		case UNIAPD_OPT_MAX_BYTES:
			if (uniapd_number(c, optarg, &max_bytes) != 0)
				return 2;
			break;
		case UNIAPD_OPT_MAX_JOB_BUDGET:
			if (uniapd_number(c, optarg, &max_job_budget) != 0)
				return 2;
			break;
		default:
			uniapd_bad_option(cmd_label, argv[2 + optind - 1]);
			return 2;
		}
	}
	for (i = 2 + optind; i < argc; i++) {
		if (want_name && !name) {
			name = argv[i];
		} else {
			fprintf(stderr, "uniapd tenant %s: %s: unexpected argument (see uniapd tenant %s --help)\n",
			        cmd, argv[i], cmd);
			return 2;
		}
	}
	if (want_name && !name) {
		fprintf(stderr, "uniapd tenant %s: NAME: required (see uniapd tenant %s --help)\n", cmd, cmd);
		return 2;
	}
	if (name && strcmp(cmd, "add") == 0 && !uniapd_tenant_name_ok(name)) {
		fprintf(stderr, "uniapd tenant add: NAME: must be 1..%d of A-Z a-z 0-9 . _ -, got \"%s\"\n",
		        UNIAPD_TENANT_NAME_MAX, name);
		return 2;
	}
	if (!db || !*db)
		db = UNIAPD_DEFAULT_DB;
	s = uniapd_open_store(db, NULL, msg, sizeof(msg));
	if (!s) {
		fprintf(stderr, "uniapd tenant %s: %s\n", cmd, msg);
		return 1;
	}
	if (strcmp(cmd, "add") == 0) {
		char key[STORE_KEY_CHARS + 1];
		int64_t id = 0;

		rc = store_tenant_add(s, name, max_jobs < 0 ? UNIAPD_TENANT_MAX_JOBS : (int64_t)max_jobs,
		                      max_bytes < 0 ? UNIAPD_TENANT_MAX_STORED_BYTES : (int64_t)max_bytes, &id, key, &err);
		if (rc == UNIAP_OK && max_job_budget > 0) {
			struct store_tenant_quota q = { -1, -1, max_job_budget };

			rc = store_tenant_set_quota(s, id, &q, &err);
		}
		if (rc == UNIAP_OK) {
			printf("tenant \"%s\" added with id %lld; its API key (shown once, only its hash is kept):\n%s\n",
			       name, (long long)id, key);
			memset(key, 0, sizeof(key));
		}
	} else if (strcmp(cmd, "list") == 0) {
		rc = uniapd_tenant_print(s, &err);
	} else if (strcmp(cmd, "set") == 0) {
		struct store_tenant_quota q = { (int64_t)max_jobs, (int64_t)max_bytes, max_job_budget };

		rc = uniapd_tenant_find(s, name, &t, &err);
		if (rc == UNIAP_OK)
			rc = store_tenant_set_quota(s, t.id, &q, &err);
		if (rc == UNIAP_OK && (max_jobs >= 0 || max_bytes >= 0 || max_job_budget >= 0))
			printf("tenant \"%s\": quotas changed\n", name);
		else if (rc == UNIAP_OK)
			printf("tenant \"%s\": no quota given, nothing changed\n", name);
	} else {
		size_t canceled = 0;

		rc = uniapd_tenant_find(s, name, &t, &err);
		if (rc == UNIAP_OK)
			rc = store_tenant_revoke(s, t.id, &canceled, &err);
		/* a running uniapd stops the tenant's running jobs within a second (uniapd_wait) */
		if (rc == UNIAP_OK)
			printf("tenant \"%s\" revoked; %zu queued jobs canceled, running ones stop within a second\n",
			       name, canceled);
	}
	if (rc == UNIAP_OK)
		status = fflush(stdout) == 0 ? 0 : 1;
	else
		fprintf(stderr, "uniapd tenant %s: %s\n", cmd, err.msg);
	store_close(s);
	return status;
}

/*
 * The retention sweep: deletes the finished jobs that ended more than
 * retention_s ago, UNIAPD_PURGE_BATCH per write so requests never wait long
 * on the write lock; logs one line when it deleted any.  A failure is logged
 * and retried at the next sweep.
 */
static void uniapd_purge(struct api_app *app, double retention_s)
{
	struct uniap_err err;
	size_t n = 0, total = 0;
	uniap_code rc;

	do {
		err_clear(&err);
		rc = store_jobs_purge(app->store, (int64_t)(retention_s * 1000), UNIAPD_PURGE_BATCH, &n, &err);
		total += n;
	} while (rc == UNIAP_OK && n == UNIAPD_PURGE_BATCH);
	if (rc != UNIAP_OK)
		uniapd_log_error("job retention sweep failed", err.msg);
	if (total) {
		atomic_fetch_add(&app->jobs_purged, (long long)total);
		fprintf(stderr, "{\"msg\":\"purged\",\"jobs\":%zu,\"retention_s\":%g}\n", total, retention_s);
	}
}

/* Queues again the running jobs whose lease ran out (their uniapd died, this
 * one's earlier life included) and wakes the runner for them. */
static void uniapd_recover(struct api_app *app)
{
	struct uniap_err err;
	size_t requeued = 0;

	err_clear(&err);
	if (store_jobs_recover(app->store, &requeued, &err) != UNIAP_OK)
		uniapd_log_error("cannot recover jobs", err.msg);
	else if (requeued) {
		fprintf(stderr, "{\"msg\":\"recovered\",\"requeued_jobs\":%zu}\n", requeued);
		for (size_t i = 0; i < requeued; i++)
			runner_wake(app->runner);
	}
}

static long long uniapd_rss_bytes(void);

/* Resident memory past which the main loop gives freed heap back to the system each second
 * (malloc_trim): an evaluation on an offload thread can take a few hundred MB in that thread's
 * arena, which glibc keeps after it is freed; four heavy evaluations left uniapd at 398 MB for
 * good before, where a normal load runs in about 33 MB. */
#define UNIAPD_TRIM_ABOVE_BYTES (64LL << 20)

/* Waits for SIGTERM or SIGINT (blocked in sigs); meanwhile, every second, stops the
 * running jobs of revoked tenants and renews the leases of this process's running
 * jobs; every UNIAPD_RECOVER_EVERY_S queues again the jobs of expired leases; and
 * sweeps finished jobs past their retention every retention/2 seconds (1 to 60;
 * never when retention_s <= 0); and gives freed heap back to the system while
 * the process holds more than UNIAPD_TRIM_ABOVE_BYTES.  Returns the signal. */
static int uniapd_wait(struct api_app *app, const sigset_t *sigs, double retention_s)
{
	double every = retention_s / 2, since_purge = 0, since_recover = 0;
	struct timespec ts = {1, 0};
	int sig;

	every = every < 1 ? 1 : every > 60 ? 60 : every;
	if (retention_s > 0)
		uniapd_purge(app, retention_s);
	for (;;) {
		size_t stopped;

		sig = sigtimedwait(sigs, NULL, &ts);
		if (sig > 0)
			return sig;
		/* one page written a second: GET /readyz sees a disk that filled or froze while idle */
		(void)store_probe(app->store, NULL);
		if (uniapd_rss_bytes() > UNIAPD_TRIM_ABOVE_BYTES)
			(void)malloc_trim(0);
		if ((stopped = runner_cancel_revoked(app->runner)) > 0)
			fprintf(stderr, "{\"msg\":\"revoked\",\"running_jobs_stopped\":%zu}\n", stopped);
		if ((stopped = runner_lease_tick(app->runner)) > 0)
			fprintf(stderr, "{\"msg\":\"lost leases\",\"running_jobs_stopped\":%zu}\n", stopped);
		if (++since_recover >= UNIAPD_RECOVER_EVERY_S) {
			uniapd_recover(app);
			since_recover = 0;
		}
		since_purge += 1;
		if (retention_s > 0 && since_purge >= every) {
			uniapd_purge(app, retention_s);
			since_purge = 0;
		}
	}
}

/* What GET /metrics reads besides the HTTP layer's counters. */
struct uniapd_metrics_ctx {
	struct api_app *app;
	double start_unix_s;        /* when main() began: process_start_time_seconds */
};

/* Resident bytes from /proc/self/statm (its second field, in pages); -1 when unreadable. */
static long long uniapd_rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size_pages = 0, rss_pages = 0;
	long page = sysconf(_SC_PAGESIZE);
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu", &size_pages, &rss_pages);
	fclose(f);
	return n == 2 && page > 0 ? (long long)(rss_pages * (unsigned long long)page) : -1;
}

/* Open file descriptors: the entries of /proc/self/fd less the one reading it; -1 when unreadable. */
static long uniapd_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0;
}

/* The standard process_* metrics of Prometheus' client libraries; a value
 * that cannot be read is left out rather than reported as 0. */
static void uniapd_metrics_process(FILE *f, double start_unix_s)
{
	struct rusage ru;
	struct rlimit rl;
	long long rss = uniapd_rss_bytes();
	long fds = uniapd_open_fds();

	if (getrusage(RUSAGE_SELF, &ru) == 0)
		fprintf(f, "# HELP process_cpu_seconds_total User and system CPU seconds of uniapd (its solver processes not included).\n"
		           "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.6f\n",
		        (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		        (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6);
	if (rss >= 0)
		fprintf(f, "# HELP process_resident_memory_bytes Resident memory of uniapd in bytes.\n"
		           "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %lld\n", rss);
	if (fds >= 0)
		fprintf(f, "# HELP process_open_fds Open file descriptors of uniapd.\n"
		           "# TYPE process_open_fds gauge\nprocess_open_fds %ld\n", fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		fprintf(f, "# HELP process_max_fds The soft limit on open file descriptors.\n"
		           "# TYPE process_max_fds gauge\nprocess_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
	fprintf(f, "# HELP process_start_time_seconds When uniapd started, in seconds since the Unix epoch.\n"
	           "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.3f\n", start_unix_s);
}

/* GET /metrics, the service's part: build info, jobs by state, queue depth,
 * solve seconds, cost-cache hits and misses, the process.  Owned text or NULL. */
static char *uniapd_metrics(void *ctx)
{
	const struct uniapd_metrics_ctx *mc = ctx;
	struct api_app *app = mc->app;
	struct runner_stats st;
	int64_t counts[STORE_JOB_STATE_COUNT], entries = 0, bytes = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int k, b;

	if (!f)
		return NULL;
	memset(&st, 0, sizeof(st));
	if (app->runner)
		runner_get_stats(app->runner, &st);
	if (store_job_counts(app->store, counts, NULL) != UNIAP_OK)
		memset(counts, 0, sizeof(counts));
	if (store_cache_stats(app->store, &entries, &bytes, NULL) != UNIAP_OK)
		entries = bytes = 0;
	fprintf(f, "# HELP uniapd_build_info The version (git describe) and commit uniapd was built from.\n"
	           "# TYPE uniapd_build_info gauge\nuniapd_build_info{version=\"%s\",git=\"%s\"} 1\n",
	        buildinfo_version, buildinfo_git_commit);
	fprintf(f, "# HELP uniapd_jobs Jobs in the store, by state (all tenants).\n# TYPE uniapd_jobs gauge\n");
	for (k = 0; k < STORE_JOB_STATE_COUNT; k++)
		fprintf(f, "uniapd_jobs{state=\"%s\"} %lld\n", store_job_state_name((enum store_job_state)k),
		        (long long)counts[k]);
	fprintf(f, "# HELP uniapd_queue_depth Jobs waiting for a job thread.\n# TYPE uniapd_queue_depth gauge\n"
	           "uniapd_queue_depth %lld\n", (long long)counts[STORE_JOB_QUEUED]);
	fprintf(f, "# HELP uniapd_jobs_running Jobs this process is running now.\n# TYPE uniapd_jobs_running gauge\n"
	           "uniapd_jobs_running %lld\n", (long long)st.running);
	fprintf(f, "# HELP uniapd_jobs_finished_total Jobs this process ended, by final state.\n"
	           "# TYPE uniapd_jobs_finished_total counter\n");
	for (k = STORE_JOB_SUCCEEDED; k < STORE_JOB_STATE_COUNT; k++)
		fprintf(f, "uniapd_jobs_finished_total{state=\"%s\"} %lld\n",
		        store_job_state_name((enum store_job_state)k), (long long)st.finished[k]);
	fprintf(f, "# HELP uniapd_job_solve_seconds Wall seconds of succeeded plan jobs.\n"
	           "# TYPE uniapd_job_solve_seconds histogram\n");
	for (b = 0; b < 8; b++)
		fprintf(f, "uniapd_job_solve_seconds_bucket{le=\"%g\"} %lld\n", runner_solve_buckets[b],
		        (long long)st.solve_bucket[b]);
	fprintf(f, "uniapd_job_solve_seconds_bucket{le=\"+Inf\"} %lld\nuniapd_job_solve_seconds_sum %.9g\n"
	           "uniapd_job_solve_seconds_count %lld\n", (long long)st.solve_count, st.solve_seconds_sum,
	        (long long)st.solve_count);
	fprintf(f, "# HELP uniapd_cost_cache_requests_total Candidate memo look-ups in the cost cache.\n"
	           "# TYPE uniapd_cost_cache_requests_total counter\n"
	           "uniapd_cost_cache_requests_total{result=\"hit\"} %lld\n"
	           "uniapd_cost_cache_requests_total{result=\"miss\"} %lld\n"
	           "# HELP uniapd_cost_cache_writes_total Candidate memos written to the cost cache.\n"
	           "# TYPE uniapd_cost_cache_writes_total counter\nuniapd_cost_cache_writes_total %lld\n"
	           "# HELP uniapd_cost_cache_entries Entries in the cost cache.\n# TYPE uniapd_cost_cache_entries gauge\n"
	           "uniapd_cost_cache_entries %lld\n"
	           "# HELP uniapd_cost_cache_bytes Bytes in the cost cache.\n# TYPE uniapd_cost_cache_bytes gauge\n"
	           "uniapd_cost_cache_bytes %lld\n",
	        (long long)st.cache_hits, (long long)st.cache_misses, (long long)st.cache_puts,
	        (long long)entries, (long long)bytes);
	fprintf(f, "# HELP uniapd_shared_runs_total Runs of other replicas' plan jobs this replica helped.\n"
	           "# TYPE uniapd_shared_runs_total counter\nuniapd_shared_runs_total %lld\n"
	           "# HELP uniapd_shared_candidates_total Candidates of shared plan jobs: solved here for a run "
	           "(its own or another replica's), or taken by this replica's jobs from other replicas.\n"
	           "# TYPE uniapd_shared_candidates_total counter\n"
	           "uniapd_shared_candidates_total{how=\"solved\"} %lld\n"
	           "uniapd_shared_candidates_total{how=\"taken\"} %lld\n",
	        (long long)st.share_joins, (long long)st.share_units_put, (long long)st.share_units_taken);
	fprintf(f, "# HELP uniapd_jobs_purged_total Finished jobs deleted past their retention.\n"
	           "# TYPE uniapd_jobs_purged_total counter\nuniapd_jobs_purged_total %lld\n",
	        (long long)atomic_load(&app->jobs_purged));
	if (app->offload) {
		struct offload_stats os;

		offload_get_stats(app->offload, &os);
		fprintf(f, "# HELP uniapd_evaluations Evaluations (POST /v1/evaluate) handed to their own threads, now.\n"
		           "# TYPE uniapd_evaluations gauge\nuniapd_evaluations{state=\"queued\"} %lld\n"
		           "uniapd_evaluations{state=\"running\"} %lld\n"
		           "# HELP uniapd_evaluations_total Evaluations submitted, refused (busy: the pool is full; "
		           "rate: the tenant's share is) and abandoned by their waiter.\n"
		           "# TYPE uniapd_evaluations_total counter\n"
		           "uniapd_evaluations_total{result=\"submitted\"} %lld\nuniapd_evaluations_total{result=\"busy\"} %lld\n"
		           "uniapd_evaluations_total{result=\"rate\"} %lld\nuniapd_evaluations_total{result=\"abandoned\"} %lld\n",
		        (long long)os.queued, (long long)os.running, (long long)os.submitted, (long long)os.refused_busy,
		        (long long)os.refused_rate, (long long)os.abandoned);
		fprintf(f, "# HELP uniapd_evaluation_reserve_threads Reserve evaluation threads started for tenants "
		           "with nothing running while every thread was busy (kept once started).\n"
		           "# TYPE uniapd_evaluation_reserve_threads gauge\nuniapd_evaluation_reserve_threads %lld\n"
		           "# HELP uniapd_evaluation_memory_bytes Cost-table bytes the evaluations running now hold "
		           "(of --evaluate-memory-total).\n"
		           "# TYPE uniapd_evaluation_memory_bytes gauge\nuniapd_evaluation_memory_bytes %lld\n",
		        (long long)os.reserve_started, (long long)atomic_load(&app->eval_bytes));
	}
	uniapd_metrics_process(f, mc->start_unix_s);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int main(int argc, char **argv)
{
	struct uniapd_options opt;
	struct api_app app;
	struct uniapd_auth auth;
	struct uniapd_metrics_ctx metrics_ctx;
	struct uniapd_poke poke;
	struct route_table routes;
	struct http_config cfg;
	struct http_server *srv;
	struct uniap_err err;
	sigset_t sigs;
	char msg[512];
	int sig = 0, rc;

	if (argc > 1 && strcmp(argv[1], "tenant") == 0)
		return uniapd_tenant_main(argc, argv);
	memset(&opt, 0, sizeof(opt));
	memset(&app, 0, sizeof(app));
	memset(&auth, 0, sizeof(auth));
	atomic_init(&poke.srv, NULL);
	auth.app = &app;
	pthread_mutex_init(&auth.mu, NULL);
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		metrics_ctx.app = &app;
		metrics_ctx.start_unix_s = (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
	}
	rc = uniapd_parse_args(argc, argv, &opt);
	if (rc == 2) {
		printf("uniapd %s (git %s)\n", buildinfo_version, buildinfo_git_commit);
		return 0;
	}
	if (rc != 0) {
		if (rc > 0)
			uniapd_usage(stdout);
		return rc > 0 ? 0 : 2;
	}
	/* block the stop signals before any thread starts, so every MHD thread
	 * inherits the mask and only sigwait below sees them */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	store_global_init();
	/* GSL's abort-on-error handler off, process-wide, before any job thread fits */
	calib_global_init();
	/* the store first: migrations run before the listener starts */
	app.store = uniapd_open_store(opt.db_path, &opt, msg, sizeof(msg));
	if (!app.store) {
		uniapd_log_error("cannot open the store", msg);
		return 1;
	}
	/* jobs that were running when the last process died run again */
	{
		size_t requeued = 0;

		err_clear(&err);
		if (store_jobs_recover(app.store, &requeued, &err) != UNIAP_OK) {
			uniapd_log_error("cannot recover jobs", err.msg);
			store_close(app.store);
			return 1;
		}
		if (requeued)
			fprintf(stderr, "{\"msg\":\"recovered\",\"requeued_jobs\":%zu}\n", requeued);
	}
	{
		struct runner_config rc_cfg;

		memset(&rc_cfg, 0, sizeof(rc_cfg));
		rc_cfg.store = app.store;
		rc_cfg.jobs = opt.jobs;
		rc_cfg.workers = opt.workers;
		rc_cfg.no_cache = opt.no_cache;
		rc_cfg.no_share = opt.no_share;
		rc_cfg.build = buildinfo_version;
		rc_cfg.lease_s = opt.lease_s;
		rc_cfg.spare_jobs = opt.spare_jobs;
		rc_cfg.job_budget_worker_s = opt.job_budget_s > 0 ? opt.job_budget_s : -1; /* 0: none */
		rc_cfg.log = stderr;
		err_clear(&err);
		if (runner_start(&rc_cfg, &app.runner, &err) != UNIAP_OK) {
			uniapd_log_error("cannot start the job runner", err.msg);
			store_close(app.store);
			return 1;
		}
		/* other replicas' queued jobs and cancels (PostgreSQL: LISTEN/NOTIFY) */
		err_clear(&err);
		if (store_listen(app.store, runner_on_store_event, app.runner, &err) != UNIAP_OK) {
			uniapd_log_error("cannot listen to the store", err.msg);
			runner_free(app.runner);
			store_close(app.store);
			return 1;
		}
	}
	{
		struct offload_config oc;

		memset(&oc, 0, sizeof(oc));
		oc.threads = opt.evaluate_threads;
		oc.notify = uniapd_poke;
		oc.notify_ctx = &poke;
		err_clear(&err);
		if (offload_start(&oc, &app.offload, &err) != UNIAP_OK) {
			uniapd_log_error("cannot start the evaluation threads", err.msg);
			runner_free(app.runner);
			store_close(app.store);
			return 1;
		}
	}
	app.evaluate_time_limit_s = opt.evaluate_time_limit_s;
	app.evaluate_max_bytes = opt.evaluate_memory_mib * 1048576.0;
	app.evaluate_total_bytes = (opt.evaluate_total_mib > 0 ? opt.evaluate_total_mib * 1048576.0
	                                                        : API_EVALUATE_TOTAL_BYTES);
	if (app.evaluate_total_bytes < (app.evaluate_max_bytes > 0 ? app.evaluate_max_bytes : API_EVALUATE_MAX_BYTES))
		app.evaluate_total_bytes = app.evaluate_max_bytes > 0 ? app.evaluate_max_bytes : API_EVALUATE_MAX_BYTES;
	atomic_init(&app.eval_bytes, 0);
	app.log = stderr;
	app.ui_assets = ui_assets; /* compiled in from ui/, like the OpenAPI document */
	app.ui_asset_count = ui_asset_count;
	app.max_time_limit_s = opt.max_time_limit_s > 0 ? opt.max_time_limit_s : UNIAPD_MAX_TIME_LIMIT_S;
	err_clear(&err);
	if (opt.no_auth && uniapd_anonymous(&app, &err) != UNIAP_OK) {
		uniapd_log_error("cannot set up --no-auth", err.msg);
		runner_free(app.runner);
		store_close(app.store);
		return 1;
	}
	memset(&routes, 0, sizeof(routes));
	routes.routes = opt.no_auth ? uniapd_routes_no_auth : uniapd_routes;
	routes.count = opt.no_auth ? sizeof(uniapd_routes_no_auth) / sizeof(uniapd_routes_no_auth[0])
	                           : sizeof(uniapd_routes) / sizeof(uniapd_routes[0]);
	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = opt.host;
	cfg.port = opt.port;
	cfg.max_body_bytes = opt.max_body_bytes;
	cfg.max_body_in_flight = opt.max_body_in_flight;
	/* one request thread per core: with more, threads and wrk-like clients fight for the
	 * cores and the p99 grows (bench/http.sh: 2 threads on 2 cores, p99 0.7 ms at 16
	 * connections, 4.8 ms at 64; 8 threads, 27 ms and 10 ms) */
	if (opt.http_threads)
		cfg.threads = opt.http_threads;
	else {
		long cores = sysconf(_SC_NPROCESSORS_ONLN);

		cfg.threads = cores < 2 ? 2u : cores > 64 ? 64u : (unsigned)cores;
	}
	cfg.routes = &routes;
	cfg.auth = uniapd_auth;
	cfg.auth_ctx = &auth;
	cfg.ready = uniapd_ready;
	cfg.ready_ctx = &app;
	cfg.app = &app;
	cfg.access_log = stderr;
	cfg.metrics_token = opt.metrics_token[0] ? opt.metrics_token : NULL;
	cfg.openapi_json = (const char *)openapi_doc_json;
	cfg.openapi_json_len = openapi_doc_json_len;
	cfg.metrics = uniapd_metrics;
	cfg.metrics_ctx = &metrics_ctx;
	cfg.cors_origins = opt.cors_origins;
	cfg.cors_origin_count = opt.cors_origin_count;
	cfg.max_streams = opt.max_streams;
	cfg.tenant_streams = opt.tenant_streams;
	cfg.version = api_job_version;
	cfg.version_ctx = &app;
	cfg.wait_gone = api_wait_gone;
	cfg.wait_gone_ctx = &app;
	srv = http_server_start(&cfg, msg, sizeof(msg));
	atomic_store(&poke.srv, srv);
	if (!srv) {
		uniapd_log_error("cannot start", msg);
		offload_free(app.offload);
		runner_free(app.runner);
		store_close(app.store);
		return 1;
	}
	{
		cJSON *o = cJSON_CreateObject();
		char *line = NULL;

		if (o && cJSON_AddStringToObject(o, "msg", "listening") && cJSON_AddStringToObject(o, "addr", opt.host) &&
		    cJSON_AddNumberToObject(o, "port", http_server_port(srv)) &&
		    cJSON_AddStringToObject(o, "db", opt.db_path) && cJSON_AddBoolToObject(o, "auth", !opt.no_auth) &&
		    cJSON_AddNumberToObject(o, "max_body_bytes", (double)opt.max_body_bytes) &&
		    cJSON_AddNumberToObject(o, "job_retention_s", opt.job_retention_s) &&
		    cJSON_AddStringToObject(o, "instance", runner_owner(app.runner)) &&
		    cJSON_AddNumberToObject(o, "lease_s", opt.lease_s))
			line = cJSON_PrintUnformatted(o);
		fprintf(stderr, "%s\n", line ? line : "{\"msg\":\"listening\"}");
		cJSON_free(line);
		cJSON_Delete(o);
	}
	sig = uniapd_wait(&app, &sigs, opt.job_retention_s);
	fprintf(stderr, "{\"msg\":\"stopping\",\"signal\":%d}\n", sig);
	http_server_stop(srv, UNIAPD_GRACE_MS);
	/* the evaluations end by their own time cap; their pokes find a stopped server, not a freed one */
	offload_free(app.offload);
	app.offload = NULL;
	atomic_store(&poke.srv, NULL);
	http_server_free(srv);
	runner_stop(app.runner, opt.grace_s); /* finish or re-queue the running jobs */
	runner_free(app.runner);
	app.runner = NULL;
	store_close(app.store); /* after the listener and the runner: nothing is in flight */
	app.store = NULL;
	fprintf(stderr, "{\"msg\":\"stopped\"}\n");
	return 0;
}
