#!/bin/sh
# tests/cli/imports.sh - the imports of POST /v1/clusters and /v1/models
# against a real uniapd (--no-auth): ?format=galvatron with the Galvatron
# v2.4.0 fixtures (a cluster and a model), ?format=nccl-tests on a catalog
# base, on a stored id and on an inline document; a plan job on the
# imported documents reaches succeeded; bad imports answer 422 with the JSON
# pointer of the member, an unknown format 400 naming format.  Bodies are
# built with printf/cat/awk only (no python3 or jq on the CI machine).  Needs
# curl.  Prints "imports: N passed, N failed".
set -u
FIX=../shared/fixtures/galvatron-v2.4.0
[ -d "$FIX" ] || FIX=/work/shared/fixtures/galvatron-v2.4.0
if [ ! -d "$FIX" ]; then
	# a clone without ../shared beside it: the README's own examples/ are
	# checked by tests/cli/readme.sh; these measured profiles are not there
	echo "imports: Galvatron's fixtures (../shared/fixtures/galvatron-v2.4.0) are absent: skipped"
	echo "imports: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
HW=$FIX/hardware
MD=$FIX/models/bert_hf
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# call NAME WANT_STATUS NEEDLE METHOD PATH [BODY_FILE]: the status and a substring of the body
call() {
	name=$1 want=$2 needle=$3 method=$4 path=$5
	if [ $# -ge 6 ]; then
		code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X "$method" -H "Content-Type: application/json" \
			--data-binary "@$6" "http://127.0.0.1:$port$path")
	else
		code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X "$method" "http://127.0.0.1:$port$path")
	fi
	if [ "$code" != "$want" ]; then
		bad "$name: status $code, want $want; body: $(head -c 300 "$tmp/body")"
	elif [ -n "$needle" ] && ! grep -qF -- "$needle" "$tmp/body"; then
		bad "$name: response lacks '$needle'; body: $(head -c 300 "$tmp/body")"
	else
		ok
	fi
}

last_id() { sed -n 's/^{"id":\([0-9]*\).*/\1/p' "$tmp/body"; }

# json_string FILE: the file's text as one JSON string
json_string() {
	awk 'BEGIN { printf "\"" } { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); printf "%s\\n", $0 }
		END { printf "\"" }' "$1"
}

# an all_reduce_perf run over the 8 GPUs of one host
cat >"$tmp/ar8.txt" <<'EOF'
# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
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
    16777216       4194304     float     sum      -1    171.3   97.94  171.40      0    170.8   98.23  171.90      0
   134217728      33554432     float     sum      -1    812.4  165.21  289.12      0    810.9  165.52  289.66      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 163.5
EOF
sed 's/sum      -1    812.4  165.21  289.12      0/sum      -1    812.4  165.21  289.12      7/' "$tmp/ar8.txt" >"$tmp/wrong.txt"

if ! start_uniapd --no-auth; then
	bad "start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	summary imports
	exit 1
fi

# ---- Galvatron cluster: the 1 node x 8 GPU file set
{
	printf '{"name":"galv-a100-8","nodes":1,"gpus_per_node":8,"memory_bytes":85899345920,"allreduce":'
	cat "$HW/allreduce_bandwidth_1nodes_8gpus_per_node.json"
	printf ',"p2p":'
	cat "$HW/p2p_bandwidth_1nodes_8gpus_per_node.json"
	printf ',"overlap":'
	cat "$HW/overlap_coefficient.json"
	printf ',"sp_time":'
	cat "$HW/sp_time_1nodes_8gpus_per_node.json"
	printf '}'
} >"$tmp/gcluster.json"
call galv-cluster 201 '"kind":"cluster"' POST "/v1/clusters?format=galvatron" "$tmp/gcluster.json"
gc=$(last_id)
call galv-cluster-name 200 '"name":"galv-a100-8"' GET "/v1/clusters/$gc"
call galv-cluster-doc 200 '"overlap_coefficient":1.125552573612729' GET "/v1/clusters/$gc"

# ---- Galvatron model: BERT-large
{
	printf '{"config":'
	cat "$MD/bert-large-uncased.json"
	printf ',"computation":'
	cat "$MD/computation_profiling_bf16_hidden1024_head16.json"
	printf ',"memory":'
	cat "$MD/memory_profiling_bf16_hidden1024_head16.json"
	printf ',"seq":512}'
} >"$tmp/gmodel.json"
call galv-model 201 '"kind":"model"' POST "/v1/models?format=galvatron" "$tmp/gmodel.json"
gm=$(last_id)
call galv-model-doc 200 '"layer_types"' GET "/v1/models/$gm"
call galv-model-name 200 '"name":"galvatron-seq512"' GET "/v1/models/$gm"

# ---- Galvatron model: Llama-7B, profiled at bsz 1..14: the forward time's fixed part is kept
LD=$FIX/models/llama_hf
{
	printf '{"config":'
	cat "$LD/llama-7b.json"
	printf ',"computation":'
	cat "$LD/computation_profiling_bf16_hidden4096_head32_seqlen2048.json"
	printf ',"memory":'
	cat "$LD/memory_profiling_bf16_hidden4096_head32_seqlen2048.json"
	printf '}'
} >"$tmp/gllama.json"
call galv-llama 201 '"kind":"model"' POST "/v1/models?format=galvatron" "$tmp/gllama.json"
call galv-llama-fixed 200 '"forward_fixed_s":0.00147' GET "/v1/models/$(last_id)"

# ---- nccl-tests on a catalog base, on the stored Galvatron cluster, on an inline document
{
	printf '{"name":"dgx-measured","base":"dgx-a100","outputs":['
	json_string "$tmp/ar8.txt"
	printf ']}'
} >"$tmp/nccl.json"
call nccl-catalog 201 '"name":"dgx-measured"' POST "/v1/clusters?format=nccl-tests" "$tmp/nccl.json"
nc=$(last_id)
call nccl-catalog-doc 200 '"allreduce":[{"size":8,"placement":"consecutive","bandwidth_gb_per_s":289.39}]' \
	GET "/v1/clusters/$nc"
{
	printf '{"base":%s,"outputs":[{"kind":"all_gather","text":' "$gc"
	sed 's/     sum      -1 /    none      -1 /; s/  33554432 /   4194304 /; s/   4194304 /    524288 /; s/    262144 /     32768 /' \
		"$tmp/ar8.txt" | json_string /dev/stdin
	printf '}]}'
} >"$tmp/nccl-ag.json"
call nccl-stored 201 '"kind":"cluster"' POST "/v1/clusters?format=nccl-tests" "$tmp/nccl-ag.json"
call nccl-stored-doc 200 '"allgather":[{"size":8,"placement":"consecutive","bandwidth_gb_per_s":289.39}]' \
	GET "/v1/clusters/$(last_id)"
{
	printf '{"base":'
	cat schema/examples/cluster-8gpu-nvlink.json
	printf ',"outputs":['
	json_string "$tmp/ar8.txt"
	printf ']}'
} >"$tmp/nccl-inline.json"
call nccl-inline 201 '"kind":"cluster"' POST "/v1/clusters?format=nccl-tests" "$tmp/nccl-inline.json"

# ---- a plan job on the imported documents
printf '{"cluster":%s,"model":%s,"batch":8}' "$nc" "$gm" >"$tmp/plan.json"
call plan 202 '"links":{"self":"/v1/jobs/' POST /v1/plans "$tmp/plan.json"
job=$(last_id)
i=0
state=
while [ $i -lt 600 ]; do
	curl -s -o "$tmp/job" "http://127.0.0.1:$port/v1/jobs/$job"
	state=$(sed -n 's/^{"id":[0-9]*,"state":"\([a-z]*\)".*/\1/p' "$tmp/job")
	case $state in queued | running) sleep 0.1 ;; *) break ;; esac
	i=$((i + 1))
done
if [ "$state" = succeeded ]; then ok; else bad "plan-job: state '$state': $(head -c 300 "$tmp/job")"; fi
printf '{"cluster":%s,"model":%s,"batch":8}' "$gc" "$gm" >"$tmp/plan2.json"
call plan-galv 202 '"links":{"self":"/v1/jobs/' POST /v1/plans "$tmp/plan2.json"

# ---- bad imports: 400 naming format, 422 naming the member
call bad-format 400 '"detail":"format: must be' POST "/v1/clusters?format=megatron" "$tmp/gcluster.json"
call bad-format-model 400 'format' POST "/v1/models?format=nccl-tests" "$tmp/gmodel.json"
printf '{"nodes":1,"gpus_per_node":8}' >"$tmp/b1.json"
call galv-no-allreduce 422 '"pointer":"/allreduce"' POST "/v1/clusters?format=galvatron" "$tmp/b1.json"
printf '{"nodes":0,"gpus_per_node":8,"allreduce":{}}' >"$tmp/b2.json"
call galv-bad-nodes 422 '"pointer":"/nodes"' POST "/v1/clusters?format=galvatron" "$tmp/b2.json"
printf '{"nodes":1,"gpus_per_node":8,"allreduce":{"allreduce_size_8_consec_1":"fast"}}' >"$tmp/b3.json"
call galv-bad-file 422 '"pointer":"/allreduce"' POST "/v1/clusters?format=galvatron" "$tmp/b3.json"
printf '{"nodes":1,"gpus_per_node":8,"allreduce":{"allreduce_size_8_consec_1":150},"frob":1}' >"$tmp/b4.json"
call galv-unknown-member 422 '"pointer":"/frob"' POST "/v1/clusters?format=galvatron" "$tmp/b4.json"
sed 's/"computation":/"computation":{"x":1},"c0":/' "$tmp/gmodel.json" >"$tmp/b5.json"
call galv-model-unknown 422 '"pointer":"/c0"' POST "/v1/models?format=galvatron" "$tmp/b5.json"
printf '{"config":{},"computation":{},"memory":[]}' >"$tmp/b6.json"
call galv-model-memory 422 '"pointer":"/memory"' POST "/v1/models?format=galvatron" "$tmp/b6.json"
{
	printf '{"base":"dgx-a100","outputs":['
	json_string "$tmp/wrong.txt"
	printf ']}'
} >"$tmp/b7.json"
call nccl-wrong 422 '"pointer":"/outputs/0"' POST "/v1/clusters?format=nccl-tests" "$tmp/b7.json"
call nccl-wrong-line 422 'line 18: #wrong (out-of-place): 7 wrong values' POST "/v1/clusters?format=nccl-tests" "$tmp/b7.json"
printf '{"base":"dgx-a100","outputs":["hello\\n"]}' >"$tmp/b8.json"
call nccl-garbage 422 'body.outputs[0]: line 1: not an nccl-tests line' POST "/v1/clusters?format=nccl-tests" "$tmp/b8.json"
printf '{"base":"no-such-cluster","outputs":["x"]}' >"$tmp/b9.json"
call nccl-bad-base 422 '"pointer":"/base"' POST "/v1/clusters?format=nccl-tests" "$tmp/b9.json"
printf '{"base":"dgx-a100","outputs":[]}' >"$tmp/b10.json"
call nccl-no-outputs 422 '"pointer":"/outputs"' POST "/v1/clusters?format=nccl-tests" "$tmp/b10.json"
{
	printf '{"base":"dgx-a100-x2","outputs":['
	json_string "$tmp/ar8.txt"
	printf '],"ranks":16}'
} >"$tmp/b11.json"
call nccl-ranks 422 '"pointer":"/outputs/0"' POST "/v1/clusters?format=nccl-tests" "$tmp/b11.json"
{
	printf '{"base":"dgx-a100","outputs":[{"kind":"broadcast","text":""}]}'
} >"$tmp/b12.json"
call nccl-bad-kind 422 '"pointer":"/outputs/0/kind"' POST "/v1/clusters?format=nccl-tests" "$tmp/b12.json"
# a plain upload still works without ?format=
call plain 201 '"kind":"cluster"' POST /v1/clusters schema/examples/cluster-8gpu-nvlink.json

stop_uniapd
summary imports
