#!/usr/bin/env bash
# spec/check.sh: model-check the lease protocol (spec/lease.pml) with spin.
#
#  1. the protocol as written, two tasks, versions up to VMAX (default 2: a
#     create and one take, by either task), searched exhaustively: spin must
#     find no violation and complete the search;
#  2. each mutation (a rule broken on purpose, -D NAME in lease.pml): spin must
#     find a violation of an invariant. The mutations run two at a time.
#
# spin comes from $SPIN, else the PATH, else test/spin.sh (Debian's package, in
# the server cache); a C compiler ($CC, default gcc) builds each verifier.
# spec/README.md says what the model holds and what each mutation breaks.
#
#   VMAX=3 bash spec/check.sh     # one more take: about 12 M states, 2 GB, minutes
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
spin=${SPIN:-$(command -v spin || true)}
if [[ -z $spin ]]; then
	spin=$(bash test/spin.sh)
fi
cc=${CC:-gcc}
vmax=${VMAX:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-spec.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The mutations, each with what it breaks (lease.pml says how).
mutations=(
	"NOFENCE         the fence never falls (nodeid_mutation nofence)"
	"NOSAFETY        no safety margin: the fence at t0 + lease"
	"NORES           no resolution term: Date - Last-Modified > lease + ClockMargin"
	"NOFLOOR         the successor ignores the floor (nodeid_mutation nofloor)"
	"ADOPTREAD       a late write adopted with its read-back time as t0"
	"WALLEXPIRY      expiry judged on the taker's wall clock against expiresAt"
	"RECOVERCHANGED  in jeopardy, renew on another writer's ETag after a 412"
	"RACY            a store that lets a second racer win a take"
)

# verify NAME DEFINES...: build and run one verifier in $work/NAME; its
# output is $work/NAME/out.txt.
verify() {
	local name=$1
	shift
	local dir=$work/$name
	mkdir -p "$dir"
	cp spec/lease.pml "$dir/"
	(
		cd "$dir"
		"$spin" -a -DVMAX="$vmax" "$@" lease.pml >spin.txt 2>&1 || { cat spin.txt; exit 1; }
		"$cc" -O2 -DSAFETY -DNOREDUCE -DCOLLAPSE -DMEMLIM=2048 -o pan pan.c
		start=$SECONDS
		./pan -m3000000 -w24 >out.txt 2>&1 || true
		echo "elapsed $((SECONDS - start)) s" >>out.txt
	)
}

errors() { sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/$1/out.txt" | head -1; }
states() { sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' "$work/$1/out.txt" | head -1; }
secs() { sed -n 's/^elapsed \([0-9]*\) s/\1/p' "$work/$1/out.txt"; }

failed=0
echo "spec: the protocol, VMAX=$vmax, exhaustive ($("$spin" -V))"
verify protocol
if [[ $(errors protocol) != 0 ]] || grep -qE 'Search not completed|max search depth too small|out of memory' "$work/protocol/out.txt"; then
	echo "FAIL: the protocol as written: a violation, or the search did not complete:" >&2
	cat "$work/protocol/out.txt" >&2
	cp "$work/protocol/lease.pml.trail" spec/ 2>/dev/null && echo "trail: spec/lease.pml.trail (spin -t -p spec/lease.pml)" >&2
	failed=1
else
	echo "  ok: no violation in $(states protocol) states ($(secs protocol) s)"
fi

echo "spec: each mutation must break an invariant"
i=0
for m in "${mutations[@]}"; do
	verify "${m%% *}" "-D${m%% *}" &
	if ((++i % 2 == 0)); then wait; fi
done
wait
for m in "${mutations[@]}"; do
	name=${m%% *}
	if [[ $(errors "$name") == 0 || -z $(errors "$name") ]]; then
		printf '  FAIL %-15s not caught: %s\n' "$name" "${m#* }" >&2
		cat "$work/$name/out.txt" >&2
		failed=1
		continue
	fi
	printf '  caught %-15s %-65s %s (%s s)\n' "$name" "${m#"${m%% *}"}" \
		"$(grep -m1 -o 'assertion violated.*(at' "$work/$name/out.txt" | sed 's/ (at$//' | cut -c1-70)" "$(secs "$name")"
done
exit "$failed"
