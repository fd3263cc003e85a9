package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
	"github.com/nodeid/nodeid/snowflake"
)

// storeStart is the fake store clock's start: not a whole second, as real time.
var storeStart = time.Date(2030, 1, 1, 12, 0, 0, 400e6, time.UTC)

// harness runs nodeidctl in-process against an in-memory store on a fake clock,
// through a FaultStore that injects nothing unless told.
type harness struct {
	t     *testing.T
	clk   *s3fake.Clock
	mem   *storetest.MemStore
	fault *storetest.FaultStore
	env   map[string]string
	// wall is the operator's wall clock: far from the store's on purpose, so a
	// test fails if anything judges a lease with it.
	wall time.Time
	// opened is the configuration of the last store opened.
	opened s3store.Config
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clk := s3fake.NewClock(storeStart)
	mem := storetest.NewMemStore(storetest.WithClock(clk.Now))
	return &harness{
		t: t, clk: clk, mem: mem, fault: storetest.NewFaultStore(mem),
		env:  map[string]string{"NODEID_BUCKET": "test-bucket", "NODEID_PREFIX": ""},
		wall: storeStart.Add(-3 * time.Hour),
	}
}

func (h *harness) Env() Env {
	return Env{
		LookupEnv: func(k string) (string, bool) { v, ok := h.env[k]; return v, ok },
		OpenStore: func(_ context.Context, cfg s3store.Config) (lease.Store, error) {
			h.opened = cfg
			return h.fault, nil
		},
		Now: func() time.Time { return h.wall },
	}
}

// run runs nodeidctl with args and returns its exit code and output.
func (h *harness) run(args ...string) (code int, stdout, stderr string) {
	h.t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb, h.Env())
	return code, out.String(), errb.String()
}

// mustRun runs nodeidctl and fails the test unless it exits with want.
func (h *harness) mustRun(want int, args ...string) (stdout, stderr string) {
	h.t.Helper()
	code, stdout, stderr := h.run(args...)
	if code != want {
		h.t.Fatalf("nodeidctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	return stdout, stderr
}

// writes returns how many writes the store has served.
func (h *harness) writes() int {
	return h.mem.Count(storetest.OpCreate) + h.mem.Count(storetest.OpUpdate)
}

// putManifest plants a manifest with the default layout that is not filled:
// tasks are still taking never-created IDs by creating their objects.
func (h *harness) putManifest(size int) { h.plantManifest(size, false) }

// putFilledManifest plants a filled manifest with the default layout: every
// lease object below size was created, and a missing one was deleted.
func (h *harness) putFilledManifest(size int) { h.plantManifest(size, true) }

func (h *harness) plantManifest(size int, filled bool) {
	h.t.Helper()
	m := lease.Manifest{ClusterSize: size, Layout: snowflake.DefaultLayout(), CreatedAt: storeStart, Filled: filled, WriteID: lease.NewWriteID()}
	body, err := m.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	h.mem.Put(lease.ManifestKey, body)
}

// put plants a record (a fresh writeId is filled in).
func (h *harness) put(r lease.Record) {
	h.t.Helper()
	r.WriteID = lease.NewWriteID()
	body, err := r.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	h.mem.Put(lease.RecordKey(r.NodeID), body)
}

// manifest reads and decodes the cluster manifest.
func (h *harness) manifest() lease.Manifest {
	h.t.Helper()
	m, err := lease.DecodeManifest([]byte(h.raw(lease.ManifestKey)))
	if err != nil {
		h.t.Fatalf("manifest: %v", err)
	}
	return m
}

// record reads and decodes the record of id.
func (h *harness) record(id int) lease.Record {
	h.t.Helper()
	body, _, err := h.mem.Get(context.Background(), lease.RecordKey(id))
	if err != nil {
		h.t.Fatalf("get %d: %v", id, err)
	}
	r, err := lease.DecodeRecord(body, id)
	if err != nil {
		h.t.Fatalf("decode %d: %v", id, err)
	}
	return r
}

// raw returns the body at key, or "" when absent.
func (h *harness) raw(key string) string {
	h.t.Helper()
	body, _, err := h.mem.Get(context.Background(), key)
	if errors.Is(err, lease.ErrNotFound) {
		return ""
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return string(body)
}

// status runs status --json and decodes it.
func (h *harness) status(args ...string) StatusJSON {
	h.t.Helper()
	stdout, _ := h.mustRun(ExitOK, append([]string{"status", "--json"}, args...)...)
	var s StatusJSON
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		h.t.Fatalf("status --json output does not decode: %v\n%s", err, stdout)
	}
	return s
}

// held returns a record held by holder with a 15 s lease and wall-clock fields
// that lie (expired long ago by the holder's clock), so that only the store's
// clock can judge it.
func held(id int, holder string, version int64) lease.Record {
	past := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	return lease.Record{NodeID: id, Holder: holder, Version: version, LeaseMillis: 15000,
		RenewedAt: past, ExpiresAt: past.Add(15 * time.Second), ReservedUntilMs: 1_900_000_000_000}
}

func contains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}
