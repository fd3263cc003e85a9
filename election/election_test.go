package election_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/election/electiontest"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

func TestElectionMemStore(t *testing.T) {
	electiontest.Run(t, func(*testing.T) lease.Store { return storetest.NewMemStore().WithPrefix("nodeid/") })
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
		if _, err := e.Campaign(context.Background(), n); !errors.Is(err, election.ErrBadName) {
			t.Errorf("Campaign(%q) = %v, want ErrBadName", n, err)
		}
	}
}
