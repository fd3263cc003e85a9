package storetest

import (
	"context"
	"errors"
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
	killed   error // set by Kill: every call fails with it
}

// NewFaultStore wraps inner; with nothing injected it passes every call through.
func NewFaultStore(inner lease.Store) *FaultStore {
	return &FaultStore{inner: inner, Sleep: ctxtime.Sleep, queued: map[Op][]Fault{}}
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

// apply runs one operation under its fault. call performs it on the inner store.
func (f *FaultStore) apply(ctx context.Context, op Op, key string, call func() error) error {
	ft, killed := f.next(op, key)
	if killed != nil {
		return killed
	}
	if ft.Delay > 0 {
		if err := f.Sleep(ctx, ft.Delay); err != nil {
			return err
		}
	}
	if ft.Landed && (op == OpCreate || op == OpUpdate) {
		if err := call(); err != nil {
			return err
		}
		if ft.Err == nil {
			return Unknown(op, key)
		}
		return ft.Err
	}
	if ft.Err != nil {
		return ft.Err
	}
	return call()
}

// List implements lease.Store.
func (f *FaultStore) List(ctx context.Context) (l lease.Listing, err error) {
	err = f.apply(ctx, OpList, "", func() (e error) { l, e = f.inner.List(ctx); return e })
	return l, err
}

// Get implements lease.Store.
func (f *FaultStore) Get(ctx context.Context, key string) (body []byte, m lease.Meta, err error) {
	err = f.apply(ctx, OpGet, key, func() (e error) { body, m, e = f.inner.Get(ctx, key); return e })
	return body, m, err
}

// Create implements lease.Store.
func (f *FaultStore) Create(ctx context.Context, key string, body []byte) (m lease.Meta, err error) {
	err = f.apply(ctx, OpCreate, key, func() (e error) { m, e = f.inner.Create(ctx, key, body); return e })
	return m, err
}

// Update implements lease.Store.
func (f *FaultStore) Update(ctx context.Context, key string, body []byte, etag string) (m lease.Meta, err error) {
	err = f.apply(ctx, OpUpdate, key, func() (e error) { m, e = f.inner.Update(ctx, key, body, etag); return e })
	return m, err
}
