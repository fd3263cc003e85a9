#!/usr/bin/env bash
# explore.sh: run the fault suite's scenarios (test/faults) with fresh random
# seeds until a time is up, and print each failing seed with the command that
# replays it. The test command (test/all.sh) replays only the seeds of
# test/faults/corpus.txt; this is where new interleavings are found. A seed
# found failing is diagnosed, fixed, and added to the corpus
# (docs/evidence/faults.md, "Corpus and exploration").
#
#   bash test/explore.sh [DURATION] [SCENARIO...]
#
#  - DURATION: how long to keep starting runs, as 90s, 45m, 2h or 1h30m
#    (default 30m); the run going on when it ends is finished, so the
#    script takes up to one run (about 2 minutes) longer;
#  - SCENARIO: the scenarios to run, in turn (default: faults faults-etcd
#    faults-read, twice each, then nofloor nofence nofloor-etcd
#    nofence-read: the fault scenarios twice as often as the mutation ones;
#    also faults-etcd3, outage, outage-etcd, storms and storms-read, fixed
#    scripts whose seeds draw only the proxies' coin flips, the members and
#    the brokers' settings; clock and clock-read, whose seeds draw the
#    brokers' clock rates, bumps and strobes; partition-azblob,
#    partition-gcs and partition-k8s on Azurite, fake-gcs-server and
#    kube-apiserver, which the script starts or takes from the cache).
#
# Each run is one scenario with one seed (`go test -tags faults -run
# '^TestX$' ./test/faults -seed N`, from a test binary built once), with
# CI=true, so a missing server fails instead of skipping. It needs the
# MinIO binary (bash test/minio/servers.sh install minio) and etcd (bash
# test/etcd/install.sh) in the server cache (and for the partition
# scenarios, what test/emulators.sh and test/k8s/install.sh install). On 2 shared cores run it
# niced: nice -n 15 bash test/explore.sh 2h.
#
# Output: one line a run (time, scenario, seed, result, seconds, load
# average), each failure's replay command and log, and a summary; the same
# lines go to results.tsv in the log folder (EXPLORE_LOGS, default a new
# temporary folder, kept). Exit status 1 if any run failed.
set -euo pipefail

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# seconds parses 90s, 45m, 2h, 1h30m (a number alone is seconds).
seconds() {
	local s=$1 total=0 n unit
	[[ $s =~ ^[0-9]+$ ]] && { echo "$s"; return; }
	[[ $s =~ ^([0-9]+[hms])+$ ]] || return 1
	while [[ $s =~ ^([0-9]+)([hms])(.*)$ ]]; do
		n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]} s=${BASH_REMATCH[3]}
		case $unit in
		h) total=$((total + n * 3600)) ;;
		m) total=$((total + n * 60)) ;;
		s) total=$((total + n)) ;;
		esac
	done
	echo "$total"
}

# Every scenario of test/faults/corpus.go (TestExploreKnowsEveryScenario
# checks the two agree).
declare -A tests=(
	[faults]=TestFaults [faults-etcd]=TestFaultsEtcd [nofloor]=TestMutationNoFloor
	[nofence]=TestMutationNoFence [nofloor-etcd]=TestMutationNoFloorEtcd
	[faults-etcd3]=TestFaultsEtcd3 [outage]=TestOutage [outage-etcd]=TestOutageEtcd [storms]=TestStorms
	[clock]=TestClockFaults [partition-azblob]=TestPartitionAzblob [partition-gcs]=TestPartitionGCS
	[partition-k8s]=TestPartitionK8s
	[faults-read]=TestFaultsRead [storms-read]=TestStormsRead [nofence-read]=TestMutationNoFenceRead
	[clock-read]=TestClockFaultsRead
)
duration=30m
scenarios=()
for a in "$@"; do
	case $a in
	-h | -help | --help) usage ;;
	*[0-9][hms] | [0-9]*[0-9]) duration=$a ;;
	*)
		[[ -n ${tests[$a]:-} ]] || { echo "explore: unknown scenario $a (scenarios: ${!tests[*]})" >&2; exit 2; }
		scenarios+=("$a")
		;;
	esac
done
budget=$(seconds "$duration") || { echo "explore: bad duration $duration (90s, 45m, 2h, 1h30m)" >&2; exit 2; }
if ((${#scenarios[@]} == 0)); then
	scenarios=(faults faults-etcd faults-read faults faults-etcd faults-read nofloor nofence nofloor-etcd nofence-read)
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
logs=${EXPLORE_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/nodeid-explore.XXXXXX")}
mkdir -p "$logs"
NODEID_ETCD_BIN=${NODEID_ETCD_BIN:-$(bash test/etcd/install.sh)}
export NODEID_ETCD_BIN CI=true
# The other stores' servers, for the scenarios that name them: the
# emulators started here (and stopped on exit), the apiserver from the cache.
emulators=()
for sc in "${scenarios[@]}"; do
	case $sc in
	partition-azblob) emulators+=(azurite) ;;
	partition-gcs) emulators+=(fakegcs) ;;
	partition-k8s) NODEID_KUBE_APISERVER_BIN=${NODEID_KUBE_APISERVER_BIN:-$(bash test/k8s/install.sh)} && export NODEID_KUBE_APISERVER_BIN ;;
	esac
done
if ((${#emulators[@]} > 0)); then
	NODEID_SERVER_STATE=$logs/emulators
	export NODEID_SERVER_STATE
	trap 'bash test/emulators.sh stop || true' EXIT
	eval "$(bash test/emulators.sh start $(printf '%s\n' "${emulators[@]}" | sort -u))"
fi

bin=$logs/faults.test
go test -c -tags faults -o "$bin" ./test/faults

results=$logs/results.tsv
[[ -f $results ]] || printf 'started\tscenario\tseed\tresult\tseconds\tload\n' >"$results"
printf 'explore: %s of %s, logs and results.tsv in %s\n' "$duration" "${scenarios[*]}" "$logs"

began=$SECONDS
runs=0
failed=()
i=0
while ((SECONDS - began < budget)); do
	sc=${scenarios[i % ${#scenarios[@]}]}
	i=$((i + 1))
	seed=$(($(od -An -N4 -tu4 /dev/urandom) % 999999 + 1))
	test=${tests[$sc]}
	log=$logs/$sc-$seed.log
	start=$SECONDS
	stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	status=0
	(cd test/faults && "$bin" -test.run "^${test}\$" -test.count=1 -test.v -test.timeout=15m -seed "$seed") >"$log" 2>&1 || status=$?
	runs=$((runs + 1))
	load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
	result=ok
	((status == 0)) || result=FAIL
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$stamp" "$sc" "$seed" "$result" "$((SECONDS - start))" "$load" | tee -a "$results"
	if ((status == 0)); then
		rm -f "$log"
		continue
	fi
	replay="go test -tags faults -count=1 -v -run '^${test}\$' ./test/faults -seed $seed"
	failed+=("$sc seed $seed: $replay  (log $log)")
	printf 'FAIL %s seed %d; replay (from %s): %s\n' "$sc" "$seed" "$root" "$replay"
	grep -E 'VIOLATION|--- FAIL|panic:|run folder kept' "$log" | head -n 12 | sed 's/^/    /' || true
done

elapsed=$((SECONDS - began))
printf '\n=== explore: %d runs in %dm%02ds (%s), %d failed\n' "$runs" "$((elapsed / 60))" "$((elapsed % 60))" "${scenarios[*]}" "${#failed[@]}"
for f in "${failed[@]}"; do
	printf '  %s\n' "$f"
done
printf 'results: %s\n' "$results"
((${#failed[@]} == 0))
