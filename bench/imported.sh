#!/bin/sh
# bench/imported.sh UNIAP - plans from Galvatron's measured A100 profiles
# (imported with `uniap import galvatron`): BERT-Large and Swin-Huge on one
# node of 8 GPUs.  Called by bench/run.sh.
set -u
UNIAP=${1:-build/uniap}
FIX=../shared/fixtures/galvatron-v2.4.0
[ -d "$FIX" ] || FIX=/work/shared/fixtures/galvatron-v2.4.0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
THREADS=${THREADS:-$(nproc)}

"$UNIAP" import galvatron --hardware "$FIX/hardware" --nodes 1 --gpus-per-node 8 \
	--out-cluster "$tmp/a100x8.json" --quiet || exit 1
"$UNIAP" import galvatron --model-dir "$FIX/models/bert_hf" \
	--config "$FIX/models/bert_hf/bert-large-uncased.json" --out-model "$tmp/bert-large.json" --quiet || exit 1
"$UNIAP" import galvatron --model-dir "$FIX/models/swin" \
	--config "$FIX/models/swin/swin-huge-patch4-window7-224.json" --out-model "$tmp/swin-huge.json" --quiet || exit 1
for m in "bert-large 16" "swin-huge 64"; do
	set -- $m
	for sched in gpipe 1f1b; do
		echo "== imported Galvatron profiles: $1 on 8 x A100 (measured), B=$2, $sched"
		start=$(date +%s.%N)
		"$UNIAP" plan --cluster "$tmp/a100x8.json" --model "$tmp/$1.json" --batch "$2" \
			--schedule $sched --threads "$THREADS" --format text
		end=$(date +%s.%N)
		echo "   wall $(echo "$end - $start" | awk '{ printf "%.2f", $1 - $3 }') s"
	done
done
