package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
)

// TestCheck runs the start-up probe against servers that are misconfigured in
// each way a deployment can be, and checks the error says what to fix.
func TestCheck(t *testing.T) {
	answer := func(status int, code string, hdr ...string) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, r *http.Request, _ int) {
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			s3Error(w, status, code)
		}
	}
	tests := []struct {
		name    string
		handler func(http.ResponseWriter, *http.Request, int)
		want    string // "" = no error
	}{
		{"ok", func(w http.ResponseWriter, r *http.Request, _ int) {
			if !r.URL.Query().Has("list-type") { // the bucket's settings: advice, see TestCheckWarnsAboutBucketSettings
				s3Error(w, 403, "AccessDenied")
				return
			}
			if r.URL.Query().Get("max-keys") != "1" || r.URL.Query().Get("prefix") != "nodeid/" {
				t.Errorf("check query = %v", r.URL.Query())
			}
			_, _ = w.Write([]byte(`<ListBucketResult><Name>bucket</Name><IsTruncated>false</IsTruncated></ListBucketResult>`))
		}, ""},
		{"no bucket", answer(404, "NoSuchBucket"), `bucket "bucket" does not exist`},
		{"access denied", answer(403, "AccessDenied"), "access denied: the task role needs s3:ListBucket on arn:aws:s3:::bucket"},
		{"unknown key", answer(403, "InvalidAccessKeyId"), "does not know the access key ID"},
		{"unknown key (versitygw)", answer(404, "XAdminUserNotFound"), "does not know the access key ID"},
		{"bad secret", answer(403, "SignatureDoesNotMatch"), "check the secret access key"},
		{"clock", answer(403, "RequestTimeTooSkewed"), "fix the clock"},
		{"region redirect", answer(301, "PermanentRedirect", "x-amz-bucket-region", "eu-west-1"), `is in region "eu-west-1", not "us-east-1": set Region to "eu-west-1"`},
		{"region header", answer(400, "AuthorizationHeaderMalformed"), `wrong region "us-east-1"`},
		{"not S3: 404", func(w http.ResponseWriter, r *http.Request, _ int) { http.NotFound(w, r) }, "is it an S3 endpoint"},
		{"not S3: HTML", func(w http.ResponseWriter, r *http.Request, _ int) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body>hello</body></html>"))
		}, "is it an S3 endpoint?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeS3(t, tc.handler)
			err := newStore(t, f.URL).Check(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Check error = %v, want it to say %q", err, tc.want)
			case tc.want != "" && !errors.Is(err, lease.ErrMisconfigured):
				t.Fatalf("Check error = %v does not match lease.ErrMisconfigured: a misconfiguration must stop a start at once", err)
			}
		})
	}
}

func TestCheckUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	err = newStore(t, "http://"+addr).Check(context.Background())
	checkClass(t, err, "misconfigured", "http://"+addr+` refuses connections (bucket "bucket"): is the server running and Endpoint right?`)
}

func TestCheckNoAnswer(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	st := newStore(t, f.URL, func(c *s3store.Config) { c.RequestTimeout = 200 * time.Millisecond })
	checkClass(t, st.Check(context.Background()), "plain", "no answer from "+f.URL+` (bucket "bucket") within 200ms`)
}

// TestDescribe: a store names its bucket, prefix and endpoint (AWS S3 with
// the region when there is none), for the messages of its users
// (lease.Describe).
func TestDescribe(t *testing.T) {
	st := newStore(t, "http://127.0.0.1:9000")
	if got, want := lease.Describe(st), `S3 bucket bucket (prefix "nodeid/") at http://127.0.0.1:9000`; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	aws := newStore(t, "", func(c *s3store.Config) { c.Region = "eu-west-1" })
	if got, want := aws.Describe(), `AWS S3 bucket bucket (prefix "nodeid/", region eu-west-1)`; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

func TestCheckNoCredentials(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		t.Errorf("a request was sent without credentials")
	})
	st := newStore(t, f.URL, func(c *s3store.Config) { c.AccessKeyID, c.SecretAccessKey = "", "" })
	checkClass(t, st.Check(context.Background()), "misconfigured", "no usable AWS credentials")
	_, err := st.Create(context.Background(), "7.json", []byte("b"))
	checkClass(t, err, "misconfigured", "no usable AWS credentials")
}

// TestErrorsAreShort: a store error carries the SDK's answer cut to the
// operation, the HTTP status, the S3 error code and its message, after what
// to fix; not the SDK's framing, request ID and host ID (200 to 400
// characters), on a read, a conditional write and an unreachable endpoint.
func TestErrorsAreShort(t *testing.T) {
	f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) { s3Error(w, 404, "NoSuchBucket") })
	st := newStore(t, f.URL)
	_, _, getErr := st.Get(context.Background(), "7.json")
	_, createErr := st.Create(context.Background(), "7.json", []byte("b"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	refusedErr := newStore(t, "http://"+addr).Check(context.Background())
	for _, tc := range []struct {
		name   string
		err    error
		suffix string
	}{
		{"check", newStore(t, f.URL).Check(context.Background()), `: create it, or fix Bucket, Endpoint or Region: S3 ListObjectsV2: HTTP 404 NoSuchBucket: test says NoSuchBucket`},
		{"get", getErr, `: S3 GetObject: HTTP 404 NoSuchBucket: test says NoSuchBucket`},
		{"create", createErr, `: S3 PutObject: HTTP 404 NoSuchBucket: test says NoSuchBucket`},
		{"refused", refusedErr, `: S3 ListObjectsV2: dial tcp ` + addr + `: connect: connection refused`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := fmt.Sprint(tc.err)
			if !strings.HasSuffix(msg, tc.suffix) || strings.Contains(msg, "RequestID") || strings.Contains(msg, "operation error") || len(msg) > 250 {
				t.Errorf("error %q (%d characters), want it to end with %q and no SDK framing", msg, len(msg), tc.suffix)
			}
			var ae smithy.APIError
			if tc.name != "refused" && !errors.As(tc.err, &ae) {
				t.Errorf("error %q: the SDK's error is not in the chain", msg)
			}
		})
	}
}
