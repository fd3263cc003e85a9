package nodeid

import (
	"context"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// TestPublishedWhileHeld: Config.Value and Config.GossipAddr are in the
// record from the take (by create, and by CAS of a free record) through
// every renewal, and the release writes the record free without them.
func TestPublishedWhileHeld(t *testing.T) {
	for _, f := range []struct {
		name string
		set  func(*Config, string)
		get  func(lease.Record) string
		a, b string
	}{
		{"value", func(c *Config, v string) { c.Value = v }, func(r lease.Record) string { return r.Value }, "http://10.0.0.7:8080", "b's value"},
		{"gossip", func(c *Config, v string) { c.GossipAddr = v }, func(r lease.Record) string { return r.Gossip }, "10.0.0.7:7946", "10.0.0.8:7946"},
	} {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.config("a")
			cfg.ClusterSize = 1
			f.set(&cfg, f.a)
			c := e.acquire(e.provider(cfg)) // never created: taken by create
			if r, _ := e.record(0); f.get(r) != f.a {
				t.Fatalf("after the create, %s %q, want %q", f.name, f.get(r), f.a)
			}
			e.advance(2*time.Second, c)
			e.settle(c)
			if r, _ := e.record(0); f.get(r) != f.a || r.Version != 1 || r.RenewedAt.Equal(start) {
				t.Fatalf("after renewals, %+v: want %s %q, version 1, renewed", r, f.name, f.a)
			}
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r, _ := e.record(0); r.Holder != "" || f.get(r) != "" {
				t.Fatalf("released record %+v: want free and no %s", r, f.name)
			}
			cfg.TaskID = "b"
			f.set(&cfg, f.b)
			e.acquire(e.provider(cfg)) // free: taken by CAS
			if r, _ := e.record(0); r.Holder != "b" || f.get(r) != f.b || r.Version != 2 {
				t.Fatalf("after the CAS, %+v: want holder b, %s %q, version 2", r, f.name, f.b)
			}
		})
	}
}
