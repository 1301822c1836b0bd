/*
 * fuzz.h - what every libFuzzer target of fuzz/ shares: the invariant check
 * that aborts (so libFuzzer reports the input as a crash) and the rules an
 * error of a decoder must follow.
 *
 * The rules are those of tests/unit/test_fuzz.c: a decoder returns UNIAP_OK,
 * or a code of its documented set with a non-empty message that starts with
 * the root path of the document ("cluster", "body.allreduce", ...).
 *
 * Thread safety: stateless.  Never: keep state between inputs, write files,
 * or read anything but the input (libFuzzer's runs must be reproducible).
 */
#ifndef UNIAP_FUZZ_H
#define UNIAP_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/* An invariant of the code under test: prints why and aborts (a finding). */
#define FUZZ_CHECK(cond, ...)                                                  \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fuzz: invariant broken: " __VA_ARGS__); \
			fputc('\n', stderr);                                   \
			abort();                                               \
		}                                                              \
	} while (0)

/* The entry point libFuzzer calls (declared here for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 1 when msg starts with root followed by '.', ':', '[' or the end. */
static inline int fuzz_rooted(const char *msg, const char *root)
{
	size_t n = strlen(root);

	return strncmp(msg, root, n) == 0 &&
	       (msg[n] == '.' || msg[n] == ':' || msg[n] == '[' || msg[n] == '\0');
}

/* 1 when all n bytes at p are zero. */
static inline int fuzz_all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/*
 * A failed decode: rc is one of the codes in allowed (a bit per code), the
 * message is not empty, and it starts with root (NULL: any start) unless the
 * code is UNIAP_E_NOMEM (its message is a plain "out of memory").
 */
static inline void fuzz_check_err(uniap_code rc, const struct uniap_err *err, unsigned allowed,
                                  const char *root)
{
	FUZZ_CHECK((unsigned)rc < UNIAP_CODE_COUNT, "result code %d out of range", (int)rc);
	FUZZ_CHECK(allowed & (1u << rc), "unexpected code %s: \"%s\"", uniap_code_name(rc), err->msg);
	FUZZ_CHECK(err->msg[0] != '\0', "%s with an empty message", uniap_code_name(rc));
	FUZZ_CHECK(memchr(err->msg, '\0', sizeof(err->msg)) != NULL, "message not terminated");
	if (root && rc != UNIAP_E_NOMEM)
		FUZZ_CHECK(fuzz_rooted(err->msg, root), "%s: \"%s\" does not start with \"%s\"",
		           uniap_code_name(rc), err->msg, root);
}

#define FUZZ_CODE(c) (1u << (c))

#endif
