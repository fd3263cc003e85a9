package election

import (
	"context"
	"strings"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// Dir is the folder, relative to the node-ID prefix, under which every election
// keeps its objects: <prefix>elections/<name>/cluster.json and 0.json. Node-ID
// code ignores these keys (lease.ParseRecordKey rejects them).
const Dir = "elections/"

// subStore is a lease.Store scoped to the keys under sub, within a parent store:
// each election is a one-slot node-ID cluster over its own subStore, so the
// whole lease protocol (bootstrap, acquire, renew, fence, release) is reused.
type subStore struct {
	parent lease.Store
	sub    string
}

func (s subStore) List(ctx context.Context) (lease.Listing, error) {
	l, err := s.parent.List(ctx)
	if err != nil {
		return lease.Listing{}, err
	}
	out := lease.Listing{Date: l.Date}
	for _, o := range l.Objects {
		if rel, ok := strings.CutPrefix(o.Key, s.sub); ok {
			o.Key = rel
			out.Objects = append(out.Objects, o)
		}
	}
	return out, nil
}

func (s subStore) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	return s.parent.Get(ctx, s.sub+key)
}

func (s subStore) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return s.parent.Create(ctx, s.sub+key, body)
}

func (s subStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	return s.parent.Update(ctx, s.sub+key, body, etag)
}

// CreateLive forwards to the parent's liveness-binding create (lease.CreateLive):
// on a store that judges expiry itself (etcd), an election's held record must
// bind its liveness like a node ID's, or it would read expired at once.
func (s subStore) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (lease.Meta, error) {
	return lease.CreateLive(ctx, s.parent, s.sub+key, body, ttl)
}

// UpdateLive forwards to the parent's liveness-binding update (lease.UpdateLive).
func (s subStore) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (lease.Meta, error) {
	return lease.UpdateLive(ctx, s.parent, s.sub+key, body, etag, ttl)
}

var _ lease.LiveWriter = subStore{}
