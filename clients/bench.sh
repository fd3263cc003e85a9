#!/usr/bin/env bash
# bench.sh: the clients' throughput, IDs per second in one process and one
# thread, per language and mode, against one nodeid-broker on an embedded S3
# on this machine (docs/evidence/performance.md, "ID clients", records the figures).
#
#   bash clients/bench.sh [SECONDS]    # each measurement's length (default 3)
#
# The id-file figures are the generator's own (each bench writes a claim of
# its own to a temporary file); the HTTP ones are /ids on 127.0.0.1 through a
# kept-alive connection.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-clients-bench.XXXXXX")
broker=
cleanup() {
	[[ -n $broker ]] && kill "$broker" 2>/dev/null && wait "$broker" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/nodeid-broker" ./cmd/nodeid-broker
"$work/nodeid-broker" serve --embedded-s3 127.0.0.1:0 --http-addr 127.0.0.1:0 --cluster-size 4 2>"$work/broker.log" &
broker=$!
url=
for _ in $(seq 100); do
	addr=$(sed -n 's/.*"msg":"http listening".*"addr":"\([^"]*\)".*/\1/p' "$work/broker.log")
	if [[ -n $addr ]] && curl -fsS "http://$addr/health" >/dev/null 2>&1; then
		url=http://$addr
		break
	fi
	sleep 0.1
done
[[ -n $url ]] || { echo "the broker did not start:" >&2; cat "$work/broker.log" >&2; exit 1; }
echo "broker at $url; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== Python $(python3 -c 'import sys; print(sys.version.split()[0])')"
python3 -B clients/python/bench.py --url "$url" --seconds "$seconds"
echo "== Node.js $(node --version)"
node clients/node/bench.mjs "$url" --seconds "$seconds"
echo "== Java $(java -version 2>&1 | head -1)"
bash clients/java/build.sh bench "$url"
