/*
 * test_nccl.c - importing nccl-tests output (json/nccl.c): a realistic
 * all_reduce_perf run over two 8-GPU hosts parses to the right ranks, hosts,
 * sizes and bus bandwidth, and overlays as the whole-cluster all-reduce
 * entry; the kind is inferred from the rows (or named by a header line or the
 * caller), one rank per host is a strided group, sendrecv becomes a p2p
 * entry; a table of garbage outputs each gives an error naming the line.
 * Every test frees what it made so ASan's leak checker stays quiet.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jdecode.h"
#include "model.h"
#include "nccl.h"

/* all_reduce_perf -b 8 -e 512M -f 8 -g 1 under mpirun -np 16 -npernode 8 (nccl-tests 2.13 layout) */
static const char ar16[] =
	"# nThread 1 nGpus 1 minBytes 8 maxBytes 536870912 step: 8(factor) warmup iters: 5 iters: 20 agg iters: 1 "
	"validation: 1 graph: 0\n"
	"#\n"
	"# Using devices\n"
	"#  Rank  0 Group  0 Pid   6899 on node-a device  0 [0000:07:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank  1 Group  0 Pid   6900 on node-a device  1 [0000:0b:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank  2 Group  0 Pid   6901 on node-a device  2 [0000:48:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank  3 Group  0 Pid   6902 on node-a device  3 [0000:4c:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank  4 Group  0 Pid   6903 on node-a device  4 [0000:88:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank  5 Group  0 Pid   6904 on node-a device  5 [0000:8b:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank  6 Group  0 Pid   6905 on node-a device  6 [0000:c8:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank  7 Group  0 Pid   6906 on node-a device  7 [0000:cb:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank  8 Group  0 Pid   6733 on node-b device  0 [0000:07:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank  9 Group  0 Pid   6734 on node-b device  1 [0000:0b:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank 10 Group  0 Pid   6735 on node-b device  2 [0000:48:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank 11 Group  0 Pid   6736 on node-b device  3 [0000:4c:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank 12 Group  0 Pid   6737 on node-b device  4 [0000:88:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank 13 Group  0 Pid   6738 on node-b device  5 [0000:8b:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank 14 Group  0 Pid   6739 on node-b device  6 [0000:c8:00] NVIDIA A100-SXM4-80GB\n"
	"#  Rank 15 Group  0 Pid   6740 on node-b device  7 [0000:cb:00] NVIDIA A100-SXM4-80GB\n"
	"node-a:6899:6899 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\r\n"
	"#\n"
	"#                                                              out-of-place                       in-place          \n"
	"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
	"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"
	"           8             2     float     sum      -1    69.12    0.00    0.00      0    72.43    0.00    0.00      0\n"
	"          64            16     float     sum      -1    65.48    0.00    0.00      0    74.40    0.00    0.00      0\n"
	"         512           128     float     sum      -1    77.85    0.01    0.01      0    76.93    0.01    0.01      0\n"
	"        4096          1024     float     sum      -1    91.30    0.04    0.08      0    90.11    0.05    0.09      0\n"
	"       32768          8192     float     sum      -1    118.2    0.28    0.52      0    117.9    0.28    0.52      0\n"
	"      262144         65536     float     sum      -1    190.5    1.38    2.58      0    189.7    1.38    2.59      0\n"
	"     2097152        524288     float     sum      -1    402.3    5.21    9.77      0    401.8    5.22    9.79      0\n"
	"    16777216       4194304     float     sum      -1   1402.6   11.96   22.43      0   1398.4   12.00   22.49      0\n"
	"   134217728      33554432     float     sum      -1   8321.4   16.13   30.24      0   8305.7   16.16   30.30      0\n"
	"   536870912     134217728     float     sum      -1  31843.0   16.86   31.61      0  31822.9   16.87   31.63      0\n"
	"# Out of bounds values : 0 OK\n"
	"# Avg bus bandwidth    : 9.87312 \n"
	"#\n";

/* 2 nodes x 8 GPUs, one measured all-reduce entry of size 16 to be replaced */
static const char base_2x8[] =
	"{\"name\":\"a100-2x8\",\"nodes\":2,\"devices_per_node\":8,\"device\":{\"memory_bytes\":85899345920},"
	"\"hierarchy\":[{\"name\":\"nvlink\",\"devices\":8,\"bandwidth_gb_per_s\":200},"
	"{\"name\":\"ib\",\"devices\":16,\"bandwidth_gb_per_s\":20}],"
	"\"collectives\":{\"allreduce\":[{\"size\":16,\"placement\":\"consecutive\",\"bandwidth_gb_per_s\":25}]}}";

#define HDR                                                                                                  \
	"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   " \
	"busbw #wrong\n"

static cJSON *parse_base(void)
{
	cJSON *b = cJSON_Parse(base_2x8);

	assert_non_null(b);
	return b;
}

/* The bandwidth of collectives.<table> entry {size, placement} in doc, or -1. */
static double entry_bw(const cJSON *doc, const char *table, int size, const char *placement)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "collectives"), table);
	const cJSON *e;

	cJSON_ArrayForEach(e, t) {
		if (cJSON_GetObjectItemCaseSensitive(e, "size")->valuedouble == size &&
		    strcmp(cJSON_GetObjectItemCaseSensitive(e, "placement")->valuestring, placement) == 0)
			return cJSON_GetObjectItemCaseSensitive(e, "bandwidth_gb_per_s")->valuedouble;
	}
	return -1;
}

static void test_parse_all_reduce(void **state)
{
	struct nccl_run r;
	struct uniap_err err = { 0 };

	(void)state;
	assert_int_equal(nccl_parse(ar16, strlen(ar16), NULL, NCCL_KIND_NONE, 0, &r, &err), UNIAP_OK);
	assert_int_equal(r.kind, NCCL_ALL_REDUCE);
	assert_int_equal(r.ranks, 16);
	assert_int_equal(r.hosts, 2);
	assert_int_equal(r.min_ranks_per_host, 8);
	assert_int_equal(r.max_ranks_per_host, 8);
	assert_int_equal(r.rows, 10);
	assert_true(r.max_size_bytes == 536870912.0);
	assert_true(fabs(r.busbw_gb_per_s - 31.62) < 1e-9); /* mean of out-of-place and in-place */
	/* the caller's rank count must agree with the rank lines */
	assert_int_equal(nccl_parse(ar16, strlen(ar16), NULL, NCCL_KIND_NONE, 8, &r, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "ranks 8 given, but the output lists 16 ranks"));
	/* a header naming another program contradicts the caller's kind */
	assert_int_equal(nccl_parse(ar16, strlen(ar16), NULL, NCCL_ALL_GATHER, 0, &r, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "does not fit all_gather_perf"));
}

static void test_overlay_whole_cluster(void **state)
{
	struct nccl_input in = { ar16, sizeof(ar16) - 1, "ar16.txt", NCCL_KIND_NONE };
	struct nccl_report rep = { "" };
	struct uniap_err err = { 0 };
	struct cluster_profile c = { 0 };
	cJSON *base = parse_base(), *doc = NULL;

	(void)state;
	assert_int_equal(nccl_cluster_json(base, "cluster", &in, 1, 0, &doc, &rep, &err), UNIAP_OK);
	assert_true(fabs(entry_bw(doc, "allreduce", 16, "consecutive") - 31.62) < 1e-9);
	assert_non_null(strstr(rep.text, "(replaces 25)"));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
	                         cJSON_GetObjectItemCaseSensitive(doc, "collectives"), "allreduce")),
	                 1);
	assert_int_equal(jdec_cluster_json(doc, NULL, &c, &err), UNIAP_OK);
	cluster_release(&c);
	/* the base is borrowed: untouched */
	assert_true(entry_bw(base, "allreduce", 16, "consecutive") == 25);
	cJSON_Delete(doc);
	/* the same run twice measures the same thing twice */
	{
		struct nccl_input two[2] = { in, in };

		two[1].name = "again.txt";
		assert_int_equal(nccl_cluster_json(base, "cluster", two, 2, 0, &doc, NULL, &err), UNIAP_E_INVALID);
		assert_null(doc);
		assert_non_null(strstr(err.msg, "again.txt: measures the same all_reduce over 16 consecutive ranks as ar16.txt"));
	}
	cJSON_Delete(base);
}

/* Rows of a 2-rank run without rank lines, one per host when hosts != NULL. */
static void test_kinds_and_placement(void **state)
{
	static const char rs[] = HDR "   134217728      16777216     float     sum      -1   1000.0   134.2   67.11      0  1000.0   134.2   67.11      0\n";
	static const char ag[] = "# all_gather_perf on two hosts\n" HDR
	                         "   134217728      16777216     float    none      -1   1000.0   134.2   67.11      0  1000.0   134.2   67.11      0\n";
	static const char sr[] = "#  Rank  0 Group  0 Pid 1 on node-a device  0 [0x07] A100\n"
	                         "#  Rank  1 Group  0 Pid 2 on node-b device  0 [0x07] A100\n" HDR
	                         "   134217728      33554432     float    none      -1   5000.0   26.84   26.84      0  5000.0   26.84   26.84    N/A\n";
	struct nccl_input in[2] = { { rs, sizeof(rs) - 1, "rs", NCCL_KIND_NONE }, { ag, sizeof(ag) - 1, "ag", NCCL_KIND_NONE } };
	struct uniap_err err = { 0 };
	struct nccl_run r;
	cJSON *base = parse_base(), *doc = NULL;
	const cJSON *p2p;

	(void)state;
	/* reduce-scatter: count = size / (4 bytes x ranks) */
	assert_int_equal(nccl_parse(rs, sizeof(rs) - 1, "rs", NCCL_KIND_NONE, 2, &r, &err), UNIAP_OK);
	assert_int_equal(r.kind, NCCL_REDUCE_SCATTER);
	/* all-gather and all-to-all print alike: without a name it is the caller's choice */
	assert_int_equal(nccl_parse(ag + 30, sizeof(ag) - 31, "ag", NCCL_KIND_NONE, 2, &r, &err), UNIAP_E_ARG);
	assert_non_null(strstr(err.msg, "name the program"));
	assert_int_equal(nccl_parse(ag + 30, sizeof(ag) - 31, "ag", NCCL_ALL_GATHER, 2, &r, &err), UNIAP_OK);
	assert_int_equal(nccl_parse(ag, sizeof(ag) - 1, "ag", NCCL_KIND_NONE, 2, &r, &err), UNIAP_OK);
	assert_int_equal(r.kind, NCCL_ALL_GATHER);
	/* two consecutive ranks without rank lines: inside one node */
	assert_int_equal(nccl_cluster_json(base, "cluster", in, 2, 2, &doc, NULL, &err), UNIAP_OK);
	assert_true(entry_bw(doc, "reduce_scatter", 2, "consecutive") == 67.11);
	assert_true(entry_bw(doc, "allgather", 2, "consecutive") == 67.11);
	cJSON_Delete(doc);
	/* sendrecv, one rank per host: strided, the stage-to-stage link of pp = nodes */
	in[0] = (struct nccl_input){ sr, sizeof(sr) - 1, "sr", NCCL_KIND_NONE };
	assert_int_equal(nccl_cluster_json(base, "cluster", in, 1, 0, &doc, NULL, &err), UNIAP_OK);
	p2p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "p2p"), 0);
	assert_non_null(p2p);
	assert_true(cJSON_GetObjectItemCaseSensitive(p2p, "pp")->valuedouble == 2);
	assert_true(cJSON_GetObjectItemCaseSensitive(p2p, "bandwidth_gb_per_s")->valuedouble == 26.84);
	cJSON_Delete(doc);
	/* all-to-all has no table */
	in[0] = (struct nccl_input){ ag + 30, sizeof(ag) - 31, "a2a", NCCL_ALLTOALL };
	assert_int_equal(nccl_cluster_json(base, "cluster", in, 1, 2, &doc, NULL, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "a2a: alltoall: a cluster document has no all-to-all table"));
	/* more ranks than the cluster has */
	in[0] = (struct nccl_input){ rs, sizeof(rs) - 1, "rs", NCCL_KIND_NONE };
	assert_int_equal(nccl_cluster_json(base, "cluster", in, 1, 32, &doc, NULL, &err), UNIAP_E_INVALID);
	cJSON_Delete(base);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_int_equal(nccl_kind_parse("all_reduce"), NCCL_ALL_REDUCE);
	assert_int_equal(nccl_kind_parse("sendrecv_perf"), NCCL_SENDRECV);
	assert_int_equal(nccl_kind_parse("broadcast"), NCCL_KIND_NONE);
	assert_int_equal(nccl_kind_in("runs/all_gather_perf-16.txt"), NCCL_ALL_GATHER);
	assert_int_equal(nccl_kind_in("all_reduce_perf vs reduce_scatter_perf"), NCCL_KIND_NONE);
	assert_string_equal(nccl_kind_name(NCCL_REDUCE_SCATTER), "reduce_scatter");
}

#define ROW_OK "   134217728      33554432     float     sum      -1   8321.4   16.13   30.24      0   8305.7   16.16   30.30      0\n"

/* Garbage outputs (ranks 8 given): each message names the line and the fault. */
static void test_garbage(void **state)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{ "hello world\n", "nccl-tests: line 1: not an nccl-tests line" },
		{ "", "nccl-tests: no data rows" },
		{ "# only comments\n#\n", "nccl-tests: no data rows" },
		{ HDR "   134217728      33554432     float     sum      -1   8321.4   16.13   30.24      3   8305.7   16.16   30.30      0\n",
		  "nccl-tests: line 2: #wrong (out-of-place): 3 wrong values" },
		{ HDR "   134217728      33554432     float     sum      -1   8321.4   16.13   30.24      0   8305.7   16.16   30.30      1\n",
		  "nccl-tests: line 2: #wrong (in-place): 1 wrong values" },
		{ HDR "   134217728      33554432     float     sum      -1   8321.4   16.13   fast      0   8305.7   16.16   30.30      0\n",
		  "nccl-tests: line 2: busbw (out-of-place): must be a number >= 0, got \"fast\"" },
		{ HDR "   134217728      33554432     float     sum      -1   8321.4   16.13   30.24      0\n",
		  "nccl-tests: line 2: expected 13 columns" },
		{ HDR "   1.5e8      33554432     float     sum      -1   8321.4   16.13   30.24      0   8305.7   16.16   30.30      0\n",
		  "nccl-tests: line 2: size: must be an integer number of bytes" },
		{ HDR ROW_OK ROW_OK, "nccl-tests: line 3: size 134217728: repeated" },
		{ HDR ROW_OK "    16777216       4194304     float     sum      -1   1402.6   11.96   22.43      0   1398.4   12.00   22.49      0\n",
		  "nccl-tests: line 3: size 16777216 after 134217728: sizes must increase" },
		{ HDR "    16777216       4194304     float     sum      -1   1402.6   11.96   22.43      0   1398.4   12.00   22.49      0\n"
		      "   134217728      33554432     float     max      -1   8321.4   16.13   30.24      0   8305.7   16.16   30.30      0\n",
		  "nccl-tests: line 3: type/redop/root" },
		{ "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n",
		  "nccl-tests: line 1: column header: expected" },
		{ HDR ROW_OK "# Out of bounds values : 12 FAILED\n", "nccl-tests: line 3: the run reports out-of-bounds values" },
		{ "#  Rank  0 Group  0 Pid 1 on a device 0 [0x07] A100\n#  Rank  0 Group  0 Pid 1 on a device 0 [0x07] A100\n",
		  "nccl-tests: line 2: rank 0 listed twice" },
		{ "#  Rank  x Group  0 Pid 1 on a device 0\n", "nccl-tests: line 1: Rank: must be an integer" },
		{ "#  Rank  3 Group  1 Pid 1 on a device 0\n#  Rank  4 Group  0 Pid 1 on a device 0\n",
		  "nccl-tests: line 2: rank 4 is in group 0" },
		{ HDR "        8192          2048     float     sum      -1    91.30    0.09    0.16      0    90.11    0.09    0.16      0\n",
		  "nccl-tests: the largest message is 8192 bytes" },
		{ HDR "   134217728      33554432     float     sum       0   8321.4   16.13   30.24      0   8305.7   16.16   30.30      0\n",
		  "nccl-tests: root 0: a rooted run" },
		{ HDR "   134217728      33554432     float     sum      -1   8321.4   16.13   30.24      0   8305.7   16.16   30.30      0\nabc\n",
		  "nccl-tests: line 3: not an nccl-tests line" },
		{ "# all_gather_perf\n" HDR ROW_OK, "nccl-tests: redop \"sum\" does not fit all_gather_perf" },
		{ HDR "   134217728      33554432     float     sum      -1   8321.4   16.13   -1      0   8305.7   16.16   30.30      0\n",
		  "nccl-tests: line 2: busbw (out-of-place): must be a number >= 0, got \"-1\"" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct uniap_err err = { 0 };
		struct nccl_run r;
		uniap_code rc = nccl_parse(cases[i].text, strlen(cases[i].text), NULL, NCCL_KIND_NONE, 8, &r, &err);

		if (rc == UNIAP_OK || !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: rc %d, message \"%s\", want \"%s\"", i, (int)rc, err.msg, cases[i].msg);
	}
	/* a NUL byte inside the text */
	{
		static const char nul[] = HDR "   1342\0" "17728\n";
		struct uniap_err err = { 0 };
		struct nccl_run r;

		assert_int_equal(nccl_parse(nul, sizeof(nul) - 1, NULL, NCCL_KIND_NONE, 8, &r, &err), UNIAP_E_INVALID);
		assert_non_null(strstr(err.msg, "line 2: holds a NUL byte"));
	}
	/* no rank lines and no rank count */
	{
		static const char t[] = HDR ROW_OK;
		struct uniap_err err = { 0 };
		struct nccl_run r;

		assert_int_equal(nccl_parse(t, sizeof(t) - 1, NULL, NCCL_KIND_NONE, 0, &r, &err), UNIAP_E_ARG);
		assert_non_null(strstr(err.msg, "number of ranks is unknown"));
	}
}

/* Placements that map to no group of the cluster. */
static void test_bad_placement(void **state)
{
	static const char three[] = "#  Rank  0 Group  0 Pid 1 on a device 0 [0] X\n#  Rank  1 Group  0 Pid 1 on a device 1 [0] X\n"
	                            "#  Rank  2 Group  0 Pid 1 on b device 0 [0] X\n" HDR ROW_OK;
	struct nccl_input in = { three, sizeof(three) - 1, "three", NCCL_KIND_NONE };
	struct uniap_err err = { 0 };
	cJSON *base = parse_base(), *doc = NULL;

	(void)state;
	assert_int_equal(nccl_cluster_json(base, "cluster", &in, 1, 0, &doc, NULL, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "three: 1 to 2 ranks per host on 2 hosts"));
	in.text = HDR ROW_OK;
	in.len = strlen(in.text);
	assert_int_equal(nccl_cluster_json(base, "cluster", &in, 1, 12, &doc, NULL, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "12 consecutive ranks neither fit in one node"));
	/* a bad base is named by its root */
	cJSON_DeleteItemFromObject(base, "nodes");
	in.len = strlen(in.text);
	assert_int_equal(nccl_cluster_json(base, "body.base", &in, 1, 8, &doc, NULL, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "body.base"));
	cJSON_Delete(base);
}

/* Rank lines longer than the tokens looked at (a device name of many words): the
 * extra words are ignored, never read past (found by fuzz/fuzz_nccl.c: the split's
 * "more than cap" count was used as a token count, a stack read past tok[]). */
static void test_long_rank_lines(void **state)
{
#define WORDS12 " w w w w w w w w w w w w"
	/* tokens 0..11 are the usual fields; token 23 is a "Group" whose value would be token 24 */
	static const char sr[] = "#  Rank  0 Group  0 Pid 1 on node-a device  0 [0x07] A100 w w w w w w w w w w w Group"
	                         WORDS12 "\n"
	                         "#  Rank  1 Group  0 Pid 2 on node-b device  0 [0x07] A100" WORDS12 WORDS12 "\n" HDR
	                         "   134217728      33554432     float    none      -1   5000.0   26.84   26.84      0  5000.0   26.84   26.84    N/A\n";
	static const char late[] = "#  Rank  0" WORDS12 WORDS12 " on node-a\n";
#undef WORDS12
	struct uniap_err err = { 0 };
	struct nccl_run r;

	(void)state;
	assert_int_equal(nccl_parse(sr, sizeof(sr) - 1, "sr", NCCL_KIND_NONE, 0, &r, &err), UNIAP_OK);
	assert_int_equal(r.kind, NCCL_SENDRECV);
	assert_int_equal(r.ranks, 2);
	assert_int_equal(r.hosts, 2);
	/* "on <host>" past the tokens looked at: no host named */
	assert_int_equal(nccl_parse(late, sizeof(late) - 1, "late", NCCL_KIND_NONE, 0, &r, &err), UNIAP_E_INVALID);
	assert_non_null(strstr(err.msg, "late: line 1: rank line without \"on <host>\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_all_reduce),   cmocka_unit_test(test_overlay_whole_cluster),
		cmocka_unit_test(test_kinds_and_placement), cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_garbage),            cmocka_unit_test(test_bad_placement),
		cmocka_unit_test(test_long_rank_lines),
	};

	return cmocka_run_group_tests_name("nccl", tests, NULL, NULL);
}
