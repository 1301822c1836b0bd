/*
 * cli.h - shared pieces of the `uniap` command-line front end: the command
 * table entry, strict argument parsing and document loading.
 *
 * Conventions: results to stdout, errors to stderr as "uniap CMD: message";
 * exit codes are the CLI_EXIT_* values below.
 */
#ifndef UNIAP_CLI_H
#define UNIAP_CLI_H

#include "err.h"
#include "model.h"
#include "cost.h"
#include "plan.h"

enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_ERROR = 1,      /* bad input, I/O, out of memory */
	CLI_EXIT_USAGE = 2,      /* bad command line */
	CLI_EXIT_INFEASIBLE = 3, /* the plan breaks order or memory rules / nothing fits */
	CLI_EXIT_MISMATCH = 4,   /* the plan's tpi_s differs from its recomputed TPI */
};

struct cJSON;

#define CLI_MAX_DOC_BYTES ((size_t)64 << 20)

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

/* Strict number parsing: the whole string, finite, in [min, max]; names opt in err. */
uniap_code cli_parse_double(const char *opt, const char *text, double min, double max, double *out,
                            struct uniap_err *err);

/* Strict integer parsing: the whole string, in [min, max]; names opt in err. */
uniap_code cli_parse_long(const char *opt, const char *text, long min, long max, long *out,
                          struct uniap_err *err);

/* Reads and validates a cluster/model/plan document from path (borrowed);
 * the caller releases *out.  A cluster or model argument that names a
 * built-in catalog entry (core/catalog.h) and is not an existing file, has no
 * '/' and does not end in ".json" is built from the catalog instead. */
uniap_code cli_load_cluster(const char *path, struct cluster_profile *out, struct uniap_err *err);
uniap_code cli_load_model(const char *path, struct model_profile *out, struct uniap_err *err);
uniap_code cli_load_plan(const char *path, struct plan_doc *out, struct uniap_err *err);

/*
 * Options every planning command shares.  cli_common_option() handles one
 * getopt_long result (opt = the option's CLI_OPT_* value); cli_common_load()
 * checks the required ones and loads the documents (caller releases them with
 * cli_common_release()).
 */
enum {
	CLI_OPT_CLUSTER = 1000,
	CLI_OPT_MODEL,
	CLI_OPT_BATCH,
	CLI_OPT_SCHEDULE,
	CLI_OPT_RECOMPUTE,
	CLI_OPT_ZERO,
	CLI_OPT_SP,
	CLI_OPT_SELECTIVE,
	CLI_OPT_FP8,
	CLI_OPT_UNEVEN,
	CLI_OPT_VIRTUAL,
	CLI_OPT_PRETTY,
	CLI_OPT_HELP,
	CLI_OPT_MEMORY_MARGIN,
	CLI_OPT_RUNTIME,
	CLI_OPT_CP,
	CLI_OPT_CP_COMM,
	CLI_OPT_OBJECTIVE,
};

struct cli_common {
	const char *cluster_path;
	const char *model_path;
	long batch;              /* 0 = not given */
	enum cost_schedule schedule;
	int recompute;
	int zero;                /* --zero: offer ZeRO-1/2 variants of replicated strategies */
	int sp;                  /* --sequence-parallel: offer "+sp" variants of tp strategies */
	int selective;           /* --selective-recompute: offer "+sel" variants */
	int fp8;                 /* --fp8: FP8 training (the layers' FP8 GEMMs at the FP8 peak) */
	long cp;                 /* --context-parallel N: every strategy's ring attention over N ranks; 0: none */
	int cp_a2a;              /* --cp-comm a2a: Ulysses all-to-alls instead of the ring */
	int uneven;              /* --uneven-microbatches: the last micro-batch may be smaller */
	int makespan;            /* --objective makespan: 1F1B priced by its iteration as run */
	long virtual_stages;     /* --virtual-stages V (interleaved only); 0 when not given */
	int pretty;
	int help;
	int has_memory_margin;   /* --memory-margin given: overrides the cluster's memory_margin */
	double memory_margin;
	const struct cost_runtime *runtime; /* --runtime NAME (runtime.h); NULL: the target's or the plan's */
	struct cluster_profile cluster;
	struct model_profile model;
};

#define CLI_COMMON_LONGOPTS \
	{ "cluster", required_argument, NULL, CLI_OPT_CLUSTER }, \
	{ "model", required_argument, NULL, CLI_OPT_MODEL }, \
	{ "batch", required_argument, NULL, CLI_OPT_BATCH }, \
	{ "schedule", required_argument, NULL, CLI_OPT_SCHEDULE }, \
	{ "recompute", no_argument, NULL, CLI_OPT_RECOMPUTE }, \
	{ "zero", no_argument, NULL, CLI_OPT_ZERO }, \
	{ "sequence-parallel", no_argument, NULL, CLI_OPT_SP }, \
	{ "selective-recompute", no_argument, NULL, CLI_OPT_SELECTIVE }, \
	{ "fp8", no_argument, NULL, CLI_OPT_FP8 }, \
	{ "uneven-microbatches", no_argument, NULL, CLI_OPT_UNEVEN }, \
	{ "virtual-stages", required_argument, NULL, CLI_OPT_VIRTUAL }, \
	{ "pretty", no_argument, NULL, CLI_OPT_PRETTY }, \
	{ "help", no_argument, NULL, CLI_OPT_HELP }, \
	{ "memory-margin", required_argument, NULL, CLI_OPT_MEMORY_MARGIN }, \
	{ "runtime", required_argument, NULL, CLI_OPT_RUNTIME }, \
	{ "context-parallel", required_argument, NULL, CLI_OPT_CP }, \
	{ "cp-comm", required_argument, NULL, CLI_OPT_CP_COMM }, \
	{ "objective", required_argument, NULL, CLI_OPT_OBJECTIVE }

/* Returns 1 if opt was a common option (handled, or err set), 0 otherwise. */
int cli_common_option(struct cli_common *c, int opt, const char *arg, struct uniap_err *err);
/* --cluster and --model required and loaded into c (released by cli_common_release);
 * --memory-margin, when given, replaces the cluster's memory_margin. */
uniap_code cli_common_load_profiles(struct cli_common *c, struct uniap_err *err);
/* The same, and --batch required too. */
uniap_code cli_common_load(struct cli_common *c, struct uniap_err *err);
void cli_common_release(struct cli_common *c);

/* --runtime given: the plan p is priced for it; a plan that names another runtime is UNIAP_E_ARG. */
uniap_code cli_plan_runtime(struct plan_doc *p, const struct cost_runtime *rt, struct uniap_err *err);

/* Prints "uniap CMD: msg" to stderr and returns the exit code for err->code. */
int cli_fail(const char *cmd, const struct uniap_err *err);

/* Prints "uniap CMD: msg\nTry 'uniap CMD --help'." and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *msg);

/* cli_usage_error for an option getopt refused: "unknown or incomplete option 'ARG'". */
int cli_bad_option(const char *cmd, const char *arg);

/* Writes text (borrowed) to stdout; returns 0 or -1 on a write error. */
int cli_write(const char *text);

/* Prints doc (borrowed) to path, or to stdout when path is NULL; UNIAP_E_IO naming path. */
uniap_code cli_write_doc(const struct cJSON *doc, const char *path, int pretty, struct uniap_err *err);

int cli_cmd_costs(int argc, char **argv);
int cli_cmd_evaluate(int argc, char **argv);
int cli_cmd_plan(int argc, char **argv);
int cli_cmd_import(int argc, char **argv);
int cli_cmd_catalog(int argc, char **argv);
int cli_cmd_export(int argc, char **argv);
int cli_cmd_calibrate(int argc, char **argv);
int cli_cmd_allocate(int argc, char **argv);

#endif
