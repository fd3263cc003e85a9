#!/usr/bin/env bash
# Runs nodeid-bench's standard set (docs/evidence/performance.md) against the embedded
# S3 (gofakes3) through the latency proxy, and with --minio also against the
# pinned MinIO build, started and stopped with test/minio/servers.sh.
#
#   bench/nodeid-bench.sh            # gofakes3 only, about 4 minutes (+1.5 for ids, +15 for read mode)
#   bench/nodeid-bench.sh --minio    # then MinIO as well (a cold MinIO build takes ~5 minutes)
#   bench/nodeid-bench.sh --minio --no-gofakes3   # MinIO only
#   bench/nodeid-bench.sh --k8s      # only the Kubernetes set: failover and steady on
#                                    # gofakes3 and on Kubernetes Leases (the pinned
#                                    # kube-apiserver, test/k8s/install.sh), about 10 minutes
#
# Environment: LATENCY (default 20ms), SEED (default 1), OUT (default
# bench/nodeid-bench-results). Each scenario prints its table and writes its
# JSON to $OUT/<server>/<scenario>.json. One scenario runs at a time: the
# figures are CPU-bound on a small machine, so keep it otherwise quiet.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
latency=${LATENCY:-20ms}
seed=${SEED:-1}
out=${OUT:-$repo/bench/nodeid-bench-results}
minio=false
gofakes3=true
k8s=false
for a in "$@"; do
	case $a in
	--minio) minio=true ;;
	--no-gofakes3) gofakes3=false ;;
	--k8s) k8s=true ;;
	-h | --help)
		sed -n '2,16p' "$0"
		exit 0
		;;
	*)
		echo "nodeid-bench.sh: unknown argument $a" >&2
		exit 2
		;;
	esac
done

bin=$(mktemp -d)
cleanup() {
	rm -rf "$bin"
	if [[ $minio == true ]]; then bash "$repo/test/minio/servers.sh" stop minio || true; fi
}
trap cleanup EXIT
(cd "$repo" && go build -o "$bin/nodeid-bench" ./cmd/nodeid-bench && go build -o "$bin/nodeid-broker" ./cmd/nodeid-broker)
nb=$bin/nodeid-bench

busy=$(ps -eo pcpu=,comm= | awk '$1 > 20 {print $2}' | tr '\n' ' ')
if [[ -n $busy ]]; then
	echo "nodeid-bench.sh: warning: other processes are busy ($busy); times will suffer" >&2
fi

# run_scenario SERVER NAME ARGS...: one nodeid-bench scenario with the
# caller's common flags, JSON into $out/SERVER/NAME.json; a failure is noted
# in failed, and the set goes on.
run_scenario() {
	local server=$1 name=$2
	shift 2
	echo
	echo "== nodeid-bench $* ${common[*]}"
	if ! "$nb" "$@" "${common[@]}" --json-out "$out/$server/$name.json"; then
		echo "nodeid-bench.sh: $server $name FAILED" >&2
		failed+=("$server/$name")
	fi
}

# standard_set SERVER [FLAGS...]: every scenario once, JSON into $out/SERVER.
standard_set() {
	local server=$1
	shift
	mkdir -p "$out/$server"
	local common=(--latency "$latency" --seed "$seed" "$@")
	run() { run_scenario "$server" "$@"; }
	run herd-256 herd --tasks 256 --ids 256 --orders spread,lowest-first,spread-filled
	run herd-1024 herd --tasks 1024 --ids 1024 --orders spread,spread-filled
	run join join --runs 5
	run join-recent join --runs 5 --free-age recent
	run rolling-256 rolling --ids 256 --batch 100%,50%
	run failover-5s failover --lease-duration 5s --runs 3
	run failover-15s failover --lease-duration 15s --runs 3
	run steady steady --lease-durations 5s,15s,60s
	# Read mode (keep-alive by reads) beside write mode: docs/evidence/performance.md, "Read mode".
	run steady-read steady --keepalive write,read --lease-durations 5s,15s,60s
	run failover-read failover --keepalive read --kinds noids,release --runs 3
	run failover-read-b60 failover --keepalive read --backstop 60s --kinds crash,noids --runs 3
	run failover-write-gossip failover --lease-duration 15s --gossip --kinds crash,noids,release --runs 3
	run rolling-read-256 rolling --ids 256 --batch 100%,50% --keepalive read --gossip
	run ids ids --broker-bin "$bin/nodeid-broker"
}

# k8s_set SERVER [FLAGS...]: failover after a kill, release to take (with
# gossip) and steady requests, beside S3 in one run (docs/evidence/performance.md,
# "Kubernetes Leases").
k8s_set() {
	local server=$1
	shift
	mkdir -p "$out/$server"
	local common=(--latency "$latency" --seed "$seed" "$@")
	run_scenario "$server" failover-15s failover --lease-duration 15s --runs 3
	run_scenario "$server" failover-write-gossip failover --lease-duration 15s --gossip --kinds crash,noids,release --runs 3
	run_scenario "$server" steady steady --lease-durations 5s,15s,60s
}

failed=()
if [[ $k8s == true ]]; then
	NODEID_KUBE_APISERVER_BIN=$(bash "$repo/test/k8s/install.sh")
	NODEID_ETCD_BIN=$(bash "$repo/test/etcd/install.sh")
	export NODEID_KUBE_APISERVER_BIN NODEID_ETCD_BIN
	k8s_set gofakes3
	k8s_set k8s --store k8s
	gofakes3=false minio=false # the Kubernetes set alone
fi
if [[ $gofakes3 == true ]]; then standard_set gofakes3; fi

if [[ $minio == true ]]; then
	bash "$repo/test/minio/servers.sh" install minio
	bash "$repo/test/minio/servers.sh" start minio
	eval "$(bash "$repo/test/minio/servers.sh" env minio)"
	standard_set minio --s3-endpoint "$NODEID_TEST_MINIO_ENDPOINT" \
		--s3-access-key "$NODEID_TEST_MINIO_ACCESS_KEY" --s3-secret-key "$NODEID_TEST_MINIO_SECRET_KEY"
fi
if ((${#failed[@]} > 0)); then
	echo "nodeid-bench.sh: failed: ${failed[*]}" >&2
	exit 1
fi
