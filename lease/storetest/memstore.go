package storetest

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// MemStore is an in-memory [lease.Store]. It behaves like S3 where it matters: the
// ETag is the quoted MD5 of the body (identical bodies share an ETag),
// Last-Modified and Date are truncated to whole seconds, and conditional writes
// are atomic. Stores made by [MemStore.WithPrefix] share one bucket. It is safe for
// concurrent use.
//
// With [WithJudgedExpiry] it is instead a store that judges expiry itself, like
// etcd: responses carry no Date or Last-Modified but each key's
// [lease.Liveness], bound by [MemStore.CreateLive] and [MemStore.UpdateLive]
// and run out on the store's clock.
type MemStore struct {
	b      *memBucket
	prefix string
}

type memBucket struct {
	mu      sync.Mutex
	now     func() time.Time
	early   func() time.Duration // how early a write's Last-Modified is stamped; nil: not early
	objects map[string]memObject // by full key
	counts  map[Op]int
	judge   bool  // judges expiry itself (WithJudgedExpiry)
	rev     int64 // writes so far: the ETag of a write when judge, as etcd's revision
	// ignoreINM and ignoreIM make writes skip their condition, like a broken store.
	ignoreINM, ignoreIM bool
	// stale makes conditional reads answer from cache, the last version a
	// read returned per key (StaleConditionalReads).
	stale bool
	cache map[string]memObject
}

type memObject struct {
	body         []byte
	etag         string
	lastModified time.Time
	liveUntil    time.Time // store clock at which the liveness runs out; zero: none
}

// MemOption configures a MemStore.
type MemOption func(*memBucket)

// WithClock makes the store read time from now (a fake clock, typically).
func WithClock(now func() time.Time) MemOption { return func(b *memBucket) { b.now = now } }

// IgnoreIfNoneMatch makes the store apply every Create, existing key or not, like
// a store that accepts If-None-Match: * and ignores it. Tests of [lease.Probe] use it.
func IgnoreIfNoneMatch() MemOption { return func(b *memBucket) { b.ignoreINM = true } }

// IgnoreIfMatch makes the store apply every Update of an existing key whatever its
// ETag, like a store that accepts If-Match and ignores it. Tests of [lease.Probe]
// use it.
func IgnoreIfMatch() MemOption { return func(b *memBucket) { b.ignoreIM = true } }

// StaleConditionalReads makes every conditional read (GetIfChanged) answer
// from a cache of the last version a read (Get or GetIfChanged) returned for
// the key, as a caching proxy or CDN in front of a store would: 304 when the
// cached ETag is the one asked for, whatever the object is now. Tests of
// [lease.ProbeReads] use it.
func StaleConditionalReads() MemOption {
	return func(b *memBucket) { b.stale = true }
}

// WithEarlyLastModified makes each write stamp its Last-Modified early by the
// duration early returns (called once per write, under the store's lock),
// before truncating it to the second: a store whose Last-Modified comes from
// another clock than its Date (versitygw stamps the file's mtime), or from
// when the request began. Date stays the store's clock. The expiry rule's
// clock margin must cover it (docs/evidence/design.md section 5).
func WithEarlyLastModified(early func() time.Duration) MemOption {
	return func(b *memBucket) { b.early = early }
}

// WithJudgedExpiry makes the store judge expiry itself, as etcd does: a key
// written by CreateLive or UpdateLive with a ttl reads LivenessLive until ttl
// has passed on the store's clock (WithClock) since the write was applied, and
// LivenessExpired after, or at once when written without one. Date and
// Last-Modified are never reported.
func WithJudgedExpiry() MemOption { return func(b *memBucket) { b.judge = true } }

// NewMemStore returns an empty store with prefix "" on a new bucket.
func NewMemStore(opts ...MemOption) *MemStore {
	b := &memBucket{now: time.Now, objects: map[string]memObject{}, counts: map[Op]int{}, cache: map[string]memObject{}}
	for _, o := range opts {
		o(b)
	}
	return &MemStore{b: b}
}

// Scope implements lease.Scoper: the store on the same bucket under the prefix + sub.
func (s *MemStore) Scope(sub string) lease.Store { return s.WithPrefix(s.prefix + sub) }

// WithPrefix returns a store on the same bucket under prefix.
func (s *MemStore) WithPrefix(prefix string) *MemStore { return &MemStore{b: s.b, prefix: prefix} }

func (b *memBucket) stamp() time.Time { return b.now().UTC().Truncate(time.Second) }

// modified returns the Last-Modified stamp of a write applied now.
func (b *memBucket) modified() time.Time {
	t := b.now().UTC()
	if b.early != nil {
		t = t.Add(-b.early())
	}
	return t.Truncate(time.Second)
}

// List implements lease.Store.
func (s *MemStore) List(ctx context.Context) (lease.Listing, error) {
	if err := ctx.Err(); err != nil {
		return lease.Listing{}, err
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts[OpList]++
	l := lease.Listing{Date: b.date()}
	for k, o := range b.objects {
		if rel, ok := strings.CutPrefix(k, s.prefix); ok {
			l.Objects = append(l.Objects, lease.ObjectInfo{Key: rel, ETag: o.etag, LastModified: b.lastModified(o), Liveness: b.liveness(o), Size: b.listedSize(o)})
		}
	}
	slices.SortFunc(l.Objects, func(x, y lease.ObjectInfo) int { return strings.Compare(x.Key, y.Key) })
	return l, nil
}

// Get implements lease.Store.
func (s *MemStore) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	if err := ctx.Err(); err != nil {
		return nil, lease.Meta{}, err
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts[OpGet]++
	o, ok := b.objects[s.prefix+key]
	if !ok {
		return nil, lease.Meta{}, lease.ErrNotFound
	}
	if b.stale {
		b.cache[s.prefix+key] = o
	}
	return slices.Clone(o.body), b.meta(o), nil
}

// GetIfChanged implements lease.ConditionalReader, atomically: ErrNotModified
// when the key's ETag is etag (with StaleConditionalReads, when the cached
// one is).
func (s *MemStore) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	if err := ctx.Err(); err != nil {
		return nil, lease.Meta{}, err
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts[OpGetIfChanged]++
	o, ok := b.objects[s.prefix+key]
	if c, cached := b.cache[s.prefix+key]; b.stale && cached {
		o, ok = c, true
	}
	switch {
	case !ok:
		return nil, lease.Meta{}, lease.ErrNotFound
	case etag != "" && o.etag == etag:
		return nil, b.meta(o), fmt.Errorf("storetest: get %s: %w (ETag %s)", key, lease.ErrNotModified, etag)
	}
	if b.stale {
		b.cache[s.prefix+key] = o
	}
	return slices.Clone(o.body), b.meta(o), nil
}

// meta is the Meta of a read of o answered now. Callers hold b.mu.
func (b *memBucket) meta(o memObject) lease.Meta {
	return lease.Meta{ETag: o.etag, LastModified: b.lastModified(o), Date: b.date(), Liveness: b.liveness(o)}
}

// Create implements lease.Store.
func (s *MemStore) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return s.CreateLive(ctx, key, body, 0)
}

// Update implements lease.Store.
func (s *MemStore) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	return s.UpdateLive(ctx, key, body, etag, 0)
}

// CreateLive implements lease.LiveWriter: Create, binding the key's liveness
// to ttl when the store judges expiry (WithJudgedExpiry); ttl is ignored
// otherwise.
func (s *MemStore) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (lease.Meta, error) {
	return s.write(ctx, OpCreate, key, body, ttl, func(_ memObject, exists bool) bool { return !exists })
}

// UpdateLive implements lease.LiveWriter: Update, binding the key's liveness
// as CreateLive does.
func (s *MemStore) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (lease.Meta, error) {
	return s.write(ctx, OpUpdate, key, body, ttl, func(o memObject, exists bool) bool { return exists && o.etag == etag })
}

// date is the Date of a response: none when the store judges expiry.
func (b *memBucket) date() time.Time {
	if b.judge {
		return time.Time{}
	}
	return b.stamp()
}

// lastModified is the Last-Modified of o in a response: none when the store
// judges expiry.
func (b *memBucket) lastModified(o memObject) time.Time {
	if b.judge {
		return time.Time{}
	}
	return o.lastModified
}

// liveness is the store's judgement of o's liveness now: unjudged unless the
// store judges expiry.
func (b *memBucket) liveness(o memObject) lease.Liveness {
	switch {
	case !b.judge:
		return lease.LivenessUnjudged
	case !o.liveUntil.IsZero() && b.now().Before(o.liveUntil):
		return lease.LivenessLive
	default:
		return lease.LivenessExpired
	}
}

// listedSize is the size a listing reports for o: its length, or 0 (not
// listed) when the store judges expiry, as etcd's keys-only listing.
func (b *memBucket) listedSize(o memObject) int64 {
	if b.judge {
		return 0
	}
	return int64(len(o.body))
}

func (s *MemStore) write(ctx context.Context, op Op, key string, body []byte, ttl time.Duration, cond func(memObject, bool) bool) (lease.Meta, error) {
	if err := ctx.Err(); err != nil {
		return lease.Meta{}, err
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts[op]++
	cur, exists := b.objects[s.prefix+key]
	ignored := (op == OpCreate && b.ignoreINM) || (op == OpUpdate && b.ignoreIM && exists)
	if !ignored && !cond(cur, exists) {
		return lease.Meta{}, lease.ErrPreconditionFailed
	}
	o := memObject{body: slices.Clone(body), etag: b.etag(body), lastModified: b.modified()}
	if b.judge && ttl > 0 {
		o.liveUntil = b.now().Add(ttl)
	}
	b.objects[s.prefix+key] = o
	return lease.Meta{ETag: o.etag, Date: b.date(), Liveness: b.liveness(o)}, nil
}

// Put writes body at key unconditionally. It exists for tests that plant garbage
// or foreign objects; nodeid itself never writes unconditionally.
func (s *MemStore) Put(key string, body []byte) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects[s.prefix+key] = memObject{body: slices.Clone(body), etag: b.etag(body), lastModified: b.modified()}
}

// Delete removes key, as an operator (or an accident) might; nodeid never deletes.
func (s *MemStore) Delete(key string) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	delete(s.b.objects, s.prefix+key)
}

// Count returns how many operations of kind op the bucket has served (attempts,
// including failed conditions), over all prefixes.
func (s *MemStore) Count(op Op) int {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.b.counts[op]
}

// etag returns the ETag of a write of body: its quoted MD5 as on S3, or, when
// the store judges expiry, a new revision number as on etcd. Callers hold b.mu.
func (b *memBucket) etag(body []byte) string {
	if b.judge {
		b.rev++
		return strconv.FormatInt(b.rev, 10)
	}
	return etagOf(body)
}

func etagOf(body []byte) string {
	sum := md5.Sum(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}
