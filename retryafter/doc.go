// Package retryafter parses the HTTP Retry-After response header strictly,
// as RFC 9110 §10.2.3 defines it, so that a client knows how long a server
// asked it to wait before sending again. The rules are those of the SDK's
// docs/SPEC.md §6.
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
// FromHeader reads the header of a response, with the server's Date as the
// reference time; Parse reads one field value; ParseHTTPDate reads an
// HTTP-date alone, in any of its three forms, for other fields that carry
// one; ServerDate reads the Date field as FromHeader does, for a caller
// that needs the server's clock for anything else. The package has no mutable state: every function is safe for
// concurrent use.
package retryafter
