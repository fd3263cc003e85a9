//go:build race

package nodeid_test

// raceEnabled: this test binary runs under the race detector, which slows
// the simulation about tenfold; it runs every raceDivisor-th seed (runSims).
const raceEnabled = true
