#!/usr/bin/env bash
# flakehunt.sh: run nodeid's tests many times, with one core kept busy, to find
# flaky tests (docs/evidence/flakes.md has the last hunt's result).
#
#   bash test/flakehunt.sh [-count N] [-race] [-noload] [-faults] [-run REGEX] [-timeout D] [PACKAGE...]
#
#  1. lists every package with tests: the main module's, and bench/'s if it
#     has its own go.mod and Test functions (benchmarks are not run). PACKAGE
#     arguments (import paths or ./ patterns of the main module) replace the
#     list;
#  2. starts a CPU-burning busy loop (one core) in the background, so the
#     scheduler interleaves goroutines differently than on an idle machine (on
#     2 cores this takes half the machine away); -noload runs without it;
#  3. runs go test -count=N (default 10) package by package, so a failure names
#     its package, optionally under -race, and collects the failed tests with
#     how often each failed ("k of N runs"). A package that failed without a
#     failed test (build error, panic, timeout) is listed as such, with its log;
#  4. prints a summary and exits 1 if any test failed (2 on a usage error).
#     Logs of failed packages are kept in a folder the summary names.
#
# Packages that need servers are left out unless their servers are configured:
#  - test/minio runs only when NODEID_TEST_MINIO_ENDPOINT,
#    NODEID_TEST_VERSITYGW_ENDPOINT, NODEID_TEST_S3_ENDPOINT or
#    NODEID_TEST_S3_BUCKET is set (start them as test/all.sh does:
#    bash test/minio/servers.sh install start; eval "$(bash test/minio/servers.sh env)");
#  - the fault suite (go test -tags faults ./test/faults, about 3 minutes a run
#    on a MinIO of its own) runs only with -faults or FLAKEHUNT_FAULTS=1 (also
#    with PACKAGE arguments), FLAKEHUNT_FAULTS_COUNT times (default 1), never
#    under -race (see test/all.sh). test/faults' untagged unit tests are always
#    in the list.
#
# Defaults from the environment (flags win): FLAKEHUNT_COUNT (10), FLAKEHUNT_RACE=1,
# FLAKEHUNT_LOAD=0 (no busy loop), FLAKEHUNT_RUN, FLAKEHUNT_TIMEOUT (30m, per package),
# FLAKEHUNT_LOGS (folder for the logs, kept; default a temporary folder removed
# when nothing failed).
set -euo pipefail

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

count=${FLAKEHUNT_COUNT:-10}
race=${FLAKEHUNT_RACE:-0}
load=${FLAKEHUNT_LOAD:-1}
run=${FLAKEHUNT_RUN:-}
timeout=${FLAKEHUNT_TIMEOUT:-30m}
faults=${FLAKEHUNT_FAULTS:-0}
faults_count=${FLAKEHUNT_FAULTS_COUNT:-1}
packages=()
while (($# > 0)); do
	case $1 in
	-count | --count) count=${2:?-count needs a number}; shift ;;
	-count=* | --count=*) count=${1#*=} ;;
	-race | --race) race=1 ;;
	-noload | --noload | --no-load) load=0 ;;
	-faults | --faults) faults=1 ;;
	-run | --run) run=${2:?-run needs a regular expression}; shift ;;
	-run=* | --run=*) run=${1#*=} ;;
	-timeout | --timeout) timeout=${2:?-timeout needs a duration}; shift ;;
	-timeout=* | --timeout=*) timeout=${1#*=} ;;
	-h | -help | --help) usage ;;
	-*) echo "flakehunt: unknown flag $1" >&2; usage ;;
	*) packages+=("$1") ;;
	esac
	shift
done
if ! [[ $count =~ ^[1-9][0-9]*$ ]]; then
	echo "flakehunt: -count must be a positive number, not '$count'" >&2
	exit 2
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
began=$SECONDS

flags=(-count="$count" -timeout="$timeout")
if [[ $race == 1 ]]; then
	if [[ $(go env CGO_ENABLED) != 1 ]]; then
		echo "flakehunt: -race needs cgo and a C compiler (apt-get install -y gcc)" >&2
		exit 2
	fi
	flags+=(-race)
fi
if [[ -n $run ]]; then
	flags+=(-run="$run")
fi

logs=${FLAKEHUNT_LOGS:-}
keep_logs=1
if [[ -z $logs ]]; then
	logs=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-flakehunt.XXXXXX")
	keep_logs=0
fi
mkdir -p "$logs"

burner=
# shellcheck disable=SC2317 # reached through the EXIT trap
cleanup() {
	if [[ -n $burner ]]; then
		kill "$burner" 2>/dev/null || true
		wait "$burner" 2>/dev/null || true
	fi
}
trap cleanup EXIT

# The units to run: "dir<TAB>import path<TAB>extra go test flags".
units=()
with_tests='{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}'
servers_set() {
	[[ -n ${NODEID_TEST_MINIO_ENDPOINT:-}${NODEID_TEST_VERSITYGW_ENDPOINT:-}${NODEID_TEST_S3_ENDPOINT:-}${NODEID_TEST_S3_BUCKET:-} ]]
}
if ((${#packages[@]} > 0)); then
	while IFS= read -r p; do
		[[ -n $p ]] && units+=("."$'\t'"$p"$'\t')
	done < <(go list -f "$with_tests" "${packages[@]}")
else
	while IFS= read -r p; do
		[[ -z $p ]] && continue
		if [[ $p == */test/minio ]] && ! servers_set; then
			echo "skipping $p: no S3 server configured (NODEID_TEST_MINIO_ENDPOINT etc., see the top of this script)"
			continue
		fi
		units+=("."$'\t'"$p"$'\t')
	done < <(go list -f "$with_tests" ./...)
	if [[ -f bench/go.mod ]]; then
		# bench's tests are mostly benchmarks: run a package only if it has Test functions.
		while read -r p dir; do
			if [[ -n $p ]] && grep -qsE '^func Test[A-Z0-9_]' "$dir"/*_test.go; then
				units+=("bench"$'\t'"$p"$'\t')
			fi
		done < <(cd bench && go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./...)
	fi
	if [[ $faults != 1 ]]; then
		echo "skipping the fault suite (-tags faults ./test/faults): -faults or FLAKEHUNT_FAULTS=1 runs it"
	fi
fi
if [[ $faults == 1 ]]; then
	units+=("."$'\t'"github.com/nodeid/nodeid/test/faults"$'\t'"faults")
fi
if ((${#units[@]} == 0)); then
	echo "flakehunt: no package with tests" >&2
	exit 2
fi

if [[ $load == 1 ]]; then
	# One busy core: on a 2-core machine, the tests get one core and the
	# scheduler preempts them at times they never see when the machine is idle.
	(while :; do :; done) &
	burner=$!
fi

printf 'flakehunt: %d package(s), go test %s, load: %s, logs: %s\n' "${#units[@]}" "${flags[*]}" \
	"$([[ $load == 1 ]] && echo "one busy core (pid $burner)" || echo none)" "$logs"

failed_pkgs=()
failures=() # "package<TAB>test<TAB>times failed<TAB>runs"
for u in "${units[@]}"; do
	IFS=$'\t' read -r dir pkg extra <<<"$u"
	f=("${flags[@]}")
	n=$count
	if [[ $extra == faults ]]; then
		# The fault suite: its own count, no -race, -v for its summary lines.
		f=(-tags faults -count="$faults_count" -timeout="$((15 * faults_count))m" -v)
		n=$faults_count
		[[ -n $run ]] && f+=(-run="$run")
	fi
	log=$logs/$(printf '%s' "$pkg${extra:+-$extra}" | tr '/' '_').log
	start=$SECONDS
	status=0
	(cd "$dir" && go test "${f[@]}" "$pkg") >"$log" 2>&1 || status=$?
	if ((status == 0)); then
		printf 'ok    %-60s %4ds\n' "$pkg${extra:+ (-tags $extra)}" "$((SECONDS - start))"
		[[ $keep_logs == 1 ]] || rm -f "$log"
		continue
	fi
	printf 'FAIL  %-60s %4ds  %s\n' "$pkg${extra:+ (-tags $extra)}" "$((SECONDS - start))" "$log"
	failed_pkgs+=("$pkg")
	# "--- FAIL: TestName (0.01s)", indented for subtests: count by name.
	tests=$(grep -oE -- '--- FAIL: [^ ]+' "$log" | sed 's/^--- FAIL: //' | sort | uniq -c | sort -rn || true)
	if [[ -z $tests ]]; then
		failures+=("$pkg"$'\t'"(no failed test: build error, panic or timeout; see the log)"$'\t'"1"$'\t'"$n")
		grep -m 5 -E '^(panic:|FAIL|.*: (cannot|undefined)|# )' "$log" | sed 's/^/      /' || true
		continue
	fi
	while read -r k name; do
		failures+=("$pkg"$'\t'"$name"$'\t'"$k"$'\t'"$n")
	done <<<"$tests"
done

elapsed=$((SECONDS - began))
printf '\n=== flakehunt summary: %d package(s), -count=%s%s%s, %dm%02ds\n' "${#units[@]}" "$count" \
	"$([[ $race == 1 ]] && echo ", -race")" "$([[ $load == 1 ]] && echo ", one busy core")" "$((elapsed / 60))" "$((elapsed % 60))"
if ((${#failed_pkgs[@]} == 0)); then
	echo "no test failed"
	[[ $keep_logs == 1 ]] || rm -rf "$logs"
	exit 0
fi
printf '%d package(s) failed; failed tests (times failed of runs):\n' "${#failed_pkgs[@]}"
for f in "${failures[@]}"; do
	IFS=$'\t' read -r pkg name k n <<<"$f"
	printf '  %s %s: %s of %s\n' "$pkg" "$name" "$k" "$n"
done
echo "logs: $logs"
exit 1
