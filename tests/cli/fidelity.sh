#!/bin/sh
# tests/cli/fidelity.sh - the fidelity ratchet: for every published set the
# project holds (tests/data/fidelity-baseline.tsv names them: a runs document
# of bench/fidelity/sets/ and the cluster it ran on), `uniap calibrate
# --predict-only` prices every run on its stated configuration (evaluations,
# no search) and the mean absolute error of the datasheet predictions,
# |predicted iteration time / measured - 1|, may not exceed the committed
# baseline by more than 0.5 points.  A change that makes the estimates worse
# fails here; the baseline changes only in a commit that says why (make
# fidelity-baseline rewrites it).  Also checks that a worsened estimate is
# caught: the same sets on a cluster whose compute efficiency is halved.
# Prints "fidelity: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
BASE=${FIDELITY_BASELINE:-tests/data/fidelity-baseline.tsv}
SETS=bench/fidelity/sets
TOL=0.5

# mean_pct CLUSTER RUNS: the datasheet mean absolute error in per cent ("-" on failure)
mean_pct() {
	"$UNIAP" calibrate --cluster "$1" --runs "$2" --predict-only >"$tmp/report" 2>"$tmp/report.err" || { echo -; return; }
	grep -o '"datasheet":{[^}]*}' "$tmp/report" |
		sed -n 's/.*"mean_abs_relative_error":\([-0-9.eE+]*\).*/\1/p' |
		awk 'NF { printf "%.2f\n", 100 * $1; found = 1 } END { if (!found) print "-" }'
}

if [ "${FIDELITY_WRITE:-}" = 1 ]; then
	# regenerate the figures of the baseline, keeping its rows and reasons
	awk -F'\t' '/^#/ || NF < 3' "$BASE" >"$tmp/new"
	grep -v '^#' "$BASE" | while IFS='	' read -r set cluster old why; do
		printf '%s\t%s\t%s\t%s\n' "$set" "$cluster" "$(mean_pct "$cluster" "$SETS/$set.json")" "$why" >>"$tmp/new"
	done
	cp "$tmp/new" "$BASE"
	echo "fidelity: wrote $BASE"
	exit 0
fi

rows=0
while IFS='	' read -r set cluster base why; do
	case "$set" in '#'* | '') continue ;; esac
	rows=$((rows + 1))
	now=$(mean_pct "$cluster" "$SETS/$set.json")
	if [ "$now" = - ]; then
		echo "FAIL $set: uniap calibrate --predict-only failed: $(head -c 300 "$tmp/report.err")"
		fail=$((fail + 1))
		continue
	fi
	if awk -v n="$now" -v b="$base" -v t="$TOL" 'BEGIN { exit !(n > b + t) }'; then
		echo "FAIL $set on $cluster: mean abs error $now % > baseline $base % + $TOL (tests/data/fidelity-baseline.tsv)"
		fail=$((fail + 1))
	else
		echo "  $set on $cluster: mean abs error $now % (baseline $base %)"
		pass=$((pass + 1))
	fi
	# the ratchet can fail: the same set on a worse cluster is caught
	if [ "$rows" -eq 1 ]; then
		"$UNIAP" catalog show "$cluster" | sed 's/"compute_efficiency":\([0-9.]*\)/"compute_efficiency":0.2/' >"$tmp/worse.json"
		worse=$(mean_pct "$tmp/worse.json" "$SETS/$set.json")
		if [ "$worse" != - ] && awk -v n="$worse" -v b="$base" -v t="$TOL" 'BEGIN { exit !(n > b + t) }'; then
			pass=$((pass + 1))
		else
			echo "FAIL ratchet: a compute efficiency of 0.2 on $cluster gives $worse %, not above the baseline $base %"
			fail=$((fail + 1))
		fi
	fi
done <"$BASE"
[ "$rows" -gt 0 ] || { echo "FAIL $BASE: no sets"; fail=$((fail + 1)); }
summary fidelity
