/*
 * fuzz_framing.c - libFuzzer target for the framing checks of uniapd's
 * requests (http_framing_add / http_framing_check, server/http.c), which
 * decide before any body byte is read whether a request's Content-Length,
 * Transfer-Encoding, Host and Authorization headers can be trusted.
 *
 * One input is the protocol version on its first line ("HTTP/1.1"), then one
 * header a line ("Name: value"); names are compared as libmicrohttpd hands
 * them over (any case).
 *
 * Invariants: the answer is 0, 400 or 501, with a non-empty detail exactly
 * when it is not 0; and 0 never lets through what request smuggling needs: a
 * repeated Content-Length, a repeated Transfer-Encoding, both together, a
 * coding other than chunked, more than one Authorization, or an HTTP/1.1
 * request without exactly one Host; nor more than one Origin, nor a control
 * character in a value (counted here independently).
 * Seeds: fuzz/corpus/framing/.
 *
 * Thread safety: stateless.  Never: keep state between inputs.
 */
#include <strings.h>

#include "fuzz.h"
#include "http.h"

#define FUZZ_FRAMING_LINES 64
#define FUZZ_FRAMING_LINE_MAX 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char lines[FUZZ_FRAMING_LINES][FUZZ_FRAMING_LINE_MAX];
	const char *p = (const char *)data, *end = p + size;
	struct http_framing n = { 0 };
	unsigned cl = 0, te = 0, host = 0, auth = 0, origin = 0, ctl = 0, count = 0, i;
	const char *first_te = NULL;
	char why[160];
	int status;

	while (p < end && count < FUZZ_FRAMING_LINES) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);

		if (len >= FUZZ_FRAMING_LINE_MAX)
			len = FUZZ_FRAMING_LINE_MAX - 1;
		memcpy(lines[count], p, len);
		lines[count][len] = '\0'; /* a NUL inside ends it, as in a C string */
		count++;
		p = nl ? nl + 1 : end;
	}
	if (count == 0)
		return 0;
	for (i = 1; i < count; i++) {
		char *colon = strchr(lines[i], ':'), *v;

		if (!colon)
			continue;
		*colon = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		http_framing_add(&n, lines[i], v);
		for (const char *b = v; *b; b++)
			ctl |= ((unsigned char)*b < 0x20 && *b != '\t') || (unsigned char)*b == 0x7f;
		origin += strcasecmp(lines[i], "Origin") == 0;
		if (strcasecmp(lines[i], "Content-Length") == 0)
			cl++;
		else if (strcasecmp(lines[i], "Transfer-Encoding") == 0 && !te++)
			first_te = v;
		else if (strcasecmp(lines[i], "Host") == 0)
			host++;
		else if (strcasecmp(lines[i], "Authorization") == 0)
			auth++;
	}
	why[0] = '\0';
	status = http_framing_check(&n, lines[0], why, sizeof(why));
	FUZZ_CHECK(status == 0 || status == HTTP_BAD_REQUEST || status == HTTP_NOT_IMPLEMENTED, "status %d", status);
	FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL, "detail not terminated");
	FUZZ_CHECK((status != 0) == (why[0] != '\0'), "status %d with detail \"%s\"", status, why);
	if (status == 0) {
		FUZZ_CHECK(cl <= 1 && te <= 1 && !(cl && te) && auth <= 1, "let through: %u Content-Length, %u "
		           "Transfer-Encoding, %u Authorization", cl, te, auth);
		FUZZ_CHECK(!te || strcasecmp(first_te, "chunked") == 0, "let through Transfer-Encoding \"%s\"", first_te);
		FUZZ_CHECK(strcmp(lines[0], "HTTP/1.1") != 0 || host == 1, "let through HTTP/1.1 with %u Host", host);
		FUZZ_CHECK(origin <= 1 && !ctl, "let through %u Origin, a control character: %u", origin, ctl);
	}
	return 0;
}
