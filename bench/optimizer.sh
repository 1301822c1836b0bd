#!/bin/sh
# bench/optimizer.sh UNIAP - the optimizer's own figures (make bench): for
# every paper scenario (bench/scenarios.inc) and every DAG model of the
# catalog on enva, envb-8, dgx-a100 and dgx-a100-x2, the wall time of
# `uniap plan`, which paths answered the candidates, whether the plan is
# proven optimal and the peak memory of the solver workers.  Targets (issue
# on exact DAGs, docs/optimizer.md): paper scenarios proven in <= 1 s on 2
# cores, no DAG scenario above 5 s, workers below 256 MiB.  Figures, not
# assertions: machines are shared, compare within one run.
set -u
UNIAP=${1:-build/uniap}
THREADS=${THREADS:-$(nproc)}
LIMIT=${LIMIT:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# row CLUSTER MODEL BATCH: one table row
row() {
	start=$(date +%s.%N)
	"$UNIAP" plan --format text --threads "$THREADS" --time-limit "$LIMIT" --cluster "$1" \
		--model "$2" --batch "$3" >"$tmp/out" 2>&1 </dev/null
	rc=$?
	end=$(date +%s.%N)
	wall=$(echo "$start $end" | awk '{ printf "%.2f", $2 - $1 }')
	if [ "$rc" -ne 0 ]; then
		printf '| %s %s B=%s | %s | - | %s | - | - |\n' "$1" "$2" "$3" "$wall" \
			"$(tr '\n' ' ' <"$tmp/out" | cut -c1-60)"
		return
	fi
	awk -v label="$1 $2 B=$3" -v wall="$wall" '
		/^plan:/ {
			for (i = 1; i <= NF; i++) {
				if ($i == "solve") solve = $(i + 1)
				if ($i == "optimal") opt = $(i + 1)
				if ($i == "(workers") work = $(i + 1)
			}
		}
		/^  methods:/ { m = $0; sub(/^  methods: */, "", m) }
		END { printf "| %s | %s | %s | %s | %s | %s |\n", label, wall, solve, m, opt, work }
	' "$tmp/out"
}

echo "== optimizer: wall time, paths and proof per scenario ($THREADS threads, ${LIMIT} s per candidate)"
echo "| scenario | wall s | solve s | methods (candidates) | proven optimal | workers MiB |"
echo "|---|---|---|---|---|---|"
. bench/scenarios.inc
printf '%s\n' "$PAPER_SCENARIOS" | while read -r cl mo b; do
	row "$cl" "$mo" "$b"
done
for cl in enva envb-8 dgx-a100 dgx-a100-x2; do
	row "$cl" t5-large 16
	row "$cl" swin-huge 128
done
