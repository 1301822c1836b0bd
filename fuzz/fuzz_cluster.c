/*
 * fuzz_cluster.c - libFuzzer target: one input is a cluster document for
 * jdec_cluster() (json/jdecode.c); fuzz_doc.h states the invariants checked.
 * Seeds: fuzz/corpus/cluster/.
 *
 * Thread safety: stateless.  Never: keep state between inputs.
 */
#include "fuzz_doc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_doc(data, size, FUZZ_DOC_CLUSTER);
}
