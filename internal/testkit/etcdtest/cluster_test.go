package etcdtest_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
)

func client(t *testing.T, eps ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func put(cli *clientv3.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := cli.Put(ctx, "k", "v")
	return err
}

// TestCluster drives each fault of the harness on three members: a leader
// killed and a new one elected, the old one back; a member partitioned from
// its clients and healed; the quorum lost and regained.
func TestCluster(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := client(t, c.Endpoints()...)
	if err := put(all, 5*time.Second); err != nil {
		t.Fatalf("put on a healthy cluster: %v", err)
	}
	lead, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}

	c.Kill(syscall.SIGKILL, lead)
	next, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatalf("no new leader after the leader's kill: %v\n%s", err, c.Logs())
	}
	if next == lead {
		t.Fatalf("member %d, killed, is still leader", lead)
	}
	if err := put(client(t, c.Endpoints()[next]), 5*time.Second); err != nil {
		t.Fatalf("put on the new leader: %v", err)
	}
	if err := c.Start(lead); err != nil {
		t.Fatal(err)
	}

	p := (next + 1) % 3
	alone := client(t, c.Endpoints()[p])
	if err := put(alone, 5*time.Second); err != nil {
		t.Fatalf("put on member %d before its partition: %v", p, err)
	}
	c.Partition(p)
	if err := put(alone, 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("put on partitioned member %d: %v, want a timeout", p, err)
	}
	c.Heal(p)
	if err := put(alone, 5*time.Second); err != nil {
		t.Fatalf("put on member %d after its partition healed: %v", p, err)
	}

	lead, err = c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone := []int{lead, (lead + 1) % 3}
	c.Kill(syscall.SIGKILL, gone...)
	if err := put(all, 500*time.Millisecond); err == nil {
		t.Fatal("a put committed with two members of three down")
	}
	if err := c.Start(gone...); err != nil {
		t.Fatal(err)
	}
	if err := put(all, 5*time.Second); err != nil {
		t.Fatalf("put after the quorum was regained: %v", err)
	}
}
