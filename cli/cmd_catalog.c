/*
 * cmd_catalog.c - `uniap catalog`: the built-in clusters and models
 * (core/catalog.h), listed or printed as profile documents.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "cli.h"
#include "jencode.h"
#include "runtime.h"

static const char cmd_catalog_usage[] =
	"usage: uniap catalog [show NAME] [--pretty]\n"
	"\n"
	"Without arguments, lists the built-in clusters and models: name, a one-line\n"
	"description and the sources of its numbers; then the training runtimes the\n"
	"cost model prices (--runtime NAME of plan, evaluate and costs).  `show NAME` prints the full\n"
	"cluster or model profile document (schema/cluster.schema.json or\n"
	"schema/model.schema.json).  Wherever a command takes --cluster FILE or\n"
	"--model FILE, a catalog name may be given instead (a path with '/' or ending\n"
	"in .json is always a file).  dgx-a100-xN / dgx-h100-xN accept N = 2..128.\n"
	"docs/catalog.md gives every formula and figure.\n"
	"\n"
	"  --pretty   indent the JSON of `show`\n"
	"\n"
	"Exit status: 0 ok, 1 unknown name, 2 bad command line.\n";

/* Prints the list of one kind; returns 0 or -1 on a write error. */
static int cmd_catalog_print_list(enum catalog_kind kind)
{
	size_t i;

	if (printf("%s:\n", kind == CATALOG_CLUSTER ? "clusters" : "models") < 0)
		return -1;
	for (i = 0; i < catalog_count(kind); i++) {
		const struct catalog_entry *e = catalog_entry(kind, i);

		if (printf("  %-12s %s\n  %-12s source: %s\n", e->name, e->description, "", e->sources) < 0)
			return -1;
	}
	return 0;
}

/* Prints the runtimes the cost model prices (runtime.h); 0 or -1 on a write error. */
static int cmd_catalog_print_runtimes(void)
{
	size_t i;

	if (printf("runtimes (--runtime NAME; docs/cost-model.md, \"Runtime profile\"):\n") < 0)
		return -1;
	for (i = 0; i < runtime_count(); i++) {
		const struct cost_runtime *r = runtime_at(i);

		if (printf("  %-18s gradient reduction %s, %s attention, %.0f us host time per kernel\n"
		           "  %-18s source: %s\n",
		           r->name, r->sync == COST_SYNC_AFTER ? "after the backward" : "in the last backward",
		           r->eager_attention ? "eager" : "fused", r->host_s_per_kernel * 1e6, "",
		           runtime_source(r)) < 0)
			return -1;
	}
	return 0;
}

/* The document of name as a cluster or a model; NULL with err set otherwise. */
static cJSON *cmd_catalog_document(const char *name, struct uniap_err *err)
{
	struct cluster_profile c = { 0 };
	struct model_profile m = { 0 };
	cJSON *doc = NULL;

	if (catalog_has(CATALOG_CLUSTER, name)) {
		if (catalog_cluster(name, &c, err) != UNIAP_OK)
			goto out;
		doc = jenc_cluster(&c);
	} else if (catalog_has(CATALOG_MODEL, name)) {
		if (catalog_model(name, &m, err) != UNIAP_OK)
			goto out;
		doc = jenc_model(&m);
	} else {
		/* the message of each kind lists its known names */
		struct uniap_err ec = { 0 }, em = { 0 };

		catalog_cluster(name, &c, &ec);
		catalog_model(name, &m, &em);
		err_set(err, UNIAP_E_NOTFOUND, "%.250s; %.250s", ec.msg, em.msg);
		goto out;
	}
	if (!doc)
		err_set(err, UNIAP_E_NOMEM, "out of memory");
out:
	cluster_release(&c);
	model_release(&m);
	return doc;
}

int cli_cmd_catalog(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pretty", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct uniap_err err = { 0 };
	cJSON *doc = NULL;
	char *text = NULL;
	int opt, pretty = 0, status = CLI_EXIT_ERROR;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'p') {
			pretty = 1;
		} else if (opt == 'h') {
			fputs(cmd_catalog_usage, stdout);
			return CLI_EXIT_OK;
		} else {
			return cli_usage_error("catalog", "unknown option");
		}
	}
	if (optind == argc) {
		if (cmd_catalog_print_list(CATALOG_CLUSTER) != 0 || cmd_catalog_print_list(CATALOG_MODEL) != 0 ||
		    cmd_catalog_print_runtimes() != 0 ||
		    fflush(stdout) != 0) {
			fputs("uniap catalog: cannot write to stdout\n", stderr);
			return CLI_EXIT_ERROR;
		}
		return CLI_EXIT_OK;
	}
	if (strcmp(argv[optind], "show") != 0 || argc - optind != 2)
		return cli_usage_error("catalog", "expected no arguments or `show NAME`");
	doc = cmd_catalog_document(argv[optind + 1], &err);
	if (!doc) {
		status = cli_fail("catalog", &err);
		goto out;
	}
	text = jenc_print(doc, pretty);
	if (!text) {
		err_set(&err, UNIAP_E_NOMEM, "out of memory");
		status = cli_fail("catalog", &err);
		goto out;
	}
	if (cli_write(text) != 0) {
		fputs("uniap catalog: cannot write to stdout\n", stderr);
		goto out;
	}
	status = CLI_EXIT_OK;
out:
	cJSON_free(text);
	cJSON_Delete(doc);
	return status;
}
