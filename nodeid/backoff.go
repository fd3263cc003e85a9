package nodeid

import "time"

// releaseRetryPace is the pace of a release whose write failed and is tried
// again (until Close's context ends).
const releaseRetryPace = 200 * time.Millisecond

// backoff paces the attempts of a retry loop (acquire rounds, renewal and
// release attempts): each pause is drawn uniformly from [d/2, d) with the
// provider's seeded random source, and d doubles after each pause up to its
// limit (a constant pace when the limit is the base). The loops sleep the
// pauses on the provider's Clock, so tests and the simulation drive them.
type backoff struct {
	p        *Provider
	d, limit time.Duration
}

// newBackoff returns a backoff starting at base and doubling up to limit.
func (p *Provider) newBackoff(base, limit time.Duration) *backoff {
	return &backoff{p: p, d: base, limit: max(base, limit)}
}

// next returns the next pause and doubles the pace.
func (b *backoff) next() time.Duration {
	w := b.p.jitter(b.d)
	b.d = min(2*b.d, b.limit)
	return w
}

// jitter returns a duration uniformly in [d/2, d).
func (p *Provider) jitter(d time.Duration) time.Duration {
	p.randMu.Lock()
	defer p.randMu.Unlock()
	return d/2 + time.Duration(p.rand.Int64N(int64(d/2)+1))
}
