/*
 * cmd_evaluate.c - `uniap evaluate`: a plan document's TPI, per-stage time and
 * memory recomputed from the cost model, or why it is infeasible.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "cost.h"
#include "jencode.h"

static const char evaluate_usage[] =
	"usage: uniap evaluate --cluster FILE --model FILE --batch B --plan FILE\n"
	"                      [--memory-margin F] [--objective makespan] [--pretty]\n"
	"\n"
	"Recomputes the plan's cost matrices (its pp, micro-batches and schedule) and\n"
	"prints {feasible, valid, fits_memory, reason, tpi_s, throughput_samples_per_s,\n"
	"memory_limit_bytes, stages:[{time_s, memory_bytes, inflight_microbatches,\n"
	"memory}], comm_time_s:[..], plan_tpi_s, tpi_matches} (interleaved: each stage\n"
	"also gives device and rank_memory_bytes, its device's memory at its fullest\n"
	"moment, which is what must fit).  Each stage's memory\n"
	"object says where a device's memory goes, in bytes: model_states_bytes\n"
	"(of it weight_bytes, gradient_bytes and optimizer_state_bytes), fsdp_accumulation_bytes, activation_bytes (their sum allocated_bytes is the\n"
	"stage's memory_bytes and must not exceed memory_limit_bytes),\n"
	"fragmentation_bytes, fsdp_transient_bytes, reserved_bytes, margin_bytes,\n"
	"free_bytes (< 0: does not fit) and device_memory_bytes, the sum of the others\n"
	"(docs/cost-model.md, \"Memory\").\n"
	"\n"
	"  --cluster FILE   cluster profile\n"
	"  --model FILE     model profile\n"
	"  --batch B        global batch size (must equal microbatches x microbatch_size)\n"
	"  --plan FILE      plan document (schema/plan.schema.json)\n"
	"  --memory-margin F  fraction of device memory kept free, 0..0.5 (default: the\n"
	"                   cluster's device.memory_margin, itself 0.02 by default)\n"
	"  --objective makespan  price a 1F1B or interleaved plan by its iteration as run, as a plan with\n"
	"                   \"objective\": \"makespan\" is (docs/optimizer.md, \"The makespan\n"
	"                   objective\")\n"
	"  --pretty         indent the JSON\n"
	"\n"
	"Exit status: 0 feasible and tpi_s matches, 1 invalid input, 2 bad command line,\n"
	"3 infeasible (stage order, empty stage or memory), 4 the plan's tpi_s differs\n"
	"from the recomputed TPI.\n";

int cli_cmd_evaluate(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "plan", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_common common = { 0 };
	struct plan_doc plan = { 0 };
	struct uniap_err err = { 0 };
	const char *plan_path = NULL;
	cJSON *report = NULL;
	char *text = NULL;
	int opt, feasible = 0, matches = 0, status = CLI_EXIT_ERROR;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (cli_common_option(&common, opt, optarg, &err)) {
		} else if (opt == 'P') {
			plan_path = optarg;
		} else {
			return cli_bad_option("evaluate", argv[optind - 1]);
		}
		if (err.code != UNIAP_OK)
			return cli_fail("evaluate", &err);
	}
	if (common.help) {
		fputs(evaluate_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (optind < argc)
		return cli_usage_error("evaluate", "unexpected argument");
	if (!plan_path) {
		err_set(&err, UNIAP_E_ARG, "--plan: required");
		return cli_fail("evaluate", &err);
	}
	if (cli_common_load(&common, &err) != UNIAP_OK ||
	    cli_load_plan(plan_path, &plan, &err) != UNIAP_OK ||
	    cli_plan_runtime(&plan, common.runtime, &err) != UNIAP_OK) {
		status = cli_fail("evaluate", &err);
		goto out;
	}
	/* --objective makespan prices a plan made under the formula as run too */
	plan.makespan |= common.makespan;
	if (jenc_evaluate_report(&common.cluster, &common.model, common.batch, &plan, 0, NULL, &report, &feasible,
	                         &matches, &err) != UNIAP_OK) {
		status = cli_fail("evaluate", &err);
		goto out;
	}
	text = jenc_print(report, common.pretty);
	if (!text || cli_write(text) != 0) {
		err_set(&err, text ? UNIAP_E_IO : UNIAP_E_NOMEM, "stdout: write failed");
		status = cli_fail("evaluate", &err);
		goto out;
	}
	status = !feasible ? CLI_EXIT_INFEASIBLE : !matches ? CLI_EXIT_MISMATCH : CLI_EXIT_OK;
out:
	cJSON_free(text);
	cJSON_Delete(report);
	plan_doc_release(&plan);
	cli_common_release(&common);
	return status;
}
