/*
 * test_fuzz.c - "bad input never crashes anything": a deterministic (fixed
 * seed) mutation fuzzer over the JSON decoders (json/jdecode.c) and the
 * planning pipeline behind them (cost_build, opt_solve, plan_doc_resolve,
 * plan_evaluate).
 *
 * Seeds are the worked examples, every .json file of schema/examples (run
 * from the repository root); the first seed of each kind is also cut at every
 * length.  Each mutant is made by byte-level mutations (flips, insertions of
 * JSON-significant characters, deletions, truncations, span duplication,
 * number tokens replaced by huge/tiny/negative/NaN-like ones, strings replaced
 * by 10 KB ones, deep nesting, raw and escaped NULs) and structure-aware ones
 * (parse with cJSON, delete / retype / duplicate / rename / perturb one member
 * or array element, print back; for plans also moves of layers between
 * stages, other strategies, micro-batch counts and schedules that keep the
 * document well-formed), then:
 *
 *   - decoded as its seed's kind: UNIAP_OK, or an error whose message is not
 *     empty and, for invalid/malformed/limit, starts with the document's root
 *     path; the output struct is zeroed on failure;
 *   - cluster and model mutants that decode are paired with an unmutated
 *     example of the other kind and priced by cost_build (pp 1 and 2, c 1 and
 *     2, batch 8); every cost must be finite and >= 0 and pass the optimizer's
 *     candidate check, every error must name a field; small distinct
 *     candidates (K <= 16, layers <= 12) are solved by opt_solve (2 s limit)
 *     and its plan is audited with opt_tpi and plan_evaluate;
 *   - plan mutants that decode are resolved and evaluated against the
 *     candidate of the examples (cluster-8gpu-nvlink + model-bert-chain), and
 *     against a candidate built for the mutant's own pp/c/schedule.
 *
 * Each kind prints one summary line and must have accepted and rejected
 * mutants.  Defects found in other modules have a skipped reproducer at the
 * end of this file ("defects found"); mutants that hit the tiny-bandwidth one
 * are counted as "known defects" instead of failing.
 *
 * Hangs: an alarm ends the program (and so fails the suite) after
 * FZ_ALARM_S.  Leaks: everything is released so LeakSanitizer stays quiet.
 * UNIAP_FUZZ_TRACE=1 in the environment prints each mutant's recipe to stderr
 * before it runs, to find the input behind a sanitizer report.
 *
 * Never: write files, fork, or depend on the wall clock for which mutants
 * run (only the solver's budget is timed, see FZ_SOLVE_CHAIN_BUDGET_S).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cost.h"
#include "jdecode.h"
#include "model.h"
#include "opt.h"
#include "plan.h"

#define EXAMPLES_DIR "schema/examples"
#define FZ_EXAMPLE_MAX_BYTES (1u << 20)
#define FZ_MAX_SEEDS 32
/* FZ_SEED and FZ_MUTANTS_PER_SEED may be given with -D for longer exploratory runs. */
#ifndef FZ_SEED
#define FZ_SEED 0x75a1a9f022cbd3e1ULL
#endif

/* Mutants per seed file (on top of the truncations and the fixed cases). */
#ifndef FZ_MUTANTS_PER_SEED
#define FZ_MUTANTS_PER_SEED 800
#endif
/* Seeds truncated at every length (the first of each kind). */
#define FZ_TRUNCATE_PER_KIND 1
/* A replacement string's length in bytes. */
#define FZ_LONG_STRING 10240
/* Largest mutant kept (deep nesting and long strings stay far below it). */
#define FZ_MAX_MUTANT (256u * 1024u)
/* Items of one document the structural mutations choose from. */
#define FZ_MAX_ITEMS 4096

/*
 * opt_solve: only small candidates, each distinct one once, within a budget
 * of solver seconds per kind and per path (chains go to the exact DPs, other
 * graphs to the MILP on CBC, which is about 10x slower under ASan: see
 * test_opt.c).  A solve that starts within the budget may run its full time limit.
 */
#define FZ_SOLVE_MAX_K 16
#define FZ_SOLVE_MAX_LAYERS 12
#define FZ_SOLVE_TIME_LIMIT_S 2.0
#ifndef FZ_SOLVE_MAX_PER_PATH
#define FZ_SOLVE_MAX_PER_PATH 24
#endif
#define FZ_SOLVE_CHAIN_BUDGET_S 1.0
#if defined(__SANITIZE_ADDRESS__)
#define FZ_SOLVE_MILP_BUDGET_S 0.3 /* about one MILP per kind */
#else
#define FZ_SOLVE_MILP_BUDGET_S 2.0
#endif
#define FZ_SEEN_MAX 1024

/* A hang anywhere kills the program (default SIGALRM action). */
#define FZ_ALARM_S 240

enum fz_kind { FZ_CLUSTER = 0, FZ_MODEL, FZ_PLAN, FZ_KINDS };

static const char *const fz_root[FZ_KINDS] = { "cluster", "model", "plan" };

/* ------------------------------------------------------------ random */

struct fz_rng {
	uint64_t s;
};

static uint64_t fz_next(struct fz_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL); /* splitmix64 */

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n == 0. */
static size_t fz_below(struct fz_rng *r, size_t n)
{
	return n ? (size_t)(fz_next(r) % n) : 0;
}

/* ------------------------------------------------------------ buffer */

/* A growable byte buffer, capped at FZ_MAX_MUTANT; data is NUL-terminated after len. */
struct fz_buf {
	char *data;
	size_t len, cap;
};

static void fz_buf_reserve(struct fz_buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 256;

	if (need + 1 <= b->cap)
		return;
	while (cap < need + 1)
		cap *= 2;
	b->data = realloc(b->data, cap);
	assert_non_null(b->data);
	b->cap = cap;
}

/* Replaces del bytes at `at` with ins[0..ins_len); refuses (returns 0) past FZ_MAX_MUTANT. */
static int fz_buf_splice(struct fz_buf *b, size_t at, size_t del, const char *ins, size_t ins_len)
{
	size_t tail;

	if (at > b->len)
		at = b->len;
	if (del > b->len - at)
		del = b->len - at;
	if (b->len - del + ins_len > FZ_MAX_MUTANT)
		return 0;
	fz_buf_reserve(b, b->len - del + ins_len);
	tail = b->len - at - del;
	memmove(b->data + at + ins_len, b->data + at + del, tail);
	if (ins_len)
		memcpy(b->data + at, ins, ins_len);
	b->len = b->len - del + ins_len;
	b->data[b->len] = '\0';
	return 1;
}

static void fz_buf_set(struct fz_buf *b, const char *text, size_t len)
{
	b->len = 0;
	fz_buf_reserve(b, 0);
	b->data[0] = '\0';
	assert_true(fz_buf_splice(b, 0, 0, text, len));
}

/* b = root printed compactly; 1 when it could be printed. */
static int fz_buf_set_json(struct fz_buf *b, const cJSON *root)
{
	char *printed = cJSON_PrintUnformatted(root);

	if (!printed)
		return 0;
	fz_buf_set(b, printed, strlen(printed));
	cJSON_free(printed);
	return 1;
}

static void fz_buf_release(struct fz_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------ context */

struct fz_seed {
	char name[256];
	enum fz_kind kind;
	char *text;
	size_t len;
};

/* Mutants of one kind by decoder outcome, and what the pipeline did with them. */
struct fz_stats {
	long mutants;
	long outcome[UNIAP_CODE_COUNT + 1]; /* the last: a code out of range */
	long cand_built, cand_errors;   /* cost_build on a mutant (or for a plan mutant) */
	long solves, solve_plans, solve_errors, solve_skipped;
	long solves_by_path[2];         /* [opt_is_chain()] */
	double solve_s[2];              /* [opt_is_chain()]: seconds spent by path */
	long known_tiny_bw;             /* infinite costs from the known defect (test_tiny_bandwidth) */
	long resolved, resolve_errors;  /* plan_doc_resolve */
	long evaluated, infeasible;     /* plan_evaluate; of those, !valid or !fits */
};

struct fz_ctx {
	struct fz_seed seeds[FZ_MAX_SEEDS];
	size_t n_seeds;
	/* the unmutated examples, decoded: the other half of a cluster/model mutant */
	struct cluster_profile clusters[FZ_MAX_SEEDS];
	size_t n_clusters;
	struct model_profile models[FZ_MAX_SEEDS];
	size_t n_models;
	/* the candidate of the examples that the plan mutants are checked against */
	size_t plan_cluster, plan_model; /* indices into clusters[], models[] */
	struct cost_candidate plan_cand;
	struct plan_doc plan_ref;
	/* candidates already solved (hashes), so near-identical mutants solve once */
	uint64_t seen[FZ_SEEN_MAX];
	size_t n_seen;
	struct fz_stats stats[FZ_KINDS];
	int trace;
	/* the mutant being checked, for failure messages */
	const char *cur_seed;
	long cur_index;
	char cur_recipe[128];
	const char *cur_text;
	size_t cur_len;
};

static const char *fz_kind_file_prefix(enum fz_kind k)
{
	return k == FZ_CLUSTER ? "cluster-" : k == FZ_MODEL ? "model-" : "plan-";
}

static int fz_seed_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fz_seed *)a)->name, ((const struct fz_seed *)b)->name);
}

/* Index of the seed file named name, or -1. */
static long fz_find_seed(const struct fz_ctx *ctx, const char *name)
{
	size_t i;

	for (i = 0; i < ctx->n_seeds; i++)
		if (strcmp(ctx->seeds[i].name, name) == 0)
			return (long)i;
	return -1;
}

/* Index among the examples of its kind of seed i (they are decoded in seed order). */
static size_t fz_kind_index(const struct fz_ctx *ctx, size_t i)
{
	size_t j, n = 0;

	for (j = 0; j < i; j++)
		n += ctx->seeds[j].kind == ctx->seeds[i].kind;
	return n;
}

/* Prints the current mutant (up to 4 KB, bytes outside printable ASCII as \xNN) to stderr. */
static void fz_print_mutant(const struct fz_ctx *ctx)
{
	size_t i, n = ctx->cur_len < 4096 ? ctx->cur_len : 4096;

	print_error("mutant %ld of %s (%s), %zu bytes:\n", ctx->cur_index, ctx->cur_seed, ctx->cur_recipe,
	            ctx->cur_len);
	for (i = 0; ctx->cur_text && i < n; i++) {
		unsigned char c = (unsigned char)ctx->cur_text[i];

		if (c >= 0x20 && c < 0x7f)
			fputc(c, stderr);
		else
			fprintf(stderr, "\\x%02x", c);
	}
	fprintf(stderr, "%s\n", n < ctx->cur_len ? "..." : "");
}

/* Fails naming the current mutant. */
#define FZ_FAIL(ctx, ...)                                                                       \
	do {                                                                                    \
		fz_print_mutant(ctx);                                                           \
		fail_msg(__VA_ARGS__);                                                          \
	} while (0)

/* 1 when msg reads "<field path>: <rule>": a non-empty path without spaces. */
static int fz_names_field(const char *msg)
{
	const char *colon = strstr(msg, ": ");
	const char *c;

	if (!colon || colon == msg || colon[2] == '\0')
		return 0;
	for (c = msg; c < colon; c++)
		if (*c == ' ' || *c == '\n')
			return 0;
	return 1;
}

/* 1 when msg starts with root followed by '.', ':' or '['. */
static int fz_rooted(const char *msg, const char *root)
{
	size_t n = strlen(root);

	return strncmp(msg, root, n) == 0 && (msg[n] == '.' || msg[n] == ':' || msg[n] == '[');
}

static int fz_all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* ------------------------------------------------------------ byte-level mutations */

static const char fz_json_chars[] = "{}[]\",:-0e.0123456789";

static const char *const fz_number_tokens[] = {
	"1e400", "-0", "1e-400", "99999999999999999999", "-1", "-1e400", "0", "1", "2", "3", "0.5",
	"1e308", "-1e308", "4294967296", "2147483648", "-2147483649", "9007199254740993", "1e-320",
	"NaN", "nan", "Infinity", "-Infinity", "0x10", "01", "1.", ".5", "1e", "--1", "+1", "1E+2",
	"65536", "4096", "4097", "16", "7", "1.0000000000000002", "0.0", "123456789012345678901234567890",
};

/* A JSON number token of text starting at i (outside strings); returns its end. */
static size_t fz_number_end(const char *t, size_t len, size_t i)
{
	while (i < len && strchr("-+.eE0123456789", t[i]) && t[i] != '\0')
		i++;
	return i;
}

/* A string token starting at the quote at i; returns the index after the closing quote. */
static size_t fz_string_end(const char *t, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		if (t[i] == '\\')
			i++;
		else if (t[i] == '"')
			return i + 1;
	}
	return len;
}

enum fz_token { FZ_TOK_NUMBER, FZ_TOK_STRING, FZ_TOK_ANY };

/* Picks a random number or string token of b: *start, *end.  0 when there is none. */
static int fz_pick_token(struct fz_rng *r, const struct fz_buf *b, enum fz_token want, size_t *start,
                         size_t *end)
{
	size_t i = 0, n = 0, pick, s, e;

	/* two passes: count, then walk to the chosen one */
	for (int pass = 0; pass < 2; pass++) {
		size_t seen = 0;

		pick = pass ? fz_below(r, n) : 0;
		for (i = 0; i < b->len;) {
			int is_num = (b->data[i] == '-' || (b->data[i] >= '0' && b->data[i] <= '9'));
			int is_str = b->data[i] == '"';

			if (is_str)
				e = fz_string_end(b->data, b->len, i);
			else if (is_num)
				e = fz_number_end(b->data, b->len, i);
			else {
				i++;
				continue;
			}
			s = i;
			i = e > s ? e : s + 1;
			if ((want == FZ_TOK_NUMBER && !is_num) || (want == FZ_TOK_STRING && !is_str))
				continue;
			if (pass && seen == pick) {
				*start = s;
				*end = e;
				return 1;
			}
			seen++;
		}
		n = seen;
		if (n == 0)
			return 0;
	}
	return 0;
}

/* A string token of FZ_LONG_STRING bytes inside quotes, in one of a few flavours. */
static char *fz_long_string(struct fz_rng *r, size_t *len)
{
	size_t n = FZ_LONG_STRING, i;
	char *s = malloc(n + 3);
	int flavour = (int)fz_below(r, 4);

	assert_non_null(s);
	s[0] = '"';
	for (i = 1; i <= n; i++) {
		switch (flavour) {
		case 0:
			s[i] = (char)('a' + i % 26);
			break;
		case 1: /* escapes (10240 is a multiple of their 8 bytes) */
			s[i] = "\\u00e9\\n"[i % 8];
			break;
		case 2: /* raw UTF-8 and high bytes */
			s[i] = (char)(0x80 + i % 0x40);
			break;
		default:
			s[i] = (char)(' ' + fz_below(r, 95));
			if (s[i] == '"' || s[i] == '\\')
				s[i] = 'x';
			break;
		}
	}
	s[n + 1] = '"';
	s[n + 2] = '\0';
	*len = n + 2;
	return s;
}

/* d opening brackets (or braces with keys), balanced when balanced != 0. */
static char *fz_nesting(size_t d, int balanced, int objects, size_t *len)
{
	size_t per = objects ? 5 : 1; /* {"a": */
	size_t n = d * per + (balanced ? d + 1 : 0), i, at = 0;
	char *s = malloc(n + 1);

	assert_non_null(s);
	for (i = 0; i < d; i++) {
		if (objects) {
			memcpy(s + at, "{\"a\":", 5);
			at += 5;
		} else {
			s[at++] = '[';
		}
	}
	if (balanced) {
		s[at++] = '1';
		for (i = 0; i < d; i++)
			s[at++] = objects ? '}' : ']';
	}
	s[at] = '\0';
	*len = at;
	return s;
}

enum fz_byte_op {
	FZ_FLIP = 0,
	FZ_INSERT,
	FZ_DELETE,
	FZ_TRUNCATE,
	FZ_DUPLICATE,
	FZ_NUMBER,
	FZ_LONGSTR,
	FZ_NEST,
	FZ_NUL,
	FZ_ESCAPED_NUL,
	FZ_BYTE_OPS
};

static const char *const fz_byte_op_name[FZ_BYTE_OPS] = {
	"flip", "insert", "delete", "truncate", "duplicate", "number", "longstr", "nest", "nul", "\\u0000",
};

static void fz_byte_mutate(struct fz_rng *r, struct fz_buf *b, enum fz_byte_op op)
{
	size_t at = fz_below(r, b->len + 1), s, e, n;
	char c[4];
	char *ins;

	switch (op) {
	case FZ_FLIP:
		if (b->len == 0)
			return;
		at = fz_below(r, b->len);
		if (fz_below(r, 2))
			b->data[at] ^= (char)(1u << fz_below(r, 8));
		else
			b->data[at] = (char)fz_below(r, 256);
		break;
	case FZ_INSERT:
		n = 1 + fz_below(r, 3);
		for (s = 0; s < n; s++)
			c[s] = fz_json_chars[fz_below(r, sizeof(fz_json_chars) - 1)];
		fz_buf_splice(b, at, 0, c, n);
		break;
	case FZ_DELETE:
		fz_buf_splice(b, at, 1 + fz_below(r, fz_below(r, 2) ? 4 : 64), NULL, 0);
		break;
	case FZ_TRUNCATE:
		fz_buf_splice(b, fz_below(r, b->len + 1), b->len, NULL, 0);
		break;
	case FZ_DUPLICATE:
		if (b->len == 0)
			return;
		s = fz_below(r, b->len);
		n = 1 + fz_below(r, b->len - s < 200 ? b->len - s : 200);
		ins = malloc(n);
		assert_non_null(ins);
		memcpy(ins, b->data + s, n);
		fz_buf_splice(b, fz_below(r, 2) ? s + n : fz_below(r, b->len + 1), 0, ins, n);
		free(ins);
		break;
	case FZ_NUMBER:
		if (fz_pick_token(r, b, FZ_TOK_NUMBER, &s, &e)) {
			const char *t = fz_number_tokens[fz_below(r, sizeof(fz_number_tokens) /
			                                            sizeof(fz_number_tokens[0]))];

			fz_buf_splice(b, s, e - s, t, strlen(t));
		}
		break;
	case FZ_LONGSTR:
		if (fz_pick_token(r, b, FZ_TOK_STRING, &s, &e)) {
			ins = fz_long_string(r, &n);
			fz_buf_splice(b, s, e - s, ins, n);
			free(ins);
		}
		break;
	case FZ_NEST: {
		static const size_t depths[] = { 62, 63, 64, 65, 66, 200, 999, 1000, 1001, 3000, 10000 };
		int balanced = (int)fz_below(r, 3) != 0;

		n = depths[fz_below(r, sizeof(depths) / sizeof(depths[0]))];
		ins = fz_nesting(n, balanced, fz_below(r, 4) == 0, &n);
		if (balanced && fz_pick_token(r, b, FZ_TOK_ANY, &s, &e))
			fz_buf_splice(b, s, e - s, ins, n); /* a value becomes a deep one */
		else
			fz_buf_splice(b, at, 0, ins, n);
		free(ins);
		break;
	}
	case FZ_NUL:
		if (fz_below(r, 2) && b->len) {
			b->data[fz_below(r, b->len)] = '\0';
		} else {
			c[0] = '\0';
			fz_buf_splice(b, at, 0, c, 1);
		}
		break;
	case FZ_ESCAPED_NUL:
		if (fz_pick_token(r, b, FZ_TOK_STRING, &s, &e) && e - s >= 2)
			fz_buf_splice(b, s + 1 + fz_below(r, e - s - 1), 0, "\\u0000", 6);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------ structural mutations */

struct fz_item {
	cJSON *item, *parent;
};

static void fz_collect(cJSON *v, cJSON *parent, struct fz_item *items, size_t *n)
{
	cJSON *c;

	if (*n >= FZ_MAX_ITEMS)
		return;
	if (parent) {
		items[*n].item = v;
		items[*n].parent = parent;
		(*n)++;
	}
	for (c = v->child; c; c = c->next)
		fz_collect(c, v, items, n);
}

/* A value of a random other type (or a boundary number). */
static cJSON *fz_random_value(struct fz_rng *r)
{
	static const double nums[] = {
		0, -0.0, -1, 1, 0.5, 2, 3, 7, 8, 16, 64, 1e308, -1e308, 1e-308, 4096, 65536, 2147483648.0,
		9007199254740993.0, 1e15, 1e16, 1.0000000000000002,
	};
	char *s;
	size_t n;
	cJSON *v;

	switch (fz_below(r, 9)) {
	case 0:
		return cJSON_CreateNull();
	case 1:
		return cJSON_CreateTrue();
	case 2:
		return cJSON_CreateFalse();
	case 3:
		return cJSON_CreateNumber(nums[fz_below(r, sizeof(nums) / sizeof(nums[0]))]);
	case 4:
		return cJSON_CreateString(fz_below(r, 2) ? "" : "x");
	case 5:
		s = fz_long_string(r, &n);
		s[n - 1] = '\0';
		v = cJSON_CreateString(s + 1);
		free(s);
		return v;
	case 6:
		return cJSON_CreateArray();
	case 7:
		return cJSON_CreateObject();
	default:
		return cJSON_CreateString(fz_below(r, 2) ? "1" : "consecutive");
	}
}

/* A number near x: scaled, negated, rounded, made fractional or a small integer. */
static double fz_perturb(struct fz_rng *r, double x)
{
	static const double scale[] = { 0.5, 2, 10, 0.1, 1.0001, 1e3, 1e-3, -1, 0, 1e30 };

	switch (fz_below(r, 4)) {
	case 0:
		return x * scale[fz_below(r, sizeof(scale) / sizeof(scale[0]))];
	case 1:
		return (double)(1 + fz_below(r, 16));
	case 2:
		return x + 0.5;
	default:
		return x + (double)fz_below(r, 5) - 2;
	}
}

enum fz_struct_op {
	FZ_S_DELETE = 0,
	FZ_S_RETYPE,
	FZ_S_DUPLICATE,
	FZ_S_RENAME,
	FZ_S_PERTURB,
	FZ_S_SWAP,
	FZ_S_STRING,
	FZ_STRUCT_OPS
};

static const char *const fz_struct_op_name[FZ_STRUCT_OPS] = {
	"s-delete", "s-retype", "s-duplicate", "s-rename", "s-perturb", "s-swap", "s-string",
};

/* Replaces member it of parent by v (owned), keeping its key when parent is an object. */
static void fz_replace(cJSON *parent, cJSON *it, cJSON *v)
{
	assert_non_null(v);
	if (cJSON_IsObject(parent)) {
		/* adding with the key copies it; then the old member goes */
		cJSON_AddItemToObject(parent, it->string, v);
		cJSON_Delete(cJSON_DetachItemViaPointer(parent, it));
	} else {
		assert_true(cJSON_ReplaceItemViaPointer(parent, it, v));
	}
}

/*
 * Applies one structural mutation to the JSON in b (if it parses) and prints
 * it back into b.  Returns 0 when b did not parse or nothing applied.
 */
static int fz_struct_mutate(struct fz_rng *r, struct fz_buf *b, enum fz_struct_op op)
{
	static const char *const keys[] = { "name", "x", "", "repeat", "edges", "p2p", "stage", "pp" };
	struct fz_item *items = calloc(FZ_MAX_ITEMS, sizeof(*items));
	cJSON *root = cJSON_ParseWithLength(b->data, b->len);
	size_t n = 0;
	struct fz_item pick;
	int done = 0;

	assert_non_null(items);
	if (!root)
		goto out;
	fz_collect(root, NULL, items, &n);
	if (n == 0)
		goto out;
	/* numbers and strings for the value ops, anything otherwise */
	pick = items[fz_below(r, n)];
	if (op == FZ_S_PERTURB || op == FZ_S_STRING) {
		size_t tries;

		for (tries = 0; tries < 16; tries++) {
			if (op == FZ_S_PERTURB ? cJSON_IsNumber(pick.item) : cJSON_IsString(pick.item))
				break;
			pick = items[fz_below(r, n)];
		}
	}
	switch (op) {
	case FZ_S_DELETE:
		cJSON_Delete(cJSON_DetachItemViaPointer(pick.parent, pick.item));
		break;
	case FZ_S_RETYPE:
		fz_replace(pick.parent, pick.item, fz_random_value(r));
		break;
	case FZ_S_DUPLICATE: {
		cJSON *d = cJSON_Duplicate(pick.item, 1);

		assert_non_null(d);
		if (cJSON_IsObject(pick.parent))
			cJSON_AddItemToObject(pick.parent, pick.item->string, d); /* a duplicate key */
		else
			cJSON_AddItemToArray(pick.parent, d);
		break;
	}
	case FZ_S_RENAME:
		if (!cJSON_IsObject(pick.parent))
			goto out;
		{
			cJSON *d = cJSON_Duplicate(pick.item, 1);

			assert_non_null(d);
			cJSON_AddItemToObject(pick.parent, keys[fz_below(r, sizeof(keys) / sizeof(keys[0]))], d);
			cJSON_Delete(cJSON_DetachItemViaPointer(pick.parent, pick.item));
		}
		break;
	case FZ_S_PERTURB:
		if (!cJSON_IsNumber(pick.item))
			goto out;
		cJSON_SetNumberValue(pick.item, fz_perturb(r, pick.item->valuedouble));
		break;
	case FZ_S_SWAP: {
		/* move the item to the end of its container (reorders layers, stages, ...) */
		cJSON *d = cJSON_DetachItemViaPointer(pick.parent, pick.item);

		if (cJSON_IsObject(pick.parent))
			cJSON_AddItemToObject(pick.parent, d->string ? d->string : "k", d);
		else
			cJSON_AddItemToArray(pick.parent, d);
		break;
	}
	case FZ_S_STRING: {
		static const char *const strs[] = {
			"", "x", "embed", "encoder.0", "encoder.1", "head", "dp4", "tp2.dp2", "dp8", "tp8",
			"fsdp4", "dp4+rc", "gpipe", "1f1b", "mixed", "sgd", "strided", "tp", "dp", "fsdp",
			"embedding", "encoder", "enc.0", "dec.3", "1", "9", "0",
		};

		if (!cJSON_IsString(pick.item))
			goto out;
		fz_replace(pick.parent, pick.item,
		           cJSON_CreateString(strs[fz_below(r, sizeof(strs) / sizeof(strs[0]))]));
		break;
	}
	default:
		goto out;
	}
	done = fz_buf_set_json(b, root);
out:
	cJSON_Delete(root);
	free(items);
	return done;
}

/* ------------------------------------------------------------ plan mutations */

/*
 * Plan documents only decode when their stages, layers and strategy widths
 * agree, so blind mutations rarely reach plan_evaluate.  These keep the plan
 * well-formed and change what it means: a layer moved to another stage (edges
 * may go backwards, stages may empty), another strategy of the examples'
 * dictionary (with or without recompute), other micro-batch counts, another
 * schedule.
 */
enum fz_plan_op { FZ_P_MOVE = 0, FZ_P_STRATEGY, FZ_P_ALL, FZ_P_BATCH, FZ_P_SCHEDULE, FZ_PLAN_OPS };

static const char *const fz_plan_op_name[FZ_PLAN_OPS] = {
	"p-move", "p-strategy", "p-all", "p-batch", "p-schedule",
};

/* obj.key = v (owned); v is freed when obj has no such key. */
static void fz_set_member(cJSON *obj, const char *key, cJSON *v)
{
	assert_non_null(v);
	if (!cJSON_IsObject(obj) || !cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v))
		cJSON_Delete(v);
}

/* The plan-document form of strategy s, with activation checkpointing when recompute. */
static cJSON *fz_strategy_json(const struct strategy *s, int recompute)
{
	static const char *const dims[STRATEGY_DIMS] = { "dp", "tp", "fsdp" };
	cJSON *o = cJSON_CreateObject(), *pl = cJSON_CreateArray();
	char name[STRATEGY_NAME_MAX + 8];
	int i;

	assert_non_null(o);
	assert_non_null(pl);
	snprintf(name, sizeof(name), "%s%s", s->name, recompute && !s->recompute ? "+rc" : "");
	cJSON_AddStringToObject(o, "name", name);
	for (i = 0; i < STRATEGY_DIMS; i++)
		cJSON_AddNumberToObject(o, dims[i], s->degree[i]);
	cJSON_AddBoolToObject(o, "recompute", recompute || s->recompute);
	for (i = 0; i < s->n_order; i++)
		cJSON_AddItemToArray(pl, cJSON_CreateString(dims[s->order[i]]));
	cJSON_AddItemToObject(o, "placement", pl);
	return o;
}

/*
 * Layer u leaves every stages[].layers list and joins stages[to].layers (kept
 * sorted).  The new list is rebuilt rather than inserted into: Debian's cJSON
 * 1.7.15-1+deb12u4 refuses cJSON_InsertItemInArray() before a middle element.
 */
static void fz_plan_move(cJSON *layers, cJSON *stages, int u, int to)
{
	cJSON *st, *ls, *it, *next, *list;
	int added = 0;

	fz_set_member(cJSON_GetArrayItem(layers, u), "stage", cJSON_CreateNumber(to));
	cJSON_ArrayForEach(st, stages) {
		ls = cJSON_GetObjectItemCaseSensitive(st, "layers");
		for (it = ls ? ls->child : NULL; it; it = next) {
			next = it->next;
			if (cJSON_IsNumber(it) && it->valuedouble == u)
				cJSON_Delete(cJSON_DetachItemViaPointer(ls, it));
		}
	}
	st = cJSON_GetArrayItem(stages, to);
	ls = cJSON_GetObjectItemCaseSensitive(st, "layers");
	if (!cJSON_IsArray(ls))
		return;
	list = cJSON_CreateArray();
	assert_non_null(list);
	cJSON_ArrayForEach(it, ls) {
		if (!added && cJSON_IsNumber(it) && it->valuedouble > u) {
			cJSON_AddItemToArray(list, cJSON_CreateNumber(u));
			added = 1;
		}
		cJSON_AddItemToArray(list, cJSON_Duplicate(it, 1));
	}
	if (!added)
		cJSON_AddItemToArray(list, cJSON_CreateNumber(u));
	fz_set_member(st, "layers", list);
}

/* Applies op to the plan in b (if it parses and has layers and stages); 1 when applied. */
static int fz_plan_mutate(struct fz_rng *r, struct fz_buf *b, const struct strategy_set *set,
                          enum fz_plan_op op)
{
	static const long batches[][2] = {
		{ 1, 32 }, { 2, 16 }, { 4, 8 }, { 8, 4 }, { 16, 2 }, { 32, 1 }, { 4, 4 }, { 3, 8 },
		{ 4, 1000 }, { 1, 1 }, { 64, 64 },
	};
	cJSON *root = cJSON_ParseWithLength(b->data, b->len);
	cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
	cJSON *stages = cJSON_GetObjectItemCaseSensitive(root, "stages"), *it;
	int n_layers = cJSON_GetArraySize(layers), n_stages = cJSON_GetArraySize(stages);
	int recompute = fz_below(r, 4) == 0, done = 0;
	const struct strategy *s = set->count ? &set->items[fz_below(r, set->count)] : NULL;
	size_t k;

	if (!cJSON_IsArray(layers) || !cJSON_IsArray(stages) || n_layers == 0 || n_stages == 0 || !s)
		goto out;
	switch (op) {
	case FZ_P_MOVE:
		fz_plan_move(layers, stages, (int)fz_below(r, (size_t)n_layers),
		             (int)fz_below(r, (size_t)n_stages));
		break;
	case FZ_P_STRATEGY:
		fz_set_member(cJSON_GetArrayItem(layers, (int)fz_below(r, (size_t)n_layers)), "strategy",
		              fz_strategy_json(s, recompute));
		break;
	case FZ_P_ALL:
		cJSON_ArrayForEach(it, layers)
			fz_set_member(it, "strategy", fz_strategy_json(s, recompute));
		break;
	case FZ_P_BATCH:
		k = fz_below(r, sizeof(batches) / sizeof(batches[0]));
		fz_set_member(root, "microbatches", cJSON_CreateNumber((double)batches[k][0]));
		fz_set_member(root, "microbatch_size", cJSON_CreateNumber((double)batches[k][1]));
		break;
	case FZ_P_SCHEDULE:
		it = cJSON_GetObjectItemCaseSensitive(root, "schedule");
		fz_set_member(root, "schedule",
		              cJSON_CreateString(cJSON_IsString(it) && strcmp(it->valuestring, "gpipe") == 0
		                                 ? "1f1b" : "gpipe"));
		break;
	default:
		goto out;
	}
	done = fz_buf_set_json(b, root);
out:
	cJSON_Delete(root);
	return done;
}

/* ------------------------------------------------------------ pipeline checks */

static uint64_t fz_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t fz_cand_hash(const struct cost_candidate *c)
{
	size_t K = cost_k(c), e;
	uint64_t h = 0xcbf29ce484222325ULL;

	h = fz_hash(h, &c->pp, sizeof(c->pp));
	h = fz_hash(h, &c->microbatches, sizeof(c->microbatches));
	h = fz_hash(h, &c->memory_limit_bytes, sizeof(c->memory_limit_bytes));
	h = fz_hash(h, c->inflight, (size_t)c->pp * sizeof(*c->inflight));
	h = fz_hash(h, &K, sizeof(K));
	h = fz_hash(h, c->time_s, c->n_layers * K * sizeof(double));
	h = fz_hash(h, c->memory_fixed_bytes, c->n_layers * K * sizeof(double));
	h = fz_hash(h, c->memory_per_microbatch_bytes, c->n_layers * K * sizeof(double));
	for (e = 0; e < c->n_edges; e++) {
		h = fz_hash(h, &c->edges[e].from, sizeof(size_t));
		h = fz_hash(h, &c->edges[e].to, sizeof(size_t));
		h = fz_hash(h, c->edges[e].same_stage_s, K * K * sizeof(double));
		h = fz_hash(h, c->edges[e].cross_stage_s, K * K * sizeof(double));
	}
	return h;
}

static int fz_finite_nonneg(const double *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isfinite(v[i]) || v[i] < 0)
			return 0;
	return 1;
}

/*
 * 1 when the cluster has a bandwidth under 1 byte/s: the known defect of
 * test_tiny_bandwidth (cluster_validate takes any bandwidth > 0, cost_build
 * then divides by it and returns UNIAP_OK with infinite costs).
 */
static int fz_tiny_bw(const struct cluster_profile *cl)
{
	size_t i, k;

	for (i = 0; i < cl->n_levels; i++)
		if (cl->levels[i].bw_bytes_per_s < 1.0)
			return 1;
	for (k = 0; k < CLUSTER_COLL_COUNT; k++)
		for (i = 0; i < cl->n_coll[k]; i++)
			if (cl->coll[k][i].bw_bytes_per_s < 1.0)
				return 1;
	for (i = 0; i < cl->n_p2p; i++)
		if (cl->p2p[i].bw_bytes_per_s < 1.0)
			return 1;
	return 0;
}

/* 1 when every cost of c (n_layers layers) is finite and >= 0. */
static int fz_costs_finite(const struct cost_candidate *c, size_t n_layers)
{
	size_t K = cost_k(c), e;

	if (!fz_finite_nonneg(c->time_s, n_layers * K) ||
	    !fz_finite_nonneg(c->memory_fixed_bytes, n_layers * K) ||
	    !fz_finite_nonneg(c->memory_per_microbatch_bytes, n_layers * K))
		return 0;
	for (e = 0; e < c->n_edges; e++)
		if (!fz_finite_nonneg(c->edges[e].same_stage_s, K * K) ||
		    !fz_finite_nonneg(c->edges[e].cross_stage_s, K * K))
			return 0;
	return 1;
}

/*
 * What cost_build produced for n_layers layers: finite, >= 0, and acceptable
 * to the optimizer.  Returns 0 (and counts it) for the known defect of
 * fz_tiny_bw(), 1 otherwise.
 */
static int fz_check_candidate(struct fz_ctx *ctx, struct fz_stats *st, const struct cost_candidate *c,
                              const struct cluster_profile *cl, size_t n_layers)
{
	struct uniap_err err = { 0 };
	size_t K = cost_k(c);
	int i;

	if (K < 1 || c->n_layers != n_layers)
		FZ_FAIL(ctx, "cost_build: K %zu, %zu layers (model has %zu)", K, c->n_layers, n_layers);
	if (!fz_costs_finite(c, n_layers)) {
		if (fz_tiny_bw(cl)) {
			st->known_tiny_bw++;
			return 0;
		}
		FZ_FAIL(ctx, "cost_build: a cost is not finite or negative");
	}
	if (isnan(c->memory_limit_bytes) || c->memory_limit_bytes < 0)
		FZ_FAIL(ctx, "cost_build: memory limit %g", c->memory_limit_bytes);
	for (i = 0; i < c->pp; i++)
		if (c->inflight[i] < 1 || c->inflight[i] > c->microbatches)
			FZ_FAIL(ctx, "cost_build: inflight[%d] = %ld", i, c->inflight[i]);
	if (opt_candidate_check(c, &err) != UNIAP_OK)
		FZ_FAIL(ctx, "cost_build made a candidate the optimizer refuses: %s", err.msg);
	return 1;
}

/*
 * plan_evaluate on (stage, strategy) of cand, cross-checked with opt_tpi:
 * a valid plan that fits has a finite TPI equal to opt_tpi's, any other
 * has a reason and opt_tpi INFINITY.  Returns 1 when valid and fits.
 */
static int fz_evaluate(struct fz_ctx *ctx, struct fz_stats *st, const struct cost_candidate *cand,
                       const int *stage, const size_t *strategy)
{
	struct plan_eval ev;
	struct uniap_err err = { 0 };
	uniap_code rc = plan_evaluate(cand, stage, strategy, &ev, &err);
	double audit;
	int i, ok;

	if (rc != UNIAP_OK) {
		if (!fz_names_field(err.msg))
			FZ_FAIL(ctx, "plan_evaluate: %s: \"%s\" names no field", uniap_code_name(rc), err.msg);
		return 0;
	}
	st->evaluated++;
	ok = ev.valid && ev.fits;
	if (!isfinite(ev.tpi_s) || ev.tpi_s < 0 || ev.pp != cand->pp)
		FZ_FAIL(ctx, "plan_evaluate: tpi %g, pp %d", ev.tpi_s, ev.pp);
	for (i = 0; i < ev.pp; i++)
		if (!isfinite(ev.stage_time_s[i]) || !isfinite(ev.stage_memory_bytes[i]) ||
		    (i + 1 < ev.pp && !isfinite(ev.comm_time_s[i])))
			FZ_FAIL(ctx, "plan_evaluate: stage %d not finite", i);
	if (!ok && ev.reason[0] == '\0')
		FZ_FAIL(ctx, "plan_evaluate: valid %d fits %d without a reason", ev.valid, ev.fits);
	if (ok && ev.reason[0] != '\0')
		FZ_FAIL(ctx, "plan_evaluate: a feasible plan with reason \"%s\"", ev.reason);
	audit = opt_tpi(cand, stage, strategy);
	if (ok ? fabs(audit - ev.tpi_s) > 1e-9 * fmax(1.0, ev.tpi_s) : !isinf(audit))
		FZ_FAIL(ctx, "opt_tpi %.17g vs plan_evaluate %.17g (valid %d, fits %d)", audit, ev.tpi_s,
		        ev.valid, ev.fits);
	if (!ok)
		st->infeasible++;
	plan_eval_release(&ev);
	return ok;
}

/* opt_solve on a small candidate not seen before, within this kind's budget. */
static void fz_solve(struct fz_ctx *ctx, struct fz_stats *st, const struct cost_candidate *cand)
{
	struct opt_options o;
	struct opt_result res;
	struct uniap_err err = { 0 };
	uint64_t h;
	size_t i;
	int chain;
	uniap_code rc;

	if (cost_k(cand) > FZ_SOLVE_MAX_K || cand->n_layers > FZ_SOLVE_MAX_LAYERS)
		return;
	h = fz_cand_hash(cand);
	for (i = 0; i < ctx->n_seen; i++)
		if (ctx->seen[i] == h)
			return;
	chain = opt_is_chain(cand) != 0;
	if (st->solves_by_path[chain] >= FZ_SOLVE_MAX_PER_PATH || ctx->n_seen >= FZ_SEEN_MAX ||
	    st->solve_s[chain] >= (chain ? FZ_SOLVE_CHAIN_BUDGET_S : FZ_SOLVE_MILP_BUDGET_S)) {
		st->solve_skipped++;
		return;
	}
	ctx->seen[ctx->n_seen++] = h;
	opt_options_init(&o);
	o.time_limit_s = FZ_SOLVE_TIME_LIMIT_S;
	opt_result_init(&res);
	rc = opt_solve(cand, &o, &res, &err);
	st->solves++;
	st->solves_by_path[chain]++;
	st->solve_s[chain] += res.solve_s > 0 ? res.solve_s : 0;
	if (rc != UNIAP_OK) {
		st->solve_errors++;
		if (res.status != OPT_ERROR || !fz_names_field(err.msg))
			FZ_FAIL(ctx, "opt_solve: %s (status %s): \"%s\"", uniap_code_name(rc),
			        opt_status_name(res.status), err.msg);
		goto out;
	}
	if (res.status == OPT_OPTIMAL || res.status == OPT_FEASIBLE) {
		if (!res.stage || !res.strategy || res.n_layers != cand->n_layers || !isfinite(res.tpi_s))
			FZ_FAIL(ctx, "opt_solve: %s without a finite plan (tpi %g)",
			        opt_status_name(res.status), res.tpi_s);
		if (fabs(opt_tpi(cand, res.stage, res.strategy) - res.tpi_s) > 1e-9 * fmax(1.0, res.tpi_s))
			FZ_FAIL(ctx, "opt_solve: tpi %.17g is not the plan's audit TPI", res.tpi_s);
		if (!fz_evaluate(ctx, st, cand, res.stage, res.strategy))
			FZ_FAIL(ctx, "opt_solve: its %s plan is not valid and within memory",
			        opt_status_name(res.status));
		st->solve_plans++;
	} else if (res.status != OPT_INFEASIBLE && res.status != OPT_UNKNOWN) {
		FZ_FAIL(ctx, "opt_solve: unexpected status %s", opt_status_name(res.status));
	}
out:
	opt_result_release(&res);
}

/* cost_build for pp 1 and 2, c 1 and 2, batch 8 on a (cluster, model) pair; solves the small ones. */
static void fz_price(struct fz_ctx *ctx, struct fz_stats *st, const struct cluster_profile *cl,
                     const struct model_profile *m, long index)
{
	int pp, devices = cluster_devices(cl);
	long c;

	for (pp = 1; pp <= 2; pp++) {
		if (devices % pp != 0 || (size_t)pp > m->n_layers)
			continue;
		for (c = 1; c <= 2; c++) {
			struct cost_options o = {
				.batch = 8, .pp = pp, .microbatches = c,
				.schedule = (index + pp) % 2 ? COST_1F1B : COST_GPIPE,
				.recompute = (int)((index >> 1) % 2), .filter = COST_FILTER_ALL,
			};
			struct cost_candidate cand;
			struct uniap_err err = { 0 };
			uniap_code rc = cost_build(cl, m, &o, &cand, &err);

			if (rc != UNIAP_OK) {
				st->cand_errors++;
				if (rc == UNIAP_E_NOMEM || !fz_names_field(err.msg))
					FZ_FAIL(ctx, "cost_build pp %d c %ld: %s: \"%s\"", pp, c,
					        uniap_code_name(rc), err.msg);
				cost_candidate_release(&cand);
				continue;
			}
			st->cand_built++;
			if (fz_check_candidate(ctx, st, &cand, cl, m->n_layers))
				fz_solve(ctx, st, &cand);
			cost_candidate_release(&cand);
		}
	}
}

/* Resolves and evaluates plan p against cand (borrowed). */
static void fz_plan_against(struct fz_ctx *ctx, struct fz_stats *st, const struct plan_doc *p,
                            const struct cost_candidate *cand)
{
	struct uniap_err err = { 0 };
	int *stage = calloc(cand->n_layers ? cand->n_layers : 1, sizeof(*stage));
	size_t *strategy = calloc(cand->n_layers ? cand->n_layers : 1, sizeof(*strategy));
	uniap_code rc;

	assert_non_null(stage);
	assert_non_null(strategy);
	rc = plan_doc_resolve(p, cand, stage, strategy, &err);
	if (rc != UNIAP_OK) {
		st->resolve_errors++;
		if (rc != UNIAP_E_INVALID || !fz_rooted(err.msg, "plan") || !fz_names_field(err.msg))
			FZ_FAIL(ctx, "plan_doc_resolve: %s: \"%s\"", uniap_code_name(rc), err.msg);
	} else {
		st->resolved++;
		fz_evaluate(ctx, st, cand, stage, strategy);
	}
	free(stage);
	free(strategy);
}

/*
 * A plan mutant: against the examples' candidate, then (when its pp, c, size,
 * schedule or recompute differ) against a candidate built for its own
 * parameters on the same cluster and model, as `uniap evaluate` does.
 */
static void fz_plan(struct fz_ctx *ctx, struct fz_stats *st, const struct plan_doc *p,
                    const struct cluster_profile *cl, const struct model_profile *m)
{
	const struct plan_doc *ref = &ctx->plan_ref;
	int rc_flag = plan_doc_recompute(p);
	struct cost_options o = {
		.pp = p->pp, .microbatches = p->microbatches, .schedule = p->schedule,
		.recompute = rc_flag, .filter = COST_FILTER_ALL,
	};
	struct cost_candidate cand;
	struct uniap_err err = { 0 };
	uniap_code rc;

	fz_plan_against(ctx, st, p, &ctx->plan_cand);
	if (p->pp == ref->pp && p->microbatches == ref->microbatches &&
	    p->microbatch_size == ref->microbatch_size && p->schedule == ref->schedule &&
	    rc_flag == plan_doc_recompute(ref))
		return;
	/* batch = c x size, kept small: the decoder allows each up to 1e15 */
	if (p->microbatches > 4096 || p->microbatch_size > 4096)
		return;
	o.batch = p->microbatches * p->microbatch_size;
	rc = cost_build(cl, m, &o, &cand, &err);
	if (rc != UNIAP_OK) {
		st->cand_errors++;
		if (rc == UNIAP_E_NOMEM || !fz_names_field(err.msg))
			FZ_FAIL(ctx, "cost_build for the plan: %s: \"%s\"", uniap_code_name(rc), err.msg);
		cost_candidate_release(&cand);
		return;
	}
	st->cand_built++;
	if (fz_check_candidate(ctx, st, &cand, cl, m->n_layers))
		fz_plan_against(ctx, st, p, &cand);
	cost_candidate_release(&cand);
}

/* ------------------------------------------------------------ one mutant */

/*
 * Decodes text as kind and runs the pipeline on what decodes.  other is the
 * index of the unmutated example of the other kind to pair it with.
 */
static uniap_code fz_run(struct fz_ctx *ctx, enum fz_kind kind, const char *text, size_t len, size_t other)
{
	struct fz_stats *st = &ctx->stats[kind];
	struct uniap_err err;
	struct cluster_profile c;
	struct model_profile m;
	struct plan_doc p;
	uniap_code rc;
	int zero;

	memset(&err, 0, sizeof(err));
	ctx->cur_text = text;
	ctx->cur_len = len;
	if (ctx->trace)
		fprintf(stderr, "fuzz: %s #%ld %s (%zu bytes)\n", ctx->cur_seed, ctx->cur_index,
		        ctx->cur_recipe, len);
	switch (kind) {
	case FZ_CLUSTER:
		rc = jdec_cluster(text, len, &c, &err);
		zero = fz_all_zero(&c, sizeof(c));
		break;
	case FZ_MODEL:
		rc = jdec_model(text, len, &m, &err);
		zero = fz_all_zero(&m, sizeof(m));
		break;
	default:
		rc = jdec_plan(text, len, &p, &err);
		zero = fz_all_zero(&p, sizeof(p));
		break;
	}
	st->mutants++;
	st->outcome[(unsigned)rc < UNIAP_CODE_COUNT ? rc : UNIAP_CODE_COUNT]++;
	if ((unsigned)rc >= UNIAP_CODE_COUNT)
		FZ_FAIL(ctx, "decoder returned %d", (int)rc);
	if (rc != UNIAP_OK) {
		if (err.msg[0] == '\0')
			FZ_FAIL(ctx, "%s: empty message", uniap_code_name(rc));
		if (rc != UNIAP_E_INVALID && rc != UNIAP_E_MALFORMED && rc != UNIAP_E_LIMIT)
			FZ_FAIL(ctx, "unexpected code %s: \"%s\"", uniap_code_name(rc), err.msg);
		if (!fz_rooted(err.msg, fz_root[kind]))
			FZ_FAIL(ctx, "%s: \"%s\" does not start with \"%s\"", uniap_code_name(rc), err.msg,
			        fz_root[kind]);
		if (!zero)
			FZ_FAIL(ctx, "%s: output not released and zeroed on failure", uniap_code_name(rc));
		return rc;
	}
	switch (kind) {
	case FZ_CLUSTER:
		fz_price(ctx, st, &c, &ctx->models[other % ctx->n_models], ctx->cur_index);
		cluster_release(&c);
		break;
	case FZ_MODEL:
		fz_price(ctx, st, &ctx->clusters[other % ctx->n_clusters], &m, ctx->cur_index);
		model_release(&m);
		break;
	default:
		fz_plan(ctx, st, &p, &ctx->clusters[ctx->plan_cluster], &ctx->models[ctx->plan_model]);
		plan_doc_release(&p);
		break;
	}
	return rc;
}

/* ------------------------------------------------------------ setup */

static int fz_setup(void **state)
{
	struct fz_ctx *ctx = calloc(1, sizeof(*ctx));
	DIR *d = opendir(EXAMPLES_DIR);
	struct dirent *e;
	struct uniap_err err = { 0 };
	const char *trace = getenv("UNIAP_FUZZ_TRACE");
	struct cost_options o = { 0 };
	long ic, im, ip;
	size_t i;

	if (!ctx || !d) {
		print_error("cannot open %s (run from the repository root)\n", EXAMPLES_DIR);
		free(ctx);
		if (d)
			closedir(d);
		return -1;
	}
	alarm(FZ_ALARM_S);
	ctx->trace = trace && *trace && strcmp(trace, "0") != 0;
	while ((e = readdir(d)) != NULL && ctx->n_seeds < FZ_MAX_SEEDS) {
		struct fz_seed *s = &ctx->seeds[ctx->n_seeds];
		size_t n = strlen(e->d_name);
		char path[512];
		int k;

		if (n < 5 || n >= sizeof(s->name) || strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		for (k = 0; k < FZ_KINDS; k++)
			if (strncmp(e->d_name, fz_kind_file_prefix((enum fz_kind)k),
			            strlen(fz_kind_file_prefix((enum fz_kind)k))) == 0)
				break;
		if (k == FZ_KINDS)
			continue;
		memcpy(s->name, e->d_name, n + 1);
		s->kind = (enum fz_kind)k;
		snprintf(path, sizeof(path), "%s/%s", EXAMPLES_DIR, e->d_name);
		if (jdec_read_file(path, FZ_EXAMPLE_MAX_BYTES, &s->text, &s->len, &err) != UNIAP_OK) {
			print_error("%s\n", err.msg);
			closedir(d);
			*state = ctx;
			return -1;
		}
		ctx->n_seeds++;
	}
	closedir(d);
	*state = ctx;
	/* readdir order is arbitrary: sort, so the same seed gets the same mutants everywhere */
	qsort(ctx->seeds, ctx->n_seeds, sizeof(ctx->seeds[0]), fz_seed_cmp);
	for (i = 0; i < ctx->n_seeds; i++) {
		const struct fz_seed *s = &ctx->seeds[i];

		if (s->kind == FZ_CLUSTER) {
			if (jdec_cluster(s->text, s->len, &ctx->clusters[ctx->n_clusters], &err) != UNIAP_OK)
				goto bad;
			ctx->n_clusters++;
		} else if (s->kind == FZ_MODEL) {
			if (jdec_model(s->text, s->len, &ctx->models[ctx->n_models], &err) != UNIAP_OK)
				goto bad;
			ctx->n_models++;
		}
	}
	/* the plan example's own cluster and model: their index among the decoded examples */
	ic = fz_find_seed(ctx, "cluster-8gpu-nvlink.json");
	im = fz_find_seed(ctx, "model-bert-chain.json");
	ip = fz_find_seed(ctx, "plan-example.json");
	if (ic < 0 || im < 0 || ip < 0) {
		print_error("%s: the cluster-8gpu-nvlink, model-bert-chain and plan-example seeds are needed\n",
		            EXAMPLES_DIR);
		return -1;
	}
	ctx->plan_cluster = fz_kind_index(ctx, (size_t)ic);
	ctx->plan_model = fz_kind_index(ctx, (size_t)im);
	if (jdec_plan(ctx->seeds[ip].text, ctx->seeds[ip].len, &ctx->plan_ref, &err) != UNIAP_OK)
		goto bad;
	o.batch = ctx->plan_ref.microbatches * ctx->plan_ref.microbatch_size;
	o.pp = ctx->plan_ref.pp;
	o.microbatches = ctx->plan_ref.microbatches;
	o.schedule = ctx->plan_ref.schedule;
	o.recompute = plan_doc_recompute(&ctx->plan_ref);
	if (cost_build(&ctx->clusters[ctx->plan_cluster], &ctx->models[ctx->plan_model], &o,
	               &ctx->plan_cand, &err) != UNIAP_OK)
		goto bad;
	return 0;
bad:
	print_error("an unmutated example fails: %s\n", err.msg);
	return -1;
}

static int fz_teardown(void **state)
{
	struct fz_ctx *ctx = *state;
	size_t i;

	alarm(0);
	if (!ctx)
		return 0;
	for (i = 0; i < ctx->n_seeds; i++)
		free(ctx->seeds[i].text);
	for (i = 0; i < ctx->n_clusters; i++)
		cluster_release(&ctx->clusters[i]);
	for (i = 0; i < ctx->n_models; i++)
		model_release(&ctx->models[i]);
	cost_candidate_release(&ctx->plan_cand);
	plan_doc_release(&ctx->plan_ref);
	free(ctx);
	return 0;
}

/* ------------------------------------------------------------ the fuzz runs */

/* One line per kind; and the fuzzer must have both accepted and rejected something. */
static void fz_summary(const struct fz_ctx *ctx, enum fz_kind kind)
{
	const struct fz_stats *st = &ctx->stats[kind];
	long rejected = st->mutants - st->outcome[UNIAP_OK];

	printf("fuzz %s: %ld mutants: %ld ok, %ld invalid, %ld malformed, %ld limit; "
	       "%ld candidates (%ld refused), %ld solves (%ld plans, %ld errors, %ld skipped; %ld chains in %.2f s, %ld others in %.2f s); "
	       "%ld resolved (%ld refused), %ld evaluated (%ld infeasible); known defects: %ld\n",
	       fz_root[kind], st->mutants, st->outcome[UNIAP_OK], st->outcome[UNIAP_E_INVALID],
	       st->outcome[UNIAP_E_MALFORMED], st->outcome[UNIAP_E_LIMIT], st->cand_built,
	       st->cand_errors, st->solves, st->solve_plans, st->solve_errors, st->solve_skipped,
	       st->solves_by_path[1], st->solve_s[1], st->solves_by_path[0], st->solve_s[0],
	       st->resolved, st->resolve_errors, st->evaluated, st->infeasible, st->known_tiny_bw);
	fflush(stdout);
	assert_true(st->outcome[UNIAP_OK] > 0);
	assert_true(rejected > 0);
	assert_true(st->outcome[UNIAP_E_INVALID] > 0);
	assert_true(st->outcome[UNIAP_E_MALFORMED] > 0);
	assert_true(st->outcome[UNIAP_E_LIMIT] > 0);
	if (kind != FZ_PLAN)
		assert_true(st->cand_built > 0);
	else
		assert_true(st->evaluated > 0);
}

static void fz_recipe_add(struct fz_ctx *ctx, const char *op)
{
	size_t n = strlen(ctx->cur_recipe);

	snprintf(ctx->cur_recipe + n, sizeof(ctx->cur_recipe) - n, "%s%s", n ? "+" : "", op);
}

static void fz_kind(void **state, enum fz_kind kind)
{
	struct fz_ctx *ctx = *state;
	struct fz_buf b = { 0 };
	size_t i, seen_kind = 0, other = 0;

	for (i = 0; i < ctx->n_seeds; i++) {
		const struct fz_seed *s = &ctx->seeds[i];
		struct fz_rng r = { FZ_SEED ^ (uint64_t)(i + 1) * 0x2545f4914f6cdd1dULL };
		long j;
		size_t t;

		if (s->kind != kind)
			continue;
		ctx->cur_seed = s->name;
		/* the unmutated seed decodes, and goes through the pipeline too */
		ctx->cur_index = -1;
		snprintf(ctx->cur_recipe, sizeof(ctx->cur_recipe), "unmutated");
		if (fz_run(ctx, kind, s->text, s->len, other++) != UNIAP_OK)
			FZ_FAIL(ctx, "the unmutated seed does not decode");
		/* truncations at every length (each is a prefix: malformed or, at full length, ok) */
		if (seen_kind++ < FZ_TRUNCATE_PER_KIND) {
			for (t = 0; t < s->len; t++) {
				ctx->cur_index = -2 - (long)t;
				snprintf(ctx->cur_recipe, sizeof(ctx->cur_recipe), "truncate to %zu", t);
				fz_run(ctx, kind, s->text, t, other++);
			}
		}
		for (j = 0; j < FZ_MUTANTS_PER_SEED; j++) {
			int stacked = 1 + (int)fz_below(&r, 3), k;

			ctx->cur_index = j;
			ctx->cur_recipe[0] = '\0';
			fz_buf_set(&b, s->text, s->len);
			/* about half the mutants start with a structural change; plans often get
			 * one to three changes that keep them well-formed */
			if (kind == FZ_PLAN && fz_below(&r, 4) == 0) {
				int n_ops = 1 + (int)fz_below(&r, 3), o;

				for (o = 0; o < n_ops; o++) {
					enum fz_plan_op op = (enum fz_plan_op)fz_below(&r, FZ_PLAN_OPS);

					if (fz_plan_mutate(&r, &b, &ctx->plan_cand.strategies, op))
						fz_recipe_add(ctx, fz_plan_op_name[op]);
				}
				stacked = (int)fz_below(&r, 8) == 0;
			} else if (fz_below(&r, 2)) {
				enum fz_struct_op op = (enum fz_struct_op)fz_below(&r, FZ_STRUCT_OPS);

				if (fz_struct_mutate(&r, &b, op))
					fz_recipe_add(ctx, fz_struct_op_name[op]);
				stacked = (int)fz_below(&r, 4) == 0; /* mostly left well-formed */
			}
			for (k = 0; k < stacked; k++) {
				enum fz_byte_op op = (enum fz_byte_op)fz_below(&r, FZ_BYTE_OPS);

				fz_byte_mutate(&r, &b, op);
				fz_recipe_add(ctx, fz_byte_op_name[op]);
			}
			fz_run(ctx, kind, b.data, b.len, other++);
		}
	}
	fz_buf_release(&b);
	fz_summary(ctx, kind);
}

static void test_fuzz_cluster(void **state)
{
	fz_kind(state, FZ_CLUSTER);
}

static void test_fuzz_model(void **state)
{
	fz_kind(state, FZ_MODEL);
}

static void test_fuzz_plan(void **state)
{
	fz_kind(state, FZ_PLAN);
}

/* ------------------------------------------------------------ fixed cases */

/*
 * Hand-made inputs at the edges the random mutants hit rarely, as a table:
 * every kind gets each of them (the pipeline too when one decodes).
 */
static void test_fixed_cases(void **state)
{
	struct fz_ctx *ctx = *state;
	static const struct {
		const char *name;
		const char *text;
		size_t len; /* 0: strlen(text) */
		uniap_code want; /* UNIAP_CODE_COUNT: any outcome that passes the checks */
	} cases[] = {
		{ "empty", "", 0, UNIAP_E_MALFORMED },
		{ "nul only", "\0", 1, UNIAP_E_MALFORMED },
		{ "nul inside", "{\"name\"\0:1}", 11, UNIAP_E_MALFORMED },
		{ "whitespace", " \n\t ", 0, UNIAP_E_MALFORMED },
		{ "null", "null", 0, UNIAP_E_INVALID },
		{ "number", "1e400", 0, UNIAP_CODE_COUNT },
		{ "array", "[]", 0, UNIAP_E_INVALID },
		{ "empty object", "{}", 0, UNIAP_E_INVALID },
		{ "trailing garbage", "{} x", 0, UNIAP_E_MALFORMED },
		{ "two values", "{}{}", 0, UNIAP_E_MALFORMED },
		{ "unterminated string", "{\"name", 0, UNIAP_E_MALFORMED },
		{ "bad escape", "{\"name\":\"\\x\"}", 0, UNIAP_E_MALFORMED },
		{ "lone surrogate", "{\"name\":\"\\ud800\"}", 0, UNIAP_CODE_COUNT },
		{ "escaped nul key", "{\"\\u0000\":1}", 0, UNIAP_E_INVALID },
		{ "nan token", "{\"pp\":NaN}", 0, UNIAP_E_MALFORMED },
		{ "bom", "\xef\xbb\xbf{}", 0, UNIAP_CODE_COUNT },
	};
	size_t i;
	int k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (k = 0; k < FZ_KINDS; k++) {
			size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
			uniap_code rc;

			ctx->cur_seed = "fixed";
			ctx->cur_index = (long)i;
			snprintf(ctx->cur_recipe, sizeof(ctx->cur_recipe), "%s as %s", cases[i].name,
			         fz_root[k]);
			rc = fz_run(ctx, (enum fz_kind)k, cases[i].text, len, i);
			if (cases[i].want != UNIAP_CODE_COUNT && rc != cases[i].want)
				FZ_FAIL(ctx, "got %s, want %s", uniap_code_name(rc),
				        uniap_code_name(cases[i].want));
		}
}

/* Nesting just under and over the decoder's limit and over cJSON's own, as every kind. */
static void test_deep_nesting(void **state)
{
	struct fz_ctx *ctx = *state;
	static const struct {
		size_t depth;
		int balanced, objects;
		uniap_code want;
	} cases[] = {
		{ JDEC_MAX_DEPTH, 1, 0, UNIAP_E_INVALID },     /* a deep array is only the wrong type */
		{ JDEC_MAX_DEPTH + 1, 1, 0, UNIAP_E_LIMIT },
		{ JDEC_MAX_DEPTH + 1, 1, 1, UNIAP_E_LIMIT },
		{ 999, 1, 0, UNIAP_E_LIMIT },
		{ 1001, 1, 0, UNIAP_E_MALFORMED },           /* cJSON's CJSON_NESTING_LIMIT */
		{ 5000, 1, 1, UNIAP_E_MALFORMED },
		{ 100000, 0, 0, UNIAP_E_MALFORMED },
	};
	size_t i, len;
	int k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = fz_nesting(cases[i].depth, cases[i].balanced, cases[i].objects, &len);

		for (k = 0; k < FZ_KINDS; k++) {
			uniap_code rc;

			ctx->cur_seed = "nesting";
			ctx->cur_index = (long)i;
			snprintf(ctx->cur_recipe, sizeof(ctx->cur_recipe), "depth %zu as %s", cases[i].depth,
			         fz_root[k]);
			rc = fz_run(ctx, (enum fz_kind)k, text, len, i);
			if (rc != cases[i].want) {
				free(text);
				FZ_FAIL(ctx, "got %s, want %s", uniap_code_name(rc),
				        uniap_code_name(cases[i].want));
			}
		}
		free(text);
	}
}

/* ------------------------------------------------------------ defects found */

/*
 * DEFECT (core/model.c cluster_validate / core/cost.c cost_build): a bandwidth
 * is only required to be > 0, so 1e-320 GB/s (a subnormal, or anything under
 * about 1e-290 B/s) is accepted, and cost_build divides bytes by it
 * (cost_collective_s) and returns UNIAP_OK with time_s = inf.  opt_solve then
 * refuses the candidate, `uniap costs` would print infinite costs.  Expected:
 * cluster_validate refuses a bandwidth under a sane minimum (naming
 * cluster.hierarchy[0].bandwidth_gb_per_s), or cost_build fails naming it.
 * Skipped until fixed; the fuzzer counts these as "known defects".
 */
static void test_tiny_bandwidth(void **state)
{
	static const char cluster_json[] =
		"{\"nodes\":1,\"devices_per_node\":2,"
		"\"device\":{\"memory_bytes\":1e10,\"reserved_bytes\":0},"
		"\"hierarchy\":[{\"name\":\"node\",\"devices\":2,\"bandwidth_gb_per_s\":1e-320}],"
		"\"overlap_coefficient\":1}";
	static const char model_json[] =
		"{\"precision\":\"fp32\",\"optimizer\":\"adam\","
		"\"layer_types\":[{\"name\":\"t\",\"forward_s_per_sample\":0.001,\"parameters\":1000,"
		"\"activation_bytes_per_sample\":1000,\"output_bytes_per_sample\":1000,"
		"\"tp_allreduces_per_pass\":1}],"
		"\"graph\":{\"layers\":[{\"name\":\"l\",\"type\":\"t\",\"repeat\":2}]}}";
	struct cluster_profile c;
	struct model_profile m;
	struct cost_candidate cand;
	struct cost_options o = { .batch = 2, .pp = 1, .microbatches = 1, .schedule = COST_1F1B };
	struct uniap_err err = { 0 };
	uniap_code rc;
	size_t k;
	int finite;

	(void)state;
	rc = jdec_cluster(cluster_json, sizeof(cluster_json) - 1, &c, &err);
	if (rc != UNIAP_OK) {
		/* the fix may refuse it here: then the message names the bandwidth */
		assert_int_equal(rc, UNIAP_E_INVALID);
		assert_non_null(strstr(err.msg, "bandwidth_gb_per_s"));
		return;
	}
	rc = jdec_model(model_json, sizeof(model_json) - 1, &m, &err);
	if (rc != UNIAP_OK)
		cluster_release(&c);
	assert_int_equal(rc, UNIAP_OK);
	rc = cost_build(&c, &m, &o, &cand, &err);
	finite = rc == UNIAP_OK ? fz_costs_finite(&cand, m.n_layers) : fz_names_field(err.msg);
	for (k = 0; rc == UNIAP_OK && k < cost_k(&cand); k++)
		print_error("time_s[0][%s] = %g\n", cand.strategies.items[k].name, cand.time_s[k]);
	cost_candidate_release(&cand);
	model_release(&m);
	cluster_release(&c);
	assert_true(finite); /* fails today: UNIAP_OK, time_s = inf for fsdp2, tp2 and dp2 */
}

/*
 * DEFECT (json/jdecode.c, all three decoders): cJSON decodes "\u0000" inside
 * a string and the decoder reads keys and names as C strings, so everything
 * after an escaped NUL is silently dropped: the key "nodes\u0000xyz" is taken
 * for "nodes" (unknown-key detection bypassed) and the name "a\u0000b" becomes
 * "a".  Expected: UNIAP_E_INVALID naming the member (e.g. "cluster.nodes\u0000xyz:
 * unknown key" or "...: must not contain a nul character").  Skipped until fixed.
 */
static void test_escaped_nul_in_key(void **state)
{
	static const char text[] =
		"{\"nodes\\u0000xyz\":1,\"devices_per_node\":2,"
		"\"device\":{\"memory_bytes\":1e10,\"reserved_bytes\":0},"
		"\"hierarchy\":[{\"name\":\"node\",\"devices\":2,\"bandwidth_gb_per_s\":1}],"
		"\"overlap_coefficient\":1}";
	struct cluster_profile c;
	struct uniap_err err = { 0 };
	uniap_code rc;

	(void)state;
	rc = jdec_cluster(text, sizeof(text) - 1, &c, &err);
	cluster_release(&c);
	assert_int_equal(rc, UNIAP_E_INVALID); /* UNIAP_OK today, with nodes = 1 */
	assert_true(fz_rooted(err.msg, "cluster"));
}

/*
 * DEFECT (cli/cmd_evaluate.c:46, evaluate_plan; json/jdecode.c lets it
 * through): a plan may state microbatches and microbatch_size up to 1e15 each
 * (JDEC_MAX_COUNT), and `uniap evaluate` multiplies them as longs: with both
 * at 1e15 that is signed overflow (UBSan: "1000000000000000 *
 * 1000000000000000 cannot be represented in type 'long int'", exit 1 under
 * build/asan).  Reproduce: plan-example.json with both set to 1e15, then
 * build/asan/uniap evaluate --cluster schema/examples/cluster-8gpu-nvlink.json
 * --model schema/examples/model-bert-chain.json --batch 32 --plan FILE.
 * Expected: the decoder caps the product (plan.microbatch_size naming it) or
 * the CLI multiplies without overflow.  This checks the decoder side (drop it
 * if the fix lands in the CLI instead).  Skipped until fixed.
 */
static void test_plan_batch_product_overflows(void **state)
{
	struct fz_ctx *ctx = *state;
	long ip = fz_find_seed(ctx, "plan-example.json");
	cJSON *root;
	char *text;
	struct plan_doc p;
	struct uniap_err err = { 0 };
	long product = 0;
	int overflows = 0;
	uniap_code rc;

	assert_true(ip >= 0);
	root = cJSON_ParseWithLength(ctx->seeds[ip].text, ctx->seeds[ip].len);
	assert_non_null(root);
	fz_set_member(root, "microbatches", cJSON_CreateNumber(1e15));
	fz_set_member(root, "microbatch_size", cJSON_CreateNumber(1e15));
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	assert_non_null(text);
	rc = jdec_plan(text, strlen(text), &p, &err);
	cJSON_free(text);
	if (rc == UNIAP_OK)
		overflows = __builtin_mul_overflow(p.microbatches, p.microbatch_size, &product);
	plan_doc_release(&p);
	assert_false(overflows); /* today: decoded, and 1e15 x 1e15 overflows a long */
	if (rc != UNIAP_OK)
		assert_true(fz_rooted(err.msg, "plan"));
}

/*
 * DEFECT (core/cost.c:104, cost_ceil_div called by cost_build): cost_build
 * checks batch >= 1 but not an upper bound, so batch = LONG_MAX (pp 1, c 1)
 * computes LONG_MAX + width - 1: signed overflow (UBSan aborts the ASan
 * build).  The CLI caps --batch at 2^30, so only library callers reach it.
 * Expected: UNIAP_E_ARG naming batch.  Skipped until fixed.
 */
static void test_cost_build_huge_batch(void **state)
{
	struct fz_ctx *ctx = *state;
	struct cost_options o = { .batch = LONG_MAX, .pp = 1, .microbatches = 1, .schedule = COST_1F1B };
	struct cost_candidate cand;
	struct uniap_err err = { 0 };
	uniap_code rc;

	rc = cost_build(&ctx->clusters[ctx->plan_cluster], &ctx->models[ctx->plan_model], &o, &cand, &err);
	cost_candidate_release(&cand);
	assert_int_equal(rc, UNIAP_E_ARG);
	assert_true(fz_names_field(err.msg));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_cases),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_fuzz_cluster),
		cmocka_unit_test(test_fuzz_model),
		cmocka_unit_test(test_fuzz_plan),
		cmocka_unit_test(test_tiny_bandwidth),
		cmocka_unit_test(test_escaped_nul_in_key),
		cmocka_unit_test(test_plan_batch_product_overflows),
		cmocka_unit_test(test_cost_build_huge_batch),
	};

	return cmocka_run_group_tests(tests, fz_setup, fz_teardown);
}
