#!/bin/sh
# tests/cli/python-client.sh - the Python client (clients/python/) against a
# live uniapd (--no-auth): its generated types are those of schema/openapi.json
# (gen_types.py --check), its unit tests (tests/cli/python-client/test_client.py:
# submit, wait by events and by long-poll and the fallback between them, plan,
# export, evaluate, allocate, errors, cancel and delete) pass, and the example
# prints Megatron-LM arguments.  Needs python3 and python3-requests (the build
# list); skipped, saying so, without requests.  Prints "python-client: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
PY=${PYTHON:-python3}

if ! "$PY" -c 'import requests' 2>/dev/null; then
	echo "python-client: skipped: python3-requests is not installed (sh scripts/install-deps.sh build)"
	echo "python-client: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
check types-current 0 "" -- "$PY" clients/python/gen_types.py --check
if ! start_uniapd --no-auth; then
	echo "FAIL start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	fail=$((fail + 1))
	summary python-client
	exit 1
fi
check unit-tests 0 "OK" -- env UNIAP_URL="http://127.0.0.1:$port" SLOW="${SLOW:-1}" "$PY" tests/cli/python-client/test_client.py
[ "$rc" -eq 0 ] || sed -n '1,60p' "$tmp/err"
check example 0 "--pipeline-model-parallel-size" -- env UNIAP_URL="http://127.0.0.1:$port" "$PY" clients/python/examples/plan.py
cp "$tmp/out" "$tmp/example.out"
check example-summary 0 "s per iteration" -- cat "$tmp/example.out"
stop_uniapd
check stop 0 "" -- test "$stopped" -eq 0
summary python-client
