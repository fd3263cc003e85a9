package nodeid

import (
	"time"

	pace "github.com/nodeid/nodeid/internal/backoff"
)

// releaseRetryPace is the pace of a release whose write failed and is tried
// again (until Close's context ends).
const releaseRetryPace = 200 * time.Millisecond

// backoff paces the attempts of a retry loop (acquire rounds, renewal and
// release attempts): internal/backoff's, drawn from the provider's seeded
// random source, so that the simulation replays it.
type backoff struct{ pace.Backoff }

// newBackoff returns a backoff starting at base and doubling up to limit.
func (p *Provider) newBackoff(base, limit time.Duration) *backoff {
	b := &backoff{pace.Backoff{Base: base, Limit: limit, Int64N: p.int64N}}
	b.Reset()
	return b
}

// next returns the next pause and doubles the pace.
func (b *backoff) next() time.Duration { return b.Next() }

// int64N draws from the provider's seeded random source, uniform in [0, n).
func (p *Provider) int64N(n int64) int64 {
	p.randMu.Lock()
	defer p.randMu.Unlock()
	return p.rand.Int64N(n)
}
