// Package netfail is the one copy of what the HTTP stores (s3store,
// azblobstore, gcsstore) conclude from a failure to reach their endpoint: a
// request that never left (so a write was not applied), and what to check,
// told apart from what a retry may fix.
package netfail

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"time"
)

// NotSent reports whether err shows that a request never reached the
// server: the host name did not resolve or the connection was not made.
func NotSent(err error) bool {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	return errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial")
}

// Endpoint is where a store sends its requests, as its messages name it.
type Endpoint struct {
	// URL is the endpoint's address.
	URL string
	// Holding names what the store reaches there, for example
	// `bucket "leases"`.
	Holding string
	// Setting names the configuration that sets URL, with a hint when one
	// helps: "Endpoint", "AccountURL".
	Setting string
	// DNSHint is added when the host does not exist, for example
	// " (without UsePathStyle the bucket name is put in the host name)".
	DNSHint string
	// Timeout is the bound on one request.
	Timeout time.Duration
}

// Describe says what err shows about reaching e: a host that does not
// exist, a refused connection (definite: retrying cannot fix either), a
// host that did not resolve for now, a connection not made, no answer
// within the timeout. ok is false when err is none of these.
func (e Endpoint) Describe(err error) (msg string, definite, ok bool) {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fmt.Sprintf("host %q does not exist (DNS): check %s%s", dnsErr.Name, e.Setting, e.DNSHint), true, true
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve host %q: check %s and the DNS resolver", dnsErr.Name, e.Setting), false, true
	case errors.As(err, &opErr) && opErr.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("%s refuses connections (%s): is the server running and %s right?", e.URL, e.Holding, e.Setting), true, true
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Sprintf("cannot connect to %s (%s): is the server running and %s right?", e.URL, e.Holding, e.Setting), false, true
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer from %s (%s) within %v", e.URL, e.Holding, e.Timeout), false, true
	}
	return "", false, false
}

// Trim returns err with its text replaced by text: a store SDK's error cut
// to what an operator acts on (the HTTP status, the store's error code and
// message), without the request IDs, the response dump and the URLs that
// made 200 to 600 characters, some of them lines, of every store error.
// err stays in the chain: errors.Is and errors.As see through it.
func Trim(err error, text string) error { return &trimmed{err: err, text: text} }

type trimmed struct {
	err  error
	text string
}

func (e *trimmed) Error() string { return e.text }
func (e *trimmed) Unwrap() error { return e.err }

// TrimToCause returns err cut to its Cause (Trim), or err itself when
// nothing frames it: the text of a request that got no answer.
func TrimToCause(err error) error {
	if c := Cause(err); c != err {
		return Trim(err, c.Error())
	}
	return err
}

// Cause returns what lies under net/http's framing of a request that got no
// answer: the error a *url.Error in err's chain wraps (its URL repeats the
// endpoint, the key and every query parameter; so do the SDKs' retry
// wrappers around it), or err itself when there is none.
func Cause(err error) error {
	var ue *url.Error
	for errors.As(err, &ue) && ue.Err != nil && ue.Err != err {
		err = ue.Err
	}
	return err
}
