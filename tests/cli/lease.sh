#!/bin/sh
# tests/cli/lease.sh - one owner per job: two uniapd on one database file.
# A job running on the first is never run by the second, which starts while
# it runs and keeps recovering expired leases meanwhile (it leaves a live one
# alone): stopped through the first, the job succeeds once, only the first
# logs its transitions, and no log says "cannot go from".  Then the first is
# killed with -9 while it runs a job, and the second queues that job again
# once its lease ran out (--lease 6) and runs it to the end.
# The jobs are the wide T5 (MILPs of 5 s each, minutes in all) so that they
# run for as long as the test needs them, on any machine, and end when it
# stops them (POST /v1/jobs/{id}/stop keeps the best plan); every wait is on
# a condition with a generous deadline.  Needs curl, grep, sed.
# Prints "lease: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid= pid1= pid2=
trap 'for p in $pid $pid1 $pid2; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/http.inc"

# launch LOG ARGS...: a uniapd on a free port with its log in LOG; sets pid and port
launch() {
	lg=$1
	shift
	"$UNIAPD" --listen 127.0.0.1:0 --db "$DB" --lease 6 --no-cache "$@" 2>"$lg" &
	pid=$!
	port= i=0
	while [ -z "$port" ] && [ $i -lt $((300 * SLOW)) ] && kill -0 "$pid" 2>/dev/null; do
		sleep 0.1
		port=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$lg" | head -n 1)
		i=$((i + 1))
	done
	if [ -z "$port" ]; then bad "start: $(head -c 300 "$lg")"; summary lease; exit 1; fi
	ok
}
# lines LOG JOB TO: how many transition lines of JOB to state TO are in LOG
lines() { grep "\"event\":\"job\",\"job\":$2," "$1" | grep -c "\"to\":\"$3\""; }

check tenant 0 "uk_" -- "$UNIAPD" tenant add ta --db "$DB" --max-jobs 100
A=$(tail -n 1 "$tmp/out")

# ---- 1. a second uniapd starts while the first runs a job: it leaves the job alone
launch "$tmp/log1" --jobs 1 --workers 1
pid1=$pid port1=$port
call wide 201 '"kind":"model"' POST /v1/models "$A" tests/data/t5-wide.json
printf '{"cluster":"dgx-a100-x2","model":%s,"batch":128,"time_limit_s":5,"every_candidate":true}' "$(jid)" >"$tmp/long.json"
call submit-1 202 '"id":' POST /v1/plans "$A" "$tmp/long.json"
j1=$(jid)
if wait_job "$j1" "$A" "running succeeded failed canceled" 600 && [ "$(jst "$tmp/job")" = running ]; then ok; else
	bad "job $j1 not running on the first: $(head -c 300 "$tmp/job")"; fi
launch "$tmp/log2" --jobs 2 --workers 1
pid2=$pid port2=$port
port=$port1
# the second's start-up recovery is behind it (it listens); its periodic one (every 2 s) runs
# while the first holds the job until the job has a plan, at least one candidate later
if planned "$j1" "$A"; then ok; else bad "job $j1 never had a plan while running: $(head -c 300 "$tmp/body")"; fi
call stop-1 202 '"state":"running"' POST "/v1/jobs/$j1/stop" "$A"
if wait_job "$j1" "$A" "succeeded failed canceled" 1200 && [ "$(jst "$tmp/job")" = succeeded ]; then ok; else
	bad "job $j1: $(head -c 300 "$tmp/job")"; fi
# the transition line is written before the job's final store call returns
logged "$tmp/log1" "$j1" succeeded
n=$(lines "$tmp/log1" "$j1" succeeded)
if [ "$n" -eq 1 ]; then ok; else bad "first: $n succeeded lines for job $j1"; fi
if grep -q "\"job\":$j1," "$tmp/log2"; then bad "second touched job $j1: $(grep "\"job\":$j1," "$tmp/log2")"; else ok; fi
if grep -q '"msg":"recovered"' "$tmp/log2"; then bad "second re-queued a live job: $(grep recovered "$tmp/log2")"; else ok; fi
if grep -q 'cannot go from\|lost the lease' "$tmp/log1" "$tmp/log2"; then
	bad "log: $(grep -h 'cannot go from\|lost the lease' "$tmp/log1" "$tmp/log2" | head -n 3)"; else ok; fi

# ---- 2. kill -9 of the first while it runs a job: the second takes it once the lease ran out
kill -TERM "$pid2"
wait "$pid2"
pid2=
call submit-2 202 '"id":' POST /v1/plans "$A" "$tmp/long.json"
j2=$(jid)
if wait_job "$j2" "$A" "running succeeded failed canceled" 600 && [ "$(jst "$tmp/job")" = running ]; then ok; else
	bad "job $j2 not running on the first: $(head -c 300 "$tmp/job")"; fi
launch "$tmp/log3" --jobs 1 --workers 1
pid2=$pid port2=$port
kill -9 "$pid1"
wait "$pid1" 2>/dev/null
pid1=
port=$port2
# queued again by the second (its lease ran out) and claimed by it
logged "$tmp/log3" "$j2" running
if grep -q '"msg":"recovered","requeued_jobs":1' "$tmp/log3"; then ok; else
	bad "second: no recovered line: $(head -c 600 "$tmp/log3")"; fi
if planned "$j2" "$A"; then ok; else bad "job $j2 never had a plan while running: $(head -c 300 "$tmp/body")"; fi
call stop-2 202 '"state":"running"' POST "/v1/jobs/$j2/stop" "$A"
if wait_job "$j2" "$A" "succeeded failed canceled" 1200 && [ "$(jst "$tmp/job")" = succeeded ]; then ok; else
	bad "job $j2 after the kill: $(head -c 300 "$tmp/job")"; fi
logged "$tmp/log3" "$j2" succeeded
n=$(lines "$tmp/log3" "$j2" succeeded)
if [ "$n" -eq 1 ]; then ok; else bad "second: $n succeeded lines for job $j2"; fi
if grep -q 'cannot go from' "$tmp/log3"; then bad "log: $(grep 'cannot go from' "$tmp/log3")"; else ok; fi
kill -TERM "$pid2"
wait "$pid2"
if [ $? -eq 0 ]; then ok; else bad "second: exit status"; fi
pid2=
summary lease
