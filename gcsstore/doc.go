// Package gcsstore implements [lease.Store] over a Google Cloud Storage bucket
// with the official client, cloud.google.com/go/storage, on its JSON API over
// HTTP. It works with Cloud Storage and with the fake-gcs-server emulator.
//
// # Every write is conditional
//
// Create is an object upload with ifGenerationMatch=0 (the object must not
// exist), and Update one with ifGenerationMatch set to the generation the
// caller last read or wrote. Each is one multipart upload request
// (Writer.ChunkSize 0; lease objects are far below any chunk size). The
// answers map onto the lease vocabulary:
//
//   - 412 conditionNotMet (the object exists, or its generation moved on, or
//     an update's object is missing): [lease.ErrPreconditionFailed], not
//     written;
//   - 409 (a conflicting concurrent change): a [*lease.ConflictError];
//   - a timeout, a reset connection, a context that ended in flight, any
//     5xx, and 408 and 429: [*lease.UnknownOutcomeError]. The write may have
//     landed; the caller reads the object back and looks for its own
//     writeId. Cloud Storage's retry guide groups 429 with 408 and 5xx as
//     transient answers and does not say that a throttled write was not
//     applied, so it is never taken for "not written";
//   - 401, 403, a missing bucket (404), and a request that never left
//     (connection refused, unknown host, no credential): an error that says
//     what to fix, not written, matching [lease.ErrMisconfigured] where
//     retrying cannot help.
//
// The client's retries are off for writes (ObjectHandle.Retryer with
// storage.RetryNever): a retried conditional upload whose first attempt
// landed comes back 412 and would look like a lost race. Downloads and
// listings keep the client's retries, all within Config.RequestTimeout.
//
// # ETags are generations
//
// The ETag of an object is its generation, a decimal number in quotes, as in
// `"1701234567890123"`; Cloud Storage writes a new generation exactly when a
// body is written, and the write conditions compare it. (Cloud Storage's own
// etag also changes with metadata, which nodeid never writes.) An ETag that
// is not of this form matches nothing: Update returns ErrPreconditionFailed
// without a request.
//
// # Conditional reads
//
// [Store.GetIfChanged] makes the store a [lease.ConditionalReader], for
// keep-alive by reads: a download with ifGenerationNotMatch set to the
// generation the ETag names. Cloud Storage documents that such a download
// fails with 304 Not Modified when the object's generation is that value; it
// does not document the headers of that 304. A 304 is credited
// ([lease.ErrNotModified]) only when its x-goog-generation header is the
// generation asked for; one without the header, or with another generation,
// is [lease.ErrNotModifiedUnproven] and proves nothing, so
// [lease.ProbeReads] would refuse the store for keep-alive by reads. (Its
// ETag header is Cloud Storage's own etag, not the generation, and is not
// looked at.) fake-gcs-server v1.56.1 ignores the condition on a download
// and answers 200 with the object and its unchanged generation, which a
// holder may credit too. An ETag that names no generation makes the read a
// plain Get.
//
// # Time
//
// The client does not return response headers, so the store's transport
// (under the authentication layer) records the HTTP Date header of each
// response into the call's context: every [lease.Meta] carries the server's
// Date (whole seconds). LastModified is the object's updated time: from the
// upload's answer on a write, from Last-Modified (whole seconds) on a read,
// from the listing's updated field on List. List follows nextPageToken to the
// end and reports the earliest Date of its pages.
//
// Cloud Storage sustains about one write per second to one object name
// ([MinWriteInterval]); [Store.MinWriteInterval] reports it, and nodeid.New
// refuses a renewal interval below it.
//
// # Configuration
//
// [New] takes a [Config]: the bucket (which must exist), a prefix, and by
// default Application Default Credentials (the metadata server on Cloud Run
// and GKE; GOOGLE_APPLICATION_CREDENTIALS elsewhere), or, for an emulator,
// an Endpoint and NoAuth. Call [Store.Check] at start: it turns a missing
// bucket, a refused credential or an unreachable endpoint into an error that
// says what to fix.
package gcsstore
