#!/bin/sh
# tests/cli/graph.sh - the house has no circles and keeps its floors
# (scripts/graph.sh on the objects of this pass's build: core below json
# below server and cli, no file using itself through others), and the
# checker finds a circle, a floor used upwards and server and cli using each
# other in small trees made here.  Plain pass only (nm on plain objects; a
# sanitizer adds nothing here).  Prints "graph: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
cd "$(dirname "$0")/../.." || exit 1
repo=$(pwd)
build=$(dirname "$UNIAP")
CC=${CC:-cc}

if ! command -v nm >/dev/null 2>&1 || ! command -v tsort >/dev/null 2>&1; then
	echo "graph: skipped (needs nm and tsort)"
	echo "graph: 0 passed, 0 failed, 1 skipped"
	exit 0
fi

check house 0 "graph: 2 passed, 0 failed" -- sh scripts/graph.sh "$build" "$tmp/house.dot"
check house-drawn 0 "" -- grep -q '"core/cost.c" -> "core/strategy.c"' "$tmp/house.dot"
# the drawing has every floor's files
check house-floors 0 "" -- sh -c "grep -q 'cluster_json' '$tmp/house.dot' && grep -q '\"cli/main.c\"' '$tmp/house.dot'"

# tree NAME FILE=TEXT...: a small tree under $tmp/NAME, its .c files
# compiled into NAME/build/obj as the Makefile lays them out
tree() {
	t=$tmp/$1
	shift
	mkdir -p "$t/core" "$t/json" "$t/server" "$t/cli"
	for ft in "$@"; do
		printf '%s\n' "${ft#*=}" >"$t/${ft%%=*}"
	done
	for c in "$t"/*/*.c; do
		[ -f "$c" ] || continue
		rel=${c#"$t"/}
		mkdir -p "$t/build/obj/$(dirname "$rel")"
		(cd "$t" && $CC -Icore -Ijson -Iserver -c "$rel" -o "build/obj/${rel%.c}.o") || return 1
	done
}

tree circle 'core/a.c=int b(void); int a(void); int a(void) { return b(); }' \
	'core/b.c=int a(void); int b(void); int b(void) { return a() + 1; }' \
	'core/c.c=int a(void); int c(void); int c(void) { return a(); }'
check circle 1 "FAIL circle: core/a.c core/b.c" -- env GRAPH_ROOT="$tmp/circle" sh "$repo/scripts/graph.sh" build
cp "$tmp/out" "$tmp/circle.out"
# c.c uses the circle but is not in it
check circle-members 0 "" -- sh -c "! grep 'FAIL circle' '$tmp/circle.out' | grep -q 'core/c.c'"

tree upwards 'json/j.h=int j(void);' 'json/j.c=#include "j.h"
int j(void) { return 1; }' 'core/k.c=#include "j.h"
int k(void); int k(void) { return j(); }'
check floor-up 1 "FAIL floor: core/k.c (core) uses json/j.c (json)" -- \
	env GRAPH_ROOT="$tmp/upwards" sh "$repo/scripts/graph.sh" build
cp "$tmp/out" "$tmp/upwards.out"
check floor-up-include 0 "FAIL floor: core/k.c (core) uses json/j.h (json)" -- cat "$tmp/upwards.out"

tree sideways 'server/s.c=int s(void); int s(void) { return 1; }' \
	'cli/m.c=int s(void); int m(void); int m(void) { return s(); }'
check floor-side 1 "FAIL floor: cli/m.c (cli) uses server/s.c (server)" -- \
	env GRAPH_ROOT="$tmp/sideways" sh "$repo/scripts/graph.sh" build

tree fine 'core/a.c=int a(void); int a(void) { return 1; }' \
	'json/b.c=int a(void); int b(void); int b(void) { return a(); }' \
	'server/c.c=int b(void); int c(void); int c(void) { return b(); }' \
	'cli/d.c=int b(void); int d(void); int d(void) { return b(); }'
check fine 0 "graph: 2 passed, 0 failed" -- env GRAPH_ROOT="$tmp/fine" sh "$repo/scripts/graph.sh" build

# no header of ours is named like a system header: the Makefile's -Icore -Ijson
# -Iserver are searched for <...> includes too, so core/sched.h was once taken
# for the C library's <sched.h> inside <pthread.h> (and -MMD, which lists no
# system header, left the objects built before it stale, so only a fresh build
# failed)
# core/err.h beside BSD's <err.h> (err(), warn()) is the one name left: no C
# library header includes <err.h>, and no file of ours uses it (checked here)
shadow=
for h in core/*.h json/*.h server/*.h; do
	name=${h##*/}
	[ "$h" = core/err.h ] && continue
	if printf '#include <%s>\n' "$name" | $CC -E -x c - >/dev/null 2>&1; then
		shadow="$shadow $h"
	fi
done
check no-shadowed-system-header 0 "" -- test -z "$shadow"
check no-bsd-err-h 1 "" -- grep -rlE '^#[[:space:]]*include[[:space:]]*<err\.h>' core json server cli tests/unit fuzz
[ -z "$shadow" ] || echo "  these headers shadow system headers of the same name:$shadow"
summary graph
