package lease

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// ProbeKey is the key of the one object [Probe] and [ProbeReads] write, relative to the prefix.
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
	// Write says which write was applied: "a second create with
	// If-None-Match: *", "an update naming a replaced ETag" (a store that
	// checks a lagging replica, a cache or its version history), or "both of
	// two concurrent updates naming one ETag" (a store that checks, then
	// writes, without a lock).
	Write string
}

func (e *ConditionIgnoredError) Error() string {
	return fmt.Sprintf("lease: the store ignores %s: %s of %s was applied instead of refused with 412", e.Condition, e.Write, e.Key)
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

// Probe checks on the object [ProbeKey] that store honours the write
// conditions as a lease needs them, and gathers the time facts of its
// responses. Some stores (older MinIO releases, GCS's XML API, Backblaze B2,
// some S3 proxies) accept the headers and ignore them, or honour them only
// sometimes; on them two tasks get one ID and nothing says so. Probe checks,
// in six requests:
//
//  1. a create of the object if missing (If-None-Match: *), and a read of it;
//  2. a second create: it must be refused;
//  3. two concurrent updates naming the ETag read: at most one may be
//     applied (a store that checks, then writes, without a lock applies
//     both when they overlap);
//  4. an update naming that ETag again, now replaced: it must be refused (a
//     store that checks a lagging replica or cache, or accepts any ETag the
//     object ever had, applies it). When neither update of step 3 landed
//     (another probe wrote meanwhile) the object is read, and replaced first
//     if it still has that ETag.
//
// The error wraps a [*ConditionIgnoredError] (matching ErrConditionIgnored) when
// a condition was ignored, [ErrLivenessUnbound] when the store judges expiry
// itself but is reached through a wrapper that hides [LiveWriter], the
// store's error when it matches ErrMisconfigured (a missing bucket, denied
// access, a store that cannot do conditional writes: retrying cannot help),
// and matches ErrProbeInconclusive when the probe could not tell. Concurrent
// probes of one prefix are safe: another probe's writes only make ours
// refused, never applied. The result's time facts are filled as far as the
// probe got.
func Probe(ctx context.Context, store Store) (ProbeResult, error) {
	pr := prober{store: store, best: -1}
	if err := pr.run(ctx); err != nil {
		return pr.r, err
	}
	return pr.r, nil
}

// prober is one run of Probe.
type prober struct {
	store Store
	r     ProbeResult
	best  time.Duration // round trip of the response ClockOffset came from; -1: none yet
	mu    sync.Mutex    // guards r and best during the concurrent updates
}

func (pr *prober) run(ctx context.Context) error {
	etag, err := pr.readCreated(ctx)
	if err != nil {
		return err
	}
	if _, ok := pr.store.(LiveWriter); pr.r.ExpiryJudged && !ok {
		return fmt.Errorf("%w: the store judges expiry itself, but this %T does not implement lease.LiveWriter, so no held record would bind its liveness", ErrLivenessUnbound, pr.store)
	}
	if applied, err := pr.create(ctx, "second create"); err != nil || applied {
		return cmp.Or(err, pr.ignored(CondIfNoneMatch, "a second create with If-None-Match: *"))
	}
	landed, err := pr.race(ctx, etag)
	switch {
	case err != nil:
		return err
	case landed == 2:
		return pr.ignored(CondIfMatch, "both of two concurrent updates naming one ETag")
	case landed == 0:
		if err := pr.replace(ctx, etag); err != nil {
			return err
		}
	}
	if applied, err := pr.update(ctx, "update with a replaced etag", etag); err != nil || applied {
		return cmp.Or(err, pr.ignored(CondIfMatch, "an update naming a replaced ETag"))
	}
	return nil
}

// readCreated creates the probe object if missing and reads it: its ETag,
// and the time facts.
func (pr *prober) readCreated(ctx context.Context) (string, error) {
	if _, err := pr.create(ctx, "create"); err != nil {
		return "", err
	}
	sent := time.Now()
	_, m, err := pr.store.Get(ctx, ProbeKey)
	if err != nil {
		return "", inconclusive("read", err)
	}
	pr.sample(sent, m)
	pr.r.LastModifiedSeen = !m.LastModified.IsZero()
	pr.r.ExpiryJudged = m.Liveness.Judged()
	return m.ETag, nil
}

// race sends two updates naming etag at once and returns how many landed.
func (pr *prober) race(ctx context.Context, etag string) (int, error) {
	var wg sync.WaitGroup
	var landed [2]bool
	var errs [2]error
	for i := range landed {
		wg.Go(func() { landed[i], errs[i] = pr.update(ctx, "concurrent update "+strconv.Itoa(i+1), etag) })
	}
	wg.Wait()
	if err := cmp.Or(errs[0], errs[1]); err != nil {
		return 0, err
	}
	n := 0
	for _, l := range landed {
		if l {
			n++
		}
	}
	return n, nil
}

// replace makes sure etag is no longer the object's: neither racing update
// landed (another probe wrote meanwhile, or the store refused both), so the
// object is read and, if it still has etag, updated once.
func (pr *prober) replace(ctx context.Context, etag string) error {
	_, m, err := pr.store.Get(ctx, ProbeKey)
	if err != nil {
		return inconclusive("read after the concurrent updates", err)
	}
	if m.ETag != etag {
		return nil
	}
	applied, err := pr.update(ctx, "update", etag)
	switch {
	case err != nil:
		return err
	case !applied:
		// Refused on the current ETag: another probe wrote in between (it
		// is replaced, then), or this store refuses what it should apply.
		if _, m, err = pr.store.Get(ctx, ProbeKey); err != nil || m.ETag == etag {
			return inconclusive("update on the current etag", cmp.Or(err, errors.New("refused, and the object unchanged")))
		}
	}
	return nil
}

// create writes the probe object with If-None-Match: * and reports whether it
// was applied; an answer that is neither is inconclusive.
func (pr *prober) create(ctx context.Context, step string) (bool, error) {
	sent := time.Now()
	m, err := pr.store.Create(ctx, ProbeKey, probeBody(step))
	return pr.applied(step, sent, m, err)
}

// update writes the probe object with If-Match: etag and reports whether it
// was applied.
func (pr *prober) update(ctx context.Context, step, etag string) (bool, error) {
	sent := time.Now()
	m, err := pr.store.Update(ctx, ProbeKey, probeBody(step), etag)
	return pr.applied(step, sent, m, err)
}

// applied reads a write's answer: applied, refused (ErrPreconditionFailed), or
// inconclusive.
func (pr *prober) applied(step string, sent time.Time, m Meta, err error) (bool, error) {
	switch {
	case err == nil:
		pr.sample(sent, m)
		return true, nil
	case errors.Is(err, ErrPreconditionFailed), errors.Is(err, ErrConflict):
		return false, nil
	}
	return false, inconclusive(step, err)
}

// sample records the store's clock offset from a response sent at sent, when
// its round trip is the shortest so far.
func (pr *prober) sample(sent time.Time, m Meta) {
	recv := time.Now()
	if m.Date.IsZero() {
		return
	}
	rtt := recv.Sub(sent)
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.r.DateSeen = true
	if pr.best < 0 || rtt < pr.best {
		pr.best = rtt
		pr.r.ClockOffset = m.Date.Sub(recv.Round(0))
		pr.r.ClockUncertainty = rtt
	}
}

func (pr *prober) ignored(cond, write string) error {
	return &ConditionIgnoredError{Condition: cond, Key: ProbeKey, Write: write}
}

// inconclusive returns the error of a step that could not tell; a store's
// misconfiguration is conclusive, and passed on as it is (its message names
// the request and what to fix).
func inconclusive(step string, err error) error {
	if errors.Is(err, ErrMisconfigured) {
		return err
	}
	return fmt.Errorf("%w: %s %s: %w", ErrProbeInconclusive, step, ProbeKey, err)
}

// probeBody returns a body for a probe write: unique, like a lease record's
// (its writeId), so that no two writes share an ETag (S3's is the body's MD5).
func probeBody(step string) []byte {
	return []byte(`{"probe":"` + step + `","at":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `,"writeId":"` + NewWriteID() + `"}` + "\n")
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
