package faults

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Read mode (keep-alive by reads, docs/evidence/design.md section 11) in the fault
// suite: a holder keeps its lease alive with conditional GETs (If-None-Match
// on its ETag, answered 304 or 200) and a backstop write every third of the
// backstop; a task that wants a held ID challenges the holder (a CAS writing
// a copy of the record marked as a challenge, then a confirm by CAS on it),
// and takes the confirm once it stood its window on the store's clock; a live
// holder answers by a write on the challenge's (or confirm's) ETag. To the
// linearizability check these are ordinary reads and conditional writes (a
// 304 is a read of the value its ETag names: recordCall); the proxies also
// report every write the server applied (ObserveWrites), and
// CountChallenges says which were challenges, confirms, answers and takes of
// a confirm, so that a run shows that challenges happened.

// LandedWrite is a conditional write the server answered 200: applied,
// whatever the proxy then did with the answer.
type LandedWrite struct {
	Key     string // the URL path
	IfMatch string // "" for a create
	ETag    string // the server's answer's
	Body    []byte
}

// ObserveWrites makes the proxy call f for every conditional write the
// server applied (answered 200), as it reads the answer.
func (p *Proxy) ObserveWrites(f func(LandedWrite)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onWrite = f
}

func (p *Proxy) observeWrite(op Op, r *http.Request, body []byte, status int, h http.Header) {
	p.mu.Lock()
	f := p.onWrite
	p.mu.Unlock()
	if f == nil || status != http.StatusOK || (op != OpCreate && op != OpUpdate) {
		return
	}
	w := LandedWrite{Key: r.URL.Path, ETag: h.Get("ETag"), Body: body}
	if op == OpUpdate {
		w.IfMatch = r.Header.Get("If-Match")
	}
	f(w)
}

// ChallengeCounts is what the landed writes of a run in read mode show.
type ChallengeCounts struct {
	Challenges int // a challenge written (CAS on a holder's record)
	Confirms   int // a confirm written (CAS on a challenge)
	// Answers: a write of the challenged holder on a challenge's or a
	// confirm's ETag, same holder and version, the challenge cleared.
	Answers int
	// Takes: a write with a higher version on a confirm's ETag (the confirm
	// stood its window and was taken over).
	Takes int
	// Other: any other write on a challenge's or confirm's ETag (a release
	// of a challenged record, a take of a challenge by the backstop).
	Other int
}

func (c ChallengeCounts) String() string {
	return fmt.Sprintf("challenges=%d confirms=%d answers=%d confirm-takes=%d other-on-challenge=%d",
		c.Challenges, c.Confirms, c.Answers, c.Takes, c.Other)
}

// CountChallenges classifies ws, the writes of a run that landed (in any
// order), by what they wrote and on what ETag.
func CountChallenges(ws []LandedWrite) ChallengeCounts {
	type rec struct {
		Holder    string `json:"holder"`
		Version   int64  `json:"version"`
		Challenge *struct {
			Confirmed bool `json:"confirmed"`
		} `json:"challenge"`
	}
	decode := func(b []byte) (rec, bool) {
		var r rec
		return r, json.Unmarshal(b, &r) == nil
	}
	byETag := map[string]rec{} // the challenges and confirms, by the ETag they got
	for _, w := range ws {
		if r, ok := decode(w.Body); ok && r.Challenge != nil && w.ETag != "" {
			byETag[w.Key+" "+w.ETag] = r
		}
	}
	var c ChallengeCounts
	for _, w := range ws {
		r, ok := decode(w.Body)
		if !ok {
			continue
		}
		switch {
		case r.Challenge != nil && r.Challenge.Confirmed:
			c.Confirms++
			continue
		case r.Challenge != nil:
			c.Challenges++
			continue
		}
		on, ok := byETag[w.Key+" "+w.IfMatch]
		switch {
		case !ok || w.IfMatch == "":
		case r.Holder == on.Holder && r.Version == on.Version:
			c.Answers++
		case on.Challenge.Confirmed && r.Version > on.Version:
			c.Takes++
		default:
			c.Other++
		}
	}
	return c
}

// The read mode of the fault scenarios: a 3 s window and a 12 s backstop, as
// the broker's end-to-end tests (cmd/nodeid-broker readModeArgs): a 1 s
// safety margin, backstop writes every 4 s, an 8 s renew deadline, a store
// timeout of 1.07 s, polls every 700 ms (700 ms + 1.07 s < 3 s - 1 s, and
// 12 s >= 8 s + 3 s: nodeid.Config's rules).
const (
	ReadWindow   = 3 * time.Second
	ReadBackstop = 12 * time.Second
)
