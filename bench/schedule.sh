#!/bin/sh
# bench/schedule.sh UNIAP - the paper's scenarios (bench/scenarios.inc) planned
# under 1F1B: the TPI the optimizer minimised (GPipe's makespan with transfers
# that block, an upper bound for 1F1B: docs/optimizer.md, "What is left")
# beside the iteration of the same plan laid out as Megatron-LM runs 1F1B
# (core/schedsim.c, the chrome-trace export's drawn_s), and under GPipe the two
# side by side as a check (equal).  Figures, not assertions.
set -u
UNIAP=${1:-build/uniap}
THREADS=${THREADS:-$(nproc)}
LIMIT=${LIMIT:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "| scenario | schedule | pp | c | TPI s (objective) | as run s | as run / TPI - 1 |"
echo "|---|---|---|---|---|---|---|"
. bench/scenarios.inc
printf '%s\n' "$PAPER_SCENARIOS" | while read -r cl mo b; do
	for sched in 1f1b gpipe; do
		if ! "$UNIAP" plan --format chrome-trace --quiet --threads "$THREADS" --time-limit "$LIMIT" \
			--cluster "$cl" --model "$mo" --batch "$b" --schedule "$sched" >"$tmp/trace.json" 2>"$tmp/err" </dev/null; then
			printf '| %s %s B=%s | %s | - | - | %s | - | - |\n' "$cl" "$mo" "$b" "$sched" "$(head -c 60 "$tmp/err")"
			continue
		fi
		python3 - "$tmp/trace.json" "$cl $mo B=$b" "$sched" <<'PY'
import json, sys
od = json.load(open(sys.argv[1]))['otherData']
t, d = od['tpi_s'], od['drawn_s']
print('| %s | %s | %d | %d | %.6g | %.6g | %+.1f %% |' % (sys.argv[2], sys.argv[3], od['pp'], od['microbatches'],
                                                          t, d, 100 * (d / t - 1)))
PY
	done
done
