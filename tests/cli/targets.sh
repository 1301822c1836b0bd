#!/bin/sh
# tests/cli/targets.sh - `uniap plan --target`: on catalog pairs of the paper
# and the DGX machines, every target's optimum exports in its runtime's format
# (straight from `plan --format`, and through its plan document and `uniap
# export`); several targets print one line each with the price against the
# unconstrained optimum, in text and JSON; bad names and combinations are
# errors naming the option.  Then the same through uniapd (--no-auth):
# POST /v1/plans with "targets", the job's result and its exports; bad
# "targets" are 422s naming the member.  Needs curl for the service part.
# Prints "targets: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT

fmt_of() {
	case $1 in megatron) echo megatron ;; deepspeed) echo deepspeed ;; galvatron) echo galvatron ;; esac
}
needle_of() {
	case $1 in
	megatron) echo "--tensor-model-parallel-size" ;;
	deepspeed) echo '"train_micro_batch_size_per_gpu"' ;;
	galvatron) echo '"pp_division"' ;;
	esac
}

# cluster model batch schedule: catalog scenarios (the paper's environments, a DGX pair)
while read -r cl mo b s; do
	P="--cluster $cl --model $mo --batch $b --schedule $s --threads 2 --time-limit 5 --quiet"
	for t in megatron deepspeed galvatron; do
		check "plan-$t-$cl-$mo" 0 "$(needle_of "$t")" -- "$UNIAP" plan $P --target "$t" --format "$(fmt_of "$t")"
		check "doc-$t-$cl-$mo" 0 "\"target\":\"$t\"" -- "$UNIAP" plan $P --target "$t"
		cp "$tmp/out" "$tmp/plan.json"
		check "export-$t-$cl-$mo" 0 "$(needle_of "$t")" -- "$UNIAP" export --plan "$tmp/plan.json" \
			--cluster "$cl" --model "$mo" --format "$(fmt_of "$t")"
	done
done <<EOF
enva bert-huge 32 gpipe
envc llama-7b 8 gpipe
envd-32 llama-13b 4 1f1b
dgx-a100-x2 gpt-7.5b 32 1f1b
EOF

# the Megatron-LM export carries the model's shape, precision and recompute flags
P="--cluster envc --model llama-7b --batch 8 --threads 2 --quiet --target megatron --format megatron"
for flag in "--num-layers 32" "--hidden-size 4096" "--num-attention-heads 32" "--ffn-hidden-size 11008" \
	"--seq-length 2048" "--max-position-embeddings 2048" "--swiglu" "--normalization RMSNorm" \
	"--position-embedding-type rope" "--disable-bias-linear" "--untie-embeddings-and-output-weights" \
	"--attention-backend unfused" "--fp16" "pretrain_gpt.py"; do
	check "megatron-shape $flag" 0 "$flag" -- "$UNIAP" plan $P
done
check megatron-gqa 0 "--num-query-groups 8" -- "$UNIAP" plan --cluster dgx-h100-x4 --model llama-70b --batch 64 \
	--threads 2 --quiet --target megatron --format megatron
cp "$tmp/out" "$tmp/gqa.txt"
check megatron-flash 0 "--attention-backend flash" -- cat "$tmp/gqa.txt"
# FP8 training: Megatron-LM's hybrid recipe, faster than BF16 on H100; refused where it cannot run
check megatron-fp8 0 "--fp8-format hybrid" -- "$UNIAP" plan --cluster dgx-h100-x4 --model llama-70b --batch 64 \
	--threads 2 --quiet --target megatron --format megatron --fp8
check fp8-doc 0 '"fp8":true' -- "$UNIAP" plan --cluster dgx-h100 --model llama-7b --batch 8 --threads 2 --quiet --fp8
cp "$tmp/out" "$tmp/fp8.json"
check fp8-evaluate 0 '"tpi_matches":true' -- "$UNIAP" evaluate --cluster dgx-h100 --model llama-7b --batch 8 --plan "$tmp/fp8.json"
check fp8-no-figure 1 "cluster.device.peak_tflops.fp8: required by FP8 training" -- \
	"$UNIAP" plan --cluster dgx-a100 --model llama-7b --batch 8 --threads 2 --quiet --fp8
check fp8-fp32-model 1 "fp8: FP8 training keeps mixed-precision" -- \
	"$UNIAP" plan --cluster dgx-h100 --model bert-huge --batch 8 --threads 2 --quiet --fp8
check fp8-galvatron 2 "galvatron does not train in FP8" -- \
	"$UNIAP" plan --cluster dgx-h100 --model llama-7b --batch 8 --threads 2 --quiet --fp8 --target galvatron
# mixture of experts: the megatron target's optimum shares the experts out (+epN) and exports
# Megatron-LM's MoE flags; its plan document evaluates to its own TPI; bad documents name the field
P="--cluster dgx-h100-x8 --model mixtral-8x7b --batch 256 --threads 2 --quiet --sequence-parallel --zero"
check moe-megatron 0 "--expert-model-parallel-size" -- "$UNIAP" plan $P --target megatron --format megatron
cp "$tmp/out" "$tmp/moe.txt"
for flag in "--num-experts 8" "--moe-router-topk 2" "--moe-ffn-hidden-size 14336" "--moe-grouped-gemm" \
	"--moe-token-dispatcher-type alltoall" "--expert-tensor-parallel-size"; do
	check "moe-megatron $flag" 0 "$flag" -- cat "$tmp/moe.txt"
done
check moe-doc 0 '"ep":' -- "$UNIAP" plan $P
cp "$tmp/out" "$tmp/moe.json"
check moe-evaluate 0 '"tpi_matches":true' -- "$UNIAP" evaluate --cluster dgx-h100-x8 --model mixtral-8x7b \
	--batch 256 --plan "$tmp/moe.json"
sed 's/"ep":\([0-9]*\)/"ep":3/' "$tmp/moe.json" >"$tmp/moe-bad.json"
check moe-ep-bad 1 "strategy.ep: experts are shared out over the inner ranks of a dp group" -- \
	"$UNIAP" evaluate --cluster dgx-h100-x8 --model mixtral-8x7b --batch 256 --plan "$tmp/moe-bad.json"
printf '{"name":"m","precision":"mixed","architecture":{"family":"decoder","layers":2,"hidden":1024,"heads":16,%s' \
	'"seq_len":128,"vocab":1000,"moe":{"experts":8,"top_k":9,"expert_ffn_hidden":512}}}' >"$tmp/moe-topk.json"
check moe-topk 1 "model.architecture.moe.top_k: must be between 1 and experts (8), got 9" -- \
	"$UNIAP" plan --cluster dgx-h100 --model "$tmp/moe-topk.json" --batch 8 --threads 2 --quiet
# context parallelism: +cpN strategies, exported as Megatron-LM's ring attention; refused where it cannot run
P="--cluster dgx-h100-x8 --model llama-3.1-70b --batch 64 --threads 2 --quiet --zero --sequence-parallel"
check cp-megatron 0 "--context-parallel-size 2" -- "$UNIAP" plan $P --context-parallel 2 --target megatron --format megatron
check cp-doc 0 '"context_parallel":2' -- "$UNIAP" plan $P --context-parallel 2 --target megatron
cp "$tmp/out" "$tmp/cp.json"
check cp-evaluate 0 '"tpi_matches":true' -- "$UNIAP" evaluate --cluster dgx-h100-x8 --model llama-3.1-70b --batch 64 \
	--plan "$tmp/cp.json"
check cp-export 0 "--cp-comm-type p2p" -- "$UNIAP" export --plan "$tmp/cp.json" --cluster dgx-h100-x8 \
	--model llama-3.1-70b --format megatron
check cp-galvatron 2 "context_parallel: galvatron has no context parallelism" -- "$UNIAP" plan $P --context-parallel 2 \
	--target galvatron
check cp-tokens 1 "context_parallel: 3 must divide model layer type" -- "$UNIAP" plan --cluster dgx-h100-x3 \
	--model llama-3.1-8b --batch 8 --threads 2 --quiet --context-parallel 3
check cp-devices 2 "context_parallel: must divide the cluster's 64 devices, got 3" -- "$UNIAP" plan $P --context-parallel 3
# Ulysses: all-to-alls instead of the ring, exported as --cp-comm-type a2a; the heads must split
check cp-a2a 0 "--cp-comm-type a2a" -- "$UNIAP" plan $P --context-parallel 2 --cp-comm a2a --target megatron \
	--format megatron
check cp-a2a-doc 0 '"cp_comm":"a2a"' -- "$UNIAP" plan $P --context-parallel 2 --cp-comm a2a --target megatron
cp "$tmp/out" "$tmp/a2a.json"
check cp-a2a-evaluate 0 '"tpi_matches":true' -- "$UNIAP" evaluate --cluster dgx-h100-x8 --model llama-3.1-70b \
	--batch 64 --plan "$tmp/a2a.json"
check cp-a2a-heads 1 "cp_comm: a2a needs context_parallel 32 to divide" -- "$UNIAP" plan --cluster dgx-h100-x4 \
	--model bert-huge --batch 8 --threads 2 --quiet --context-parallel 32 --cp-comm a2a
check cp-comm-alone 2 "--cp-comm: only with --context-parallel N > 1" -- "$UNIAP" plan $P --cp-comm a2a
check cp-comm-bad 2 "--cp-comm: must be p2p (ring attention) or a2a (Ulysses)" -- "$UNIAP" plan $P \
	--context-parallel 2 --cp-comm ring
# multi-head latent attention and DeepSeek-V3's MoE (shared expert, dense first layers, sigmoid router)
check mla-megatron 0 "--multi-latent-attention" -- "$UNIAP" plan --cluster dgx-h100-x128 --model deepseek-v3 \
	--batch 4096 --threads 2 --quiet --zero --sequence-parallel --fp8 --target megatron --format megatron
cp "$tmp/out" "$tmp/mla.txt"
check mla-selective 0 "--recompute-modules core_attn mla_up_proj" -- "$UNIAP" plan --cluster dgx-h100-x128 \
	--model deepseek-v3 --batch 4096 --threads 2 --quiet --zero --sequence-parallel --selective-recompute --fp8 \
	--target megatron --format megatron
for flag in "--q-lora-rank 1536" "--kv-lora-rank 512" "--qk-head-dim 128" "--qk-pos-emb-head-dim 64" "--v-head-dim 128" \
	"--moe-shared-expert-intermediate-size 2048" "--moe-router-score-function sigmoid" "--moe-layer-freq [0,0,0,1,"; do
	check "mla-megatron $flag" 0 "$flag" -- cat "$tmp/mla.txt"
done
# DeepSpeed's config carries no expert parallelism: its optimum keeps the experts whole on each rank
check moe-deepspeed 0 '"train_micro_batch_size_per_gpu"' -- "$UNIAP" plan --cluster dgx-h100 --model qwen3-30b-a3b \
	--batch 16 --threads 2 --quiet --zero --target deepspeed --format deepspeed
check megatron-bert 0 "pretrain_bert.py" -- "$UNIAP" plan --cluster enva --model bert-huge --batch 32 --threads 2 \
	--quiet --target megatron --format megatron
if grep -q -- "--fp16\|--swiglu" "$tmp/out"; then echo "FAIL megatron-bert-flags"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
# a model without its shape: the megatron target and export say which field, and the other
# targets of the same run stand
check megatron-no-shape 1 "model.shape: megatron-lm builds the model from its shape" -- "$UNIAP" plan \
	--cluster enva --model vit-huge --batch 16 --threads 2 --time-limit 5 --quiet --target megatron
check megatron-no-shape-others 0 "target megatron (megatron-lm): error: model.shape" -- "$UNIAP" plan \
	--cluster enva --model vit-huge --batch 16 --threads 2 --time-limit 5 --quiet --target galvatron,megatron --format text
# documents carry the shape; it is checked, and never given with an architecture
check shape-doc 0 '"shape":{"encoder":false,"layers":32,"hidden":4096,"heads":32,"kv_heads":32' -- "$UNIAP" catalog show llama-7b
sed 's/"kv_heads":32/"kv_heads":7/' "$tmp/out" >"$tmp/bad-shape.json"
check shape-bad 1 "model.shape.kv_heads: must divide heads (32), got 7" -- "$UNIAP" costs --cluster envc \
	--model "$tmp/bad-shape.json" --batch 8 --pp 1 --microbatches 1
printf '{"name":"x","precision":"mixed","architecture":{"family":"decoder","layers":2,"hidden":64,"heads":4,"seq_len":8,"vocab":10,"flash_attention":false,"biases":true,"tied_embeddings":true},"shape":{"layers":2,"hidden":64,"heads":4,"seq_len":8,"vocab":10,"biases":true,"tied_embeddings":true}}' >"$tmp/both.json"
check shape-with-arch 1 "model.shape: the architecture gives the shape; give either, not both" -- "$UNIAP" costs \
	--cluster envc --model "$tmp/both.json" --batch 8 --pp 1 --microbatches 1

# several targets: one line each, priced against the unconstrained optimum
P="--cluster enva --model bert-huge --batch 32 --threads 2 --quiet"
check text-first 0 "plan: space unified target galvatron pp" -- "$UNIAP" plan $P --target galvatron,megatron,deepspeed --format text
for t in "galvatron (galvatron)" "megatron (megatron-lm)" "deepspeed (deepspeed)" "any (any runtime)"; do
	if grep -qF "  target $t: tpi " "$tmp/out"; then pass=$((pass + 1)); else echo "FAIL text-line $t"; fail=$((fail + 1)); fi
done
if grep -q "target megatron (megatron-lm): tpi [0-9.e+-]* s, [+-][0-9.]* % vs any, pp [0-9]* microbatches [0-9]* 1f1b" "$tmp/out"; then
	pass=$((pass + 1)); else echo "FAIL text-price: $(cat "$tmp/out")"; fail=$((fail + 1)); fi
check json-targets 0 '"targets":' -- "$UNIAP" plan $P --target megatron,any
if command -v jq >/dev/null 2>&1; then
	r=$(jq -r '[.target, (.targets | length), .targets[0].target, .targets[0].schedule,
	            (.targets[0].price | type), .targets[1].target, (.targets[1].price == 0),
	            (.tpi_s == .targets[0].tpi_s)] | map(tostring) | join(" ")' "$tmp/out")
	if [ "$r" = "megatron 2 megatron 1f1b number any true true" ]; then pass=$((pass + 1)); else
		echo "FAIL json-targets-fields: $r"; fail=$((fail + 1)); fi
fi
# one target: no price, no list; the plan is the target's
check json-one 0 '"target":"deepspeed"' -- "$UNIAP" plan $P --target deepspeed
if grep -qF '"targets"' "$tmp/out"; then echo "FAIL json-one-no-list"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

# the audit format of a target's candidate: its dictionary and its runtime's schedule
C="--cluster enva --model bert-huge --batch 32 --pp 2 --microbatches 4"
check costs-target 0 '"schedule":"1f1b"' -- "$UNIAP" costs $C --target megatron
if grep -q 'fsdp' "$tmp/out"; then echo "FAIL costs-target-no-fsdp"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check costs-space 0 '"memory_limit_bytes":' -- "$UNIAP" costs $C --space inter
check costs-bad-target 2 '--target: must be any, megatron, deepspeed or galvatron' -- "$UNIAP" costs $C --target x

# errors name the option
check bad-name 2 '--target: must be any, megatron, deepspeed or galvatron, got "megatron-lm"' -- "$UNIAP" plan $P --target megatron-lm
check bad-empty 2 "--target: empty or unknown name" -- "$UNIAP" plan $P --target megatron,
check uniform-space 2 "target: the uniform space is one Megatron-style shape already" -- "$UNIAP" plan $P --space uniform --target megatron

# ZeRO-1/2 (--zero): the dictionary offers +z1/+z2 of replicated strategies; each target's
# optimum uses what its runtime runs and exports it (Megatron-LM's distributed optimizer,
# DeepSpeed's zero stage, Galvatron's default_dp_type); the plan document says the stage and
# reads back
C="--cluster enva --model bert-huge --batch 32 --pp 2 --microbatches 4"
check zero-costs 0 '"dp4+z1","dp4+z2"' -- "$UNIAP" costs $C --zero
if grep -q 'fsdp4+z' "$tmp/out"; then echo "FAIL zero-costs-no-fsdp-variant"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check zero-costs-off 0 '"dp4"' -- "$UNIAP" costs $C
if grep -q '+z' "$tmp/out"; then echo "FAIL zero-costs-off-no-variant"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
P="--cluster enva --model bert-huge --batch 32 --threads 2 --quiet --zero"
check zero-megatron 0 "--use-distributed-optimizer" -- "$UNIAP" plan $P --target megatron --format megatron
# on 12 GB TITAN Xps BERT-Huge's replicated states do not fit: DeepSpeed's optimum shards them (stage 1)
check zero-deepspeed 0 "$(printf '"stage":\t1')" -- "$UNIAP" plan $(echo "$P" | sed 's/enva/envb-8/') --target deepspeed \
	--format deepspeed
check zero-galvatron 0 "$(printf '"default_dp_type":\t"zero2"')" -- "$UNIAP" plan $P --target galvatron --format galvatron
check zero-doc 0 '"zero":2' -- "$UNIAP" plan $P --target galvatron
cp "$tmp/out" "$tmp/zplan.json"
check zero-doc-export 0 "$(printf '"default_dp_type":\t"zero2"')" -- "$UNIAP" export --plan "$tmp/zplan.json" \
	--cluster enva --model bert-huge --format galvatron
check zero-doc-evaluate 0 '"valid":true' -- "$UNIAP" evaluate --plan "$tmp/zplan.json" --cluster enva --model bert-huge --batch 32
# a stage the layer cannot have, and a name the field contradicts, are refused naming the field
sed 's/"name":"tp2.dp4+z2","dp":4,"tp":2,"fsdp":1,"recompute":false,"zero":2/"name":"tp2.dp4+z2","dp":4,"tp":2,"fsdp":1,"recompute":false,"zero":1/' \
	"$tmp/zplan.json" >"$tmp/zbad.json"
check zero-doc-mismatch 1 'strategy.zero: must be 2 for "tp2.dp4+z2"' -- "$UNIAP" evaluate --plan "$tmp/zbad.json" \
	--cluster enva --model bert-huge --batch 32
sed 's/"recompute":false,"zero":2/"recompute":false,"zero":3/' "$tmp/zplan.json" >"$tmp/zbad.json"
check zero-doc-range 1 'strategy.zero: must be' -- "$UNIAP" evaluate --plan "$tmp/zbad.json" --cluster enva --model bert-huge --batch 32
# sequence parallelism (--sequence-parallel): "+sp" variants of tp strategies; Megatron-LM's
# optimum uses it and exports --sequence-parallel; Galvatron's use_sp is Ulysses, never planned
C="--cluster envd-32 --model llama-13b --batch 4 --pp 2 --microbatches 2"
check sp-costs 0 '"tp16","tp16+sp"' -- "$UNIAP" costs $C --sequence-parallel
if grep -q 'dp16+sp\|"fsdp16+sp"' "$tmp/out"; then echo "FAIL sp-costs-tp-only"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
P="--cluster envd-32 --model llama-13b --batch 4 --threads 2 --quiet --sequence-parallel"
check sp-megatron 0 "--sequence-parallel" -- "$UNIAP" plan $P --target megatron --format megatron
check sp-doc 0 '"recompute":false,"sp":true,"placement"' -- "$UNIAP" plan $P --target megatron
cp "$tmp/out" "$tmp/spplan.json"
check sp-doc-export 0 "--sequence-parallel" -- "$UNIAP" export --plan "$tmp/spplan.json" --cluster envd-32 \
	--model llama-13b --format megatron
check sp-doc-deepspeed 1 "deepspeed has no Megatron-style sequence parallelism" -- "$UNIAP" export \
	--plan "$tmp/spplan.json" --cluster envd-32 --model llama-13b --format deepspeed
check sp-galvatron 0 '"use_sp":' -- "$UNIAP" plan $P --target galvatron --format galvatron
if grep -q '"sp":true' "$tmp/out"; then echo "FAIL sp-galvatron-none"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
sed 's/"recompute":false,"sp":true/"recompute":false,"sp":false/' "$tmp/spplan.json" >"$tmp/spbad.json"
check sp-doc-mismatch 1 'strategy.sp: must be true for "tp8.dp4+sp"' -- "$UNIAP" evaluate --plan "$tmp/spbad.json" \
	--cluster envd-32 --model llama-13b --batch 4
sed 's/"recompute":false,"sp":true/"recompute":false,"sp":1/' "$tmp/spplan.json" >"$tmp/spbad.json"
check sp-doc-type 1 'strategy.sp: must be a boolean' -- "$UNIAP" evaluate --plan "$tmp/spbad.json" \
	--cluster envd-32 --model llama-13b --batch 4

# selective recomputation (--selective-recompute): "+sel" variants; on GPT-3 175B over 128 A100s
# the Megatron-LM optimum recomputes the attention core only (Korthikanti et al.'s setting)
P="--cluster dgx-a100-x16 --model gpt3-175b --batch 256 --threads 2 --quiet --recompute --selective-recompute"
check sel-costs 0 '"tp8+sel"' -- "$UNIAP" costs --cluster dgx-a100-x16 --model gpt3-175b --batch 256 --pp 16 \
	--microbatches 256 --selective-recompute
check sel-megatron 0 "--recompute-granularity selective" -- "$UNIAP" plan $P --target megatron --format megatron
check sel-doc 0 '"recompute":false,"selective":true' -- "$UNIAP" plan $P --target megatron
cp "$tmp/out" "$tmp/selplan.json"
check sel-doc-evaluate 0 '"valid":true' -- "$UNIAP" evaluate --plan "$tmp/selplan.json" --cluster dgx-a100-x16 \
	--model gpt3-175b --batch 256
check sel-doc-deepspeed 1 "deepspeed's activation checkpointing recomputes whole layers" -- "$UNIAP" export \
	--plan "$tmp/selplan.json" --cluster dgx-a100-x16 --model gpt3-175b --format deepspeed
sed 's/"recompute":false,"selective":true/"recompute":true,"selective":true/' "$tmp/selplan.json" >"$tmp/selbad.json"
check sel-doc-both 1 'strategy.selective: selective recomputation is instead of recomputing the whole layer' -- \
	"$UNIAP" evaluate --plan "$tmp/selbad.json" --cluster dgx-a100-x16 --model gpt3-175b --batch 256

# uneven micro-batches (--uneven-microbatches): 50 samples in 13 micro-batches of 4 (the last
# of 2) on EnvB-8, where Galvatron runs them; Megatron-LM and DeepSpeed keep divisors
P="--cluster envb-8 --model bert-huge --batch 50 --threads 2 --quiet --uneven-microbatches"
check uneven-galvatron 0 "$(printf '"chunks":\t13')" -- "$UNIAP" plan $P --target galvatron --format galvatron
cp "$tmp/out" "$tmp/ungalv.json"
check uneven-galvatron-batch 0 "$(printf '"global_bsz":\t50')" -- cat "$tmp/ungalv.json"
check uneven-doc 0 '"microbatches":13,"microbatch_size":4,"batch":50' -- "$UNIAP" plan $P --target galvatron
cp "$tmp/out" "$tmp/unplan.json"
check uneven-doc-evaluate 0 '"valid":true' -- "$UNIAP" evaluate --plan "$tmp/unplan.json" --cluster envb-8 \
	--model bert-huge --batch 50
check uneven-doc-batch 1 'plan.batch: must equal the batch 52, got 50' -- "$UNIAP" evaluate --plan "$tmp/unplan.json" \
	--cluster envb-8 --model bert-huge --batch 52
check uneven-doc-megatron 1 "microbatches: megatron-lm splits the batch into equal micro-batches" -- "$UNIAP" export \
	--plan "$tmp/unplan.json" --cluster envb-8 --model bert-huge --format megatron
check uneven-megatron 0 '"microbatches":25,' -- "$UNIAP" plan $P --target megatron
sed 's/"batch":50/"batch":40/' "$tmp/unplan.json" >"$tmp/unbad.json"
check uneven-doc-range 1 'plan.batch: 13 micro-batches of 4 samples, the last one smaller, hold more than 48' -- \
	"$UNIAP" evaluate --plan "$tmp/unbad.json" --cluster envb-8 --model bert-huge --batch 40
check uneven-costs-off 2 "microbatches: must divide batch 50, got 13" -- "$UNIAP" costs --cluster envb-8 \
	--model bert-huge --batch 50 --pp 1 --microbatches 13
check uneven-costs 0 '"microbatch_size":4' -- "$UNIAP" costs --cluster envb-8 --model bert-huge --batch 50 --pp 1 \
	--microbatches 13 --uneven-microbatches

# interleaved 1F1B: Megatron-LM's equal model chunks, exported with the virtual stage size;
# its plan document evaluates back; runtimes without virtual stages refuse it
P="--cluster dgx-a100-x2 --model gpt-39b --batch 64 --threads 2 --quiet --schedule interleaved --virtual-stages 2"
check vpp-megatron 0 "--num-layers-per-virtual-pipeline-stage 12" -- "$UNIAP" plan $P --target megatron --format megatron
cp "$tmp/out" "$tmp/vmeg.txt"
check vpp-megatron-header 0 "# interleaved 1F1B: 2 model chunks of 12 transformer layers per device" -- cat "$tmp/vmeg.txt"
if grep -q -- "--decoder-first-pipeline-num-layers" "$tmp/vmeg.txt"; then echo "FAIL vpp-megatron-uneven-flags"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
check vpp-doc 0 '"schedule":"interleaved","virtual_stages":2' -- "$UNIAP" plan $P --target megatron
cp "$tmp/out" "$tmp/vplan.json"
check vpp-doc-export 0 "--num-layers-per-virtual-pipeline-stage 12" -- "$UNIAP" export --plan "$tmp/vplan.json" \
	--cluster dgx-a100-x2 --model gpt-39b --format megatron
check vpp-doc-evaluate 0 '"device":1' -- "$UNIAP" evaluate --plan "$tmp/vplan.json" --cluster dgx-a100-x2 \
	--model gpt-39b --batch 64
check vpp-doc-deepspeed 1 "deepspeed has no interleaved schedule" -- "$UNIAP" export --plan "$tmp/vplan.json" \
	--cluster dgx-a100-x2 --model gpt-39b --format deepspeed
check vpp-doc-galvatron 1 "galvatron has no interleaved schedule" -- "$UNIAP" export --plan "$tmp/vplan.json" \
	--cluster dgx-a100-x2 --model gpt-39b --format galvatron
sed 's/"virtual_stages":2,//' "$tmp/vplan.json" >"$tmp/vbad.json"
check vpp-doc-missing 1 'plan.virtual_stages: is required' -- "$UNIAP" evaluate --plan "$tmp/vbad.json" \
	--cluster dgx-a100-x2 --model gpt-39b --batch 64
sed 's/"virtual_stages":2/"virtual_stages":3/' "$tmp/vplan.json" >"$tmp/vbad.json"
check vpp-doc-stages 1 'must have pp x virtual_stages = 6 entries' -- "$UNIAP" evaluate --plan "$tmp/vbad.json" \
	--cluster dgx-a100-x2 --model gpt-39b --batch 64
check vpp-deepspeed 0 '"schedule":"1f1b"' -- "$UNIAP" plan $P --target deepspeed
check vpp-costs 0 '"schedule":"interleaved","virtual_stages":3' -- "$UNIAP" costs --cluster dgx-a100-x2 \
	--model gpt-39b --batch 64 --pp 4 --microbatches 8 --schedule interleaved --virtual-stages 3
cp "$tmp/out" "$tmp/vcosts.json"
check vpp-costs-inflight 0 '"inflight_microbatches":[8,8,8,8,7,5,4,4,4,4,3,1]' -- cat "$tmp/vcosts.json"
# a device's chunks peak at different moments: the fullest moment of each
# device holds 15, 13, 11, 9 chunk micro-batches, not the 19, 17, 15, 13 of
# its chunks' own peaks (Megatron-LM's order, docs/cost-model.md)
check vpp-costs-peaks 0 '[15,13,11,9]' -- jq -c '[.memory_peaks | group_by(.[0])[] | map(.[1:] | add) | max]' \
	"$tmp/vcosts.json"
# the plan document gives each interleaved stage its device's memory at that peak: no more than the
# sum of the device's stages' own peaks, and the same on every stage of a device
check vpp-doc-device-memory 0 'true' -- jq -c '[.stages as $s | range(0; .pp) as $d |
	[$s[] | select((.devices[0] / ($s[0].devices | length) | floor) == $d)] |
	(map(.rank_memory_bytes) | unique | length == 1) and (.[0].rank_memory_bytes <= (map(.memory_bytes) | add))] | all' \
	"$tmp/vplan.json"
check vpp-costs-c 2 "microbatches: the interleaved schedule needs a multiple of pp 4, got 6" -- "$UNIAP" costs \
	--cluster dgx-a100-x2 --model gpt-39b --batch 48 --pp 4 --microbatches 6 --schedule interleaved
check vpp-costs-layers 2 "virtual_stages: pp 4 x 64 model chunks exceed the layer count 50" -- "$UNIAP" costs \
	--cluster dgx-a100-x2 --model gpt-39b --batch 64 --pp 4 --microbatches 8 --schedule interleaved \
	--virtual-stages 64
check vpp-without 2 "--virtual-stages: only with --schedule interleaved" -- "$UNIAP" costs --cluster dgx-a100-x2 \
	--model gpt-39b --batch 64 --pp 4 --microbatches 8 --virtual-stages 2
check vpp-range 2 "--virtual-stages" -- "$UNIAP" plan $P --virtual-stages 1
# without --virtual-stages every v of 2 to 4 is a candidate, and the best is planned
P="--cluster dgx-a100-x2 --model gpt-39b --batch 64 --threads 2 --quiet --schedule interleaved --target megatron"
check vpp-search 0 '"virtual_stages":4,"microbatches":' -- "$UNIAP" plan $P
cp "$tmp/out" "$tmp/vsearch.json"
check vpp-search-2 0 '"virtual_stages":2,"microbatches":' -- cat "$tmp/vsearch.json"
best=$(sed 's/^[^}]*"tpi_s":\([0-9.e+-]*\),.*/\1/;q' "$tmp/vsearch.json")
for v in 2 3 4; do
	t=$("$UNIAP" plan $P --virtual-stages "$v" | sed 's/^[^}]*"tpi_s":\([0-9.e+-]*\),.*/\1/;q')
	if awk -v b="$best" -v t="$t" 'BEGIN { exit !(b <= t) }'; then pass=$((pass + 1)); else
		echo "FAIL vpp-search-best: $best over v $v's $t"; fail=$((fail + 1)); fi
done

# ---- the service
if ! command -v curl >/dev/null 2>&1; then
	echo "targets: no curl: the service part is skipped"
	summary targets
	exit $?
fi
if ! start_uniapd --no-auth; then
	echo "FAIL start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	fail=$((fail + 1))
	summary targets
	exit 1
fi
. "$(dirname "$0")/http.inc"
printf '{"cluster":"enva","model":"bert-huge","batch":32,"targets":["megatron","galvatron"]}' >"$tmp/p.json"
call job-post 202 '"links":{"self":"/v1/jobs/' POST /v1/plans k "$tmp/p.json"
id=$(jid)
if wait_job "$id" k "succeeded failed" 600; then ok; else bad "job: not done: $(head -c 300 "$tmp/job")"; fi
for needle in '"target":"megatron"' '"targets":[{"target":"megatron","runtime":"megatron-lm","status":"optimal"' \
	'{"target":"galvatron","runtime":"galvatron","status":"optimal"' '{"target":"any","runtime":"any runtime","status":"optimal"' \
	'"price":' '"schedule":"1f1b"'; do
	if grep -qF -- "$needle" "$tmp/job"; then ok; else bad "job-result: lacks $needle: $(head -c 400 "$tmp/job")"; fi
done
call job-export 200 "--tensor-model-parallel-size" GET "/v1/jobs/$id/plan?format=megatron" k
# every target's plan is in the result and exports on its own
call job-export-galvatron 200 '"pp_division"' GET "/v1/jobs/$id/plan?target=galvatron&format=galvatron" k
call job-export-any 200 '"layers":' GET "/v1/jobs/$id/plan?target=any" k
problem job-export-unplanned 404 'target: job' GET "/v1/jobs/$id/plan?target=deepspeed" k
problem job-export-bad-target 400 'target: must be any, megatron, deepspeed or galvatron' GET "/v1/jobs/$id/plan?target=x" k
if grep -qF '"plan":{"pp":' "$tmp/job"; then ok; else bad "job-result: targets[].plan missing"; fi
# variant_job NAME BODY RESULT-NEEDLE FORMAT EXPORT-NEEDLE: a job with a strategy variant plans
# it (its result has RESULT-NEEDLE) and its export in FORMAT has EXPORT-NEEDLE
variant_job() {
	printf '%s' "$2" >"$tmp/v.json"
	call "$1-job-post" 202 '"links":{"self":"/v1/jobs/' POST /v1/plans k "$tmp/v.json"
	vid=$(jid)
	if wait_job "$vid" k "succeeded failed" 600; then ok; else bad "$1 job: not done: $(head -c 300 "$tmp/job")"; fi
	if grep -qF -- "$3" "$tmp/job"; then ok; else bad "$1-job: lacks $3: $(head -c 300 "$tmp/job")"; fi
	call "$1-job-export" 200 "$5" GET "/v1/jobs/$vid/plan?format=$4" k
}
variant_job zero '{"cluster":"enva","model":"bert-huge","batch":32,"zero":true,"targets":["megatron"]}' \
	'"name":"dp8+z1"' megatron "--use-distributed-optimizer"
variant_job sp '{"cluster":"envd-32","model":"llama-13b","batch":4,"sequence_parallel":true,"targets":["megatron"]}' \
	'"sp":true' megatron "--sequence-parallel"
variant_job uneven '{"cluster":"envb-8","model":"bert-huge","batch":50,"uneven_microbatches":true,"targets":["galvatron"]}' \
	'"microbatches":13,"microbatch_size":4,"batch":50' galvatron '"chunks":'
variant_job vpp '{"cluster":"dgx-a100-x2","model":"gpt-39b","batch":64,"schedule":"interleaved","virtual_stages":2,"targets":["megatron"]}' \
	'"schedule":"interleaved","virtual_stages":2' megatron "--num-layers-per-virtual-pipeline-stage 12"
variant_job vpp-search '{"cluster":"dgx-a100-x2","model":"gpt-39b","batch":64,"schedule":"interleaved","targets":["megatron"]}' \
	'"virtual_stages":3,"microbatches":' megatron "--num-layers-per-virtual-pipeline-stage"
problem vpp-without 422 'body.virtual_stages: only with' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"virtual_stages":2}' >"$tmp/b.json"; echo "$tmp/b.json")"
problem vpp-range 422 'body.virtual_stages' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"schedule":"interleaved","virtual_stages":65}' >"$tmp/b.json"; echo "$tmp/b.json")"
problem uneven-bad 422 'body.uneven_microbatches' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"uneven_microbatches":0}' >"$tmp/b.json"; echo "$tmp/b.json")"
problem sel-bad 422 'body.selective_recompute' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"selective_recompute":"on"}' >"$tmp/b.json"; echo "$tmp/b.json")"
problem sp-bad 422 'body.sequence_parallel' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"sequence_parallel":1}' >"$tmp/b.json"; echo "$tmp/b.json")"
problem zero-bad 422 'body.zero' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"zero":"yes"}' >"$tmp/b.json"; echo "$tmp/b.json")"
problem bad-target 422 'body.targets[1]' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"targets":["galvatron","megatron-lm"]}' >"$tmp/b.json"; echo "$tmp/b.json")"
problem twice-target 422 'given twice' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"targets":["any","any"]}' >"$tmp/b.json"; echo "$tmp/b.json")"
problem empty-targets 422 'body.targets: must hold 1 to 4' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"targets":[]}' >"$tmp/b.json"; echo "$tmp/b.json")"
problem uniform-target 422 'the uniform space is one Megatron-style shape' POST /v1/plans k "$(printf '{"cluster":"enva","model":"bert-huge","batch":32,"space":"uniform","targets":["deepspeed"]}' >"$tmp/b.json"; echo "$tmp/b.json")"

summary targets
