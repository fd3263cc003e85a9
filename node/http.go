package node

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
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/snowflake"
)

// MaxIDsPerRequest bounds n in GET /ids?n=.
const MaxIDsPerRequest = 10000

// Handler returns the node's HTTP API, which answers from New on:
//
//   - GET /ids?n=K: K IDs (default 1, at most MaxIDsPerRequest) as an
//     IDsResponse; 400 for a bad n, 503 (ErrorResponse, Retry-After: 1)
//     while the node serves no IDs. No ID is returned once /health has
//     answered 503 for want of a valid lease.
//   - GET /status: a StatusResponse.
//   - GET /health: 200 while Check passes, else 503 with the reason (JSON,
//     package health).
//   - GET /ready: the same for CheckReady.
//   - GET /metrics: Prometheus metrics (unless Config.Metrics is a
//     registerer that cannot be gathered).
//
// /health is the liveness check (an ECS container health check, through
// nodeid-broker healthcheck); /ready is a load balancer's (an ALB target
// group's): it also waits for gossip after a takeover.
func (n *Node) Handler() http.Handler {
	mux := n.opsMux()
	mux.HandleFunc("GET /ids", n.handleIDs)
	return mux
}

// OpsHandler returns Handler without /ids: the operator endpoints (/status,
// /leader, /health, /ready, /metrics), to publish on a port of their own,
// for Prometheus and a load balancer's health check, while /ids stays on a
// port only the application reaches (loopback).
func (n *Node) OpsHandler() http.Handler { return n.opsMux() }

// opsMux serves every endpoint of Handler but /ids.
func (n *Node) opsMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", n.handleStatus)
	mux.HandleFunc("GET /leader", n.handleLeader)
	mux.Handle("/health", healthHandler("health", n.checkRecoveries))
	mux.Handle("/ready", healthHandler("ready", n.checkReadyRecoveries))
	if h := n.metrics.handler(); h != nil {
		mux.Handle("GET /metrics", h)
	}
	return mux
}

// healthHandler is health.Handler for check, whose answers carry the claim's
// count of recoveries read with the check (HealthResponse).
func healthHandler(name string, check func() (int64, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		health.Serve(w, r, func() (any, int) {
			k, err := check()
			resp, code := health.NewResponse(name, err)
			return HealthResponse{Response: resp, Recoveries: k}, code
		})
	})
}

// handleIDs serves GET /ids?n=K. The state is checked again after the IDs are
// generated, and they are dropped if it changed: no ID leaves once the lease
// is lost, fenced or being released. A stalled generator (health 503 with
// ErrStalled) is still tried, so that it is seen when it recovers.
//
// The body is written by hand (appendIDsHead, appendIDs, appendIDsTail),
// byte for byte what encoding/json makes of an IDsResponse, into a pooled
// buffer: no string and no reflection per ID. Its recovery count is the one
// read with the second check, the one that lets the IDs out.
func (n *Node) handleIDs(w http.ResponseWriter, r *http.Request) {
	k, err := parseCount(r.URL.Query())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ErrorResponse{Status: "bad_request", Reason: err.Error()})
		return
	}
	if _, err := n.state(); err != nil {
		n.refuse(w, err)
		return
	}
	claim := n.claim.Load()
	buf := idsBufs.Get().(*[]byte)
	defer idsBufs.Put(buf)
	body := appendIDsHead((*buf)[:0], claim.NodeID(), claim.Version())
	for left := k; left > 0; {
		rg, err := n.nextN(left) // shorter when the millisecond runs out
		if err != nil {
			n.refuse(w, err)
			return
		}
		body = appendIDs(body, rg, left == k)
		left -= rg.N
	}
	_, recoveries, err := n.stateRecoveries()
	body = appendIDsTail(body, recoveries)
	*buf = body
	if err != nil {
		n.refuse(w, err)
		return
	}
	n.countIssued(k)
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

// appendIDsTail appends the end of an IDsResponse body after its IDs: the
// recovery count unless 0 (omitempty), and a newline.
func appendIDsTail(dst []byte, recoveries int64) []byte {
	dst = append(dst, ']')
	if recoveries != 0 {
		dst = append(dst, `,"recoveries":`...)
		dst = strconv.AppendInt(dst, recoveries, 10)
	}
	return append(dst, "}\n"...)
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
// reservation) is logged once by the stall check (noteIssue).
func (n *Node) refuse(w http.ResponseWriter, err error) {
	if _, serr := n.state(); serr != nil || errors.Is(err, snowflake.ErrFenced) {
		n.metrics.fencedRefusals.Inc()
	}
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, ErrorResponse{Status: "unavailable", Reason: strings.ReplaceAll(err.Error(), "\n", "; ")})
}

// parseCount reads n from the query: absent means 1; otherwise an integer from
// 1 to MaxIDsPerRequest.
func parseCount(q url.Values) (int, error) {
	vs, ok := q["n"]
	switch {
	case !ok:
		return 1, nil
	case len(vs) > 1:
		return 0, fmt.Errorf("n is given %d times: give it once, an integer from 1 to %d", len(vs), MaxIDsPerRequest)
	}
	k, err := strconv.Atoi(vs[0])
	if err != nil {
		return 0, fmt.Errorf("n=%q is not a number: want an integer from 1 to %d", vs[0], MaxIDsPerRequest)
	}
	if k < 1 || k > MaxIDsPerRequest {
		return 0, fmt.Errorf("n=%d is out of range: want an integer from 1 to %d", k, MaxIDsPerRequest)
	}
	return k, nil
}

// handleStatus serves GET /status.
func (n *Node) handleStatus(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, n.Status())
}

// Status returns the node's status, the body of GET /status.
func (n *Node) Status() StatusResponse {
	s := StatusResponse{Task: n.cfg.Provider.TaskID, NodeID: -1, KnownNodes: map[string]int64{}, IDsIssued: n.issued.Load()}
	state, recoveries, err := n.stateRecoveries()
	if err == nil {
		err = n.stallErr()
	}
	s.State, s.Recoveries = state, recoveries
	if err != nil && state != StateReleased {
		s.Error = err.Error()
	}
	s.StoreProbe = n.probeStatus()
	s.KeepAlive = keepAliveStatus(n.cfg.Provider.Timings())
	c := n.claim.Load()
	if af := n.waiting.Load().awaitingFloor(); c == nil && af != nil {
		s.AwaitingFloor = &AwaitingFloorStatus{NodeID: af.NodeID, Version: af.Version, FloorMs: af.FloorMs, WaitMs: af.Wait.Milliseconds()}
	}
	if c != nil {
		st := c.Status()
		s.NodeID, s.Version = st.NodeID, st.Version
		s.LeaseAgeMs = st.SinceWrite.Milliseconds()
		s.FloorMs, s.ReservedUntilMs = st.Floor, st.Reservation
		if st.Jeopardy {
			s.JeopardyMs = max(st.Fenced.Milliseconds(), 1)
		}
		s.Challenged = st.Challenged
	}
	if g := n.gossip.Load(); g != nil {
		for id, v := range g.KnownNodes() {
			s.KnownNodes[strconv.Itoa(id)] = v
		}
		for _, f := range g.Foreign() {
			s.ForeignMembers = append(s.ForeignMembers, ForeignMember{Name: f.Name, Addr: f.Addr, Cluster: f.Cluster})
		}
	} else if c != nil && state == StateHeld {
		s.KnownNodes[strconv.Itoa(c.NodeID())] = c.Version()
	}
	if n.elector != nil {
		if l := n.elector.self(); l != nil {
			s.Leader = &LeaderResponse{Name: n.cfg.Elect, Leader: s.Task, Term: l.Term(), Self: true}
		}
	}
	s.Ready = n.CheckReady() == nil
	return s
}

// keepAliveStatus reports the keep-alive of the provider's timings pc.
func keepAliveStatus(pc nodeid.Timings) KeepAliveStatus {
	if pc.KeepAlive != nodeid.KeepAliveRead {
		return KeepAliveStatus{Mode: string(nodeid.KeepAliveWrite), LeaseMs: pc.Lease.Milliseconds(),
			RenewIntervalMs: pc.RenewInterval.Milliseconds()}
	}
	return KeepAliveStatus{Mode: string(nodeid.KeepAliveRead), WindowMs: pc.Window.Milliseconds(), BackstopMs: pc.Backstop.Milliseconds(),
		BackstopIntervalMs: pc.RenewInterval.Milliseconds(), PollIntervalMs: pc.PollInterval.Milliseconds()}
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
