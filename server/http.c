/*
 * http.c - the libmicrohttpd glue of uniapd: request state across the calls
 * of the access handler, bounded body buffers, the built-in routes, metrics
 * and the access log.
 *
 * Thread model (docs/http.md): MHD_USE_INTERNAL_POLLING_THREAD |
 * MHD_USE_EPOLL with a pool of cfg->threads threads (uniapd: one per core), each with
 * its own epoll set of connections, capped by MHD_OPTION_CONNECTION_LIMIT.
 * Slow clients cost no thread (bodies arrive by events); a handler blocks
 * only its own thread's connections, so handlers stay short and bounded
 * (SQLite calls; long work goes to the job runner).  A thread per connection
 * measured 3-5x more CPU per request on 2 cores (bench/http.sh).
 *
 * The request and response structs and their helpers are in http_msg.c,
 * below problem.c and route.c, which this file calls and which never call
 * back into it.
 *
 * Lifecycle of one request in http_access (MHD's simplepost.c pattern):
 *   1st call  headers only: allocate the state in *req_cls; a Content-Length
 *             over the limit is answered 413 at once, before any body is read
 *   next      one per body chunk: append to the buffer, capped at the limit
 *             (a chunked body that passes it is discarded and answered 413;
 *             one that goes on past twice the limit loses its connection)
 *   last      *upload_data_size == 0: build the http_request, dispatch, queue
 *   completed http_completed: access log line, free the state
 * A handler that waits (res->wait) leaves the request suspended after the
 * last call; resumed, MHD makes the last call again and it is dispatched
 * again.  An event stream (res->stream) is a content-reader response that
 * suspends itself when nothing is new.  One watcher thread resumes them
 * (docs/http.md "Waiting").
 *
 * Lock order: park_mu, then MHD's own locks (suspend and resume happen under
 * it); http_metrics.mu alone, never held while calling out.
 * Never: globals; MHD types outside this file; an unbounded buffer.
 */
#include "http.h"

#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <nettle/memops.h>
#include <zlib.h>

#include "problem.h"
#include "route.h"

#define HTTP_PATH_MAX 4096          /* decoded path; longer is a 414 problem */
#define HTTP_QUERY_VALUE_MAX 2048   /* one decoded query key or value */
#define HTTP_STATUS_SLOTS 600       /* statuses 0..599 counted per route */
#define HTTP_METRICS_TEXT_MAX (8u * 1024u * 1024u)

/* ---------------------------------------------------------------- metrics */

static const double http_buckets_s[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10};
#define HTTP_NBUCKETS (sizeof(http_buckets_s) / sizeof(http_buckets_s[0]))

/* Counters per route (slot 0: no route matched, slot i+1: route i). */
struct http_metrics {
	pthread_mutex_t mu;
	size_t slots;
	uint64_t *by_status;   /* [slots][HTTP_STATUS_SLOTS] */
	uint64_t *bucket;      /* [slots][HTTP_NBUCKETS] cumulative counts are computed when printed */
	uint64_t *count;       /* [slots] */
	double *sum_s;         /* [slots] */
};

static int http_metrics_init(struct http_metrics *m, size_t routes)
{
	memset(m, 0, sizeof(*m));
	m->slots = routes + 1;
	m->by_status = calloc(m->slots * HTTP_STATUS_SLOTS, sizeof(*m->by_status));
	m->bucket = calloc(m->slots * HTTP_NBUCKETS, sizeof(*m->bucket));
	m->count = calloc(m->slots, sizeof(*m->count));
	m->sum_s = calloc(m->slots, sizeof(*m->sum_s));
	if (!m->by_status || !m->bucket || !m->count || !m->sum_s || pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m->by_status);
		free(m->bucket);
		free(m->count);
		free(m->sum_s);
		return -1;
	}
	return 0;
}

static void http_metrics_release(struct http_metrics *m)
{
	pthread_mutex_destroy(&m->mu);
	free(m->by_status);
	free(m->bucket);
	free(m->count);
	free(m->sum_s);
}

static void http_metrics_record(struct http_metrics *m, int route_index, int status, double seconds)
{
	size_t slot = route_index < 0 ? 0 : (size_t)route_index + 1, b;

	if (slot >= m->slots)
		slot = 0;
	if (status < 0 || status >= HTTP_STATUS_SLOTS)
		status = 0;
	pthread_mutex_lock(&m->mu);
	m->by_status[slot * HTTP_STATUS_SLOTS + (size_t)status]++;
	m->count[slot]++;
	m->sum_s[slot] += seconds;
	for (b = 0; b < HTTP_NBUCKETS; b++)
		if (seconds <= http_buckets_s[b]) {
			m->bucket[slot * HTTP_NBUCKETS + b]++;
			break;
		}
	pthread_mutex_unlock(&m->mu);
}

/* A growing text buffer capped at HTTP_METRICS_TEXT_MAX; err set on overflow or no memory. */
struct http_text {
	char *buf;
	size_t len, cap;
	int err;
};

static void http_text_printf(struct http_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void http_text_printf(struct http_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = 1;
			return;
		}
		if (t->buf && (size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		{
			size_t cap = t->cap ? t->cap * 2 : 4096;
			char *nb;

			while (cap < t->len + (size_t)n + 1)
				cap *= 2;
			if (cap > HTTP_METRICS_TEXT_MAX || !(nb = realloc(t->buf, cap))) {
				t->err = 1;
				return;
			}
			t->buf = nb;
			t->cap = cap;
		}
	}
}

/* ---------------------------------------------------------------- server */

struct http_server {
	struct MHD_Daemon *daemon;
	struct http_config cfg;
	struct route *routes;        /* owned: the built-ins then cfg.routes' */
	struct route_table table;
	size_t max_body_bytes;
	size_t max_body_in_flight;   /* the bodies' buffers together, all connections */
	atomic_size_t body_bytes;    /* what they hold now (their capacities) */
	atomic_ullong bodies_refused;/* requests answered 503 because body_bytes was full */
	struct http_metrics metrics;
	atomic_int in_flight;        /* requests between their first call and completion */
	int stopped;
	/* waiting requests and event streams (docs/http.md "Waiting"); park_mu guards the
	 * parked list and the flags, and is held while suspending or resuming (lock order:
	 * park_mu, then MHD's own locks; never the metrics mutex under it) */
	pthread_mutex_t park_mu;
	pthread_cond_t park_cv;      /* wakes the watcher early (stop, http_server_poke) */
	int poked;                   /* guarded by park_mu: a pass is due now (http_server_poke) */
	struct http_parked **parked; /* the suspended connections, at most max_streams */
	size_t parked_n;
	unsigned max_streams, heartbeat_ms;
	atomic_int streams;          /* slots taken: waiting requests + open streams (changed under
	                                slot_mu; read anywhere) */
	atomic_ullong streams_refused; /* answered 503: every slot was taken */
	/* the slots per tenant (docs/http.md "Waiting"): slot_mu guards holders and is taken
	 * alone (never with park_mu or conn_mu) */
	pthread_mutex_t slot_mu;
	struct http_holder *holders; /* [max_streams]: the tenants holding slots, n > 0 each */
	size_t holders_n;
	unsigned tenant_streams;     /* slots one tenant may hold */
	atomic_ullong streams_tenant_refused; /* answered 429: the tenant held its share */
	atomic_ullong streams_gone;  /* parked connections whose client had closed, ended */
	struct pollfd *pfds;         /* [max_streams]: the watcher's scratch, under park_mu */
	atomic_int stopping;         /* no more parking; every waiter answers, every stream ends */
	int watcher_quit;
	pthread_t watcher;
	/* every open connection and its deadline (docs/http.md "Slow clients"); conn_mu guards
	 * the list and its entries' phases; lock order: park_mu, then conn_mu */
	pthread_mutex_t conn_mu;
	struct http_conn *conns;
	unsigned header_timeout_ms, body_timeout_ms;
	atomic_ullong conns_reaped;  /* connections closed at a deadline */
	unsigned conn_limit;         /* connections at once, all addresses (admission, below MHD's own) */
	unsigned addr_limit;         /* connections at once from one address */
	atomic_ullong conns_evicted; /* connections in their headers closed to admit a newer one */
	uint64_t rid_seed;           /* request ids made here: seed ^ count * odd constant */
	atomic_ullong rid_next;
};

/*
 * One open connection (MHD's socket context), from its start to its close:
 * the phase it is in and since when.  A deadline runs in HTTP_CONN_HEADERS
 * (from the connection's start or the previous answer) and HTTP_CONN_BODY
 * (from the headers); none while a request is handled, waits or streams.
 */
enum http_conn_phase { HTTP_CONN_HEADERS, HTTP_CONN_BODY, HTTP_CONN_HANDLING, HTTP_CONN_REAPED };

struct http_conn {
	struct http_conn *prev, *next;
	int fd;
	enum http_conn_phase phase;
	int64_t since_ms;            /* http_now_ms() when the phase began */
	unsigned char addr[16];      /* the client's address (IPv4 as IPv4-mapped IPv6); all 0: unknown */
};

/* A suspended connection: resumed when key's version is not seen, at deadline_ms, or at a stop. */
struct http_parked {
	struct MHD_Connection *conn;
	int64_t key, seen;
	int64_t deadline_ms;         /* http_now_ms() clock */
	int fd;                      /* its socket, polled for a client that closed; -1: unknown */
	int gone;                    /* the client closed it while parked: end it, answer nothing */
};

/* A tenant holding slots of max_streams. */
struct http_holder {
	int64_t tenant;
	unsigned n;
};

#define HTTP_WATCH_MEMO 64 /* distinct keys remembered in one pass of the watcher */

/* An event stream on its way out: what next() wrote and the client has not taken yet. */
struct http_sstate {
	struct http_server *srv;
	struct MHD_Connection *conn;
	struct http_stream *stream;  /* owned */
	struct http_parked park;
	char buf[HTTP_STREAM_CHUNK_MAX];
	size_t len, off;
	int end;
	int64_t last_write_ms;
};

/* Per-request state in *req_cls, from the first call to the completion callback. */
struct http_state {
	struct timespec start;
	char *body;          /* bounded by max_body_bytes; cap bytes counted in body_bytes */
	int no_room;         /* the bodies in flight had no room for this one: 503 */
	size_t len, cap;
	size_t received;     /* every body byte seen, kept or not */
	int too_large;       /* body passed the limit */
	int answered;        /* a response is queued */
	int status;
	int route_index;
	char method[16];
	char path[256];      /* for the log, truncated */
	char rid[HTTP_REQUEST_ID_MAX + 1]; /* X-Request-Id: the client's, or made here */
	int counted;         /* holds a slot of max_streams (a wait or a stream) */
	int64_t holder;      /* with counted: the tenant it counts for (0: none) */
	int waited;          /* parked at least once */
	int last_dispatch;   /* its handler ran without waiting again: it answered, or let go */
	int64_t wait_seen;   /* the version of its first wait */
	int64_t wait_key;    /* the key of its first wait */
	int64_t deadline_ms; /* when its wait ends */
	struct http_parked park;
};

static int64_t http_now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static double http_elapsed_s(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

char *http_server_metrics_text(struct http_server *srv)
{
	struct http_metrics *m = &srv->metrics;
	struct http_text t = {0};
	size_t slot, s, b;

	pthread_mutex_lock(&m->mu);
	http_text_printf(&t, "# HELP uniapd_http_requests_total Requests answered, by route and status.\n"
	                     "# TYPE uniapd_http_requests_total counter\n");
	for (slot = 0; slot < m->slots; slot++) {
		const char *method = slot ? srv->routes[slot - 1].method : "";
		const char *route = slot ? srv->routes[slot - 1].pattern : "unmatched";

		for (s = 0; s < HTTP_STATUS_SLOTS; s++)
			if (m->by_status[slot * HTTP_STATUS_SLOTS + s])
				http_text_printf(&t, "uniapd_http_requests_total{method=\"%s\",route=\"%s\",status=\"%zu\"} %llu\n",
				                 method, route, s,
				                 (unsigned long long)m->by_status[slot * HTTP_STATUS_SLOTS + s]);
	}
	http_text_printf(&t, "# HELP uniapd_http_request_duration_seconds Time from the request's headers to its response.\n"
	                     "# TYPE uniapd_http_request_duration_seconds histogram\n");
	for (slot = 0; slot < m->slots; slot++) {
		const char *method = slot ? srv->routes[slot - 1].method : "";
		const char *route = slot ? srv->routes[slot - 1].pattern : "unmatched";
		uint64_t cum = 0;

		if (!m->count[slot])
			continue;
		for (b = 0; b < HTTP_NBUCKETS; b++) {
			cum += m->bucket[slot * HTTP_NBUCKETS + b];
			http_text_printf(&t, "uniapd_http_request_duration_seconds_bucket{method=\"%s\",route=\"%s\",le=\"%g\"} %llu\n",
			                 method, route, http_buckets_s[b], (unsigned long long)cum);
		}
		http_text_printf(&t, "uniapd_http_request_duration_seconds_bucket{method=\"%s\",route=\"%s\",le=\"+Inf\"} %llu\n"
		                     "uniapd_http_request_duration_seconds_sum{method=\"%s\",route=\"%s\"} %.9g\n"
		                     "uniapd_http_request_duration_seconds_count{method=\"%s\",route=\"%s\"} %llu\n",
		                 method, route, (unsigned long long)m->count[slot], method, route, m->sum_s[slot],
		                 method, route, (unsigned long long)m->count[slot]);
	}
	pthread_mutex_unlock(&m->mu);
	http_text_printf(&t, "# HELP uniapd_http_requests_in_flight Requests being received or handled.\n"
	                     "# TYPE uniapd_http_requests_in_flight gauge\n"
	                     "uniapd_http_requests_in_flight %d\n",
	                 atomic_load(&srv->in_flight));
	http_text_printf(&t, "# HELP uniapd_http_streams_open Long-polls and event streams open (of --max-streams).\n"
	                     "# TYPE uniapd_http_streams_open gauge\n"
	                     "uniapd_http_streams_open %d\n",
	                 atomic_load(&srv->streams));
	http_text_printf(&t, "# HELP uniapd_http_streams_refused_total Long-polls and event streams answered 503: "
	                     "every --max-streams slot was taken.\n"
	                     "# TYPE uniapd_http_streams_refused_total counter\n"
	                     "uniapd_http_streams_refused_total %llu\n",
	                 (unsigned long long)atomic_load(&srv->streams_refused));
	http_text_printf(&t, "# HELP uniapd_http_streams_tenant_refused_total Long-polls and event streams answered "
	                     "429: the tenant held its share (--max-streams-per-tenant).\n"
	                     "# TYPE uniapd_http_streams_tenant_refused_total counter\n"
	                     "uniapd_http_streams_tenant_refused_total %llu\n",
	                 (unsigned long long)atomic_load(&srv->streams_tenant_refused));
	http_text_printf(&t, "# HELP uniapd_http_streams_gone_total Waiting requests and event streams ended "
	                     "because their client closed the connection while they waited.\n"
	                     "# TYPE uniapd_http_streams_gone_total counter\n"
	                     "uniapd_http_streams_gone_total %llu\n",
	                 (unsigned long long)atomic_load(&srv->streams_gone));
	http_text_printf(&t, "# HELP uniapd_http_body_bytes Bytes the request bodies being received hold now.\n"
	                     "# TYPE uniapd_http_body_bytes gauge\nuniapd_http_body_bytes %zu\n"
	                     "# HELP uniapd_http_bodies_refused_total Requests answered 503 because the bodies in "
	                     "flight held their limit.\n# TYPE uniapd_http_bodies_refused_total counter\n"
	                     "uniapd_http_bodies_refused_total %llu\n",
	                 atomic_load(&srv->body_bytes), (unsigned long long)atomic_load(&srv->bodies_refused));
	http_text_printf(&t, "# HELP uniapd_http_connections_reaped_total Connections closed because their "
	                     "request's headers or body did not arrive in time.\n"
	                     "# TYPE uniapd_http_connections_reaped_total counter\n"
	                     "uniapd_http_connections_reaped_total %llu\n",
	                 (unsigned long long)atomic_load(&srv->conns_reaped));
	{
		struct http_conn *hc;
		unsigned n_open = 0, n_headers = 0;

		pthread_mutex_lock(&srv->conn_mu);
		for (hc = srv->conns; hc; hc = hc->next) {
			n_open += hc->phase != HTTP_CONN_REAPED;
			n_headers += hc->phase == HTTP_CONN_HEADERS;
		}
		pthread_mutex_unlock(&srv->conn_mu);
		http_text_printf(&t, "# HELP uniapd_http_connections_open Connections open now (of the admission "
		                     "limit), and of them those waiting for a request's headers.\n"
		                     "# TYPE uniapd_http_connections_open gauge\n"
		                     "uniapd_http_connections_open %u\n"
		                     "uniapd_http_connections_open{phase=\"headers\"} %u\n",
		                 n_open, n_headers);
	}
	http_text_printf(&t, "# HELP uniapd_http_connections_evicted_total Connections still in their headers "
	                     "closed to admit a newer one past the per-address or the global limit.\n"
	                     "# TYPE uniapd_http_connections_evicted_total counter\n"
	                     "uniapd_http_connections_evicted_total %llu\n",
	                 (unsigned long long)atomic_load(&srv->conns_evicted));
	if (srv->cfg.metrics) {
		char *more = srv->cfg.metrics(srv->cfg.metrics_ctx);

		if (more)
			http_text_printf(&t, "%s", more);
		else
			t.err = 1;
		free(more);
	}
	if (t.err) {
		free(t.buf);
		return NULL;
	}
	return t.buf;
}

/* ---------------------------------------------------------------- built-in routes */

static void http_h_healthz(struct http_request *req, struct http_response *res)
{
	static const char ok[] = "{\"status\":\"ok\"}";

	if (http_response_set_body(res, HTTP_OK, "application/json", ok, sizeof(ok) - 1) != 0)
		problem_fill(res, HTTP_SERVICE_UNAVAILABLE, "out-of-memory", "out of memory", req->path, NULL);
}

static void http_h_readyz(struct http_request *req, struct http_response *res)
{
	static const char ready[] = "{\"status\":\"ready\"}";
	const struct http_server *srv = req->server;

	if (srv && srv->cfg.ready && !srv->cfg.ready(srv->cfg.ready_ctx)) {
		problem_fill(res, HTTP_SERVICE_UNAVAILABLE, "not-ready", "the service is not ready", req->path, NULL);
		http_response_add_header(res, "Retry-After", "1");
		return;
	}
	if (http_response_set_body(res, HTTP_OK, "application/json", ready, sizeof(ready) - 1) != 0)
		problem_fill(res, HTTP_SERVICE_UNAVAILABLE, "out-of-memory", "out of memory", req->path, NULL);
}

int http_addr_loopback(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

/* 1 when a and b (NUL-terminated) are equal: nettle's memeql_sec, whose time does not depend
 * on where they differ (the length may show: it is not the secret). */
static int http_same_secret(const char *a, const char *b)
{
	size_t n = strlen(a);

	return n == strlen(b) && memeql_sec(a, b, n);
}

/*
 * The service's counters are the operator's: the job counts of all tenants
 * together still tell one tenant about the others' activity.  With a
 * metrics token, /metrics needs it as a bearer credential; without one, it
 * answers loopback clients only (a scraper on the host, a sidecar).
 */
static void http_h_metrics(struct http_request *req, struct http_response *res)
{
	const char *token = req->server ? req->server->cfg.metrics_token : NULL;
	const char *authz = req->authorization;
	char *text;

	if (token) {
		if (!authz || strncmp(authz, "Bearer ", 7) != 0 || !http_same_secret(authz + 7, token)) {
			problem_fill(res, HTTP_UNAUTHORIZED, "unauthorized",
			             "metrics: the operator's metrics token is required (Authorization: Bearer)",
			             req->path, NULL);
			http_response_add_header(res, "WWW-Authenticate", "Bearer");
			return;
		}
	} else if (req->server && !req->loopback) {
		problem_fill(res, HTTP_FORBIDDEN, "forbidden",
		             "metrics: answered on loopback only; give uniapd --metrics-token-file to scrape "
		             "from elsewhere", req->path, NULL);
		return;
	}
	text = req->server ? http_server_metrics_text(req->server) : NULL;

	if (!text || http_response_set_body(res, HTTP_OK, "text/plain; version=0.0.4", text, strlen(text)) != 0)
		problem_fill(res, HTTP_SERVICE_UNAVAILABLE, "unavailable", "metrics are not available", req->path, NULL);
	free(text);
}

/* The document is bytes in memory (uniapd: compiled in from schema/openapi.json),
 * never a file: the answer does not depend on the working directory. */
static void http_h_openapi(struct http_request *req, struct http_response *res)
{
	const struct http_server *srv = req->server;

	if (!srv || !srv->cfg.openapi_json) {
		problem_fill(res, problem_status(UNIAP_E_NOTFOUND), problem_slug(UNIAP_E_NOTFOUND),
		             "the OpenAPI document is not built in", req->path, NULL);
		return;
	}
	if (http_response_set_body(res, HTTP_OK, "application/json", srv->cfg.openapi_json,
	                           srv->cfg.openapi_json_len) != 0)
		problem_fill(res, HTTP_SERVICE_UNAVAILABLE, "out-of-memory", "out of memory", req->path, NULL);
}

static const struct route http_builtins[] = {
	{"GET", "/healthz", http_h_healthz, 0, NULL},
	{"GET", "/readyz", http_h_readyz, 0, NULL},
	{"GET", "/metrics", http_h_metrics, 0, NULL},
	{"GET", "/v1/openapi.json", http_h_openapi, ROUTE_ETAG, NULL},
};

static const struct route_table http_builtin_table = {
	http_builtins, sizeof(http_builtins) / sizeof(http_builtins[0]), NULL, NULL, 0, NULL, 0,
};

const struct route_table *http_builtin_routes(void)
{
	return &http_builtin_table;
}

/* ---------------------------------------------------------------- MHD glue */

static size_t http_unescape_none(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s); /* decoded strictly in http_access, so bad escapes are a 400 */
}

static const char *http_mhd_header(void *ctx, const char *name)
{
	return MHD_lookup_connection_value((struct MHD_Connection *)ctx, MHD_HEADER_KIND, name);
}

/* Query parameters decoded into owned strings (freed by http_query_release). */
struct http_query {
	struct http_request *req;
	char *owned[2 * HTTP_MAX_QUERY];
	size_t n_owned;
	int err; /* 1: bad escape, 2: too many, 3: one given twice (dup names it) */
	const char *dup;
};

static char *http_decode_dup(const char *s)
{
	size_t len = strlen(s);
	char *out;

	if (len >= HTTP_QUERY_VALUE_MAX || !(out = malloc(len + 1)))
		return NULL;
	if (http_percent_decode(s, len, out, len + 1, 0) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

static enum MHD_Result http_query_each(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct http_query *q = cls;
	char *k, *v = NULL;

	(void)kind;
	if (q->req->query_count >= HTTP_MAX_QUERY) {
		q->err = 2;
		return MHD_NO;
	}
	k = http_decode_dup(key ? key : "");
	if (k && value)
		v = http_decode_dup(value);
	if (!k || (value && !v)) {
		free(k);
		free(v);
		q->err = 1;
		return MHD_NO;
	}
	q->owned[q->n_owned++] = k;
	if (v)
		q->owned[q->n_owned++] = v;
	for (size_t i = 0; i < q->req->query_count; i++)
		if (strcmp(q->req->query[i].name, k) == 0) { /* which one counts would be a guess */
			q->err = 3;
			q->dup = k;
			return MHD_NO;
		}
	q->req->query[q->req->query_count].name = k;
	q->req->query[q->req->query_count].value = v ? v : "";
	q->req->query_count++;
	return MHD_YES;
}

static void http_query_release(struct http_query *q)
{
	size_t i;

	for (i = 0; i < q->n_owned; i++)
		free(q->owned[i]);
}

/* Adds res's headers to r, queues it on c, records metrics; r is taken. */
static enum MHD_Result http_queue_mhd(struct http_server *srv, struct MHD_Connection *c, struct http_state *st,
                                      struct http_response *res, struct MHD_Response *r)
{
	enum MHD_Result ret;
	size_t i;

	if (res->content_type[0])
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type);
	for (i = 0; i < res->header_count; i++)
		MHD_add_response_header(r, res->headers[i].name, res->headers[i].value);
	/* every answer names its request (the client's X-Request-Id, or one made here; logged too) */
	MHD_add_response_header(r, "X-Request-Id", st->rid);
	/* every answer: a browser takes the Content-Type as given, never sniffs a JSON body as HTML */
	if (!http_response_header(res, "X-Content-Type-Options"))
		MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	/* draining: a keep-alive client learns the connection ends here, not by an EOF */
	if (atomic_load(&srv->stopping))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(c, (unsigned)res->status, r);
	MHD_destroy_response(r);
	st->answered = 1;
	st->status = res->status;
	http_metrics_record(&srv->metrics, st->route_index, res->status, http_elapsed_s(&st->start));
	return ret;
}

/* 1 when accept (an Accept-Encoding value, may be NULL) takes gzip: named (or x-gzip) with no q=0. */
static int http_accepts_gzip(const char *accept)
{
	const char *p = accept;

	while (p && *p) {
		const char *name, *end = strchr(p, ',');
		size_t n;

		if (!end)
			end = p + strlen(p);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		name = p;
		while (p < end && *p != ';' && *p != ' ' && *p != '\t')
			p++;
		n = (size_t)(p - name);
		if ((n == 4 && strncasecmp(name, "gzip", 4) == 0) || (n == 6 && strncasecmp(name, "x-gzip", 6) == 0)) {
			/* a weight of 0 (q=0, q=0.0, q=0.000) refuses it; any other takes it */
			while (p < end && (*p == ' ' || *p == '\t' || *p == ';'))
				p++;
			if (end - p < 3 || strncasecmp(p, "q=0", 3) != 0)
				return 1;
			p += 3;
			if (p < end && *p == '.')
				p++;
			while (p < end && *p == '0')
				p++;
			return p < end && *p >= '1' && *p <= '9';
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

/*
 * res's body gzip-compressed into *out (malloc'd, *out_len bytes) when the
 * client takes gzip and compressing is worth it: a body of HTTP_GZIP_MIN bytes
 * or more, of a text or JSON type, that shrinks.  0 compressed; -1 not (out
 * untouched).  Level 6, zlib's default: most of the gain at a fraction of 9's
 * time (a 200 KB document in about a millisecond).
 */
static int http_gzip(const struct http_response *res, const char *accept, unsigned char **out, size_t *out_len)
{
	const char *ct = res->content_type;
	z_stream z;
	unsigned char *buf;
	uLong cap;

	if (res->body_len < HTTP_GZIP_MIN || !http_accepts_gzip(accept) || http_response_header(res, "Content-Encoding") ||
	    !(strncmp(ct, "application/json", 16) == 0 || strncmp(ct, "application/problem+json", 24) == 0 ||
	      strncmp(ct, "text/", 5) == 0 || strncmp(ct, "application/javascript", 22) == 0 ||
	      strncmp(ct, "image/svg+xml", 13) == 0))
		return -1;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	cap = deflateBound(&z, (uLong)res->body_len);
	if (!(buf = malloc(cap))) {
		deflateEnd(&z);
		return -1;
	}
	z.next_in = (Bytef *)res->body;
	z.avail_in = (uInt)res->body_len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END || z.total_out >= res->body_len) {
		deflateEnd(&z);
		free(buf);
		return -1;
	}
	*out = buf;
	*out_len = z.total_out;
	deflateEnd(&z);
	return 0;
}

/* Queues res on c (gzipped when the client takes it: http_gzip); records metrics; 0 on failure
 * to build the response. */
static enum MHD_Result http_queue(struct http_server *srv, struct MHD_Connection *c, struct http_state *st,
                                  struct http_response *res)
{
	struct MHD_Response *r;
	unsigned char *gz = NULL;
	size_t gz_len = 0, i;

	/* answers given before dispatch too (413, bad escapes); idempotent after dispatch */
	route_cors_answer(&srv->table, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"), res);
	if (res->body_len <= UINT_MAX &&
	    http_gzip(res, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING), &gz,
	              &gz_len) == 0) {
		r = MHD_create_response_from_buffer(gz_len, gz, MHD_RESPMEM_MUST_FREE);
		if (!r) {
			free(gz);
			return MHD_NO;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
		/* the gzip bytes are another representation: its validator is weak, which If-None-Match
		 * compares weakly anyway (RFC 9110 13.1.2), so a 304 still answers either */
		for (i = 0; i < res->header_count; i++)
			if (strcasecmp(res->headers[i].name, "ETag") == 0 && strncmp(res->headers[i].value, "W/", 2) != 0) {
				char weak[HTTP_HEADER_VALUE_MAX];

				snprintf(weak, sizeof(weak), "W/%.*s", (int)sizeof(weak) - 3, res->headers[i].value);
				snprintf(res->headers[i].value, sizeof(res->headers[i].value), "%s", weak);
			}
	} else {
		r = MHD_create_response_from_buffer(res->body_len, res->body ? res->body : (char *)"",
		                                    MHD_RESPMEM_MUST_COPY);
		if (!r)
			return MHD_NO;
	}
	/* caches keep the two apart (a body below the threshold says so too: the choice is ours) */
	if (res->body_len >= HTTP_GZIP_MIN)
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	return http_queue_mhd(srv, c, st, res, r);
}

/* ---------------------------------------------------------------- slow clients */

/* key (16 bytes): sa's address, IPv4 as IPv4-mapped IPv6 (so both spellings of one client match); 0s: other. */
static void http_addr_key(const struct sockaddr *sa, unsigned char *key)
{
	memset(key, 0, 16);
	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

		key[10] = key[11] = 0xff;
		memcpy(key + 12, &in->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	}
}

/* Under conn_mu: closes hc's socket (MHD sees the error and closes the connection). */
static void http_conn_evict(struct http_server *srv, struct http_conn *hc)
{
	shutdown(hc->fd, SHUT_RDWR);
	hc->phase = HTTP_CONN_REAPED;
	atomic_fetch_add(&srv->conns_evicted, 1);
}

/*
 * Under conn_mu, for the connection just opened (hc, on the list): admission.
 * Past the per-address limit, the oldest connection of that address still in
 * its headers (a trickling one, or a keep-alive one idle longest) is closed;
 * past the global limit, the oldest of any address.  The new one is the
 * youngest, so it is closed only when no other is in its headers (every
 * other one is being answered, waits or streams).  Clients that send whole
 * requests therefore always get in, however many addresses trickle bytes
 * (docs/http.md "Slow clients").
 */
static void http_admit(struct http_server *srv, struct http_conn *hc)
{
	static const unsigned char none[16];
	struct http_conn *x, *old_all = NULL, *old_addr = NULL;
	unsigned n_all = 0, n_addr = 0;
	int known = memcmp(hc->addr, none, 16) != 0;

	for (x = srv->conns; x; x = x->next) {
		int same;

		if (x->phase == HTTP_CONN_REAPED)
			continue;
		same = known && memcmp(x->addr, hc->addr, 16) == 0;
		n_all++;
		n_addr += same;
		if (x->phase != HTTP_CONN_HEADERS)
			continue;
		/* the list runs newest first: <= keeps the older of two that began in one millisecond */
		if (!old_all || x->since_ms <= old_all->since_ms)
			old_all = x;
		if (same && (!old_addr || x->since_ms <= old_addr->since_ms))
			old_addr = x;
	}
	if (known && n_addr > srv->addr_limit && old_addr)
		http_conn_evict(srv, old_addr);
	else if (n_all > srv->conn_limit && old_all)
		http_conn_evict(srv, old_all);
}

/* Connections come and go: the list the watcher checks deadlines on. */
static void http_notify_conn(void *cls, struct MHD_Connection *c, void **socket_context,
                             enum MHD_ConnectionNotificationCode code)
{
	struct http_server *srv = cls;
	struct http_conn *hc = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		if (!ci || !(hc = calloc(1, sizeof(*hc))))
			return; /* untracked: only MHD's idle timeout applies */
		hc->fd = ci->connect_fd;
		hc->phase = HTTP_CONN_HEADERS;
		hc->since_ms = http_now_ms();
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ci)
			http_addr_key(ci->client_addr, hc->addr);
		pthread_mutex_lock(&srv->conn_mu);
		hc->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = hc;
		srv->conns = hc;
		http_admit(srv, hc);
		pthread_mutex_unlock(&srv->conn_mu);
		*socket_context = hc;
		return;
	}
	if (!hc)
		return;
	/* before MHD closes the socket: the watcher never shuts a reused descriptor */
	pthread_mutex_lock(&srv->conn_mu);
	if (hc->prev)
		hc->prev->next = hc->next;
	else
		srv->conns = hc->next;
	if (hc->next)
		hc->next->prev = hc->prev;
	pthread_mutex_unlock(&srv->conn_mu);
	free(hc);
	*socket_context = NULL;
}

/* c enters phase (a request's headers arrived, its body did, it was answered). */
static void http_conn_phase(struct http_server *srv, struct MHD_Connection *c, enum http_conn_phase phase)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct http_conn *hc = ci ? ci->socket_context : NULL;

	if (!hc)
		return;
	pthread_mutex_lock(&srv->conn_mu);
	if (hc->phase != HTTP_CONN_REAPED && hc->phase != phase) {
		hc->phase = phase;
		hc->since_ms = http_now_ms();
	}
	pthread_mutex_unlock(&srv->conn_mu);
}

/*
 * The watcher's other task: a connection past its phase's deadline is shut
 * down (the socket, not the descriptor: MHD sees the error and closes it).
 * Trickling bytes never moves a deadline, unlike MHD's idle timeout.
 */
static void http_reap(struct http_server *srv, int64_t now)
{
	struct http_conn *hc;

	pthread_mutex_lock(&srv->conn_mu);
	for (hc = srv->conns; hc; hc = hc->next) {
		int64_t limit = hc->phase == HTTP_CONN_HEADERS ? (int64_t)srv->header_timeout_ms
		              : hc->phase == HTTP_CONN_BODY     ? (int64_t)srv->body_timeout_ms : -1;

		if (limit < 0 || now - hc->since_ms < limit)
			continue;
		shutdown(hc->fd, SHUT_RDWR);
		hc->phase = HTTP_CONN_REAPED;
		atomic_fetch_add(&srv->conns_reaped, 1);
	}
	pthread_mutex_unlock(&srv->conn_mu);
}

/* ---------------------------------------------------------------- waiting */

/*
 * Suspends c until the watcher resumes it (p->key's version is not p->seen,
 * p->deadline_ms, or a stop).  Registering and suspending happen under
 * park_mu, so the watcher never resumes a connection that is not suspended.
 * 0 parked; -1 the server stops (not parked: answer now).
 */
static int http_park(struct http_server *srv, struct MHD_Connection *c, struct http_parked *p)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	int rc = -1;

	p->conn = c;
	p->fd = ci ? ci->connect_fd : -1;
	p->gone = 0;
	pthread_mutex_lock(&srv->park_mu);
	if (!atomic_load(&srv->stopping) && srv->parked_n < srv->max_streams) {
		int64_t v = p->seen;

		srv->parked[srv->parked_n++] = p;
		MHD_suspend_connection(c);
		rc = 0;
		/* what it waits for may have moved between the handler's look and now (an
		 * evaluation that ended at once): then a watcher pass now, not at its next tick */
		if (srv->cfg.version && (srv->cfg.version(srv->cfg.version_ctx, p->key, &v) != 0 || v != p->seen)) {
			srv->poked = 1;
			pthread_cond_broadcast(&srv->park_cv);
		}
	}
	pthread_mutex_unlock(&srv->park_mu);
	return rc;
}

/* Under park_mu: resumes parked[i] and takes it off the list. */
static void http_unpark_at(struct http_server *srv, size_t i)
{
	struct http_parked *p = srv->parked[i];

	srv->parked[i] = srv->parked[--srv->parked_n];
	MHD_resume_connection(p->conn);
}

/*
 * Under park_mu: marks the parked connections whose client has closed its
 * side (a hang-up, an error, or an end of file ahead of any byte) gone, so
 * that the watcher's pass resumes them and they end at once, freeing their
 * slot, instead of holding it until their wait is over.  Bytes waiting to
 * be read (a pipelined request) are no hang-up.  One poll() a pass.
 */
static void http_watch_gone(struct http_server *srv)
{
	size_t i, n = 0;

	for (i = 0; i < srv->parked_n; i++) {
		if (srv->parked[i]->fd < 0)
			continue;
		srv->pfds[n].fd = srv->parked[i]->fd;
		srv->pfds[n].events = POLLIN;
		srv->pfds[n++].revents = 0;
	}
	if (!n || poll(srv->pfds, n, 0) <= 0)
		return;
	for (i = 0, n = 0; i < srv->parked_n; i++) {
		struct http_parked *p = srv->parked[i];
		short ev;
		char b;

		if (p->fd < 0)
			continue;
		ev = srv->pfds[n++].revents;
		if (!ev)
			continue;
		if ((ev & (POLLHUP | POLLERR | POLLNVAL)) ||
		    ((ev & POLLIN) && recv(p->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)) {
			p->gone = 1;
			atomic_fetch_add(&srv->streams_gone, 1);
		}
	}
}

/*
 * The watcher: every HTTP_WATCH_MS asks the version hook about each parked
 * key and resumes what moved, what is due, and everything at a stop.  The
 * hook is called under park_mu (a short read; at most max_streams a pass),
 * so a connection cannot be resumed while it is being suspended.
 */
static void *http_watcher(void *arg)
{
	struct http_server *srv = arg;

	pthread_mutex_lock(&srv->park_mu);
	while (!srv->watcher_quit) {
		int64_t now = http_now_ms();
		struct timespec until;
		size_t i = srv->parked_n, n_seen = 0;
		/* keys already asked this pass (many watchers of one job cost one read) */
		struct {
			int64_t key, version;
			int gone;
		} asked[HTTP_WATCH_MEMO];

		http_watch_gone(srv);
		i = srv->parked_n;
		while (i-- > 0) {
			struct http_parked *p = srv->parked[i];
			int wake = atomic_load(&srv->stopping) || now >= p->deadline_ms || p->gone;
			size_t k;

			if (!wake && srv->cfg.version) {
				for (k = 0; k < n_seen && asked[k].key != p->key; k++)
					;
				if (k == n_seen) {
					int64_t v = p->seen;
					int gone = srv->cfg.version(srv->cfg.version_ctx, p->key, &v) != 0;

					if (n_seen < HTTP_WATCH_MEMO) {
						asked[n_seen].key = p->key;
						asked[n_seen].version = v;
						asked[n_seen++].gone = gone;
					}
					wake = gone || v != p->seen;
				} else {
					wake = asked[k].gone || asked[k].version != p->seen;
				}
			}
			if (wake)
				http_unpark_at(srv, i);
		}
		http_reap(srv, now);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += HTTP_WATCH_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		if (!srv->watcher_quit && !srv->poked)
			pthread_cond_timedwait(&srv->park_cv, &srv->park_mu, &until);
		srv->poked = 0;
	}
	pthread_mutex_unlock(&srv->park_mu);
	return NULL;
}

void http_server_poke(struct http_server *srv)
{
	if (!srv)
		return;
	pthread_mutex_lock(&srv->park_mu);
	srv->poked = 1;
	pthread_cond_broadcast(&srv->park_cv);
	pthread_mutex_unlock(&srv->park_mu);
}

/* Under slot_mu: tenant's entry in holders, or NULL. */
static struct http_holder *http_holder_find(struct http_server *srv, int64_t tenant)
{
	size_t i;

	for (i = 0; i < srv->holders_n; i++)
		if (srv->holders[i].tenant == tenant)
			return &srv->holders[i];
	return NULL;
}

/*
 * Takes one of max_streams for st, counted for tenant (0: a request without
 * one, --no-auth: only the service-wide limit applies).  1 taken; 0 every
 * slot is taken (the caller answers 503); -1 the tenant holds its share
 * (429: the other tenants' slots stay theirs).
 */
static int http_take_slot(struct http_server *srv, struct http_state *st, int64_t tenant)
{
	struct http_holder *h = NULL;
	int rc = 1;

	if (st->counted)
		return 1;
	pthread_mutex_lock(&srv->slot_mu);
	if (tenant > 0 && (h = http_holder_find(srv, tenant)) != NULL && h->n >= srv->tenant_streams)
		rc = -1;
	else if (atomic_load(&srv->streams) >= (int)srv->max_streams)
		rc = 0;
	if (rc == 1) {
		atomic_fetch_add(&srv->streams, 1);
		if (tenant > 0 && !h) { /* holders_n < max_streams: each holder holds a slot */
			h = &srv->holders[srv->holders_n++];
			h->tenant = tenant;
			h->n = 0;
		}
		if (h)
			h->n++;
		st->counted = 1;
		st->holder = tenant;
	}
	pthread_mutex_unlock(&srv->slot_mu);
	return rc;
}

/* Gives st's slot back (its request completed). */
static void http_give_slot(struct http_server *srv, struct http_state *st)
{
	struct http_holder *h;

	if (!st->counted)
		return;
	pthread_mutex_lock(&srv->slot_mu);
	atomic_fetch_sub(&srv->streams, 1);
	if (st->holder > 0 && (h = http_holder_find(srv, st->holder)) != NULL && --h->n == 0)
		*h = srv->holders[--srv->holders_n];
	pthread_mutex_unlock(&srv->slot_mu);
	st->counted = 0;
}

/* res becomes the refusal of a slot: 503 when all are taken (taken 0), 429 over the tenant's share (-1). */
static void http_streams_busy(struct http_server *srv, struct http_response *res, const char *path, int taken)
{
	char detail[160];

	http_response_release(res);
	http_response_init(res);
	if (taken < 0) {
		atomic_fetch_add(&srv->streams_tenant_refused, 1);
		snprintf(detail, sizeof(detail),
		         "streams: this tenant holds %u waiting requests and event streams, its share of the %u; "
		         "retry when one ends",
		         srv->tenant_streams, srv->max_streams);
		problem_fill(res, HTTP_TOO_MANY_REQUESTS, "too-many-streams", detail, path, NULL);
	} else {
		atomic_fetch_add(&srv->streams_refused, 1);
		snprintf(detail, sizeof(detail), "streams: %u waiting requests and event streams are open, the limit",
		         srv->max_streams);
		problem_fill(res, HTTP_SERVICE_UNAVAILABLE, "busy", detail, path, NULL);
	}
	http_response_add_header(res, "Retry-After", "5");
}

/* The tenant a request's slot counts for: its principal's, 0 without one. */
static int64_t http_req_tenant(const struct http_request *req)
{
	return req->principal.authenticated && req->principal.tenant_id > 0 ? req->principal.tenant_id : 0;
}

/*
 * A handler asked to wait (res->wait): park the request.  0 parked; 1 the
 * server stops (dispatch again, expired); -1 res now holds the answer (503
 * past max_streams, 500 for a handler that waits once expired).
 */
static int http_wait_start(struct http_server *srv, struct MHD_Connection *c, struct http_state *st,
                           const struct http_request *req, struct http_response *res)
{
	int taken;

	if (req->wait_expired) {
		http_response_release(res);
		http_response_init(res);
		problem_fill(res, HTTP_INTERNAL_ERROR, "internal", "the handler waited past its time", req->path, NULL);
		return -1;
	}
	if ((taken = http_take_slot(srv, st, http_req_tenant(req))) != 1) {
		http_streams_busy(srv, res, req->path, taken);
		return -1;
	}
	if (!st->waited) {
		int64_t start_ms = (int64_t)st->start.tv_sec * 1000 + st->start.tv_nsec / 1000000;

		st->waited = 1;
		st->wait_seen = res->wait.seen;
		st->wait_key = res->wait.key;
		st->deadline_ms = start_ms + res->wait.wait_ms;
	}
	st->park.key = res->wait.key;
	st->park.seen = res->wait.seen;
	st->park.deadline_ms = st->deadline_ms;
	return http_park(srv, c, &st->park) == 0 ? 0 : 1;
}

/* MHD's content reader of an event stream: pending bytes, then next(), a heartbeat, or suspend. */
static ssize_t http_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct http_sstate *ss = cls;
	struct http_server *srv = ss->srv;

	(void)pos;
	for (;;) {
		static const char beat[] = ": heartbeat\n\n";
		int64_t now;
		long n;

		if (ss->off < ss->len) {
			size_t k = ss->len - ss->off < max ? ss->len - ss->off : max;

			memcpy(buf, ss->buf + ss->off, k);
			ss->off += k;
			return (ssize_t)k;
		}
		ss->off = ss->len = 0;
		if (ss->park.gone) /* the client closed it while it was parked */
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (ss->end || atomic_load(&srv->stopping))
			return MHD_CONTENT_READER_END_OF_STREAM;
		n = ss->stream->next(ss->stream, ss->buf, sizeof(ss->buf), &ss->end);
		if (n < 0 || (size_t)n > sizeof(ss->buf))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		now = http_now_ms();
		if (n > 0) {
			ss->len = (size_t)n;
			ss->last_write_ms = now;
			continue;
		}
		if (ss->end)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (now - ss->last_write_ms >= (int64_t)srv->heartbeat_ms) {
			memcpy(ss->buf, beat, sizeof(beat) - 1);
			ss->len = sizeof(beat) - 1;
			ss->last_write_ms = now;
			continue;
		}
		ss->park.key = ss->stream->key;
		ss->park.seen = ss->stream->seen;
		ss->park.deadline_ms = ss->last_write_ms + srv->heartbeat_ms;
		if (http_park(srv, ss->conn, &ss->park) != 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		return 0; /* suspended: called again once resumed */
	}
}

static void http_stream_free(void *cls)
{
	struct http_sstate *ss = cls;

	ss->stream->free(ss->stream);
	free(ss);
}

/* Queues an event stream answer (res->stream, taken). */
static enum MHD_Result http_queue_stream(struct http_server *srv, struct MHD_Connection *c,
                                         struct http_state *st, const char *path, int64_t tenant,
                                         struct http_response *res)
{
	struct http_stream *stream = res->stream;
	struct http_sstate *ss = NULL;
	struct MHD_Response *r = NULL;
	int taken;

	res->stream = NULL;
	if ((taken = http_take_slot(srv, st, tenant)) != 1) {
		stream->free(stream);
		http_streams_busy(srv, res, path, taken);
		return http_queue(srv, c, st, res);
	}
	ss = calloc(1, sizeof(*ss));
	if (ss)
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, HTTP_STREAM_CHUNK_MAX, http_stream_read, ss,
		                                      http_stream_free);
	if (!r) {
		free(ss);
		stream->free(stream);
		return MHD_NO;
	}
	ss->srv = srv;
	ss->conn = c;
	ss->stream = stream;
	ss->last_write_ms = http_now_ms();
	return http_queue_mhd(srv, c, st, res, r);
}

/* Queues a problem answer outside dispatch (413 before the body, bad escapes). */
static enum MHD_Result http_queue_problem(struct http_server *srv, struct MHD_Connection *c,
                                          struct http_state *st, int status, const char *slug,
                                          const char *detail)
{
	struct http_response res;
	enum MHD_Result ret;

	http_response_init(&res);
	problem_fill(&res, status, slug, detail, st->path, NULL);
	ret = http_queue(srv, c, st, &res);
	http_response_release(&res);
	return ret;
}

/* Frees st's body buffer and gives its bytes back to the server's budget. */
static void http_body_free(struct http_server *srv, struct http_state *st)
{
	if (st->cap)
		atomic_fetch_sub(&srv->body_bytes, st->cap);
	free(st->body);
	st->body = NULL;
	st->len = st->cap = 0;
}

/* Takes n more bytes of the bodies' budget; 0 when they do not fit (nothing taken). */
static int http_body_reserve(struct http_server *srv, size_t n)
{
	size_t was = atomic_fetch_add(&srv->body_bytes, n);

	if (was + n > srv->max_body_in_flight) {
		atomic_fetch_sub(&srv->body_bytes, n);
		return 0;
	}
	return 1;
}

/* 503 for a body that found no room beside the bodies in flight (max_body_in_flight). */
static enum MHD_Result http_queue_busy_body(struct http_server *srv, struct MHD_Connection *c,
                                            struct http_state *st)
{
	struct http_response res;
	enum MHD_Result ret;
	char detail[160];

	atomic_fetch_add(&srv->bodies_refused, 1);
	snprintf(detail, sizeof(detail), "body: the request bodies in flight hold %zu of at most %zu bytes; retry later",
	         atomic_load(&srv->body_bytes), srv->max_body_in_flight);
	http_response_init(&res);
	problem_fill(&res, HTTP_SERVICE_UNAVAILABLE, "busy", detail, st->path, NULL);
	http_response_add_header(&res, "Retry-After", "5");
	ret = http_queue(srv, c, st, &res);
	http_response_release(&res);
	return ret;
}

void http_framing_add(struct http_framing *n, const char *name, const char *value)
{
	http_framing_add_n(n, name, value, value ? strlen(value) : 0);
}

void http_framing_add_n(struct http_framing *n, const char *name, const char *value, size_t len)
{
	size_t i;

	if (!name)
		return;
	for (i = 0; value && !n->ctl && i < len; i++) {
		unsigned char b = (unsigned char)value[i];

		if ((b < 0x20 && b != '\t') || b == 0x7f)
			n->ctl = name;
	}
	if (strcasecmp(name, "Origin") == 0)
		n->origin++;
	if (strcasecmp(name, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
		n->content_length++;
	else if (strcasecmp(name, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0 && !n->transfer_encoding++)
		n->te = value;
	else if (strcasecmp(name, MHD_HTTP_HEADER_HOST) == 0)
		n->host++;
	else if (strcasecmp(name, MHD_HTTP_HEADER_AUTHORIZATION) == 0)
		n->authorization++;
}

static enum MHD_Result http_count_each(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                       const char *value, size_t value_size)
{
	(void)kind;
	(void)key_size;
	http_framing_add_n(cls, key, value, value ? value_size : 0);
	return MHD_YES;
}

int http_framing_check(const struct http_framing *n, const char *version, char *why, size_t cap)
{
	if (n->content_length > 1) {
		snprintf(why, cap, "headers: Content-Length given %u times", n->content_length);
		return HTTP_BAD_REQUEST;
	}
	if (n->transfer_encoding > 1) {
		snprintf(why, cap, "headers: Transfer-Encoding given %u times", n->transfer_encoding);
		return HTTP_BAD_REQUEST;
	}
	if (n->transfer_encoding && n->content_length) {
		snprintf(why, cap, "headers: Content-Length and Transfer-Encoding together");
		return HTTP_BAD_REQUEST;
	}
	if (n->transfer_encoding && strcasecmp(n->te ? n->te : "", "chunked") != 0) {
		snprintf(why, cap, "headers: Transfer-Encoding \"%.40s\" is not supported; only chunked is",
		         n->te ? n->te : "");
		return HTTP_NOT_IMPLEMENTED;
	}
	if (version && strcmp(version, MHD_HTTP_VERSION_1_1) == 0 && n->host != 1) {
		snprintf(why, cap, "headers: HTTP/1.1 needs exactly one Host, got %u", n->host);
		return HTTP_BAD_REQUEST;
	}
	if (n->authorization > 1) {
		snprintf(why, cap, "headers: Authorization given %u times", n->authorization);
		return HTTP_BAD_REQUEST;
	}
	if (n->origin > 1) {
		snprintf(why, cap, "headers: Origin given %u times", n->origin);
		return HTTP_BAD_REQUEST;
	}
	if (n->ctl) {
		snprintf(why, cap, "headers: %.64s: a control character in the value", n->ctl);
		return HTTP_BAD_REQUEST;
	}
	return 0;
}

/* The framing checks (http_framing_check) on the headers of c. */
static int http_framing(struct MHD_Connection *c, const char *version, char *why, size_t cap)
{
	struct http_framing n = { 0 };

	MHD_get_connection_values_n(c, MHD_HEADER_KIND, http_count_each, &n);
	return http_framing_check(&n, version, why, cap);
}

/*
 * rid (HTTP_REQUEST_ID_MAX + 1 bytes): the client's X-Request-Id when it is 1 to
 * HTTP_REQUEST_ID_MAX of A-Z a-z 0-9 . _ - (so it is safe in a header and a log
 * line), else a new one: 16 hex digits of a per-server random seed and a count.
 */
static void http_request_id(struct http_server *srv, const char *given, char *rid)
{
	size_t n = given ? strlen(given) : 0, i;

	for (i = 0; i < n && n <= HTTP_REQUEST_ID_MAX; i++)
		if (!isalnum((unsigned char)given[i]) && given[i] != '.' && given[i] != '_' && given[i] != '-')
			break;
	if (n > 0 && n <= HTTP_REQUEST_ID_MAX && i == n) {
		memcpy(rid, given, n + 1);
		return;
	}
	snprintf(rid, HTTP_REQUEST_ID_MAX + 1, "%016llx",
	         (unsigned long long)(srv->rid_seed ^ (atomic_fetch_add(&srv->rid_next, 1) * 0x9e3779b97f4a7c15ULL)));
}

/* The first call: state, the framing checks, and a 413 when Content-Length already says too much. */
static enum MHD_Result http_first_call(struct http_server *srv, struct MHD_Connection *c, const char *url,
                                       const char *method, const char *version, void **req_cls)
{
	struct http_state *st = calloc(1, sizeof(*st));
	const char *cl;
	char why[160];
	int status;

	if (!st)
		return MHD_NO;
	clock_gettime(CLOCK_MONOTONIC, &st->start);
	st->route_index = -1;
	http_request_id(srv, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id"), st->rid);
	snprintf(st->method, sizeof(st->method), "%s", method);
	snprintf(st->path, sizeof(st->path), "%s", url);
	*req_cls = st;
	atomic_fetch_add(&srv->in_flight, 1);
	http_conn_phase(srv, c, HTTP_CONN_BODY);
	if ((status = http_framing(c, version, why, sizeof(why))) != 0) {
		st->too_large = 1; /* whatever body follows is not read as a request's */
		return http_queue_problem(srv, c, st, status,
		                          status == HTTP_NOT_IMPLEMENTED ? "not-implemented" : "bad-framing", why);
	}
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	/* a body is buffered only for a key that is good: a keyless client cannot make the
	 * server hold megabytes (route_auth_early) */
	if ((cl && strcmp(cl, "0") != 0) ||
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		size_t n = strlen(url);
		char *path = n < HTTP_PATH_MAX ? malloc(n + 1) : NULL;

		if (path && http_percent_decode(url, n, path, n + 1, 0) == 0) {
			struct http_request req;
			struct http_response res;
			enum MHD_Result ret = MHD_YES;

			http_request_init(&req);
			http_response_init(&res);
			req.method = method;
			req.path = path;
			req.authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
			if (route_auth_early(&srv->table, &req, &res) != 0) {
				st->route_index = req.route_index; /* its metrics' route */
				st->too_large = 1; /* the body that follows is discarded */
				ret = http_queue(srv, c, st, &res);
				st->answered = 1;
			}
			http_response_release(&res);
			http_request_release(&req);
			free(path);
			if (st->answered)
				return ret;
		} else {
			free(path);
		}
	}
	if (cl) {
		char *end = NULL;
		unsigned long long n;

		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno == ERANGE || n > srv->max_body_bytes) {
			char detail[128];

			snprintf(detail, sizeof(detail), "body: Content-Length %.24s, the limit is %zu bytes", cl,
			         srv->max_body_bytes);
			st->too_large = 1;
			return http_queue_problem(srv, c, st, HTTP_CONTENT_TOO_LARGE, "content-too-large", detail);
		}
		/* a body that cannot fit beside those in flight is refused before it is read */
		if (n > 0 && !http_body_reserve(srv, (size_t)n)) {
			st->no_room = 1;
			return http_queue_busy_body(srv, c, st);
		}
		if (n > 0)
			atomic_fetch_sub(&srv->body_bytes, (size_t)n); /* it was a probe: chunks take their own */
	}
	return MHD_YES;
}

/* One body chunk: append within the cap; past it, discard (and drop past twice the cap). */
static enum MHD_Result http_body_chunk(struct http_server *srv, struct http_state *st, const char *data,
                                       size_t n)
{
	st->received += n;
	if (st->answered)
		return MHD_YES;
	if (st->too_large || st->no_room || st->len + n > srv->max_body_bytes) {
		if (!st->no_room)
			st->too_large = 1;
		http_body_free(srv, st);
		return st->received / 2 > srv->max_body_bytes ? MHD_NO : MHD_YES;
	}
	if (st->len + n > st->cap) {
		size_t cap = st->cap ? st->cap : 4096;
		char *nb;

		while (cap < st->len + n)
			cap *= 2;
		if (cap > srv->max_body_bytes)
			cap = srv->max_body_bytes;
		if (!http_body_reserve(srv, cap - st->cap)) {
			/* every body in flight together is bounded: this one waits for its turn */
			st->no_room = 1;
			http_body_free(srv, st);
			return MHD_YES;
		}
		if (!(nb = realloc(st->body, cap))) {
			atomic_fetch_sub(&srv->body_bytes, cap - st->cap);
			return MHD_NO;
		}
		st->body = nb;
		st->cap = cap;
	}
	memcpy(st->body + st->len, data, n);
	st->len += n;
	return MHD_YES;
}

/* The last call: build the request, dispatch, queue the answer. */
static enum MHD_Result http_last_call(struct http_server *srv, struct MHD_Connection *c, const char *url,
                                      const char *method, struct http_state *st)
{
	struct http_request req;
	struct http_response res;
	struct http_query q = {0};
	char *path = NULL;
	size_t url_len = strlen(url);
	enum MHD_Result ret;
	int expired = 0;

	if (st->too_large) {
		char detail[128];

		snprintf(detail, sizeof(detail), "body: over the limit of %zu bytes", srv->max_body_bytes);
		return http_queue_problem(srv, c, st, HTTP_CONTENT_TOO_LARGE, "content-too-large", detail);
	}
	if (st->no_room)
		return http_queue_busy_body(srv, c, st);
	if (url_len >= HTTP_PATH_MAX)
		return http_queue_problem(srv, c, st, HTTP_URI_TOO_LONG, "uri-too-long", "path: too long");
	http_request_init(&req);
	http_response_init(&res);
	q.req = &req;
	path = malloc(url_len + 1);
	if (!path) {
		ret = MHD_NO;
		goto out;
	}
	if (http_percent_decode(url, url_len, path, url_len + 1, 0) != 0) {
		problem_fill(&res, HTTP_BAD_REQUEST, "bad-path",
		             "path: invalid percent-encoding (% must be followed by two hex digits, never %00)",
		             st->path, NULL);
		ret = http_queue(srv, c, st, &res);
		goto out;
	}
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, http_query_each, &q);
	if (q.err) {
		char said[128];

		snprintf(said, sizeof(said), "query: %.64s given twice", q.dup ? q.dup : "");
		problem_fill(&res, HTTP_BAD_REQUEST, "bad-query",
		             q.err == 3 ? said : q.err == 2 ? "query: too many parameters"
		                                           : "query: invalid percent-encoding or too long",
		             st->path, NULL);
		ret = http_queue(srv, c, st, &res);
		goto out;
	}
	req.method = method;
	req.path = path;
	req.content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	req.authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	req.header = http_mhd_header;
	req.header_ctx = c;
	req.body = st->body;
	req.body_len = st->len;
	req.app = srv->cfg.app;
	req.server = srv;
	{
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		req.loopback = ci && http_addr_loopback(ci->client_addr);
	}
	for (;;) {
		int rc;

		req.resumed = st->waited;
		req.wait_seen = st->wait_seen;
		req.wait_key = st->wait_key;
		req.wait_expired = expired || st->park.gone || (st->waited && http_now_ms() >= st->deadline_ms) ||
		                   atomic_load(&srv->stopping);
		st->route_index = route_dispatch(&srv->table, &req, &res);
		if (!res.wait.set)
			break;
		rc = http_wait_start(srv, c, st, &req, &res);
		if (rc == 0) {
			ret = MHD_YES; /* suspended: this handler runs again when resumed */
			goto out;
		}
		if (rc < 0)
			break;
		/* the server stops: dispatch once more, told to answer now */
		expired = 1;
		http_request_release(&req);
		http_response_release(&res);
		http_response_init(&res);
	}
	st->last_dispatch = 1;
	/* resumed because its client closed the connection: the handler ran once more, told its
	 * wait is over, so it let go of what it waited on (an evaluation's task); nobody is left
	 * to answer, so the connection closes (its completion gives the slot back) */
	if (st->park.gone) {
		ret = MHD_NO;
		goto out;
	}
	/* a stream only with a 200 (anything else frees it with res below) */
	ret = res.stream && res.status == HTTP_OK ? http_queue_stream(srv, c, st, path, http_req_tenant(&req), &res)
	                                          : http_queue(srv, c, st, &res);
out:
	http_query_release(&q);
	http_request_release(&req);
	http_response_release(&res);
	free(path);
	return ret;
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                   const char *version, const char *upload_data, size_t *upload_data_size,
                                   void **req_cls)
{
	struct http_server *srv = cls;
	struct http_state *st = *req_cls;

	if (!st)
		return http_first_call(srv, c, url, method, version, req_cls);
	if (*upload_data_size > 0) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		return http_body_chunk(srv, st, upload_data, n);
	}
	if (st->answered)
		return MHD_YES;
	http_conn_phase(srv, c, HTTP_CONN_HANDLING);
	return http_last_call(srv, c, url, method, st);
}

static void http_log(struct http_server *srv, const struct http_state *st, double seconds)
{
	cJSON *o = cJSON_CreateObject();
	char *line = NULL;
	struct timespec now;
	char ts[32];
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (o && cJSON_AddStringToObject(o, "ts", ts) && cJSON_AddStringToObject(o, "method", st->method) &&
	    cJSON_AddStringToObject(o, "path", st->path) && cJSON_AddStringToObject(o, "request_id", st->rid) &&
	    cJSON_AddStringToObject(o, "route", st->route_index >= 0 ? srv->routes[st->route_index].pattern : "") &&
	    cJSON_AddNumberToObject(o, "status", st->status) &&
	    cJSON_AddNumberToObject(o, "duration_ms", (double)(long long)(seconds * 1e6) / 1e3) &&
	    cJSON_AddNumberToObject(o, "bytes_in", (double)st->received))
		line = cJSON_PrintUnformatted(o);
	if (line) {
		flockfile(srv->cfg.access_log);
		fprintf(srv->cfg.access_log, "%s\n", line);
		fflush(srv->cfg.access_log);
		funlockfile(srv->cfg.access_log);
	}
	cJSON_free(line);
	cJSON_Delete(o);
}

static void http_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                           enum MHD_RequestTerminationCode toe)
{
	struct http_server *srv = cls;
	struct http_state *st = *req_cls;

	(void)toe;
	if (!st)
		return;
	http_conn_phase(srv, c, HTTP_CONN_HEADERS); /* kept alive: the next request's headers */
	if (srv->cfg.access_log)
		http_log(srv, st, http_elapsed_s(&st->start));
	/* parked, then closed without its handler running again (libmicrohttpd read the
	 * client's end first): the application lets go of what it waited on here */
	if (st->waited && !st->last_dispatch && srv->cfg.wait_gone)
		srv->cfg.wait_gone(srv->cfg.wait_gone_ctx, st->wait_key);
	http_give_slot(srv, st);
	http_body_free(srv, st);
	free(st);
	*req_cls = NULL;
	atomic_fetch_sub(&srv->in_flight, 1);
}

/* The parked list, its lock and the watcher thread; 0 ok, -1 (nothing left to free). */
static int http_watch_start(struct http_server *srv)
{
	pthread_condattr_t ca;

	srv->parked = calloc(srv->max_streams, sizeof(*srv->parked));
	srv->pfds = calloc(srv->max_streams, sizeof(*srv->pfds));
	if (!srv->parked || !srv->pfds)
		goto fail_parked;
	if (pthread_mutex_init(&srv->park_mu, NULL) != 0)
		goto fail_parked;
	if (pthread_condattr_init(&ca) != 0)
		goto fail_mu;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&srv->park_cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		goto fail_mu;
	}
	pthread_condattr_destroy(&ca);
	if (pthread_create(&srv->watcher, NULL, http_watcher, srv) != 0)
		goto fail_cv;
	return 0;
fail_cv:
	pthread_cond_destroy(&srv->park_cv);
fail_mu:
	pthread_mutex_destroy(&srv->park_mu);
fail_parked:
	free(srv->parked);
	free(srv->pfds);
	srv->parked = NULL;
	srv->pfds = NULL;
	return -1;
}

/* Resumes whatever is still parked (MHD must not stop with suspended connections), joins the watcher. */
static void http_watch_stop(struct http_server *srv)
{
	pthread_mutex_lock(&srv->park_mu);
	atomic_store(&srv->stopping, 1);
	srv->watcher_quit = 1;
	while (srv->parked_n)
		http_unpark_at(srv, srv->parked_n - 1);
	pthread_cond_signal(&srv->park_cv);
	pthread_mutex_unlock(&srv->park_mu);
	pthread_join(srv->watcher, NULL);
	pthread_cond_destroy(&srv->park_cv);
	pthread_mutex_destroy(&srv->park_mu);
	free(srv->parked);
	free(srv->pfds);
	srv->parked = NULL;
	srv->pfds = NULL;
}

/*
 * libmicrohttpd's messages as JSON lines on stderr, {"msg":"http","detail"},
 * like the rest of uniapd's log.  Its "Failed to bind to port 0" is left out:
 * it names the port option it was not given (the address carries the port),
 * and http_listen says what failed with the real port and the reason.
 */
static void http_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;
	cJSON *o;
	char *line = NULL;

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (strncmp(buf, "Failed to bind to port", 22) == 0)
		return;
	o = cJSON_CreateObject();
	if (o && cJSON_AddStringToObject(o, "msg", "http") && cJSON_AddStringToObject(o, "detail", buf))
		line = cJSON_PrintUnformatted(o);
	if (line)
		fprintf(stderr, "%s\n", line);
	cJSON_free(line);
	cJSON_Delete(o);
}

/* Why binding ai's address fails (an errno; 0 when it would bind now), tried on a socket of our own. */
static int http_bind_errno(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, SOCK_STREAM, 0), one = 1, e = 0;

	if (fd < 0)
		return errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
		e = errno;
	close(fd);
	return e;
}

/*
 * Starts srv->daemon on cfg's host (a name or a literal, resolved with
 * getaddrinfo) and port, on one socket: the first of the host's IPv4
 * addresses that binds, else the first IPv6 one.  IPv4 first because a name
 * such as localhost lists ::1 before 127.0.0.1 on a Debian machine, and a
 * socket on ::1 does not take 127.0.0.1's clients, while most clients of a
 * loopback service dial 127.0.0.1 (and those that dial "localhost" try both);
 * ::1 may also be listed where IPv6 is off.  An IPv6 address listens dual
 * stack, so "::" takes IPv4 clients too.  0 ok, -1 with a message.
 */
static int http_listen(struct http_server *srv, const struct http_config *cfg, char *err_msg, size_t err_cap)
{
	const char *host = cfg->listen_addr ? cfg->listen_addr : "127.0.0.1";
	struct addrinfo hints, *res = NULL, *ai;
	char port[8];
	int rc, pass;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", (unsigned)cfg->port);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		snprintf(err_msg, err_cap, "listen: cannot resolve %s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (pass = 0; pass < 2 && !srv->daemon; pass++) {
		for (ai = res; ai && !srv->daemon; ai = ai->ai_next) {
			unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME |
			                 MHD_USE_ERROR_LOG;

			if (ai->ai_family != (pass == 0 ? AF_INET : AF_INET6))
				continue;
			if (ai->ai_family == AF_INET6)
				flags |= MHD_USE_DUAL_STACK;
			srv->daemon = MHD_start_daemon(
				flags, 0, NULL, NULL, http_access, srv,
				MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, NULL, /* first: every message through it */
				MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				MHD_OPTION_THREAD_POOL_SIZE, cfg->threads ? cfg->threads : 8u,
				/* above ours: libmicrohttpd splits it among its threads and counts the
				 * evicted ones until it has closed them; past it, it closes at accept */
				MHD_OPTION_CONNECTION_LIMIT, 2 * srv->conn_limit + 64,
				MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s ? cfg->timeout_s : 30u,
				MHD_OPTION_NOTIFY_COMPLETED, http_completed, srv,
				MHD_OPTION_NOTIFY_CONNECTION, http_notify_conn, srv,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, srv->addr_limit + srv->addr_limit / 2 + 16,
				MHD_OPTION_UNESCAPE_CALLBACK, http_unescape_none, NULL,
				MHD_OPTION_END);
		}
	}
	if (!srv->daemon) {
		int e = res ? http_bind_errno(res) : 0;

		snprintf(err_msg, err_cap, "listen: cannot listen on %s port %u%s%s%s", host, (unsigned)cfg->port,
		         e ? ": " : "", e ? strerror(e) : "",
		         e == EADDRINUSE ? " (another process listens there: choose another with --listen HOST:PORT)" : "");
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	return 0;
}

struct http_server *http_server_start(const struct http_config *cfg, char *err_msg, size_t err_cap)
{
	struct http_server *srv = calloc(1, sizeof(*srv));
	const struct route_table *app = cfg->routes;
	size_t nb = http_builtin_table.count, na = app ? app->count : 0;
	const union MHD_DaemonInfo *info;

	if (!srv || !(srv->routes = calloc(nb + na, sizeof(*srv->routes)))) {
		snprintf(err_msg, err_cap, "out of memory");
		goto fail;
	}
	srv->cfg = *cfg;
	srv->max_body_bytes = cfg->max_body_bytes ? cfg->max_body_bytes : HTTP_DEFAULT_MAX_BODY_BYTES;
	srv->max_body_in_flight = cfg->max_body_in_flight ? cfg->max_body_in_flight
	                        : HTTP_DEFAULT_BODIES_IN_FLIGHT > srv->max_body_bytes ? HTTP_DEFAULT_BODIES_IN_FLIGHT
	                        : srv->max_body_bytes;
	atomic_init(&srv->body_bytes, 0);
	atomic_init(&srv->bodies_refused, 0);
	memcpy(srv->routes, http_builtin_table.routes, nb * sizeof(*srv->routes));
	if (na)
		memcpy(srv->routes + nb, app->routes, na * sizeof(*srv->routes));
	srv->table.routes = srv->routes;
	srv->table.count = nb + na;
	srv->table.auth = cfg->auth;
	srv->table.auth_ctx = cfg->auth_ctx;
	srv->table.max_body_bytes = srv->max_body_bytes;
	srv->table.cors_origins = cfg->cors_origins;
	srv->table.cors_origin_count = cfg->cors_origin_count;
	atomic_init(&srv->in_flight, 0);
	atomic_init(&srv->streams, 0);
	atomic_init(&srv->stopping, 0);
	srv->max_streams = cfg->max_streams ? cfg->max_streams : HTTP_DEFAULT_MAX_STREAMS;
	srv->tenant_streams = cfg->tenant_streams ? cfg->tenant_streams : http_default_tenant_streams(srv->max_streams);
	if (srv->tenant_streams > srv->max_streams)
		srv->tenant_streams = srv->max_streams;
	srv->heartbeat_ms = cfg->heartbeat_ms ? cfg->heartbeat_ms : HTTP_HEARTBEAT_MS;
	srv->header_timeout_ms = cfg->header_timeout_ms ? cfg->header_timeout_ms : HTTP_HEADER_TIMEOUT_MS;
	srv->body_timeout_ms = cfg->body_timeout_ms ? cfg->body_timeout_ms : HTTP_BODY_TIMEOUT_MS;
	atomic_init(&srv->conns_reaped, 0);
	atomic_init(&srv->conns_evicted, 0);
	atomic_init(&srv->rid_next, 1);
	if (getrandom(&srv->rid_seed, sizeof(srv->rid_seed), 0) != (ssize_t)sizeof(srv->rid_seed))
		srv->rid_seed = (uint64_t)time(NULL) * 0x2545f4914f6cdd1dULL ^ (uint64_t)getpid();
	srv->conn_limit = cfg->connection_limit ? cfg->connection_limit : HTTP_DEFAULT_CONNECTIONS;
	srv->addr_limit = cfg->per_address_limit ? cfg->per_address_limit : HTTP_DEFAULT_PER_ADDRESS;
	if (http_metrics_init(&srv->metrics, srv->table.count) != 0) {
		free(srv->routes);
		srv->routes = NULL;
		snprintf(err_msg, err_cap, "out of memory");
		goto fail;
	}
	/* lives until http_server_free: MHD reports closed connections until it stops */
	if (pthread_mutex_init(&srv->conn_mu, NULL) != 0) {
		snprintf(err_msg, err_cap, "out of memory");
		goto fail_metrics_only;
	}
	/* the same: requests complete (and give their slots back) until MHD stops */
	if (!(srv->holders = calloc(srv->max_streams, sizeof(*srv->holders))) ||
	    pthread_mutex_init(&srv->slot_mu, NULL) != 0) {
		free(srv->holders);
		pthread_mutex_destroy(&srv->conn_mu);
		snprintf(err_msg, err_cap, "out of memory");
		goto fail_metrics_only;
	}
	if (http_watch_start(srv) != 0) {
		snprintf(err_msg, err_cap, "cannot start the watcher thread");
		goto fail_metrics;
	}
	if (http_listen(srv, cfg, err_msg, err_cap) != 0)
		goto fail_watch;
	info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	if (!info || (cfg->port && info->port != cfg->port)) {
		snprintf(err_msg, err_cap, "listen: cannot read the bound port");
		MHD_stop_daemon(srv->daemon);
		goto fail_watch;
	}
	return srv;
fail_watch:
	http_watch_stop(srv);
fail_metrics:
	pthread_mutex_destroy(&srv->slot_mu);
	free(srv->holders);
	pthread_mutex_destroy(&srv->conn_mu);
fail_metrics_only:
	http_metrics_release(&srv->metrics);
	free(srv->routes);
fail:
	free(srv);
	return NULL;
}

unsigned short http_server_port(const struct http_server *srv)
{
	const union MHD_DaemonInfo *info =
		srv && srv->daemon ? MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT) : NULL;

	return info ? info->port : 0;
}

void http_server_stop(struct http_server *srv, unsigned grace_ms)
{
	MHD_socket fd;
	unsigned waited_ms = 0;

	if (!srv || srv->stopped)
		return;
	srv->stopped = 1;
	/* no new connections from now: the listening socket stops listening (shutdown on a
	 * listening socket: Linux refuses new connects), but it is closed only after
	 * MHD_stop_daemon, because MHD's threads drop it from their polling sets with some
	 * delay (libmicrohttpd's manual, MHD_quiesce_daemon); closing it under them raced */
	fd = MHD_quiesce_daemon(srv->daemon);
	if (fd != MHD_INVALID_SOCKET)
		shutdown(fd, SHUT_RDWR);
	/* waiting requests answer and streams end now, not at the end of the grace */
	pthread_mutex_lock(&srv->park_mu);
	atomic_store(&srv->stopping, 1);
	pthread_cond_signal(&srv->park_cv);
	pthread_mutex_unlock(&srv->park_mu);
	while (atomic_load(&srv->in_flight) > 0 && waited_ms < grace_ms) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		nanosleep(&ts, NULL);
		waited_ms += 10;
	}
	http_watch_stop(srv);
	MHD_stop_daemon(srv->daemon);
	srv->daemon = NULL;
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

void http_server_free(struct http_server *srv)
{
	if (!srv)
		return;
	http_server_stop(srv, 5000);
	pthread_mutex_destroy(&srv->slot_mu);
	free(srv->holders);
	pthread_mutex_destroy(&srv->conn_mu);
	http_metrics_release(&srv->metrics);
	free(srv->routes);
	free(srv);
}
