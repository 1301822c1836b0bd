#!/bin/sh
# scripts/install-deps.sh [LIST...] - installs the Debian 12 packages of
# deps/debian-LIST.txt; LIST is build (building and testing uniap), browser-test
# (chromium, nodejs, npm: the browser tests), db-test (postgresql: the tests of
# the PostgreSQL store), deploy-test (yamllint, docker-compose, promtool: the
# checks of deploy/), bench (wrk, for make bench) or runtime.  Without a
# LIST: build, browser-test, db-test and deploy-test, what `make test` runs with.
# No package it installs starts a service: while apt-get runs, a policy-rc.d
# denies every start (unless the machine has its own policy-rc.d, as
# containers do); the tests start the servers they need themselves.
# A package counts as there when it is installed or when an installed package
# Provides it (NodeSource's nodejs provides npm; installing Debian's would
# remove it).
# Runs apt-get as root, or through sudo when run by another user.  Skips
# apt-get when everything is already installed, so repeated runs are quick.
# Never installs anything else, so a bare Debian 12 (debootstrap minbase) is
# enough to start from: it needs only dpkg-query, apt-get and id.
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- build browser-test db-test deploy-test
pkgs=""
for list in "$@"; do
	f=deps/debian-$list.txt
	[ -f "$f" ] || { echo "install-deps: no list $f (lists: $(ls deps | sed -n 's/^debian-\(.*\)\.txt$/\1/p' | tr '\n' ' '))" >&2; exit 2; }
	# the package is the first word of each line; the rest and #-comments are notes
	pkgs="$pkgs $(sed 's/#.*//' "$f" | awk 'NF { print $1 }' | tr '\n' ' ')"
done
# the names the installed packages provide, one a line, without versions
provided=$(dpkg-query -W -f='${db:Status-Status} ${Provides}\n' 2>/dev/null |
	awk '$1 == "installed" { $1 = ""; print }' | tr ',' '\n' | sed 's/([^)]*)//; s/^ *//; s/ *$//')
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		printf '%s\n' "$provided" | grep -qx -- "$p" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
	as_root=""
elif command -v sudo >/dev/null 2>&1; then
	as_root="sudo"
else
	echo "install-deps: need root (or sudo) to install:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
	policy=/usr/sbin/policy-rc.d
	# invoke-rc.d's hook (Debian policy 9.3.3.1): exit 101 means "action forbidden"
	$as_root sh -c 'printf "#!/bin/sh\n# scripts/install-deps.sh: no service starts while it installs\nexit 101\n" >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d'
	trap '$as_root rm -f "$policy"' EXIT
fi
$as_root apt-get update
# shellcheck disable=SC2086
$as_root apt-get install -y --no-install-recommends $missing
