#!/bin/sh
# scripts/graph.sh [BUILD] [DOT] - the house's dependency graph, and its rules.
#
# Nodes are the source files of core/, json/, server/ and cli/ (and the
# generated sources of BUILD/gen/, which belong to server/, but buildinfo.c,
# which defines what json/buildinfo.h declares for both programs: json/).  A file uses
# another when it includes it (#include "x.h", looked up as the compiler's
# -Icore -Ijson -Iserver do) or when its object refers to a symbol that the
# other's object defines (nm on BUILD/obj: a call, or a table's address).
# Checked:
#   circles   no file uses itself through any chain of others
#   floors    core/ uses core/ only; json/ uses json/ and core/; server/ and
#             cli/ use their own floor and those below, never each other
# BUILD is a build folder whose objects are up to date (make BUILD=... all
# tests-bin; default build).  With DOT, the graph is written there in
# Graphviz's language, one cluster per floor (dot -Tsvg DOT > graph.svg draws
# it; graphviz is not a build or test dependency).
# Prints one line per broken rule, then "graph: N passed, N failed" with the
# file and edge counts; exits 1 when a rule is broken.  Needs nm (binutils)
# and tsort (coreutils); awk computes the circles.
set -u
cd "$(dirname "$0")/.." || exit 2
# GRAPH_ROOT: another tree laid out the same way (tests/cli/graph.sh checks
# the checker on small trees of its own); BUILD and DOT are relative to it
[ -z "${GRAPH_ROOT:-}" ] || cd "$GRAPH_ROOT" || exit 2
build=${1:-build}
dot=${2:-}
[ -d "$build/obj" ] || { echo "graph: no objects in $build/obj (make BUILD=$build first)" >&2; exit 2; }
command -v nm >/dev/null 2>&1 && command -v tsort >/dev/null 2>&1 ||
	{ echo "graph: needs nm (binutils) and tsort (coreutils)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/uniap-graph.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# ---- include edges: "FILE HEADER", each header found as the compiler would
# (the including file's own folder first, then -Icore -Ijson -Iserver)
for f in core/*.[ch] json/*.[ch] server/*.[ch] cli/*.[ch] "$build"/gen/*.c; do
	[ -f "$f" ] || continue
	sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f" | while read -r h; do
		for d in "$(dirname "$f")" core json server; do
			if [ -f "$d/$h" ]; then
				echo "$f $d/$h"
				break
			fi
		done
	done
done >"$tmp/include"

# ---- symbol edges: who defines each global symbol, who refers to it
for o in $(find "$build/obj/core" "$build/obj/json" "$build/obj/server" "$build/obj/cli" \
	"$build/obj/gen" -name '*.o' 2>/dev/null | sort); do
	src=${o#"$build"/obj/}
	src=${src%.o}.c
	case "$src" in gen/*) src=$build/$src ;; esac
	nm -g --defined-only "$o" | awk -v s="$src" 'NF == 3 { print $3, s }' >>"$tmp/defs"
	nm -u "$o" | awk -v s="$src" '{ print $NF, s }' >>"$tmp/uses"
done
[ -s "$tmp/defs" ] || { echo "graph: no objects under $build/obj" >&2; exit 2; }
# uniapd's main() and each test's are defined more than once: never used by name
awk 'NR == FNR { if (!($1 in def)) def[$1] = $2; next }
     ($1 in def) && def[$1] != $2 { print $2, def[$1] }' "$tmp/defs" "$tmp/uses" |
	sort -u >"$tmp/symbol"

sort -u "$tmp/include" "$tmp/symbol" >"$tmp/edges"
files=$(awk '{ print $1; print $2 }' "$tmp/edges" | sort -u | wc -l)
edges=$(wc -l <"$tmp/edges")
pass=0 fail=0

# ---- circles: the files that reach each other (the transitive closure, by
# Warshall's algorithm: a hundred files are a million steps of awk), one line
# per circle; tsort confirms that the whole is ordered
circles=$(awk '
	{ if (!($1 in id)) { id[$1] = ++n; name[n] = $1 }
	  if (!($2 in id)) { id[$2] = ++n; name[n] = $2 }
	  r[id[$1], id[$2]] = 1 }
	END {
		for (k = 1; k <= n; k++)
			for (i = 1; i <= n; i++)
				if ((i, k) in r)
					for (j = 1; j <= n; j++)
						if ((k, j) in r) r[i, j] = 1
		for (i = 1; i <= n; i++) {
			if (done[i] || !((i, i) in r)) continue
			line = ""
			for (j = 1; j <= n; j++)
				if ((i, j) in r && (j, i) in r) { done[j] = 1; line = line " " name[j] }
			print "FAIL circle:" line
		}
	}' "$tmp/edges" | sort)
if [ -z "$circles" ] && tsort "$tmp/edges" >/dev/null 2>&1; then
	pass=$((pass + 1))
else
	printf '%s\n' "${circles:-FAIL circle: tsort found a loop}"
	fail=$((fail + 1))
fi

# ---- floors: core 0 < json 1 < server, cli 2 (and server never cli, cli never server)
floor_breaks=$(awk '
	function floor(f) { if (f ~ /^core\//) return "core"; if (f ~ /^json\// || f ~ /\/gen\/buildinfo\.c$/) return "json";
	                    if (f ~ /^cli\//) return "cli"; return "server" }
	BEGIN { rank["core"] = 0; rank["json"] = 1; rank["server"] = 2; rank["cli"] = 2 }
	{ a = floor($1); b = floor($2)
	  if (rank[b] > rank[a] || (rank[b] == rank[a] && a != b))
		print "FAIL floor: " $1 " (" a ") uses " $2 " (" b ")" }' "$tmp/edges")
if [ -z "$floor_breaks" ]; then
	pass=$((pass + 1))
else
	printf '%s\n' "$floor_breaks"
	fail=$((fail + 1))
fi

# ---- the drawing
if [ -n "$dot" ]; then
	awk '
	function floor(f) { if (f ~ /^core\//) return "core"; if (f ~ /^json\// || f ~ /\/gen\/buildinfo\.c$/) return "json";
	                    if (f ~ /^cli\//) return "cli"; return "server" }
	{ e[NR] = $0; n[$1] = 1; n[$2] = 1 }
	END {
		print "digraph uniap {"
		print "\trankdir=BT; node [shape=box, fontsize=10]; edge [arrowsize=0.5];"
		split("core json server cli", fl, " ")
		for (i = 1; i <= 4; i++) {
			print "\tsubgraph \"cluster_" fl[i] "\" { label=\"" fl[i] "/\";"
			for (f in n) if (floor(f) == fl[i]) print "\t\t\"" f "\";"
			print "\t}"
		}
		for (i = 1; i <= NR; i++) { split(e[i], p, " "); print "\t\"" p[1] "\" -> \"" p[2] "\";" }
		print "}"
	}' "$tmp/edges" >"$dot"
	echo "graph: the drawing is in $dot (dot -Tsvg $dot > graph.svg)"
fi
echo "graph: $files files, $edges edges ($(wc -l <"$tmp/include") includes, $(wc -l <"$tmp/symbol") symbol uses)"
echo "graph: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
