#!/usr/bin/env bash
# bench/attack.sh [UNIAPD] - the "under attack" line of make bench: what a
# well-behaved tenant sees while another client attacks uniapd three ways at
# once (issue: multi-tenant hardening):
#   - a slowloris: SLOW connections (40) trickling header bytes, each
#     reconnecting when the header deadline closes it;
#   - heavy evaluates: EVALS (4) loops of tenant a posting the 8192-device
#     body of bench/heavy-evaluate.sh;
#   - heavy jobs: JOBS (4) plan jobs of tenant a (dgx-a100-x8, t5-large,
#     batch 1024, time_limit_s 60).
# The victim, tenant b, is measured quiet and then under attack:
#   (a) GET of one stored job with wrk (-c 8, DURATION 10s): p99;
#   (b) a small plan job (dgx-a100, bert-huge, batch 8): submission to
#       succeeded, seconds.
# One line: "under attack: GET p99 X ms (quiet Y ms), small plan job Z s
# (quiet W s); ...".  uniapd runs --no-cache so that the second small job is
# solved, not read back; UNIAPD_ARGS adds options (e.g. --spare-jobs 1).
# bash for /dev/tcp; wrk (deps/debian-bench.txt).
# Figures, not assertions: compare runs of one machine only.
set -eu
UNIAPD=${1:-build/uniapd}
SLOW=${SLOW:-40}
EVALS=${EVALS:-4}
JOBS=${JOBS:-4}
DURATION=${DURATION:-10s}
LUA=bench/wrk-auth.lua

command -v wrk >/dev/null 2>&1 || { echo "bench/attack.sh: wrk not found; run: sh scripts/install-deps.sh bench" >&2; exit 2; }
[ -x "$UNIAPD" ] || { echo "bench/attack.sh: $UNIAPD: not built (make)" >&2; exit 2; }

. bench/lib.inc
DB=$tmp/uniap.db
A=$("$UNIAPD" tenant add attacker --db "$DB" --max-jobs 8 | tail -n 1)
B=$("$UNIAPD" tenant add victim --db "$DB" | tail -n 1)
# shellcheck disable=SC2086
bench_start bench/attack.sh "$UNIAPD" "$tmp/uniapd.log" --db "$DB" --no-cache ${UNIAPD_ARGS:-}
J="Content-Type: application/json"
kids=
attack_cleanup() {
	# shellcheck disable=SC2086
	[ -z "$kids" ] || kill $kids 2>/dev/null || true
	bench_cleanup
}
trap attack_cleanup EXIT

now_ns() { date +%s%N; }

# small_job: seconds from a small plan job's submission to its success (tenant b)
small_job() {
	t0=$(now_ns)
	id=$(curl -sf -H "Authorization: Bearer $B" -H "$J" -d '{"cluster":"dgx-a100","model":"bert-huge","batch":8}' \
		"$U/v1/plans" | sed -n 's/^{"id":\([0-9]*\).*/\1/p')
	[ -n "$id" ] || { echo "bench/attack.sh: the small job was refused" >&2; exit 1; }
	until curl -sf -H "Authorization: Bearer $B" "$U/v1/jobs/$id?wait=10" | grep -q '"state":"succeeded"'; do
		[ $(($(now_ns) - t0)) -lt 900000000000 ] || { echo "bench/attack.sh: job $id not done in 900 s" >&2; exit 1; }
	done
	awk -v ns=$(($(now_ns) - t0)) 'BEGIN { printf "%.2f", ns / 1e9 }'
	echo "$id" >"$tmp/job.id"
}

# get_p99: wrk's p99 in ms for tenant b's GET of its job
get_p99() {
	UNIAP_BENCH_KEY=$B wrk -t 2 -c 8 -d "$DURATION" --latency -s "$LUA" "$U/v1/jobs/$(cat "$tmp/job.id")" \
		>"$tmp/wrk.out" 2>&1 || { echo "bench/attack.sh: wrk failed: $(cat "$tmp/wrk.out")" >&2; exit 1; }
	awk '/^ *99%/ { v = $2; if (v ~ /us$/) x = v / 1000; else if (v ~ /ms$/) x = v + 0; else x = v * 1000;
		printf "%.2f", x }' "$tmp/wrk.out"
}

quiet_job=$(small_job)
quiet_p99=$(get_p99)

# the attack
slowloris() {
	while :; do
		{
			exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 0
			printf 'GET /healthz HTTP/1.1\r\nHost: a\r\n' >&3
			while printf 'X' >&3 2>/dev/null; do sleep 1; done
		} 2>/dev/null
		sleep 0.2
	done
}
i=0
while [ $i -lt "$SLOW" ]; do
	slowloris &
	kids="$kids $!"
	i=$((i + 1))
done
sh bench/heavy-evaluate.sh >"$tmp/heavy.json"
i=0
while [ $i -lt "$EVALS" ]; do
	(while :; do
		curl -s -o /dev/null -H "Authorization: Bearer $A" -H "$J" --data-binary "@$tmp/heavy.json" "$U/v1/evaluate" ||
			sleep 1
	done) &
	kids="$kids $!"
	i=$((i + 1))
done
i=0
while [ $i -lt "$JOBS" ]; do
	curl -sf -o /dev/null -H "Authorization: Bearer $A" -H "$J" \
		-d "{\"cluster\":\"dgx-a100-x8\",\"model\":\"t5-large\",\"batch\":$((1024 + 8 * i)),\"time_limit_s\":60}" \
		"$U/v1/plans" || echo "bench/attack.sh: heavy job $i refused" >&2
	i=$((i + 1))
done
sleep 3
attack_job=$(small_job)
attack_p99=$(get_p99)
echo "under attack: GET p99 $attack_p99 ms (quiet $quiet_p99 ms), small plan job $attack_job s (quiet $quiet_job s);" \
	"$SLOW slowloris connections, $EVALS heavy evaluate loops, $JOBS heavy jobs of another tenant; $(nproc) cores${UNIAPD_ARGS:+; $UNIAPD_ARGS}"

# ---- round two (issue: hardening, round two): each attack on a fresh uniapd, a
# /healthz prober beside it (bench/attack.py), one line of figures each.  ROUND2=0 skips.
[ "${ROUND2:-1}" = 1 ] || exit 0
command -v python3 >/dev/null 2>&1 || { echo "round two: python3 not found; skipped"; exit 0; }
# shellcheck disable=SC2086
[ -z "$kids" ] || kill $kids 2>/dev/null || true
kids=
SECS=${ROUND2_SECONDS:-30}
# restart ARGS...: stops uniapd and starts it again on a new database with tenants a..e
restart() {
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
	rm -f "$tmp"/r2.db*
	for t in a b c d e; do
		eval "K_$t=\$(\"$UNIAPD\" tenant add $t --db \"$tmp/r2.db\" --max-jobs 8 | tail -n 1)"
	done
	bench_start bench/attack.sh "$UNIAPD" "$tmp/uniapd.log" --db "$tmp/r2.db" --no-cache "$@"
}
# submit KEY BODY: a plan job's id
submit() { curl -sf -H "Authorization: Bearer $1" -H "$J" -d "$2" "$U/v1/plans" | sed -n 's/^{"id":\([0-9]*\).*/\1/p'; }
# wait_small KEY: seconds from a small plan job's submission to its success
wait_small() {
	t0=$(now_ns)
	id=$(submit "$1" '{"cluster":"dgx-a100","model":"bert-huge","batch":8}')
	[ -n "$id" ] || { echo "refused"; return; }
	until curl -sf -H "Authorization: Bearer $1" "$U/v1/jobs/$id?wait=10" | grep -q '"state":"succeeded"'; do
		[ $(($(now_ns) - t0)) -lt 900000000000 ] || { echo "over 900"; return; }
	done
	awk -v ns=$(($(now_ns) - t0)) 'BEGIN { printf "%.2f", ns / 1e9 }'
}

# 1. slow connections from many addresses
restart
python3 bench/attack.py slow "$port" 600 10 "$SECS"

# 2. one tenant hoards long-polls and drops its sockets; another waits and streams
restart --jobs 1 --spare-jobs 0 --workers 1
W=$(curl -sf -H "Authorization: Bearer $K_a" -H "$J" --data-binary @tests/data/t5-wide.json "$U/v1/models" |
	sed -n 's/.*"id":\([0-9]*\).*/\1/p')
submit "$K_a" "{\"cluster\":\"dgx-a100-x2\",\"model\":$W,\"batch\":64,\"time_limit_s\":5}" >/dev/null
qa=$(submit "$K_a" '{"cluster":"enva","model":"bert-huge","batch":4}')
qb=$(submit "$K_b" '{"cluster":"enva","model":"bert-huge","batch":4}')
python3 bench/attack.py hoard "$port" "$K_a" "$qa" "$K_b" "$qb" "$SECS"

# 3. two tenants flood heavy evaluations (8,192 devices, 4 in flight each); a third's small one
restart
HEAVY_DEVICES=8192 sh bench/heavy-evaluate.sh >"$tmp/heavy8k.json"
EX=schema/examples
{ printf '{"cluster":%s,"model":%s,"batch":32,"plan":' "$(cat $EX/cluster-8gpu-nvlink.json)" \
	"$(cat $EX/model-bert-chain.json)"; cat $EX/plan-example.json; printf '}'; } >"$tmp/small-eval.json"
python3 bench/attack.py evals "$port" "$K_a" "$K_c" "$K_b" "$tmp/heavy8k.json" "$tmp/small-eval.json" "$SECS"

# 4. saturating tenants' heavy plan jobs (the wide T5 of tests/data/t5-wide.json on two DGX
# nodes: MILPs of 5 s each, minutes per job, as in tests/cli/fair.sh), then a small job of a
# tenant with none: beside 2, then 3 saturating tenants
restart
heavy4() {
	w=$(curl -sf -H "Authorization: Bearer $1" -H "$J" --data-binary @tests/data/t5-wide.json "$U/v1/models" |
		sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	for b in 64 96 128 160; do
		submit "$1" "{\"cluster\":\"dgx-a100-x2\",\"model\":$w,\"batch\":$b,\"time_limit_s\":5}" >/dev/null
	done
}
# jobs_in STATE: how many jobs are in STATE (GET /metrics)
jobs_in() { curl -s "$U/metrics" | sed -n "s/^uniapd_jobs{state=\"$1\"} //p"; }
heavy4 "$K_a"
heavy4 "$K_c"
sleep 3
r2=$(jobs_in running) q2=$(jobs_in queued)
two=$(wait_small "$K_b")
heavy4 "$K_d"
sleep 3
r3=$(jobs_in running) q3=$(jobs_in queued)
three=$(wait_small "$K_e")
echo "saturating tenants: a small plan job of a tenant with none running waited $two s beside 2 tenants' heavy" \
	"jobs ($r2 running, $q2 queued), $three s beside 3 ($r3 running, $q3 queued); --jobs 2, --spare-jobs" \
	"default; $(nproc) cores"
