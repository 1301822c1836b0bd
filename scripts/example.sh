#!/bin/sh
# scripts/example.sh UNIAP - the example run: costs of one candidate and the
# evaluation of the example plan on the example profiles.
set -eu
UNIAP=${1:-build/uniap}
EX=schema/examples
C="--cluster $EX/cluster-8gpu-nvlink.json --model $EX/model-bert-chain.json"
echo "== uniap costs (first 400 bytes): BERT-like chain, 8 GPUs, pp 2, 4 micro-batches"
"$UNIAP" costs $C --batch 32 --pp 2 --microbatches 4 --schedule 1f1b | head -c 400
echo
echo "== uniap evaluate schema/examples/plan-example.json"
"$UNIAP" evaluate $C --batch 32 --plan $EX/plan-example.json --pretty
