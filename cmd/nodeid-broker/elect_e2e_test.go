package main

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/node"
)

// leader reads GET /leader from p: the code and the body.
func (p *proc) leader() (int, node.LeaderResponse, error) {
	var r node.LeaderResponse
	code, err := p.getJSON("/leader", &r)
	return code, r, err
}

// waitLeader waits until exactly one of ps answers /leader with self: true
// (and with a term above minTerm), checking on every look that no two do for
// one term; it returns the leader and its term.
func waitLeader(t *testing.T, minTerm int64, ps ...*proc) (*proc, int64) {
	t.Helper()
	var leader *proc
	var term int64
	waitFor(t, 20*time.Second, "one broker to lead", func() (bool, string) {
		leader, term = nil, 0
		detail := ""
		for _, p := range ps {
			code, r, err := p.leader()
			detail += fmt.Sprintf("%s: %d %+v %v; ", p.name, code, r, err)
			if code != 200 || !r.Self {
				continue
			}
			if leader != nil && r.Term == term {
				t.Fatalf("brokers %s and %s both lead term %d", leader.name, p.name, term)
			}
			if r.Term > term {
				leader, term = p, r.Term
			}
		}
		return leader != nil && term > minTerm, detail
	})
	return leader, term
}

// TestServeElect: two brokers campaign for "jobs"; exactly one leads, the
// other names it and gives its --elect-value; kill -9 of the leader elects the other with a higher term
// after the lease runs out; SIGTERM of a leader hands over to a third.
func TestServeElect(t *testing.T) {
	t.Parallel()
	env := brokerEnv(t)
	srv := startFakeS3(t)
	args := slices.Concat([]string{"--cluster-size", "4", "--elect", "jobs", "--bucket", srv.Bucket(),
		"--s3-endpoint", srv.URL(), "--s3-path-style"}, shortLease)
	withValue := func(name string) []string { return append(slices.Clone(args), "--elect-value", "http://"+name+":8080") }
	a := startBroker(t, "a", env, withValue("a")...)
	b := startBroker(t, "b", env, withValue("b")...)
	first, term1 := waitLeader(t, 0, a, b)
	other := a
	if first == a {
		other = b
	}
	waitFor(t, 10*time.Second, "the follower to name the leader", func() (bool, string) {
		code, r, err := other.leader()
		s, _ := first.status()
		return code == 200 && !r.Self && r.Term == term1 && r.Leader == s.Task && r.Value == "http://"+first.name+":8080",
			fmt.Sprintf("%d %+v %v", code, r, err)
	})

	first.Kill()
	second, term2 := waitLeader(t, term1, other)
	if second != other || term2 <= term1 {
		t.Fatalf("after kill -9: leader %s term %d, want %s above %d", second.name, term2, other.name, term1)
	}

	c := startBroker(t, "c", env, args...)
	c.waitHeld(15 * time.Second)
	second.signal(syscall.SIGTERM)
	if code := second.waitExit(15 * time.Second); code != 0 {
		t.Fatalf("leader exit after SIGTERM = %d, want 0", code)
	}
	third, term3 := waitLeader(t, term2, c)
	if third != c || term3 != term2+1 {
		t.Fatalf("after SIGTERM: leader %s term %d, want c with %d", third.name, term3, term2+1)
	}
}
