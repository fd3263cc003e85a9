package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestOutageCommandLine: bad lengths and faults foreign to the store are
// usage errors.
func TestOutageCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{"outage", "--down", "0s"},
		{"outage", "--down", "soon"},
		{"outage", "--faults", "leader-kill"},                  // an etcd fault on s3
		{"outage", "--store", "etcd", "--faults", "blackhole"}, // an S3 fault on etcd
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}

// TestIDMeterRate: the rate counts the IDs of the bins in [from, to) only.
func TestIDMeterRate(t *testing.T) {
	m := newIDMeter()
	at := func(d time.Duration) time.Time { return m.t0.Add(d) }
	m.bins[0] = 100                                 // [0, 10 ms)
	m.bins[int64(500*time.Millisecond/idBin)] = 300 // [500, 510 ms)
	m.bins[int64(time.Second/idBin)] = 1000         // [1 s, 1.01 s): after the window
	if got := m.rate(at(0), at(time.Second)); got != 400 {
		t.Errorf("rate over [0, 1 s) = %v, want 400", got)
	}
	if got := m.rate(at(10*time.Millisecond), at(510*time.Millisecond)); got != 600 {
		t.Errorf("rate over [10 ms, 510 ms) = %v, want 600", got)
	}
	if got := m.rate(at(time.Second), at(time.Second)); got != 0 {
		t.Errorf("rate over an empty window = %v, want 0", got)
	}
}

// TestIDMeterIdle: idle sums the windows with no ID.
func TestIDMeterIdle(t *testing.T) {
	m := newIDMeter()
	at := func(d time.Duration) time.Time { return m.t0.Add(d) }
	m.bins[int64(50*time.Millisecond/idBin)] = 1  // window [0, 100 ms)
	m.bins[int64(250*time.Millisecond/idBin)] = 1 // window [200, 300 ms)
	if got := m.idle(at(0), at(500*time.Millisecond), 100*time.Millisecond); got != 300*time.Millisecond {
		t.Errorf("idle over [0, 500 ms) = %v, want 300ms", got)
	}
	if got := m.idle(at(0), at(50*time.Millisecond), 100*time.Millisecond); got != 0 {
		t.Errorf("idle over a part of a window = %v, want 0", got)
	}
}
