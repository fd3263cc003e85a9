#!/usr/bin/env bash
# emulators.sh: install, start and stop the cloud storage emulators that the
# stores' tests run against, each on 127.0.0.1, a free port, in memory:
#
#   azurite  Microsoft's Azure Storage emulator (npm; blob service only), for
#            azblobstore (azblobstore/azurite_test.go) and the broker's Azure
#            end-to-end test; it needs Node.js and npm.
#            Exports NODEID_TEST_AZURITE_URL (the account URL, with the
#            well-known account devstoreaccount1).
#   fakegcs  fake-gcs-server (Go, run as a binary: it is not a dependency of
#            the nodeid module), the Google Cloud Storage emulator, for
#            gcsstore (gcsstore/fakegcs_test.go). Exports
#            NODEID_TEST_FAKEGCS_URL (its base URL; the JSON API is under
#            /storage/v1/).
#
#   emulators.sh install [EMULATOR...]  install the pinned versions into the
#                                       server cache (skipped when cached)
#   emulators.sh start   [EMULATOR...]  install, start each, wait until it
#                                       accepts connections, and print its
#                                       `export NODEID_TEST_...=` line for eval
#   emulators.sh env     [EMULATOR...]  print the export lines of the running ones
#   emulators.sh stop    [EMULATOR...]  stop the ones start started (by PID)
#
# EMULATOR is azurite or fakegcs; none means both.
#
# Why Azurite 3.35.0: later releases declare Node.js 21 or 22 (Debian's nodejs
# is 20). --skipApiVersionCheck: the Go SDK (azblob v1.8.0) sends a newer API
# version than Azurite knows; the operations nodeid uses are unchanged by it.
# fake-gcs-server v1.56.1 honours ifGenerationMatch (=0 and =<generation>) on
# multipart and resumable uploads and applies them atomically (gcsstore's
# TestFakeGCSHonoursConditions and the conformance suite's races check it).
#
#   NODEID_SERVER_CACHE  where tools are cached (default ~/.cache/nodeid-servers)
#   NODEID_SERVER_STATE  where the PIDs and logs are kept (default <repo>/.cache/servers)
#   NODEID_SERVER_READY_TIMEOUT  seconds to wait for an emulator (default 60)
set -euo pipefail

readonly AZURITE_PACKAGE=azurite@3.35.0
readonly FAKEGCS_PACKAGE=github.com/fsouza/fake-gcs-server@v1.56.1

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${NODEID_SERVER_CACHE:-$HOME/.cache/nodeid-servers}
azurite_dir=$cache/azurite
bin=$cache/bin
state_dir=${NODEID_SERVER_STATE:-$repo/.cache/servers}
ready_timeout=${NODEID_SERVER_READY_TIMEOUT:-60}

script=emulators.sh
# shellcheck source=test/lib/servers.bash
source "$repo/test/lib/servers.bash"

install_azurite() {
	if [[ -f $azurite_dir/version && "$(<"$azurite_dir/version")" == "$AZURITE_PACKAGE" && -x $azurite_dir/node_modules/.bin/azurite-blob ]]; then
		log "azurite: cached ($AZURITE_PACKAGE)"
		return
	fi
	command -v npm >/dev/null || die "npm is not installed (Debian: apt-get install nodejs npm)"
	log "azurite: installing $AZURITE_PACKAGE (npm, about 2 minutes cold)"
	rm -rf "$azurite_dir"
	mkdir -p "$azurite_dir"
	printf '{"private": true}\n' >"$azurite_dir/package.json"
	npm install --prefix "$azurite_dir" --no-audit --no-fund --save-exact "$AZURITE_PACKAGE" >&2
	printf '%s\n' "$AZURITE_PACKAGE" >"$azurite_dir/version"
}

# install_fakegcs: go install the pinned fake-gcs-server into $bin, with a
# version stamp next to it (as test/all.sh does for staticcheck).
install_fakegcs() {
	local exe=$bin/fake-gcs-server stamp=$bin/fake-gcs-server.version
	if [[ -x $exe && -f $stamp && "$(<"$stamp")" == "$FAKEGCS_PACKAGE" ]]; then
		log "fakegcs: cached ($FAKEGCS_PACKAGE)"
		return
	fi
	log "fakegcs: building $FAKEGCS_PACKAGE (about 2 minutes cold on 2 cores)"
	mkdir -p "$bin"
	rm -f "$stamp"
	# Outside any module, so that the pinned version's own go.mod decides.
	(cd "$bin" && GOBIN=$bin go install "$FAKEGCS_PACKAGE")
	printf '%s\n' "$FAKEGCS_PACKAGE" >"$stamp"
}

# exe_of NAME: the executable whose process stop may kill.
exe_of() {
	case $1 in
	azurite) printf '%s/\n' "$azurite_dir" ;;
	fakegcs) printf '%s\n' "$bin/fake-gcs-server" ;;
	esac
}

# env_line NAME PORT: the export line of a running emulator.
env_line() {
	case $1 in
	azurite) printf 'export NODEID_TEST_AZURITE_URL=http://127.0.0.1:%s/devstoreaccount1\n' "$2" ;;
	fakegcs) printf 'export NODEID_TEST_FAKEGCS_URL=http://127.0.0.1:%s\n' "$2" ;;
	esac
}

# alive NAME: the emulator recorded in the state file is running.
alive() { recorded_alive "$1" "$(exe_of "$1")"; }

start_one() {
	local name=$1 port pid logf=$state_dir/$1.log work label
	port=$(free_port)
	# Azurite may write files in its working directory even in memory mode
	# (and refuses --location with --inMemoryPersistence): run each emulator
	# in a throwaway folder.
	work=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-$name.XXXXXX")
	case $name in
	azurite)
		label="Azurite $AZURITE_PACKAGE (blob)"
		local flags=(--blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --skipApiVersionCheck --silent)
		if "$azurite_dir/node_modules/.bin/azurite-blob" --help 2>/dev/null | grep -q -- --disableTelemetry; then
			flags+=(--disableTelemetry)
		fi
		(cd "$work" && exec "$azurite_dir/node_modules/.bin/azurite-blob" "${flags[@]}") >"$logf" 2>&1 &
		;;
	fakegcs)
		label="fake-gcs-server $FAKEGCS_PACKAGE"
		(cd "$work" && exec "$bin/fake-gcs-server" -scheme http -host 127.0.0.1 -port "$port" \
			-external-url "http://127.0.0.1:$port" -backend memory -log-level warn) >"$logf" 2>&1 &
		;;
	esac
	pid=$!
	printf 'PID=%s\nPORT=%s\nWORK=%s\n' "$pid" "$port" "$work" >"$state_dir/$name.env"
	local began=$SECONDS
	until port_in_use "$port"; do
		kill -0 "$pid" 2>/dev/null || die "$name exited: $(cat "$logf")"
		((SECONDS - began < ready_timeout)) || die "$name did not listen on 127.0.0.1:$port within ${ready_timeout}s: $(cat "$logf")"
		sleep 0.2
	done
	log "$label on 127.0.0.1:$port, PID $pid, ready in $((SECONDS - began))s"
	env_line "$name" "$port"
}

stop_one() {
	local name=$1 f=$state_dir/$1.env pid work
	[[ -f $f ]] || return 0
	pid=$(sed -n 's/^PID=//p' "$f")
	work=$(sed -n 's/^WORK=//p' "$f")
	if alive "$name"; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
		log "stopped $name (PID $pid)"
	fi
	[[ -n $work ]] && rm -rf "$work"
	rm -f "$f"
}

cmd=${1:-}
shift || true
names=("$@")
if ((${#names[@]} == 0)); then
	names=(azurite fakegcs)
fi
for n in "${names[@]}"; do
	[[ $n == azurite || $n == fakegcs ]] || die "unknown emulator $n (azurite or fakegcs)"
done

case $cmd in
install)
	for n in "${names[@]}"; do "install_$n"; done
	;;
start)
	mkdir -p "$state_dir"
	for n in "${names[@]}"; do
		"install_$n"
		stop_one "$n"
		start_one "$n"
	done
	;;
env)
	for n in "${names[@]}"; do
		if alive "$n"; then
			env_line "$n" "$(sed -n 's/^PORT=//p' "$state_dir/$n.env")"
		fi
	done
	;;
stop)
	for n in "${names[@]}"; do stop_one "$n"; done
	;;
*) die "usage: emulators.sh install|start|env|stop [azurite|fakegcs...]" ;;
esac
