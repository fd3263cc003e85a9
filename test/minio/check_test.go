package minio_test

import (
	"context"
	"strings"
	"testing"

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
