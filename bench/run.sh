#!/usr/bin/env bash
# Runs the generator benchmarks in one `go test -bench` invocation and
# summarises them with benchstat, one column per generator (bwmarrin first:
# the base of every "vs base" ratio).
#
#   bench/run.sh                      # -benchtime=1s -count=6, about 3.5 minutes
#   COUNT=10 BENCHTIME=2s bench/run.sh
#
# Writes bench/results.txt (raw) and bench/benchstat.txt (the table).
set -euo pipefail
cd "$(dirname "$0")"

count=${COUNT:-6}
benchtime=${BENCHTIME:-1s}

benchstat=$(command -v benchstat || true)
if [[ -z $benchstat ]]; then
	benchstat="$(go env GOPATH)/bin/benchstat"
	[[ -x $benchstat ]] || go install golang.org/x/perf/cmd/benchstat@latest
fi

# The figures are only as good as the machine is quiet: say when it is not.
busy=$(ps -eo pcpu=,comm= | awk '$1 > 20 {print $2}' | tr '\n' ' ')
if [[ -n $busy ]]; then
	echo "run.sh: warning: other processes are busy ($busy); the parallel figures will suffer" >&2
fi

go test -run '^$' -bench . -benchtime="$benchtime" -count="$count" -timeout 60m | tee results.txt
"$benchstat" -col /impl results.txt | tee benchstat.txt
