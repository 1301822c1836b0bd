#!/bin/sh
# tests/cli/nccl.sh - `uniap import nccl-tests` end to end: an all_reduce_perf
# run over one 8-GPU host overlays the node-level all-reduce entry of a
# catalog cluster and of a cluster file, the kind comes from the file name or
# --kind, the result plans, and bad input exits 1 (naming the file and line)
# or 2 (bad command line).  Prints "nccl: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"

cat >"$tmp/run8.txt" <<'EOF'
# nThread 1 nGpus 8 minBytes 1048576 maxBytes 134217728 step: 8(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  40211 on    dgx-a01 device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  40211 on    dgx-a01 device  1 [0x0b] NVIDIA A100-SXM4-80GB
#  Rank  2 Group  0 Pid  40211 on    dgx-a01 device  2 [0x48] NVIDIA A100-SXM4-80GB
#  Rank  3 Group  0 Pid  40211 on    dgx-a01 device  3 [0x4c] NVIDIA A100-SXM4-80GB
#  Rank  4 Group  0 Pid  40211 on    dgx-a01 device  4 [0x88] NVIDIA A100-SXM4-80GB
#  Rank  5 Group  0 Pid  40211 on    dgx-a01 device  5 [0x8b] NVIDIA A100-SXM4-80GB
#  Rank  6 Group  0 Pid  40211 on    dgx-a01 device  6 [0xc8] NVIDIA A100-SXM4-80GB
#  Rank  7 Group  0 Pid  40211 on    dgx-a01 device  7 [0xcb] NVIDIA A100-SXM4-80GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    60.25   17.40   30.45      0    59.90   17.51   30.63      0
     8388608       2097152     float     sum      -1    120.4   69.67  121.92      0    119.8   70.02  122.54      0
    67108864      16777216     float     sum      -1    452.1  148.44  259.77      0    451.0  148.80  260.40      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 132.6
EOF
# the same run read as all_gather_perf's (redop none, count per rank)
awk '!/^#/ { $2 = sprintf("%d", $1 / 32); $4 = "none" } { print }' "$tmp/run8.txt" >"$tmp/all_gather_perf.txt"
sed 's/260.40      0$/260.40      2/' "$tmp/run8.txt" >"$tmp/wrong.txt"

check help 0 "usage: uniap import nccl-tests" -- "$UNIAP" import nccl-tests --help
check help-import 0 "uniap import nccl-tests" -- "$UNIAP" import --help
check no-base 2 "--cluster BASE is required" -- "$UNIAP" import nccl-tests "$tmp/run8.txt"
check no-file 2 "no FILE given" -- "$UNIAP" import nccl-tests --cluster dgx-a100
check bad-kind 2 "--kind: unknown kind 'broadcast'" -- "$UNIAP" import nccl-tests --cluster dgx-a100 --kind broadcast "$tmp/run8.txt"
check bad-ranks 2 "--ranks" -- "$UNIAP" import nccl-tests --cluster dgx-a100 --ranks 1 "$tmp/run8.txt"
check unknown-option 2 "unknown or incomplete option" -- "$UNIAP" import nccl-tests --frob

check catalog 0 '"allreduce":[{"size":8,"placement":"consecutive","bandwidth_gb_per_s":260.085}]' -- \
	"$UNIAP" import nccl-tests --cluster dgx-a100 "$tmp/run8.txt" --quiet
check report 0 "all_reduce over 8 ranks on 1 host(s), 3 sizes up to 67108864 bytes" -- \
	"$UNIAP" import nccl-tests --cluster dgx-a100 "$tmp/run8.txt"
check two-files 0 '"allgather":[{"size":8,"placement":"consecutive","bandwidth_gb_per_s":260.085}]' -- \
	"$UNIAP" import nccl-tests --cluster dgx-a100 "$tmp/run8.txt" "$tmp/all_gather_perf.txt" --quiet
cp "$tmp/all_gather_perf.txt" "$tmp/ag.txt"
check kind-option 0 '"allgather":[{"size":8' -- \
	"$UNIAP" import nccl-tests --cluster dgx-a100 --kind all_gather "$tmp/ag.txt" --quiet
check kind-contradicts 1 'ag.txt: redop "none" does not fit reduce_scatter_perf' -- \
	"$UNIAP" import nccl-tests --cluster dgx-a100 --kind reduce_scatter "$tmp/ag.txt" "$tmp/run8.txt"
check file-base 0 '"bandwidth_gb_per_s":260.085' -- \
	"$UNIAP" import nccl-tests --cluster schema/examples/cluster-8gpu-nvlink.json "$tmp/run8.txt" --quiet
check cluster-out 0 "" -- sh -c "\"$UNIAP\" import nccl-tests --cluster dgx-a100 \"$tmp/run8.txt\" --quiet >\"$tmp/c.json\""
check plans 0 "" -- "$UNIAP" plan --cluster "$tmp/c.json" --model bert-huge --batch 8

check wrong 1 "wrong.txt: line 18: #wrong (in-place): 2 wrong values" -- \
	"$UNIAP" import nccl-tests --cluster dgx-a100 "$tmp/wrong.txt"
printf 'garbage\n' >"$tmp/garbage.txt"
check garbage 1 "garbage.txt: line 1: not an nccl-tests line" -- "$UNIAP" import nccl-tests --cluster dgx-a100 "$tmp/garbage.txt"
check missing 1 "nope.txt" -- "$UNIAP" import nccl-tests --cluster dgx-a100 "$tmp/nope.txt"
check too-many-ranks 1 "8 ranks on one host, but a node has 4 devices" -- "$UNIAP" import nccl-tests --cluster envb "$tmp/run8.txt"
check ranks-disagree 2 "ranks 16 given, but the output lists 8 ranks" -- \
	"$UNIAP" import nccl-tests --cluster dgx-a100-x2 --ranks 16 "$tmp/run8.txt"
check ambiguous 2 "name the program" -- "$UNIAP" import nccl-tests --cluster dgx-a100 "$tmp/ag.txt"
check bad-base 1 "" -- "$UNIAP" import nccl-tests --cluster no-such-cluster "$tmp/run8.txt"

summary nccl
