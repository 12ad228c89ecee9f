package retryafter

import (
	"net/http"
	"strings"
	"time"
)

// FromHeader reads the Retry-After field of a response's header and returns
// the delay it asks for, in nanoseconds as a time.Duration (> 0).
//
// It returns ok=false when the field is absent, appears on more than one
// field line (the value is then ambiguous), or is invalid as Parse defines
// it. The reference time for an HTTP-date is the header's Date field when it
// is on exactly one field line and is a valid HTTP-date, since the server
// computed Retry-After against its own clock; otherwise it is now.
//
// Leading and trailing spaces and tabs are stripped from each field value
// first, because RFC 9110 §5.5 excludes them from the value and a header
// built by hand may still carry them; everything else is as strict as Parse.
// FromHeader only reads h, so callers may share a header.
func FromHeader(h http.Header, now time.Time) (d time.Duration, ok bool) {
	value, ok := singleValue(h, "Retry-After")
	if !ok {
		return 0, false
	}
	ref, ok := ServerDate(h, now)
	if !ok {
		ref = now
	}
	d, err := Parse(value, ref)
	return d, err == nil
}

// ServerDate returns the time of the header's Date field, the server's
// clock as it answered, when the field is on exactly one field line and
// is a valid HTTP-date once stripped of surrounding spaces and tabs; ok is
// false otherwise. It is the reference FromHeader reads an HTTP-date
// Retry-After against, and now resolves an RFC 850 date's two-digit year
// (see ParseHTTPDate).
func ServerDate(h http.Header, now time.Time) (t time.Time, ok bool) {
	date, ok := singleValue(h, "Date")
	if !ok {
		return time.Time{}, false
	}
	t, reason := parseHTTPDate(date, now)
	return t, reason == ""
}

// singleValue returns the value of the field key, stripped of surrounding
// whitespace, when it appears on exactly one field line.
func singleValue(h http.Header, key string) (string, bool) {
	values := h.Values(key)
	if len(values) != 1 {
		return "", false
	}
	return strings.Trim(values[0], " \t"), true
}
