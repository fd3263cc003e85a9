package faults

import (
	"strings"
	"testing"
)

// fencedThenStopped is seed 629954 of TestFaultsEtcd (issue 25), the broker
// part: etcd was down from 6.0 s to 9.2 s; g0 (node 2 v1) answered /health
// 503 for the fence at 7.344 s, before its renewal loop declared a loss; it
// was sent SIGTERM at 7.55 s; its release landed on its own last ETag once
// etcd was back (nobody had taken the lease), and it exited 0. g1 then took
// node 2 v2, free.
func fencedThenStopped(t *testing.T) *History {
	h := &History{}
	h.AddBroker(BrokerRecord{Name: "s1.g0", Task: "t0", Fate: FateTerminated, FateAt: s(7.55),
		StopLoggedAt: s(7.56), Exited: true, ExitedAt: s(9.6), ExitCode: 0})
	h.AddBroker(BrokerRecord{Name: "s1.g1", Task: "t1"})
	h.AddIDs(batch(t, 0, 2, 1, 5, 5.01, t0+5000, 100))
	h.AddIDs(batch(t, 1, 2, 2, 9.7, 9.71, t0+9700, 100))
	for _, o := range []HealthObs{
		{Broker: 0, Start: s(5), End: s(5.01), OK: true},
		{Broker: 0, Start: s(7.3), End: s(7.344), Reason: reasonFenced},
		{Broker: 0, Start: s(7.6), End: s(7.61), Reason: reasonStopping},
		{Broker: 1, Start: s(9.7), End: s(9.71), OK: true},
	} {
		h.AddHealth(o)
	}
	for _, o := range []LeaseObs{
		{Node: 2, Start: s(5), End: s(5.01), Version: 1, Holder: "t0"},
		{Node: 2, Start: s(9.55), End: s(9.56), Version: 1, Holder: ""},
		{Node: 2, Start: s(9.8), End: s(9.81), Version: 2, Holder: "t1"},
	} {
		h.AddLease(o)
	}
	h.AddTakeover(TakeoverObs{Broker: 1, At: s(9.69), Node: 2, Version: 2})
	h.AddRelease(ReleaseObs{Broker: 0, At: s(9.6), Node: 2, Found: true, Version: 1, Holder: ""})
	return h
}

// TestCheckFencedThenStopped: the fence falling is not a loss. Exit 0 after
// SIGTERM is right when the release landed on the broker's own ETag, and wrong
// once the history proves the lease was lost before the broker stopped.
func TestCheckFencedThenStopped(t *testing.T) {
	r := Check(fencedThenStopped(t))
	if r.Failed() {
		t.Fatalf("seed 629954's history: %s\n%s", r.Summary(), r.Details(5))
	}
	if r.Exercised[CheckExitCode+"/fenced-then-terminated"] != 1 {
		t.Errorf("exercised %v, want the fenced-then-terminated case once", r.Exercised)
	}
	for _, c := range []struct {
		name string
		edit func(h *History)
		want string // in the violation
	}{
		{"taken over expired before the release", func(h *History) {
			h.Takeovers[0].Expired = true
			h.Releases[0].Version, h.Releases[0].Holder = 2, "t1"
		}, "over expired"},
		{"a higher version seen before SIGTERM", func(h *History) {
			h.AddLease(LeaseObs{Node: 2, Start: s(7.4), End: s(7.41), Version: 2, Holder: "t1"})
		}, "before it was stopped"},
		{"the loss declared before SIGTERM", func(h *History) {
			h.Brokers[0].LossLoggedAt = s(7.5)
		}, "its log said it lost its lease"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := fencedThenStopped(t)
			c.edit(h)
			r := Check(h)
			if r.Count(CheckExitCode) != 1 || !strings.Contains(r.Details(5), c.want) {
				t.Fatalf("want one exit-code violation naming %q; report: %s\n%s", c.want, r.Summary(), r.Details(5))
			}
		})
	}
}

// TestCheckExitAfterStop: after SIGTERM, exit 3 is right unless the release
// is seen to have landed; exit 1 is noted when the release was not
// confirmed, a violation otherwise.
func TestCheckExitAfterStop(t *testing.T) {
	for _, c := range []struct {
		name      string
		edit      func(h *History)
		violation bool
	}{
		{"exit 3, the lease still held", func(h *History) {
			h.Brokers[0].ExitCode = 3
			h.Releases[0].Holder = "t0"
		}, false},
		{"exit 3, the release landed", func(h *History) {
			h.Brokers[0].ExitCode = 3
		}, true},
		{"exit 1, release not confirmed", func(h *History) {
			h.Brokers[0].ExitCode = 1
			h.Brokers[0].ExitErr = `{"msg":"exiting after a failure","err":"release: nodeid: release of node 2 not confirmed (context deadline exceeded)"}`
			h.Releases[0].Holder = "t0"
		}, false},
		{"exit 1, release not confirmed, taken over meanwhile", func(h *History) {
			// Seed 592 of TestFaults in CI: MinIO down for 6.7 s (a slow
			// restart on a loaded machine) from before the SIGTERM to after
			// the 5 s shutdown timeout; the lease expired and was taken.
			h.Brokers[0].ExitCode = 1
			h.Brokers[0].ExitErr = `{"msg":"exiting after a failure","err":"release: nodeid: release of node 2 not confirmed (context deadline exceeded): the lease expires after 3s"}`
			h.Takeovers[0].Expired = true
			h.Releases[0].Version, h.Releases[0].Holder = 2, "t1"
		}, false},
		{"exit 1, another failure", func(h *History) {
			h.Brokers[0].ExitCode = 1
			h.Brokers[0].ExitErr = `{"msg":"exiting after a failure","err":"http server: closed"}`
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := fencedThenStopped(t)
			h.Releases[0].Version = 1
			c.edit(h)
			r := Check(h)
			if got := r.Count(CheckExitCode) > 0; got != c.violation {
				t.Fatalf("exit-code violation %v, want %v: %s\n%s", got, c.violation, r.Summary(), r.Details(5))
			}
			for _, v := range r.Violations {
				if v.Check != CheckExitCode && v.Check != CheckRelease {
					t.Errorf("unexpected violation %s: %s", v.Check, v.Msg)
				}
			}
		})
	}
}

// jeopardy is a broker whose fence fell at 5 s (503) with a loss grace: it
// may recover, or not.
func jeopardy(t *testing.T, grace bool) *History {
	h := &History{}
	if grace {
		h.LossGrace = s(3)
	}
	h.AddBroker(BrokerRecord{Name: "a", Task: "ta"})
	h.AddIDs(batch(t, 0, 0, 1, 4, 4.01, t0+4000, 100))
	for _, o := range []HealthObs{
		{Broker: 0, Start: s(4), End: s(4.01), OK: true},
		{Broker: 0, Start: s(5), End: s(5.01), Reason: reasonFenced},
		{Broker: 0, Start: s(5.5), End: s(5.51), Reason: reasonFenced},
	} {
		h.AddHealth(o)
	}
	h.AddLease(LeaseObs{Node: 0, Start: s(4), End: s(4.01), Version: 1, Holder: "ta"})
	return h
}

// TestCheckJeopardy: with a loss grace, /health may answer 200 again after a
// 503 for the fence (a recovery, same version), and IDs may follow it; IDs
// after a 503 that no recovery followed, and any 200 or ID after the broker
// began to stop or declared its loss, are violations. Without a grace the
// fence is final.
func TestCheckJeopardy(t *testing.T) {
	recovered := func(h *History) {
		h.AddHealth(HealthObs{Broker: 0, Start: s(6), End: s(6.01), OK: true})
		h.AddIDs(batch(t, 0, 0, 1, 6.5, 6.51, t0+6500, 100))
	}
	for _, c := range []struct {
		name  string
		grace bool
		edit  func(h *History)
		want  []string // the checks violated
	}{
		{"recovered", true, recovered, nil},
		{"recovered without a grace", false, recovered, []string{CheckHealthFlap, CheckAfterUnhealthy}},
		{"IDs in jeopardy, no recovery", true, func(h *History) {
			h.AddIDs(batch(t, 0, 0, 1, 5.2, 5.21, t0+5200, 100))
		}, []string{CheckAfterUnhealthy}},
		{"recovered after it began to stop", true, func(h *History) {
			h.Brokers[0].StopLoggedAt = s(5.8)
			recovered(h)
		}, []string{CheckHealthFlap, CheckAfterUnhealthy}},
		{"recovered after its 503 said stopping", true, func(h *History) {
			h.Health[2].Reason = reasonStopping
			recovered(h)
		}, []string{CheckHealthFlap, CheckAfterUnhealthy}},
		{"recovered after its loss", true, func(h *History) {
			h.Brokers[0].LossLoggedAt = s(5.8)
			recovered(h)
		}, []string{CheckHealthFlap, CheckAfterUnhealthy, CheckExitCode}}, // and still running
		{"recovered although superseded", true, func(h *History) {
			h.AddLease(LeaseObs{Node: 0, Start: s(5.6), End: s(5.61), Version: 2, Holder: "tb"})
			recovered(h)
		}, []string{CheckSuperseded, CheckExitCode}}, // and still running
		{"a stall is no fence", false, func(h *History) {
			h.Health[1].Reason, h.Health[2].Reason = reasonStalled, reasonStalled
			recovered(h)
		}, nil},
		{"paused past its lease, then 200", false, func(h *History) {
			h.Health = h.Health[:1]
			h.Brokers[0].MustLose, h.Brokers[0].MustLoseWhy, h.Brokers[0].MustLoseAt = true, "a SIGSTOP", s(5.9)
			recovered(h)
		}, []string{CheckHealthFlap, CheckAfterUnhealthy}},
		{"paused past its lease, then recovered", true, func(h *History) {
			h.Health = h.Health[:1]
			h.Brokers[0].MustLose, h.Brokers[0].MustLoseWhy, h.Brokers[0].MustLoseAt = true, "a SIGSTOP", s(5.9)
			recovered(h)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := jeopardy(t, c.grace)
			c.edit(h)
			r := Check(h)
			got := map[string]bool{}
			for _, v := range r.Violations {
				got[v.Check] = true
			}
			for _, w := range c.want {
				if !got[w] {
					t.Errorf("no %s violation", w)
				}
				delete(got, w)
			}
			for v := range got {
				t.Errorf("unexpected %s violation", v)
			}
			if t.Failed() {
				t.Logf("report: %s\n%s", r.Summary(), r.Details(5))
			}
		})
	}
}

// TestCheckRecoveryCounts: with the recovery count in every answer, the rule
// "no IDs between the fence and the recovery" is exact. The broker of
// jeopardy (fenced at 5 s, count 0) recovers: IDs and /health 200 with count
// 1 after the fence's 503 are right, even when the IDs' request was sent
// before the first 200 of the recovery (a broker may issue the moment it
// recovers); IDs or a 200 with count 0 after that 503 were let out between
// the fence and the recovery, even when a recovery (a 200) came later. A
// history without the count (RecoveriesReported false) cannot tell, and
// passes.
func TestCheckRecoveryCounts(t *testing.T) {
	recovered := func(h *History) {
		h.AddHealth(HealthObs{Broker: 0, Start: s(6), End: s(6.01), OK: true, Recoveries: 1})
		b := batch(t, 0, 0, 1, 6.5, 6.51, t0+6500, 100)
		b.Recoveries = 1
		h.AddIDs(b)
	}
	for _, c := range []struct {
		name     string
		reported bool
		edit     func(h *History)
		want     []string // the checks violated
	}{
		{"recovered", true, recovered, nil},
		{"IDs the moment it recovered, before a 200", true, func(h *History) {
			b := batch(t, 0, 0, 1, 5.6, 5.61, t0+5600, 100)
			b.Recoveries = 1
			h.AddIDs(b)
			recovered(h)
		}, nil},
		{"IDs between the fence and the recovery", true, func(h *History) {
			h.AddIDs(batch(t, 0, 0, 1, 5.6, 5.61, t0+5600, 100)) // count 0, the fence's
			recovered(h)
		}, []string{CheckAfterUnhealthy}},
		{"IDs between the fence and the recovery, count not reported", false, func(h *History) {
			h.AddIDs(batch(t, 0, 0, 1, 5.6, 5.61, t0+5600, 100))
			recovered(h)
		}, nil},
		{"200 without a recovery", true, func(h *History) {
			h.AddHealth(HealthObs{Broker: 0, Start: s(5.7), End: s(5.71), OK: true})
			recovered(h)
		}, []string{CheckHealthFlap}},
		{"fenced again after a recovery, IDs with the new count", true, func(h *History) {
			recovered(h)
			h.AddHealth(HealthObs{Broker: 0, Start: s(7), End: s(7.01), Reason: reasonFenced, Recoveries: 1})
			b := batch(t, 0, 0, 1, 7.5, 7.51, t0+7500, 100)
			b.Recoveries = 1
			h.AddIDs(b)
		}, []string{CheckAfterUnhealthy}},
		{"a stall is no fence", true, func(h *History) {
			h.Health[1].Reason, h.Health[2].Reason = reasonStalled, reasonStalled
			h.AddIDs(batch(t, 0, 0, 1, 5.6, 5.61, t0+5600, 100))
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := jeopardy(t, true)
			h.RecoveriesReported = c.reported
			c.edit(h)
			r := Check(h)
			got := map[string]bool{}
			for _, v := range r.Violations {
				got[v.Check] = true
			}
			for _, w := range c.want {
				if !got[w] {
					t.Errorf("no %s violation", w)
				}
				delete(got, w)
			}
			for v := range got {
				t.Errorf("unexpected %s violation", v)
			}
			if c.name == "recovered" && r.Exercised[CheckAfterUnhealthy+"/recovered"] != 1 {
				t.Errorf("exercised %v, want %s/recovered=1", r.Exercised, CheckAfterUnhealthy)
			}
			if t.Failed() {
				t.Logf("report: %s\n%s", r.Summary(), r.Details(5))
			}
		})
	}
}
