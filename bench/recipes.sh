#!/bin/sh
# bench/recipes.sh UNIAP - the planner's optimum for the megatron target against the
# published layouts of today's large runs (bench/recipes/recipes.json: Qwen3-235B-A22B on
# 256 H100, Llama-3.1-405B on 1024 H100, DeepSeek-V3 on 1024 H100), both priced by the same
# cost model: the recipe as stated (uniap calibrate --predict-only reads its Megatron-LM
# arguments), the planner with --target megatron --zero --sequence-parallel --selective-recompute
# --fp8, 1F1B and
# interleaved, with and without --context-parallel 2 (the best of the four).  Prints a Markdown table;
# asserts nothing (docs/optimizer.md quotes it).  Needs jq.
set -u
UNIAP=${1:-build/uniap}
DOC=$(dirname "$0")/recipes/recipes.json
THREADS=${THREADS:-$(nproc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "| run | recipe layout | recipe TPI s (fits?) | planner's optimum | TPI s | planning s |"
echo "|---|---|---|---|---|---|"
jq -c '.runs[]' "$DOC" | while read -r run; do
	name=$(echo "$run" | jq -r .name)
	model=${name%@*} cluster=${name#*@}
	batch=$(echo "$run" | jq -r .megatron | sed -n 's/.*--global-batch-size \([0-9]*\).*/\1/p')
	jq --argjson r "$run" '.runs = [$r]' "$DOC" >"$tmp/one.json"
	"$UNIAP" calibrate --cluster "$cluster" --runs "$tmp/one.json" --predict-only >"$tmp/rep.json" 2>"$tmp/err" ||
		{ echo "| $name | - | $(head -c 100 "$tmp/err") | | | |"; continue; }
	rlay=$(jq -r '.runs[0] | "pp \(.pp) x \(.strategy), c \(.microbatches)"' "$tmp/rep.json")
	vp=$(echo "$run" | jq -r .megatron | sed -n 's/.*--virtual-pipeline-model-parallel-size \([0-9]*\).*/ (vp \1)/p')
	rlay="$rlay$vp"
	rtpi=$(jq -r '.runs[0] | "\(.datasheet_iteration_s * 1000 | round / 1000) (\(if .datasheet_oom then "over the memory limit" else "fits" end))"' "$tmp/rep.json")
	best='' btpi='' bsolve=0
	for cp in 1 2; do
	for sched in 1f1b interleaved; do
		start=$(date +%s.%N)
		"$UNIAP" plan --cluster "$cluster" --model "$model" --batch "$batch" --threads "$THREADS" --target megatron \
			--schedule "$sched" --zero --sequence-parallel --selective-recompute --fp8 --context-parallel "$cp" --format text \
			>"$tmp/plan.txt" 2>/dev/null || continue
		end=$(date +%s.%N)
		t=$(sed -n 's/^plan:.* tpi \([0-9.e+-]*\) s.*/\1/p' "$tmp/plan.txt")
		[ -n "$t" ] || continue
		lay=$(awk '/^plan:/ { for (i = 1; i <= NF; i++) { if ($i == "pp") pp = $(i + 1); if ($i == "microbatches") c = $(i + 1)
		                                             if ($i == "virtual_stages") v = " x vp " $(i + 1) } }
			/^  stage 0:/ { sub(/\(device [0-9]+\) /, ""); s = $3 } END { printf "pp %s%s x %s, c %s", pp, v, s, c }' "$tmp/plan.txt")
		bsolve=$(awk -v a="$start" -v b="$end" -v s="$bsolve" 'BEGIN { printf "%.2f", s + b - a }')
		if [ -z "$btpi" ] || awk -v a="$t" -v b="$btpi" 'BEGIN { exit !(a < b) }'; then btpi=$t best=$lay; fi
	done
	done
	printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$rlay" "$rtpi" "${best:--}" "${btpi:--}" "$bsolve"
done
