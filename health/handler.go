package health

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// The values of Response.Status.
const (
	StatusOK          = "ok"
	StatusUnavailable = "unavailable"
)

// Response is the JSON body a Handler serves.
type Response struct {
	// Status is StatusOK (HTTP 200) or StatusUnavailable (HTTP 503).
	Status string `json:"status"`
	// Reason says why the component is unavailable: "<name>: <error>", on one
	// line. Empty when Status is StatusOK.
	Reason string `json:"reason,omitempty"`
}

// Handler returns an http.Handler that runs c.Check on every GET or HEAD and
// answers 200 with {"status":"ok"}, or 503 with
// {"status":"unavailable","reason":"<name>: <error>"}: Content-Type
// application/json, Cache-Control no-store. HEAD gets the same status and
// headers without the body; other methods get 405. name (such as "health" or
// "ready") prefixes the reason; it may be empty. Handler panics if c is nil.
func Handler(name string, c Checker) http.Handler {
	if c == nil {
		panic("health: nil Checker")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Serve(w, r, func() (any, int) { return NewResponse(name, c.Check()) })
	})
}

// NewResponse returns the answer to a check that returned err, and its HTTP
// status: StatusOK and 200 when err is nil, else StatusUnavailable and 503
// with the reason "<name>: <error>" on one line (name may be empty).
func NewResponse(name string, err error) (Response, int) {
	if err == nil {
		return Response{Status: StatusOK}, http.StatusOK
	}
	reason := strings.ReplaceAll(err.Error(), "\n", "; ")
	if name != "" {
		reason = name + ": " + reason
	}
	return Response{Status: StatusUnavailable, Reason: reason}, http.StatusServiceUnavailable
}

// Serve answers a health request as Handler does, with the body and status
// that answer returns (a Response, or a struct that embeds one and adds
// fields of its checker's own), called once per GET or HEAD: JSON,
// Content-Type application/json, Cache-Control no-store; HEAD gets the
// headers without the body; other methods get 405 and answer is not called.
func Serve(w http.ResponseWriter, r *http.Request, answer func() (body any, code int)) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	resp, code := answer()
	body, err := json.Marshal(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}
