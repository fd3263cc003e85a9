package s3store

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// DefaultPrefix is the key prefix of [DefaultConfig].
const DefaultPrefix = "nodeid/"

// DefaultRequestTimeout is the RequestTimeout used when Config.RequestTimeout is
// zero.
const DefaultRequestTimeout = 5 * time.Second

// Config configures a [Store] made by [New]. Start from [DefaultConfig] and set
// at least Bucket.
type Config struct {
	// Bucket is the S3 bucket that holds the lease objects. Required. The
	// bucket must exist: nodeid never creates buckets.
	Bucket string

	// Prefix is prepended to every key: the lease object of node 7 is
	// Prefix+"7.json". DefaultConfig sets "nodeid/". It is used as given, so
	// the empty string means the root of the bucket (a bucket of its own for
	// nodeid), and it normally ends with "/": "nodeid" gives nodeidcluster.json
	// (New logs a warning; nodeid-broker and nodeidctl refuse it). Several clusters can share a
	// bucket under different prefixes; IAM policies can be scoped to
	// arn:aws:s3:::BUCKET/PREFIX*.
	Prefix string

	// Region is the AWS region of the bucket. Empty means the default AWS
	// configuration (AWS_REGION, which ECS sets for every task, or the shared
	// config file). With a custom Endpoint and no region found, "us-east-1" is
	// used, which S3-compatible servers accept by default.
	Region string

	// Endpoint is the base URL of an S3-compatible server, for example
	// "http://127.0.0.1:9000" for MinIO. Empty means AWS S3 (or AWS_ENDPOINT_URL_S3
	// if set).
	Endpoint string

	// UsePathStyle addresses the bucket in the URL path
	// (http://host/bucket/key) instead of in the host name
	// (http://bucket.host/key). Most S3-compatible servers (MinIO, versitygw,
	// gofakes3) need it; AWS works either way.
	UsePathStyle bool

	// RequestTimeout bounds each call the store makes to S3: one write, one
	// read including the SDK's retries, one page of a listing. Zero means
	// DefaultRequestTimeout. Keep it well below the lease renewal interval: a
	// write that times out has an unknown outcome and must be read back before
	// the renew deadline.
	RequestTimeout time.Duration

	// HTTPClient sends the requests; *http.Client satisfies it. Nil means the
	// AWS SDK's default client. Tests use it to reach an httptest server.
	HTTPClient aws.HTTPClient

	// AccessKeyID, SecretAccessKey and SessionToken set static credentials,
	// for tests against MinIO, versitygw or gofakes3. Leave them empty in
	// production: the default AWS credential chain is used then (environment,
	// shared files, the ECS task role, the EC2 instance role), so an ECS task
	// whose role may read and write the prefix needs no configuration.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string

	// Logger receives debug lines about writes and warnings about unknown
	// outcomes, and the AWS SDK's own log lines. Nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns a Config for AWS S3 with the default prefix and request
// timeout. Set Bucket before use.
func DefaultConfig() Config {
	return Config{
		Prefix:         DefaultPrefix,
		RequestTimeout: DefaultRequestTimeout,
	}
}

// Validate reports the first problem with c, or nil. [New] calls it.
func (c Config) Validate() error {
	var errs []string
	switch {
	case c.Bucket == "":
		errs = append(errs, "Bucket is required")
	case strings.ContainsAny(c.Bucket, "/ \t\n") || len(c.Bucket) > 255:
		errs = append(errs, fmt.Sprintf("Bucket %q is not a bucket name (no slashes or spaces; a prefix goes in Prefix)", c.Bucket))
	}
	if strings.HasPrefix(c.Prefix, "/") {
		errs = append(errs, fmt.Sprintf("Prefix %q must not start with a slash (S3 keys do not)", c.Prefix))
	}
	if len(c.Prefix) > 900 {
		errs = append(errs, fmt.Sprintf("Prefix is %d bytes, want at most 900 (S3 keys are at most 1024)", len(c.Prefix)))
	}
	if c.Region != "" && strings.Trim(c.Region, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		errs = append(errs, fmt.Sprintf("Region %q is not a region name such as \"eu-west-1\"", c.Region))
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("Endpoint %q is not an http:// or https:// URL with a host", c.Endpoint))
		}
	}
	if c.RequestTimeout < 0 {
		errs = append(errs, fmt.Sprintf("RequestTimeout %v is negative", c.RequestTimeout))
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		errs = append(errs, "AccessKeyID and SecretAccessKey must be set together (or both left empty for the default credential chain)")
	}
	if c.SessionToken != "" && c.AccessKeyID == "" {
		errs = append(errs, "SessionToken needs AccessKeyID and SecretAccessKey")
	}
	if len(errs) > 0 {
		return errors.New("s3store: invalid config: " + strings.Join(errs, "; "))
	}
	return nil
}
