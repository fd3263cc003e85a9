// Package notmodified is the one copy of what the HTTP stores (s3store,
// azblobstore, gcsstore) conclude from a 304 Not Modified answer to their
// conditional read ([lease.ConditionalReader]): [lease.ErrNotModified] only
// when the answer's own headers show the version asked for, else
// [lease.ErrNotModifiedUnproven]. It keeps net/http out of package lease.
package notmodified

import (
	"fmt"
	"net/http"

	"github.com/nodeid/nodeid/lease"
)

// A Proof is how a store's 304 answers show the version they compared.
type Proof struct {
	// Header names the header that shows it, as messages name it: "ETag",
	// "x-goog-generation".
	Header string
	// Shown reads it from a 304's headers: the header's text as messages
	// quote it ("" when the answer has none), and the ETag it names, in the
	// store's own form ("" when it names none).
	Shown func(h http.Header) (text, etag string)
	// Unproven is the error of a 304 whose header does not show etag, the
	// ETag asked for (text is the header's text, "" when there was none).
	// It must match [lease.ErrNotModifiedUnproven].
	Unproven func(key, etag, text string) error
}

// ETag is the proof of stores whose 304 answers carry the object's ETag
// header (S3, Azure Blob Storage): it names the ETag it holds, quoted as
// [lease.QuoteETag] quotes it, and its absence or another ETag is told by
// [lease.NotModifiedUnproven].
var ETag = Proof{
	Header: "ETag",
	Shown: func(h http.Header) (string, string) {
		e := lease.QuoteETag(h.Get("ETag"))
		return e, e
	},
	Unproven: lease.NotModifiedUnproven,
}

// Read reads h, the headers of a 304 answer to store's conditional read of
// key that asked for etag (If-None-Match: etag, or what stands for it).
// When p shows an ETag that is etag (both as [lease.QuoteETag] quotes
// them), it returns that ETag with the answer's Date and Last-Modified
// (each zero when the answer has none that parses) and an error matching
// [lease.ErrNotModified]; otherwise an empty Meta and p.Unproven's error,
// matching [lease.ErrNotModifiedUnproven]. Messages begin "<store>: get
// <key>: ".
func Read(store, key, etag string, h http.Header, p Proof) (lease.Meta, error) {
	text, shown := p.Shown(h)
	if shown == "" || shown != lease.QuoteETag(etag) {
		return lease.Meta{}, fmt.Errorf("%s: get %s: %w", store, key, p.Unproven(key, etag, text))
	}
	m := lease.Meta{ETag: shown}
	if t, err := http.ParseTime(h.Get("Date")); err == nil {
		m.Date = t.UTC()
	}
	if t, err := http.ParseTime(h.Get("Last-Modified")); err == nil {
		m.LastModified = t.UTC()
	}
	return m, fmt.Errorf("%s: get %s: %w (HTTP 304, %s %s)", store, key, lease.ErrNotModified, p.Header, text)
}
