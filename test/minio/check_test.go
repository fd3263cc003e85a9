package minio_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/nodeid/nodeid/s3store"
)

// TestCheckMisconfigured runs s3store's start-up probe against each real server
// with one setting wrong at a time, and checks the error names what to fix.
func TestCheckMisconfigured(t *testing.T) {
	for _, srv := range []server{minio, versitygw} {
		t.Run(srv.name, func(t *testing.T) {
			ns := srv.open(t)
			tests := []struct {
				name string
				mod  func(*s3store.Config)
				want []string // any of these
			}{
				{"missing bucket", func(c *s3store.Config) { c.Bucket = "nodeid-no-such-bucket" }, []string{`bucket "nodeid-no-such-bucket" does not exist`}},
				{"unknown access key", func(c *s3store.Config) { c.AccessKeyID = "nobody" }, []string{"does not know the access key ID"}},
				{"wrong secret", func(c *s3store.Config) { c.SecretAccessKey = "wrong-secret" }, []string{"check the secret access key"}},
				{"wrong region", func(c *s3store.Config) { c.Region = "eu-central-1" }, []string{"region"}},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					c := srv.config(ns.bucket, ns.root)
					tc.mod(&c)
					st, err := s3store.New(context.Background(), c)
					if err != nil {
						t.Fatal(err)
					}
					err = st.Check(context.Background())
					t.Logf("%s: %v", tc.name, err)
					if err == nil {
						if tc.name == "wrong region" {
							t.Skipf("%s accepts requests signed for any region", srv.name)
						}
						t.Fatalf("Check succeeded")
					}
					for _, w := range tc.want {
						if strings.Contains(err.Error(), w) {
							return
						}
					}
					t.Fatalf("Check error = %v, want it to say one of %q", err, tc.want)
				})
			}
		})
	}
}

// TestCheckWarnsAboutBucketSettings: on MinIO, which implements versioning,
// Object Lock and lifecycle rules, Check warns about a versioned bucket with no
// rule expiring its noncurrent versions and about Object Lock, and is quiet once
// a rule covers the prefix.
func TestCheckWarnsAboutBucketSettings(t *testing.T) {
	ns := minio.open(t)
	ctx := context.Background()
	bucket := func(t *testing.T, lock bool) string {
		name := "nodeid-settings-" + randomHex(6)
		if _, err := ns.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name), ObjectLockEnabledForBucket: aws.Bool(lock)}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = ns.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}) })
		_, err := ns.client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	check := func(t *testing.T, bucket, want string) {
		t.Helper()
		var logs strings.Builder
		c := minio.config(bucket, "nodeid/")
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		st, err := s3store.New(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
		switch got := logs.String(); {
		case want == "" && got != "":
			t.Fatalf("Check warned:\n%s", got)
		case want != "" && !strings.Contains(got, want):
			t.Fatalf("Check logged %q, want a warning saying %q", got, want)
		}
	}
	t.Run("versioned", func(t *testing.T) {
		b := bucket(t, false)
		check(t, b, "no lifecycle rule expires noncurrent versions")
		_, err := ns.client.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(b),
			LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
				ID: aws.String("nodeid-noncurrent"), Status: types.ExpirationStatusEnabled,
				Filter:                      &types.LifecycleRuleFilter{Prefix: aws.String("nodeid/")},
				NoncurrentVersionExpiration: &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(1)},
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		check(t, b, "")
	})
	t.Run("object lock", func(t *testing.T) { check(t, bucket(t, true), "the bucket has Object Lock") })
}
