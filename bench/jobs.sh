#!/bin/sh
# bench/jobs.sh [UNIAPD] - plan-job figures of uniapd (make bench-jobs):
#   cache:      the same plan request twice (cold, then answered from the
#               cost-matrix cache): the job's solve_s and the client's wall
#               time from POST to succeeded, and the ratio
#   throughput: N small plan jobs queued at once (distinct batches, so no
#               cache hits), wall time until all succeed, jobs/s
#   fairness:   tenant A queues 4 heavy plan jobs (HEAVY, MODEL:CLUSTER:BATCH,
#               default T5-Large on EnvB's 16 PCIe GPUs, 0.5 s per candidate,
#               batches BATCH, 2x, 3x, 4x), then tenant B one small job
#               (BERT-Huge on EnvA, batch 4): B's wall time from POST
#               to succeeded (its queueing delay; issue 12 item 3 targets
#               < 2 s on 2 cores) and how many of A's were still unfinished
# Figures, not assertions (shared machine): compare within one run.
#
# Environment: CASES (the cache cases, MODEL:CLUSTER:BATCH words; default a
# T5 DAG that the MILP solves and a Llama chain that the DP solves), SCALE
# (1: also the 1024-GPU scale case of bench/run.sh, about 15 s; 0: not), N
# (throughput jobs, 40), HEAVY (the fairness case's heavy job), SPARE
# (uniapd's --spare-jobs, 1), JOBS and WORKERS (uniapd's --jobs and --workers;
# default 2 and the cores).
set -eu
UNIAPD=${1:-build/uniapd}
CASES=${CASES:-t5-large:dgx-a100:16 llama-7b:dgx-a100-x2:32}
HEAVY=${HEAVY:-t5-large:envb:32}
SPARE=${SPARE:-1}
N=${N:-40}
JOBS=${JOBS:-2}
WORKERS=${WORKERS:-$(nproc)}

command -v curl >/dev/null 2>&1 || { echo "bench/jobs.sh: curl not found" >&2; exit 2; }
[ -x "$UNIAPD" ] || { echo "bench/jobs.sh: $UNIAPD: not built (make)" >&2; exit 2; }

. bench/lib.inc
DB=$tmp/uniap.db
KEY=$("$UNIAPD" tenant add bench --db "$DB" --max-jobs 100000 | tail -n 1)
KEY_B=$("$UNIAPD" tenant add bench-small --db "$DB" --max-jobs 100 | tail -n 1)
bench_start bench/jobs.sh "$UNIAPD" "$tmp/log" --db "$DB" --jobs "$JOBS" --spare-jobs "$SPARE" --workers "$WORKERS"
H="Authorization: Bearer $KEY"
J="Content-Type: application/json"

now() { date +%s.%N; }

# submit BODY: prints the new job's id
submit() {
	curl -sf -H "$H" -H "$J" -d "$1" "$U/v1/plans" | sed -n 's/^{"id":\([0-9]*\).*/\1/p'
}

# wait_done ID: polls every 10 ms until the job ends; prints its document
wait_done() {
	while :; do
		curl -sf -H "$H" "$U/v1/jobs/$1" >"$tmp/job"
		grep -Eq '"state":"(succeeded|failed|canceled)"' "$tmp/job" && break
		sleep 0.01
	done
	cat "$tmp/job"
}

field() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p" | tail -n 1; }

# ---- cache: the same request twice, for each case
# cache_case LABEL BODY: the request cold then warm, and the ratios
cache_case() {
	label=$1 body=$2
	for run in cold warm; do
		t0=$(now)
		id=$(submit "$body")
		doc=$(wait_done "$id")
		t1=$(now)
		printf '%s\n' "$doc" | grep -q '"state":"succeeded"' || { echo "bench/jobs.sh: job $id: $(printf '%s' "$doc" | head -c 300)" >&2; exit 1; }
		# the result's own solve_s is the last "solve_s" of the document
		solve=$(printf '%s\n' "$doc" | field solve_s)
		tpi=$(printf '%s\n' "$doc" | sed -n 's/.*"plan":{[^}]*"tpi_s":\([0-9.eE+-]*\).*/\1/p')
		cached=$(printf '%s\n' "$doc" | grep -o '"cached":true' | wc -l)
		wall=$(echo "$t1 $t0" | awk '{printf "%.3f", $1 - $2}')
		eval "solve_$run=$solve wall_$run=$wall tpi_$run=$tpi"
		echo "jobs: cache $run: $label: solve ${solve} s, client wall ${wall} s, tpi ${tpi} s, cached candidates $cached"
	done
	[ "$tpi_cold" = "$tpi_warm" ] || { echo "bench/jobs.sh: the cached answer differs: $tpi_cold vs $tpi_warm" >&2; exit 1; }
	echo "jobs: cache speed-up, $label: solve $(echo "$solve_cold $solve_warm" | awk '{printf "%.1f", $1 / $2}')x, client wall $(echo "$wall_cold $wall_warm" | awk '{printf "%.1f", $1 / $2}')x (same plan)"
}

for case in $CASES; do
	MODEL=${case%%:*}
	rest=${case#*:}
	CLUSTER=${rest%%:*}
	BATCH=${rest#*:}
	cache_case "$MODEL on $CLUSTER batch $BATCH" "{\"cluster\":\"$CLUSTER\",\"model\":\"$MODEL\",\"batch\":$BATCH}"
done
if [ "${SCALE:-1}" = 1 ]; then
	# the scale case of bench/run.sh: its matrices are too large to cache, its facts are not
	cache_case "scale: 80-layer Llama-70B-like on 1024 x H100 batch 1024 1f1b" \
		"{\"cluster\":$(cat bench/data/cluster-1024-h100.json),\"model\":$(cat bench/data/model-llama-80.json),\"batch\":1024,\"schedule\":\"1f1b\",\"time_limit_s\":30}"
fi

# ---- throughput: N jobs queued at once, distinct batches (no cache hits)
t0=$(now)
ids=
k=1
while [ $k -le "$N" ]; do
	ids="$ids $(submit "{\"cluster\":\"dgx-a100\",\"model\":\"bert-huge\",\"batch\":$((k * 8))}")"
	k=$((k + 1))
done
t_sub=$(now)
for id in $ids; do
	wait_done "$id" | grep -q '"state":"succeeded"' || { echo "bench/jobs.sh: job $id did not succeed" >&2; exit 1; }
done
t1=$(now)
echo "$N $t0 $t_sub $t1" | awk -v jobs="$JOBS" -v workers="$WORKERS" '{printf "jobs: throughput: %d bert-huge plans on dgx-a100 (batch 8..%d) queued in %.2f s, all done in %.2f s: %.1f jobs/s (--jobs %s --workers %s)\n", $1, $1 * 8, $3 - $2, $4 - $2, $1 / ($4 - $2), jobs, workers}'
curl -sf "$U/metrics" | grep -E '^uniapd_cost_cache_requests_total|^uniapd_job_solve_seconds_(sum|count)' | sed 's/^/jobs: metrics: /'

# ---- fairness: a small job of tenant B behind 4 heavy jobs of tenant A
HMODEL=${HEAVY%%:*}
rest=${HEAVY#*:}
HCLUSTER=${rest%%:*}
HBATCH=${rest#*:}
heavy=
for k in 1 2 3 4; do
	heavy="$heavy $(submit "{\"cluster\":\"$HCLUSTER\",\"model\":\"$HMODEL\",\"batch\":$((HBATCH * k)),\"time_limit_s\":0.5}")"
done
sleep 0.5
t0=$(now)
small=$(curl -sf -H "Authorization: Bearer $KEY_B" -H "$J" -d '{"cluster":"enva","model":"bert-huge","batch":4}' "$U/v1/plans" |
	sed -n 's/^{"id":\([0-9]*\).*/\1/p')
H_A=$H
H="Authorization: Bearer $KEY_B"
wait_done "$small" | grep -q '"state":"succeeded"' || { echo "bench/jobs.sh: small job $small did not succeed" >&2; exit 1; }
t1=$(now)
H=$H_A
left=0
for id in $heavy; do
	curl -sf -H "$H" "$U/v1/jobs/$id" | grep -Eq '"state":"(queued|running)"' && left=$((left + 1))
done
echo "$t0 $t1" | awk -v left="$left" -v heavy="$HEAVY" -v spare="$SPARE" -v jobs="$JOBS" -v workers="$WORKERS" '{printf "jobs: fairness: tenant B small job behind tenant A 4 heavy jobs (%s): queued to succeeded %.2f s, %d of the heavy jobs still unfinished (--jobs %s --spare-jobs %s --workers %s)\n", heavy, $2 - $1, left, jobs, spare, workers}'
for id in $heavy; do
	curl -sf -X DELETE -H "$H" "$U/v1/jobs/$id" >/dev/null || :
done
