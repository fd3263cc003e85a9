package nodeid_test

import (
	"context"
	"errors"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// simStore is a task's view of the store: every call takes simulated time and
// may meet a partition, an ambiguous answer, a late-landing write, a 409 or a
// slow network.
type simStore struct{ t *simTask }

var _ lease.LiveWriter = simStore{}

// call runs one request: do performs it on the store when it arrives. A write
// may instead stay on the wire (late): land, called later, applies it then.
func (ss simStore) call(op storetest.Op, key string, do func() error, land func()) (err error) {
	t, s := ss.t, ss.t.s
	if t.crashed {
		panic(errProcessDead)
	}
	sent := s.now
	t.reqs++
	req := t.reqs
	if t.inFlight == nil {
		t.inFlight = map[int]time.Duration{}
	}
	t.inFlight[req] = sent
	defer func() {
		delete(t.inFlight, req)
		// A fault, or an answer later than StoreTimeout; not a read's 304
		// or 404, nor a write's 412 (the store answered: another writer's
		// write, a challenge, is there).
		if err != nil && !errors.Is(err, lease.ErrNotModified) && !errors.Is(err, lease.ErrNotFound) && !errors.Is(err, lease.ErrPreconditionFailed) ||
			s.now-sent > t.tm.StoreTimeout {
			t.trouble(s.now)
		}
	}()
	s.tracef("%s: %s %s", t.name, op, key)
	// The request is on the wire: it arrives even if its sender dies or
	// pauses meanwhile.
	if !s.park(s.now+s.latency(), true) {
		panic(errProcessDead) // the run is over
	}
	if t.partitionedUntil > s.now {
		s.counts["partitioned "+string(op)]++
		s.wait(t, t.tm.StoreTimeout)
		return storetest.Unknown(op, key)
	}
	write := op == storetest.OpCreate || op == storetest.OpUpdate
	r := s.rng.Float64()
	switch {
	case write && r < 0.04:
		s.counts["ambiguous landed"]++
		err := do()
		s.wait(t, s.latency())
		if err != nil {
			return err
		}
		return storetest.Unknown(op, key)
	case write && r < 0.07:
		s.counts["ambiguous lost"]++
		s.wait(t, s.latency())
		return storetest.Unknown(op, key)
	case write && r < 0.10:
		s.counts["late write"]++
		s.holdLate(t, key, land)
		s.wait(t, t.tm.StoreTimeout)
		return storetest.Unknown(op, key)
	case write && r < 0.105:
		s.counts["409"]++
		return &lease.ConflictError{Op: string(op), Key: key, Err: errors.New("sim: 409")}
	case !write && r < 0.03:
		s.counts["read error"]++
		return errors.New("sim: read failed")
	}
	err = do()
	s.wait(t, s.latency())
	return err
}

// holdLate keeps a write of t on the wire, the classic Jepsen case: its client
// times out, reads the object back and sees it unchanged, and then the write
// lands (landLate, called by t's next read of key), still conditional. If no
// read comes, it lands anyway within a few seconds.
func (s *sim) holdLate(t *simTask, key string, land func()) {
	landed := false
	once := func() {
		if !landed {
			landed = true
			land()
		}
	}
	if t.late == nil {
		t.late = map[string][]func(){}
	}
	t.late[key] = append(t.late[key], once)
	s.schedule(s.now+s.between(time.Second, 4*time.Second), nil, false, once)
}

// landLate lands, shortly after the read of key by t that just saw the object
// without them, t's writes to key still on the wire.
func (s *sim) landLate(t *simTask, key string) {
	for _, land := range t.late[key] {
		s.counts["late write landing"]++
		s.schedule(s.now+s.between(time.Millisecond, 100*time.Millisecond), nil, false, land)
	}
	delete(t.late, key)
}

// onSimTime returns ctx without its deadline and cancellation for the
// memory store's call, made after the request's simulated latency: the
// caller's deadlines (StoreTimeout's context.WithTimeout) run on real time,
// which a run under load or the race detector spends at its own pace, so
// they must not decide an answer (the memory store refuses a call whose ctx
// ended). The simulation times a request out itself, on its clock.
func onSimTime(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// latency is one network leg: mostly a few ms, sometimes a slow second or two.
func (s *sim) latency() time.Duration {
	if s.rng.Float64() < 0.02 {
		return s.between(500*time.Millisecond, 2500*time.Millisecond)
	}
	return s.between(time.Millisecond, 40*time.Millisecond)
}

func (ss simStore) List(ctx context.Context) (l lease.Listing, err error) {
	err = ss.call(storetest.OpList, "", func() (e error) { l, e = ss.t.s.mem.List(onSimTime(ctx)); return e }, nil)
	return l, err
}

func (ss simStore) Get(ctx context.Context, key string) (b []byte, m lease.Meta, err error) {
	err = ss.call(storetest.OpGet, key, func() (e error) {
		b, m, e = ss.t.s.mem.Get(onSimTime(ctx), key)
		ss.t.s.landLate(ss.t, key)
		return e
	}, nil)
	b, m = ss.tear(key, b, m, err)
	return b, m, err
}

// tear returns the answer to a GET of key that read b and m as it arrived
// and is answered now: in a run with torn reads, when the object was
// replaced meanwhile, half the time the body of the version now with m's
// ETag still, or, with the mutation olderBodyTears, b with the ETag now.
func (ss simStore) tear(key string, b []byte, m lease.Meta, err error) ([]byte, lease.Meta) {
	s := ss.t.s
	if !s.params.tornReads || err != nil {
		return b, m
	}
	nb, nm, e := s.mem.Get(context.Background(), key)
	if e != nil || nm.ETag == m.ETag || s.rng.Float64() < 0.5 {
		return b, m
	}
	s.counts["torn read"]++
	if mu := s.params.mutation; mu != nil && mu.olderBodyTears {
		return b, nm
	}
	return nb, m
}

// GetIfChanged is the read of a holder in read mode (the poll its claim's owner sends):
// a read, with a read's faults. The checker hears of each that the store
// served showing the ETag asked for, which is the record's holder's proof
// (fenceBacked).
func (ss simStore) GetIfChanged(ctx context.Context, key, etag string) (b []byte, m lease.Meta, err error) {
	err = ss.call(storetest.OpGetIfChanged, key, func() (e error) {
		b, m, e = lease.GetIfChanged(onSimTime(ctx), ss.t.s.mem, key, etag)
		if errors.Is(e, lease.ErrNotModified) || (e == nil && m.ETag == etag) {
			ss.t.s.check.readProved(ss.t, key)
		}
		ss.t.s.landLate(ss.t, key)
		return e
	}, nil)
	b, m = ss.tear(key, b, m, err)
	switch {
	case errors.Is(err, lease.ErrNotModified) || (err == nil && m.ETag == etag):
		ss.t.s.counts["poll proved"]++
	case err == nil || errors.Is(err, lease.ErrNotFound):
		ss.t.s.counts["poll saw a change"]++
	default:
		ss.t.s.counts["poll failed"]++
	}
	return b, m, err
}

func (ss simStore) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return ss.CreateLive(ctx, key, body, 0)
}

func (ss simStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	return ss.UpdateLive(ctx, key, body, etag, 0)
}

func (ss simStore) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (lease.Meta, error) {
	return ss.write(ctx, storetest.OpCreate, key, body, func(ctx context.Context) (lease.Meta, error) {
		return ss.t.s.mem.CreateLive(ctx, key, body, ttl)
	})
}

func (ss simStore) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (lease.Meta, error) {
	return ss.write(ctx, storetest.OpUpdate, key, body, func(ctx context.Context) (lease.Meta, error) {
		return ss.t.s.mem.UpdateLive(ctx, key, body, etag, ttl)
	})
}

// write runs the write do of body at key through the simulation's faults,
// and shows the checker each write that landed.
func (ss simStore) write(ctx context.Context, op storetest.Op, key string, body []byte, do func(context.Context) (lease.Meta, error)) (m lease.Meta, err error) {
	s := ss.t.s
	write := func(ctx context.Context) (lease.Meta, error) {
		m, e := do(ctx)
		if e == nil {
			s.check.written(key, body)
		}
		return m, e
	}
	err = ss.call(op, key, func() (e error) { m, e = write(onSimTime(ctx)); return e },
		func() { _, _ = write(context.Background()) })
	return m, err
}
