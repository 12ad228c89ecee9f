//go:build race

package queue

// raceEnabled is true when the tests run under the race detector, whose
// sync.Pool drops a random quarter of what is put back: allocation counts
// hold only without it.
const raceEnabled = true
