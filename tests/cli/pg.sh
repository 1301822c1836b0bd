#!/bin/sh
# tests/cli/pg.sh - the store, API and job tests again, on PostgreSQL: starts
# a private server (tests/cli/pg.inc: initdb and pg_ctl in a temporary folder,
# a free port), then runs test_store (every store function; UNIAP_TEST_PG),
# tests/cli/api.sh and tests/cli/jobs.sh with their uniapd on a fresh
# database of that server each (lib.inc's test_db), and adds up their counts.
# In a sanitized pass (UNIAP_SANITIZED=1) jobs.sh is left to the plain pass:
# under ASan its plan jobs take a minute, and the backend's code is what
# test_store and api.sh run under ASan here.  Skipped without Debian's
# postgresql.  Prints "pg: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
. "$(dirname "$0")/pg.inc"
UNIAPD=${UNIAPD:-build/uniapd}
bin=$(dirname "$UNIAPD")/tests

pg_find || { echo "pg: 0 passed, 0 failed, 1 skipped"; exit 0; }
trap 'pg_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM # the EXIT trap stops the server
if ! pg_start; then
	echo "FAIL start: the test's PostgreSQL server did not start"
	fail=1
	summary pg
	exit 1
fi
echo "pg: a server on 127.0.0.1:$PG_PORT"

# add LABEL OUTPUT_FILE: adds the program's summary to ours, printing its output
# indented (tests/run.sh reads only this script's own summary line)
add() {
	echo "-- $1 on PostgreSQL"
	sed 's/^/  /' "$2"
	line=$(grep -E '^(\[  PASSED  \]|\[  FAILED  \]|[a-z-]+: [0-9]+ passed)' "$2" | tail -n 2)
	p=$(printf '%s\n' "$line" | sed -n 's/^\[  PASSED  \] \([0-9]*\).*/\1/p; s/^[a-z-]*: \([0-9]*\) passed.*/\1/p' | head -n 1)
	f=$(printf '%s\n' "$line" | sed -n 's/^\[  FAILED  \] \([0-9]*\).*/\1/p; s/.* \([0-9]*\) failed.*/\1/p' | head -n 1)
	if [ -z "$p$f" ]; then
		echo "FAIL $1: no summary"
		fail=$((fail + 1))
		return
	fi
	pass=$((pass + ${p:-0}))
	fail=$((fail + ${f:-0}))
}

UNIAP_TEST_PG=$PG_URL "$bin/test_store" >"$tmp/store.out" 2>&1
add test_store "$tmp/store.out"
scripts="api"
[ -z "${UNIAP_SANITIZED:-}" ] && scripts="api jobs"
for s in $scripts; do
	UNIAP_TEST_PG=$PG_URL sh "$(dirname "$0")/$s.sh" >"$tmp/$s.out" 2>&1
	add "$s.sh" "$tmp/$s.out"
done
summary pg
