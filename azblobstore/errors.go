package azblobstore

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/nodeid/nodeid/internal/netfail"
	"github.com/nodeid/nodeid/lease"
)

// Operation names, as in error messages and lease.UnknownOutcomeError.Op.
const (
	opCreate = "create"
	opUpdate = "update"
	opGet    = "get"
	opList   = "list"
	opCheck  = "check"
)

// Azure Blob error codes (the x-ms-error-code header) this package acts on.
const (
	codeConditionNotMet      = "ConditionNotMet"
	codeBlobAlreadyExists    = "BlobAlreadyExists"
	codeBlobNotFound         = "BlobNotFound"
	codeContainerNotFound    = "ContainerNotFound"
	codeAuthenticationFailed = "AuthenticationFailed"
	codeAuthorizationFailure = "AuthorizationFailure"
	codeAuthPermMismatch     = "AuthorizationPermissionMismatch"
)

// response is what an SDK error tells about the HTTP exchange.
type response struct {
	status int    // 0: no response was received
	code   string // the Azure error code, or ""
	header http.Header
}

func inspect(err error) response {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		r := response{status: re.StatusCode, code: re.ErrorCode}
		if re.RawResponse != nil {
			r.header = re.RawResponse.Header
		}
		return r
	}
	return response{}
}

// compact cuts an SDK error to what an operator acts on (netfail.Trim): an
// answer to its HTTP status, Azure error code and message ("HTTP 404
// ContainerNotFound: The specified container does not exist."), without
// azcore's dump of the request, the response and its XML body; a request
// that got no answer to its cause, without the URL.
func compact(err error) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return netfail.TrimToCause(err)
	}
	text := fmt.Sprintf("HTTP %d", re.StatusCode)
	if re.ErrorCode != "" {
		text += " " + re.ErrorCode
	}
	if re.RawResponse != nil { // Azure puts its message in the status line
		if _, msg, ok := strings.Cut(re.RawResponse.Status, " "); ok && msg != "" && msg != http.StatusText(re.StatusCode) {
			text += ": " + msg
		}
	}
	return netfail.Trim(err, text)
}

// notSent reports whether err shows that a request never reached the server:
// the connection could not be made or the host name did not resolve.
func notSent(err error) bool {
	return netfail.NotSent(err)
}

// writeError classifies the error of a conditional Put Blob:
//   - 412 ConditionNotMet, 409 BlobAlreadyExists (Azure's answer to
//     If-None-Match: * on an existing blob) and, on update, 404 BlobNotFound:
//     lease.ErrPreconditionFailed (not written);
//   - no response although the request may have left (timeout, reset
//     connection, context ended in flight), a 5xx, or a 2xx that did not
//     parse: *lease.UnknownOutcomeError;
//   - a blob lease someone took (LeaseIdMissing and the other Lease* codes,
//     412 or 409): an error matching lease.ErrMisconfigured, not a lost race;
//   - any other refusal (403, 400, ContainerNotFound) and a request that
//     never left: an error that says what to fix (not written).
func (s *Store) writeError(op, key string, err error) error {
	r := inspect(err)
	err = compact(err)
	switch {
	case strings.HasPrefix(r.code, "Lease"):
		// LeaseIdMissing, LeaseLost... (412 or 409): someone took an Azure
		// blob lease on the blob. Not written, and not a lost race: no
		// nodeid write takes one, and retrying cannot help until it is broken.
		return lease.Misconfigured(fmt.Errorf("azblobstore: %s %s: blob %s%s in container %q at %s has an Azure blob lease (HTTP %d %s), which nodeid never takes: "+
			"break it (az storage blob lease break): %w", op, key, s.prefix, key, s.name, s.endpoint, r.status, r.code, err))
	case r.status == http.StatusPreconditionFailed || r.code == codeConditionNotMet:
		return fmt.Errorf("azblobstore: %s %s: %w (HTTP %d %s)", op, key, lease.ErrPreconditionFailed, r.status, r.code)
	case r.status == http.StatusConflict && r.code == codeBlobAlreadyExists:
		return fmt.Errorf("azblobstore: %s %s: the blob exists: %w (HTTP 409 %s)", op, key, lease.ErrPreconditionFailed, r.code)
	case op == opUpdate && r.status == http.StatusNotFound && r.code == codeBlobNotFound:
		return fmt.Errorf("azblobstore: %s %s: the blob does not exist: %w (HTTP 404 %s)", op, key, lease.ErrPreconditionFailed, r.code)
	case r.status >= 500:
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err, ServerError: true}
	case r.status >= 200 && r.status < 300:
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err}
	case r.status == 0 && !notSent(err):
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err}
	}
	return s.describe(op, key, r, err)
}

// readError classifies the error of a Get Blob or List Blobs: 404
// BlobNotFound on get is lease.ErrNotFound; everything else is described.
func (s *Store) readError(op, key string, err error) error {
	r := inspect(err)
	err = compact(err)
	if op == opGet && r.status == http.StatusNotFound && (r.code == codeBlobNotFound || r.code == "") {
		return fmt.Errorf("azblobstore: get %s: %w", key, lease.ErrNotFound)
	}
	return s.describe(op, key, r, err)
}

// describe turns an error into one that says what to fix where it can,
// naming the account URL and container and keeping the SDK error in the
// chain. Answers that show a configuration error, which retrying cannot fix,
// match lease.ErrMisconfigured.
func (s *Store) describe(op, key string, r response, err error) error {
	what := op
	if key != "" {
		what += " " + key
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("azblobstore: %s: %s: %w", what, fmt.Sprintf(format, args...), err)
	}
	definite := func(format string, args ...any) error { return lease.Misconfigured(fail(format, args...)) }
	switch {
	case r.code == codeContainerNotFound:
		return definite("container %q does not exist at %s: create it, or fix Container or AccountURL", s.name, s.endpoint)
	case r.code == codeAuthenticationFailed:
		return definite("%s refused the credential for container %q: check AccountName and AccountKey (or the identity behind Credential) and this machine's clock", s.endpoint, s.name)
	case r.code == codeAuthorizationFailure || r.code == codeAuthPermMismatch || r.status == http.StatusForbidden:
		return definite("access denied to container %q at %s: check the credential (AccountName and AccountKey, the SAS's permissions and expiry, "+
			"or the Storage Blob Data Contributor role of the identity behind Credential)", s.name, s.endpoint)
	case r.status == http.StatusNotFound && (op == opList || op == opCheck || op == opCreate || op == opUpdate):
		return definite("%s answered 404 (%s) for container %q: is AccountURL an Azure Blob endpoint (with the account name in the path for Azurite)?", s.endpoint, r.code, s.name)
	case r.status >= 200 && r.status < 300:
		return definite("%s answered HTTP %d with a body that is not an Azure Blob response (container %q): is it an Azure Blob endpoint?", s.endpoint, r.status, s.name)
	case r.status != 0:
		return fail("%s refused the request for container %q", s.endpoint, s.name)
	}
	ep := netfail.Endpoint{URL: s.endpoint, Holding: fmt.Sprintf("container %q", s.name), Setting: "AccountURL", Timeout: s.timeout}
	if msg, def, ok := ep.Describe(err); ok && def {
		return definite("%s", msg)
	} else if ok {
		return fail("%s", msg)
	}
	return fmt.Errorf("azblobstore: %s (container %q at %s): %w", what, s.name, s.endpoint, err)
}
