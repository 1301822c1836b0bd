#!/bin/sh
# tests/cli/memory.sh - uniapd gives memory back after a burst: three heavy
# evaluations (bench/heavy-evaluate.sh with 4,096 devices, about 2 s and a
# peak of some 200 MB each, on the offload threads) and then, within a
# generous deadline, its resident memory is back under 96 MB (the main loop's
# malloc_trim, server/main.c; before it the process kept about 200-400 MB for
# good).  Sanitized builds have their own allocator: skipped there, with a line
# saying so.  Prints "memory: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid=
trap 'if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/http.inc"

if [ -n "${UNIAP_SANITIZED:-}" ]; then
	echo "memory: a sanitizer's allocator keeps its own pools: skipped"
	echo "memory: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
HEAVY_DEVICES=4096 sh bench/heavy-evaluate.sh >"$tmp/heavy.json"
if ! start_uniapd --no-auth; then
	bad "uniapd did not come up: $(head -c 300 "$tmp/log")"
	summary memory
	exit 1
fi
kb() { awk -v k="$1" '$1 == k ":" { print $2 }' "/proc/$pid/status"; }
for i in 1 2 3; do
	call "heavy-$i" 200 '' POST /v1/evaluate "" "$tmp/heavy.json"
done
peak=$(kb VmHWM)
if [ "$peak" -gt $((96 * 1024)) ]; then ok; else bad "peak: only $peak kB: the burst did not take memory"; fi
if until_true 300 sh -c "[ \$(awk '\$1 == \"VmRSS:\" { print \$2 }' /proc/$pid/status) -lt $((96 * 1024)) ]"; then ok; else
	bad "given-back: resident $(kb VmRSS) kB 30 s after the burst (peak $peak kB)"; fi
call healthz 200 '"ok"' GET /healthz ""
stop_uniapd
pid=
if [ "$stopped" -eq 0 ]; then ok; else bad "stop: exit $stopped: $(tail -c 300 "$tmp/log")"; fi
summary memory
