#!/bin/sh
# tests/cli/openapi-lint.sh - schema/openapi.json passes `redocly lint` with
# Redocly's built-in recommended ruleset (no configuration, no ignore file):
# no error and no warning.  tests/cli/openapi.sh checks that uniapd serves
# this file byte for byte, so the served document is the linted one.
#
# @redocly/cli comes from the npm registry, pinned, installed into this test's
# temporary folder (npm's own cache aside, nothing is kept).  Without node and
# npm, or when the install fails (no registry), the test is skipped with a
# line saying why.  Prints "openapi-lint: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
REDOCLY=@redocly/cli@2.77.0

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
skip() {
	echo "openapi-lint: skipped: $1"
	echo "openapi-lint: 0 passed, 0 failed, 1 skipped"
	exit 0
}

npm_tools "$REDOCLY" || skip "$npm_why"

# the recommended ruleset is what redocly uses when it finds no configuration:
# run it from a folder that has none
cp schema/openapi.json "$tmp/openapi.json"
(cd "$tmp" && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true timeout 300 \
	"$tmp/npm/node_modules/.bin/redocly" lint openapi.json --format=stylish) >"$tmp/lint" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then ok; else bad "lint: exit $rc: $(grep -E 'error|warning' "$tmp/lint" | head -n 20)"; fi
if grep -q 'recommended configuration' "$tmp/lint"; then ok; else bad "lint: not the recommended ruleset: $(head -c 300 "$tmp/lint")"; fi
if grep -qE '^ +[0-9]+:[0-9]+ +(error|warning) ' "$tmp/lint"; then
	bad "lint: $(grep -E '^ +[0-9]+:[0-9]+ +(error|warning) ' "$tmp/lint" | head -n 20)"
else
	ok
fi
if grep -q 'Your API description is valid' "$tmp/lint"; then ok; else bad "lint: no verdict: $(tail -c 300 "$tmp/lint")"; fi
summary openapi-lint
