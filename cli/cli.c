/*
 * cli.c - argument parsing and document loading shared by the commands.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "jdecode.h"
#include "jencode.h"
#include "runtime.h"

uniap_code cli_parse_long(const char *opt, const char *text, long min, long max, long *out,
                          struct uniap_err *err)
{
	char *end = NULL;
	long v;

	if (!text || !*text)
		return err_set(err, UNIAP_E_ARG, "%s: must be an integer, got \"\"", opt);
	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || *end || end == text)
		return err_set(err, UNIAP_E_ARG, "%s: must be an integer, got \"%.64s\"", opt, text);
	if (v < min || v > max)
		return err_set(err, UNIAP_E_ARG, "%s: must be in [%ld, %ld], got %ld", opt, min, max, v);
	*out = v;
	return UNIAP_OK;
}

uniap_code cli_parse_double(const char *opt, const char *text, double min, double max, double *out,
                            struct uniap_err *err)
{
	char *end = NULL;
	double v;

	if (!text || !*text)
		return err_set(err, UNIAP_E_ARG, "%s: must be a number, got \"\"", opt);
	errno = 0;
	v = strtod(text, &end);
	if (errno || *end || end == text || !(v == v))
		return err_set(err, UNIAP_E_ARG, "%s: must be a number, got \"%.64s\"", opt, text);
	if (!(v >= min && v <= max))
		return err_set(err, UNIAP_E_ARG, "%s: must be in [%g, %g], got %g", opt, min, max, v);
	*out = v;
	return UNIAP_OK;
}

typedef uniap_code (*cli_decode_fn)(const char *text, size_t len, void *out, struct uniap_err *err);

static uniap_code cli_load(const char *path, void *out, struct uniap_err *err, cli_decode_fn decode)
{
	char *text = NULL;
	size_t len = 0;
	uniap_code rc;

	rc = jdec_read_file(path, CLI_MAX_DOC_BYTES, &text, &len, err);
	if (rc != UNIAP_OK)
		return rc;
	rc = decode(text, len, out, err);
	if (rc != UNIAP_OK)
		err_prefix(err, "%s", path);
	free(text);
	return rc;
}

static uniap_code cli_decode_cluster(const char *t, size_t n, void *out, struct uniap_err *err)
{
	return jdec_cluster(t, n, out, err);
}

static uniap_code cli_decode_model(const char *t, size_t n, void *out, struct uniap_err *err)
{
	return jdec_model(t, n, out, err);
}

static uniap_code cli_decode_plan(const char *t, size_t n, void *out, struct uniap_err *err)
{
	return jdec_plan(t, n, out, err);
}

#define CLI_CATALOG_HINT "uniap catalog lists them, or give a file"

/*
 * 1 when arg should be taken from the built-in catalog: it names an entry of
 * kind, it is not a path (no '/', no ".json" ending) and no such file exists.
 */
static int cli_is_catalog_name(enum catalog_kind kind, const char *arg)
{
	size_t n = strlen(arg);

	if (strchr(arg, '/') || (n >= 5 && strcmp(arg + n - 5, ".json") == 0))
		return 0;
	if (!catalog_has(kind, arg))
		return 0;
	return access(arg, F_OK) != 0;
}

/*
 * 1 when arg can only have meant a catalog name, and is none: no '/', no
 * ".json" ending, no such file.  The caller then says so, with the nearest
 * name, rather than "cannot open".
 */
static int cli_is_unknown_name(enum catalog_kind kind, const char *arg)
{
	size_t n = strlen(arg);

	if (!n || strchr(arg, '/') || (n >= 5 && strcmp(arg + n - 5, ".json") == 0))
		return 0;
	return !catalog_has(kind, arg) && access(arg, F_OK) != 0;
}

uniap_code cli_load_cluster(const char *path, struct cluster_profile *out, struct uniap_err *err)
{
	if (cli_is_catalog_name(CATALOG_CLUSTER, path))
		return catalog_cluster(path, out, err);
	if (cli_is_unknown_name(CATALOG_CLUSTER, path))
		return catalog_unknown(CATALOG_CLUSTER, path, "--cluster", CLI_CATALOG_HINT, UNIAP_E_NOTFOUND, err);
	return cli_load(path, out, err, cli_decode_cluster);
}

uniap_code cli_load_model(const char *path, struct model_profile *out, struct uniap_err *err)
{
	if (cli_is_catalog_name(CATALOG_MODEL, path))
		return catalog_model(path, out, err);
	if (cli_is_unknown_name(CATALOG_MODEL, path))
		return catalog_unknown(CATALOG_MODEL, path, "--model", CLI_CATALOG_HINT, UNIAP_E_NOTFOUND, err);
	return cli_load(path, out, err, cli_decode_model);
}

uniap_code cli_load_plan(const char *path, struct plan_doc *out, struct uniap_err *err)
{
	return cli_load(path, out, err, cli_decode_plan);
}

int cli_fail(const char *cmd, const struct uniap_err *err)
{
	fprintf(stderr, "uniap %s: %s\n", cmd, err->msg[0] ? err->msg : uniap_code_name(err->code));
	if (err->code == UNIAP_E_ARG)
		return CLI_EXIT_USAGE;
	if (err->code == UNIAP_E_INFEASIBLE)
		return CLI_EXIT_INFEASIBLE;
	return CLI_EXIT_ERROR;
}

int cli_usage_error(const char *cmd, const char *msg)
{
	fprintf(stderr, "uniap %s: %s\nTry 'uniap %s --help'.\n", cmd, msg, cmd);
	return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, const char *arg)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "unknown or incomplete option '%.64s'", arg);
	return cli_usage_error(cmd, msg);
}

int cli_write(const char *text)
{
	size_t n = strlen(text);

	if (fwrite(text, 1, n, stdout) != n || fflush(stdout) != 0)
		return -1;
	return 0;
}

/* Prints doc (borrowed) to path, or to stdout when path is NULL. */
uniap_code cli_write_doc(const cJSON *doc, const char *path, int pretty, struct uniap_err *err)
{
	char *text = jenc_print(doc, pretty);
	FILE *f = NULL;
	size_t n;
	uniap_code rc = UNIAP_OK;

	if (!text)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	if (!path) {
		if (cli_write(text) != 0)
			rc = err_set(err, UNIAP_E_IO, "stdout: write failed");
		goto out;
	}
	f = fopen(path, "w");
	if (!f) {
		rc = err_set(err, UNIAP_E_IO, "%s: cannot write: %s", path, strerror(errno));
		goto out;
	}
	n = strlen(text);
	if (fwrite(text, 1, n, f) != n)
		rc = err_set(err, UNIAP_E_IO, "%s: write failed: %s", path, strerror(errno));
	if (fclose(f) != 0 && rc == UNIAP_OK)
		rc = err_set(err, UNIAP_E_IO, "%s: write failed: %s", path, strerror(errno));
out:
	cJSON_free(text);
	return rc;
}

uniap_code cli_plan_runtime(struct plan_doc *p, const struct cost_runtime *rt, struct uniap_err *err)
{
	if (!rt)
		return UNIAP_OK;
	if (p->runtime[0] && strcmp(p->runtime, rt->name) != 0)
		return err_set(err, UNIAP_E_ARG, "--runtime: the plan is for runtime \"%s\", got \"%s\"", p->runtime,
		               rt->name);
	snprintf(p->runtime, sizeof(p->runtime), "%s", rt->name);
	return UNIAP_OK;
}

int cli_common_option(struct cli_common *c, int opt, const char *arg, struct uniap_err *err)
{
	switch (opt) {
	case CLI_OPT_CLUSTER:
		c->cluster_path = arg;
		return 1;
	case CLI_OPT_MODEL:
		c->model_path = arg;
		return 1;
	case CLI_OPT_BATCH:
		cli_parse_long("--batch", arg, 1, 1L << 30, &c->batch, err);
		return 1;
	case CLI_OPT_SCHEDULE:
		if (cost_schedule_parse(arg, &c->schedule) != 0)
			err_set(err, UNIAP_E_ARG, "--schedule: must be gpipe, 1f1b or interleaved, got \"%.64s\"", arg);
		return 1;
	case CLI_OPT_VIRTUAL:
		cli_parse_long("--virtual-stages", arg, 2, COST_MAX_VIRTUAL_STAGES, &c->virtual_stages, err);
		return 1;
	case CLI_OPT_RECOMPUTE:
		c->recompute = 1;
		return 1;
	case CLI_OPT_ZERO:
		c->zero = 1;
		return 1;
	case CLI_OPT_SP:
		c->sp = 1;
		return 1;
	case CLI_OPT_FP8:
		c->fp8 = 1;
		return 1;
	case CLI_OPT_CP:
		cli_parse_long("--context-parallel", arg, 1, MODEL_MAX_DEVICES, &c->cp, err);
		return 1;
	case CLI_OPT_CP_COMM:
		if (strcmp(arg, "a2a") == 0)
			c->cp_a2a = 1;
		else if (strcmp(arg, "p2p") != 0)
			err_set(err, UNIAP_E_ARG, "--cp-comm: must be p2p (ring attention) or a2a (Ulysses), got \"%.32s\"",
			        arg);
		return 1;
	case CLI_OPT_SELECTIVE:
		c->selective = 1;
		return 1;
	case CLI_OPT_UNEVEN:
		c->uneven = 1;
		return 1;
	case CLI_OPT_OBJECTIVE:
		if (strcmp(arg, "makespan") == 0)
			c->makespan = 1;
		else if (strcmp(arg, "formula") != 0)
			err_set(err, UNIAP_E_ARG, "--objective: must be formula or makespan, got \"%.32s\"", arg);
		return 1;
	case CLI_OPT_PRETTY:
		c->pretty = 1;
		return 1;
	case CLI_OPT_HELP:
		c->help = 1;
		return 1;
	case CLI_OPT_RUNTIME:
		if (!(c->runtime = runtime_find(arg))) {
			char names[256];

			runtime_names(names, sizeof(names));
			err_set(err, UNIAP_E_ARG, "--runtime: must be one of %s, got \"%.32s\"", names, arg);
		}
		return 1;
	case CLI_OPT_MEMORY_MARGIN:
		if (cli_parse_double("--memory-margin", arg, 0, MODEL_MAX_MEMORY_FRACTION, &c->memory_margin,
		                     err) == UNIAP_OK)
			c->has_memory_margin = 1;
		return 1;
	default:
		return 0;
	}
}

uniap_code cli_common_load_profiles(struct cli_common *c, struct uniap_err *err)
{
	uniap_code rc;

	if (c->virtual_stages && c->schedule != COST_INTERLEAVED)
		return err_set(err, UNIAP_E_ARG, "--virtual-stages: only with --schedule interleaved");
	if (c->cp_a2a && c->cp <= 1)
		return err_set(err, UNIAP_E_ARG, "--cp-comm: only with --context-parallel N > 1");
	if (!c->cluster_path)
		return err_set(err, UNIAP_E_ARG, "--cluster: required");
	if (!c->model_path)
		return err_set(err, UNIAP_E_ARG, "--model: required");
	if ((rc = cli_load_cluster(c->cluster_path, &c->cluster, err)) != UNIAP_OK)
		return rc;
	if (c->has_memory_margin &&
	    (rc = cluster_set_memory_margin(&c->cluster, c->memory_margin, "--memory-margin", err)) != UNIAP_OK)
		return rc;
	return cli_load_model(c->model_path, &c->model, err);
}

uniap_code cli_common_load(struct cli_common *c, struct uniap_err *err)
{
	if (c->cluster_path && c->model_path && c->batch == 0)
		return err_set(err, UNIAP_E_ARG, "--batch: required");
	return cli_common_load_profiles(c, err);
}

void cli_common_release(struct cli_common *c)
{
	cluster_release(&c->cluster);
	model_release(&c->model);
}
