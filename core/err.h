/*
 * err.h - the core's one enum of result codes and its error struct.
 *
 * Every function of core/ that can fail returns a uniap_code and fills a
 * caller-owned struct uniap_err with a message that names the field at fault
 * and the rule it breaks ("cluster.nodes: must be >= 1, got 0").  Messages are
 * lowercase, without a final period.  The enum is append-only: its values are
 * stored by the service and mapped to HTTP statuses in exactly one table.
 *
 * Never: allocate, print, or abort here.
 */
#ifndef UNIAP_ERR_H
#define UNIAP_ERR_H

#include <stdarg.h>

typedef enum uniap_code {
	UNIAP_OK = 0,
	UNIAP_E_NOMEM,      /* an allocation failed */
	UNIAP_E_MALFORMED,  /* input is not parseable (bad JSON syntax) */
	UNIAP_E_INVALID,    /* a document breaks a rule; the message names path and rule */
	UNIAP_E_ARG,        /* a bad command-line or API argument */
	UNIAP_E_INFEASIBLE, /* nothing fits the memory limit / no valid plan */
	UNIAP_E_IO,         /* a file could not be read or written */
	UNIAP_E_NOTFOUND,   /* a named thing does not exist */
	UNIAP_E_SOLVER,     /* the MILP solver failed or crashed */
	UNIAP_E_TIMEOUT,    /* a time limit expired */
	UNIAP_E_CANCELED,   /* the caller canceled the work */
	UNIAP_E_LIMIT,      /* a size cap was exceeded */
	UNIAP_E_INTERNAL,   /* a bug: an invariant did not hold */
	UNIAP_E_RATE,       /* the caller already has as much work in flight as it may */
	UNIAP_E_BUSY,       /* the service is at capacity; retry later */
	UNIAP_E_CONFLICT,   /* the resource's state does not allow the operation */
	UNIAP_E_FORBIDDEN,  /* the caller is known but no longer allowed (a revoked key) */
	UNIAP_E_NOSPACE,    /* storage is full: nothing new can be stored (deletes still work) */
	UNIAP_E_UNAVAILABLE,/* a service this one needs (its database server) does not answer now */
	UNIAP_CODE_COUNT
} uniap_code;

#define UNIAP_ERR_MSG_MAX 512

struct uniap_err {
	uniap_code code;
	char msg[UNIAP_ERR_MSG_MAX];
};

/* Returns a static lowercase name ("invalid") for code; "unknown" if out of range. */
const char *uniap_code_name(uniap_code code);

/* Clears err (borrowed; may be NULL). */
void err_clear(struct uniap_err *err);

/*
 * Fills err (borrowed; may be NULL) with code and a printf-style message and
 * returns code, so call sites read `return err_set(err, UNIAP_E_INVALID, ...)`.
 */
uniap_code err_set(struct uniap_err *err, uniap_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to err->msg (used to add context on the way up). */
void err_prefix(struct uniap_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
