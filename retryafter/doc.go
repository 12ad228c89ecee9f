// Package retryafter parses the HTTP Retry-After response header strictly,
// as RFC 9110 §10.2.3 defines it, so the analytics SDK knows how long a
// server asked it to wait before sending again.
//
// A Retry-After value is either delta-seconds (a positive count of seconds)
// or an HTTP-date in one of the three forms of RFC 9110 §5.6.7. Anything
// else, including a date that is not in the future, is invalid. An invalid
// value is not an error the caller reports: it treats it exactly like an
// absent header ("no Retry-After") and falls back to its own backoff.
//
// Parse never panics, and delta-seconds too large for a time.Duration
// saturate to MaxDelay rather than overflow; the caller caps the delay.
//
// The package has no mutable state: every function is safe for concurrent
// use. Its exported names (FromHeader, Parse, ParseHTTPDate, ErrInvalid and
// MaxDelay) are its supported API; package retry reads the header with
// FromHeader.
package retryafter
