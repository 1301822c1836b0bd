#!/bin/sh
# tests/cli/openapi.sh - GET /v1/openapi.json from a real uniapd, started in
# a folder that holds no schema/ (the document is compiled in, byte for byte
# schema/openapi.json): 200, application/json,
# openapi "3.1.x" declared, and every route of server/routes.h's UNIAPD_ROUTES
# and server/http.c's built-ins under "paths" with its method.  grep/sed/awk
# only (no python or jq); relies on schema/openapi.json being printed with
# 2-space indentation (paths at 4 spaces, methods at 6).  GET /ui and GET /ui/
# are described in words (info.description; tests/cli/openapi-lint.sh says why).
# Needs curl.
# Prints "openapi: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# uniapd runs from the temporary folder: nothing there to read the document from
root=$(pwd)
case $UNIAPD in /*) ;; *) UNIAPD=$root/$UNIAPD ;; esac
cd "$tmp" || exit 1
start_uniapd --no-auth
started=$?
cd "$root" || exit 1
if [ "$started" -ne 0 ]; then
	bad "start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	summary openapi
	exit 1
fi

code=$(curl -s -o "$tmp/doc" -D "$tmp/hdr" -w '%{http_code}' "http://127.0.0.1:$port/v1/openapi.json")
if [ "$code" = 200 ]; then ok; else bad "get: status $code; body: $(head -c 300 "$tmp/doc")"; fi
if grep -qi '^Content-Type: application/json' "$tmp/hdr"; then ok; else bad "get: content type $(grep -i '^Content-Type' "$tmp/hdr")"; fi
if cmp -s "$tmp/doc" schema/openapi.json; then ok; else bad "get: the served document differs from schema/openapi.json (rebuild)"; fi

# JSON shape, as far as grep goes: an object from the first byte to the last,
# braces and brackets balanced outside strings (awk strips the strings first)
if [ "$(head -c 1 "$tmp/doc")" = "{" ] && [ "$(tr -d ' \n\t\r' <"$tmp/doc" | tail -c 1)" = "}" ]; then ok; else bad "json: not an object"; fi
bal=$(sed 's/\\\\//g; s/\\"//g; s/"[^"]*"//g' "$tmp/doc" | awk '
	{ for (i = 1; i <= length($0); i++) { c = substr($0, i, 1)
		if (c == "{" || c == "[") d++; else if (c == "}" || c == "]") { d--; if (d < 0) neg = 1 } } }
	END { print (d == 0 && !neg) ? "ok" : "bad" }')
if [ "$bal" = ok ]; then ok; else bad "json: unbalanced braces"; fi
if grep -q '^  "openapi": "3\.1\.[0-9]*",\{0,1\}$' "$tmp/doc"; then ok; else bad "openapi: 3.1 not declared"; fi
if grep -q '"bearer"' "$tmp/doc" && grep -q '"scheme": "bearer"' "$tmp/doc"; then ok; else bad "security: no bearer scheme"; fi
if grep -q '"application/problem+json"' "$tmp/doc"; then ok; else bad "problems: no application/problem+json"; fi

# every registered route: "PATH" at 4 spaces under paths, "method" at 6 inside it
routes=$(sed -n 's/^[[:space:]]*{"\([A-Z]*\)", "\(\/[^"]*\)",.*/\1 \2/p' server/routes.h server/http.c)
n=$(printf '%s\n' "$routes" | grep -c .)
if [ "$n" -ge 16 ]; then ok; else bad "routes: only $n found in server/routes.h and server/http.c"; fi
printf '%s\n' "$routes" >"$tmp/routes"
while read -r method path; do
	m=$(echo "$method" | tr 'A-Z' 'a-z')
	case $path in
	/ui | /ui/)
		# said in words (info.description): a redirect has no 2xx answer and a
		# documented path has no trailing slash (redocly's recommended rules)
		if grep -q "GET $path is " "$tmp/doc"; then ok; else bad "paths: $method $path is not described in words"; fi
		continue
		;;
	esac
	if awk -v p="    \"$path\": {" -v m="      \"$m\": {" '
		/^  "paths": \{$/ { inpaths = 1; next }
		inpaths && /^  [^ ]/ { inpaths = 0 }
		inpaths && $0 == p { inpath = 1; next }
		inpath && /^    [^ ]/ { inpath = 0 }
		inpath && $0 == m { found = 1 }
		END { exit found ? 0 : 1 }' "$tmp/doc"; then
		ok
	else
		bad "paths: $method $path is not described"
	fi
done <"$tmp/routes"

# and nothing beyond them: every path in the document is a registered route
sed -n '/^  "paths": {$/,/^  }/s/^    "\(\/[^"]*\)": {$/\1/p' "$tmp/doc" >"$tmp/docpaths"
while read -r path; do
	if awk -v p="$path" '$2 == p { f = 1 } END { exit f ? 0 : 1 }' "$tmp/routes"; then ok; else bad "paths: $path is not a route"; fi
done <"$tmp/docpaths"

stop_uniapd
if [ "$stopped" -eq 0 ]; then ok; else bad "stop: exit $stopped; log: $(tail -c 300 "$tmp/log")"; fi
summary openapi
