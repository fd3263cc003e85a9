package election

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
)

// ErrBadName means an election name is not a safe key segment.
var ErrBadName = errors.New("election: bad name")

// forever is the AcquireTimeout of a campaign: it waits until elected or until
// its context ends.
const forever = time.Duration(1<<63 - 1)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckName returns an error wrapping ErrBadName unless name is 1 to 128 of
// [A-Za-z0-9._-], starting with a letter or digit.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w %q: want 1-128 of [A-Za-z0-9._-], starting with a letter or digit", ErrBadName, name)
	}
	return nil
}

// Elections runs elections and locks over the same store (and prefix) as the
// node IDs. Each name is a node-ID cluster of size 1 under
// <prefix>elections/<name>/: its one lease is the leadership, its version the
// term.
type Elections struct {
	store lease.Store
	cfg   nodeid.Config
}

// New returns Elections over store (the node-ID store, under its prefix). cfg
// supplies the task identity, the lease timings, the clock and the logger; its
// ClusterSize, FirstNodeID, AcquireTimeout and Peers are ignored.
func New(store lease.Store, cfg nodeid.Config) (*Elections, error) {
	if store == nil {
		return nil, errors.New("election: nil store")
	}
	cfg = scoped(cfg)
	if err := cfg.ValidateFor(store); err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	if cfg.Clock == nil { // Observe's, as nodeid.New defaults it
		cfg.Clock = nodeid.SystemClock(0)
	}
	return &Elections{store: store, cfg: cfg}, nil
}

// scoped turns a node-ID configuration into the one of an election: one slot,
// waiting until elected, no gossip of node IDs (Tasks, gossip's view of which
// tasks live, is kept: in read mode it is how a dead leader is challenged),
// and no Snowflake reservation (a leader issues no IDs, so a successor waits
// for no floor).
func scoped(cfg nodeid.Config) nodeid.Config {
	cfg.ClusterSize, cfg.FirstNodeID, cfg.AcquireTimeout, cfg.Peers, cfg.Observer = 1, 0, forever, nil, nil
	cfg.IssuesNoIDs = true
	cfg.Order = nodeid.OrderLowestFirst
	return cfg
}

// storeFor returns the store of the election name.
func (e *Elections) storeFor(name string) (lease.Store, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return lease.Scope(e.store, Dir+name+"/"), nil
}

// Campaign blocks until this task is elected leader of name, or ctx ends.
// value (at most lease.MaxValueLen bytes; may be empty) is published with the
// leadership for as long as it lasts: Leader and All report it, so that
// followers learn, say, the leader's address from the same read that names
// it. A waiting candidate sleeps until the earliest instant the leader's lease could
// be judged expired on the store's clock (or a short backoff, to see a
// resignation), then reads and takes it by one conditional write: however many
// wait, one write wins per term.
func (e *Elections) Campaign(ctx context.Context, name, value string) (*Leadership, error) {
	st, err := e.storeFor(name)
	if err != nil {
		return nil, err
	}
	cfg := e.cfg
	cfg.Value = value
	p, err := nodeid.New(st, cfg)
	if err != nil {
		return nil, fmt.Errorf("election %s: %w", name, err)
	}
	c, err := p.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("election %s: %w", name, err)
	}
	return &Leadership{name: name, value: value, claim: c}, nil
}

// Leadership is this task's term as leader of one election. It renews itself
// until Resign or until it is lost.
type Leadership struct {
	name  string
	value string
	claim *nodeid.Claim
}

// Name is the election's name.
func (l *Leadership) Name() string { return l.name }

// Value is the value this leadership was campaigned with.
func (l *Leadership) Value() string { return l.value }

// Term is the fencing token: strictly increasing per name, over every leader
// ever elected. Pass it to a protected resource, which refuses any request
// carrying a lower term than one it has seen.
func (l *Leadership) Term() int64 { return l.claim.Version() }

// Valid reports whether this task may still act as leader: false from the
// instant its lease could be in doubt, on its own monotonic clock, always
// before any other candidate can be elected. Check it before each act.
func (l *Leadership) Valid() bool { return l.claim.Valid() }

// ValidUntil is the local instant at which Valid turns false unless a renewal
// lands first.
func (l *Leadership) ValidUntil() time.Time { return l.claim.ValidUntil() }

// Context returns a context cancelled when this leadership ends: when it is
// lost, or when Resign begins. context.Cause of it wraps nodeid.ErrLeaseLost,
// or is nodeid.ErrClosed. Run the leader's work under it; it is not the
// fence: Valid still tells whether this task may act as leader now.
func (l *Leadership) Context() context.Context { return l.claim.Context() }

// Done is closed when the leadership ends: resigned or lost.
func (l *Leadership) Done() <-chan struct{} { return l.claim.Done() }

// Err is nil while leading, nodeid.ErrClosed after Resign, and wraps
// nodeid.ErrLeaseLost when the leadership was lost.
func (l *Leadership) Err() error { return l.claim.Err() }

// Resign fences this leader and frees the election at once, so that a waiting
// candidate is elected without waiting for the lease to run out. It is
// idempotent; a leadership already lost returns nil.
func (l *Leadership) Resign(ctx context.Context) error {
	err := l.claim.Close(ctx)
	if errors.Is(err, nodeid.ErrClosed) || errors.Is(err, nodeid.ErrLeaseLost) {
		return nil
	}
	return err
}
