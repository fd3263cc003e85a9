package azblobstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/nodeid/nodeid/internal/notmodified"
	"github.com/nodeid/nodeid/lease"
)

// MaxObjectSize is the largest body Get accepts. Lease objects are a few hundred
// bytes; anything above this is not one, so Get refuses it with an error that
// wraps [lease.ErrCorrupt].
const MaxObjectSize = 1 << 20

// Store is a [lease.Store] over the blobs under one prefix of an Azure Blob
// Storage container. Every write is a conditional Put Blob, sent once: creates
// carry If-None-Match: *, updates If-Match with the caller's ETag, and the
// SDK's retries are off for both. Reads (Get Blob, List Blobs) use the
// client's retries. A Store is safe for concurrent use.
type Store struct {
	client   *container.Client
	endpoint string // the account URL, for messages
	name     string // the container name
	prefix   string
	timeout  time.Duration
	log      *slog.Logger
	pageSize int32 // List's MaxResults; 0 leaves it to the server (5000 on Azure)
}

var (
	_ lease.Store     = (*Store)(nil)
	_ lease.Scoper    = (*Store)(nil)
	_ lease.Checker   = (*Store)(nil)
	_ lease.Describer = (*Store)(nil)

	_ lease.ConditionalReader = (*Store)(nil)
)

// readRetries are the SDK's retries for reads: a few quick attempts, so that
// a read-back under a storm of 503s fits in one renewal attempt.
var readRetries = policy.RetryOptions{
	MaxRetries:    2,
	RetryDelay:    20 * time.Millisecond,
	MaxRetryDelay: 50 * time.Millisecond,
}

// New validates cfg and returns a Store. It sends no request: call
// [Store.Check] at start to find a missing container, a refused credential or
// a wrong endpoint before the first lease operation.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	containerURL := strings.TrimSuffix(cfg.AccountURL, "/") + "/" + cfg.Container
	opts := &container.ClientOptions{}
	opts.Retry = readRetries
	if cfg.Transport != nil {
		opts.Transport = cfg.Transport
	}
	var (
		client *container.Client
		err    error
	)
	switch {
	case cfg.AccountKey != "":
		cred, cerr := container.NewSharedKeyCredential(cfg.AccountName, cfg.AccountKey)
		if cerr != nil {
			return nil, fmt.Errorf("azblobstore: shared key credential: %w", cerr)
		}
		client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
	case cfg.SAS != "":
		client, err = container.NewClientWithNoCredential(containerURL+"?"+strings.TrimPrefix(cfg.SAS, "?"), opts)
	default:
		client, err = container.NewClient(containerURL, cfg.Credential, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("azblobstore: client for %s: %w", containerURL, err)
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	logger := cfg.Logger
	if logger == nil {
		logger = discard
	}
	s := &Store{
		client:   client,
		endpoint: strings.TrimSuffix(cfg.AccountURL, "/"),
		name:     cfg.Container,
		prefix:   cfg.Prefix,
		timeout:  timeout,
		log:      logger.With("component", "azblobstore", "container", cfg.Container, "prefix", cfg.Prefix),
	}
	if s.prefix != "" && !strings.HasSuffix(s.prefix, "/") {
		s.log.Warn("the prefix does not end with \"/\": the keys are the prefix and the name run together", "manifest", s.prefix+lease.ManifestKey)
	}
	return s, nil
}

// Container returns the container name.
func (s *Store) Container() string { return s.name }

// Prefix returns the key prefix.
func (s *Store) Prefix() string { return s.prefix }

// Client returns the container client the store uses.
func (s *Store) Client() *container.Client { return s.client }

// Scope implements [lease.Scoper]: a Store over the keys under Prefix()+sub,
// sharing this one's client, so that its List asks for those keys alone.
func (s *Store) Scope(sub string) lease.Store {
	c := *s
	c.prefix = s.prefix + sub
	c.log = s.log.With("scope", sub)
	return &c
}

// Describe implements [lease.Describer]: the container, prefix and account
// URL, for messages.
func (s *Store) Describe() string {
	return fmt.Sprintf("Azure Blob container %s (prefix %q) at %s", s.name, s.prefix, s.endpoint)
}

// Check implements [lease.Checker]: a one-blob listing of the prefix (the
// permission List needs), turning a misconfiguration into an error that
// names the account URL and container and says what to fix (a container that
// does not exist, a refused credential, an endpoint that refuses connections
// or does not speak Azure Blob); such errors match lease.ErrMisconfigured. It
// is bounded by Config.RequestTimeout. It cannot check write permission
// without writing; a refused write reports it the same way.
func (s *Store) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	p := s.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &s.prefix, MaxResults: ptr(int32(1))})
	page, err := p.NextPage(ctx)
	if err != nil {
		return s.readError(opCheck, "", err)
	}
	if name := deref(page.ContainerName); name != s.name {
		return lease.Misconfigured(fmt.Errorf("azblobstore: check: %s answered a listing of container %q with one of %q: is it an Azure Blob endpoint?", s.endpoint, s.name, name))
	}
	return nil
}

// List implements [lease.Store]: List Blobs over the prefix, page by page to
// the end (following NextMarker), each page bounded by the request timeout.
// Keys are made relative to the prefix and sorted. Listing.Date is the
// earliest Date of the pages.
func (s *Store) List(ctx context.Context) (lease.Listing, error) {
	var l lease.Listing
	opts := &container.ListBlobsFlatOptions{Prefix: &s.prefix}
	if s.pageSize > 0 {
		opts.MaxResults = &s.pageSize
	}
	p := s.client.NewListBlobsFlatPager(opts)
	var prevMarker string
	for p.More() {
		pctx, cancel := context.WithTimeout(ctx, s.timeout)
		page, err := p.NextPage(pctx)
		cancel()
		if err != nil {
			return lease.Listing{}, s.readError(opList, "", err)
		}
		if d := deref(page.Date).UTC(); !d.IsZero() && (l.Date.IsZero() || d.Before(l.Date)) {
			l.Date = d
		}
		if page.Segment != nil {
			for _, b := range page.Segment.BlobItems {
				if b == nil || b.Name == nil || b.Properties == nil {
					continue
				}
				rel, ok := strings.CutPrefix(*b.Name, s.prefix)
				if !ok {
					continue // a server that ignores the prefix
				}
				l.Objects = append(l.Objects, lease.ObjectInfo{
					Key:          rel,
					ETag:         etagString(b.Properties.ETag),
					LastModified: deref(b.Properties.LastModified).UTC(),
					Size:         deref(b.Properties.ContentLength),
				})
			}
		}
		if m := deref(page.NextMarker); m != "" {
			if m == prevMarker {
				return lease.Listing{}, fmt.Errorf("azblobstore: list %s: the server repeated continuation marker %q", s.where(), m)
			}
			prevMarker = m
		}
	}
	if err := l.SortByKey(); err != nil {
		return lease.Listing{}, fmt.Errorf("azblobstore: list %s: %w", s.where(), err)
	}
	return l, nil
}

// Get implements [lease.Store] with Get Blob. A body larger than
// [MaxObjectSize] gives an error wrapping [lease.ErrCorrupt].
func (s *Store) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	return s.get(ctx, key, "")
}

// GetIfChanged implements [lease.ConditionalReader] with Get Blob and
// If-None-Match: etag. The SDK returns the 304 answer as a success without
// a body; its status, ETag and Date are read from the raw HTTP response, and
// it gives
// lease.ErrNotModified only when its ETag header is etag (a 304 without
// one, or with another, gives lease.ErrNotModifiedUnproven).
func (s *Store) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	return s.get(ctx, key, etag)
}

// get is a Get Blob of key, with If-None-Match: etag when etag is set.
func (s *Store) get(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	if err := checkKey(opGet, key); err != nil {
		return nil, lease.Meta{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var opts *blob.DownloadStreamOptions
	if etag != "" {
		opts = &blob.DownloadStreamOptions{AccessConditions: &blob.AccessConditions{
			ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: ptr(azcore.ETag(etag))},
		}}
	}
	var raw *http.Response
	out, err := s.client.NewBlobClient(s.prefix+key).DownloadStream(policy.WithCaptureResponse(ctx, &raw), opts)
	if err != nil {
		if r := inspect(err); etag != "" && r.status == http.StatusNotModified {
			m, err := notmodified.Read("azblobstore", key, etag, r.header, notmodified.ETag)
			return nil, m, err
		}
		return nil, lease.Meta{}, s.readError(opGet, key, err)
	}
	defer out.Body.Close()
	if raw != nil && raw.StatusCode == http.StatusNotModified {
		// The SDK takes a 304 for a success: only the status tells.
		m, err := notmodified.Read("azblobstore", key, etag, raw.Header, notmodified.ETag)
		return nil, m, err
	}
	meta := lease.Meta{
		ETag:         etagString(out.ETag),
		LastModified: deref(out.LastModified).UTC(),
		Date:         deref(out.Date).UTC(),
	}
	body, err := lease.ReadVersionBody(out.Body, deref(out.ContentLength), MaxObjectSize, meta, nil)
	if err != nil {
		return nil, lease.Meta{}, fmt.Errorf("azblobstore: get %s: %w", key, err)
	}
	return body, meta, nil
}

// Create implements [lease.Store] with Put Blob and If-None-Match: *.
func (s *Store) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return s.put(ctx, opCreate, key, body, "")
}

// Update implements [lease.Store] with Put Blob and If-Match: etag. An empty
// etag matches nothing: it gives ErrPreconditionFailed without a request (an
// empty If-Match would make the write unconditional).
func (s *Store) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	if etag == "" {
		return lease.Meta{}, fmt.Errorf("azblobstore: update %s: empty ETag: %w", key, lease.ErrPreconditionFailed)
	}
	return s.put(ctx, opUpdate, key, body, etag)
}

// noRetries turns the SDK's retries off for one write: a conditional Put Blob
// whose first attempt landed but whose answer was lost would come back 412
// (or 409) on the retry and look like a lost race.
var noRetries = policy.RetryOptions{MaxRetries: -1}

func (s *Store) put(ctx context.Context, op, key string, body []byte, etag string) (lease.Meta, error) {
	if err := checkKey(op, key); err != nil {
		return lease.Meta{}, err
	}
	if err := ctx.Err(); err != nil {
		return lease.Meta{}, fmt.Errorf("azblobstore: %s %s: not sent: %w", op, key, err)
	}
	cond := &blob.ModifiedAccessConditions{}
	if op == opCreate {
		cond.IfNoneMatch = ptr(azcore.ETagAny)
	} else {
		cond.IfMatch = ptr(azcore.ETag(etag))
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx = policy.WithRetryOptions(ctx, noRetries)
	out, err := s.client.NewBlockBlobClient(s.prefix+key).Upload(ctx, streaming.NopCloser(bytes.NewReader(body)),
		&blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond}})
	if err != nil {
		err = s.writeError(op, key, err)
		switch {
		case errors.Is(err, lease.ErrPreconditionFailed):
			s.log.Debug("conditional write refused", "op", op, "key", key, "ifMatch", etag)
		case errors.Is(err, lease.ErrUnknownOutcome):
			s.log.Warn("write outcome unknown: read the blob back", "op", op, "key", key, "err", err)
		default:
			s.log.Warn("write failed", "op", op, "key", key, "err", err)
		}
		return lease.Meta{}, err
	}
	m := lease.Meta{
		ETag:         etagString(out.ETag),
		LastModified: deref(out.LastModified).UTC(),
		Date:         deref(out.Date).UTC(),
	}
	if m.ETag == "" {
		return lease.Meta{}, &lease.UnknownOutcomeError{Op: op, Key: key, Err: errors.New("the server accepted the write but sent no ETag")}
	}
	s.log.Debug("written", "op", op, "key", key, "etag", m.ETag)
	return m, nil
}

func checkKey(op, key string) error {
	if key == "" {
		return fmt.Errorf("azblobstore: %s: empty key", op)
	}
	return nil
}

// etagString returns an ETag in its quoted form (Azure quotes ETags in
// headers but not in listings).
func etagString(e *azcore.ETag) string { return lease.QuoteETag(string(deref(e))) }

func (s *Store) where() string {
	return fmt.Sprintf("%s/%s/%s", s.endpoint, s.name, s.prefix)
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

var discard = slog.New(slog.DiscardHandler)
