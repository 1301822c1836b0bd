/*
 * fuzz_plan.c - libFuzzer target: one input is a plan document for
 * jdec_plan() (json/jdecode.c); fuzz_doc.h states the invariants checked.
 * Seeds: fuzz/corpus/plan/.
 *
 * Thread safety: stateless.  Never: keep state between inputs.
 */
#include "fuzz_doc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_doc(data, size, FUZZ_DOC_PLAN);
}
