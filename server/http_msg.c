/*
 * http_msg.c - uniapd's requests and responses as plain data (http.h): their
 * init and release, query, path and header look-ups, bodies and headers of
 * answers, percent-decoding and entity tags.  The floor below problem.c,
 * route.c and the MHD glue of http.c: it uses none of them.
 *
 * Thread safety: reentrant; a request and its response belong to one thread.
 * Never: MHD types, sockets, globals.
 */
#include "http.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <nettle/sha2.h>

/* ---------------------------------------------------------------- request/response */

void http_request_init(struct http_request *req)
{
	memset(req, 0, sizeof(*req));
	req->route_index = -1;
}

void http_request_release(struct http_request *req)
{
	if (!req)
		return;
	cJSON_Delete(req->json);
	req->json = NULL;
}

static const char *http_kv_find(const struct http_kv *kv, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (kv[i].name && strcmp(kv[i].name, name) == 0)
			return kv[i].value;
	return NULL;
}

const char *http_request_query(const struct http_request *req, const char *name)
{
	return http_kv_find(req->query, req->query_count, name);
}

const char *http_request_param(const struct http_request *req, const char *name)
{
	return http_kv_find(req->params, req->param_count, name);
}

const char *http_request_header(const struct http_request *req, const char *name)
{
	if (strcasecmp(name, "Content-Type") == 0)
		return req->content_type;
	if (strcasecmp(name, "Authorization") == 0)
		return req->authorization;
	return req->header ? req->header(req->header_ctx, name) : NULL;
}

void http_response_init(struct http_response *res)
{
	memset(res, 0, sizeof(*res));
}

void http_response_release(struct http_response *res)
{
	if (!res)
		return;
	free(res->body);
	res->body = NULL;
	res->body_len = 0;
	if (res->stream)
		res->stream->free(res->stream);
	res->stream = NULL;
}

void http_response_wait(struct http_response *res, int64_t key, int64_t seen, unsigned wait_ms)
{
	res->wait.key = key;
	res->wait.seen = seen;
	res->wait.wait_ms = wait_ms;
	res->wait.set = 1;
}

int http_response_set_body(struct http_response *res, int status, const char *content_type,
                           const char *body, size_t len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return -1;
	if (len)
		memcpy(copy, body, len);
	copy[len] = '\0';
	free(res->body);
	res->body = copy;
	res->body_len = len;
	res->status = status;
	snprintf(res->content_type, sizeof(res->content_type), "%s", content_type ? content_type : "");
	return 0;
}

int http_response_set_json(struct http_response *res, int status, const cJSON *json)
{
	char *text = cJSON_PrintUnformatted(json);
	int rc;

	if (!text)
		return -1;
	rc = http_response_set_body(res, status, "application/json", text, strlen(text));
	cJSON_free(text);
	return rc;
}

int http_response_add_header(struct http_response *res, const char *name, const char *value)
{
	size_t i;

	for (i = 0; i < res->header_count; i++)
		if (strcasecmp(res->headers[i].name, name) == 0)
			break;
	if (i == HTTP_MAX_HEADERS)
		return -1;
	snprintf(res->headers[i].name, sizeof(res->headers[i].name), "%s", name);
	snprintf(res->headers[i].value, sizeof(res->headers[i].value), "%s", value);
	if (i == res->header_count)
		res->header_count++;
	return 0;
}

const char *http_response_header(const struct http_response *res, const char *name)
{
	size_t i;

	for (i = 0; i < res->header_count; i++)
		if (strcasecmp(res->headers[i].name, name) == 0)
			return res->headers[i].value;
	return NULL;
}

static int http_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int http_percent_decode(const char *in, size_t len, char *out, size_t out_cap, int plus_is_space)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		int c = (unsigned char)in[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -1;
			hi = http_hex(in[i + 1]);
			lo = http_hex(in[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		} else if (c == '+' && plus_is_space) {
			c = ' ';
		}
		if (c == '\0' || n + 1 >= out_cap)
			return -1;
		out[n++] = (char)c;
	}
	if (out_cap == 0)
		return -1;
	out[n] = '\0';
	return 0;
}

void http_etag(const void *body, size_t len, char out[HTTP_ETAG_MAX])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char d[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	size_t i, n = (HTTP_ETAG_MAX - 3) / 2; /* quotes and NUL */

	sha256_init(&ctx);
	sha256_update(&ctx, len, body);
	sha256_digest(&ctx, sizeof(d), d);
	out[0] = '"';
	for (i = 0; i < n; i++) {
		out[1 + 2 * i] = hex[d[i] >> 4];
		out[2 + 2 * i] = hex[d[i] & 15];
	}
	out[1 + 2 * n] = '"';
	out[2 + 2 * n] = '\0';
}

int http_etag_match(const char *inm, const char *etag)
{
	const char *p = inm;
	const char *e = etag;
	size_t el;

	if (!inm || !etag)
		return 0;
	if (strncmp(e, "W/", 2) == 0)
		e += 2;
	el = strlen(e);
	while (*p) {
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			break;
		if (*p == '*')
			return 1;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		n = strcspn(p, ",");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == el && memcmp(p, e, n) == 0)
			return 1;
		p += strcspn(p, ",");
	}
	return 0;
}
