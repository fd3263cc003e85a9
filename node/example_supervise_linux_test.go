package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
)

// Supervising a program that uses the node ID: RunChild acquires the ID,
// starts the command once the wall clock is past the ID's floor, stops it
// before the lease could be lost, and releases the ID once it has exited.
func ExampleNode_RunChild() {
	store, stop := localStore()
	defer stop()

	cfg := node.DefaultLocalConfig()
	cfg.Provider.TaskID = "task-a"
	cfg.Provider.Order = nodeid.OrderLowestFirst
	n, err := node.New(store, cfg)
	if err != nil {
		panic(err)
	}
	cmd := exec.Command("sh", "-c", `echo "node $NODEID_NODE_ID version $NODEID_VERSION"; exit 7`)
	cmd.Stdout = os.Stdout
	cc := node.DefaultChildConfig() // SIGTERM, then SIGKILL after 10 s; before the fence on a loss
	err = n.RunChild(context.Background(), cmd, cc)
	var ce *node.ChildExitError
	switch {
	case errors.Is(err, nodeid.ErrLeaseLost):
		fmt.Println("lost: the child was killed before the fence")
	case errors.As(err, &ce):
		fmt.Println("the child exited with status", ce.ExitCode(), "and the ID was released")
	}
	// Output:
	// node 0 version 1
	// the child exited with status 7 and the ID was released
}
