/*
 * allocation.h - allocation jobs of uniapd (POST /v1/allocations,
 * docs/allocation.md): the request checked and stored at submission, and
 * decoded again on the job thread, which runs json/allocate.h's engine with
 * the runner's shared worker pool as its planner (runner.c).
 *
 * A stored request is {"summary": {"objective", "restart_cost", "drain",
 * "no_plans", "time_limit_s", "clusters": [refs]}, "clusters": [cluster
 * documents], "jobs": jobs document, "current"?: report, "curves"?: report}:
 * clusters and models named by stored id are resolved at submission and
 * written inline, so a bad document is a 422 then and a job never depends on
 * a document deleted later; the refs say what the client named (an id, a
 * catalog name or "inline").
 *
 * Never: answer HTTP, plan at submission, keep state.
 */
#ifndef UNIAP_ALLOCATION_H
#define UNIAP_ALLOCATION_H

#include <stddef.h>
#include <stdint.h>

#include "allocate.h"
#include "err.h"
#include "jobs.h"
#include "store.h"

struct cJSON;

/* A stored request, decoded (allocation_decode). */
struct allocation_input {
	struct cluster_profile clusters[ALLOC_MAX_POOLS];
	size_t n_pools;
	struct jobs_doc doc;
	struct allocate_options opts; /* drain borrows from root */
	struct cJSON *root;           /* owned: the parsed request */
	const struct cJSON *current;  /* borrowed from root; NULL: none */
	const struct cJSON *curves;
};

/*
 * Checks a request body (borrowed) for the tenant: "cluster" (one ref) or
 * "clusters" (1 .. ALLOC_MAX_POOLS refs: a stored id, a catalog name or a
 * cluster document), "jobs" (the jobs of a jobs document; a model may also
 * be a stored id), the options (allocate_options_json), "current" and
 * "curves" (earlier allocation reports); every message names the body's path
 * ("body.jobs[1].model", "body.drain").  On success *text is the stored
 * request (owned, cJSON_free()).
 */
uniap_code allocation_request(struct store *store, int64_t tenant, const struct cJSON *body, double max_time_limit_s,
                              char **text, struct uniap_err *err);

/* Decodes a stored request text[0..len) (borrowed) into *in (caller's; release it also after a failure). */
uniap_code allocation_decode(const char *text, size_t len, struct allocation_input *in, struct uniap_err *err);
void allocation_input_release(struct allocation_input *in);

/* The engine's request for *in (borrowed), without planner or hooks: the caller adds them. */
void allocation_engine_request(const struct allocation_input *in, struct allocate_request *rq);

#endif
