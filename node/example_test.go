package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// localStore returns an S3 store on an in-process gofakes3; a service opens
// s3store.New(ctx, cfg) on its bucket instead.
func localStore() (*s3store.Store, func()) {
	srv, err := s3fake.Start(s3fake.Config{})
	if err != nil {
		panic(err)
	}
	store, err := s3store.New(context.Background(), srv.StoreConfig("nodeid/"))
	if err != nil {
		panic(err)
	}
	return store, func() { _ = srv.Close() }
}

// Embedding the node in an HTTP service: health answers 503 until Start
// holds a node ID; then /ids serves Snowflake IDs until Close releases it.
func Example() {
	store, stop := localStore()
	defer stop()

	cfg := node.DefaultLocalConfig() // node.DefaultConfig() in production
	cfg.Provider.TaskID = "task-a"   // node.TaskID(ctx, logger): the ECS task ARN
	cfg.Provider.Order = nodeid.OrderLowestFirst
	n, err := node.New(store, cfg)
	if err != nil {
		panic(err)
	}
	web := httptest.NewServer(n.Handler()) // http.ListenAndServe(":8080", n.Handler())
	defer web.Close()

	if err := n.Start(context.Background()); err != nil { // blocks until the ID is held
		panic(err)
	}
	resp, err := http.Get(web.URL + "/ids?n=3")
	if err != nil {
		panic(err)
	}
	var ids node.IDsResponse
	_ = json.NewDecoder(resp.Body).Decode(&ids)
	resp.Body.Close()
	fmt.Println("node", ids.NodeID, "version", ids.Version, "issued", len(ids.IDs), "IDs")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println("close:", n.Close(ctx)) // fence, release: the ID is free at once
	// Output:
	// node 0 version 1 issued 3 IDs
	// close: <nil>
}

// Run owns the whole life of the node, as a service's main would call it with
// a context that a SIGTERM cancels: Start (the store's check, store.Check,
// then the probe and the acquisition), serve until the context ends or the
// lease is lost, then Close. Its error maps to nodeid-broker's exit codes: 0
// released (or stopped before an ID was held), 1 a failed start, 3 a lost
// lease (an error wrapping nodeid.ErrLeaseLost: the orchestrator replaces
// the task).
func ExampleNode_Run() {
	store, stop := localStore()
	defer stop()
	cfg := node.DefaultLocalConfig()
	cfg.Provider.TaskID = "task-a"
	n, err := node.New(store, cfg)
	if err != nil {
		panic(err)
	}
	ctx, sigterm := context.WithCancel(context.Background()) // signal.NotifyContext(ctx, syscall.SIGTERM)
	go func() {
		<-n.Serving() // a real service serves until SIGTERM; this one stops at once
		id, err := n.Next()
		fmt.Println("issued an ID:", id > 0, err)
		sigterm()
	}()
	err = n.Run(ctx)
	fmt.Println("run:", err, "node err:", n.Err(), "exit code:", exitCode(err))
	// Output:
	// issued an ID: true <nil>
	// run: <nil> node err: node: closed exit code: 0
}

// exitCode maps the error of Run to nodeid-broker's exit codes
// (docs/nodeid-broker.md, "Exit codes").
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0 // released, or stopped before an ID was held
	case errors.Is(err, nodeid.ErrLeaseLost):
		return 3 // fenced: let the orchestrator replace the task
	}
	return 1 // start-up failed: the store's check or probe, no ID free
}

// Start checks the store before anything else (store.Check, a
// lease.Checker: one request, bounded by the store's RequestTimeout, 5 s by
// default): a store that refuses it or never answers it ends the start at
// once, with an error that names the endpoint and says what to fix.
func Example_storeCheck() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	endpoint := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens there now: connections are refused

	sc := s3store.DefaultConfig()
	sc.Bucket, sc.Endpoint, sc.UsePathStyle = "my-bucket", endpoint, true
	sc.AccessKeyID, sc.SecretAccessKey = "key", "secret" // the default credential chain in production
	store, err := s3store.New(context.Background(), sc)
	if err != nil {
		panic(err)
	}
	cfg := node.DefaultConfig()
	cfg.Provider.TaskID = "task-a"
	n, err := node.New(store, cfg)
	if err != nil {
		panic(err)
	}
	err = n.Run(context.Background())
	fmt.Println("store check failed:", strings.HasPrefix(err.Error(), "store check: "))
	fmt.Println("names the endpoint:", strings.Contains(err.Error(), endpoint+" refuses connections"))
	fmt.Println("retrying cannot help:", errors.Is(err, lease.ErrMisconfigured))
	fmt.Println("exit code:", exitCode(err))
	// Output:
	// store check failed: true
	// names the endpoint: true
	// retrying cannot help: true
	// exit code: 1
}

// The id file serves an application in another process (a sidecar setup):
// it reads the node ID from the file, and stops using it when the file is
// gone or its clock reaches validUntilMs.
func Example_idFile() {
	store, stop := localStore()
	defer stop()
	dir, err := os.MkdirTemp("", "nodeid-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	cfg := node.DefaultLocalConfig()
	cfg.Provider.TaskID = "task-a"
	cfg.Provider.Order = nodeid.OrderLowestFirst
	cfg.IDFile = filepath.Join(dir, "node-id.json") // a volume shared with the application
	cfg.IDFileGrace = 100 * time.Millisecond        // keep above the application's re-read period
	n, err := node.New(store, cfg)
	if err != nil {
		panic(err)
	}
	if err := n.Start(context.Background()); err != nil { // returns once the file is written
		panic(err)
	}
	body, err := os.ReadFile(cfg.IDFile)
	if err != nil {
		panic(err)
	}
	var f node.IDFileContent
	_ = json.Unmarshal(body, &f)
	fmt.Println("application uses node", f.NodeID, "version", f.Version, "until", f.ValidUntilMs > time.Now().UnixMilli())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.Close(ctx) // removes the file, waits IDFileGrace, releases
	_, err = os.Stat(cfg.IDFile)
	fmt.Println("file gone:", os.IsNotExist(err))
	// Output:
	// application uses node 0 version 1 until true
	// file gone: true
}
