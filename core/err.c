/*
 * err.c - names of the core result codes and the error-message helpers.
 */
#include "err.h"

#include <stdio.h>
#include <string.h>

static const char *const err_names[UNIAP_CODE_COUNT] = {
	[UNIAP_OK] = "ok",
	[UNIAP_E_NOMEM] = "out of memory",
	[UNIAP_E_MALFORMED] = "malformed",
	[UNIAP_E_INVALID] = "invalid",
	[UNIAP_E_ARG] = "bad argument",
	[UNIAP_E_INFEASIBLE] = "infeasible",
	[UNIAP_E_IO] = "i/o error",
	[UNIAP_E_NOTFOUND] = "not found",
	[UNIAP_E_SOLVER] = "solver failure",
	[UNIAP_E_TIMEOUT] = "timeout",
	[UNIAP_E_CANCELED] = "canceled",
	[UNIAP_E_LIMIT] = "limit exceeded",
	[UNIAP_E_INTERNAL] = "internal error",
	[UNIAP_E_RATE] = "too many requests",
	[UNIAP_E_BUSY] = "busy",
	[UNIAP_E_CONFLICT] = "conflict",
	[UNIAP_E_FORBIDDEN] = "forbidden",
	[UNIAP_E_NOSPACE] = "no space",
	[UNIAP_E_UNAVAILABLE] = "unavailable",
};

const char *uniap_code_name(uniap_code code)
{
	if ((int)code < 0 || code >= UNIAP_CODE_COUNT || !err_names[code])
		return "unknown";
	return err_names[code];
}

void err_clear(struct uniap_err *err)
{
	if (!err)
		return;
	err->code = UNIAP_OK;
	err->msg[0] = '\0';
}

uniap_code err_set(struct uniap_err *err, uniap_code code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void err_prefix(struct uniap_err *err, const char *fmt, ...)
{
	char prefix[UNIAP_ERR_MSG_MAX];
	char old[UNIAP_ERR_MSG_MAX];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	/* truncation is acceptable: messages are capped at UNIAP_ERR_MSG_MAX */
	if (snprintf(err->msg, sizeof(err->msg), "%.*s: %.*s", 200, prefix, 300, old) < 0)
		err->msg[0] = '\0';
}
