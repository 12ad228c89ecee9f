package retryafter

import (
	"strings"
	"time"
)

// The three HTTP-date forms of RFC 9110 §5.6.7 as fixed-width masks: '9' is
// an ASCII digit, '?' is any byte (a name or day checked on its own), and any
// other byte must appear as is. Fixed widths are the point: time.Parse with
// http.TimeFormat takes a one-digit hour ("8:49:37"), a fraction after the
// seconds and names in any case, with time.ANSIC an asctime day written "6"
// or "06", and it checks only that a weekday is a day's name, not that it is
// the date's.
const (
	imfMask     = "???, 99 ??? 9999 99:99:99 GMT" // Sun, 06 Nov 1994 08:49:37 GMT
	rfc850Mask  = ", 99-???-99 99:99:99 GMT"      // follows the day name in: Sunday, 06-Nov-94 08:49:37 GMT
	asctimeMask = "??? ??? ?? 99:99:99 9999"      // Sun Nov  6 08:49:37 1994
)

// ParseHTTPDate parses an HTTP-date in any of the three forms of RFC 9110
// §5.6.7 and returns it in UTC, to the second:
//
//	IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
//	RFC 850      Sunday, 06-Nov-94 08:49:37 GMT
//	asctime      Sun Nov  6 08:49:37 1994
//
// It is strict: every field has its exact width (asctime pads a one-digit day
// with a space, not a zero), names are case-sensitive, the weekday must match
// the date, impossible dates and times (31 Apr, 29 Feb 2100, 24:00:00, a
// leap second :60) are rejected rather than rolled over, and nothing may
// follow the date.
//
// ref is used only to resolve the two-digit year of the RFC 850 form: as RFC
// 9110 requires, the year is the one ending in those digits that puts the
// date at most 50 years after ref (compared to the second, in UTC), so a
// date that would otherwise be more than 50 years in the future falls in
// the most recent past year with those digits instead.
//
// On failure it returns the zero Time and an error that wraps ErrInvalid.
// ParseHTTPDate never panics.
func ParseHTTPDate(s string, ref time.Time) (time.Time, error) {
	t, reason := parseHTTPDate(s, ref)
	if reason != "" {
		return time.Time{}, invalid(s, reason)
	}
	return t, nil
}

// parseHTTPDate is ParseHTTPDate without the error allocation: it returns
// the reason s is invalid, or "" on success.
func parseHTTPDate(s string, ref time.Time) (time.Time, string) {
	// The day name tells the forms apart: a short name then ',' starts an
	// IMF-fixdate, a short name then ' ' an asctime date, a full name then
	// ',' an RFC 850 date. Anything else is not an HTTP-date at all.
	if len(s) > 3 && isShortDayName(s[:3]) {
		switch s[3] {
		case ',':
			return parseIMFFixdate(s)
		case ' ':
			return parseAsctime(s)
		}
	}
	if i := strings.IndexByte(s, ','); i > 0 && isLongDayName(s[:i]) {
		return parseRFC850(s[:i], s[i:], ref)
	}
	return time.Time{}, reasonNotRetryAfter
}

func parseIMFFixdate(s string) (time.Time, string) {
	if !matchMask(s, imfMask) {
		return time.Time{}, `malformed IMF-fixdate, want the form "Sun, 06 Nov 1994 08:49:37 GMT"`
	}
	month, ok := parseMonth(s[8:11])
	if !ok {
		return time.Time{}, "unknown month name"
	}
	f := fields{
		year: atoi(s[12:16]), month: month, day: atoi(s[5:7]),
		hour: atoi(s[17:19]), min: atoi(s[20:22]), sec: atoi(s[23:25]),
	}
	return f.time(s[:3], false)
}

func parseAsctime(s string) (time.Time, string) {
	if !matchMask(s, asctimeMask) {
		return time.Time{}, `malformed asctime date, want the form "Sun Nov  6 08:49:37 1994"`
	}
	month, ok := parseMonth(s[4:7])
	if !ok {
		return time.Time{}, "unknown month name"
	}
	day, ok := asctimeDay(s[8:10])
	if !ok {
		return time.Time{}, `malformed asctime day, want a space-padded day like " 6" or "16"`
	}
	f := fields{
		year: atoi(s[20:24]), month: month, day: day,
		hour: atoi(s[11:13]), min: atoi(s[14:16]), sec: atoi(s[17:19]),
	}
	return f.time(s[:3], false)
}

// parseRFC850 parses an RFC 850 date split into its full day name and the
// rest, which starts at the comma.
func parseRFC850(dayName, rest string, ref time.Time) (time.Time, string) {
	if !matchMask(rest, rfc850Mask) {
		return time.Time{}, `malformed RFC 850 date, want the form "Sunday, 06-Nov-94 08:49:37 GMT"`
	}
	month, ok := parseMonth(rest[5:8])
	if !ok {
		return time.Time{}, "unknown month name"
	}
	f := fields{
		month: month, day: atoi(rest[2:4]),
		hour: atoi(rest[12:14]), min: atoi(rest[15:17]), sec: atoi(rest[18:20]),
	}
	f.year = resolveYear(atoi(rest[9:11]), f, ref)
	return f.time(dayName, true)
}

// resolveYear returns the year ending in the two digits yy that puts the
// date f (whose year is ignored) at most 50 years after ref, per RFC 9110
// §5.6.7. The fields are compared as a tuple, not as a time.Time, because
// f is not validated yet (29 Feb may only exist in one of the candidates).
func resolveYear(yy int, f fields, ref time.Time) int {
	ref = ref.UTC()
	limit := fields{
		year: ref.Year() + 50, month: ref.Month(), day: ref.Day(),
		hour: ref.Hour(), min: ref.Minute(), sec: ref.Second(),
	}
	// Start in ref's century, then move by one century: that is enough
	// because the candidate and the limit are less than 150 years apart.
	f.year = ref.Year() - floorMod(ref.Year(), 100) + yy
	if f.after(limit) {
		return f.year - 100
	}
	next := f
	next.year += 100
	if !next.after(limit) {
		return next.year
	}
	return f.year
}

// fields are the parts of an HTTP-date before they are validated.
type fields struct {
	year           int
	month          time.Month
	day            int
	hour, min, sec int
}

// after reports whether f is later than g, field by field.
func (f fields) after(g fields) bool {
	a := [...]int{f.year, int(f.month), f.day, f.hour, f.min, f.sec}
	b := [...]int{g.year, int(g.month), g.day, g.hour, g.min, g.sec}
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// time validates f, builds the UTC time and checks that dayName (a short
// name, or a full one when long is set) is its weekday. Validation comes
// first because time.Date silently normalises 30 Feb to 2 Mar.
func (f fields) time(dayName string, long bool) (time.Time, string) {
	switch {
	case f.day < 1 || f.day > daysIn(f.month, f.year):
		return time.Time{}, "day out of range for the month"
	case f.hour > 23:
		return time.Time{}, "hour out of range (00-23)"
	case f.min > 59:
		return time.Time{}, "minute out of range (00-59)"
	case f.sec > 59:
		return time.Time{}, "second out of range (00-59)"
	}
	t := time.Date(f.year, f.month, f.day, f.hour, f.min, f.sec, 0, time.UTC)
	want := t.Weekday().String()
	if !long {
		want = want[:3]
	}
	if dayName != want {
		return time.Time{}, "weekday does not match the date"
	}
	return t, ""
}

// daysIn returns the number of days in month of the proleptic Gregorian
// year, the calendar time.Time uses.
func daysIn(month time.Month, year int) int {
	switch month {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// asctimeDay parses asctime's two-byte day: a space then a digit 1-9, or two
// digits not starting with 0. A zero-padded "06" is not asctime's form.
func asctimeDay(s string) (int, bool) {
	switch {
	case s[0] == ' ' && s[1] >= '1' && s[1] <= '9':
		return int(s[1] - '0'), true
	case s[0] >= '1' && s[0] <= '9' && isDigits(s[1:]):
		return atoi(s), true
	}
	return 0, false
}

// matchMask reports whether s fits mask (see imfMask) byte for byte.
func matchMask(s, mask string) bool {
	if len(s) != len(mask) {
		return false
	}
	for i := 0; i < len(mask); i++ {
		switch c := mask[i]; c {
		case '?':
		case '9':
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		default:
			if s[i] != c {
				return false
			}
		}
	}
	return true
}

// atoi converts a short string already checked to be all digits.
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func floorMod(a, b int) int {
	return ((a % b) + b) % b
}

// The names come from package time, whose English names are exactly those
// of the RFC; comparing with == keeps them case-sensitive.

func isShortDayName(s string) bool {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if d.String()[:3] == s {
			return true
		}
	}
	return false
}

func isLongDayName(s string) bool {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if d.String() == s {
			return true
		}
	}
	return false
}

func parseMonth(s string) (time.Month, bool) {
	for m := time.January; m <= time.December; m++ {
		if m.String()[:3] == s {
			return m, true
		}
	}
	return 0, false
}
