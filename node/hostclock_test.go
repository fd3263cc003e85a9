package node

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease/storetest"
)

// steppedHost is a host clock a test steps: the real clock plus an offset.
type steppedHost struct{ offset atomic.Int64 }

func (h *steppedHost) now() time.Time       { return time.Now().Add(time.Duration(h.offset.Load())) }
func (h *steppedHost) step(d time.Duration) { h.offset.Add(int64(d)) }
func (h *steppedHost) ms() int64            { return h.now().UnixMilli() }
func readIDFile(t *testing.T, path string) (c IDFileContent) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestIDFileDecidedOnTheHostClock: the id file's reader stamps IDs with the
// host's clock, which steps where the node's wall clock does not. So
// validUntilMs is the fence on the host's clock (a host 3 s behind the node's
// wall clock must not give the reader 3 s past the fence), capped by the
// reservation; the renewals reserve above the host's clock (a host 3 s ahead
// gets a usable file after the next renewal); and the release keeps the
// reservation at or above the host's clock. Before the fix all three used the
// node's wall clock.
func TestIDFileDecidedOnTheHostClock(t *testing.T) {
	for _, step := range []time.Duration{-3 * time.Second, 3 * time.Second} {
		t.Run(step.String(), func(t *testing.T) {
			store := storetest.NewMemStore()
			host := &steppedHost{}
			host.step(step) // as if the host's clock stepped once the node's was read
			path := filepath.Join(t.TempDir(), "id.json")
			cfg := testConfig("a", 1)
			cfg.IDFile, cfg.IDFileGrace, cfg.HostClock = path, 10*time.Millisecond, host.now
			n, err := New(store, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			pc := n.provider.Load().Timings()
			first := readIDFile(t, path)
			// Wait for a renewal's rewrite: its reservation covers the host's clock.
			deadline := time.Now().Add(5 * time.Second)
			c := first
			for ; c == first; c = readIDFile(t, path) {
				if time.Now().After(deadline) {
					t.Fatalf("the id file was not rewritten after a renewal: %+v", c)
				}
				time.Sleep(10 * time.Millisecond)
			}
			now := host.ms()
			res := readRecord(t, store, 0).ReservedUntilMs
			switch {
			case c.ValidUntilMs > now+(pc.Lease-pc.SafetyMargin).Milliseconds():
				t.Errorf("validUntilMs %d is %v past the host's clock %d: beyond the fence", c.ValidUntilMs, time.Duration(c.ValidUntilMs-now)*time.Millisecond, now)
			case c.ValidUntilMs <= now:
				t.Errorf("validUntilMs %d not ahead of the host's clock %d after a renewal: the reader cannot use the ID", c.ValidUntilMs, now)
			case c.ValidUntilMs > res:
				t.Errorf("validUntilMs %d above the reservation %d", c.ValidUntilMs, res)
			}
			closing := host.ms()
			if err := n.Close(closeCtx(t)); err != nil {
				t.Fatal(err)
			}
			if rec := readRecord(t, store, 0); rec.Holder != "" || rec.ReservedUntilMs < closing {
				t.Errorf("released with reservation %d, %v below the host's clock %d at Close", rec.ReservedUntilMs, time.Duration(closing-rec.ReservedUntilMs)*time.Millisecond, closing)
			}
		})
	}
}
