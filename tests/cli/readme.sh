#!/bin/sh
# tests/cli/readme.sh - the README runs as written.
#
# - uniapd starts with the Makefile's own `run` recipe (make -n run PORT=0
#   DB=...: the same flags, a free port, a temporary store), so the test and
#   `make run` cannot drift apart;
# - examples/flow.sh runs against it, and its output equals the sample output
#   in README.md (between the "examples/flow.sh output" markers) once the
#   values that vary from run to run are blanked: created_at and solve_s (and
#   whether a canceled job was canceled "before it ran").
#   Ids, TPIs, candidate counts and plans must match exactly;
# - the flow runs a second time on the same store (as against a long-lived
#   `make run`): no id or key of the first run may be assumed;
# - the quick start's two curl lines print the plan the README shows;
# - examples/keyed-flow.sh (the README's keyed block) runs twice, cleans up
#   and leaves nothing in the repository root;
# - `make example`'s script, and every `build/uniap` command of the README's
#   "Command line" section (optional [--flags] left out) run and exit 0.
#
# UPDATE=1 writes the fresh flow output into README.md instead of comparing
# (after a deliberate change of what the flow prints).
# Prints "readme: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
root=$(pwd)
case "$UNIAP" in /*) ;; *) UNIAP=$root/$UNIAP ;; esac
case "$UNIAPD" in /*) ;; *) UNIAPD=$root/$UNIAPD ;; esac
BEGIN_FLOW='<!-- begin: examples/flow.sh output'
END_FLOW='<!-- end: examples/flow.sh output'
BEGIN_KEYED='<!-- begin: keyed flow'
END_KEYED='<!-- end: keyed flow'

# block BEGIN END: the indented lines of README.md between two markers, unindented
block() {
	awk -v b="$1" -v e="$2" 'index($0, e) == 1 { on = 0 } on && /^    / { print substr($0, 5) } index($0, b) == 1 { on = 1 }' \
		README.md
}

# normalize: blanks the values that legitimately vary between runs
normalize() {
	# (the canceled job: whether the cancel came before its worker took it is a race; a busy
	# machine, the sanitizer passes, makes it "canceled by the client before it ran")
	sed -e 's/"created_at":"[^"]*"/"created_at":"TIME"/g' -e 's/solve_s [0-9.eE+-]*/solve_s S/g' \
		-e 's/canceled by the client before it ran$/canceled by the client/' -e '/^$/d'
}

# ------------------------------------------------------------ make run
recipe=$(env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -n -o all run PORT=0 DB="$tmp/run.db" 2>"$tmp/err" |
	grep '/uniapd ' | tail -n 1)
check make-run-recipe 0 "--listen 127.0.0.1:0 --db $tmp/run.db --no-auth" -- printf '%s\n' "$recipe"
: >"$tmp/log"
# shellcheck disable=SC2086 # the recipe's words, as make would pass them
"$UNIAPD" ${recipe#* } 2>"$tmp/log" &
pid=$!
if ! wait_uniapd; then
	echo "FAIL make-run: uniapd from the run recipe did not start: $(head -c 300 "$tmp/log")"
	fail=$((fail + 1))
	kill "$pid" 2>/dev/null
	summary readme
	exit
fi
pass=$((pass + 1))

# ------------------------------------------------------------ the flow
check flow 0 "flow: ok" -- env U="http://127.0.0.1:$port" KEY= sh examples/flow.sh
cp "$tmp/out" "$tmp/flow1.txt"
if [ "${UPDATE:-0}" = 1 ]; then
	awk -v b="$BEGIN_FLOW" -v e="$END_FLOW" -v f="$tmp/flow1.txt" '
		index($0, e) == 1 { skip = 0 }
		!skip { print }
		index($0, b) == 1 { skip = 1; print ""; while ((getline l < f) > 0) print (l == "" ? "" : "    " l); print "" }' \
		README.md >"$tmp/README.md" && cp "$tmp/README.md" README.md
	echo "readme: README.md's flow output rewritten"
fi
block "$BEGIN_FLOW" "$END_FLOW" | normalize >"$tmp/want"
normalize <"$tmp/flow1.txt" >"$tmp/got"
if [ ! -s "$tmp/want" ]; then
	echo "FAIL flow-output: README.md has no block between '$BEGIN_FLOW' and '$END_FLOW'"
	fail=$((fail + 1))
elif ! diff -u "$tmp/want" "$tmp/got" >"$tmp/diff"; then
	echo "FAIL flow-output: README.md's sample output differs from what examples/flow.sh prints" \
		"(UPDATE=1 sh tests/cli/readme.sh rewrites it):"
	head -n 40 "$tmp/diff"
	fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
# again on the same store, as against a long-lived `make run`
check flow-again 0 "flow: ok" -- env U="http://127.0.0.1:$port" KEY= sh examples/flow.sh
check flow-no-server 1 "flow.sh: whoami: GET /v1/whoami: curl failed (is uniapd running at http://127.0.0.1:1?)" -- \
	env U=http://127.0.0.1:1 sh examples/flow.sh
# ------------------------------------------------------------ the quick start
# its two lines against `make run`, the port the test's: the plan is printed
# as the README shows it (one request submits, the second waits for the plan)
BEGIN_QUICK='<!-- begin: quick start'
END_QUICK='<!-- end: quick start'
block "$BEGIN_QUICK" "$END_QUICK" | sed "s/:8080/:$port/g" >"$tmp/quick.sh"
check quick-block 0 "" -- test "$(wc -l <"$tmp/quick.sh")" -eq 3
check quick-start 0 "plan: pp " -- sh -e "$tmp/quick.sh"
cp "$tmp/out" "$tmp/quick.out"
# the sample under the block is what it printed
awk -v e="$END_QUICK" 'index($0, e) == 1 { on = 1; next } on && /^    / { print substr($0, 5); n++ } on && n && !/^    / { exit }' \
	README.md >"$tmp/quick.want"
check quick-sample 0 "" -- diff "$tmp/quick.want" "$tmp/quick.out"

stop_uniapd
check make-run-stop 0 "" -- test "$stopped" -eq 0

# ------------------------------------------------------------ the keyed flow
# the README's one line, as written, from the repository: it picks a free port,
# waits for uniapd, runs the flow with the key and once without, and cleans up
block "$BEGIN_KEYED" "$END_KEYED" | sed 's/  *#.*$//' >"$tmp/keyed"
check keyed-block 0 "" -- test "$(cat "$tmp/keyed")" = "sh examples/keyed-flow.sh"
top0=$(ls -A "$root" | sort)
check keyed-flow 0 "keyed-flow: ok" -- env UNIAPD="$UNIAPD" sh examples/keyed-flow.sh
cp "$tmp/out" "$tmp/keyed.txt"
check keyed-whoami 0 '{"tenant":"alice","id":1}' -- cat "$tmp/keyed.txt"
check keyed-no-key 0 "GET /v1/whoami -> 401" -- cat "$tmp/keyed.txt"
# and again: a second run starts from nothing (the tenant is new, its id 1 again)
check keyed-flow-again 0 '{"tenant":"alice","id":1}' -- env UNIAPD="$UNIAPD" sh examples/keyed-flow.sh
dir=$(sed -n 's/^== a store of its own (\(.*\)\/keyed.db).*/\1/p' "$tmp/keyed.txt")
check keyed-cleaned-up 0 "" -- test -n "$dir" -a ! -e "$dir"
check keyed-nothing-in-root 0 "" -- test "$(ls -A "$root" | sort)" = "$top0"

# ------------------------------------------------------------ the service and tenant blocks
# The "uniapd" section's two blocks run as written, in a folder of their own
# (var/ there), with the few changes a script needs that a person at a prompt
# does not: the start line listens on a free port (its later lines get that
# port for 8080), the script waits for /healthz where a person types slower
# than uniapd starts, and the last line's `kill %1` (job control, which a
# non-interactive sh lacks) is the same SIGTERM sent by pid.
block '<!-- begin: service block' '<!-- end: service block' | sed 's/  *#.*$//' >"$tmp/service"
check service-block 0 "" -- test "$(wc -l <"$tmp/service")" -eq 5 -a "$(sed -n 5p "$tmp/service")" = "kill %1"
start=$(sed -n 1p "$tmp/service")
case "$start" in
"build/uniapd --listen 127.0.0.1:8080 "*" &") ;;
*) start= ;;
esac
mkdir -p "$tmp/s"
: >"$tmp/log"
pid=
if [ -n "$start" ]; then
	# shellcheck disable=SC2046 # the README's words
	set -- $(printf '%s\n' "$start" | sed -e "s|^build/uniapd|$UNIAPD|" -e 's/:8080 /:0 /' -e 's/ &$//')
	(cd "$tmp/s" && exec "$@") 2>"$tmp/log" &
	pid=$!
fi
if [ -n "$start" ] && wait_uniapd; then
	pass=$((pass + 1))
	sed -n 2,4p "$tmp/service" | sed "s/:8080/:$port/g" >"$tmp/service.sh"
	check service-lines 0 '{"status":"ok"}' -- sh -e "$tmp/service.sh"
	cp "$tmp/out" "$tmp/service.out"
	check service-readyz 0 '"ready"' -- cat "$tmp/service.out"
	check service-metrics 0 'uniapd_build_info{' -- cat "$tmp/service.out"
	stop_uniapd
	check service-stop 0 "" -- test "$stopped" -eq 0
	check service-store 0 "" -- test -s "$tmp/s/var/uniap.db"
else
	echo "FAIL service-start: the README's uniapd line did not start: '$start' $(head -c 300 "$tmp/log")"
	fail=$((fail + 1))
	[ -z "$pid" ] || kill "$pid" 2>/dev/null
fi
block '<!-- begin: tenant block' '<!-- end: tenant block' | sed -e 's/  *#.*$//' -e "s|^build/uniapd|$UNIAPD|" \
	>"$tmp/tenants.sh"
check tenant-block 0 "" -- test "$(wc -l <"$tmp/tenants.sh")" -eq 5
mkdir -p "$tmp/t"
check tenant-lines 0 "" -- sh -e -c "cd \"$tmp/t\" && . \"$tmp/tenants.sh\""
cp "$tmp/out" "$tmp/tenants.out"
# the keys are printed (a line of their own), the list shows both, alice revoked
check tenant-key 0 "" -- grep -qE '^[A-Za-z0-9_-]{20,}$' "$tmp/tenants.out"
check tenant-list 0 "ci" -- "$UNIAPD" tenant list --db "$tmp/t/var/uniap.db"
cp "$tmp/out" "$tmp/list.out"
check tenant-revoked 0 "" -- grep -qE 'alice.*[0-9]{4}-[0-9]{2}-[0-9]{2}.*[0-9]{4}-[0-9]{2}-[0-9]{2}' "$tmp/list.out"
# ci's quotas as the block set them: 16 jobs, 100 MiB, 600 worker seconds a job
check tenant-quotas 0 "" -- grep -qE '^[0-9]+ +ci +[^ ]+ +- +16 +104857600 +600$' "$tmp/list.out"

# ------------------------------------------------------------ the command line
check make-example-recipe 0 "scripts/example.sh" -- env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -n -o all example
check make-example 0 "== uniap plan: the paper's EnvB-8 BERT-Huge" -- sh scripts/example.sh "$UNIAP"

# every build/uniap command of the "Command line" section, continuation lines
# joined and optional [--flags] dropped, run from a folder that sees the
# repository's schema/ and examples/ (their outputs land there)
awk '/^## / { on = ($0 == "## Command line") } /^### / { on = 0 }
     on && /^    build\/uniap / { cmd = 1; s = "" }
     on && cmd { l = substr($0, 5); if (sub(/\\$/, "", l)) { s = s l; next } print s l; cmd = 0 }' \
	README.md | sed -e 's/ *\[[^]]*\]//g' -e 's/  *#.*$//' >"$tmp/commands"
check cli-commands 0 "" -- test "$(wc -l <"$tmp/commands")" -ge 10
mkdir -p "$tmp/cli/var"
ln -s "$root/schema" "$root/examples" "$tmp/cli/"
n=0
exec 3<"$tmp/commands"
while IFS= read -r cmd <&3; do
	n=$((n + 1))
	f0=$fail
	check "cli-$n" 0 "" -- sh -c "cd \"$tmp/cli\" && UNIAP=\"$UNIAP\" && \"\$UNIAP\" ${cmd#build/uniap }"
	[ "$fail" -eq "$f0" ] || echo "  command: $cmd"
done
exec 3<&-

# the section's sample summary is what the first command prints with --format text
cmd=$(head -n 1 "$tmp/commands")
check cli-text 0 "" -- sh -c "cd \"$tmp/cli\" && \"$UNIAP\" ${cmd#build/uniap } --format text"
cp "$tmp/out" "$tmp/summary.txt"
awk '/^## / { on = ($0 == "## Command line") } /^### / { on = 0 }
     on && (/^    plan: / || /^      stage /) { print substr($0, 5) }' README.md | sed 's/ \.\.\.$//' >"$tmp/sample"
check cli-sample 0 "" -- test -s "$tmp/sample"
while IFS= read -r l; do
	check "cli-sample: $l" 0 "$l" -- cat "$tmp/summary.txt"
done <"$tmp/sample"

# the commands write under var/ only: nothing in the folder they ran from
check cli-writes-var-only 0 "" -- test "$(ls -A "$tmp/cli" | tr '\n' ' ')" = "examples schema var "

# nothing outside the repository
check no-outside-paths 1 "" -- grep -n '\.\./shared' README.md examples/flow.sh

summary readme
