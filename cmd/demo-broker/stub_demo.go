package main

import (
	"context"
	"fmt"
	"io"
)

// runDemo is a placeholder until the demo lands.
func runDemo(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "demo-broker: the demo is not built yet")
	return 1
}
