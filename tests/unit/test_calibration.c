/*
 * test_calibration.c - the service's calibration requests (server/
 * calibration.h) without a server: the options of a body or a stored
 * summary as a table of cases (accepted with their values, or refused
 * naming the member), a stored request run to its report and calibrated
 * cluster, a cancel hook that stops it, and the job's result document.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "calibration.h"
#include "catalog.h"
#include "jencode.h"

/* One options case: a body and what it gives or the message it is refused with. */
static void test_options(void **state)
{
	static const struct {
		const char *body;
		const char *msg;        /* NULL: accepted */
		size_t n_fit;
		int loo;
		double weight, limit;
	} cases[] = {
		{ "{\"runs\":{}}", NULL, 0, 0, CALIB_DEFAULT_PRIOR_WEIGHT, CALIBRATION_DEFAULT_TIME_LIMIT_S },
		{ "{\"runs\":{},\"fit\":[\"device.compute_efficiency\",\"hierarchy.bandwidth\"],\"leave_one_out\":true,"
		  "\"prior_weight\":0,\"name\":\"x\",\"time_limit_s\":2}", NULL, 2, 1, 0, 2 },
		{ "{\"runs\":{},\"fit\":[]}", "body.fit: names no parameter", 0, 0, 0, 0 },
		{ "{\"runs\":{},\"fit\":\"a\"}", "body.fit: must be an array", 0, 0, 0, 0 },
		{ "{\"runs\":{},\"fit\":[1]}", "body.fit[0]: must be a parameter name", 0, 0, 0, 0 },
		{ "{\"runs\":{},\"leave_one_out\":1}", "body.leave_one_out: must be a boolean", 0, 0, 0, 0 },
		{ "{\"runs\":{},\"prior_weight\":-1}", "body.prior_weight: must be a finite number >= 0", 0, 0, 0, 0 },
		{ "{\"runs\":{},\"name\":\"\"}", "body.name: must be a string", 0, 0, 0, 0 },
		{ "{\"runs\":{},\"time_limit_s\":700}", "body.time_limit_s: must be a number in [0.001, 600]", 0, 0, 0, 0 },
		{ "{\"runs\":{},\"cluster\":1}", "body.cluster: unknown field", 0, 0, 0, 0 },
		{ "{\"runs\":{},\"fit\":[\"a\"],\"fit\":[\"b\"]}", "body.fit: given twice", 0, 0, 0, 0 },
		{ "[]", "body: must be an object", 0, 0, 0, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct calibration_options o;
		struct uniap_err err = { 0 };
		cJSON *body = cJSON_Parse(cases[i].body);
		uniap_code rc;

		assert_non_null(body);
		rc = calibration_options_json(body, "body", "runs", 600, &o, &err);
		if (cases[i].msg) {
			assert_int_equal(rc, UNIAP_E_INVALID);
			if (!strstr(err.msg, cases[i].msg))
				fail_msg("case %zu: got \"%s\", want \"%s\"", i, err.msg, cases[i].msg);
		} else {
			assert_int_equal(rc, UNIAP_OK);
			assert_int_equal(o.n_fit, cases[i].n_fit);
			assert_int_equal(o.has_fit, cases[i].n_fit > 0);
			assert_int_equal(o.leave_one_out, cases[i].loo);
			assert_true(o.prior_weight == cases[i].weight);
			assert_true(o.time_limit_s == cases[i].limit);
		}
		cJSON_Delete(body);
	}
}

/* A stored request as calibration_request() writes it (no stored models: a NULL store is never read). */
static char *t_request(const char *body_text, struct cluster_profile *c)
{
	struct uniap_err err = { 0 };
	cJSON *body = cJSON_Parse(body_text);
	char *text = NULL;

	assert_non_null(body);
	assert_int_equal(catalog_cluster("dgx-a100", c, &err), UNIAP_OK);
	if (calibration_request(NULL, 1, body, 7, c, 600, &text, &err) != UNIAP_OK)
		fail_msg("request: %s", err.msg);
	cJSON_Delete(body);
	return text;
}

static const char t_body[] =
	"{\"name\":\"fitted\",\"runs\":{\"model\":\"bert-huge\",\"runs\":["
	"{\"name\":\"a\",\"batch\":32,\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,\"microbatches\":1},"
	"\"measured\":{\"iteration_s\":1.2}},"
	"{\"name\":\"b\",\"batch\":32,\"uniform\":{\"pp\":1,\"tp\":8,\"microbatches\":4},"
	"\"measured\":{\"iteration_s\":2.6}}]}}";

/* Submission refuses what the cluster cannot hold, naming the path under "runs". */
static void test_request_errors(void **state)
{
	static const struct {
		const char *body, *msg;
	} cases[] = {
		{ "{\"runs\":{\"model\":\"bert-huge\",\"runs\":[{\"name\":\"a\",\"batch\":32,"
		  "\"uniform\":{\"pp\":1,\"tp\":16,\"dp\":1,\"microbatches\":1},\"measured\":{\"iteration_s\":1}}]}}",
		  "runs.runs[0]" },
		{ "{\"runs\":{\"model\":\"bert-huge\",\"runs\":[{\"name\":\"a\",\"batch\":32,"
		  "\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,\"microbatches\":1},\"measured\":{\"iteration_s\":-1}}]}}",
		  "runs.runs[0].measured.iteration_s" },
		{ "{\"runs\":{\"model\":\"bert-huge\",\"runs\":[]},\"fit\":[\"nope\"]}", "fit: unknown parameter \"nope\"" },
		{ "{\"fit\":[\"device.compute_efficiency\"]}", "runs: required" },
		{ "{\"runs\":[]}", "runs: must be a measured-runs document" },
	};
	struct cluster_profile c = { 0 };
	struct uniap_err err = { 0 };
	size_t i;

	(void)state;
	assert_int_equal(catalog_cluster("dgx-a100", &c, &err), UNIAP_OK);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *body = cJSON_Parse(cases[i].body);
		char *text = NULL;

		assert_non_null(body);
		assert_int_equal(calibration_request(NULL, 1, body, 7, &c, 600, &text, &err), UNIAP_E_INVALID);
		assert_null(text);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, err.msg, cases[i].msg);
		cJSON_Delete(body);
	}
	cluster_release(&c);
}

static int t_polls;
static double t_limit;

static int t_never(void *ctx)
{
	(void)ctx;
	t_polls++;
	return 0;
}

static int t_always(void *ctx)
{
	(void)ctx;
	return 1;
}

static size_t t_done, t_total;

static void t_progress(void *ctx, size_t done, size_t total)
{
	(void)ctx;
	assert_true(done <= total);
	t_done = done;
	t_total = total;
}

static void t_set_limit(void *ctx, double s)
{
	(void)ctx;
	t_limit = s;
}

/* The stored request runs to a report and a named calibrated cluster; a cancel hook stops it. */
static void test_run(void **state)
{
	struct cluster_profile c = { 0 };
	struct calibration_output out;
	struct uniap_err err = { 0 };
	char *text = t_request(t_body, &c), *result;
	cJSON *doc;
	size_t len = 0;

	(void)state;
	assert_non_null(strstr(text, "{\"summary\":{\"cluster\":7,"));
	t_polls = 0;
	assert_int_equal(calibration_run(text, strlen(text), t_never, t_progress, NULL, t_set_limit, &out, &err), UNIAP_OK);
	assert_true(t_polls > 0);
	assert_true(t_limit == CALIBRATION_DEFAULT_TIME_LIMIT_S);
	assert_int_equal(t_total, 1); /* the fit alone: no leave-one-out */
	assert_int_equal(t_done, 1);
	assert_string_equal(out.name, "fitted");
	doc = cJSON_Parse(out.cluster);
	assert_non_null(doc);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(doc, "name")->valuestring, "fitted");
	assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "calibration")));
	cJSON_Delete(doc);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out.report, "fitted")));
	result = calibration_result(out.report, 12, out.name, &len);
	assert_non_null(result);
	assert_int_equal(len, strlen(result));
	assert_non_null(strstr(result, "{\"cluster\":{\"id\":12,\"name\":\"fitted\",\"links\":{\"self\":\"/v1/clusters/12\"}},"
	                               "\"report\":{"));
	cJSON_free(result);
	calibration_output_release(&out);

	assert_int_equal(calibration_run(text, strlen(text), t_always, NULL, NULL, NULL, &out, &err), UNIAP_E_CANCELED);
	assert_null(out.cluster);
	calibration_output_release(&out);
	cJSON_free(text);
	cluster_release(&c);

	/* with leave-one-out the progress counts the fit and one fold per measured run */
	text = t_request("{\"leave_one_out\":true,\"runs\":{\"model\":\"bert-huge\",\"runs\":["
	                 "{\"name\":\"a\",\"batch\":32,\"uniform\":{\"pp\":1,\"tp\":1,\"dp\":8,\"microbatches\":1},"
	                 "\"measured\":{\"iteration_s\":1.2}},"
	                 "{\"name\":\"b\",\"batch\":32,\"uniform\":{\"pp\":1,\"tp\":8,\"microbatches\":4},"
	                 "\"measured\":{\"iteration_s\":2.6}}]}}", &c);
	t_done = t_total = 0;
	assert_int_equal(calibration_run(text, strlen(text), t_never, t_progress, NULL, NULL, &out, &err), UNIAP_OK);
	assert_int_equal(t_total, 3);
	assert_int_equal(t_done, 3);
	calibration_output_release(&out);
	cJSON_free(text);
	cluster_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_request_errors),
		cmocka_unit_test(test_run),
	};

	calib_global_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
