#!/usr/bin/env bash
# Read mode's failover after a kill -9, with real nodeid-broker processes and
# memberlist's own failure detection (not nodeid-bench's 3 s stand-in): an
# embedded S3, W 15 s, B 60 s, gossip on loopback, where the broker's read-mode
# detection (500 ms probes, a suspicion of two intervals) replaces memberlist's
# timings as it does on a LAN address.
#
#   bench/readmode-failover.sh issuer [RUNS]  # 3 brokers on 2 IDs: kill -9 a holder, time the waiter's take
#   bench/readmode-failover.sh leader [RUNS]  # 3 brokers with --elect: kill -9 the leader, time the next one
#
# Each run prints the kill-to-challenge and kill-to-take (or new leader) times,
# read from the brokers' JSON logs. Ports 31500-31999 of 127.0.0.1.
set -euo pipefail
kind=${1:?issuer or leader}
runs=${2:-3}
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-rmfo.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
broker=$work/nodeid-broker
(cd "$top" && go build -o "$broker" ./cmd/nodeid-broker)
export AWS_ACCESS_KEY_ID=any AWS_SECRET_ACCESS_KEY=any AWS_EC2_METADATA_DISABLED=true

# at "FILES" MSG T0: the Unix time of the first log line of FILES with message
# MSG at or after T0, or nothing.
at() { grep -h "\"msg\":\"$2\"" $1 2>/dev/null | python3 -c 'import json,sys,datetime
ts=sorted(datetime.datetime.fromisoformat(json.loads(l)["time"].replace("Z","+00:00")).timestamp() for l in sys.stdin)
ts=[t for t in ts if t >= float(sys.argv[1])]
print(ts[0] if ts else "")' "$3"; }

# wait_until DESC CMD...: run CMD every 0.2 s until it succeeds; give up
# after 60 s, or as soon as a process of this run ($s3pid, $pids) has
# exited, printing the tails of the run's logs, rather than hang.
wait_until() {
	local desc=$1 p
	shift
	for _ in $(seq 1 300); do
		"$@" && return 0
		for p in $s3pid "${pids[@]}"; do
			kill -0 "$p" 2>/dev/null || { echo "run $r: process $p exited while waiting for $desc" >&2; tail -n 5 "$d"/*.log >&2; exit 1; }
		done
		sleep 0.2
	done
	echo "run $r: no $desc within 60 s" >&2
	tail -n 5 "$d"/*.log >&2
	exit 1
}
up() { curl -sf -o /dev/null "$1"; }

case $kind in
issuer) size=2 extra=() done_msg="acquired node ID" ;;
leader) size=8 extra=(--elect demo) done_msg="elected leader" ;;
*) echo "usage: $0 issuer|leader [RUNS]" >&2; exit 2 ;;
esac

for r in $(seq 1 "$runs"); do
	d=$work/run$r; mkdir -p "$d"
	s3=$((31500 + r)) http=$((31600 + 10 * r)) gsp=$((31700 + 10 * r))
	pids=()
	"$broker" local-s3 --addr 127.0.0.1:$s3 2>"$d/s3.log" & s3pid=$!
	wait_until "the embedded S3" curl -s -o /dev/null 127.0.0.1:$s3
	common=(--bucket nodeid --s3-endpoint http://127.0.0.1:$s3 --s3-path-style --cluster-size $size
		--keepalive read --window 15s --backstop 60s --acquire-timeout 5m "${extra[@]}"
		--join 127.0.0.1:$((gsp + 1)),127.0.0.1:$((gsp + 2)))
	for i in 1 2 3; do
		"$broker" serve "${common[@]}" --http-addr 127.0.0.1:$((http + i)) --gossip-addr 127.0.0.1:$((gsp + i)) 2>"$d/b$i.log" &
		pids+=($!)
		if [[ $kind == issuer && $i == 2 ]]; then # the third waits on a full cluster
			for p in 1 2; do wait_until "broker $p healthy" up 127.0.0.1:$((http + p))/health; done
		fi
	done
	if [[ $kind == issuer ]]; then
		wait_until "broker 3 waiting" grep -q '"attempts"' "$d/b3.log"
		victim=1 waiters=("$d/b3.log")
	else
		wait_until "a leader" grep -q "\"msg\":\"$done_msg\"" "$d"/b1.log "$d"/b2.log "$d"/b3.log
		victim=$(grep -l "\"msg\":\"$done_msg\"" "$d"/b?.log | head -1 | sed 's/.*b\([0-9]\)\.log/\1/')
		waiters=(); for i in 1 2 3; do [[ $i == "$victim" ]] || waiters+=("$d/b$i.log"); done
	fi
	sleep 3 # gossip settled, the victim's lease read at least once
	t0=$(date +%s.%N)
	kill -9 "${pids[$((victim - 1))]}"
	for _ in $(seq 1 900); do
		grep -q "\"msg\":\"$done_msg\"" "${waiters[@]}" 2>/dev/null && break
		sleep 0.1
	done
	tc=$(at "${waiters[*]}" "challenged a held lease" "$t0")
	tt=$(at "${waiters[*]}" "$done_msg" "$t0")
	python3 -c "print('$kind run $r: challenge %s, %s %.2f s after the kill -9' % (('%.2f s' % ($tc - $t0)) if '$tc' else 'none', 'take' if '$kind' == 'issuer' else 'new leader', $tt - $t0))"
	for i in 1 2 3; do [[ $i == "$victim" ]] || kill "${pids[$((i - 1))]}"; done
	kill $s3pid
	wait 2>/dev/null || true
done
