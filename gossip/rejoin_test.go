package gossip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/freeport"
)

// sees reports whether n sees a member called name.
func sees(n *Node, name string) bool {
	for _, m := range n.Members() {
		if m.Name == name {
			return true
		}
	}
	return false
}

func TestRejoinReachesAJoinTargetThatComesUpLater(t *testing.T) {
	port := freeport.TCPAndUDP(t)
	ca := testConfig("a")
	ca.Join = []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	a := start(t, ca)
	if len(a.Members()) != 1 {
		t.Fatalf("a sees %v before its join target is up", a.Members())
	}
	cb := testConfig("b")
	cb.BindPort = port
	b := start(t, cb)
	eventually(t, "a joins b once b is up", func() bool { return sees(a, "b") && sees(b, "a") })
}

func TestRejoinAfterLosingEveryPeer(t *testing.T) {
	port := freeport.TCPAndUDP(t)
	cb := testConfig("b")
	cb.BindPort = port
	b, err := Start(cb)
	if err != nil {
		t.Fatal(err)
	}
	ca := testConfig("a")
	ca.Join = []string{b.Addr()}
	a := start(t, ca)
	eventually(t, "a joins b at start", func() bool { return sees(a, "b") })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a finds itself alone", func() bool { return len(a.Members()) == 1 })
	cb2 := testConfig("b2")
	cb2.BindPort = port
	b2 := start(t, cb2)
	eventually(t, "a, alone, joins the member now at its join address", func() bool { return sees(a, "b2") && sees(b2, "a") })
}

func TestSeedsJoinAnUnseenMemberWhenNotAlone(t *testing.T) {
	c := start(t, testConfig("c"))
	var a atomic.Pointer[Node]
	ca := testConfig("a")
	ca.Seeds = func(context.Context) []string {
		if n := a.Load(); n != nil && sees(n, "b") { // only once a is not alone
			return []string{c.Addr()}
		}
		return nil
	}
	a.Store(start(t, ca))
	b := start(t, testConfig("b"))
	if _, err := b.Join([]string{a.Load().Addr()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a joins the seed c though it sees b", func() bool { return sees(a.Load(), "c") && sees(c, "b") })
}

func TestCloseEndsTheRejoinLoopInsideSeeds(t *testing.T) {
	var calls atomic.Int64
	inside := make(chan struct{})
	ca := testConfig("a")
	ca.Join = []string{fmt.Sprintf("127.0.0.1:%d", freeport.TCPAndUDP(t))}
	ca.Seeds = func(ctx context.Context) []string {
		if calls.Add(1) == 2 { // the loop's first call; Start made the first
			close(inside)
			<-ctx.Done()
		}
		return nil
	}
	a, err := Start(ca)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-inside:
	case <-time.After(10 * time.Second):
		t.Fatal("the rejoin loop never called Seeds again")
	}
	done := make(chan error, 1)
	go func() { done <- a.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the rejoin loop blocked in Seeds")
	}
}

func TestJoinGossipSkipsTheAddressOfAMemberGone(t *testing.T) {
	nodes := cluster(t, names(2)...)
	a, b := nodes[0], nodes[1]
	addr := b.Addr()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a sees b gone", func() bool { return len(a.Members()) == 1 })
	if err := a.JoinGossip(context.Background(), addr); !errors.Is(err, ErrGone) {
		t.Fatalf("JoinGossip(%s) of a member gone = %v, want ErrGone", addr, err)
	}
	c := start(t, testConfig("c"))
	if err := a.JoinGossip(context.Background(), c.Addr()); err != nil || !sees(a, "c") {
		t.Fatalf("JoinGossip(%s) = %v, sees c %v", c.Addr(), err, sees(a, "c"))
	}
}
