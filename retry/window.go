package retry

import "time"

// The window of the send rate's throttle: the attempts of the last
// windowLength, counted in windowBuckets buckets of time, so that an
// attempt is forgotten between windowLength − windowLength/windowBuckets
// and windowLength after it ended. Two minutes is the SRE book's window:
// long enough that a few answers do not swing the share of failures, short
// enough that an API's state of a few minutes ago does not decide now
// (SPEC §5).
const (
	windowLength  = 2 * time.Minute
	windowBuckets = 12
	bucketWidth   = windowLength / windowBuckets
)

// throttleK is K of the throttle: the send rate holds attempts back only
// once the attempts exceed K times those the API accepted, i.e. once more
// than 1 in K fails. With K = 2 an API that accepts half is not throttled.
const throttleK = 2

// throttleProbability returns the SRE book's client-side throttling probability for
// requests attempts of which accepts the API accepted:
// max(0, (requests − K·accepts) / (requests + 1)), with K = 2 (Site
// Reliability Engineering, "Handling Overload"). It is 0 while at least
// half the attempts are accepted, and nears 1 as none are (SPEC §5).
func throttleProbability(requests, accepts int) float64 {
	return max(0, float64(requests-throttleK*accepts)/float64(requests+1))
}

// window counts the attempts that ended in the last windowLength, and how
// many of them the API accepted. Time is a parameter; the zero window is
// empty. It is not safe for concurrent use: the SendRate's lock guards it.
type window struct {
	origin  time.Time // the time of bucket 0
	buckets [windowBuckets]bucket
}

// bucket counts the attempts that ended in one bucketWidth of time.
type bucket struct {
	n                 int64 // which bucketWidth since origin; its counts are stale unless current
	requests, accepts int
}

// add counts an attempt that ended at now, accepted or not.
func (w *window) add(now time.Time, accepted bool) {
	if w.origin.IsZero() {
		w.origin = now
	}
	n := w.index(now)
	b := &w.buckets[n%windowBuckets]
	if b.n != n {
		*b = bucket{n: n}
	}
	b.requests++
	if accepted {
		b.accepts++
	}
}

// counts returns the attempts that ended within windowLength of now, and
// how many of them were accepted.
func (w *window) counts(now time.Time) (requests, accepts int) {
	if w.origin.IsZero() {
		return 0, 0
	}
	n := w.index(now)
	for _, b := range w.buckets {
		if b.n > n-windowBuckets && b.n <= n {
			requests += b.requests
			accepts += b.accepts
		}
	}
	return requests, accepts
}

// throttle is throttleProbability over the window at now.
func (w *window) throttle(now time.Time) float64 {
	return throttleProbability(w.counts(now))
}

// index is the bucket of now, counted from origin; a time before origin
// counts in bucket 0.
func (w *window) index(now time.Time) int64 {
	return int64(max(now.Sub(w.origin), 0) / bucketWidth)
}
