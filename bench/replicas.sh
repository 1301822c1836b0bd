#!/bin/sh
# bench/replicas.sh [UNIAPD] - plan throughput of 1, 2 and 3 uniapd replicas
# on one PostgreSQL server on this machine (make bench-replicas;
# docs/scale.md).  For each replica count R: a private server (initdb and
# pg_ctl in a temporary folder, tests/cli/pg.inc) with a fresh database,
# R replicas (--jobs JOBS, --workers WORKERS, --no-cache so that every job
# solves), N plan jobs of one tenant submitted round-robin to the replicas,
# the wall time until all succeeded, jobs/s, and each replica's CPU seconds
# (uniapd and its solver processes, from /proc) with the jobs it ran, so
# that it shows whether the work spread.  Also the same N jobs on one uniapd
# on a SQLite file, the baseline.  Figures, not assertions: compare within
# one run.
#
# Environment: N (jobs, 60), JOB (the request, default BERT-Huge on two DGX
# A100 nodes, batch 128: about 0.5 s of one core), JOBS (2), WORKERS (the cores).
set -eu
UNIAPD=${1:-build/uniapd}
N=${N:-60}
JOB=${JOB:-'{"cluster":"dgx-a100-x2","model":"bert-huge","batch":128}'}
JOBS=${JOBS:-2}
WORKERS=${WORKERS:-$(nproc)}
[ -x "$UNIAPD" ] || { echo "bench/replicas.sh: $UNIAPD: not built (make)" >&2; exit 2; }
command -v curl >/dev/null 2>&1 || { echo "bench/replicas.sh: curl not found" >&2; exit 2; }

tmp=$(mktemp -d)
pids=
PG_DIR=
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
	pg_stop 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail=0
. tests/cli/pg.inc
set +e
pg_find || { echo "bench/replicas.sh: needs Debian's postgresql (sh scripts/install-deps.sh db-test)" >&2; exit 2; }
set -e

# cpu_s PID: CPU seconds of PID and of its living children (the solver processes)
cpu_s() {
	t=0
	for p in $1 $(ps -o pid= --ppid "$1" 2>/dev/null); do
		s=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$p/stat" 2>/dev/null || echo 0)
		t=$((t + s))
	done
	echo "$t $(getconf CLK_TCK)" | awk '{ printf "%.1f", $1 / $2 }'
}

# pg_cpu: CPU seconds of the PostgreSQL server so far (its postmaster, the backends
# it reaped and those alive); "-" without one
pg_cpu() {
	pm=$(head -n 1 "$PG_DIR/data/postmaster.pid" 2>/dev/null) || { echo -; return; }
	cpu_s "$pm"
}

# run LABEL DB R: R replicas on DB, N jobs; one line of figures
run() {
	label=$1 db=$2 r=$3
	pg0=$(pg_cpu)
	key=$("$UNIAPD" tenant add bench --db "$db" --max-jobs 100000 | tail -n 1)
	ports= rp=
	i=1
	while [ $i -le "$r" ]; do
		"$UNIAPD" --listen 127.0.0.1:0 --db "$db" --jobs "$JOBS" --workers "$WORKERS" --no-cache \
			2>"$tmp/$label-$i.log" >/dev/null &
		rp="$rp $!"
		pids="$pids $!"
		p= k=0
		while [ -z "$p" ] && [ $k -lt 100 ]; do
			sleep 0.1
			p=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$tmp/$label-$i.log" | head -n 1)
			k=$((k + 1))
		done
		[ -n "$p" ] || { echo "$label: replica $i did not start: $(head -c 300 "$tmp/$label-$i.log")" >&2; exit 1; }
		ports="$ports $p"
		i=$((i + 1))
	done
	set -- $ports
	start=$(date +%s.%N)
	j=0
	while [ $j -lt "$N" ]; do
		eval "p=\${$((j % r + 1))}"
		curl -s -o /dev/null -X POST -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
			--data-binary "$JOB" "http://127.0.0.1:$p/v1/plans"
		j=$((j + 1))
	done
	# the database's count of succeeded jobs (any replica's /metrics)
	while [ "$(curl -s "http://127.0.0.1:$1/metrics" | tr -d '\r' |
		awk '$1 == "uniapd_jobs{state=\"succeeded\"}" { print $2 }')" != "$N" ]; do
		sleep 0.1
	done
	wall=$(echo "$(date +%s.%N) $start" | awk '{ printf "%.1f", $1 - $2 }')
	per=
	i=1
	for p in $rp; do
		ran=$(grep -c '"to":"succeeded"' "$tmp/$label-$i.log" || true)
		per="$per r$i $(cpu_s "$p") cpu-s $ran jobs;"
		i=$((i + 1))
	done
	pg1=$(pg_cpu)
	[ "$pg0" = - ] || per="$per postgres $(echo "$pg1 $pg0" | awk '{ printf "%.1f", $1 - $2 }') cpu-s;"
	echo "replicas: $label: $N jobs in $wall s, $(echo "$N $wall" | awk '{ printf "%.2f", $1 / $2 }') jobs/s;$per"
	for p in $rp; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}

echo "replicas: $N jobs of $JOB, --jobs $JOBS --workers $WORKERS, $(nproc) cores"
run sqlite-1 "$tmp/uniap.db" 1
pg_start >/dev/null || { echo "bench/replicas.sh: the PostgreSQL server did not start" >&2; exit 1; }
for r in 1 2 3; do
	run "postgres-$r" "$(pg_createdb "bench_$r")" "$r"
done
