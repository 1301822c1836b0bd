#!/bin/sh
# fuzz/run.sh DIR SECONDS [NAME...] - runs each libFuzzer target DIR/fuzz_NAME
# (every fuzz/fuzz_*.c when no NAME is given) for SECONDS on a scratch copy of
# its seed corpus fuzz/corpus/NAME/ (the committed corpus is never written
# to), one after another, and prints per target
#   fuzz_NAME: N execs, cov X, ft Y, S s: no finding
# or, when it finds something, "fuzz_NAME: FINDING: PATH" with the input saved
# under build/fuzz/findings/NAME/ (reproduce: DIR/fuzz_NAME PATH) and the
# end of the fuzzer's report.  Ends with "fuzz: N passed, N failed" (the
# form tests/run.sh counts) and exits non-zero on any finding or error.
# FUZZ_JOBS_NICE (10) is the niceness; FUZZ_ARGS adds libFuzzer flags.
set -u
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: fuzz/run.sh DIR SECONDS [NAME...]" >&2; exit 2; }
dir=$1 seconds=$2
shift 2
if [ $# -eq 0 ]; then
	for src in fuzz/fuzz_*.c; do
		n=${src#fuzz/fuzz_}
		set -- "$@" "${n%.c}"
	done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
for name in "$@"; do
	bin=$dir/fuzz_$name
	if [ ! -x "$bin" ]; then
		echo "fuzz_$name: FAILED: no program $bin (make fuzz-bin builds it)"
		fail=$((fail + 1))
		continue
	fi
	findings=build/fuzz/findings/$name
	mkdir -p "$findings" "$tmp/$name"
	[ -d "fuzz/corpus/$name" ] && cp fuzz/corpus/"$name"/* "$tmp/$name"/ 2>/dev/null
	dict=
	[ -f "fuzz/$name.dict" ] && dict=-dict=fuzz/$name.dict
	[ -z "$dict" ] && [ -f fuzz/json.dict ] && [ "$name" != route ] && [ "$name" != nccl ] && dict=-dict=fuzz/json.dict
	t0=$(date +%s)
	# -timeout: one input taking 10 s is a finding (a hang); -rss_limit_mb: so is 2 GB
	# shellcheck disable=SC2086
	nice -n "${FUZZ_JOBS_NICE:-10}" "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$findings/" $dict ${FUZZ_ARGS:-} "$tmp/$name" >"$tmp/$name.log" 2>&1
	rc=$?
	t=$(($(date +%s) - t0))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$name.log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$tmp/$name.log" | tail -n 1)
	covn=$(printf '%s' "$cov" | sed -n 's/cov: \([0-9]*\) ft: \([0-9]*\)/cov \1, ft \2/p')
	if [ "$rc" -eq 0 ]; then
		echo "fuzz_$name: ${execs:-?} execs, ${covn:-cov ?}, $t s: no finding"
		pass=$((pass + 1))
	else
		art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$tmp/$name.log" | tail -n 1)
		echo "fuzz_$name: FINDING: ${art:-no input saved (exit $rc)} after ${execs:-?} execs, $t s"
		grep -E 'fuzz: invariant|ERROR: |SUMMARY: |runtime error' "$tmp/$name.log" | head -n 8 | sed 's/^/  /'
		[ -n "$art" ] && echo "  reproduce: $bin $art"
		fail=$((fail + 1))
	fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
