# cached.bash: a binary built from a pinned Go module into the server cache
# (NODEID_SERVER_CACHE, default ~/.cache/nodeid-servers), once per version:
# the pinned servers' and tools' install.sh source it.

# cached_build NAME WANT HINT BUILD: print the path of bin/NAME in the server
# cache, first building it with the function BUILD (handed the path to write)
# unless the binary there was built as WANT (module@version, recorded in its
# stamp, bin/NAME.version). HINT says how long a cold build takes.
cached_build() {
	local name=$1 want=$2 hint=$3 build=$4
	local bin=${NODEID_SERVER_CACHE:-$HOME/.cache/nodeid-servers}/bin
	local exe=$bin/$name stamp=$bin/$name.version
	if [[ -x $exe && -f $stamp && "$(<"$stamp")" == "$want" ]]; then
		echo "install.sh: $name cached ($want)" >&2
		printf '%s\n' "$exe"
		return
	fi
	echo "install.sh: building $name $want ($hint)" >&2
	mkdir -p "$bin"
	rm -f "$stamp"
	"$build" "$exe.tmp"
	mv "$exe.tmp" "$exe"
	printf '%s\n' "$want" >"$stamp"
	echo "install.sh: installed $exe" >&2
	printf '%s\n' "$exe"
}
