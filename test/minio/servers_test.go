package minio_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/nodeid/nodeid/s3store"
)

// server is an S3 endpoint under test, configured from the environment:
// NODEID_TEST_<NAME>_ENDPOINT, _ACCESS_KEY, _SECRET_KEY, _REGION, _BUCKET and
// _PATH_STYLE (see docs/evidence/s3-testing.md).
type server struct {
	name string // as in the variable names: MINIO, VERSITYGW, S3
	// required: with CI=true, a missing or unreachable server fails the test.
	required bool
	// notModifiedWithoutETag: the server answers If-None-Match on a GET
	// with a 304 that carries no ETag header (storetest.Target's field).
	notModifiedWithoutETag bool
	// getETagMayLag: a GET racing a PUT may answer with the new body and
	// the older ETag (storetest.Target's field).
	getETagMayLag bool
}

var (
	minio     = server{name: "MINIO", required: true}
	versitygw = server{name: "VERSITYGW", required: true, notModifiedWithoutETag: true, getETagMayLag: true} // v1.8.0
	ownS3     = server{name: "S3"}
)

func (s server) env(suffix string) string { return os.Getenv("NODEID_TEST_" + s.name + "_" + suffix) }

func inCI() bool { return os.Getenv("CI") == "true" }

// unavailable skips the test, or fails it when the server is required and CI
// is true: in CI, a conformance run that silently skipped is no run.
func (s server) unavailable(t *testing.T, why string) {
	t.Helper()
	if s.required && inCI() {
		t.Fatalf("%s (CI=true, so this is a failure, not a skip; start the servers with test/minio/servers.sh)", why)
	}
	if s.required {
		t.Skip(why + " (start the servers: bash test/minio/servers.sh install start; eval \"$(bash test/minio/servers.sh env)\")")
	}
	t.Skip(why + " (set NODEID_TEST_S3_BUCKET, and NODEID_TEST_S3_ENDPOINT for a server other than AWS, to run on your own S3: docs/evidence/s3-testing.md)")
}

// config returns the store configuration for bucket and prefix on this server.
func (s server) config(bucket, prefix string) s3store.Config {
	c := s3store.DefaultConfig()
	c.Bucket = bucket
	c.Prefix = prefix
	c.Endpoint = s.env("ENDPOINT")
	c.Region = s.env("REGION")
	c.AccessKeyID = s.env("ACCESS_KEY")
	c.SecretAccessKey = s.env("SECRET_KEY")
	c.SessionToken = s.env("SESSION_TOKEN")
	c.RequestTimeout = 30 * time.Second // shared 2-core CI machines are slow under -race
	// Path style unless told otherwise for a custom endpoint; AWS does not need it.
	c.UsePathStyle = c.Endpoint != "" && s.env("PATH_STYLE") != "false"
	return c
}

// namespace is one test's private corner of a server: a bucket (fresh unless
// NODEID_TEST_<NAME>_BUCKET names one) and a random root prefix in it.
type namespace struct {
	srv    server
	bucket string
	root   string
	client *s3.Client
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func isUnreachable(err error) bool {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	return errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial")
}

// open prepares a namespace for t, skipping (or failing, see unavailable) when
// the server is not configured or not reachable. Objects written under the
// namespace, and a bucket it created, are removed when t ends.
func (s server) open(t *testing.T) *namespace {
	t.Helper()
	endpoint, bucket := s.env("ENDPOINT"), s.env("BUCKET")
	switch {
	case s.required && endpoint == "":
		s.unavailable(t, "NODEID_TEST_"+s.name+"_ENDPOINT is not set")
	case !s.required && endpoint == "" && bucket == "":
		s.unavailable(t, "neither NODEID_TEST_"+s.name+"_BUCKET nor NODEID_TEST_"+s.name+"_ENDPOINT is set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created := bucket == ""
	if created {
		bucket = "nodeid-test-" + randomHex(6)
	}
	st, err := s3store.New(ctx, s.config(bucket, ""))
	if err != nil {
		t.Fatal(err)
	}
	ns := &namespace{srv: s, bucket: bucket, root: "run-" + randomHex(6) + "/", client: st.Client()}
	if created {
		_, err = ns.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	}
	if err == nil {
		err = st.Check(ctx)
	}
	switch {
	case err != nil && isUnreachable(err):
		s.unavailable(t, s.name+" at "+endpoint+" is unreachable: "+err.Error())
	case err != nil:
		t.Fatalf("%s: prepare bucket %q: %v", s.name, bucket, err)
	}
	t.Cleanup(func() { ns.cleanup(t, created) })
	return ns
}

// store returns a store on the namespace under prefix (relative to its root).
func (ns *namespace) store(t *testing.T, prefix string) *s3store.Store {
	t.Helper()
	st, err := s3store.New(context.Background(), ns.srv.config(ns.bucket, ns.root+prefix))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (ns *namespace) cleanup(t *testing.T, deleteBucket bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := s3.NewListObjectsV2Paginator(ns.client, &s3.ListObjectsV2Input{Bucket: aws.String(ns.bucket), Prefix: aws.String(ns.root)})
	var keys []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Logf("cleanup: list s3://%s/%s: %v", ns.bucket, ns.root, err)
			return
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	// One DeleteObject per key, a few at a time: every server has it, while
	// DeleteObjects needs a checksum header that not all of them accept.
	var (
		wg   sync.WaitGroup
		next = make(chan string)
		mu   sync.Mutex
		errs []error
	)
	for range 8 {
		wg.Go(func() {
			for k := range next {
				if _, err := ns.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(ns.bucket), Key: aws.String(k)}); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, k := range keys {
		next <- k
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		t.Logf("cleanup: %d of %d deletes failed, first: %v", len(errs), len(keys), errs[0])
		return
	}
	if deleteBucket {
		if _, err := ns.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(ns.bucket)}); err != nil {
			t.Logf("cleanup: delete bucket %s: %v", ns.bucket, err)
		}
	}
}
