package node

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

func TestConfigShutdownTimeout(t *testing.T) {
	c := testConfig("a", 1)
	if c.ShutdownTimeout != 10*time.Second {
		t.Errorf("default ShutdownTimeout %v, want 10s", c.ShutdownTimeout)
	}
	c.ShutdownTimeout = 0
	if err := c.Validate(); err != nil || c.ShutdownTimeout != 10*time.Second {
		t.Errorf("zero ShutdownTimeout: %v, filled in as %v; want the default 10s", err, c.ShutdownTimeout)
	}
	c.ShutdownTimeout = -time.Second
	fe := nodeid.FieldErrors(c.Validate())
	if len(fe) != 1 || fe[0].Field != "Node.ShutdownTimeout" {
		t.Errorf("negative ShutdownTimeout: %v, want one error on Node.ShutdownTimeout", fe)
	}
}

// TestConfigIDFileHorizon: zero is the default (3 s), and with an id file a
// horizon below MinIDFileHorizon is refused, naming the field.
func TestConfigIDFileHorizon(t *testing.T) {
	c := testConfig("a", 1)
	c.IDFile, c.IDFileHorizon = filepath.Join(t.TempDir(), "id.json"), 0
	if err := c.Validate(); err != nil || c.IDFileHorizon != 3*time.Second {
		t.Errorf("zero IDFileHorizon: %v, filled in as %v; want the default 3s", err, c.IDFileHorizon)
	}
	c.IDFileHorizon = MinIDFileHorizon - time.Millisecond
	fe := nodeid.FieldErrors(c.Validate())
	if len(fe) != 1 || fe[0].Field != "Node.IDFileHorizon" {
		t.Errorf("IDFileHorizon below the least: %v, want one error on Node.IDFileHorizon", fe)
	}
	c.IDFile = "" // no id file: the horizon is not used
	if err := c.Validate(); err != nil {
		t.Errorf("no id file, a short horizon: %v", err)
	}
}

// stuckReleaseStore answers every Update with a hang until its context
// ends, once stuck is set: a release that never gets an answer.
type stuckReleaseStore struct {
	lease.Store
	stuck atomic.Bool
}

func (s *stuckReleaseStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	if s.stuck.Load() {
		<-ctx.Done()
		return lease.Meta{}, ctx.Err()
	}
	return s.Store.Update(ctx, key, body, etag)
}

// TestRunShutdownTimeoutBoundsTheRelease: Run's Close after SIGTERM (ctx)
// gives up on a release that gets no answer once Config.ShutdownTimeout has
// passed, and says so: the lease is left to expire.
func TestRunShutdownTimeoutBoundsTheRelease(t *testing.T) {
	store := &stuckReleaseStore{Store: storetest.NewMemStore()}
	cfg := testConfig("a", 1)
	cfg.ShutdownTimeout = 50 * time.Millisecond
	n, err := New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, sigterm := context.WithCancel(context.Background())
	go func() {
		<-n.Serving()
		store.stuck.Store(true)
		sigterm()
	}()
	err = n.Run(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want the release cut short by the shutdown timeout", err)
	}
}
