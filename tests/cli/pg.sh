#!/bin/sh
# tests/cli/pg.sh - the store, API and job tests again, on PostgreSQL: starts
# a private server (tests/cli/pg.inc: initdb and pg_ctl in a temporary folder,
# a free port), then runs test_store (every store function; UNIAP_TEST_PG),
# tests/cli/api.sh and tests/cli/jobs.sh with their uniapd on a fresh
# database of that server each (lib.inc's test_db), and adds up their counts.
# Then a hung server (every process of it stopped with SIGSTOP: its kernel
# still acknowledges packets, so only uniapd's own deadline notices): /healthz
# answers at once, a request that needs the database answers 503 naming the
# wait within its deadline instead of holding its thread, and once the server
# runs again the same request answers 200.
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

# ---- a hung server
UNIAPD=${UNIAPD:-build/uniapd}
pid=
DB=$(UNIAP_TEST_PG=$PG_URL test_db unused)
# pg_pids: the server's processes (the postmaster and its children)
pg_pids() {
	pm=$(head -n 1 "$PG_DIR/data/postmaster.pid")
	echo "$pm $(pgrep -P "$pm" | tr '\n' ' ')"
}
code() { curl -s -o "$tmp/hung.body" -w '%{http_code}' -m "$1" "http://127.0.0.1:$port$2"; }
if start_uniapd --no-auth; then
	check hung-before 0 200 -- code 60 /v1/clusters
	# shellcheck disable=SC2046
	kill -STOP $(pg_pids)
	check hung-healthz 0 200 -- code 5 /healthz
	t0=$(date +%s)
	check hung-503 0 503 -- code 120 /v1/clusters
	t1=$(date +%s)
	if grep -q 'no answer within\|no connection free within' "$tmp/hung.body" && [ $((t1 - t0)) -lt 60 ]; then
		pass=$((pass + 1)); else
		echo "FAIL hung-bounded: $((t1 - t0)) s: $(head -c 300 "$tmp/hung.body")"; fail=$((fail + 1)); fi
	check hung-healthz-after 0 200 -- code 5 /healthz
	# shellcheck disable=SC2046
	kill -CONT $(pg_pids)
	if until_true $((600 * ${SLOW:-1})) sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -m 30 http://127.0.0.1:$port/v1/clusters)\" = 200 ]"; then
		pass=$((pass + 1)); else echo "FAIL hung-recovers: /v1/clusters still not 200"; fail=$((fail + 1)); fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
else
	echo "FAIL hung-start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	fail=$((fail + 1))
fi
summary pg
