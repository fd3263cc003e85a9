package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nodeid/nodeid/lease"
)

// write makes one conditional write of body, which carries writeID, at key: a
// create (If-None-Match: *) when etag is empty, else an update (If-Match: etag).
// It never retries. A write whose answer was lost (lease.ErrUnknownOutcome) is
// resolved by reading the object back: if it now carries writeID the write
// landed and its Meta is returned; otherwise the error says what was found.
//
// Errors: lease.ErrPreconditionFailed wrapped in ErrChanged when the object
// changed, appeared or vanished after it was read; ErrNotApplied when a lost
// write is known not to have landed and the object is as it was; ErrOutcomeUnknown
// when the read-back failed too; any other store error as is.
func write(ctx context.Context, st lease.Store, key string, body []byte, etag, writeID string) (lease.Meta, error) {
	var (
		meta lease.Meta
		err  error
	)
	if etag == "" {
		meta, err = st.Create(ctx, key, body)
	} else {
		meta, err = st.Update(ctx, key, body, etag)
	}
	switch {
	case err == nil:
		return meta, nil
	case errors.Is(err, lease.ErrPreconditionFailed):
		return lease.Meta{}, fmt.Errorf("%w: %w", ErrChanged, err)
	case !errors.Is(err, lease.ErrUnknownOutcome):
		return lease.Meta{}, err
	}
	lost := err
	got, gm, err := st.Get(ctx, key)
	switch {
	case errors.Is(err, lease.ErrNotFound) && etag == "":
		return lease.Meta{}, fmt.Errorf("%w: %s is still absent after a create whose answer was lost (%v)", ErrNotApplied, key, lost)
	case errors.Is(err, lease.ErrNotFound):
		return lease.Meta{}, fmt.Errorf("%w: %s is gone after an update whose answer was lost (%v)", ErrChanged, key, lost)
	case err != nil:
		return lease.Meta{}, fmt.Errorf("%w: %v; reading %s back failed too: %v (run nodeidctl status to see whether it landed)", ErrOutcomeUnknown, lost, key, err)
	}
	found := writeIDOf(got)
	switch {
	case found == writeID:
		return gm, nil // it landed: adopt the ETag we read
	case etag != "" && gm.ETag == etag:
		return lease.Meta{}, fmt.Errorf("%w: the answer was lost (%v) and %s still has the body we read", ErrNotApplied, lost, key)
	default:
		return lease.Meta{}, fmt.Errorf("%w: the answer was lost (%v) and %s now has another body (writeId %q)", ErrChanged, lost, key, found)
	}
}

// writeIDOf returns the writeId of a record or manifest body, decoded leniently
// (a body that does not decode strictly still shows whose write it was), or "".
func writeIDOf(body []byte) string {
	var w struct {
		WriteID string `json:"writeId"`
	}
	if json.Unmarshal(body, &w) != nil {
		return ""
	}
	return w.WriteID
}
