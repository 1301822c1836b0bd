#!/bin/sh
# tests/cli/deps.sh - the package lists under deps/ against this machine:
# every shared library that the built uniap and uniapd need comes from a
# package of deps/debian-runtime.txt (the Dockerfile's runtime stage installs
# that list and nothing else), every package of every list exists in the
# apt cache, and scripts/check-deps.sh names the package of a missing need.
# Needs a Debian machine (dpkg, apt-cache) and binutils' objdump; skips
# otherwise, and on sanitized builds (they need the sanitizers' runtimes too).
# Prints "deps: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}

if [ -n "${UNIAP_SANITIZED:-}" ] || ! command -v dpkg-query >/dev/null 2>&1 ||
	! command -v apt-cache >/dev/null 2>&1 || ! command -v objdump >/dev/null 2>&1; then
	echo "deps: skipped (needs dpkg, apt-cache and objdump, and an unsanitized build)"
	echo "deps: 0 passed, 0 failed, 1 skipped"
	exit 0
fi

# the packages of a list: the first word of each line
packages() { sed 's/#.*//' "$1" | awk 'NF { print $1 }'; }

# every library a program needs (NEEDED), from a runtime-list package or libc6
runtime=$(packages deps/debian-runtime.txt | tr '\n' ' ')
for prog in "$UNIAP" "$UNIAPD"; do
	for lib in $(objdump -p "$prog" | awk '$1 == "NEEDED" { print $2 }'); do
		path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
		# dpkg knows the path as packaged: /lib/... or /usr/lib/... (merged /usr)
		pkg=$( { dpkg-query -S "$path" || dpkg-query -S "$(readlink -f "$path")"; } 2>/dev/null |
			head -n 1 | cut -d: -f1)
		case " libc6 $runtime" in
		*" $pkg "*) pass=$((pass + 1)) ;;
		*) echo "FAIL runtime-$lib: $prog needs $lib (package '${pkg:-none}'), not in deps/debian-runtime.txt"
		   fail=$((fail + 1)) ;;
		esac
	done
done

# every listed package is known to apt (a typo fails here, not in CI's
# apt-get); only where apt has package lists (images often delete them)
if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
	echo "note: no apt package lists (apt-get update), the known-package checks skipped"
fi
# (the names apt knows, read once: one apt-cache call per package took a minute on a busy
# machine; a name not among them, a virtual package say, is asked about on its own)
ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1 && apt-cache pkgnames >"$tmp/known" 2>/dev/null
ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1 && for list in deps/debian-*.txt; do
	for p in $(packages "$list"); do
		if grep -qx -- "$p" "$tmp/known" || apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
			pass=$((pass + 1))
		else
			echo "FAIL known-$p: $list lists $p, which apt-cache does not know"
			fail=$((fail + 1))
		fi
	done
done

# a missing need is named with its package and the way out; the stand-in
# compiler finds no library (as cc -print-file-name does, it echoes the name)
printf '#!/bin/sh\necho "${1#-print-file-name=}"\n' >"$tmp/cc"
chmod +x "$tmp/cc"
check need-tagged 1 "missing build packages: zlib1g-dev (for -lz); run: sh scripts/install-deps.sh" -- \
	env CC="$tmp/cc" sh scripts/check-deps.sh lib:z
check need-module-lib 1 "libsqlite3-dev (for -lsqlite3)" -- env CC="$tmp/cc" sh scripts/check-deps.sh pc:sqlite3
check need-fuzzer 1 "libclang-rt-14-dev (for -lclang_rt.fuzzer-$(uname -m))" -- \
	env CC="$tmp/cc" sh scripts/check-deps.sh "lib:clang_rt.fuzzer-$(uname -m)"
check need-installed 0 "" -- sh scripts/check-deps.sh cmd:sh pc:cbc lib:m
check need-untagged 1 "a package not in deps/debian-build.txt (for pkg-config no-such-module)" -- \
	sh scripts/check-deps.sh pc:no-such-module
summary deps
