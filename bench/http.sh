#!/bin/sh
# bench/http.sh [UNIAPD] - HTTP figures of uniapd (make bench-http).  Starts
# UNIAPD (default build/uniapd; built beforehand, this script builds and
# installs nothing) on a free loopback port with a temporary database and one
# tenant, then loads it with wrk (Debian package wrk, deps/debian-bench.txt:
# sh scripts/install-deps.sh bench):
#   (a) GET /healthz                    (no store, no auth)
#   (b) GET of one stored resource     (bearer auth + a store read)
# and prints one line each:
#   http: PATH N req/s p99 X ms (p50 Y ms, server CPU Z us/req)
# (server CPU: uniapd's user + system time over the run / requests, from /proc)
# Figures, not assertions: the machine is shared and wrk runs on the same
# cores as the server, so compare runs made on one machine only.
#
# Environment: THREADS (wrk threads, 2), CONNS (connections, 64), DURATION
# (10s), RESOURCE (cluster | job: what (b) reads), LOG (where uniapd's stderr,
# the access log, goes; default a file in the temporary folder).
set -eu
UNIAPD=${1:-build/uniapd}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
DURATION=${DURATION:-10s}
# (b)'s resource: "cluster" = GET /v1/clusters/{id} of an uploaded profile;
# "job" = GET /v1/jobs/{id} of a finished POST /v1/plans job.
RESOURCE=${RESOURCE:-job}
LUA=bench/wrk-auth.lua

command -v wrk >/dev/null 2>&1 || { echo "bench/http.sh: wrk not found; run: sh scripts/install-deps.sh bench" >&2; exit 2; }
command -v curl >/dev/null 2>&1 || { echo "bench/http.sh: curl not found" >&2; exit 2; }
[ -x "$UNIAPD" ] || { echo "bench/http.sh: $UNIAPD: not built (make)" >&2; exit 2; }

. bench/lib.inc
LOG=${LOG:-$tmp/uniapd.log}
DB=$tmp/uniap.db
# the key is the last line `uniapd tenant add` prints
KEY=$("$UNIAPD" tenant add bench --db "$DB" | tail -n 1)
bench_start bench/http.sh "$UNIAPD" "$tmp/start.log" --db "$DB"
H="Authorization: Bearer $KEY"
J="Content-Type: application/json"

# the store-backed resource to read; prints its path
setup_cluster() {
	curl -sf -H "$H" -H "$J" --data-binary @schema/examples/cluster-8gpu-nvlink.json "$U/v1/clusters" >"$tmp/created"
	id=$(sed -n 's/^{"id":\([0-9]*\).*/\1/p' "$tmp/created")
	echo "/v1/clusters/$id"
}
setup_job() {
	curl -sf -H "$H" -H "$J" -d '{"cluster":"dgx-a100","model":"bert-huge","batch":8}' "$U/v1/plans" >"$tmp/created"
	id=$(sed -n 's/^{"id":\([0-9]*\).*/\1/p' "$tmp/created")
	# wait for the solve to end so that it does not share the cores with the load
	i=0
	until curl -sf -H "$H" "$U/v1/jobs/$id" | grep -Eq '"state":"(succeeded|failed|canceled)"'; do
		i=$((i + 1))
		[ $i -lt 600 ] || { echo "bench/http.sh: job $id still not finished after 60 s" >&2; return 1; }
		sleep 0.1
	done
	echo "/v1/jobs/$id"
}
RES=$(setup_$RESOURCE) || { echo "bench/http.sh: cannot create the $RESOURCE resource" >&2; exit 1; }
case $RES in */) echo "bench/http.sh: no id in: $(head -c 300 "$tmp/created")" >&2; exit 1 ;; esac
curl -sf -o /dev/null -H "$H" "$U$RES" || { echo "bench/http.sh: GET $RES does not answer 2xx" >&2; exit 1; }

# restart uniapd with its access log in $LOG, so that the set-up requests are out of it
kill -TERM "$pid"
wait "$pid" || true
pid=
# shellcheck disable=SC2086
"$UNIAPD" --listen "127.0.0.1:$port" --db "$DB" ${UNIAPD_ARGS:-} 2>"$LOG" >/dev/null &
pid=$!
i=0
until curl -sf -o /dev/null "$U/healthz"; do
	i=$((i + 1))
	[ $i -lt 100 ] && kill -0 "$pid" 2>/dev/null || { echo "bench/http.sh: uniapd did not restart" >&2; exit 1; }
	sleep 0.1
done

# uniapd's CPU time so far (user + system) in clock ticks; 0 without /proc
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0
}

# load PATH [wrk args...]: wrk's --latency output, summarised on one line,
# with uniapd's CPU time per request (steadier than req/s on a shared machine)
load() {
	path=$1
	shift
	c0=$(cpu_ticks)
	wrk -t "$THREADS" -c "$CONNS" -d "$DURATION" --latency "$@" "$U$path" >"$tmp/wrk.out" 2>&1 ||
		{ echo "bench/http.sh: wrk failed: $(cat "$tmp/wrk.out")" >&2; exit 1; }
	c1=$(cpu_ticks)
	awk -v path="$path" -v ticks=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '
		function ms(v) {
			if (v ~ /us$/) return (v + 0) / 1000
			if (v ~ /ms$/) return v + 0
			if (v ~ /m$/) return (v + 0) * 60000
			if (v ~ /s$/) return (v + 0) * 1000
			return v + 0
		}
		/^ *99%/ { p99 = ms($2) }
		/^ *50%/ { p50 = ms($2) }
		/^Requests\/sec:/ { rps = $2 }
		/ requests in / { n = $1 }
		/Non-2xx or 3xx responses:/ { bad = $NF }
		/Socket errors:/ { sub(/.*Socket errors: */, ""); errs = $0 }
		END {
			line = sprintf("http: %s %.0f req/s p99 %.2f ms (p50 %.2f ms", path, rps, p99, p50)
			if (n > 0 && ticks > 0) line = line sprintf(", server CPU %.0f us/req", ticks / hz * 1e6 / n)
			line = line ")"
			if (bad != "") line = line " non-2xx " bad
			if (errs != "") line = line " socket errors: " errs
			print line
		}' "$tmp/wrk.out"
}

echo "uniapd $UNIAPD on $U; wrk -t $THREADS -c $CONNS -d $DURATION; $(nproc) cores"
load /healthz
export UNIAP_BENCH_KEY="$KEY"
load "$RES" -s "$LUA"
