#!/bin/sh
# tests/cli/diskfull.sh - uniapd on a disk that fills (docs/store.md, "Full"):
# its SQLite database on a 24 MB tmpfs, documents stored, then the disk
# filled to the last byte by another file.  A DELETE sent at once, before any
# write has failed, goes through (the store gives its reserve back to the disk
# and runs the delete again); new content is 507 and /readyz 503 while the
# disk is full; once the other file is gone, /readyz is 200 again (the
# reserve made anew) and uploads work.  Mounting needs root: skipped, with a
# line saying so, where it cannot mount.  Prints "diskfull: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
EX=schema/examples
pid=
mnt=$tmp/fs
trap 'if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi; umount "$mnt" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/http.inc"

mkdir -p "$mnt"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=24m tmpfs "$mnt" 2>/dev/null; then
	echo "diskfull: cannot mount a tmpfs here (needs root): skipped"
	echo "diskfull: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
DB=$mnt/uniap.db
if ! start_uniapd --no-auth; then
	bad "uniapd did not come up: $(head -c 300 "$tmp/log")"
	summary diskfull
	exit 1
fi
for i in 1 2 3; do
	call "store-$i" 201 '"id":' POST /v1/models "" "$EX/model-bert-chain.json"
done
# the disk full to the last byte (dd stops when nothing is left)
dd if=/dev/zero of="$mnt/filler" bs=1M count=64 2>/dev/null
call delete-at-once 204 '' DELETE /v1/models/1 ""
problem full-507 507 "the store is full" POST /v1/models "" "$EX/model-bert-chain.json"
problem full-not-ready 503 "not-ready" GET /readyz ""
call full-healthz 200 '"ok"' GET /healthz ""
call delete-again 204 '' DELETE /v1/models/2 ""
call full-list 200 '"items"' GET /v1/models ""
rm -f "$mnt/filler"
if until_true $((300 * SLOW)) sh -c "curl -s -m 10 http://127.0.0.1:$port/readyz | grep -q '\"ready\"'"; then ok; else
	bad "ready-after: /readyz still not ready once the disk has room: $(curl -s -m 10 "http://127.0.0.1:$port/readyz")"; fi
if [ -f "$DB-reserve" ]; then ok; else bad "reserve-after: no reserve file once the disk has room"; fi
call upload-after 201 '"id":' POST /v1/models "" "$EX/model-bert-chain.json"
stop_uniapd
pid=
if [ "$stopped" -eq 0 ]; then ok; else bad "stop: exit $stopped: $(tail -c 300 "$tmp/log")"; fi
summary diskfull
