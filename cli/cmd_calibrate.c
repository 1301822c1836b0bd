/*
 * cmd_calibrate.c - `uniap calibrate`: fits a cluster profile's hardware
 * parameters to measured training runs (core/calib.h, json/runs.h) and
 * prints a report; --out writes the calibrated cluster document.
 * docs/calibration.md documents the format, the objective and the report.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "calib.h"
#include "cli.h"
#include "jdecode.h"
#include "jencode.h"
#include "runs.h"

static const char calibrate_usage[] =
	"usage: uniap calibrate --cluster FILE --runs FILE [--model FILE] [--fit LIST]\n"
	"                       [--leave-one-out] [--prior-weight W] [--out FILE]\n"
	"                       [--report FILE] [--predict-only] [--allow-bounds] [--pretty]\n"
	"\n"
	"Predicts every measured run (schema/runs.schema.json) with the cluster profile,\n"
	"fits the cluster's parameters to the measurements (least squares on\n"
	"log(predicted / measured) iteration time, a ridge term pulling each parameter\n"
	"to the document's value, within bounds) and prints a JSON report: per run the\n"
	"measured, datasheet and fitted predictions and their relative errors, the\n"
	"fitted parameters with prior and bounds, and mean / max absolute errors\n"
	"(docs/calibration.md).\n"
	"\n"
	"  --cluster FILE      cluster profile (file or catalog name)\n"
	"  --runs FILE         measured runs\n"
	"  --model FILE        model of runs that name none (file or catalog name)\n"
	"  --fit LIST          parameters to fit, comma-separated: device.compute_efficiency,\n"
	"                      hierarchy[I].bandwidth (hierarchy.bandwidth: every level),\n"
	"                      overlap_coefficient, device.reserved_bytes,\n"
	"                      hierarchy[I].latency, device.memory_bandwidth,\n"
	"                      device.kernel_overhead, device.gemm_half_dim,\n"
	"                      device.memory_fragmentation, collectives.bandwidth (the\n"
	"                      measured tables' scale); default: the efficiency, the\n"
	"                      bandwidth of every level the runs use, the measured tables'\n"
	"                      scale, and reserved_bytes when memory or OOM was measured\n"
	"  --leave-one-out     also fit without each run in turn and predict it\n"
	"  --prior-weight W    weight of the pull towards the document's values (0.01)\n"
	"  --out FILE          write the calibrated cluster document (with a\n"
	"                      \"calibration\" record) to FILE\n"
	"  --report FILE       write the report to FILE instead of stdout\n"
	"  --predict-only      predict with the given cluster, fit nothing\n"
	"  --allow-bounds      keep a fit whose parameters sit on their bounds (refused by\n"
	"                      default: such a fit explains a term the cost model lacks)\n"
	"  --pretty            indent the JSON\n"
	"\n"
	"Exit status: 0 ok, 1 invalid input (the message names the field), 2 bad\n"
	"command line, 3 the fit refused: a parameter sits on its bound (the report\n"
	"is still printed, no --out is written).\n";

enum {
	CAL_RUNS = 1,
	CAL_FIT,
	CAL_LOO,
	CAL_WEIGHT,
	CAL_OUT,
	CAL_REPORT,
	CAL_PREDICT_ONLY,
	CAL_ALLOW_BOUNDS,
};

/* Most names one --fit list gives. */
#define CAL_MAX_FIT_NAMES CALIB_MAX_PARAMS

struct cal_args {
	struct cli_common common;
	const char *runs_path, *fit, *out, *report;
	int loo, predict_only, allow_bounds;
	double prior_weight;
};

static uniap_code cal_weight(const char *text, double *out, struct uniap_err *err)
{
	char *end = NULL;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || !end || *end || end == text || !isfinite(v) || v < 0)
		return err_set(err, UNIAP_E_ARG, "--prior-weight: must be a number >= 0, got \"%.64s\"", text);
	*out = v;
	return UNIAP_OK;
}

static uniap_code cal_parse(int argc, char **argv, struct cal_args *a, struct uniap_err *err)
{
	static const struct option longopts[] = {
		CLI_COMMON_LONGOPTS,
		{ "runs", required_argument, NULL, CAL_RUNS },
		{ "fit", required_argument, NULL, CAL_FIT },
		{ "leave-one-out", no_argument, NULL, CAL_LOO },
		{ "prior-weight", required_argument, NULL, CAL_WEIGHT },
		{ "out", required_argument, NULL, CAL_OUT },
		{ "report", required_argument, NULL, CAL_REPORT },
		{ "predict-only", no_argument, NULL, CAL_PREDICT_ONLY },
		{ "allow-bounds", no_argument, NULL, CAL_ALLOW_BOUNDS },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == CLI_OPT_BATCH || opt == CLI_OPT_SCHEDULE || opt == CLI_OPT_RECOMPUTE)
			return err_set(err, UNIAP_E_ARG, "%s: give it per run in the runs document", argv[optind - 1]);
		if (cli_common_option(&a->common, opt, optarg, err)) {
		} else if (opt == CAL_RUNS) {
			a->runs_path = optarg;
		} else if (opt == CAL_FIT) {
			a->fit = optarg;
		} else if (opt == CAL_LOO) {
			a->loo = 1;
		} else if (opt == CAL_WEIGHT) {
			cal_weight(optarg, &a->prior_weight, err);
		} else if (opt == CAL_OUT) {
			a->out = optarg;
		} else if (opt == CAL_REPORT) {
			a->report = optarg;
		} else if (opt == CAL_PREDICT_ONLY) {
			a->predict_only = 1;
		} else if (opt == CAL_ALLOW_BOUNDS) {
			a->allow_bounds = 1;
		} else {
			return err_set(err, UNIAP_E_ARG, "unknown or incomplete option '%.64s'", argv[optind - 1]);
		}
		if (err->code != UNIAP_OK)
			return err->code;
	}
	if (a->common.help)
		return UNIAP_OK;
	if (optind < argc)
		return err_set(err, UNIAP_E_ARG, "unexpected argument '%.64s'", argv[optind]);
	if (!a->common.cluster_path)
		return err_set(err, UNIAP_E_ARG, "--cluster: required");
	if (!a->runs_path)
		return err_set(err, UNIAP_E_ARG, "--runs: required");
	if (a->predict_only && (a->fit || a->loo || a->out))
		return err_set(err, UNIAP_E_ARG, "--predict-only: fits nothing, so --fit, --leave-one-out and --out do not apply");
	return UNIAP_OK;
}

/* The parameters --fit names (comma-separated) into names (cap CAL_MAX_FIT_NAMES, pointing into *copy, owned). */
static uniap_code cal_fit_names(const char *fit, const char **names, size_t *n, char **copy, struct uniap_err *err)
{
	char *tok, *save = NULL;

	*n = 0;
	*copy = strdup(fit);
	if (!*copy)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	for (tok = strtok_r(*copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*n == CAL_MAX_FIT_NAMES)
			return err_set(err, UNIAP_E_ARG, "--fit: at most %d names", CAL_MAX_FIT_NAMES);
		names[(*n)++] = tok;
	}
	return UNIAP_OK;
}

/* Loads the documents, predicts, fits (runs_calibrate): everything the report needs. */
static uniap_code cal_run(struct cal_args *a, struct runs_doc *doc, struct runs_calibration *s,
                          struct uniap_err *err)
{
	const char *names[CAL_MAX_FIT_NAMES];
	struct runs_calibrate_in in = {
		.cluster = &a->common.cluster, .leave_one_out = a->loo, .predict_only = a->predict_only,
		.opt = { .prior_weight = a->prior_weight, .allow_bounds = a->allow_bounds },
	};
	char *text = NULL, *copy = NULL;
	size_t len = 0;
	uniap_code rc;

	if ((rc = cli_load_cluster(a->common.cluster_path, &a->common.cluster, err)) != UNIAP_OK)
		return rc;
	if (a->common.model_path && (rc = cli_load_model(a->common.model_path, &a->common.model, err)) != UNIAP_OK)
		return rc;
	in.default_model = a->common.model_path ? &a->common.model : NULL;
	if (a->fit) {
		if ((rc = cal_fit_names(a->fit, names, &in.n_fit, &copy, err)) != UNIAP_OK)
			goto out;
		in.fit = names;
	}
	if ((rc = jdec_read_file(a->runs_path, CLI_MAX_DOC_BYTES, &text, &len, err)) != UNIAP_OK)
		goto out;
	rc = runs_decode(text, len, doc, err);
	if (rc == UNIAP_OK)
		rc = runs_calibrate(doc, &in, s, err);
	/* what the runs document holds is named with its file; --fit and the fit itself are not */
	if (rc != UNIAP_OK && strncmp(err->msg, "--", 2) != 0 && strncmp(err->msg, "calibration", 11) != 0)
		err_prefix(err, "%s", a->runs_path);
out:
	free(text);
	free(copy);
	return rc;
}

/* The calibrated cluster document with its "calibration" record, written to a->out. */
static uniap_code cal_write_cluster(const struct cal_args *a, const struct runs_doc *d,
                                    const struct runs_calibration *s, struct uniap_err *err)
{
	char date[16] = "unknown";
	time_t now = time(NULL);
	struct tm tm;
	cJSON *doc;
	uniap_code rc;

	if (now != (time_t)-1 && gmtime_r(&now, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d", &tm);
	doc = runs_calibrated_cluster(d, s, a->prior_weight, NULL, date);
	if (!doc)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	rc = cli_write_doc(doc, a->out, a->common.pretty, err);
	cJSON_Delete(doc);
	return rc;
}

int cli_cmd_calibrate(int argc, char **argv)
{
	struct cal_args a = { .prior_weight = CALIB_DEFAULT_PRIOR_WEIGHT };
	struct runs_doc doc = { .default_model = -1 };
	struct runs_calibration s = { 0 };
	struct uniap_err err = { 0 };
	struct runs_report_in in;
	cJSON *report = NULL;
	int status = CLI_EXIT_ERROR;

	if (cal_parse(argc, argv, &a, &err) != UNIAP_OK) {
		cli_usage_error("calibrate", err.msg);
		return CLI_EXIT_USAGE;
	}
	if (a.common.help) {
		fputs(calibrate_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (cal_run(&a, &doc, &s, &err) != UNIAP_OK) {
		/* a refused fit still reports (what it would fit, the folds), then fails: no --out */
		if (s.refused[0]) {
			in = runs_calibration_report_in(&doc, &s, a.common.cluster.name, a.prior_weight);
			report = runs_report(&in);
			if (report)
				cli_write_doc(report, a.report, a.common.pretty, &(struct uniap_err){ 0 });
		}
		status = cli_fail("calibrate", &err);
		goto out;
	}
	in = runs_calibration_report_in(&doc, &s, a.common.cluster.name, a.prior_weight);
	report = runs_report(&in);
	if (!report) {
		err_set(&err, UNIAP_E_NOMEM, "out of memory");
		status = cli_fail("calibrate", &err);
		goto out;
	}
	if ((a.out && cal_write_cluster(&a, &doc, &s, &err) != UNIAP_OK) ||
	    cli_write_doc(report, a.report, a.common.pretty, &err) != UNIAP_OK) {
		status = cli_fail("calibrate", &err);
		goto out;
	}
	status = CLI_EXIT_OK;
out:
	cJSON_Delete(report);
	runs_calibration_release(&s);
	runs_doc_release(&doc);
	cli_common_release(&a.common);
	return status;
}
