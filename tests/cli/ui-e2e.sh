#!/bin/sh
# tests/cli/ui-e2e.sh - the web UI end to end: a keyed uniapd (a tenant made
# with `uniapd tenant add`, not --no-auth) on a free port, and
# tests/ui/e2e.js driving Debian's headless Chromium through puppeteer-core
# against it (the steps and their helpers are described there).  The npm
# packages come from tests/ui/package-lock.json only (make ui-test-deps: npm
# ci into build/ui-test/, skipped while that is newer than the lock file).
# Screenshots and axe reports go to build/test-artifacts/ui/ (ui-asan/ under
# sanitizers) and stay there.  Afterwards uniapd's stderr, its access log
# included, must not hold the key.  Then a second uniapd under --no-auth and
# e2e.js without a key: the page goes straight in (screenshots in no-auth/).
#
# Skipped, with a note line saying which and why, when chromium, node or npm
# is missing or when the npm packages cannot be fetched (offline); a lock file
# npm rejects while the registry answers is a failure.
# Environment: UNIAPD, CHROMIUM (/usr/bin/chromium), UI_E2E_TIMEOUT_S (300),
# UNIAP_SANITIZED (every timeout 4 times longer).
# Its waits are generous bounds on outcomes, never a wall time held to a
# fixed bound, so it runs beside other programs (tests/README.md).
# Prints "ui-e2e: N passed, N failed" (or "..., 1 skipped").
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
pid=
npid=
trap 'for p in $npid $pid; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT

SLOW=1
ART=build/test-artifacts/ui
if [ -n "${UNIAP_SANITIZED:-}" ]; then
	SLOW=4
	ART=build/test-artifacts/ui-asan
fi
TIMEOUT_S=$((${UI_E2E_TIMEOUT_S:-300} * SLOW))

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
# skip WHY HOW: the note line and the skip summary
skip() {
	echo "note: $1: the UI end-to-end test is skipped ($2)"
	echo "ui-e2e: 0 passed, 0 failed, 1 skipped"
	exit 0
}
installs="sh scripts/install-deps.sh installs it"
command -v "$CHROMIUM" >/dev/null 2>&1 || skip "chromium not installed ($CHROMIUM not found)" "$installs"
command -v node >/dev/null 2>&1 || skip "node not installed (Debian package nodejs)" "$installs"
command -v npm >/dev/null 2>&1 || skip "npm not installed (Debian package npm)" "$installs"

# the packages, from the lock file (make's MAKEFLAGS are the test run's, not
# ours); one retry, not npm's two with 10 s and more between, so that an
# offline machine skips in seconds
if ! env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS npm_config_fetch_retries=1 npm_config_fetch_retry_mintimeout=2000 \
	make -s ui-test-deps >"$tmp/npm.log" 2>&1; then
	if ! npm ping --fetch-retries=0 --fetch-timeout=20000 >"$tmp/ping.log" 2>&1; then
		skip "npm could not fetch puppeteer-core and axe-core: the npm registry did not answer ($(grep -m 1 -i 'err' "$tmp/ping.log" | cut -c1-160))" \
			"make ui-test-deps installs them once it is reachable"
	fi
	bad "make ui-test-deps: npm ci failed while the registry answers: $(tail -n 5 "$tmp/npm.log" | cut -c1-300)"
	summary ui-e2e
	exit 1
fi
ok

# a tenant and its key (the last line `tenant add` prints)
if "$UNIAPD" tenant add ui --db "$DB" >"$tmp/out" 2>"$tmp/err"; then ok; else
	bad "tenant add: $(head -c 300 "$tmp/err")"
	summary ui-e2e
	exit 1
fi
KEY=$(tail -n 1 "$tmp/out")
case "$KEY" in uk_*) ;; *) bad "tenant add printed no key: $(head -c 200 "$tmp/out")" ;; esac
# one job thread and no cache: the plan the page submits waits behind two others
# (e2e.js), so its progress is seen from queued to done
if ! start_uniapd --jobs 1 --spare-jobs 0 --workers 2 --no-cache; then
	bad "uniapd did not start: $(head -c 300 "$tmp/log")"
	summary ui-e2e
	exit 1
fi
ok

mkdir -p "$ART"
rm -f "$ART"/*.png "$ART"/*.json
echo "ui-e2e: screenshots in $ART"
# node in the background so that the EXIT trap can stop it (puppeteer closes
# Chromium on SIGTERM); the profile goes under $tmp (TMPDIR)
TMPDIR=$tmp UI_BASE=http://127.0.0.1:$port UI_KEY=$KEY UI_OUT=$(pwd)/$ART CHROMIUM=$CHROMIUM \
	UI_MODULES=$(pwd)/build/ui-test/node_modules UI_SLOW=$SLOW \
	timeout -k 10 "$TIMEOUT_S" node tests/ui/e2e.js >"$tmp/e2e.out" 2>"$tmp/e2e.err" &
npid=$!
wait "$npid"
rc=$?
npid=
# its lines but the summary, whose counts join this script's
grep -v '^ui-e2e: [0-9]* passed, [0-9]* failed' "$tmp/e2e.out"
line=$(grep '^ui-e2e: [0-9]* passed, [0-9]* failed' "$tmp/e2e.out" | tail -n 1)
if [ -z "$line" ]; then
	why="exit $rc"
	[ "$rc" -eq 124 ] && why="stopped after $TIMEOUT_S s"
	bad "e2e.js printed no summary ($why): $(tail -c 600 "$tmp/e2e.err")"
else
	p=$(printf '%s\n' "$line" | sed 's/^ui-e2e: \([0-9]*\) passed.*/\1/')
	f=$(printf '%s\n' "$line" | sed 's/.* \([0-9]*\) failed.*/\1/')
	pass=$((pass + p)) fail=$((fail + f))
	[ "$f" -eq 0 ] || [ ! -s "$tmp/e2e.err" ] || echo "e2e.js stderr: $(tail -c 600 "$tmp/e2e.err")"
	[ "$f" -gt 0 ] || [ "$rc" -eq 0 ] || bad "e2e.js exited $rc: $(tail -c 300 "$tmp/e2e.err")"
fi

stop_uniapd
if [ "$stopped" -eq 0 ]; then ok; else bad "stop: uniapd exited $stopped"; fi
# the access log (one JSON line per request) and every other line of stderr
n=$(grep -c '"path":"/' "$tmp/log")
if grep -qF -- "$KEY" "$tmp/log"; then
	bad "the key is in uniapd's log: $(grep -m 1 -F -- "$KEY" "$tmp/log" | sed "s/$KEY/<KEY>/g" | cut -c1-300)"
elif [ "$n" -eq 0 ]; then
	bad "uniapd's log holds no request line"
else
	ok
fi

# under --no-auth the page goes straight in (e2e.js with no key: its no-auth steps)
if start_uniapd --no-auth --jobs 1 --workers 1; then
	TMPDIR=$tmp UI_BASE=http://127.0.0.1:$port UI_KEY= UI_OUT=$(pwd)/$ART/no-auth CHROMIUM=$CHROMIUM \
		UI_MODULES=$(pwd)/build/ui-test/node_modules UI_SLOW=$SLOW \
		timeout -k 10 "$TIMEOUT_S" node tests/ui/e2e.js >"$tmp/e2e.out" 2>"$tmp/e2e.err" &
	npid=$!
	wait "$npid"
	npid=
	grep -v '^ui-e2e: [0-9]* passed, [0-9]* failed' "$tmp/e2e.out"
	line=$(grep '^ui-e2e: [0-9]* passed, [0-9]* failed' "$tmp/e2e.out" | tail -n 1)
	if [ -z "$line" ]; then
		bad "e2e.js under --no-auth printed no summary: $(tail -c 600 "$tmp/e2e.err")"
	else
		p=$(printf '%s\n' "$line" | sed 's/^ui-e2e: \([0-9]*\) passed.*/\1/')
		f=$(printf '%s\n' "$line" | sed 's/.* \([0-9]*\) failed.*/\1/')
		pass=$((pass + p)) fail=$((fail + f))
	fi
	stop_uniapd
	if [ "$stopped" -eq 0 ]; then ok; else bad "stop (--no-auth): uniapd exited $stopped"; fi
else
	bad "uniapd --no-auth did not start: $(head -c 300 "$tmp/log")"
fi
summary ui-e2e
