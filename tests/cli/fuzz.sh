#!/bin/sh
# tests/cli/fuzz.sh - every libFuzzer target (fuzz/fuzz_*.c, docs/fuzzing.md)
# briefly: FUZZ_TEST_SECONDS (1) each on a scratch copy of its seed corpus,
# through fuzz/run.sh; one pass per target that ran without a finding.  The
# targets are built by `make fuzz-bin` (make test-unit does it first) into
# FUZZ_BIN_DIR (build/fuzz/fuzz); a target that is not there is a failure,
# never a skip: clang and libFuzzer's runtime are in deps/debian-build.txt.
# Runs in the plain pass only (the targets carry ASan and UBSan themselves).
# Prints "fuzz: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
cd "$(dirname "$0")/../.." || exit 1
dir=${FUZZ_BIN_DIR:-build/fuzz/fuzz}
seconds=${FUZZ_TEST_SECONDS:-1}

for src in fuzz/fuzz_*.c; do
	name=${src#fuzz/fuzz_}
	name=${name%.c}
	if sh fuzz/run.sh "$dir" "$seconds" "$name" >"$tmp/out" 2>&1; then
		pass=$((pass + 1))
	else
		echo "FAIL fuzz_$name:"
		grep -v '^fuzz: [0-9]* passed' "$tmp/out"
		fail=$((fail + 1))
	fi
done
summary fuzz
