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
