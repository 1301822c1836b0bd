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
	"                       [--report FILE] [--predict-only] [--pretty]\n"
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
	"  --pretty            indent the JSON\n"
	"\n"
	"Exit status: 0 ok, 1 invalid input (the message names the field), 2 bad\n"
	"command line.\n";

enum {
	CAL_RUNS = 1,
	CAL_FIT,
	CAL_LOO,
	CAL_WEIGHT,
	CAL_OUT,
	CAL_REPORT,
	CAL_PREDICT_ONLY,
};

/* Most names one --fit list gives. */
#define CAL_MAX_FIT_NAMES CALIB_MAX_PARAMS

struct cal_args {
	struct cli_common common;
	const char *runs_path, *fit, *out, *report;
	int loo, predict_only;
	double prior_weight;
};

/* Everything one calibration holds; released by cal_release(). */
struct cal_state {
	struct runs_doc doc;
	struct calib_run *runs;
	struct calib_prediction *datasheet, *fitted;
	double *loo;
	struct calib_param *params;
	size_t n_params;
	struct calib_fit_info info;
	struct cluster_profile calibrated;
};

static void cal_release(struct cal_state *s)
{
	size_t i;

	for (i = 0; i < s->doc.n_runs; i++) {
		if (s->datasheet)
			calib_prediction_release(&s->datasheet[i]);
		if (s->fitted)
			calib_prediction_release(&s->fitted[i]);
	}
	free(s->datasheet);
	free(s->fitted);
	free(s->loo);
	free(s->params);
	free(s->runs);
	cluster_release(&s->calibrated);
	runs_doc_release(&s->doc);
}

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

/* The parameters --fit names (comma-separated), or the default selection. */
static uniap_code cal_params(const struct cal_args *a, struct cal_state *s, struct uniap_err *err)
{
	const char *names[CAL_MAX_FIT_NAMES];
	char *copy, *tok, *save = NULL;
	size_t n = 0;
	uniap_code rc;

	if (!a->fit)
		return calib_params_default(&a->common.cluster, s->runs, s->doc.n_runs, &s->params, &s->n_params, err);
	copy = strdup(a->fit);
	if (!copy)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == CAL_MAX_FIT_NAMES) {
			free(copy);
			return err_set(err, UNIAP_E_ARG, "--fit: at most %d names", CAL_MAX_FIT_NAMES);
		}
		names[n++] = tok;
	}
	rc = n ? calib_params_select(&a->common.cluster, names, n, &s->params, &s->n_params, err)
	       : err_set(err, UNIAP_E_ARG, "--fit: names no parameter");
	free(copy);
	return rc;
}

/* Predictions of every run on c into preds (new array). */
static uniap_code cal_predict_all(const struct cluster_profile *c, const struct cal_state *s,
                                  struct calib_prediction **preds, struct uniap_err *err)
{
	size_t i;
	uniap_code rc;

	*preds = calloc(s->doc.n_runs, sizeof(**preds));
	if (!*preds)
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	for (i = 0; i < s->doc.n_runs; i++) {
		rc = calib_predict(c, &s->runs[i], &(*preds)[i], err);
		if (rc != UNIAP_OK) {
			err_prefix(err, "runs[%zu]", i);
			return rc;
		}
	}
	return UNIAP_OK;
}

/* Loads the documents, predicts, fits: everything the report needs. */
static uniap_code cal_run(struct cal_args *a, struct cal_state *s, struct uniap_err *err)
{
	struct calib_options opt = { .prior_weight = a->prior_weight };
	char *text = NULL;
	size_t len = 0;
	uniap_code rc;

	if ((rc = cli_load_cluster(a->common.cluster_path, &a->common.cluster, err)) != UNIAP_OK)
		return rc;
	if (a->common.model_path && (rc = cli_load_model(a->common.model_path, &a->common.model, err)) != UNIAP_OK)
		return rc;
	if ((rc = jdec_read_file(a->runs_path, CLI_MAX_DOC_BYTES, &text, &len, err)) != UNIAP_OK)
		return rc;
	rc = runs_decode(text, len, &s->doc, err);
	free(text);
	if (rc == UNIAP_OK)
		rc = runs_resolve(&s->doc, &a->common.cluster, a->common.model_path ? &a->common.model : NULL, &s->runs,
		                  err);
	if (rc == UNIAP_OK)
		rc = cal_predict_all(&a->common.cluster, s, &s->datasheet, err);
	if (rc != UNIAP_OK) {
		err_prefix(err, "%s", a->runs_path);
		return rc;
	}
	if (a->predict_only)
		return UNIAP_OK;
	if ((rc = cal_params(a, s, err)) != UNIAP_OK ||
	    (rc = calib_fit(&a->common.cluster, s->runs, s->doc.n_runs, -1, &opt, s->params, s->n_params, &s->info,
	                    err)) != UNIAP_OK ||
	    (rc = calib_apply(&a->common.cluster, s->params, s->n_params, &s->calibrated, err)) != UNIAP_OK ||
	    (rc = cal_predict_all(&s->calibrated, s, &s->fitted, err)) != UNIAP_OK)
		return rc;
	if (a->loo) {
		s->loo = calloc(s->doc.n_runs, sizeof(*s->loo));
		if (!s->loo)
			return err_set(err, UNIAP_E_NOMEM, "out of memory");
		rc = calib_leave_one_out(&a->common.cluster, s->runs, s->doc.n_runs, &opt, s->params, s->n_params,
		                         s->loo, err);
	}
	return rc;
}

/* The calibrated cluster document with its "calibration" record, written to a->out. */
static uniap_code cal_write_cluster(const struct cal_args *a, const struct cal_state *s,
                                    const struct runs_report_in *in, struct uniap_err *err)
{
	char date[16] = "unknown";
	time_t now = time(NULL);
	struct tm tm;
	cJSON *doc = jenc_cluster(&s->calibrated), *rec;
	uniap_code rc;

	if (now != (time_t)-1 && gmtime_r(&now, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d", &tm);
	rec = doc ? runs_calibration_record(in, date) : NULL;
	if (!rec || !cJSON_AddItemToObject(doc, "calibration", rec)) {
		cJSON_Delete(rec);
		cJSON_Delete(doc);
		return err_set(err, UNIAP_E_NOMEM, "out of memory");
	}
	rc = cli_write_doc(doc, a->out, a->common.pretty, err);
	cJSON_Delete(doc);
	return rc;
}

int cli_cmd_calibrate(int argc, char **argv)
{
	struct cal_args a = { .prior_weight = CALIB_DEFAULT_PRIOR_WEIGHT };
	struct cal_state s = { .doc = { .default_model = -1 } };
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
	if (cal_run(&a, &s, &err) != UNIAP_OK) {
		status = cli_fail("calibrate", &err);
		goto out;
	}
	in = (struct runs_report_in){
		.cluster_name = a.common.cluster.name, .doc = &s.doc, .runs = s.runs, .datasheet = s.datasheet,
		.fitted = s.fitted, .loo_iteration_s = s.loo, .params = s.params, .n_params = s.n_params,
		.info = &s.info, .prior_weight = a.prior_weight,
	};
	report = runs_report(&in);
	if (!report) {
		err_set(&err, UNIAP_E_NOMEM, "out of memory");
		status = cli_fail("calibrate", &err);
		goto out;
	}
	if ((a.out && cal_write_cluster(&a, &s, &in, &err) != UNIAP_OK) ||
	    cli_write_doc(report, a.report, a.common.pretty, &err) != UNIAP_OK) {
		status = cli_fail("calibrate", &err);
		goto out;
	}
	status = CLI_EXIT_OK;
out:
	cJSON_Delete(report);
	cal_release(&s);
	cli_common_release(&a.common);
	return status;
}
