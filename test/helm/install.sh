#!/usr/bin/env bash
# install.sh: build the pinned Helm CLI (helm.sh/helm/v3/cmd/helm, its version
# in this directory's go.mod) into the server cache, unless it is there
# already, for the chart tests (deploy/helm_test.go, NODEID_TEST_HELM). The
# link flags are the ones Helm's Makefile sets: its version, and the
# Kubernetes version of its client-go, which `helm lint` and `helm template`
# take as the cluster's when no --kube-version is given. A cold build (empty
# module and build caches) took 1 min 46 s (real; 2 min 21 s user) on 2 cores shared with other
# work (module downloads included).
#
#   install.sh          build if needed; print the binary's path
#
# Environment: NODEID_SERVER_CACHE (default ~/.cache/nodeid-servers).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/cached.bash
source "$here/../lib/cached.bash"

version=$(cd "$here" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
build() {
	local k8s minor ldflags pkg
	k8s=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/client-go) # v0.35.1 is Kubernetes 1.35
	k8s=${k8s#v0.}
	minor=${k8s%%.*}
	ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
	for pkg in pkg/chartutil pkg/lint/rules; do
		ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$minor"
	done
	(cd "$here" && nice -n 10 go build -trimpath -ldflags="$ldflags" -o "$1" helm.sh/helm/v3/cmd/helm)
}
cached_build helm "helm.sh/helm/v3@$version" "about 2 minutes cold" build
