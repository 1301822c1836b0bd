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
