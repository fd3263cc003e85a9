package nodeid_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// spacedStore is a store that sustains one write per object every min, as
// gcsstore says of Google Cloud Storage.
type spacedStore struct {
	lease.Store
	min time.Duration
}

func (s spacedStore) MinWriteInterval() time.Duration { return s.min }

// TestRenewIntervalBelowStoreMinimum: New (and election.New) refuse a
// RenewInterval below the store's MinWriteInterval, naming the field and
// both figures, also through lease.Scope's wrapper; an interval at the
// minimum is accepted.
func TestRenewIntervalBelowStoreMinimum(t *testing.T) {
	st := spacedStore{Store: storetest.NewMemStore(), min: time.Second}
	if got := lease.MinWriteInterval(lease.Scope(st, "x/")); got != time.Second {
		t.Fatalf("MinWriteInterval through lease.Scope = %v, want 1s", got)
	}
	c := nodeid.DefaultLocalConfig()
	c.LeaseDuration, c.RenewInterval, c.RenewDeadline, c.SafetyMargin = 3*time.Second, 900*time.Millisecond, 2*time.Second, 500*time.Millisecond
	for what, newFn := range map[string]func(lease.Store, nodeid.Config) error{
		"nodeid.New":   func(s lease.Store, c nodeid.Config) error { _, err := nodeid.New(s, c); return err },
		"election.New": func(s lease.Store, c nodeid.Config) error { _, err := election.New(s, c); return err },
	} {
		err := newFn(st, c)
		t.Logf("%s: %v", what, err)
		fes := nodeid.FieldErrors(err)
		if len(fes) != 1 || fes[0].Field != "RenewInterval" || !strings.Contains(err.Error(), "900ms") || !strings.Contains(err.Error(), "1s") {
			t.Fatalf("%s with RenewInterval 900ms on a store that needs 1s: %v, want one RenewInterval FieldError naming both", what, err)
		}
		if err := newFn(lease.Scope(st, "x/"), c); err == nil {
			t.Fatalf("%s through lease.Scope accepted RenewInterval 900ms", what)
		}
		ok := c
		ok.RenewInterval = time.Second
		if err := newFn(st, ok); err != nil {
			t.Fatalf("%s with RenewInterval 1s: %v", what, err)
		}
		if err := newFn(storetest.NewMemStore(), c); err != nil {
			t.Fatalf("%s with RenewInterval 900ms on a store without a minimum: %v", what, err)
		}
	}
}
