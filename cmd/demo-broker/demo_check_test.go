package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/snowflake"
)

// batch returns a batch of n IDs of node at t ms after the epoch, from seq.
func batch(t *testing.T, node, ms, seq int64, n int) snowflake.Range {
	t.Helper()
	l := snowflake.DefaultLayout()
	id, err := l.Compose(snowflake.Parts{TimeMs: l.EpochMs + ms, NodeID: node, Seq: seq})
	if err != nil {
		t.Fatal(err)
	}
	return snowflake.Range{First: id, N: n}
}

// stream builds an idStream from batches.
func stream(broker string, node, version int64, rs ...snowflake.Range) *idStream {
	s := &idStream{broker: broker, node: node, version: version}
	for _, r := range rs {
		s.add(r)
	}
	return s
}

func TestCheckIDsClean(t *testing.T) {
	streams := []*idStream{
		stream("b1", 1, 1, batch(t, 1, 100, 0, 1000), batch(t, 1, 100, 1000, 1000), batch(t, 1, 105, 0, 10)),
		stream("b2", 2, 1, batch(t, 2, 100, 0, 1000)),
		// b3 takes node 1 over: its first ID is above b1's last.
		stream("b3", 1, 2, batch(t, 1, 106, 0, 5)),
		stream("b4", 3, 1), // took an ID, issued nothing
	}
	rep := checkIDs(snowflake.DefaultLayout(), streams)
	if !rep.OK() {
		t.Fatalf("clean streams reported: %+v", rep)
	}
	if rep.IDs != 3015 || rep.Batches != 5 || rep.Streams != 4 {
		t.Errorf("counted %d IDs, %d batches, %d streams; want 3015, 5, 4", rep.IDs, rep.Batches, rep.Streams)
	}
}

// TestCheckIDsFails feeds the checker each kind of violation: it must be
// able to fail.
func TestCheckIDsFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		streams  func() []*idStream
		repeated int64
		want     string // in a problem
	}{{
		name: "the same IDs from two holders of one node ID",
		streams: func() []*idStream {
			return []*idStream{
				stream("b1", 1, 1, batch(t, 1, 100, 0, 1000)),
				stream("b5", 1, 2, batch(t, 1, 100, 500, 1000)), // ignored b1's floor
			}
		},
		repeated: 500,
		want:     "500 IDs issued twice",
	}, {
		name: "a repeated batch within one broker",
		streams: func() []*idStream {
			return []*idStream{stream("b1", 1, 1, batch(t, 1, 100, 0, 10), batch(t, 1, 100, 0, 10))}
		},
		repeated: 10,
		want:     "does not start above the previous batch",
	}, {
		name: "one node ID and version held twice",
		streams: func() []*idStream {
			return []*idStream{
				stream("b1", 1, 1, batch(t, 1, 100, 0, 10)),
				stream("b2", 1, 1, batch(t, 1, 200, 0, 10)),
			}
		},
		want: "held by two brokers at once",
	}, {
		name: "a successor below its predecessor without a repeat",
		streams: func() []*idStream {
			return []*idStream{
				stream("b1", 1, 1, batch(t, 1, 100, 0, 10), batch(t, 1, 300, 0, 10)),
				stream("b5", 1, 2, batch(t, 1, 200, 0, 10)),
			}
		},
		want: "not above",
	}, {
		name: "a batch with another node ID",
		streams: func() []*idStream {
			return []*idStream{stream("b1", 1, 1, batch(t, 2, 100, 0, 10))}
		},
		want: "carries node ID 2",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rep := checkIDs(snowflake.DefaultLayout(), tc.streams())
			if rep.OK() {
				t.Fatal("check passed")
			}
			if rep.Repeated != tc.repeated {
				t.Errorf("Repeated = %d, want %d", rep.Repeated, tc.repeated)
			}
			if !strings.Contains(strings.Join(rep.Problems, "\n"), tc.want) {
				t.Errorf("problems %q do not say %q", rep.Problems, tc.want)
			}
		})
	}
}

// TestPrintCheckDuplicate checks the final line of a failed check.
func TestPrintCheckDuplicate(t *testing.T) {
	var buf bytes.Buffer
	d := &demo{out: &screen{w: &buf}}
	rep := checkIDs(snowflake.DefaultLayout(), []*idStream{
		stream("b1", 1, 1, batch(t, 1, 100, 0, 1000)),
		stream("b5", 1, 2, batch(t, 1, 100, 999, 2)),
	})
	d.printCheck(rep)
	out := buf.String()
	if !strings.Contains(out, "DUPLICATE IDS: 1 of 1,002 IDs") || strings.Contains(out, "none repeat") {
		t.Errorf("output:\n%s", out)
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -12345: "-12,345"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFitScreen(t *testing.T) {
	red := "\x1b[31mkilled\x1b[0m and more"
	if got := cutVisible(red, 3); got != "\x1b[31mkil\x1b[0m" {
		t.Errorf("cutVisible = %q", got)
	}
	events := []string{"[  1.0s] old event", "[  2.0s] a newer event that needs to wrap onto a second line"}
	got := fitScreen([]string{"header", "table"}, events, 30, 6)
	want := []string{"header", "table", "[  2.0s] a newer event that", "         needs to wrap onto a", "         second line"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("fitScreen =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
