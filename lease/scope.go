package lease

import (
	"context"
	"strings"
	"time"
)

// Scoper is a Store that can scope itself to the keys under a sub-prefix, so
// that the scoped store's List asks the server for those keys alone instead
// of listing the whole prefix and filtering it (see [Scope]).
type Scoper interface {
	// Scope returns a Store over the keys under sub, relative to this
	// store's prefix; its keys are relative to sub. It shares this store's
	// connections, and binds liveness as this store does.
	Scope(sub string) Store
}

// Scope returns s scoped to the keys under sub (relative to s's prefix, ending
// in "/"): its keys are relative to sub, its List lists only them, and its
// writes bind liveness as s's do ([CreateLive], [UpdateLive]). A [Scoper]
// scopes itself (one short listing on the server); any other store is
// wrapped, and its whole listing filtered.
func Scope(s Store, sub string) Store {
	if sc, ok := s.(Scoper); ok {
		return sc.Scope(sub)
	}
	return filtered{parent: s, sub: sub}
}

// filtered is Scope's wrapper of a store that cannot scope itself.
type filtered struct {
	parent Store
	sub    string
}

var (
	_ LiveWriter        = filtered{}
	_ ConditionalReader = filtered{}
)

func (s filtered) List(ctx context.Context) (Listing, error) {
	l, err := s.parent.List(ctx)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Date: l.Date}
	for _, o := range l.Objects {
		if rel, ok := strings.CutPrefix(o.Key, s.sub); ok {
			o.Key = rel
			out.Objects = append(out.Objects, o)
		}
	}
	return out, nil
}

func (s filtered) Get(ctx context.Context, key string) ([]byte, Meta, error) {
	return s.parent.Get(ctx, s.sub+key)
}

// GetIfChanged forwards to the parent's GetIfChanged ([GetIfChanged]), so
// that scoping hides no conditional read.
func (s filtered) GetIfChanged(ctx context.Context, key, etag string) ([]byte, Meta, error) {
	return GetIfChanged(ctx, s.parent, s.sub+key, etag)
}

func (s filtered) Create(ctx context.Context, key string, body []byte) (Meta, error) {
	return s.parent.Create(ctx, s.sub+key, body)
}

func (s filtered) Update(ctx context.Context, key string, body []byte, etag string) (Meta, error) {
	return s.parent.Update(ctx, s.sub+key, body, etag)
}

// CreateLive forwards to the parent's CreateLive: on a store that judges
// expiry itself (etcd), a held record under sub must bind its liveness, or it
// would read expired at once.
func (s filtered) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (Meta, error) {
	return CreateLive(ctx, s.parent, s.sub+key, body, ttl)
}

// UpdateLive forwards to the parent's UpdateLive, as CreateLive.
func (s filtered) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (Meta, error) {
	return UpdateLive(ctx, s.parent, s.sub+key, body, etag, ttl)
}
