/*
 * cmd_export.c - `uniap export`: a plan document as another system's config
 * (json/export.h: json, text, galvatron, megatron, deepspeed, chrome-trace).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "export.h"

static const char export_usage[] =
	"usage: uniap export --plan FILE --cluster FILE --model FILE\n"
	"                    [--format json|text|galvatron|megatron|deepspeed|chrome-trace]\n"
	"\n"
	"Rebuilds the plan's candidate (batch = microbatches x microbatch_size, its pp,\n"
	"schedule and recompute), checks and evaluates the plan, and prints it as:\n"
	"  json        the plan document (schema/plan.schema.json), the default\n"
	"  text        a summary for people (a line for the plan, one per stage)\n"
	"  galvatron   Galvatron's strategy config (--galvatron_config_path)\n"
	"  megatron    Megatron-LM command-line arguments, one per line\n"
	"  deepspeed   a DeepSpeed config (ds_config.json)\n"
	"  chrome-trace  one iteration as a Chrome trace (Perfetto, chrome://tracing):\n"
	"              a track per pipeline rank and per link, bubbles named\n"
	"docs/export.md gives each mapping; a plan a target cannot express is refused\n"
	"with a message naming the layer or field.  --cluster and --model accept the\n"
	"names of `uniap catalog`.\n"
	"\n"
	"Exit status: 0 exported, 1 invalid input or not expressible, 2 bad command line.\n";

int cli_cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cluster", required_argument, NULL, CLI_OPT_CLUSTER },
		{ "model", required_argument, NULL, CLI_OPT_MODEL },
		{ "help", no_argument, NULL, CLI_OPT_HELP },
		{ "plan", required_argument, NULL, 'P' },
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_common common = { 0 };
	struct plan_doc plan = { 0 };
	struct uniap_err err = { 0 };
	enum exp_format format = EXP_JSON;
	const char *plan_path = NULL;
	char *body = NULL;
	size_t len = 0;
	int opt, status = CLI_EXIT_ERROR;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (cli_common_option(&common, opt, optarg, &err)) {
		} else if (opt == 'P') {
			plan_path = optarg;
		} else if (opt == 'f') {
			if (exp_format_parse(optarg, &format) != 0)
				err_set(&err, UNIAP_E_ARG,
				        "--format: must be json, text, galvatron, megatron, deepspeed or chrome-trace, got \"%.64s\"",
				        optarg);
		} else {
			return cli_bad_option("export", argv[optind - 1]);
		}
		if (err.code != UNIAP_OK)
			return cli_fail("export", &err);
	}
	if (common.help) {
		fputs(export_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (optind < argc)
		return cli_usage_error("export", "unexpected argument");
	if (!plan_path) {
		err_set(&err, UNIAP_E_ARG, "--plan: required");
		return cli_fail("export", &err);
	}
	if (cli_common_load_profiles(&common, &err) != UNIAP_OK ||
	    cli_load_plan(plan_path, &plan, &err) != UNIAP_OK ||
	    exp_plan_doc(format, &common.cluster, &common.model, &plan, &body, &len, &err) != UNIAP_OK) {
		status = cli_fail("export", &err);
		goto out;
	}
	if (cli_write(body) != 0) {
		err_set(&err, UNIAP_E_IO, "stdout: write failed");
		status = cli_fail("export", &err);
		goto out;
	}
	status = CLI_EXIT_OK;
out:
	free(body);
	plan_doc_release(&plan);
	cli_common_release(&common);
	return status;
}
