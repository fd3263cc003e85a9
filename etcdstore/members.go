package etcdstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/connectivity"
)

// members is how a Store reaches etcd: one client per endpoint, so that the
// Store chooses the member of each request, where one client over every
// endpoint leaves the choice to gRPC's round robin.
//
// Round robin picks the next member for every call, whatever happened to the
// last one on a member: a write (a lease grant, then a transaction) and its
// read-back are three calls, so with three endpoints every transaction of a
// renewal went to the same member; when that member was cut off, each
// renewal attempt hung there until its timeout, round after round, while two
// members answered. Here a Store keeps to one member (chosen at random, to
// spread the fleet) while it answers, and moves to the next as soon as a
// request fails without a definite answer (a timeout, a lost connection, a
// member with no leader): the retry goes elsewhere. A write's grant and
// transaction go to the same member.
//
// Every request also carries clientv3.WithRequireLeader: a member that has
// lost its leader answers at once (etcdserver: no leader, before the request
// is looked at) instead of holding the request until its timeout.
type members struct {
	clis    []*clientv3.Client // nil: not connected yet (see connect)
	owned   bool               // close closes the clients
	current atomic.Int32       // the member requests go to

	mu     sync.Mutex
	closed bool
	stop   chan struct{} // closed by close: ends the reconnect loops
}

// newMembers connects one client per endpoint of cfg (as clientv3.New does,
// which does not wait for the connection unless authentication asks for a
// token). A client that cannot be made yet is retried every second in the
// background; it fails only when none can be made.
func newMembers(base clientv3.Config, endpoints []string) (*members, error) {
	m := &members{clis: make([]*clientv3.Client, len(endpoints)), owned: true, stop: make(chan struct{})}
	m.current.Store(int32(rand.IntN(len(endpoints))))
	var errs []error
	for i, ep := range endpoints {
		cfg := base
		cfg.Endpoints = []string{ep}
		cli, err := clientv3.New(cfg)
		if err == nil {
			m.clis[i] = cli
			continue
		}
		errs = append(errs, err)
		go m.reconnect(i, cfg)
	}
	if len(errs) == len(endpoints) {
		m.close()
		return nil, errors.Join(errs...)
	}
	return m, nil
}

// oneClient is members on a client the caller made and closes.
func oneClient(cli *clientv3.Client) *members {
	return &members{clis: []*clientv3.Client{cli}, stop: make(chan struct{})}
}

// reconnect makes member i's client, once a second, until it is made or the
// members are closed.
func (m *members) reconnect(i int, cfg clientv3.Config) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		cli, err := clientv3.New(cfg)
		if err != nil {
			continue
		}
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			_ = cli.Close()
			return
		}
		m.clis[i] = cli
		m.mu.Unlock()
		return
	}
}

// pick returns the member to send a request to, and its client: the current
// one, unless its connection is failing (a killed member refuses it, and
// clientv3 waits for a connection until the request's timeout: it sends
// with gRPC's WaitForReady); then the next whose connection is not, which
// becomes the current one.
func (m *members) pick() (int, *clientv3.Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.clis)
	cur := int(m.current.Load())
	first := -1
	for k := range n {
		i := (cur + k) % n
		c := m.clis[i]
		if c == nil {
			continue
		}
		if first < 0 {
			first = i
		}
		if c.ActiveConnection().GetState() != connectivity.TransientFailure {
			m.current.CompareAndSwap(int32(cur), int32(i))
			return i, c
		}
	}
	return first, m.clis[first] // every connection failing: wait on the current one
}

// done records the outcome of a request sent to member i: an error without a
// definite answer moves the Store to the next member, unless another request
// moved it already.
func (m *members) done(i int, err error) {
	if err == nil || definite(err) || len(m.clis) == 1 {
		return
	}
	m.current.CompareAndSwap(int32(i), int32((i+1)%len(m.clis)))
}

// endpoints returns every endpoint, for messages.
func (m *members) endpoints() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var eps []string
	for _, c := range m.clis {
		if c != nil {
			eps = append(eps, c.Endpoints()...)
		}
	}
	return eps
}

// close closes the clients if newMembers made them.
func (m *members) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	close(m.stop)
	if !m.owned {
		return nil
	}
	var errs []error
	for _, c := range m.clis {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// requestCtx is the context of one request: ctx bounded by timeout, asking
// the member to answer at once when it has no leader.
func requestCtx(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return clientv3.WithRequireLeader(ctx), cancel
}
