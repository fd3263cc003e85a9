package faults

import (
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/tcpgate"
)

// TCPProxy stands between one broker and etcd (gRPC over HTTP/2, which the
// S3 proxy cannot read): a tcpgate.Gate that forwards bytes, and whose faults
// act on the connections: BlackHole stops every byte both ways, the
// connections left open (a partition); Refuse closes them and refuses new
// ones; Reset resets them and every new one. Other actions are refused:
// etcd's answers cannot be rewritten here.
type TCPProxy struct {
	gate *tcpgate.Gate

	mu     sync.Mutex
	counts map[string]int // faults injected, by name
}

// NewTCPProxy listens on a free port of 127.0.0.1 and forwards to target
// (host:port).
func NewTCPProxy(target string) (*TCPProxy, error) {
	g, err := tcpgate.New(target)
	if err != nil {
		return nil, err
	}
	return &TCPProxy{gate: g, counts: map[string]int{}}, nil
}

// URL returns the proxy's address, host:port (an etcd endpoint).
func (p *TCPProxy) URL() string { return p.gate.Addr() }

// Inject turns a fault on: BlackHole, Refuse or Reset.
func (p *TCPProxy) Inject(f Fault) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch f.Action {
	case BlackHole:
		p.counts["blackhole"]++
		p.gate.Block()
	case Refuse:
		p.counts[f.Action.String()]++
		p.gate.Refuse()
	case Reset:
		p.counts[f.Action.String()]++
		p.gate.Reset()
	default:
		return fmt.Errorf("tcp proxy: %v is not a fault on etcd's connections", f.Action)
	}
	return nil
}

// Heal ends the fault: held bytes flow again, and a refusing proxy listens
// again on its address.
func (p *TCPProxy) Heal() error { return p.gate.Heal() }

// Held is zero: the proxy does not see requests.
func (p *TCPProxy) Held(Op) int { return 0 }

// SetLatency does nothing: no latency faults on etcd.
func (p *TCPProxy) SetLatency(time.Duration, time.Duration) {}

// Counts returns what the proxy did, by "CONN outcome" or fault.
func (p *TCPProxy) Counts() map[string]int {
	p.mu.Lock()
	m := maps.Clone(p.counts)
	p.mu.Unlock()
	s := p.gate.Stats()
	if s.Accepted > 0 {
		m["CONN accepted"] = s.Accepted
	}
	if s.Reset > 0 {
		m["CONN reset"] = s.Reset
	}
	return m
}

// Close stops the proxy and closes every connection.
func (p *TCPProxy) Close() error { return p.gate.Close() }

var _ io.Closer = (*TCPProxy)(nil)
