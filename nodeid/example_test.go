package nodeid_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/nodeid"
)

func Example() {
	ctx := context.Background()
	store := storetest.NewMemStore() // s3store.New(ctx, cfg) in production

	cfg := nodeid.DefaultLocalConfig()
	cfg.TaskID, cfg.ClusterSize, cfg.Order = "task-a", 16, nodeid.OrderLowestFirst
	p, err := nodeid.New(store, cfg)
	if err != nil {
		panic(err)
	}
	claim, err := p.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("node", claim.NodeID(), "version", claim.Version(), "valid", claim.Valid())

	// On shutdown: release, so that another task can take the ID at once.
	closeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := claim.Close(closeCtx); err != nil {
		panic(err)
	}
	fmt.Println("valid after close", claim.Valid(), "err", claim.Err())
	// Output:
	// node 0 version 1 valid true
	// valid after close false err nodeid: claim closed
}

// A claim's owner follows it by Changed and Status (what package node's id
// file does), and binds work to its Context, which ends with the claim.
func ExampleClaim_Changed() {
	ctx := context.Background()
	cfg := nodeid.DefaultLocalConfig()
	cfg.TaskID, cfg.ClusterSize = "task-a", 4
	p, err := nodeid.New(storetest.NewMemStore(), cfg)
	if err != nil {
		panic(err)
	}
	var lastIssued atomic.Int64 // the generator's, built from the claim below
	claim, err := p.Acquire(ctx, nodeid.WithIssuedFunc(lastIssued.Load))
	if err != nil {
		panic(err)
	}
	followed := make(chan nodeid.Status)
	go func() {
		for {
			changed := claim.Changed() // before Status: no change after it is missed
			if st := claim.Status(); st.Err != nil {
				followed <- st // the last state
				return
			}
			<-changed
		}
	}()
	work := claim.Context() // ends with the claim
	if err := claim.Close(ctx); err != nil {
		panic(err)
	}
	<-work.Done()
	fmt.Println("follower saw:", (<-followed).Err)
	fmt.Println("context:", context.Cause(work))
	// Output:
	// follower saw: nodeid: claim closed
	// context: nodeid: claim closed
}
