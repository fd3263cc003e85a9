//go:build faults

package faults

import (
	"strings"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// recordHistory starts the run's history of store operations (S3 runs) and
// returns st with the test's own reads recorded in it, as client 0.
func (r *run) recordHistory(st lease.Store) lease.Store {
	r.lin = storetest.NewRecorder()
	return r.lin.Wrap(0, st)
}

// recordProxy makes the S3 proxy of a broker record into the run's history.
func (r *run) recordProxy(px faultProxy, slot, gen int) {
	p, ok := px.(*Proxy)
	if !ok || r.lin == nil {
		return // etcd: the TCP proxy cannot read gRPC (docs/faults.md)
	}
	root := "/" + r.bucket + "/" + r.prefix
	p.Record(r.lin, 1+slot*100+gen, func(path string) (string, bool) { return strings.CutPrefix(path, root) })
}
