package s3store

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Bucket settings that cost, not that break. A versioned bucket keeps every
// renewal as a noncurrent version: a renewal every 5 s is 17,280 versions a
// day per node ID, and S3 throttles writes to a key with millions of versions.
// Safety does not change (a conditional write is judged on the current
// version), but the cost and the throttling grow until a lifecycle rule
// expires the noncurrent versions. Object Lock keeps them for its retention
// whatever the lifecycle says.

// warnBucketSettings logs a warning for a versioned bucket whose noncurrent
// versions no lifecycle rule expires under the prefix, and for a bucket with
// Object Lock. It is advice: a setting it cannot read (access denied, a
// server without the API) is logged at debug level and skipped.
func (s *Store) warnBucketSettings(ctx context.Context) {
	if s.objectLockEnabled(ctx) {
		s.log.Warn("the bucket has Object Lock: every renewal is kept as a locked version for its retention, and no lifecycle rule can remove it sooner; "+
			"use a bucket without Object Lock for leases (deploy/README.md, \"The lease bucket\")", "bucket", s.bucket)
		return
	}
	if !s.versioned(ctx) {
		return
	}
	covered, known := s.noncurrentVersionsExpire(ctx)
	switch {
	case covered:
		s.log.Debug("the bucket is versioned; a lifecycle rule expires the noncurrent versions under the prefix")
	case known:
		s.log.Warn("the bucket is versioned and no lifecycle rule expires noncurrent versions under the prefix: every renewal is kept as a version; "+
			"add a rule with NoncurrentVersionExpiration (deploy/README.md, \"The lease bucket\")", "bucket", s.bucket, "prefix", s.prefix)
	default:
		s.log.Warn("the bucket is versioned: every renewal is kept as a version unless a lifecycle rule expires noncurrent versions "+
			"(this task may not read the lifecycle configuration: s3:GetLifecycleConfiguration); see deploy/README.md, \"The lease bucket\"",
			"bucket", s.bucket, "prefix", s.prefix)
	}
}

// versioned reports whether versioning is enabled (not suspended) on the
// bucket.
func (s *Store) versioned(ctx context.Context) bool {
	out, ok := readBucketSetting(ctx, s, "versioning", func(ctx context.Context) (*s3.GetBucketVersioningOutput, error) {
		return s.client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(s.bucket)})
	})
	return ok && out.Status == types.BucketVersioningStatusEnabled
}

// objectLockEnabled reports whether the bucket has Object Lock enabled. A
// bucket without it answers 404 ObjectLockConfigurationNotFoundError.
func (s *Store) objectLockEnabled(ctx context.Context) bool {
	out, ok := readBucketSetting(ctx, s, "Object Lock configuration", func(ctx context.Context) (*s3.GetObjectLockConfigurationOutput, error) {
		return s.client.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(s.bucket)})
	})
	return ok && out.ObjectLockConfiguration != nil && out.ObjectLockConfiguration.ObjectLockEnabled == types.ObjectLockEnabledEnabled
}

// noncurrentVersionsExpire reports whether an enabled lifecycle rule expires
// the noncurrent versions of every key under the prefix; known is false when
// the configuration could not be read (a bucket without one answers 404
// NoSuchLifecycleConfiguration: known, and none covers).
func (s *Store) noncurrentVersionsExpire(ctx context.Context) (covered, known bool) {
	out, ok := readBucketSetting(ctx, s, "lifecycle configuration", func(ctx context.Context) (*s3.GetBucketLifecycleConfigurationOutput, error) {
		out, err := s.client.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(s.bucket)})
		if err != nil && inspect(err).code == "NoSuchLifecycleConfiguration" {
			return &s3.GetBucketLifecycleConfigurationOutput{}, nil // no rules
		}
		return out, err
	})
	if !ok {
		return false, false
	}
	for _, r := range out.Rules {
		if r.Status == types.ExpirationStatusEnabled && r.NoncurrentVersionExpiration != nil && coversPrefix(r, s.prefix) {
			return true, true
		}
	}
	return false, true
}

// readBucketSetting calls get within the store's timeout. A setting it
// cannot read (access denied, a server without the API) is advice lost, not
// a failure: the error is logged at debug level, naming what, and ok is
// false.
func readBucketSetting[T any](ctx context.Context, s *Store, what string, get func(context.Context) (T, error)) (out T, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := get(ctx)
	if err != nil {
		s.log.Debug("could not read the bucket's "+what, "err", err)
		return out, false
	}
	return out, true
}

// coversPrefix reports whether rule applies to every key under prefix: its
// filter is a key prefix of prefix (or none), with no tag or size condition,
// which lease objects would not all meet.
func coversPrefix(rule types.LifecycleRule, prefix string) bool {
	//lint:ignore SA1019 a rule written in the deprecated top-level form still applies, and S3 still returns it
	p := aws.ToString(rule.Prefix)
	if f := rule.Filter; f != nil {
		if f.Tag != nil || f.ObjectSizeGreaterThan != nil || f.ObjectSizeLessThan != nil {
			return false
		}
		if a := f.And; a != nil {
			if len(a.Tags) > 0 || a.ObjectSizeGreaterThan != nil || a.ObjectSizeLessThan != nil {
				return false
			}
			p = aws.ToString(a.Prefix)
		} else if f.Prefix != nil {
			p = aws.ToString(f.Prefix)
		}
	}
	return strings.HasPrefix(prefix, p)
}
