package gossip

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// errPartitioned is what a partitioned transport's dials return.
var errPartitioned = errors.New("partitioned")

// partition splits members into groups by address: while on, packets
// between groups are dropped and streams between them refused.
type partition struct {
	mu    sync.Mutex
	on    bool
	group map[string]int // "host:port" to group
}

// cut reports whether traffic from group g to addr is dropped.
func (p *partition) cut(g int, addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.group[addr]
	return p.on && ok && h != g
}

// set turns the partition on or off.
func (p *partition) set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = on
}

// cutTransport is memberlist's NetTransport for a member of group g, through
// partition p.
type cutTransport struct {
	*memberlist.NetTransport
	p *partition
	g int
}

func (t *cutTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.p.cut(t.g, addr) {
		return time.Now(), nil
	}
	return t.NetTransport.WriteTo(b, addr)
}

func (t *cutTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.WriteTo(b, a.Addr)
}

func (t *cutTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.p.cut(t.g, addr) {
		return nil, fmt.Errorf("dial %s: %w", addr, errPartitioned)
	}
	return t.NetTransport.DialTimeout(addr, timeout)
}

func (t *cutTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(a.Addr, timeout)
}

// partitioned returns cfg with a transport of group g through p, bound to a
// free loopback port that p records.
func partitioned(t *testing.T, cfg Config, p *partition, g int) Config {
	t.Helper()
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{"127.0.0.1"},
		Logger:    log.New(io.Discard, "", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.BindAddr, cfg.BindPort = "127.0.0.1", nt.GetAutoBindPort()
	cfg.Transport = &cutTransport{NetTransport: nt, p: p, g: g}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.group == nil {
		p.group = map[string]int{}
	}
	p.group[net.JoinHostPort(cfg.BindAddr, fmt.Sprint(cfg.BindPort))] = g
	return cfg
}

// members reports whether n sees exactly the members called want.
func members(n *Node, want ...string) bool {
	got := n.Members()
	if len(got) != len(want) {
		return false
	}
	for _, name := range want {
		if !sees(n, name) {
			return false
		}
	}
	return true
}

// TestPartitionHeals splits four members two and two until each half finds
// the other dead, heals the network, and requires one pool again within
// ReconnectInterval plus a few probe intervals: memberlist alone never
// contacts a member it found dead again (past the gossip of the broadcasts
// then pending), and neither half is alone, so the rejoin loop sleeps.
func TestPartitionHeals(t *testing.T) {
	var p partition
	cfgs := names(4)
	for i := range cfgs {
		cfgs[i] = partitioned(t, cfgs[i], &p, i/2) // a, b | c, d
		cfgs[i].ReconnectInterval = 500 * time.Millisecond
	}
	nodes := cluster(t, cfgs...)
	p.set(true)
	for i, n := range nodes {
		half := []string{"a", "b"}
		if i >= 2 {
			half = []string{"c", "d"}
		}
		eventually(t, n.Name()+" finds the other half dead", func() bool { return members(n, half...) })
	}
	p.set(false)
	bound := cfgs[0].ReconnectInterval + 5*cfgs[0].ProbeInterval
	deadline := time.Now().Add(bound)
	for _, n := range nodes {
		for !members(n, "a", "b", "c", "d") {
			if time.Now().After(deadline) {
				t.Fatalf("%s sees %v %v after the partition healed, want one pool of 4", n.Name(), n.Members(), bound)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestViewKeepsLostAddressesForReconnect checks the addresses reconnect
// tries: those of members that left or died, while within the timeout, until
// a member joins there; never those of members of another cluster.
func TestViewKeepsLostAddressesForReconnect(t *testing.T) {
	var v view
	t0 := time.Unix(1000, 0)
	for _, m := range []*memberlist.Node{
		{Name: "a", Addr: net.IPv4(10, 0, 0, 1), Port: 7946},
		{Name: "b", Addr: net.IPv4(10, 0, 0, 2), Port: 7946},
		{Name: "c", Addr: net.IPv4(10, 0, 0, 3), Port: 7946},
		{Name: "f", Addr: net.IPv4(10, 0, 0, 9), Port: 7946},
	} {
		v.set(m)
	}
	v.remove("a", t0)
	v.remove("b", t0.Add(time.Minute))
	v.remove("f", time.Time{}) // became foreign
	v.remove("nobody", t0)
	if got := v.lostSince(t0); !slices.Equal(sorted(got), []string{"10.0.0.1:7946", "10.0.0.2:7946"}) {
		t.Fatalf("lostSince(t0) = %v, want a's and b's addresses", got)
	}
	if got := v.lostSince(t0.Add(time.Second)); !slices.Equal(got, []string{"10.0.0.2:7946"}) {
		t.Fatalf("lostSince(t0+1s) = %v, want b's address only", got)
	}
	if got := v.lostSince(t0); !slices.Equal(got, []string{"10.0.0.2:7946"}) {
		t.Fatalf("lostSince(t0) after a was forgotten = %v, want b's address only", got)
	}
	for _, addr := range []string{"10.0.0.1:7946", "10.0.0.2:7946", "10.0.0.9:7946"} {
		if !v.goneAt(addr) { // forgotten by reconnect, or foreign: still gone
			t.Fatalf("goneAt(%s) = false, want true", addr)
		}
	}
	v.set(&memberlist.Node{Name: "b2", Addr: net.IPv4(10, 0, 0, 2), Port: 7946})
	if got := v.lostSince(t0); len(got) != 0 {
		t.Fatalf("lostSince after a member joined at b's address = %v, want none", got)
	}
	if v.goneAt("10.0.0.2:7946") || v.goneAt("10.0.0.3:7946") {
		t.Fatal("goneAt is true for an address a member joined at, or one never gone")
	}
}

// sorted returns s sorted.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
