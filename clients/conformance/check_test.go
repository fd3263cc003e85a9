package conformance

import (
	"fmt"
	"strings"
	"testing"
)

// id makes an ID of the layout.
func id(ms int64, node int, seq int64) int64 {
	return (ms-EpochMs)<<(nodeBits+seqBits) | int64(node)<<seqBits | seq
}

const t0 = int64(1795800000000) // a Unix ms in 2026

func okLine(node int, version int64, valid string, ids ...int64) string {
	s := make([]string, len(ids))
	for i, x := range ids {
		s[i] = fmt.Sprint(x)
	}
	return fmt.Sprintf("ok %d %d %s %s", node, version, valid, strings.Join(s, " "))
}

func stream(name string, idFile bool, batch int, ended bool, lines ...string) *Stream {
	st := &Stream{Name: name, Driver: true, IDFile: idFile, Batch: batch, Ended: ended}
	for _, l := range lines {
		st.Lines = append(st.Lines, ParseLine(l))
	}
	return st
}

func TestParseLine(t *testing.T) {
	l := ParseLine(okLine(7, 3, "1795800001000", id(t0, 7, 0), id(t0, 7, 1)))
	if l.Kind != OK || l.Node != 7 || l.Version != 3 || l.ValidMs != 1795800001000 || len(l.IDs) != 2 || l.IDs[1] != id(t0, 7, 1) {
		t.Errorf("ok line: %+v", l)
	}
	if l := ParseLine("ok 1 2 - 5"); l.Kind != OK || l.ValidMs != -1 {
		t.Errorf("HTTP ok line: %+v", l)
	}
	if l := ParseLine("err NotHeld /run/id.json: no such file"); l.Kind != Err || l.ErrKind != "NotHeld" {
		t.Errorf("err line: %+v", l)
	}
	if l := ParseLine("err Unavailable"); l.Kind != Err || l.ErrKind != "Unavailable" {
		t.Errorf("err line without a message: %+v", l)
	}
	if l := ParseLine("done 10 3"); l.Kind != Done || l.Calls != 10 || l.Errors != 3 {
		t.Errorf("done line: %+v", l)
	}
	for _, bad := range []string{
		"", "hello", "ok", "ok 1 2 3", "ok 1024 1 - 5", "ok -1 1 - 5", "ok 1 x - 5", "ok 1 1 soon 5",
		"ok 1 1 - 1.5e3", "ok 1 1 - -5", "ok 1 1 - 9223372036854775808", "err", "err Timeout slow", "err notheld x",
		"done", "done 1", "done 1 2", "done a b", "OK 1 1 - 5",
	} {
		if l := ParseLine(bad); l.Kind != Bad || l.Problem == "" {
			t.Errorf("ParseLine(%q) = %+v, want Bad with a problem", bad, l)
		}
	}
}

func TestCheckCleanRun(t *testing.T) {
	valid := fmt.Sprint(t0 + 1000)
	run := Run{
		Streams: []*Stream{
			stream("a", true, 2, true,
				okLine(3, 5, valid, id(t0, 3, 0), id(t0, 3, 1)),
				"err NotHeld gone",
				okLine(3, 5, valid, id(t0+1, 3, 0), id(t0+1, 3, 1)),
				"err VersionChanged changed",
				"err VersionChanged changed",
				"done 5 3"),
			stream("b", false, 1, false, okLine(4, 1, "-", id(t0, 4, 0)), okLine(4, 1, "-", id(t0, 4, 1))),
			{Name: "broker /ids", Lines: []Line{ParseLine(okLine(3, 6, "-", id(t0+2000, 3, 0), id(t0+2000, 3, 1)))}},
		},
		Claims: []Claim{{Node: 3, Version: 5, FloorMs: t0 - 1}, {Node: 3, Version: 6, FloorMs: t0 + 1999}, {Node: 4, Version: 1}},
	}
	rep := Check(run)
	if !rep.OK() || rep.IDs != 8 || rep.OKLines != 5 || rep.ErrLines["VersionChanged"] != 2 || rep.ErrLines["NotHeld"] != 1 {
		t.Fatalf("a clean run: %s", rep)
	}
}

// TestCheckFindsEachViolation feeds Check one broken rule at a time and
// expects exactly that kind.
func TestCheckFindsEachViolation(t *testing.T) {
	valid := fmt.Sprint(t0 + 1000)
	ok := func(ms int64, seq int64) string { return okLine(3, 5, valid, id(ms, 3, seq)) }
	claims := []Claim{{Node: 3, Version: 5, FloorMs: t0 - 1000}, {Node: 4, Version: 1, FloorMs: 0}, {Node: 5, Version: 1, RemovedMs: t0}}
	late := func(ms int64) string { return okLine(5, 1, fmt.Sprint(t0+10000), id(ms, 5, 0)) }
	for _, tc := range []struct {
		name    string
		kind    string
		streams []*Stream
	}{
		{"an ID twice in one process", KindDuplicate + "," + KindNotIncreasing,
			[]*Stream{stream("a", true, 1, false, ok(t0, 0), ok(t0, 0))}},
		{"an ID in two processes", KindDuplicate,
			[]*Stream{stream("a", true, 1, false, ok(t0, 0)), stream("b", true, 1, false, ok(t0, 0))}},
		{"an ID a broker served too", KindDuplicate,
			[]*Stream{stream("a", true, 1, false, ok(t0, 0)), {Name: "broker", Lines: []Line{ParseLine(okLine(3, 5, "-", id(t0, 3, 0)))}}}},
		{"an ID below the one before", KindNotIncreasing,
			[]*Stream{stream("a", true, 1, false, ok(t0, 1), ok(t0, 0))}},
		{"IDs not increasing within a line", KindNotIncreasing,
			[]*Stream{stream("a", true, 2, false, okLine(3, 5, valid, id(t0, 3, 1), id(t0, 3, 0)))}},
		{"an ID stamped at validUntilMs", KindPastValidUntil,
			[]*Stream{stream("a", true, 1, false, ok(t0, 0), ok(t0+1000, 0))}},
		{"node bits not the line's node", KindNodeBits,
			[]*Stream{stream("a", true, 1, false, okLine(3, 5, valid, id(t0, 2, 0)))}},
		{"an ID at the floor", KindBelowFloor,
			[]*Stream{stream("a", true, 1, false, ok(t0-1000, 0))}},
		{"a claim nobody handed out", KindUnknownClaim,
			[]*Stream{stream("a", true, 1, false, okLine(3, 4, valid, id(t0, 3, 0)))}},
		{"an id-file process under two claims", KindClaimChanged,
			[]*Stream{stream("a", true, 1, false, ok(t0, 0), okLine(4, 1, valid, id(t0+1, 4, 0)))}},
		{"ok after VersionChanged", KindAfterVersionChanged,
			[]*Stream{stream("a", true, 1, false, ok(t0, 0), "err VersionChanged x", ok(t0+1, 0))}},
		{"an ID stamped past the removal's slack", KindAfterRemoval,
			[]*Stream{stream("a", true, 1, false, late(t0+RemovalSlackMs), late(t0+RemovalSlackMs+1))}},
		{"a batch of the wrong size", KindBatch,
			[]*Stream{stream("a", true, 2, false, ok(t0, 0))}},
		{"a line not of the protocol", KindProtocol,
			[]*Stream{stream("a", true, 1, false, ok(t0, 0), "Traceback (most recent call last):")}},
		{"no done line after a stop", KindProtocol,
			[]*Stream{stream("a", true, 1, true, ok(t0, 0))}},
		{"done counts not the lines'", KindProtocol,
			[]*Stream{stream("a", true, 1, true, ok(t0, 0), "err NotHeld x", "done 2 0")}},
		{"a line after done", KindProtocol,
			[]*Stream{stream("a", true, 1, true, ok(t0, 0), "done 1 0", ok(t0+1, 0))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(Run{Streams: tc.streams, Claims: claims})
			want := strings.Split(tc.kind, ",")
			for _, k := range want {
				if !rep.Has(k) {
					t.Errorf("no %s violation:\n%s", k, rep)
				}
			}
			if len(rep.Counts) != len(want) {
				t.Errorf("violations of other kinds than %v:\n%s", want, rep)
			}
		})
	}
}

func TestCheckWithoutClaimsSkipsClaimChecks(t *testing.T) {
	st := stream("a", false, 1, false, okLine(3, 5, "-", id(t0, 3, 0)))
	if rep := Check(Run{Streams: []*Stream{st}}); !rep.OK() {
		t.Fatalf("claims unknown: %s", rep)
	}
}

func TestCheckBoundsWhatItKeeps(t *testing.T) {
	var lines []string
	for i := range int64(100) {
		lines = append(lines, okLine(3, 5, "-", id(t0, 3, i)))
	}
	a, b := stream("a", false, 1, false, lines...), stream("b", false, 1, false, lines...)
	rep := Check(Run{Streams: []*Stream{a, b}})
	if rep.Counts[KindDuplicate] != 100 || len(rep.Violations) != keepPerKind {
		t.Fatalf("100 duplicates: counts %v, %d kept", rep.Counts, len(rep.Violations))
	}
}

func TestDecode(t *testing.T) {
	x := id(t0+5, 1023, 4095)
	if TimeMs(x) != t0+5 || NodeOf(x) != 1023 || x&(1<<seqBits-1) != 4095 {
		t.Fatalf("decode %d: %d %d", x, TimeMs(x), NodeOf(x))
	}
}
