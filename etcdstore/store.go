package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodeid/nodeid/lease"
)

// Store is a [lease.Store] and [lease.LiveWriter] on etcd. It is safe for
// concurrent use.
type Store struct {
	members  *members
	owned    bool // Close closes the members' clients
	prefix   string
	pageSize int
	timeout  time.Duration // per request
}

// defaultRequestTimeout is Config.RequestTimeout's default.
const defaultRequestTimeout = 5 * time.Second

var (
	_ lease.Store      = (*Store)(nil)
	_ lease.LiveWriter = (*Store)(nil)
	_ lease.Scoper     = (*Store)(nil)
	_ lease.Checker    = (*Store)(nil)
	_ lease.Describer  = (*Store)(nil)

	_ lease.ConditionalReader = (*Store)(nil)
)

// Scope implements [lease.Scoper]: a Store over the keys under the prefix +
// sub, sharing this one's client (its Close leaves the client open), so that
// its List reads those keys alone.
func (s *Store) Scope(sub string) lease.Store {
	c := *s
	c.prefix, c.owned = s.prefix+sub, false
	return &c
}

// New connects to etcd as cfg says. Close the Store when done.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	m, err := newMembers(clientv3.Config{
		DialTimeout: cfg.DialTimeout, TLS: tc,
		Username: cfg.Username, Password: cfg.Password, Logger: zap.NewNop(),
	}, cfg.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: connect to %v: %w", cfg.Endpoints, refusal(err))
	}
	s := &Store{members: m, owned: true, prefix: cfg.Prefix, pageSize: cfg.PageSize, timeout: cfg.RequestTimeout}
	return s, nil
}

// NewWithClient returns a Store on an existing client under prefix; Close
// leaves the client open. Its requests go where the client's balancer sends
// them: only New keeps to one member and moves on when it hangs.
func NewWithClient(cli *clientv3.Client, prefix string) *Store {
	return &Store{members: oneClient(cli), prefix: prefix, pageSize: DefaultPageSize, timeout: defaultRequestTimeout}
}

// WithPrefix returns a Store on the same clients under another prefix.
// Closing it does not close them.
func (s *Store) WithPrefix(prefix string) *Store {
	return &Store{members: s.members, prefix: prefix, pageSize: s.pageSize, timeout: s.timeout}
}

// Check implements [lease.Checker]: it counts the keys of the prefix, and
// fails when etcd cannot be reached or refuses this client (authentication,
// permissions). The request is bounded by Config.RequestTimeout (5 s by
// default): an endpoint that accepts connections and never answers fails it
// then, with an error that names the endpoints. node.Start runs it first.
func (s *Store) Check(ctx context.Context) error {
	rctx, cancel := requestCtx(ctx, s.timeout)
	defer cancel()
	i, cli := s.members.pick()
	_, err := cli.Get(rctx, s.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	s.members.done(i, err)
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil && rctx.Err() != nil:
		return fmt.Errorf("etcdstore: check %v: no answer within %v: %w", s.members.endpoints(), s.timeout, err)
	}
	return fmt.Errorf("etcdstore: check %v: %w", s.members.endpoints(), refusal(err))
}

// Describe implements [lease.Describer]: the endpoints and the prefix, for
// messages.
func (s *Store) Describe() string {
	return fmt.Sprintf("etcd at %s (prefix %q)", strings.Join(s.members.endpoints(), ","), s.prefix)
}

// Close closes the client if New opened it.
func (s *Store) Close() error {
	if !s.owned {
		return nil
	}
	return s.members.close()
}

// Prefix returns the key prefix.
func (s *Store) Prefix() string { return s.prefix }

func (s *Store) full(key string) string { return s.prefix + key }
func (s *Store) live(key string) string { return s.prefix + key + LiveSuffix }

// checkKey refuses keys this store cannot hold.
func checkKey(key string) error {
	if key == "" || strings.HasSuffix(key, LiveSuffix) {
		return fmt.Errorf("etcdstore: key %q is empty or ends in the reserved %s", key, LiveSuffix)
	}
	return nil
}

// Get implements lease.Store: the object and its liveness key, read in one
// transaction (one revision).
func (s *Store) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	if err := checkKey(key); err != nil {
		return nil, lease.Meta{}, err
	}
	ctx, cancel := requestCtx(ctx, s.timeout)
	defer cancel()
	i, cli := s.members.pick()
	resp, err := cli.Txn(ctx).Then(clientv3.OpGet(s.full(key)), clientv3.OpGet(s.live(key), clientv3.WithKeysOnly())).Commit()
	s.members.done(i, err)
	if err != nil {
		return nil, lease.Meta{}, fmt.Errorf("etcdstore: get %s: %w", key, err)
	}
	obj, live := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
	if len(obj) == 0 {
		return nil, lease.Meta{}, lease.ErrNotFound
	}
	return obj[0].Value, lease.Meta{ETag: etagOf(obj[0].ModRevision), Liveness: livenessOf(len(live) > 0)}, nil
}

// GetIfChanged implements lease.ConditionalReader with Get, a linearizable
// read (a transaction through the leader, never a serializable read of one
// member), compared here: etcd has no conditional read. A key whose ETag (its
// mod revision) is etag gives lease.ErrNotModified with its Meta (its
// liveness; etcd reports no Date); the body still crossed the wire.
func (s *Store) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	body, m, err := s.Get(ctx, key)
	if err != nil || etag == "" || m.ETag != etag {
		return body, m, err
	}
	return nil, m, fmt.Errorf("etcdstore: get %s: %w (revision %s)", key, lease.ErrNotModified, etag)
}

// Create implements lease.Store: CreateLive with no liveness.
func (s *Store) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return s.CreateLive(ctx, key, body, 0)
}

// Update implements lease.Store: UpdateLive with no liveness.
func (s *Store) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	return s.UpdateLive(ctx, key, body, etag, 0)
}

// CreateLive implements lease.LiveWriter: body is put at key by a transaction
// on create_revision == 0, with its liveness bound to an etcd lease of ttl
// granted just before (none when ttl is zero).
func (s *Store) CreateLive(ctx context.Context, key string, body []byte, ttl time.Duration) (lease.Meta, error) {
	return s.write(ctx, "create", key, body, ttl, clientv3.Compare(clientv3.CreateRevision(s.full(key)), "=", 0))
}

// UpdateLive implements lease.LiveWriter: body replaces key by a transaction on
// mod_revision == etag, with its liveness bound as by CreateLive.
func (s *Store) UpdateLive(ctx context.Context, key string, body []byte, etag string, ttl time.Duration) (lease.Meta, error) {
	rev, err := strconv.ParseInt(etag, 10, 64)
	if err != nil || rev <= 0 {
		if err := checkKey(key); err != nil {
			return lease.Meta{}, err
		}
		return lease.Meta{}, lease.ErrPreconditionFailed // no revision of ours: not the current one
	}
	return s.write(ctx, "update", key, body, ttl, clientv3.Compare(clientv3.ModRevision(s.full(key)), "=", rev))
}

// write puts body at key and binds its liveness to ttl if cond holds, in one
// transaction.
func (s *Store) write(ctx context.Context, op, key string, body []byte, ttl time.Duration, cond clientv3.Cmp) (lease.Meta, error) {
	if err := checkKey(key); err != nil {
		return lease.Meta{}, err
	}
	if err := ctx.Err(); err != nil {
		return lease.Meta{}, err
	}
	i, cli := s.members.pick() // the grant and the transaction go to one member
	livenessOp := clientv3.OpDelete(s.live(key))
	if ttl > 0 {
		// The lease is granted after the caller sent its write: etcd's
		// clock runs its TTL from later than the send.
		gctx, cancel := requestCtx(ctx, s.timeout)
		g, err := cli.Grant(gctx, ttlSeconds(ttl))
		cancel()
		s.members.done(i, err)
		if err != nil {
			return lease.Meta{}, fmt.Errorf("etcdstore: %s %s: grant a lease of %v: %w", op, key, ttl, err)
		}
		livenessOp = clientv3.OpPut(s.live(key), "", clientv3.WithLease(g.ID))
	}
	ctx, cancel := requestCtx(ctx, s.timeout)
	defer cancel()
	resp, err := cli.Txn(ctx).If(cond).Then(clientv3.OpPut(s.full(key), string(body)), livenessOp).Commit()
	s.members.done(i, err)
	switch {
	case err != nil && definite(err):
		return lease.Meta{}, fmt.Errorf("etcdstore: %s %s: %w", op, key, refusal(err))
	case err != nil:
		return lease.Meta{}, &lease.UnknownOutcomeError{Op: op, Key: key, Err: err}
	case !resp.Succeeded:
		return lease.Meta{}, lease.ErrPreconditionFailed
	}
	return lease.Meta{ETag: etagOf(resp.Header.Revision), Liveness: livenessOf(ttl > 0)}, nil
}

// List implements lease.Store: every key under the prefix, read page by page
// at the revision of the first page, with the liveness of each. A page whose
// revision was compacted meanwhile starts the listing again.
func (s *Store) List(ctx context.Context) (lease.Listing, error) {
	for attempt := 1; ; attempt++ {
		l, err := s.list(ctx)
		if errors.Is(err, rpctypes.ErrCompacted) && attempt < 3 {
			continue
		}
		return l, err
	}
}

func (s *Store) list(ctx context.Context) (lease.Listing, error) {
	end := clientv3.GetPrefixRangeEnd(s.prefix)
	from, rev := s.prefix, int64(0)
	var keys []listedKey
	live := map[string]bool{}
	i, cli := s.members.pick() // every page from one member
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(int64(s.pageSize)),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		pctx, cancel := requestCtx(ctx, s.timeout)
		resp, err := cli.Get(pctx, from, opts...)
		cancel()
		s.members.done(i, err)
		if err != nil {
			return lease.Listing{}, fmt.Errorf("etcdstore: list %s: %w", s.prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			k := strings.TrimPrefix(string(kv.Key), s.prefix)
			if obj, ok := strings.CutSuffix(k, LiveSuffix); ok {
				live[obj] = true
				continue
			}
			keys = append(keys, listedKey{k, kv.ModRevision})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	l := lease.Listing{Objects: make([]lease.ObjectInfo, 0, len(keys))}
	for _, k := range keys {
		l.Objects = append(l.Objects, lease.ObjectInfo{Key: k.key, ETag: etagOf(k.rev), Liveness: livenessOf(live[k.key])})
	}
	return l, nil
}

// listedKey is an object key of a listing and its mod_revision.
type listedKey struct {
	key string
	rev int64
}

// ttlSeconds rounds ttl up to whole seconds, as etcd leases count: the
// liveness never runs out before ttl.
func ttlSeconds(ttl time.Duration) int64 {
	return int64((ttl + time.Second - 1) / time.Second)
}

func etagOf(rev int64) string { return strconv.FormatInt(rev, 10) }

func livenessOf(live bool) lease.Liveness {
	if live {
		return lease.LivenessLive
	}
	return lease.LivenessExpired
}

// refusal returns err matching lease.ErrMisconfigured as well when etcd
// refused this client (authentication failed, or its role may not touch the
// key): retrying cannot help, so a start fails at once instead of retrying.
func refusal(err error) error {
	code := grpcCode(err)
	if code == codes.PermissionDenied || code == codes.Unauthenticated ||
		errors.Is(err, rpctypes.ErrAuthFailed) || errors.Is(rpctypes.Error(err), rpctypes.ErrAuthFailed) {
		return fmt.Errorf("%w (%w: check the user, password and role's key range)", err, lease.ErrMisconfigured)
	}
	return err
}

// grpcCode returns the gRPC code of an etcd client error, codes.Unknown when
// it has none.
func grpcCode(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unknown
}

// definite reports whether a transaction error means it was not applied: etcd
// refused it (bad request, auth, a lease that ran out before it, no space).
// Anything else (a timeout, a leader change, a lost connection) may have
// been applied.
func definite(err error) bool {
	switch grpcCode(err) {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied, codes.Unauthenticated,
		codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented, codes.ResourceExhausted:
		return true
	}
	return false
}
