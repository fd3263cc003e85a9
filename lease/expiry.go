package lease

import "time"

// StoreClockResolution is the resolution of the store's Last-Modified and Date
// headers. Both are whole seconds on every S3 server measured, so their difference
// overstates the real time elapsed by up to this much.
const StoreClockResolution = time.Second

// DefaultClockMargin is the default extra margin of the expiry rule: it covers a
// store stamping Last-Modified a few ms early and similar imprecision.
const DefaultClockMargin = time.Second

// State is a lease object's state as judged from one response.
type State int

const (
	// StateFree means no one holds the lease; it may be taken at once.
	StateFree State = iota
	// StateHeld means a holder may still be issuing IDs under it.
	StateHeld
	// StateExpired means the holder stopped before now: it may be taken.
	StateExpired
)

var stateNames = [...]string{StateFree: "free", StateHeld: "held", StateExpired: "expired"}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "unknown"
	}
	return stateNames[s]
}

// StoreAge returns how long ago, on the store's clock, an object was last
// modified: date - lastModified. ok is false when either time is unknown.
func StoreAge(lastModified, date time.Time) (age time.Duration, ok bool) {
	if lastModified.IsZero() || date.IsZero() {
		return 0, false
	}
	return date.Sub(lastModified), true
}

// Expired reports whether a lease of duration lease, last written at lastModified
// and observed at date (both on the store's clock, as one response reported
// them), is expired:
//
//	date - lastModified > lease + StoreClockResolution + clockMargin
//
// Unknown times never expire a lease. The rule implies that more than lease of
// real time passed since the store applied the write, whatever the nodes' clocks
// say (docs/evidence/design.md section 5).
func Expired(lastModified, date time.Time, lease, clockMargin time.Duration) bool {
	age, ok := StoreAge(lastModified, date)
	return ok && age > lease+StoreClockResolution+clockMargin
}

// FirstExpiredDate returns the earliest server Date at which [Expired] holds
// for a write last modified at lastModified, if the object is not written
// again: the first whole second after lastModified + lease +
// StoreClockResolution + clockMargin (S3 Dates are whole seconds). It is zero
// when lastModified is unknown.
//
// It only tells a waiting task when to look again; whether a lease may be
// taken is still decided by Expired on a fresh response.
func FirstExpiredDate(lastModified time.Time, lease, clockMargin time.Duration) time.Time {
	if lastModified.IsZero() {
		return time.Time{}
	}
	return lastModified.Add(lease + StoreClockResolution + clockMargin).Truncate(time.Second).Add(time.Second)
}

// StateOf judges a decoded record from one response's Meta: free when it has no
// holder; on a store that judges expiry itself (m.Liveness judged), expired
// when the store says its liveness ran out; on a store that reports its clock,
// expired by [Expired] with the record's own lease duration (a confirm of read
// mode: its window, Record.TakeableAfter); else held.
func StateOf(r *Record, m Meta, clockMargin time.Duration) State {
	switch {
	case r.Free():
		return StateFree
	case m.Liveness.Judged():
		if m.Liveness == LivenessExpired {
			return StateExpired
		}
		return StateHeld
	case Expired(m.LastModified, m.Date, r.TakeableAfter(), clockMargin):
		return StateExpired
	default:
		return StateHeld
	}
}

// ListedExpired reports whether a listing entry shows a lease of duration
// lease expired: the store's own judgement on a store that judges expiry
// itself, else [Expired] with the listing's Date. Listings only order
// candidates; a take is judged by [StateOf] on a fresh read.
func ListedExpired(o ObjectInfo, date time.Time, lease, clockMargin time.Duration) bool {
	if o.Liveness.Judged() {
		return o.Liveness == LivenessExpired
	}
	return Expired(o.LastModified, date, lease, clockMargin)
}
