package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/nodeid/nodeid/internal/notmodified"
	"github.com/nodeid/nodeid/lease"
)

// MaxObjectSize is the largest body Get accepts. Lease objects are a few hundred
// bytes; anything above this is not one, and reading it whole could exhaust
// memory, so Get refuses it with an error that wraps [lease.ErrCorrupt].
const MaxObjectSize = 1 << 20

// Store is a [lease.Store] over one prefix of an S3 bucket. Every write is a
// conditional PutObject, sent once: creates carry If-None-Match: *, updates
// If-Match with the caller's ETag, and the SDK's retries are off for both. Reads
// (GetObject, ListObjectsV2) use the client's retries. A Store is safe for
// concurrent use.
type Store struct {
	client   *s3.Client
	bucket   string
	prefix   string
	timeout  time.Duration
	log      *slog.Logger
	endpoint string // for error messages
	region   string // for error messages
}

var (
	_ lease.Store     = (*Store)(nil)
	_ lease.Scoper    = (*Store)(nil)
	_ lease.Checker   = (*Store)(nil)
	_ lease.Describer = (*Store)(nil)

	_ lease.ConditionalReader = (*Store)(nil)
)

// awsEndpoint is how messages name the endpoint of a client that has no
// BaseEndpoint: AWS S3 itself.
const awsEndpoint = "AWS S3"

// Option configures a Store made by [NewFromClient].
type Option func(*Store)

// WithRequestTimeout sets the bound on each call to S3 (see
// Config.RequestTimeout). Zero or negative keeps DefaultRequestTimeout.
func WithRequestTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.timeout = d
		}
	}
}

// WithLogger sets the logger (see Config.Logger). Nil discards.
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) {
		if l != nil {
			s.log = l
		}
	}
}

// ErrNoRegion is New's error when neither the configuration nor the AWS
// environment names a region (and no Endpoint is set): a bad configuration,
// found before any request.
var ErrNoRegion = errors.New("s3store: no AWS region: set Config.Region (--region) or the AWS_REGION environment variable")

// New validates cfg, loads the AWS configuration (the default credential chain
// unless cfg has static credentials) and returns a Store. It sends no request:
// call [Store.Check] at start to find a missing bucket, missing permissions or a
// wrong endpoint before the first lease operation.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = discard
	}
	awsCfg, err := loadAWSConfig(ctx, cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("s3store: load the AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		if cfg.Endpoint == "" {
			return nil, ErrNoRegion
		}
		awsCfg.Region = "us-east-1"
	}
	// The SDK's checksum defaults stay on: every PUT carries a CRC32 of the
	// body and every GET is checked against the stored one, which catches a
	// flipped digit in a version or reservation that JSON decoding would not.
	// gofakes3, MinIO and versitygw all accept them. A GET from a server that
	// stores no checksum (gofakes3) is simply not checked; do not log that on
	// every read.
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.DisableLogOutputChecksumValidationSkipped = true
		o.UsePathStyle = cfg.UsePathStyle
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return NewFromClient(client, cfg.Bucket, cfg.Prefix, WithRequestTimeout(cfg.RequestTimeout), WithLogger(logger))
}

// NewFromClient returns a Store over bucket and prefix that sends its requests
// through client, for callers that build their own client. The client's retry
// settings apply to reads only; writes are always sent once. An S3-compatible
// server that rejects the SDK's default checksums needs a client with
// RequestChecksumCalculation and ResponseChecksumValidation set to WhenRequired.
func NewFromClient(client *s3.Client, bucket, prefix string, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("s3store: nil S3 client")
	}
	if err := (Config{Bucket: bucket, Prefix: prefix}).Validate(); err != nil {
		return nil, err
	}
	o := client.Options()
	s := &Store{
		client:   client,
		bucket:   bucket,
		prefix:   prefix,
		timeout:  DefaultRequestTimeout,
		log:      discard,
		endpoint: aws.ToString(o.BaseEndpoint),
		region:   o.Region,
	}
	if s.endpoint == "" {
		s.endpoint = awsEndpoint
	}
	for _, opt := range opts {
		opt(s)
	}
	s.log = s.log.With("component", "s3store", "bucket", bucket, "prefix", prefix)
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		s.log.Warn("the prefix does not end with \"/\": the keys are the prefix and the name run together", "manifest", prefix+lease.ManifestKey)
	}
	return s, nil
}

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Scope implements [lease.Scoper]: a Store over the keys under Prefix()+sub,
// sharing this one's client, so that its List asks S3 for those keys alone.
func (s *Store) Scope(sub string) lease.Store {
	c := *s
	c.prefix = s.prefix + sub
	c.log = s.log.With("scope", sub)
	return &c
}

// Prefix returns the key prefix.
func (s *Store) Prefix() string { return s.prefix }

// Describe implements [lease.Describer]: the bucket and prefix, and the
// endpoint ("AWS S3", with the region, when Config.Endpoint is empty), for
// messages.
func (s *Store) Describe() string {
	if s.endpoint == awsEndpoint {
		return fmt.Sprintf("AWS S3 bucket %s (prefix %q, region %s)", s.bucket, s.prefix, s.region)
	}
	return fmt.Sprintf("S3 bucket %s (prefix %q) at %s", s.bucket, s.prefix, s.endpoint)
}

// Client returns the S3 client the store uses.
func (s *Store) Client() *s3.Client { return s.client }

// Check probes the bucket with a one-key listing of the prefix (the
// s3:ListBucket permission that List needs) and turns a misconfiguration into an
// error that says what to fix: a bucket that does not exist, access denied,
// unknown credentials, a wrong region, an endpoint that refuses connections or
// does not speak S3; such errors match lease.ErrMisconfigured. Call it once at
// start. It cannot check write permission
// without writing; a refused write reports its missing permission the same way.
// It also logs a warning for bucket settings that cost without breaking: a
// versioned bucket whose noncurrent versions no lifecycle rule expires, Object
// Lock (see deploy/README.md, "The lease bucket"). The listing is bounded by
// Config.RequestTimeout (5 s by default): an endpoint that accepts
// connections and never answers fails it then, with an error that names the
// endpoint and the bucket (wrapping context.DeadlineExceeded, not
// lease.ErrMisconfigured). node.Start runs it first ([lease.Checker]).
func (s *Store) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.bucket),
		Prefix:  aws.String(s.prefix),
		MaxKeys: aws.Int32(1),
	})
	if err != nil {
		return s.readError(opCheck, "", err)
	}
	// Any HTTP server answers 200 to a GET; an S3 listing names its bucket.
	if name := aws.ToString(out.Name); name != s.bucket {
		return lease.Misconfigured(fmt.Errorf("s3store: check: %s answered a listing of bucket %q with one of %q: is it an S3 endpoint?", s.endpoint, s.bucket, name))
	}
	s.warnBucketSettings(ctx)
	return nil
}

// List implements [lease.Store]: ListObjectsV2 over the prefix, page by page to
// the end, each page bounded by the request timeout. Keys are made relative to
// the prefix and sorted. Listing.Date is the earliest Date of the pages.
// LastModified is as the server listed it: milliseconds on some servers, whole
// seconds on others.
func (s *Store) List(ctx context.Context) (lease.Listing, error) {
	var l lease.Listing
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix),
	})
	var prevToken string
	for p.HasMorePages() {
		pctx, cancel := context.WithTimeout(ctx, s.timeout)
		page, err := p.NextPage(pctx)
		cancel()
		if err != nil {
			return lease.Listing{}, s.readError(opList, "", err)
		}
		if d := serverDate(page.ResultMetadata); !d.IsZero() && (l.Date.IsZero() || d.Before(l.Date)) {
			l.Date = d
		}
		for _, o := range page.Contents {
			rel, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok {
				continue // a server that ignores Prefix; never seen, but never trust it
			}
			l.Objects = append(l.Objects, lease.ObjectInfo{
				Key:          rel,
				ETag:         lease.QuoteETag(aws.ToString(o.ETag)),
				LastModified: aws.ToTime(o.LastModified).UTC(),
				Size:         aws.ToInt64(o.Size),
			})
		}
		if aws.ToBool(page.IsTruncated) {
			tok := aws.ToString(page.NextContinuationToken)
			switch {
			case tok == "":
				return lease.Listing{}, fmt.Errorf("s3store: list %s: the server said the listing is truncated but gave no continuation token", s.where())
			case tok == prevToken:
				return lease.Listing{}, fmt.Errorf("s3store: list %s: the server repeated continuation token %q", s.where(), tok)
			}
			prevToken = tok
		}
	}
	if err := l.SortByKey(); err != nil {
		return lease.Listing{}, fmt.Errorf("s3store: list %s: %w", s.where(), err)
	}
	return l, nil
}

// Get implements [lease.Store]. A body larger than [MaxObjectSize] gives an
// error wrapping [lease.ErrCorrupt].
func (s *Store) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	return s.get(ctx, key, "")
}

// GetIfChanged implements [lease.ConditionalReader] with GetObject and
// If-None-Match: etag. The SDK returns the 304 answer as an error; its ETag
// and Date are read from the raw HTTP response, and it gives
// lease.ErrNotModified only when its ETag header is etag (a 304 without
// one, or with another, gives lease.ErrNotModifiedUnproven). Retries are the
// client's, as for Get: an answer is credited to the first send by the
// caller, which only brings a fence nearer.
func (s *Store) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	return s.get(ctx, key, etag)
}

// get is a GetObject of key, with If-None-Match: etag when etag is set.
func (s *Store) get(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	if err := checkKey(opGet, key); err != nil {
		return nil, lease.Meta{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	in := &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
	}
	if etag != "" {
		in.IfNoneMatch = aws.String(etag)
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if r := inspect(err); etag != "" && r.status == http.StatusNotModified {
			m, err := notmodified.Read("s3store", key, etag, r.header, notmodified.ETag)
			return nil, m, err
		}
		return nil, lease.Meta{}, s.readError(opGet, key, err)
	}
	defer out.Body.Close()
	body, err := lease.ReadBody(out.Body, aws.ToInt64(out.ContentLength), MaxObjectSize)
	if err != nil {
		return nil, lease.Meta{}, fmt.Errorf("s3store: get %s: %w", key, err)
	}
	return body, lease.Meta{
		ETag:         lease.QuoteETag(aws.ToString(out.ETag)),
		LastModified: aws.ToTime(out.LastModified).UTC(),
		Date:         serverDate(out.ResultMetadata),
	}, nil
}

// Create implements [lease.Store] with PutObject and If-None-Match: *.
func (s *Store) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	return s.put(ctx, opCreate, key, body, "")
}

// Update implements [lease.Store] with PutObject and If-Match: etag. An empty
// etag matches nothing: it gives ErrPreconditionFailed without a request (an
// If-Match header without a value would be dropped, making the PUT
// unconditional).
func (s *Store) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	if etag == "" {
		return lease.Meta{}, fmt.Errorf("s3store: update %s: empty ETag: %w", key, lease.ErrPreconditionFailed)
	}
	return s.put(ctx, opUpdate, key, body, etag)
}

// sendOnce turns the SDK's retries off for one operation: a conditional PUT
// whose first attempt landed but whose answer was lost would come back 412 on
// the retry and look like a lost race.
func sendOnce(o *s3.Options) { o.Retryer = aws.NopRetryer{} }

func (s *Store) put(ctx context.Context, op, key string, body []byte, etag string) (lease.Meta, error) {
	if err := checkKey(op, key); err != nil {
		return lease.Meta{}, err
	}
	if err := ctx.Err(); err != nil {
		return lease.Meta{}, fmt.Errorf("s3store: %s %s: not sent: %w", op, key, err)
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.prefix + key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	}
	if op == opCreate {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(etag)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.PutObject(ctx, in, sendOnce)
	if err != nil {
		err = s.writeError(op, key, err)
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
	m := lease.Meta{ETag: lease.QuoteETag(aws.ToString(out.ETag)), Date: serverDate(out.ResultMetadata)}
	if m.ETag == "" {
		// The write was applied but we cannot name its version: the caller
		// reads it back, as for any ambiguous write.
		return lease.Meta{}, &lease.UnknownOutcomeError{Op: op, Key: key, Err: errors.New("the server accepted the write but sent no ETag")}
	}
	s.log.Debug("written", "op", op, "key", key, "etag", m.ETag)
	return m, nil
}

func checkKey(op, key string) error {
	if key == "" {
		return fmt.Errorf("s3store: %s: empty key", op)
	}
	return nil
}

// serverDate returns the response's Date header, or zero.
func serverDate(md middleware.Metadata) time.Time {
	if t, ok := awsmiddleware.GetServerTime(md); ok {
		return t.UTC()
	}
	return time.Time{}
}

func (s *Store) where() string {
	return fmt.Sprintf("s3://%s/%s", s.bucket, s.prefix)
}

// readMaxBackoff caps the SDK's pause between the retries of a read.
const readMaxBackoff = 50 * time.Millisecond

// loadAWSConfig returns the SDK configuration: with static credentials, built
// from cfg alone (no environment, no shared config files, so that a stray
// AWS_PROFILE cannot break a local or test setup); otherwise the default chain
// (environment, shared files, ECS task role, instance profile).
func loadAWSConfig(ctx context.Context, cfg Config, logger *slog.Logger) (aws.Config, error) {
	// Reads retry quickly, so a few attempts fit in one renewal attempt
	// (nodeid's StoreTimeout: 4/15 of the renewal window, 267 ms with 3 s
	// leases): a read-back under a 503 storm must not spend the attempt
	// waiting. Writes never use this retryer (see put).
	retryer := func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.MaxBackoff = readMaxBackoff
		})
	}
	if cfg.AccessKeyID != "" {
		region := cfg.Region
		if region == "" {
			region = os.Getenv("AWS_REGION")
		}
		c := aws.Config{
			Region:      region,
			Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken),
			Retryer:     retryer,
			Logger:      sdkLogger(logger),
		}
		if cfg.HTTPClient != nil {
			c.HTTPClient = cfg.HTTPClient
		}
		return c, nil
	}
	opts := []func(*config.LoadOptions) error{config.WithRetryer(retryer), config.WithLogger(sdkLogger(logger))}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	}
	return config.LoadDefaultConfig(ctx, opts...)
}
