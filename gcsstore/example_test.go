package gcsstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/nodeid/nodeid/gcsstore"
	"github.com/nodeid/nodeid/nodeid"
)

// A node ID leased from a Cloud Storage bucket, on Cloud Run or GKE: the
// workload's service account (Application Default Credentials) needs
// roles/storage.objectUser on the bucket.
func Example() {
	cfg := gcsstore.DefaultConfig()
	cfg.Bucket = "my-nodeid-bucket" // must exist; leases under "nodeid/"
	st, err := gcsstore.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := st.Check(ctx); err != nil {
		log.Fatal(err) // says what to fix: the bucket, the credentials, the endpoint
	}
	// The default RenewInterval (5 s) is above Cloud Storage's one write
	// per second per object; nodeid.New refuses one below it.
	p, err := nodeid.New(st, nodeid.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	claim, err := p.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer claim.Close(context.Background())
	fmt.Println("node ID", claim.NodeID())
}

// The store on fake-gcs-server, the Cloud Storage emulator, without
// credentials.
func ExampleConfig_emulator() {
	cfg := gcsstore.DefaultConfig()
	cfg.Endpoint = "http://127.0.0.1:4443/storage/v1/"
	cfg.NoAuth = true
	cfg.Bucket = "nodeid-dev"
	if _, err := gcsstore.New(cfg); err != nil {
		log.Fatal(err)
	}
}
