#!/usr/bin/env bash
# install.sh: build the pinned etcd server (test/etcd/server, its version in
# that module's go.mod) into the server cache, unless it is there already.
# The tests start it themselves on 127.0.0.1 (internal/testkit/etcdtest) from
# NODEID_ETCD_BIN, default <cache>/bin/etcd. A cold build takes about 2
# minutes on 2 cores (module downloads included).
#
#   install.sh          build if needed; print the binary's path
#
# Environment: NODEID_SERVER_CACHE (default ~/.cache/nodeid-servers).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NODEID_SERVER_CACHE:-$HOME/.cache/nodeid-servers}
bin=$cache/bin
exe=$bin/etcd
stamp=$bin/etcd.version

version=$(cd "$here/server" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
want="go.etcd.io/etcd/server/v3@$version"
if [[ -x $exe && -f $stamp && "$(<"$stamp")" == "$want" ]]; then
	echo "install.sh: etcd cached ($want)" >&2
	printf '%s\n' "$exe"
	exit 0
fi
echo "install.sh: building etcd $want (about 2 minutes cold)" >&2
mkdir -p "$bin"
rm -f "$stamp"
(cd "$here/server" && go build -trimpath -o "$exe.tmp" . && mv "$exe.tmp" "$exe")
printf '%s\n' "$want" >"$stamp"
echo "install.sh: installed $exe" >&2
printf '%s\n' "$exe"
