package consumer

import (
	"bytes"
	"compress/gzip"
	"sync"
	"time"
)

// MaxBodyBytes is the largest batch body the SDK sends, envelope included,
// before compression.
const MaxBodyBytes = 500_000

// TimeLayout is the wire format of timestamp and sentAt: RFC 3339, UTC,
// milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

const (
	bodyOpen    = `{"batch":[`
	bodySentAt  = `],"sentAt":"`
	bodyContext = `","context":`
	bodyClose   = `}`
)

// envelopeSize is the length of a body's envelope around its events.
func envelopeSize(context []byte) int {
	return len(bodyOpen) + len(bodySentAt) + len(TimeLayout) + len(bodyContext) + len(context) + len(bodyClose)
}

// batchHead is `{"batch":[e1,e2,...` : the part of a body that is
// byte-identical on every attempt. It is built once per batch.
func batchHead(events [][]byte) []byte {
	n := len(bodyOpen) + len(events)
	for _, e := range events {
		n += len(e)
	}
	head := make([]byte, 0, n)
	head = append(head, bodyOpen...)
	for i, e := range events {
		if i > 0 {
			head = append(head, ',')
		}
		head = append(head, e...)
	}
	return head
}

// AppendTime appends t in TimeLayout (UTC, milliseconds): the same bytes
// as t.UTC().AppendFormat(dst, TimeLayout), several times faster, which
// matters since every Enqueue writes one.
func AppendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, TimeLayout)
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

// appendDigits appends the width lowest decimal digits of n, zero-padded.
func appendDigits(dst []byte, n, width int) []byte {
	var b [4]byte
	for i := width - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return append(dst, b[:width]...)
}

// render appends the whole body of one attempt to dst: the batch head, then
// sentAt (the time of this attempt) and the envelope context.
func render(dst, head, context []byte, sentAt time.Time) []byte {
	dst = append(dst, head...)
	dst = append(dst, bodySentAt...)
	dst = AppendTime(dst, sentAt)
	dst = append(dst, bodyContext...)
	dst = append(dst, context...)
	return append(dst, bodyClose...)
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// compress gzips src into a new slice.
func compress(src []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(src)/4 + 64)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	// Writes to a bytes.Buffer cannot fail.
	_, _ = zw.Write(src)
	_ = zw.Close()
	zw.Reset(nil)
	gzipWriters.Put(zw)
	return buf.Bytes()
}
