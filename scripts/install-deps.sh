#!/bin/sh
# scripts/install-deps.sh - installs the Debian 12 packages that building and
# testing uniap needs (listed in deps/debian-build.txt).  Runs apt-get as root,
# or through sudo when run by another user.  Skips apt-get when everything is
# already installed, so repeated runs are quick.
set -eu
cd "$(dirname "$0")/.."
pkgs=$(grep -v '^#' deps/debian-build.txt | tr '\n' ' ')
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
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
$as_root apt-get update
# shellcheck disable=SC2086
$as_root apt-get install -y --no-install-recommends $missing
