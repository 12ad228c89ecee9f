// Package jsontime writes times in the SDK's wire format (SPEC §2, §4):
// RFC 3339 in UTC with milliseconds, 2006-01-02T15:04:05.000Z, the format
// of each message's timestamp and of each body's sentAt. It writes the
// same bytes as time.Time.AppendFormat with that layout, several times
// faster, which matters since every Enqueue writes one.
//
// The analytics package's encoder writes the timestamps through a Cache;
// package consumer writes each body's sentAt, once a batch, with
// time.Time.AppendFormat and Layout.
package jsontime

import "time"

// Layout is the wire format, as a layout of package time.
const Layout = "2006-01-02T15:04:05.000Z"

// Append appends t in Layout: the same bytes as
// t.UTC().AppendFormat(dst, Layout).
func Append(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, Layout)
	}
	hour, min, sec := t.Clock()
	ms := t.Nanosecond() / int(time.Millisecond)
	dst = appendDigits(dst, year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, int(month), 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, day, 2)
	dst = append(dst, 'T')
	dst = appendDigits(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, min, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, sec, 2)
	dst = append(dst, '.')
	dst = appendDigits(dst, ms, 3)
	return append(dst, 'Z')
}

// Cache appends times as Append does, keeping the text of the last second
// it wrote: the times of a burst of events share it, and cost a copy and
// three digits instead of a calendar computation. The zero value is ready
// to use; it is not safe for concurrent use.
type Cache struct {
	sec    int64             // the Unix second of text
	text   [len(Layout)]byte // Append's output for a time in that second
	filled bool
}

// Append appends t as the package's Append does.
func (c *Cache) Append(dst []byte, t time.Time) []byte {
	sec := t.Unix()
	if !c.filled || sec != c.sec {
		if year := t.UTC().Year(); year < 0 || year > 9999 {
			return Append(dst, t)
		}
		Append(c.text[:0], t)
		c.sec, c.filled = sec, true
	}
	const secondLen = len("2006-01-02T15:04:05.")
	dst = append(dst, c.text[:secondLen]...)
	dst = appendDigits(dst, t.Nanosecond()/int(time.Millisecond), 3)
	return append(dst, 'Z')
}

// appendDigits appends the width lowest decimal digits of n, zero-padded.
func appendDigits(dst []byte, n, width int) []byte {
	const pairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
		"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
		"8081828384858687888990919293949596979899"
	var b [4]byte
	for i := width; i > 0; {
		if i >= 2 {
			p := n % 100 * 2
			b[i-2], b[i-1] = pairs[p], pairs[p+1]
			n /= 100
			i -= 2
			continue
		}
		b[0] = byte('0' + n%10)
		i--
	}
	return append(dst, b[:width]...)
}
