package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestDemoFast runs the demo with the short timeline, as "demo-broker demo
// --fast" does, and checks the story it tells: a broker killed, its node ID
// re-leased with a higher version once the lease ran out; a graceful stop
// re-leased at once; a replacement with a slow clock; no ID repeated.
func TestDemoFast(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	began := time.Now()
	code := runDemo(ctx, []string{"--fast"}, &out, &errOut)
	text := out.String()
	t.Logf("demo took %v; output:\n%s", time.Since(began).Round(time.Millisecond), text)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, errOut.String())
	}
	if strings.Contains(text, "\x1b") {
		t.Error("escape codes in the output to a non-terminal")
	}

	// The kill and the re-lease after the lease ran out.
	kill := find(t, text, `kill -9 (b\d+) \(node (\d+), version (\d+)\)`)
	took := find(t, text, `(b\d+) took node (\d+) with version (\d+), ([\d.]+)s after the kill: (b\d+)'s lease`)
	if took[2] != kill[2] || atoi(t, took[3]) <= atoi(t, kill[3]) || took[5] != kill[1] {
		t.Errorf("killed %v, re-leased %v: want the same node with a higher version", kill, took)
	}
	// The killed broker led "jobs"; another is elected with a higher term.
	elected := find(t, text, `(b\d+) was elected leader of "jobs" with term (\d+) \(the killed leader had term (\d+)\)`)
	if elected[1] == kill[1] || atoi(t, elected[2]) <= atoi(t, elected[3]) {
		t.Errorf("killed %v, elected %v: want another broker with a higher term", kill, elected)
	}
	tl := shortTimeline()
	if s, _ := strconv.ParseFloat(took[4], 64); time.Duration(s*float64(time.Second)) < tl.lease {
		t.Errorf("node %s re-leased %ss after the kill, before the %v lease ran out", took[2], took[4], tl.lease)
	}

	// The graceful stop and the re-lease at once.
	stop := find(t, text, `graceful stop of (b\d+) \(node (\d+), version (\d+)\), as on SIGTERM`)
	// "free since its release" is printed only when the claim took over a free
	// (released) lease, not an expired one (Claim.TookOverExpired): no waiting
	// for the lease to run out, whatever the machine's load makes of the timing.
	retook := find(t, text, `(b\d+) took node (\d+) with version (\d+), free since its release`)
	if retook[2] != stop[2] || atoi(t, retook[3]) != atoi(t, stop[3])+1 {
		t.Errorf("stopped %v, re-leased %v: want the same node with version+1", stop, retook)
	}

	// The slow clock, and the final line.
	find(t, text, `first ID has timestamp \S+, after (b\d+)'s last one`)
	final := find(t, text, `(?m)^issued ([\d,]+) IDs on (\d+) brokers; none repeat$`)
	if final[1] == "0" || final[2] != "7" {
		t.Errorf("final line %q: want IDs from 7 brokers", final[0])
	}
}

// TestDemoInterrupted cancels the demo (Ctrl-C) right after the kill: it
// must clean up, still check the IDs, and exit 130 at once: no step of the
// script after the kill runs (how many seconds the clean-up takes depends on
// the machine; which steps ran does not).
func TestDemoInterrupted(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out := &cancelAt{match: "kill -9", cancel: cancel}
	var errOut bytes.Buffer
	code := runDemo(ctx, []string{"--fast", "--brokers", "2"}, out, &errOut)
	text := out.String()
	if code != 130 {
		t.Fatalf("exit code %d, want 130; stderr:\n%s\nstdout:\n%s", code, errOut.String(), text)
	}
	if out.canceledAt.IsZero() {
		t.Fatal("never canceled")
	}
	for _, later := range []string{"after the kill: ", "which was free: ", "was elected leader of", "graceful stop of"} {
		if strings.Contains(text, later) {
			t.Errorf("the script went on after the interrupt: the output has %q", later)
		}
	}
	find(t, text, `Interrupted: every live broker stops`)
	find(t, text, `(?m)^issued [\d,]+ IDs on 3 brokers; none repeat$`)
}

func TestDemoFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "Usage: demo-broker demo"},
		{[]string{"--brokers", "0"}, 2, "--brokers 0 outside 1..32"},
		{[]string{"--brokers", "5", "--cluster-size", "4"}, 2, "--cluster-size 4 outside 5 (--brokers)..1024"},
		{[]string{"--nope"}, 2, "flag provided but not defined"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
	} {
		var out, errOut bytes.Buffer
		code := runDemo(t.Context(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}

// find returns the submatches of the first match of re in text, failing the
// test if none.
func find(t *testing.T, text, re string) []string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("output lacks %q", re)
	}
	return m
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// cancelAt is an output that calls cancel, once, when a write contains match.
type cancelAt struct {
	mu         sync.Mutex
	buf        bytes.Buffer
	match      string
	cancel     context.CancelFunc
	canceledAt time.Time
}

func (c *cancelAt) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.canceledAt.IsZero() && bytes.Contains(p, []byte(c.match)) {
		c.canceledAt = time.Now()
		c.cancel()
	}
	return c.buf.Write(p)
}

func (c *cancelAt) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
