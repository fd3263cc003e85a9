package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// open connects to the etcd server srv with a small page size, so that
// listings paginate with a few hundred keys.
func open(t *testing.T, srv *etcdtest.Server, prefix string) *etcdstore.Store {
	t.Helper()
	s, err := etcdstore.New(etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: prefix, PageSize: 100})
	if err != nil {
		t.Fatalf("etcdstore.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestConformance runs lease/storetest on a real etcd server (the pinned
// binary of test/etcd/install.sh).
func TestConformance(t *testing.T) {
	srv := etcdtest.Start(t)
	root := open(t, srv, "")
	run := fmt.Sprintf("run%d/", rand.Int64())
	storetest.Run(t, storetest.Target{
		Open: func(t *testing.T, prefix string) lease.Store {
			return root.WithPrefix(run + t.Name() + "/" + prefix)
		},
		ListObjects: 250,
		Judged:      true,
	})
}

func TestReservedKeys(t *testing.T) {
	srv := etcdtest.Start(t)
	s := open(t, srv, "r/")
	ctx := context.Background()
	for _, key := range []string{"", "a.json" + etcdstore.LiveSuffix} {
		if _, err := s.Create(ctx, key, []byte("x")); err == nil || errors.Is(err, lease.ErrPreconditionFailed) {
			t.Errorf("Create(%q) error = %v, want a refusal", key, err)
		}
		if _, _, err := s.Get(ctx, key); err == nil || errors.Is(err, lease.ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want a refusal", key, err)
		}
	}
	if err := (etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: "p" + etcdstore.LiveSuffix}).Validate(); err == nil {
		t.Errorf("a prefix ending in %s validated", etcdstore.LiveSuffix)
	}
}

// TestUnreachableIsUnknownOutcome: a write to an etcd that is down has no
// answer: an unknown outcome, resolved by reading back, never a lost race.
func TestUnreachableIsUnknownOutcome(t *testing.T) {
	srv := etcdtest.Start(t)
	s := open(t, srv, "u/")
	m, err := s.Create(context.Background(), "a.json", []byte("x"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	srv.Stop(9)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = s.Update(ctx, "a.json", []byte("y"), m.ETag)
	if !errors.Is(err, lease.ErrUnknownOutcome) {
		t.Fatalf("Update with etcd down: %v, want ErrUnknownOutcome", err)
	}
	if errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("Update with etcd down looks like a lost race: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  etcdstore.Config
		want string
	}{
		{"no endpoints", etcdstore.Config{}, "no endpoints"},
		{"empty endpoint", etcdstore.Config{Endpoints: []string{" "}}, "empty endpoint"},
		{"cert without key", etcdstore.Config{Endpoints: []string{"a:1"}, CertFile: "c"}, "go together"},
		{"ok", etcdstore.Config{Endpoints: []string{"a:1"}, Prefix: "nodeid/"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
