package gcsstore

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultPrefix is the object name prefix of [DefaultConfig].
const DefaultPrefix = "nodeid/"

// DefaultRequestTimeout is the RequestTimeout used when Config.RequestTimeout is
// zero.
const DefaultRequestTimeout = 5 * time.Second

// MinWriteInterval is the shortest interval between two writes of one object
// that Google Cloud Storage sustains: its documented limit is one write per
// second to an object name, and writes above it may be throttled with 429
// (cloud.google.com/storage/quotas). [Store.MinWriteInterval] reports it, and
// nodeid.New refuses a RenewInterval below it.
const MinWriteInterval = time.Second

// Config configures a [Store] made by [New]. Start from [DefaultConfig] and set
// at least Bucket. Every field is a plain value, so that a command fills it
// from flags.
type Config struct {
	// Bucket is the Cloud Storage bucket that holds the lease objects.
	// Required; it must exist: nodeid never creates buckets.
	Bucket string

	// Prefix is prepended to every key: the lease object of node 7 is
	// Prefix+"7.json". DefaultConfig sets "nodeid/". It is used as given, so
	// the empty string means the whole bucket, and it normally ends with "/"
	// (New logs a warning otherwise).
	Prefix string

	// Endpoint is the JSON API endpoint, for an emulator: for example
	// "http://127.0.0.1:4443/storage/v1/" for fake-gcs-server. Empty (the
	// default) means Google Cloud Storage itself.
	Endpoint string

	// NoAuth sends requests without credentials, for an emulator; it needs
	// Endpoint. When false (the default), the store authenticates with
	// Application Default Credentials: the metadata server on Cloud Run, GKE
	// and Compute Engine (the service account of the workload), else
	// GOOGLE_APPLICATION_CREDENTIALS or gcloud's application-default login.
	// The identity needs storage.objects.get, .list, .create and .delete on
	// the bucket (roles/storage.objectUser; overwriting an object needs
	// delete permission, although nodeid never deletes one).
	NoAuth bool

	// RequestTimeout bounds each call the store makes: one write, one read
	// including the client's retries, one page of a listing. Zero means
	// DefaultRequestTimeout. Keep it well below the lease renewal interval: a
	// write that times out has an unknown outcome and must be read back before
	// the renew deadline.
	RequestTimeout time.Duration

	// Transport sends the requests, under the authentication layer. Nil means
	// a clone of http.DefaultTransport. Tests use it to answer requests
	// themselves.
	Transport http.RoundTripper

	// Logger receives debug lines about writes and warnings about unknown
	// outcomes. Nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with the default prefix and request timeout.
// Set Bucket before use (and Endpoint and NoAuth for an emulator).
func DefaultConfig() Config {
	return Config{
		Prefix:         DefaultPrefix,
		RequestTimeout: DefaultRequestTimeout,
	}
}

// Validate reports the problems with c, or nil. [New] calls it.
func (c Config) Validate() error {
	var errs []string
	if err := validBucket(c.Bucket); err != "" {
		errs = append(errs, err)
	}
	if strings.HasPrefix(c.Prefix, "/") {
		errs = append(errs, fmt.Sprintf("Prefix %q must not start with a slash", c.Prefix))
	}
	if len(c.Prefix) > 900 {
		errs = append(errs, fmt.Sprintf("Prefix is %d bytes, want at most 900 (object names are at most 1024 bytes)", len(c.Prefix)))
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			errs = append(errs, fmt.Sprintf("Endpoint %q is not an http:// or https:// URL with a host and no query (fake-gcs-server: http://127.0.0.1:4443/storage/v1/)", c.Endpoint))
		}
	}
	if c.NoAuth && c.Endpoint == "" {
		errs = append(errs, "NoAuth is for an emulator: set Endpoint too (Google Cloud Storage needs credentials)")
	}
	if c.RequestTimeout < 0 {
		errs = append(errs, fmt.Sprintf("RequestTimeout %v is negative", c.RequestTimeout))
	}
	if len(errs) > 0 {
		return errors.New("gcsstore: invalid config: " + strings.Join(errs, "; "))
	}
	return nil
}

// validBucket returns what is wrong with a bucket name, or "". It checks the
// characters and lengths of cloud.google.com/storage/docs/buckets#naming,
// not the rules about domain names and reserved words.
func validBucket(name string) string {
	alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
	limit := 63
	if strings.Contains(name, ".") {
		limit = 222
	}
	switch {
	case name == "":
		return "Bucket is required"
	case len(name) < 3 || len(name) > limit || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "" ||
		!alnum(name[0]) || !alnum(name[len(name)-1]):
		return fmt.Sprintf("Bucket %q is not a bucket name (3 to 63 lowercase letters, digits, hyphens, underscores and dots, "+
			"starting and ending with a letter or digit; a prefix goes in Prefix)", name)
	}
	return ""
}
