#!/bin/sh
# bench/fidelity.sh UNIAP - the planner's estimates against the UniAP paper's
# measured training runs (data in bench/fidelity/, described in
# docs/fidelity.md).  Prints Markdown tables: (a) one row per measured cell
# with the datasheet prediction, its error, and the leave-one-out calibrated
# prediction and its error, then the mean and max absolute errors; (b) the
# Megatron grid on EnvD-32 (Table 3) against the planner's uniform space;
# (c) the EnvC and EnvB-8 case-study plans on the datasheet and calibrated
# clusters.  Figures are printed, never asserted: a cell that cannot be
# predicted prints "-".
#
# Fixed-plan cells come from the runs documents bench/fidelity/ENV.json (the
# `uniap calibrate --runs` format); optimum cells (the paper measured the
# planner's own optimum, whose plan it does not state) from
# bench/fidelity/optimum-cells.tsv: they are planned, not evaluated.  The
# calibrated columns need `uniap calibrate`; without it they print "-" and a
# note says so, and the datasheet columns come from `uniap evaluate` and
# `uniap plan`.  Needs jq.
#
# Environment: THREADS (solver processes, default the cores), LIMIT (seconds
# per candidate, default 10: the whole run stays under 10 minutes on 2 cores),
# SETS (below).
set -u
UNIAP=${1:-build/uniap}
DATA=$(dirname "$0")/fidelity
THREADS=${THREADS:-$(nproc)}
LIMIT=${LIMIT:-10}
ENVS="enva envb-8 envc envd-32"
# SETS=DIR also writes each environment's cells as a runs document
# DIR/paper-ENV.json, optimum cells as the plan found on the datasheet cluster:
# the fixed configurations the fidelity ratchet (tests/cli/fidelity.sh) evaluates
SETS=${SETS:-}

if ! command -v jq >/dev/null 2>&1; then
	echo "fidelity: needs jq (Debian package jq; sh scripts/install-deps.sh bench)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if "$UNIAP" calibrate --help >/dev/null 2>&1; then have_cal=1; else have_cal=0; fi

# model_arg MODEL-JSON: a runs document's model value (a catalog name, or an
# inline model document, written to a file) as a --model argument
model_arg() {
	case "$1" in
	\"*) printf '%s\n' "$1" | jq -r . ;;
	*) f=$(mktemp "$tmp/model.XXXXXX"); printf '%s\n' "$1" >"$f"; echo "$f" ;;
	esac
}

# uniform_name TP DP FSDP: the uniform space's strategy name ("-" if none)
uniform_name() {
	if [ "$3" -ne 1 ]; then echo -; return; fi
	if [ "$1" -gt 1 ] && [ "$2" -gt 1 ]; then echo "tp$1.dp$2"
	elif [ "$1" -gt 1 ]; then echo "tp$1"
	elif [ "$2" -gt 1 ]; then echo "dp$2"
	else echo single; fi
}

# uniform_tpi CLUSTER MODEL BATCH SCHEDULE PP C NAME RUNTIME: the TPI of one
# uniform configuration from the planner's uniform space ("oom" when it does
# not fit, "-" when the space lacks it)
uniform_tpi() {
	key="$1|$2|$3|$4|$8"
	f="$tmp/uniform.$(printf '%s' "$key" | cksum | cut -d' ' -f1).json"
	[ -s "$f" ] || "$UNIAP" plan --cluster "$1" --model "$2" --batch "$3" --schedule "$4" --space uniform \
		--runtime "$8" --threads "$THREADS" --time-limit "$LIMIT" >"$f" 2>/dev/null
	jq -r --argjson pp "$5" --argjson c "$6" --arg s "$7" '
		[.candidates[]? | select(.pp == $pp and .microbatches == $c and .strategy == $s)] |
		if length == 0 then "-" elif .[0].status == "infeasible" then "oom" else .[0].tpi_s end' "$f" 2>/dev/null || echo -
}

# predict_run CLUSTER RUN-JSON DEFAULT-MODEL-JSON: datasheet samples/s of a
# fixed-plan run on its runtime ("oom" when it does not fit, "-" when it
# cannot be predicted)
predict_run() {
	printf '%s\n' "$2" >"$tmp/run.json"
	rt=$(jq -r '.runtime // "default"' "$tmp/run.json")
	m=$(jq -c --argjson d "$3" '.model // $d' "$tmp/run.json")
	model=$(model_arg "$m")
	batch=$(jq -r .batch "$tmp/run.json")
	sched=$(jq -r '.schedule // "gpipe"' "$tmp/run.json")
	if jq -e 'has("plan")' "$tmp/run.json" >/dev/null; then
		jq .plan "$tmp/run.json" >"$tmp/plan.json"
		"$UNIAP" evaluate --cluster "$1" --model "$model" --batch "$batch" --plan "$tmp/plan.json" --runtime "$rt" \
			>"$tmp/eval.json" 2>&1
		case $? in
		0 | 4) jq -r .throughput_samples_per_s "$tmp/eval.json" ;;
		3) echo oom ;;
		*) echo - ;;
		esac
	elif jq -e 'has("uniform")' "$tmp/run.json" >/dev/null; then
		# shellcheck disable=SC2046 # five numbers, split on purpose
		set -- "$1" $(jq -r '.uniform | "\(.pp) \(.microbatches) \(.tp) \(.dp) \(.fsdp // 1)"' "$tmp/run.json")
		t=$(uniform_tpi "$1" "$model" "$batch" "$sched" "$2" "$3" "$(uniform_name "$4" "$5" "$6")" "$rt")
		case "$t" in -|oom) echo "$t" ;; *) awk -v b="$batch" -v t="$t" 'BEGIN { printf "%.6g\n", b / t }' ;; esac
	else
		echo -   # a Megatron-LM argument string: only `uniap calibrate` reads it
	fi
}

# plan_cell CLUSTER MODEL BATCH SPACE SCHEDULE OUT RUNTIME TARGET: plans an
# optimum cell for its runtime, in the search space of TARGET (the runtime
# whose space the measured plan lies in: any, galvatron, ...), into OUT (the
# plan document); prints its samples/s or "-"
plan_cell() {
	"$UNIAP" plan --cluster "$1" --model "$2" --batch "$3" --space "$4" --schedule "$5" --runtime "$7" \
		--target "${8:-any}" \
		--threads "$THREADS" --time-limit "$LIMIT" --quiet </dev/null >"$6" 2>/dev/null &&
		jq -r .throughput_samples_per_s "$6" 2>/dev/null || echo -
}

# loo_from_report REPORT NAME: the leave-one-out samples/s of one run in a
# `uniap calibrate --leave-one-out` report ("-" when absent).  The one place
# that knows the report's field names.
loo_from_report() {
	[ -s "$1" ] || { echo -; return; }
	jq -r --arg n "$2" '
		[.runs[]? | select(.name == $n) |
		 (.loo_samples_per_s // .leave_one_out.samples_per_s // .leave_one_out.predicted_samples_per_s //
		  .leave_one_out_samples_per_s // .loo.samples_per_s // empty)] |
		if length == 0 or .[0] == null then "-" else .[0] end' "$1" 2>/dev/null || echo -
}

# env_runtime ENV: the runtime of environment ENV's runs (its runs document's "runtime")
env_runtime() {
	jq -r '.runtime // "default"' "$DATA/$1.json"
}

# ---- (a) per cell --------------------------------------------------------
# rows: env, name, batch, measured, predicted, loo, kind (fixed|optimum)
: >"$tmp/rows"
for env in $ENVS; do
	doc="$DATA/$env.json"
	dmodel=$(jq -c '.model // null' "$doc")
	# the runtime the environment's runs ran on (docs/cost-model.md, "Runtime profile")
	envrt=$(jq -r '.runtime // "default"' "$doc")
	# the environment's runs for calibration: its fixed runs, then each optimum
	# cell as a run of the plan the planner finds for it on the datasheet cluster
	jq -c --argjson d "$dmodel" --arg rt "$envrt" '.runs[] | .model = (.model // $d) | .runtime = (.runtime // $rt)' \
		"$doc" >"$tmp/$env.runs"
	n=$(jq '.runs | length' "$doc")
	i=0
	while [ "$i" -lt "$n" ]; do
		run=$(jq -c --arg rt "$envrt" ".runs[$i] | .runtime = (.runtime // \$rt)" "$doc")
		name=$(printf '%s' "$run" | jq -r .name)
		batch=$(printf '%s' "$run" | jq -r .batch)
		meas=$(printf '%s' "$run" | jq -r '.measured.samples_per_s // (.batch / .measured.iteration_s)')
		pred=$(predict_run "$env" "$run" "$dmodel")
		printf '%s\t%s\t%s\t%s\t%s\tfixed\n' "$env" "$name" "$batch" "$meas" "$pred" >>"$tmp/rows"
		i=$((i + 1))
	done
	grep -v '^#' "$DATA/optimum-cells.tsv" | awk -F'\t' -v e="$env" '$1 == e' >"$tmp/$env.cells"
	k=0
	while IFS='	' read -r cl name model batch space sched target meas src; do
		k=$((k + 1))
		pred=$(plan_cell "$cl" "$model" "$batch" "$space" "$sched" "$tmp/$env.cell$k.json" "$envrt" "$target")
		printf '%s\t%s\t%s\t%s\t%s\toptimum\t%s\t%s\t%s\t%s\t%s\t%s\n' "$env" "$name" "$batch" "$meas" "$pred" \
			"$model" "$space" "$sched" "$target" "$k" "$src" >>"$tmp/rows"
		[ "$pred" = - ] && continue
		case "$model" in
		*/* | *.json) mj=$(jq -c . "$model") ;;
		*) mj=$(printf '"%s"' "$model") ;;
		esac
		jq -c --arg n "$name" --argjson m "$mj" --argjson b "$batch" --arg s "$sched" --argjson t "$meas" \
			--arg src "$src" '{name: $n, model: $m, batch: $b, schedule: $s, plan: .,
			measured: {samples_per_s: $t}, source: $src}' "$tmp/$env.cell$k.json" >>"$tmp/$env.runs"
	done <"$tmp/$env.cells"
	jq -s '{runs: .}' "$tmp/$env.runs" >"$tmp/$env.all.json"
	[ -n "$SETS" ] && jq . "$tmp/$env.all.json" >"$SETS/paper-$env.json"
done

# calibrated leave-one-out: fixed runs from `uniap calibrate --leave-one-out`;
# an optimum cell is held out of the environment's runs, the rest calibrate
# a cluster (--out), and the cell is planned again on it
if [ "$have_cal" -eq 1 ]; then
	for env in $ENVS; do
		"$UNIAP" calibrate --cluster "$env" --runs "$tmp/$env.all.json" --leave-one-out \
			>"$tmp/$env.report.json" 2>"$tmp/$env.report.err" || : >"$tmp/$env.report.json"
		"$UNIAP" calibrate --cluster "$env" --runs "$tmp/$env.all.json" --out "$tmp/$env.cal.json" \
			>"$tmp/$env.fit.json" 2>"$tmp/$env.fit.err" || rm -f "$tmp/$env.cal.json"
	done
fi
: >"$tmp/rows2"
while IFS='	' read -r env name batch meas pred kind model space sched target k src; do
	loo=-
	if [ "$have_cal" -eq 1 ]; then
		if [ "$kind" = fixed ]; then
			loo=$(loo_from_report "$tmp/$env.report.json" "$name")
		else
			jq --arg n "$name" '{runs: [.runs[] | select(.name != $n)]}' "$tmp/$env.all.json" >"$tmp/held.json"
			if [ "$(jq '.runs | length' "$tmp/held.json")" -gt 0 ] &&
				"$UNIAP" calibrate --cluster "$env" --runs "$tmp/held.json" --out "$tmp/held.cluster.json" \
					>/dev/null 2>&1; then
				loo=$(plan_cell "$tmp/held.cluster.json" "$model" "$batch" "$space" "$sched" "$tmp/held.plan.json" \
					"$(env_runtime "$env")" "$target")
			fi
		fi
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$env" "$name" "$batch" "$meas" "$pred" "$loo" >>"$tmp/rows2"
done <"$tmp/rows"

echo "(a) measured vs predicted samples/s per cell (error = (predicted - measured) / measured)"
[ "$have_cal" -eq 1 ] || echo "    uniap calibrate is not available: the calibrated columns are empty"
echo
echo "| environment | model | system | batch | measured | predicted (datasheet) | error % | calibrated, leave-one-out | error % |"
echo "|---|---|---|---|---|---|---|---|---|"
awk -F'\t' '
	function num(x) { return x ~ /[0-9]/ && x ~ /^[0-9.eE+-]+$/ }
	function err(p, m) { return num(p) ? sprintf("%+.1f", 100 * (p - m) / m) : "-" }
	function fmt(p) { return num(p) ? sprintf("%.3g", p) : p }
	{
		split($2, part, "/")
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, part[2], part[4], $3, $4,
			fmt($5), err($5, $4), fmt($6), err($6, $4)
		if (num($5)) { e = ($5 - $4) / $4; e = e < 0 ? -e : e; n1++; s1 += e; if (e > m1) m1 = e }
		if (num($6)) { e = ($6 - $4) / $4; e = e < 0 ? -e : e; n2++; s2 += e; if (e > m2) m2 = e }
	}
	END {
		printf "| mean abs error | | | | | %d cells | %s | %d cells | %s |\n", n1, n1 ? sprintf("%.1f", 100 * s1 / n1) : "-",
			n2, n2 ? sprintf("%.1f", 100 * s2 / n2) : "-"
		printf "| max abs error | | | | | | %s | | %s |\n", n1 ? sprintf("%.1f", 100 * m1) : "-", n2 ? sprintf("%.1f", 100 * m2) : "-"
	}' "$tmp/rows2"

# ---- (a') per model: does one cluster's figures explain every model? ------
echo
echo "(a') mean absolute error by model (cells of table (a))"
echo
echo "| model | cells | datasheet % | calibrated, leave-one-out % |"
echo "|---|---|---|---|"
awk -F'\t' '
	function num(x) { return x ~ /[0-9]/ && x ~ /^[0-9.eE+-]+$/ }
	{
		split($2, part, "/"); m = part[2]; sub(/-16\+16$/, "", m)
		if (!(m in seen)) { seen[m] = 1; order[++n] = m }
		cells[m]++
		if (num($5)) { e = ($5 - $4) / $4; d[m] += e < 0 ? -e : e; nd[m]++ }
		if (num($6)) { e = ($6 - $4) / $4; l[m] += e < 0 ? -e : e; nl[m]++ }
	}
	END {
		for (i = 1; i <= n; i++) {
			m = order[i]
			printf "| %s | %d | %s | %s |\n", m, cells[m], nd[m] ? sprintf("%.1f (%d)", 100 * d[m] / nd[m], nd[m]) : "-",
				nl[m] ? sprintf("%.1f (%d)", 100 * l[m] / nl[m], nl[m]) : "-"
		}
	}' "$tmp/rows2"

# ---- (b) the Megatron grid on EnvD-32 -------------------------------------
# grid (docs/fidelity.md): pp and tp in {1, 2, 4, 8}, micro-batch size any
# divisor of B, dp = 32 / (pp tp), Megatron-LM's default 1F1B schedule; a configuration Megatron cannot launch
# (dp not whole, or dp x micro-batch size not dividing B) counts as infeasible
# grid_stats CLUSTER MODEL BATCH: "candidates infeasible (N OOM) 1st 2nd slowest median"
grid_stats() {
	: >"$tmp/grid.thr"
	cand=0
	inf=0
	oom=0
	for pp in 1 2 4 8; do
		for tp in 1 2 4 8; do
			mbs=1
			while [ "$mbs" -le "$3" ]; do
				if [ $(($3 % mbs)) -eq 0 ]; then
					cand=$((cand + 1))
					t=-
					if [ $((32 % (pp * tp))) -eq 0 ]; then
						dp=$((32 / (pp * tp)))
						if [ $(($3 % (dp * mbs))) -eq 0 ]; then
							t=$(uniform_tpi "$1" "$2" "$3" 1f1b "$pp" $(($3 / (dp * mbs))) "$(uniform_name "$tp" "$dp" 1)" \
								"$(env_runtime envd-32)")
						fi
					fi
					case "$t" in
					-) inf=$((inf + 1)) ;;
					oom) inf=$((inf + 1)) oom=$((oom + 1)) ;;
					*) awk -v b="$3" -v t="$t" 'BEGIN { printf "%.6g\n", b / t }' >>"$tmp/grid.thr" ;;
					esac
				fi
				mbs=$((mbs + 1))
			done
		done
	done
	sort -g -r "$tmp/grid.thr" | awk -v c="$cand" -v i="$inf ($oom OOM)" '{ v[NR] = $1 }
		END { first = second = slow = med = "-"
		      if (NR >= 1) { first = v[1]; slow = v[NR]; med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }
		      if (NR >= 2) second = v[2]
		      printf "%d %s %s %s %s %s\n", c, i, first, second, slow, med }'
}

echo
echo "(b) the Megatron grid on EnvD-32 (Table 3): samples/s, predicted / measured"
echo
echo "(#infeasible predicted: configurations Megatron cannot launch + those over memory)"
echo
echo "| model | B | cluster | candidates | #infeasible | 1st | 2nd | slowest | median |"
echo "|---|---|---|---|---|---|---|---|---|"
grep -v '^#' "$DATA/megatron-grid.tsv" | while IFS='	' read -r model batch cand inf first second slow med src; do
	for cl in envd-32 cal; do
		c=$cl
		if [ "$cl" = cal ]; then
			[ -s "$tmp/envd-32.cal.json" ] || continue
			c="$tmp/envd-32.cal.json"
		fi
		# shellcheck disable=SC2046 # the figures, split on purpose
		set -- $(grid_stats "$c" "$model" "$batch")
		awk -v m="$model" -v b="$batch" -v cl="$cl" -v pc="$1" -v pi="$2 $3 $4" -v c="$cand" -v i="$inf" \
			-v p1="$5" -v p2="$6" -v ps="$7" -v pm="$8" -v m1="$first" -v m2="$second" -v ms="$slow" -v mm="$med" '
			function f(x) { return x ~ /[0-9]/ && x ~ /^[0-9.eE+-]+$/ ? sprintf("%.3g", x) : x }
			BEGIN { printf "| %s | %s | %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s |\n",
				m, b, cl == "cal" ? "envd-32 calibrated" : "envd-32 datasheet", pc, c, pi, i,
				f(p1), m1, f(p2), m2, f(ps), ms, f(pm), mm }'
	done
done

# ---- (c) case studies ----------------------------------------------------
# summary CLUSTER MODEL BATCH RUNTIME: "pp c strategies samples/s" of the planner's plan
summary() {
	"$UNIAP" plan --format text --threads "$THREADS" --time-limit "$LIMIT" --cluster "$1" --model "$2" \
		--batch "$3" --runtime "$4" >"$tmp/case.txt" 2>&1 || { echo "| - | - | $(head -c 80 "$tmp/case.txt") | - |"; return; }
	awk '
		/^plan:/ { for (i = 1; i <= NF; i++) { if ($i == "pp") pp = $(i + 1); if ($i == "microbatches") c = $(i + 1)
		           if ($i == "throughput") thr = $(i + 1) } }
		/^  stage [0-9]+:/ { s = $0; sub(/^  stage /, "", s); sub(/; time.*/, "", s); st = st (st == "" ? "" : " / ") s }
		END { printf "| %s | %s | %s | %.3g |\n", pp, c, st, thr }' "$tmp/case.txt"
}

echo
echo "(c) case studies: the planner's plan (stage: strategy x layers)"
echo
echo "| scenario | cluster | pp | c | strategies | predicted samples/s | measured (paper's plan) |"
echo "|---|---|---|---|---|---|---|"
for s in "envc llama-7b 8 4.63 (8 stages, micro-batch 1)" "envb-8 bert-huge 16 10.77 (Figure 8: 2 stages, tp2 + dp2/fsdp2)"; do
	# shellcheck disable=SC2086 # the scenario's words
	set -- $s
	env=$1 model=$2 batch=$3
	shift 3
	meas=$*
	for cl in "$env" cal; do
		c=$cl label="$env datasheet"
		if [ "$cl" = cal ]; then
			[ -s "$tmp/$env.cal.json" ] || continue
			c="$tmp/$env.cal.json" label="$env calibrated"
		fi
		printf '| %s %s B=%s | %s %s %s\n' "$env" "$model" "$batch" "$label" \
			"$(summary "$c" "$model" "$batch" "$(env_runtime "$env")")" "$meas |"
	done
done

# ---- (d) what calibration changes -----------------------------------------
# each environment calibrated on all its cells: the fitted figures against the
# datasheet's, the term-by-term account of the datasheet error (docs/fidelity.md)
if [ "$have_cal" -eq 1 ]; then
	echo
	echo "(d) calibrated on all cells of an environment: fitted figure / datasheet figure"
	echo
	echo "| environment | figure | datasheet | fitted | ratio |"
	echo "|---|---|---|---|---|"
	for env in $ENVS; do
		if ! [ -s "$tmp/$env.cal.json" ]; then
			printf '| %s | refused: %s | | | |\n' "$env" "$(sed 's/^uniap calibrate: //; s/|/\\|/g' "$tmp/$env.fit.err" | head -c 600)"
			continue
		fi
		jq -r --arg e "$env" 'def f: if . > 1e6 then "\(. / 1e7 | round / 100) GB/s" else "\(. * 1000 | round / 1000)" end;
			.parameters[]? | "| \($e) | \(.name) | \(.prior | f) | \(.value | f) | \(.ratio_to_prior * 1000 | round / 1000) |"' \
			"$tmp/$env.fit.json"
	done
fi

# ---- (e) published Megatron-LM runs of today's models ---------------------
# bench/fidelity/sets/mbridge-*.json: Megatron-Bridge's measured pre-training
# throughput on DGX H100 and B200 (dense FP8 and MoE rows), each evaluated on
# the configuration it states (never re-planned); datasheet figures only
echo
echo "(e) Megatron-Bridge 25.11 measured runs on DGX H100 / B200, on their stated configuration (datasheet)"
echo
echo "| cluster | run | kind | layout | measured samples/s | predicted | error % (iteration time, the ratchet's) | predicted peak memory GiB (pipeline rank 0) | fits uniap's memory |"
echo "|---|---|---|---|---|---|---|---|---|"
: >"$tmp/mb.err"
for f in bench/fidelity/sets/mbridge-*.json; do
	[ -s "$f" ] || continue
	cl=$(basename "$f" .json)
	cl=${cl#mbridge-}
	if ! "$UNIAP" calibrate --cluster "$cl" --runs "$f" --predict-only >"$tmp/mb.json" 2>"$tmp/mb.txt"; then
		echo "| $cl | - | - | - | - | - | $(head -c 100 "$tmp/mb.txt") | - | - |"
		continue
	fi
	jq -r --arg c "$cl" '.runs[] | [$c, .name, (if (.strategy | test("\\+ep")) then "MoE" else "dense" end),
		"pp \(.pp) x \(.strategy), c \(.microbatches)", .measured_samples_per_s, .datasheet_samples_per_s,
		.datasheet_relative_error, ((.datasheet_peak_memory_bytes // [0])[0] / 1073741824),
		(if .datasheet_oom then "no" else "yes" end)] | @tsv' "$tmp/mb.json" |
		while IFS='	' read -r c name kind layout meas pred e mem fits; do
			printf '| %s | %s | %s | %s | %.4g | %.4g | %+.1f | %.1f | %s |\n' "$c" "$name" "$kind" "$layout" "$meas" "$pred" \
				"$(echo "$e" | awk '{ print 100 * $1 }')" "$mem" "$fits"
			echo "$kind $e" >>"$tmp/mb.err"
		done
done
awk '{ e = $2 < 0 ? -$2 : $2; s[$1] += e; n[$1]++ }
     END { for (k in s) printf "| mean abs error, %s | | | | | %d runs | %.1f | | |\n", k, n[k], 100 * s[k] / n[k] }' "$tmp/mb.err" | sort
