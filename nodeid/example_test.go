package nodeid_test

import (
	"context"
	"fmt"
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
