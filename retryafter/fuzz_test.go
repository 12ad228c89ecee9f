package retryafter

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// rfc850Layout is the RFC 850 form as a time layout, for formatting only.
const rfc850Layout = "Monday, 02-Jan-06 15:04:05 GMT"

// allDigits is the test's own check, so the oracle does not reuse isDigits.
func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func FuzzParse(f *testing.F) {
	for _, c := range parseCases() {
		f.Add(c.value)
	}
	f.Add(strings.Repeat("9", 200))
	f.Add("Sat, 01 Jan 0000 00:00:00 GMT")
	f.Add("Wednesday, 15-Jun-77 00:00:00 GMT")
	f.Fuzz(func(t *testing.T, value string) {
		d, err := Parse(value, testRef)
		if err == nil {
			assert.Positive(t, d, "Parse(%q): a valid delay", value)
		} else {
			assert.ErrorIs(t, err, ErrInvalid, "Parse(%q)", value)
			assert.Zero(t, d, "Parse(%q): the delay that comes with an error", value)
		}

		if allDigits(value) {
			n, perr := strconv.ParseUint(value, 10, 64)
			var want time.Duration
			switch {
			case perr != nil || n > math.MaxInt64/uint64(time.Second):
				want = MaxDelay // out of range for uint64 or for Duration
			default:
				want = time.Duration(n) * time.Second
			}
			if want == 0 {
				assert.Error(t, err, "Parse(%q) = %v, want an error for 0", value, d)
			} else {
				assert.NoError(t, err, "Parse(%q)", value)
				assert.Equal(t, want, d, "Parse(%q)", value)
			}
			return
		}

		tm, derr := ParseHTTPDate(value, testRef)
		if derr != nil {
			assert.ErrorIs(t, derr, ErrInvalid, "ParseHTTPDate(%q)", value)
			assert.True(t, tm.IsZero(), "ParseHTTPDate(%q) = %v with its error, want the zero time", value, tm)
			assert.Error(t, err, "Parse(%q) = %v, but it is neither delta-seconds nor an HTTP-date (%v)", value, d, derr)
		} else {
			assert.Same(t, time.UTC, tm.Location(), "ParseHTTPDate(%q) = %v, want UTC", value, tm)
			// Strictness: an accepted date is exactly how its time formats in
			// one of the three forms, so no lenient spelling gets through.
			forms := []string{tm.Format(http.TimeFormat), tm.Format(rfc850Layout), tm.Format(time.ANSIC)}
			assert.Contains(t, forms, value, "ParseHTTPDate(%q) = %v, which does not format back to the input", value, tm)
			if tm.After(testRef) {
				assert.NoError(t, err, "Parse(%q)", value)
				assert.Equal(t, tm.Sub(testRef), d, "Parse(%q)", value)
			} else {
				assert.Error(t, err, "Parse(%q) = %v for a date not after the reference", value, d)
			}
		}

		// Oracle: whatever time formats to in IMF-fixdate or asctime must
		// parse back to that time. Formatting checks the weekday and widths,
		// which time.Parse alone does not.
		for _, layout := range []string{http.TimeFormat, time.ANSIC} {
			want, perr := time.Parse(layout, value)
			if perr != nil || want.Format(layout) != value {
				continue
			}
			assert.NoError(t, derr, "ParseHTTPDate(%q)", value)
			assert.WithinDuration(t, want, tm, 0, "ParseHTTPDate(%q)", value)
		}
		// For RFC 850, time.Parse puts 69-99 in the 1900s and 00-68 in the
		// 2000s; compare only where that agrees with the window around
		// testRef (1976-01-01, 2076-01-01].
		if want, perr := time.Parse(rfc850Layout, value); perr == nil && want.Format(rfc850Layout) == value &&
			want.Year() >= 1977 && want.Year() <= 2068 {
			assert.NoError(t, derr, "ParseHTTPDate(%q)", value)
			assert.WithinDuration(t, want, tm, 0, "ParseHTTPDate(%q)", value)
		}
	})
}

// FuzzHTTPDateRoundTrip formats a time between 1900 and 2099 in all three
// forms and checks that ParseHTTPDate returns the same instant.
func FuzzHTTPDateRoundTrip(f *testing.F) {
	for _, s := range []int64{
		0, 784111777, // 1970; the RFC's example date
		-2208988800, 4102444799, // first and last second of the range
		951782400, 4107456000, // 29 Feb 2000; 1 Mar 2100 wraps into range
		math.MaxInt64, math.MinInt64,
	} {
		f.Add(s)
	}
	lo := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	f.Fuzz(func(t *testing.T, unixSeconds int64) {
		span := hi - lo
		tm := time.Unix(lo+((unixSeconds%span)+span)%span, 0).UTC()

		for _, layout := range []string{http.TimeFormat, time.ANSIC} {
			s := tm.Format(layout)
			got, err := ParseHTTPDate(s, testRef)
			assert.NoError(t, err, "ParseHTTPDate(%q)", s)
			assert.WithinDuration(t, tm, got, 0, "ParseHTTPDate(%q)", s)
			d, err := Parse(s, tm.Add(-time.Second))
			assert.NoError(t, err, "Parse(%q, one second before)", s)
			assert.Equal(t, time.Second, d, "Parse(%q, one second before)", s)
			d, err = Parse(s, tm)
			assert.Error(t, err, "Parse(%q, same instant) = %v", s, d)
		}

		// RFC 850: any ref that puts tm at most 50 years ahead and less than
		// 50 years behind resolves the two-digit year to tm's year.
		s := tm.Format(rfc850Layout)
		for _, ref := range []time.Time{tm, tm.AddDate(49, 0, 0), tm.AddDate(-49, 0, 0), tm.AddDate(-50, 0, 0)} {
			got, err := ParseHTTPDate(s, ref)
			assert.NoError(t, err, "ParseHTTPDate(%q, ref %v)", s, ref)
			assert.WithinDuration(t, tm, got, 0, "ParseHTTPDate(%q, ref %v)", s, ref)
		}
		// One second past 50 years ahead, the year must go back a century
		// (and then may fail the weekday or 29 Feb check). AddDate moves
		// 29 Feb to 1 Mar, which widens the window, so skip that day.
		if !(tm.Month() == time.February && tm.Day() == 29) {
			ref := tm.AddDate(-50, 0, 0).Add(-time.Second)
			if got, err := ParseHTTPDate(s, ref); err == nil {
				assert.Equal(t, tm.Year()-100, got.Year(), "ParseHTTPDate(%q, ref %v) = %v, want an error or the year a century back", s, ref, got)
			}
		}
	})
}
