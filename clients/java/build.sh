#!/usr/bin/env bash
# Builds the Java client with javac alone (JDK 17+), into clients/java/out.
#
#   bash clients/java/build.sh          compile src/main, conformance and test
#   bash clients/java/build.sh test     ... and run the tests
#   bash clients/java/build.sh mutants  ... and check that each testing
#                                       mutation makes some test fail
#   bash clients/java/build.sh bench [URL]  ... and run the benchmark (HTTP
#                                       mode too against the broker at URL)
set -euo pipefail
cd "$(dirname "$0")"
rm -rf out
mkdir -p out
javac --release 17 -Xlint:all -Werror -d out $(find src/main/java conformance test -name '*.java')
case "${1:-}" in
"") ;;
test)
	java -cp out io.github.nodeid.client.ClientTest
	;;
mutants)
	status=0
	for m in ignore-valid-until ignore-floor ignore-version ignore-missing allow-backwards; do
		if out_=$(java -Dnodeid.test.mutation="$m" -cp out io.github.nodeid.client.ClientTest 2>&1); then
			echo "mutation $m: no test failed"
			status=1
		else
			echo "mutation $m caught by: $(grep '^FAIL' <<<"$out_" | cut -d: -f1 | sed 's/^FAIL //' | tr '\n' ' ')"
		fi
	done
	exit $status
	;;
bench)
	shift
	java -cp out io.github.nodeid.client.Bench "$@"
	;;
*)
	echo "usage: build.sh [test|mutants|bench [URL]]" >&2
	exit 2
	;;
esac
