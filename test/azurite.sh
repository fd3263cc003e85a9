#!/usr/bin/env bash
# azurite.sh: install, start and stop Azurite, Microsoft's Azure Storage
# emulator (npm), for azblobstore's tests (the conformance suite and the store
# probe, azblobstore/azurite_test.go). Only its blob service runs, on
# 127.0.0.1, a free port and in memory. It needs Node.js and npm.
#
#   azurite.sh install  npm install the pinned version into the server cache
#                       (skipped when cached) and print its folder
#   azurite.sh start    install, start Azurite, wait until it accepts
#                       connections, and print `export NODEID_TEST_AZURITE_URL=...`
#                       (its account URL, with the well-known account
#                       devstoreaccount1) for eval
#   azurite.sh stop     stop the Azurite that start started (by its PID)
#
# Why 3.35.0: later releases declare Node.js 21 or 22 (Debian's nodejs is 20).
# --skipApiVersionCheck: the Go SDK (azblob v1.8.0) sends a newer API version
# than Azurite knows; the operations nodeid uses are unchanged by it.
#
#   NODEID_SERVER_CACHE  where tools are cached (default ~/.cache/nodeid-servers)
#   NODEID_SERVER_STATE  where the PID and log are kept (default <repo>/.cache/servers)
#   NODEID_SERVER_READY_TIMEOUT  seconds to wait for Azurite (default 60)
set -euo pipefail

readonly PACKAGE=azurite@3.35.0

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${NODEID_SERVER_CACHE:-$HOME/.cache/nodeid-servers}
dir=$cache/azurite
state_dir=${NODEID_SERVER_STATE:-$repo/.cache/servers}
ready_timeout=${NODEID_SERVER_READY_TIMEOUT:-60}

log() { printf 'azurite.sh: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

install() {
	if [[ -f $dir/version && "$(<"$dir/version")" == "$PACKAGE" && -x $dir/node_modules/.bin/azurite-blob ]]; then
		log "cached ($PACKAGE)"
		return
	fi
	command -v npm >/dev/null || die "npm is not installed (Debian: apt-get install nodejs npm)"
	log "installing $PACKAGE (npm, about 2 minutes cold)"
	rm -rf "$dir"
	mkdir -p "$dir"
	printf '{"private": true}\n' >"$dir/package.json"
	npm install --prefix "$dir" --no-audit --no-fund --save-exact "$PACKAGE" >&2
	printf '%s\n' "$PACKAGE" >"$dir/version"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
	local p i
	for i in $(seq 1 100); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		if ! port_in_use "$p"; then
			printf '%s\n' "$p"
			return
		fi
	done
	die "no free port found after $i tries"
}

start() {
	install
	mkdir -p "$state_dir"
	local port pid logf=$state_dir/azurite.log work
	port=$(free_port)
	# Azurite may write files in its working directory even in memory mode
	# (and refuses --location with --inMemoryPersistence): run it in a
	# throwaway folder.
	work=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-azurite.XXXXXX")
	local flags=(--blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --skipApiVersionCheck --silent)
	if "$dir/node_modules/.bin/azurite-blob" --help 2>/dev/null | grep -q -- --disableTelemetry; then
		flags+=(--disableTelemetry)
	fi
	(cd "$work" && exec "$dir/node_modules/.bin/azurite-blob" "${flags[@]}") >"$logf" 2>&1 &
	pid=$!
	printf 'PID=%s\nPORT=%s\nWORK=%s\n' "$pid" "$port" "$work" >"$state_dir/azurite.env"
	local began=$SECONDS
	until port_in_use "$port"; do
		kill -0 "$pid" 2>/dev/null || die "Azurite exited: $(cat "$logf")"
		((SECONDS - began < ready_timeout)) || die "Azurite did not listen on 127.0.0.1:$port within ${ready_timeout}s: $(cat "$logf")"
		sleep 0.2
	done
	log "Azurite $PACKAGE (blob) on 127.0.0.1:$port, PID $pid, ready in $((SECONDS - began))s"
	printf 'export NODEID_TEST_AZURITE_URL=http://127.0.0.1:%s/devstoreaccount1\n' "$port"
}

stop() {
	local f=$state_dir/azurite.env pid work
	[[ -f $f ]] || return 0
	pid=$(sed -n 's/^PID=//p' "$f")
	work=$(sed -n 's/^WORK=//p' "$f")
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir/"; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
		log "stopped Azurite (PID $pid)"
	fi
	[[ -n $work ]] && rm -rf "$work"
	rm -f "$f"
}

case ${1:-} in
install)
	install
	echo "$dir"
	;;
start) start ;;
stop) stop ;;
*) die "usage: azurite.sh install|start|stop" ;;
esac
