package health

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCheckRace serves requests from many goroutines while another flips the
// state; run with -race. Every answer must be a whole, consistent one.
func TestCheckRace(t *testing.T) {
	var down atomic.Bool
	h := Handler("ready", All(
		CheckerFunc(func() error {
			if down.Load() {
				return errLost
			}
			return nil
		}),
		CheckerFunc(healthy),
	))
	stop := make(chan struct{})
	var flipper sync.WaitGroup
	flipper.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				down.Store(!down.Load())
			}
		}
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ready", nil))
				var r Response
				if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
					t.Errorf("bad body %q: %v", rec.Body.String(), err)
					return
				}
				ok := rec.Code == http.StatusOK && r.Status == StatusOK && r.Reason == ""
				down := rec.Code == http.StatusServiceUnavailable && r.Status == StatusUnavailable && r.Reason == "ready: "+errLost.Error()
				if !ok && !down {
					t.Errorf("inconsistent answer %d %+v", rec.Code, r)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	flipper.Wait()
}
