#!/bin/sh
# tests/stress.sh [CPU [RUNS]] - the whole suite (make test) with the machine
# busy: CPU (4) stress-ng workers spinning beside it, RUNS (1) times in a row.
# A test that passes only on an idle machine fails here: every test must wait
# on conditions with generous deadlines, never on sleeps or on the machine's
# speed (tests/README.md).  Prints each run's summary line and time, then
# "stress: K of RUNS runs passed"; exits 1 when any run failed.  Needs
# stress-ng (deps/debian-bench.txt: sh scripts/install-deps.sh bench).
# make test-stress runs it (STRESS_CPU, STRESS_RUNS).
set -u
cd "$(dirname "$0")/.." || exit 2
cpu=${1:-4}
runs=${2:-1}
command -v stress-ng >/dev/null 2>&1 ||
	{ echo "tests/stress.sh: stress-ng not found; run: sh scripts/install-deps.sh bench" >&2; exit 2; }
mkdir -p build
spid=
trap '[ -z "$spid" ] || kill "$spid" 2>/dev/null' EXIT
trap 'exit 130' INT TERM
good=0 i=1
while [ "$i" -le "$runs" ]; do
	stress-ng --cpu "$cpu" --timeout 3h --quiet &
	spid=$!
	t0=$(date +%s)
	make --no-print-directory test >"build/.stress-$i.log" 2>&1
	rc=$?
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	spid=
	grep -E '^(time|slowest): |failed in the|^build of the' "build/.stress-$i.log" | sed "s/^/stress: run $i: /"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "build/.stress-$i.log" | tail -n 1)
	echo "stress: run $i of $runs beside stress-ng --cpu $cpu: ${line:-no summary} ($(($(date +%s) - t0)) s; log build/.stress-$i.log)"
	if [ "$rc" -eq 0 ] && printf '%s\n' "$line" | grep -Eq '^[0-9]+ passed, 0 failed'; then good=$((good + 1)); fi
	i=$((i + 1))
done
echo "stress: $good of $runs runs passed"
[ "$good" -eq "$runs" ]
