package election_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// deadTasks is a nodeid.TasksHints whose tasks live until marked dead; a
// death closes Freed's channel.
type deadTasks struct {
	mu    sync.Mutex
	dead  map[string]bool
	freed chan struct{}
}

func (d *deadTasks) Freed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.freed
}

func (d *deadTasks) TaskLive(task string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.dead[task]
}

func (d *deadTasks) kill(task string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead[task] = true
	close(d.freed)
	d.freed = make(chan struct{})
}

// TestReadModeDeadLeaderChallenged: in read mode a leader's record states the
// backstop (a minute here), but a candidate whose Tasks shows the leader dead
// (and wakes it: TasksHints) challenges it at once, and is elected a window
// (5 s) and the expiry rule's margins after the confirm: within W + 4 s of
// the death, not after the backstop. The dead leader is fenced by then.
func TestReadModeDeadLeaderChallenged(t *testing.T) {
	clk := fakeclock.New(handoverStart)
	mem := storetest.NewMemStore(storetest.WithClock(clk.Now))
	fs := storetest.NewFaultStore(mem)
	tasks := &deadTasks{dead: map[string]bool{}, freed: make(chan struct{})}
	cfg := func(task string) nodeid.Config {
		c := nodeid.DefaultConfig()
		c.TaskID, c.Clock, c.Tasks = task, clk, tasks
		c.KeepAlive, c.Window, c.Backstop = nodeid.KeepAliveRead, 5*time.Second, time.Minute
		return c
	}
	la, ch := leaderAndCandidate(t, fs, mem, cfg)
	if r := stepFor(t, clk, ch, 30*time.Second); r != nil {
		t.Fatalf("elected while the leader lives and reads: %v", r.err)
	}
	died := clk.Now()
	fs.Kill(nil) // task-a's process dies: no more requests
	tasks.kill("task-a")
	r := stepFor(t, clk, ch, time.Minute)
	if r == nil || r.err != nil {
		t.Fatalf("Campaign = %+v a minute after the leader died", r)
	}
	defer r.l.Resign(context.Background())
	// Woken by the death (TasksHints.Freed), the candidate challenges at
	// once; the confirm may be taken once Date - Last-Modified > W + 1 s +
	// ClockMargin, whole seconds: at most W + 4 s after the death.
	if took := clk.Now().Sub(died); took > 5*time.Second+4*time.Second {
		t.Fatalf("elected %v after the leader died, want within W + 4 s", took)
	}
	if r.l.Term() != la.Term()+1 || la.Valid() {
		t.Fatalf("term %d after %d; the dead leader valid %v", r.l.Term(), la.Term(), la.Valid())
	}
}

// stepFor advances clk for d of fake time, wake-up by wake-up, and returns the
// campaign's result if it answered meanwhile.
func stepFor(t *testing.T, clk *fakeclock.Clock, ch <-chan campaignResult, d time.Duration) *campaignResult {
	t.Helper()
	end := clk.Now().Add(d)
	for clk.Now().Before(end) {
		for deadline := time.Now().Add(5 * time.Second); clk.Sleepers() < 2; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines asleep on the clock, want 2 (the leader's loop and the campaign)", clk.Sleepers())
			}
		}
		select {
		case r := <-ch:
			return &r
		default:
		}
		next, ok := clk.NextWake()
		if !ok || next.After(end) {
			next = end
		}
		clk.Advance(next.Sub(clk.Now()))
	}
	return nil
}
