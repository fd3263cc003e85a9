#!/usr/bin/env bash
# spin.sh: put the spin model checker from Debian's package (6.5.2 on Debian
# 12) in the server cache and print its path. spec/check.sh runs it on the
# lease protocol's model (spec/lease.pml). spin turns a model into C, so a C
# compiler (gcc) must be on the machine too: test/all.sh installs one for the
# race detector.
#
# The binary is taken out of the package with apt-get download and dpkg-deb -x,
# as test/promtool.sh does, so nothing is installed system-wide.
#
#   NODEID_SERVER_CACHE  where binaries are cached (default ~/.cache/nodeid-servers)
set -euo pipefail

readonly PACKAGE=spin

cache=${NODEID_SERVER_CACHE:-$HOME/.cache/nodeid-servers}
bin=$cache/bin

# The version is the distribution's (security updates replace a version on the
# mirrors, so an exact pin would break); spin.version records which.
if [[ -x $bin/spin && -f $bin/spin.version ]]; then
	echo "$bin/spin"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-spin.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
download() { (cd "$tmp" && apt-get download -q "$PACKAGE" >/dev/null 2>&1); }
if ! download; then
	# A fresh machine may have no package lists yet.
	if [[ $(id -u) == 0 ]]; then
		apt-get update -qq >/dev/null
	else
		sudo apt-get update -qq >/dev/null
	fi
	download || {
		echo "spin.sh: apt-get download $PACKAGE failed" >&2
		exit 1
	}
fi
dpkg-deb -x "$tmp"/${PACKAGE}_*.deb "$tmp/root"
mkdir -p "$bin"
install -m 0755 "$tmp/root/usr/bin/spin" "$bin/spin"
deb=$(basename "$tmp"/${PACKAGE}_*.deb)
printf '%s\n' "$deb" >"$bin/spin.version"
"$bin/spin" -V >&2
echo "$bin/spin"
