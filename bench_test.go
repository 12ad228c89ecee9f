package analytics

import (
	"errors"
	"io"
	"net/http"
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
// outside the timer, before it fills, so Enqueue is measured alone on a
// queue of realistic size.
func quietClient(b *testing.B) *Client {
	c, err := New("wk", WithEndpoint("http://bench.test"), WithHTTPClient(&http.Client{Transport: discard{}}),
		WithMaxQueueSize(quietQueue), WithFlushAt(quietQueue), WithFlushInterval(time.Hour))
	require.NoError(b, err, "New")
	return c
}

const quietQueue = 10_000

// drain empties the queue of a quietClient, as uploads would.
func drain(c *Client) {
	q := c.in.(*memoryIntake).q
	batch := q.Drain()
	size := 0
	for _, it := range batch.Items {
		size += len(it.Data)
	}
	q.Release(len(batch.Items), size)
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
		// Drained well before FlushAt: at FlushAt an upload would start,
		// and the events it holds would count against MaxQueueSize past
		// the drain (ErrQueueFull), its work inside the timer.
		if i%(quietQueue/2) == 0 {
			b.StopTimer()
			drain(c)
			b.StartTimer()
		}
		if err := c.Enqueue(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnqueueParallel(b *testing.B) {
	c := quietClient(b)
	defer c.Close()
	msg := benchTrack()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := c.Enqueue(msg); errors.Is(err, ErrQueueFull) {
				drain(c) // timed, but once per 10,000 calls
			} else if err != nil {
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
func BenchmarkEncodeTrack(b *testing.B) {
	var msg Message = benchTrack()
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
