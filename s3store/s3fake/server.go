package s3fake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/nodeid/nodeid/s3store"
)

// Static credentials that Server.StoreConfig puts in the store configuration.
// gofakes3 does not check credentials; the SDK needs some to sign requests.
const (
	AccessKeyID     = "nodeid-fake"
	SecretAccessKey = "nodeid-fake-secret"
)

// DefaultBucket is the bucket Start creates when Config.Bucket is empty.
const DefaultBucket = "nodeid"

// Config configures [Start].
type Config struct {
	// Addr is the TCP address to listen on. Empty means "127.0.0.1:0", a free
	// port on the loopback interface.
	Addr string
	// Bucket is created at start. Empty means DefaultBucket.
	Bucket string
	// Now, when set, is the server's clock: Last-Modified, LIST LastModified
	// and the Date header all read it, and the request time-skew check is off.
	// It must be safe for concurrent use (a [*Clock]'s Now is). Nil means the
	// real clock.
	Now func() time.Time
	// Logger receives gofakes3's log lines (errors and warnings at their level,
	// the rest at debug). Nil discards them.
	Logger *slog.Logger
}

// Server is a running gofakes3 server.
type Server struct {
	url     string
	bucket  string
	backend *s3mem.Backend
	srv     *http.Server
	done    chan error

	closeOnce sync.Once
	closeErr  error
}

// Start listens on cfg.Addr, creates the bucket and serves S3 until Close.
func Start(cfg Config) (*Server, error) {
	h, backend, err := newHandler(cfg)
	if err != nil {
		return nil, err
	}
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("s3fake: listen: %w", err)
	}
	s := &Server{
		url:     "http://" + ln.Addr().String(),
		bucket:  bucketOrDefault(cfg.Bucket),
		backend: backend,
		srv:     &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done:    make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// NewHandler returns the S3 handler that Start serves, with the bucket
// created, for callers that run their own listener (httptest.NewServer).
func NewHandler(cfg Config) (http.Handler, error) {
	h, _, err := newHandler(cfg)
	return h, err
}

func bucketOrDefault(b string) string {
	if b == "" {
		return DefaultBucket
	}
	return b
}

func newHandler(cfg Config) (http.Handler, *s3mem.Backend, error) {
	var (
		fakeOpts = []gofakes3.Option{gofakes3.WithLogger(logAdapter{l: cfg.Logger})}
		memOpts  []s3mem.Option
	)
	if cfg.Now != nil {
		ts := timeSource{now: cfg.Now}
		fakeOpts = append(fakeOpts, gofakes3.WithTimeSource(ts), gofakes3.WithTimeSkewLimit(0))
		memOpts = append(memOpts, s3mem.WithTimeSource(ts))
	}
	backend := s3mem.New(memOpts...)
	bucket := bucketOrDefault(cfg.Bucket)
	if err := backend.CreateBucket(bucket); err != nil {
		return nil, nil, fmt.Errorf("s3fake: create bucket %q: %w", bucket, err)
	}
	h := gofakes3.New(replacingBackend{backend}, fakeOpts...).Server()
	if cfg.Now != nil {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Date", cfg.Now().UTC().Format(http.TimeFormat))
			inner.ServeHTTP(w, r)
		})
	}
	return h, backend, nil
}

// URL returns the endpoint, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return s.url }

// Bucket returns the bucket created at start.
func (s *Server) Bucket() string { return s.bucket }

// CreateBucket creates another bucket (tests use one per test).
func (s *Server) CreateBucket(name string) error {
	if err := s.backend.CreateBucket(name); err != nil {
		return fmt.Errorf("s3fake: create bucket %q: %w", name, err)
	}
	return nil
}

// StoreConfig returns an s3store configuration for this server's bucket under
// prefix: endpoint, path-style addressing, region us-east-1 and the static
// credentials.
func (s *Server) StoreConfig(prefix string) s3store.Config {
	return StoreConfigAt(s.url, s.bucket, prefix)
}

// StoreConfigAt is [Server.StoreConfig] for a handler from [NewHandler]
// served at endpoint ("http://127.0.0.1:PORT"), with its bucket.
func StoreConfigAt(endpoint, bucket, prefix string) s3store.Config {
	c := s3store.DefaultConfig()
	c.Bucket = bucket
	c.Prefix = prefix
	c.Endpoint = endpoint
	c.UsePathStyle = true
	c.Region = "us-east-1"
	c.AccessKeyID = AccessKeyID
	c.SecretAccessKey = SecretAccessKey
	return c
}

// Close stops the server, closing open connections, and returns once it has
// stopped. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.srv.Close()
		if err := <-s.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.closeErr = errors.Join(s.closeErr, err)
		}
	})
	return s.closeErr
}

// timeSource adapts a func() time.Time to gofakes3.TimeSource. Times are given
// in UTC: gofakes3 formats them with http.TimeFormat, which prints "GMT" after
// the time in whatever zone it is in.
type timeSource struct{ now func() time.Time }

func (t timeSource) Now() time.Time                  { return t.now().UTC() }
func (t timeSource) Since(x time.Time) time.Duration { return t.now().Sub(x) }

// logAdapter sends gofakes3's log lines to slog.
type logAdapter struct{ l *slog.Logger }

func (a logAdapter) Print(level gofakes3.LogLevel, v ...any) {
	if a.l == nil {
		return
	}
	lvl := slog.LevelDebug
	switch level {
	case gofakes3.LogErr:
		lvl = slog.LevelError
	case gofakes3.LogWarn:
		lvl = slog.LevelWarn
	}
	a.l.Log(context.Background(), lvl, fmt.Sprint(v...), "component", "gofakes3")
}
