#!/usr/bin/env bash
# promtool.sh: put Prometheus's promtool from Debian's package (2.42 on Debian
# 12) in the server cache and print its path. deploy/kit_test.go checks the alert rules
# with it (promtool check rules, promtool test rules).
#
# The binary is taken out of Debian's prometheus package with apt-get download
# and dpkg-deb -x, so that no Prometheus service is installed or started.
#
#   NODEID_SERVER_CACHE  where binaries are cached (default ~/.cache/nodeid-servers)
set -euo pipefail

readonly PACKAGE=prometheus

cache=${NODEID_SERVER_CACHE:-$HOME/.cache/nodeid-servers}
bin=$cache/bin

# The version is the distribution's (security updates replace a version on the
# mirrors, so an exact pin would break); promtool.version records which.
if [[ -x $bin/promtool && -f $bin/promtool.version ]]; then
	echo "$bin/promtool"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-promtool.XXXXXX")
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
		echo "promtool.sh: apt-get download $PACKAGE failed" >&2
		exit 1
	}
fi
dpkg-deb -x "$tmp"/${PACKAGE}_*.deb "$tmp/root"
mkdir -p "$bin"
install -m 0755 "$tmp/root/usr/bin/promtool" "$bin/promtool"
deb=$(basename "$tmp"/${PACKAGE}_*.deb)
printf '%s\n' "$deb" >"$bin/promtool.version"
"$bin/promtool" --version >&2
echo "$bin/promtool"
