#!/bin/sh
# tests/cli/frozen.sh - uniapd on a disk that freezes (docs/store.md, "A
# frozen disk"): its SQLite database on an ext4 image mounted through a loop
# device, frozen with fsfreeze while a write is in flight.  The write in
# flight waits for the thaw; /readyz says 503 once it has been held; /healthz
# and the metrics keep answering, and a second write is refused with 503
# instead of waiting for the thaw.  Thawed, the first write completes,
# /readyz is ready again and writes work.  Every wait is on a condition with
# a generous deadline (curl -m 60), never on a measured time.  Needs root, a
# loop device, mkfs.ext4 and fsfreeze: skipped, saying so, where they are
# missing.  The image is always thawed and unmounted at exit.
# Prints "frozen: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
EX=schema/examples
pid=
mnt=$tmp/fs
bg=
cleanup() {
	fsfreeze -u "$mnt" 2>/dev/null
	[ -n "$bg" ] && kill "$bg" 2>/dev/null
	if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
	umount "$mnt" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/http.inc"

skip() {
	echo "frozen: $1: skipped"
	echo "frozen: 0 passed, 0 failed, 1 skipped"
	exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (a loop mount and fsfreeze)"
command -v fsfreeze >/dev/null 2>&1 && command -v mkfs.ext4 >/dev/null 2>&1 || skip "no fsfreeze or mkfs.ext4"
mkdir -p "$mnt"
truncate -s 64M "$tmp/disk.img" && mkfs.ext4 -q -F "$tmp/disk.img" >/dev/null 2>&1 &&
	mount -o loop "$tmp/disk.img" "$mnt" 2>/dev/null || skip "cannot mount an ext4 image through a loop device here"
DB=$mnt/uniap.db
if ! start_uniapd --no-auth; then
	bad "uniapd did not come up: $(head -c 300 "$tmp/log")"
	summary frozen
	exit 1
fi
U=http://127.0.0.1:$port
call before 201 '"id":' POST /v1/clusters "" "$EX/cluster-8gpu-nvlink.json"

fsfreeze -f "$mnt" || { bad "fsfreeze failed"; summary frozen; exit 1; }
# the write in flight: it waits for the thaw (or its store gives up: 503)
curl -s -m 600 -o "$tmp/w1.out" -w '%{http_code}' -H 'Content-Type: application/json' \
	--data-binary "@$EX/cluster-8gpu-nvlink.json" "$U/v1/clusters" >"$tmp/w1.code" &
bg=$!
not_ready() { [ "$(curl -s -o /dev/null -m 60 -w '%{http_code}' "$U/readyz")" = 503 ]; }
if until_true $((1200 * SLOW)) not_ready; then ok; else bad "frozen-not-ready: /readyz never said 503"; fi
i=0
while [ $i -lt 10 ]; do
	call "frozen-healthz-$i" 200 '"ok"' GET /healthz ""
	i=$((i + 1))
done
call frozen-metrics 200 'uniapd_http_requests_in_flight' GET /metrics ""
# a second write is refused, not queued behind the frozen one
problem frozen-write-refused 503 "has not completed" POST /v1/clusters "" "$EX/cluster-8gpu-nvlink.json"
call frozen-healthz-after 200 '"ok"' GET /healthz ""

fsfreeze -u "$mnt"
wait "$bg"
bg=
case $(cat "$tmp/w1.code") in 201 | 503) ok ;; *) bad "thawed-first: status $(cat "$tmp/w1.code"): $(head -c 200 "$tmp/w1.out")" ;; esac
ready() { curl -s -m 60 "$U/readyz" | grep -q '"ready"'; }
if until_true $((1200 * SLOW)) ready; then ok; else bad "thawed-ready: /readyz not ready after the thaw"; fi
call thawed-write 201 '"id":' POST /v1/clusters "" "$EX/cluster-8gpu-nvlink.json"
stop_uniapd
pid=
if [ "$stopped" -eq 0 ]; then ok; else bad "stop: exit $stopped: $(tail -c 300 "$tmp/log")"; fi
summary frozen
