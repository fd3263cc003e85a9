package health

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

var (
	errLost    = errors.New("nodeid: lease lost")
	errWaiting = errors.New("gossip: waiting for peers")
)

func healthy() error { return nil }

func TestHandler(t *testing.T) {
	tests := []struct {
		name     string
		check    Checker
		method   string
		code     int
		body     string // exact, for GET
		wantBody bool
	}{
		{"ok GET", CheckerFunc(healthy), http.MethodGet, 200, `{"status":"ok"}` + "\n", true},
		{"ok HEAD", CheckerFunc(healthy), http.MethodHead, 200, "", false},
		{"down GET", CheckerFunc(func() error { return errLost }), http.MethodGet, 503,
			`{"status":"unavailable","reason":"health: nodeid: lease lost"}` + "\n", true},
		{"down HEAD", CheckerFunc(func() error { return errLost }), http.MethodHead, 503, "", false},
		{"all ok", All(CheckerFunc(healthy), nil, CheckerFunc(healthy)), http.MethodGet, 200, `{"status":"ok"}` + "\n", true},
		{"all none", All(), http.MethodGet, 200, `{"status":"ok"}` + "\n", true},
		{"all down", All(CheckerFunc(func() error { return errLost }), CheckerFunc(healthy), CheckerFunc(func() error { return errWaiting })),
			http.MethodGet, 503,
			`{"status":"unavailable","reason":"health: nodeid: lease lost; gossip: waiting for peers"}` + "\n", true},
		{"quoted reason", CheckerFunc(func() error { return errors.New(`bad "x" <y>`) }), http.MethodGet, 503,
			`{"status":"unavailable","reason":"health: bad \"x\" \u003cy\u003e"}` + "\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler("health", tt.check).ServeHTTP(rec, httptest.NewRequest(tt.method, "/health", nil))
			res := rec.Result()
			if res.StatusCode != tt.code {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.code)
			}
			for k, want := range map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"} {
				if got := res.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			body := rec.Body.String()
			if !tt.wantBody {
				if body != "" {
					t.Errorf("HEAD body = %q, want none", body)
				}
				return
			}
			if body != tt.body {
				t.Errorf("body = %s, want %s", body, tt.body)
			}
			if cl := res.Header.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length = %s, want %d", cl, len(body))
			}
			var r Response
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if (r.Status == StatusOK) != (tt.code == 200) || (r.Reason == "") != (tt.code == 200) {
				t.Errorf("response %+v does not match status %d", r, tt.code)
			}
		})
	}
}

func TestHandlerOverHTTP(t *testing.T) {
	var down atomic.Bool
	srv := httptest.NewServer(Handler("ready", CheckerFunc(func() error {
		if down.Load() {
			return errWaiting
		}
		return nil
	})))
	defer srv.Close()
	for _, tt := range []struct {
		down   bool
		method string
		code   int
	}{{false, "GET", 200}, {false, "HEAD", 200}, {true, "GET", 503}, {true, "HEAD", 503}} {
		down.Store(tt.down)
		req, _ := http.NewRequest(tt.method, srv.URL, nil)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r Response
		decErr := json.NewDecoder(res.Body).Decode(&r)
		res.Body.Close()
		if res.StatusCode != tt.code {
			t.Errorf("%s (down %v) = %d, want %d", tt.method, tt.down, res.StatusCode, tt.code)
		}
		if tt.method == "GET" && (decErr != nil || (tt.down && r.Reason != "ready: "+errWaiting.Error())) {
			t.Errorf("GET (down %v) body %+v, err %v", tt.down, r, decErr)
		}
	}
}

func TestHandlerRefusesOtherMethods(t *testing.T) {
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		rec := httptest.NewRecorder()
		Handler("health", CheckerFunc(healthy)).ServeHTTP(rec, httptest.NewRequest(m, "/health", strings.NewReader("x")))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s = %d, Allow %q; want 405 and GET, HEAD", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
}

func TestAllKeepsEveryError(t *testing.T) {
	err := All(CheckerFunc(func() error { return errLost }), CheckerFunc(func() error { return errWaiting })).Check()
	if !errors.Is(err, errLost) || !errors.Is(err, errWaiting) {
		t.Errorf("All = %v, want both errors", err)
	}
}

func TestHandlerNilCheckerPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Handler(nil) did not panic")
		}
	}()
	Handler("health", nil)
}
