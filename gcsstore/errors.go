package gcsstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/nodeid/nodeid/internal/httpdate"
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

// response is what a client error tells about the HTTP exchange.
type response struct {
	status int         // 0: no HTTP error status was received
	reason string      // the JSON API's error reason ("conditionNotMet"), or ""
	header http.Header // the answer's headers, when the client kept them
}

func inspect(err error) response {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		r := response{status: ge.Code, header: ge.Header}
		if len(ge.Errors) > 0 {
			r.reason = ge.Errors[0].Reason
		}
		return r
	}
	return response{}
}

// compact cuts a client error to what an operator acts on (netfail.Trim):
// an answer to its HTTP status, reason and message ("HTTP 403 forbidden:
// ... does not have storage.objects.list access ..."), without googleapi's
// "More details" lines and the response body; a request that got no answer
// to its cause, without the URL and its query.
func compact(err error) error {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return netfail.TrimToCause(err)
	}
	text := fmt.Sprintf("HTTP %d", ge.Code)
	if r := inspect(err).reason; r != "" {
		text += " " + r
	}
	if ge.Message != "" {
		text += ": " + ge.Message
	}
	return netfail.Trim(err, text)
}

// notSent reports whether err shows that a request never reached the server:
// the connection could not be made, the host name did not resolve, or no
// request reached the transport at all (a credential that could not be
// fetched, a context that ended before).
func notSent(err error, x *httpdate.Exchange) bool {
	return !x.WasSent() || netfail.NotSent(err)
}

// writeError classifies the error of a conditional upload:
//   - 412 (conditionNotMet: ifGenerationMatch did not hold; also an update
//     of a missing object): lease.ErrPreconditionFailed (not written);
//   - 409 (a conflicting concurrent change of the object): a
//     *lease.ConflictError, not written, and nothing said of who won;
//   - no response although the request may have left (timeout, reset
//     connection, context ended in flight), a 5xx, a 429 or 408, or a 2xx
//     that did not parse: *lease.UnknownOutcomeError. Cloud Storage's retry
//     guide lists 408, 429 and 5xx together as transient answers and
//     promises nothing about whether a throttled write was applied, so a
//     429 is read back like a 503, never taken as "not written";
//   - 401, 403, 404 (the bucket: an upload never answers 404 for its
//     object) and a request that never left: an error that says what to fix
//     (not written), matching lease.ErrMisconfigured where retrying cannot
//     help.
func (s *Store) writeError(op, key string, err error, x *httpdate.Exchange) error {
	r := inspect(err)
	err = compact(err)
	switch {
	case r.status == http.StatusPreconditionFailed:
		return fmt.Errorf("gcsstore: %s %s: %w (HTTP 412 %s)", op, key, lease.ErrPreconditionFailed, r.reason)
	case r.status == http.StatusConflict:
		return &lease.ConflictError{Op: op, Key: key, Err: err}
	case r.status >= 500 || r.status == http.StatusTooManyRequests || r.status == http.StatusRequestTimeout:
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err, ServerError: true}
	case r.status >= 200 && r.status < 300:
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err}
	case r.status == 0 && !notSent(err, x):
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err}
	}
	return s.describe(op, key, r, err)
}

// readError classifies the error of a download or a listing: a missing
// object on get is lease.ErrNotFound; everything else is described.
func (s *Store) readError(op, key string, err error, _ *httpdate.Exchange) error {
	if op == opGet && errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("gcsstore: get %s: %w", key, lease.ErrNotFound)
	}
	return s.describe(op, key, inspect(err), compact(err))
}

// describe turns an error into one that says what to fix where it can,
// naming the endpoint and bucket and keeping the client error in the chain.
// Answers that show a configuration error, which retrying cannot fix, match
// lease.ErrMisconfigured.
func (s *Store) describe(op, key string, r response, err error) error {
	what := op
	if key != "" {
		what += " " + key
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("gcsstore: %s: %s: %w", what, fmt.Sprintf(format, args...), err)
	}
	definite := func(format string, args ...any) error { return lease.Misconfigured(fail(format, args...)) }
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, storage.ErrBucketNotExist) || r.status == http.StatusNotFound:
		return definite("bucket %q does not exist at %s: create it, or fix Bucket (or Endpoint)", s.name, s.endpoint)
	case r.status == http.StatusUnauthorized:
		return definite("%s refused the credentials for bucket %q: check the identity behind Application Default Credentials "+
			"(the workload's service account, GOOGLE_APPLICATION_CREDENTIALS)", s.endpoint, s.name)
	case r.status == http.StatusForbidden:
		return definite("access denied to bucket %q at %s: grant the identity behind Application Default Credentials "+
			"roles/storage.objectUser on the bucket (objects get, list, create and delete: an overwrite needs delete)", s.name, s.endpoint)
	case r.status >= 200 && r.status < 300, r.status == 0 && (errors.As(err, &syntaxErr) || errors.As(err, &typeErr)):
		return definite("%s answered with a body that is not a Cloud Storage JSON API response (bucket %q): is Endpoint a Cloud Storage endpoint (ending in /storage/v1/)?", s.endpoint, s.name)
	case r.status != 0:
		return fail("%s refused the request for bucket %q", s.endpoint, s.name)
	}
	ep := netfail.Endpoint{URL: s.endpoint, Holding: fmt.Sprintf("bucket %q", s.name), Setting: "Endpoint", Timeout: s.timeout}
	if msg, def, ok := ep.Describe(err); ok && def {
		return definite("%s", msg)
	} else if ok {
		return fail("%s", msg)
	}
	return fmt.Errorf("gcsstore: %s (bucket %q at %s): %w", what, s.name, s.endpoint, err)
}
