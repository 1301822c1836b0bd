/*
 * fuzz_jobs.c - libFuzzer target for the jobs document of `uniap allocate`
 * (json/jobs.c) and the allocation behind it (core/alloc.c).  One input is one
 * jobs document given to jobs_decode() as untrusted bytes.
 *
 * Invariants: UNIAP_OK, or UNIAP_E_INVALID / _MALFORMED / _LIMIT / _NOMEM
 * with a non-empty message and the document released and zeroed.  A document
 * that decodes has unique non-empty names, batches >= 1, weights > 0, caps
 * no smaller than minimums and a model and spec per job; allocating its jobs
 * on 2 nodes of 8 devices with made-up curves under every objective gives an
 * allocation within the devices, placed on distinct devices, or an error
 * (infeasible, or invalid where the deadline objective lacks samples).
 * Seeds: fuzz/corpus/jobs/.
 *
 * Thread safety: stateless.  Never: keep state between inputs.
 */
#include <math.h>

#include "alloc.h"
#include "fuzz.h"
#include "jobs.h"

#define FUZZ_JOBS_CODES                                                                 \
	(FUZZ_CODE(UNIAP_E_INVALID) | FUZZ_CODE(UNIAP_E_MALFORMED) | FUZZ_CODE(UNIAP_E_LIMIT) | \
	 FUZZ_CODE(UNIAP_E_NOMEM))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jobs_doc d;
	struct uniap_err err = { 0 };
	int sizes[ALLOC_MAX_SIZES], o;
	size_t n_sizes = alloc_sizes(2, 8, sizes, ALLOC_MAX_SIZES), i, k;
	uniap_code rc = jobs_decode((const char *)data, size, &d, &err);
	static double thr[ALLOC_MAX_JOBS * ALLOC_MAX_SIZES];
	static struct alloc_job aj[ALLOC_MAX_JOBS];

	if (rc != UNIAP_OK) {
		fuzz_check_err(rc, &err, FUZZ_JOBS_CODES, NULL);
		FUZZ_CHECK(fuzz_all_zero(&d, sizeof(d)), "a failed decode left the document set");
		return 0;
	}
	FUZZ_CHECK(d.n_jobs >= 1 && d.n_jobs <= ALLOC_MAX_JOBS && d.n_models == d.n_jobs, "%zu jobs, %zu models",
	           d.n_jobs, d.n_models);
	for (i = 0; i < d.n_jobs; i++) {
		const struct jobs_job *j = &d.jobs[i];

		FUZZ_CHECK(j->name && j->name[0] && j->spec && j->model < d.n_models, "job %zu incomplete", i);
		FUZZ_CHECK(j->batch >= 1 && j->weight > 0 && j->min_devices >= 0 &&
		                   (j->max_devices == 0 || j->max_devices >= j->min_devices),
		           "job %zu: batch %ld weight %g min %ld max %ld", i, j->batch, j->weight, j->min_devices,
		           j->max_devices);
		for (k = 0; k < i; k++)
			FUZZ_CHECK(strcmp(d.jobs[k].name, j->name) != 0, "duplicate name %s", j->name);
		/* made-up curves: grow with the size, none at sizes over the batch */
		for (k = 0; k < n_sizes; k++)
			thr[i * n_sizes + k] = sizes[k] <= j->batch ? (double)sizes[k] * (1.0 + (double)(i % 3)) : 0;
		FUZZ_CHECK(j->deadline_s >= 0 && (j->deadline_s == 0 || j->samples > 0), "job %zu: deadline %g samples %g",
		           i, j->deadline_s, j->samples);
		aj[i] = (struct alloc_job){ j->name, j->weight, (int)j->min_devices, (int)j->max_devices, j->samples,
		                            thr + i * n_sizes, -1, j->deadline_s };
	}
	for (o = ALLOC_THROUGHPUT; o < ALLOC_OBJECTIVE_COUNT; o++) {
		struct alloc_result r;
		int first[ALLOC_MAX_JOBS], used[16] = { 0 }, dv;

		rc = alloc_solve(aj, d.n_jobs, sizes, n_sizes, 16, (enum alloc_objective)o, 0.05, &r, &err);
		if (rc != UNIAP_OK) {
			FUZZ_CHECK(rc == UNIAP_E_INFEASIBLE || rc == UNIAP_E_INVALID || rc == UNIAP_E_NOMEM ||
			                   rc == UNIAP_E_LIMIT,
			           "alloc_solve: %s: %s", uniap_code_name(rc), err.msg);
			continue;
		}
		FUZZ_CHECK(r.devices_used <= 16, "%d devices used of 16", r.devices_used);
		FUZZ_CHECK(alloc_place(&r, d.n_jobs, sizes, 2, 8, NULL, first) >= 0, "no placement");
		for (i = 0; i < d.n_jobs; i++)
			for (dv = first[i]; r.size_index[i] >= 0 && dv < first[i] + sizes[r.size_index[i]]; dv++) {
				FUZZ_CHECK(dv >= 0 && dv < 16 && !used[dv], "device %d placed twice", dv);
				used[dv] = 1;
			}
		alloc_result_release(&r);
	}
	jobs_doc_release(&d);
	return 0;
}
