package s3store_test

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/internal/testkit/logbuf"
	"github.com/nodeid/nodeid/s3store"
)

// TestCheckWarnsAboutBucketSettings: Check warns about a versioned bucket whose
// noncurrent versions no lifecycle rule expires under the prefix, and about
// Object Lock; it says nothing when a rule covers the prefix or the bucket is
// not versioned, and a setting it may not read neither fails Check nor warns
// (unless the bucket is versioned and only the lifecycle is unreadable).
func TestCheckWarnsAboutBucketSettings(t *testing.T) {
	const (
		versioned   = `<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`
		suspended   = `<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>`
		locked      = `<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>`
		ruleFmt     = `<LifecycleConfiguration><Rule><ID>r</ID>%s<Status>%s</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule></LifecycleConfiguration>`
		noLifecycle = "404 NoSuchLifecycleConfiguration"
		noLock      = "404 ObjectLockConfigurationNotFoundError"
		denied      = "403 AccessDenied"
	)
	rule := func(filter, status string) string {
		return strings.Replace(strings.Replace(ruleFmt, "%s", filter, 1), "%s", status, 1)
	}
	tests := []struct {
		name                        string
		versioning, lock, lifecycle string // a body, or "STATUS Code" for an error
		want                        string // a warning's words; "" = no warning
	}{
		{"not versioned", `<VersioningConfiguration/>`, noLock, noLifecycle, ""},
		{"suspended", suspended, noLock, noLifecycle, ""},
		{"versioning unreadable", denied, denied, denied, ""},
		{"versioned, no lifecycle", versioned, noLock, noLifecycle, "no lifecycle rule expires noncurrent versions"},
		{"versioned, rule on the prefix", versioned, noLock, rule(`<Filter><Prefix>nodeid/</Prefix></Filter>`, "Enabled"), ""},
		{"versioned, rule on the bucket", versioned, noLock, rule(`<Filter><Prefix></Prefix></Filter>`, "Enabled"), ""},
		{"versioned, rule on a parent prefix (deprecated form)", versioned, noLock, rule(`<Prefix>node</Prefix>`, "Enabled"), ""},
		{"versioned, rule with And", versioned, noLock, rule(`<Filter><And><Prefix>nodeid/</Prefix></And></Filter>`, "Enabled"), ""},
		{"versioned, rule disabled", versioned, noLock, rule(`<Filter><Prefix>nodeid/</Prefix></Filter>`, "Disabled"), "no lifecycle rule expires"},
		{"versioned, rule on another prefix", versioned, noLock, rule(`<Filter><Prefix>other/</Prefix></Filter>`, "Enabled"), "no lifecycle rule expires"},
		{"versioned, rule on a tag", versioned, noLock, rule(`<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>`, "Enabled"), "no lifecycle rule expires"},
		{"versioned, rule on a size", versioned, noLock, rule(`<Filter><ObjectSizeGreaterThan>1000</ObjectSizeGreaterThan></Filter>`, "Enabled"), "no lifecycle rule expires"},
		{"versioned, lifecycle unreadable", versioned, noLock, denied, "s3:GetLifecycleConfiguration"},
		{"object lock", versioned, locked, rule(`<Filter><Prefix>nodeid/</Prefix></Filter>`, "Enabled"), "the bucket has Object Lock"},
	}
	answer := func(w http.ResponseWriter, a string) {
		if status, code, ok := strings.Cut(a, " "); ok && !strings.HasPrefix(a, "<") {
			n, _ := strconv.Atoi(status)
			s3Error(w, n, code)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(a))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeS3(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				q := r.URL.Query()
				switch {
				case q.Has("versioning"):
					answer(w, tc.versioning)
				case q.Has("object-lock"):
					answer(w, tc.lock)
				case q.Has("lifecycle"):
					answer(w, tc.lifecycle)
				case q.Get("list-type") == "2":
					_, _ = w.Write([]byte(`<ListBucketResult><Name>bucket</Name><IsTruncated>false</IsTruncated></ListBucketResult>`))
				default:
					t.Errorf("unexpected request %s %s", r.Method, r.URL)
					s3Error(w, 400, "InvalidRequest")
				}
			})
			var logs logbuf.Buffer
			st := newStore(t, f.URL, func(c *s3store.Config) {
				c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			})
			if err := st.Check(context.Background()); err != nil {
				t.Fatalf("Check: %v (a bucket setting is advice, never a failure)", err)
			}
			got := logs.String()
			switch {
			case tc.want == "" && got != "":
				t.Fatalf("Check warned:\n%s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("Check logged %q, want a warning saying %q", got, tc.want)
			case tc.want != "" && !strings.Contains(got, "level=WARN"):
				t.Fatalf("Check logged %q, want it at level WARN", got)
			}
		})
	}
}
