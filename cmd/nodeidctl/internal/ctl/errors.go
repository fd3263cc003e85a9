package ctl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
)

var (
	// ErrUsage means the command line or an environment variable is wrong: an
	// unknown command or flag, a bad value, a missing required flag. Exit 2.
	// It is envflag's: the flag layer's errors carry it too.
	ErrUsage = envflag.ErrUsage
	// ErrRefused means the command declined to act on what it found: a live
	// lease without --force, a corrupt object given to release, a decodable
	// object given to repair, an unconfirmed repair, a cluster size out of range.
	// Exit 1.
	ErrRefused = errors.New("nodeidctl: refused")
	// ErrChanged means a conditional write was not applied because the object
	// changed (or appeared, or vanished) after it was read: run the command again
	// after looking at the new state. Exit 1.
	ErrChanged = errors.New("nodeidctl: the object changed meanwhile")
	// ErrNotApplied means a write whose answer was lost did not land: reading the
	// object back shows its previous body. Exit 1; running again is safe.
	ErrNotApplied = errors.New("nodeidctl: the write was not applied")
	// ErrOutcomeUnknown means a write whose answer was lost could not be read
	// back either: whether it landed is unknown until the next status. Exit 1.
	ErrOutcomeUnknown = errors.New("nodeidctl: the outcome of the write is unknown")
)

// usagef returns an error wrapping ErrUsage whose text is the message alone.
func usagef(format string, args ...any) error { return envflag.Usagef(format, args...) }

// refusef returns an error wrapping ErrRefused.
func refusef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// message strips the sentinel prefix that only classifies an error, so that
// the operator reads the reason and not "nodeidctl: refused: ..." (a usage
// error's text is its reason already).
func message(err error) string {
	s := err.Error()
	if errors.Is(err, ErrRefused) {
		if rest, ok := strings.CutPrefix(s, ErrRefused.Error()+": "); ok {
			return rest
		}
	}
	return s
}
