package election_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/election/electiontest"
	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

func TestElectionMemStore(t *testing.T) {
	electiontest.Run(t, func(*testing.T) lease.Store { return storetest.NewMemStore().WithPrefix("nodeid/") })
}

// TestElectionJudgedMemStore runs the suite on a store that judges expiry
// itself (as etcd does): elections must bind each held record's liveness
// through the scoped store, or a leader's record would read expired at once.
func TestElectionJudgedMemStore(t *testing.T) {
	electiontest.Run(t, func(*testing.T) lease.Store {
		return storetest.NewMemStore(storetest.WithJudgedExpiry()).WithPrefix("nodeid/")
	})
}

// TestElectionEtcd runs the suite on a real etcd server (the pinned binary of
// test/etcd/install.sh; skipped without it outside CI).
func TestElectionEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	electiontest.Run(t, func(t *testing.T) lease.Store {
		st, err := etcdstore.New(etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: fmt.Sprintf("%s-%d/", t.Name(), rand.Int64())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	})
}

func TestElectionGofakes3(t *testing.T) {
	electiontest.Run(t, func(t *testing.T) lease.Store {
		srv, err := s3fake.Start(s3fake.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		st, err := s3store.New(context.Background(), srv.StoreConfig("nodeid/"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

func TestBadNames(t *testing.T) {
	e, err := election.New(storetest.NewMemStore(), electiontest.FastConfig("task-a"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"", "a/b", "..", ".x", "a b"} {
		if _, err := e.Campaign(context.Background(), n, ""); !errors.Is(err, election.ErrBadName) {
			t.Errorf("Campaign(%q) = %v, want ErrBadName", n, err)
		}
	}
}

// TestValueTooLong: a value the record cannot hold is refused before any write.
func TestValueTooLong(t *testing.T) {
	store := storetest.NewMemStore()
	e, err := election.New(store, electiontest.FastConfig("task-a"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Campaign(context.Background(), "jobs", strings.Repeat("v", lease.MaxValueLen+1))
	if err == nil || !strings.Contains(err.Error(), "Value") {
		t.Fatalf("Campaign with a %d-byte value = %v, want a Value error", lease.MaxValueLen+1, err)
	}
	if n := store.Count(storetest.OpCreate) + store.Count(storetest.OpUpdate); n != 0 {
		t.Fatalf("%d writes for a refused campaign", n)
	}
}

// TestObserve: Observe reports the state at once, then each change: elected
// (with the value), resigned; the channel closes when ctx ends.
func TestObserve(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := storetest.NewMemStore()
	e, err := election.New(store, electiontest.FastConfig("task-a"))
	if err != nil {
		t.Fatal(err)
	}
	octx, stop := context.WithCancel(ctx)
	infos, err := e.Observe(octx, "jobs", 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	await := func(what string, ok func(election.Info) bool) {
		t.Helper()
		for {
			select {
			case i, open := <-infos:
				if !open {
					t.Fatalf("channel closed before %s", what)
				}
				if ok(i) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no %s observed", what)
			}
		}
	}
	await("first state", func(i election.Info) bool { return i.Term == 0 && !i.Live && i.State == "free" })
	l, err := e.Campaign(ctx, "jobs", "http://a:8080")
	if err != nil {
		t.Fatal(err)
	}
	await("election", func(i election.Info) bool {
		return i.Leader == "task-a" && i.Value == "http://a:8080" && i.Term == 1 && i.Live
	})
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	await("resignation", func(i election.Info) bool { return i.Leader == "" && i.Term == 1 && !i.Live })
	stop()
	for range infos { // drains, then ends once closed
	}
	if _, err := e.Observe(ctx, "a/b", time.Second); !errors.Is(err, election.ErrBadName) {
		t.Fatalf("Observe of a bad name: %v", err)
	}
}
