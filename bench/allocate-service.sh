#!/bin/sh
# bench/allocate-service.sh [UNIAPD] [UNIAP] - one allocation of a seeded workload of JOBS (50) jobs
# (bench/allocate.py's, seed 1: four kinds of jobs, all arrived) on CLUSTER (dgx-a100-x64)
# (67 sizes there) through uniapd's POST /v1/allocations, timed from the POST to the job's
# end: cold (an empty store: every curve point planned), warm (the same request: every
# point from the tenant's curve-point cache), and a re-plan after a node fails (the first
# answer as current, the node drained).  Times are wall seconds on this machine with
# uniapd's default workers (its cores); figures, not assertions.  Needs curl, jq, python3.
set -u
UNIAPD=${1:-build/uniapd}
UNIAP=${2:-build/uniap}
CLUSTER=${CLUSTER:-dgx-a100-x64}
JOBS=${JOBS:-50}
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
python3 - "$tmp/jobs.json" "$JOBS" <<'PY'
import json, sys
sys.path.insert(0, "bench")
import importlib.util
spec = importlib.util.spec_from_file_location("alloc", "bench/allocate.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
jobs = m.workload(1, int(sys.argv[2]))
json.dump([{"name": j["name"], "model": j["model"], "batch": j["batch"], "weight": j["weight"],
            "samples": j["samples"]} for j in jobs], open(sys.argv[1], "w"))
PY
"$UNIAPD" --listen 127.0.0.1:0 --db "$tmp/u.db" --no-auth --jobs 1 2>"$tmp/log" &
pid=$!
port=
while [ -z "$port" ]; do
	sleep 0.2
	port=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$tmp/log" | head -n 1)
done
base="http://127.0.0.1:$port"
# time NAME BODY: POST it, wait for the end; prints the line and keeps the result in $tmp/NAME.json
timed() {
	t0=$(date +%s.%N)
	id=$(curl -s -X POST -H 'Content-Type: application/json' --data-binary "@$2" "$base/v1/allocations" | jq .id)
	while :; do
		curl -s "$base/v1/jobs/$id?wait=30" >"$tmp/job.json"
		case $(jq -r .state "$tmp/job.json") in succeeded | failed | canceled) break ;; esac
	done
	t1=$(date +%s.%N)
	jq .result "$tmp/job.json" >"$tmp/$1.json"
	printf '| %s | %s | %.2f | %s | %s | %s |\n' "$1" "$(jq -r .state "$tmp/job.json")" "$(echo "$t1 - $t0" | bc)" \
		"$(jq .planner_runs "$tmp/$1.json")" "$(jq .cached_points "$tmp/$1.json")" "$(jq .value "$tmp/$1.json")"
}
jq -n --arg c "$CLUSTER" --slurpfile j "$tmp/jobs.json" '{cluster: $c, jobs: $j[0]}' >"$tmp/cold-body.json"
echo "| run | state | wall s | planner runs | cached points | value |"
echo "|---|---|---|---|---|---|"
timed cold "$tmp/cold-body.json"
timed warm "$tmp/cold-body.json"
jq --slurpfile c "$tmp/cold.json" '. + {current: $c[0], drain: "3"}' "$tmp/cold-body.json" >"$tmp/fail-body.json"
timed node-fails "$tmp/fail-body.json"
echo "moves after the node failed: $(jq .moves "$tmp/node-fails.json")"
