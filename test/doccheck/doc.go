// Package doccheck keeps the documentation true to the code. It has tests
// only: every flag and NODEID_ variable the docs name is one a command's
// --help lists (or one the docs name as another tool's); the try-it snippet
// of docs/nodeid-broker.md runs as written (ports aside) and waits for
// health; its metrics table has a row for every metric a node registers;
// and every runnable block of the README is run, compiled, or names
// the test that covers it.
package doccheck
