#!/bin/sh
# tests/cli/import.sh - `uniap import galvatron` end to end: the Galvatron
# v2.4.0 fixtures import, the imported cluster and models plan (and the plan
# evaluates to its own TPI), and bad input exits 1 or 2 with a message naming
# the file and key.  Prints "import: N passed, N failed".
set -u
FIX=../shared/fixtures/galvatron-v2.4.0
[ -d "$FIX" ] || FIX=/work/shared/fixtures/galvatron-v2.4.0
if [ ! -d "$FIX" ]; then
	# a clone without ../shared beside it: the README's own examples/ are
	# checked by tests/cli/readme.sh; these measured profiles are not there
	echo "import: Galvatron's fixtures (../shared/fixtures/galvatron-v2.4.0) are absent: skipped"
	echo "import: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
HW=$FIX/hardware
MD=$FIX/models
. "$(dirname "$0")/lib.inc"

# command line
check help-main 0 "import" -- "$UNIAP" --help
check help-import 0 "usage: uniap import galvatron" -- "$UNIAP" import --help
check help-galvatron 0 "--model-dir DIR" -- "$UNIAP" import galvatron --help
check no-format 2 "missing format" -- "$UNIAP" import
check unknown-format 2 "unknown format 'megatron'" -- "$UNIAP" import megatron
check nothing 2 "nothing to import" -- "$UNIAP" import galvatron
check unknown-option 2 "unknown or incomplete option" -- "$UNIAP" import galvatron --frob
check several-sets 2 "several file sets (1x4, 1x8, 2x8)" -- "$UNIAP" import galvatron --hardware "$HW"
check no-set 1 "no file set matches" -- "$UNIAP" import galvatron --hardware "$HW" --nodes 3 --gpus-per-node 8
check bad-memory 2 "--memory-gb: must be a number" -- "$UNIAP" import galvatron --hardware "$HW" --memory-gb 80GB
check bad-reserved 2 "--reserved-gb: must be less than" -- "$UNIAP" import galvatron --hardware "$HW" --nodes 1 \
	--gpus-per-node 8 --memory-gb 40 --reserved-gb 40
check two-to-stdout 2 "needs --out-cluster and --out-model" -- "$UNIAP" import galvatron --hardware "$HW" \
	--model-dir "$MD/bert_hf" --config "$MD/bert_hf/bert-large-uncased.json"
check seq-without-model 2 "need --model-dir" -- "$UNIAP" import galvatron --hardware "$HW" --seq 512

# bad input: exit 1, the message names the folder, file or key
check bad-dir 1 "$tmp/nonexistent: cannot open folder" -- "$UNIAP" import galvatron --hardware "$tmp/nonexistent"
check bad-model-dir 1 "cannot open folder" -- "$UNIAP" import galvatron --model-dir "$tmp/nonexistent" \
	--config "$MD/bert_hf/bert-large-uncased.json"
check missing-config 1 "nope.json: cannot open" -- "$UNIAP" import galvatron --model-dir "$MD/bert_hf" \
	--config "$MD/bert_hf/nope.json"
check no-profile 1 "no profile fits bert-huge-uncased-32" -- "$UNIAP" import galvatron --model-dir "$MD/bert_hf" \
	--config "$MD/bert_hf/bert-huge-uncased-32.json"
check raw-memory-only 1 "memory_profiling_bf16_hidden4096_head32.json: layertype_0: missing" -- "$UNIAP" import \
	galvatron --model-dir "$MD/gpt_hf" --config "$MD/gpt_hf/gpt-6.7b.json" --seq 4096
mkdir -p "$tmp/hw"
cp "$HW/overlap_coefficient.json" "$tmp/hw/"
printf '{"allreduce_size_8_consec_1": "fast"}' >"$tmp/hw/allreduce_bandwidth_1nodes_8gpus_per_node.json"
check corrupt-file 1 "allreduce_bandwidth_1nodes_8gpus_per_node.json: allreduce_size_8_consec_1: must be a number" \
	-- "$UNIAP" import galvatron --hardware "$tmp/hw"
printf '{"allreduce_size_8_consec_1": 150}' >"$tmp/hw/allreduce_bandwidth_1nodes_8gpus_per_node.json"
printf '{"overlap_coe": 1.1' >"$tmp/hw/overlap_coefficient.json"
check malformed-file 1 "overlap_coefficient.json: malformed json" -- "$UNIAP" import galvatron --hardware "$tmp/hw"
: >"$tmp/hw/overlap_coefficient.json"
check empty-file 1 "overlap_coefficient.json: empty file" -- "$UNIAP" import galvatron --hardware "$tmp/hw"

# every hardware file set imports; stdout holds the one document asked for
check hw-1x4 0 '"devices_per_node":4' -- "$UNIAP" import galvatron --hardware "$HW" --nodes 1 --gpus-per-node 4
check hw-1x8 0 "" -- "$UNIAP" import galvatron --hardware "$HW" --nodes 1 --gpus-per-node 8 --quiet \
	--out-cluster "$tmp/c8.json"
check hw-2x8 0 "cluster 8.13007 GB/s" -- "$UNIAP" import galvatron --hardware "$HW" --nodes 2 --gpus-per-node 8 \
	--out-cluster "$tmp/c16.json"
check hw-explicit 0 '"overlap_coefficient":1.125552573612729' -- "$UNIAP" import galvatron \
	--allreduce "$HW/allreduce_bandwidth_1nodes_8gpus_per_node.json" --overlap "$HW/overlap_coefficient.json"
check model-stdout 0 '"name":"bert-large-uncased-seq512"' -- "$UNIAP" import galvatron --model-dir "$MD/bert_hf" \
	--config "$MD/bert_hf/bert-large-uncased.json" --quiet
# the forward time alpha + beta * b fitted over the profiled batch sizes (GPT-6.7B: bsz 1..16)
check fit-gpt 0 "alpha 1.60734 ms + beta 3.9081 ms/sample, max residual 3.62 %" -- "$UNIAP" import galvatron \
	--model-dir "$MD/gpt_hf" --config "$MD/gpt_hf/gpt-6.7b.json"
check fit-gpt-doc 0 '"forward_fixed_s":0.0016073' -- "$UNIAP" import galvatron \
	--model-dir "$MD/gpt_hf" --config "$MD/gpt_hf/gpt-6.7b.json" --quiet
# the language models carry the shape a launcher needs (model.shape: the Megatron-LM export)
check shape-gpt 0 '"shape":{"encoder":false,"layers":32,"hidden":4096,"heads":32,"ffn_hidden":16384,"seq_len":2048,"vocab":50257,"mlp":"gelu"' -- \
	"$UNIAP" import galvatron --model-dir "$MD/gpt_hf" --config "$MD/gpt_hf/gpt-6.7b.json" --quiet
check shape-llama 0 '"ffn_hidden":11008,"seq_len":2048,"vocab":32000,"mlp":"swiglu","norm":"rmsnorm","positions":"rotary","biases":false,"tied_embeddings":false' -- \
	"$UNIAP" import galvatron --model-dir "$MD/llama_hf" --config "$MD/llama_hf/llama-7b.json" --quiet
check fit-llama-bsz 0 "from layertype_0_bsz4 = 5.27249 ms per sample (one batch size: no fixed time)" -- \
	"$UNIAP" import galvatron --model-dir "$MD/llama_hf" --config "$MD/llama_hf/llama-7b.json" --profile-bsz 4

# every model with profiles imports and plans on the 8-GPU cluster (batch 8)
for spec in bert_hf/bert-base-uncased bert_hf/bert-large-uncased gpt_hf/gpt-1.5b gpt_hf/gpt-2.7b \
	gpt_hf/gpt-6.7b llama_hf/llama-7b swin/swin-huge-patch4-window7-224 vit_hf/vit-huge-patch16-224 \
	vit_hf/vit-xhuge-patch16-224 T5/t5-3B; do
	mdir=${spec%/*} m=${spec#*/}
	check "import-$m" 0 "" -- "$UNIAP" import galvatron --model-dir "$MD/$mdir" --config "$MD/$mdir/$m.json" \
		--out-model "$tmp/$m.json" --quiet
	# vit-xhuge's plan (1.7 s under ASan) is left to docs/galvatron.md to keep this script short;
	# T5-3B's (a DAG: the MILP, about 80 s under ASan, 5 s plain) runs in the plain pass only,
	# the MILP's memory safety being test_opt's and test_uop's under the sanitizers
	[ "$m" = vit-xhuge-patch16-224 ] && continue
	[ "$m" = t5-3B ] && [ -n "${UNIAP_SANITIZED:-}" ] && continue
	check "plan8-$m" 0 "plan: space unified" -- "$UNIAP" plan --cluster "$tmp/c8.json" --model "$tmp/$m.json" \
		--batch 8 --format text
done

# both documents at once, a plan on 16 GPUs, and the plan evaluates to its own TPI
check import-both 0 "" -- "$UNIAP" import galvatron --hardware "$HW" --nodes 2 --gpus-per-node 8 \
	--out-cluster "$tmp/c16b.json" --model-dir "$MD/vit_hf" --config "$MD/vit_hf/vit-huge-patch16-224.json" \
	--out-model "$tmp/vit.json"
check plan16-vit 0 '"optimal":true' -- "$UNIAP" plan --cluster "$tmp/c16b.json" --model "$tmp/vit.json" --batch 16
cp "$tmp/out" "$tmp/plan16.json"
check evaluate16-vit 0 '"tpi_matches":true' -- "$UNIAP" evaluate --cluster "$tmp/c16b.json" --model "$tmp/vit.json" \
	--batch 16 --plan "$tmp/plan16.json"
check plan16-bert 0 "plan: space unified" -- "$UNIAP" plan --cluster "$tmp/c16.json" \
	--model "$tmp/bert-large-uncased.json" --batch 16 --format text

summary import
