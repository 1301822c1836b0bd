#!/bin/sh
# tests/cli/openapi-ts.sh - the generated typed client compiles and runs
# against a live uniapd: fetches GET /v1/openapi.json from a real uniapd
# (--no-auth), generates TypeScript types from it with openapi-typescript's
# defaults, type-checks tests/cli/openapi-ts/client.ts with tsc --strict (a
# client that creates a plan job, polls it and exports its plan), checks that
# tsc refuses tests/cli/openapi-ts/bad.ts (so the types are not `any`), and
# runs the compiled client with node against the same uniapd.
#
# openapi-typescript and typescript come from the npm registry, installed into
# this test's temporary folder (npm's own cache aside, nothing is kept).
# Without node and npm, or when the install fails (no registry), the test is
# skipped with a line saying why.  Prints "openapi-ts: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
src=$(cd "$(dirname "$0")/openapi-ts" && pwd)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
skip() {
	echo "openapi-ts: skipped: $1"
	echo "openapi-ts: 0 passed, 0 failed, 1 skipped"
	exit 0
}

npm_tools openapi-typescript typescript || skip "$npm_why"
mkdir -p "$tmp/ts"
bin=$tmp/npm/node_modules/.bin

if ! start_uniapd --no-auth; then
	bad "start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	summary openapi-ts
	exit 1
fi
base=http://127.0.0.1:$port

code=$(curl -s -o "$tmp/ts/openapi.json" -w '%{http_code}' "$base/v1/openapi.json")
if [ "$code" = 200 ]; then ok; else bad "get: /v1/openapi.json status $code"; fi

# openapi-typescript with its defaults (no options beyond the output file)
if "$bin/openapi-typescript" "$tmp/ts/openapi.json" -o "$tmp/ts/api.d.ts" >"$tmp/gen.log" 2>&1; then ok
else bad "generate: $(tail -n 5 "$tmp/gen.log")"; fi
if grep -q 'Record<string, never>;$' "$tmp/ts/api.d.ts" &&
	grep 'Record<string, never>;$' "$tmp/ts/api.d.ts" | grep -qv -e '^export type webhooks' -e '^export type \$defs'; then
	bad "generate: a schema became Record<string, never>: $(grep -n 'Record<string, never>;$' "$tmp/ts/api.d.ts" | head -n 3)"
else
	ok
fi

cp "$src/client.ts" "$src/bad.ts" "$tmp/ts/"
cat >"$tmp/ts/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "strict": true,
    "target": "es2022",
    "module": "commonjs",
    "lib": ["es2022", "dom"],
    "outDir": "out",
    "noEmitOnError": true,
    "exactOptionalPropertyTypes": false
  },
  "files": ["api.d.ts", "client.ts"]
}
JSON
if (cd "$tmp/ts" && "$bin/tsc" -p tsconfig.json) >"$tmp/tsc.log" 2>&1; then ok
else bad "tsc: client.ts does not compile: $(head -n 10 "$tmp/tsc.log")"; fi

# the types refuse what the service refuses: one error per marked line of bad.ts
(cd "$tmp/ts" && "$bin/tsc" --strict --noEmit --target es2022 --lib es2022 api.d.ts bad.ts) >"$tmp/bad.log" 2>&1
want=$(grep -c '// error' "$src/bad.ts")
got=$(grep -c '^bad\.ts([0-9]*,[0-9]*): error TS' "$tmp/bad.log")
if [ "$got" -eq "$want" ]; then ok; else bad "tsc: bad.ts gave $got errors, want $want: $(head -n 8 "$tmp/bad.log")"; fi

if [ -f "$tmp/ts/out/client.js" ]; then
	if node "$tmp/ts/out/client.js" "$base" >"$tmp/run.log" 2>&1; then ok
	else bad "run: $(tail -n 5 "$tmp/run.log")"; fi
	n=$(grep -c '^ok ' "$tmp/run.log")
	if [ "$n" -ge 8 ]; then ok; else bad "run: only $n checks passed: $(tail -n 3 "$tmp/run.log")"; fi
else
	bad "run: no compiled client"
fi

stop_uniapd
if [ "$stopped" -eq 0 ]; then ok; else bad "stop: exit $stopped; log: $(tail -c 300 "$tmp/log")"; fi
summary openapi-ts
