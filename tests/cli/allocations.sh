#!/bin/sh
# tests/cli/allocations.sh - allocation jobs against a real uniapd (POST
# /v1/allocations, docs/allocation.md): two pools (an inline cluster and a
# stored one) shared by three jobs (a model given by stored id), the answer
# equal to `uniap allocate`'s for the same documents; the kind in GET
# /v1/jobs; a repeat served from the cost cache; Idempotency-Key replays;
# request errors (422 naming the JSON path, 404 for another tenant's
# cluster); a running allocation stopped (it allocates on the points planned
# so far and says so) and one canceled; /healthz answering meanwhile.
# Needs curl, jq.  Prints "allocations: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
EX=schema/examples
CL=$EX/cluster-8gpu-nvlink.json
C4=$EX/cluster-16gpu-pcie-pairs.json
pid=
trap 'if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/http.inc"

# settle NAME ID KEY: waits until job ID is final (into $tmp/job), then "succeeded"
settle() {
	if wait_job "$2" "$3" "succeeded failed canceled" 100 && [ "$(jst "$tmp/job")" = succeeded ]; then ok; else
		bad "$1: job $2: $(head -c 300 "$tmp/job")"; return 1; fi
}

check tenant-a 0 "uk_" -- "$UNIAPD" tenant add ta --db "$DB" --max-jobs 100
A=$(tail -n 1 "$tmp/out")
check tenant-b 0 "uk_" -- "$UNIAPD" tenant add tb --db "$DB" --max-jobs 100
B=$(tail -n 1 "$tmp/out")

# what the CLI answers for the same documents
jq -n --slurpfile m "$EX/model-bert-chain.json" '{jobs: [{name: "a", model: $m[0], batch: 32},
	{name: "b", model: $m[0], batch: 16, weight: 3, samples: 1000},
	{name: "c", model: $m[0], batch: 8, min_devices: 2, samples: 500}]}' >"$tmp/jobs.json"
check cli 0 '"pools":[' -- "$UNIAP" allocate --cluster $CL --cluster $C4 --jobs "$tmp/jobs.json" --quiet
cp "$tmp/out" "$tmp/cli.json"

if ! start_uniapd --jobs 1; then
	bad "uniapd did not come up: $(head -c 300 "$tmp/log")"
	summary allocations
	exit 1
fi

# ---------------------------------------------------------------- the flow
call store-cluster 201 '"id":' POST /v1/clusters "$A" "$C4"
cid=$(jq .id "$tmp/body")
call store-model 201 '"id":' POST /v1/models "$A" "$EX/model-bert-chain.json"
mid=$(jq .id "$tmp/body")
# pool 0 inline, pool 1 by stored id; job b's model by stored id
jq --slurpfile c "$CL" --argjson cid "$cid" --argjson mid "$mid" \
	'{clusters: [$c[0], $cid], jobs: (.jobs | .[1].model = $mid)}' "$tmp/jobs.json" >"$tmp/body.json"
call submit 202 '"kind":"allocation"' POST /v1/allocations "$A" "$tmp/body.json"
hdr location "Location: /v1/jobs/"
ja=$(jid)
settle done "$ja" "$A"
jq '.result' "$tmp/job" >"$tmp/svc.json"
# the same allocation as the CLI's: value, pools, sizes, each job's pool, devices and curve
check same-as-cli 0 true -- jq -e --slurpfile c "$tmp/cli.json" '. as $s | $c[0] as $c |
	($s.value - $c.value | fabs) < 1e-9 and $s.sizes == $c.sizes and
	([$s.pools[] | {name, devices, devices_used}] == [$c.pools[] | {name, devices, devices_used}]) and
	([$s.jobs[] | {name, pool, devices, first_device, curve}] == [$c.jobs[] | {name, pool, devices, first_device, curve}])
	and $s.planner_runs == $c.planner_runs' "$tmp/svc.json"
check request-refs 0 true -- jq -e '.request.clusters == ["inline", '"$cid"'] and .progress.candidates_done ==
	.progress.candidates_total and .progress.candidates_total > 0' "$tmp/job"
call listed 200 '"kind":"allocation"' GET "/v1/jobs?limit=100" "$A"

# the same request again: every curve point from the tenant's curve-point cache (no planner
# run), the same answer; another tenant with the same documents shares nothing of it
check first-uncached 0 true -- jq -e '.cached_points == 0 and .planner_runs > 0' "$tmp/svc.json"
call again 202 '' POST /v1/allocations "$A" "$tmp/body.json"
jb=$(jid)
settle again-done "$jb" "$A"
check again-same 0 true -- jq -e --slurpfile s "$tmp/svc.json" '.result.value == $s[0].value and
	[.result.jobs[] | {devices, curve}] == [$s[0].jobs[] | {devices, curve}] and .result.planner_runs == 0 and
	.result.cached_points == $s[0].planner_runs' "$tmp/job"
jq --slurpfile c "$C4" --slurpfile m "$EX/model-bert-chain.json" '.clusters[1] = $c[0] | .jobs[1].model = $m[0]' \
	"$tmp/body.json" >"$tmp/inline.json"
call tenant-b 202 '' POST /v1/allocations "$B" "$tmp/inline.json"
settle tenant-b-done "$(jid)" "$B"
check tenant-b-own 0 true -- jq -e --slurpfile s "$tmp/svc.json" '.result.cached_points == 0 and
	.result.planner_runs == $s[0].planner_runs and .result.value == $s[0].value' "$tmp/job"

# Idempotency-Key: the same bytes are the same job
XH="Idempotency-Key: alloc-1" call idem-first 202 '' POST /v1/allocations "$A" "$tmp/body.json"
ji=$(jid)
XH="Idempotency-Key: alloc-1" call idem-replay 202 '' POST /v1/allocations "$A" "$tmp/body.json"
if [ "$(jid)" = "$ji" ]; then ok; else bad "idem: replay made job $(jid), want $ji"; fi
hdr idem-header "Idempotent-Replayed: true"
settle idem-done "$ji" "$A"

# a shared allocation: job a is tenant tb's; tb sees where every job runs, the others' names,
# curves and plans redacted; a third tenant sees nothing; the owner sees it whole
check tenant-c 0 "uk_" -- "$UNIAPD" tenant add tc --db "$DB" --max-jobs 100
C=$(tail -n 1 "$tmp/out")
jq '.jobs[0].tenant = "tb"' "$tmp/body.json" >"$tmp/shared.json"
XH="Idempotency-Key: shared-1" call shared 202 '' POST /v1/allocations "$A" "$tmp/shared.json"
jsh=$(jid)
settle shared-done "$jsh" "$A"
call shared-owner 200 '"view":"owner"' GET "/v1/allocations/$jsh" "$A"
check shared-owner-whole 0 true -- jq -e '[.result.jobs[] | .name] == ["a", "b", "c"] and (.result.jobs[1].spec | type) ==
	"object" and (has("request") | not)' "$tmp/body"
call shared-tenant 200 '"view":"tenant"' GET "/v1/allocations/$jsh" "$B"
check shared-tenant-redacted 0 true -- jq -e --slurpfile o "$tmp/job" '.result.jobs[0].name == "a" and
	(.result.jobs[0].plan | type) == "object" and [.result.jobs[1:][] | .name] == ["job 2", "job 3"] and
	all(.result.jobs[1:][]; .redacted and .plan == null and .curve == [] and (has("spec") | not)) and
	[.result.jobs[] | .devices] == [$o[0].result.jobs[] | .devices] and (has("request") | not) and
	(has("idempotency_key") | not)' "$tmp/body"
problem shared-other 404 'no such allocation' GET "/v1/allocations/$jsh" "$C"
problem shared-jobs-scoped 404 '' GET "/v1/jobs/$jsh" "$B"
problem shared-unknown 404 'no such allocation' GET "/v1/allocations/999999" "$A"

# ---------------------------------------------------------------- bad requests
bad_body() { # NAME STATUS NEEDLE JQ-FILTER (applied to the good body)
	jq "$4" "$tmp/body.json" >"$tmp/bad.json"
	problem "$1" "$2" "$3" POST /v1/allocations "$A" "$tmp/bad.json"
}
bad_body unknown-model 422 'body.jobs[0].model' '.jobs[0].model = "no-such-model"'
bad_body duplicate-name 422 'body.jobs[1].name: duplicate' '.jobs[1].name = "a"'
bad_body both 422 'body: give \"cluster\" (one) or \"clusters\" (pools), not both' '.cluster = "enva"'
bad_body neither 422 'not neither' 'del(.clusters)'
bad_body unknown-member 422 'body.pools: unknown member' '.pools = 1'
bad_body bad-objective 422 'body.objective' '.objective = "fastest"'
bad_body bad-drain 422 'body.drain: with several clusters each node is POOL:NODE' '.drain = "2"'
bad_body drain-range 422 'body.drain: must be node indices' '.drain = "1:9"'
bad_body same-name 422 'body.clusters: two are named' '.clusters[1] = .clusters[0]'
bad_body deadline-samples 422 'body.jobs[0].samples: the deadline objective' '.objective = "deadline"'
bad_body bad-current 422 'body.current' '.current = 3'
bad_body bad-report 422 'body.current: must be a report' '.current = {"jobs": 1}'
bad_body unknown-cluster 422 'body.clusters[1]: unknown cluster \"no-such-cluster\" (GET /v1/catalog describes them: enva' '.clusters[1] = "no-such-cluster"'
bad_body limit 422 'body.time_limit_s' '.time_limit_s = 0'
# another tenant's stored cluster is not found, as one that never existed
jq '.jobs[1].model = "bert-huge"' "$tmp/body.json" >"$tmp/b-body.json"
problem other-tenant 404 "body.clusters[1]: no cluster with id $cid" POST /v1/allocations "$B" "$tmp/b-body.json"

# ---------------------------------------------------------------- stop and cancel
# a long allocation (8 Llama-7B jobs of batches used nowhere else on 64 DGX A100 nodes: 67
# sizes each, so 536 planner runs): stopped once it runs, it allocates on the points planned by
# then; the stop and the cancel end it long before it would end by itself
jq -n '{cluster: "dgx-a100-x64", jobs: [range(0; 8) as $i | {name: "j\($i)", model: "llama-7b", batch: (128 + 16 * $i)}]}' \
	>"$tmp/slow.json"
call slow 202 '' POST /v1/allocations "$A" "$tmp/slow.json"
js=$(jid)
i=0
while [ $i -lt $((1200 * SLOW)) ]; do
	req GET "/v1/jobs/$js" "$A"
	[ "$(jst)" = running ] && [ "$(jq .progress.candidates_done "$tmp/body")" -ge 1 ] && break
	case $(jst) in queued | running) ;; *) break ;; esac
	sleep 0.1
	i=$((i + 1))
done
call healthz 200 '' GET /healthz ""
call stop 202 '"kind":"allocation"' POST "/v1/jobs/$js/stop" "$A"
settle stopped "$js" "$A"
check stopped-report 0 true -- jq -e '.result.stopped == true and .result.unplanned_points > 0 and
	.result.planner_runs < ([.result.jobs[] | .curve | length] | add)' "$tmp/job"
# canceled while it runs: no result
jq '.jobs |= map(.batch += 4)' "$tmp/slow.json" >"$tmp/slow2.json"
call slow2 202 '' POST /v1/allocations "$A" "$tmp/slow2.json"
jc=$(jid)
wait_job "$jc" "$A" "running succeeded failed canceled" 100
req DELETE "/v1/jobs/$jc" "$A"
case $code in
200 | 202) if wait_job "$jc" "$A" "canceled succeeded failed" 100 && [ "$(jst "$tmp/job")" = canceled ] &&
	! grep -q '"result":' "$tmp/job"; then ok; else bad "cancel: $(head -c 300 "$tmp/job")"; fi ;;
*) bad "cancel: status $code: $(head -c 300 "$tmp/body")" ;;
esac

stop_uniapd
if [ "$stopped" -eq 0 ]; then ok; else bad "stop: exit $stopped: $(tail -c 300 "$tmp/log")"; fi
if grep -q 'Sanitizer\|runtime error:' "$tmp/log"; then
	bad "sanitizer: $(grep -m 3 'Sanitizer\|runtime error:' "$tmp/log")"; else ok; fi

summary allocations
