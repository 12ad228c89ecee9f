package analytics

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchTrack is the event of the performance targets: a track with five
// string properties.
func benchTrack() Track {
	return Track{
		UserId: "user-12345",
		Event:  "Order Completed",
		Properties: Properties{
			"plan": "pro", "currency": "USD", "coupon": "WINTER", "sku": "sku-42", "category": "books",
		},
	}
}

// discard is a tracking API that accepts everything at once.
type discard struct{}

func (discard) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}, Request: r}, nil
}

// quietClient uploads nothing on its own: the benchmark drains its queue,
// outside the timer, before it reaches FlushAt (MaxBatchEvents, the most
// there is), so Enqueue is measured alone on a queue of realistic size.
func quietClient(b *testing.B, opts ...Option) *Client {
	c, err := New("wk", append([]Option{WithEndpoint("http://bench.test"), WithHTTPClient(&http.Client{Transport: discard{}}),
		WithMaxQueueSize(quietQueue), WithFlushAt(MaxBatchEvents), WithFlushInterval(time.Hour)}, opts...)...)
	require.NoError(b, err, "New")
	return c
}

const (
	quietQueue = 10_000
	// quietDrain is how many events a benchmark enqueues between two
	// drains: half of FlushAt, which no upload is woken before.
	quietDrain = MaxBatchEvents / 2
)

// drain empties the queue of a quietClient, as uploads would (without
// calling back), giving back the room of its events and of the messages
// kept for a callback.
func drain(c *Client) {
	q := c.q
	batch := q.Drain()
	size := 0
	for _, it := range batch.Items {
		size += it.Size()
	}
	q.Release(len(batch.Items), size)
}

// drainEvery drains c, outside the timer, before event i when i is a
// multiple of quietDrain: well before FlushAt, at which an upload would
// start and the events it holds would count against MaxQueueSize past the
// drain (ErrQueueFull), its work inside the timer.
func drainEvery(b *testing.B, c *Client, i int) {
	if i%quietDrain == 0 {
		b.StopTimer()
		drain(c)
		b.StartTimer()
	}
}

// BenchmarkEnqueue is the call on the user's hot path: validate, fill
// defaults, encode, queue. The checks inside the timed loops of this file
// are plain ifs: require calls b.Helper on every call, which would be timed.
func BenchmarkEnqueue(b *testing.B) {
	c := quietClient(b)
	defer c.Close()
	msg := benchTrack()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		drainEvery(b, c, i)
		if err := c.Enqueue(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnqueueFreshMessage is Enqueue as an application calls it: a
// Track and its 5-property map built for the call, with no Callback
// (nothing kept: the map stays on the caller's stack) and with one (the
// copy a callback gets is made and kept).
func BenchmarkEnqueueFreshMessage(b *testing.B) {
	for _, cb := range []struct {
		name string
		opts []Option
	}{
		{"no-callback", nil},
		{"callback", []Option{WithCallback(CallbackFunc(func(Message, error) {}))}},
	} {
		b.Run(cb.name, func(b *testing.B) {
			c := quietClient(b, cb.opts...)
			defer c.Close()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				drainEvery(b, c, i)
				err := c.Enqueue(Track{UserId: "user-12345", Event: "Order Completed", Properties: Properties{
					"plan": "pro", "currency": "USD", "coupon": "WINTER", "sku": "sku-42", "category": "books",
				}})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEnqueueParallel(b *testing.B) {
	c := quietClient(b)
	defer c.Close()
	msg := benchTrack()
	b.ReportAllocs()
	// Each goroutine drains, timed, after its share of quietDrain calls,
	// so that together they stay below FlushAt.
	every := max(quietDrain/runtime.GOMAXPROCS(0), 1)
	b.RunParallel(func(pb *testing.PB) {
		for i := 1; pb.Next(); i++ {
			if i%every == 0 {
				drain(c)
			}
			if err := c.Enqueue(msg); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkEndToEnd is Enqueue with the uploads running alongside it
// (gzip, HTTP to an in-memory sink), then Close: the whole cost of an
// event. It reports events per second.
func BenchmarkEndToEnd(b *testing.B) {
	c, err := New("wk", WithEndpoint("http://bench.test"), WithHTTPClient(&http.Client{Transport: discard{}}),
		WithMaxQueueSize(1_000_000), WithMaxQueueBytes(1<<30))
	require.NoError(b, err, "New")
	msg := benchTrack()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := c.Enqueue(msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	require.Equal(b, int64(b.N), c.Stats().Delivered, "events delivered")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkEncodeTrack is the encoding Enqueue does, a fresh messageId
// included, into a pooled buffer.
func BenchmarkEncodeTrack(b *testing.B) { benchEncode(b, benchTrack()) }

// benchEncode encodes msg as Enqueue does, b.N times.
func benchEncode(b *testing.B, msg Message) {
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		e := getEncoder()
		if _, err := e.encodeMessage(msg, now); err != nil {
			b.Fatal(err)
		}
		putEncoder(e)
	}
}

// BenchmarkEncodeTrackLongStrings is BenchmarkEncodeTrack with the long
// strings of a web event: a URL, a title, a referrer and a browser's user
// agent, about 340 bytes of strings the encoder scans for bytes to escape
// (plainPrefix).
func BenchmarkEncodeTrackLongStrings(b *testing.B) {
	benchEncode(b, Track{
		UserId: "user-1234567890",
		Event:  "Product Viewed",
		Properties: Properties{
			"url":      "https://www.example.com/products/category/item-name-with-words?ref=homepage&utm_source=newsletter",
			"title":    "A fairly long product title for an item on a shop page, as titles go",
			"referrer": "https://www.google.com/search?q=some+search+terms+here",
		},
		Context: &Context{UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"},
	})
}
