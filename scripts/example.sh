#!/bin/sh
# scripts/example.sh UNIAP - the example run: plan a BERT-like model on the
# example 16-GPU cluster (PCIe pairs, 4 nodes) and a catalog scenario, then
# check the plan with evaluate.
set -eu
UNIAP=${1:-build/uniap}
EX=schema/examples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== uniap plan: BERT-like chain on 16 GPUs in PCIe pairs, B=16"
"$UNIAP" plan --cluster $EX/cluster-16gpu-pcie-pairs.json --model $EX/model-bert-chain.json \
	--batch 16 --format text
"$UNIAP" plan --cluster $EX/cluster-16gpu-pcie-pairs.json --model $EX/model-bert-chain.json \
	--batch 16 > "$tmp/plan.json"
echo "== uniap evaluate of that plan"
"$UNIAP" evaluate --cluster $EX/cluster-16gpu-pcie-pairs.json --model $EX/model-bert-chain.json \
	--batch 16 --plan "$tmp/plan.json"
echo "== uniap plan: the paper's EnvB-8 BERT-Huge from the built-in catalog, B=16"
"$UNIAP" plan --cluster envb-8 --model bert-huge --batch 16 --format text
