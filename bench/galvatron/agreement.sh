#!/bin/sh
# bench/galvatron/agreement.sh - uniap's side of the Galvatron agreement check.
#
# Imports Galvatron v2.4.0's measured A100 profiles (the fixtures) with
# `uniap import galvatron`, then for every model x cluster plans with
# `uniap plan --target galvatron` (priced for the galvatron runtime row),
# exports the plan as a Galvatron config and re-evaluates it.
# bench/galvatron/compare.py then prices the same plans with Galvatron's own
# cost model.
#
# Needs: build/uniap (make); the fixtures (../shared/fixtures/galvatron-v2.4.0,
# else /work/shared/fixtures/galvatron-v2.4.0, or FIX=DIR).  Does not need
# Galvatron itself; nothing of Galvatron is copied into this repository.
#
# usage (from the repository root): bench/galvatron/agreement.sh [OUTDIR]
#   OUTDIR   default build/galvatron/out (build/ is git-ignored)
#   BATCH    global batch, default 16;  TL  plan time limit (s), default 120
#   MODELS, CLUSTERS  space-separated subsets; THREADS  solver threads (nproc)
set -eu
FIX=${FIX:-../shared/fixtures/galvatron-v2.4.0}
[ -d "$FIX" ] || FIX=/work/shared/fixtures/galvatron-v2.4.0
[ -d "$FIX/hardware" ] || { echo "agreement.sh: no Galvatron fixtures at $FIX (set FIX)" >&2; exit 1; }
OUT=${1:-build/galvatron/out}
B=${BATCH:-16}
U=build/uniap
[ -x "$U" ] || { echo "agreement.sh: $U missing: run make first" >&2; exit 1; }
THREADS=${THREADS:-$(nproc)}
mkdir -p "$OUT"
for c in 1x4 1x8 2x8; do
	n=${c%x*}; g=${c#*x}
	[ -s "$OUT/c$c.json" ] || $U import galvatron --hardware "$FIX/hardware" --nodes "$n" \
		--gpus-per-node "$g" --quiet --out-cluster "$OUT/c$c.json"
done
# $4: extra import options, split on purpose ("--seq 512")
# shellcheck disable=SC2086
imp() {
	[ -s "$OUT/$1.json" ] || $U import galvatron --model-dir "$FIX/models/$2" \
		--config "$FIX/models/$2/$3" $4 --quiet --out-model "$OUT/$1.json"
}
imp bert-large bert_hf bert-large-uncased.json "--seq 512"
imp gpt-1.5b gpt_hf gpt-1.5b.json ""
imp gpt-2.7b gpt_hf gpt-2.7b.json ""
imp gpt-6.7b gpt_hf gpt-6.7b.json ""
imp llama-7b llama_hf llama-7b.json ""
imp vit-huge vit_hf vit-huge-patch16-224.json ""
imp swin-huge swin swin-huge-patch4-window7-224.json ""
imp vit-xhuge vit_hf vit-xhuge-patch16-224.json ""
for m in ${MODELS:-bert-large gpt-1.5b gpt-2.7b gpt-6.7b llama-7b vit-huge swin-huge vit-xhuge}; do
	for c in ${CLUSTERS:-1x4 1x8 2x8}; do
		p="$OUT/plan-$m-$c-b$B"
		[ -s "$p.json" ] && [ -s "$p.eval.json" ] && continue
		s=$(date +%s)
		$U plan --cluster "$OUT/c$c.json" --model "$OUT/$m.json" --batch "$B" --target galvatron \
			--threads "$THREADS" --time-limit "${TL:-120}" --quiet >"$p.json" 2>"$p.err" ||
			echo "plan $m $c: rc $?" >&2
		$U export --plan "$p.json" --format galvatron --cluster "$OUT/c$c.json" \
			--model "$OUT/$m.json" >"$p.galv.json" 2>>"$p.err" || echo "export $m $c: rc $?" >&2
		$U evaluate --cluster "$OUT/c$c.json" --model "$OUT/$m.json" --batch "$B" \
			--plan "$p.json" >"$p.eval.json" 2>>"$p.err" || echo "evaluate $m $c: rc $?" >&2
		echo "uniap $m $c: $(( $(date +%s) - s )) s"
	done
done
