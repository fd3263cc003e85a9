package gcsstore

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/httpdate"
	"github.com/nodeid/nodeid/lease"
)

// notModified with the generation proof: what a 304's x-goog-generation
// header proves, its messages, and the exchange's Date when the answer has
// none.
func TestNotModifiedGeneration(t *testing.T) {
	const gen = 1701234567890123
	date := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	modified := date.Add(-time.Second)
	seen := date.Add(time.Minute) // the exchange's last Date
	unproven := "gcsstore: get 7.json: lease: a 304 Not Modified answer that does not show the ETag asked for: 7.json: the store answered 304 to ifGenerationNotMatch=1701234567890123 "
	tests := []struct {
		name     string
		kv       []string
		want     error
		wantMeta lease.Meta
		wantMsg  string
	}{
		{name: "the generation asked for", kv: []string{"X-Goog-Generation", "1701234567890123", "Date", date.Format(http.TimeFormat), "Last-Modified", modified.Format(http.TimeFormat)},
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"1701234567890123"`, Date: date, LastModified: modified},
			wantMsg: "gcsstore: get 7.json: lease: not modified (HTTP 304, x-goog-generation 1701234567890123)"},
		{name: "the generation asked for, spaced", kv: []string{"X-Goog-Generation", " 1701234567890123 ", "Date", date.Format(http.TimeFormat)},
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"1701234567890123"`, Date: date},
			wantMsg: "gcsstore: get 7.json: lease: not modified (HTTP 304, x-goog-generation 1701234567890123)"},
		{name: "the generation asked for, without Date", kv: []string{"X-Goog-Generation", "1701234567890123"},
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"1701234567890123"`, Date: seen},
			wantMsg: "gcsstore: get 7.json: lease: not modified (HTTP 304, x-goog-generation 1701234567890123)"},
		{name: "the generation asked for, a Date that does not parse", kv: []string{"X-Goog-Generation", "1701234567890123", "Date", "now"},
			want: lease.ErrNotModified, wantMeta: lease.Meta{ETag: `"1701234567890123"`, Date: seen},
			wantMsg: "gcsstore: get 7.json: lease: not modified (HTTP 304, x-goog-generation 1701234567890123)"},
		{name: "without x-goog-generation", kv: []string{"Date", date.Format(http.TimeFormat)},
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: unproven + "without an x-goog-generation header, so it does not show what it compared"},
		{name: "an ETag header equal to the ETag asked for", kv: []string{"ETag", `"1701234567890123"`},
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: unproven + "without an x-goog-generation header, so it does not show what it compared"},
		{name: "another generation", kv: []string{"X-Goog-Generation", "1701234567890999"},
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: unproven + `with x-goog-generation "1701234567890999"`},
		{name: "not a number", kv: []string{"X-Goog-Generation", "abc"},
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: unproven + `with x-goog-generation "abc"`},
		{name: "zero", kv: []string{"X-Goog-Generation", "0"},
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: unproven + `with x-goog-generation "0"`},
		{name: "negative", kv: []string{"X-Goog-Generation", "-1701234567890123"},
			want:    lease.ErrNotModifiedUnproven,
			wantMsg: unproven + `with x-goog-generation "-1701234567890123"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(tt.kv); i += 2 {
				h.Set(tt.kv[i], tt.kv[i+1])
			}
			x := &httpdate.Exchange{}
			x.Record(seen)
			m, err := notModified("7.json", gen, h, x)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message\n %s\nwant\n %s", err, tt.wantMsg)
			}
			if m != tt.wantMeta {
				t.Errorf("meta = %+v, want %+v", m, tt.wantMeta)
			}
		})
	}
}
