// Package httpdate is the one copy of how the HTTP stores whose client
// returns no response headers (gcsstore: the Cloud Storage client; k8sstore:
// client-go) read the store's clock, the HTTP Date header of its responses.
// The store's transport, under the client's authentication layer, records
// into an Exchange carried in the request's context that a request was
// handed to the network and the Date of each response. Every store call
// carries an Exchange of its own.
package httpdate

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Exchange is what the transport saw of the requests of one store call.
type Exchange struct {
	mu       sync.Mutex
	sent     bool      // a request reached the transport
	earliest time.Time // the earliest Date of the responses
	last     time.Time // the Date of the last response
}

type exchangeKey struct{}

// WithExchange returns ctx carrying a new Exchange.
func WithExchange(ctx context.Context) (context.Context, *Exchange) {
	x := &Exchange{}
	return context.WithValue(ctx, exchangeKey{}, x), x
}

func (x *Exchange) markSent() {
	x.mu.Lock()
	x.sent = true
	x.mu.Unlock()
}

// Record notes a response's Date d.
func (x *Exchange) Record(d time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.earliest.IsZero() || d.Before(x.earliest) {
		x.earliest = d
	}
	x.last = d
}

// WasSent reports whether a request of the call reached the transport (it
// may still have failed to connect).
func (x *Exchange) WasSent() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.sent
}

// Dates returns the earliest and the last Date seen (zero when none).
func (x *Exchange) Dates() (earliest, last time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.earliest, x.last
}

// Transport records each request and the Date of each response into the
// Exchange of the request's context, if any, around Base.
type Transport struct{ Base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	x, _ := r.Context().Value(exchangeKey{}).(*Exchange)
	if x != nil {
		x.markSent()
	}
	resp, err := t.Base.RoundTrip(r)
	if x != nil && resp != nil {
		if d, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			x.Record(d.UTC())
		}
	}
	return resp, err
}
