//go:build race

package main

// raceEnabled: the tests run with -race, so TestMain builds the broker with
// -race too, and a data race in a broker process fails the test.
const raceEnabled = true
