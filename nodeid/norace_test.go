//go:build !race

package nodeid_test

// raceEnabled: see race_test.go.
const raceEnabled = false
