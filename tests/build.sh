#!/bin/sh
# tests/build.sh PASS CMD... - runs the build of one pass of `make test`
# (PASS: plain, asan, tsan; CMD: the make that builds its programs), its
# output shown as it comes and kept in build/.build-PASS.log.  When the build
# fails, appends "0 0" to build/.test-counts (tests/summary.sh counts that as
# one failure) and "build of the PASS pass failed: see above (first error:
# ...)" to build/.test-notes, which tests/summary.sh prints just before its
# closing line, so the end of a long log says what went wrong first.  Its
# wall time goes to build/.test-passes ("PASS build SECONDS").
set -u
pass=$1
shift
mkdir -p build
log=build/.build-$pass.log
t0=$(date +%s)
# the pipeline's status is tee's: the build's own goes through a file
{ "$@" 2>&1; echo $? >"$log.rc"; } | tee "$log"
rc=$(cat "$log.rc" 2>/dev/null || echo 1)
rm -f "$log.rc"
# the pass's build time, for tests/summary.sh's time line
echo "$pass build $(($(date +%s) - t0))" >>build/.test-passes
[ "$rc" = 0 ] && exit 0
first=$(grep -m 1 -E 'missing build packages|error:|cannot find -l|undefined reference|No rule to make target|not found' "$log" ||
	grep -m 1 -F '***' "$log")
echo "0 0" >>build/.test-counts
echo "build of the $pass pass failed: see above (first error: ${first:-exit status $rc})" >>build/.test-notes
exit 1
