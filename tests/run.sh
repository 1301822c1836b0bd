#!/bin/sh
# tests/run.sh DIR BIN... SCRIPT... - runs test programs and CLI test scripts,
# reads the summary each prints (cmocka's "[  PASSED  ] N test(s)." /
# "[  FAILED  ] N test(s)" / "[  SKIPPED ] N test(s)" or a plain "N passed,
# N failed[, N skipped]" line), and appends
# "passed failed skipped" per program to build/.test-counts.  A script whose
# tools are absent prints "LABEL: 0 passed, 0 failed, 1 skipped" after a line
# saying why; that is a skip, not a failure.  Each program that failed also
# gets a line in build/.test-notes ("PROGRAM: N failed in the PASS pass", PASS
# from $TEST_PASS), which tests/summary.sh repeats at the end, and so does
# each program that skipped ("skipped: PROGRAM in the PASS pass: WHY", WHY its
# last line that speaks of a skip, but for its summary); each program's
# wall time goes to build/.test-times ("PASS SECONDS PROGRAM"), which
# tests/summary.sh reads for its slowest-programs line, and the pass's
# whole run time to build/.test-passes ("PASS run SECONDS"), for its time
# line.  Exits non-zero when any program failed or printed no summary.
#
# Up to $TEST_JOBS programs run at once (default: the number of processors,
# at least 2: most programs spend their time waiting on a server, a child
# process or a sleep, so two overlap well even on one core).  Each program's
# output is kept in a file and printed whole when it ends, so programs that
# run side by side never mix their lines; the order of the programs in the
# log is the order they ended in.  TEST_JOBS=1 runs them one after the
# other, in the order given, as a plain loop.
#
# No program holds a wall time to a fixed bound, or sleeps in the hope that
# something happened: each waits on a condition with a generous deadline
# (tests/README.md), so any number of them run side by side, on a busy
# machine too.  The scripts (the long ones) start first, then the unit test
# programs, mostly a few seconds each, which fill the end of the pass.
set -u
shift  # DIR is informational
mkdir -p build
status=0
run_t0=$(date +%s)
# the pass's run time ("PASS run SECONDS" in build/.test-passes), however it ends
trap 'echo "${TEST_PASS:-plain} run $(($(date +%s) - run_t0))" >>build/.test-passes' EXIT
jobs=${TEST_JOBS:-}
if [ -z "$jobs" ]; then
	jobs=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
	[ "$jobs" -ge 2 ] 2>/dev/null || jobs=2
fi
case $jobs in
'' | *[!0-9]* | 0) echo "tests/run.sh: TEST_JOBS must be a whole number above 0, got '$jobs'" >&2; exit 2 ;;
esac

# finish PROGRAM RC SECONDS (output in $out): prints it, reads its summary
# and writes the program's lines in build/.test-*
finish() {
	prog=$1 rc=$2
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	if [ -z "$p$f" ]; then
		line=$(printf '%s\n' "$out" | grep -E '^([a-z0-9-]+: )?[0-9]+ passed, [0-9]+ failed' | tail -n 1)
		p=$(printf '%s\n' "$line" | sed -n 's/^\([a-z0-9-]*: \)\{0,1\}\([0-9]*\) passed.*/\2/p')
		f=$(printf '%s\n' "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
		s=$(printf '%s\n' "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
	fi
	p=${p:-0}; f=${f:-0}; s=${s:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "$prog: exited $rc" >&2
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
		echo "$prog: printed no test summary" >&2
		f=1
	fi
	echo "$p $f $s" >> build/.test-counts
	echo "${TEST_PASS:-plain} $3 $prog" >> build/.test-times
	if [ "$f" -ne 0 ]; then
		echo "$prog: $f failed${TEST_PASS:+ in the $TEST_PASS pass}" >> build/.test-notes
		status=1
	fi
	if [ "$s" -ne 0 ]; then
		why=$(printf '%s\n' "$out" | grep -i 'skip' |
			grep -Ev '^([a-z0-9-]+: )?[0-9]+ passed, [0-9]+ failed|^\[  SKIPPED \] [0-9]+ test' |
			tail -n 1 | sed 's/^note: //' | cut -c1-200)
		echo "skipped: $prog${TEST_PASS:+ in the $TEST_PASS pass}: ${why:-$s skipped}" >> build/.test-notes
	fi
}

# run_one PROGRAM: runs it in the foreground, its output in $out
run_one() {
	t0=$(date +%s)
	case "$1" in
	*.sh) out=$(sh "$1" 2>&1); rc=$? ;;
	*) out=$("$1" 2>&1); rc=$? ;;
	esac
	finish "$1" "$rc" $(($(date +%s) - t0))
}

if [ "$jobs" -eq 1 ]; then
	for t in "$@"; do
		[ -e "$t" ] || continue
		run_one "$t"
	done
	exit $status
fi

# ---- side by side (program paths hold no blanks: the lists below are split
# on them, with globbing off).  Slot files in $dir: N.prog (the program), N.t0 (its
# start), N.out (its output), N.rc ("STATUS END", written once it ended).
set -f
dir=$(mktemp -d "${TMPDIR:-/tmp}/uniap-tests.XXXXXX") || exit 2
running=''  # the slots' numbers and pids: "N:PID N:PID ..."
nrunning=0 n=0
trap 'for r in $running; do kill "${r#*:}" 2>/dev/null; done; rm -rf "$dir"
	echo "${TEST_PASS:-plain} run $(($(date +%s) - run_t0))" >>build/.test-passes' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start PROGRAM: runs it in the background in a new slot
start() {
	n=$((n + 1))
	date +%s >"$dir/$n.t0"
	(
		case "$1" in
		*.sh) sh "$1" >"$dir/$n.out" 2>&1 </dev/null ;;
		*) "$1" >"$dir/$n.out" 2>&1 </dev/null ;;
		esac
		echo "$? $(date +%s)" >"$dir/$n.tmp" && mv "$dir/$n.tmp" "$dir/$n.rc"
	) &
	running="$running $n:$!" nrunning=$((nrunning + 1))
	printf '%s\n' "$1" >"$dir/$n.prog"
}

# reap: waits until at least one running program ended, then finishes each
# that did (a short poll: POSIX sh cannot wait for whichever child ends first)
reap() {
	while :; do
		left='' ended='' nleft=0
		for r in $running; do
			# a program whose shell died unannounced (killed) ended too
			if [ ! -e "$dir/${r%%:*}.rc" ] && ! kill -0 "${r#*:}" 2>/dev/null &&
				[ ! -e "$dir/${r%%:*}.rc" ]; then
				echo "1 $(date +%s)" >"$dir/${r%%:*}.rc"
			fi
			if [ -e "$dir/${r%%:*}.rc" ]; then
				ended="$ended $r"
			else
				left="$left $r" nleft=$((nleft + 1))
			fi
		done
		[ -n "$ended" ] && break
		sleep 0.2
	done
	running=$left nrunning=$nleft
	for r in $ended; do
		k=${r%%:*}
		wait "${r#*:}"
		out=$(cat "$dir/$k.out")
		read -r rc t1 <"$dir/$k.rc"
		finish "$(cat "$dir/$k.prog")" "$rc" $((t1 - $(cat "$dir/$k.t0")))
		rm -f "$dir/$k.prog" "$dir/$k.t0" "$dir/$k.out" "$dir/$k.rc"
	done
}

scripts=
bins=
for t in "$@"; do
	[ -e "$t" ] || continue
	case "$t" in *.sh) scripts="$scripts $t" ;; *) bins="$bins $t" ;; esac
done
for t in $scripts $bins; do
	while [ "$nrunning" -ge "$jobs" ]; do
		reap
	done
	start "$t"
done
while [ "$nrunning" -gt 0 ]; do
	reap
done
exit $status
