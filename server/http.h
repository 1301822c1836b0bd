/*
 * http.h - uniapd's HTTP layer: the request/response structs handlers see,
 * and the server (libmicrohttpd glue, built-in routes, metrics, access log).
 *
 * Handlers never see MHD types: they get a struct http_request (method,
 * decoded path, path and query parameters, the headers they need, the body
 * and its parsed JSON, the authenticated principal) and fill a struct
 * http_response (status, content type, owned body, extra headers).  Routing,
 * method checks, auth, content type and size limits live in one place,
 * route_dispatch() (route.h).  docs/http.md describes the lifecycle.
 *
 * Thread model: MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL with a pool
 * of threads and a connection limit; a handler runs on its connection's
 * pool thread and may block briefly (SQLite), stalling only that thread's
 * connections; long work goes to the job runner, never a handler.
 *
 * Waiting (long-polls, event streams): a handler never sleeps.  It asks to
 * wait on a key (res->wait) or answers with a stream (res->stream); the
 * server suspends the connection (MHD_suspend_connection: no thread is held)
 * and one watcher thread asks the version hook about every suspended key
 * each HTTP_WATCH_MS, resuming a connection when its key's version moved,
 * its time is up or the server stops.  Waiting requests and streams count
 * against max_streams (beyond: 503 + Retry-After), apart from the threads.
 *
 * Never: globals (the server owns its metrics), MHD types outside http.c,
 * unbounded buffers (bodies, headers, query parameters all have caps).
 */
#ifndef UNIAP_HTTP_H
#define UNIAP_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

struct cJSON;
struct route_table;
struct sockaddr;

/* The statuses this layer answers with by name (STYLE: no bare numbers). */
enum http_status {
	HTTP_OK = 200,
	HTTP_CREATED = 201,
	HTTP_ACCEPTED = 202,
	HTTP_NO_CONTENT = 204,
	HTTP_NOT_MODIFIED = 304,
	HTTP_PERMANENT_REDIRECT = 308,
	HTTP_BAD_REQUEST = 400,
	HTTP_UNAUTHORIZED = 401,
	HTTP_FORBIDDEN = 403,
	HTTP_NOT_FOUND = 404,
	HTTP_METHOD_NOT_ALLOWED = 405,
	HTTP_NOT_ACCEPTABLE = 406,
	HTTP_CONTENT_TOO_LARGE = 413,
	HTTP_URI_TOO_LONG = 414,
	HTTP_UNSUPPORTED_MEDIA_TYPE = 415,
	HTTP_TOO_MANY_REQUESTS = 429,
	HTTP_INTERNAL_ERROR = 500,
	HTTP_NOT_IMPLEMENTED = 501,
	HTTP_SERVICE_UNAVAILABLE = 503,
};
struct http_server;

#define HTTP_MAX_PARAMS 8          /* {name} segments in one route pattern */
#define HTTP_MAX_QUERY 32          /* query parameters kept; more is a 400 */
#define HTTP_MAX_HEADERS 12        /* extra response headers (CORS takes up to 5) */
#define HTTP_HEADER_NAME_MAX 64
#define HTTP_HEADER_VALUE_MAX 256
#define HTTP_CONTENT_TYPE_MAX 64
#define HTTP_DEFAULT_MAX_BODY_BYTES (16u * 1024u * 1024u)
/* every request body being received, together (at least one whole body) */
#define HTTP_DEFAULT_BODIES_IN_FLIGHT ((size_t)64 * 1024u * 1024u)

/* Who a request acts for; filled by the auth hook. */
struct http_principal {
	int authenticated;      /* 1 once the hook accepted a key */
	int64_t tenant_id;
	char name[64];
};

/*
 * The auth hook supplied by whoever builds the server: checks bearer_key
 * (borrowed, without "Bearer ") and fills *out.  Returns UNIAP_OK when the
 * key is valid; UNIAP_E_NOTFOUND for a key it does not know (the request
 * gets a 401 with WWW-Authenticate); any other code (UNIAP_E_FORBIDDEN for a
 * revoked key: 403, a store failure: 500) is answered through the status
 * table with err's message (err may be left empty: the code's name is used).
 * Called from any connection thread.
 */
typedef uniap_code (*http_auth_fn)(void *ctx, const char *bearer_key, struct http_principal *out,
                                   struct uniap_err *err);

/* More metrics for GET /metrics: an owned (free()) Prometheus text, or NULL
 * on out of memory.  Called from any connection thread. */
typedef char *(*http_metrics_fn)(void *ctx);

/* Readiness hook: non-zero when the service can take traffic (GET /readyz). */
typedef int (*http_ready_fn)(void *ctx);

/*
 * The version hook of waits and streams: fills *version with key's current
 * version; 0 ok, -1 when key is gone (the waiter is resumed and finds out).
 * Called from the watcher thread only, often: keep it a cheap read.
 */
typedef int (*http_version_fn)(void *ctx, int64_t key, int64_t *version);

/*
 * A waiting request whose client went away normally has its handler run once
 * more, told its wait is over (req->wait_expired), so that it lets go of what
 * it waited on.  libmicrohttpd may instead close the resumed connection
 * before calling the handler again (it reads the client's end first); then
 * this hook is called once with the wait's key, on a request thread, for the
 * same purpose.  Exactly one of the two happens.
 */
typedef void (*http_wait_gone_fn)(void *ctx, int64_t key);

#define HTTP_WATCH_MS 200            /* how often the watcher asks the version hook */
#define HTTP_DEFAULT_PER_ADDRESS 64  /* connections from one address (more: the oldest in its headers closes) */
#define HTTP_DEFAULT_CONNECTIONS 256 /* connections at once (more: the oldest in its headers closes) */
#define HTTP_HEADER_TIMEOUT_MS 10000 /* request line and headers, however slowly they trickle */
#define HTTP_BODY_TIMEOUT_MS 60000   /* the body after the headers */
#define HTTP_HEARTBEAT_MS 15000      /* an idle event stream gets a comment line this often */
#define HTTP_DEFAULT_MAX_STREAMS 64  /* waiting requests + event streams at once */
#define HTTP_STREAM_CHUNK_MAX 4096   /* bytes one next() call may write */
#define HTTP_REQUEST_ID_MAX 64       /* an X-Request-Id kept as the client sent it, at most */
#define HTTP_GZIP_MIN 1024           /* answers this large or larger are gzipped when the client takes it */

/* One tenant's share of max_streams slots by default: a quarter, at least one. */
static inline unsigned http_default_tenant_streams(unsigned max_streams)
{
	return max_streams / 4 ? max_streams / 4 : 1;
}

/*
 * An event stream (text/event-stream) a handler answers with: the
 * application embeds it first in its own struct.  next() writes the events
 * that are ready into buf (at most cap bytes) and returns how many, 0 when
 * nothing is new (the server then suspends the stream until key's version
 * differs from seen, or a heartbeat is due), or -1 to end it with an error;
 * it sets *end when the stream is over after what it wrote, and keeps seen
 * at the version it has sent.  It runs on a request thread and must not
 * block long.  free() disposes of the whole object (called once, by the
 * server, from any thread).
 */
struct http_stream {
	int64_t key;
	int64_t seen;
	long (*next)(struct http_stream *s, char *buf, size_t cap, int *end);
	void (*free)(struct http_stream *s);
};

struct http_kv {
	const char *name;
	const char *value;
};

/* Looks a request header up by name (case-insensitive); NULL when absent. */
typedef const char *(*http_header_fn)(void *ctx, const char *name);

struct http_request {
	/* set by the caller of route_dispatch (all borrowed) */
	const char *method;        /* "GET", ... */
	const char *path;          /* percent-decoded, no query string */
	struct http_kv query[HTTP_MAX_QUERY]; /* decoded; borrowed */
	size_t query_count;
	const char *content_type;  /* the Content-Type header or NULL */
	const char *authorization; /* the Authorization header or NULL */
	http_header_fn header;     /* any other header; may be NULL */
	void *header_ctx;
	const char *body;          /* body_len bytes, may hold NULs; NULL when none */
	size_t body_len;
	void *app;                 /* the application's context (config.app) */
	struct http_server *server;/* NULL in socket-less tests */
	int loopback;              /* the client connected from a loopback address */
	/* set by route_dispatch */
	struct http_kv params[HTTP_MAX_PARAMS]; /* path parameters, point into param_buf */
	size_t param_count;
	char param_buf[512];
	struct cJSON *json;        /* the parsed body on ROUTE_JSON routes; owned, freed by http_request_release */
	struct http_principal principal;
	int route_index;           /* matched route or -1 */
	/* set by the server on a request that waited (res->wait) and was resumed */
	int resumed;               /* 1 on every call after the first */
	int64_t wait_seen;         /* the version its first wait named: the state at request time */
	int64_t wait_key;          /* the key its first wait named */
	int wait_expired;          /* its time is up or the server stops: answer now, never wait again */
};

struct http_header {
	char name[HTTP_HEADER_NAME_MAX];
	char value[HTTP_HEADER_VALUE_MAX];
};

struct http_response {
	int status;                /* 0 until a handler or the dispatcher sets it */
	char content_type[HTTP_CONTENT_TYPE_MAX];
	char *body;                /* owned, malloc'd; body_len bytes */
	size_t body_len;
	struct http_header headers[HTTP_MAX_HEADERS];
	size_t header_count;
	/* a long-poll with nothing to say yet: leave status 0 and set wait.key; the
	 * server calls the handler again (req->resumed) once key's version is not
	 * wait.seen, or wait_ms after the request's start (req->wait_expired) */
	struct {
		int64_t key;
		int64_t seen;
		unsigned wait_ms;
		int set;
	} wait;
	/* an event stream: status 200, content type text/event-stream, no body;
	 * owned (the server frees it, also when it cannot start it) */
	struct http_stream *stream;
};

/* Zeroes req; route_index becomes -1. */
void http_request_init(struct http_request *req);
/* Frees what dispatch attached to req (the parsed JSON); req stays reusable after init. */
void http_request_release(struct http_request *req);
/* The value of query parameter name, or of path parameter name; NULL when absent. */
const char *http_request_query(const struct http_request *req, const char *name);
const char *http_request_param(const struct http_request *req, const char *name);
/* A request header by name: content type and authorization from their fields, others from req->header. */
const char *http_request_header(const struct http_request *req, const char *name);

void http_response_init(struct http_response *res);
/* Frees the body and a stream not handed to the server. */
void http_response_release(struct http_response *res);
/* Asks the server to call the handler again when key's version is not seen, or after wait_ms. */
void http_response_wait(struct http_response *res, int64_t key, int64_t seen, unsigned wait_ms);
/* Replaces the body with a copy of len bytes of body (borrowed).  0 ok, -1 out of memory. */
int http_response_set_body(struct http_response *res, int status, const char *content_type,
                           const char *body, size_t len);
/* Prints json (borrowed) as the body with application/json.  0 ok, -1 out of memory. */
int http_response_set_json(struct http_response *res, int status, const struct cJSON *json);
/* Adds a header (copied; truncated to the caps).  0 ok, -1 when HTTP_MAX_HEADERS are used. */
int http_response_add_header(struct http_response *res, const char *name, const char *value);
/* The value of an added header or NULL. */
const char *http_response_header(const struct http_response *res, const char *name);

/* The ETag of a body: a quoted hex prefix of its SHA-256 (HTTP_ETAG_MAX bytes with the NUL). */
#define HTTP_ETAG_MAX 35 /* quote, 32 hex digits, quote, NUL */
void http_etag(const void *body, size_t len, char out[HTTP_ETAG_MAX]);
/*
 * 1 when the If-None-Match value (borrowed; a list of tags, "*", weak tags
 * compared weakly as RFC 9110 says for If-None-Match) matches etag.
 */
int http_etag_match(const char *if_none_match, const char *etag);

/*
 * Strict percent-decoding of len bytes of in into out (out_cap bytes with the
 * NUL): "%" must be followed by two hex digits and the result must not hold a
 * NUL.  plus_is_space turns '+' into ' ' (query strings).  0 ok, -1 invalid
 * or too long.
 */
int http_percent_decode(const char *in, size_t len, char *out, size_t out_cap, int plus_is_space);

/*
 * Framing a proxy in front could read otherwise (RFC 9112 §6.3: request
 * smuggling).  The server counts a request's headers with http_framing_add
 * (name and value borrowed; value must live as long as *n) and asks
 * http_framing_check, before reading any body: a repeated or conflicting
 * Content-Length / Transfer-Encoding is a 400, a coding other than chunked a
 * 501; HTTP/1.1 needs exactly one Host (RFC 9112 §3.2), and one Authorization
 * is all a request may carry.  0 when the request may go on; else the status,
 * with the problem's detail in why (cap bytes).  Public so that the checks
 * can be tested and fuzzed without a connection (fuzz/fuzz_framing.c).
 */
struct http_framing {
	unsigned content_length, transfer_encoding, host, authorization, origin;
	const char *te; /* the (first) Transfer-Encoding value */
	const char *ctl; /* the name of the first header whose value holds a control character */
};
void http_framing_add(struct http_framing *n, const char *name, const char *value);
/* The same with the value's length: a NUL inside the value (len past its first NUL) counts as
 * a control character, as do bytes below 0x20 but tab, and DEL. */
void http_framing_add_n(struct http_framing *n, const char *name, const char *value, size_t len);
int http_framing_check(const struct http_framing *n, const char *version, char *why, size_t cap);

/* ---------------------------------------------------------------- server */

struct http_config {
	const char *listen_addr;   /* host name or IPv4/IPv6 literal (no brackets); NULL: "127.0.0.1";
	                            * borrowed until http_server_free */
	unsigned short port;       /* 0: an ephemeral port (read it back with http_server_port) */
	size_t max_body_bytes;     /* 0: HTTP_DEFAULT_MAX_BODY_BYTES */
	size_t max_body_in_flight; /* the bodies being received, together; past it 503 + Retry-After;
	                            * 0: HTTP_DEFAULT_BODIES_IN_FLIGHT (at least max_body_bytes) */
	unsigned connection_limit; /* connections at once; past it the oldest still in its headers is
	                            * closed (libmicrohttpd refuses past twice as many and 64); 0:
	                            * HTTP_DEFAULT_CONNECTIONS */
	unsigned timeout_s;        /* idle connection timeout; 0: 30 */
	unsigned threads;          /* request threads (libmicrohttpd's pool); 0: 8 */
	const struct route_table *routes; /* the application's routes (borrowed); may be NULL */
	http_auth_fn auth;         /* may be NULL: every ROUTE_AUTH route answers 401 */
	void *auth_ctx;
	http_ready_fn ready;       /* may be NULL: always ready */
	void *ready_ctx;
	void *app;                 /* passed to handlers as req->app */
	const char *openapi_json;  /* served at GET /v1/openapi.json (borrowed, openapi_json_len
	                            * bytes); NULL: 404.  uniapd passes the document compiled in */
	size_t openapi_json_len;
	FILE *access_log;          /* one JSON line per request; NULL: none */
	http_metrics_fn metrics;   /* appended to GET /metrics; may be NULL */
	void *metrics_ctx;
	const char *const *cors_origins; /* browser origins allowed to call (route_table); borrowed */
	size_t cors_origin_count;
	unsigned max_streams;      /* waiting requests + event streams at once; 0: HTTP_DEFAULT_MAX_STREAMS */
	unsigned tenant_streams;   /* of those, one tenant's at most (more: 429); 0:
	                            * http_default_tenant_streams(max_streams); at most max_streams */
	unsigned heartbeat_ms;     /* 0: HTTP_HEARTBEAT_MS */
	http_version_fn version;   /* NULL: waits only time out, streams only beat */
	void *version_ctx;
	http_wait_gone_fn wait_gone; /* NULL: nothing to let go of */
	void *wait_gone_ctx;
	const char *metrics_token; /* GET /metrics needs "Authorization: Bearer TOKEN" (borrowed);
	                            * NULL: it answers loopback clients only */
	unsigned per_address_limit;/* connections from one client address; 0: HTTP_DEFAULT_PER_ADDRESS */
	unsigned header_timeout_ms;/* a request's line and headers must arrive within this from the
	                            * connection's start or the previous answer; 0: HTTP_HEADER_TIMEOUT_MS */
	unsigned body_timeout_ms;  /* its body within this from its headers; 0: HTTP_BODY_TIMEOUT_MS */
};

/* 1 when sa (borrowed, may be NULL) is a loopback address: 127.0.0.0/8, ::1, or
 * an IPv4-mapped 127.x address; 0 otherwise. */
int http_addr_loopback(const struct sockaddr *sa);

/*
 * Starts a server on cfg (borrowed; the strings and table it points to must
 * outlive the server).  Returns an owned server (http_server_free) or NULL
 * with a message in err_msg (err_cap bytes).
 */
struct http_server *http_server_start(const struct http_config *cfg, char *err_msg, size_t err_cap);
/* The bound port. */
unsigned short http_server_port(const struct http_server *srv);
/*
 * Graceful stop: stops accepting, resumes every waiting request (answered at
 * once) and ends every event stream, waits up to grace_ms for the requests in
 * flight to finish, then stops the daemon.  Safe to call once; free does it too.
 */
void http_server_stop(struct http_server *srv, unsigned grace_ms);
/*
 * Asks the watcher for a pass now rather than at its next tick: a version
 * just changed (work handed off by a waiting request finished).  Any thread;
 * never blocks long (takes the watcher's lock).
 */
void http_server_poke(struct http_server *srv);
/* Stops (grace 5 s) if running and frees srv (may be NULL). */
void http_server_free(struct http_server *srv);

/* The metrics in the Prometheus text format (version 0.0.4): an owned string (free()) or NULL. */
char *http_server_metrics_text(struct http_server *srv);

/* The built-in routes: GET /healthz, /readyz, /metrics, /v1/openapi.json. */
const struct route_table *http_builtin_routes(void);

#endif
