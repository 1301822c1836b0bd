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
check export-json 0 '"tpi_s":	0.591571942007641' -- "$UNIAP" export $E
check export-text 0 "  stage 1: tp2.dp2 x4, dp4 x1; time" -- "$UNIAP" export $E --format text
check export-galvatron 0 '"tp_sizes_enc":	"2,2,2,2,2,2,2,2"' -- "$UNIAP" export $E --format galvatron
for key in '"pp_deg":	2' '"pp_division":	"4,4"' '"global_bsz":	32' '"chunks":	4' \
	'"pipeline_type":	"pipedream_flush"' '"vtp":	1' '"embed_sdp":	0' '"tp_consecutive_flags":	"1,1,1,1,1,1,1,1"'; do
	if grep -qF -- "$key" "$tmp/out"; then pass=$((pass + 1)); else echo "FAIL galvatron-key $key"; fail=$((fail + 1)); fi
done
# the example mixes dp4 (embed, head) with tp2.dp2: one strategy is what megatron/deepspeed need
check export-megatron-mixed 1 "layers[1] (encoder.0): megatron-lm uses one strategy" -- "$UNIAP" export $E --format megatron
check export-deepspeed-mixed 1 "layers[1] (encoder.0): deepspeed uses one strategy" -- "$UNIAP" export $E --format deepspeed
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
check plan-bad-format 2 "an export format (galvatron, megatron, deepspeed)" -- "$UNIAP" plan $P --format xml

summary export
