// Package conformance is the conformance suite of the ID clients not
// written in Go: clients/python, clients/node and clients/java
// (clients/README.md says what each keeps, clients/CONFORMANCE.md how the
// suite drives them). `go test ./clients/conformance` runs each client's
// conformance driver as the child of real nodeid-broker processes
// (`nodeid-broker run ... -- DRIVER`), beside sidecar brokers
// (`serve --id-file`), and over id files the suite scripts itself, then
// checks everything the run issued.
//
// # The checks
//
// [Check] is a pure function of what a run collected ([Run]: each driver's
// output lines, and the answers of the brokers' /ids to the suite's own
// calls). It finds:
//
//   - duplicate: an ID issued twice, across every driver and broker of the
//     run;
//   - not-increasing: an ID not above the one before it in its process;
//   - past-valid-until: an id-file ID stamped at or past the validUntilMs
//     its ok line reports (rule 1);
//   - node-bits: an ID whose node bits are not the node its line reports;
//   - below-floor: an ID stamped at or below its claim's floorMs (the claims
//     come from the brokers' "serving IDs" log lines, or the scripted files);
//   - unknown-claim: an ok line naming a node and version nobody handed out;
//   - claim-changed, ok-after-version-changed: an id-file process that
//     issued under a second claim, or after err VersionChanged (rule 3);
//   - batch-size: an ok line without --batch IDs (rule 7);
//   - protocol: a line that is not the driver protocol's, no done line from
//     a driver that was stopped (not killed), done counts that are not the
//     lines'.
//
// The scenarios also expect the err KINDs the contract names where it
// names them (NotHeld, VersionChanged and so on, below).
//
// # The scenarios
//
// Each runs for every client at once (subtests named after the language),
// with a bucket of its own on an in-process S3 (gofakes3) shared by its
// brokers, and leases of 3 s.
//
//   - TestScriptedIDFile: one driver through every state of its id file:
//     removed, truncated, empty, not JSON, an array, a field missing,
//     negative, not an integer, a string, expired, each answered with err
//     NotHeld and followed by ok lines once the file is valid again;
//     validUntilMs passing while it issues; then another version: err
//     VersionChanged for every later call, even once the first version is
//     back.
//   - TestScriptedFloorAndClock: a floor 1.5 s ahead of the clock (the
//     client waits, no error), 30 s ahead (err ClockBehind after about
//     5 s), and batches of 5000 (more than a millisecond's sequence
//     numbers) ending by --duration-ms.
//   - TestScriptedSwap: one driver's file swapped for the file of another
//     node, which a second driver is using: err VersionChanged. Catches
//     ignore-version (duplicates with the second driver).
//   - TestHandoverFloor: a node ID handed over (SIGTERM, release) between two
//     `run` brokers, each with the driver as its child; the successor's
//     clock is 3 s behind (--debug-clock-offset -3s) so it waits for the
//     floor, and its child's clock steps back below the floor after the
//     file is written. Catches ignore-floor (duplicates with the
//     predecessor's child).
//   - TestKill9: a sidecar broker killed with SIGKILL: the driver stops
//     at validUntilMs by itself (err NotHeld, the file left in place); the
//     restarted sidecar takes the node ID over with a new version and the
//     driver stops for good (err VersionChanged); the successor's /ids are
//     collected. Catches ignore-valid-until (IDs past validUntilMs).
//   - TestSigtermRelease: a sidecar broker stopped with SIGTERM removes the
//     file, waits its grace and releases; a successor serves /ids at once,
//     collected until the driver's last validUntilMs (4.5 s or more past the
//     removal: a 6 s horizon) has passed: no duplicates, as the release
//     covers the file's highest validUntilMs. Catches ignore-missing (IDs
//     stamped more than RemovalSlackMs after the removal).
//   - TestClockStep: a `run` child whose host clock steps back 1.5 s, twice
//     (--clock-steps, mirroring the broker's --debug-clock-steps): no ID
//     below its last, no ClockBehind. Catches allow-backwards (IDs not
//     increasing, duplicates).
//   - TestHTTP: HTTP mode (--url, through a TCP proxy that counts
//     connections) on a broker waiting for a node ID another holds: err
//     Unavailable (503) until the holder stops and the waiting broker takes
//     over, then ok lines; one connection kept alive; the IDs both brokers
//     serve the suite meanwhile are collected.
//     It runs without and with a prefetch (--prefetch 1000).
//   - TestHTTPVersionChange: HTTP mode with a prefetch of 10000 through a
//     proxy to a broker; the driver stopped (SIGSTOP) with prefetched IDs
//     in hand, the broker stopped, a successor serving the node ID with a
//     new version, the proxy turned to it, the driver resumed: with no max
//     age (--prefetch-max-age-ms 0) the IDs in hand reported with the old
//     version, the successor's with the new; with the default (1 s, the
//     stop lasting longer) the IDs in hand skipped. Catches
//     prefetch-latest-version (IDs below the new version's floor).
//   - TestRunChildHTTP: the driver as `nodeid-broker run`'s child in HTTP
//     mode on NODEID_URL (--url-env), with a prefetch.
//   - TestDriverProtocol: bad arguments exit 2; without --duration-ms the
//     driver runs until its standard input closes, then writes done and
//     exits 0. (A driver under `nodeid-broker run` has /dev/null as its
//     standard input: with --duration-ms, which the suite always gives
//     there, it must not stop at its end.)
//   - TestMutations: each of CONFORMANCE.md's mutations (--mutation), for
//     every client, runs the scenario named above as catching it and fails
//     unless the checks find the violation the table says.
//
// # Clients, interpreters, CI
//
// The clients are in clients/<lang> (this package's parent), or under
// NODEID_CLIENTS_DIR (an absolute path) when set, for instance a folder of
// symbolic links to other worktrees. Python runs as
// `PYTHONPATH=DIR python3 -B DIR/conformance/driver.py`, Node.js as
// `node DIR/conformance/driver.mjs`, Java from classes compiled once per
// test binary (`javac -d` of src/main/java and conformance). A missing
// client or interpreter skips that client's subtests, and fails them with
// CI=true (test/all.sh installs python3, nodejs and default-jdk-headless).
// testdata/fake/python is a stand-in driver with a minimal generator of its
// own and every mutation, for working on the suite without the clients:
// NODEID_CLIENTS_DIR=$PWD/clients/conformance/testdata/fake.
//
// The brokers are built once per test binary, without -race: they are not
// what this suite tests. The suite waits on observed events only (driver
// lines, broker log lines, the state of files), never on a sleep.
package conformance
