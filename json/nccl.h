/*
 * nccl.h - imports the text output of nccl-tests (NVIDIA/nccl-tests:
 * all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf,
 * sendrecv_perf) as measured bandwidths overlaid on a base cluster document
 * (schema/cluster.schema.json).  docs/nccl.md states the grammar read, how
 * the collective kind, the group size and the placement are decided, and
 * which bandwidth of the table is kept.
 *
 * Every line is checked: a line that is neither a '#' header, NCCL's own
 * debug output ("NCCL INFO"/"NCCL WARN") nor a well-formed data row is an
 * error whose message names the output and the line ("nccl-tests: line 57:
 * busbw: must be a number, got \"x\"").  Rows that failed validation
 * (#wrong != 0), sizes that do not increase, rank lists with holes are
 * errors too.  The document produced is checked with jdec_cluster_json()
 * before it is returned, so it always decodes.
 *
 * Result codes: UNIAP_E_INVALID (the output or the base breaks a rule),
 * UNIAP_E_ARG (a choice the caller must make: the kind of an all-gather /
 * all-to-all run, the rank count), UNIAP_E_LIMIT (a size cap), UNIAP_E_NOMEM.
 *
 * Ownership: all inputs are borrowed.  On success *out is a new cJSON tree
 * owned by the caller (cJSON_Delete); on failure *out is NULL.
 *
 * Never: print, exit, read files, or keep state between calls.
 */
#ifndef UNIAP_NCCL_H
#define UNIAP_NCCL_H

#include <stddef.h>

#include "err.h"

struct cJSON;

/* Largest output read (bytes), longest line, most outputs in one import. */
#define NCCL_MAX_TEXT_BYTES ((size_t)4 << 20)
#define NCCL_MAX_LINE_BYTES 4096
#define NCCL_MAX_INPUTS 64
/* Most ranks listed by "# Rank" lines (the cluster schema's device cap). */
#define NCCL_MAX_RANKS 65536
/* The largest message of a run must be at least this many bytes: smaller
 * ones measure latency, not bandwidth (nccl-tests PERFORMANCE.md). */
#define NCCL_MIN_BANDWIDTH_BYTES 1048576.0
/* Bytes of the import summary (struct nccl_report). */
#define NCCL_REPORT_MAX 4096

/* The nccl-tests programs read; NCCL_KIND_NONE: not known (infer it). */
enum nccl_kind {
	NCCL_KIND_NONE = 0,
	NCCL_ALL_REDUCE,
	NCCL_ALL_GATHER,
	NCCL_REDUCE_SCATTER,
	NCCL_ALLTOALL,
	NCCL_SENDRECV,
};

/* "all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv" ("none"). */
const char *nccl_kind_name(enum nccl_kind kind);
/* A kind by its name, with or without "_perf"; NCCL_KIND_NONE when unknown. */
enum nccl_kind nccl_kind_parse(const char *s);
/* The kind whose program name ("all_reduce_perf", ...) occurs in s (a file
 * name, a header line); NCCL_KIND_NONE when none or several do. */
enum nccl_kind nccl_kind_in(const char *s);

/* What one output measured. */
struct nccl_run {
	enum nccl_kind kind;
	int ranks;              /* ranks of the run */
	int hosts;              /* distinct host names of the "# Rank" lines; 0 when none are listed */
	int min_ranks_per_host; /* fewest and most ranks on one host (0 without hosts) */
	int max_ranks_per_host;
	size_t rows;            /* data rows read */
	double max_size_bytes;  /* the largest message */
	double busbw_gb_per_s;  /* bus bandwidth at max_size_bytes: mean of out-of-place and in-place */
};

/*
 * Parses len bytes of text (borrowed; need not be NUL-terminated), one run
 * of an nccl-tests program.  name (borrowed) starts every message.  kind
 * (NCCL_KIND_NONE: from the header lines or the data) and ranks (0: from the
 * "# Rank" lines) are what the caller knows; a contradiction is an error.
 */
uniap_code nccl_parse(const char *text, size_t len, const char *name, enum nccl_kind kind, int ranks,
                      struct nccl_run *out, struct uniap_err *err);

/* One output to import (all borrowed). */
struct nccl_input {
	const char *text;
	size_t len;
	const char *name;     /* starts its messages: a path, "body.outputs[0]" */
	enum nccl_kind kind;  /* NCCL_KIND_NONE: inferred */
};

/* What the import did, for people; lines end with '\n', cut at NCCL_REPORT_MAX - 1 bytes. */
struct nccl_report {
	char text[NCCL_REPORT_MAX];
};

/*
 * Overlays the runs of in[0..n) on base (a cluster document, borrowed;
 * base_name roots its messages, e.g. "body.base"): each run becomes the
 * measured entry of its kind for its group size and placement, replacing an
 * entry of the base with the same key.  ranks (0: from each output) applies
 * to every output.  rep (may be NULL) receives a summary.
 */
uniap_code nccl_cluster_json(const struct cJSON *base, const char *base_name, const struct nccl_input *in,
                             size_t n, int ranks, struct cJSON **out, struct nccl_report *rep,
                             struct uniap_err *err);

#endif
