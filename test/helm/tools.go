//go:build tools

// Package helm pins the Helm CLI (helm.sh/helm/v3/cmd/helm, at the version in
// this module's go.mod) for nodeid's chart tests: test/helm/install.sh builds
// it into the server cache, and deploy/helm_test.go runs `helm lint` and
// `helm template` with it.
package helm

import _ "helm.sh/helm/v3/cmd/helm"
