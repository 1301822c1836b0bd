/*
 * cmd_plan.c - `uniap plan`: the unified optimization process over a search
 * space; prints the best plan document with its proof status and every
 * candidate.
 */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "export.h"
#include "jencode.h"
#include "progress.h"
#include "uop.h"

static const char plan_usage[] =
	"usage: uniap plan --cluster FILE --model FILE --batch B\n"
	"                  [--schedule gpipe|1f1b|interleaved] [--virtual-stages V]\n"
	"                  [--space unified|inter|intra|uniform] [--threads N]\n"
	"                  [--time-limit S] [--deadline S] [--gap G] [--early-stop] [--every-candidate]\n"
	"                  [--objective formula|makespan]\n"
	"                  [--recompute] [--zero]\n"
	"                  [--sequence-parallel] [--selective-recompute] [--uneven-microbatches] [--fp8]\n"
	"                  [--context-parallel N [--cp-comm p2p|a2a]]\n"
	"                  [--memory-margin F] [--target T[,T...]]\n"
	"                  [--format json|text|galvatron|megatron|deepspeed|chrome-trace] [--pretty] [--quiet]\n"
	"\n"
	"Finds the fastest plan: every pipeline degree dividing the device count (up to the\n"
	"layer count) and every micro-batch count dividing B is a candidate, solved exactly\n"
	"(a dynamic program on chains, a MILP on CBC otherwise) in worker processes.\n"
	"Prints the plan document (schema/plan.schema.json) plus optimal, gap, bound_s,\n"
	"candidates[{pp, microbatches, status, tpi_s, solve_s, bound, method, note}], solve_s.\n"
	"\n"
	"  --space S        unified (default): joint pipeline + per-layer dp/tp/fsdp\n"
	"                   inter: pipeline stages, each purely data parallel\n"
	"                   intra: no pipeline (micro-batches = gradient accumulation)\n"
	"                   uniform: Megatron-style, one dp x tp for all layers and an equal\n"
	"                   split; every candidate is listed with its TPI or why it fails\n"
	"  --threads N      candidates solved at once (default: the number of cores)\n"
	"  --time-limit S   seconds per candidate (default 60)\n"
	"  --deadline S     seconds for the whole plan: no candidate starts past it, each\n"
	"                   solve gets at most the time left; the best plan so far comes\n"
	"                   back (optimal no, its bound and gap as proven so far), the\n"
	"                   candidates left say status \"deadline\" (default: none)\n"
	"                   The first SIGINT (Ctrl-C) or SIGTERM does the same at once: the\n"
	"                   best plan so far, the candidates left \"stopped\"; a second ends\n"
	"                   the command at once\n"
	"  --gap G          stop a candidate within relative gap G (default 0: prove)\n"
	"  --early-stop     the paper's rules: after 15 s stop below 4 % gap; stop once the\n"
	"                   bound cannot beat the best plan so far\n"
	"  --every-candidate  solve each candidate to its own optimum: none is pruned by\n"
	"                   another's plan, so every row of candidates is that (pp, c)'s best\n"
	"                   TPI (slower; the plan is the same)\n"
	"  --objective O    formula (default): the TPI of docs/cost-model.md; makespan: 1F1B\n"
	"                   and interleaved priced by the iteration as run (Megatron-LM's\n"
	"                   order; its blocking exchanges or overlapped transfers), exact on\n"
	"                   the MILP (slower; docs/optimizer.md)\n"
	"  --target T,...   any (default): every plan of the space; megatron, deepspeed,\n"
	"                   galvatron: only the plans that runtime executes (its schedule,\n"
	"                   strategies and split; docs/export.md), so the plan exports.\n"
	"                   Several: each target's optimum and its price against the\n"
	"                   unconstrained one (planned too); the first is the plan printed\n"
	"  --schedule S     gpipe (default), 1f1b, or interleaved: 1F1B over V model chunks\n"
	"                   per device (Megatron-LM's virtual pipeline stages; candidates\n"
	"                   with C a multiple of the pipeline degree P and P x V <= layers)\n"
	"  --virtual-stages V  model chunks per device under interleaved, 2..64 (default:\n"
	"                   each of 2, 3 and 4 is a candidate)\n"
	"  --recompute      allow activation checkpointing per layer\n"
	"  --zero           allow ZeRO-1 and ZeRO-2 (optimizer states, and gradients, sharded\n"
	"                   over the data-parallel ranks) per replicated layer\n"
	"  --sequence-parallel  allow Megatron-LM's sequence parallelism per layer with tp > 1\n"
	"  --selective-recompute  allow recomputing only the attention core per layer\n"
	"  --context-parallel N  context parallelism: every strategy splits each sequence over N\n"
	"                   ranks of its dp group (ring attention; docs/cost-model.md)\n"
	"  --cp-comm a2a    context parallelism as Ulysses all-to-alls (tp x N divides the heads)\n"
	"  --fp8            train in FP8: the linear layers' GEMMs at the cluster's FP8 peak\n"
	"                   (peak_tflops.fp8), their input casts and FP8 weight copies priced;\n"
	"                   a mixed-precision model, no target but megatron\n"
	"  --uneven-microbatches  also micro-batch counts that leave the last micro-batch\n"
	"                   smaller (64 in 11: ten of 6 and one of 4), where the target allows\n"
	"  --memory-margin F  fraction of device memory no plan may use, 0..0.5 (default:\n"
	"                   the cluster's device.memory_margin, itself 0.02 by default)\n"
	"  --format F       json (default): the plan document; text: a summary for people;\n"
	"                   galvatron, megatron, deepspeed: the best plan as that system's\n"
	"                   config (docs/export.md; exit 1 naming the layer it cannot express);\n"
	"                   chrome-trace: one iteration for Perfetto or chrome://tracing\n"
	"  --quiet          no progress line (it is drawn on stderr only when stderr is a\n"
	"                   terminal: candidates done/total, best TPI so far, elapsed)\n"
	"\n"
	"Exit status: 0 a plan, 1 invalid input, 2 bad command line, 3 nothing fits.\n";

/* The output document: the plan (if any) plus the run's report. */
static cJSON *plan_report(const struct uop_result *r, enum uop_space space)
{
	cJSON *doc = r->best >= 0 ? jenc_plan(&r->cand, r->stage, r->strategy, &r->eval)
	                          : cJSON_CreateObject();

	if (doc && !jenc_add_run_report(doc, r, space)) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

/* The text summary: exp's plan and stage lines with this run's fields, then the candidates. */
static int plan_text(FILE *f, const struct uop_result *r, enum uop_space space, enum target_kind target,
                     struct uniap_err *err)
{
	struct rusage self, kids;
	size_t i, n_opt = 0, n_pruned = 0, n_inf = 0, n_other = 0, len = 0;
	char prefix[64], suffix[160], *text = NULL;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	for (i = 0; i < r->n_candidates; i++) {
		const char *st = r->candidates[i].status;

		if (!strcmp(st, "optimal") || !strcmp(st, "evaluated"))
			n_opt++;
		else if (!strcmp(st, "pruned"))
			n_pruned++;
		else if (!strcmp(st, "infeasible"))
			n_inf++;
		else
			n_other++;
	}
	if (r->best < 0) {
		fprintf(f, "plan: %s (space %s%s%s, %zu candidates, %zu infeasible) solve %.3f s\n",
		        r->deadline_passed ? "none found before the deadline"
		        : r->stopped       ? "none found before the interrupt"
		                           : "none fits",
		        uop_space_name(space), target != TARGET_ANY ? ", target " : "",
		        target != TARGET_ANY ? target_name(target) : "", r->n_candidates, n_inf, r->solve_s);
		return UNIAP_OK;
	}
	if (target != TARGET_ANY)
		snprintf(prefix, sizeof(prefix), "space %s target %s ", uop_space_name(space), target_name(target));
	else
		snprintf(prefix, sizeof(prefix), "space %s ", uop_space_name(space));
	snprintf(suffix, sizeof(suffix), " optimal %s gap %.3g solve %.3f s maxrss %.0f MiB (workers %.0f MiB)",
	         r->optimal ? "yes" : "no", r->gap, r->solve_s, self.ru_maxrss / 1024.0,
	         kids.ru_maxrss / 1024.0);
	if (exp_plan_text(&r->cand, r->stage, r->strategy, &r->eval, prefix, suffix, &text, &len, err) !=
	    UNIAP_OK)
		return err->code;
	fwrite(text, 1, len, f);
	free(text);
	fprintf(f, "  candidates: %zu (%s %zu, pruned %zu, infeasible %zu, other %zu)\n",
	        r->n_candidates,
	        space == UOP_SPACE_UNIFORM || (target_rules(target)->one_strategy) ? "evaluated" : "optimal", n_opt,
	        n_pruned, n_inf, n_other);
	/* which path answered how many candidates, in order of first use */
	fprintf(f, "  methods:");
	for (i = 0; i < r->n_candidates; i++) {
		const char *m = r->candidates[i].method ? r->candidates[i].method : "none";
		size_t j, cnt = 0;

		for (j = 0; j < i; j++)
			if (!strcmp(r->candidates[j].method ? r->candidates[j].method : "none", m))
				break;
		if (j < i)
			continue;
		for (j = i; j < r->n_candidates; j++)
			cnt += !strcmp(r->candidates[j].method ? r->candidates[j].method : "none", m);
		fprintf(f, " %s %zu", m, cnt);
	}
	fprintf(f, "\n");
	return UNIAP_OK;
}

static int plan_parse_double(const char *opt, const char *text, double lo, double hi, double *out,
                             struct uniap_err *err)
{
	char *end = NULL;
	double v = strtod(text, &end);

	if (!*text || *end || !(v >= lo && v <= hi))
		return err_set(err, UNIAP_E_ARG, "%s: must be a number in [%g, %g], got \"%.64s\"", opt,
		               lo, hi, text);
	*out = v;
	return UNIAP_OK;
}

/* "megatron,galvatron" into targets (unique, in order); UNIAP_E_ARG naming the bad one. */
static uniap_code plan_parse_targets(const char *text, enum target_kind *targets, size_t *n,
                                     struct uniap_err *err)
{
	const char *p = text;

	while (1) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p), i;
		char name[32];
		enum target_kind t;

		if (len == 0 || len >= sizeof(name))
			return err_set(err, UNIAP_E_ARG, "--target: empty or unknown name in \"%.64s\"", text);
		memcpy(name, p, len);
		name[len] = '\0';
		if (target_parse(name, &t) != 0)
			return err_set(err, UNIAP_E_ARG,
			               "--target: must be any, megatron, deepspeed or galvatron, got \"%.32s\"", name);
		for (i = 0; i < *n && targets[i] != t; i++)
			;
		if (i == *n) {
			if (*n == TARGET_COUNT)
				return err_set(err, UNIAP_E_ARG, "--target: too many names in \"%.64s\"", text);
			targets[(*n)++] = t;
		}
		if (!end)
			return UNIAP_OK;
		p = end + 1;
	}
}

/* One text line per target: "  target megatron (megatron-lm): tpi 5.7 s, +9.4 % vs any, ...". */
static void plan_targets_text(FILE *f, const enum target_kind *targets, const struct uop_result *rs,
                              const char *const *errors, size_t n, const struct uop_result *any)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct uop_result *r = &rs[i];
		double price = jenc_target_price(r, any);

		fprintf(f, "  target %s (%s): ", target_name(targets[i]), target_rules(targets[i])->runtime);
		if (errors[i]) {
			fprintf(f, "error: %s\n", errors[i]);
			continue;
		}
		if (r->best < 0) {
			fprintf(f, "none fits (%zu candidates)\n", r->n_candidates);
			continue;
		}
		fprintf(f, "tpi %.6g s", r->eval.tpi_s);
		if (isfinite(price) && targets[i] != TARGET_ANY)
			fprintf(f, ", %+.1f %% vs any", 100 * price);
		fprintf(f, ", pp %d microbatches %ld %s, optimal %s\n", r->cand.pp, r->cand.microbatches,
		        cost_schedule_name(r->cand.schedule), r->optimal ? "yes" : "no");
	}
}

/* Set by the first SIGINT (or SIGTERM) during a plan: the run stops and still answers
 * (uop_options.stop); the handler is reset, so a second one ends the process at once. */
/*
 * stderr: why no candidate gave a plan (see: where the details are), and,
 * when memory is the reason, what may help: the options of the search space
 * that o did not turn on (each shrinks what a device holds), then more
 * devices or a smaller batch.
 */
static void plan_why_none(const struct uop_result *r, const struct uop_options *o, const char *see)
{
	char help[320] = "";
	size_t used = 0;
	const struct {
		int on;
		const char *opt, *why;
	} opts[] = {
		{o->recompute, "--recompute", "activation checkpointing"},
		{o->selective || o->recompute, "--selective-recompute", "recompute the attention core"},
		{o->zero, "--zero", "shard optimizer states and gradients"},
		{o->sp, "--sequence-parallel", "shard the activations tensor parallelism replicates"},
	};
	size_t i;

	if (r->deadline_passed || r->stopped) {
		fprintf(stderr, "uniap plan: no candidate gave a plan before the %s (%s); %s\n",
		        r->deadline_passed ? "deadline" : "interrupt", see,
		        r->deadline_passed ? "a longer --deadline may find one" : "run it again to the end");
		return;
	}
	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (!opts[i].on)
			used += (size_t)snprintf(help + used, sizeof(help) - used, "%s (%s), ", opts[i].opt, opts[i].why);
	snprintf(help + used, sizeof(help) - used, "more devices (a larger --cluster) or a smaller --batch");
	fprintf(stderr, "uniap plan: no candidate fits the memory limit (%s); what may help: %s\n", see, help);
}

static atomic_int plan_interrupted;

static void plan_on_interrupt(int sig)
{
	(void)sig;
	atomic_store(&plan_interrupted, 1);
}

int cli_cmd_plan(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "space", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "time-limit", required_argument, NULL, 'T' },
		{ "deadline", required_argument, NULL, 'D' },
		{ "gap", required_argument, NULL, 'g' },
		{ "early-stop", no_argument, NULL, 'e' },
		{ "every-candidate", no_argument, NULL, 'E' },
		{ "format", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "target", required_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_common common = { 0 };
	struct uop_options o;
	struct uop_result rs[TARGET_COUNT];
	enum target_kind targets[TARGET_COUNT];
	char errors_buf[TARGET_COUNT][UNIAP_ERR_MSG_MAX];
	const char *errors[TARGET_COUNT] = { NULL };
	size_t n_targets = 0, n_runs = 0, i;
	const struct uop_result *any = NULL;
	int explicit_target = 0;
	struct uniap_err err = { 0 };
	struct cli_progress progress;
	cJSON *doc = NULL;
	enum exp_format format = EXP_JSON;
	char *text = NULL, *body = NULL;
	const struct uop_result *r;
	size_t body_len = 0;
	long threads;
	double deadline = 0;
	struct sigaction on_int, old_int, old_term;
	uniap_code rc;
	int opt, quiet = 0, handlers = 0, status = CLI_EXIT_ERROR;

	uop_options_init(&o);
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (cli_common_option(&common, opt, optarg, &err)) {
		} else if (opt == 's') {
			if (uop_space_parse(optarg, &o.space) != 0)
				err_set(&err, UNIAP_E_ARG,
				        "--space: must be unified, inter, intra or uniform, got \"%.64s\"", optarg);
		} else if (opt == 't') {
			if (cli_parse_long("--threads", optarg, 1, POOL_THREADS_MAX, &threads, &err) == UNIAP_OK)
				o.threads = (int)threads;
		} else if (opt == 'T') {
			plan_parse_double("--time-limit", optarg, 0.001, 86400, &o.time_limit_s, &err);
		} else if (opt == 'D') {
			plan_parse_double("--deadline", optarg, 0.001, 1e9, &deadline, &err);
		} else if (opt == 'g') {
			plan_parse_double("--gap", optarg, 0, 1, &o.rel_gap, &err);
		} else if (opt == 'e') {
			o.early_stop = 1;
		} else if (opt == 'E') {
			o.every_candidate = 1;
		} else if (opt == 'q') {
			quiet = 1;
		} else if (opt == 'G') {
			explicit_target = 1;
			plan_parse_targets(optarg, targets, &n_targets, &err);
		} else if (opt == 'f') {
			if (exp_format_parse(optarg, &format) != 0)
				err_set(&err, UNIAP_E_ARG,
				        "--format: must be json or text or an export format (galvatron, megatron, "
				        "deepspeed, chrome-trace), got \"%.64s\"",
				        optarg);
		} else {
			return cli_bad_option("plan", argv[optind - 1]);
		}
		if (err.code != UNIAP_OK)
			return cli_fail("plan", &err);
	}
	if (common.help) {
		fputs(plan_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (optind < argc)
		return cli_usage_error("plan", "unexpected argument");
	/* Ctrl-C or SIGTERM from here on: the best plan so far, not nothing (before the run starts:
	 * no candidate runs, and the command says so).  A SIGINT ignored at start (a background job of
	 * a script) stays ignored. */
	memset(&on_int, 0, sizeof(on_int));
	on_int.sa_handler = plan_on_interrupt;
	on_int.sa_flags = SA_RESETHAND;
	sigemptyset(&on_int.sa_mask);
	atomic_store(&plan_interrupted, 0);
	o.stop = &plan_interrupted;
	sigaction(SIGINT, NULL, &old_int);
	if (old_int.sa_handler != SIG_IGN)
		sigaction(SIGINT, &on_int, NULL);
	sigaction(SIGTERM, &on_int, &old_term);
	handlers = 1;
	if (cli_common_load(&common, &err) != UNIAP_OK) {
		status = cli_fail("plan", &err);
		goto out;
	}
	o.batch = common.batch;
	o.schedule = common.schedule;
	o.virtual_stages = (int)common.virtual_stages;
	o.recompute = common.recompute;
	o.zero = common.zero;
	o.sp = common.sp;
	o.selective = common.selective;
	o.fp8 = common.fp8;
	o.cp = (int)common.cp;
	o.cp_a2a = common.cp_a2a;
	o.uneven = common.uneven;
	o.makespan = common.makespan;
	memset(rs, 0, sizeof(rs));
	if (n_targets == 0)
		targets[n_targets++] = TARGET_ANY;
	/* an export needs the first target's plan only; several targets are priced against
	 * the unconstrained optimum, planned too when not named */
	if (format != EXP_JSON && format != EXP_TEXT)
		n_targets = 1;
	for (i = 0; i < n_targets && targets[i] != TARGET_ANY; i++)
		;
	if (n_targets > 1 && i == n_targets)
		targets[n_targets++] = TARGET_ANY;
	if (!quiet && cli_progress_start(&progress, stderr)) {
		o.progress = cli_progress_update;
		o.progress_ctx = &progress;
	}
	rc = UNIAP_OK;
	/* one deadline for every target's run, counted from here */
	if (deadline > 0)
		o.deadline_s = opt_clock_s() + deadline;
	for (n_runs = 0; n_runs < n_targets && rc == UNIAP_OK; n_runs++) {
		o.target = targets[n_runs];
		o.runtime = common.runtime;
		rc = uop_run(&common.cluster, &common.model, &o, NULL, &rs[n_runs], &err);
		if (rc == UNIAP_E_INVALID && n_runs > 0) {
			/* a later target that cannot plan this model (megatron without model.shape):
			 * said in its line, the others stand */
			snprintf(errors_buf[n_runs], sizeof(errors_buf[n_runs]), "%s", err.msg);
			errors[n_runs] = errors_buf[n_runs];
			memset(&rs[n_runs], 0, sizeof(rs[n_runs]));
			rs[n_runs].best = -1;
			rc = UNIAP_OK;
		}
		if (rc == UNIAP_OK && targets[n_runs] == TARGET_ANY)
			any = &rs[n_runs];
	}
	if (rc != UNIAP_OK)
		n_runs--; /* the failed run owns nothing */
	if (o.progress)
		cli_progress_stop(&progress);
	if (rc == UNIAP_OK && atomic_load(&plan_interrupted))
		fprintf(stderr, "uniap plan: interrupted: the best plan found before it follows, not proven (the"
		                " candidates left say \"stopped\" or \"canceled\")\n");
	if (rc != UNIAP_OK) {
		status = cli_fail("plan", &err);
		goto out;
	}
	r = &rs[0];
	if (format == EXP_TEXT) {
		if (plan_text(stdout, r, o.space, explicit_target ? targets[0] : TARGET_ANY, &err) != UNIAP_OK) {
			status = cli_fail("plan", &err);
			goto out;
		}
		if (n_targets > 1)
			plan_targets_text(stdout, targets, rs, errors, n_targets, any);
		status = fflush(stdout) == 0 ? (r->best < 0 ? CLI_EXIT_INFEASIBLE : CLI_EXIT_OK)
		                             : CLI_EXIT_ERROR;
		if (r->best < 0)
			plan_why_none(r, &o, "--format json says why for each candidate");
		goto out;
	}
	if (format != EXP_JSON) {
		if (r->best < 0) {
			plan_why_none(r, &o, "try --format json");
			status = CLI_EXIT_INFEASIBLE;
		} else if (exp_plan(format, &common.model, &r->cand, r->stage, r->strategy, &r->eval, &body, &body_len, &err) !=
		           UNIAP_OK) {
			status = cli_fail("plan", &err);
		} else if (cli_write(body) != 0) {
			err_set(&err, UNIAP_E_IO, "stdout: write failed");
			status = cli_fail("plan", &err);
		} else {
			status = CLI_EXIT_OK;
		}
		goto out;
	}
	doc = plan_report(r, o.space);
	if (doc && explicit_target && !cJSON_AddStringToObject(doc, "target", target_name(targets[0]))) {
		cJSON_Delete(doc);
		doc = NULL;
	}
	if (doc && n_targets > 1) {
		cJSON *arr = jenc_targets(targets, rs, errors, n_targets, any);

		if (!arr || !cJSON_AddItemToObject(doc, "targets", arr)) {
			cJSON_Delete(arr);
			cJSON_Delete(doc);
			doc = NULL;
		}
	}
	text = doc ? jenc_print(doc, common.pretty) : NULL;
	if (!text || cli_write(text) != 0) {
		err_set(&err, text ? UNIAP_E_IO : UNIAP_E_NOMEM, "stdout: write failed");
		status = cli_fail("plan", &err);
		goto out;
	}
	if (r->best < 0) {
		plan_why_none(r, &o, "see candidates[].note");
		status = CLI_EXIT_INFEASIBLE;
	} else {
		status = CLI_EXIT_OK;
	}
out:
	if (handlers) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	free(body);
	cJSON_free(text);
	cJSON_Delete(doc);
	for (i = 0; i < n_runs; i++)
		uop_result_release(&rs[i]);
	cli_common_release(&common);
	return status;
}
