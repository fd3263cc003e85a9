#!/usr/bin/env bash
# servers.sh: build, start and stop the real S3 servers that the conformance
# tests in this folder run against: MinIO and versitygw (posix backend).
#
#   servers.sh install [SERVER...]  build pinned versions into the cache (skipped when cached)
#   servers.sh start   [SERVER...]  start each on 127.0.0.1, a free port and a throwaway folder
#   servers.sh env     [SERVER...]  print `export NODEID_TEST_...=` lines for the running servers
#   servers.sh stop    [SERVER...]  stop them by PID and remove their data folders
#   servers.sh status  [SERVER...]  say which are running
#   servers.sh restart [SERVER...]  stop each and start it again on the same port and data
#                                   folder, its objects kept (for the fault suite, test/faults)
#
# SERVER is minio or versitygw; none means both. Environment:
#   NODEID_SERVER_CACHE  where binaries are cached (default ~/.cache/nodeid-servers)
#   NODEID_SERVER_STATE  where PIDs, endpoints and logs are kept (default <repo>/.cache/servers)
#   NODEID_SERVER_READY_TIMEOUT  seconds to wait for a server to be ready (default 60)
#   NODEID_SERVER_RESTART_SIGNAL  signal that restart stops a server with (default TERM;
#                                 KILL for a crash)
#   NODEID_SERVER_RESTART_PAUSE   seconds restart leaves a server stopped (default 0)
set -euo pipefail

readonly MINIO_PKG=github.com/minio/minio
readonly MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c # older MinIO ignored If-Match on a missing key
readonly VERSITYGW_PKG=github.com/versity/versitygw/cmd/versitygw
readonly VERSITYGW_MODULE=github.com/versity/versitygw
readonly VERSITYGW_VERSION=v1.8.0

# Fixed test credentials: these servers only ever listen on 127.0.0.1.
readonly ACCESS_KEY=nodeid-test
readonly SECRET_KEY=nodeid-test-secret

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${NODEID_SERVER_CACHE:-$HOME/.cache/nodeid-servers}
bin=$cache/bin
state_dir=${NODEID_SERVER_STATE:-$repo/.cache/servers}
ready_timeout=${NODEID_SERVER_READY_TIMEOUT:-60}

script=servers.sh
# shellcheck source=test/lib/servers.bash
source "$repo/test/lib/servers.bash"

# install_one NAME PACKAGE MODULE VERSION: go install PACKAGE@VERSION into $bin
# unless $bin/NAME is already that version. The version is recorded in a stamp
# file next to the binary; a binary without a stamp is trusted when its own
# build information names the module at that version.
install_one() {
	local name=$1 pkg=$2 module=$3 version=$4
	local want=$pkg@$version exe=$bin/$name stamp=$bin/$name.version
	if [[ -x $exe && -f $stamp && "$(<"$stamp")" == "$want" ]]; then
		log "$name: cached ($want)"
		return
	fi
	if [[ -x $exe ]] && go version -m "$exe" 2>/dev/null |
		awk -v m="$module" -v v="$version" '$1 == "mod" && $2 == m && $3 == v { found = 1 } END { exit !found }'; then
		printf '%s\n' "$want" >"$stamp"
		log "$name: cached ($want, stamp written)"
		return
	fi
	log "$name: building $want (a cold MinIO build takes about 5 minutes on 2 cores)"
	mkdir -p "$bin"
	rm -f "$stamp"
	GOBIN=$bin go install "$want"
	printf '%s\n' "$want" >"$stamp"
	log "$name: installed $exe"
}

install() {
	local s
	for s in "$@"; do
		case $s in
		minio) install_one minio "$MINIO_PKG" "$MINIO_PKG" "$MINIO_VERSION" ;;
		versitygw) install_one versitygw "$VERSITYGW_PKG" "$VERSITYGW_MODULE" "$VERSITYGW_VERSION" ;;
		esac
	done
}

# http_status PORT PATH: the status code of GET PATH on 127.0.0.1:PORT, with
# bash alone (a fresh machine may have no curl).
http_status() {
	local port=$1 path=$2 code=""
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$path" "$port" >&3
	IFS=' ' read -r -t 5 _ code _ <&3 || true
	exec 3<&- 3>&-
	printf '%s\n' "$code"
}

# alive NAME: the server recorded in the state file is running.
alive() { recorded_alive "$1" "$bin/$1"; }

# launch NAME PORT DATA LOGFILE: start the server in the background and set
# launched_pid (not a subshell, so the server stays a child of this shell).
launched_pid=
launch() {
	local name=$1 port=$2 data=$3 logf=$4
	case $name in
	minio)
		MINIO_ROOT_USER=$ACCESS_KEY MINIO_ROOT_PASSWORD=$SECRET_KEY MINIO_BROWSER=off MINIO_UPDATE=off \
			"$bin/minio" server --quiet --address "127.0.0.1:$port" --console-address "127.0.0.1:$(free_port)" \
			"$data" </dev/null >"$logf" 2>&1 &
		;;
	versitygw)
		ROOT_ACCESS_KEY=$ACCESS_KEY ROOT_SECRET_KEY=$SECRET_KEY \
			"$bin/versitygw" --port "127.0.0.1:$port" --health /health --quiet \
			posix "$data" </dev/null >"$logf" 2>&1 &
		;;
	esac
	launched_pid=$!
}

health_path() {
	case $1 in
	minio) printf '/minio/health/ready\n' ;;
	versitygw) printf '/health\n' ;;
	esac
}

# await_ready NAME PID PORT DATA POLL: wait until the server launched as PID
# answers its health check on PORT (polling every POLL seconds), then record
# it in NAME.env. Returns 0 once ready and 1 when the process exited first; a
# process still not ready after ready_timeout seconds is killed, its log
# printed, and 2 returned.
await_ready() {
	local name=$1 pid=$2 port=$3 data=$4 poll=$5 deadline=$((SECONDS + ready_timeout)) code
	while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
		code=$(http_status "$port" "$(health_path "$name")" 2>/dev/null || true)
		if [[ $code == 200 ]]; then
			printf 'PID=%s\nPORT=%s\nDATA=%s\nENDPOINT=http://127.0.0.1:%s\n' "$pid" "$port" "$data" "$port" >"$state_dir/$name.env"
			return 0
		fi
		sleep "$poll"
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		log "$name: not ready after ${ready_timeout}s; its log:"
		cat "$state_dir/$name.log" >&2
		return 2
	fi
	wait "$pid" 2>/dev/null || true
	return 1
}

# port_taken LOG: whether a server that exited says its port was in use.
port_taken() {
	grep -qiE 'address already in use|port is already in use' "$1"
}

start_one() {
	local name=$1 port data logf=$state_dir/$1.log attempt rc
	if alive "$name"; then
		log "$name: already running ($(grep '^ENDPOINT=' "$state_dir/$name.env"))"
		return
	fi
	[[ -x $bin/$name ]] || die "$name: $bin/$name is missing: run '$0 install' first"
	data=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-$name.XXXXXX")
	for attempt in 1 2 3; do
		port=$(free_port)
		launch "$name" "$port" "$data" "$logf"
		rc=0
		await_ready "$name" "$launched_pid" "$port" "$data" 0.2 || rc=$?
		if ((rc == 0)); then
			log "$name: ready at http://127.0.0.1:$port (pid $launched_pid, data $data)"
			return
		fi
		if ((rc == 2)); then
			rm -rf "$data"
			die "$name: failed to start"
		fi
		if port_taken "$logf" && ((attempt < 3)); then
			log "$name: port $port was taken, trying another"
			continue
		fi
		log "$name: exited during start; its log:"
		cat "$logf" >&2
		rm -rf "$data"
		die "$name: failed to start"
	done
}

# terminate NAME PID SIG: send SIG to the running server NAME (PID) and wait
# up to 10 s for it to exit, then SIGKILL it and wait up to 5 s more. Returns 1
# if it is still alive after that.
terminate() {
	local name=$1 pid=$2 sig=$3 i
	kill -"$sig" "$pid" 2>/dev/null || true
	for i in $(seq 1 100); do
		alive "$name" || return 0
		sleep 0.1
	done
	log "$name: pid $pid ignored SIG$sig for 10 s, killing it"
	kill -KILL "$pid" 2>/dev/null || true
	for i in $(seq 1 50); do
		alive "$name" || return 0
		sleep 0.1
	done
	return 1
}

stop_one() {
	local name=$1 f=$state_dir/$1.env pid data
	[[ -f $f ]] || return 0
	pid=$(sed -n 's/^PID=//p' "$f")
	data=$(sed -n 's/^DATA=//p' "$f")
	if alive "$name"; then
		terminate "$name" "$pid" TERM || log "$name: pid $pid survived SIGKILL"
		log "$name: stopped (pid $pid)"
	fi
	# Only ever remove a folder this script made.
	if [[ $data == */nodeid-"$name".* && -d $data ]]; then
		rm -rf "$data"
	fi
	rm -f "$f"
}

# restart_one NAME: stop the running server with $NODEID_SERVER_RESTART_SIGNAL,
# wait $NODEID_SERVER_RESTART_PAUSE seconds, and start it again on the same port
# and data folder, so that clients reconnect to the same endpoint and find their
# objects. The port was ours a moment ago; if something took it meanwhile, the
# restart fails rather than move.
restart_one() {
	local name=$1 f=$state_dir/$1.env logf=$state_dir/$1.log
	local sig=${NODEID_SERVER_RESTART_SIGNAL:-TERM} pause=${NODEID_SERVER_RESTART_PAUSE:-0}
	local pid port data attempt rc
	alive "$name" || die "$name is not running: run '$0 start $name' first"
	pid=$(sed -n 's/^PID=//p' "$f")
	port=$(sed -n 's/^PORT=//p' "$f")
	data=$(sed -n 's/^DATA=//p' "$f")
	terminate "$name" "$pid" "$sig" || die "$name: pid $pid does not stop"
	sleep "$pause"
	if [[ -f $logf ]]; then
		mv -f "$logf" "$logf.1"
	fi
	for attempt in 1 2 3 4 5; do
		launch "$name" "$port" "$data" "$logf"
		rc=0
		await_ready "$name" "$launched_pid" "$port" "$data" 0.05 || rc=$?
		if ((rc == 0)); then
			log "$name: restarted at http://127.0.0.1:$port (SIG$sig, ${pause}s down, pid $launched_pid)"
			return
		fi
		((rc == 2)) && die "$name: failed to restart"
		if port_taken "$logf" && ((attempt < 5)); then
			log "$name: port $port is still taken, trying again"
			sleep 0.5
			continue
		fi
		break
	done
	log "$name: exited during restart; its log:"
	cat "$logf" >&2
	die "$name: failed to restart on port $port"
}

print_env() {
	local name=$1 up=${1^^} endpoint
	alive "$name" || die "$name is not running: run '$0 start' first"
	endpoint=$(sed -n 's/^ENDPOINT=//p' "$state_dir/$name.env")
	printf 'export NODEID_TEST_%s_ENDPOINT=%s\n' "$up" "$endpoint"
	printf 'export NODEID_TEST_%s_ACCESS_KEY=%s\n' "$up" "$ACCESS_KEY"
	printf 'export NODEID_TEST_%s_SECRET_KEY=%s\n' "$up" "$SECRET_KEY"
}

main() {
	local cmd=${1:-} s
	[[ $# -gt 0 ]] && shift
	local servers=("$@")
	if [[ ${#servers[@]} -eq 0 ]]; then
		servers=(minio versitygw)
	fi
	for s in "${servers[@]}"; do
		case $s in
		minio | versitygw) ;;
		*) die "unknown server '$s' (want minio or versitygw)" ;;
		esac
	done
	mkdir -p "$state_dir"
	case $cmd in
	install) install "${servers[@]}" ;;
	start) for s in "${servers[@]}"; do start_one "$s"; done ;;
	stop) for s in "${servers[@]}"; do stop_one "$s"; done ;;
	env) for s in "${servers[@]}"; do print_env "$s"; done ;;
	restart) for s in "${servers[@]}"; do restart_one "$s"; done ;;
	status)
		for s in "${servers[@]}"; do
			if alive "$s"; then
				printf '%s: running, %s\n' "$s" "$(sed -n 's/^ENDPOINT=//p' "$state_dir/$s.env")"
			else
				printf '%s: stopped\n' "$s"
			fi
		done
		;;
	*)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
}

main "$@"
