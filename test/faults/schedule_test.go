package faults

import (
	"slices"
	"testing"
	"time"
)

func TestScheduleReproducible(t *testing.T) {
	cfg := ScheduleConfig{Seed: 42, Duration: 5 * time.Minute, Lease: 3 * time.Second, RenewDeadline: 2 * time.Second}
	a, b := FormatSchedule(NewSchedule(cfg)), FormatSchedule(NewSchedule(cfg))
	if a != b || a == "" {
		t.Fatalf("two schedules from one seed differ:\n%s\n%s", a, b)
	}
	cfg.Seed = 43
	if FormatSchedule(NewSchedule(cfg)) == a {
		t.Fatal("seeds 42 and 43 give the same schedule")
	}
	seen := map[Kind]int{}
	var last time.Duration
	for _, e := range NewSchedule(cfg) {
		seen[e.Kind]++
		if e.At < last || e.At >= cfg.Duration {
			t.Errorf("event %v out of order or past the duration", e)
		}
		last = e.At
		if (e.Kind == KindPause || e.Kind == KindPartition || e.Kind == KindStall) && e.For <= cfg.Lease {
			t.Errorf("%v does not outlast the lease", e)
		}
	}
	for _, k := range DefaultKinds {
		if seen[k] == 0 {
			t.Errorf("no %s in 5 minutes: %v", k, seen)
		}
	}
	if seen[KindMinIO] > 7 {
		t.Errorf("%d MinIO restarts in 5 minutes", seen[KindMinIO])
	}
}

func TestScheduleKinds(t *testing.T) {
	for _, e := range NewSchedule(ScheduleConfig{Seed: 1, Duration: time.Minute, Lease: 2 * time.Second, Kinds: []Kind{KindTerm}}) {
		if e.Kind != KindTerm {
			t.Fatalf("event %v, want only %s", e, KindTerm)
		}
	}
}

func TestBrokerParams(t *testing.T) {
	offsets := []time.Duration{-time.Second, 0, time.Second}
	a, b := BrokerParams(7, 1, 2, offsets, true), BrokerParams(7, 1, 2, offsets, true)
	if a.ClockOffset != b.ClockOffset || a.Fault.String() != b.Fault.String() || a.FaultFor != b.FaultFor {
		t.Fatal("not reproducible")
	}
	if p := BrokerParams(7, 1, 0, offsets, true); p.Fault.Action != Forward {
		t.Errorf("a first-generation broker starts with fault %v", p.Fault)
	}
}

func TestParseKinds(t *testing.T) {
	if k, err := ParseKinds("stall, sigstop"); err != nil || len(k) != 2 || k[0] != KindStall || k[1] != KindPause {
		t.Errorf("ParseKinds: %v, %v", k, err)
	}
	if k, _ := ParseKinds("all"); len(k) != len(DefaultKinds)+2 || !slices.Contains(k, KindStallLeader) || !slices.Contains(k, KindTermFenced) {
		t.Errorf("all: %v, want the default kinds, %s and %s", k, KindStallLeader, KindTermFenced)
	}
	if _, err := ParseKinds("nap"); err == nil {
		t.Error("an unknown kind parsed")
	}
}
