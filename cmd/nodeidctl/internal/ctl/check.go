package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/azblobflag"
	"github.com/nodeid/nodeid/cmd/internal/etcdflag"
	"github.com/nodeid/nodeid/lease"
)

// CheckJSON is the output of check --json. The shape is a contract
// (docs/nodeidctl.md): fields may be added, never renamed or removed.
type CheckJSON struct {
	// Bucket, Prefix and Endpoint say which store was checked (Endpoint is ""
	// for AWS S3).
	Bucket   string `json:"bucket"`
	Prefix   string `json:"prefix"`
	Endpoint string `json:"endpoint"`
	// OK is the verdict: the store honours both conditions and reports the
	// time facts nodeid relies on, and its clock is within --max-clock-offset
	// of this host's. Exit 0 when true, 1 when false.
	OK bool `json:"ok"`
	// Conditions is "ok" when both conditions were refused as they should be,
	// "ignored" when one was applied, "misconfigured" when the store's answer
	// showed a configuration error that retrying cannot fix (denied access, an
	// HTTP 501 to a conditional PUT: Problems says which), "inconclusive" when
	// the probe could not tell (an unknown outcome, a timeout, a 5xx).
	Conditions string `json:"conditions"`
	// IgnoredCondition names the ignored condition ("If-None-Match" or
	// "If-Match") when Conditions is "ignored".
	IgnoredCondition string `json:"ignoredCondition,omitempty"`
	// DateSeen and LastModifiedSeen report whether the store's responses carry
	// Date and a GET's Last-Modified: expiry is judged by them.
	DateSeen         bool `json:"dateSeen"`
	LastModifiedSeen bool `json:"lastModifiedSeen"`
	// ClockOffsetMs is the store's clock minus this host's (the Date of the
	// response with the shortest round trip against the receive time), in ms,
	// present when DateSeen; whole-second resolution. ClockUncertaintyMs is
	// that round trip.
	ClockOffsetMs      *int64 `json:"clockOffsetMs,omitempty"`
	ClockUncertaintyMs *int64 `json:"clockUncertaintyMs,omitempty"`
	// Problems says what made OK false, one sentence each. Never null.
	Problems []string `json:"problems"`
}

func checkCommand() *command {
	return &command{
		name:     "check",
		synopsis: "[--json] [--max-clock-offset D] [common flags]",
		summary:  "check that the store honours If-None-Match and If-Match, and its clock",
		help: `
Runs the store probe every broker runs before taking an ID, on one object
under the prefix (probe.json, which nodeid ignores otherwise): a second create
with If-None-Match: * must be refused with 412, of two updates sent at once
naming one ETag in If-Match at most one may be applied, and an update naming
that ETag once replaced must be refused. Some stores (older MinIO releases, GCS's XML API, Backblaze
B2, some S3 proxies) accept these headers and ignore them; on such a store two
tasks get one node ID and nothing says so. It also checks the time facts expiry
is judged by (a Date header on responses, Last-Modified on a GET) and compares
the store's clock (Date) with this host's: the offset, with the request's round
trip as its uncertainty and Date's whole-second resolution.

check writes only probe.json (a store that ignores the conditions may overwrite
it; nothing else is touched). Exit 0 when every check passed, 1 when one did
not or the probe could not tell (the message says which).`,
		run: runCheck,
	}
}

func runCheck(a *app, ctx context.Context, cmd *command, args []string) error {
	var c commonFlags
	f := a.newFlagSet(cmd)
	c.register(f)
	asJSON := f.Bool("json", false, "print JSON (the shape is documented in docs/nodeidctl.md)")
	maxOffset := f.Duration("max-clock-offset", farFloor,
		"largest clock offset between the store and this host that passes (beyond the round trip and Date's 1s resolution); tasks wait for a floor at most MaxClockWait (5s) ahead of their clock")
	st, err := a.setup(ctx, f, &c, args, func() error {
		if *maxOffset < 0 {
			return usagef("--max-clock-offset %v is negative", *maxOffset)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r, perr := lease.Probe(ctx, st)
	out := CheckJSON{Bucket: c.bucket, Prefix: c.prefix, Endpoint: c.endpoint, Conditions: "ok",
		DateSeen: r.DateSeen, LastModifiedSeen: r.LastModifiedSeen, Problems: []string{}}
	var ce *lease.ConditionIgnoredError
	switch {
	case errors.As(perr, &ce):
		out.Conditions, out.IgnoredCondition = "ignored", ce.Condition
		out.Problems = append(out.Problems, fmt.Sprintf("%s ignores %s: nodeid cannot run on it, two tasks could hold one node ID (%v)", storeName(&c), ce.Condition, perr))
	case errors.Is(perr, lease.ErrMisconfigured):
		out.Conditions = "misconfigured"
		out.Problems = append(out.Problems, fmt.Sprintf("the probe of %s failed on a configuration error (retrying will not help): %v", storeName(&c), perr))
	case perr != nil:
		out.Conditions = "inconclusive"
		out.Problems = append(out.Problems, fmt.Sprintf("the probe of %s could not tell whether it honours the conditions: %v", storeName(&c), perr))
	}
	if perr == nil || ce != nil { // the GET ran: the time facts are known
		out.Problems = append(out.Problems, r.TimeProblems()...)
	}
	if r.DateSeen {
		off, unc := r.ClockOffset.Milliseconds(), r.ClockUncertainty.Milliseconds()
		out.ClockOffsetMs, out.ClockUncertaintyMs = &off, &unc
		if excess := r.ClockOffset.Abs() - r.ClockUncertainty - time.Second; excess > *maxOffset {
			out.Problems = append(out.Problems, fmt.Sprintf("the store's clock is %v %s this host's (more than --max-clock-offset %v): fix this host's time sync (NTP), or the store's",
				r.ClockOffset.Abs().Round(time.Millisecond), aheadBehind(r.ClockOffset), *maxOffset))
		}
	}
	out.OK = len(out.Problems) == 0
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		printCheck(a, &out, r)
	}
	if !out.OK {
		return fmt.Errorf("%s is not fit for nodeid: %d problem(s)", storeName(&c), len(out.Problems))
	}
	return nil
}

// printCheck prints the human form of check's result.
func printCheck(a *app, out *CheckJSON, r lease.ProbeResult) {
	switch out.Conditions {
	case "ok":
		a.out("conditions:    ok (a second If-None-Match: * create and a replaced If-Match were refused; of two concurrent If-Match updates at most one applied)")
	case "ignored":
		a.out("conditions:    IGNORED: %s", out.IgnoredCondition)
	case "misconfigured":
		a.out("conditions:    not checked: a configuration error (below)")
	default:
		a.out("conditions:    inconclusive")
	}
	a.out("Date:          %s", seen(out.DateSeen))
	a.out("Last-Modified: %s", seen(out.LastModifiedSeen))
	if out.ClockOffsetMs != nil {
		a.out("clock offset:  store %v %s this host (±%v round trip, Date has 1s resolution)",
			r.ClockOffset.Abs().Round(time.Millisecond), aheadBehind(r.ClockOffset), r.ClockUncertainty.Round(time.Millisecond))
	}
	for _, p := range out.Problems {
		a.out("problem:       %s", p)
	}
	if out.OK {
		a.out("verdict:       ok")
	} else {
		a.out("verdict:       NOT OK")
	}
}

func seen(ok bool) string {
	if ok {
		return "present"
	}
	return "MISSING"
}

func aheadBehind(d time.Duration) string {
	if d < 0 {
		return "behind"
	}
	return "ahead of"
}

// storeName names the store for messages: the endpoint, or the AWS bucket.
func storeName(c *commonFlags) string {
	switch c.store {
	case etcdflag.StoreEtcd:
		return fmt.Sprintf("etcd at --etcd-endpoints %s (prefix %s)", c.etcd.Endpoints, c.prefix)
	case azblobflag.Store:
		return fmt.Sprintf("%s (prefix %s)", c.azblob.Where(), c.prefix)
	}
	if c.endpoint != "" {
		return fmt.Sprintf("the S3 store at --s3-endpoint %s (bucket %s)", c.endpoint, c.bucket)
	}
	return fmt.Sprintf("AWS S3 bucket %s", c.bucket)
}
