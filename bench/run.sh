#!/bin/sh
# bench/run.sh UNIAP - benchmark figures of the planner (make bench).  Prints
# each scenario's plan summary (pp, micro-batches, strategies per stage, TPI,
# throughput, solve time, proof, peak memory), then the imported Galvatron
# profiles, the paper's scenarios, the runtime targets side by side
# (bench/targets.sh) and the effect of ZeRO-1/2 and of sequence parallelism
# on each (bench/variants.sh), interleaved 1F1B against 1F1B
# (bench/interleaved.sh), and the paper's scenarios under 1F1B with the TPI
# beside the schedule as run (bench/schedule.sh).  Figures, not assertions: the
# machines are shared, so compare ratios within one run.
set -u
UNIAP=${1:-build/uniap}
EX=schema/examples
D=bench/data
THREADS=${THREADS:-$(nproc)}

scenario() {
	title=$1
	shift
	echo "== $title"
	start=$(date +%s.%N)
	"$UNIAP" plan --format text --threads "$THREADS" "$@"
	end=$(date +%s.%N)
	echo "   wall $(echo "$end - $start" | awk '{ printf "%.2f", $1 - $3 }') s"
}

scenario "BERT-like, 32 layers, 8 x V100 (NVLink), B=32, gpipe" \
	--cluster $EX/cluster-8gpu-nvlink.json --model $D/model-bert-32.json --batch 32
scenario "BERT-like, 32 layers, 8 x V100 (NVLink), B=32, 1f1b" \
	--cluster $EX/cluster-8gpu-nvlink.json --model $D/model-bert-32.json --batch 32 --schedule 1f1b
scenario "BERT-like, 32 layers, 16 x TITAN Xp (PCIe pairs, 4 nodes), B=16, gpipe" \
	--cluster $EX/cluster-16gpu-pcie-pairs.json --model $D/model-bert-32.json --batch 16
scenario "T5-like DAG (encoder output to every decoder layer), 16 GPUs, B=16, 1f1b" \
	--cluster $EX/cluster-16gpu-pcie-pairs.json --model $EX/model-t5-dag.json --batch 16 --schedule 1f1b
scenario "uniform (Megatron-style) space: BERT-like 32 layers, 16 GPUs, B=16" \
	--cluster $EX/cluster-16gpu-pcie-pairs.json --model $D/model-bert-32.json --batch 16 --space uniform
scenario "scale: 80-layer Llama-70B-like, 1024 x H100, B=1024, 1f1b, 30 s per candidate" \
	--cluster $D/cluster-1024-h100.json --model $D/model-llama-80.json --batch 1024 --schedule 1f1b \
	--time-limit 30
scenario "moonshot: 126-layer (hidden 16384, 8 KV heads, seq 8192), 16384 x H100, B=2048, 1f1b, 60 s deadline" \
	--cluster $D/cluster-16384-h100.json --model $D/model-llama-126.json --batch 2048 --schedule 1f1b \
	--deadline 60
sh bench/imported.sh "$UNIAP"
sh bench/paper.sh "$UNIAP"
sh bench/optimizer.sh "$UNIAP"
sh bench/targets.sh "$UNIAP"
FLAGS=--zero sh bench/variants.sh "$UNIAP"
FLAGS=--sequence-parallel sh bench/variants.sh "$UNIAP"
sh bench/interleaved.sh "$UNIAP"
sh bench/schedule.sh "$UNIAP"
