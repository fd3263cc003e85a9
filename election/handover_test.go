package election_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/election"
	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/internal/testkit/fakeclock"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

// An election issues no Snowflake IDs: its records reserve no timestamps and a
// candidate waits for no floor (nodeid.Config.IssuesNoIDs). These tests failed
// when elections reserved like node IDs: a resigned leader's kept
// reservation made its successor wait about 10 s on S3 and fail with
// ErrClockBehind on a store that judges expiry itself, and a dead leader
// whose clock ran an hour ahead left the election leaderless.

var handoverStart = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fastWall is a fake clock whose wall reading runs ahead by ahead (a task
// whose clock is wrong); its monotonic reading and sleeps are the shared one's.
type fastWall struct {
	*fakeclock.Clock
	ahead time.Duration
}

func (f fastWall) Wall() time.Time { return f.Clock.Wall().Add(f.ahead) }

type campaignResult struct {
	l   *election.Leadership
	err error
}

func campaignAsync(e *election.Elections, name string) <-chan campaignResult {
	ch := make(chan campaignResult, 1)
	go func() {
		l, err := e.Campaign(context.Background(), name, "")
		ch <- campaignResult{l, err}
	}()
	return ch
}

// leaderAndCandidate elects task-a (through leaderStore) in "jobs" and
// starts task-b's campaign (through candidateStore), each configured by cfg.
func leaderAndCandidate(t *testing.T, leaderStore, candidateStore lease.Store, cfg func(task string) nodeid.Config) (*election.Leadership, <-chan campaignResult) {
	t.Helper()
	ea, err := election.New(leaderStore, cfg("task-a"))
	if err != nil {
		t.Fatal(err)
	}
	eb, err := election.New(candidateStore, cfg("task-b"))
	if err != nil {
		t.Fatal(err)
	}
	la, err := ea.Campaign(context.Background(), "jobs", "")
	if err != nil {
		t.Fatal(err)
	}
	return la, campaignAsync(eb, "jobs")
}

// stepUntilElected advances clk wake-up by wake-up, each time n goroutines
// sleep on it, until the campaign answers or limit of fake time has passed.
func stepUntilElected(t *testing.T, clk *fakeclock.Clock, ch <-chan campaignResult, n int, limit time.Duration) campaignResult {
	t.Helper()
	end := clk.Now().Add(limit)
	for {
		for deadline := time.Now().Add(5 * time.Second); clk.Sleepers() < n; time.Sleep(time.Millisecond) {
			select {
			case r := <-ch:
				return r
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines asleep on the clock, want %d, and the campaign has not answered", clk.Sleepers(), n)
			}
		}
		select {
		case r := <-ch:
			return r
		default:
		}
		next, ok := clk.NextWake()
		if !ok || next.After(end) {
			t.Fatalf("not elected within %v of fake time", limit)
		}
		clk.Advance(next.Sub(clk.Now()))
	}
}

// firstUpdate returns a function that reports the fake time of the first
// conditional update through fs from now on (the take that elects).
func firstUpdate(fs *storetest.FaultStore, clk *fakeclock.Clock) func() time.Time {
	var mu sync.Mutex
	var at time.Time
	fs.SetInjector(func(op storetest.Op, _ string) storetest.Fault {
		mu.Lock()
		defer mu.Unlock()
		if op == storetest.OpUpdate && at.IsZero() {
			at = clk.Now()
		}
		return storetest.Fault{}
	})
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}

// TestResignHandsOverAtOnce: after Resign, the waiting candidate is elected at
// its next look (its pause is at most 8 * AcquireBackoff, 4 s), on a store
// that reports its clock and on one that judges expiry itself, and neither
// term's record reserves a Snowflake timestamp.
func TestResignHandsOverAtOnce(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []storetest.MemOption
	}{
		{"store clock", nil},
		{"store judges expiry", []storetest.MemOption{storetest.WithJudgedExpiry()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := fakeclock.New(handoverStart)
			mem := storetest.NewMemStore(append(tt.opts, storetest.WithClock(clk.Now))...)
			fs := storetest.NewFaultStore(mem)
			cfg := func(task string) nodeid.Config {
				c := nodeid.DefaultConfig() // 15 s lease, MaxClockWait 5 s, AcquireBackoff 500 ms
				c.TaskID, c.Clock = task, clk
				return c
			}
			la, ch := leaderAndCandidate(t, fs, fs, cfg)
			if err := clk.WaitForSleepers(context.Background(), 2); err != nil { // a's renewal loop and b's pause
				t.Fatal(err)
			}
			if err := la.Resign(context.Background()); err != nil {
				t.Fatal(err)
			}
			resigned := clk.Now()
			took := firstUpdate(fs, clk)
			r := stepUntilElected(t, clk, ch, 1, 5*time.Minute)
			if r.err != nil {
				t.Fatal(r.err)
			}
			defer r.l.Resign(context.Background())
			if d := took().Sub(resigned); d > 8*cfg("").AcquireBackoff {
				t.Errorf("the waiting candidate was elected %v after Resign (term %d); want at most its longest pause, 4 s", d, r.l.Term())
			}
			body, _, err := mem.Get(context.Background(), election.Dir+"jobs/0.json")
			if err != nil {
				t.Fatal(err)
			}
			if rec, err := lease.DecodeRecord(body, 0); err != nil || rec.ReservedUntilMs != 0 {
				t.Errorf("the leader's record reserves timestamps up to %d (err %v); an election issues no IDs", rec.ReservedUntilMs, err)
			}
		})
	}
}

// TestCampaignAfterAFastClockLeaderDied: a leader whose wall clock ran an hour
// ahead dies; its record expires on the store's clock, and a candidate whose
// clock is right is elected then, not once its clock catches up.
func TestCampaignAfterAFastClockLeaderDied(t *testing.T) {
	clk := fakeclock.New(handoverStart)
	mem := storetest.NewMemStore(storetest.WithClock(clk.Now))
	fs := storetest.NewFaultStore(mem)
	cfg := func(task string, c nodeid.Clock) nodeid.Config {
		cf := nodeid.DefaultConfig()
		cf.TaskID, cf.Clock = task, c
		return cf
	}
	ea, err := election.New(fs, cfg("task-a", fastWall{clk, time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	eb, err := election.New(mem, cfg("task-b", clk))
	if err != nil {
		t.Fatal(err)
	}
	la, err := ea.Campaign(context.Background(), "jobs", "")
	if err != nil {
		t.Fatal(err)
	}
	fs.Kill(nil) // task-a's process dies: no more writes
	r := stepUntilElected(t, clk, campaignAsync(eb, "jobs"), 1, 10*time.Minute)
	if r.err != nil {
		t.Fatalf("Campaign = %v after leader %d died; want task-b elected once its lease expired", r.err, la.Term())
	}
	defer r.l.Resign(context.Background())
	if r.l.Term() != la.Term()+1 {
		t.Errorf("term %d, want %d", r.l.Term(), la.Term()+1)
	}
}

// TestResignHandsOverOnEtcd: the same on a real etcd server, where no response
// carries an age (a 6 s lease and MaxClockWait 1 s, so that a kept
// reservation would be beyond MaxClockWait).
func TestResignHandsOverOnEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	st, err := etcdstore.New(etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: "handover/"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := func(task string) nodeid.Config {
		c := nodeid.DefaultConfig()
		c.TaskID, c.LeaseDuration, c.MaxClockWait, c.AcquireBackoff = task, 6*time.Second, time.Second, 100*time.Millisecond
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ea, err := election.New(st, cfg("task-a"))
	if err != nil {
		t.Fatal(err)
	}
	eb, err := election.New(st, cfg("task-b"))
	if err != nil {
		t.Fatal(err)
	}
	la, err := ea.Campaign(ctx, "jobs", "")
	if err != nil {
		t.Fatal(err)
	}
	ch := campaignAsync(eb, "jobs")
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Campaign after the leader resigned, on etcd: %v; want task-b elected", r.err)
		}
		_ = r.l.Resign(ctx)
	case <-ctx.Done():
		t.Fatal("task-b not elected within 30 s of the resignation")
	}
}
