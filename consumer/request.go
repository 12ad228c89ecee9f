package consumer

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/dualpath/analytics-go/internal/defaults"
)

// newRequest builds the POST of one attempt: the body (id is the batch's
// messageId when it carries one, sentAt is now, gzipped when on), the headers (auth is the Authorization), and a trace that records in phase how far
// the send gets.
func (u *Uploader) newRequest(ctx context.Context, events [][]byte, id string, retryCount int, auth string, phase *progress) (*http.Request, error) {
	body := newBatchBody(events, u.env, id, time.Now())
	var reader func() io.Reader
	length := body.Len()
	if u.cfg.Gzip {
		payload := compress(body)
		length = len(payload)
		reader = func() io.Reader { return bytes.NewReader(payload) }
	} else {
		reader = body.Reader
	}

	ctx = httptrace.WithClientTrace(ctx, u.trace(phase, length))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url, nil)
	if err != nil {
		return nil, err
	}
	// GetBody lets net/http send the body again after a 307/308.
	req.Body, req.ContentLength = io.NopCloser(reader()), int64(length)
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(reader()), nil }
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	req.Header.Set("User-Agent", u.cfg.UserAgent)
	if u.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if retryCount > 0 {
		req.Header.Set("X-Retry-Count", strconv.Itoa(retryCount))
	}
	return req, nil
}

// jsonTimeMax is the longest time.RFC3339Nano text of a year in
// 0000-9999, as encoding/json writes a time.Time: the layout of sentAt
// with Config.JSONTimes.
const jsonTimeMax = len("2006-01-02T15:04:05.999999999-07:00")

const (
	bodyOpen      = `{"batch":[`
	bodyMessageID = `],"messageId":"`
	bodyIDSentAt  = `","sentAt":"`
	bodySentAt    = `],"sentAt":"`
	bodyContext   = `","context":`
	bodyClose     = `}`
	batchIDLen    = len("00000000-0000-0000-0000-000000000000")
)

// envelope is what a body holds around its events: the context
// member, and how sentAt and the batch's messageId are written (Config's
// Context, JSONTimes and BatchMessageID).
type envelope struct {
	context   []byte // the context's JSON, and with OAuth the writeKey member after it
	jsonTimes bool
	batchID   bool
}

// size is the most bytes the envelope takes around the events.
func (env envelope) size() int {
	n := len(bodyOpen) + len(bodySentAt) + len(defaults.TimeLayout) + len(bodyContext) + len(env.context) + len(bodyClose)
	if env.jsonTimes {
		n += jsonTimeMax - len(defaults.TimeLayout)
	}
	if env.batchID {
		n += len(bodyMessageID) + batchIDLen + len(bodyIDSentAt) - len(bodySentAt)
	}
	return n
}

// batchBody is the body of one attempt: the batch's events, shared by
// every attempt and never copied, between an opening and this attempt's
// tail (the batch's messageId, sentAt and the envelope context). Only the
// tail differs between attempts, so the events are byte-identical on
// each.
type batchBody struct {
	events [][]byte
	tail   []byte
}

var open = []byte(bodyOpen)

// eventsLen is the length of the events joined by commas.
func eventsLen(events [][]byte) int {
	n := max(len(events)-1, 0)
	for _, e := range events {
		n += len(e)
	}
	return n
}

// newBatchBody is the body of events in env, with id as the batch's
// messageId (written when env.batchID) and sentAt.
func newBatchBody(events [][]byte, env envelope, id string, sentAt time.Time) batchBody {
	tail := make([]byte, 0, env.size()-len(bodyOpen))
	if env.batchID {
		tail = append(tail, bodyMessageID...)
		tail = append(tail, id...)
		tail = append(tail, bodyIDSentAt...)
	} else {
		tail = append(tail, bodySentAt...)
	}
	if env.jsonTimes {
		tail = sentAt.AppendFormat(tail, time.RFC3339Nano)
	} else {
		tail = sentAt.UTC().AppendFormat(tail, defaults.TimeLayout)
	}
	tail = append(tail, bodyContext...)
	tail = append(tail, env.context...)
	tail = append(tail, bodyClose...)
	return batchBody{events: events, tail: tail}
}

// Len is the body's length in bytes.
func (b batchBody) Len() int { return len(open) + eventsLen(b.events) + len(b.tail) }

// Reader returns a new reader of the body that copies from the events as
// it goes: the uncompressed request body is never assembled in memory.
func (b batchBody) Reader() io.Reader { return &bodyReader{body: b, cur: open} }

// bodyReader reads open, e0, ",", e1, ..., e(n-1), tail: from the start
// when cur is open and next 0.
type bodyReader struct {
	body batchBody
	cur  []byte // what is left of the current piece
	next int    // the next event to hand out; past them, the tail, then none
}

// Read copies the next bytes of the body into p. The comma before an
// event goes straight into p as the event is taken up.
func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for events := r.body.events; n < len(p); {
		if len(r.cur) > 0 {
			c := copy(p[n:], r.cur)
			r.cur = r.cur[c:]
			n += c
			continue
		}
		switch {
		case r.next < len(events):
			if r.next > 0 {
				p[n] = ','
				n++
			}
			r.cur = events[r.next]
		case r.next == len(events):
			r.cur = r.body.tail
		case n == 0:
			return 0, io.EOF
		default:
			return n, nil
		}
		r.next++
	}
	return n, nil
}

// gzipWriters keeps compressors between attempts: a gzip.Writer carries
// hundreds of KiB of state. BestSpeed: analytics JSON still shrinks about
// 15 times, at less than half the CPU of the default level. The writer is
// klauspost/compress's: deflate took 12-24% of the client's CPU, and it
// compresses a batch about twice as fast as compress/gzip, to the same
// format. The buffer in front of it gathers the many small pieces of a
// body (each event, each comma), as its reader hands them out, into a few
// large writes.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return &bufferedGzip{zw: zw, bw: bufio.NewWriterSize(zw, 32<<10)}
}}

// bufferedGzip is a compressor with its buffers. out is where it writes:
// the payload is copied out of it at its exact size, so that how well a
// body compresses (10 to 40 times) costs no guess and no growth. r reads
// the body being compressed.
type bufferedGzip struct {
	zw  *gzip.Writer
	bw  *bufio.Writer
	r   bodyReader
	out bytes.Buffer
}

// maxKeptOut bounds the buffer a pooled compressor keeps: a body's limit,
// which nearly every payload is far below.
const maxKeptOut = defaults.MaxBatchBytes

// compress gzips the body into a new slice, straight from the events.
func compress(b batchBody) []byte {
	g := gzipWriters.Get().(*bufferedGzip)
	g.out.Reset()
	g.zw.Reset(&g.out)
	g.bw.Reset(g.zw)
	// Writes to a bytes.Buffer cannot fail, nor can reads of a body.
	g.r = bodyReader{body: b, cur: open}
	_, _ = g.bw.ReadFrom(&g.r)
	_ = g.bw.Flush()
	_ = g.zw.Close()
	payload := bytes.Clone(g.out.Bytes())
	g.zw.Reset(nil)
	g.bw.Reset(nil)
	g.r = bodyReader{}
	if g.out.Cap() > maxKeptOut {
		g.out = bytes.Buffer{}
	}
	gzipWriters.Put(g)
	return payload
}
