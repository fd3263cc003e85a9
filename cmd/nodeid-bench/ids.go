package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// idsSkipReason says why the ids scenario does not run yet.
const idsSkipReason = "ids needs demo-broker serve (/ids with batches), which is being built on another branch; " +
	"this scenario is a stub until it lands (issue 7: at least 2,000,000 IDs/s through HTTP, idle broker RSS at most 40 MB)"

// runIDs is the placeholder of the ids scenario: it says it is skipped, in the
// table or as JSON, and exits 0.
func runIDs(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	fs := flag.NewFlagSet("nodeid-bench ids", flag.ContinueOnError)
	addCommon(fs, &c)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	rep := map[string]any{"scenario": "ids", "skipped": true, "reason": idsSkipReason}
	if err := emit(stdout, c, rep, func() { fmt.Fprintf(stdout, "ids: SKIPPED: %s\n", idsSkipReason) }); err != nil {
		fmt.Fprintf(stderr, "nodeid-bench: %v\n", err)
		return 1
	}
	return 0
}
