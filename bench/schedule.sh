#!/bin/sh
# bench/schedule.sh UNIAP - the paper's scenarios (bench/scenarios.inc) planned
# under 1F1B: the TPI the optimizer minimised (GPipe's makespan with transfers
# that block, an upper bound for 1F1B: docs/optimizer.md, "What is left")
# beside the iteration of the same plan laid out as Megatron-LM runs 1F1B
# (core/schedsim.c, the chrome-trace export's drawn_s), and under GPipe the two
# side by side as a check (equal).  Then the same scenarios planned with
# --objective makespan (1F1B's iteration as run as the objective, exact on the
# MILP: docs/optimizer.md, "The makespan objective"): the formula's optimum as
# run against the makespan's optimum, whether the plan changed, and the solve
# time of each; then the same under interleaved 1F1B (v 2, its list schedule as
# run) on the scenarios whose 1F1B plans pipeline.  Figures, not assertions.
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

echo
echo "1F1B: the formula's optimum as run against the makespan's optimum (--objective makespan)"
echo
echo "| scenario | formula's plan | its TPI s (formula) | as run s | makespan's plan | makespan s (optimal) | gain | plan changed | seconds (formula, makespan) |"
echo "|---|---|---|---|---|---|---|---|---|"
# compare SCHEDULE [ARGS...]: one row per scenario read from stdin
compare() {
sched=$1
shift
while read -r cl mo b; do
	ok=1
	for obj in formula makespan; do
		s0=$(date +%s.%N)
		if ! "$UNIAP" plan --quiet --threads "$THREADS" --time-limit "$LIMIT" --cluster "$cl" --model "$mo" \
			--batch "$b" --schedule "$sched" "$@" --objective "$obj" >"$tmp/$obj.json" 2>"$tmp/err" </dev/null; then
			printf '| %s %s B=%s | %s |\n' "$cl" "$mo" "$b" "$(head -c 60 "$tmp/err")"
			ok=0
			break
		fi
		s1=$(date +%s.%N)
		echo "$s0 $s1" >"$tmp/$obj.time"
		# exit 4: the formula's plan states another TPI than its makespan (expected)
		"$UNIAP" evaluate --objective makespan --cluster "$cl" --model "$mo" --batch "$b" \
			--plan "$tmp/$obj.json" >"$tmp/$obj.run.json" 2>"$tmp/err" </dev/null
		rc=$?
		[ "$rc" = 0 ] || [ "$rc" = 4 ] || { printf '| %s %s B=%s | evaluate: %s |\n' "$cl" "$mo" "$b" \
			"$(head -c 60 "$tmp/err")"; ok=0; }
	done
	[ "$ok" = 1 ] || continue
	python3 - "$tmp" "$cl $mo B=$b" <<'PY'
import json, sys
d = sys.argv[1]
f, m = json.load(open(d + '/formula.json')), json.load(open(d + '/makespan.json'))
fr = json.load(open(d + '/formula.run.json'))['tpi_s']
def shape(p):
    return 'pp %d c %d' % (p['pp'], p['microbatches'])
def secs(name):
    a, b = open(d + '/' + name + '.time').read().split()
    return float(b) - float(a)
same = shape(f) == shape(m) and [l['stage'] for l in f['layers']] == [l['stage'] for l in m['layers']] and \
    [l['strategy']['name'] for l in f['layers']] == [l['strategy']['name'] for l in m['layers']]
print('| %s | %s | %.6g | %.6g | %s | %.6g (%s) | %+.2f %% | %s | %.1f, %.1f |' % (
    sys.argv[2], shape(f), f['tpi_s'], fr, shape(m), m['tpi_s'], 'yes' if m.get('optimal') else 'gap %.2g' % m.get('gap', 0),
    100 * (m['tpi_s'] / fr - 1), 'no' if same else 'yes', secs('formula'), secs('makespan')))
PY
done
}
printf '%s\n' "$PAPER_SCENARIOS" | compare 1f1b

echo
echo "Interleaved 1F1B, v 2: the formula's optimum as run (its list schedule) against the makespan's optimum"
echo
echo "| scenario | formula's plan | its TPI s (formula) | as run s | makespan's plan | makespan s (optimal) | gain | plan changed | seconds (formula, makespan) |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "$PAPER_SCENARIOS" | grep -E '^(envb-8|envc) ' | compare interleaved --virtual-stages 2
