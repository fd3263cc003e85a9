package k8sstore

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// client-go returns no response headers, and the store's clock is the HTTP
// Date header of its responses. So the store's transport (a rest.Config
// WrapTransport, under the authentication layer) records, into an exchange
// carried in the request's context, that a request was handed to the
// network and the Date of each response. Every store call carries an
// exchange of its own.

// exchange is what the transport saw of the requests of one store call.
type exchange struct {
	mu       sync.Mutex
	sent     bool      // a request reached the base transport
	earliest time.Time // the earliest Date of the responses
	last     time.Time // the Date of the last response
}

type exchangeKey struct{}

// withExchange returns ctx carrying a new exchange.
func withExchange(ctx context.Context) (context.Context, *exchange) {
	x := &exchange{}
	return context.WithValue(ctx, exchangeKey{}, x), x
}

func (x *exchange) markSent() {
	x.mu.Lock()
	x.sent = true
	x.mu.Unlock()
}

func (x *exchange) record(d time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.earliest.IsZero() || d.Before(x.earliest) {
		x.earliest = d
	}
	x.last = d
}

// wasSent reports whether a request of the call reached the transport (it
// may still have failed to connect).
func (x *exchange) wasSent() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.sent
}

// dates returns the earliest and the last Date seen (zero when none).
func (x *exchange) dates() (earliest, last time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.earliest, x.last
}

// dateTransport records each request and the Date of each response into the
// exchange of the request's context, if any.
type dateTransport struct{ base http.RoundTripper }

func (t dateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	x, _ := r.Context().Value(exchangeKey{}).(*exchange)
	if x != nil {
		x.markSent()
	}
	resp, err := t.base.RoundTrip(r)
	if x != nil && resp != nil {
		if d, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			x.record(d.UTC())
		}
	}
	return resp, err
}
