package broker

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// TestDebugStoreHistory: without --debug-store-history the store is the
// broker's own; with it, the store the node gets records every call in the
// file, stays a lease.LiveWriter and a lease.Scoper (a held record on a store
// that judges expiry itself still binds its liveness), and the file reads
// back as the calls made.
func TestDebugStoreHistory(t *testing.T) {
	base := []string{"--store", "etcd", "--etcd-endpoints", "127.0.0.1:2379"}
	st := storetest.NewMemStore(storetest.WithJudgedExpiry())
	c, err := parseServeFlags("nodeid-broker", base, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got, closeHistory, err := c.history.wrap(st)
	if err != nil || got != lease.Store(st) || closeHistory() != nil {
		t.Fatalf("no flag: %T, %v; want the store itself", got, err)
	}

	path := filepath.Join(t.TempDir(), "h.jsonl")
	c, err = parseServeFlags("nodeid-broker", append(base, "--debug-store-history", path), env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rec, closeHistory, err := c.history.wrap(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rec.(lease.Scoper); !ok {
		t.Fatalf("%T is no lease.Scoper", rec)
	}
	ctx := context.Background()
	m, err := lease.CreateLive(ctx, rec, "0.json", []byte(`{"writeId":"a"}`), time.Minute)
	if err != nil || m.Liveness != lease.LivenessLive {
		t.Fatalf("CreateLive through the recorded store: %+v, %v; want a live key (is lease.LiveWriter kept?)", m, err)
	}
	if _, _, err := lease.Scope(rec, "elections/jobs/").Get(ctx, "leader.json"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("Get of an absent key: %v", err)
	}
	if err := closeHistory(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	calls, err := storetest.ReadCallLog(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].Key != "0.json" || calls[0].Op != storetest.OpCreate || calls[0].Outcome != storetest.OutcomeDone ||
		calls[0].ETag != m.ETag || calls[1].Key != "elections/jobs/leader.json" || calls[1].Outcome != storetest.OutcomeMissing {
		t.Fatalf("the file reads back as %+v", calls)
	}
	if calls[0].Start <= 0 || calls[0].End < calls[0].Start || calls[1].Start < calls[0].End {
		t.Fatalf("times %+v: want the host's monotonic clock, in order", calls)
	}

	c.history.path = filepath.Join(t.TempDir(), "missing", "h.jsonl")
	if _, _, err := c.history.wrap(st); err == nil {
		t.Fatal("a file that cannot be created: no error")
	}
}
