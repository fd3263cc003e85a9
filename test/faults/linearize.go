package faults

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nodeid/nodeid/lease/storetest"
)

// recording is where a Proxy records the requests it forwards.
type recording struct {
	rec    *storetest.Recorder
	client int
	keyOf  func(path string) (string, bool)
}

// Record makes the proxy record every Get and conditional write it forwards
// to the server, as client's, in rec: sent upstream at Start, the server's
// answer read at End, whatever the proxy then does with it (a dropped or
// failed answer still tells the history what the server did). keyOf maps a
// request's URL path to the object's key, false for paths outside the
// history. A write whose answer never came from the server (a reset, a
// client gone mid-request) is unknown. The history is checked with
// storetest.CheckLinearizable (docs/evidence/faults.md, "Linearizability").
func (p *Proxy) Record(rec *storetest.Recorder, client int, keyOf func(path string) (string, bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rec = &recording{rec: rec, client: client, keyOf: keyOf}
}

func (p *Proxy) recording() *recording {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rec
}

// recordStart is the recorder's clock now (zero when not recording).
func (p *Proxy) recordStart() time.Duration {
	if rc := p.recording(); rc != nil {
		return rc.rec.Now()
	}
	return 0
}

// recordCall records one forwarded request: status 0 when the server's
// answer was not read.
func (p *Proxy) recordCall(op Op, r *http.Request, body []byte, start time.Duration, status int, h http.Header, respBody []byte) {
	rc := p.recording()
	if rc == nil {
		return
	}
	key, ok := rc.keyOf(r.URL.Path)
	if !ok {
		return
	}
	c := storetest.Call{Client: rc.client, Key: key, Start: start, End: rc.rec.Now(), ETag: h.Get("ETag")}
	switch op {
	case OpGet:
		c.Op = storetest.OpGet
		switch status {
		case http.StatusOK:
			c.Outcome, c.Got = storetest.OutcomeDone, storetest.ValueOf(respBody)
		case http.StatusNotFound:
			c.Outcome = storetest.OutcomeMissing
		case http.StatusNotModified:
			// A conditional read of read mode (If-None-Match on the
			// holder's ETag) answered 304: the object's ETag was the
			// one asked, so it is a read of the value that ETag names
			// (Got empty: CheckLinearizable names it by its ETag).
			etag, ok := notModifiedETag(r.Header.Get("If-None-Match"))
			if !ok {
				return // "*" or a list: no one value asserted
			}
			c.Outcome, c.ETag = storetest.OutcomeDone, etag
			rc.rec.Add(c)
			return
		default:
			return // no answer: it constrains nothing
		}
	case OpCreate, OpUpdate:
		c.Op, c.Value = storetest.OpCreate, storetest.ValueOf(body)
		if op == OpUpdate {
			c.Op, c.IfMatch = storetest.OpUpdate, r.Header.Get("If-Match")
		}
		switch status {
		case http.StatusOK:
			c.Outcome = storetest.OutcomeDone
		case http.StatusPreconditionFailed, http.StatusNotFound:
			c.Outcome = storetest.OutcomeRefused
		case http.StatusConflict:
			c.Outcome = storetest.OutcomeConflict
		default:
			c.Outcome = storetest.OutcomeUnknown
		}
	default:
		return
	}
	if c.Outcome != storetest.OutcomeDone {
		c.ETag = ""
	}
	rc.rec.Add(c)
}

// notModifiedETag returns the one ETag a 304 to a GET with this
// If-None-Match asserts the object had (RFC 9110, 13.1.2: 304 only when one
// of the listed ETags matches): the header's, when it names exactly one.
func notModifiedETag(ifNoneMatch string) (string, bool) {
	etag := strings.TrimSpace(ifNoneMatch)
	if etag == "" || etag == "*" || strings.Contains(etag, ",") {
		return "", false
	}
	return etag, true
}

// CheckLinearizable names the check that the store's history, as the S3
// proxies or the etcd brokers (--debug-store-history) and the test's own
// reads saw it, is linearizable (storetest.CheckLinearizable).
const CheckLinearizable = "linearizable"

// LinearizeTimeout bounds the linearizability check of one key's history:
// a run's keys have a few hundred operations each, checked in milliseconds
// when they pass.
const LinearizeTimeout = time.Minute

// AddBrokerHistory adds to rec, as client's, the calls a broker recorded in
// the file at path (nodeid-broker --debug-store-history, a
// storetest.CallLog on the host's monotonic clock, which rec must read too:
// storetest.NewRecorderOn(storetest.MonotonicClock)), and returns how many.
// A write still in flight when the broker died is a write of unknown
// outcome; a last line cut short by a kill is ignored. A missing file (the
// broker never opened its store) adds nothing.
func AddBrokerHistory(rec *storetest.Recorder, client int, path string) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	calls, err := storetest.ReadCallLog(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range calls {
		c.Client = client
		rec.Add(c)
	}
	return len(calls), nil
}

// CheckHistory checks rec's history and adds what it finds to rep: a
// violation if it is not linearizable (or the check ran out of time), and
// the operations checked as the check's occasions. Client 0 in rec is the
// test's own reads, any other a broker's, recorded as by says ("through the
// proxies", "by the brokers").
func CheckHistory(rep *Report, rec *storetest.Recorder, by string) {
	calls := rec.Calls()
	if len(calls) == 0 {
		return
	}
	start := time.Now()
	if err := storetest.CheckLinearizable(calls, LinearizeTimeout); err != nil {
		rep.add(CheckLinearizable, "%v", err)
	}
	rep.exercise(CheckLinearizable, len(calls))
	brokers := 0
	for _, c := range calls {
		if c.Client != 0 {
			brokers++
		}
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("linearizability: %d store operations (%d %s, %d the test's reads) checked in %v",
		len(calls), brokers, by, len(calls)-brokers, time.Since(start).Round(time.Millisecond)))
}
