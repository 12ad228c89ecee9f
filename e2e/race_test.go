//go:build race

package e2e

// raceEnabled builds the CLI with the race detector when the suite itself
// runs under it (make test), so the SDK's goroutines are checked in real
// runs too.
const raceEnabled = true
