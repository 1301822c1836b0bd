/*
 * fuzz_galvatron_model.c - libFuzzer target for galv_model_json()
 * (json/galvatron.c), the Galvatron model importer.  One input is what
 * POST /v1/models?format=galvatron takes: a JSON object with the parsed files
 * "config", "computation" and "memory", and "precision", "seq", "bsz",
 * "sequence_parallel" (absent or out-of-range ones take defaults here).
 *
 * Invariants: UNIAP_OK with a document that decodes as a model, or an error
 * of galvatron.h's set with a message that names one of the files
 * ("fz.config", ...).  Seeds: fuzz/corpus/galvatron_model/.
 *
 * Thread safety: stateless.  Never: keep state between inputs.
 */
#include "fuzz_import.h"
#include "galvatron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const precisions[] = { "bf16", "fp16", "fp32" };
	struct galv_model_input in = {
		.config_name = "fz.config",
		.computation_name = "fz.computation",
		.memory_name = "fz.memory",
	};
	struct uniap_err err = { 0 };
	cJSON *body = NULL, *out = NULL;
	uniap_code rc;

	if (jdec_parse((const char *)data, size, "fz", &body, &err) != UNIAP_OK)
		return 0;
	in.config = fuzz_import_object(body, "config");
	in.computation = fuzz_import_object(body, "computation");
	in.memory = fuzz_import_object(body, "memory");
	in.precision = precisions[fuzz_import_int(body, "precision", 0, 2, 0)];
	in.seq = fuzz_import_int(body, "seq", 1, 999999999, 0);
	in.bsz = fuzz_import_int(body, "bsz", 1, 999999999, 0);
	in.sequence_parallel = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "sequence_parallel"));
	if (in.config && in.computation && in.memory) {
		rc = galv_model_json(&in, &out, NULL, &err);
		fuzz_galv_outcome(rc, out, &err, 0);
	}
	cJSON_Delete(body);
	return 0;
}
