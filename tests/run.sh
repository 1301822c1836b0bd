#!/bin/sh
# tests/run.sh DIR BIN... SCRIPT... - runs test programs and CLI test scripts,
# reads the summary each prints (cmocka's "[  PASSED  ] N test(s)." /
# "[  FAILED  ] N test(s)" / "[  SKIPPED ] N test(s)" or a plain "N passed,
# N failed[, N skipped]" line), and appends
# "passed failed skipped" per program to build/.test-counts.  A script whose
# tools are absent prints "LABEL: 0 passed, 0 failed, 1 skipped" after a line
# saying why; that is a skip, not a failure.  Each program that failed also
# gets a line in build/.test-notes ("PROGRAM: N failed in the PASS pass", PASS
# from $TEST_PASS), which tests/summary.sh repeats at the end; each program's
# wall time goes to build/.test-times ("PASS SECONDS PROGRAM"), which
# tests/summary.sh reads for its slowest-programs line.  Exits non-zero
# when any program failed or printed no summary.
set -u
shift  # DIR is informational
mkdir -p build
status=0
for t in "$@"; do
	[ -e "$t" ] || continue
	s=
	t0=$(date +%s)
	case "$t" in
	*.sh) out=$(sh "$t" 2>&1); rc=$? ;;
	*) out=$("$t" 2>&1); rc=$? ;;
	esac
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	if [ -z "$p$f" ]; then
		line=$(printf '%s\n' "$out" | grep -E '^([a-z-]+: )?[0-9]+ passed, [0-9]+ failed' | tail -n 1)
		p=$(printf '%s\n' "$line" | sed -n 's/^\([a-z-]*: \)\{0,1\}\([0-9]*\) passed.*/\2/p')
		f=$(printf '%s\n' "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
		s=$(printf '%s\n' "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
	fi
	p=${p:-0}; f=${f:-0}; s=${s:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "$t: exited $rc" >&2
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
		echo "$t: printed no test summary" >&2
		f=1
	fi
	echo "$p $f $s" >> build/.test-counts
	echo "${TEST_PASS:-plain} $(($(date +%s) - t0)) $t" >> build/.test-times
	if [ "$f" -ne 0 ]; then
		echo "$t: $f failed${TEST_PASS:+ in the $TEST_PASS pass}" >> build/.test-notes
		status=1
	fi
done
exit $status
