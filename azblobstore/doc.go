// Package azblobstore implements [lease.Store] over an Azure Blob Storage
// container with the official Azure SDK for Go (azblob). It works with Azure
// Storage accounts and with the Azurite emulator.
//
// # Every write is conditional
//
// Create is a Put Blob (a block blob upload in one request) with
// If-None-Match: *, and Update a Put Blob with If-Match and the ETag the
// caller last read or wrote. The answers map onto the lease vocabulary:
//
//   - 412 ConditionNotMet, 409 BlobAlreadyExists (Azure's answer to
//     If-None-Match: * on an existing blob), and 404 BlobNotFound on an update:
//     [lease.ErrPreconditionFailed], not written;
//   - a timeout, a reset connection, a context that ended in flight, or any
//     5xx: [*lease.UnknownOutcomeError]. The write may have landed; the caller
//     reads the blob back and looks for its own writeId;
//   - a clear refusal (403, a missing container, a refused credential) and a
//     request that never left (connection refused, unknown host): a plain
//     error that says what to fix, not written.
//
// The SDK's retries are off for writes (per call, through
// policy.WithRetryOptions): a retried Put Blob whose first attempt landed
// comes back 412 and would look like a lost race. Get Blob and List Blobs keep
// a few quick retries, all within Config.RequestTimeout.
//
// # Time
//
// Every [lease.Meta] carries the server's Date header (whole seconds) from
// the response. Get, Create and Update return the ETag, Last-Modified and
// Date (Azure sends Last-Modified on Put Blob too). List follows NextMarker
// to the end and reports the earliest Date of its pages. ETags are returned
// in their quoted form everywhere (listings carry them unquoted), so an ETag
// from a write, a read and a listing compare equal as strings.
//
// # Configuration
//
// [New] takes a [Config]: the account URL, the container (which must exist),
// a prefix and a credential: shared key (AccountName and AccountKey, as for
// Azurite) or a Microsoft Entra ID token credential (Config.Credential; pass
// azidentity.NewDefaultAzureCredential for a managed identity: this package
// does not import azidentity itself). Call [Store.Check] at start: it turns a
// missing container, a refused credential or an unreachable endpoint into an
// error that says what to fix.
package azblobstore
