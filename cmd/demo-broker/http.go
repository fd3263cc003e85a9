package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nodeid/nodeid/health"
	"github.com/nodeid/nodeid/snowflake"
)

// maxIDsPerRequest bounds n in GET /ids?n=.
const maxIDsPerRequest = 10000

// ErrorResponse is the JSON body of a 400 or 503 from /ids, the same shape as
// the health handlers' (package health): status "bad_request" or
// "unavailable" and a reason.
type ErrorResponse struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// routes returns the broker's HTTP handler.
func (b *broker) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ids", b.handleIDs)
	mux.HandleFunc("GET /status", b.handleStatus)
	mux.Handle("/health", health.Handler("health", health.CheckerFunc(b.check)))
	mux.Handle("/ready", health.Handler("ready", health.CheckerFunc(b.readyCheck)))
	mux.Handle("GET /metrics", b.metrics.Handler())
	return mux
}

// handleIDs serves GET /ids?n=K: K IDs (default 1, at most 10000) as decimal
// strings, 400 for a bad n, 503 while the broker holds no valid lease. It never
// returns an ID once /health has answered 503: the state is checked again after
// the IDs are generated, and they are dropped if it changed.
//
// The body is written by hand (appendIDsResponse), byte for byte what
// encoding/json makes of an IDsResponse, into a pooled buffer: no string and
// no reflection per ID.
func (b *broker) handleIDs(w http.ResponseWriter, r *http.Request) {
	n, err := parseCount(r.URL.Query())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ErrorResponse{Status: "bad_request", Reason: err.Error()})
		return
	}
	if err := b.check(); err != nil {
		b.refuse(w, err)
		return
	}
	gen, claim := b.gen.Load(), b.claim.Load()
	buf := idsBufs.Get().(*[]byte)
	defer idsBufs.Put(buf)
	body := appendIDsHead((*buf)[:0], claim.NodeID(), claim.Version())
	for left := n; left > 0; {
		rg, err := gen.NextN(left) // shorter when the millisecond runs out
		if err != nil {
			b.refuse(w, err)
			return
		}
		body = appendIDs(body, rg, left == n)
		left -= rg.N
	}
	body = append(body, "]}\n"...)
	*buf = body
	if err := b.check(); err != nil {
		b.refuse(w, err)
		return
	}
	b.issued.Add(int64(n))
	b.metrics.IDsIssued(n)
	writeBody(w, http.StatusOK, body)
}

// idsBufs holds the buffers /ids bodies are written into: at most about
// 220 kB each (10000 IDs of up to 19 digits).
var idsBufs = sync.Pool{New: func() any { return new([]byte) }}

// appendIDsHead appends the start of an IDsResponse body, up to the opening
// bracket of the IDs.
func appendIDsHead(dst []byte, nodeID int, version int64) []byte {
	dst = append(dst, `{"nodeId":`...)
	dst = strconv.AppendInt(dst, int64(nodeID), 10)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, version, 10)
	return append(dst, `,"ids":[`...)
}

// appendIDs appends the IDs of r as JSON strings, "123","124", preceded by a
// comma unless first. Consecutive IDs differ in their last digits only: the
// decimal form of the first is made once and then counted up in place.
func appendIDs(dst []byte, r snowflake.Range, first bool) []byte {
	var scratch [20]byte
	d := strconv.AppendInt(scratch[:0], r.First.Int64(), 10)
	dst = slices.Grow(dst, r.N*(len(d)+3)+1)
	for i := range r.N {
		if i > 0 || !first {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, d...)
		dst = append(dst, '"')
		if i == r.N-1 {
			break
		}
		k := len(d) - 1
		for k >= 0 && d[k] == '9' {
			d[k] = '0'
			k--
		}
		if k >= 0 {
			d[k]++
		} else { // 99..9 + 1: one digit more
			d = strconv.AppendInt(scratch[:0], r.First.Int64()+int64(i)+1, 10)
		}
	}
	return dst
}

// refuse answers 503 to an ID request. Refusals for want of a valid lease are
// counted in nodeid_ids_fenced_refusals_total; a generator that cannot issue
// for another reason (a clock behind the floor past MaxClockWait, an exhausted
// reservation) is logged.
func (b *broker) refuse(w http.ResponseWriter, err error) {
	if _, serr := b.state(); serr != nil || errors.Is(err, snowflake.ErrFenced) {
		b.metrics.FencedRefusal()
	} else {
		b.log.Warn("could not issue IDs", "err", err)
	}
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, ErrorResponse{Status: "unavailable", Reason: strings.ReplaceAll(err.Error(), "\n", "; ")})
}

// parseCount reads n from the query: absent means 1; otherwise an integer from
// 1 to maxIDsPerRequest.
func parseCount(q url.Values) (int, error) {
	vs, ok := q["n"]
	switch {
	case !ok:
		return 1, nil
	case len(vs) > 1:
		return 0, fmt.Errorf("n is given %d times: give it once, an integer from 1 to %d", len(vs), maxIDsPerRequest)
	}
	n, err := strconv.Atoi(vs[0])
	if err != nil {
		return 0, fmt.Errorf("n=%q is not a number: want an integer from 1 to %d", vs[0], maxIDsPerRequest)
	}
	if n < 1 || n > maxIDsPerRequest {
		return 0, fmt.Errorf("n=%d is out of range: want an integer from 1 to %d", n, maxIDsPerRequest)
	}
	return n, nil
}

// handleStatus serves GET /status.
func (b *broker) handleStatus(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, b.status())
}

// status returns the broker's StatusResponse.
func (b *broker) status() StatusResponse {
	s := StatusResponse{Task: b.cfg.taskID, NodeID: -1, KnownNodes: map[string]int64{}, IDsIssued: b.issued.Load()}
	state, err := b.state()
	s.State = state
	if err != nil && state != stateReleased {
		s.Error = err.Error()
	}
	c := b.claim.Load()
	if c != nil {
		st := c.Status()
		s.NodeID, s.Version = st.NodeID, st.Version
		s.LeaseAgeMs = st.SinceWrite.Milliseconds()
		s.FloorMs, s.ReservedUntilMs = st.Floor, st.Reservation
	}
	if node := b.gossip.Load(); node != nil {
		for id, v := range node.KnownNodes() {
			s.KnownNodes[strconv.Itoa(id)] = v
		}
	} else if c != nil && state == stateHeld {
		s.KnownNodes[strconv.Itoa(c.NodeID())] = c.Version()
	}
	s.Ready = b.readyCheck() == nil
	return s
}

// writeJSON writes v as JSON with code, not to be cached.
func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, code, append(body, '\n'))
}

// writeBody writes a JSON body with code, not to be cached.
func writeBody(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
