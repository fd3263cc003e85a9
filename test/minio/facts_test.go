package minio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// TestServerFacts records, with raw SDK calls, what each server answers where
// S3 implementations differ and nodeid depends on the answer: the status of a
// conditional PUT that fails, the spelling of ETags, and the resolution of
// Last-Modified and Date. It fails only where an answer would be unsafe; the
// rest is logged (go test -v) to keep docs/evidence/design.md sections 4 and 5 and docs/evidence/s3-testing.md honest.
func TestServerFacts(t *testing.T) {
	t.Run("gofakes3", func(t *testing.T) {
		srv, err := s3fake.Start(s3fake.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		st, err := s3store.New(context.Background(), srv.StoreConfig(""))
		if err != nil {
			t.Fatal(err)
		}
		serverFacts(t, st.Client(), srv.Bucket(), "facts/")
	})
	for _, srv := range []server{minio, versitygw, ownS3} {
		t.Run(srv.name, func(t *testing.T) {
			ns := srv.open(t)
			serverFacts(t, ns.client, ns.bucket, ns.root)
		})
	}
}

func statusOf(err error) string {
	if err == nil {
		return "200 (applied!)"
	}
	var re *smithyhttp.ResponseError
	var ae smithy.APIError
	status, code := 0, ""
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return fmt.Sprintf("%d %s", status, code)
}

func serverFacts(t *testing.T, c *s3.Client, bucket, root string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bkt := aws.String(bucket)
	key := func(k string) *string { return aws.String(root + k) }
	put := func(k, body string, fn func(*s3.PutObjectInput)) (*s3.PutObjectOutput, error) {
		in := &s3.PutObjectInput{Bucket: bkt, Key: key(k), Body: bytes.NewReader([]byte(body))}
		if fn != nil {
			fn(in)
		}
		return c.PutObject(ctx, in, func(o *s3.Options) { o.Retryer = aws.NopRetryer{} })
	}
	ifNone := func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") }
	ifMatch := func(e string) func(*s3.PutObjectInput) {
		return func(in *s3.PutObjectInput) { in.IfMatch = aws.String(e) }
	}

	created, err := put("a.json", `{"v":1}`, ifNone)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	putDate, _ := awsmiddleware.GetServerTime(created.ResultMetadata)
	_, errExisting := put("a.json", `{"v":2}`, ifNone)
	_, errMissing := put("missing.json", `{"v":1}`, ifMatch(aws.ToString(created.ETag)))
	_, errStale := put("a.json", `{"v":3}`, ifMatch(`"00000000000000000000000000000000"`))
	_, errUnquoted := put("a.json", `{"v":4}`, ifMatch("bogus"))

	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bkt, Key: key("a.json")})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	_ = got.Body.Close()
	getDate, _ := awsmiddleware.GetServerTime(got.ResultMetadata)
	lm := aws.ToTime(got.LastModified)

	// A few more objects so a LIST shows whether it has sub-second times.
	for i := range 5 {
		if _, err := put(fmt.Sprintf("b%d.json", i), fmt.Sprint(i), ifNone); err != nil {
			t.Fatalf("create b%d: %v", i, err)
		}
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: bkt, Prefix: aws.String(root)})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	listETag, listRes := "", "whole seconds"
	for _, o := range list.Contents {
		if aws.ToString(o.Key) == root+"a.json" {
			listETag = aws.ToString(o.ETag)
		}
		if aws.ToTime(o.LastModified).Nanosecond() != 0 {
			listRes = "sub-second (" + aws.ToTime(o.LastModified).Format(time.RFC3339Nano) + ")"
		}
	}

	t.Logf("If-None-Match: * on an existing key -> %s", statusOf(errExisting))
	t.Logf("If-Match on a missing key           -> %s", statusOf(errMissing))
	t.Logf("If-Match with a stale ETag          -> %s", statusOf(errStale))
	t.Logf("If-Match with an unquoted bogus ETag -> %s", statusOf(errUnquoted))
	t.Logf("ETag as sent: PUT %s, GET %s, LIST %s", aws.ToString(created.ETag), aws.ToString(got.ETag), listETag)
	t.Logf("GET Last-Modified %s, Date %s (Date - Last-Modified = %v); PUT Date %s; LIST LastModified %s",
		lm.Format(time.RFC3339Nano), getDate.Format(time.RFC3339Nano), getDate.Sub(lm), putDate.Format(time.RFC3339Nano), listRes)

	// The holder's read in keep-alive by reads (docs/evidence/design.md section 11):
	// a GET with If-None-Match on the current ETag. The SDK returns the 304
	// as an error; its headers are on the raw response.
	_, errINM := c.GetObject(ctx, &s3.GetObjectInput{Bucket: bkt, Key: key("a.json"), IfNoneMatch: got.ETag})
	var re *smithyhttp.ResponseError
	if errors.As(errINM, &re) && re.Response != nil {
		h := re.Response.Header
		t.Logf("GET If-None-Match: <current ETag> -> %d, ETag %q, Date %q, Last-Modified %q", re.HTTPStatusCode(), h.Get("ETag"), h.Get("Date"), h.Get("Last-Modified"))
	} else {
		t.Logf("GET If-None-Match: <current ETag> -> %v (not a 304: the condition is ignored)", errINM)
	}

	// The answers nodeid's safety depends on.
	for name, err := range map[string]error{"existing": errExisting, "missing": errMissing, "stale": errStale, "bogus": errUnquoted} {
		s := statusOf(err)
		if !slices.Contains([]string{"412 PreconditionFailed", "409 ConditionalRequestConflict", "404 NoSuchKey"}, s) ||
			(name != "missing" && s == "404 NoSuchKey") {
			t.Errorf("conditional PUT on the %s case answered %s: the server does not honour conditional writes", name, s)
		}
	}
	if getDate.IsZero() || putDate.IsZero() || lm.IsZero() {
		t.Errorf("missing times: PUT Date %v, GET Date %v, Last-Modified %v", putDate, getDate, lm)
	}
}
