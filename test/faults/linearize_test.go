//go:build faults

package faults

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// recordHistory starts the run's history of store operations and returns st
// with the test's own reads recorded in it, as client 0. When the brokers
// record their own calls (etcd, a storeBackend) it is timed on the host's
// monotonic clock, which their --debug-store-history files are timed on too.
func (r *run) recordHistory(st lease.Store) lease.Store {
	r.lin = storetest.NewRecorder()
	if r.sc.brokersRecord() {
		now, err := storetest.MonotonicClock()
		if err != nil {
			r.t.Fatal(err)
		}
		r.lin = storetest.NewRecorderOn(now)
	}
	return r.lin.Wrap(0, st)
}

// historyArgs returns the flags that make a broker named name record its
// store calls for the run's history: behind a TCP proxy, which cannot read
// them (etcd, a storeBackend), --debug-store-history to a file in the run's
// folder; on S3 none (its proxy records them).
func (r *run) historyArgs(name string) []string {
	if !r.sc.brokersRecord() {
		return nil
	}
	return []string{"--debug-store-history", r.historyPath(name)}
}

func (r *run) historyPath(name string) string { return filepath.Join(r.dir, name+".history.jsonl") }

// checkHistory checks the run's history (CheckHistory): on etcd or a
// storeBackend, once the brokers' files are added to it. The whole history is kept in the run's
// folder as store-history.json, for TestReplayStoreHistory -history when the
// check fails.
func (r *run) checkHistory(rep *Report) {
	if r.lin == nil {
		return
	}
	by := "through the proxies"
	if r.sc.brokersRecord() {
		by = "by the brokers"
		r.mu.Lock()
		all := slices.Clone(r.all)
		r.mu.Unlock()
		for _, p := range all {
			if _, err := AddBrokerHistory(r.lin, brokerClient(p.slot, p.gen), r.historyPath(p.name)); err != nil {
				rep.add(CheckLinearizable, "the store history of broker %s: %v", p.name, err)
			}
		}
	}
	if b, err := json.Marshal(r.lin.Calls()); err == nil {
		_ = os.WriteFile(filepath.Join(r.dir, "store-history.json"), b, 0o644)
	}
	CheckHistory(rep, r.lin, by)
}

// brokerClient names the broker of a slot and generation in the history.
func brokerClient(slot, gen int) int { return 1 + slot*100 + gen }

// recordProxy makes the S3 proxy of a broker record into the run's history.
func (r *run) recordProxy(px faultProxy, slot, gen int) {
	p, ok := px.(*Proxy)
	if !ok || r.lin == nil {
		return // etcd: the TCP proxy cannot read gRPC; the broker records (historyArgs)
	}
	root := "/" + r.bucket + "/" + r.prefix
	p.Record(r.lin, brokerClient(slot, gen), func(path string) (string, bool) { return strings.CutPrefix(path, root) })
}
