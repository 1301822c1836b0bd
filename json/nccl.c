/*
 * nccl.c - nccl-tests text output to measured bandwidths of a cluster
 * document (see nccl.h; docs/nccl.md states every rule).
 *
 * Grammar read, line by line (anything else is an error naming the line):
 *   blank lines
 *   lines holding "NCCL INFO" or "NCCL WARN"             NCCL_DEBUG output, skipped
 *   "# Rank <r> [Group <g>] Pid <p> on <host> device <d> ..."   one per rank
 *   "# ... size count type redop root time algbw busbw #wrong time ..."  the column header
 *   "# Out of bounds values : <n> OK|FAILED"
 *   other "#" lines                                      free text; a program name in one
 *                                                        ("all_gather_perf") tells the kind
 *   "<size> <count> <type> <redop> <root> <time> <algbw> <busbw> <#wrong> <time> <algbw> <busbw> <#wrong>"
 *     out-of-place then in-place; #wrong is an integer or "N/A" (run with -c 0),
 *     in-place time/algbw/busbw may be "N/A"
 *
 * Never: print, exit, keep state, or trust a number before checking it.
 */
#include "nccl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jdecode.h"
#include "model.h"

#define NCCL_COLUMNS 13
#define NCCL_NAME_MAX 64

static const struct {
	enum nccl_kind kind;
	const char *name;
	const char *program;
} nccl_kinds[] = {
	{ NCCL_ALL_REDUCE, "all_reduce", "all_reduce_perf" },
	{ NCCL_ALL_GATHER, "all_gather", "all_gather_perf" },
	{ NCCL_REDUCE_SCATTER, "reduce_scatter", "reduce_scatter_perf" },
	{ NCCL_ALLTOALL, "alltoall", "alltoall_perf" },
	{ NCCL_SENDRECV, "sendrecv", "sendrecv_perf" },
};
#define NCCL_KIND_COUNT (sizeof(nccl_kinds) / sizeof(nccl_kinds[0]))

const char *nccl_kind_name(enum nccl_kind kind)
{
	size_t i;

	for (i = 0; i < NCCL_KIND_COUNT; i++)
		if (nccl_kinds[i].kind == kind)
			return nccl_kinds[i].name;
	return "none";
}

enum nccl_kind nccl_kind_parse(const char *s)
{
	size_t i;

	for (i = 0; s && i < NCCL_KIND_COUNT; i++)
		if (strcmp(s, nccl_kinds[i].name) == 0 || strcmp(s, nccl_kinds[i].program) == 0)
			return nccl_kinds[i].kind;
	return NCCL_KIND_NONE;
}

enum nccl_kind nccl_kind_in(const char *s)
{
	enum nccl_kind found = NCCL_KIND_NONE;
	size_t i;

	for (i = 0; s && i < NCCL_KIND_COUNT; i++) {
		if (!strstr(s, nccl_kinds[i].program))
			continue;
		if (found != NCCL_KIND_NONE)
			return NCCL_KIND_NONE;
		found = nccl_kinds[i].kind;
	}
	return found;
}

/* Bytes of one element of an nccl-tests type name; 0 when unknown. */
static int nccl_type_bytes(const char *type)
{
	static const struct {
		const char *name;
		int bytes;
	} types[] = {
		{ "int8", 1 },    { "uint8", 1 },  { "char", 1 },    { "f8e4m3", 1 },   { "f8e5m2", 1 },
		{ "half", 2 },    { "bfloat16", 2 }, { "int32", 4 }, { "uint32", 4 },   { "int", 4 },
		{ "float", 4 },   { "int64", 8 },  { "uint64", 8 },  { "double", 8 },
	};
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(type, types[i].name) == 0)
			return types[i].bytes;
	return 0;
}

/* ------------------------------------------------------------ parsing */

/* One rank line's host, kept to count ranks per host. */
struct nccl_host {
	char name[NCCL_NAME_MAX];
	int ranks;
};

/* Parse state of one output. */
struct nccl_state {
	const char *name;
	enum nccl_kind kind;       /* the caller's, or from a header line */
	long line;
	unsigned char *rank_seen;  /* NCCL_MAX_RANKS flags */
	int rank_lines;
	int max_rank;
	long group;                /* the first rank line's group; -1 none yet */
	struct nccl_host *hosts;
	int host_count;
	int host_cap;
	/* rows */
	size_t rows;
	double last_size;
	double last_count;
	double busbw;
	char type[NCCL_NAME_MAX];
	char redop[NCCL_NAME_MAX];
	long root;
};

static uniap_code nccl_line_err(struct nccl_state *s, struct uniap_err *err, uniap_code code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* err_set with "<name>: line <n>: " in front. */
static uniap_code nccl_line_err(struct nccl_state *s, struct uniap_err *err, uniap_code code, const char *fmt, ...)
{
	char msg[UNIAP_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return err_set(err, code, "%s: line %ld: %s", s->name, s->line, msg);
}

/* Splits line (modified in place) at blanks into at most cap tokens; the count, or cap + 1 when more. */
static int nccl_split(char *line, char **tok, int cap)
{
	int n = 0;
	char *p = line;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return n;
		if (n == cap)
			return cap + 1;
		tok[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (*p)
			*p++ = '\0';
	}
}

/* A non-negative integer written in digits only, at most 2^53. */
static int nccl_uint(const char *t, double *out)
{
	char *end = NULL;
	unsigned long long v;

	if (!*t || strspn(t, "0123456789") != strlen(t) || strlen(t) > 16)
		return -1;
	errno = 0;
	v = strtoull(t, &end, 10);
	if (errno || *end || v > 9007199254740992ULL)
		return -1;
	*out = (double)v;
	return 0;
}

/* A finite number >= 0. */
static int nccl_num(const char *t, double *out)
{
	char *end = NULL;
	double v;

	if (!*t || !(isdigit((unsigned char)t[0]) || t[0] == '.'))
		return -1;
	errno = 0;
	v = strtod(t, &end);
	if (errno || *end || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

static uniap_code nccl_host_add(struct nccl_state *s, const char *host, struct uniap_err *err)
{
	int i;

	for (i = 0; i < s->host_count; i++)
		if (strcmp(s->hosts[i].name, host) == 0) {
			s->hosts[i].ranks++;
			return UNIAP_OK;
		}
	if (s->host_count == s->host_cap) {
		int cap = s->host_cap ? s->host_cap * 2 : 16;
		struct nccl_host *h = realloc(s->hosts, (size_t)cap * sizeof(*h));

		if (!h)
			return err_set(err, UNIAP_E_NOMEM, "out of memory");
		s->hosts = h;
		s->host_cap = cap;
	}
	snprintf(s->hosts[s->host_count].name, NCCL_NAME_MAX, "%s", host);
	s->hosts[s->host_count].ranks = 1;
	s->host_count++;
	return UNIAP_OK;
}

/* "# Rank <r> [Group <g>] Pid <p> on <host> device <d> ..." (tok[0] is "Rank"). */
static uniap_code nccl_rank_line(struct nccl_state *s, char **tok, int n, struct uniap_err *err)
{
	double r, g = 0;
	int i, on = -1;

	if (n < 2 || nccl_uint(tok[1], &r) != 0 || r >= NCCL_MAX_RANKS)
		return nccl_line_err(s, err, UNIAP_E_INVALID, "Rank: must be an integer 0..%d, got \"%.32s\"",
		                     NCCL_MAX_RANKS - 1, n >= 2 ? tok[1] : "");
	for (i = 2; i + 1 < n; i++) {
		if (strcmp(tok[i], "Group") == 0 && nccl_uint(tok[i + 1], &g) != 0)
			return nccl_line_err(s, err, UNIAP_E_INVALID, "Group: must be an integer, got \"%.32s\"",
			                     tok[i + 1]);
		if (strcmp(tok[i], "on") == 0 && on < 0)
			on = i + 1;
	}
	if (on < 0)
		return nccl_line_err(s, err, UNIAP_E_INVALID, "rank line without \"on <host>\"");
	if (s->group < 0)
		s->group = (long)g;
	else if ((long)g != s->group)
		return nccl_line_err(s, err, UNIAP_E_INVALID,
		                     "rank %d is in group %ld, rank lines before in group %ld: runs split into groups "
		                     "(NCCL_TESTS_SPLIT) are not supported",
		                     (int)r, (long)g, s->group);
	if (s->rank_seen[(int)r])
		return nccl_line_err(s, err, UNIAP_E_INVALID, "rank %d listed twice", (int)r);
	s->rank_seen[(int)r] = 1;
	s->rank_lines++;
	if ((int)r > s->max_rank)
		s->max_rank = (int)r;
	return nccl_host_add(s, tok[on], err);
}

/* Tokens of a '#' line that are looked at (a rank line needs about 15). */
#define NCCL_HEADER_TOKENS 24

/* A '#' line (without the '#'). */
static uniap_code nccl_header_line(struct nccl_state *s, char *text, struct uniap_err *err)
{
	char copy[NCCL_MAX_LINE_BYTES + 1];
	char *tok[NCCL_HEADER_TOKENS];
	enum nccl_kind k;
	int n;

	if (strstr(text, "Out of bounds values") && strstr(text, "FAILED"))
		return nccl_line_err(s, err, UNIAP_E_INVALID, "the run reports out-of-bounds values (FAILED)");
	k = nccl_kind_in(text);
	if (k != NCCL_KIND_NONE) {
		if (s->kind != NCCL_KIND_NONE && s->kind != k)
			return nccl_line_err(s, err, UNIAP_E_INVALID, "names %s_perf, but the run is %s", nccl_kind_name(k),
			                     nccl_kind_name(s->kind));
		s->kind = k;
	}
	snprintf(copy, sizeof(copy), "%s", text);
	n = nccl_split(copy, tok, NCCL_HEADER_TOKENS);
	/* a rank line's fields come first; past the cap are only more words of the device name,
	 * and nccl_split's "more than cap" count must not be read as tokens */
	if (n >= 1 && strcmp(tok[0], "Rank") == 0)
		return nccl_rank_line(s, tok, n > NCCL_HEADER_TOKENS ? NCCL_HEADER_TOKENS : n, err);
	if (n >= 2 && strcmp(tok[0], "size") == 0 && strcmp(tok[1], "count") == 0) {
		static const char *const want[NCCL_COLUMNS] = { "size", "count", "type", "redop", "root", "time", "algbw",
			                                        "busbw", "#wrong", "time", "algbw", "busbw", "#wrong" };
		int i, ok = n == NCCL_COLUMNS;

		for (i = 0; ok && i < NCCL_COLUMNS; i++)
			ok = strcmp(tok[i], want[i]) == 0;
		if (!ok)
			return nccl_line_err(s, err, UNIAP_E_INVALID,
			                     "column header: expected \"size count type redop root time algbw busbw #wrong "
			                     "time algbw busbw #wrong\" (nccl-tests 2.10 or later)");
	}
	return UNIAP_OK;
}

/* A number column of a data row; in-place columns may be "N/A" (*out = NAN). */
static uniap_code nccl_col(struct nccl_state *s, const char *col, const char *t, int na_ok, double *out,
                           struct uniap_err *err)
{
	if (na_ok && strcmp(t, "N/A") == 0) {
		*out = NAN;
		return UNIAP_OK;
	}
	if (nccl_num(t, out) != 0)
		return nccl_line_err(s, err, UNIAP_E_INVALID, "%s: must be a number >= 0, got \"%.32s\"", col, t);
	return UNIAP_OK;
}

/* #wrong: 0 or N/A. */
static uniap_code nccl_wrong(struct nccl_state *s, const char *which, const char *t, struct uniap_err *err)
{
	double v;

	if (strcmp(t, "N/A") == 0)
		return UNIAP_OK;
	if (nccl_uint(t, &v) != 0)
		return nccl_line_err(s, err, UNIAP_E_INVALID, "#wrong (%s): must be an integer or N/A, got \"%.32s\"",
		                     which, t);
	if (v != 0)
		return nccl_line_err(s, err, UNIAP_E_INVALID,
		                     "#wrong (%s): %.0f wrong values: the run failed validation, its bandwidths are not "
		                     "trusted",
		                     which, v);
	return UNIAP_OK;
}

/* A data row. */
static uniap_code nccl_data_line(struct nccl_state *s, char *text, struct uniap_err *err)
{
	char *tok[NCCL_COLUMNS];
	double size, count, root, t, algbw, busbw, ip_busbw;
	int n = nccl_split(text, tok, NCCL_COLUMNS);
	uniap_code rc;

	if (n != NCCL_COLUMNS)
		return nccl_line_err(s, err, UNIAP_E_INVALID,
		                     "expected %d columns (size count type redop root, then time algbw busbw #wrong "
		                     "out-of-place and in-place), got %s%d",
		                     NCCL_COLUMNS, n > NCCL_COLUMNS ? "more than " : "", n > NCCL_COLUMNS ? NCCL_COLUMNS : n);
	if (nccl_uint(tok[0], &size) != 0)
		return nccl_line_err(s, err, UNIAP_E_INVALID, "size: must be an integer number of bytes, got \"%.32s\"",
		                     tok[0]);
	if (nccl_uint(tok[1], &count) != 0)
		return nccl_line_err(s, err, UNIAP_E_INVALID, "count: must be an integer number of elements, got \"%.32s\"",
		                     tok[1]);
	if (strcmp(tok[4], "-1") == 0)
		root = -1;
	else if (nccl_uint(tok[4], &root) != 0)
		return nccl_line_err(s, err, UNIAP_E_INVALID, "root: must be an integer, got \"%.32s\"", tok[4]);
	if ((rc = nccl_col(s, "time (out-of-place)", tok[5], 0, &t, err)) != UNIAP_OK ||
	    (rc = nccl_col(s, "algbw (out-of-place)", tok[6], 0, &algbw, err)) != UNIAP_OK ||
	    (rc = nccl_col(s, "busbw (out-of-place)", tok[7], 0, &busbw, err)) != UNIAP_OK ||
	    (rc = nccl_wrong(s, "out-of-place", tok[8], err)) != UNIAP_OK ||
	    (rc = nccl_col(s, "time (in-place)", tok[9], 1, &t, err)) != UNIAP_OK ||
	    (rc = nccl_col(s, "algbw (in-place)", tok[10], 1, &algbw, err)) != UNIAP_OK ||
	    (rc = nccl_col(s, "busbw (in-place)", tok[11], 1, &ip_busbw, err)) != UNIAP_OK ||
	    (rc = nccl_wrong(s, "in-place", tok[12], err)) != UNIAP_OK)
		return rc;
	if (s->rows == 0) {
		snprintf(s->type, sizeof(s->type), "%s", tok[2]);
		snprintf(s->redop, sizeof(s->redop), "%s", tok[3]);
		s->root = (long)root;
	} else {
		if (size == s->last_size)
			return nccl_line_err(s, err, UNIAP_E_INVALID, "size %.0f: repeated (one run per output)", size);
		if (size < s->last_size)
			return nccl_line_err(s, err, UNIAP_E_INVALID,
			                     "size %.0f after %.0f: sizes must increase (one run per output)", size,
			                     s->last_size);
		if (strcmp(tok[2], s->type) != 0 || strcmp(tok[3], s->redop) != 0 || (long)root != s->root)
			return nccl_line_err(s, err, UNIAP_E_INVALID,
			                     "type/redop/root \"%.16s %.16s %.0f\" differ from the first row's \"%s %s %ld\" "
			                     "(one run per output)",
			                     tok[2], tok[3], root, s->type, s->redop, s->root);
	}
	s->rows++;
	s->last_size = size;
	s->last_count = count;
	s->busbw = isnan(ip_busbw) ? busbw : (busbw + ip_busbw) / 2;
	return UNIAP_OK;
}

/* One line (NUL-terminated, no newline). */
static uniap_code nccl_line(struct nccl_state *s, char *line, struct uniap_err *err)
{
	char *p = line;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return UNIAP_OK;
	if (*p == '#')
		return nccl_header_line(s, p + 1, err);
	if (strstr(p, "NCCL INFO") || strstr(p, "NCCL WARN"))
		return UNIAP_OK;
	if (!isdigit((unsigned char)*p))
		return nccl_line_err(s, err, UNIAP_E_INVALID,
		                     "not an nccl-tests line (a '#' header, a data row or NCCL debug output): \"%.48s\"", p);
	return nccl_data_line(s, p, err);
}

/* The kind from the rows when the header did not tell it. */
static uniap_code nccl_infer_kind(struct nccl_state *s, int ranks, struct uniap_err *err)
{
	int bytes = nccl_type_bytes(s->type), reduces = strcmp(s->redop, "none") != 0;
	double whole = s->last_count * bytes, shard = whole * ranks;
	enum nccl_kind k = NCCL_KIND_NONE;

	if (s->root >= 0)
		return err_set(err, UNIAP_E_INVALID,
		               "%s: root %ld: a rooted run (broadcast_perf, reduce_perf) has no table in a cluster "
		               "document",
		               s->name, s->root);
	if (s->kind != NCCL_KIND_NONE) {
		int want_reduce = s->kind == NCCL_ALL_REDUCE || s->kind == NCCL_REDUCE_SCATTER;

		if (want_reduce != reduces)
			return err_set(err, UNIAP_E_INVALID, "%s: redop \"%s\" does not fit %s_perf", s->name, s->redop,
			               nccl_kind_name(s->kind));
		return UNIAP_OK;
	}
	if (bytes == 0)
		return err_set(err, UNIAP_E_ARG,
		               "%s: type \"%s\": unknown element size, so the kind cannot be inferred: name the program "
		               "(all_reduce_perf, ...)",
		               s->name, s->type);
	if (reduces && s->last_size == whole)
		k = NCCL_ALL_REDUCE;
	else if (reduces && s->last_size == shard)
		k = NCCL_REDUCE_SCATTER;
	else if (!reduces && s->last_size == whole)
		k = NCCL_SENDRECV;
	else if (!reduces && s->last_size == shard)
		return err_set(err, UNIAP_E_ARG,
		               "%s: all_gather_perf and alltoall_perf print alike: name the program (a file or header "
		               "naming all_gather_perf, or the kind)",
		               s->name);
	if (k == NCCL_KIND_NONE)
		return err_set(err, UNIAP_E_INVALID,
		               "%s: size %.0f and count %.0f of %s over %d ranks fit no known nccl-tests program", s->name,
		               s->last_size, s->last_count, s->type, ranks);
	s->kind = k;
	return UNIAP_OK;
}

/* The ranks of the run: the rank lines and the caller's count must agree. */
static uniap_code nccl_ranks(struct nccl_state *s, int ranks, struct nccl_run *out, struct uniap_err *err)
{
	int i;

	if (s->rank_lines == 0) {
		if (ranks == 0)
			return err_set(err, UNIAP_E_ARG,
			               "%s: no \"# Rank\" lines, so the number of ranks is unknown: give it (--ranks N, "
			               "\"ranks\")",
			               s->name);
		out->ranks = ranks;
		return UNIAP_OK;
	}
	if (s->max_rank + 1 != s->rank_lines) {
		for (i = 0; i < s->max_rank && s->rank_seen[i]; i++)
			;
		return err_set(err, UNIAP_E_INVALID, "%s: rank lines list %d ranks up to %d: rank %d is missing", s->name,
		               s->rank_lines, s->max_rank, i);
	}
	if (ranks != 0 && ranks != s->rank_lines)
		return err_set(err, UNIAP_E_ARG, "%s: ranks %d given, but the output lists %d ranks", s->name, ranks,
		               s->rank_lines);
	out->ranks = s->rank_lines;
	out->hosts = s->host_count;
	out->min_ranks_per_host = out->max_ranks_per_host = s->hosts[0].ranks;
	for (i = 1; i < s->host_count; i++) {
		if (s->hosts[i].ranks < out->min_ranks_per_host)
			out->min_ranks_per_host = s->hosts[i].ranks;
		if (s->hosts[i].ranks > out->max_ranks_per_host)
			out->max_ranks_per_host = s->hosts[i].ranks;
	}
	return UNIAP_OK;
}

uniap_code nccl_parse(const char *text, size_t len, const char *name, enum nccl_kind kind, int ranks,
                      struct nccl_run *out, struct uniap_err *err)
{
	struct nccl_state s = { .name = name ? name : "nccl-tests", .kind = kind, .max_rank = -1, .group = -1 };
	char line[NCCL_MAX_LINE_BYTES + 1];
	size_t pos = 0;
	uniap_code rc = UNIAP_OK;

	memset(out, 0, sizeof(*out));
	if (!text || ranks < 0 || ranks > NCCL_MAX_RANKS)
		return err_set(err, UNIAP_E_ARG, "%s: bad arguments", s.name);
	if (len > NCCL_MAX_TEXT_BYTES)
		return err_set(err, UNIAP_E_LIMIT, "%s: %zu bytes, more than the %zu allowed", s.name, len,
		               NCCL_MAX_TEXT_BYTES);
	s.rank_seen = calloc(NCCL_MAX_RANKS, 1);
	if (!s.rank_seen)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;

		s.line++;
		if (n > 0 && text[pos + n - 1] == '\r')
			n--;
		if (n > NCCL_MAX_LINE_BYTES) {
			rc = nccl_line_err(&s, err, UNIAP_E_LIMIT, "longer than %d bytes", NCCL_MAX_LINE_BYTES);
			goto out;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		if (strlen(line) != n) {
			rc = nccl_line_err(&s, err, UNIAP_E_INVALID, "holds a NUL byte (not text)");
			goto out;
		}
		if ((rc = nccl_line(&s, line, err)) != UNIAP_OK)
			goto out;
		pos += (nl ? (size_t)(nl - (text + pos)) + 1 : len - pos);
	}
	if (s.rows == 0) {
		rc = err_set(err, UNIAP_E_INVALID, "%s: no data rows (expected the table of an nccl-tests run)", s.name);
		goto out;
	}
	if ((rc = nccl_ranks(&s, ranks, out, err)) != UNIAP_OK)
		goto out;
	if (out->ranks < 2) {
		rc = err_set(err, UNIAP_E_INVALID, "%s: a run over %d rank measures no communication", s.name, out->ranks);
		goto out;
	}
	if ((rc = nccl_infer_kind(&s, out->ranks, err)) != UNIAP_OK)
		goto out;
	if (s.last_size < NCCL_MIN_BANDWIDTH_BYTES) {
		rc = err_set(err, UNIAP_E_INVALID,
		             "%s: the largest message is %.0f bytes: a bandwidth needs at least %.0f (run with -e 128M "
		             "or more)",
		             s.name, s.last_size, NCCL_MIN_BANDWIDTH_BYTES);
		goto out;
	}
	if (!(s.busbw > 0)) {
		rc = err_set(err, UNIAP_E_INVALID, "%s: busbw at %.0f bytes is 0", s.name, s.last_size);
		goto out;
	}
	out->kind = s.kind;
	out->rows = s.rows;
	out->max_size_bytes = s.last_size;
	out->busbw_gb_per_s = s.busbw;
out:
	free(s.rank_seen);
	free(s.hosts);
	if (rc != UNIAP_OK)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* ------------------------------------------------------------ overlay */

static void nccl_note(struct nccl_report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void nccl_note(struct nccl_report *rep, const char *fmt, ...)
{
	size_t used;
	va_list ap;

	if (!rep)
		return;
	used = strlen(rep->text);
	if (used + 1 >= sizeof(rep->text))
		return;
	va_start(ap, fmt);
	vsnprintf(rep->text + used, sizeof(rep->text) - used, fmt, ap);
	va_end(ap);
}

/* The placement of run r on a cluster of nodes x per_node devices: 1 consecutive, 0 strided. */
static uniap_code nccl_placement(const struct nccl_run *r, const char *name, int nodes, int per_node,
                                 int *consecutive, struct uniap_err *err)
{
	int devices = nodes * per_node;

	if (r->ranks > devices)
		return err_set(err, UNIAP_E_INVALID, "%s: %d ranks, but the cluster has %d devices", name, r->ranks,
		               devices);
	if (r->hosts > nodes)
		return err_set(err, UNIAP_E_INVALID, "%s: ranks on %d hosts, but the cluster has %d nodes", name, r->hosts,
		               nodes);
	if (r->max_ranks_per_host > per_node)
		return err_set(err, UNIAP_E_INVALID, "%s: %d ranks on one host, but a node has %d devices", name,
		               r->max_ranks_per_host, per_node);
	if (r->hosts > 1 && r->max_ranks_per_host == 1 && per_node > 1) {
		*consecutive = 0; /* one rank per node: stride devices_per_node */
		return UNIAP_OK;
	}
	if (r->hosts > 1 && (r->min_ranks_per_host != per_node || r->max_ranks_per_host != per_node))
		return err_set(err, UNIAP_E_INVALID,
		               "%s: %d to %d ranks per host on %d hosts: only whole nodes (%d ranks each) or one rank "
		               "per node map to a group of the cluster",
		               name, r->min_ranks_per_host, r->max_ranks_per_host, r->hosts, per_node);
	if (r->hosts == 0 && r->ranks > per_node && r->ranks % per_node != 0)
		return err_set(err, UNIAP_E_INVALID,
		               "%s: %d consecutive ranks neither fit in one node (%d devices) nor fill whole nodes", name,
		               r->ranks, per_node);
	*consecutive = 1;
	return UNIAP_OK;
}

/* The array member key of obj (created when absent); NULL when not an array or out of memory. */
static cJSON *nccl_array(cJSON *obj, const char *key)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!a)
		a = cJSON_AddArrayToObject(obj, key);
	return cJSON_IsArray(a) ? a : NULL;
}

/* Sets bw for the entry of table whose members k1 = v1 (and "placement" = placement, when not NULL);
 * *old is the bandwidth replaced (0 when appended). */
static uniap_code nccl_put(cJSON *table, const char *k1, int v1, const char *placement, double bw, double *old,
                           struct uniap_err *err)
{
	cJSON *e, *o;

	*old = 0;
	cJSON_ArrayForEach(e, table) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, k1);
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "placement");
		cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bandwidth_gb_per_s");

		if (!cJSON_IsNumber(a) || a->valuedouble != v1)
			continue;
		if (placement && (!cJSON_IsString(p) || strcmp(p->valuestring, placement) != 0))
			continue;
		if (cJSON_IsNumber(b))
			*old = b->valuedouble;
		if (!cJSON_ReplaceItemInObjectCaseSensitive(e, "bandwidth_gb_per_s", cJSON_CreateNumber(bw)))
			return err_set(err, UNIAP_E_NOMEM, "out of memory");
		return UNIAP_OK;
	}
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddItemToArray(table, o)) {
		cJSON_Delete(o);
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	}
	if (!cJSON_AddNumberToObject(o, k1, v1) || (placement && !cJSON_AddStringToObject(o, "placement", placement)) ||
	    !cJSON_AddNumberToObject(o, "bandwidth_gb_per_s", bw))
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	return UNIAP_OK;
}

/* A key of what one run sets, to refuse two runs measuring the same thing. */
struct nccl_key {
	enum nccl_kind kind;
	int size;
	int consecutive;
	const char *name;
};

uniap_code nccl_cluster_json(const cJSON *base, const char *base_name, const struct nccl_input *in, size_t n,
                             int ranks, cJSON **out, struct nccl_report *rep, struct uniap_err *err)
{
	struct cluster_profile c = { 0 };
	struct nccl_key keys[NCCL_MAX_INPUTS];
	cJSON *doc = NULL;
	size_t i, j;
	uniap_code rc;

	*out = NULL;
	if (!base_name)
		base_name = "cluster";
	if (!in || n == 0)
		return err_set(err, UNIAP_E_ARG, "nccl-tests: no outputs to import");
	if (n > NCCL_MAX_INPUTS)
		return err_set(err, UNIAP_E_LIMIT, "nccl-tests: %zu outputs, more than the %d allowed", n, NCCL_MAX_INPUTS);
	if ((rc = jdec_cluster_json(base, base_name, &c, err)) != UNIAP_OK)
		return rc;
	doc = cJSON_Duplicate(base, 1);
	if (!doc) {
		rc = err_set(err, UNIAP_E_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct nccl_run r;
		const char *table_name = NULL;
		cJSON *table;
		int consecutive = 1;
		double old = 0;

		if ((rc = nccl_parse(in[i].text, in[i].len, in[i].name, in[i].kind, ranks, &r, err)) != UNIAP_OK)
			goto out;
		if ((rc = nccl_placement(&r, in[i].name, c.nodes, c.devices_per_node, &consecutive, err)) != UNIAP_OK)
			goto out;
		switch (r.kind) {
		case NCCL_ALL_REDUCE: table_name = "allreduce"; break;
		case NCCL_ALL_GATHER: table_name = "allgather"; break;
		case NCCL_REDUCE_SCATTER: table_name = "reduce_scatter"; break;
		case NCCL_SENDRECV: break;
		default:
			rc = err_set(err, UNIAP_E_INVALID,
			             "%s: alltoall: a cluster document has no all-to-all table (the cost model uses none)",
			             in[i].name);
			goto out;
		}
		if (r.kind == NCCL_SENDRECV &&
		    !((consecutive && r.ranks == c.nodes * c.devices_per_node) || (!consecutive && r.ranks == c.nodes))) {
			rc = err_set(err, UNIAP_E_INVALID,
			             "%s: sendrecv over %d %s ranks: only a ring over every device (pp = devices) or over "
			             "one rank per node (pp = nodes) is the stage-to-stage transfer of a pipeline",
			             in[i].name, r.ranks, consecutive ? "consecutive" : "strided");
			goto out;
		}
		keys[i] = (struct nccl_key){ r.kind, r.ranks, consecutive, in[i].name };
		for (j = 0; j < i; j++)
			if (keys[j].kind == r.kind && keys[j].size == r.ranks && keys[j].consecutive == consecutive) {
				rc = err_set(err, UNIAP_E_INVALID, "%s: measures the same %s over %d %s ranks as %s", in[i].name,
				             nccl_kind_name(r.kind), r.ranks, consecutive ? "consecutive" : "strided",
				             keys[j].name);
				goto out;
			}
		if (r.kind == NCCL_SENDRECV) {
			table = nccl_array(doc, "p2p");
			rc = table ? nccl_put(table, "pp", r.ranks, NULL, r.busbw_gb_per_s, &old, err)
			           : err_set(err, UNIAP_E_NOMEM, "out of memory");
		} else {
			cJSON *coll = cJSON_GetObjectItemCaseSensitive(doc, "collectives");

			if (!coll)
				coll = cJSON_AddObjectToObject(doc, "collectives");
			table = coll ? nccl_array(coll, table_name) : NULL;
			rc = table ? nccl_put(table, "size", r.ranks, consecutive ? "consecutive" : "strided",
			                      r.busbw_gb_per_s, &old, err)
			           : err_set(err, UNIAP_E_NOMEM, "out of memory");
		}
		if (rc != UNIAP_OK)
			goto out;
		nccl_note(rep, "%s: %s over %d ranks", in[i].name, nccl_kind_name(r.kind), r.ranks);
		if (r.hosts)
			nccl_note(rep, " on %d host(s)", r.hosts);
		nccl_note(rep, ", %zu sizes up to %.0f bytes: busbw %.6g GB/s -> ", r.rows, r.max_size_bytes,
		          r.busbw_gb_per_s);
		if (r.kind == NCCL_SENDRECV)
			nccl_note(rep, "p2p pp %d", r.ranks);
		else
			nccl_note(rep, "collectives.%s size %d %s", table_name, r.ranks, consecutive ? "consecutive" : "strided");
		if (old > 0)
			nccl_note(rep, " (replaces %.6g)\n", old);
		else
			nccl_note(rep, " (new)\n");
	}
	cluster_release(&c);
	if ((rc = jdec_cluster_json(doc, base_name, &c, err)) != UNIAP_OK)
		goto out;
	*out = doc;
	doc = NULL;
out:
	cJSON_Delete(doc);
	cluster_release(&c);
	return rc;
}
