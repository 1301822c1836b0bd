#!/bin/sh
# bench/heavy-evaluate.sh [SCHEMA_EXAMPLES] - prints a POST /v1/evaluate body
# whose cost build takes tens of seconds: an inline 8192-device cluster (every
# dp/tp/fsdp split of it is a strategy) and a pp 1 plan of 64 layers on all of
# them, about 60 KB.  The heavy request of tests/cli/attack.sh and
# bench/attack.sh.
EX=${1:-schema/examples}
devs=$(seq -s, 0 8191)
layers=$(seq -s, 0 63)
printf '{"batch":8192,"cluster":{"name":"big","nodes":1024,"devices_per_node":8,'
printf '"device":{"name":"V100","memory_bytes":34359738368,"reserved_bytes":1073741824},'
printf '"hierarchy":[{"name":"nvlink","devices":8,"bandwidth_gb_per_s":120},'
printf '{"name":"ib","devices":8192,"bandwidth_gb_per_s":12}]},"model":'
sed 's/"repeat": 8/"repeat": 62/; s/"layers": 8,/"layers": 62,/' "$EX/model-bert-chain.json"
printf ',"plan":{"pp":1,"microbatches":1,"microbatch_size":8192,"schedule":"1f1b","tpi_s":1,'
printf '"batch":8192,"layers":['
i=0
while [ $i -lt 64 ]; do
	if [ $i -eq 0 ]; then n=embed; elif [ $i -eq 63 ]; then n=head; else n="encoder.$((i - 1))"; fi
	[ $i -gt 0 ] && printf ','
	printf '{"name":"%s","stage":0,"strategy":{"name":"dp8192","dp":8192,"tp":1,"fsdp":1,' "$n"
	printf '"recompute":false,"placement":["dp"]}}'
	i=$((i + 1))
done
printf '],"stages":[{"devices":[%s],"layers":[%s],"time_s":1,"memory_bytes":1}]}}' "$devs" "$layers"
