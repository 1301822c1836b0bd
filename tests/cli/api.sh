#!/bin/sh
# tests/cli/api.sh - the synchronous /v1 resources against a real uniapd:
# the catalog, stored clusters and models (upload, get, list with cursors,
# delete) scoped to their tenant (another tenant's ids answer 404 on every
# route), 422 with a JSON pointer for an invalid document, 400 for malformed
# JSON or a bad ?limit=, and POST /v1/evaluate with catalog names, uploaded
# ids and inline documents.  Needs curl.  Prints "api: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB=$(test_db "$tmp/uniap.db") || { echo "no database"; exit 1; }
EX=schema/examples
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# call NAME WANT_STATUS NEEDLE METHOD PATH KEY [BODY_FILE]: the status and a
# substring of the body or headers (NEEDLE may be empty)
call() {
	name=$1 want=$2 needle=$3 method=$4 path=$5 k=$6
	if [ $# -ge 7 ]; then
		code=$(curl -s -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' -X "$method" \
			-H "Authorization: Bearer $k" -H "Content-Type: application/json" \
			--data-binary "@$7" "http://127.0.0.1:$port$path")
	else
		code=$(curl -s -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' -X "$method" \
			-H "Authorization: Bearer $k" "http://127.0.0.1:$port$path")
	fi
	if [ "$code" != "$want" ]; then
		bad "$name: status $code, want $want; body: $(head -c 300 "$tmp/body")"
	elif [ -n "$needle" ] && ! grep -qF -- "$needle" "$tmp/body" "$tmp/hdr"; then
		bad "$name: response lacks '$needle'; body: $(head -c 300 "$tmp/body")"
	else
		ok
	fi
}

# the id of the last 201 answer
last_id() { sed -n 's/.*"id":\([0-9]*\).*/\1/p' "$tmp/body"; }

# evaluate_body CLUSTER MODEL PLAN_FILE BATCH > file: a POST /v1/evaluate body
evaluate_body() {
	printf '{"cluster":%s,"model":%s,"batch":%s,"plan":' "$1" "$2" "$4"
	cat "$3"
	printf '}'
}

umask 022 # the database's files are 0600 whatever the umask: they hold every tenant's documents
check tenant-a 0 "uk_" -- "$UNIAPD" tenant add ta --db "$DB"
A=$(tail -n 1 "$tmp/out")
check tenant-b 0 "uk_" -- "$UNIAPD" tenant add tb --db "$DB"
B=$(tail -n 1 "$tmp/out")

if ! start_uniapd; then
	bad "start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	summary api
	exit 1
fi

# the SQLite files are the service's alone (a PostgreSQL server keeps its own)
for f in "$DB" "$DB-wal" "$DB-shm" "$DB-reserve"; do
	[ -n "${UNIAP_TEST_PG:-}" ] && break
	m=$(stat -c %a "$f" 2>/dev/null)
	if [ "$m" = 600 ]; then ok; else bad "mode: $f is ${m:-missing}, want 600"; fi
done

# the catalog
call catalog 200 '"name":"enva"' GET /v1/catalog "$A"
call catalog-models 200 '"bert-huge"' GET /v1/catalog "$A"
call catalog-no-key 401 "problem+json" GET /v1/catalog ""
call catalog-enva 200 '"devices_per_node":8' GET /v1/catalog/enva "$A"
call catalog-model 200 '"layer_types"' GET /v1/catalog/bert-huge "$A"
call catalog-unknown 404 'frob' GET /v1/catalog/frob "$A"

# upload as A
call cluster-put 201 '"kind":"cluster"' POST /v1/clusters "$A" "$EX/cluster-8gpu-nvlink.json"
cid=$(last_id)
if grep -qi "^Location: /v1/clusters/$cid" "$tmp/hdr"; then ok; else bad "cluster-put: no Location"; fi
if grep -qF '"name":"dgx1-v100-8gpu"' "$tmp/body" && grep -qF '"created_at":"' "$tmp/body" &&
	grep -qF '"bytes":' "$tmp/body"; then ok; else bad "cluster-put: metadata $(head -c 300 "$tmp/body")"; fi
call model-put 201 '"kind":"model"' POST /v1/models "$A" "$EX/model-bert-chain.json"
mid=$(last_id)
call cluster-get 200 '"devices_per_node":8' GET "/v1/clusters/$cid" "$A"
call model-get 200 '"bert-large-seq512"' GET "/v1/models/$mid" "$A"
call model-as-cluster 404 "" GET "/v1/clusters/$mid" "$A"
call cluster-list 200 "\"id\":$cid" GET /v1/clusters "$A"
call cluster-list-end 200 '"next_cursor":null' GET /v1/clusters "$A"
call cluster-id-junk 404 "" GET /v1/clusters/abc "$A"

# B sees none of A's documents
call b-cluster-get 404 "problem+json" GET "/v1/clusters/$cid" "$B"
call b-model-get 404 "problem+json" GET "/v1/models/$mid" "$B"
call b-cluster-delete 404 "" DELETE "/v1/clusters/$cid" "$B"
call b-model-delete 404 "" DELETE "/v1/models/$mid" "$B"
call b-cluster-list 200 '"items":[]' GET /v1/clusters "$B"
call b-model-list 200 '"items":[]' GET /v1/models "$B"
evaluate_body "$cid" "$mid" "$EX/plan-example.json" 32 >"$tmp/eval-ids.json"
call b-evaluate 404 '"pointer":"/cluster"' POST /v1/evaluate "$B" "$tmp/eval-ids.json"

# evaluate: uploaded ids, inline documents, catalog names
call evaluate-ids 200 '"tpi_matches":true' POST /v1/evaluate "$A" "$tmp/eval-ids.json"
call evaluate-memory 200 '"memory":{"model_states_bytes":911605760,' POST /v1/evaluate "$A" "$tmp/eval-ids.json"
evaluate_body "$(cat $EX/cluster-8gpu-nvlink.json)" "$(cat $EX/model-bert-chain.json)" \
	"$EX/plan-example.json" 32 >"$tmp/eval-inline.json"
call evaluate-inline 200 '"tpi_matches":true' POST /v1/evaluate "$A" "$tmp/eval-inline.json"
if "${UNIAP:-build/uniap}" plan --cluster enva --model bert-huge --batch 8 >"$tmp/plan-enva.json" 2>"$tmp/err"; then
	evaluate_body '"enva"' '"bert-huge"' "$tmp/plan-enva.json" 8 >"$tmp/eval-cat.json"
	call evaluate-catalog 200 '"tpi_matches":true' POST /v1/evaluate "$A" "$tmp/eval-cat.json"
	# a plan without "batch" implies microbatches x microbatch_size
	evaluate_body '"enva"' '"bert-huge"' "$tmp/plan-enva.json" 9 >"$tmp/eval-implied.json"
	call evaluate-batch-implied 422 '"pointer":"/plan/microbatch_size"' POST /v1/evaluate "$A" "$tmp/eval-implied.json"
else
	bad "uniap plan enva bert-huge: $(head -c 300 "$tmp/err")"
fi
evaluate_body "$cid" "$mid" "$EX/plan-example.json" 16 >"$tmp/eval-batch.json"
# the example plan says its batch (32)
call evaluate-batch 422 '"pointer":"/plan/batch"' POST /v1/evaluate "$A" "$tmp/eval-batch.json"
evaluate_body '"nosuch"' "$mid" "$EX/plan-example.json" 32 >"$tmp/eval-name.json"
call evaluate-unknown-name 422 '"pointer":"/cluster"' POST /v1/evaluate "$A" "$tmp/eval-name.json"
evaluate_body "$cid" "$mid" "$EX/plan-example.json" '"x"' >"$tmp/eval-b.json"
call evaluate-bad-batch 422 '"pointer":"/batch"' POST /v1/evaluate "$A" "$tmp/eval-b.json"
printf '{"cluster":%s,"model":%s,"batch":32}' "$cid" "$mid" >"$tmp/eval-noplan.json"
call evaluate-no-plan 422 '"pointer":"/plan"' POST /v1/evaluate "$A" "$tmp/eval-noplan.json"

# invalid and malformed bodies
sed 's/"nodes": 1/"nodes": 0/' "$EX/cluster-8gpu-nvlink.json" >"$tmp/bad-cluster.json"
call cluster-invalid 422 '"pointer":"/nodes"' POST /v1/clusters "$A" "$tmp/bad-cluster.json"
printf '{"name": ' >"$tmp/malformed.json"
call cluster-malformed 400 "problem+json" POST /v1/clusters "$A" "$tmp/malformed.json"
call evaluate-malformed 400 "problem+json" POST /v1/evaluate "$A" "$tmp/malformed.json"
# a name that is not UTF-8 is refused naming it, so every listing stays valid JSON
sed 's/"name": "[^"]*"/"name": "bad\xff"/' "$EX/cluster-8gpu-nvlink.json" >"$tmp/bad-utf8.json"
call cluster-utf8 400 'body.name: invalid UTF-8 at byte 3' POST /v1/clusters "$A" "$tmp/bad-utf8.json"

# pagination: 3 more clusters (4 in all) and a model between them, limit 2
call put-2 201 "" POST /v1/clusters "$A" "$EX/cluster-16gpu-pcie-pairs.json"
call put-3 201 "" POST /v1/clusters "$A" "$EX/cluster-8gpu-nvlink.json"
call put-4 201 "" POST /v1/models "$A" "$EX/model-t5-dag.json"
call put-5 201 "" POST /v1/clusters "$A" "$EX/cluster-8gpu-nvlink.json"
call page-1 200 '"next_cursor":"' GET "/v1/clusters?limit=2" "$A"
n1=$(grep -o '"id":' "$tmp/body" | wc -l)
cur=$(sed -n 's/.*"next_cursor":"\([0-9]*\)".*/\1/p' "$tmp/body")
call page-2 200 '"next_cursor":null' GET "/v1/clusters?limit=2&cursor=$cur" "$A"
n2=$(grep -o '"id":' "$tmp/body" | wc -l)
if grep -qF '"kind":"model"' "$tmp/body"; then bad "page-2: lists a model"; else ok; fi
if [ "$n1" -eq 2 ] && [ "$n2" -eq 2 ]; then ok; else bad "pages: $n1 and $n2 items, want 2 and 2"; fi
call limit-0 400 '"limit' GET "/v1/clusters?limit=0" "$A"
call limit-101 400 '"limit' GET "/v1/clusters?limit=101" "$A"
call limit-junk 400 'limit: ' GET "/v1/models?limit=x" "$A"
call cursor-junk 400 'cursor: ' GET "/v1/models?cursor=-1" "$A"

# delete; a cluster's id under /v1/models is no model, and deletes nothing
call cluster-as-model-delete 404 "model: no model with id $cid" DELETE "/v1/models/$cid" "$A"
call cluster-still-there 200 "" GET "/v1/clusters/$cid" "$A"
call cluster-delete 204 "" DELETE "/v1/clusters/$cid" "$A"
call cluster-gone 404 "" GET "/v1/clusters/$cid" "$A"
call cluster-delete-again 404 "" DELETE "/v1/clusters/$cid" "$A"
call model-delete 204 "" DELETE "/v1/models/$mid" "$A"
call evaluate-deleted 404 '"pointer":"/cluster"' POST /v1/evaluate "$A" "$tmp/eval-ids.json"

# the stored-bytes quota: a tenant with 1500 bytes holds one model (about 900 bytes
# stored), the second is a 413 and stores nothing; deleting the first frees its bytes
check tenant-c 0 "uk_" -- "$UNIAPD" tenant add tc --db "$DB" --max-bytes 1500
C=$(tail -n 1 "$tmp/out")
call quota-first 201 '"kind":"model"' POST /v1/models "$C" "$EX/model-bert-chain.json"
qid=$(sed -n 's/^{"id":\([0-9]*\).*/\1/p' "$tmp/body")
call quota-second 413 '"type":"urn:uniap:problem:limit"' POST /v1/models "$C" "$EX/model-bert-chain.json"
call quota-detail 200 "" GET /v1/models "$C"
if [ "$(grep -o '"id"' "$tmp/body" | wc -l)" -eq 1 ]; then ok; else bad "quota: the refused upload was stored: $(head -c 300 "$tmp/body")"; fi
call quota-delete 204 "" DELETE "/v1/models/$qid" "$C"
call quota-again 201 '"kind":"model"' POST /v1/models "$C" "$EX/model-bert-chain.json"

# a model document with an architecture object: stored as given, generated when read into a plan
call arch-put 201 '"kind":"model"' POST /v1/models "$A" "$EX/model-llama2-7b-architecture.json"
aid=$(last_id)
call arch-get 200 '"architecture"' GET "/v1/models/$aid" "$A"
sed 's/"kv_heads": 32/"kv_heads": 5/' "$EX/model-llama2-7b-architecture.json" >"$tmp/badkv.json"
call arch-bad-kv 422 'architecture.kv_heads: must divide heads (32), got 5' POST /v1/models "$A" "$tmp/badkv.json"
sed 's/"architecture": *{/"architecture": {"moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 512, "capacity_factor": 1.25, "dropless": true},/' \
	"$EX/model-llama2-7b-architecture.json" >"$tmp/badmoe.json"
call arch-bad-moe 422 'architecture.moe.capacity_factor: a dropless MoE has none' POST /v1/models "$A" "$tmp/badmoe.json"

# still healthy
call healthz 200 "" GET /healthz "$A"
call whoami 200 '"tenant":"ta"' GET /v1/whoami "$A"
stop_uniapd
if [ "$stopped" -eq 0 ]; then ok; else bad "sigterm: exit $stopped, want 0"; fi

# --no-auth: the default tenant, which sees none of ta's documents
if start_uniapd --no-auth; then
	ok
	call no-auth-put 201 '"kind":"model"' POST /v1/models "" "$EX/model-bert-chain.json"
	call no-auth-list 200 '"next_cursor":null' GET /v1/clusters ""
	if grep -q '"id"' "$tmp/body"; then bad "no-auth-list: lists ta's clusters"; else ok; fi
	stop_uniapd
else
	bad "no-auth start: $(head -c 300 "$tmp/log")"
fi

summary api
