package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
)

// meter counts (and on etcd delays) the requests of the tasks: the latency
// proxy for S3, a storeMeter for etcd, whose gRPC the proxy cannot read.
type meter interface {
	Counts() latproxy.Counts
	Events() []latproxy.Event
	Block(label string)
}

// storeMeter is the latency proxy's counterpart for a store not reached over
// HTTP: it wraps each task's lease.Store, adds half the latency before and
// half after each request, and counts it by label, operation and status
// (200 done, 412 precondition failed, 404 not found, 0 cut off or failed).
type storeMeter struct {
	latency time.Duration
	record  bool

	mu     sync.Mutex
	counts latproxy.Counts
	events []latproxy.Event
	blocks map[string]bool
}

func newStoreMeter(latency time.Duration, record bool) *storeMeter {
	return &storeMeter{latency: latency, record: record, counts: latproxy.Counts{}, blocks: map[string]bool{}}
}

// Counts implements meter.
func (m *storeMeter) Counts() latproxy.Counts {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(latproxy.Counts, len(m.counts))
	for k, v := range m.counts {
		out[k] = v
	}
	return out
}

// Events implements meter.
func (m *storeMeter) Events() []latproxy.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]latproxy.Event(nil), m.events...)
}

// Block implements meter: later requests labelled label fail unsent.
func (m *storeMeter) Block(label string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blocks[label] = true
}

// errCutOff is the answer to a blocked task: its path to the store is cut.
var errCutOff = errors.New("nodeid-bench: cut off from the store")

// do runs one request of op labelled label.
func (m *storeMeter) do(ctx context.Context, label string, op latproxy.Op, fn func() error) error {
	sent := time.Now()
	m.mu.Lock()
	blocked := m.blocks[label]
	m.mu.Unlock()
	var err error
	if blocked {
		err = errCutOff
		if op == latproxy.OpCreate || op == latproxy.OpUpdate {
			err = &lease.UnknownOutcomeError{Op: string(op), Err: errCutOff}
		}
	} else if err = ctxtime.Sleep(ctx, m.latency/2); err == nil {
		err = fn()
		if serr := ctxtime.Sleep(ctx, m.latency/2); err == nil {
			err = serr
		}
	}
	status := 0
	switch {
	case blocked:
	case err == nil:
		status = 200
	case errors.Is(err, lease.ErrPreconditionFailed):
		status = 412
	case errors.Is(err, lease.ErrNotFound):
		status = 404
	case errors.Is(err, lease.ErrNotModified):
		status = 304
	}
	m.mu.Lock()
	m.counts[latproxy.Key{Label: label, Op: op, Status: status}]++
	if m.record {
		m.events = append(m.events, latproxy.Event{Label: label, Op: op, Status: status, Sent: sent, Done: time.Now()})
	}
	m.mu.Unlock()
	return err
}

// meteredStore is one task's store through a storeMeter.
type meteredStore struct {
	m     *storeMeter
	inner lease.Store
	label func() string
}

func (s *meteredStore) List(ctx context.Context) (l lease.Listing, err error) {
	err = s.m.do(ctx, s.label(), latproxy.OpList, func() (e error) { l, e = s.inner.List(ctx); return e })
	return l, err
}

func (s *meteredStore) Get(ctx context.Context, key string) (b []byte, meta lease.Meta, err error) {
	err = s.m.do(ctx, s.label(), latproxy.OpGet, func() (e error) { b, meta, e = s.inner.Get(ctx, key); return e })
	return b, meta, err
}

// GetIfChanged implements lease.ConditionalReader, metered as a get.
func (s *meteredStore) GetIfChanged(ctx context.Context, key, etag string) (b []byte, meta lease.Meta, err error) {
	err = s.m.do(ctx, s.label(), latproxy.OpGet, func() (e error) { b, meta, e = lease.GetIfChanged(ctx, s.inner, key, etag); return e })
	return b, meta, err
}

func (s *meteredStore) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return s.CreateLive(ctx, key, body, 0)
}

func (s *meteredStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	return s.UpdateLive(ctx, key, body, etag, 0)
}

// CreateLive implements lease.LiveWriter.
func (s *meteredStore) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (meta lease.Meta, err error) {
	err = s.m.do(ctx, s.label(), latproxy.OpCreate, func() (e error) {
		meta, e = lease.CreateLive(ctx, s.inner, key, body, ttl)
		return e
	})
	return meta, err
}

// UpdateLive implements lease.LiveWriter.
func (s *meteredStore) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (meta lease.Meta, err error) {
	err = s.m.do(ctx, s.label(), latproxy.OpUpdate, func() (e error) {
		meta, e = lease.UpdateLive(ctx, s.inner, key, body, etag, ttl)
		return e
	})
	return meta, err
}

// etcdBackend is the etcd side of a backend: the client (one connection,
// shared by every task, as the latency comes from the meter), and the server
// started for the run when no endpoints were given.
type etcdBackend struct {
	store  *etcdstore.Store
	server *etcdtest.Server
	dir    string
}

// startEtcd connects to c.etcdEndpoints, or starts the pinned etcd server
// (test/etcd/install.sh) on a fresh folder when there are none.
func startEtcd(c common) (*etcdBackend, error) {
	e := &etcdBackend{}
	eps := strings.Split(c.etcdEndpoints, ",")
	if c.etcdEndpoints == "" {
		bin := etcdtest.Binary()
		if bin == "" {
			return nil, errors.New("--store etcd without --etcd-endpoints needs the pinned etcd server: bash test/etcd/install.sh")
		}
		dir, err := os.MkdirTemp("", "nodeid-bench-etcd-")
		if err != nil {
			return nil, err
		}
		srv, err := etcdtest.Launch(bin, dir)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		e.server, e.dir, eps = srv, dir, []string{srv.Endpoint}
	}
	st, err := etcdstore.New(etcdstore.Config{Endpoints: eps})
	if err != nil {
		e.close()
		return nil, fmt.Errorf("connect to etcd %v: %w", eps, err)
	}
	e.store = st
	return e, nil
}

func (e *etcdBackend) close() {
	if e.store != nil {
		_ = e.store.Close()
	}
	if e.server != nil {
		e.server.Stop(syscall.SIGTERM)
		_ = os.RemoveAll(e.dir)
	}
}

func (e *etcdBackend) name() string {
	if e.server != nil {
		return "etcd (single member on 127.0.0.1, the pinned server of test/etcd/install.sh)"
	}
	return "etcd"
}
