package netfail

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDescribe(t *testing.T) {
	e := Endpoint{URL: "http://h:1", Holding: `bucket "b"`, Setting: "Endpoint", DNSHint: " (hint)", Timeout: 2 * time.Second}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		err      error
		want     string
		definite bool
		notSent  bool
	}{
		{&net.DNSError{Name: "h", Err: "no such host", IsNotFound: true}, `host "h" does not exist (DNS): check Endpoint (hint)`, true, true},
		{&net.DNSError{Name: "h", Err: "server misbehaving", IsTemporary: true}, `cannot resolve host "h": check Endpoint and the DNS resolver`, false, true},
		{fmt.Errorf("send: %w", refused), `http://h:1 refuses connections (bucket "b"): is the server running and Endpoint right?`, true, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, `cannot connect to http://h:1 (bucket "b")`, false, true},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), `no answer from http://h:1 (bucket "b") within 2s`, false, false},
	} {
		msg, definite, ok := e.Describe(tc.err)
		if !ok || !strings.HasPrefix(msg, tc.want) || definite != tc.definite {
			t.Errorf("Describe(%v) = %q, definite %v, ok %v; want %q, definite %v", tc.err, msg, definite, ok, tc.want, tc.definite)
		}
		if NotSent(tc.err) != tc.notSent {
			t.Errorf("NotSent(%v) = %v, want %v", tc.err, !tc.notSent, tc.notSent)
		}
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	if _, _, ok := e.Describe(reset); ok || NotSent(reset) {
		t.Errorf("a reset after sending: Describe ok %v, NotSent %v; want neither (the outcome is unknown)", ok, NotSent(reset))
	}
}

// TestTrimToCause: a request that got no answer reads as its cause, without
// the URL, and stays err for errors.Is; an error nothing frames is itself.
func TestTrimToCause(t *testing.T) {
	refused := os.NewSyscallError("connect", syscall.ECONNREFUSED)
	framed := &url.Error{Op: "Get", URL: "http://h:1/b/o?x=1", Err: refused}
	got := TrimToCause(framed)
	if got.Error() != refused.Error() || !errors.Is(got, syscall.ECONNREFUSED) {
		t.Errorf("TrimToCause(%v) = %q, want %q, still ECONNREFUSED", framed, got, refused)
	}
	plain := errors.New("plain")
	if got := TrimToCause(plain); got != plain {
		t.Errorf("TrimToCause(plain) = %v, want plain itself", got)
	}
}
