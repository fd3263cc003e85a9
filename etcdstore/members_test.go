package etcdstore

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
)

// closedPort returns host:port where nothing listens.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestMembersMoveOnNoAnswer: a request with no definite answer moves the
// Store to the next member; a definite one, or the outcome of a request to a
// member the Store already left, does not.
func TestMembersMoveOnNoAnswer(t *testing.T) {
	eps := []string{closedPort(t), closedPort(t), closedPort(t)}
	m, err := newMembers(clientv3.Config{DialTimeout: time.Second, Logger: zap.NewNop()}, eps)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	m.current.Store(0)
	for _, c := range []struct {
		name string
		from int
		err  error
		want int
	}{
		{"answered", 0, nil, 0},
		{"definite", 0, rpctypes.ErrGRPCPermissionDenied, 0},
		{"timeout", 0, context.DeadlineExceeded, 1},
		{"stale", 0, context.DeadlineExceeded, 1},
		{"no leader", 1, rpctypes.ErrGRPCNoLeader, 2},
		{"wraps", 2, rpctypes.ErrGRPCTimeout, 0},
	} {
		m.done(c.from, c.err)
		if got := int(m.current.Load()); got != c.want {
			t.Fatalf("%s: member %d after done(%d, %v), want %d", c.name, got, c.from, c.err, c.want)
		}
	}
}

// TestMembersOneClient: a Store on one client has nowhere else to go.
func TestMembersOneClient(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{closedPort(t)}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	m := oneClient(cli)
	m.done(0, context.DeadlineExceeded)
	if i, c := m.pick(); i != 0 || c != cli {
		t.Fatalf("pick = %d, %p; want 0, the client", i, c)
	}
	if err := m.close(); err != nil {
		t.Fatal(err)
	}
}

// openCluster opens a Store on every member of c.
func openCluster(t *testing.T, c *etcdtest.Cluster) *Store {
	t.Helper()
	s, err := New(Config{Endpoints: c.Endpoints(), Prefix: "m/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func get(s *Store, key string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, _, err := s.Get(ctx, key)
	return err
}

// TestRetryAvoidsHungMember: on three members, the member a Store uses is
// cut off from its clients (its requests hang) or killed; the request that
// hung or failed there (or, once the killed member's connection is seen
// refused, the choice of the member) moves the Store on, and the next
// requests are answered by other members (with one client over every endpoint,
// gRPC's round robin sent every write's transaction to the same member).
func TestRetryAvoidsHungMember(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	s := openCluster(t, c)
	ctx := context.Background()
	meta, err := s.CreateLive(ctx, "k", []byte("v0"), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, fault := range []string{"partition", "kill"} {
		// A follower: a killed leader would leave no member to answer
		// until the next election (the fault scenarios cover that).
		lead, err := c.WaitLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hung := (lead + 1) % 3
		s.members.current.Store(int32(hung))
		switch fault {
		case "partition":
			c.Partition(hung)
		case "kill":
			c.Kill(syscall.SIGKILL, hung)
		}
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		m, err := s.UpdateLive(wctx, "k", []byte("first"), meta.ETag, 3*time.Second)
		cancel()
		switch {
		case err == nil && fault == "partition":
			t.Fatalf("%s: a write landed through member %d", fault, hung)
		case err == nil:
			meta = m // the killed member's refused connection was seen: sent elsewhere
		case fault == "kill":
			// Sent before the refusal was seen: moved on by the failure.
			// Its outcome is unknown; read back for the ETag.
			if _, meta, err = s.Get(ctx, "k"); err != nil {
				t.Fatalf("%s: read back: %v", fault, err)
			}
		}
		if next, _ := s.members.pick(); next == hung {
			t.Fatalf("%s: the Store stays on member %d after %v", fault, hung, err)
		}
		for round := range 5 {
			// A write and a read back, as a renewal and its
			// resolution: three requests, never on the hung member.
			if meta, err = s.UpdateLive(ctx, "k", []byte("v"), meta.ETag, 3*time.Second); err != nil {
				t.Fatalf("%s: write %d: %v", fault, round, err)
			}
			if err := get(s, "k", 5*time.Second); err != nil {
				t.Fatalf("%s: read %d: %v", fault, round, err)
			}
		}
		switch fault {
		case "partition":
			c.Heal(hung)
		case "kill":
			if err := c.Start(hung); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestNoLeaderAnswersAtOnce: with the quorum lost, the surviving member
// answers "no leader" (every request carries WithRequireLeader) instead of
// holding the request until its timeout; a write answered so is not applied,
// and the Store writes again once the quorum is back.
func TestNoLeaderAnswersAtOnce(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	s := openCluster(t, c)
	ctx := context.Background()
	meta, err := s.Create(ctx, "k", []byte("v0"))
	if err != nil {
		t.Fatal(err)
	}
	survivor, _ := s.members.pick()
	gone := []int{(survivor + 1) % 3, (survivor + 2) % 3}
	c.Kill(syscall.SIGKILL, gone...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := get(s, "k", 5*time.Second)
		if errors.Is(err, rpctypes.ErrNoLeader) {
			break
		}
		if err == nil {
			t.Fatal("a read answered with two members of three down")
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 'no leader' answer within 30 s of the quorum's loss: %v", err)
		}
	}
	_, err = s.Update(ctx, "k", []byte("v1"), meta.ETag)
	if !errors.Is(err, rpctypes.ErrNoLeader) {
		t.Fatalf("write without a quorum: %v, want no leader", err)
	}
	if errors.Is(err, lease.ErrUnknownOutcome) == false {
		// No leader is answered before the request is looked at, but
		// the Store keeps to the rule it can check: not a definite
		// refusal, so the caller reads back.
		t.Fatalf("write without a quorum: %v, want an unknown outcome (read back)", err)
	}
	if err := c.Start(gone...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "k", []byte("v2"), meta.ETag); err != nil {
		t.Fatalf("write after the quorum is back: %v", err)
	}
}
