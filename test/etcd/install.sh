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
# shellcheck source=../lib/cached.bash
source "$here/../lib/cached.bash"

version=$(cd "$here/server" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
build() { (cd "$here/server" && go build -trimpath -o "$1" .); }
cached_build etcd "go.etcd.io/etcd/server/v3@$version" "about 2 minutes cold" build
