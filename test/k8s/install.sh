#!/usr/bin/env bash
# install.sh: build the pinned kube-apiserver (test/k8s/apiserver, its
# version in that module's go.mod) into the server cache, unless it is there
# already. The tests start it themselves on 127.0.0.1, on the pinned etcd
# (internal/testkit/k8stest), from NODEID_KUBE_APISERVER_BIN, default
# <cache>/bin/kube-apiserver. A cold build took 10 m 45 s on 2 cores with the
# modules already downloaded (real 10m44.7s, user 8m14.9s, sys 1m41.9s; a
# 171 MB binary), on top of downloading the modules when the module cache is
# cold; a cached one costs nothing but this check.
#
#   install.sh          build if needed; print the binary's path
#
# Environment: NODEID_SERVER_CACHE (default ~/.cache/nodeid-servers).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/cached.bash
source "$here/../lib/cached.bash"

version=$(cd "$here/apiserver" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
# The version the binary reports (and emulates): without it, v0.0.0-master.
build() {
	(cd "$here/apiserver" && go build -trimpath \
		-ldflags "-X k8s.io/component-base/version.gitVersion=$version" \
		-o "$1" k8s.io/kubernetes/cmd/kube-apiserver)
}
cached_build kube-apiserver "k8s.io/kubernetes@$version" "about 11 minutes cold on 2 cores" build
