/*
 * calibration.h - calibration jobs of uniapd (POST
 * /v1/clusters/{id}/calibrations, docs/calibration.md): the request checked
 * and stored at submission, and the work a job thread does with it
 * (json/runs.h runs_calibrate, the same as `uniap calibrate`).
 *
 * A stored request is {"summary": {"cluster": id, "fit"?, "leave_one_out",
 * "prior_weight", "name"?, "time_limit_s"}, "cluster": document, "runs":
 * measured-runs document}: the cluster and every model the runs name by a
 * stored id are resolved at submission (stored models are written inline),
 * so a bad document is a 422 then and a job never depends on a document
 * deleted later.
 *
 * Never: answer HTTP, hold a store transaction across the fit, or change a
 * stored document (the calibrated cluster is a new one, stored by the runner).
 */
#ifndef UNIAP_CALIBRATION_H
#define UNIAP_CALIBRATION_H

#include <stddef.h>
#include <stdint.h>

#include "calib.h"
#include "err.h"
#include "store.h"

struct cJSON;

/* Seconds a calibration may run when the request gives no time_limit_s. */
#define CALIBRATION_DEFAULT_TIME_LIMIT_S 300.0

/* The options of a request (body or stored summary). */
struct calibration_options {
	const char *fit[CALIB_MAX_PARAMS]; /* borrowed from the JSON object they were read from */
	size_t n_fit;
	int has_fit;                       /* 0: the default selection */
	int leave_one_out;
	int allow_bounds;                  /* keep a fit whose parameters sit on their bounds */
	double prior_weight;
	const char *name;                  /* borrowed; NULL: the cluster's own name */
	double time_limit_s;
};

/*
 * Reads the options of obj (borrowed): "fit" (array of 1..CALIB_MAX_PARAMS
 * strings), "leave_one_out" (boolean), "prior_weight" (finite number >= 0),
 * "name" (1..STORE_NAME_MAX bytes), "time_limit_s" (0.001..max_time_limit_s,
 * max_time_limit_s <= 0: 86400) and the one other key `extra` ("runs" in a
 * body, "cluster" in a stored summary: the caller's to read); any other key,
 * or one given twice, is UNIAP_E_INVALID rooted at root ("body").  *o
 * borrows from obj.
 */
uniap_code calibration_options_json(const struct cJSON *obj, const char *root, const char *extra,
                                    double max_time_limit_s, struct calibration_options *o,
                                    struct uniap_err *err);

/*
 * Checks a request body (borrowed) for the tenant's stored cluster
 * cluster_id, already decoded into c (borrowed): its options, its runs
 * document (models given by stored id are read from the tenant's documents
 * and written inline; every message names the JSON path, "runs.runs[1].
 * measured"), that the runs resolve on c and that fit names parameters c
 * has.  On success *text is the stored request (owned, cJSON_free()).
 */
uniap_code calibration_request(struct store *store, int64_t tenant, const struct cJSON *body, int64_t cluster_id,
                               const struct cluster_profile *c, double max_time_limit_s, char **text,
                               struct uniap_err *err);

/* What a calibration job made. */
struct calibration_output {
	struct cJSON *report;     /* owned: the report of docs/calibration.md */
	char *cluster;            /* owned text: the calibrated cluster document with its record */
	char name[STORE_NAME_MAX + 1];
};

/*
 * Runs the stored request text[0..len) (borrowed): decodes it, calibrates
 * with cancel polled and progress told the fits done (the fit, then each
 * leave-one-out fold; runs.h runs_calibrate_in), and fills *out (caller's;
 * calibration_output_release(), also after a failure).  set_limit gets the
 * request's time limit (for the caller's cancel hook) before any work
 * starts.  Every hook may be NULL and is called with ctx.
 * UNIAP_E_CANCELED when cancel stopped it.
 */
uniap_code calibration_run(const char *text, size_t len, int (*cancel)(void *ctx),
                           void (*progress)(void *ctx, size_t done, size_t total), void *ctx,
                           void (*set_limit)(void *ctx, double time_limit_s), struct calibration_output *out,
                           struct uniap_err *err);
void calibration_output_release(struct calibration_output *out);

/*
 * The job's result text (owned, cJSON_free()): {"cluster": {"id", "name",
 * "links": {"self"}}, "report": report} with report (borrowed).  NULL on out
 * of memory.
 */
char *calibration_result(const struct cJSON *report, int64_t cluster_id, const char *name, size_t *len);

#endif
