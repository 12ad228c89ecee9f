package retryafter

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testRef is the default reference time of the table: Thursday 1 Jan 2026.
var testRef = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type parseCase struct {
	name  string
	value string
	ref   time.Time     // zero: testRef
	want  time.Duration // 0: the value is invalid
	err   string        // for an invalid value, text the error must contain
}

func (c parseCase) refOrDefault() time.Time {
	if c.ref.IsZero() {
		return testRef
	}
	return c.ref
}

// parseCases is a function, not a package variable, so no test can mutate
// it for another; FuzzParse seeds its corpus from it.
func parseCases() []parseCase {
	const (
		generic   = reasonNotRetryAfter
		notFuture = reasonNotFuture
		day       = "day out of range for the month"
		weekday   = "weekday does not match the date"
		imf       = "malformed IMF-fixdate"
		rfc850    = "malformed RFC 850 date"
		asctime   = "malformed asctime date"
	)
	day1 := 24 * time.Hour
	return []parseCase{
		// delta-seconds
		{name: "one second", value: "1", want: time.Second},
		{name: "two minutes", value: "120", want: 2 * time.Minute},
		{name: "leading zeros", value: "0005", want: 5 * time.Second},
		{name: "zero", value: "0", err: "greater than 0"},
		{name: "double zero", value: "00", err: "greater than 0"},
		{name: "negative", value: "-1", err: generic},
		{name: "fraction", value: "1.5", err: generic},
		{name: "plus sign", value: "+5", err: generic},
		{name: "leading space", value: " 5", err: generic},
		{name: "trailing space", value: "5 ", err: generic},
		{name: "inner space", value: "1 0", err: generic},
		{name: "tab", value: "5\t", err: generic},
		{name: "word", value: "tomorrow", err: generic},
		{name: "day name only", value: "Wed", err: generic},
		{name: "unix timestamp", value: "@99999999999", err: generic},
		{name: "empty", value: "", err: "empty value"},
		{name: "two values", value: "5, 6", err: generic},
		{name: "hex", value: "0x10", err: generic},
		{name: "non-ASCII digit", value: "\u0665", err: generic},
		{name: "NUL", value: "5\x00", err: generic},
		{name: "largest whole seconds", value: "9223372036", want: 9223372036 * time.Second},
		{name: "first overflowing seconds", value: "9223372037", want: MaxDelay},
		{name: "2^64 seconds", value: "18446744073709551616", want: MaxDelay},
		{name: "huge", value: "99999999999999999999999", want: MaxDelay},
		{name: "huge with leading zeros", value: "000000000000000000000000000001", want: time.Second},

		// The three HTTP-date forms, in the future.
		{name: "IMF-fixdate", value: "Fri, 02 Jan 2026 08:49:37 GMT", want: day1 + 8*time.Hour + 49*time.Minute + 37*time.Second},
		{name: "RFC 850", value: "Friday, 02-Jan-26 00:01:00 GMT", want: day1 + time.Minute},
		{name: "asctime one-digit day", value: "Fri Jan  2 00:00:10 2026", want: day1 + 10*time.Second},
		{name: "asctime two-digit day", value: "Fri Jan 16 00:00:00 2026", want: 15 * day1},
		{name: "one second after ref", value: "Thu, 01 Jan 2026 00:00:01 GMT", want: time.Second},
		{name: "ref in another zone", value: "Fri, 02 Jan 2026 00:00:00 GMT", ref: testRef.In(time.FixedZone("UTC+5", 5*3600)), want: day1},
		{name: "ref with sub-second", value: "Thu, 01 Jan 2026 00:00:01 GMT", ref: testRef.Add(250 * time.Millisecond), want: 750 * time.Millisecond},
		{name: "far future saturates", value: "Fri, 31 Dec 9999 23:59:59 GMT", want: MaxDelay},

		// asctime day padding
		{name: "asctime zero-padded day", value: "Fri Jan 02 00:00:10 2026", err: "malformed asctime day"},
		{name: "asctime single space before one-digit day", value: "Fri Jan 2 00:00:10 2026", err: asctime},
		{name: "asctime day space zero", value: "Thu Jan  0 00:00:10 2026", err: "malformed asctime day"},

		// weekday must match the date
		{name: "IMF wrong weekday", value: "Sat, 02 Jan 2026 00:00:00 GMT", err: weekday},
		{name: "RFC 850 wrong weekday", value: "Saturday, 02-Jan-26 00:00:00 GMT", err: weekday},
		{name: "asctime wrong weekday", value: "Sat Jan  2 00:00:00 2026", err: weekday},
		{name: "wrong weekday in the past", value: "Mon, 06 Nov 1994 08:49:37 GMT", err: weekday},

		// impossible dates and times are rejected, not rolled over
		{name: "32 Oct", value: "Sun, 32 Oct 2026 00:00:00 GMT", err: day},
		// Each weekday below is that of the day time.Date would roll the
		// date over to, so only the day-of-month check can reject it.
		{name: "31 Apr", value: "Fri, 31 Apr 2026 00:00:00 GMT", err: day},
		{name: "31 Jun", value: "Wed, 31 Jun 2026 00:00:00 GMT", err: day},
		{name: "31 Sep", value: "Thu, 31 Sep 2026 00:00:00 GMT", err: day},
		{name: "31 Nov", value: "Tue, 31 Nov 2026 00:00:00 GMT", err: day},
		{name: "31 Dec", value: "Thu, 31 Dec 2026 00:00:00 GMT", want: time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC).Sub(testRef)},
		{name: "day 00", value: "Wed, 00 Jan 2026 00:00:00 GMT", err: day},
		{name: "30 Feb", value: "Mon, 30 Feb 2026 00:00:00 GMT", err: day},
		{name: "29 Feb non-leap year", value: "Mon, 29 Feb 2027 00:00:00 GMT", err: day},
		{name: "29 Feb leap year", value: "Tue, 29 Feb 2028 00:00:00 GMT", want: time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC).Sub(testRef)},
		{name: "29 Feb 2000", value: "Tue, 29 Feb 2000 00:00:00 GMT", ref: time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), want: 60 * day1},
		{name: "29 Feb 2100", value: "Mon, 29 Feb 2100 00:00:00 GMT", err: day},
		{name: "29 Feb 1900", value: "Thu, 29 Feb 1900 00:00:00 GMT", ref: time.Date(1899, 1, 1, 0, 0, 0, 0, time.UTC), err: day},
		{name: "RFC 850 30 Feb", value: "Monday, 30-Feb-26 00:00:00 GMT", err: day},
		{name: "asctime 29 Feb non-leap year", value: "Mon Feb 29 00:00:00 2027", err: day},
		{name: "hour 24", value: "Fri, 02 Jan 2026 24:00:00 GMT", err: "hour out of range"},
		{name: "minute 60", value: "Fri, 02 Jan 2026 23:60:00 GMT", err: "minute out of range"},
		{name: "second 60", value: "Fri, 02 Jan 2026 23:59:60 GMT", err: "second out of range"},
		{name: "asctime hour 24", value: "Fri Jan  2 24:00:00 2026", err: "hour out of range"},
		{name: "RFC 850 minute 60", value: "Friday, 02-Jan-26 00:60:00 GMT", err: "minute out of range"},

		// the date must be strictly in the future
		{name: "past date", value: "Sun, 06 Nov 1994 08:49:37 GMT", err: notFuture},
		{name: "date equal to ref", value: "Thu, 01 Jan 2026 00:00:00 GMT", err: notFuture},
		{name: "RFC 850 past", value: "Sunday, 06-Nov-94 08:49:37 GMT", err: notFuture},
		{name: "asctime past", value: "Sun Nov  6 08:49:37 1994", err: notFuture},

		// case, missing and extra text
		{name: "lower-case gmt", value: "Fri, 02 Jan 2026 00:00:00 gmt", err: imf},
		{name: "lower-case day name", value: "fri, 02 Jan 2026 00:00:00 GMT", err: generic},
		{name: "lower-case sun", value: "sun, 06 Nov 2044 08:49:37 GMT", err: generic},
		{name: "upper-case full day name", value: "FRIDAY, 02-Jan-26 00:01:00 GMT", err: generic},
		{name: "lower-case month", value: "Fri, 02 jan 2026 00:00:00 GMT", err: "unknown month name"},
		{name: "unknown month", value: "Fri, 02 Jax 2026 00:00:00 GMT", err: "unknown month name"},
		{name: "missing GMT", value: "Fri, 02 Jan 2026 00:00:00", err: imf},
		{name: "RFC 850 missing GMT", value: "Friday, 02-Jan-26 00:01:00", err: rfc850},
		{name: "UTC instead of GMT", value: "Fri, 02 Jan 2026 00:00:00 UTC", err: imf},
		{name: "numeric zone", value: "Fri, 02 Jan 2026 00:00:00 +0000", err: imf},
		{name: "trailing text", value: "Fri, 02 Jan 2026 00:00:00 GMT x", err: imf},
		{name: "trailing space", value: "Fri, 02 Jan 2026 00:00:00 GMT ", err: imf},
		{name: "RFC 850 trailing text", value: "Friday, 02-Jan-26 00:01:00 GMTT", err: rfc850},
		{name: "asctime trailing text", value: "Fri Jan  2 00:00:10 2026 GMT", err: asctime},
		{name: "leading space before date", value: " Fri, 02 Jan 2026 00:00:00 GMT", err: generic},
		{name: "IMF one-digit day", value: "Fri, 2 Jan 2026 00:00:00 GMT", err: imf},
		{name: "IMF two-digit year", value: "Fri, 02 Jan 26 00:00:00 GMT", err: imf},
		{name: "IMF one-digit hour", value: "Fri, 02 Jan 2026 8:49:37 GMT", err: imf},
		{name: "RFC 850 four-digit year", value: "Friday, 02-Jan-2026 00:01:00 GMT", err: rfc850},
		{name: "RFC 850 with short day name", value: "Fri, 02-Jan-26 00:01:00 GMT", err: imf},
		{name: "IMF with full day name", value: "Friday, 02 Jan 2026 00:00:00 GMT", err: rfc850},
		{name: "two dates", value: "Fri, 02 Jan 2026 00:00:00 GMT, Sat, 03 Jan 2026 00:00:00 GMT", err: imf},
	}
}

func TestParse(t *testing.T) {
	for _, c := range parseCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(c.value, c.refOrDefault())
			if c.want != 0 {
				require.NoError(t, err, "Parse(%q)", c.value)
				assert.Equal(t, c.want, got, "Parse(%q)", c.value)
				return
			}
			require.Error(t, err, "Parse(%q) = %v; want an error saying %q", c.value, got, c.err)
			assert.Zero(t, got, "Parse(%q): the delay returned with its error", c.value)
			assert.ErrorIs(t, err, ErrInvalid, "Parse(%q)", c.value)
			assert.ErrorContains(t, err, c.err, "Parse(%q)", c.value)
		})
	}
}

func TestParseErrorMessages(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		value, want string
	}{
		{"1.5", `retryafter: invalid Retry-After "1.5": not delta-seconds or an HTTP-date`},
		{"Mon, 06 Nov 1994 08:49:37 GMT", `retryafter: invalid Retry-After "Mon, 06 Nov 1994 08:49:37 GMT": weekday does not match the date`},
		{"Sun, 06 Nov 1994 08:49:37 GMT", `retryafter: invalid Retry-After "Sun, 06 Nov 1994 08:49:37 GMT": date is not in the future`},
		{"5\n", `retryafter: invalid Retry-After "5\n": not delta-seconds or an HTTP-date`},
		{long, `retryafter: invalid Retry-After "` + long[:64] + `"... (100 bytes): not delta-seconds or an HTTP-date`},
		// The cut backs up to the start of the 2-byte 'é' that straddles byte 64.
		{strings.Repeat("x", 63) + "é" + long, `retryafter: invalid Retry-After "` + long[:63] + `"... (165 bytes): not delta-seconds or an HTTP-date`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.value, testRef)
		assert.EqualError(t, err, tt.want, "Parse(%q)", tt.value)
	}
}

func BenchmarkParse(b *testing.B) {
	for _, bm := range []struct{ name, value string }{
		{"delta-seconds", "120"},
		{"IMF-fixdate", "Fri, 02 Jan 2026 08:49:37 GMT"},
		{"RFC 850", "Friday, 02-Jan-26 08:49:37 GMT"},
		{"asctime", "Fri Jan  2 08:49:37 2026"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(bm.value, testRef); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
