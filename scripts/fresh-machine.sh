#!/bin/sh
# scripts/fresh-machine.sh - the README on a bare Debian 12 (make test-fresh).
# Bootstraps a minimal bookworm root (debootstrap --variant=minbase: nothing
# of uniap's packages, no compiler, no curl), copies the committed tree (git
# archive HEAD: never uncommitted changes, build outputs or ignored files)
# into /root/uniap inside it, and in a chroot runs the README's two commands:
#   1. sh scripts/install-deps.sh && make test TEST_PASSES=plain   must end
#      "N passed, 0 failed": the test command with its plain pass only
#      (FRESH_PASSES: others too); the sanitizer passes need no package the
#      plain pass lacks, which step 3 proves: make sanitizer-builds builds
#      every program of the ASan and TSan passes there, and uniap runs under
#      each sanitizer (tests/README.md says why this split)
#   2. sh scripts/install-deps.sh build && make run    in the background, waited for
#      on /healthz, driven through the README's flow (sh examples/flow.sh with
#      the base URL in U), then stopped with SIGTERM: it must exit 0
# Ends with "fresh-machine: N passed, N failed" (steps) after a line
# "fresh-machine: the test command: N passed, N failed[, N skipped]";
# exits 1 when any step failed.
#
# Needs root (debootstrap, mount, chroot) on a Debian machine with network
# access to its package mirror; installs debootstrap when it is absent.  The
# mirror is read from this machine's apt sources at run time and is never
# written into the repository.  The chroot shares this machine's network, so
# `make run` gets PORT=8080 or, when that is taken, the next free port.
# Only the committed tree goes in, as a new user's clone; Galvatron's measured
# fixtures (../shared/fixtures beside the checkout, as CI has them, or
# /work/shared/fixtures) go beside it when present, so the tests that read
# them run here too; so does this machine's NODE_EXTRA_CA_CERTS, so that npm
# reaches its registry through a proxy with its own CA as it does here.
#
# Environment: FRESH_PASSES (plain: the test command's passes), FRESH_DIR (where the root is made, /var/tmp), FRESH_KEEP=1
# (keep the root for a look afterwards), FRESH_CACHE=1 (reuse today's
# bootstrapped base root from ${XDG_CACHE_HOME:-~/.cache}/uniap; CI never
# sets it), HEALTH_WAIT_S (120), STOP_WAIT_S (90).
#
# Never touches the host beyond its own folder under FRESH_DIR, the mounts it
# makes inside that folder (all undone on exit) and debootstrap's install.
set -u
cd "$(dirname "$0")/.." || exit 2
repo=$(pwd)
SUITE=bookworm
HEALTH_WAIT_S=${HEALTH_WAIT_S:-120}
STOP_WAIT_S=${STOP_WAIT_S:-90}
ENV_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
STEPS=6
PASSES=${FRESH_PASSES:-plain}
passed=0
failed=0
started=$(date +%s)

say() { echo "fresh-machine: $*"; }
header() { echo; echo "==== fresh-machine: $* ($(($(date +%s) - started)) s)"; }
ok() { say "ok: $*"; passed=$((passed + 1)); }
bad() { say "FAILED: $*"; failed=$((failed + 1)); }
finish() {
	# steps that never ran count as failed, so the total is always $STEPS
	failed=$((STEPS - passed))
	echo
	say "took $(($(date +%s) - started)) s"
	say "the test command: ${test_summary:-not run}"
	echo "fresh-machine: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

[ "$(id -u)" = 0 ] || { echo "fresh-machine: needs root (debootstrap, mount, chroot)" >&2; exit 2; }
{ command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; } ||
	{ echo "fresh-machine: needs git and a git checkout (it copies the committed tree)" >&2; exit 2; }

# ---- the mirror, from this machine's apt sources
# Prints "URI SUITE" for each enabled deb entry of a Debian archive: component
# main, signed by Debian's archive keyring (or by the keyring apt trusts by
# default), from sources.list, *.list (one-line) and *.sources (deb822).
apt_entries() {
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		sed 's/#.*//' "$f" | awk '
			$1 != "deb" { next }
			{ opts = ""; i = 2
			  if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) { opts = opts " " $i; i++ } opts = opts " " $i; i++ }
			  uri = $i; suite = $(i + 1); main = 0
			  for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
			  if (main && (opts !~ /signed-by=/ || opts ~ /debian-archive/)) print uri, suite }'
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
			function flush() {
				if (types ~ /(^| )deb( |$)/ && enabled != "no" && comps ~ /(^| )main( |$)/ &&
				    (!signed || signedby ~ /debian-archive/)) {
					nu = split(uris, u, " "); ns = split(suites, s, " ")
					for (a = 1; a <= nu; a++) for (b = 1; b <= ns; b++) print u[a], s[b]
				}
				types = uris = suites = comps = signedby = enabled = ""; signed = 0
			}
			/^#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^[ \t]/ { next }
			{ key = tolower($1); sub(/:$/, "", key); $1 = ""; val = $0; sub(/^ +/, "", val)
			  if (key == "types") types = val
			  else if (key == "uris") uris = val
			  else if (key == "suites") suites = val
			  else if (key == "components") comps = val
			  else if (key == "enabled") enabled = tolower(val)
			  else if (key == "signed-by") { signed = 1; signedby = val } }
			END { flush() }' "$f"
	done
}
entries=$(apt_entries)
# the archive: the first entry whose suite has no "-updates"/"-security" tail;
# security updates: the first "-security" entry (any release: the host may run
# a newer Debian than the root it makes)
mirror=$(printf '%s\n' "$entries" | awk '$2 !~ /-/ && $1 != "" { print $1; exit }')
security=$(printf '%s\n' "$entries" | awk '$2 ~ /-security$/ { print $1; exit }')
[ -n "$mirror" ] || { echo "fresh-machine: no Debian archive (a deb entry with component main) in /etc/apt/sources.list{,.d}" >&2; exit 2; }

# ---- the work folder, and its undoing on every exit
work=$(mktemp -d "${FRESH_DIR:-/var/tmp}/uniap-fresh.XXXXXX") || exit 2
# the physical path: /proc/PID/root and /proc/self/mounts show that one
root=$(cd "$work" && pwd -P)/root
job=""
# the pids of the processes whose root is the chroot (by /proc/PID/root)
root_pids() {
	for d in /proc/[0-9]*; do
		[ "$(readlink "$d/root" 2>/dev/null)" = "$root" ] && echo "${d#/proc/}"
	done
}
# mount points at or under the root, deepest first
root_mounts() {
	awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}
cleanup() {
	trap - EXIT INT TERM HUP
	pids=$(root_pids)
	if [ -n "$pids" ]; then
		# shellcheck disable=SC2086
		kill -TERM $pids 2>/dev/null
		sleep 2
		# shellcheck disable=SC2086
		kill -KILL $(root_pids) 2>/dev/null
	fi
	for m in $(root_mounts); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	if [ -n "$(root_mounts)" ]; then
		say "left $work in place: still mounted: $(root_mounts | tr '\n' ' ')" >&2
	elif [ "${FRESH_KEEP:-}" = 1 ]; then
		say "kept the root: $root"
	else
		# --one-file-system: never follow into a mount, should one remain
		rm -rf --one-file-system "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# run_in [NAME=VALUE...] CMD...: a command in the chroot, with a login's
# environment only (and the NAME=VALUE pairs)
# ($extra_env: the host's extra TLS trust for Node.js, when it has one, below)
extra_env=
run_in() {
	# shellcheck disable=SC2086
	chroot "$root" /usr/bin/env -i HOME=/root PATH=$ENV_PATH LANG=C.UTF-8 TERM=dumb $extra_env "$@"
}

# ---- 1. the bare root
header "1/$STEPS a bare Debian 12 ($SUITE, debootstrap --variant=minbase) from $mirror"
if ! command -v debootstrap >/dev/null 2>&1; then
	say "installing debootstrap on this machine"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap ||
		{ DEBIAN_FRONTEND=noninteractive apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap; } ||
		{ bad "could not install debootstrap"; finish; }
fi
include=""
case "$mirror $security" in
# apt verifies https mirrors with ca-certificates: a machine installed from an
# https mirror has it, so the bare root gets it too (and nothing else)
*https://*) include=--include=ca-certificates ;;
esac
cache=""
if [ "${FRESH_CACHE:-}" = 1 ]; then
	cache=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/uniap/$SUITE-minbase-$(dpkg --print-architecture)-$(date +%Y%m%d).tar
	mkdir -p "$(dirname "$cache")"
fi
mkdir -p "$root"
if [ -n "$cache" ] && [ -s "$cache" ]; then
	say "today's base root from $cache"
	tar -x -C "$root" -f "$cache"
	rc=$?
else
	# shellcheck disable=SC2086
	debootstrap --variant=minbase $include "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] || tail -n 20 "$work/debootstrap.log"
	[ "$rc" -eq 0 ] && [ -n "$cache" ] && tar -c -C "$root" -f "$cache" .
fi
[ "$rc" -eq 0 ] || { bad "debootstrap exited $rc"; finish; }
# the sources a Debian 12 machine has: the archive, its updates, security
{
	echo "deb $mirror $SUITE main"
	echo "deb $mirror $SUITE-updates main"
	[ -z "$security" ] || echo "deb $security $SUITE-security main"
} >"$root/etc/apt/sources.list"
rm -f "$root"/etc/apt/sources.list.d/*
cat /etc/resolv.conf >"$root/etc/resolv.conf"
# the network's TLS trust as this machine has it for Node.js (NODE_EXTRA_CA_CERTS: a network
# whose proxy signs with its own CA): npm in the root reaches the registry as npm here does.
# A file of its own, never in /etc/ssl, which the root's ca-certificates package owns
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r "$NODE_EXTRA_CA_CERTS" ]; then
	cat "$NODE_EXTRA_CA_CERTS" >"$root/etc/uniap-host-extra-ca.pem"
	extra_env=NODE_EXTRA_CA_CERTS=/etc/uniap-host-extra-ca.pem
fi
# debootstrap writes no /etc/hosts; Debian's installer (and every container
# runtime) does, with these loopback names: a bare machine has them
[ -s "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
	>"$root/etc/hosts"
mount -t proc proc "$root/proc" &&
	mount -t sysfs sysfs "$root/sys" &&
	mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" &&
	mount -t tmpfs tmpfs "$root/tmp" ||
	{ bad "could not mount /proc, /sys, /dev and /tmp in the root"; finish; }
# bare: none of the packages of the lists under deps/ is there yet, but for
# the libraries minbase itself is made of (apt needs libnettle8 through gnutls)
installed=$(run_in dpkg-query -W -f '${Package}\n')
present=""
for p in $(sed 's/#.*//' deps/debian-*.txt | awk 'NF { print $1 }' | sort -u); do
	case "$p" in zlib1g | libbz2-1.0 | libnettle8) continue ;; esac
	printf '%s\n' "$installed" | grep -qx "$p" && present="$present $p"
done
if [ -n "$present" ]; then
	bad "the root is not bare: it has$present"
	finish
fi
ok "a bare root: $(printf '%s\n' "$installed" | wc -l) packages, none from deps/; apt sources: $mirror${security:+, $security}"

# ---- the committed tree, as a clone has it
head=$(git rev-parse --short HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	say "note: uncommitted changes are not tested; the committed tree $head is"
fi
mkdir -p "$root/root/uniap"
git archive --format=tar HEAD | tar -x -C "$root/root/uniap" || { bad "git archive HEAD failed"; finish; }
# Galvatron's fixtures where the tests look for them (beside the checkout, or this machine's
# /work/shared), put beside the root's checkout
for fixtures in ../shared/fixtures /work/shared/fixtures; do
	[ -d "$fixtures" ] || continue
	mkdir -p "$root/root/shared"
	cp -R "$fixtures" "$root/root/shared/" || { bad "could not copy $fixtures"; finish; }
	break
done

# ---- 2. the README's test command
header "2/$STEPS cd /root/uniap && sh scripts/install-deps.sh && make test TEST_PASSES='$PASSES' ($head)"
{ run_in sh -c "cd /root/uniap && sh scripts/install-deps.sh && make test TEST_PASSES='$PASSES'" 2>&1
  echo $? >"$work/test.rc"; } | tee "$work/test.log"
rc=$(cat "$work/test.rc")
# the summary line (make's own "*** ... Error" follows it when tests failed)
last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$work/test.log" | tail -n 1)
if [ "$rc" -eq 0 ] && printf '%s\n' "$last" | grep -Eq '^[0-9]+ passed, 0 failed(, [0-9]+ skipped)?$'; then
	ok "the test command: $last"
else
	grep -E '^build of the .* pass failed|: [0-9]+ failed in the .* pass$' "$work/test.log"
	bad "the test command exited $rc; its summary: ${last:-none}"
fi
test_summary=${last:-none}

# ---- 3. the sanitizer passes need nothing more: their programs build, and run
header "3/$STEPS cd /root/uniap && make sanitizer-builds (the ASan and TSan passes' programs, not run)"
if run_in sh -c 'cd /root/uniap && make sanitizer-builds && build/asan/uniap catalog >/dev/null &&
	build/tsan/uniap catalog >/dev/null' >"$work/san.log" 2>&1; then
	ok "the ASan and TSan passes' programs build and run with the packages installed"
else
	tail -n 20 "$work/san.log"
	bad "make sanitizer-builds failed: a package the sanitizer passes need is missing from deps/"
fi

# ---- 4. the README's main job, in the background, until /healthz answers
# a free port for make run: 8080 unless something on this machine listens there
port_in_use() {
	awk -v p="$(printf '%04X' "$1")" '$4 == "0A" { split($2, a, ":"); if (a[2] == p) f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}
port=8080
while port_in_use "$port" && [ "$port" -lt 8180 ]; do port=$((port + 1)); done
U=http://127.0.0.1:$port
header "4/$STEPS cd /root/uniap && sh scripts/install-deps.sh build && make run PORT=$port (in the background)"
# its own session, so that every process of it can be found and stopped
# shellcheck disable=SC2086
setsid chroot "$root" /usr/bin/env -i HOME=/root PATH=$ENV_PATH LANG=C.UTF-8 TERM=dumb $extra_env \
	sh -c "cd /root/uniap && sh scripts/install-deps.sh build && make run PORT=$port" \
	>"$work/run.log" 2>&1 </dev/null &
job=$!
healthy=0
waited=0
while [ "$waited" -lt "$HEALTH_WAIT_S" ] && kill -0 "$job" 2>/dev/null; do
	if run_in curl -fsS -o /dev/null --max-time 2 "$U/healthz" 2>/dev/null; then
		healthy=1
		break
	fi
	sleep 1
	waited=$((waited + 1))
done
if [ "$healthy" = 1 ]; then
	ok "make run answers $U/healthz after ${waited} s"
else
	tail -n 30 "$work/run.log"
	if kill -0 "$job" 2>/dev/null; then
		bad "make run: no answer on $U/healthz in $HEALTH_WAIT_S s"
	else
		bad "make run ended before $U/healthz answered"
	fi
fi

# ---- 5. the README's flow against it
header "5/$STEPS U=$U sh examples/flow.sh"
if [ "$healthy" != 1 ]; then
	say "not run: make run is not answering"
elif [ ! -f "$root/root/uniap/examples/flow.sh" ]; then
	bad "examples/flow.sh is not in the committed tree"
else
	run_in U="$U" sh -c 'cd /root/uniap && sh examples/flow.sh' 2>&1
	rc=$?
	# the quick start's two curl lines (the README's block, on this port): the plan as text
	# (one step with the flow: the steps are counted, STEPS)
	awk 'index($0, "<!-- end: quick start") == 1 { on = 0 } on && /^    / { print substr($0, 5) }
	     index($0, "<!-- begin: quick start") == 1 { on = 1 }' "$root/root/uniap/README.md" |
		sed "s|127.0.0.1:8080|${U#http://}|g" >"$root/root/quick.sh"
	run_in sh /root/quick.sh 2>&1 | tee "$root/root/quick.out"
	if [ "$rc" -ne 0 ]; then
		bad "examples/flow.sh exited $rc"
	elif ! grep -q '^plan: pp ' "$root/root/quick.out"; then
		bad "the quick start printed no plan"
	else
		ok "the flow ran to its end, and the quick start printed a plan"
	fi
fi

# ---- 6. SIGTERM to uniapd; make run must exit 0
header "6/$STEPS stop: SIGTERM to uniapd"
# uniapd: the process named uniapd in the job's session (setsid made the job
# a session leader, so its session id is its pid)
session_pid_named() {
	want=$1
	for d in /proc/[0-9]*; do
		# stat: "PID (COMM) STATE PPID PGRP SESSION ..."; COMM may hold spaces
		st=$(sed 's/^.*) //' "$d/stat" 2>/dev/null) || continue
		# shellcheck disable=SC2086
		set -- $st
		[ "$#" -ge 4 ] && [ "$4" = "$job" ] && [ "$1" != Z ] || continue
		[ "$(cat "$d/comm" 2>/dev/null)" = "$want" ] || continue
		echo "${d#/proc/}"
		return
	done
}
uniapd=$(session_pid_named uniapd)
if [ -z "$uniapd" ]; then
	say "not run: no uniapd in make run's session"
	[ -z "$job" ] || kill -TERM -- "-$job" 2>/dev/null
else
	kill -TERM "$uniapd"
	waited=0
	while kill -0 "$job" 2>/dev/null && [ "$waited" -lt "$STOP_WAIT_S" ]; do
		sleep 1
		waited=$((waited + 1))
	done
	if kill -0 "$job" 2>/dev/null; then
		tail -n 20 "$work/run.log"
		bad "make run still running $STOP_WAIT_S s after SIGTERM"
		kill -KILL -- "-$job" 2>/dev/null
	else
		wait "$job"
		rc=$?
		tail -n 5 "$work/run.log"
		if [ "$rc" -eq 0 ]; then ok "make run exited 0, ${waited} s after SIGTERM"; else bad "make run exited $rc after SIGTERM"; fi
	fi
fi
finish
