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
# on a SQLite file, the baseline.  Then one large job (BIG) on 1, 2 and 3
# replicas, each with one job thread and one worker: its wall time, the CPU
# seconds it took on each, the candidates the others solved for it, and
# whether the plan is the one-replica plan (docs/scale.md, "One job across
# replicas").  Figures, not assertions: compare within one run; on one
# machine its cores bound the speed-up.
#
# Environment: N (jobs, 60), JOB (the request, default BERT-Huge on two DGX
# A100 nodes, batch 128: about 0.5 s of one core), JOBS (2), WORKERS (the cores).
set -eu
UNIAPD=${1:-build/uniapd}
N=${N:-60}
JOB=${JOB:-'{"cluster":"dgx-a100-x2","model":"bert-huge","batch":128}'}
JOBS=${JOBS:-2}
# the large job: a file with the request, and its title
BIG=${BIG:-}
BIG_TITLE=${BIG_TITLE:-the 126-layer model on 65,536 H100s, B = 8192, 1F1B}
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
if [ -z "$BIG" ]; then
	BIG=$tmp/big-request.json
	printf '{"cluster":%s,"model":%s,"batch":8192,"schedule":"1f1b"}' "$(cat bench/data/cluster-65536-h100.json)" \
		"$(cat bench/data/model-llama-126.json)" >"$BIG"
fi
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

# replicas LABEL DB R JOBS WORKERS: R replicas on DB (--jobs JOBS --workers WORKERS --no-cache),
# each up and listening; their ports in $ports, their pids in $rp (and $pids), logs in
# $tmp/LABEL-I.log
replicas() {
	ports= rp=
	i=1
	while [ $i -le "$3" ]; do
		"$UNIAPD" --listen 127.0.0.1:0 --db "$2" --jobs "$4" --workers "$5" --no-cache \
			2>"$tmp/$1-$i.log" >/dev/null &
		rp="$rp $!"
		pids="$pids $!"
		p= k=0
		while [ -z "$p" ] && [ $k -lt 100 ]; do
			sleep 0.1
			p=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$tmp/$1-$i.log" | head -n 1)
			k=$((k + 1))
		done
		[ -n "$p" ] || { echo "$1: replica $i did not start: $(head -c 300 "$tmp/$1-$i.log")" >&2; exit 1; }
		ports="$ports $p"
		i=$((i + 1))
	done
}

# run LABEL DB R: R replicas on DB, N jobs; one line of figures
run() {
	label=$1 db=$2 r=$3
	pg0=$(pg_cpu)
	key=$("$UNIAPD" tenant add bench --db "$db" --max-jobs 100000 | tail -n 1)
	replicas "$label" "$db" "$r" "$JOBS" "$WORKERS"
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

# one LABEL DB R: one large job (BIG) on R replicas (--jobs 1 --workers 1 each: what one
# replica alone can do is one build and one solve at a time), submitted to the first once
# all are up; the wall time to its end, each replica's CPU seconds, the candidates other
# replicas solved for it, and whether its plan is the one-replica plan ($tmp/one.plan)
one() {
	label=$1 db=$2 r=$3
	key=$("$UNIAPD" tenant add big --db "$db" --max-jobs 100 | tail -n 1)
	replicas "$label" "$db" "$r" 1 1
	set -- $ports
	c0=
	for p in $rp; do c0="$c0 $(cpu_s "$p")"; done
	start=$(date +%s.%N)
	loc=$(curl -s -D - -o /dev/null -X POST -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
		--data-binary @"$BIG" "http://127.0.0.1:$1/v1/plans" | tr -d '\r' | sed -n 's/^Location: //p')
	st=
	while [ "$st" != succeeded ] && [ "$st" != failed ]; do
		curl -s -o "$tmp/big.json" -H "Authorization: Bearer $key" "http://127.0.0.1:$1$loc?wait=30"
		st=$(sed -n 's/^{"id":[0-9]*,"state":"\([a-z]*\)".*/\1/p' "$tmp/big.json")
	done
	wall=$(echo "$(date +%s.%N) $start" | awk '{ printf "%.1f", $1 - $2 }')
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["result"]
print(json.dumps([r["plan"], r["optimal"]], sort_keys=True))
print(sum(1 for c in r["candidates"] if c.get("shared")), len(r["candidates"]), "%.4f" % r["plan"]["tpi_s"], file=sys.stderr)' \
		"$tmp/big.json" >"$tmp/$label.plan" 2>"$tmp/$label.shared"
	[ -f "$tmp/one.plan" ] || cp "$tmp/$label.plan" "$tmp/one.plan"
	same=no
	cmp -s "$tmp/one.plan" "$tmp/$label.plan" && same=yes
	set -- $(cat "$tmp/$label.shared")
	per= total=0
	i=1
	set -- $c0 -- "$@"
	for p in $rp; do
		c=$(echo "$(cpu_s "$p") $1" | awk '{ printf "%.1f", $1 - $2 }')
		per="$per r$i $c cpu-s;"
		total=$(echo "$total $c" | awk '{ printf "%.1f", $1 + $2 }')
		shift
		i=$((i + 1))
	done
	shift
	echo "replicas: $label: one job in $wall s, $total cpu-s ($per) $1 of $2 candidates solved by other replicas, TPI $3 s, same plan as one replica: $same"
	for p in $rp; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}

echo "replicas: $N jobs of $JOB, --jobs $JOBS --workers $WORKERS, $(nproc) cores"
run sqlite-1 "$tmp/uniap.db" 1
pg_start >/dev/null || { echo "bench/replicas.sh: the PostgreSQL server did not start" >&2; exit 1; }
for r in 1 2 3; do
	run "postgres-$r" "$(pg_createdb "bench_$r")" "$r"
done
echo "replicas: one large job (BIG: $BIG_TITLE), --jobs 1 --workers 1 per replica, $(nproc) cores"
for r in 1 2 3; do
	one "one-job-$r" "$(pg_createdb "big_$r")" "$r"
done
