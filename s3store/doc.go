// Package s3store implements [lease.Store] over an S3 bucket with the AWS SDK for
// Go v2. It works with AWS S3 and with S3-compatible servers that honour
// conditional writes (MinIO, versitygw, gofakes3; see package s3fake for an
// embedded one).
//
// # Every write is conditional
//
// Create is a PutObject with If-None-Match: * and Update a PutObject with If-Match
// and the ETag the caller last read or wrote. The answers map onto the lease
// vocabulary:
//
//   - 412 PreconditionFailed, 409 ConditionalRequestConflict, and 404 NoSuchKey on
//     an update (AWS, MinIO and versitygw answer 404 when If-Match names a missing
//     key; gofakes3 answers 412): [lease.ErrPreconditionFailed], not written;
//   - a timeout, a reset connection, a context that ended in flight, or any 5xx:
//     [*lease.UnknownOutcomeError]. The write may have landed; the caller reads the
//     object back and looks for its own writeId;
//   - a clear refusal (403, 400, NoSuchBucket, a wrong region) and a request that
//     never left (connection refused, unknown host, no credentials): a plain error
//     that says what to fix, not written.
//
// The SDK's own retries are off for writes: a retried PUT whose first attempt
// landed comes back 412 and would look like a lost race. GetObject and
// ListObjectsV2 keep the SDK's retries (three attempts, backoff of at most a
// second, all within Config.RequestTimeout).
//
// # Time
//
// Every [lease.Meta] carries the server's Date header, captured from the response
// (whole seconds on every server). Get returns ETag, Last-Modified and Date;
// Create and Update return the ETag and Date of the PUT response (S3 sends no
// Last-Modified on a write). List follows pagination to the end and reports the
// earliest Date of its pages. ETags are returned in their quoted form everywhere,
// so an ETag from a PUT, a GET and a LIST compare equal as strings.
//
// # Configuration
//
// [New] takes a [Config]; with no static credentials it uses the default AWS
// credential chain, so an ECS task role just works. The role needs s3:ListBucket on
// the bucket and s3:GetObject and s3:PutObject on the prefix; never
// s3:DeleteObject. Call [Store.Check] at start: it turns a missing bucket, access
// denied, unknown credentials, a wrong region or an unreachable endpoint into an
// error that says what to fix. [NewFromClient] wraps a client built elsewhere.
package s3store
