/*
 * main.c - uniapd's main(): the command line, the HTTP server, and a
 * graceful shutdown on SIGTERM/SIGINT (stop accepting, let the requests in
 * flight finish, then exit 0).
 *
 * Exit status: 0 after a clean shutdown, 1 when the server cannot start, 2
 * for a bad command line.  Every request is logged as one JSON line on
 * stderr (http.c).
 *
 * Never: do request work here; keep state in globals (the signal set is
 * waited on with sigwait, no handler runs).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "http.h"

#define UNIAPD_DEFAULT_LISTEN "127.0.0.1:8080"
#define UNIAPD_DEFAULT_DB "var/uniap.db"
#define UNIAPD_MAX_BODY_CAP (1024ull * 1024ull * 1024ull) /* --max-body at most 1 GiB */
#define UNIAPD_GRACE_MS 10000u                               /* in-flight requests get this long */

struct uniapd_options {
	char addr[64];
	unsigned short port;
	const char *db_path;
	size_t max_body_bytes;
};

static void uniapd_usage(FILE *out)
{
	fprintf(out,
	        "usage: uniapd [--listen ADDR:PORT] [--db FILE] [--max-body BYTES]\n"
	        "\n"
	        "  --listen ADDR:PORT  IPv4 address and port to serve on (default %s;\n"
	        "                      env UNIAPD_LISTEN); port 0 picks a free one\n"
	        "  --db FILE           SQLite database (default %s; env UNIAPD_DB)\n"
	        "  --max-body BYTES    largest request body accepted (default %u)\n"
	        "  --help              this text\n"
	        "\n"
	        "SIGTERM or SIGINT stops accepting and lets requests in flight finish.\n",
	        UNIAPD_DEFAULT_LISTEN, UNIAPD_DEFAULT_DB, HTTP_DEFAULT_MAX_BODY_BYTES);
}

/* "ADDR:PORT" into opt; 0 ok, -1 with a message on stderr. */
static int uniapd_parse_listen(const char *s, struct uniapd_options *opt)
{
	const char *colon = strrchr(s, ':');
	char *end = NULL;
	unsigned long port;
	size_t alen;

	if (!colon || colon == s) {
		fprintf(stderr, "uniapd: --listen: must be ADDR:PORT, got \"%s\"\n", s);
		return -1;
	}
	alen = (size_t)(colon - s);
	if (alen >= sizeof(opt->addr)) {
		fprintf(stderr, "uniapd: --listen: address too long\n");
		return -1;
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port > USHRT_MAX || colon[1] == '-') {
		fprintf(stderr, "uniapd: --listen: port must be 0..65535, got \"%s\"\n", colon + 1);
		return -1;
	}
	memcpy(opt->addr, s, alen);
	opt->addr[alen] = '\0';
	opt->port = (unsigned short)port;
	return 0;
}

static int uniapd_parse_size(const char *s, size_t *out)
{
	char *end = NULL;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < 1 || v > UNIAPD_MAX_BODY_CAP) {
		fprintf(stderr, "uniapd: --max-body: must be 1..%llu bytes, got \"%s\"\n", UNIAPD_MAX_BODY_CAP, s);
		return -1;
	}
	*out = (size_t)v;
	return 0;
}

/* 0 ok, 1 --help given, -1 bad command line (message printed). */
static int uniapd_parse_args(int argc, char **argv, struct uniapd_options *opt)
{
	const char *listen = getenv("UNIAPD_LISTEN");
	const char *db = getenv("UNIAPD_DB");
	int i;

	opt->max_body_bytes = HTTP_DEFAULT_MAX_BODY_BYTES;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			return 1;
		if (i + 1 >= argc || (strcmp(a, "--listen") != 0 && strcmp(a, "--db") != 0 &&
		                      strcmp(a, "--max-body") != 0)) {
			fprintf(stderr, "uniapd: %s: unknown option or missing value (see uniapd --help)\n", a);
			return -1;
		}
		if (strcmp(a, "--listen") == 0)
			listen = argv[++i];
		else if (strcmp(a, "--db") == 0)
			db = argv[++i];
		else if (uniapd_parse_size(argv[++i], &opt->max_body_bytes) != 0)
			return -1;
	}
	if (uniapd_parse_listen(listen && *listen ? listen : UNIAPD_DEFAULT_LISTEN, opt) != 0)
		return -1;
	opt->db_path = db && *db ? db : UNIAPD_DEFAULT_DB;
	return 0;
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

static int uniapd_ready(void *ctx)
{
	(void)ctx;
	return 1; /* nothing to wait for until the store is wired in */
}

int main(int argc, char **argv)
{
	struct uniapd_options opt;
	struct http_config cfg;
	struct http_server *srv;
	sigset_t sigs;
	char msg[256];
	int sig = 0, rc;

	memset(&opt, 0, sizeof(opt));
	rc = uniapd_parse_args(argc, argv, &opt);
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

	memset(&cfg, 0, sizeof(cfg));
	cfg.listen_addr = opt.addr;
	cfg.port = opt.port;
	cfg.max_body_bytes = opt.max_body_bytes;
	cfg.ready = uniapd_ready;
	cfg.access_log = stderr;
	srv = http_server_start(&cfg, msg, sizeof(msg));
	if (!srv) {
		uniapd_log_error("cannot start", msg);
		return 1;
	}
	{
		cJSON *o = cJSON_CreateObject();
		char *line = NULL;

		if (o && cJSON_AddStringToObject(o, "msg", "listening") && cJSON_AddStringToObject(o, "addr", opt.addr) &&
		    cJSON_AddNumberToObject(o, "port", http_server_port(srv)) &&
		    cJSON_AddStringToObject(o, "db", opt.db_path) &&
		    cJSON_AddNumberToObject(o, "max_body_bytes", (double)opt.max_body_bytes))
			line = cJSON_PrintUnformatted(o);
		fprintf(stderr, "%s\n", line ? line : "{\"msg\":\"listening\"}");
		cJSON_free(line);
		cJSON_Delete(o);
	}
	while (sigwait(&sigs, &sig) != 0)
		;
	fprintf(stderr, "{\"msg\":\"stopping\",\"signal\":%d}\n", sig);
	http_server_stop(srv, UNIAPD_GRACE_MS);
	http_server_free(srv);
	fprintf(stderr, "{\"msg\":\"stopped\"}\n");
	return 0;
}
