package minio_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nodeid/nodeid/election/electiontest"
	"github.com/nodeid/nodeid/lease"
)

func TestElectionMinIO(t *testing.T)     { runElection(t, minio) }
func TestElectionVersitygw(t *testing.T) { runElection(t, versitygw) }

// runElection runs the election suite on s3store against srv, a fresh root
// prefix per subtest.
func runElection(t *testing.T, srv server) {
	ns := srv.open(t)
	var n atomic.Int32
	electiontest.Run(t, func(t *testing.T) lease.Store {
		return ns.store(t, fmt.Sprintf("election-%02d/nodeid/", n.Add(1)))
	})
}
