//go:build race

package analytics

// raceEnabled is true when the tests run under the race detector, which
// makes the fleet tests run a smaller fleet.
const raceEnabled = true
