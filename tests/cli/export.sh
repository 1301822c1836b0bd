#!/bin/sh
# tests/cli/export.sh - `uniap export` on the example plan in every format, its
# refusals and errors, and `uniap plan --format galvatron|megatron|deepspeed`
# on a catalog pair.  Prints "export: N passed, N failed".
set -u
EX=schema/examples
. "$(dirname "$0")/lib.inc"

E="--plan $EX/plan-example.json --cluster $EX/cluster-8gpu-nvlink.json --model $EX/model-bert-chain.json"

check help-export 0 "usage: uniap export" -- "$UNIAP" export --help
check help-main-export 0 "export" -- "$UNIAP" --help
check export-json 0 '"tpi_s":	0.5940951899494591' -- "$UNIAP" export $E
check export-text 0 "  stage 1: tp2.dp2 x4, dp4 x1; time" -- "$UNIAP" export $E --format text
check export-galvatron 0 '"tp_sizes_enc":	"2,2,2,2,2,2,2,2"' -- "$UNIAP" export $E --format galvatron
for key in '"pp_deg":	2' '"pp_division":	"4,4"' '"global_bsz":	32' '"chunks":	4' \
	'"pipeline_type":	"pipedream_flush"' '"vtp":	1' '"embed_sdp":	0' '"tp_consecutive_flags":	"1,1,1,1,1,1,1,1"'; do
	if grep -qF -- "$key" "$tmp/out"; then pass=$((pass + 1)); else echo "FAIL galvatron-key $key"; fail=$((fail + 1)); fi
done
# the example mixes dp4 (embed, head) with tp2.dp2: one strategy is what megatron/deepspeed need
check export-megatron-mixed 1 "layers[1] (encoder.0): megatron-lm uses one strategy" -- "$UNIAP" export $E --format megatron
check export-deepspeed-mixed 1 "layers[1] (encoder.0): deepspeed uses one strategy" -- "$UNIAP" export $E --format deepspeed
# a refusal of a mixed plan names the way out
check export-megatron-way-out 1 'for a plan that exports, plan with --target megatron' -- "$UNIAP" export $E --format megatron
check export-deepspeed-way-out 1 'uniap plan --target deepspeed' -- "$UNIAP" export $E --format deepspeed
check export-bad-format 2 "--format: must be json, text" -- "$UNIAP" export $E --format yaml
check export-no-plan 2 "--plan: required" -- "$UNIAP" export --cluster $EX/cluster-8gpu-nvlink.json --model $EX/model-bert-chain.json
check export-no-model 2 "--model: required" -- "$UNIAP" export --plan $EX/plan-example.json --cluster $EX/cluster-8gpu-nvlink.json
check export-wrong-model 1 "plan." -- "$UNIAP" export --plan $EX/plan-example.json --cluster $EX/cluster-8gpu-nvlink.json --model $EX/model-t5-dag.json
check export-catalog-cluster 1 "plan" -- "$UNIAP" export --plan $EX/plan-example.json --cluster enva --model bert-huge

# plan --format on a catalog pair: the uniform space gives one strategy for every layer
P="--cluster enva --model bert-huge --batch 16 --space uniform --threads 2"
check plan-galvatron 0 '"tp_sizes_enc":' -- "$UNIAP" plan $P --format galvatron
n=$(sed -n 's/.*"tp_sizes_enc":[^"]*"\([^"]*\)".*/\1/p' "$tmp/out" | tr ',' '\n' | wc -l)
if [ "$n" -eq 32 ]; then pass=$((pass + 1)); else echo "FAIL plan-galvatron: $n tp_sizes_enc entries, want 32"; fail=$((fail + 1)); fi
check plan-megatron 0 "--num-layers 32" -- "$UNIAP" plan $P --format megatron
check plan-megatron-tpi 0 "# tpi_s " -- "$UNIAP" plan $P --format megatron
check plan-deepspeed 0 '"train_batch_size":	16' -- "$UNIAP" plan $P --format deepspeed
check plan-text 0 "plan: space uniform pp" -- "$UNIAP" plan $P --format text
# an export of the uniform space's own plan carries no advice (it would not help)
check plan-megatron-no-advice 0 "--num-layers 32" -- "$UNIAP" plan $P --format megatron
# mkplan NAME PLACEMENT MBS: the example plan's shape (pp 2, 4 micro-batches of MBS,
# an equal 5/5 split) with the one strategy NAME (dp 2, tp 2) on every layer
mkplan() {
	printf '{"pp":2,"microbatches":4,"microbatch_size":%s,"schedule":"1f1b","tpi_s":1,' "$3"
	printf '"throughput_samples_per_s":1,"stages":[{"devices":[0,1,2,3],"layers":[0,1,2,3,4],'
	printf '"time_s":1,"memory_bytes":1},{"devices":[4,5,6,7],"layers":[5,6,7,8,9],"time_s":1,'
	printf '"memory_bytes":1}],"layers":['
	i=0
	for l in embed encoder.0 encoder.1 encoder.2 encoder.3 encoder.4 encoder.5 encoder.6 encoder.7 head; do
		[ $i -gt 0 ] && printf ','
		printf '{"name":"%s","stage":%d,"strategy":{"name":"%s","dp":2,"tp":2,"fsdp":1,' "$l" $((i / 5)) "$1"
		printf '"recompute":false,"placement":%s}}' "$2"
		i=$((i + 1))
	done
	printf ']}'
}
X="--cluster $EX/cluster-8gpu-nvlink.json --model $EX/model-bert-chain.json --format megatron"
# strided tp on every layer: megatron refuses (so does galvatron, for the embedding's vtp);
# the megatron target would plan one that exports
mkplan dp2.tp2 '["dp","tp"]' 8 >"$tmp/strided.json"
check export-strided-way-out 1 'got dp2.tp2; for a plan that exports, plan with --target megatron' -- "$UNIAP" export --plan "$tmp/strided.json" $X
# refused for its micro-batch (3 over 2 ranks): galvatron has no such rule
mkplan tp2.dp2 '["tp","dp"]' 3 >"$tmp/odd.json"
check export-odd-microbatch 1 "3 samples do not split over 2 ranks" -- "$UNIAP" export --plan "$tmp/odd.json" $X
check export-odd-microbatch-way-out 1 "this plan exports as galvatron; for a plan that exports, plan with --target megatron" -- "$UNIAP" export --plan "$tmp/odd.json" $X
mkplan tp2.dp2 '["tp","dp"]' 8 >"$tmp/even.json"
check export-uniform-shape 0 "--tensor-model-parallel-size 2" -- "$UNIAP" export --plan "$tmp/even.json" $X
check plan-bad-format 2 "an export format (galvatron, megatron, deepspeed, chrome-trace)" -- "$UNIAP" plan $P --format xml

summary export
