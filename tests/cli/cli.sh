#!/bin/sh
# tests/cli/cli.sh - the `uniap` command line: help on every command, exit
# codes, errors on stderr naming the field, audit output shape, and evaluate
# on the example plan.  Prints "cli: N passed, N failed".
set -u
EX=schema/examples
. "$(dirname "$0")/lib.inc"

C="--cluster $EX/cluster-8gpu-nvlink.json --model $EX/model-bert-chain.json"

check help-main 0 "commands:" -- "$UNIAP" --help
check help-costs 0 "usage: uniap costs" -- "$UNIAP" costs --help
check help-evaluate 0 "usage: uniap evaluate" -- "$UNIAP" evaluate --help
check no-command 2 "usage" -- "$UNIAP"
check unknown-command 2 "unknown command" -- "$UNIAP" frobnicate
check unknown-option 2 "unknown or incomplete option" -- "$UNIAP" costs --frob
check missing-pp 2 "--pp: required" -- "$UNIAP" costs $C --batch 8 --microbatches 2
check missing-cluster 2 "--cluster: required" -- "$UNIAP" costs --model x --batch 8 --pp 1 --microbatches 1
check bad-batch 2 "--batch: must be an integer" -- "$UNIAP" costs $C --batch 8x --pp 1 --microbatches 1
check zero-batch 2 "--batch: must be in" -- "$UNIAP" costs $C --batch 0 --pp 1 --microbatches 1
check huge-pp 2 "--pp: must be in" -- "$UNIAP" costs $C --batch 8 --pp 99999999999 --microbatches 1
check bad-schedule 2 "--schedule: must be gpipe, 1f1b or interleaved" -- "$UNIAP" costs $C --batch 8 --pp 1 --microbatches 1 --schedule x
check pp-not-divisor 2 "pp: must divide" -- "$UNIAP" costs $C --batch 8 --pp 3 --microbatches 1
check micro-not-divisor 2 "microbatches: must divide" -- "$UNIAP" costs $C --batch 8 --pp 1 --microbatches 3
check missing-file 1 "nonexistent.json" -- "$UNIAP" costs --cluster "$tmp/nonexistent.json" --model $EX/model-bert-chain.json --batch 8 --pp 1 --microbatches 1
printf '{"nodes": 0}' >"$tmp/bad.json"
check invalid-cluster 1 "cluster." -- "$UNIAP" costs --cluster "$tmp/bad.json" --model $EX/model-bert-chain.json --batch 8 --pp 1 --microbatches 1
printf '{' >"$tmp/trunc.json"
check malformed-model 1 "model" -- "$UNIAP" costs --cluster $EX/cluster-8gpu-nvlink.json --model "$tmp/trunc.json" --batch 8 --pp 1 --microbatches 1

# audit format: the keys, one entry per layer, K x K edge matrices
check costs-ok 0 "" -- "$UNIAP" costs $C --batch 16 --pp 2 --microbatches 4 --schedule 1f1b --recompute
for key in '"pp":2' '"microbatches":4' '"microbatch_size":4' '"schedule":"1f1b"' '"memory_limit_bytes":' \
	'"inflight_microbatches":[2,1]' '"strategies":[' '"time_s":[' '"memory_fixed_bytes":[' \
	'"memory_per_microbatch_bytes":[' '"same_stage_s":[[' '"cross_stage_s":[[' '"dp4+rc"'; do
	if grep -qF -- "$key" "$tmp/out"; then pass=$((pass + 1)); else echo "FAIL costs-key $key"; fail=$((fail + 1)); fi
done
check costs-pretty 0 '"pp":	1' -- "$UNIAP" costs $C --batch 8 --pp 1 --microbatches 1 --pretty

# evaluate: the example plan, a tampered tpi, a broken order, memory, mismatched batch
batch=$(sed -n 's/.*"microbatches": *\([0-9]*\).*/\1/p' $EX/plan-example.json | head -n 1)
mbs=$(sed -n 's/.*"microbatch_size": *\([0-9]*\).*/\1/p' $EX/plan-example.json | head -n 1)
B=$((batch * mbs))
check evaluate-example 0 '"feasible":true' -- "$UNIAP" evaluate $C --batch $B --plan $EX/plan-example.json
# the memory breakdown: stage 0 of the example (1f1b, 2 in flight), bytes; the older fields unchanged
check evaluate-memory 0 '"memory_bytes":2346057728,"inflight_microbatches":2,"memory":{"model_states_bytes":911605760,"weight_bytes":227901440,"gradient_bytes":227901440,"optimizer_state_bytes":455802880,"fsdp_accumulation_bytes":0,"activation_bytes":1434451968,"allocated_bytes":2346057728' \
	-- "$UNIAP" evaluate $C --batch $B --plan $EX/plan-example.json
check evaluate-memory-device 0 '"device_memory_bytes":34359738368}' -- "$UNIAP" evaluate $C --batch $B --plan $EX/plan-example.json
check evaluate-wrong-batch 1 "plan.batch: must equal the batch $((B + 1)), got $B" -- "$UNIAP" evaluate $C --batch $((B + 1)) --plan $EX/plan-example.json
sed 's/"tpi_s": *[0-9.eE+-]*/"tpi_s": 12345/' $EX/plan-example.json >"$tmp/tampered.json"
check evaluate-mismatch 4 '"tpi_matches":false' -- "$UNIAP" evaluate $C --batch $B --plan "$tmp/tampered.json"
sed 's/"memory_bytes": *[0-9]*/"memory_bytes": 2000000000/' $EX/cluster-8gpu-nvlink.json >"$tmp/small.json"
check evaluate-over-memory 3 '"fits_memory":false' -- "$UNIAP" evaluate --cluster "$tmp/small.json" --model $EX/model-bert-chain.json --batch $B --plan $EX/plan-example.json
check evaluate-over-memory-free 3 '"free_bytes":-' -- "$UNIAP" evaluate --cluster "$tmp/small.json" --model $EX/model-bert-chain.json --batch $B --plan $EX/plan-example.json
check evaluate-missing-plan 2 "--plan: required" -- "$UNIAP" evaluate $C --batch $B
printf '{"pp": 1}' >"$tmp/badplan.json"
check evaluate-bad-plan 1 "plan" -- "$UNIAP" evaluate $C --batch $B --plan "$tmp/badplan.json"

# plan: every space; the printed plan evaluates to its own tpi_s
check help-plan 0 "usage: uniap plan" -- "$UNIAP" plan --help
for space in unified inter intra uniform; do
	check plan-$space 0 '"optimal":true' -- "$UNIAP" plan $C --batch 32 --space $space --threads 2
	cp "$tmp/out" "$tmp/plan-$space.json"
	check plan-$space-evaluates 0 '"tpi_matches":true' -- "$UNIAP" evaluate $C --batch 32 --plan "$tmp/plan-$space.json"
done
check plan-1f1b-recompute 0 '"schedule":"1f1b"' -- "$UNIAP" plan $C --batch 16 --schedule 1f1b --recompute
check plan-text 0 "plan: space unified pp" -- "$UNIAP" plan $C --batch 32 --format text
check plan-dag 0 '"optimal":true,"claim_tolerance":1e-06' -- "$UNIAP" plan --cluster $EX/cluster-16gpu-pcie-pairs.json --model $EX/model-t5-dag.json --batch 8 --schedule 1f1b
# --memory-margin: envb-8 (12 GiB TITAN Xp, 2 GiB reserved, the catalog's default fragmentation
# 0.05 and margin 0.02) with bert-huge at batch 16 uses up to 8.4 GiB on a stage; with a margin of
# 0.15 no stage may use more than (12 GiB x 0.85 - 2 GiB) / 1.05, and that plan does not fit
# without the override
MB='--cluster envb-8 --model bert-huge --batch 16'
check margin-plan 0 '"optimal":true' -- "$UNIAP" plan $MB --memory-margin 0.15 --threads 2
cp "$tmp/out" "$tmp/plan-margin.json"
check margin-evaluate 0 '"margin_bytes":1932735283' -- "$UNIAP" evaluate $MB --memory-margin 0.15 --plan "$tmp/plan-margin.json"
# every stage's memory_bytes (the audit stage memory) within 12 GiB x 0.85 - 2 GiB
over=$(grep -o '"memory_bytes":[0-9.e+]*' "$tmp/out" | sed 's/.*://' |
	awk '{ n++ } $1 > 12884901888 * 0.85 - 2147483648 { over++ } END { printf "%d over of %d", over, n }')
check margin-within 0 "0 over of " -- echo "$over"
check margin-default-plan 0 '"optimal":true' -- "$UNIAP" plan $MB --threads 2
cp "$tmp/out" "$tmp/plan-nomargin.json"
check margin-default-overfills 3 '"fits_memory":false' -- "$UNIAP" evaluate $MB --memory-margin 0.15 --plan "$tmp/plan-nomargin.json"
check margin-costs 0 '"memory_limit_bytes":' -- "$UNIAP" costs --cluster envb-8 --model bert-huge --batch 16 --pp 2 \
	--microbatches 8 --memory-margin 0.5
check margin-bad 2 "--memory-margin: must be in [0, 0.5], got 0.6" -- "$UNIAP" plan $MB --memory-margin 0.6
check margin-not-number 2 "--memory-margin: must be a number" -- "$UNIAP" evaluate $MB --memory-margin 2% \
	--plan "$tmp/plan-margin.json"
check plan-bad-space 2 "--space: must be" -- "$UNIAP" plan $C --batch 32 --space diagonal
check plan-bad-threads 2 "--threads: must be in" -- "$UNIAP" plan $C --batch 32 --threads 0
check plan-bad-gap 2 "--gap: must be a number" -- "$UNIAP" plan $C --batch 32 --gap 2
check plan-bad-format 2 "--format: must be json or text" -- "$UNIAP" plan $C --batch 32 --format xml
sed 's/"memory_bytes": *[0-9]*/"memory_bytes": 1100000000/' $EX/cluster-8gpu-nvlink.json >"$tmp/tiny.json"
check plan-nothing-fits 3 "no candidate fits" -- "$UNIAP" plan --cluster "$tmp/tiny.json" --model $EX/model-bert-chain.json --batch 32
# ... and what may help, naming the options not given (here all), on stderr in every format
check plan-nothing-fits-help 3 "what may help: --recompute (activation checkpointing)" -- \
	"$UNIAP" plan --cluster "$tmp/tiny.json" --model $EX/model-bert-chain.json --batch 32
check plan-nothing-fits-help-text 3 "more devices (a larger --cluster) or a smaller --batch" -- \
	"$UNIAP" plan --cluster "$tmp/tiny.json" --model $EX/model-bert-chain.json --batch 32 --format text --recompute
if grep -qF -- '--recompute (' "$tmp/err"; then echo "FAIL plan-nothing-fits-help-given: suggests --recompute again"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
# a name that is no catalog entry and no file: the nearest name, and where the list is
check unknown-cluster-name 1 'unknown cluster "dgx-a1000"; did you mean dgx-a100? (uniap catalog lists them' -- \
	"$UNIAP" plan --cluster dgx-a1000 --model bert-huge --batch 8
check unknown-model-name 1 'unknown model "bert-hug"; did you mean bert-huge?' -- \
	"$UNIAP" plan --cluster dgx-a100 --model bert-hug --batch 8
check unknown-far-name 1 'unknown cluster "zzz" (uniap catalog lists them, or give a file: enva,' -- \
	"$UNIAP" plan --cluster zzz --model bert-huge --batch 8
# a path is still a path: its own error
check missing-file 1 "cannot open" -- "$UNIAP" plan --cluster "$tmp/none.json" --model bert-huge --batch 8
check version 0 "uniap " -- "$UNIAP" --version


# progress on a terminal: util-linux's script(1) gives uniap a terminal; the
# line is drawn on stderr only there, never with --quiet, never on stdout
if command -v script >/dev/null 2>&1; then
	# a plan of a few seconds (a T5 with U-Net-like cross edges, too wide for dp-dag, goes to
	# the MILP, here with a 1 s limit per candidate and every candidate solved), long enough for the line
	P="--cluster dgx-a100 --model tests/data/t5-wide.json --batch 16 --format text --time-limit 1 --every-candidate"
	script -qec "$UNIAP plan $P >$tmp/plan-tty.out" "$tmp/tty" >/dev/null 2>&1
	if grep -q 'uniap plan: [0-9]*/[0-9]* candidates, .* s elapsed' "$tmp/tty" && grep -q '^plan: space' "$tmp/plan-tty.out" \
		&& ! grep -q 'candidates, ' "$tmp/plan-tty.out"; then
		pass=$((pass + 1))
	else
		echo "FAIL progress-tty: $(tr '\r' '\n' <"$tmp/tty" | head -c 300)"; fail=$((fail + 1))
	fi
	# with a plan and the bound pass done, the line carries the proven bound and the gap
	if tr '\r' '\n' <"$tmp/tty" | grep -q 'candidates, best [0-9.e+-]* s, bound [0-9.e+-]* s (gap [0-9.]* %)'; then
		pass=$((pass + 1))
	else
		echo "FAIL progress-bound: $(tr '\r' '\n' <"$tmp/tty" | tail -c 300)"; fail=$((fail + 1))
	fi
	script -qec "$UNIAP plan $P --quiet >/dev/null" "$tmp/tty-quiet" >/dev/null 2>&1
	if ! grep -q 'elapsed' "$tmp/tty-quiet"; then pass=$((pass + 1)); else echo "FAIL progress-quiet"; fail=$((fail + 1)); fi
else
	echo "cli: script(1) is absent: the progress line on a terminal is not checked"
fi
"$UNIAP" plan --cluster dgx-a100 --model t5-large --batch 16 --format text --time-limit 1 >/dev/null 2>"$tmp/err-notty"
if [ ! -s "$tmp/err-notty" ]; then pass=$((pass + 1)); else echo "FAIL progress-not-a-terminal: $(head -c 200 "$tmp/err-notty")"; fail=$((fail + 1)); fi

# a deadline for the whole plan: the wide T5 on two DGX A100 nodes at B = 128 has 40 candidates,
# several of which run CBC to their limit when each is solved (--every-candidate: 77 s at 5 s
# each, 2026-11-29; without it the least-bound candidate is solved first and its optimum prunes
# the rest within a second); with --deadline 1 the best plan so far comes back, the candidates
# left say "deadline"; every candidate was bounded before any solve, so the gap is below 1 (it was
# 1 before the bound pass), and 0 with "optimal": true where the bounds of the candidates left
# prove the plan (here they do, once the least-bound candidate is solved)
check deadline-plan 0 '"status":"deadline"' -- "$UNIAP" plan --cluster dgx-a100-x2 --model tests/data/t5-wide.json \
	--batch 128 --deadline 1 --every-candidate --quiet
if grep -q '"tpi_s":[0-9]' "$tmp/out" && grep -q 'not solved: the run.s deadline passed' "$tmp/out" &&
	{ { grep -q '"optimal":false' "$tmp/out" && grep -q '"gap":0\.[0-9]' "$tmp/out"; } ||
		grep -q '"optimal":true,.*"gap":0,' "$tmp/out"; }; then pass=$((pass + 1)); else
	echo "FAIL deadline-plan: $(head -c 300 "$tmp/out")"; fail=$((fail + 1)); fi
check deadline-bad 2 '--deadline: must be a number' -- "$UNIAP" plan --cluster enva --model bert-huge --batch 8 --deadline 0

# the candidate of least bound is solved first, and a solve that its plan proves cannot win is
# stopped at once (its bound above that plan): T5-Large on dgx-h100-x16 at B = 512 (pp 1 c 1 wins
# in 0.3 s; the second worker's first candidate, pp 16 c 512, would run to its 10 s limit) ends
# with every candidate decided, none "feasible" at a limit
check least-bound-first 0 '"optimal":true' -- "$UNIAP" plan --cluster dgx-h100-x16 --model t5-large --batch 512 \
	--threads 2 --time-limit 10 --quiet
if grep -q '"status":"\(feasible\|unknown\|canceled\)"' "$tmp/out"; then
	echo "FAIL least-bound-first: a candidate left undecided: $(grep -o '"status":"\(feasible\|unknown\|canceled\)"[^}]*' "$tmp/out" | head -c 300)"
	fail=$((fail + 1))
else
	pass=$((pass + 1))
fi

# the first SIGINT or SIGTERM stops the plan and still prints the best so far (the candidates
# left "stopped"); SIGTERM here, since a script's background job ignores SIGINT (and uniap
# keeps it ignored).  A sanitized build solves inline, so the solve in progress runs to its
# 5 s limit, and may end before any plan (exit 3, saying so).  Every candidate is solved, so the
# run is still going at the signal; its plan is proven where the candidates left are bounded above it
"$UNIAP" plan --cluster dgx-a100 --model tests/data/t5-wide.json --batch 16 --time-limit 5 --every-candidate \
	--quiet >"$tmp/int.out" 2>"$tmp/int.err" &
ip=$!
sleep 2
kill -TERM "$ip"
wait "$ip"
irc=$?
if grep -q 'interrupted' "$tmp/int.err" && [ "$irc" -eq 0 ] && grep -q '"status":"stopped"' "$tmp/int.out" &&
	{ grep -q '"optimal":false' "$tmp/int.out" || grep -q '"optimal":true,.*"gap":0,' "$tmp/int.out"; }; then
	pass=$((pass + 1))
elif [ -n "${UNIAP_SANITIZED:-}" ] && [ "$irc" -eq 3 ] && grep -q 'before the interrupt' "$tmp/int.err"; then
	pass=$((pass + 1))
else
	echo "FAIL interrupt: exit $irc; $(head -c 200 "$tmp/int.err"); $(head -c 200 "$tmp/int.out")"; fail=$((fail + 1))
fi

# the candidate grid is complete: 1441440 has 288 divisors (more than the 256 once enumerated),
# so with pp 1, 2 and 4 there are 864 candidates, pp 4 x 1441440 among them (tests/data/divisor-cap:
# its plan, then 432.43290006 s, beat the optimum that was claimed over the capped grid, 432.4464 s;
# 432.49055762 s since a transfer holds both its stages, docs/cost-model.md "TPI")
D=tests/data/divisor-cap
check divisors-complete 0 '{"pp":4,"microbatches":1441440,"status":"optimal","tpi_s":432.49055762,' -- \
	"$UNIAP" plan --cluster "$D/cluster.json" --model "$D/model.json" --batch 1441440 --quiet
if [ "$(grep -o '{"pp":[0-9]*,"microbatches":[0-9]*,' "$tmp/out" | sort -u | wc -l)" -eq 864 ] &&
	awk 'match($0, /"tpi_s":[0-9.e+-]*/) { t = substr($0, RSTART + 8, RLENGTH - 8); exit !(t + 0 <= 432.49055762) }' "$tmp/out"; then
	pass=$((pass + 1))
else
	echo "FAIL divisors-count: $(grep -o '{"pp":[0-9]*,"microbatches":[0-9]*,' "$tmp/out" | sort -u | wc -l) candidates; $(head -c 200 "$tmp/out")"
	fail=$((fail + 1))
fi

# Costs over many orders of magnitude (a 1e14-byte output, a 0.01 GB/s link): the MILP once called
# plans optimal that were 10 % (milp-tiny-36) and 26 % (milp-wide-range, a losing candidate) above
# the true optimum; the better plans of each folder are the brute-force optima, and dp-dag now
# finds them (docs/optimizer.md, "Certification")
D=tests/data/milp-tiny-36
check wide-range-tiny 0 '"tpi_s":0.15224130441714' -- \
	"$UNIAP" plan --cluster "$D/cluster.json" --model "$D/model.json" --batch 8 --schedule 1f1b --quiet
D=tests/data/milp-wide-range
check wide-range-winner 0 '{"pp":2,"microbatches":4,"microbatch_size":4,"schedule":"gpipe","tpi_s":6.92095584170' -- \
	"$UNIAP" plan --cluster "$D/cluster.json" --model "$D/model.json" --batch 16 --quiet
# the loser is solved to its own optimum only when no better plan prunes it: --every-candidate
check wide-range-loser 0 '{"pp":2,"microbatches":1,"status":"optimal","tpi_s":7.02650706064' -- \
	"$UNIAP" plan --cluster "$D/cluster.json" --model "$D/model.json" --batch 16 --every-candidate --quiet
for f in better-2-4 better-2-1; do
	check "wide-range-$f-valid" 0 '"valid":true' -- \
		"$UNIAP" evaluate --cluster "$D/cluster.json" --model "$D/model.json" --batch 16 --plan "$D/$f.json"
done

summary cli
