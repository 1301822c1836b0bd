#!/bin/sh
# bench/variants.sh UNIAP - the effect of the strategy variants that runtimes
# use (make bench; docs/cost-model.md): FLAGS (default "--zero"; e.g.
# "--sequence-parallel", or both) added to the dictionary.  For the UniAP
# paper's catalog scenarios and the imported Galvatron profiles, each
# target's optimum without and with FLAGS and the change in TPI (negative:
# faster).  One Markdown row per scenario.  Figures, not assertions; LIMIT
# (default 10) seconds per candidate, THREADS solver processes.
set -u
UNIAP=${1:-build/uniap}
THREADS=${THREADS:-$(nproc)}
LIMIT=${LIMIT:-10}
FLAGS=${FLAGS:---zero}
FIX=../shared/fixtures/galvatron-v2.4.0
[ -d "$FIX" ] || FIX=/work/shared/fixtures/galvatron-v2.4.0
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
	printf '%s %s\n' "$(tpis "$tmp/a")" "$(tpis "$tmp/b")" | awk -v label="$label" '
		function cell(x, y) {
			if (x == "-" || y == "-") return (y == "-" ? "-" : y " s")
			return sprintf("%s → %s s (%+.1f %%)", x, y, (y / x - 1) * 100)
		}
		{ printf "| %s | %s | %s | %s | %s |\n", label, cell($1, $5), cell($2, $6), cell($3, $7), cell($4, $8) }'
}

echo "without → with $FLAGS"
echo
echo "| scenario | any | galvatron | megatron | deepspeed |"
echo "|---|---|---|---|---|"
. bench/scenarios.inc
printf '%s\n' "$PAPER_SCENARIOS" | while read -r cl mo b; do
	row "$cl $mo B=$b" --cluster "$cl" --model "$mo" --batch "$b" </dev/null
done

if [ ! -d "$FIX" ]; then
	echo
	echo "(Galvatron's fixtures ($FIX) are absent: the imported scenarios are skipped)"
	exit 0
fi
ok=1
for n in 1 2; do
	"$UNIAP" import galvatron --hardware "$FIX/hardware" --nodes $n --gpus-per-node 8 \
		--out-cluster "$tmp/a100x$n.json" --quiet || ok=0
done
for m in "bert_hf bert-large-uncased bert-large" "swin swin-huge-patch4-window7-224 swin-huge" \
	"gpt_hf gpt-6.7b gpt-6.7b" "llama_hf llama-7b llama-7b"; do
	set -- $m
	"$UNIAP" import galvatron --model-dir "$FIX/models/$1" --config "$FIX/models/$1/$2.json" \
		--out-model "$tmp/$3.json" --quiet || ok=0
done
[ "$ok" = 1 ] || { echo "imports of Galvatron's fixtures failed"; exit 1; }
for m in "bert-large 32" "swin-huge 64" "gpt-6.7b 16" "llama-7b 16"; do
	set -- $m
	for n in 1 2; do
		row "imported $1 on $((8 * n)) x A100, B=$2, 1f1b" --cluster "$tmp/a100x$n.json" \
			--model "$tmp/$1.json" --batch "$2" --schedule 1f1b
	done
done
