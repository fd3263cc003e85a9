package election_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// A leader-only loop: campaign (publishing this task's address, which
// followers read with Leader), work while Valid, stop when its Context
// ends, resign on shutdown so that another candidate is elected at once.
func Example() {
	ctx := context.Background()
	store := storetest.NewMemStore() // s3store.New(ctx, cfg) in production: the node IDs' store

	cfg := nodeid.DefaultLocalConfig()
	cfg.TaskID = "task-a"
	e, err := election.New(store, cfg)
	if err != nil {
		panic(err)
	}
	l, err := e.Campaign(ctx, "jobs", "http://10.0.0.7:8080")
	if err != nil {
		panic(err)
	}
	fmt.Println("leader of", l.Name(), "term", l.Term())

	work := l.Context() // ends with the leadership: lost, or Resign begins
	for step := 0; step < 3; step++ {
		select {
		case <-work.Done(): // lost: stop acting as leader at once
			fmt.Println("lost:", context.Cause(work))
			return
		default:
		}
		if !l.Valid() {
			continue // fenced: wait for Done
		}
		// ... one unit of leader-only work, tagged with l.Term() ...
	}
	info, _ := e.Leader(ctx, "jobs")
	fmt.Println("store says:", info.Leader, "at", info.Value, "term", info.Term, "live", info.Live)

	if err := l.Resign(ctx); err != nil {
		panic(err)
	}
	fmt.Println("resigned:", errors.Is(l.Err(), nodeid.ErrClosed))
	// Output:
	// leader of jobs term 1
	// store says: task-a at http://10.0.0.7:8080 term 1 live true
	// resigned: true
}

// resource is a protected resource that checks fencing tokens: it refuses a
// write carrying a lower token than one it has accepted.
type resource struct{ highest int64 }

func (r *resource) write(token int64, v string) error {
	if token < r.highest {
		return fmt.Errorf("token %d refused: %d seen", token, r.highest)
	}
	r.highest = token
	return nil
}

// A lock whose token is passed to the protected resource: a deposed holder's
// late write (a lower token) is refused.
func ExampleMutex() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store := storetest.NewMemStore()
	cfg := nodeid.DefaultLocalConfig()
	cfg.TaskID = "task-a"
	e, err := election.New(store, cfg)
	if err != nil {
		panic(err)
	}
	var res resource
	m := e.NewMutex("db-migrate")
	if _, err := m.Lock(ctx); err != nil {
		panic(err)
	}
	old := m.Token()
	fmt.Println("write 1:", res.write(old, "a"))
	_ = m.Unlock(ctx)

	if _, err := m.Lock(ctx); err != nil { // a later holder
		panic(err)
	}
	fmt.Println("write 2:", res.write(m.Token(), "b"))
	fmt.Println("late write:", res.write(old, "stale"))
	_ = m.Unlock(ctx)
	// Output:
	// write 1: <nil>
	// write 2: <nil>
	// late write: token 1 refused: 2 seen
}
