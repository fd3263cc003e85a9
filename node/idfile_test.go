package node

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// TestReleaseCoversIDFileReaderAfterHostStrobe: an id-file reader
// stamps its IDs with the host's clock, below the file's validUntilMs. The
// host's clock steps forward (within the reservation's headroom), the reader
// issues an ID at that reading, and the clock steps back again before the
// node reads it (the node reads the host's clock only at an id-file write,
// i.e. once per renewal, when no child runs). The reader stops at the
// removal of the file and gets its grace; the release then lowers the
// reservation to max(generator, hostclock.Clock.High), and High never saw the
// excursion. A successor takes the free record with that floor and issues,
// under the same node ID, the very ID the reader issued.
//
// docs/evidence/design.md section 5 says the release keeps the reservation "at or
// above the highest reading of the host's clock anyone may have taken"; the
// only bound on the reader's readings that does not depend on the node
// observing them is the highest validUntilMs written (maxValidMs), which
// lowestRelease drops once the grace is over.
func TestReleaseCoversIDFileReaderAfterHostStrobe(t *testing.T) {
	clk := fakeclock.New(time.Now().Round(time.Second))
	mem := storetest.NewMemStore(storetest.WithClock(clk.Now))
	var off atomic.Int64
	host := func() time.Time { return clk.Wall().Add(time.Duration(off.Load())) }

	path := filepath.Join(t.TempDir(), "id.json")
	cfg := testConfig("a", 1)
	cfg.Provider.Clock, cfg.HostClock, cfg.IDFile, cfg.IDFileGrace = clk, host, path, 10*time.Millisecond
	a, err := New(mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := readIDFile(t, path)

	// The host's clock strobes forward by 2 s (inside the 3 s lease's
	// reservation headroom): the reader, following the id-file rules, issues
	// one ID at that reading.
	off.Store(int64(2 * time.Second))
	appMs := host().UnixMilli()
	if appMs <= f.FloorMs || appMs >= f.ValidUntilMs {
		t.Fatalf("setup: the reader may not issue at %d (floor %d, validUntil %d)", appMs, f.FloorMs, f.ValidUntilMs)
	}
	layout := cfg.Provider.Layout
	appID, err := layout.Compose(snowflake.Parts{TimeMs: appMs, NodeID: int64(f.NodeID), Seq: 0})
	if err != nil {
		t.Fatal(err)
	}
	off.Store(0) // ... and steps back before any renewal read it

	if err := a.Close(closeCtx(t)); err != nil { // removes the file, grace, release
		t.Fatal(err)
	}
	rec := readRecord(t, mem, f.NodeID)
	if rec.ReservedUntilMs >= appMs {
		return // the successor's floor covers the reader's IDs
	}

	// A successor takes the free record; its floor is the released
	// reservation. Once its clock reaches the reader's reading it issues.
	cfgB := testConfig("b", 1)
	cfgB.Provider.Clock, cfgB.HostClock = clk, clk.Wall
	b, err := New(mem, cfgB)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(closeCtx(t)) })
	clk.Advance(time.Duration(appMs-clk.Wall().UnixMilli()) * time.Millisecond)
	id, err := b.Next()
	if err != nil {
		t.Fatalf("successor Next: %v", err)
	}
	t.Fatalf("release wrote reservation %d, below the reader's timestamp %d (its file said validUntilMs %d): the successor (floor %d) issued %d, the reader's ID %d (duplicate: %v)",
		rec.ReservedUntilMs, appMs, f.ValidUntilMs, b.Claim().Floor(), id, appID, id == appID)
}

// TestRecoveryKeepsTheIDFileUp: the watcher learns of a jeopardy (take the
// file down) and of the recovery that follows (write it again) from the
// claim (Claim.Changed), not from the metrics Observer, and follows its last
// state. Both happen here while the watcher is busy (the test holds the id
// file's lock, as a slow id-file write, an fsync, would): once the write
// goes through, the file is up again with no refresh tick, because the
// change closed the channel the watcher took before its sync. (With two
// signals, one per event, served by one select, the watcher wrote the file
// back first half of the time and then took it down: the lease held and
// valid, /health 200, and the id file gone until the next renewal.)
func TestRecoveryKeepsTheIDFileUp(t *testing.T) {
	for i := range 12 {
		clk, _, cut, path, _, n := idFileNode(t)
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		c := n.Claim()
		n.idFile.mu.Lock()
		start := clk.Now()
		stepUntil(t, clk, 2*time.Second, "renewed", func() bool { return clk.Now().After(start) && c.Status().SinceWrite == 0 })
		// Meanwhile the store blips: jeopardy, then the recovery.
		cut.Store(true)
		stepUntil(t, clk, 5*time.Second, "in jeopardy", func() bool { return c.Status().Jeopardy })
		cut.Store(false)
		stepUntil(t, clk, 2*time.Second, "recovered", func() bool { return c.Status().Recoveries > 0 && c.Valid() })
		n.idFile.mu.Unlock()
		// The watcher's last sync follows the claim's final state: the
		// file comes back with no refresh tick.
		statErr := idFileUp(path)
		valid := n.Check() == nil
		_ = n.Close(closeCtx(t))
		if !valid || statErr != nil {
			t.Fatalf("run %d: the lease recovered (node Check %v), but the id file is not up 5 s later: %v", i, n.Check(), statErr)
		}
	}
}

// TestIDFileWrittenAfterARecovery: Start writes the id file once the
// host's clock is past the floor, and skips it when the claim is not Valid at
// that instant; refresh rewrites only a file written before (!f.written:
// return). Before jeopardy a claim not Valid then was about to end, and the
// node with it. Now it recovers: a store blip (or a suspension, or a step of
// the real-time clock) that puts the claim in jeopardy while Start waits for
// the floor leaves a node that serves (/health 200, the same version) for
// the rest of its life with no id file: the application never gets the ID,
// and nothing replaces the task.
func TestIDFileWrittenAfterARecovery(t *testing.T) {
	clk := fakeclock.New(time.Now().Round(time.Second))
	mem := storetest.NewMemStore(storetest.WithClock(clk.Now))
	fs, cut := cuttableStore(mem)
	// A predecessor released node 0 keeping its reservation (a Claim closed
	// without WithIssuedFunc): the floor is 300 ms ahead when b takes it.
	pc := nodeid.DefaultLocalConfig()
	pc.TaskID, pc.ClusterSize, pc.Clock = "p", 1, clk
	p, err := nodeid.New(mem, pc)
	if err != nil {
		t.Fatal(err)
	}
	pclaim, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := pclaim.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(pc.LeaseDuration - 300*time.Millisecond)

	path := filepath.Join(t.TempDir(), "id.json")
	cfg := testConfig("b", 1)
	cfg.Provider.Clock, cfg.HostClock, cfg.IDFile, cfg.IDFileGrace = clk, clk.Wall, path, 10*time.Millisecond
	n, err := New(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.idFileRefresh = time.Hour // only the claim's signals may write the file
	started := make(chan error, 1)
	go func() { started <- n.Start(context.Background()) }()
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	for deadline := time.Now().Add(5 * time.Second); n.Claim() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no claim")
		}
	}
	// While Start waits for the floor, the store blips: jeopardy.
	cut.Store(true)
	stepUntil(t, clk, 5*time.Second, "in jeopardy", func() bool { return n.Claim().Status().Jeopardy })
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	cut.Store(false)
	stepUntil(t, clk, 2*time.Second, "recovered", func() bool { return n.Status().State == StateHeld })
	// Renewals go on; the watcher has every chance to write the file.
	end := clk.Now().Add(3 * time.Second)
	stepUntil(t, clk, 4*time.Second, "three more renewals", func() bool { return !clk.Now().Before(end) })
	if err := idFileUp(path); err != nil && n.Check() == nil && n.Claim().Status().Recoveries > 0 {
		t.Fatalf("the node serves (Check nil, version %d, recovered) but the id file was never written: %v", n.Version(), err)
	}
}

// idFileUp waits up to 5 s for the file at path to exist, and returns the
// last error of os.Stat: nil once it does.
func idFileUp(path string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := os.Stat(path)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHealthWaitsForTheIDFile: a node with an id file that holds its ID but
// has not written the file (the host's clock is behind the ID's floor) fails
// /health and /ready with ErrIDFileDown: an application waiting for them and
// then reading the file would find none.
func TestHealthWaitsForTheIDFile(t *testing.T) {
	store := storetest.NewMemStore()
	// A predecessor released node 0 with its reservation at now: the floor.
	releasedBefore(t, store, 0, nodeid.WithIssuedFunc(func() int64 { return time.Now().UnixMilli() }))

	path := filepath.Join(t.TempDir(), "id.json")
	cfg := testConfig("b", 1)
	cfg.IDFile, cfg.IDFileGrace = path, 0
	cfg.HostClock = func() time.Time { return time.Now().Add(-time.Hour) } // an hour behind the floor
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.Start(context.Background()) }()
	t.Cleanup(func() { _ = n.Close(closeCtx(t)) })
	for deadline := time.Now().Add(5 * time.Second); n.Claim() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no claim")
		}
	}
	if s := n.Status(); s.State != StateHeld {
		t.Fatalf("state %q, want %q", s.State, StateHeld)
	}
	for name, check := range map[string]func() error{"Check": n.Check, "CheckReady": n.CheckReady} {
		if err := check(); !errors.Is(err, ErrIDFileDown) {
			t.Errorf("%s = %v, want ErrIDFileDown", name, err)
		}
	}
	for _, path := range []string{"/health", "/ready"} {
		if code, body := get(n.Handler(), path); code != http.StatusServiceUnavailable || !strings.Contains(body, "id file") {
			t.Errorf("%s: %d %s, want 503 naming the id file", path, code, body)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("the id file exists before the host's clock passed the floor")
	}
}

// releasedBefore has a predecessor, task "p" on a cluster of one, take node 0
// from store with a lease of d (0: the local default) and release it, after
// Acquire with opts; a claim released without nodeid.WithIssuedFunc keeps
// its reservation, a lease ahead.
func releasedBefore(t *testing.T, store lease.Store, d time.Duration, opts ...nodeid.ClaimOption) {
	t.Helper()
	pc := nodeid.DefaultLocalConfig()
	pc.TaskID, pc.ClusterSize = "p", 1
	if d > 0 {
		pc.LeaseDuration, pc.RenewInterval, pc.RenewDeadline = d, d/3, 2*d/3
	}
	p, err := nodeid.New(store, pc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Acquire(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
