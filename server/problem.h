/*
 * problem.h - RFC 9457 problem details (application/problem+json) and the
 * ONE table that maps the core's uniap_code values to HTTP statuses.
 *
 * Body: {"type", "title", "status", "detail", "instance"} plus "pointer" (an
 * RFC 6901 JSON pointer into the request body) when the field at fault is
 * known.  "type" is "urn:uniap:problem:<slug>", the slug naming the kind of
 * error ("malformed", "not-found", ...); "title" is the status's reason
 * phrase; "instance" is the request path.
 *
 * Never: invent statuses as bare integers elsewhere (use problem_status), or
 * print.
 */
#ifndef UNIAP_PROBLEM_H
#define UNIAP_PROBLEM_H

#include <stddef.h>

#include "err.h"
#include "http.h"

/* The HTTP status of code (the one table); 500 for an unknown code. */
int problem_status(uniap_code code);
/* The reason phrase of status ("Not Found"); "Error" when unknown. */
const char *problem_title(int status);
/* The slug of code ("invalid"), used in "type". */
const char *problem_slug(uniap_code code);

/*
 * Replaces res's body with a problem: status, slug (borrowed, the part of
 * "type" after "urn:uniap:problem:"), detail, instance, pointer (all
 * borrowed; pointer may be NULL).  On out of memory res gets a fixed 500
 * text.  Returns 0 ok, -1 on out of memory.
 */
int problem_fill(struct http_response *res, int status, const char *slug, const char *detail,
                 const char *instance, const char *pointer);

/*
 * The problem of err (borrowed): status from problem_status(err->code), the
 * message as detail; when the message starts with a path rooted at "body"
 * ("body.cluster.nodes[1]: ..."), "pointer" is its JSON pointer
 * ("/cluster/nodes/1").
 */
int problem_from_err(struct http_response *res, const struct uniap_err *err, const char *instance);

/*
 * The JSON pointer of the dotted path that starts msg (before ": "), rooted
 * at root ("body"), into out (cap bytes).  Returns 0 when msg has such a
 * path, -1 otherwise.
 */
int problem_pointer(const char *msg, const char *root, char *out, size_t cap);

#endif
