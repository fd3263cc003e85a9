package minio_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/s3store"
)

// shippedPolicy is deploy/iam-task-role-policy.json, the task role's policy,
// on bucket and the lease prefix prefix (which ends with "/") instead of
// my-nodeid-bucket and nodeid/.
func shippedPolicy(t *testing.T, bucket, prefix string) string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/iam-task-role-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	p := strings.NewReplacer("my-nodeid-bucket", bucket, `nodeid/*`, prefix+"*").Replace(string(b))
	if !strings.Contains(p, bucket+"/"+prefix+"*") || !strings.Contains(p, `"s3:prefix": "`+prefix+`*"`) {
		t.Fatalf("deploy/iam-task-role-policy.json no longer has the statements this test rewrites:\n%s", p)
	}
	return p
}

// assumeShippedPolicy returns the server's configuration for bucket and
// prefix with temporary credentials whose session policy is the shipped
// task-role policy: MinIO's STS AssumeRole, asked by the root user, gives
// credentials that may do what both the root user and the session policy
// allow, that is what the policy allows.
func assumeShippedPolicy(t *testing.T, ns *namespace, prefix string) s3store.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := ns.srv.config(ns.bucket, prefix)
	region := c.Region
	if region == "" {
		region = "us-east-1"
	}
	client := sts.New(sts.Options{
		Region:       region,
		BaseEndpoint: aws.String(c.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, ""),
	})
	out, err := client.AssumeRole(ctx, &sts.AssumeRoleInput{
		RoleArn:         aws.String("arn:aws:iam::000000000000:role/nodeid-task"), // MinIO ignores it
		RoleSessionName: aws.String("nodeid-task"),
		Policy:          aws.String(shippedPolicy(t, ns.bucket, prefix)),
		DurationSeconds: aws.Int32(900),
	})
	if err != nil {
		t.Fatalf("%s: STS AssumeRole with the shipped policy: %v", ns.srv.name, err)
	}
	cr := out.Credentials
	c.AccessKeyID, c.SecretAccessKey, c.SessionToken = aws.ToString(cr.AccessKeyId), aws.ToString(cr.SecretAccessKey), aws.ToString(cr.SessionToken)
	return c
}

// TestShippedPolicyFirstStart starts nodes, as nodeid-broker does (the
// store's check, the probe, a node ID), with nothing but the shipped
// task-role policy, each subtest on an empty prefix. MinIO evaluates the
// policy, s3:prefix condition included (a listing outside the prefix is
// refused), but answers a GET of a missing key 404 where S3 answers 403 to a
// caller without an unconditional s3:ListBucket; noListBucket answers as S3
// does, so that a start which reads a missing key fails here as on AWS. The
// first node creates the cluster, the second joins it with another ID: also
// when the answer to the first node's create of the manifest is lost, before
// or after the create was applied.
func TestShippedPolicyFirstStart(t *testing.T) {
	ns := minio.open(t)
	for _, tc := range []struct {
		name string
		lose loseManifestCreate
	}{
		{"empty prefix", keepAnswers},
		{"create lost", loseBeforeApplied},
		{"answer lost", loseAfterApplied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := ns.root + randomHex(4) + "/nodeid/"
			cfg := assumeShippedPolicy(t, ns, prefix)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			policyInForce(ctx, t, cfg)
			asS3 := &noListBucket{next: http.DefaultTransport, lose: tc.lose}
			cfg.HTTPClient = &http.Client{Transport: asS3}
			first := startNode(ctx, t, cfg, "task-a")
			second := startNode(ctx, t, cfg, "task-b")
			if first.NodeID() == second.NodeID() {
				t.Fatalf("both nodes hold node ID %d", first.NodeID())
			}
			if tc.lose != keepAnswers && !asS3.lost.Load() {
				t.Fatal("no create of the manifest was seen")
			}
			t.Logf("node IDs %d and %d; %d GETs of a missing key answered 403", first.NodeID(), second.NodeID(), asS3.denied.Load())
		})
	}
}

// policyInForce fails t unless the credentials of cfg are refused a listing
// outside the policy's prefix.
func policyInForce(ctx context.Context, t *testing.T, cfg s3store.Config) {
	t.Helper()
	cfg.Prefix = strings.TrimSuffix(cfg.Prefix, "nodeid/") + "other/"
	st, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.List(ctx); err == nil {
		t.Fatalf("the session policy is not in force: a listing of %s outside the policy's prefix succeeded", cfg.Prefix)
	}
}

// startNode starts a node on the store cfg describes and closes it when t
// ends.
func startNode(ctx context.Context, t *testing.T, cfg s3store.Config, task string) *node.Node {
	t.Helper()
	st, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	nc := node.DefaultLocalConfig()
	nc.Provider.TaskID, nc.Provider.ClusterSize = task, 4
	n, err := node.New(st, nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Close(ctx)
	})
	if err := n.Start(ctx); err != nil {
		t.Fatalf("%s: start under the shipped policy on %s: %v", task, cfg.Prefix, err)
	}
	return n
}

// loseManifestCreate is what noListBucket does to the first create of the
// cluster manifest.
type loseManifestCreate int

const (
	keepAnswers       loseManifestCreate = iota
	loseBeforeApplied                    // answered 500, never sent
	loseAfterApplied                     // sent and applied, answered 500
)

// noListBucket is an HTTP transport that answers as S3 does to a caller
// without an unconditional s3:ListBucket: a GET or HEAD of a missing key is
// 403 AccessDenied, not 404 (the shipped policy's ListBucket needs an
// s3:prefix, which a GET does not carry). MinIO answers 404 to such a
// caller, so without it the test could not fail. It also loses the answer
// to the first create of the manifest as lose says.
type noListBucket struct {
	next   http.RoundTripper
	lose   loseManifestCreate
	lost   atomic.Bool  // the first create of the manifest was seen
	denied atomic.Int32 // 404s turned into 403s
}

const (
	accessDenied = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`
	internalError = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`
)

// RoundTrip implements http.RoundTripper.
func (d *noListBucket) RoundTrip(r *http.Request) (*http.Response, error) {
	if d.lose != keepAnswers && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/cluster.json") && d.lost.CompareAndSwap(false, true) {
		if d.lose == loseAfterApplied {
			resp, err := d.next.RoundTrip(r)
			if err != nil {
				return nil, err
			}
			_ = resp.Body.Close()
		}
		return answer(r, http.StatusInternalServerError, internalError), nil
	}
	resp, err := d.next.RoundTrip(r)
	_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/") // path style: /bucket/key
	q := r.URL.Query()
	q.Del("x-id") // the SDK's name of the operation; any other query is a subresource
	if err != nil || resp.StatusCode != http.StatusNotFound || key == "" || len(q) > 0 ||
		(r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return resp, err
	}
	d.denied.Add(1)
	_ = resp.Body.Close()
	return answer(r, http.StatusForbidden, accessDenied), nil
}

// answer is a response to r with status and an S3 error body (none to a HEAD).
func answer(r *http.Request, status int, body string) *http.Response {
	resp := &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
		Header: http.Header{"Content-Type": {"application/xml"}, "Date": {time.Now().UTC().Format(http.TimeFormat)}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)),
	}
	if r.Method == http.MethodHead {
		resp.Body, resp.ContentLength = http.NoBody, 0
	}
	return resp
}
