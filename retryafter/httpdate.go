package retryafter

import (
	"errors"
	"net/http"
	"strings"
	"time"
)

// An httpDateForm is one of the three HTTP-date forms of RFC 9110 §5.6.7.
// time.Parse reads it with its layout and checks the calendar
// and the ranges. What time.Parse does not check is done on top: the mask
// fixes every width and literal after the day name ('9' is an ASCII digit,
// '?' a byte checked on its own), since time.Parse takes a one-digit hour
// ("8:49:37"), a fraction after the seconds, several spaces for one and an
// asctime day written "06"; the names are compared case-sensitively, as
// time.Parse takes any case; and the weekday must be the date's, as
// time.Parse checks only that it is a day's name. An accepted date is
// therefore exactly how its time formats in its layout.
type httpDateForm struct {
	layout, mask, name, example string
	month                       int // where the month's name starts in the mask
}

var (
	imfFixdate = httpDateForm{http.TimeFormat, ", 99 ??? 9999 99:99:99 GMT", "IMF-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", 5}
	rfc850     = httpDateForm{"Monday, 02-Jan-06 15:04:05 GMT", ", 99-???-99 99:99:99 GMT", "RFC 850 date", "Sunday, 06-Nov-94 08:49:37 GMT", 5}
	asctime    = httpDateForm{time.ANSIC, " ??? ?? 99:99:99 9999", "asctime date", "Sun Nov  6 08:49:37 1994", 1}
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
	f, dayName := imfFixdate, 3
	switch i := strings.IndexByte(s, ','); {
	case len(s) > 3 && isDayName(s[:3]) && s[3] == ',':
	case len(s) > 3 && isDayName(s[:3]) && s[3] == ' ':
		f = asctime
	case i > 3 && isDayName(s[:i]):
		f, dayName = rfc850, i
	default:
		return time.Time{}, reasonNotRetryAfter
	}
	if !matchMask(s[dayName:], f.mask) {
		return time.Time{}, "malformed " + f.name + `, want the form "` + f.example + `"`
	}
	if m := s[dayName+f.month:][:3]; !isMonthName(m) {
		return time.Time{}, "unknown month name"
	}
	if f == asctime && !asctimeDay(s[8:10]) {
		return time.Time{}, `malformed asctime day, want a space-padded day like " 6" or "16"`
	}
	t, err := time.Parse(f.layout, s)
	if err != nil {
		return time.Time{}, parseReason(err)
	}
	if f == rfc850 {
		if t = resolveYear(t, ref); t.IsZero() {
			return time.Time{}, reasonDay
		}
	}
	// The mask fixed the widths and literals, and the names are checked:
	// what is left of the round trip through Format is the weekday.
	weekday := t.Weekday().String()
	if f != rfc850 {
		weekday = weekday[:3]
	}
	if s[:dayName] != weekday {
		return time.Time{}, "weekday does not match the date"
	}
	return t, ""
}

const reasonDay = "day out of range for the month"

// parseReason says in the package's words why time.Parse refused a value
// whose form, names and digits are already checked: a field out of range.
func parseReason(err error) string {
	var pe *time.ParseError
	if errors.As(err, &pe) {
		switch strings.TrimPrefix(pe.Message, ": ") {
		case "hour out of range":
			return "hour out of range (00-23)"
		case "minute out of range":
			return "minute out of range (00-59)"
		case "second out of range":
			return "second out of range (00-59)"
		}
	}
	return reasonDay
}

// resolveYear moves t, parsed from an RFC 850 date, to the latest year
// ending in its two digits that puts it at most 50 years after ref, per RFC
// 9110 §5.6.7. time.Parse put 69-99 in the 1900s and 00-68 in the 2000s;
// years ending in the same digits are leap years alike but for 00 (2000 is,
// 1900 and 2100 are not), so 29 Feb is checked again: the zero Time comes
// back when the year chosen has none.
func resolveYear(t, ref time.Time) time.Time {
	ref = ref.UTC()
	last := ref.Year() + 50 // the latest year the date may fall in
	if yearless(t) > yearless(ref) {
		last--
	}
	year := last - floorMod(last-t.Year(), 100)
	r := time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
	if r.Day() != t.Day() {
		return time.Time{}
	}
	return r
}

// asctimeDay reports whether s is asctime's two-byte day: a space then a
// digit 1-9, or two digits not starting with 0. A zero-padded "06" is not
// asctime's form.
func asctimeDay(s string) bool {
	return s[0] == ' ' && s[1] >= '1' && s[1] <= '9' || s[0] >= '1' && s[0] <= '9' && isDigits(s[1:])
}

// yearless orders times within a year, to the second.
func yearless(t time.Time) int {
	return ((int(t.Month())*32+t.Day())*24+t.Hour())*3600 + t.Minute()*60 + t.Second()
}

func floorMod(a, b int) int {
	return ((a % b) + b) % b
}

// matchMask reports whether s fits mask (see httpDateForm) byte for byte.
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

// isDayName reports whether s is a day's short or full English name, in the
// case the RFC writes it (package time's names are exactly those).
func isDayName(s string) bool {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if name := d.String(); s == name || s == name[:3] {
			return true
		}
	}
	return false
}

// isMonthName reports whether s is a month's short English name, in the
// case the RFC writes it.
func isMonthName(s string) bool {
	for m := time.January; m <= time.December; m++ {
		if s == m.String()[:3] {
			return true
		}
	}
	return false
}
