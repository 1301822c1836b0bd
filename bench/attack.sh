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
# Then round two (issue: hardening, round two; ROUND2=0 skips it, ROUND1=0
# the line above, ATTACKS="1 ... 6" picks, ROUND2_SECONDS each one's length,
# 30 s), each on a fresh uniapd with a /healthz prober beside it, one line
# each: (1) 600 slow connections from 10 addresses; (2) a tenant hoarding
# long-polls and dropping its sockets while another waits and streams; (3)
# two tenants flooding heavy evaluations, a third's small one; (4) a small
# plan job beside 2 and 3 saturating tenants; (5) a hung PostgreSQL (its
# processes stopped; needs Debian's postgresql); (6) a full disk (a tmpfs;
# needs root); (7) a frozen disk (fsfreeze on a loop-mounted ext4; needs
# root).  bench/attack.py (python3) holds the many-socket attacks.
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
	# a PostgreSQL server of attack 5 left stopped or running, the tmpfs of attack 6
	if [ -n "${PG_DIR:-}" ] && [ -f "$PG_DIR/data/postmaster.pid" ]; then
		pm=$(head -n 1 "$PG_DIR/data/postmaster.pid")
		# shellcheck disable=SC2046
		kill -CONT "$pm" $(pgrep -P "$pm") 2>/dev/null || true
		pg_stop
	fi
	fsfreeze -u "$tmp/fs" 2>/dev/null || true
	umount "$tmp/fs" 2>/dev/null || true
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

if [ "${ROUND1:-1}" = 1 ]; then
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
fi

# ---- round two (issue: hardening, round two): each attack on a fresh uniapd, a
# /healthz prober beside it (bench/attack.py), one line of figures each.  ROUND2=0 skips.
[ "${ROUND2:-1}" = 1 ] || exit 0
command -v python3 >/dev/null 2>&1 || { echo "round two: python3 not found; skipped"; exit 0; }
# shellcheck disable=SC2086
[ -z "$kids" ] || kill $kids 2>/dev/null || true
kids=
SECS=${ROUND2_SECONDS:-30}
# stop_server: stops the uniapd of $pid (SIGTERM, waited for)
stop_server() {
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
}
# restart ARGS...: stops uniapd and starts it again on a new database with tenants a..e
restart() {
	stop_server
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

# on: whether round-two attack N is to run (ATTACKS, default all: "1 2 3 4 5 6")
on() { case " ${ATTACKS:-1 2 3 4 5 6 7} " in *" $1 "*) return 0 ;; esac; return 1; }

# 1. slow connections from many addresses
if on 1; then
	restart
	python3 bench/attack.py slow "$port" 600 10 "$SECS"
fi

# 2. one tenant hoards long-polls and drops its sockets; another waits and streams
on 2 && {
restart --jobs 1 --spare-jobs 0 --workers 1
W=$(curl -sf -H "Authorization: Bearer $K_a" -H "$J" --data-binary @tests/data/t5-wide.json "$U/v1/models" |
	sed -n 's/.*"id":\([0-9]*\).*/\1/p')
submit "$K_a" "{\"cluster\":\"dgx-a100-x2\",\"model\":$W,\"batch\":64,\"time_limit_s\":5}" >/dev/null
qa=$(submit "$K_a" '{"cluster":"enva","model":"bert-huge","batch":4}')
qb=$(submit "$K_b" '{"cluster":"enva","model":"bert-huge","batch":4}')
python3 bench/attack.py hoard "$port" "$K_a" "$qa" "$K_b" "$qb" "$SECS"
}

# 3. two tenants flood heavy evaluations (8,192 devices, 4 in flight each); a third's small one
on 3 && {
restart
HEAVY_DEVICES=8192 sh bench/heavy-evaluate.sh >"$tmp/heavy8k.json"
EX=schema/examples
{ printf '{"cluster":%s,"model":%s,"batch":32,"plan":' "$(cat $EX/cluster-8gpu-nvlink.json)" \
	"$(cat $EX/model-bert-chain.json)"; cat $EX/plan-example.json; printf '}'; } >"$tmp/small-eval.json"
python3 bench/attack.py evals "$port" "$K_a" "$K_c" "$K_b" "$tmp/heavy8k.json" "$tmp/small-eval.json" "$SECS"
}

# 4. saturating tenants' heavy plan jobs (the wide T5 of tests/data/t5-wide.json on two DGX
# nodes: MILPs of 5 s each, minutes per job, as in tests/cli/fair.sh), then a small job of a
# tenant with none: beside 2, then 3 saturating tenants
on 4 && {
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
}

# probe_healthz SECONDS: "healthz N/M answered, p99 X ms" from a probe every 200 ms (5 s timeout each)
probe_healthz() {
	n=0
	okn=0
	: >"$tmp/lat"
	end=$(($(date +%s) + $1))
	while [ "$(date +%s)" -lt "$end" ]; do
		r=$(curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}' "$U/healthz") || true
		set -- $r
		n=$((n + 1))
		if [ "${1:-0}" = 200 ]; then okn=$((okn + 1)); echo "$2" >>"$tmp/lat"; else echo 5 >>"$tmp/lat"; fi
		sleep 0.2
	done
	sort -n "$tmp/lat" | awk -v n="$n" -v k="$okn" '{ a[NR] = $1 } END { i = int(0.99 * (NR - 1) + 1.5); if (i > NR) i = NR;
		p = (a[i] >= 5) ? "5 s or more" : sprintf("%.1f ms", 1000 * a[i])
		m = (a[NR] >= 5) ? "5 s or more" : sprintf("%.0f ms", 1000 * a[NR])
		printf "healthz %d/%d answered, p99 %s, slowest %s", k, n, p, m }'
}

# 5. a hung PostgreSQL (every process of the server stopped with SIGSTOP), replicas' store
. tests/cli/pg.inc
if ! on 5; then
	:
elif pg_find >/dev/null 2>&1 && pg_start >/dev/null 2>&1; then
	stop_server
	pgdb=$(pg_createdb attack_r2)
	K_pg=$("$UNIAPD" tenant add a --db "$pgdb" | tail -n 1)
	bench_start bench/attack.sh "$UNIAPD" "$tmp/uniapd.log" --db "$pgdb"
	pm=$(head -n 1 "$PG_DIR/data/postmaster.pid")
	# shellcheck disable=SC2046
	kill -STOP "$pm" $(pgrep -P "$pm")
	# a client keeps polling its documents meanwhile (each answered 503 within the store's deadline)
	(while :; do curl -s -o /dev/null -m 30 -H "Authorization: Bearer $K_pg" "$U/v1/clusters"; done) &
	poller=$!
	line=$(probe_healthz "$SECS")
	t0=$(now_ns)
	c=$(curl -s -o /dev/null -m 60 -w '%{http_code}' -H "Authorization: Bearer $K_pg" "$U/v1/clusters")
	t1=$(now_ns)
	kill "$poller" 2>/dev/null || true
	# shellcheck disable=SC2046
	kill -CONT "$pm" $(pgrep -P "$pm")
	echo "hung PostgreSQL (SIGSTOP, $SECS s, one client polling): $line; a read answered $c in" \
		"$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }') s"
	pg_stop
else
	echo "hung PostgreSQL: skipped (no PostgreSQL server here: Debian package postgresql)"
fi

# 6. a full disk (a 24 MB tmpfs filled to the last byte; needs root): deletes go through
mnt=$tmp/fs
mkdir -p "$mnt"
if ! on 6; then
	:
elif [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=24m tmpfs "$mnt" 2>/dev/null; then
	stop_server
	bench_start bench/attack.sh "$UNIAPD" "$tmp/uniapd.log" --db "$mnt/uniap.db" --no-auth
	i=0
	while [ $i -lt 20 ]; do
		curl -s -o /dev/null -H "$J" --data-binary @schema/examples/model-bert-chain.json "$U/v1/models"
		i=$((i + 1))
	done
	dd if=/dev/zero of="$mnt/filler" bs=1M count=64 2>/dev/null || true
	okd=0 i=1
	while [ $i -le 20 ]; do
		[ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$U/v1/models/$i")" = 204 ] && okd=$((okd + 1))
		i=$((i + 1))
	done
	up=$(curl -s -o /dev/null -w '%{http_code}' -H "$J" --data-binary @schema/examples/model-bert-chain.json "$U/v1/models")
	echo "full disk: $okd/20 DELETEs answered 204 (the first one sent at once); an upload meanwhile $up;" \
		"$(probe_healthz 3)"
	stop_server
	umount "$mnt" 2>/dev/null || true
else
	echo "full disk: skipped (mounting a tmpfs needs root)"
fi
# 7. a frozen disk (an ext4 image on a loop device, fsfreeze; needs root): writes, reads and
# long-polls of a tenant meanwhile
if ! on 7; then
	:
elif [ "$(id -u)" = 0 ] && command -v fsfreeze >/dev/null 2>&1 && truncate -s 128M "$tmp/disk.img" &&
	mkfs.ext4 -q -F "$tmp/disk.img" >/dev/null 2>&1 && mount -o loop "$tmp/disk.img" "$mnt" 2>/dev/null; then
	stop_server
	K_f=$("$UNIAPD" tenant add a --db "$mnt/uniap.db" | tail -n 1)
	bench_start bench/attack.sh "$UNIAPD" "$tmp/uniapd.log" --db "$mnt/uniap.db" --jobs 1
	load=
	(while :; do
		curl -s -o /dev/null -m 60 -H "Authorization: Bearer $K_f" -H "$J" \
			--data-binary @schema/examples/cluster-8gpu-nvlink.json "$U/v1/clusters"
		curl -s -o /dev/null -m 60 -H "Authorization: Bearer $K_f" "$U/v1/clusters?limit=5"
	done) &
	load="$load $!"
	for i in 1 2 3 4; do
		(while :; do
			curl -s -o /dev/null -m 60 -H "Authorization: Bearer $K_f" "$U/v1/jobs?limit=5"
			curl -s -o /dev/null -m 60 -H "Authorization: Bearer $K_f" -H "$J" \
				-d '{"cluster":"enva","model":"bert-huge","batch":4}' "$U/v1/plans"
		done) &
		load="$load $!"
	done
	sleep 3
	fsfreeze -f "$mnt"
	line=$(probe_healthz "$SECS")
	fsfreeze -u "$mnt"
	# shellcheck disable=SC2086
	kill $load 2>/dev/null || true
	echo "frozen disk (fsfreeze, $SECS s, a tenant writing, reading and submitting meanwhile): $line"
	stop_server
	umount "$mnt" 2>/dev/null || true
else
	echo "frozen disk: skipped (needs root, a loop device, mkfs.ext4 and fsfreeze)"
fi
