#!/bin/sh
# bench/targets.sh UNIAP - runtime targets side by side (make bench): for the
# UniAP paper's catalog scenarios and the imported Galvatron profiles
# (BERT-Large, Swin-Huge, GPT-6.7B, Llama-7B on 8 and 16 measured A100s),
# the unconstrained optimum and each runtime target's optimum with its price
# (TPI over the unconstrained one, minus 1; docs/export.md), and whether
# every target's plan exports in its runtime's format.  One Markdown row per
# scenario.  Figures, not assertions; LIMIT (default 10) seconds per
# candidate, THREADS solver processes.
set -u
UNIAP=${1:-build/uniap}
THREADS=${THREADS:-$(nproc)}
LIMIT=${LIMIT:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# row LABEL PLAN-ARGS...: one table row
row() {
	label=$1
	shift
	"$UNIAP" plan --format text --quiet --threads "$THREADS" --time-limit "$LIMIT" \
		--target galvatron,megatron,deepspeed "$@" >"$tmp/out" 2>"$tmp/err"
	target_exports "$@"
	awk -v label="$label" -v exports="${exports%,}" '
		/^  target / {
			t = $2
			if ($0 ~ /none fits/) { v[t] = "none fits"; next }
			if ($0 ~ /: error: model.shape/) { v[t] = "n/a: the model has no shape"; next }
			if ($0 ~ /: error: /) { e = $0; sub(/.*: error: /, "", e); v[t] = "error: " substr(e, 1, 60); next }
			tpi = $0; sub(/.*: tpi /, "", tpi); sub(/ s.*/, "", tpi)
			price = ""
			if ($0 ~ / vs any/) { price = $0; sub(/.*s, /, "", price); sub(/ vs any.*/, "", price); price = " (" price ")" }
			pp = $0; sub(/.*, pp /, "", pp); sub(/ microbatches.*/, "", pp)
			c = $0; sub(/.* microbatches /, "", c); sub(/ .*/, "", c)
			opt = $0; sub(/.*optimal /, "", opt)
			v[t] = tpi " s" price ", pp " pp " c " c (opt == "yes" ? "" : ", not proven")
		}
		END { printf "| %s | %s | %s | %s | %s | %s |\n", label, v["any"], v["galvatron"], v["megatron"],
		      v["deepspeed"], exports }
	' "$tmp/out"
}

echo "| scenario | any (unconstrained) | galvatron | megatron | deepspeed | exports |"
echo "|---|---|---|---|---|---|"
. bench/rows.inc
scenario_rows "$UNIAP" "$tmp" "gpipe 1f1b"
