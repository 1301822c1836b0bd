#!/bin/sh
# scripts/check-deps.sh NEED... - checks, before anything compiles, that this
# machine has what a make target needs, so that a missing package is named in
# one line instead of in a linker error under pages of compiler output.
# NEED is cmd:NAME (a command), pc:MODULE (a pkg-config module; every -lNAME
# of its --libs is checked too, since Debian's .pc files ask for libraries
# their -dev packages do not pull in: coinutils.pc asks for -lz) or lib:NAME.
# The package that provides each need comes from the tags in
# deps/debian-build.txt, then deps/debian-bench.txt (wrk, for make bench).
# Prints nothing and exits 0 when all is there, else one line "make: missing
# build packages: PKG (for NEED), ...; run: sh scripts/install-deps.sh [bench]"
# on stderr and exits 1.  Installs nothing.
set -u
cd "$(dirname "$0")/.."
CC=${CC:-cc}
LISTS="build bench"

# "PACKAGE LIST" for the first line of deps/debian-LIST.txt that carries the
# tag $1, or nothing
package_for() {
	for list in $LISTS; do
		sed 's/#.*//' "deps/debian-$list.txt" | awk -v tag="$1" -v list="$list" '
			{ for (i = 2; i <= NF; i++) if ($i == tag) { print $1, list; found = 1; exit } }
			END { exit !found }' && return
	done
}

nl='
'
missing=""
# add_missing NEED WHAT [FALLBACK]: one missing need, a line
# "PACKAGE<tab>WHAT<tab>LIST";
# a library no line names is the package of the module that asked for it
add_missing() {
	pkg=$(package_for "$1")
	[ -n "$pkg" ] || [ -z "${3:-}" ] || pkg=$(package_for "$3")
	[ -n "$pkg" ] || pkg="a package not in deps/debian-build.txt build"
	missing="$missing${pkg% *}	$2	${pkg##* }$nl"
}

# lib:NAME: the linker finds libNAME.so or libNAME.a in its search path
have_lib() {
	for suffix in so a; do
		case $("$CC" -print-file-name="lib$1.$suffix" 2>/dev/null) in */*) return 0 ;; esac
	done
	return 1
}

libs_to_check=""
for need in "$@"; do
	name=${need#*:}
	case "$need" in
	cmd:*)
		command -v "$name" >/dev/null 2>&1 || add_missing "$need" "$name"
		;;
	pc:*)
		if ! command -v pkg-config >/dev/null 2>&1; then
			add_missing cmd:pkg-config "pkg-config"
		elif ! pkg-config --exists "$name" 2>/dev/null; then
			add_missing "$need" "pkg-config $name"
		else
			for l in $(pkg-config --libs "$name"); do
				case "$l" in -l*) libs_to_check="$libs_to_check ${l#-l}@$name" ;; esac
			done
		fi
		;;
	lib:*)
		libs_to_check="$libs_to_check $name@"
		;;
	*)
		echo "check-deps: unknown need '$need' (cmd:, pc: or lib:)" >&2
		exit 2
		;;
	esac
done
if command -v "$CC" >/dev/null 2>&1; then
	# each is NAME@MODULE (the module whose --libs asked for it, or nothing)
	for lm in $libs_to_check; do
		l=${lm%@*} m=${lm#*@}
		have_lib "$l" || add_missing "lib:$l" "-l$l" "${m:+pc:$m}"
	done
fi
[ -z "$missing" ] && exit 0
# one entry per package, in order: "zlib1g-dev (for -lz), libfoo-dev (for -la, -lb)"
printf '%s' "$missing" | awk -F '\t' '
	$3 != "build" && !($3 in lists) { lists[$3] = 1; extra = extra " " $3 }
	!($1 in whats) { order[++n] = $1; whats[$1] = $2; next }
	index(", " whats[$1] ", ", ", " $2 ", ") == 0 { whats[$1] = whats[$1] ", " $2 }
	END {
		printf "make: missing build packages: "
		for (i = 1; i <= n; i++) printf "%s%s (for %s)", (i > 1 ? ", " : ""), order[i], whats[order[i]]
		print "; run: sh scripts/install-deps.sh" extra
	}' >&2
exit 1
