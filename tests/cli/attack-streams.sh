#!/bin/sh
# tests/cli/attack-streams.sh - long-polls and event streams under a greedy
# tenant (issue: hardening, round two, item 2): uniapd --max-streams 8
# --max-streams-per-tenant 3.  Tenant A opens 3 event streams and is refused
# a 4th long-poll or stream with 429, Retry-After and
# problem:too-many-streams, while tenant B still opens its 3 beside them.
# Then A's clients die without a word (kill -9: their sockets close): uniapd
# notices on the suspended connections and gives the slots back (streams
# never end by themselves); the same for 3 long-polls of 60 s, counted as
# gone, so A can wait again.  The waits are on
# queued jobs that cannot start (--jobs 1 --spare-jobs 0, A's heavy MILP job
# holds the one job thread) and on the service's own counters
# (uniapd_http_streams_open, _gone_total), with generous deadlines; whether a
# client still runs is asked of its process, never of the time.
# Needs curl.  Prints "attack-streams: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid=
bgs=
trap 'for b in $bgs; do kill -9 "$b" 2>/dev/null; done; if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/http.inc"

# metric NAME: its value in GET /metrics
metric() { curl -s -m 30 "http://127.0.0.1:$port/metrics" | tr -d '\r' | awk -v n="$1" '$1 == n { print $2 }'; }
# open_is N: uniapd counts N long-polls and event streams holding a slot
open_is() { [ "$(metric uniapd_http_streams_open)" = "$1" ]; }
# poll KEY JOB OUT: a background long-poll of 60 s; its pid in $last
poll() {
	curl -s -m 120 -o "$3" -w '%{http_code}' -H "Authorization: Bearer $1" \
		"http://127.0.0.1:$port/v1/jobs/$2?wait=60" >"$3.code" 2>/dev/null &
	last=$!
	bgs="$bgs $last"
}

check tenant-a 0 "uk_" -- "$UNIAPD" tenant add ta --db "$DB"
A=$(tail -n 1 "$tmp/out")
check tenant-b 0 "uk_" -- "$UNIAPD" tenant add tb --db "$DB"
B=$(tail -n 1 "$tmp/out")
check bad-per-tenant 2 "--max-streams-per-tenant: must be an integer" -- \
	"$UNIAPD" --max-streams-per-tenant 0 --db "$DB"
if ! start_uniapd --jobs 1 --spare-jobs 0 --workers 1 --no-cache --grace 0 --max-streams 8 \
	--max-streams-per-tenant 3; then
	bad "start: $(head -c 300 "$tmp/log")"
	summary attack-streams
	exit 1
fi

# A's heavy job (MILPs of 5 s on the wide T5, every candidate solved: minutes) holds the job thread; the next ones queue
call wide-a 201 '"kind":"model"' POST /v1/models "$A" tests/data/t5-wide.json
WA=$(sed -n 's/.*"id":\([0-9]*\).*/\1/p' "$tmp/body")
printf '{"cluster":"dgx-a100-x2","model":%s,"batch":64,"time_limit_s":5,"every_candidate":true}' "$WA" >"$tmp/h.json"
call heavy 202 '"id":' POST /v1/plans "$A" "$tmp/h.json"
H=$(jid)
printf '{"cluster":"enva","model":"bert-huge","batch":4}' >"$tmp/s.json"
call queued-a 202 '"id":' POST /v1/plans "$A" "$tmp/s.json"
QA=$(jid)
call queued-b 202 '"id":' POST /v1/plans "$B" "$tmp/s.json"
QB=$(jid)

# stream KEY JOB OUT: a background event stream (ends only when killed); its pid in $last
stream() {
	curl -s -N -m 900 -o "$3" -H "Authorization: Bearer $1" "http://127.0.0.1:$port/v1/jobs/$2/events" \
		2>/dev/null &
	last=$!
	bgs="$bgs $last"
}
# three HOW KEY JOB OUT: three of HOW (stream or poll), their pids in $pids
three() {
	pids=
	for i in 1 2 3; do
		"$1" "$2" "$3" "$4$i"
		pids="$pids $last"
	done
}
# alive PID...: every one still runs
alive() { for p in "$@"; do kill -0 "$p" 2>/dev/null || return 1; done; }

# ---- A takes its share with event streams (they never expire); the next is a 429 for A alone
three stream "$A" "$QA" "$tmp/a"
pa=$pids
if until_true 600 open_is 3; then ok; else bad "a-open: $(metric uniapd_http_streams_open) open, want 3"; fi
call a-over-share 429 "too-many-streams" GET "/v1/jobs/$QA?wait=5" "$A"
if grep -qi '^Retry-After: ' "$tmp/hdr"; then ok; else bad "a-over-share: no Retry-After"; fi
call a-over-share-stream 429 "its share of the 8" GET "/v1/jobs/$QA/events" "$A"
if [ "$(metric uniapd_http_streams_tenant_refused_total)" = 2 ]; then ok; else
	bad "tenant-refused metric: $(metric uniapd_http_streams_tenant_refused_total)"; fi
# A's plain requests are not streams: still answered
call a-get 200 '"state":"queued"' GET "/v1/jobs/$QA" "$A"

# ---- B's share is B's: three streams beside A's three
three stream "$B" "$QB" "$tmp/b"
pb=$pids
if until_true 600 open_is 6; then ok; else bad "b-open: $(metric uniapd_http_streams_open) open, want 6"; fi
if until_true 600 grep -qs '"state":"queued"' "$tmp/b1"; then ok; else bad "b-stream: $(head -c 300 "$tmp/b1")"; fi
call b-over-share 429 "too-many-streams" GET "/v1/jobs/$QB?wait=5" "$B"

# ---- A's clients vanish: their slots come back (streams do not end by themselves)
# shellcheck disable=SC2086
kill -9 $pa 2>/dev/null
if until_true 600 open_is 3; then ok; else bad "gone: $(metric uniapd_http_streams_open) open, want 3"; fi
gone=$(metric uniapd_http_streams_gone_total)
if [ "${gone:-0}" -ge 3 ]; then ok; else bad "gone metric: ${gone:-none}"; fi
# ---- and long-polls: A's three of 60 s, dropped at once, come back as gone too (were they to
# run out their 60 s instead, the count of gone ones would not grow)
three poll "$A" "$QA" "$tmp/p"
pa=$pids
if until_true 600 open_is 6; then ok; else bad "a-polls-open: $(metric uniapd_http_streams_open) open, want 6"; fi
# shellcheck disable=SC2086
kill -9 $pa 2>/dev/null
if until_true 600 open_is 3; then ok; else bad "polls-gone: $(metric uniapd_http_streams_open) open, want 3"; fi
gone=$(metric uniapd_http_streams_gone_total)
if [ "${gone:-0}" -ge 6 ]; then ok; else bad "polls-gone metric: ${gone:-none}"; fi
# and A may wait again (a short poll: 200 with the queued job once its 1 s is over)
call a-again 200 '"state":"queued"' GET "/v1/jobs/$QA?wait=1" "$A"
curl -s -m 30 -o /dev/null "http://127.0.0.1:$port/healthz" && ok || bad "healthz"

# ---- B's streams are intact
# shellcheck disable=SC2086
if alive $pb; then ok; else bad "B's streams ended: $(tail -c 200 "$tmp/b1")"; fi

for id in $QB; do req DELETE "/v1/jobs/$id" "$B"; done
for id in $QA $H; do req DELETE "/v1/jobs/$id" "$A"; done
summary attack-streams
