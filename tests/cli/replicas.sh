#!/bin/sh
# tests/cli/replicas.sh - three uniapd replicas on one PostgreSQL server
# (docs/scale.md), the server private to the test (tests/cli/pg.inc):
#   1. across replicas the database enforces a tenant's max-jobs (8 creates
#      at once through 3 replicas: exactly 4 accepted, 4 answered 429) and an
#      Idempotency-Key (one job for the same key sent to all 3 at once);
#   2. a cancel sent to one replica reaches the job another runs;
#   3. 200 plan jobs from 3 tenants (BERT-Huge with every_candidate, tenths of a
#      second each, so that a replica killed or paused holds a running one),
#      submitted round-robin to the replicas,
#      while one replica is killed with -9, the database is stopped (the
#      replicas' /readyz says 503) and started again, and another replica is
#      paused with SIGSTOP past its lease (3 s), until the last replica has
#      claimed its running jobs again (a condition, not a sleep: a busy machine
#      sweeps late), and resumed: every job succeeds
#      exactly once (one "succeeded" log line each, over all replicas), the
#      killed replica's jobs are queued again by the others, the paused
#      replica's running jobs finish elsewhere and, resumed, it writes nothing
#      about them (its lease is lost, its writes fenced), and the replicas
#      carry on on the restarted database without a restart of their own;
#   4. the cost cache is shared and tenant-scoped: what one replica computed
#      for a tenant's plan answers the same plan of that tenant on another
#      replica, and never another tenant's (its own upload of the same
#      cluster document: a catalog-only problem is public, one global scope);
#   5. one job across replicas: a large job planned while two more replicas
#      are idle has candidates they solved and the plan one replica alone
#      gives; killing (-9) a helper while it holds one of a job's candidates
#      (seen in the database) loses nothing: the job ends with the same plan;
#      killing the owner of a job with candidates done: the last replica
#      finishes it with the same plan and takes those candidates; a cancel
#      sent to a replica that only helps a job cancels the job.
# Skipped without Debian's postgresql.  Prints "replicas: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
. "$(dirname "$0")/pg.inc"
UNIAPD=${UNIAPD:-build/uniapd}
. "$(dirname "$0")/http.inc"
N=200
pids=

pg_find || { echo "replicas: 0 passed, 0 failed, 1 skipped"; exit 0; }
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; done; pg_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM # the EXIT trap stops the server
pg_start || { bad "the test's PostgreSQL server did not start"; summary replicas; exit 1; }
DB=$(pg_createdb replicas) || { bad "createdb"; summary replicas; exit 1; }

key() { "$UNIAPD" tenant add "$1" --db "$DB" --max-jobs "$2" 2>/dev/null | tail -n 1; }
A=$(key ta 1000) B=$(key tb 1000) C=$(key tc 1000) Q=$(key tq 4)
case "$A$B$C$Q" in uk_*uk_*uk_*uk_*) ok ;; *) bad "tenant add: '$A' '$B' '$C' '$Q'"; summary replicas; exit 1 ;; esac

# launch I [cache]: replica I on a free port, its log in $tmp/rI.log; sets rpid_I and
# rport_I; with "cache" it uses the cost cache (the others solve every job: --no-cache)
launch() {
	nc=--no-cache
	[ "${2:-}" = cache ] && nc=
	"$UNIAPD" --listen 127.0.0.1:0 --db "$DB" --lease 3 --jobs 2 --workers 1 $nc \
		2>"$tmp/r$1.log" &
	eval "rpid_$1=$!"
	pids="$pids $!"
	i=0 p=
	while [ -z "$p" ] && [ $i -lt 100 ]; do
		sleep 0.1
		p=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$tmp/r$1.log" | head -n 1)
		i=$((i + 1))
	done
	eval "rport_$1=$p"
	if [ -n "$p" ]; then ok; else bad "replica $1 did not start: $(head -c 300 "$tmp/r$1.log")"; fi
}
launch 1
launch 2
launch 3
# ready I: the HTTP status of replica I's GET /readyz
ready() { eval "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:\$rport_$1/readyz"; }
for r in 1 2 3; do
	if [ "$(ready $r)" = 200 ]; then ok; else bad "replica $r not ready"; fi
done
# succeeded JOB: its "succeeded" transition lines in every replica's log
succeeded() { cat "$tmp"/r?.log | grep "\"event\":\"job\",\"job\":$1," | grep -c '"to":"succeeded"'; }
# count STATE...: the database's jobs in those states, of every tenant (replica 3's /metrics)
count() {
	curl -s "http://127.0.0.1:$rport_3/metrics" | tr -d '\r' >"$tmp/metrics"
	n=0
	for st in "$@"; do
		c=$(awk -v m="uniapd_jobs{state=\"$st\"}" '$1 == m { print $2 }' "$tmp/metrics")
		n=$((n + ${c:-0}))
	done
	echo "$n"
}
final() { count succeeded failed canceled; }

# ---- 1. the database's limits hold across replicas
# about a second's solve: none of the 8 ends while they are sent (max-jobs counts queued and running)
printf '{"cluster":"dgx-a100-x4","model":"bert-huge","batch":256}' >"$tmp/small.json"
for i in 1 2 3 4 5 6 7 8; do
	r=$(( i % 3 + 1 ))
	eval "p=\$rport_$r"
	curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "Content-Type: application/json" -H "Authorization: Bearer $Q" \
		--data-binary @"$tmp/small.json" "http://127.0.0.1:$p/v1/plans" >"$tmp/q$i" &
	cpids="${cpids:-} $!"
done
wait $cpids # the curls, not the replicas
cpids=
n202=$(cat "$tmp"/q? | grep -c '^202$') n429=$(cat "$tmp"/q? | grep -c '^429$')
if [ "$n202" = 4 ] && [ "$n429" = 4 ]; then ok; else bad "max-jobs 4 across replicas: $n202 accepted, $n429 refused"; fi
for r in 1 2 3; do
	eval "p=\$rport_$r"
	curl -s -X POST -H "Content-Type: application/json" -H "Authorization: Bearer $A" -H "Idempotency-Key: once" \
		--data-binary @"$tmp/small.json" "http://127.0.0.1:$p/v1/plans" >"$tmp/idem$r" &
	cpids="$cpids $!"
done
wait $cpids
# (an answer has no final newline, nor then has jid's output)
ids=$(for r in 1 2 3; do jid "$tmp/idem$r"; echo; done | grep . | sort -u)
nids=$(for r in 1 2 3; do jid "$tmp/idem$r"; echo; done | grep -c .)
if [ "$nids" = 3 ] && [ "$(echo "$ids" | wc -l)" = 1 ]; then ok; else bad "one key, 3 replicas: jobs '$ids' in $nids answers"; fi
idem=$ids

# ---- 2. a cancel through one replica reaches the job another runs
port=$rport_1
call wide-put 201 '"kind":"model"' POST /v1/models "$A" tests/data/t5-wide.json
printf '{"cluster":"dgx-a100-x2","model":%s,"batch":128,"every_candidate":true}' "$(jid)" >"$tmp/slow.json"
call slow-submit 202 '"id":' POST /v1/plans "$A" "$tmp/slow.json"
js=$(jid)
if wait_job "$js" "$A" "running succeeded failed canceled" 200 && [ "$(jst "$tmp/job")" = running ]; then ok; else
	bad "slow job $js not running: $(head -c 300 "$tmp/job")"; fi
runs=
for r in 1 2 3; do
	grep "\"event\":\"job\",\"job\":$js," "$tmp/r$r.log" | grep -q '"to":"running"' && runs=$r
done
other=$(( ${runs:-1} % 3 + 1 ))
eval "port=\$rport_$other"
req DELETE "/v1/jobs/$js" "$A"
if { [ "$code" = 200 ] || [ "$code" = 202 ]; } && wait_job "$js" "$A" "succeeded failed canceled" 100 &&
	[ "$(jst "$tmp/job")" = canceled ] &&
	grep "\"event\":\"job\",\"job\":$js," "$tmp/r${runs:-1}.log" | grep -q '"to":"canceled"'; then ok; else
	bad "cancel through replica $other of job $js on replica ${runs:-?}: $code, $(head -c 300 "$tmp/job")"; fi

# ---- 3. 200 jobs; kill -9, SIGSTOP past the lease, a database restart
i=0
while [ $i -lt $N ]; do
	case $((i % 3)) in 0) k=$A ;; 1) k=$B ;; *) k=$C ;; esac
	r=$((i % 3 + 1))
	eval "p=\$rport_$r"
	printf '{"cluster":"dgx-a100-x2","model":"bert-huge","batch":%d,"every_candidate":true}' $((i % 4 == 0 ? 128 : 64)) \
		>"$tmp/j.json"
	curl -s -X POST -H "Content-Type: application/json" -H "Authorization: Bearer $k" --data-binary @"$tmp/j.json" \
		"http://127.0.0.1:$p/v1/plans" >>"$tmp/submitted"
	echo >>"$tmp/submitted"
	i=$((i + 1))
done
n=$(grep -c '"state":"queued"\|"state":"running"' "$tmp/submitted")
if [ "$n" = $N ]; then ok; else bad "submitted: $n of $N accepted: $(grep -v queued "$tmp/submitted" | head -c 300)"; fi
port=$rport_3
# wait_final COUNT TENTHS: until at least COUNT jobs of A, B, C are final
wait_final() {
	i=0
	while [ "$(final)" -lt "$1" ] && [ $i -lt "$2" ]; do sleep 0.2; i=$((i + 2)); done
	[ "$(final)" -ge "$1" ]
}
# what ran before: the 4 of tenant Q, the idempotent one, the canceled slow one
base=6
wait_final $((base + 20)) 600 || bad "20 jobs not final within 60 s"
kill -9 "$rpid_1"
if grep -q '"to":"running"' "$tmp/r1.log"; then ok; else bad "replica 1 ran nothing before it was killed"; fi

wait_final $((base + 60)) 900 || bad "60 jobs not final within 90 s"
pg_ctl_run -m fast stop
i=0
while [ "$(ready 3)" != 503 ] && [ $i -lt 40 ]; do sleep 0.1; i=$((i + 1)); done
if [ "$(ready 3)" = 503 ]; then ok; else bad "replica 3's /readyz with the database down: $(ready 3)"; fi
sleep 1
pg_start_again || bad "the database did not start again"
i=0
while { [ "$(ready 2)" != 200 ] || [ "$(ready 3)" != 200 ]; } && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
if [ "$(ready 2)" = 200 ] && [ "$(ready 3)" = 200 ]; then ok; else bad "/readyz after the database came back: $(ready 2) $(ready 3)"; fi

wait_final $((base + 100)) 900 || bad "100 jobs not final within 90 s"
kill -STOP "$rpid_2"
sleep 0.5
# the jobs replica 2 holds: running in its log and still running in the database while it sleeps
paused=
for j in $(grep '"to":"running"' "$tmp/r2.log" | sed -n 's/.*"job":\([0-9]*\),.*/\1/p' | sort -u); do
	grep "\"event\":\"job\",\"job\":$j," "$tmp/r2.log" | grep -q '"to":"succeeded"\|"to":"failed"\|"to":"canceled"' &&
		continue
	req GET "/v1/jobs/$j" "$A"
	for k in $B $C; do [ "$code" = 200 ] || req GET "/v1/jobs/$j" "$k"; done
	[ "$(jst)" = running ] && paused="$paused $j"
done
if [ -n "$paused" ]; then ok; else bad "replica 2 held no running job when paused"; fi
# past its 3 s lease, replica 3's sweep queues its jobs again and replica 3 claims them once
# a slot of its own is free: wait for that (a condition; a busy machine can take long), then
# resume replica 2, whose writes about them must now be fenced
sleep 4
i=0
while [ $i -lt 1200 ]; do
	left=
	for j in $paused; do
		grep "\"event\":\"job\",\"job\":$j," "$tmp/r3.log" | grep -q '"to":"running"' || left="$left $j"
	done
	[ -z "$left" ] && break
	sleep 0.1
	i=$((i + 1))
done
if [ -z "$left" ]; then ok; else bad "replica 3 did not claim replica 2's paused jobs within 120 s:$left"; fi
kill -CONT "$rpid_2"

if wait_final $((base + N)) 1800; then ok; else bad "only $(final) of $((base + N)) jobs final within 180 s"; fi
for r in 2 3; do
	eval "p=\$rpid_$r"
	if kill -0 "$p" 2>/dev/null; then ok; else bad "replica $r died: $(tail -n 3 "$tmp/r$r.log")"; fi
done

# every job succeeded, exactly once
ids=$(sed -n 's/^{"id":\([0-9]*\),.*/\1/p' "$tmp/submitted")
notonce=
for j in $ids; do
	n=$(succeeded "$j")
	[ "$n" = 1 ] || notonce="$notonce $j:$n"
done
if [ -z "$notonce" ]; then ok; else
	bad "jobs not succeeded exactly once (job:lines):$notonce"
	for jn in $notonce; do cat "$tmp"/r?.log | grep "\"job\":${jn%:*}[,}]" | head -n 8; done
fi
# Q's 4 and the idempotent one succeeded too; the slow one was canceled
nok=$(count succeeded)
if [ "$nok" = $((N + 5)) ] && [ "$(count canceled failed queued running)" = 1 ]; then ok; else
	bad "succeeded: $nok, want $((N + 5)); canceled, failed, queued or running: $(count canceled failed queued running), want 1"; fi
[ "$(succeeded "$idem")" = 1 ] && ok || bad "the idempotent job $idem: $(succeeded "$idem") succeeded lines"
if grep -q '"msg":"recovered"' "$tmp/r2.log" "$tmp/r3.log"; then ok; else bad "no replica re-queued the killed one's jobs"; fi
# the paused replica's jobs were queued again and claimed anew (by another replica, or by
# it once resumed: then its log has a second claim); under its old lease it wrote nothing
stale= moved=0
for j in $paused; do
	claims=$(cat "$tmp"/r?.log | grep "\"event\":\"job\",\"job\":$j," | grep -c '"to":"running"')
	[ "$claims" -ge 2 ] && moved=$((moved + 1))
	own=$(grep "\"event\":\"job\",\"job\":$j," "$tmp/r2.log" | grep -c '"to":"running"')
	grep "\"event\":\"job\",\"job\":$j," "$tmp/r2.log" | grep -q '"to":"succeeded"\|"to":"failed"' &&
		[ "$own" -lt 2 ] && stale="$stale $j"
done
if [ "$moved" -gt 0 ] && [ "$moved" = "$(echo $paused | wc -w)" ]; then ok; else
	bad "of replica 2's paused jobs ($paused), $moved were claimed again"; fi
if [ -z "$stale" ]; then ok; else bad "replica 2 wrote results of jobs it had lost:$stale"; fi
if grep -q 'lost the lease' "$tmp/r2.log"; then ok; else bad "replica 2 never said it lost a lease"; fi
for r in 2 3; do
	if grep -q 'cannot go from' "$tmp/r$r.log"; then bad "replica $r: $(grep 'cannot go from' "$tmp/r$r.log" | head -n 2)"; else ok; fi
done
# ---- 4. the cost cache, shared by replicas, scoped by tenant: one replica at a time runs
# jobs (the others stopped), so which one computed and which one reused is known
for r in 2 3; do
	eval "p=\$rpid_$r"
	kill -TERM "$p"
	wait "$p" 2>/dev/null
done
# cache R RESULT: replica R's cost-cache look-ups with that result (hit, miss) so far
cache() {
	eval "cp=\$rport_$1"
	curl -s "http://127.0.0.1:$cp/metrics" | tr -d '\r' |
		awk -v m="uniapd_cost_cache_requests_total{result=\"$2\"}" '$1 == m { print $2 }'
}
# cached NAME R KEY CLUSTER MODEL: the plan of the tenant's uploaded copies of the same two
# documents (its own problem, cached in its scope) through replica R, to the end
cached() {
	eval "port=\$rport_$2"
	printf '{"cluster":%s,"model":%s,"batch":32}' "$4" "$5" >"$tmp/cached.json"
	call "$1" 202 '"id":' POST /v1/plans "$3" "$tmp/cached.json"
	if wait_job "$(jid)" "$3" "succeeded failed canceled" 300 && [ "$(jst "$tmp/job")" = succeeded ]; then ok; else
		bad "$1: $(head -c 300 "$tmp/job")"; fi
}
port=$rport_3
launch 4 cache
port=$rport_4
call cluster-a 201 '"kind":"cluster"' POST /v1/clusters "$A" schema/examples/cluster-8gpu-nvlink.json
ca=$(jid)
call cluster-b 201 '"kind":"cluster"' POST /v1/clusters "$B" schema/examples/cluster-8gpu-nvlink.json
cb=$(jid)
call model-a 201 '"kind":"model"' POST /v1/models "$A" schema/examples/model-bert-chain.json
ma=$(jid)
call model-b 201 '"kind":"model"' POST /v1/models "$B" schema/examples/model-bert-chain.json
mb=$(jid)
cached cache-first 4 "$A" "$ca" "$ma"
if [ "$(cache 4 miss)" -gt 0 ]; then ok; else bad "replica 4 computed nothing: misses $(cache 4 miss)"; fi
kill -TERM "$rpid_4"
wait "$rpid_4" 2>/dev/null
launch 5 cache
cached cache-other-replica 5 "$A" "$ca" "$ma"
h=$(cache 5 hit) m=$(cache 5 miss)
if [ "$h" -gt 0 ] && [ "$m" = 0 ]; then ok; else
	bad "replica 5 on what replica 4 computed for the tenant: hits $h, misses $m (want hits only)"; fi
cached cache-other-tenant 5 "$B" "$cb" "$mb"
h2=$(cache 5 hit) m2=$(cache 5 miss)
if [ "$h2" = "$h" ] && [ "$m2" -gt 0 ]; then ok; else
	bad "another tenant's same problem: hits $h -> $h2, misses $m -> $m2 (want misses only)"; fi

# ---- 5. one job across replicas (docs/scale.md): a job's candidates solved by every idle replica
# give the plan one replica alone gives; a helper killed while it holds a candidate loses nothing
# the 126-layer model on 65,536 H100s: about 10 s of one replica with one worker, 112 candidates
for r in 2 3 5; do
	eval "kill -TERM \$rpid_$r 2>/dev/null; wait \$rpid_$r 2>/dev/null"
done
printf '{"cluster":%s,"model":%s,"batch":8192,"schedule":"1f1b"}' "$(cat bench/data/cluster-65536-h100.json)" \
	"$(cat bench/data/model-llama-126.json)" >"$tmp/big.json"
# big NAME: plans big.json through replica 6 to its end; the job's id in $big, its plan in $tmp/NAME.plan
big() {
	port=$rport_6
	call "$1" 202 '"id":' POST /v1/plans "$A" "$tmp/big.json"
	big=$(jid)
	if wait_job "$big" "$A" "succeeded failed canceled" 1200 && [ "$(jst "$tmp/job")" = succeeded ]; then ok; else
		bad "$1: $(head -c 300 "$tmp/job")"; fi
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["result"]
print(json.dumps([r["plan"], r["optimal"]], sort_keys=True)); print(sum(1 for c in r["candidates"] if c.get("shared")), file=sys.stderr)' \
		"$tmp/job" >"$tmp/$1.plan" 2>"$tmp/$1.shared"
}
launch 6
big alone
if [ "$(cat "$tmp/alone.shared")" = 0 ]; then ok; else bad "alone: $(cat "$tmp/alone.shared") candidates shared with no other replica"; fi
launch 7
launch 8
big shared
if cmp -s "$tmp/alone.plan" "$tmp/shared.plan"; then ok; else
	bad "one job on three replicas: another plan than on one: $(head -c 300 "$tmp/shared.plan")"; fi
if [ "$(cat "$tmp/shared.shared")" -gt 0 ]; then ok; else bad "shared: no candidate came from another replica"; fi
if grep -h '"event":"share"' "$tmp/r7.log" "$tmp/r8.log" | grep -q "\"job\":$big,.*candidates solved here"; then ok; else
	bad "shared: no replica logged helping job $big"; fi
# a cancel sent to a replica that only helps the job reaches the job's owner
port=$rport_6
call cancel-job 202 '"id":' POST /v1/plans "$A" "$tmp/big.json"
cj=$(jid)
helper= i=0
while [ -z "$helper" ] && [ $i -lt $((600 * SLOW)) ]; do
	for r in 6 7 8; do
		grep -q "\"event\":\"share\",\"job\":$cj,.*\"to\":\"helping\"" "$tmp/r$r.log" && helper=$r
	done
	[ -n "$helper" ] || sleep 0.1
	i=$((i + 1))
done
if [ -n "$helper" ]; then
	eval "port=\$rport_$helper"
	req POST "/v1/jobs/$cj/cancel" "$A"
	if { [ "$code" = 200 ] || [ "$code" = 202 ]; } && wait_job "$cj" "$A" "succeeded failed canceled" 1200 &&
		[ "$(jst "$tmp/job")" = canceled ]; then ok; else
		bad "cancel-via-helper: status $code; job $cj: $(head -c 300 "$tmp/job")"; fi
else
	bad "cancel-via-helper: no replica helped job $cj"
fi
# kill -9 a helper while it holds one of the job's candidates (seen in the database)
port=$rport_6
call kill-job 202 '"id":' POST /v1/plans "$A" "$tmp/big.json"
kj=$(jid)
held= i=0
while [ -z "$held" ] && [ $i -lt $((600 * SLOW)) ]; do
	held=$(psql "$DB" -Atc "SELECT u.owner FROM job_units u JOIN jobs j ON j.id = u.job_id WHERE u.job_id = $kj
		AND u.facts IS NULL AND u.owner IS NOT NULL AND u.owner <> j.lease_owner LIMIT 1" 2>/dev/null)
	[ -n "$held" ] || sleep 0.1
	i=$((i + 1))
done
victim=
for r in 6 7 8; do
	grep -q "\"instance\":\"$held\"" "$tmp/r$r.log" && victim=$r
done
if [ -n "$victim" ]; then
	eval "kill -9 \$rpid_$victim"
	ok
else
	bad "kill: no helper held a candidate of job $kj (held '$held')"
fi
alive=
for r in 6 7 8; do
	[ "$r" = "$victim" ] || alive="$alive $r"
done
set -- $alive
eval "port=\$rport_$1"
if wait_job "$kj" "$A" "succeeded failed canceled" 1200 && [ "$(jst "$tmp/job")" = succeeded ]; then ok; else
	bad "kill: job $kj after its helper died: $(head -c 300 "$tmp/job")"; fi
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["result"]
print(json.dumps([r["plan"], r["optimal"]], sort_keys=True))' "$tmp/job" >"$tmp/killed.plan"
if cmp -s "$tmp/alone.plan" "$tmp/killed.plan"; then ok; else
	bad "kill: another plan after a helper died: $(head -c 300 "$tmp/killed.plan")"; fi
echo "replicas: after the kill of replica $victim, $(cat "$tmp"/r?.log | grep -c "\"job\":$kj,.*took over") candidates were taken over"
# kill -9 the owner once a few of its job's candidates are done: the job is queued again and
# the last replica, alone now, finishes it with the same plan, taking the candidates done
# before (the only way a candidate can be "shared" with no other replica alive)
call owner-job 202 '"id":' POST /v1/plans "$A" "$tmp/big.json"
oj=$(jid)
n=0 i=0
while [ "${n:-0}" -lt 3 ] && [ $i -lt $((600 * SLOW)) ]; do
	n=$(psql "$DB" -Atc "SELECT count(*) FROM job_units WHERE job_id = $oj AND facts IS NOT NULL" 2>/dev/null)
	[ "${n:-0}" -ge 3 ] || sleep 0.1
	i=$((i + 1))
done
owner=$(psql "$DB" -Atc "SELECT lease_owner FROM jobs WHERE id = $oj AND state = 'running'" 2>/dev/null)
dead= last=
for r in $alive; do
	if [ -n "$owner" ] && grep -q "\"instance\":\"$owner\"" "$tmp/r$r.log"; then dead=$r; else last=$r; fi
done
if [ -n "$dead" ] && [ -n "$last" ] && [ "${n:-0}" -ge 3 ]; then
	eval "kill -9 \$rpid_$dead"
	ok
else
	bad "owner-kill: job $oj: $n candidates done, owner '$owner' among replicas$alive"
fi
eval "port=\$rport_${last:-6}"
if wait_job "$oj" "$A" "succeeded failed canceled" 1200 && [ "$(jst "$tmp/job")" = succeeded ]; then ok; else
	bad "owner-kill: job $oj after its owner died: $(head -c 300 "$tmp/job")"; fi
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["result"]
print(json.dumps([r["plan"], r["optimal"]], sort_keys=True))
print(sum(1 for c in r["candidates"] if c.get("shared")), file=sys.stderr)' "$tmp/job" >"$tmp/owner.plan" 2>"$tmp/owner.shared"
if cmp -s "$tmp/alone.plan" "$tmp/owner.plan"; then ok; else
	bad "owner-kill: another plan after the owner died: $(head -c 300 "$tmp/owner.plan")"; fi
if [ "$(cat "$tmp/owner.shared")" -gt 0 ]; then ok; else
	bad "owner-kill: the next owner took none of the $n candidates done before the first died"; fi
if grep -q "\"job\":$oj,.*\"to\":\"running\"" "$tmp/r$last.log"; then ok; else
	bad "owner-kill: replica $last did not run job $oj"; fi

for r in 1 2 3; do
	c=$(grep -c '"to":"succeeded"' "$tmp/r$r.log")
	echo "replicas: replica $r recorded $c succeeded jobs"
done
summary replicas
