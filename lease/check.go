package lease

import (
	"context"
	"fmt"
)

// Checker is implemented by a [Store] that can check, before its first lease
// operation, that it is reachable and answers as the store it claims to be
// (s3store: a one-key listing of the prefix; etcdstore: a count of it), each
// bounded by the store's own request timeout, and by wrappers of stores,
// which forward to [Check]. Its error says what to fix and names where the
// store is (the endpoint, the bucket); it matches [ErrMisconfigured] when
// retrying cannot help. node.Start runs it first.
type Checker interface {
	// Check sends one request to the store and reports why it cannot be
	// used, nil when it answered as it should.
	Check(ctx context.Context) error
}

// Check runs s's Check when s is a [Checker]; nil when it is not (the store
// has no such check: its first lease operation tells).
func Check(ctx context.Context, s Store) error {
	if c, ok := s.(Checker); ok {
		return c.Check(ctx)
	}
	return nil
}

// Describer is implemented by a [Store] that can say where it is, for
// messages (s3store: the bucket, prefix and endpoint; etcdstore: the
// endpoints and prefix), and by wrappers of stores, which forward to
// [Describe].
type Describer interface {
	// Describe names where the store is, as an operator would look for it.
	Describe() string
}

// Describe returns where s is: its Describe when it is a [Describer], else
// its type.
func Describe(s Store) string {
	if d, ok := s.(Describer); ok {
		return d.Describe()
	}
	return fmt.Sprintf("a %T", s)
}
