package retryafter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every error Parse and ParseHTTPDate return, so a
// caller can test for it with errors.Is.
var ErrInvalid = errors.New("retryafter: invalid Retry-After")

// MaxDelay is what a delta-seconds value too large for time.Duration
// saturates to: math.MaxInt64 nanoseconds (about 292 years).
const MaxDelay = time.Duration(math.MaxInt64)

// maxSeconds is the largest whole number of seconds a time.Duration holds:
// 9223372036 s = 9223372036000000000 ns <= math.MaxInt64.
const maxSeconds = uint64(MaxDelay / time.Second)

// maxQuoted is how many bytes of a value an error message quotes; longer
// values are cut so a hostile header cannot blow up log lines.
const maxQuoted = 64

// Reasons shared by Parse and ParseHTTPDate.
const (
	reasonNotRetryAfter = "not delta-seconds or an HTTP-date"
	reasonNotFuture     = "date is not in the future"
)

// Parse parses one Retry-After field value and returns the delay
// it asks for, in nanoseconds as a time.Duration, always > 0.
//
// value must already be trimmed of surrounding whitespace (the HTTP parser
// does that); Parse itself is strict and does not trim. value is either
// delta-seconds (one or more ASCII digits, greater than 0; values too large
// for a time.Duration saturate to MaxDelay) or an HTTP-date (see
// ParseHTTPDate) that must be strictly after ref. ref is the reference time
// for an HTTP-date: the server's Date if known, else the local clock.
//
// On failure Parse returns 0 and an error that wraps ErrInvalid and says in
// words what is wrong, e.g.
//
//	retryafter: invalid Retry-After "1.5": not delta-seconds or an HTTP-date
//
// Parse never panics.
func Parse(value string, ref time.Time) (time.Duration, error) {
	if value == "" {
		return 0, invalid(value, "empty value")
	}
	if isDigits(value) {
		return parseDeltaSeconds(value)
	}
	t, reason := parseHTTPDate(value, ref)
	if reason != "" {
		return 0, invalid(value, reason)
	}
	// Time.Sub saturates instead of overflowing, so a far-future date is safe.
	d := t.Sub(ref)
	if d <= 0 {
		return 0, invalid(value, reasonNotFuture)
	}
	return d, nil
}

// parseDeltaSeconds converts a non-empty all-digit string to a Duration,
// saturating at MaxDelay. Leading zeros are allowed: the RFC's grammar is
// simply 1*DIGIT. Of digits alone, strconv.ParseUint fails only past
// math.MaxUint64, returning that, which saturates as any value over
// maxSeconds does.
func parseDeltaSeconds(value string) (time.Duration, error) {
	n, _ := strconv.ParseUint(value, 10, 64)
	if n > maxSeconds {
		return MaxDelay, nil
	}
	if n == 0 {
		return 0, invalid(value, "delta-seconds must be greater than 0")
	}
	return time.Duration(n) * time.Second, nil
}

// isDigits reports whether s is non-empty and all ASCII digits.
func isDigits(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
}

// invalid builds the error for a rejected value: it wraps ErrInvalid, quotes
// the value with %q, and truncates it to maxQuoted bytes.
func invalid(value, reason string) error {
	return fmt.Errorf("%w %s: %s", ErrInvalid, quote(value), reason)
}

// quote returns value quoted as by %q, cut to at most maxQuoted bytes with
// the full length noted after it. The cut backs up to a rune boundary so a
// valid multi-byte character is not split into escapes; it backs up at most
// utf8.UTFMax-1 bytes, so invalid UTF-8 cannot shrink the prefix to nothing.
func quote(value string) string {
	if len(value) <= maxQuoted {
		return strconv.Quote(value)
	}
	cut := maxQuoted
	for back := 0; back < utf8.UTFMax-1 && !utf8.RuneStart(value[cut]); back++ {
		cut--
	}
	return strconv.Quote(value[:cut]) + "... (" + strconv.Itoa(len(value)) + " bytes)"
}
