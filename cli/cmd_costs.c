/*
 * cmd_costs.c - `uniap costs`: one candidate's cost matrices in the audit format.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cost.h"
#include "jencode.h"
#include "target.h"
#include "uop.h"

static const char costs_usage[] =
	"usage: uniap costs --cluster FILE --model FILE --batch B --pp P --microbatches C\n"
	"                   [--schedule gpipe|1f1b|interleaved] [--virtual-stages V]\n"
	"                   [--recompute] [--zero] [--sequence-parallel]\n"
	"                   [--selective-recompute] [--uneven-microbatches] [--fp8]\n"
	"                   [--memory-margin F] [--objective formula|makespan]\n"
	"                   [--space unified|inter|intra|uniform] [--target T] [--pretty]\n"
	"\n"
	"Prints the cost matrices of one candidate (pipeline degree P, C micro-batches\n"
	"of B/C samples) in the audit format:\n"
	"  {pp, microbatches, microbatch_size, schedule, [virtual_stages,] transfers,\n"
	"   memory_limit_bytes, inflight_microbatches:[per stage],\n"
	"   [memory_peaks:[[device, h_0, .., h_{v-1}], ..],]\n"
	"   layers:[{name, strategies:[names], time_s:[..], memory_fixed_bytes:[..],\n"
	"            memory_per_microbatch_bytes:[..]}],\n"
	"   edges:[{from, to, same_stage_s:[[k][l]], cross_stage_s:[[k][l]]}]}\n"
	"With it, TPI = sum p + sum o + (c-1) max_i (o_(i-1) + p_i + o_i) (\"transfers\":\n"
	"\"blocking\": a transfer holds both its stages; o_(-1) = o_(pp-1) = 0), where\n"
	"p_i sums time_s of stage i's layers and same_stage_s of its inner edges, and\n"
	"o_j sums cross_stage_s of edges u->v with stage(u) <= j < stage(v).\n"
	"With --objective makespan (1F1B or interleaved, P > 1; \"objective\": \"makespan\")\n"
	"the TPI is instead the iteration as run: 1F1B with its blocking exchanges (at\n"
	"most the formula), interleaved as its list schedule (README, \"The audit format\").\n"
	"Interleaved (virtual_stages v): S = P v stages, stage i on device i mod P,\n"
	"boundary j (j = 0 .. S-2) on link j mod P; with P_d the sum of p_i over device\n"
	"d's stages and O_d the sum of o_j over link d's boundaries (\"transfers\":\n"
	"\"overlapped\": Megatron-LM overlaps them here),\n"
	"TPI = (sum p + sum o) / v + (c - 1/v) max(P u O), and device d's memory must\n"
	"fit the limit: the memory_fixed_bytes of its layers plus, over its rows h of\n"
	"memory_peaks (the micro-batches each of its chunks holds at one moment of\n"
	"Megatron-LM's order), the largest sum_j h_j a_j, a_j being the\n"
	"memory_per_microbatch_bytes of its chunk j = stage d + P j.  inflight[i] is\n"
	"the most stage i ever holds.\n"
	"\n"
	"  --cluster FILE      cluster profile (schema/cluster.schema.json)\n"
	"  --model FILE        model profile (schema/model.schema.json)\n"
	"  --batch B           global batch size\n"
	"  --pp P              pipeline degree (divides the device count, <= layers)\n"
	"  --microbatches C    micro-batches per iteration (divides B)\n"
	"  --schedule S        gpipe (default), 1f1b or interleaved: activations held\n"
	"                      per stage (interleaved: C a multiple of P)\n"
	"  --virtual-stages V  model chunks per device under interleaved (default 2)\n"
	"  --recompute         add activation-checkpointing variants of every strategy\n"
	"  --zero              add ZeRO-1 and ZeRO-2 variants of every replicated strategy\n"
	"  --sequence-parallel add sequence-parallel variants of every strategy with tp > 1\n"
	"  --selective-recompute  add selective-recomputation variants of every strategy\n"
	"  --fp8               price FP8 training (docs/cost-model.md, \"FP8\")\n"
	"  --uneven-microbatches  C may leave the last micro-batch smaller (ceil(B/C) each)\n"
	"  --memory-margin F   fraction of device memory kept free, 0..0.5 (default: the\n"
	"                      cluster's device.memory_margin, itself 0.02 by default)\n"
	"  --space S           the search space of `uniap plan --space S`: its dictionary\n"
	"                      (inter: data parallel only; uniform: Megatron-style)\n"
	"  --target T          the dictionary and schedule of `uniap plan --target T`\n"
	"                      (megatron, deepspeed, galvatron; docs/export.md)\n"
	"  The memory limit reserves FSDP's transient buffers only when the dictionary\n"
	"  offers FSDP, so these are the very matrices the planner solved.\n"
	"  --pretty            indent the JSON\n"
	"\n"
	"Exit status: 0 ok, 1 invalid input, 2 bad command line.\n";

int cli_cmd_costs(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "pp", required_argument, NULL, 'p' },
		{ "microbatches", required_argument, NULL, 'c' },
		{ "space", required_argument, NULL, 's' },
		{ "target", required_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 },
	};
	enum uop_space space = UOP_SPACE_UNIFIED;
	enum target_kind target = TARGET_ANY;
	struct cli_common common = { 0 };
	struct cost_candidate cand = { 0 };
	struct uniap_err err = { 0 };
	long pp = 0, micro = 0;
	cJSON *doc = NULL;
	char *text = NULL;
	int opt, status = CLI_EXIT_ERROR;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (cli_common_option(&common, opt, optarg, &err)) {
		} else if (opt == 'p') {
			cli_parse_long("--pp", optarg, 1, MODEL_MAX_DEVICES, &pp, &err);
		} else if (opt == 'c') {
			cli_parse_long("--microbatches", optarg, 1, 1L << 30, &micro, &err);
		} else if (opt == 's') {
			if (uop_space_parse(optarg, &space) != 0)
				err_set(&err, UNIAP_E_ARG,
				        "--space: must be unified, inter, intra or uniform, got \"%.64s\"", optarg);
		} else if (opt == 'G') {
			if (target_parse(optarg, &target) != 0)
				err_set(&err, UNIAP_E_ARG,
				        "--target: must be any, megatron, deepspeed or galvatron, got \"%.32s\"", optarg);
		} else {
			return cli_bad_option("costs", argv[optind - 1]);
		}
		if (err.code != UNIAP_OK)
			return cli_fail("costs", &err);
	}
	if (common.help) {
		fputs(costs_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (optind < argc)
		return cli_usage_error("costs", "unexpected argument");
	if (pp == 0 || micro == 0) {
		err_set(&err, UNIAP_E_ARG, "%s: required", pp == 0 ? "--pp" : "--microbatches");
		return cli_fail("costs", &err);
	}
	if (cli_common_load(&common, &err) != UNIAP_OK) {
		status = cli_fail("costs", &err);
		goto out;
	}
	{
		struct cost_options o = {
			.batch = common.batch, .pp = (int)pp, .microbatches = micro,
			.schedule = target_schedule(target, common.schedule), .recompute = common.recompute, .zero = common.zero, .sp = common.sp,
			.selective = common.selective, .uneven = common.uneven, .fp8 = common.fp8, .cp = (int)common.cp, .cp_a2a = common.cp_a2a,
			.makespan = common.makespan,
			.virtual_stages = common.virtual_stages ? (int)common.virtual_stages : 2,
			.filter = space == UOP_SPACE_INTER ? COST_FILTER_DP_ONLY
			        : space == UOP_SPACE_UNIFORM ? COST_FILTER_MEGATRON : COST_FILTER_ALL,
			.keep = target_keep(target),
			.runtime = common.runtime ? *common.runtime : *target_runtime(target),
		};

		if (cost_build(&common.cluster, &common.model, &o, &cand, &err) != UNIAP_OK) {
			status = cli_fail("costs", &err);
			goto out;
		}
	}
	doc = jenc_costs(&cand);
	text = doc ? jenc_print(doc, common.pretty) : NULL;
	if (!text) {
		err_set(&err, UNIAP_E_NOMEM, "out of memory");
		status = cli_fail("costs", &err);
		goto out;
	}
	if (cli_write(text) != 0) {
		err_set(&err, UNIAP_E_IO, "stdout: write failed");
		status = cli_fail("costs", &err);
		goto out;
	}
	status = CLI_EXIT_OK;
out:
	cJSON_free(text);
	cJSON_Delete(doc);
	cost_candidate_release(&cand);
	cli_common_release(&common);
	return status;
}
