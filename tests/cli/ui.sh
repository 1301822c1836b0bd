#!/bin/sh
# tests/cli/ui.sh - the web UI at /ui/ from a real uniapd with keys (not
# --no-auth), started in a folder that holds no ui/ (the files are compiled
# in), with curl: /ui is a 308 to /ui/; /ui/ is index.html; every asset of
# ui/ (the Makefile's rule: [a-z0-9.-]+ with a known extension) is served
# byte for byte with its content type; every UI answer (a 404 too) carries
# the Content-Security-Policy and the other browser headers (server/ui.h);
# an unknown asset is a 404 problem; the UI needs no key while /v1/jobs
# still answers 401; ETag + If-None-Match gives a bodiless 304; HEAD gives
# the headers and length without the body; dot segments are a 400; the API's
# answers carry nosniff too.  And the pages themselves: no inline script,
# style or event handler (the CSP would block them).  Needs curl, grep, sed.
# Prints "ui-serve: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT

CSP="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# req ARGS...: curl with the answer's headers in $tmp/hdr, body in $tmp/body; prints the status
req() {
	rm -f "$tmp/hdr" "$tmp/body"
	curl -s -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' "$@"
}
# head_req URL: HEAD with the headers in $tmp/hdr; prints the status and the body bytes received
head_req() {
	rm -f "$tmp/hdr" "$tmp/body"
	curl -s -I -o /dev/null -D "$tmp/hdr" -w '%{http_code} %{size_download}' "$@"
}
# body_len: the bytes of the last answer's body (curl writes no file for an empty one)
body_len() {
	if [ -f "$tmp/body" ]; then wc -c <"$tmp/body" | tr -d ' '; else echo 0; fi
}
# hdr NAME: the value of header NAME of the last answer (first one, no CR), or nothing
hdr() {
	grep -i "^$1:" "$tmp/hdr" | head -n 1 | sed 's/^[^:]*: *//' | tr -d '\r'
}
# same NAME WANT GOT: one check of a value
same() {
	if [ "$2" = "$3" ]; then ok; else bad "$1: want '$2', got '$3'"; fi
}
# browser_headers NAME: the headers every UI answer carries (server/ui.h)
browser_headers() {
	same "$1 csp" "$CSP" "$(hdr Content-Security-Policy)"
	same "$1 nosniff" nosniff "$(hdr X-Content-Type-Options)"
	same "$1 referrer" no-referrer "$(hdr Referrer-Policy)"
	same "$1 frame" DENY "$(hdr X-Frame-Options)"
	same "$1 cache" no-cache "$(hdr Cache-Control)"
	same "$1 one nosniff" 1 "$(grep -ci '^X-Content-Type-Options:' "$tmp/hdr")"
}
# asset_type NAME: the content type of an asset (as the Makefile gives it); nothing when NAME is none
asset_type() {
	case $1 in *[!a-z0-9.-]*) return ;; esac
	case $1 in
	*.html) echo 'text/html; charset=utf-8' ;;
	*.js) echo 'text/javascript; charset=utf-8' ;;
	*.css) echo 'text/css; charset=utf-8' ;;
	*.svg) echo 'image/svg+xml' ;;
	*.png) echo 'image/png' ;;
	*.ico) echo 'image/x-icon' ;;
	*.json) echo 'application/json' ;;
	*.txt) echo 'text/plain; charset=utf-8' ;;
	esac
}

root=$(cd "$(dirname "$0")/../.." && pwd)
case $UNIAPD in /*) ;; *) UNIAPD=$root/$UNIAPD ;; esac
if [ ! -f "$root/ui/index.html" ]; then
	bad "ui/index.html: missing"
	summary ui-serve
	exit 1
fi

# keys on: a tenant, then uniapd from a folder without ui/
check tenant 0 "uk_" -- "$UNIAPD" tenant add t1 --db "$DB"
key=$(grep -o 'uk_[A-Za-z0-9_-]*' "$tmp/out" "$tmp/err" | head -n 1 | sed 's/^[^:]*://')
cd "$tmp" || exit 1
start_uniapd
started=$?
cd "$root" || exit 1
if [ "$started" -ne 0 ]; then
	bad "start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	summary ui-serve
	exit 1
fi
U=http://127.0.0.1:$port

# /ui: a permanent redirect to /ui/, with the browser headers
same "redirect status" 308 "$(req "$U/ui")"
same "redirect location" /ui/ "$(hdr Location)"
browser_headers redirect
# a client that follows it lands on the page
same "redirect followed" 200 "$(req -L "$U/ui")"

# /ui/: the page, no key needed (nor looked at: a wrong one does no harm)
same "index status" 200 "$(req "$U/ui/")"
same "index type" 'text/html; charset=utf-8' "$(hdr Content-Type)"
browser_headers index
if cmp -s "$tmp/body" ui/index.html; then ok; else bad "index: differs from ui/index.html (rebuild: make)"; fi
etag=$(hdr ETag)
case $etag in \"*\") ok ;; *) bad "index etag: '$etag'" ;; esac
same "index with a wrong key" 200 "$(req -H 'Authorization: Bearer uk_nope' "$U/ui/")"
same "api without a key" 401 "$(req "$U/v1/jobs")"
same "api 401 nosniff" nosniff "$(hdr X-Content-Type-Options)"
same "api with the key" 200 "$(req -H "Authorization: Bearer $key" "$U/v1/jobs")"
same "api json nosniff" nosniff "$(hdr X-Content-Type-Options)"
same "healthz nosniff" nosniff "$(req "$U/healthz" >/dev/null; hdr X-Content-Type-Options)"

# ETag + If-None-Match: a bodiless 304 that keeps the browser headers
same "index 304" 304 "$(req -H "If-None-Match: $etag" "$U/ui/")"
same "index 304 body" 0 "$(body_len)"
same "index 304 etag" "$etag" "$(hdr ETag)"
browser_headers "index 304"
same "index other etag" 200 "$(req -H 'If-None-Match: "0000"' "$U/ui/")"

# HEAD: the GET's status, type and length, no body
same "index head" "200 0" "$(head_req "$U/ui/")"
same "index head length" "$(wc -c <ui/index.html | tr -d ' ')" "$(hdr Content-Length)"
same "index head type" 'text/html; charset=utf-8' "$(hdr Content-Type)"
same "index head etag" "$etag" "$(hdr ETag)"
browser_headers "index head"

# every asset of ui/, byte for byte, with its type and an ETag that revalidates
n=0
for f in ui/*; do
	name=${f#ui/}
	type=$(asset_type "$name")
	[ -n "$type" ] && [ -f "$f" ] || continue
	n=$((n + 1))
	same "$name status" 200 "$(req "$U/ui/$name")"
	if cmp -s "$tmp/body" "$f"; then ok; else bad "$name: differs from $f (rebuild: make)"; fi
	same "$name type" "$type" "$(hdr Content-Type)"
	browser_headers "$name"
	tag=$(hdr ETag)
	same "$name 304" 304 "$(req -H "If-None-Match: $tag" "$U/ui/$name")"
	same "$name head" "200 0" "$(head_req "$U/ui/$name")"
	same "$name head length" "$(wc -c <"$f" | tr -d ' ')" "$(hdr Content-Length)"
done
if [ "$n" -ge 3 ]; then ok; else bad "assets: only $n in ui/ (index.html, a script, a style sheet at least)"; fi

# the pages: nothing inline that the CSP would block (so nothing the UI relies on breaks)
for f in ui/*.html; do
	[ -f "$f" ] || continue
	# a <script> without src, or with content between the tags; attributes across lines count
	if tr '\n' ' ' <"$f" | grep -oi '<script[^>]*>' | grep -vqi '[[:space:]]src[[:space:]]*='; then bad "$f: a <script> without src"; else ok; fi
	if tr '\n' ' ' <"$f" | grep -qi '<script[^>]*>[^<]*[^<[:space:]][^<]*</script'; then bad "$f: an inline script"; else ok; fi
	if tr '\n' ' ' <"$f" | grep -qiE '<[^>]*[[:space:]]on[a-z]+[[:space:]]*='; then bad "$f: an inline event handler attribute"; else ok; fi
	if tr '\n' ' ' <"$f" | grep -qiE '<[^>]*[[:space:]]style[[:space:]]*='; then bad "$f: a style= attribute"; else ok; fi
	if grep -qi '<style' "$f"; then bad "$f: a <style> element"; else ok; fi
	if grep -qi 'javascript:' "$f"; then bad "$f: a javascript: URL"; else ok; fi
done

# what is not a file of the UI: a 404 problem, with the browser headers; no way out of /ui/
same "unknown status" 404 "$(req "$U/ui/nope.js")"
same "unknown type" application/problem+json "$(hdr Content-Type)"
if grep -q '"status":404' "$tmp/body" && grep -q 'urn:uniap:problem:not-found' "$tmp/body"; then ok; else bad "unknown: body $(head -c 200 "$tmp/body")"; fi
browser_headers unknown
same "unlisted file" 404 "$(req "$U/ui/Makefile")"
same "dot segments" 400 "$(req --path-as-is "$U/ui/../v1/jobs")"
same "encoded dot segments" 400 "$(req --path-as-is "$U/ui/%2e%2e/v1/jobs")"
same "encoded dot segment and slash" 400 "$(req "$U/ui/..%2Fv1%2Fjobs")"
same "encoded slash" 404 "$(req "$U/ui/a%2Fapp.js")"
same "deeper path" 404 "$(req "$U/ui/a/index.html")"
same "post" 405 "$(req -X POST -d x "$U/ui/")"
same "post allow" GET "$(hdr Allow)"

stop_uniapd
if [ "$stopped" -eq 0 ]; then ok; else bad "stop: exit $stopped; log: $(tail -c 300 "$tmp/log")"; fi
summary ui-serve
