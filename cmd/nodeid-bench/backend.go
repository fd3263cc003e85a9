package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/nodeid/nodeid/cmd/nodeid-bench/internal/latproxy"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// common holds the flags every scenario takes.
type common struct {
	endpoint, accessKey, secretKey, region, bucket string
	store, etcdEndpoints                           string

	latency time.Duration
	json    bool
	jsonOut string
	seed    uint64
}

// addCommon registers the common flags on fs.
func addCommon(fs *flag.FlagSet, c *common) {
	fs.StringVar(&c.endpoint, "s3-endpoint", os.Getenv("NODEID_S3_ENDPOINT"),
		"S3 endpoint, e.g. MinIO's http://127.0.0.1:9000; empty runs an embedded gofakes3 [$NODEID_S3_ENDPOINT]")
	fs.StringVar(&c.accessKey, "s3-access-key", os.Getenv("AWS_ACCESS_KEY_ID"), "access key for --s3-endpoint [$AWS_ACCESS_KEY_ID]")
	fs.StringVar(&c.secretKey, "s3-secret-key", os.Getenv("AWS_SECRET_ACCESS_KEY"), "secret key for --s3-endpoint [$AWS_SECRET_ACCESS_KEY]")
	fs.StringVar(&c.region, "region", "us-east-1", "S3 region")
	fs.StringVar(&c.store, "store", "s3", "store to run on: s3 (--s3-endpoint), etcd (--etcd-endpoints) or k8s (the pinned kube-apiserver of test/k8s/install.sh, started on 127.0.0.1)")
	fs.StringVar(&c.etcdEndpoints, "etcd-endpoints", "", "with --store etcd: comma-separated etcd endpoints; empty starts the pinned etcd server of test/etcd/install.sh on 127.0.0.1")
	fs.StringVar(&c.bucket, "bucket", "", "bucket to use (created if missing); default a fresh nodeid-bench-<random>")
	fs.DurationVar(&c.latency, "latency", 20*time.Millisecond, "round trip added to every store request (half each way) by the proxy, or on etcd by the store wrapper; 0 adds none")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of a table")
	fs.StringVar(&c.jsonOut, "json-out", "", "also write the JSON to this file")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of task identities and random choices")
}

// parseFlags parses args into fs; it returns an exit code and false when the
// command should stop (help or a usage error).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}

// backend is the S3 server of a run and the counting proxy in front of it.
type backend struct {
	c        common
	upstream string
	bucket   string
	fake     *s3fake.Server  // nil against an endpoint
	clock    *offsetClock    // the fake server's clock; nil against an endpoint
	proxy    *latproxy.Proxy // S3
	etcd     *etcdBackend    // etcd
	k8s      *k8sBackend     // Kubernetes Leases
	meter    meter           // the proxy, or a storeMeter on etcd
	runID    string
}

// offsetClock is real time plus an offset that only grows: the embedded S3
// server's clock, which a scenario can move forward to make objects old.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// startBackend starts the embedded S3 server (or checks the endpoint), creates
// the bucket and starts the proxy.
func startBackend(ctx context.Context, c common, record bool) (*backend, error) {
	if !strings.HasPrefix(c.endpoint, "https:") {
		// The SDK refuses a custom HTTP client (ours labels requests) when a CA
		// bundle is configured; plain-HTTP endpoints never use one.
		_ = os.Unsetenv("AWS_CA_BUNDLE")
	}
	b := &backend{c: c, runID: randomHex(4)}
	switch c.store {
	case "", "s3":
	case "etcd":
		e, err := startEtcd(c)
		if err != nil {
			return nil, err
		}
		b.etcd, b.meter = e, newStoreMeter(c.latency, record)
		return b, nil
	case "k8s":
		k, err := startK8s(ctx)
		if err != nil {
			return nil, err
		}
		b.k8s, b.meter = k, newStoreMeter(c.latency, record)
		return b, nil
	default:
		return nil, fmt.Errorf("--store %q: want s3, etcd or k8s", c.store)
	}
	b.bucket = c.bucket
	if b.bucket == "" {
		b.bucket = "nodeid-bench-" + b.runID
	}
	if c.endpoint == "" {
		b.clock = &offsetClock{}
		srv, err := s3fake.Start(s3fake.Config{Bucket: b.bucket, Now: b.clock.Now})
		if err != nil {
			return nil, err
		}
		b.fake, b.upstream = srv, srv.URL()
		b.c.accessKey, b.c.secretKey = s3fake.AccessKeyID, s3fake.SecretAccessKey
	} else {
		b.upstream = c.endpoint
		if err := b.createBucket(ctx); err != nil {
			return nil, err
		}
	}
	p, err := latproxy.Start(latproxy.Config{Upstream: b.upstream, Latency: c.latency, Record: record})
	if err != nil {
		b.close()
		return nil, err
	}
	b.proxy, b.meter = p, p
	return b, nil
}

func (b *backend) createBucket(ctx context.Context) error {
	st, err := b.s3DirectStore(ctx, "")
	if err != nil {
		return err
	}
	_, err = st.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b.bucket)})
	var owned interface{ ErrorCode() string }
	if errors.As(err, &owned) && (owned.ErrorCode() == "BucketAlreadyOwnedByYou" || owned.ErrorCode() == "BucketAlreadyExists") {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("create bucket %s on %s: %w", b.bucket, b.upstream, err)
	}
	return nil
}

func (b *backend) close() {
	if b.proxy != nil {
		_ = b.proxy.Close()
	}
	if b.fake != nil {
		_ = b.fake.Close()
	}
	if b.etcd != nil {
		b.etcd.close()
	}
	if b.k8s != nil {
		b.k8s.close()
	}
}

// name describes the server for reports.
func (b *backend) name() string {
	if b.etcd != nil {
		return b.etcd.name()
	}
	if b.k8s != nil {
		return b.k8s.name()
	}
	if b.fake != nil {
		return "gofakes3 (embedded)"
	}
	return b.c.endpoint
}

// canMoveClock reports whether the server's clock can be advanced.
func (b *backend) canMoveClock() bool { return b.clock != nil }

// prefix returns a fresh key prefix for one part of a run.
func (b *backend) prefix(part string) string { return fmt.Sprintf("bench-%s/%s/", b.runID, part) }

func (b *backend) storeConfig(prefix, endpoint string) s3store.Config {
	cfg := s3store.DefaultConfig()
	cfg.Bucket, cfg.Prefix, cfg.Endpoint, cfg.UsePathStyle, cfg.Region = b.bucket, prefix, endpoint, true, b.c.region
	cfg.AccessKeyID, cfg.SecretAccessKey = b.c.accessKey, b.c.secretKey
	return cfg
}

// directStore returns a store that talks to the server without the proxy: for
// setting a scenario up without counting or delaying it.
func (b *backend) directStore(ctx context.Context, prefix string) (lease.Store, error) {
	if b.etcd != nil {
		return b.etcd.store.WithPrefix(prefix), nil
	}
	if b.k8s != nil {
		return b.k8s.scoped(prefix), nil
	}
	return b.s3DirectStore(ctx, prefix)
}

// s3DirectStore is directStore on S3.
func (b *backend) s3DirectStore(ctx context.Context, prefix string) (*s3store.Store, error) {
	cfg := b.storeConfig(prefix, b.upstream)
	cfg.HTTPClient = &http.Client{Transport: newTransport()}
	return s3store.New(ctx, cfg)
}

// task is one simulated process: its own HTTP client and S3 store through the
// proxy, its requests labelled "<name>/<phase>".
type task struct {
	name  string
	phase atomic.Pointer[string]
	store lease.Store
}

// newTask returns a task whose store goes through the proxy, in phase "acquire".
func (b *backend) newTask(ctx context.Context, name, prefix string) (*task, error) {
	t := &task{name: name}
	t.setPhase("acquire")
	if b.etcd != nil {
		t.store = &meteredStore{m: b.meter.(*storeMeter), inner: b.etcd.store.WithPrefix(prefix), label: t.label}
		return t, nil
	}
	if b.k8s != nil {
		t.store = &meteredStore{m: b.meter.(*storeMeter), inner: b.k8s.scoped(prefix), label: t.label}
		return t, nil
	}
	cfg := b.storeConfig(prefix, b.proxy.URL())
	cfg.HTTPClient = &http.Client{Transport: &latproxy.Labeler{Inner: newTransport(), Label: t.label}}
	st, err := s3store.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.store = st
	return t, nil
}

func (t *task) setPhase(p string) { t.phase.Store(&p) }
func (t *task) label() string     { return t.name + "/" + *t.phase.Load() }

// labelOf returns the label a task's requests carry in a phase.
func labelOf(name, phase string) string { return name + "/" + phase }

func newTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return tr
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// parallel runs fn(i) for i in [0, n) on at most width goroutines and returns
// the errors joined.
func parallel(n, width int, fn func(i int) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, width)
	)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
