#!/bin/sh
# tests/cli/browser.sh - a real browser as a client from another origin: a
# small node server (tests/cli/browser-page.js) serves a page on one port,
# uniapd (--no-auth, --cors-origin that page's origin) listens on another,
# and headless Chromium (Debian's chromium package) loads the page.  The
# page POSTs a plan with a JSON body (so the browser makes a CORS
# preflight), reads the exposed Location, follows the job through
# EventSource until the final event, fetches the plan link with its ETag,
# and posts what it saw back to the node server, which prints it.  The
# test checks that report and uniapd's access log (the preflight, 204).
# EventSource cannot send an Authorization header, hence --no-auth here;
# keyed clients stream with fetch() (docs/jobs.md).
# Skipped, with a visible note, when chromium or node is missing.
# Prints "browser: N passed, N failed" (or "..., 1 skipped").
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
CHROMIUM=${CHROMIUM:-chromium}
pid=
npid=
cpid=
trap 'for p in $cpid $npid $pid; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT

SLOW=1
[ -n "${UNIAP_SANITIZED:-}" ] && SLOW=4

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

for tool in "$CHROMIUM" node; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "note: $tool not installed, the browser test is skipped (apt-get install chromium nodejs)"
		echo "browser: 0 passed, 0 failed, 1 skipped"
		exit 0
	fi
done

# the page's server first: its port names the origin uniapd allows
: >"$tmp/node.out"
node "$(dirname "$0")/browser-page.js" >"$tmp/node.out" 2>"$tmp/node.err" &
npid=$!
i=0
while [ $i -lt 100 ] && ! grep -q '^listening ' "$tmp/node.out"; do sleep 0.1; i=$((i + 1)); done
nport=$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$tmp/node.out")
if [ -z "$nport" ]; then
	bad "node: the page server did not start: $(head -c 300 "$tmp/node.err")"
	summary browser
	exit 1
fi
ORIGIN=http://127.0.0.1:$nport
if ! start_uniapd --no-auth --jobs 1 --workers 2 --cors-origin "$ORIGIN"; then
	bad "uniapd did not start: $(head -c 300 "$tmp/log")"
	summary browser
	exit 1
fi

mkdir -p "$tmp/profile"
"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --no-default-browser-check --disable-quic \
	--no-proxy-server --user-data-dir="$tmp/profile" \
	"$ORIGIN/?api=http://127.0.0.1:$port" >"$tmp/chromium.log" 2>&1 &
cpid=$!

# the node server prints the page's report as one line, "result {...}"
i=0
while [ $i -lt $((1200 * SLOW)) ] && ! grep -q '^result ' "$tmp/node.out"; do
	kill -0 "$cpid" 2>/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
kill "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
cpid=
sed -n 's/^result //p' "$tmp/node.out" >"$tmp/report"
[ -n "${BROWSER_REPORT:-}" ] && cp "$tmp/report" "$BROWSER_REPORT"
if [ -s "$tmp/report" ]; then ok; else
	bad "no report from the page: node: $(tail -c 300 "$tmp/node.out") chromium: $(tail -c 600 "$tmp/chromium.log")"
	stop_uniapd
	summary browser
	exit 1
fi

# has NAME NEEDLE: the report holds NEEDLE
has() { if grep -qF -- "$2" "$tmp/report"; then ok; else bad "$1: no '$2' in $(head -c 800 "$tmp/report")"; fi; }
has no-error '"error":null'
has created '"status":202'
has location-exposed '"location":"/v1/jobs/1"'
has eventsource-state '"type":"state"'
has eventsource-done '"type":"done"'
has done-succeeded '"state":"succeeded"'
has done-plan-link '"plan":"/v1/jobs/1/plan"'
has plan-fetched '"plan_status":200'
# (the browser takes gzip, so a plan of over 1 KiB comes with the weak form of its ETag)
if grep -qE '"plan_etag":"(W/)?\\"' "$tmp/report"; then ok; else bad "etag-exposed: $(head -c 800 "$tmp/report")"; fi
# progress arrived as it happened: at least one event before the final one
n=$(grep -o '"type":"[a-z]*"' "$tmp/report" | wc -l)
if [ "$n" -ge 2 ]; then ok; else bad "events: only $n: $(head -c 600 "$tmp/report")"; fi
# the browser preflighted the JSON POST, and uniapd answered it
if grep -q '"method":"OPTIONS","path":"/v1/plans".*"status":204' "$tmp/log"; then ok; else
	bad "preflight: not in the access log: $(grep -m3 OPTIONS "$tmp/log")"
fi
if grep -q '"method":"GET","path":"/v1/jobs/1/events".*"status":200' "$tmp/log"; then ok; else
	bad "eventsource: no GET /v1/jobs/1/events in the access log"
fi
stop_uniapd
if [ "$stopped" -eq 0 ]; then ok; else bad "stop: exit $stopped"; fi
kill "$npid" 2>/dev/null
wait "$npid" 2>/dev/null
npid=
summary browser
