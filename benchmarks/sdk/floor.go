package sdk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	ours "github.com/dualpath/analytics-go"
)

// floorBatch and floorUploads are ours's defaults: 250 events a request,
// at most 8 requests at once (and so 8 connections).
const (
	floorBatch   = 250
	floorUploads = 8
)

// floorLibrary is context.library as ours writes it, in every event and
// in the body's context.
const floorLibrary = `{"library":{"name":"analytics-go","version":"` + ours.Version + `"}}`

// floorClient is the least work an event needs on ours's path, to set
// beside ours as a floor: each Track appends the same track event ours
// sends (the same members, the same values, timestamps written as ours
// writes them) as JSON into the batch being filled, under one lock; every
// 250 events the batch goes to one of 8 uploaders, which deflates it
// with ours's compressor at ours's level (klauspost/compress gzip,
// BestSpeed) and posts it to the same endpoint, ours's way (one POST of
// the whole body, Content-Encoding gzip, basic auth). Nothing else: no
// validation beyond escaping strings (the properties' keys are sorted, as
// ours sorts them: the events are byte for byte ours's), no
// queue bounds, no retries, no callbacks, no stats. An answer other than
// 2xx is counted and ends nothing, so the sink sees it as lost events.
type floorClient struct {
	url   string
	http  *http.Client
	props ours.Properties // nil: a fresh map per event

	mu    sync.Mutex
	batch *floorBody
	times floorTimes // guarded by mu

	bodies  chan *floorBody
	pool    sync.Pool // *floorBody
	done    sync.WaitGroup
	errMu   sync.Mutex
	err     error
	closing sync.Once
}

// floorBody is one batch's events, comma-separated, without the envelope.
type floorBody struct {
	events []byte
	n      int
}

func newFloor(endpoint string, transport http.RoundTripper, o Options) *floorClient {
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost, t.MaxConnsPerHost = floorUploads, floorUploads
		transport = t
	}
	f := &floorClient{
		url:    strings.TrimSuffix(endpoint, "/") + "/v1/batch",
		http:   &http.Client{Transport: transport, Timeout: 30 * time.Second},
		props:  shared[ours.Properties](o),
		bodies: make(chan *floorBody, floorUploads),
	}
	f.pool.New = func() any { return &floorBody{events: make([]byte, 0, 96<<10)} }
	f.batch = f.pool.Get().(*floorBody)
	for range floorUploads {
		f.done.Go(f.upload)
	}
	return f
}

// Track implements Client: it appends the event to the batch, and hands
// the batch to the uploaders when it holds 250.
func (f *floorClient) Track(id, userID string) error {
	props := eventProps(f.props)
	now := time.Now()
	f.mu.Lock()
	b := f.batch
	if b.n > 0 {
		b.events = append(b.events, ',')
	}
	b.events = f.appendTrack(b.events, id, userID, now, props)
	b.n++
	var full *floorBody
	if b.n == floorBatch {
		full, f.batch = b, f.pool.Get().(*floorBody)
	}
	f.mu.Unlock()
	if full != nil {
		f.bodies <- full // waits for an uploader, as a full queue would
	}
	return nil
}

// timeLayout is the wire format of times, ours's.
const timeLayout = "2006-01-02T15:04:05.000Z"

// floorTimes writes times in timeLayout as ours's encoder does: time's
// own formatting once a second, and the milliseconds of each time after
// that second's text.
type floorTimes struct {
	sec  int64
	text []byte
}

func (c *floorTimes) append(b []byte, t time.Time) []byte {
	t = t.UTC()
	if sec := t.Unix(); c.text == nil || sec != c.sec {
		c.sec, c.text = sec, t.AppendFormat(c.text[:0], timeLayout)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, c.text[:len(c.text)-4]...)
	return append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// appendTrack appends the event as ours writes it. f.mu is held (for
// f.times).
func (f *floorClient) appendTrack(b []byte, id, userID string, now time.Time, props ours.Properties) []byte {
	b = append(b, `{"type":"track","messageId":`...)
	b = appendString(b, id)
	b = append(b, `,"timestamp":"`...)
	b = f.times.append(b, now)
	b = append(b, `","userId":`...)
	b = appendString(b, userID)
	b = append(b, `,"event":`...)
	b = appendString(b, Event)
	b = append(b, `,"context":`...)
	b = append(b, floorLibrary...)
	b = append(b, `,"properties":{`...)
	// The keys sorted, as ours writes them: a map's order changes from
	// one event to the next, and unsorted members deflate worse, costing
	// more than the sort of 5 keys saves.
	var kv [5][2]string // the benchmark's five properties
	n := 0
	for k, v := range props {
		if n == len(kv) {
			break
		}
		s, _ := v.(string) // the benchmark's properties are strings
		kv[n] = [2]string{k, s}
		for j := n; j > 0 && kv[j][0] < kv[j-1][0]; j-- {
			kv[j], kv[j-1] = kv[j-1], kv[j]
		}
		n++
	}
	for i, p := range kv[:n] {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, p[0])
		b = append(b, ':')
		b = appendString(b, p[1])
	}
	return append(b, "}}"...)
}

// appendString appends s as a JSON string: plain bytes as they are, '"'
// and '\\' after a backslash, other control bytes as \u00XX, invalid
// UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i++
			start = i
			continue
		}
		const hex = "0123456789abcdef"
		b = append(b, s[start:i]...)
		if c == '"' || c == '\\' {
			b = append(b, '\\', c)
		} else {
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// upload deflates and posts the batches it is handed, until Close.
func (f *floorClient) upload() {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	var zbuf bytes.Buffer
	var head, tail []byte
	for b := range f.bodies {
		zbuf.Reset()
		zw.Reset(&zbuf)
		head = append(head[:0], `{"batch":[`...)
		tail = append(tail[:0], `],"sentAt":"`...)
		tail = time.Now().UTC().AppendFormat(tail, timeLayout)
		tail = append(tail, `","context":`...)
		tail = append(tail, floorLibrary...)
		tail = append(tail, '}')
		_, _ = zw.Write(head)
		_, _ = zw.Write(b.events)
		_, _ = zw.Write(tail)
		_ = zw.Close()
		b.events, b.n = b.events[:0], 0
		f.pool.Put(b)
		f.post(zbuf.Bytes())
	}
}

// post sends one body and reads the answer to its end, so the connection
// is reused.
func (f *floorClient) post(body []byte) {
	req, err := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		f.fail(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	req.SetBasicAuth("wk", "")
	resp, err := f.http.Do(req)
	if err != nil {
		f.fail(err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		f.fail(fmt.Errorf("floor: %s", resp.Status))
	}
}

func (f *floorClient) fail(err error) {
	f.errMu.Lock()
	f.err = errors.Join(f.err, err)
	f.errMu.Unlock()
}

// Close implements Client: it sends the last, partial batch and waits
// for every upload.
func (f *floorClient) Close() error {
	f.closing.Do(func() {
		f.mu.Lock()
		last := f.batch
		f.batch = nil
		f.mu.Unlock()
		if last.n > 0 {
			f.bodies <- last
		}
		close(f.bodies)
		f.done.Wait()
		f.http.CloseIdleConnections()
	})
	f.errMu.Lock()
	defer f.errMu.Unlock()
	return f.err
}
