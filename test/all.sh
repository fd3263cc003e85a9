#!/usr/bin/env bash
# all.sh: every check and test of nodeid, on a fresh Debian machine with only Go
# installed (README: `bash test/all.sh`; CI runs it through .ci/run with CI=true).
#
#  1. gofmt -l (fails on any unformatted file), go vet, staticcheck (pinned,
#     cached next to the servers);
#  2. the ID clients not written in Go (clients/): python3 (with venv), node
#     (with npm) and a JDK (installed with apt-get when missing), each
#     client's own unit tests; clients/conformance (step 3) runs all three
#     against real brokers, and the README's quick starts after a local
#     install;
#  2a. puts promtool (from Debian's prometheus package, test/promtool.sh) and
#     AWS CloudFormation Validate (npm, test/cfn-validate.sh) in the server
#     cache, and systemd-analyze on the machine, for the operator kit's checks
#     (deploy/kit_test.go, deploy/cloudformation_test.go), and builds or
#     reuses helm (test/helm/install.sh, from the Go module proxy; about 2
#     minutes cold) for the Helm chart's (deploy/helm_test.go);
#  2c. builds the broker's container image from deploy/Dockerfile with buildah
#     (test/image.sh, a few seconds; buildah, podman and runc installed with
#     apt-get when missing), which deploy/image_test.go runs with podman in
#     step 3 (with CI=true a missing image fails it instead of skipping);
#  2b. builds or reuses MinIO and versitygw (test/minio/servers.sh; a cold MinIO
#     build takes about 5 minutes on 2 cores), starts them on 127.0.0.1 and stops
#     them on exit;
#     It also installs or reuses the storage emulators (test/emulators.sh):
#     Azurite (npm), the Azure Blob emulator, for azblobstore's tests
#     (NODEID_TEST_AZURITE_URL), and fake-gcs-server (go install, a binary in
#     the server cache), the Google Cloud Storage emulator, for gcsstore's
#     (NODEID_TEST_FAKEGCS_URL); it starts both on 127.0.0.1 in memory and
#     stops them on exit;
#     It also builds or reuses the pinned etcd server (test/etcd/install.sh;
#     about 2 minutes cold), which the etcd tests start themselves, and the
#     pinned kube-apiserver (test/k8s/install.sh; about 11 minutes cold),
#     which k8sstore's tests start on that etcd;
#  3. go test -race -count=1 ./..., with the servers' endpoints exported, so the
#     conformance suite runs on the in-memory store, gofakes3, MinIO,
#     versitygw, Azurite, fake-gcs-server, etcd and kube-apiserver (with
#     CI=true a missing server fails instead of skipping). The
#     race detector needs a C compiler; without one the tests run without it,
#     with a warning (with CI=true, that is a failure);
#  3b. the deterministic simulation's full seed sets and catch rates, without
#     the race detector (under it they run every tenth seed);
#  3c. the lease protocol's model (spec/lease.pml, spec/README.md): spin,
#     from Debian's package in the same cache (test/spin.sh), checks it
#     exhaustively for two tasks and shows that each broken rule is caught
#     (spec/check.sh, under a minute on 2 cores; its --full exploration is
#     not run here);
#  4. the fault suite (test/faults, docs/evidence/faults.md): go test -tags faults, real
#     nodeid-broker processes on a MinIO of its own under kills, pauses,
#     partitions, ambiguous writes and MinIO restarts, then every safety check,
#     and the same on an etcd of its own (kills, pauses, partitions, etcd
#     restarts), and a partition script on Azurite and on fake-gcs-server
#     (the emulators above) and on a kube-apiserver of its own (with a
#     restart of it); about 7 minutes. It replays the seeds of
#     test/faults/corpus.txt, the same ones on every run: random seeds are
#     bash test/explore.sh's. Not under -race: the brokers are separate processes, and
#     the race detector would slow the timing-sensitive runs for nothing (the
#     suite's own code runs under -race in step 3). With CI=true a missing
#     MinIO binary fails it instead of skipping;
#  (after staticcheck, as they take seconds and a module out of date is
#  better found before the long steps) if bench/ has its own go.mod: go vet
#  and a compile-and-run check of its tests (no benchmarks); each example
#  module under examples/ (it uses nodeid as an outside user would, through a
#  replace directive): vet, staticcheck, its tests.
#
# NODEID_TEST_VERBOSE=1 adds -v to go test.
set -euo pipefail

readonly STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2

cd "$(dirname "${BASH_SOURCE[0]}")/.."
cache=${NODEID_SERVER_CACHE:-$HOME/.cache/nodeid-servers}
bin=$cache/bin
servers=test/minio/servers.sh
began=$SECONDS

step() { printf '\n=== %s (%ds)\n' "$*" "$((SECONDS - began))"; }

step "toolchain"
go version

step "gofmt"
unformatted=$(gofmt -l .)
if [[ -n $unformatted ]]; then
	printf 'gofmt: these files are not formatted (run gofmt -w):\n%s\n' "$unformatted" >&2
	exit 1
fi

step "go vet"
go vet ./...
go vet -tags faults ./test/faults/...
if [[ -f bench/go.mod ]]; then
	(cd bench && go vet ./...)
fi

step "staticcheck"
if [[ ! -x $bin/staticcheck || ! -f $bin/staticcheck.version || "$(<"$bin/staticcheck.version")" != "$STATICCHECK" ]]; then
	mkdir -p "$bin"
	GOBIN=$bin go install "$STATICCHECK"
	printf '%s\n' "$STATICCHECK" >"$bin/staticcheck.version"
fi
"$bin/staticcheck" ./...
"$bin/staticcheck" -tags faults ./test/faults/...

step "race detector: a C compiler"
flags=(-race -count=1)
if [[ ${NODEID_TEST_VERBOSE:-} == 1 ]]; then
	flags+=(-v)
fi
# The race detector needs cgo, hence a C compiler, which a machine with only Go
# may lack (Go then turns cgo off).
if [[ $(go env CGO_ENABLED) != 1 ]] && ! command -v cc >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
	echo "no C compiler: installing gcc for the race detector (apt-get)" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null
	export CGO_ENABLED=1
fi
if [[ $(go env CGO_ENABLED) != 1 ]]; then
	if [[ ${CI:-} == true ]]; then
		echo "go test -race needs cgo and a C compiler (apt-get install -y gcc)" >&2
		exit 1
	fi
	echo "WARNING: no C compiler, so cgo is off: running the tests WITHOUT the race detector (apt-get install -y gcc to enable it)" >&2
	flags=("${flags[@]:1}")
fi

if [[ -f bench/go.mod ]]; then
	step "bench: tests, benchmarks compiled only"
	(cd bench && go test -count=1 -run . -bench='^$' ./...)
fi

# Each example under examples/ is a module of its own that uses nodeid as an
# outside user does (a replace directive points at this checkout).
for mod in examples/*/go.mod; do
	[[ -f $mod ]] || continue
	dir=$(dirname "$mod")
	step "example $dir: vet, staticcheck and tests"
	(cd "$dir" && go vet ./... && "$bin/staticcheck" ./... && go test "${flags[@]}" ./...)
done

step "ID clients in Python, Node.js and Java (clients/)"
# The clients an application not written in Go uses (clients/README.md): their
# own unit tests here; clients/conformance runs each as a broker's child and
# over scripted id files in step 3, and installs the Python and Node.js ones
# as the README says (a venv and pip, npm), so all of these must be there for
# step 3 too.
apt_install() {
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		echo "installing $1 (apt-get)" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
	fi
}
for tool in python3:python3 node:nodejs npm:npm javac:default-jdk-headless; do
	command -v "${tool%%:*}" >/dev/null || apt_install "${tool#*:}"
done
python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv
(cd clients/python && python3 -B -m unittest discover -s tests -v)
node --test clients/node/test/
bash clients/java/build.sh test

step "operator kit tools"
# promtool checks deploy/prometheus's alert rules, systemd-analyze the systemd
# unit (deploy/kit_test.go; with CI=true a missing one fails the test).
NODEID_TEST_PROMTOOL=$(bash test/promtool.sh)
export NODEID_TEST_PROMTOOL
# AWS CloudFormation Validate (npm), for deploy/cloudformation: the tests run
# the documented deploy/cloudformation/validate.sh with it
# (deploy/cloudformation_test.go; test/cfn-validate.sh says why this tool).
NODEID_TEST_CFN_VALIDATE=$(bash test/cfn-validate.sh)
export NODEID_TEST_CFN_VALIDATE
# helm, for the chart deploy/helm/nodeid: helm lint and template for each
# store's values, decoded strictly into the Kubernetes types
# (deploy/helm_test.go; with CI=true a missing helm fails the test).
NODEID_TEST_HELM=$(bash test/helm/install.sh)
export NODEID_TEST_HELM
if ! command -v systemd-analyze >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
	echo "no systemd-analyze: installing systemd (apt-get)" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null
fi

step "container image (test/image.sh)"
# deploy/Dockerfile's final stage, on deploy/rootfs.sh's output in place of
# the build stage (no registry to pull golang:1.26 from); TestImageRuns runs
# it with podman and takes its ID from NODEID_TEST_IMAGE.
if ! NODEID_TEST_IMAGE=$(bash test/image.sh); then
	if [[ ${CI:-} == true ]]; then
		exit 1
	fi
	echo "WARNING: no container image (test/image.sh failed): deploy's TestImageRuns will skip" >&2
	NODEID_TEST_IMAGE=
fi
export NODEID_TEST_IMAGE

step "S3 servers"
# A state folder of our own, so servers someone started by hand are left alone.
NODEID_SERVER_STATE=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-all.XXXXXX")
export NODEID_SERVER_STATE
cleanup() {
	bash "$servers" stop || true
	bash test/emulators.sh stop || true
	rm -rf "$NODEID_SERVER_STATE"
}
trap cleanup EXIT
bash "$servers" install
bash "$servers" start
eval "$(bash "$servers" env)"

step "storage emulators: Azurite (Azure Blob) and fake-gcs-server (Cloud Storage)"
# Cached next to the servers (test/emulators.sh; Azurite about a minute cold
# with npm, fake-gcs-server about two with go install; a few seconds to
# start); azblobstore's tests read NODEID_TEST_AZURITE_URL, gcsstore's
# NODEID_TEST_FAKEGCS_URL.
emulators_env=$(bash test/emulators.sh start)
eval "$emulators_env"

step "etcd server"
NODEID_ETCD_BIN=$(bash test/etcd/install.sh)
export NODEID_ETCD_BIN
# The pinned server is a module of its own: vet it here, as ./... skips it.
(cd test/etcd/server && go vet ./...)

step "kube-apiserver"
# Built from test/k8s/apiserver into the server cache (test/k8s/install.sh:
# 10 m 45 s cold on 2 cores, a check of its stamp warm); k8sstore's tests
# start it on the pinned etcd themselves (internal/testkit/k8stest).
NODEID_KUBE_APISERVER_BIN=$(bash test/k8s/install.sh)
export NODEID_KUBE_APISERVER_BIN
# Its module is one of its own, as ./... skips it: check that its go.mod and
# go.sum resolve every package the command needs (vet would compile some
# 2,000 packages to check a file of imports).
(cd test/k8s/apiserver && go list -tags tools -deps ./... k8s.io/kubernetes/cmd/kube-apiserver >/dev/null)

step "go test -race"
# cmd/nodeid-broker's TestServeGossipPartitionHeals cuts real brokers apart in
# network namespaces of its own, made with ip (iproute2) and nsenter
# (util-linux); with CI=true it fails where it cannot make them.
command -v ip >/dev/null || apt_install iproute2
go test "${flags[@]}" ./...

step "the deterministic simulation: every seed, every mutation (nodeid, without -race)"
# Under the race detector the simulation runs every tenth seed and no
# catch-rate test (nodeid/sim_test.go: the race detector needs the code
# paths, not the coverage); here the full seed sets and every mutation's
# catch rate, several minutes of CPU (docs/evidence/simulation.md).
go test -count=1 -timeout 30m -run 'Simulation' ./nodeid

step "model check (spin: spec/check.sh)"
SPIN=$(bash test/spin.sh)
export SPIN
nice -n 5 bash spec/check.sh

step "fault suite (go test -tags faults ./test/faults)"
# -v: the schedule, the events and the SUMMARY lines belong in the log.
go test -tags faults -count=1 -v -timeout 15m ./test/faults/...

step "all checks passed"
