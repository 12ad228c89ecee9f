package retryafter

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFromHeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		wantOK bool
	}{
		{"nil header", nil, 0, false},
		{"absent", http.Header{"Date": {"Thu, 01 Jan 2026 00:00:00 GMT"}}, 0, false},
		{"delta-seconds", http.Header{"Retry-After": {"5"}}, 5 * time.Second, true},
		{"two field lines", http.Header{"Retry-After": {"5", "6"}}, 0, false},
		{"two values on one line", http.Header{"Retry-After": {"5, 6"}}, 0, false},
		{"empty field line", http.Header{"Retry-After": {""}}, 0, false},
		{"invalid", http.Header{"Retry-After": {"0"}}, 0, false},
		{"surrounding whitespace is not part of the value", http.Header{"Retry-After": {" 5\t"}}, 5 * time.Second, true},
		{
			// 60s is only right if the Date header, not now, is the reference.
			"Date header is the reference",
			http.Header{"Date": {"Sun, 06 Nov 1994 08:49:37 GMT"}, "Retry-After": {"Sun, 06 Nov 1994 08:50:37 GMT"}},
			time.Minute, true,
		},
		{
			"Date header in RFC 850 form",
			http.Header{"Date": {"Sunday, 06-Nov-94 08:49:37 GMT"}, "Retry-After": {"Sun Nov  6 08:50:37 1994"}},
			time.Minute, true,
		},
		{
			// After now but before the server's Date: not in the future for the server.
			"date before the Date header",
			http.Header{"Date": {"Fri, 02 Jan 2026 00:00:00 GMT"}, "Retry-After": {"Thu, 01 Jan 2026 12:00:00 GMT"}},
			0, false,
		},
		{
			"invalid Date falls back to now",
			http.Header{"Date": {"yesterday"}, "Retry-After": {"Thu, 01 Jan 2026 00:01:00 GMT"}},
			time.Minute, true,
		},
		{
			"Date with wrong weekday falls back to now",
			http.Header{"Date": {"Mon, 06 Nov 1994 08:49:37 GMT"}, "Retry-After": {"Thu, 01 Jan 2026 00:01:00 GMT"}},
			time.Minute, true,
		},
		{
			"Date on two lines falls back to now",
			http.Header{"Date": {"Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"}, "Retry-After": {"Thu, 01 Jan 2026 00:01:00 GMT"}},
			time.Minute, true,
		},
		{
			"delta-seconds ignores Date",
			http.Header{"Date": {"Sun, 06 Nov 1994 08:49:37 GMT"}, "Retry-After": {"120"}},
			2 * time.Minute, true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FromHeader(tt.header, now)
			assert.Equal(t, tt.want, got, "FromHeader(%v)", tt.header)
			assert.Equal(t, tt.wantOK, ok, "FromHeader(%v) ok", tt.header)
		})
	}
}

// TestFromHeaderCanonicalKey checks that a header set through the usual
// API, whatever the case of the name, is found.
func TestFromHeaderCanonicalKey(t *testing.T) {
	h := http.Header{}
	h.Set("retry-after", "7")
	h.Add("RETRY-AFTER", "8")
	d, ok := FromHeader(h, time.Time{})
	assert.False(t, ok, "FromHeader with two lines set as %v = %v", h, d)
	h.Del("Retry-after")
	h.Set("retry-after", "7")
	d, ok = FromHeader(h, time.Time{})
	assert.True(t, ok, "FromHeader(%v) ok", h)
	assert.Equal(t, 7*time.Second, d, "FromHeader(%v)", h)
}

func TestServerDate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	date := time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Time
		wantOK bool
	}{
		{"nil header", nil, time.Time{}, false},
		{"absent", http.Header{"Retry-After": {"5"}}, time.Time{}, false},
		{"IMF-fixdate", http.Header{"Date": {"Sun, 06 Nov 1994 08:49:37 GMT"}}, date, true},
		{"RFC 850, its year resolved against now", http.Header{"Date": {"Sunday, 06-Nov-94 08:49:37 GMT"}}, date, true},
		{"surrounding spaces and tabs stripped", http.Header{"Date": {" Sun, 06 Nov 1994 08:49:37 GMT\t"}}, date, true},
		{"two field lines", http.Header{"Date": {"Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"}}, time.Time{}, false},
		{"wrong weekday", http.Header{"Date": {"Mon, 06 Nov 1994 08:49:37 GMT"}}, time.Time{}, false},
		{"not a date", http.Header{"Date": {"yesterday"}}, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ServerDate(tt.header, now)
			assert.Equal(t, tt.wantOK, ok)
			assert.True(t, tt.want.Equal(got), "got %v, want %v", got, tt.want)
		})
	}
}
