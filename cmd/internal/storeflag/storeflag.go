// Package storeflag is the one copy of --store's choice that nodeid-broker
// and nodeidctl share: --store names one store, and only that store's flags
// may be given. Each store's own flags and checks live in its package
// (etcdflag, azblobflag, gcsflag; the S3 flags in each command).
package storeflag

import (
	"errors"
	"strings"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/s3store"
)

// OpenError returns err, an error of a store's constructor, as a usage
// error (exit 2) when it is a bad configuration found before any request:
// no AWS region.
func OpenError(err error) error {
	if errors.Is(err, s3store.ErrNoRegion) {
		return envflag.Usagef("%v", err)
	}
	return err
}

// Family is one store --store can name, as a command sees it.
type Family struct {
	// Store is the --store value ("s3", "etcd", "azblob", "gcs").
	Store string
	// Flags names the family's flags in messages: "the --gcs-* flags".
	Flags string
	// Given reports whether any flag of the family that names a store was
	// given (a flag with a default, such as a timeout, does not count).
	Given bool
	// Check checks the family's flags when --store names it; nil: nothing
	// more to check.
	Check func() error
}

// Check checks --store (src names it in messages, with its variable when
// that set it) against fams: store must be one of them, no other family's
// flags may be given, and the chosen family's Check must pass.
func Check(src, store string, fams ...Family) error {
	var chosen *Family
	var names []string
	for i := range fams {
		names = append(names, fams[i].Store)
		if fams[i].Store == store {
			chosen = &fams[i]
		}
	}
	if chosen == nil {
		return envflag.Usagef("%s %q: want %s or %s", src, store, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	}
	for _, f := range fams {
		if f.Store != store && f.Given {
			return envflag.Usagef("%s need --store %s (%s is %s, which excludes them)", f.Flags, f.Store, src, store)
		}
	}
	if chosen.Check != nil {
		return chosen.Check()
	}
	return nil
}
