package main

import (
	"context"
	"fmt"
	"io"
)

// runServe is a placeholder until the broker lands.
func runServe(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "demo-broker serve: not built yet")
	return 1
}

// runHealthcheck is a placeholder until the broker lands.
func runHealthcheck(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "demo-broker healthcheck: not built yet")
	return 1
}
