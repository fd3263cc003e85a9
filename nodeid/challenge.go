package nodeid

// Challenges of read mode (docs/evidence/design.md section 11). In read mode a
// holder writes only every RenewInterval of the backstop, so a silent
// holder's record expires by its lease only a Backstop after its last write.
// A task that wants a held ID sooner challenges the holder instead:
//   - challenge: a CAS on the holder's record, copying it unchanged and
//     naming its writeId (lease.Challenge);
//   - confirm: once the challenge's PUT is answered 2xx (a read-back that
//     finds it is not enough), a CAS on the challenge's ETag, the same copy
//     marked confirmed. From then on every read the holder sends shows
//     another ETag, so its fence falls within Window of the confirm;
//   - take: anyone may take the confirm by CAS once it is older than its
//     window on the store's clock (lease.StateOf, Record.TakeableAfter);
//   - answer: a live holder sees the challenge at its next poll, and its
//     next write, by CAS on the challenge's (or confirm's) ETag, clears it
//     (errChallenged; a challenge naming a write of ours still pending proves
//     it landed, and adopts it at its send).
// Whom to challenge: a held plain record whose holder gossip does not show
// live (Peers for node IDs, Tasks for elections too), or whose backstop is late (older than RenewInterval + Window on the
// store's clock); a challenge left unconfirmed (its challenger's confirm
// failed, or it crashed between the two writes) is challenged again, naming
// the same write, by its challenger at once or by anyone once it stood
// Window; never a confirm (one at a time per record), never on a store that
// judges expiry itself (no store clock to run a window on), and one per
// acquire round, after the round found nothing to take.

import (
	"context"
	"errors"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// maxAnswers bounds the writes of one renewal that each met a new challenge.
const maxAnswers = 3

// answerChallenge marks the claim answering a challenge: its next write,
// on the challenge's ETag, answers it.
func (c *Claim) answerChallenge() {
	c.setFence(func(s snapshot) snapshot {
		s.answering = true
		return s
	})
	c.subs.changed()
}

// answered reports a landed write that answered a challenge.
func (c *Claim) answered() {
	c.p.log.Info("answered a challenge of the lease: still held", "nodeId", c.id, "version", c.version)
	if o, ok := c.p.cfg.Observer.(ChallengeObserver); ok {
		o.Answered(c.id)
	}
}

// suspect is a held lease read in an acquire round that this task may
// challenge.
type suspect struct {
	r    readResult
	prev lease.Record
}

// suspected reports whether prev, read held in r, is one to challenge: in
// read mode, on a store that reports its clock, a plain record that gossip
// shows dead (deadByGossip) or whose last write is older than RenewInterval
// + Window (a backstop missed), or a challenge that stands unconfirmed
// (staleChallenge); never a confirm.
func (p *Provider) suspected(r readResult, prev lease.Record, known map[int]int64, w *watched) bool {
	if !p.t.readMode() || r.meta.Liveness.Judged() {
		return false
	}
	age, ok := lease.StoreAge(r.meta.LastModified, r.meta.Date)
	if prev.Challenge != nil {
		return ok && p.rules.staleChallenge(p, prev.Challenge, age)
	}
	return ok && (p.deadByGossip(r.id, prev.Holder, prev.Version, known, w) || age > p.backstopLate())
}

// staleChallenge reports whether ch, a challenge standing age on the store's
// clock, is challenged again: unconfirmed, and this task's own (its confirm
// failed, or its Acquire ended between the two writes: the next round
// challenges again at once) or one that stood Window unanswered (its
// challenger gave up or crashed; a live holder answers within PollInterval
// and a write). Left standing, it would hold the ID a backstop from the
// challenge, later than the holder's own record would have. The new
// challenge names the same write (challenge), and is confirmed only after
// its own 2xx, as ever.
func (p *Provider) staleChallenge(ch *lease.Challenge, age time.Duration) bool {
	return !ch.Confirmed && (ch.By == p.cfg.TaskID || age > p.t.Window)
}

// backstopLate is the age, on the store's clock, past which a plain record
// of read mode has missed a backstop write: RenewInterval + Window.
func (p *Provider) backstopLate() time.Duration { return p.t.RenewInterval + p.t.Window }

// lookAgain is how long after its last write a lease read held is worth
// reading again: when it may be taken (Record.TakeableAfter), or in read
// mode, for a plain record, once its backstop is late (RenewInterval +
// Window) and it becomes a suspect, and for an unconfirmed challenge once it
// stood Window (staleChallenge).
func (p *Provider) lookAgain(rec lease.Record) time.Duration {
	switch {
	case !p.t.readMode():
	case rec.Challenge == nil:
		return min(rec.TakeableAfter(), p.backstopLate())
	case !rec.Challenge.Confirmed:
		return min(rec.TakeableAfter(), p.t.Window)
	}
	return rec.TakeableAfter()
}

// deadByGossip reports whether, in read mode, gossip shows no live holder of
// node id's lease, held by holder at version: no live member advertises the
// ID (with Peers), or Tasks does not show the holder live. Once this Acquire
// challenged that version, gossip's word alone no longer counts: a holder
// that answered lives, whatever gossip says.
func (p *Provider) deadByGossip(id int, holder string, version int64, known map[int]int64, w *watched) bool {
	if v, ok := w.challenged[id]; !p.t.readMode() || (ok && v == version) {
		return false
	}
	_, held := known[id]
	return (p.cfg.Peers != nil && !held) || (p.cfg.Tasks != nil && !p.cfg.Tasks.TaskLive(holder))
}

// metSuspect reports whether s, suspected by gossip alone (its backstop is
// not late), turns out live once this task's gossip joins the address its
// record publishes (GossipJoiner): then it is not challenged. Each version
// is joined once per Acquire.
func (p *Provider) metSuspect(ctx context.Context, s suspect, w *watched) bool {
	j, ok := p.cfg.Peers.(GossipJoiner)
	if !ok {
		j, ok = p.cfg.Tasks.(GossipJoiner)
	}
	id, rec := s.r.id, s.prev
	age, aged := lease.StoreAge(s.r.meta.LastModified, s.r.meta.Date)
	if v, tried := w.joined[id]; !ok || rec.Gossip == "" || (tried && v == rec.Version) || !aged || age > p.backstopLate() {
		return false
	}
	if w.joined == nil {
		w.joined = map[int]int64{}
	}
	w.joined[id] = rec.Version
	if err := j.JoinGossip(ctx, rec.Gossip); err != nil {
		p.log.Debug("could not join a suspect holder's gossip address", "nodeId", id, "holder", rec.Holder, "gossip", rec.Gossip, "err", err)
		return false
	}
	if p.deadByGossip(id, rec.Holder, rec.Version, p.knownNodes(), w) {
		return false
	}
	p.log.Info("a held lease's holder is live in gossip once joined: not challenged", "nodeId", id, "holder", rec.Holder, "gossip", rec.Gossip)
	return true
}

// challenge challenges s's holder: the challenge, then, once it is answered
// 2xx, the confirm. It notes the confirm in w (held, takeable a Window after
// it), so that Acquire looks again when it may be taken, and reports whether
// the confirm landed. Any failure leaves it to a later round (a challenge
// whose outcome is unknown is never confirmed: it stands until the holder
// answers it or a later round challenges again over it, staleChallenge).
func (p *Provider) challenge(ctx context.Context, s suspect, w *watched) bool {
	key := lease.RecordKey(s.r.id)
	ch, of := s.prev, s.prev.WriteID
	if s.prev.Challenge != nil {
		of = s.prev.Challenge.Of // a challenge again over a stale one: the holder's write it names
	}
	ch.Challenge = &lease.Challenge{Of: of, By: p.cfg.TaskID, WindowMillis: p.t.Window.Milliseconds()}
	ch.WriteID = lease.NewWriteID()
	w.challenged[s.r.id] = s.prev.Version
	_, meta, err := p.writeChallenge(ctx, key, ch, s.r.meta.ETag)
	if err != nil {
		p.log.Info("challenge not written", "key", key, "nodeId", s.r.id, "holder", s.prev.Holder, "err", err)
		return false
	}
	cf, confirm := ch, *ch.Challenge
	confirm.Confirmed = true
	cf.Challenge, cf.WriteID = &confirm, lease.NewWriteID()
	body, meta, err := p.writeChallenge(ctx, key, cf, meta.ETag)
	if errors.Is(err, lease.ErrUnknownOutcome) {
		meta, err = p.readBackTake(ctx, key, cf.WriteID) // a confirm found landed is one: its window runs from its Last-Modified
	}
	confirmed := err == nil
	p.log.Info("challenged a held lease", "key", key, "nodeId", s.r.id, "holder", s.prev.Holder, "version", s.prev.Version,
		"confirmed", confirmed, "err", err)
	if o, ok := p.cfg.Observer.(ChallengeObserver); ok {
		o.Challenged(s.r.id, s.prev.Holder, confirmed)
	}
	if confirmed {
		if meta.LastModified.IsZero() {
			meta.LastModified = meta.Date // a PUT's answer: the confirm landed no later
		}
		w.note(readResult{id: s.r.id, body: body, meta: meta}, cf, cf.TakeableAfter(), p.cfg.ClockMargin)
	}
	return confirmed
}

// writeChallenge writes rec, a challenge or a confirm, by CAS on etag,
// bounded by StoreTimeout, and returns the body it wrote.
func (p *Provider) writeChallenge(ctx context.Context, key string, rec lease.Record, etag string) ([]byte, lease.Meta, error) {
	body, err := rec.Encode()
	if err != nil {
		return nil, lease.Meta{}, err
	}
	wctx, cancel := p.withTimeout(ctx, p.t.StoreTimeout)
	defer cancel()
	meta, err := lease.UpdateLive(wctx, p.store, key, body, etag, rec.LiveFor())
	return body, meta, err
}

// pauseFor returns d, a renewal round's (or jeopardy's) pause before its next
// attempt, cut to a quarter PollInterval while the claim answers a
// challenge: the answer must land within the window, which no read holds up
// meanwhile, and a read that shows the challenge's ETag unchanged does not
// wake the owner.
func (c *Claim) pauseFor(d time.Duration) time.Duration {
	if c.snap.Load().answering {
		return min(d, c.p.t.PollInterval/4)
	}
	return d
}
