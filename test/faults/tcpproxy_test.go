package faults

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTCPProxyFaults: the TCP proxy maps its faults onto its gate's, counts
// them and the connections, and refuses a fault it cannot act out.
func TestTCPProxyFaults(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	p, err := NewTCPProxy(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() error {
		resp, err := client.Get("http://" + p.URL())
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	for _, a := range []Action{Reset, Refuse} {
		if err := p.Inject(Fault{Action: a}); err != nil {
			t.Fatal(err)
		}
		if err := get(); err == nil {
			t.Fatalf("GET through a proxy in %v succeeded", a)
		}
		if err := p.Heal(); err != nil {
			t.Fatal(err)
		}
		if err := get(); err != nil {
			t.Fatalf("GET after healing %v: %v", a, err)
		}
	}
	if err := p.Inject(Fault{Action: Conflict409}); err == nil {
		t.Fatal("a 409 fault on etcd's connections was taken")
	}
	c := p.Counts()
	if c["reset"] != 1 || c["refuse"] != 1 || c["CONN reset"] != 1 || c["CONN accepted"] != 4 {
		t.Fatalf("counts %v, want reset=1 refuse=1 CONN reset=1 CONN accepted=4", c)
	}
}
