package election

import "context"

// Mutex is a named lock with a fencing token: an election whose leader is the
// lock's holder. It is not safe for concurrent use by several goroutines; one
// Mutex is one would-be holder.
type Mutex struct {
	e    *Elections
	name string
	held *Leadership
}

// NewMutex returns the lock name (not yet held).
func (e *Elections) NewMutex(name string) *Mutex { return &Mutex{e: e, name: name} }

// Lock blocks until the lock is held or ctx ends. The returned Leadership says
// until when the lock may be trusted (Valid, Done).
func (m *Mutex) Lock(ctx context.Context) (*Leadership, error) {
	l, err := m.e.Campaign(ctx, m.name, "")
	if err != nil {
		return nil, err
	}
	m.held = l
	return l, nil
}

// Token is the fencing token of the current hold (its term), 0 when not held.
// A protected resource refuses requests with a token lower than one it saw.
func (m *Mutex) Token() int64 {
	if m.held == nil {
		return 0
	}
	return m.held.Term()
}

// Unlock frees the lock at once (see Leadership.Resign); a no-op when not held.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m.held == nil {
		return nil
	}
	err := m.held.Resign(ctx)
	m.held = nil
	return err
}
