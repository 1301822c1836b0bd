#!/bin/sh
# examples/keyed-flow.sh - examples/flow.sh against a keyed uniapd of its own:
# a store in a fresh temporary folder, a tenant "alice" and her key, uniapd on
# a free loopback port (or PORT), waited for until /healthz answers; then the
# flow with her key, and one request without it (a 401).  Re-runnable: each
# run starts from nothing, and at its end (or on Ctrl-C) uniapd is stopped and
# the folder removed.  It writes nothing into the repository.
#
#   sh examples/keyed-flow.sh            # needs `make` first (build/uniapd)
#   UNIAPD=/usr/bin/uniapd PORT=8081 sh examples/keyed-flow.sh
#
# Prints the flow's steps; exit status 0 when the flow passed, 1 otherwise
# (with "keyed-flow.sh: ..." on stderr).
set -u
cd "$(dirname "$0")/.." || exit 1
UNIAPD=${UNIAPD:-build/uniapd}
PORT=${PORT:-0}
dir=$(mktemp -d "${TMPDIR:-/tmp}/uniap-keyed.XXXXXX") || exit 1
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

die() {
	echo "keyed-flow.sh: $*" >&2
	exit 1
}

[ -x "$UNIAPD" ] || die "$UNIAPD: not built (run make first, or set UNIAPD)"
"$UNIAPD" tenant add alice --db "$dir/keyed.db" >"$dir/add.out" 2>"$dir/add.err" ||
	die "tenant add: $(cat "$dir/add.err")"
key=$(tail -n 1 "$dir/add.out")
[ -n "$key" ] || die "tenant add printed no key"
echo "== a store of its own ($dir/keyed.db), tenant alice and her key"

"$UNIAPD" --listen "127.0.0.1:$PORT" --db "$dir/keyed.db" 2>"$dir/log" &
pid=$!
# the port from uniapd's "listening" log line (PORT=0 lets the kernel pick a
# free one), then /healthz: bounded generously, never a fixed sleep
port= i=0
while [ -z "$port" ] && [ $i -lt 600 ]; do
	port=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$dir/log" | head -n 1)
	[ -n "$port" ] && break
	kill -0 "$pid" 2>/dev/null || die "uniapd did not start: $(head -c 400 "$dir/log")"
	sleep 0.1
	i=$((i + 1))
done
[ -n "$port" ] || die "uniapd did not say where it listens within 60 s: $(head -c 400 "$dir/log")"
U=http://127.0.0.1:$port
i=0
until curl -s -m 10 -o /dev/null "$U/healthz"; do
	[ $i -lt 600 ] || die "$U/healthz did not answer within 60 s"
	sleep 0.1
	i=$((i + 1))
done
echo "== uniapd listens at $U (keyed: every request needs Authorization: Bearer KEY)"

U=$U KEY=$key sh examples/flow.sh || die "the flow failed"
echo "== without the key"
code=$(curl -s -o "$dir/body" -w '%{http_code}' "$U/v1/whoami")
echo "GET /v1/whoami -> $code"
[ "$code" = 401 ] || die "whoami without a key answered $code, not 401"
echo "keyed-flow: ok"
