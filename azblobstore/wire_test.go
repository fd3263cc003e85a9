package azblobstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/lease"
)

// fakeTransport answers every request with reply and counts the attempts.
type fakeTransport struct {
	calls atomic.Int32
	reply func(*http.Request) (*http.Response, error)
}

func (f *fakeTransport) Do(r *http.Request) (*http.Response, error) {
	f.calls.Add(1)
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	return f.reply(r)
}

func answer(r *http.Request, status int, code string) *http.Response {
	h := http.Header{}
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if code != "" {
		h.Set("x-ms-error-code", code)
	}
	// Azure's answers carry the message in the status line and an XML body,
	// which azcore's error text dumps with the request.
	body := "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Error><Code>" + code + "</Code><Message>Azure's message.\nRequestId:0\nTime:0</Message></Error>"
	return &http.Response{StatusCode: status, Status: fmt.Sprint(status, " Azure's message."), Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}
}

func fakeStore(t *testing.T, f *fakeTransport) *azblobstore.Store {
	t.Helper()
	c := azblobstore.DefaultConfig()
	c.AccountURL = "http://azure.invalid/devstoreaccount1"
	c.Container = "nodeid"
	c.AccountName = azblobstore.AzuriteAccountName
	c.AccountKey = azblobstore.AzuriteAccountKey
	c.Transport = f
	st, err := azblobstore.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// oneLine fails the test unless err's text is one line of at most 400
// characters that keeps the SDK's answer (its status and Azure's message)
// but not its dump of the request and the response.
func oneLine(t *testing.T, err error) {
	t.Helper()
	text := err.Error()
	if strings.Contains(text, "\n") || len(text) > 400 || strings.Contains(text, "RESPONSE") || strings.Contains(text, "<Error>") {
		t.Fatalf("error text of %d characters, want one line of at most 400 without the SDK's dump: %q", len(text), text)
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) && !strings.Contains(text, fmt.Sprintf("HTTP %d %s: Azure's message.", re.StatusCode, re.ErrorCode)) {
		t.Fatalf("error %q does not say the answer: HTTP %d %s and its message", text, re.StatusCode, re.ErrorCode)
	}
}

// TestWriteAnswers checks how each answer to a conditional Put Blob maps onto
// the lease errors, that a write is sent exactly once whatever the answer
// (the SDK's retries are off), and that a read is retried.
func TestWriteAnswers(t *testing.T) {
	reset := errors.New("connection reset by peer")
	tests := []struct {
		name    string
		status  int
		code    string
		err     error
		update  bool
		want    error // errors.Is target; nil for a plain error
		unknown bool
	}{
		{name: "412 on update", status: 412, code: "ConditionNotMet", update: true, want: lease.ErrPreconditionFailed},
		{name: "409 BlobAlreadyExists on create", status: 409, code: "BlobAlreadyExists", want: lease.ErrPreconditionFailed},
		{name: "404 BlobNotFound on update", status: 404, code: "BlobNotFound", update: true, want: lease.ErrPreconditionFailed},
		{name: "503 on create", status: 503, code: "ServerBusy", want: lease.ErrUnknownOutcome, unknown: true},
		{name: "500 on update", status: 500, code: "InternalError", update: true, want: lease.ErrUnknownOutcome, unknown: true},
		{name: "reset connection", err: reset, want: lease.ErrUnknownOutcome, unknown: true},
		{name: "connection refused (never sent)", err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, want: lease.ErrMisconfigured},
		{name: "timeout in flight", err: context.DeadlineExceeded, want: lease.ErrUnknownOutcome, unknown: true},
		{name: "404 ContainerNotFound", status: 404, code: "ContainerNotFound", want: lease.ErrMisconfigured},
		{name: "403 AuthenticationFailed", status: 403, code: "AuthenticationFailed", want: lease.ErrMisconfigured},
		{name: "412 LeaseIdMissing", status: 412, code: "LeaseIdMissing", update: true, want: lease.ErrMisconfigured},
		{name: "400 InvalidHeaderValue", status: 400, code: "InvalidHeaderValue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTransport{reply: func(r *http.Request) (*http.Response, error) {
				if tc.err != nil {
					return nil, tc.err
				}
				return answer(r, tc.status, tc.code), nil
			}}
			st := fakeStore(t, f)
			var err error
			if tc.update {
				_, err = st.Update(context.Background(), "7.json", []byte("x"), `"0x1"`)
			} else {
				_, err = st.Create(context.Background(), "7.json", []byte("x"))
			}
			t.Logf("%v", err)
			if err == nil {
				t.Fatal("write succeeded")
			}
			oneLine(t, err)
			if n := f.calls.Load(); n != 1 {
				t.Fatalf("the write was sent %d times, want once", n)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want it to match %v", err, tc.want)
			}
			var uo *lease.UnknownOutcomeError
			if errors.As(err, &uo) != tc.unknown {
				t.Fatalf("error = %v: unknown outcome %v, want %v", err, !tc.unknown, tc.unknown)
			}
			if !tc.unknown && errors.Is(err, lease.ErrUnknownOutcome) {
				t.Fatalf("error = %v matches ErrUnknownOutcome", err)
			}
			if tc.want != lease.ErrPreconditionFailed && errors.Is(err, lease.ErrPreconditionFailed) {
				t.Fatalf("error = %v matches ErrPreconditionFailed: it would look like a lost race", err)
			}
			if tc.want == nil && (errors.Is(err, lease.ErrPreconditionFailed) || errors.Is(err, lease.ErrMisconfigured)) {
				t.Fatalf("error = %v, want a plain error", err)
			}
		})
	}
}

func TestReadsRetryAndNotFound(t *testing.T) {
	f := &fakeTransport{reply: func(r *http.Request) (*http.Response, error) { return answer(r, 503, "ServerBusy"), nil }}
	st := fakeStore(t, f)
	if _, _, err := st.Get(context.Background(), "7.json"); err == nil {
		t.Fatal("Get succeeded")
	}
	if n := f.calls.Load(); n != 3 {
		t.Fatalf("Get under 503s was sent %d times, want 3 (two retries)", n)
	}
	f = &fakeTransport{reply: func(r *http.Request) (*http.Response, error) { return answer(r, 404, "BlobNotFound"), nil }}
	if _, _, err := fakeStore(t, f).Get(context.Background(), "7.json"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("Get of a missing blob: %v, want ErrNotFound", err)
	}
}

func TestUpdateEmptyETag(t *testing.T) {
	f := &fakeTransport{reply: func(r *http.Request) (*http.Response, error) { return answer(r, 201, ""), nil }}
	if _, err := fakeStore(t, f).Update(context.Background(), "7.json", []byte("x"), ""); !errors.Is(err, lease.ErrPreconditionFailed) {
		t.Fatalf("Update with an empty ETag: %v, want ErrPreconditionFailed", err)
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("Update with an empty ETag sent %d requests", n)
	}
}

func TestConfigValidate(t *testing.T) {
	good := azblobstore.DefaultConfig()
	good.AccountURL = "http://127.0.0.1:10000/devstoreaccount1"
	good.Container = "nodeid"
	good.AccountName, good.AccountKey = azblobstore.AzuriteAccountName, azblobstore.AzuriteAccountKey
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*azblobstore.Config){
		"no URL":           func(c *azblobstore.Config) { c.AccountURL = "" },
		"URL without host": func(c *azblobstore.Config) { c.AccountURL = "http:///x" },
		"no container":     func(c *azblobstore.Config) { c.Container = "" },
		"upper case":       func(c *azblobstore.Config) { c.Container = "NodeID" },
		"slash":            func(c *azblobstore.Config) { c.Container = "nodeid/leases" },
		"slash prefix":     func(c *azblobstore.Config) { c.Prefix = "/nodeid/" },
		"no credential":    func(c *azblobstore.Config) { c.AccountName, c.AccountKey = "", "" },
		"two credentials":  func(c *azblobstore.Config) { c.SAS = "sv=1" },
		"key without name": func(c *azblobstore.Config) { c.AccountName = "" },
		"negative timeout": func(c *azblobstore.Config) { c.RequestTimeout = -time.Second },
	} {
		c := good
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
}

// TestCheckAzurite: Check passes on a container that exists and names the
// container and endpoint, with lease.ErrMisconfigured, on a missing one or a
// wrong key.
func TestCheckAzurite(t *testing.T) {
	accountURL := azuriteURL(t)
	name := newContainer(t, accountURL)
	ctx := context.Background()
	st, err := azblobstore.New(azuriteConfig(accountURL, name, "nodeid/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Check(ctx, st); err != nil {
		t.Fatalf("Check: %v", err)
	}
	missing := azuriteConfig(accountURL, "nodeid-no-such-container", "nodeid/")
	wrongKey := azuriteConfig(accountURL, name, "nodeid/")
	wrongKey.AccountKey = "d3Jvbmcta2V5"
	for what, c := range map[string]azblobstore.Config{"missing container": missing, "wrong key": wrongKey} {
		st, err := azblobstore.New(c)
		if err != nil {
			t.Fatal(err)
		}
		err = st.Check(ctx)
		t.Logf("%s: %v", what, err)
		if !errors.Is(err, lease.ErrMisconfigured) || !strings.Contains(err.Error(), accountURL) || !strings.Contains(err.Error(), c.Container) {
			t.Errorf("%s: Check error = %v, want ErrMisconfigured naming %s and %s", what, err, accountURL, c.Container)
		}
	}
}
