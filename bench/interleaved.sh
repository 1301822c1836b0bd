#!/bin/sh
# bench/interleaved.sh UNIAP - what interleaved 1F1B (virtual pipeline stages;
# docs/cost-model.md) buys under the model (make bench).  For GPT models of
# Megatron-LM's own runs on DGX A100 clusters, with full recomputation as
# those runs used, the megatron target's optimum under 1F1B and under the
# interleaved schedule with v = 2, 3 and 4 model chunks per device; the gain
# is the best interleaved TPI against 1F1B (negative: faster).  Then the
# unconstrained (any) optimum of one small scenario, where the MILP solves
# every interleaved candidate (LIMIT seconds each), and Llama-70B on
# dgx-a100-x8 (v 3, and v searched) and dgx-h100-x8 (v searched), where
# interleaving wins and each candidate must be proven (by its bound, a start
# that meets it, or CBC): under a minute at LIMIT = 10 on 2 cores.  Last,
# today's mixture-of-experts models (Qwen3-235B-A22B, DeepSeek-V3,
# Mixtral-8x22B, GPT-OSS-120B) interleaved with ZeRO beside their 1F1B
# optimum: about a minute more at LIMIT = 10.  Figures, not assertions.
set -u
UNIAP=${1:-build/uniap}
THREADS=${THREADS:-$(nproc)}
LIMIT=${LIMIT:-10}

# first line of a text plan: "pp P c C tpi T"
summary() {
	awk 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "pp") p = $(i + 1); if ($i == "microbatches") c = $(i + 1)
	               if ($i == "tpi") t = $(i + 1) }
	               if (t == "") print "- - -"; else print p, c, t }' "$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "megatron target, --recompute: 1F1B against interleaved (pp, micro-batches, TPI)"
echo
echo "| scenario | 1F1B | v = 2 | v = 3 | v = 4 | best interleaved vs 1F1B | export |"
echo "|---|---|---|---|---|---|---|"
while read -r cl mo b; do
	P="--cluster $cl --model $mo --batch $b --recompute --target megatron --format text --quiet --threads $THREADS"
	"$UNIAP" plan $P --schedule 1f1b >"$tmp/1" 2>/dev/null
	line="| $cl $mo B=$b | $(summary "$tmp/1" | awk '{ printf "pp %s c %s: %s s", $1, $2, $3 }')"
	best=-
	for v in 2 3 4; do
		"$UNIAP" plan $P --schedule interleaved --virtual-stages "$v" >"$tmp/$v" 2>/dev/null
		set -- $(summary "$tmp/$v")
		line="$line | pp $1 c $2: $3 s"
		if [ "$3" != "-" ] && { [ "$best" = "-" ] || awk -v a="$3" -v b="$best" 'BEGIN { exit !(a < b) }'; }; then
			best=$3
		fi
	done
	base=$(summary "$tmp/1" | awk '{ print $3 }')
	# the searched optimum (every v the megatron target can split) exports as Megatron-LM arguments
	if "$UNIAP" plan $P --schedule interleaved --format megatron >"$tmp/m" 2>"$tmp/e"; then
		exp=$(grep -o -- '--num-layers-per-virtual-pipeline-stage [0-9]*' "$tmp/m" || echo "no pipeline")
	else
		exp="refused: $(head -c 80 "$tmp/e")"
	fi
	echo "$line | $(awk -v a="$best" -v b="$base" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+.1f %%", (a / b - 1) * 100 }') | $exp |"
done <<EOF
dgx-a100-x16 gpt3-175b 64
dgx-a100-x16 gpt3-175b 128
dgx-a100-x16 gpt3-175b 512
dgx-a100-x8 gpt-76b 64
dgx-a100-x4 gpt-39b 64
dgx-a100-x2 gpt-18b 32
EOF
echo
echo "unconstrained (any) optimum, interleaved v = 2 on the MILP, $LIMIT s per candidate:"
start=$(date +%s.%N)
"$UNIAP" plan --format text --threads "$THREADS" --time-limit "$LIMIT" --cluster enva --model bert-huge --batch 32 \
	--schedule interleaved --virtual-stages 2
end=$(date +%s.%N)
echo "   wall $(echo "$end - $start" | awk '{ printf "%.2f", $1 - $3 }') s"
echo
echo "where interleaving wins: Llama-70B, B = 64, unconstrained, $LIMIT s per candidate (the issue's target:"
echo "each proven within 10 s; docs/optimizer.md, \"The MILP\" and \"The quick plan\": the figures before and"
echo "after the MILP's classes, spans and T bound, the start's local search and the starts in the run)"
# one interleaved run, unconstrained: cluster model batch v (0: searched) [flag]
interleaved_row() {
	vflag=
	[ "$4" != 0 ] && vflag="--virtual-stages $4"
	start=$(date +%s.%N)
	"$UNIAP" plan --format json --quiet --threads "$THREADS" --time-limit "$LIMIT" --cluster "$1" --model "$2" \
		--batch "$3" --schedule interleaved $vflag ${5:-} >"$tmp/il.json"
	end=$(date +%s.%N)
	python3 - "$tmp/il.json" "$(echo "$end - $start" | awk '{ printf "%.2f", $1 - $3 }')" "$1 $2 B=$3 ${5:-}" "$4" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
st = collections.Counter(c['status'] for c in d['candidates'])
solved = [c for c in d['candidates'] if c['method'] == 'milp']
quick = [c for c in d['candidates'] if c['method'] == 'quick-plan']
print('   %s, v %s: pp %d, v %d, c %d, TPI %.5f s, %s, wall %s s; candidates %s; MILP solves %d, proven %d; '
      'starts at their bound (quick-plan) %d' % (
    sys.argv[3], sys.argv[4] if sys.argv[4] != '0' else 'searched',
    d['pp'], d.get('virtual_stages', 1), d['microbatches'], d['tpi_s'],
    'proven optimal' if d['optimal'] else 'gap %.2f %%' % (100 * d['gap']), sys.argv[2],
    ', '.join('%s %d' % kv for kv in sorted(st.items())), len(solved),
    sum(1 for c in solved if c['status'] in ('optimal', 'pruned', 'infeasible')), len(quick)))
PY
}
for row in "dgx-a100-x8 3" "dgx-a100-x8 0" "dgx-h100-x8 0"; do
	set -- $row
	interleaved_row "$1" llama-70b 64 "$2"
done
echo
echo "today's mixture-of-experts runs, interleaved with ZeRO, v searched, $LIMIT s per candidate, beside the"
echo "1F1B optimum of the same space (docs/optimizer.md, \"The quick plan\", step 5: the chunk starts)"
while read -r cl mo b; do
	interleaved_row "$cl" "$mo" "$b" 0 --zero
	"$UNIAP" plan --format text --quiet --threads "$THREADS" --time-limit "$LIMIT" --cluster "$cl" --model "$mo" \
		--batch "$b" --zero --schedule 1f1b | head -1 | sed 's/^plan: /   1F1B: /'
done <<EOF
dgx-h100-x16 qwen3-235b-a22b 256
dgx-h100-x32 deepseek-v3 512
dgx-h100-x8 mixtral-8x22b 128
dgx-h100-x8 gpt-oss-120b 128
EOF
