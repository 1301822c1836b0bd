#!/bin/sh
# examples/flow.sh - the README's whole flow against a running uniapd: upload a
# cluster and a model, plan (with an Idempotency-Key, and its replay), poll,
# read the result, export it, list jobs, cancel a job (and delete it at the end), plan by catalog names
# (and for the runtimes: each target's optimum, priced, and exported), evaluate a
# given plan, import Galvatron profiles and an nccl-tests run, list and delete
# clusters.  Every id comes from the responses; every file it reads ships in
# the repository (schema/examples/, examples/).
#
#   sh examples/flow.sh                          # against `make run` (keyless)
#   U=http://HOST:PORT KEY=... sh examples/flow.sh   # a keyed uniapd
#
# U is the base URL (default http://127.0.0.1:8080); KEY, when set, is sent as
# "Authorization: Bearer KEY"; WAIT_S bounds each poll (default 120 s).  Needs
# curl, sed and grep.  Prints one "== step" block per request; on any failure
# it stops with "flow.sh: STEP: ..." on stderr and exit status 1.
set -u
U=${U:-http://127.0.0.1:8080}
U=${U%/}
KEY=${KEY:-}
WAIT_S=${WAIT_S:-120}
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
J="Content-Type: application/json"

die() {
	echo "flow.sh: $*" >&2
	exit 1
}

# call STEP WANT METHOD PATH [CURL ARGS...]: one request; the status must be
# one of WANT (space-separated); body in $tmp/b, headers in $tmp/h, status in
# $code.  Prints "METHOD PATH -> CODE" unless quiet=1.
quiet=0
call() {
	step=$1 want=$2 method=$3 path=$4
	shift 4
	if [ -n "$KEY" ]; then
		set -- -H "Authorization: Bearer $KEY" "$@"
	fi
	code=$(curl -sS -X "$method" -D "$tmp/h" -o "$tmp/b" -w '%{http_code}' "$@" "$U$path") ||
		die "$step: $method $path: curl failed (is uniapd running at $U?)"
	case " $want " in
	*" $code "*) ;;
	*) die "$step: $method $path answered $code, want $want: $(head -c 400 "$tmp/b")" ;;
	esac
	[ "$quiet" -eq 1 ] || echo "$method $path -> $code"
}

# the first "KEY":number / "KEY":"string" of the last body; a header's value
jnum() { grep -o "\"$1\":[-0-9.eE+]*" "$tmp/b" | head -n 1 | sed 's/^[^:]*://'; }
jstr() { grep -o "\"$1\":\"[^\"]*\"" "$tmp/b" | head -n 1 | sed 's/^[^:]*:"//; s/"$//'; }
header() { grep -i "^$1:" "$tmp/h" | head -n 1 | sed 's/^[^:]*: *//' | tr -d '\r'; }
# the problem's detail, its escaped quotes unescaped
detail() { sed -n 's/.*"detail":"\(\([^"\\]\|\\.\)*\)".*/\1/p' "$tmp/b" | sed 's/\\"/"/g'; }
body() {
	sed 's/^/  /' "$tmp/b"
	[ -z "$(tail -c 1 "$tmp/b")" ] || echo
}

# location_id STEP PREFIX: the id at the end of the Location header, which
# must be under PREFIX (in $(...): the caller exits when it fails)
location_id() {
	loc=$(header Location)
	case "$loc" in
	"$2"/[0-9]*) echo "${loc##*/}" ;;
	*) die "$1: Location '$loc' is not under $2" ;;
	esac
}

# wait_job STEP ID: polls GET /v1/jobs/ID every 0.2 s until the job leaves
# queued/running (at most WAIT_S seconds); the job is then in $tmp/b, $state
wait_job() {
	n=0
	quiet=1
	while :; do
		call "$1" 200 GET "/v1/jobs/$2"
		state=$(jstr state)
		case "$state" in
		queued | running) ;;
		*) break ;;
		esac
		n=$((n + 1))
		[ "$n" -lt $((WAIT_S * 5)) ] || die "$1: job $2 still $state after $WAIT_S s"
		sleep 0.2
	done
	quiet=0
	echo "GET /v1/jobs/$2 (polled until it finished) -> $state"
}

# json_string FILE: FILE's text as one JSON string
json_string() {
	awk 'BEGIN { printf "\"" } { gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); printf "%s\\n", $0 }
	     END { printf "\"" }' "$1"
}

echo "== whoami"
call whoami 200 GET /v1/whoami
body

echo "== catalog: built-in clusters and models"
call catalog 200 GET /v1/catalog
sed 's/"models":.*//' "$tmp/b" | grep -o '"name":"[^"]*"' | sed 's/"name":"//; s/"$//' | tr '\n' ' ' |
	sed 's/^/  clusters: /; s/ $//'
echo
sed -n 's/.*"models"://p' "$tmp/b" | grep -o '"name":"[^"]*"' | sed 's/"name":"//; s/"$//' | tr '\n' ' ' |
	sed 's/^/  models: /; s/ $//'
echo

echo "== upload a cluster (schema/examples/cluster-8gpu-nvlink.json)"
call upload-cluster 201 POST /v1/clusters -H "$J" --data-binary @schema/examples/cluster-8gpu-nvlink.json
cluster=$(location_id upload-cluster /v1/clusters) || exit 1
echo "  Location: $(header Location)"
body

echo "== upload a model (schema/examples/model-bert-chain.json)"
call upload-model 201 POST /v1/models -H "$J" --data-binary @schema/examples/model-bert-chain.json
model=$(location_id upload-model /v1/models) || exit 1
echo "  Location: $(header Location)"
body

echo "== plan them, with an Idempotency-Key"
idem="flow-$(date +%s)-$$"
req="{\"cluster\":$cluster,\"model\":$model,\"batch\":32,\"schedule\":\"1f1b\",\"time_limit_s\":30}"
echo "  $req"
call plan 202 POST /v1/plans -H "$J" -H "Idempotency-Key: $idem" -d "$req"
job=$(location_id plan /v1/jobs) || exit 1
echo "  Location: $(header Location)"

echo "== the same request and key again: the same job, not a new one"
call plan-replay "200 202" POST /v1/plans -H "$J" -H "Idempotency-Key: $idem" -d "$req"
[ "$(header Location)" = "/v1/jobs/$job" ] || die "plan-replay: Location $(header Location), want /v1/jobs/$job"
echo "  Location: $(header Location), Idempotent-Replayed: $(header Idempotent-Replayed)"

echo "== poll the job until it has finished"
wait_job poll "$job"
[ "$state" = succeeded ] || die "poll: job $job $state: $(jstr error)"

echo "== the result: the plan, whether it is proven optimal, every candidate"
call result 200 GET "/v1/jobs/$job"
sed 's/.*"result"://' "$tmp/b" >"$tmp/result"
echo "  plan: pp $(grep -o '"pp":[0-9]*' "$tmp/result" | head -n 1 | sed 's/.*://')," \
	"microbatches $(grep -o '"microbatches":[0-9]*' "$tmp/result" | head -n 1 | sed 's/.*://')," \
	"tpi_s $(grep -o '"tpi_s":[-0-9.eE+]*' "$tmp/result" | head -n 1 | sed 's/.*://')"
echo "  space $(sed -n 's/.*"space":"\([a-z]*\)".*/\1/p' "$tmp/result")," \
	"optimal $(sed -n 's/.*"optimal":\([a-z]*\).*/\1/p' "$tmp/result")," \
	"gap $(sed -n 's/.*"gap":\([-0-9.eE+]*\).*/\1/p' "$tmp/result")," \
	"solve_s $(sed -n 's/.*"solve_s":\([-0-9.eE+]*\)}}$/\1/p' "$tmp/result")"
# how many end optimal and how many are pruned by their bound depends on the
# order the workers finish in; the count does not
echo "  candidates: $(grep -o '"method":' "$tmp/result" | wc -l | tr -d ' ') (pp x microbatches; each one's status, tpi_s, bound and method in candidates[])"

echo "== export the plan: text, then the other formats"
call export-text 200 GET "/v1/jobs/$job/plan?format=text"
body
for f in json galvatron megatron deepspeed; do
	call "export-$f" 200 GET "/v1/jobs/$job/plan?format=$f"
	echo "  $(header Content-Type), $(wc -c <"$tmp/b" | tr -d ' ') bytes"
done

echo "== the tenant's succeeded jobs"
call job-list 200 GET "/v1/jobs?state=succeeded&limit=10"
echo "  $(grep -o '"id":[0-9]*,"state":"[a-z]*"' "$tmp/b" | sed 's/"id"://; s/,"state":"/ /; s/"$//' |
	tr '\n' ',' | sed 's/,$//; s/,/, /g'); next_cursor $(sed -n 's/.*"next_cursor":\([^}]*\)}$/\1/p' "$tmp/b")"

echo "== cancel a job: a large plan (llama-70b on 128 DGX H100 nodes), canceled at once"
call cancel-submit 202 POST /v1/plans -H "$J" \
	-d '{"cluster":"dgx-h100-x128","model":"llama-70b","batch":1024,"schedule":"1f1b"}'
big=$(location_id cancel-submit /v1/jobs) || exit 1
echo "  Location: $(header Location)"
call cancel "200 202 409" POST "/v1/jobs/$big/cancel"
if [ "$code" = 409 ]; then
	# it finished before the request arrived: nothing to cancel
	echo "  409 $(detail)"
else
	wait_job cancel-wait "$big"
	[ "$state" = canceled ] || die "cancel-wait: job $big $state, want canceled"
	echo "  error: $(jstr error)"
fi

echo "== plan by catalog names (the set-up example)"
call catalog-plan 202 POST /v1/plans -H "$J" -d '{"cluster":"dgx-a100","model":"bert-huge","batch":8}'
unified=$(location_id catalog-plan /v1/jobs) || exit 1
wait_job catalog-plan "$unified"
[ "$state" = succeeded ] || die "catalog-plan: job $unified $state: $(jstr error)"
call catalog-text 200 GET "/v1/jobs/$unified/plan?format=text"
body
echo "== Megatron-LM runs one strategy for every layer: this plan is refused"
call export-refused 422 GET "/v1/jobs/$unified/plan?format=megatron"
echo "  $(detail)"
echo "== so plan for the runtimes (targets: only plans each one runs) and export the first"
call targets-plan 202 POST /v1/plans -H "$J" \
	-d '{"cluster":"dgx-a100","model":"bert-huge","batch":8,"targets":["megatron","deepspeed","galvatron"]}'
targets=$(location_id targets-plan /v1/jobs) || exit 1
wait_job targets-plan "$targets"
[ "$state" = succeeded ] || die "targets-plan: job $targets $state: $(jstr error)"
call targets-job 200 GET "/v1/jobs/$targets"
# result.targets[]: each target's optimum and its price against the unconstrained one
grep -o '{"target":"[a-z]*","runtime":"[^"]*","status":"[a-z]*"[^}]*}' "$tmp/b" |
	awk '{ t = $0; sub(/.*"target":"/, "", t); sub(/".*/, "", t)
	       s = $0; sub(/.*"status":"/, "", s); sub(/".*/, "", s)
	       v = $0; sub(/.*"tpi_s":/, "", v); sub(/,.*/, "", v)
	       p = $0; if (sub(/.*"price":/, "", p)) { sub(/,.*/, "", p); p = sprintf(", %+.1f %% against any", 100 * p) } else p = ""
	       printf "  %s: %s, tpi_s %.6g%s\n", t, s, v, p }'
call targets-text 200 GET "/v1/jobs/$targets/plan?format=text"
body
call targets-megatron 200 GET "/v1/jobs/$targets/plan?format=megatron"
body

echo "== evaluate a given plan (schema/examples/plan-example.json) on the uploaded documents"
{
	printf '{"cluster":%s,"model":%s,"batch":32,"plan":' "$cluster" "$model"
	cat schema/examples/plan-example.json
	printf '}'
} >"$tmp/evaluate.json"
call evaluate 200 POST /v1/evaluate -H "$J" --data-binary @"$tmp/evaluate.json"
echo "  feasible $(sed -n 's/.*"feasible":\([a-z]*\).*/\1/p' "$tmp/b"), tpi_s $(jnum tpi_s)," \
	"tpi_matches $(sed -n 's/.*"tpi_matches":\([a-z]*\).*/\1/p' "$tmp/b")"
echo "  stage 0 memory: states $(jnum model_states_bytes), activations $(jnum activation_bytes)," \
	"allocated $(jnum allocated_bytes) of $(jnum memory_limit_bytes), free $(jnum free_bytes) bytes"

echo "== import Galvatron's hardware profile (examples/galvatron/hardware)"
HW=examples/galvatron/hardware
{
	printf '{"name":"h100-node-galvatron","nodes":1,"gpus_per_node":8,"allreduce":'
	cat $HW/allreduce_bandwidth_1nodes_8gpus_per_node.json
	printf ',"p2p":'
	cat $HW/p2p_bandwidth_1nodes_8gpus_per_node.json
	printf ',"overlap":'
	cat $HW/overlap_coefficient.json
	printf '}'
} >"$tmp/galv-cluster.json"
call import-galvatron-cluster 201 POST "/v1/clusters?format=galvatron" -H "$J" --data-binary @"$tmp/galv-cluster.json"
gcluster=$(location_id import-galvatron-cluster /v1/clusters) || exit 1
body

echo "== import Galvatron's model profile (examples/galvatron/models/gpt)"
M=examples/galvatron/models/gpt
{
	printf '{"name":"gpt-medium-seq1024","config":'
	cat $M/gpt-medium.json
	printf ',"computation":'
	cat $M/computation_profiling_bf16_hidden1024_head16_seqlen1024.json
	printf ',"memory":'
	cat $M/memory_profiling_bf16_hidden1024_head16_seqlen1024.json
	printf '}'
} >"$tmp/galv-model.json"
call import-galvatron-model 201 POST "/v1/models?format=galvatron" -H "$J" --data-binary @"$tmp/galv-model.json"
gmodel=$(location_id import-galvatron-model /v1/models) || exit 1
body

echo "== plan the imported pair"
call imported-plan 202 POST /v1/plans -H "$J" -d "{\"cluster\":$gcluster,\"model\":$gmodel,\"batch\":16}"
imported=$(location_id imported-plan /v1/jobs) || exit 1
wait_job imported-plan "$imported"
[ "$state" = succeeded ] || die "imported-plan: job $imported $state: $(jstr error)"
call imported-text 200 GET "/v1/jobs/$imported/plan?format=text"
body

echo "== import an nccl-tests run (examples/nccl-tests/all_reduce_perf.txt) onto dgx-h100"
{
	printf '{"name":"dgx-h100-measured","base":"dgx-h100","outputs":['
	json_string examples/nccl-tests/all_reduce_perf.txt
	printf ']}'
} >"$tmp/nccl.json"
call import-nccl 201 POST "/v1/clusters?format=nccl-tests" -H "$J" --data-binary @"$tmp/nccl.json"
ncluster=$(location_id import-nccl /v1/clusters) || exit 1
body

echo "== list clusters, two a page"
call list-clusters 200 GET "/v1/clusters?limit=2"
echo "  $(grep -o '"id":[0-9]*,"kind":"cluster","name":"[^"]*"' "$tmp/b" | sed 's/"id"://; s/,"kind":"cluster","name":"/ /; s/"$//' |
	tr '\n' ',' | sed 's/,$//; s/,/, /g'); next_cursor $(sed -n 's/.*"next_cursor":\([^}]*\)}$/\1/p' "$tmp/b")"

echo "== delete the nccl-tests cluster"
call delete-cluster 204 DELETE "/v1/clusters/$ncluster"
call deleted-cluster 404 GET "/v1/clusters/$ncluster"
echo "  $(detail)"

echo "== delete the canceled job: a finished job goes with its result (POST .../cancel cancels)"
call delete-job 204 DELETE "/v1/jobs/$big"
call deleted-job 404 GET "/v1/jobs/$big"

echo "flow: ok"
