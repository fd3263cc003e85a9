package s3store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/s3store"
)

func TestConfigValidate(t *testing.T) {
	valid := func(mod func(*s3store.Config)) s3store.Config {
		c := s3store.DefaultConfig()
		c.Bucket = "my-bucket"
		mod(&c)
		return c
	}
	tests := []struct {
		name string
		cfg  s3store.Config
		want string // "" = valid
	}{
		{"default with bucket", valid(func(*s3store.Config) {}), ""},
		{"root prefix", valid(func(c *s3store.Config) { c.Prefix = "" }), ""},
		{"custom endpoint", valid(func(c *s3store.Config) { c.Endpoint = "http://127.0.0.1:9000"; c.UsePathStyle = true }), ""},
		{"static credentials", valid(func(c *s3store.Config) { c.AccessKeyID, c.SecretAccessKey = "a", "b" }), ""},
		{"no bucket", s3store.DefaultConfig(), "Bucket is required"},
		{"bucket with a path", valid(func(c *s3store.Config) { c.Bucket = "b/nodeid" }), "not a bucket name"},
		{"absolute prefix", valid(func(c *s3store.Config) { c.Prefix = "/nodeid/" }), "must not start with a slash"},
		{"long prefix", valid(func(c *s3store.Config) { c.Prefix = strings.Repeat("p", 901) }), "at most 900"},
		{"bad region", valid(func(c *s3store.Config) { c.Region = "EU West" }), "not a region name"},
		{"endpoint without scheme", valid(func(c *s3store.Config) { c.Endpoint = "127.0.0.1:9000" }), "not an http:// or https:// URL"},
		{"negative timeout", valid(func(c *s3store.Config) { c.RequestTimeout = -time.Second }), "negative"},
		{"half credentials", valid(func(c *s3store.Config) { c.AccessKeyID = "a" }), "set together"},
		{"token alone", valid(func(c *s3store.Config) { c.SessionToken = "t" }), "SessionToken needs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate error = %v, want it to say %q", err, tc.want)
			}
			if _, err := s3store.New(context.Background(), tc.cfg); tc.want != "" && err == nil {
				t.Fatalf("New accepted an invalid config")
			}
		})
	}
}

func TestNewNeedsARegionForAWS(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_PROFILE", "")
	c := s3store.DefaultConfig()
	c.Bucket = "b"
	if _, err := s3store.New(context.Background(), c); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("New without a region error = %v, want one naming AWS_REGION", err)
	}
	c.Endpoint = "http://127.0.0.1:9000"
	if _, err := s3store.New(context.Background(), c); err != nil {
		t.Fatalf("New with a custom endpoint and no region: %v", err)
	}
}

func TestNewFromClient(t *testing.T) {
	base := newStore(t, "http://127.0.0.1:1")
	st, err := s3store.NewFromClient(base.Client(), "other", "p/", s3store.WithRequestTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if st.Bucket() != "other" || st.Prefix() != "p/" || st.Client() != base.Client() {
		t.Fatalf("NewFromClient store = %q %q", st.Bucket(), st.Prefix())
	}
	if _, err := s3store.NewFromClient(nil, "b", ""); err == nil {
		t.Fatal("NewFromClient(nil) succeeded")
	}
	if _, err := s3store.NewFromClient(base.Client(), "", ""); err == nil {
		t.Fatal("NewFromClient without a bucket succeeded")
	}
}
