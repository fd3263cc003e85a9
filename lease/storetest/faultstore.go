package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/nodeid/nodeid/internal/ctxtime"
	"github.com/nodeid/nodeid/lease"
)

// Op names a Store operation.
type Op string

// The operations of a lease.Store.
const (
	OpList   Op = "list"
	OpGet    Op = "get"
	OpCreate Op = "create"
	OpUpdate Op = "update"
	// OpGetIfChanged is a conditional read ([lease.ConditionalReader]). A
	// history ([Call]) records it as an OpGet.
	OpGetIfChanged Op = "get-if-changed"
)

// Fault is what a [FaultStore] does to one operation.
type Fault struct {
	// Delay is waited (through the FaultStore's sleep function) before anything else.
	Delay time.Duration
	// Err, when set, is returned to the caller. Unless Landed, the operation is not
	// passed to the inner store.
	Err error
	// Landed passes a write to the inner store first and then returns Err (or, if
	// Err is nil, an unknown-outcome error): the ambiguous case, where the write
	// landed but its answer was lost.
	Landed bool
	// Late holds a write back and returns Err (or, if Err is nil, an
	// unknown-outcome error) at once: the write is still on its way. It lands
	// later, after the next Get of the same key has read the object (so that
	// read-back sees the object without the write: the client concludes the
	// write did not land, and then it does), or at LandLate, whichever comes
	// first. It is the conditional write it was: it lands only if its
	// condition still holds then (If-Match on the ETag it carried, or
	// If-None-Match). Late takes precedence over Landed.
	Late bool
}

// ErrInjected is the default error of injected faults.
var ErrInjected = errors.New("storetest: injected fault")

// ErrKilled is the default error of a killed FaultStore (see Kill).
var ErrKilled = errors.New("storetest: killed: the request never reached the store")

// FaultStore wraps a lease.Store and injects faults chosen by an injector
// function and by one-shot faults queued per operation. It is safe for concurrent use.
type FaultStore struct {
	inner lease.Store
	// Sleep waits d or until ctx is done; the default uses real timers. Set it
	// before use to drive delays from a fake clock.
	Sleep func(ctx context.Context, d time.Duration) error

	mu       sync.Mutex
	injector func(op Op, key string) Fault
	queued   map[Op][]Fault
	killed   error                             // set by Kill: every call fails with it
	late     map[string][]func() (bool, error) // writes held back by Late faults, by key, in send order
}

// NewFaultStore wraps inner; with nothing injected it passes every call through.
func NewFaultStore(inner lease.Store) *FaultStore {
	return &FaultStore{inner: inner, Sleep: ctxtime.Sleep, queued: map[Op][]Fault{}, late: map[string][]func() (bool, error){}}
}

// SetInjector sets the function consulted for every operation that has no queued
// fault; nil injects nothing.
func (f *FaultStore) SetInjector(fn func(op Op, key string) Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.injector = fn
}

// Queue appends one-shot faults for the next operations of kind op.
func (f *FaultStore) Queue(op Op, faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued[op] = append(f.queued[op], faults...)
}

// Kill makes every later call fail at once with err (ErrKilled when err is nil)
// without reaching the inner store, whatever is queued or injected: the
// caller's requests never leave it, as after kill -9 or a cut network. Calls
// already under way finish as they would have. It cannot be undone; a later
// Kill only changes the error.
func (f *FaultStore) Kill(err error) {
	if err == nil {
		err = ErrKilled
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = err
}

// Unknown returns an unknown-outcome error as a store would for a lost answer.
func Unknown(op Op, key string) error {
	return &lease.UnknownOutcomeError{Op: string(op), Key: key, Err: ErrInjected}
}

// next returns the fault of the next operation op on key, or the error of Kill
// (and then consumes no queued fault).
func (f *FaultStore) next(op Op, key string) (Fault, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killed != nil {
		return Fault{}, f.killed
	}
	if q := f.queued[op]; len(q) > 0 {
		f.queued[op] = q[1:]
		return q[0], nil
	}
	if f.injector != nil {
		return f.injector(op, key), nil
	}
	return Fault{}, nil
}

// apply runs one operation under its fault. call performs it on the inner store;
// land, for writes, performs it again without touching the caller's results:
// a late write lands after its caller returned (and its ctx ended).
func (f *FaultStore) apply(ctx context.Context, op Op, key string, call func() error, land func(ctx context.Context) error) error {
	ft, killed := f.next(op, key)
	if killed != nil {
		return killed
	}
	if ft.Delay > 0 {
		if err := f.Sleep(ctx, ft.Delay); err != nil {
			return err
		}
	}
	write := op == OpCreate || op == OpUpdate
	answer := ft.Err
	if answer == nil {
		answer = Unknown(op, key)
	}
	switch {
	case ft.Late && write && land != nil:
		lctx := context.WithoutCancel(ctx)
		f.mu.Lock()
		f.late[key] = append(f.late[key], func() (bool, error) {
			err := land(lctx)
			if errors.Is(err, lease.ErrPreconditionFailed) {
				return false, nil // its condition no longer held: it never lands
			}
			return err == nil, err
		})
		f.mu.Unlock()
		return answer
	case ft.Landed && write:
		if err := call(); err != nil {
			return err
		}
		return answer
	case ft.Err != nil:
		return ft.Err
	}
	return call()
}

// landLate applies the writes held back for key (all keys when key is nil), in
// the order they were sent, and returns how many landed.
func (f *FaultStore) landLate(key *string) (int, error) {
	f.mu.Lock()
	var held []func() (bool, error)
	if key != nil {
		held = f.late[*key]
		delete(f.late, *key)
	} else {
		keys := make([]string, 0, len(f.late))
		for k := range f.late {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			held = append(held, f.late[k]...)
		}
		clear(f.late)
	}
	f.mu.Unlock()
	landed := 0
	var errs []error
	for _, land := range held {
		ok, err := land()
		if ok {
			landed++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return landed, errors.Join(errs...)
}

// LandLate lands now every write still held back by a Late fault (in send
// order per key, keys in order), each only if its condition still holds, and
// returns how many landed. An error is one the inner store returned other than
// a failed condition.
func (f *FaultStore) LandLate() (int, error) { return f.landLate(nil) }

// List implements lease.Store.
func (f *FaultStore) List(ctx context.Context) (l lease.Listing, err error) {
	err = f.apply(ctx, OpList, "", func() (e error) { l, e = f.inner.List(ctx); return e }, nil)
	return l, err
}

// Get implements lease.Store.
func (f *FaultStore) Get(ctx context.Context, key string) (body []byte, m lease.Meta, err error) {
	err = f.apply(ctx, OpGet, key, func() (e error) { body, m, e = f.inner.Get(ctx, key); return e }, nil)
	// Writes held back for key land now, after this read saw the object
	// without them. Their errors concern the writes, not this read.
	if err == nil || errors.Is(err, lease.ErrNotFound) {
		_, _ = f.landLate(&key)
	}
	return body, m, err
}

// GetIfChanged implements lease.ConditionalReader: lease.GetIfChanged on the
// inner store, with the faults queued or injected for OpGetIfChanged. Like
// Get, an answer (ErrNotModified included) lands the writes held back for key.
func (f *FaultStore) GetIfChanged(ctx context.Context, key, etag string) (body []byte, m lease.Meta, err error) {
	err = f.apply(ctx, OpGetIfChanged, key, func() (e error) { body, m, e = lease.GetIfChanged(ctx, f.inner, key, etag); return e }, nil)
	if err == nil || errors.Is(err, lease.ErrNotFound) || errors.Is(err, lease.ErrNotModified) {
		_, _ = f.landLate(&key)
	}
	return body, m, err
}

// Create implements lease.Store.
func (f *FaultStore) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return f.write(ctx, OpCreate, key, func(ctx context.Context) (lease.Meta, error) { return f.inner.Create(ctx, key, body) })
}

// Update implements lease.Store.
func (f *FaultStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	return f.write(ctx, OpUpdate, key, func(ctx context.Context) (lease.Meta, error) { return f.inner.Update(ctx, key, body, etag) })
}

// CreateLive implements lease.LiveWriter: lease.CreateLive on the inner store,
// with the faults of Create.
func (f *FaultStore) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (lease.Meta, error) {
	return f.write(ctx, OpCreate, key, func(ctx context.Context) (lease.Meta, error) {
		return lease.CreateLive(ctx, f.inner, key, body, ttl)
	})
}

// UpdateLive implements lease.LiveWriter: lease.UpdateLive on the inner store,
// with the faults of Update.
func (f *FaultStore) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (lease.Meta, error) {
	return f.write(ctx, OpUpdate, key, func(ctx context.Context) (lease.Meta, error) {
		return lease.UpdateLive(ctx, f.inner, key, body, etag, ttl)
	})
}

// write applies the faults of op to the write do.
func (f *FaultStore) write(ctx context.Context, op Op, key string, do func(context.Context) (lease.Meta, error)) (m lease.Meta, err error) {
	err = f.apply(ctx, op, key, func() (e error) { m, e = do(ctx); return e },
		func(ctx context.Context) error { _, e := do(ctx); return e })
	return m, err
}
