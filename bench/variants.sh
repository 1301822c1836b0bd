#!/bin/sh
# bench/variants.sh UNIAP - the effect of the strategy variants that runtimes
# use (make bench; docs/cost-model.md): FLAGS (default "--zero"; e.g.
# "--sequence-parallel", or both) added to the dictionary.  For the UniAP
# paper's catalog scenarios and the imported Galvatron profiles, each
# target's optimum without and with FLAGS and the change in TPI (negative:
# faster), and whether each target's plan with FLAGS exports in its runtime's
# format.  One Markdown row per scenario.  Figures, not assertions; LIMIT
# (default 10) seconds per candidate, THREADS solver processes.
set -u
UNIAP=${1:-build/uniap}
THREADS=${THREADS:-$(nproc)}
LIMIT=${LIMIT:-10}
FLAGS=${FLAGS:---zero}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# tpis FILE: "any galvatron megatron deepspeed" TPIs of a text plan ("-" where none)
tpis() {
	awk '
		/^  target / { t = $2; v = "-"
			if ($0 ~ /: tpi /) { v = $0; sub(/.*: tpi /, "", v); sub(/ s.*/, "", v) }
			tpi[t] = v }
		END { printf "%s %s %s %s\n", tpi["any"] == "" ? "-" : tpi["any"], tpi["galvatron"] == "" ? "-" : tpi["galvatron"],
		      tpi["megatron"] == "" ? "-" : tpi["megatron"], tpi["deepspeed"] == "" ? "-" : tpi["deepspeed"] }
	' "$1"
}

row() {
	label=$1
	shift
	"$UNIAP" plan --format text --quiet --threads "$THREADS" --time-limit "$LIMIT" \
		--target galvatron,megatron,deepspeed "$@" >"$tmp/a" 2>/dev/null
	"$UNIAP" plan --format text --quiet --threads "$THREADS" --time-limit "$LIMIT" \
		--target galvatron,megatron,deepspeed $FLAGS "$@" >"$tmp/b" 2>/dev/null
	target_exports $FLAGS "$@"
	printf '%s %s\n' "$(tpis "$tmp/a")" "$(tpis "$tmp/b")" | awk -v label="$label" -v exports="${exports%,}" '
		function cell(x, y) {
			if (x == "-" || y == "-") return (y == "-" ? "-" : y " s")
			return sprintf("%s → %s s (%+.1f %%)", x, y, (y / x - 1) * 100)
		}
		{ printf "| %s | %s | %s | %s | %s | %s |\n", label, cell($1, $5), cell($2, $6), cell($3, $7), cell($4, $8),
		         exports }'
}

echo "without → with $FLAGS"
echo
echo "| scenario | any | galvatron | megatron | deepspeed | exports with $FLAGS |"
echo "|---|---|---|---|---|---|"
. bench/rows.inc
scenario_rows "$UNIAP" "$tmp" "1f1b"
