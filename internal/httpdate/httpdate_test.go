package httpdate

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

type answers []string // the Date headers to answer, in turn

func (a *answers) RoundTrip(*http.Request) (*http.Response, error) {
	if len(*a) == 0 {
		return nil, errors.New("refused")
	}
	h := http.Header{"Date": {(*a)[0]}}
	*a = (*a)[1:]
	return &http.Response{StatusCode: http.StatusOK, Header: h}, nil
}

// TestTransportRecordsDates: a call's Exchange sees that its requests left
// and the earliest and last Date of the answers, whatever their order; a
// request outside any Exchange, or one refused, records nothing.
func TestTransportRecordsDates(t *testing.T) {
	t1 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	t0, t2 := t1.Add(-time.Second), t1.Add(time.Second)
	a := answers{t1.Format(http.TimeFormat), t0.Format(http.TimeFormat), t2.Format(http.TimeFormat), "garbage"}
	c := http.Client{Transport: Transport{Base: &a}}
	get := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://store.invalid/", nil)
		if resp, err := c.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}
	ctx, x := WithExchange(context.Background())
	if x.WasSent() {
		t.Fatal("sent before any request")
	}
	for range 3 {
		get(ctx)
	}
	get(context.Background()) // "garbage", outside the exchange
	get(ctx)                  // refused: no answer
	if earliest, last := x.Dates(); !x.WasSent() || !earliest.Equal(t0) || !last.Equal(t2) {
		t.Fatalf("sent %v, dates %v and %v; want true, %v and %v", x.WasSent(), earliest, last, t0, t2)
	}
	_, y := WithExchange(context.Background())
	if e, l := y.Dates(); !e.IsZero() || !l.IsZero() || y.WasSent() {
		t.Fatalf("a fresh exchange: %v %v %v", e, l, y.WasSent())
	}
}
