package health_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/nodeid/nodeid/health"
)

// Example serves /health from a lease state and /ready from the lease and a
// readiness gate, as a broker does.
func Example() {
	var lost atomic.Bool
	lease := health.CheckerFunc(func() error {
		if lost.Load() {
			return errors.New("nodeid: lease lost")
		}
		return nil
	})
	gate := health.CheckerFunc(func() error { return errors.New("gossip: waiting for peers to see the new version") })

	mux := http.NewServeMux()
	mux.Handle("/health", health.Handler("health", lease))
	mux.Handle("/ready", health.Handler("ready", health.All(lease, gate)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(path string) {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		fmt.Printf("%s %d %s", path, res.StatusCode, body)
	}
	get("/health")
	get("/ready")
	lost.Store(true)
	get("/health")
	// Output:
	// /health 200 {"status":"ok"}
	// /ready 503 {"status":"unavailable","reason":"ready: gossip: waiting for peers to see the new version"}
	// /health 503 {"status":"unavailable","reason":"health: nodeid: lease lost"}
}
