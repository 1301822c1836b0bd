/*
 * export.h - a plan exported for people and for other training systems: the
 * plan document (json), a text summary, a Galvatron strategy config, Megatron-LM
 * command-line arguments, a DeepSpeed config, and one iteration as a Chrome
 * trace (Perfetto, chrome://tracing).  docs/export.md gives every
 * mapping and what each target refuses.  Shared by the CLI (`uniap plan
 * --format`, `uniap export`) and the service.
 *
 * A target that cannot express a plan is an error (UNIAP_E_INVALID naming the
 * layer or field), never a silently different plan.  Layer 0 and the last
 * layer of a candidate are taken as the embedding and the head, as in every
 * catalog and imported model; the layers between them are the transformer
 * layers that Galvatron and Megatron-LM count.
 *
 * Never: plan or search here; no I/O.  Outputs are capped (EXP_MAX_BYTES).
 */
#ifndef UNIAP_EXPORT_H
#define UNIAP_EXPORT_H

#include <stddef.h>

#include "cost.h"
#include "err.h"
#include "model.h"
#include "plan.h"

/* The largest exported body; a larger one is UNIAP_E_LIMIT. */
#define EXP_MAX_BYTES ((size_t)64 << 20)

enum exp_format { EXP_JSON, EXP_TEXT, EXP_GALVATRON, EXP_MEGATRON, EXP_DEEPSPEED, EXP_CHROME_TRACE };

#define EXP_FORMAT_COUNT 6

/* "json", "text", "galvatron", "megatron", "deepspeed", "chrome-trace"; 0 ok, -1 unknown. */
int exp_format_parse(const char *s, enum exp_format *out);
/* The name of f (static); "unknown" when out of range. */
const char *exp_format_name(enum exp_format f);
/* The media type of an exported body: "application/json", "text/plain; charset=utf-8", ... (static). */
const char *exp_format_media_type(enum exp_format f);

/*
 * Exports the plan (cand, stage, strategy, ev: all borrowed; ev from plan_evaluate on the same
 * assignment) of model (borrowed; may be NULL, which only megatron refuses: it needs model->shape)
 * as f into *out (owned, NUL-terminated, free()) of *len bytes.  UNIAP_E_INVALID with a message
 * naming the layer/field when the target cannot express this plan (e.g. Megatron needs one
 * strategy for every layer, and the model's shape) or when ev is not a valid placement;
 * UNIAP_E_NOMEM; UNIAP_E_LIMIT.  A plan over the memory limit is exported (the text says so).
 */
uniap_code exp_plan(enum exp_format f, const struct model_profile *model, const struct cost_candidate *cand,
                    const int *stage, const size_t *strategy, const struct plan_eval *ev, char **out,
                    size_t *len, struct uniap_err *err);

/*
 * The text format with extra words for front ends: the first line is
 * "plan: <prefix>pp P microbatches C ... throughput T samples/s<suffix>\n"
 * (prefix and suffix borrowed, may be NULL), then one line per stage.  The
 * same ownership and errors as exp_plan().
 */
uniap_code exp_plan_text(const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                         const struct plan_eval *ev, const char *prefix, const char *suffix,
                         char **out, size_t *len, struct uniap_err *err);

/*
 * The same from a plan document p (borrowed, as decoded by jdec_plan) on cluster and model (borrowed,
 * validated): builds the candidate (batch = microbatches * microbatch_size, p's pp/schedule/recompute),
 * resolves the plan with plan_doc_resolve (errors rooted at "plan"), evaluates it and exports it.
 */
uniap_code exp_plan_doc(enum exp_format f, const struct cluster_profile *cluster,
                        const struct model_profile *model, const struct plan_doc *p, char **out,
                        size_t *len, struct uniap_err *err);

#endif
