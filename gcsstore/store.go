package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/nodeid/nodeid/internal/httpdate"
	"github.com/nodeid/nodeid/internal/notmodified"
	"github.com/nodeid/nodeid/lease"
)

// MaxObjectSize is the largest body Get accepts. Lease objects are a few hundred
// bytes; anything above this is not one, so Get refuses it with an error that
// wraps [lease.ErrCorrupt].
const MaxObjectSize = 1 << 20

// defaultPageSize is the number of objects List asks for per page: the JSON
// API's maximum.
const defaultPageSize = 1000

// gcsEndpoint names Google Cloud Storage in messages when Config.Endpoint is
// empty.
const gcsEndpoint = "https://storage.googleapis.com"

// Store is a [lease.Store] over the objects under one prefix of a Google Cloud
// Storage bucket. Every write is a conditional upload, sent once: creates
// carry ifGenerationMatch=0, updates ifGenerationMatch with the generation
// the caller's ETag names, and the client's retries are off for both. Reads
// (object downloads, listings) use the client's retries. A Store is safe for
// concurrent use.
type Store struct {
	client   *storage.Client
	bucket   *storage.BucketHandle
	endpoint string // for messages
	name     string // the bucket name
	prefix   string
	timeout  time.Duration
	log      *slog.Logger
	pageSize int
}

var (
	_ lease.Store             = (*Store)(nil)
	_ lease.Scoper            = (*Store)(nil)
	_ lease.Checker           = (*Store)(nil)
	_ lease.Describer         = (*Store)(nil)
	_ lease.WriteSpacer       = (*Store)(nil)
	_ lease.ConditionalReader = (*Store)(nil)
)

// readRetries are the client's retries for reads (downloads, listings): three
// quick attempts, so that a read-back under a storm of 503s fits in one
// renewal attempt (the client's default backs off from one second and retries
// until the context ends). Writes are never retried (noRetries).
var readRetries = []storage.RetryOption{
	storage.WithBackoff(gax.Backoff{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond, Multiplier: 2}),
	storage.WithMaxAttempts(3),
}

// New validates cfg and returns a Store. It sends no request to the bucket,
// but finds the credentials (Application Default Credentials unless
// Config.NoAuth), which off Google Cloud may probe for a metadata server: call
// [Store.Check] at start to find a missing bucket, a refused credential or a
// wrong endpoint before the first lease operation.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	var rt http.RoundTripper = httpdate.Transport{Base: base}
	ctx := context.Background()
	if !cfg.NoAuth {
		authed, err := htransport.NewTransport(ctx, rt, option.WithScopes(storage.ScopeReadWrite))
		if err != nil {
			return nil, lease.Misconfigured(fmt.Errorf("gcsstore: no credentials for bucket %q: %w "+
				"(Application Default Credentials: run on Cloud Run, GKE or Compute Engine with a service account, set GOOGLE_APPLICATION_CREDENTIALS, "+
				"or run gcloud auth application-default login; for an emulator set Endpoint and NoAuth)", cfg.Bucket, err))
		}
		rt = authed
	}
	opts := []option.ClientOption{option.WithHTTPClient(&http.Client{Transport: rt}), storage.WithJSONReads()}
	endpoint := gcsEndpoint
	if cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.Endpoint))
		endpoint = strings.TrimSuffix(cfg.Endpoint, "/")
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("gcsstore: client for %s: %w", endpoint, err)
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		client:   client,
		bucket:   client.Bucket(cfg.Bucket).Retryer(readRetries...),
		endpoint: endpoint,
		name:     cfg.Bucket,
		prefix:   cfg.Prefix,
		timeout:  timeout,
		log:      logger.With("component", "gcsstore", "bucket", cfg.Bucket, "prefix", cfg.Prefix),
		pageSize: defaultPageSize,
	}
	if s.prefix != "" && !strings.HasSuffix(s.prefix, "/") {
		s.log.Warn("the prefix does not end with \"/\": the keys are the prefix and the name run together", "manifest", s.prefix+lease.ManifestKey)
	}
	return s, nil
}

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.name }

// Prefix returns the key prefix.
func (s *Store) Prefix() string { return s.prefix }

// Client returns the Cloud Storage client the store uses.
func (s *Store) Client() *storage.Client { return s.client }

// Scope implements [lease.Scoper]: a Store over the keys under Prefix()+sub,
// sharing this one's client, so that its List asks for those keys alone.
func (s *Store) Scope(sub string) lease.Store {
	c := *s
	c.prefix = s.prefix + sub
	c.log = s.log.With("scope", sub)
	return &c
}

// Describe implements [lease.Describer]: the bucket, prefix and endpoint, for
// messages.
func (s *Store) Describe() string {
	return fmt.Sprintf("Cloud Storage bucket %s (prefix %q) at %s", s.name, s.prefix, s.endpoint)
}

// MinWriteInterval implements [lease.WriteSpacer]: [MinWriteInterval], the
// one write per second per object that Cloud Storage sustains.
func (s *Store) MinWriteInterval() time.Duration { return MinWriteInterval }

// Check implements [lease.Checker]: a one-object listing of the prefix (the
// permission List needs), turning a misconfiguration into an error that names
// the endpoint and bucket and says what to fix (a bucket that does not exist,
// a refused credential, an endpoint that refuses connections or does not
// speak the Cloud Storage JSON API); such errors match lease.ErrMisconfigured.
// It is bounded by Config.RequestTimeout. It cannot check write permission
// without writing; a refused write reports it the same way.
func (s *Store) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, x := httpdate.WithExchange(ctx)
	var objs []*storage.ObjectAttrs
	_, err := iterator.NewPager(s.bucket.Objects(ctx, s.query()), 1, "").NextPage(&objs)
	if err != nil {
		return s.readError(opCheck, "", err, x)
	}
	return nil
}

func (s *Store) query() *storage.Query {
	q := &storage.Query{Prefix: s.prefix}
	_ = q.SetAttrSelection([]string{"Name", "Generation", "Updated", "Size"}) // only fails on unknown names
	return q
}

// List implements [lease.Store]: objects.list over the prefix, page by page to
// the end (following nextPageToken), each page bounded by the request
// timeout. Keys are made relative to the prefix and sorted. Listing.Date is
// the earliest Date of the responses.
func (s *Store) List(ctx context.Context) (lease.Listing, error) {
	var l lease.Listing
	ctx, x := httpdate.WithExchange(ctx)
	token := ""
	for {
		pctx, cancel := context.WithTimeout(ctx, s.timeout)
		var objs []*storage.ObjectAttrs
		next, err := iterator.NewPager(s.bucket.Objects(pctx, s.query()), s.pageSize, token).NextPage(&objs)
		cancel()
		if err != nil {
			return lease.Listing{}, s.readError(opList, "", err, x)
		}
		for _, o := range objs {
			if o == nil || o.Name == "" {
				continue
			}
			rel, ok := strings.CutPrefix(o.Name, s.prefix)
			if !ok {
				continue // a server that ignores the prefix
			}
			l.Objects = append(l.Objects, lease.ObjectInfo{
				Key:          rel,
				ETag:         etagOf(o.Generation),
				LastModified: o.Updated.UTC(),
				Size:         o.Size,
			})
		}
		if next == "" {
			break
		}
		if next == token {
			return lease.Listing{}, fmt.Errorf("gcsstore: list %s: the server repeated page token %q", s.where(), next)
		}
		token = next
	}
	l.Date, _ = x.Dates()
	if err := l.SortByKey(); err != nil {
		return lease.Listing{}, fmt.Errorf("gcsstore: list %s: %w", s.where(), err)
	}
	return l, nil
}

// Get implements [lease.Store] with one object download (the JSON API's
// alt=media). A body larger than [MaxObjectSize] gives an error wrapping
// [lease.ErrCorrupt].
func (s *Store) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	return s.get(ctx, key, "")
}

// GetIfChanged implements [lease.ConditionalReader] with an object download
// carrying ifGenerationNotMatch set to the generation etag names (the JSON
// API's query parameter; the XML API has no such condition, and the store
// reads over the JSON API).
//
// Documented by Cloud Storage (Request preconditions): on a download,
// ifGenerationNotMatch makes the request fail with 304 Not Modified when the
// object's generation equals the value. Not documented: which headers that
// 304 carries. The generation the server compared would be in
// x-goog-generation, which Cloud Storage sends on a download's 200 (the
// client reads the generation from it) but documents for the XML API only;
// its ETag header is Cloud Storage's own etag, not the generation, and shows
// nothing here. So a 304 gives lease.ErrNotModified only when its
// x-goog-generation header is the generation asked for; without the header,
// or with another generation, it gives lease.ErrNotModifiedUnproven, which a
// holder never credits. The store assumes neither that Cloud Storage's 304
// carries x-goog-generation nor that it does not: lease.ProbeReads, which
// package node runs before keep-alive by reads, refuses the store if it does
// not.
//
// fake-gcs-server v1.56.1 ignores ifGenerationNotMatch on a download: it
// answers 200 with the body and x-goog-generation, which the contract
// allows (Meta.ETag is then etag, as it proves as much as a 304).
//
// An etag that is not one this store returns (a quoted positive decimal
// without leading zeros, see Update) names no generation and matches no
// object: the read is a plain Get, as is one with an empty etag. Retries are
// the client's, as for Get, with the condition on every attempt; an answer is
// credited to the first send by the caller, which only brings a fence nearer.
func (s *Store) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	return s.get(ctx, key, etag)
}

// get is a download of key, with ifGenerationNotMatch set to the generation
// etag names when it names one.
func (s *Store) get(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	if err := checkKey(opGet, key); err != nil {
		return nil, lease.Meta{}, err
	}
	gen, ok := parseETag(etag)
	if !ok || etagOf(gen) != etag {
		gen = 0 // not a generation this store returned: a plain read
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, x := httpdate.WithExchange(ctx)
	o := s.bucket.Object(s.prefix + key)
	if gen > 0 {
		o = o.If(storage.Conditions{GenerationNotMatch: gen})
	}
	r, err := o.NewReader(ctx)
	if err != nil {
		if rs := inspect(err); gen > 0 && rs.status == http.StatusNotModified {
			m, err := notModified(key, gen, rs.header, x)
			return nil, m, err
		}
		return nil, lease.Meta{}, s.readError(opGet, key, err, x)
	}
	defer r.Close()
	if r.Attrs.Generation <= 0 {
		return nil, lease.Meta{}, lease.Misconfigured(fmt.Errorf("gcsstore: get %s: %s sent no object generation (x-goog-generation): is it a Cloud Storage endpoint?", key, s.endpoint))
	}
	_, date := x.Dates()
	meta := lease.Meta{
		ETag:         etagOf(r.Attrs.Generation),
		LastModified: r.Attrs.LastModified.UTC(),
		Date:         date,
	}
	body, err := lease.ReadVersionBody(r, r.Attrs.Size, MaxObjectSize, meta, badCRC)
	if err != nil {
		return nil, lease.Meta{}, fmt.Errorf("gcsstore: get %s: %w", key, err)
	}
	return body, meta, nil
}

// notModified reads a 304 answer to a download with ifGenerationNotMatch=gen
// from its headers (notmodified.Read with the generation proof):
// lease.ErrNotModified, with the generation's ETag, the answer's Date (the
// exchange's when the answer has none) and its Last-Modified when it has
// one, when its x-goog-generation header is gen; else
// lease.ErrNotModifiedUnproven.
func notModified(key string, gen int64, h http.Header, x *httpdate.Exchange) (lease.Meta, error) {
	m, err := notmodified.Read("gcsstore", key, etagOf(gen), h, generation)
	if errors.Is(err, lease.ErrNotModified) && m.Date.IsZero() {
		_, m.Date = x.Dates()
	}
	return m, err
}

// generation is how Cloud Storage's 304 answers show the version they
// compared: the x-goog-generation header, a decimal, naming the ETag
// etagOf gives it ("" when it is not a positive decimal).
var generation = notmodified.Proof{
	Header: "x-goog-generation",
	Shown: func(h http.Header) (string, string) {
		text := strings.TrimSpace(h.Get("X-Goog-Generation"))
		g, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return text, ""
		}
		return text, etagOf(g)
	},
	Unproven: func(key, etag, text string) error {
		gen, _ := parseETag(etag) // notModified asks with etagOf(gen), gen > 0
		return notModifiedUnproven(key, gen, text)
	},
}

// notModifiedUnproven is lease.NotModifiedUnproven in Cloud Storage's
// terms: the generation the 304 showed in x-goog-generation (got, "" when
// it had none) is not the one asked for.
func notModifiedUnproven(key string, gen int64, got string) error {
	if got == "" {
		return fmt.Errorf("%w: %s: the store answered 304 to ifGenerationNotMatch=%d without an x-goog-generation header, so it does not show what it compared",
			lease.ErrNotModifiedUnproven, key, gen)
	}
	return fmt.Errorf("%w: %s: the store answered 304 to ifGenerationNotMatch=%d with x-goog-generation %q",
		lease.ErrNotModifiedUnproven, key, gen, got)
}

// Create implements [lease.Store] with an upload carrying ifGenerationMatch=0
// (the object must not exist).
func (s *Store) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return s.put(ctx, opCreate, key, body, storage.Conditions{DoesNotExist: true}, "")
}

// Update implements [lease.Store] with an upload carrying ifGenerationMatch
// set to the generation etag names. An etag that is not one this store
// returned (a quoted positive decimal) matches no generation: it gives
// ErrPreconditionFailed without a request.
func (s *Store) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	gen, ok := parseETag(etag)
	if !ok {
		return lease.Meta{}, fmt.Errorf("gcsstore: update %s: ETag %q is not a generation this store returned: %w", key, etag, lease.ErrPreconditionFailed)
	}
	return s.put(ctx, opUpdate, key, body, storage.Conditions{GenerationMatch: gen}, etag)
}

// noRetries turns the client's retries off for one write: a conditional
// upload whose first attempt landed but whose answer was lost would come
// back 412 on the retry and look like a lost race.
var noRetries = storage.WithPolicy(storage.RetryNever)

func (s *Store) put(ctx context.Context, op, key string, body []byte, cond storage.Conditions, etag string) (lease.Meta, error) {
	if err := checkKey(op, key); err != nil {
		return lease.Meta{}, err
	}
	if err := ctx.Err(); err != nil {
		return lease.Meta{}, fmt.Errorf("gcsstore: %s %s: not sent: %w", op, key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, x := httpdate.WithExchange(ctx)
	w := s.bucket.Object(s.prefix + key).If(cond).Retryer(noRetries).NewWriter(ctx)
	// One multipart upload request, without the buffer that resumable
	// uploads (and retries) need.
	w.ChunkSize = 0
	w.ContentType = "application/json"
	_, err := w.Write(body)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		err = s.writeError(op, key, err, x)
		switch {
		case errors.Is(err, lease.ErrPreconditionFailed):
			s.log.Debug("conditional write refused", "op", op, "key", key, "ifMatch", etag)
		case errors.Is(err, lease.ErrUnknownOutcome):
			s.log.Warn("write outcome unknown: read the object back", "op", op, "key", key, "err", err)
		default:
			s.log.Warn("write failed", "op", op, "key", key, "err", err)
		}
		return lease.Meta{}, err
	}
	a := w.Attrs()
	if a == nil || a.Generation <= 0 {
		return lease.Meta{}, &lease.UnknownOutcomeError{Op: op, Key: key, Err: errors.New("the server accepted the write but sent no object generation")}
	}
	_, date := x.Dates()
	m := lease.Meta{ETag: etagOf(a.Generation), LastModified: a.Updated.UTC(), Date: date}
	s.log.Debug("written", "op", op, "key", key, "etag", m.ETag)
	return m, nil
}

func checkKey(op, key string) error {
	if key == "" {
		return fmt.Errorf("gcsstore: %s: empty key", op)
	}
	return nil
}

// etagOf returns the ETag of an object generation: the decimal generation in
// quotes, `"1701234567890123"`. Cloud Storage's own etag changes with
// metadata too; the generation changes exactly when the body is written, and
// it is what the write conditions compare.
func etagOf(gen int64) string {
	if gen <= 0 {
		return ""
	}
	return `"` + strconv.FormatInt(gen, 10) + `"`
}

// parseETag returns the generation an ETag of etagOf names.
func parseETag(etag string) (int64, bool) {
	s, ok := strings.CutPrefix(etag, `"`)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, `"`)
	if !ok || s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	gen, err := strconv.ParseInt(s, 10, 64)
	return gen, err == nil && gen > 0
}

func (s *Store) where() string {
	return fmt.Sprintf("%s/b/%s/o/%s", s.endpoint, s.name, s.prefix)
}

// badCRC reports whether a body's read failed the client's CRC32C check (its
// error has no type of its own).
func badCRC(err error) bool { return strings.Contains(err.Error(), "bad CRC on read") }
