/*
 * fuzz_nccl.c - libFuzzer target for the nccl-tests importer (json/nccl.c).
 * One input is the text of one nccl-tests run: nccl_parse() reads it (kind
 * and ranks inferred), then nccl_cluster_json() overlays it on a fixed
 * 2 x 8-device base cluster.
 *
 * Invariants: nccl_parse gives UNIAP_OK with at least one row and a finite,
 * positive bandwidth, or an error rooted at the input's name ("fz");
 * nccl_cluster_json gives a document that decodes as a cluster, or an error
 * rooted at "fz" or "base".  Seeds: fuzz/corpus/nccl/.
 *
 * Thread safety: stateless (the base is parsed once, read-only after).
 * Never: keep state between inputs.
 */
#include <math.h>

#include "fuzz_import.h"
#include "nccl.h"

#define FUZZ_NCCL_CODES                                                                 \
	(FUZZ_CODE(UNIAP_E_INVALID) | FUZZ_CODE(UNIAP_E_MALFORMED) | FUZZ_CODE(UNIAP_E_NOTFOUND) | \
	 FUZZ_CODE(UNIAP_E_ARG) | FUZZ_CODE(UNIAP_E_LIMIT) | FUZZ_CODE(UNIAP_E_NOMEM))

static const char fuzz_nccl_base_json[] =
	"{\"name\":\"base\",\"nodes\":2,\"devices_per_node\":8,"
	"\"device\":{\"name\":\"H100\",\"memory_bytes\":85899345920,\"reserved_bytes\":2147483648},"
	"\"hierarchy\":[{\"name\":\"nvlink\",\"devices\":8,\"bandwidth_gb_per_s\":300},"
	"{\"name\":\"ib\",\"devices\":16,\"bandwidth_gb_per_s\":25}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static cJSON *base;
	struct uniap_err err = { 0 };
	struct nccl_input in = { .text = (const char *)data, .len = size, .name = "fz" };
	struct nccl_run run;
	cJSON *out = NULL;
	uniap_code rc;

	if (!base) {
		base = cJSON_Parse(fuzz_nccl_base_json);
		FUZZ_CHECK(base != NULL, "base cluster does not parse");
	}
	rc = nccl_parse(in.text, in.len, in.name, NCCL_KIND_NONE, 0, &run, &err);
	if (rc != UNIAP_OK) {
		fuzz_check_err(rc, &err, FUZZ_NCCL_CODES, "fz");
		return 0;
	}
	FUZZ_CHECK(run.rows >= 1 && run.ranks >= 1, "a run without rows or ranks");
	FUZZ_CHECK(isfinite(run.busbw_gb_per_s) && run.busbw_gb_per_s >= 0 && isfinite(run.max_size_bytes),
	           "bandwidth %g at %g bytes", run.busbw_gb_per_s, run.max_size_bytes);
	err.msg[0] = '\0';
	rc = nccl_cluster_json(base, "base", &in, 1, 0, &out, NULL, &err);
	if (rc == UNIAP_OK) {
		FUZZ_CHECK(out != NULL, "UNIAP_OK without a document");
		fuzz_import_decodes(out, 1);
		cJSON_Delete(out);
	} else {
		fuzz_check_err(rc, &err, FUZZ_NCCL_CODES, NULL);
		FUZZ_CHECK(fuzz_rooted(err.msg, "fz") || fuzz_rooted(err.msg, "base"),
		           "%s: \"%s\" names neither the input nor the base", uniap_code_name(rc), err.msg);
		FUZZ_CHECK(out == NULL, "%s with a document", uniap_code_name(rc));
	}
	return 0;
}
