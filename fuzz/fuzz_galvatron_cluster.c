/*
 * fuzz_galvatron_cluster.c - libFuzzer target for galv_cluster_json()
 * (json/galvatron.c), the Galvatron hardware importer.  One input is what
 * POST /v1/clusters?format=galvatron takes: a JSON object with "nodes",
 * "gpus_per_node" and the parsed files "allreduce", "p2p", "overlap" and
 * "sp_time" (out-of-range numbers and absent files take defaults here, so
 * the importer sees every file the fuzzer makes).
 *
 * Invariants: UNIAP_OK with a document that decodes as a cluster, or an
 * error of galvatron.h's set with a message that names one of the files
 * ("fz.allreduce", ...).  Seeds: fuzz/corpus/galvatron_cluster/.
 *
 * Thread safety: stateless.  Never: keep state between inputs.
 */
#include "fuzz_import.h"
#include "galvatron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct galv_hw_input in = {
		.memory_bytes = GALV_DEFAULT_MEMORY_GIB * 1073741824.0,
		.reserved_bytes = GALV_DEFAULT_RESERVED_GIB * 1073741824.0,
		.allreduce_name = "fz.allreduce",
		.p2p_name = "fz.p2p",
		.overlap_name = "fz.overlap",
		.sp_time_name = "fz.sp_time",
	};
	struct uniap_err err = { 0 };
	cJSON *body = NULL, *out = NULL;
	uniap_code rc;

	if (jdec_parse((const char *)data, size, "fz", &body, &err) != UNIAP_OK)
		return 0;
	in.nodes = (int)fuzz_import_int(body, "nodes", 1, 65536, 1);
	in.gpus_per_node = (int)fuzz_import_int(body, "gpus_per_node", 1, 1024, 8);
	in.allreduce = fuzz_import_object(body, "allreduce");
	in.p2p = fuzz_import_object(body, "p2p");
	in.overlap = fuzz_import_object(body, "overlap");
	in.sp_time = fuzz_import_object(body, "sp_time");
	if (in.allreduce) {
		rc = galv_cluster_json(&in, &out, NULL, &err);
		fuzz_galv_outcome(rc, out, &err, 1);
	}
	cJSON_Delete(body);
	return 0;
}
