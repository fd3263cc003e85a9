#!/usr/bin/env bash
# spec/check.sh: model-check the lease protocol (spec/lease.pml, the write
# mode; spec/lease_read.pml, keep-alive by reads) with spin.
#
#   bash spec/check.sh          # test/all.sh's check: about a minute on 2 idle cores
#   bash spec/check.sh --full   # exploration: VMAX=3, mutations in the whole model
#
#  1. the protocol as written, two tasks, versions up to VMAX (default 2: a
#     create and one take, by either task), searched exhaustively: spin must
#     find no violation and complete the search;
#  2. each mutation (a rule broken on purpose, -D NAME in lease.pml): spin must
#     find a violation of an invariant. Each runs in the smallest world that
#     still shows it: restrictions (-D ANSWERED, NORELEASE, NOCRASH; lease.pml)
#     only take behaviours away, so a violation found there is one of the
#     whole model, and the search finds it in thousands of states instead of
#     millions;
#  3. each of those restricted worlds without a mutation, exhaustively: no
#     violation, so the one a mutation shows is the mutation's.
#
#  4. the read mode (lease_read.pml): its worlds without a challenger, no
#     release, no crash, exhaustively (the fence as written; the fence never
#     falling, where the floor alone must keep timestamps ordered); the world
#     with the challenger (no release, no crash) by a bitstate search to depth
#     200 for 20 s, which is not exhaustive; each of its mutations to a
#     violation, by a search to depth 120 in its restricted world. With
#     --full, the world without a challenger with releases and crashes,
#     exhaustively, and the whole read model (challenger, releases, crashes)
#     by a bitstate search to depth 400 for 600 s, still not exhaustive.
#
# With --full, the mutations run in the whole model (no restriction), and
# VMAX defaults to 3 (27 M states for the protocol, about 3 GB, 8.5 minutes):
# what the test command leaves to exploration (spec/README.md).
#
# spin comes from $SPIN, else the PATH, else test/spin.sh (Debian's package, in
# the server cache); a C compiler ($CC, default gcc) builds each verifier.
# Verifiers run $JOBS at a time (default 2). spec/README.md says what the model
# holds and what each mutation breaks.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
full=0
case ${1:-} in
--full) full=1 ;;
"") ;;
*)
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
spin=${SPIN:-$(command -v spin || true)}
if [[ -z $spin ]]; then
	spin=$(bash test/spin.sh)
fi
cc=${CC:-gcc}
vmax=${VMAX:-$((full ? 3 : 2))}
parallel=${JOBS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-spec.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The mutations: name, the restrictions of the smallest world that shows its
# violation, and what it breaks (lease.pml says how).
readonly NARROW=ANSWERED,NORELEASE,NOCRASH
mutations=(
	"NOFENCE        $NARROW                    the fence never falls (nodeid_mutation nofence)"
	"NOSAFETY       $NARROW                    no safety margin: the fence at t0 + lease"
	"NORES          $NARROW                    no resolution term: Date - Last-Modified > lease + ClockMargin"
	"NOFLOOR        ANSWERED,NOCRASH           the successor ignores the floor (nodeid_mutation nofloor)"
	"ADOPTREAD      NORELEASE,NOCRASH          a late write adopted with its read-back time as t0"
	"WALLEXPIRY     $NARROW                    expiry judged on the taker's wall clock against expiresAt"
	"RECOVERCHANGED $NARROW                    in jeopardy, renew on another writer's ETag after a 412"
	"RACY           ANSWERED,NOCRASH           a store that lets a second racer win a take"
	"NOFOLD         $NARROW                    Valid never folds the real-time deadline into the monotonic"
	"LATCHONLY      $NARROW                    Valid folds the real-time deadline only once fallen (a4de56f)"
)
# The read mode's mutations (lease_read.pml), the same way.
readonly RNARROW=NORELEASE,NOCRASH
read_mutations=(
	"CHALWIN        $RNARROW                   the window runs from the challenge, not the confirm"
	"ANSWERTIME     $RNARROW                   a read re-arms the fence from its answer's arrival"
	"REARMB         $RNARROW                   a read re-arms the fence for B, not W"
	"OTHERWID       $RNARROW                   the holder answers a challenge naming another writeId"
	"EARLYTAKE      $RNARROW                   a confirm taken one margin early: Date - LM >= W"
	"READRES        FENCEFAIL,NOCHAL,$RNARROW  a read raises the reservation (the fence failing)"
)
name() { echo "${1%% *}"; }
world() { local r=${1#* }; r=${r#"${r%%[! ]*}"}; echo "${r%% *}"; }
what() { local r=${1#* }; r=${r#"${r%%[! ]*}"}; r=${r#* }; echo "${r#"${r%%[! ]*}"}"; }

# verify JOB OPT DEFINES...: build the verifier for lease.pml with the spin
# -D flags DEFINES (a comma list, or - for none) at gcc -OPT, and search
# exhaustively (depth-first, safety only) or to the first violation. Its
# output is $work/JOB/out.txt, with the build and search times.
verify() {
	local job=$1 opt=$2 defines=$3 model=${4:-lease.pml} dir=$work/$1 d
	local -a flags=(-DVMAX="$vmax") cflags=() panopts=(-m1000000 "-w$((full ? 26 : 24))")
	if [[ $model == lease_read.pml ]]; then
		flags=(-DVMAX=2)
		# depth-bounded searches (mutations; the bitstate one) find a
		# violation after thousands of states instead of millions
		case ${5:-} in
		bounded) panopts=(-m120 -w22) ;;
		bitstate) cflags=(-DBITSTATE) panopts=(-m200 -w27) ;;
		bitstate-full) cflags=(-DBITSTATE) panopts=(-m400 -w30) ;;
		*) panopts=(-m3000000 -w25) ;;
		esac
	fi
	if [[ $defines != - ]]; then
		for d in ${defines//,/ }; do flags+=("-D$d"); done
	fi
	mkdir -p "$dir"
	cp "spec/$model" "$dir/"
	(
		cd "$dir"
		start=$SECONDS
		"$spin" -a "${flags[@]}" "$model" >spin.txt 2>&1 || { cat spin.txt >out.txt; exit 1; }
		# -O1: the long search runs about as fast as at -O2 and builds in a
		# third of the time; the short ones are built at -O0.
		"$cc" "-$opt" -DSAFETY -DNOREDUCE -DMEMLIM=4096 "${cflags[@]}" -o pan pan.c >cc.txt 2>&1 || { cat cc.txt >out.txt; exit 1; }
		built=$SECONDS
		if [[ ${5:-} == bitstate* ]]; then
			# time-boxed: pan reports what it searched when interrupted
			timeout -s INT "$([[ $5 == bitstate ]] && echo 20 || echo 600)" ./pan "${panopts[@]}" >out.txt 2>&1 || true
		else
			./pan "${panopts[@]}" >out.txt 2>&1 || true
		fi
		echo "built $((built - start)) s, searched $((SECONDS - built)) s" >>out.txt
	)
}

# Run the verifiers $parallel at a time, the longest first.
pool() {
	while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
	verify "$@" &
}

errors() { sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/$1/out.txt" | head -1; }
states() { sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' "$work/$1/out.txt" | head -1; }
secs() { sed -n 's/^built \([0-9]*\) s, searched \([0-9]*\) s/\1+\2 s/p' "$work/$1/out.txt"; }
complete() {
	[[ $(errors "$1") == 0 ]] && ! grep -qE 'Search not completed|max search depth too small|out of memory' "$work/$1/out.txt"
}

echo "spec: VMAX=$vmax, $("$spin" -V)"
pool protocol O1 -
declare -A worlds=()
for m in "${mutations[@]}"; do
	if ((full)); then
		pool "$(name "$m")" O1 "$(name "$m")"
	else
		pool "$(name "$m")" O0 "$(name "$m"),$(world "$m")"
		worlds[$(world "$m")]=1
	fi
done
for w in "${!worlds[@]}"; do pool "world-$w" O0 "$w"; done
# the read mode
pool read-nochal O1 "NOCHAL$( ((full)) || echo ",$RNARROW")" lease_read.pml
pool read-fencefail O1 FENCEFAIL,NOCHAL,$RNARROW lease_read.pml
if ((full)); then
	pool read-chal O1 - lease_read.pml bitstate-full
else
	pool read-chal O0 "$RNARROW" lease_read.pml bitstate
fi
for m in "${read_mutations[@]}"; do
	pool "read-$(name "$m")" O0 "$(name "$m"),$(world "$m")" lease_read.pml bounded
done
wait

failed=0
fail() {
	echo "FAIL: $1" >&2
	cat "$work/$2/out.txt" >&2
	failed=1
}
if complete protocol; then
	echo "  ok: the protocol, exhaustive: no violation in $(states protocol) states ($(secs protocol))"
else
	fail "the protocol as written: a violation, or the search did not complete:" protocol
	cp "$work/protocol/lease.pml.trail" spec/ 2>/dev/null &&
		echo "trail: spec/lease.pml.trail (spin -t -p -DVMAX=$vmax spec/lease.pml)" >&2
fi
for w in "${!worlds[@]}"; do
	if complete "world-$w"; then
		echo "  ok: the protocol restricted to $w, exhaustive: no violation in $(states "world-$w") states ($(secs "world-$w"))"
	else
		fail "the protocol restricted to $w: a violation, or the search did not complete:" "world-$w"
	fi
done
echo "spec: each mutation must break an invariant$( ((full)) || echo ', each in its restricted world')"
for m in "${mutations[@]}"; do
	n=$(name "$m")
	if [[ $(errors "$n") == 0 || -z $(errors "$n") ]]; then
		fail "$n not caught: $(what "$m")" "$n"
		continue
	fi
	printf '  caught %-15s %-62s %s (%s states, %s)\n' "$n" "$(what "$m")" \
		"$(grep -m1 -o 'assertion violated.*(at' "$work/$n/out.txt" | sed 's/ (at$//' | cut -c1-60)" \
		"$(states "$n")" "$(secs "$n")"
done
echo "spec: the read mode (lease_read.pml)"
for j in read-nochal read-fencefail; do
	if complete "$j"; then
		echo "  ok: $j, exhaustive: no violation in $(states "$j") states ($(secs "$j"))"
	else
		fail "$j: a violation, or the search did not complete:" "$j"
	fi
done
if [[ $(errors read-chal) == 0 ]]; then
	echo "  ok: read-chal$( ((full)) && echo ' (the whole model)'), bitstate to depth $( ((full)) && echo '400 for 600' || echo '200 for 20') s (not exhaustive): no violation in $(states read-chal) states ($(secs read-chal))"
else
	fail "read-chal: a violation:" read-chal
fi
for m in "${read_mutations[@]}"; do
	n=read-$(name "$m")
	if [[ $(errors "$n") == 0 || -z $(errors "$n") ]]; then
		fail "$n not caught: $(what "$m")" "$n"
		continue
	fi
	printf '  caught %-15s %-62s %s (%s states, %s)\n' "$(name "$m")" "$(what "$m")" \
		"$(grep -m1 -o 'assertion violated.*(at' "$work/$n/out.txt" | sed 's/ (at$//' | cut -c1-60)" \
		"$(states "$n")" "$(secs "$n")"
done
exit "$failed"
