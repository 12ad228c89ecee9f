package retryafter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHTTPDate(t *testing.T) {
	rfcExample := time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		want  time.Time // zero: invalid
	}{
		{"IMF-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", rfcExample},
		{"RFC 850", "Sunday, 06-Nov-94 08:49:37 GMT", rfcExample},
		{"asctime", "Sun Nov  6 08:49:37 1994", rfcExample},
		{"asctime zero-padded day", "Sun Nov 06 08:49:37 1994", time.Time{}},
		{"asctime single space", "Sun Nov 6 08:49:37 1994", time.Time{}},
		{"29 Feb 2000", "Tue, 29 Feb 2000 00:00:00 GMT", time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"asctime 29 Feb 2000", "Tue Feb 29 00:00:00 2000", time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"29 Feb 1900", "Thu, 29 Feb 1900 00:00:00 GMT", time.Time{}},
		{"29 Feb 2100", "Mon, 29 Feb 2100 00:00:00 GMT", time.Time{}},
		{"30 Apr", "Thu, 30 Apr 2026 23:59:59 GMT", time.Date(2026, 4, 30, 23, 59, 59, 0, time.UTC)},
		{"31 Apr", "Fri, 31 Apr 2026 00:00:00 GMT", time.Time{}},
		{"31 Dec", "Thu, 31 Dec 2026 00:00:00 GMT", time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"year 0000", "Sat, 01 Jan 0000 00:00:00 GMT", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"garbage year", "Wed, 01 Jan 1x26 00:00:00 GMT", time.Time{}},
	}
	// ref is in a zone other than UTC, to show the result is UTC anyway.
	ref := time.Date(2026, 6, 1, 12, 0, 0, 0, time.FixedZone("UTC-7", -7*3600))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHTTPDate(tt.value, ref)
			if tt.want.IsZero() {
				assert.ErrorIs(t, err, ErrInvalid, "ParseHTTPDate(%q)", tt.value)
				assert.True(t, got.IsZero(), "ParseHTTPDate(%q) = %v with its error, want the zero time", tt.value, got)
				return
			}
			require.NoError(t, err, "ParseHTTPDate(%q)", tt.value)
			assert.WithinDuration(t, tt.want, got, 0, "ParseHTTPDate(%q)", tt.value)
			assert.Same(t, time.UTC, got.Location(), "ParseHTTPDate(%q) = %v, want UTC", tt.value, got)
		})
	}
}

// TestRFC850Year checks RFC 9110's rule for the two-digit year: the date is
// never taken to be more than 50 years after ref; a year that would be is the
// most recent past year with the same two digits.
func TestRFC850Year(t *testing.T) {
	ref2026 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		ref   time.Time
		want  time.Time // zero: invalid
	}{
		{"94 is 1994", "Sunday, 06-Nov-94 08:49:37 GMT", ref2026, time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)},
		{"26 is this year", "Monday, 15-Jun-26 00:00:00 GMT", ref2026, time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC)},
		{"30 is 2030, 4 years ahead", "Saturday, 15-Jun-30 00:00:00 GMT", ref2026, time.Date(2030, 6, 15, 0, 0, 0, 0, time.UTC)},
		{"77 is 1977, as 2077 is 51 years ahead", "Wednesday, 15-Jun-77 00:00:00 GMT", ref2026, time.Date(1977, 6, 15, 0, 0, 0, 0, time.UTC)},
		// 15 Jun 2077 was a Tuesday: accepting this would mean 77 became 2077.
		{"77 is not 2077", "Tuesday, 15-Jun-77 00:00:00 GMT", ref2026, time.Time{}},
		{"exactly 50 years ahead stays ahead", "Monday, 01-Jun-76 00:00:00 GMT", ref2026, time.Date(2076, 6, 1, 0, 0, 0, 0, time.UTC)},
		{"one second past 50 years goes back", "Tuesday, 01-Jun-76 00:00:01 GMT", ref2026, time.Date(1976, 6, 1, 0, 0, 1, 0, time.UTC)},
		{"earlier in year 76 stays ahead", "Wednesday, 01-Jan-76 00:00:00 GMT", ref2026, time.Date(2076, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"00 is 2000", "Saturday, 15-Jan-00 00:00:00 GMT", ref2026, time.Date(2000, 1, 15, 0, 0, 0, 0, time.UTC)},
		// Near the end of a century the window reaches into the next one.
		{"10 is 2110 from 2090", "Wednesday, 15-Jan-10 00:00:00 GMT", time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2110, 1, 15, 0, 0, 0, 0, time.UTC)},
		{"10 is 2010 from 2026", "Friday, 15-Jan-10 00:00:00 GMT", ref2026, time.Date(2010, 1, 15, 0, 0, 0, 0, time.UTC)},
		// From 2060, 00 is 2100, which has no 29 February; 1 March 2100 is
		// a Monday, so only the day check refuses this.
		{"29 Feb 00 in 2100 is no day", "Monday, 29-Feb-00 00:00:00 GMT", time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
		// The limit is taken in UTC: 23:00 on 31 May 2026 in UTC-2 is 01:00 on 1 June UTC.
		{"ref zone does not shift the window", "Monday, 01-Jun-76 00:59:59 GMT", time.Date(2026, 5, 31, 23, 0, 0, 0, time.FixedZone("UTC-2", -2*3600)), time.Date(2076, 6, 1, 0, 59, 59, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHTTPDate(tt.value, tt.ref)
			if tt.want.IsZero() {
				assert.Error(t, err, "ParseHTTPDate(%q) = %v", tt.value, got)
				return
			}
			require.NoError(t, err, "ParseHTTPDate(%q)", tt.value)
			assert.WithinDuration(t, tt.want, got, 0, "ParseHTTPDate(%q), want year %d", tt.value, tt.want.Year())
		})
	}
}
