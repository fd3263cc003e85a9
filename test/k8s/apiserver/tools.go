//go:build tools

// Package apiserver pins kube-apiserver, at the version of k8s.io/kubernetes
// in this module's go.mod, for nodeid's tests: test/k8s/install.sh builds
// k8s.io/kubernetes/cmd/kube-apiserver from this module into the server
// cache. It imports what the command's main package imports (a program cannot
// be imported), so that go mod tidy keeps every module the build needs. Kubernetes' own go.mod
// requires its staging modules (k8s.io/api, k8s.io/apiserver, ...) at v0.0.0
// and replaces them with folders of its repository, so `go install
// k8s.io/kubernetes/cmd/kube-apiserver@VERSION` refuses to build it; this
// module replaces each of them with its published release of the same minor
// (v1.37.2: v0.37.2) instead.
package apiserver

import (
	_ "k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
)
