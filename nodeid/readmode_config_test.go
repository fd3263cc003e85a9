package nodeid

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// readConfig is e.config in read mode: a 3 s window, a 12 s backstop.
func (e *env) readConfig(task string) Config {
	c := e.config(task)
	c.KeepAlive, c.Window, c.Backstop, c.MaxLeaseDuration = KeepAliveRead, 3*time.Second, 12*time.Second, 12*time.Second
	c.RenewInterval, c.RenewDeadline, c.SafetyMargin = 0, 0, 0 // derived from the backstop
	return c
}

// The first task writes its keep-alive mode, window and backstop into the
// manifest; a task configured with another mode, or another window or
// backstop, is refused naming both, in either direction, as for FirstNodeID.
func TestManifestKeepAliveMismatch(t *testing.T) {
	e := newEnv(t)
	cfg := e.readConfig("a")
	if _, err := e.provider(cfg).bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	body, _, err := e.mem.Get(context.Background(), lease.ManifestKey)
	if err != nil {
		t.Fatal(err)
	}
	m, err := lease.DecodeManifest(body)
	if err != nil || m.KeepAlive != KeepAliveRead || m.WindowMillis != 3000 || m.BackstopMillis != 12000 {
		t.Fatalf("manifest %s: %+v, %v; want keep-alive read, window 3000, backstop 12000", body, m, err)
	}
	for name, edit := range map[string]func(*Config){
		"write mode":     func(c *Config) { *c = e.config(c.TaskID) },
		"other window":   func(c *Config) { c.Window, c.Backstop = 4*time.Second, 12*time.Second },
		"other backstop": func(c *Config) { c.Backstop = 11 * time.Second },
	} {
		c := e.readConfig("b")
		edit(&c)
		p := e.provider(c)
		mine := p.manifestFor()
		_, err := p.bootstrap(context.Background())
		if !errors.Is(err, ErrManifestMismatch) || !strings.Contains(err.Error(), m.KeepAliveString()) ||
			!strings.Contains(err.Error(), mine.KeepAliveString()) {
			t.Errorf("%s: %v, want ErrManifestMismatch naming %q and %q", name, err, m.KeepAliveString(), mine.KeepAliveString())
		}
		if fix := "(nodeid-broker " + keepAliveFlags(&m) + ";"; !strings.Contains(err.Error(), fix) {
			t.Errorf("%s: %v, want the fix %q", name, err, fix)
		}
	}
	if _, err := e.provider(e.readConfig("c")).bootstrap(context.Background()); err != nil {
		t.Fatalf("a task configured as the manifest: %v", err)
	}
	w := newEnv(t)
	if _, err := w.provider(w.config("a")).bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	body, _, _ = w.mem.Get(context.Background(), lease.ManifestKey)
	if strings.Contains(string(body), "keepAlive") {
		t.Fatalf("a write-mode manifest %s names its mode: its bytes changed", body)
	}
	_, err = w.provider(w.readConfig("b")).bootstrap(context.Background())
	if !errors.Is(err, ErrManifestMismatch) || !strings.Contains(err.Error(), "the manifest has keep-alive write, this task is configured with keep-alive read, window 3s, backstop 12s: "+
		"configure the task as the manifest says (nodeid-broker --keepalive write; Config.KeepAlive), or give it another prefix") {
		t.Fatalf("a read-mode task in a write-mode cluster: %v", err)
	}
}

// Read mode needs a store with conditional reads: New says so.
func TestReadModeNeedsConditionalReads(t *testing.T) {
	e := newEnv(t)
	_, err := New(struct{ lease.Store }{e.mem}, e.readConfig("a"))
	if err == nil || !strings.Contains(err.Error(), "lease.ConditionalReader") {
		t.Fatalf("New on a store without conditional reads: %v", err)
	}
	if _, err := New(struct{ lease.Store }{e.mem}, e.config("a")); err != nil {
		t.Fatalf("write mode needs none: %v", err)
	}
}

// In read mode the backstop is the lease, on the claim's Timings, never
// written into the Config: a LeaseDuration set stays as set, every record
// states the backstop, and the manifest pins the window and backstop
// derived when left zero.
func TestReadModeTimings(t *testing.T) {
	e := newEnv(t)
	cfg := e.readConfig("a")
	cfg.LeaseDuration = 5 * time.Second
	p := e.provider(cfg)
	if got := p.Config(); got.LeaseDuration != 5*time.Second || got.RenewInterval != 0 || got.PollInterval != 0 {
		t.Fatalf("Config(): LeaseDuration %v, RenewInterval %v, PollInterval %v; want them as set", got.LeaseDuration, got.RenewInterval, got.PollInterval)
	}
	// 12 s backstop: margin 1 s, renewals every 4 s given up at 8 s,
	// StoreTimeout 4/15 of 4 s; the 3 s window's polls every 3/4 of
	// 3 s - 1 s - StoreTimeout (below W/2).
	st := 4 * time.Second * 4 / 15
	want := Timings{Pinned: Pinned{Layout: cfg.Layout, KeepAlive: KeepAliveRead, Window: 3 * time.Second, Backstop: 12 * time.Second},
		Lease: 12 * time.Second, RenewInterval: 4 * time.Second, RenewDeadline: 8 * time.Second, SafetyMargin: time.Second,
		StoreTimeout: st, PollInterval: (2*time.Second - st) * 3 / 4, LossGrace: 12 * time.Second, MaxLeaseDuration: 12 * time.Second}
	if got := p.Timings(); got != want {
		t.Fatalf("Timings() = %+v\nwant %+v", got, want)
	}
	c := e.acquire(p)
	if r, _ := e.record(c.NodeID()); r.LeaseMillis != 12000 {
		t.Fatalf("record leaseMillis %d, want the backstop 12000", r.LeaseMillis)
	}
	if got := c.LossWindow(); got != 12*time.Second-time.Second-8*time.Second {
		t.Fatalf("LossWindow %v, want backstop - margin - deadline = 3s", got)
	}
	d := DefaultConfig()
	d.KeepAlive = KeepAliveRead
	if m := e.provider(d).manifestFor(); m.KeepAlive != KeepAliveRead || m.WindowMillis != DefaultWindow.Milliseconds() || m.BackstopMillis != DefaultBackstop.Milliseconds() {
		t.Fatalf("manifest of the read-mode defaults: %+v, want window %v and backstop %v", m, DefaultWindow, DefaultBackstop)
	}
}
