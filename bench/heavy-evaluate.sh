#!/bin/sh
# bench/heavy-evaluate.sh [SCHEMA_EXAMPLES] - prints a POST /v1/evaluate body
# whose cost build takes tens of seconds: an inline cluster of N devices
# (HEAVY_DEVICES, default 32768: every dp/tp/fsdp split of it is a strategy)
# and a pp 1 plan of 64 layers on all of them, about 200 KB.  The heavy
# request of tests/cli/attack.sh and bench/attack.sh.  Measured on 2 cores:
# 8192 devices took 4 s once the reshard fractions skipped the ranks that
# cannot differ (tens of seconds before), 16384 took 9 s, so the default is
# 32768, past any per-evaluate time limit the tests use.
EX=${1:-schema/examples}
N=${HEAVY_DEVICES:-32768}
devs=$(seq -s, 0 $((N - 1)))
layers=$(seq -s, 0 63)
printf '{"batch":%d,"cluster":{"name":"big","nodes":%d,"devices_per_node":8,' "$N" $((N / 8))
printf '"device":{"name":"V100","memory_bytes":34359738368,"reserved_bytes":1073741824},'
printf '"hierarchy":[{"name":"nvlink","devices":8,"bandwidth_gb_per_s":120},'
printf '{"name":"ib","devices":%d,"bandwidth_gb_per_s":12}]},"model":' "$N"
sed 's/"repeat": 8/"repeat": 62/; s/"layers": 8,/"layers": 62,/' "$EX/model-bert-chain.json"
printf ',"plan":{"pp":1,"microbatches":1,"microbatch_size":%d,"schedule":"1f1b","tpi_s":1,' "$N"
printf '"batch":%d,"layers":[' "$N"
i=0
while [ $i -lt 64 ]; do
	if [ $i -eq 0 ]; then n=embed; elif [ $i -eq 63 ]; then n=head; else n="encoder.$((i - 1))"; fi
	[ $i -gt 0 ] && printf ','
	printf '{"name":"%s","stage":0,"strategy":{"name":"dp%d","dp":%d,"tp":1,"fsdp":1,' "$n" "$N" "$N"
	printf '"recompute":false,"placement":["dp"]}}'
	i=$((i + 1))
done
printf '],"stages":[{"devices":[%s],"layers":[%s],"time_s":1,"memory_bytes":1}]}}' "$devs" "$layers"
