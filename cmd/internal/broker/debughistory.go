package broker

import (
	"fmt"
	"os"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// debugHistory is what --debug-store-history says: a file to record this
// broker's store calls in, for the fault suite's linearizability check
// (docs/evidence/faults.md, "The store's history: linearizable"). The zero value
// records nothing.
type debugHistory struct {
	path string
}

// bind defines the flag on f.
func (d *debugHistory) bind(f *envflag.Set) {
	f.StringVar(&d.path, "debug-store-history", "", "testing only: record every Get, Create and Update this broker makes on its lease store in this file (replaced), as JSON lines timed on the host's CLOCK_MONOTONIC, for the fault suite's linearizability check (empty: none)")
}

// wrap returns store with its calls recorded into the file (store itself
// when there is none), and a function that closes the file and returns the
// first error recording met.
func (d *debugHistory) wrap(store lease.Store) (lease.Store, func() error, error) {
	if d.path == "" {
		return store, func() error { return nil }, nil
	}
	now, err := storetest.MonotonicClock()
	if err != nil {
		return nil, nil, fmt.Errorf("--debug-store-history: %w", err)
	}
	f, err := os.Create(d.path)
	if err != nil {
		return nil, nil, fmt.Errorf("--debug-store-history: %w", err)
	}
	log := storetest.NewCallLog(f, now)
	closeLog := func() error {
		cerr := f.Close()
		if err := log.Err(); err != nil {
			return fmt.Errorf("--debug-store-history %s: %w", d.path, err)
		}
		return cerr
	}
	return storetest.Record(store, 1, log), closeLog, nil
}
