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

# above NOW BASE: 0 (true) when NOW is more than TOL points above BASE
above() {
	awk -v n="$1" -v b="$2" -v t="$TOL" 'BEGIN { exit !(n > b + t) }'
}

# mean_pct CLUSTER RUNS: the datasheet mean absolute error in per cent ("-" on failure)
mean_pct() {
	"$UNIAP" calibrate --cluster "$1" --runs "$2" --predict-only >"$tmp/report" 2>"$tmp/report.err" || { echo -; return; }
	grep -o '"datasheet":{[^}]*}' "$tmp/report" |
		sed -n 's/.*"mean_abs_relative_error":\([-0-9.eE+]*\).*/\1/p' |
		awk 'NF { printf "%.2f\n", 100 * $1; found = 1 } END { if (!found) print "-" }'
}

# ---- Galvatron's own cost model on its measured profiles (docs/galvatron.md,
# "Agreement"): the plans of bench/fidelity/sets/galvatron.tsv (Galvatron's
# search picks, with Galvatron's estimates of them, written by make
# bench-galvatron), evaluated by uniap on the imported fixtures; the mean of
# |uniap / Galvatron - 1| of the iteration time and of the busiest stage's
# model states + activations, against the baseline rows galvatron-time and
# galvatron-memory.  Skipped without the fixtures.
GT=bench/fidelity/sets/galvatron.tsv
FIX=../shared/fixtures/galvatron-v2.4.0
[ -d "$FIX" ] || FIX=/work/shared/fixtures/galvatron-v2.4.0

# galv_means: "TIME MEMORY N" in per cent ("-" when a plan did not evaluate)
galv_means() {
	: >"$tmp/galv"
	grep -v '^#' "$GT" | while IFS='	' read -r model cluster batch plan gtpi galloc config seq src; do
		[ -n "$model" ] || continue
		c="$tmp/c$cluster.json" m="$tmp/m-$model.json"
		[ -s "$c" ] || "$UNIAP" import galvatron --hardware "$FIX/hardware" --nodes "${cluster%x*}" \
			--gpus-per-node "${cluster#*x}" --quiet --out-cluster "$c" || continue
		# shellcheck disable=SC2046 # --seq S, or nothing
		[ -s "$m" ] || "$UNIAP" import galvatron --model-dir "$FIX/models/$(dirname "$config")" \
			--config "$FIX/models/$config" $([ "$seq" = - ] || echo "--seq $seq") --quiet --out-model "$m" ||
			continue
		"$UNIAP" evaluate --cluster "$c" --model "$m" --batch "$batch" --plan "bench/fidelity/sets/$plan" \
			>"$tmp/eval.json" 2>/dev/null
		t=$(grep -o '"tpi_s":[0-9.eE+-]*' "$tmp/eval.json" | head -n 1 | cut -d: -f2)
		a=$(grep -o '"allocated_bytes":[0-9.eE+-]*' "$tmp/eval.json" | cut -d: -f2 | sort -g | tail -n 1)
		printf '%s %s %s %s %s %s\n' "$model" "$cluster" "${t:--}" "$gtpi" "${a:--}" "$galloc" >>"$tmp/galv"
	done
	awk '{ n++; if ($3 == "-" || $5 == "-" || $4 + 0 <= 0 || $6 + 0 <= 0) { bad++; next }
	       e = $3 / $4 - 1; st += e < 0 ? -e : e; e = $5 / $6 - 1; sm += e < 0 ? -e : e }
	     END { if (bad || !n) print "- - " n + 0; else printf "%.2f %.2f %d\n", 100 * st / n, 100 * sm / n, n }' "$tmp/galv"
}
have_galv=0
[ -s "$GT" ] && [ -d "$FIX" ] && have_galv=1

if [ "${FIDELITY_WRITE:-}" = 1 ]; then
	# regenerate the figures of the baseline, keeping its rows and reasons
	galv="- -"
	if [ "$have_galv" -eq 1 ]; then galv=$(galv_means); else echo "fidelity: no Galvatron fixtures: its rows keep -"; fi
	awk -F'\t' '/^#/ || NF < 3' "$BASE" >"$tmp/new"
	grep -v '^#' "$BASE" | while IFS='	' read -r set cluster old why; do
		case "$set" in
		galvatron-time) printf '%s\t%s\t%s\t%s\n' "$set" "$cluster" "$(echo "$galv" | cut -d' ' -f1)" "$why" >>"$tmp/new" ;;
		galvatron-memory) printf '%s\t%s\t%s\t%s\n' "$set" "$cluster" "$(echo "$galv" | cut -d' ' -f2)" "$why" >>"$tmp/new" ;;
		*) printf '%s\t%s\t%s\t%s\n' "$set" "$cluster" "$(mean_pct "$cluster" "$SETS/$set.json")" "$why" >>"$tmp/new" ;;
		esac
	done
	cp "$tmp/new" "$BASE"
	echo "fidelity: wrote $BASE"
	exit 0
fi

rows=0
while IFS='	' read -r set cluster base why; do
	case "$set" in '#'* | '' | galvatron-*) continue ;; esac
	rows=$((rows + 1))
	now=$(mean_pct "$cluster" "$SETS/$set.json")
	if [ "$now" = - ]; then
		echo "FAIL $set: uniap calibrate --predict-only failed: $(head -c 300 "$tmp/report.err")"
		fail=$((fail + 1))
		continue
	fi
	if above "$now" "$base"; then
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
		if [ "$worse" != - ] && above "$worse" "$base"; then
			pass=$((pass + 1))
		else
			echo "FAIL ratchet: a compute efficiency of 0.2 on $cluster gives $worse %, not above the baseline $base %"
			fail=$((fail + 1))
		fi
	fi
done <"$BASE"
[ "$rows" -gt 0 ] || { echo "FAIL $BASE: no sets"; fail=$((fail + 1)); }

if [ "$have_galv" -eq 1 ]; then
	# shellcheck disable=SC2046 # three figures
	set -- $(galv_means)
	for what in time memory; do
		now=$1
		[ "$what" = memory ] && now=$2
		base=$(awk -F'\t' -v k="galvatron-$what" '$1 == k { print $3 }' "$BASE")
		if [ "$now" = - ] || [ -z "$base" ] || [ "$base" = - ]; then
			echo "FAIL galvatron-$what: a plan did not evaluate, or no baseline row ($3 plans): $(grep ' - ' "$tmp/galv" | head -n 2)"
			fail=$((fail + 1))
		elif above "$now" "$base"; then
			echo "FAIL galvatron-$what: mean |uniap / Galvatron - 1| $now % > baseline $base % + $TOL"
			fail=$((fail + 1))
		else
			echo "  galvatron-$what: mean |uniap / Galvatron - 1| $now % over $3 plans (baseline $base %)"
			pass=$((pass + 1))
		fi
	done
elif [ -s "$GT" ]; then
	echo "  galvatron: Galvatron's fixtures (../shared/fixtures/galvatron-v2.4.0) are absent: not compared"
fi
# the web UI's estimate badge reads the baseline's figures (ui/fidelity.json)
check ui-fidelity-json 0 "" -- python3 scripts/ui-fidelity.py --check
summary fidelity
