# servers.bash: what the scripts that install, start and stop the test
# servers share (test/minio/servers.sh: MinIO and versitygw;
# test/emulators.sh: Azurite and fake-gcs-server). Sourced, not run. The
# script sets $script (its name, for messages), $bin (the server cache's
# binaries) and $state_dir (the PIDs and logs) before it uses them.

log() { printf '%s: %s\n' "$script" "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# port_in_use PORT: something accepts connections on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: a port on 127.0.0.1 that nothing listens on.
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

# recorded_alive NAME EXE: the server recorded in $state_dir/NAME.env (its
# PID=) is running, and is the program EXE names (its command line contains
# EXE), not a process that reused its PID.
recorded_alive() {
	local f=$state_dir/$1.env pid
	[[ -f $f ]] || return 1
	pid=$(sed -n 's/^PID=//p' "$f")
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$2"
}
