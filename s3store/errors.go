package s3store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"

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

// response is what an SDK error tells about the HTTP exchange.
type response struct {
	status int    // 0: no response was received
	code   string // S3 error code ("NoSuchKey"), or "" when there is none
	header http.Header
}

func inspect(err error) response {
	var r response
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		r.status = re.HTTPStatusCode()
		r.header = re.Response.Header
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		r.code = ae.ErrorCode()
	}
	return r
}

// compact cuts the SDK's error of an operation (smithy.OperationError) to
// what an operator acts on (netfail.Trim): the operation, the HTTP status,
// the S3 error code and its message ("S3 ListObjectsV2: HTTP 404
// NoSuchBucket: The specified bucket does not exist"), without the request
// and host IDs and the SDK's framing. Any other err is returned as it is.
func compact(err error) error {
	var oe *smithy.OperationError
	if !errors.As(err, &oe) {
		return err
	}
	text := oe.ServiceID + " " + oe.OperationName + ": "
	r := inspect(err)
	var ae smithy.APIError
	switch {
	case errors.As(err, &ae):
		if r.status != 0 {
			text += fmt.Sprintf("HTTP %d ", r.status)
		}
		text += ae.ErrorCode()
		if msg := ae.ErrorMessage(); msg != "" {
			text += ": " + msg
		}
	case r.status != 0:
		text += fmt.Sprintf("HTTP %d", r.status)
	default:
		text += causeOf(oe.Err).Error()
	}
	return netfail.Trim(err, text)
}

// causeOf returns what lies under the SDK's framing of a request that got no
// HTTP answer (a refused connection, a timeout): the innermost error below
// its retry, send, response-error and URL wrappers.
func causeOf(err error) error {
	for {
		var next error
		var re *smithyhttp.ResponseError
		var se *smithyhttp.RequestSendError
		switch {
		case errors.As(err, &re) && re.Err != nil:
			next = re.Err
		case errors.As(err, &se) && se.Err != nil:
			next = se.Err
		default:
			next = netfail.Cause(err)
		}
		if next == nil || next == err {
			return err
		}
		err = next
	}
}

// notSent reports whether err shows that a request never reached the server:
// the connection could not be made, or the SDK failed before sending
// (credentials, signing, endpoint resolution).
func notSent(err error) bool {
	if netfail.NotSent(err) {
		return true
	}
	var sendErr *smithyhttp.RequestSendError
	var canceled *smithy.CanceledError
	return !errors.As(err, &sendErr) && !errors.As(err, &canceled)
}

// writeError classifies the error of a conditional PutObject:
//   - 412 PreconditionFailed and, on update, 404 NoSuchKey:
//     lease.ErrPreconditionFailed (not written);
//   - 409 ConditionalRequestConflict (a concurrent conditional write was in
//     progress): a *lease.ConflictError, matching lease.ErrConflict and
//     lease.ErrPreconditionFailed (not written, and who won is unknown:
//     AWS says re-read the ETag);
//   - 501 NotImplemented: the server does not implement the conditional
//     header, so it cannot run nodeid: lease.ErrMisconfigured (not written);
//   - no response although the request may have left (timeout, reset
//     connection, context ended in flight), a 5xx (ServerError: the store saw
//     it), or a 2xx whose body did not parse: *lease.UnknownOutcomeError;
//   - any other refusal (403, 400, NoSuchBucket, a redirect) and a request that
//     never left: an error saying what to fix (not written), matching
//     lease.ErrMisconfigured when retrying cannot help (see describe).
func (s *Store) writeError(op, key string, err error) error {
	r := inspect(err)
	err = compact(err)
	switch {
	case r.status == http.StatusConflict || r.code == "ConditionalRequestConflict":
		return &lease.ConflictError{Op: op, Key: key, Err: fmt.Errorf("s3store: HTTP %d %s: %w", r.status, r.code, err)}
	case r.status == http.StatusPreconditionFailed || r.code == "PreconditionFailed":
		return fmt.Errorf("s3store: %s %s: %w (HTTP %d %s)", op, key, lease.ErrPreconditionFailed, r.status, r.code)
	case op == opUpdate && r.status == http.StatusNotFound && r.code == "NoSuchKey":
		return fmt.Errorf("s3store: %s %s: the object does not exist: %w (HTTP 404 NoSuchKey)", op, key, lease.ErrPreconditionFailed)
	case r.status == http.StatusNotImplemented:
		header := lease.CondIfNoneMatch
		if op == opUpdate {
			header = lease.CondIfMatch
		}
		return lease.Misconfigured(fmt.Errorf("s3store: %s %s: %s answered HTTP 501 %s to a PUT with %s: this store cannot do conditional writes, "+
			"which nodeid needs (AWS S3, MinIO and versitygw have them): %w", op, key, s.endpoint, r.code, header, err))
	case r.status >= 500:
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err, ServerError: true}
	case r.status >= 200 && r.status < 300:
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err}
	case r.status == 0 && !notSent(err):
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err}
	}
	return s.describe(op, key, r, err)
}

// readError classifies the error of a GetObject or ListObjectsV2: 404
// NoSuchKey on get is lease.ErrNotFound; everything else is described.
func (s *Store) readError(op, key string, err error) error {
	r := inspect(err)
	err = compact(err)
	if op == opGet && r.status == http.StatusNotFound && (r.code == "NoSuchKey" || r.code == "NotFound") {
		return fmt.Errorf("s3store: get %s: %w", key, lease.ErrNotFound)
	}
	return s.describe(op, key, r, err)
}

// describe turns an error into one that says what to fix where it can, keeping
// the SDK error in the chain (errors.As finds smithy.APIError in it). The
// answers that show a configuration error, which retrying cannot fix (no
// such bucket, access denied, unknown or missing credentials, a wrong
// region or clock, an endpoint that is not S3, refuses connections or does
// not resolve), match lease.ErrMisconfigured; other HTTP errors, timeouts
// and a DNS lookup that failed for a while do not.
func (s *Store) describe(op, key string, r response, err error) error {
	what := op
	if key != "" {
		what += " " + key
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("s3store: %s: %s: %w", what, fmt.Sprintf(format, args...), err)
	}
	definite := func(format string, args ...any) error { return lease.Misconfigured(fail(format, args...)) }
	switch {
	case r.code == "NoSuchBucket":
		return definite("bucket %q does not exist at %s: create it, or fix Bucket, Endpoint or Region", s.bucket, s.endpoint)
	case r.code == "InvalidAccessKeyId" || r.code == "XAdminUserNotFound": // the second: versitygw, with a 404
		return definite("%s does not know the access key ID: check the credentials (AWS_ACCESS_KEY_ID, the task role, or AccessKeyID for S3-compatible servers)", s.endpoint)
	case r.code == "SignatureDoesNotMatch":
		return definite("the request signature does not match: check the secret access key (and, for S3-compatible servers, the Region they expect)")
	case r.code == "ExpiredToken" || r.code == "InvalidToken" || r.code == "TokenRefreshRequired":
		return definite("the session credentials expired or are invalid: refresh them (the default credential chain does this for a task role)")
	case r.code == "RequestTimeTooSkewed":
		return definite("this machine's clock is too far from the server's: fix the clock (NTP)")
	case r.code == "AuthorizationHeaderMalformed" || r.code == "PermanentRedirect" || r.code == "IllegalLocationConstraintException" ||
		r.status == http.StatusMovedPermanently:
		if want := r.header.Get("x-amz-bucket-region"); want != "" {
			return definite("bucket %q is in region %q, not %q: set Region to %q", s.bucket, want, s.region, want)
		}
		return definite("wrong region %q for bucket %q: set Region to the bucket's region", s.region, s.bucket)
	case r.status == http.StatusForbidden || r.code == "AccessDenied" || r.code == "AllAccessDisabled":
		return definite("access denied: %s", s.permissionHint(op))
	case r.status == http.StatusNotFound && (op == opList || op == opCheck):
		return definite("%s answered 404 to a listing of bucket %q without saying NoSuchBucket: is it an S3 endpoint, and does it need UsePathStyle?", s.endpoint, s.bucket)
	case r.status == http.StatusNotFound && (op == opUpdate || op == opCreate):
		return definite("%s answered 404 (%s) to a conditional write: is it an S3 endpoint, and does it need UsePathStyle?", s.endpoint, r.code)
	case r.status >= 200 && r.status < 300:
		return definite("%s answered HTTP %d with a body that is not an S3 response: is it an S3 endpoint?", s.endpoint, r.status)
	case r.status != 0:
		return fail("%s refused the request (HTTP %d %s)", s.endpoint, r.status, r.code)
	case strings.Contains(err.Error(), "get identity: "):
		// The SDK has no error type for this; the text is its own.
		return definite("no usable AWS credentials: give the task a role, or set AWS_PROFILE or AWS_ACCESS_KEY_ID (AccessKeyID for S3-compatible servers)")
	}
	ep := netfail.Endpoint{URL: s.endpoint, Holding: fmt.Sprintf("bucket %q", s.bucket), Setting: "Endpoint",
		DNSHint: " (without UsePathStyle the bucket name is put in the host name)", Timeout: s.timeout}
	if msg, def, ok := ep.Describe(err); ok && def {
		return definite("%s", msg)
	} else if ok {
		return fail("%s", msg)
	}
	return fmt.Errorf("s3store: %s: %w", what, err)
}

func (s *Store) permissionHint(op string) string {
	objects := fmt.Sprintf("arn:aws:s3:::%s/%s*", s.bucket, s.prefix)
	switch op {
	case opCreate, opUpdate:
		return "the task role needs s3:PutObject on " + objects
	case opGet:
		return "the task role needs s3:GetObject on " + objects + " (and s3:ListBucket on arn:aws:s3:::" + s.bucket + ", without which S3 answers 403 for a missing key)"
	default:
		return fmt.Sprintf("the task role needs s3:ListBucket on arn:aws:s3:::%s (for the prefix %q)", s.bucket, s.prefix)
	}
}

var discard = slog.New(slog.DiscardHandler)

// sdkLogger sends the AWS SDK's log lines to l: warnings as warnings, the rest
// at debug level.
func sdkLogger(l *slog.Logger) logging.Logger {
	l = l.With("component", "aws-sdk")
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		level := slog.LevelDebug
		if c == logging.Warn {
			level = slog.LevelWarn
		}
		l.Log(context.Background(), level, fmt.Sprintf(format, v...))
	})
}
