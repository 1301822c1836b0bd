/*
 * main.c - `uniap`: the command table and dispatch.
 */
#include <stdio.h>
#include <string.h>

#include "buildinfo.h"
#include "calib.h"
#include "cli.h"

static const struct cli_command cli_commands[] = {
	{ "plan", cli_cmd_plan, "find the fastest plan (unified optimization process)" },
	{ "costs", cli_cmd_costs, "print one candidate's cost matrices (audit format)" },
	{ "evaluate", cli_cmd_evaluate, "recompute a plan's TPI, stage times and memory" },
	{ "export", cli_cmd_export, "a plan document as a galvatron, megatron or deepspeed config" },
	{ "import", cli_cmd_import, "turn another planner's profiles (galvatron, nccl-tests) into uniap documents" },
	{ "catalog", cli_cmd_catalog, "list the built-in clusters and models, or print one as JSON" },
	{ "calibrate", cli_cmd_calibrate, "fit a cluster's hardware parameters to measured training runs" },
	{ "allocate", cli_cmd_allocate, "share a cluster among many training jobs, each with its plan" },
};

#define CLI_N_COMMANDS (sizeof(cli_commands) / sizeof(cli_commands[0]))

static void cli_main_usage(FILE *f)
{
	size_t i;

	fputs("usage: uniap COMMAND [options]   (uniap COMMAND --help for details)\n"
	      "       uniap --version\n\n"
	      "Plans hybrid-parallel training (pipeline, data, tensor and fully-sharded\n"
	      "data parallelism) from a cluster profile and a model profile.\n\ncommands:\n", f);
	for (i = 0; i < CLI_N_COMMANDS; i++)
		fprintf(f, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
}

int main(int argc, char **argv)
{
	size_t i;

	calib_global_init();
	if (argc < 2) {
		cli_main_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		cli_main_usage(stdout);
		return CLI_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("uniap %s (git %s)\n", buildinfo_version, buildinfo_git_commit);
		return CLI_EXIT_OK;
	}
	for (i = 0; i < CLI_N_COMMANDS; i++)
		if (strcmp(argv[1], cli_commands[i].name) == 0)
			return cli_commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "uniap: unknown command '%.64s'\n", argv[1]);
	cli_main_usage(stderr);
	return CLI_EXIT_USAGE;
}
