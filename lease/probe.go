package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ProbeKey is the key of the one object [Probe] writes, relative to the prefix.
// It is neither a lease object nor the manifest, so nothing else reads it; a store
// that ignores conditions may overwrite it, and nothing else.
const ProbeKey = "probe.json"

// Conditions a store must honour, as named by [ConditionIgnoredError].
const (
	// CondIfNoneMatch is the create condition (If-None-Match: *).
	CondIfNoneMatch = "If-None-Match"
	// CondIfMatch is the update condition (If-Match: <etag>).
	CondIfMatch = "If-Match"
)

var (
	// ErrConditionIgnored is matched (errors.Is) by every [*ConditionIgnoredError]:
	// the store applied a conditional write it should have refused. On such a
	// store two tasks can hold one node ID; nodeid must not run on it.
	ErrConditionIgnored = errors.New("lease: store ignores a write condition")
	// ErrProbeInconclusive means [Probe] could not tell whether the store honours
	// the conditions (an unknown outcome, a timeout, a 5xx: retrying may
	// tell). It is never matched together with ErrConditionIgnored or
	// ErrMisconfigured.
	ErrProbeInconclusive = errors.New("lease: store probe inconclusive")
)

// ConditionIgnoredError reports a conditional write the store applied although
// its condition did not hold.
type ConditionIgnoredError struct {
	// Condition is CondIfNoneMatch or CondIfMatch.
	Condition string
	// Key is the probe object's key, relative to the prefix.
	Key string
}

func (e *ConditionIgnoredError) Error() string {
	switch e.Condition {
	case CondIfNoneMatch:
		return fmt.Sprintf("lease: the store ignores If-None-Match: a second create of %s with If-None-Match: * was applied instead of refused with 412", e.Key)
	default:
		return fmt.Sprintf("lease: the store ignores If-Match: an update of %s with a wrong ETag in If-Match was applied instead of refused with 412", e.Key)
	}
}

// Is reports whether target is ErrConditionIgnored.
func (e *ConditionIgnoredError) Is(target error) bool { return target == ErrConditionIgnored }

// ProbeResult is what [Probe] learned about a store, including its clock.
type ProbeResult struct {
	// DateSeen is true when the store's responses carried a Date header; without
	// it expiry cannot be judged on the store's clock.
	DateSeen bool
	// LastModifiedSeen is true when a GET of the probe object reported
	// Last-Modified; without it expiry cannot be judged either.
	LastModifiedSeen bool
	// ClockOffset is the store's Date minus this host's wall clock when the
	// response arrived, from the response with the shortest round trip. Positive
	// means the store's clock is ahead. Zero when DateSeen is false. Date has
	// whole-second resolution on S3, so the offset does too.
	ClockOffset time.Duration
	// ClockUncertainty is the round trip of the request ClockOffset came from:
	// the store read its clock somewhere within it.
	ClockUncertainty time.Duration
	// ExpiryJudged is true when the GET of the probe object carried the
	// store's own judgement of its liveness (Meta.Liveness): the store
	// judges expiry itself (etcd) and needs neither Date nor Last-Modified.
	ExpiryJudged bool
}

// Probe checks on the object [ProbeKey] that store refuses a second create with
// If-None-Match: * and an update whose If-Match names a wrong ETag, and gathers
// the time facts of its responses. Some stores (older MinIO releases, GCS's XML
// API, Backblaze B2, some S3 proxies) accept those headers and ignore them; on
// them two tasks get one ID and nothing says so.
//
// The error wraps a [*ConditionIgnoredError] (matching ErrConditionIgnored) when
// a condition was ignored, the store's error when it matches ErrMisconfigured
// (a missing bucket, denied access, a store that cannot do conditional
// writes: retrying cannot help), and matches ErrProbeInconclusive when the
// probe could not tell. Concurrent probes of one prefix are safe: each step's expected answer
// does not depend on who wrote the probe object. The result's time facts are
// filled as far as the probe got.
func Probe(ctx context.Context, store Store) (ProbeResult, error) {
	var r ProbeResult
	best := time.Duration(-1)
	sample := func(sent time.Time, m Meta) {
		recv := time.Now()
		if m.Date.IsZero() {
			return
		}
		rtt := recv.Sub(sent)
		r.DateSeen = true
		if best < 0 || rtt < best {
			best = rtt
			r.ClockOffset = m.Date.Sub(recv.Round(0))
			r.ClockUncertainty = rtt
		}
	}
	body := func(step string) []byte {
		return []byte(`{"probe":"` + step + `","at":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + "}\n")
	}
	inconclusive := func(step string, err error) error {
		if errors.Is(err, ErrMisconfigured) { // conclusive: the store cannot be used as configured, and says why
			return err
		}
		return fmt.Errorf("%w: %s %s: %w", ErrProbeInconclusive, step, ProbeKey, err)
	}

	// 1. Make sure the probe object exists (it may, from an earlier probe).
	sent := time.Now()
	m, err := store.Create(ctx, ProbeKey, body("create"))
	switch {
	case err == nil:
		sample(sent, m)
	case !errors.Is(err, ErrPreconditionFailed):
		return r, inconclusive("create", err)
	}
	// 2. Read it: its ETag, Last-Modified and Date.
	sent = time.Now()
	_, m, err = store.Get(ctx, ProbeKey)
	if err != nil {
		return r, inconclusive("read", err)
	}
	sample(sent, m)
	r.LastModifiedSeen = !m.LastModified.IsZero()
	r.ExpiryJudged = m.Liveness.Judged()
	// 3. A second create must be refused.
	sent = time.Now()
	m, err = store.Create(ctx, ProbeKey, body("second create"))
	switch {
	case err == nil:
		sample(sent, m)
		return r, &ConditionIgnoredError{Condition: CondIfNoneMatch, Key: ProbeKey}
	case !errors.Is(err, ErrPreconditionFailed):
		return r, inconclusive("second create", err)
	}
	// 4. An update naming a wrong ETag must be refused. The made-up ETag is not
	// the shape any store produces (S3's are quoted hex digests).
	wrong := `"nodeid-probe-wrong-` + strconv.FormatInt(time.Now().UnixNano(), 36) + `"`
	sent = time.Now()
	m, err = store.Update(ctx, ProbeKey, body("update with a wrong etag"), wrong)
	switch {
	case err == nil:
		sample(sent, m)
		return r, &ConditionIgnoredError{Condition: CondIfMatch, Key: ProbeKey}
	case !errors.Is(err, ErrPreconditionFailed):
		return r, inconclusive("update with a wrong ETag", err)
	}
	return r, nil
}

// TimeProblems returns what in r keeps expiry from being judged on the store's
// clock (a missing Date or Last-Modified), empty when nothing does: always
// empty on a store that judges expiry itself.
func (r ProbeResult) TimeProblems() []string {
	if r.ExpiryJudged {
		return nil
	}
	var p []string
	if !r.DateSeen {
		p = append(p, "the store's responses carry no Date header")
	}
	if !r.LastModifiedSeen {
		p = append(p, "a GET of the probe object reported no Last-Modified")
	}
	return p
}
