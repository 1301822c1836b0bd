#!/bin/sh
# bench/paper.sh UNIAP - the UniAP paper's scenarios (section 4, Tables 1-3,
# the ablation of Figure 6 and the appendix case study) on the built-in
# catalog (docs/catalog.md).  Prints one table row per scenario: pp, c, the
# per-layer strategy summary, TPI, throughput, solve time and whether the plan
# is proven optimal; then the uniform (Megatron-style) space on EnvD-32 and
# the inter/intra ablation on EnvB-8.  Figures, not assertions.
set -u
UNIAP=${1:-build/uniap}
THREADS=${THREADS:-$(nproc)}
LIMIT=${LIMIT:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# row LABEL PLAN-ARGS...: one table row from `uniap plan --format text`
row() {
	label=$1
	shift
	"$UNIAP" plan --format text --threads "$THREADS" --time-limit "$LIMIT" "$@" >"$tmp/out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		printf '| %s | - | - | %s | - | - | - | - |\n' "$label" "$(tr '\n' ' ' <"$tmp/out" | cut -c1-80)"
		return
	fi
	awk -v label="$label" '
		/^plan:/ {
			for (i = 1; i <= NF; i++) {
				if ($i == "pp") pp = $(i + 1)
				if ($i == "microbatches") c = $(i + 1)
				if ($i == "tpi") tpi = $(i + 1)
				if ($i == "throughput") thr = $(i + 1)
				if ($i == "solve") solve = $(i + 1)
				if ($i == "optimal") opt = $(i + 1)
			}
		}
		/^  stage [0-9]+:/ {
			s = $0
			sub(/^  stage /, "", s)
			sub(/; time.*/, "", s)
			strat = strat (strat == "" ? "" : " / ") s
		}
		END { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", label, pp, c, strat, tpi, thr, solve, opt }
	' "$tmp/out"
}

echo "| scenario | pp | c | per-layer strategies (stage: strategy x layers) | TPI s | samples/s | solve s | proven optimal |"
echo "|---|---|---|---|---|---|---|---|"
. bench/scenarios.inc
printf '%s\n' "$PAPER_SCENARIOS" | while read -r cl mo b; do
	row "$cl $mo B=$b" --cluster "$cl" --model "$mo" --batch "$b" </dev/null
done

echo
echo "uniform (Megatron-style) space, envd-32 llama-7b B=8:"
"$UNIAP" plan --cluster envd-32 --model llama-7b --batch 8 --space uniform --threads "$THREADS" \
	--time-limit "$LIMIT" >"$tmp/uniform.json" 2>&1
# one candidate per line: its status and tpi_s
tr '{' '\n' <"$tmp/uniform.json" | grep '"status"' |
	sed -n 's/.*"status": *"\([a-z_]*\)".*/\1 &/p' |
	awk '{ st = $1; t = ""; if (match($0, /"tpi_s": *[0-9.eE+-]+/)) { t = substr($0, RSTART, RLENGTH); sub(/.*: */, "", t) }
	       n++; if (t == "" || st == "infeasible") inf++; else print t > "/dev/stderr" }
	     END { printf "  candidates %d, infeasible %d\n", n, inf }' 2>"$tmp/tpis"
sort -g "$tmp/tpis" | awk '{ v[NR] = $1 } END { if (NR) printf "  feasible %d, best TPI %s s, median TPI %s s\n", NR, v[1], v[int((NR + 1) / 2)] }'

echo
echo "ablation, envb-8 bert-huge B=16 (unified / inter-layer only / intra-layer only):"
echo "| space | pp | c | strategies | TPI s | samples/s | solve s | proven optimal |"
echo "|---|---|---|---|---|---|---|---|"
for space in unified inter intra; do
	row "$space" --cluster envb-8 --model bert-huge --batch 16 --space "$space"
done
