#!/bin/sh
# bench/dag.sh UNIAP - wide layer graphs (make bench-dag; docs/optimizer.md,
# "dp-dag"): how long the planner takes to prove graphs whose frontier is 5 to
# 8 layers, and which path answered.  Two parts:
#   1. U-Net-like BERT models (schema/examples/model-bert-chain.json's layer types,
#      16 encoder layers, w - 1 nested skips enc.i -> enc.(15 - i), frontier w)
#      planned on 16 TITAN Xp (cluster-16gpu-pcie-pairs.json) at B = 64: each
#      plan's TPI, proof, wall time and the candidates' paths;
#   2. build/dag_bench (bench/dag_bench.c): random graphs of widths 5 to 8 and
#      12 to 24 layers, nested and random skips or parallel branches, 4 layouts
#      x 3 variants, pp 4, c 8, LIMIT seconds each (default 10), SEEDS per kind
#      (default 3): every graph's path, status and seconds, then the
#      distribution per width.
# Figures, not assertions.  Needs python3 (to write the models) and a C compiler.
set -u
UNIAP=${1:-build/uniap}
THREADS=${THREADS:-$(nproc)}
LIMIT=${LIMIT:-10}
SEEDS=${SEEDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$tmp" <<'PY'
import json, sys
d = json.load(open('schema/examples/model-bert-chain.json'))
d.pop('shape', None)
n = 16
for w in range(5, 9):
    edges = [['embed', 'enc.0']] + [['enc.%d' % i, 'enc.%d' % (i + 1)] for i in range(n - 1)] + \
            [['enc.%d' % (n - 1), 'head']] + [['enc.%d' % i, 'enc.%d' % (n - 1 - i)] for i in range(w - 1)]
    d['name'] = 'unet-bert-w%d' % w
    d['graph'] = {'layers': [{'name': 'embed', 'type': 'embedding'},
                             {'name': 'enc', 'type': 'encoder', 'repeat': n},
                             {'name': 'head', 'type': 'mlm_head'}], 'edges': edges}
    json.dump(d, open('%s/unet%d.json' % (sys.argv[1], w), 'w'))
PY
echo "== U-Net-like BERT (16 encoder layers, w - 1 skips), 16 x TITAN Xp (PCIe pairs), B=64, $THREADS threads"
for w in 5 6 7 8; do
	start=$(date +%s.%N)
	"$UNIAP" plan --cluster schema/examples/cluster-16gpu-pcie-pairs.json --model "$tmp/unet$w.json" \
		--batch 64 --threads "$THREADS" --time-limit 60 >"$tmp/plan.json" || echo "   width $w: exit $?"
	end=$(date +%s.%N)
	python3 - "$tmp/plan.json" "$w" "$(echo "$start $end" | awk '{ printf "%.2f", $2 - $1 }')" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
paths = collections.Counter(c['method'] for c in d['candidates'] if c['method'] != 'lower-bound')
print('   width %s: pp %d, TPI %.6f s, %s, wall %s s; solved by %s' % (
    sys.argv[2], d['pp'], d['tpi_s'], 'proven optimal' if d['optimal'] else 'gap %.3g' % d['gap'],
    sys.argv[3], ', '.join('%s %d' % kv for kv in sorted(paths.items()))))
PY
done
echo "== random wide graphs (bench/dag_bench.c), $LIMIT s each"
cc -O2 -Icore bench/dag_bench.c build/libuniapcore.a $(pkg-config --libs cbc) -lm -o "$tmp/dag_bench" &&
	"$tmp/dag_bench" --seeds "$SEEDS" --limit "$LIMIT"
