#!/bin/sh
# tests/cli/uniapd.sh - uniapd against its store: the tenant commands (the key
# printed once as the last line, never listed, never stored in plain text),
# the command line (getopt_long: bad options exit 2), bearer auth end to end
# through GET /v1/whoami, --no-auth on loopback only, --listen with a host
# name and IPv6 literals, the build and process metrics, a database newer
# than the binary, and SIGTERM.  Needs curl; the newer-database check needs
# the sqlite3 command and the IPv6 checks a ::1 interface, each skipped
# (with a note) without it.
# Prints "uniapd: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/var/uniap.db" # var/ does not exist yet: uniapd makes it
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# get NAME WANT_STATUS NEEDLE PATH [KEY]: GET PATH, the status and a substring of the body
get() {
	name=$1 want=$2 needle=$3 path=$4
	if [ $# -ge 5 ]; then
		code=$(curl -s -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' -H "Authorization: Bearer $5" \
			"http://127.0.0.1:$port$path")
	else
		code=$(curl -s -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' "http://127.0.0.1:$port$path")
	fi
	if [ "$code" != "$want" ]; then
		bad "$name: status $code, want $want; body: $(head -c 300 "$tmp/body")"
	elif [ -n "$needle" ] && ! grep -qF -- "$needle" "$tmp/body" "$tmp/hdr"; then
		bad "$name: response lacks '$needle'; body: $(head -c 300 "$tmp/body")"
	else
		ok
	fi
}

# the tenant commands
check help-tenant 0 "usage: uniapd tenant" -- "$UNIAPD" tenant --help
check help-tenant-add 0 "usage: uniapd tenant add" -- "$UNIAPD" tenant add --help
check help-tenant-list 0 "usage: uniapd tenant list" -- "$UNIAPD" tenant list --help
check help-tenant-revoke 0 "usage: uniapd tenant revoke" -- "$UNIAPD" tenant revoke --help
check help-main 0 "--no-auth" -- "$UNIAPD" --help
check help-retention 0 "--job-retention S" -- "$UNIAPD" --help
check bad-retention 2 "--job-retention: must be a number" -- "$UNIAPD" --job-retention -1 --db "$DB"
check bad-retention-text 2 "--job-retention: must be a number" -- "$UNIAPD" --job-retention 30d --db "$DB"
check bad-cors-path 2 "--cors-origin: must be scheme://host" -- "$UNIAPD" --cors-origin http://ui.example/ --db "$DB"
check bad-cors-scheme 2 "--cors-origin: must be scheme://host" -- "$UNIAPD" --cors-origin ui.example --db "$DB"
check bad-max-streams 2 "--max-streams: must be an integer" -- "$UNIAPD" --max-streams 0 --db "$DB"
check version 0 "uniapd " -- "$UNIAPD" --version
check bad-evaluate-memory 2 "--evaluate-memory" -- "$UNIAPD" --evaluate-memory 0 --db "$DB"
# getopt_long: unknown options, missing values and stray arguments are exit 2
check bad-option 2 "unknown or incomplete option '--frob'" -- "$UNIAPD" --frob --db "$DB"
check missing-value 2 "unknown or incomplete option '--listen'" -- "$UNIAPD" --db "$DB" --listen
check stray-argument 2 "unexpected argument 'extra'" -- "$UNIAPD" --db "$DB" extra
check bad-jobs 2 "--jobs: must be an integer" -- "$UNIAPD" --jobs 0 --db "$DB"
check bad-listen-port 2 "port must be 0..65535" -- "$UNIAPD" --listen 127.0.0.1:70000 --db "$DB"
check bad-listen-v6 2 "goes in brackets" -- "$UNIAPD" --listen ::1:8080 --db "$DB"
check bad-listen-bracket 2 "must be [IPV6]:PORT" -- "$UNIAPD" --listen '[::1]8080' --db "$DB"
check help-listen 0 "[::1]:8080" -- "$UNIAPD" --help
check tenant-bad-option 2 "uniapd tenant list: unknown or incomplete option '--max-jobs'" -- \
	"$UNIAPD" tenant list --max-jobs 3 --db "$DB"
check tenant-bad-max-jobs 2 "--max-jobs: must be an integer" -- "$UNIAPD" tenant add carol --max-jobs x --db "$DB"
check tenant-two-names 2 "unexpected argument" -- "$UNIAPD" tenant revoke carol dave --db "$DB"
check tenant-add 0 "uk_" -- "$UNIAPD" tenant add alice --db "$DB"
key=$(tail -n 1 "$tmp/out")
case $key in uk_*) ok ;; *) bad "tenant-add: last line is '$key', not the key" ;; esac
check tenant-add-bob 0 "uk_" -- "$UNIAPD" tenant add bob --db "$DB"
bobkey=$(tail -n 1 "$tmp/out")
check tenant-dup 1 "already exists" -- "$UNIAPD" tenant add alice --db "$DB"
check tenant-bad-name 2 "NAME: must be" -- "$UNIAPD" tenant add 'no spaces' --db "$DB"
check tenant-no-name 2 "NAME: required" -- "$UNIAPD" tenant add --db "$DB"
check tenant-unknown-cmd 2 "unknown command" -- "$UNIAPD" tenant frob --db "$DB"
check tenant-revoke-unknown 1 "no tenant named" -- "$UNIAPD" tenant revoke carol --db "$DB"
check tenant-list 0 "alice" -- "$UNIAPD" tenant list --db "$DB"
if grep -q "bob" "$tmp/out"; then ok; else bad "tenant-list: bob missing"; fi
if grep -q "uk_" "$tmp/out"; then bad "tenant-list: shows a key"; else ok; fi
n=$(grep -c -- "$key" "$DB" "$DB-wal" 2>/dev/null | awk -F: '{ s += $NF } END { print s + 0 }')
if [ "$n" -eq 0 ]; then ok; else bad "db: the plain key is stored"; fi

# auth end to end
if start_uniapd; then
	ok
	get healthz 200 "" /healthz
	get readyz 200 "" /readyz
	get whoami-alice 200 '"tenant":"alice"' /v1/whoami "$key"
	get whoami-none 401 "application/problem+json" /v1/whoami
	get whoami-wrong 401 "application/problem+json" /v1/whoami "uk_0000"
	get whoami-bob 200 '"tenant":"bob"' /v1/whoami "$bobkey"
	check tenant-revoke 0 "revoked" -- "$UNIAPD" tenant revoke bob --db "$DB"
	check tenant-list-revoked 0 "bob" -- "$UNIAPD" tenant list --db "$DB"
	if grep "bob" "$tmp/out" | awk '{ print $4 }' | grep -q "Z$"; then ok; else bad "tenant-list: bob not shown revoked"; fi
	# quotas: set changes only those given; list shows them
	check tenant-set 0 'quotas changed' -- "$UNIAPD" tenant set alice --db "$DB" --max-jobs 7 --max-job-budget 90.5
	check tenant-set-none 0 'nothing changed' -- "$UNIAPD" tenant set alice --db "$DB"
	check tenant-set-unknown 1 'no tenant named "carol"' -- "$UNIAPD" tenant set carol --db "$DB" --max-jobs 1
	check tenant-set-bad 2 'max-job-budget' -- "$UNIAPD" tenant set alice --db "$DB" --max-job-budget x
	check tenant-list-quotas 0 "MAX-JOB-BUDGET" -- "$UNIAPD" tenant list --db "$DB"
	if grep "alice" "$tmp/out" | awk '{ print $5, $7 }' | grep -qx "7 90.5"; then ok; else
		bad "tenant-list: alice's quotas: $(grep alice "$tmp/out")"; fi
	# an accepted key is remembered for at most 1 s (docs/http.md): then the revocation holds
	sleep 1.2
	get whoami-revoked 403 'tenant \"bob\" was revoked' /v1/whoami "$bobkey"
	if grep -qi "^www-authenticate" "$tmp/hdr"; then bad "whoami-revoked: a 403 asks for no other key"; else ok; fi
	get whoami-revoked-type 403 "application/problem+json" /v1/whoami "$bobkey"
	get whoami-alice-still 200 '"tenant":"alice"' /v1/whoami "$key"
	stop_uniapd
	if [ "$stopped" -eq 0 ]; then ok; else bad "sigterm: exit $stopped, want 0"; fi
	if grep -q '"msg":"stopped"' "$tmp/log"; then ok; else bad "sigterm: no stopped line"; fi
else
	bad "start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	pid=
fi

# metric_value NAME: the value of the sample NAME (labels included) in $tmp/metrics
metric_value() {
	awk -v n="$1" '$1 == n { print $2; exit }' "$tmp/metrics"
}

# --no-auth: loopback only, acts for the default tenant
if start_uniapd --no-auth; then
	ok
	get no-auth-whoami 200 '"tenant":"default"' /v1/whoami
	# a second uniapd on the same port: why it cannot listen, and never libmicrohttpd's "port 0"
	check port-taken 1 "port $port: Address already in use (another process listens there" -- \
		"$UNIAPD" --no-auth --listen "127.0.0.1:$port" --db "$tmp/other.db"
	if grep -q 'port 0' "$tmp/err"; then bad "port-taken: says port 0: $(cat "$tmp/err")"; else ok; fi
	# and the uniapd's version matches its build info (below)
	check version-build 0 "uniapd " -- "$UNIAPD" --version
	# X-Request-Id: the client's echoed and logged; an odd one, or none, replaced by one made here
	rid() { curl -s -o /dev/null -D - "$@" "http://127.0.0.1:$port/healthz" | tr -d '\r' | sed -n 's/^X-Request-Id: //Ip'; }
	r=$(rid -H "X-Request-Id: job-7.try_2")
	if [ "$r" = job-7.try_2 ]; then ok; else bad "request-id-echo: '$r'"; fi
	if until_true 600 grep -q '"request_id":"job-7.try_2"' "$tmp/log"; then ok; else bad "request-id-logged"; fi
	r=$(rid -H "X-Request-Id: two words")
	if printf '%s' "$r" | grep -qx '[0-9a-f]\{16\}'; then ok; else bad "request-id-odd: '$r'"; fi
	r=$(rid) r2=$(rid)
	if printf '%s' "$r" | grep -qx '[0-9a-f]\{16\}' && [ "$r" != "$r2" ]; then ok; else bad "request-id-made: '$r' '$r2'"; fi
	# gzip when asked: the OpenAPI document (over 100 KB) comes compressed with a weak ETag that
	# still answers 304, and the same bytes once inflated; not when refused (q=0) or not asked
	O=http://127.0.0.1:$port/v1/openapi.json
	curl -s -D "$tmp/h.plain" -o "$tmp/b.plain" "$O"
	curl -s -D "$tmp/h.gz" -o "$tmp/b.gz" -H 'Accept-Encoding: br, gzip' "$O"
	if grep -qi '^Content-Encoding: gzip' "$tmp/h.gz" && ! grep -qi '^Content-Encoding' "$tmp/h.plain" &&
		gzip -dc <"$tmp/b.gz" | cmp -s - "$tmp/b.plain" &&
		[ "$(wc -c <"$tmp/b.gz")" -lt "$(wc -c <"$tmp/b.plain")" ]; then ok; else
		bad "gzip: $(grep -i 'content-encoding' "$tmp/h.gz" "$tmp/h.plain")"; fi
	if grep -qi '^Vary: Accept-Encoding' "$tmp/h.gz" && grep -qi '^ETag: W/"' "$tmp/h.gz"; then ok; else
		bad "gzip-headers: $(tr '\r\n' '  ' <"$tmp/h.gz")"; fi
	etag=$(sed -n 's/^ETag: //Ip' "$tmp/h.gz" | tr -d '\r')
	c=$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept-Encoding: gzip' -H "If-None-Match: $etag" "$O")
	if [ "$c" = 304 ]; then ok; else bad "gzip-304: $c"; fi
	if curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip;q=0, identity' "$O" | grep -qi '^Content-Encoding'; then
		bad "gzip-refused: compressed anyway"; else ok; fi
	# build info and the standard process metrics, with sane values
	curl -s -o "$tmp/metrics" "http://127.0.0.1:$port/metrics"
	now=$(date +%s)
	info=$(grep '^uniapd_build_info{version="[A-Za-z0-9._+-]*",git="[A-Za-z0-9._+-]*"} 1$' "$tmp/metrics")
	if [ -n "$info" ]; then ok; else bad "metrics: no uniapd_build_info line"; fi
	commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
	case $info in *"git=\"$commit\""*) ok ;; *) bad "metrics: build info '$info', want git=\"$commit\" (a stale build? make)" ;; esac
	v=$(metric_value process_resident_memory_bytes)
	if [ -n "$v" ] && [ "$v" -gt 1000000 ] && [ "$v" -lt 100000000000 ]; then ok; else bad "metrics: process_resident_memory_bytes '$v'"; fi
	v=$(metric_value process_open_fds)
	if [ -n "$v" ] && [ "$v" -ge 3 ] && [ "$v" -lt 100000 ]; then ok; else bad "metrics: process_open_fds '$v'"; fi
	v=$(metric_value process_start_time_seconds)
	if [ -n "$v" ] && awk -v v="$v" -v now="$now" 'BEGIN { exit !(v > now - 600 && v <= now + 1) }'; then ok
	else bad "metrics: process_start_time_seconds '$v', now $now"; fi
	v=$(metric_value process_cpu_seconds_total)
	if [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v >= 0 && v < 3600) }'; then ok; else bad "metrics: process_cpu_seconds_total '$v'"; fi
	if grep -q '^# TYPE process_cpu_seconds_total counter$' "$tmp/metrics"; then ok; else bad "metrics: process_cpu_seconds_total is not a counter"; fi
	stop_uniapd
	if [ "$stopped" -eq 0 ]; then ok; else bad "no-auth sigterm: exit $stopped, want 0"; fi
else
	bad "no-auth start: $(head -c 300 "$tmp/log")"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	pid=
fi
check no-auth-public 2 "--no-auth" -- "$UNIAPD" --no-auth --listen 0.0.0.0:0 --db "$DB"

# the operator's metrics: with a token file /metrics needs it as a bearer credential
printf 'op-metrics-token-0123456789\n' >"$tmp/metrics.token"
if start_uniapd --no-auth --metrics-token-file "$tmp/metrics.token"; then
	ok
	get metrics-no-token 401 "metrics token" /metrics
	get metrics-wrong-token 401 "metrics token" /metrics op-metrics-token-0123456788
	get metrics-token 200 "uniapd_build_info" /metrics op-metrics-token-0123456789
	get metrics-health-open 200 '"ok"' /healthz
	stop_uniapd
else
	bad "metrics-token start: $(head -c 300 "$tmp/log")"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	pid=
fi
printf 'short\n' >"$tmp/short.token"
check metrics-token-short 2 "must be a token of 16 to 256" -- "$UNIAPD" --listen 127.0.0.1:0 --db "$DB" \
	--metrics-token-file "$tmp/short.token"
check metrics-token-missing 2 "no-such.token" -- "$UNIAPD" --listen 127.0.0.1:0 --db "$DB" \
	--metrics-token-file "$tmp/no-such.token"
check no-auth-v6-any 2 "--no-auth: only with a loopback" -- "$UNIAPD" --no-auth --listen '[::]:0' --db "$DB"

# start_at LISTEN URLHOST ARGS...: uniapd on --listen LISTEN, port from its log,
# up when GET http://URLHOST:PORT/healthz answers; sets pid and port
start_at() {
	listen=$1 urlhost=$2
	shift 2
	: >"$tmp/log"
	"$UNIAPD" --listen "$listen" --db "$DB" "$@" 2>"$tmp/log" &
	pid=$!
	port=
	i=0
	while [ $i -lt 100 ] && [ -z "$port" ]; do
		port=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$tmp/log" | head -n 1)
		kill -0 "$pid" 2>/dev/null || break
		[ -n "$port" ] || sleep 0.1
		i=$((i + 1))
	done
	[ -n "$port" ] || return 1
	i=0
	while [ $i -lt 50 ]; do
		curl -gs -o /dev/null "http://$urlhost:$port/healthz" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# listen_check LABEL LISTEN URLHOST ARGS...: starts there, GET /v1/whoami, stops cleanly
listen_check() {
	label=$1 at=$2 urlhost=$3
	shift 3
	if start_at "$at" "$urlhost" "$@"; then
		code=$(curl -gs -o "$tmp/body" -w '%{http_code}' "http://$urlhost:$port/v1/whoami")
		if [ "$code" = 200 ] && grep -q '"tenant":"default"' "$tmp/body"; then ok
		else bad "$label: whoami status $code: $(head -c 200 "$tmp/body")"; fi
		stop_uniapd
		if [ "$stopped" -eq 0 ]; then ok; else bad "$label: exit $stopped"; fi
	else
		bad "$label: did not come up on $at: $(head -c 300 "$tmp/log")"
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
		pid=
	fi
}

# --listen with a host name: localhost resolves to loopback only, so --no-auth takes it
if getent hosts localhost >/dev/null 2>&1; then
	listen_check listen-localhost localhost:0 127.0.0.1 --no-auth
else
	echo "uniapd: \"localhost\" does not resolve here (no /etc/hosts entry): --listen localhost is not checked"
fi
# IPv6 literals, when this machine has an IPv6 loopback
if grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6 2>/dev/null; then
	listen_check listen-v6-loopback '[::1]:0' '[::1]' --no-auth
	# [::] listens dual stack: IPv6 and IPv4 clients (keys needed: not loopback)
	if start_at '[::]:0' '[::1]'; then
		code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/whoami")
		if [ "$code" = 401 ]; then ok; else bad "listen-v6-any: IPv4 client got $code, want 401"; fi
		stop_uniapd
		if [ "$stopped" -eq 0 ]; then ok; else bad "listen-v6-any: exit $stopped"; fi
	else
		bad "listen-v6-any: did not come up: $(head -c 300 "$tmp/log")"
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
		pid=
	fi
else
	echo "note: no IPv6 loopback (::1) on this machine, the [::1] and [::] --listen checks skipped"
fi

# a database newer than this binary: exit 1 with the store's message, no listener
if command -v sqlite3 >/dev/null 2>&1; then
	sqlite3 "$DB" "INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 0)"
	check newer-db 1 "is newer than this uniapd" -- "$UNIAPD" --listen 127.0.0.1:0 --db "$DB"
	if grep -q '"msg":"listening"' "$tmp/err"; then bad "newer-db: listened"; else ok; fi
else
	echo "note: sqlite3 not installed, newer-database check skipped"
fi

summary uniapd
