package analytics

import (
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Message shapes for measuring what a kept message costs. Each call builds
// a fresh message, as an application does per event, with the strings a
// real one computes (ids, names) built at run time, so that everything the
// message reaches lives only as long as the client keeps it.
var keepShapes = []struct {
	name string
	make func(i int) Message
}{
	{"identify", func(i int) Message { return Identify{UserId: "user-" + strconv.Itoa(i)} }},
	{"identify-ip-traits", func(i int) Message {
		return Identify{UserId: "user-" + strconv.Itoa(i), Context: &Context{IP: net.IPv4(10, 0, byte(i>>8), byte(i))},
			Traits: Traits{"email": "user" + strconv.Itoa(i) + "@example.com", "plan": "pro", "logins": 1000 + i}}
	}},
	{"track-5-props", func(i int) Message {
		return Track{UserId: "user-" + strconv.Itoa(i), Event: "Order Completed", Properties: Properties{
			"plan": "pro", "currency": "USD", "coupon": "WINTER", "sku": "sku-42", "category": "books"}}
	}},
	{"track-20-props", func(i int) Message { return track20(i) }},
	{"track-nested", func(i int) Message {
		id := strconv.Itoa(i)
		products := make([]any, 3)
		for k := range products {
			products[k] = map[string]any{"sku": "sku-" + id + strconv.Itoa(k), "price": 9.99 + float64(k), "quantity": k + 1}
		}
		return Track{UserId: "user-" + id, Event: "Order Completed", Properties: Properties{
			"order_id": "order-" + id, "total": 31.97, "currency": "USD", "products": products,
			"shipping": map[string]any{"city": "Paris", "zip": "75001", "express": true}}}
	}},
	{"track-8kb-string", func(i int) Message {
		return Track{UserId: "user-" + strconv.Itoa(i), Event: "Report Generated",
			Properties: Properties{"report": strings.Repeat("x", 8<<10-6) + strconv.Itoa(100000+i%900000)}}
	}},
	{"track-context", func(i int) Message {
		id := strconv.Itoa(i)
		return Track{UserId: "user-" + id, Event: "Page Viewed",
			Context: &Context{IP: net.IPv4(10, 0, byte(i>>8), byte(i)), UserAgent: "Mozilla/5.0 (X11; Linux x86_64) " + id,
				Locale: "en-US", Page: PageInfo{Path: "/p/" + id, URL: "https://example.com/p/" + id}},
			Properties: Properties{"path": "/p/" + id, "title": "Product " + id, "referrer": "https://example.com/"}}
	}},
}

// BenchmarkKeptMessage measures, for each shape, the heap a message kept
// for the callback holds (heap-B/msg: the copy Enqueue keeps, its
// generated MessageId, and everything the message reaches) against its
// encoded length (json-B/msg) and the estimate counted against
// MaxQueueBytes (estimate-B/msg). The timed loop is the estimate itself.
func BenchmarkKeptMessage(b *testing.B) {
	for _, shape := range keepShapes {
		b.Run(shape.name, func(b *testing.B) {
			heap, encoded, estimate := measureKept(b, shape.make)
			msg, e := shape.make(1), getEncoder()
			defer putEncoder(e)
			_, err := e.encodeMessage(msg, time.Now())
			require.NoError(b, err)
			enc := append([]byte(nil), e.buf...)
			for b.Loop() {
				keptSink += keptBytes(msg, enc)
			}
			// After the loop: b.Loop's first call resets the metrics.
			b.ReportMetric(heap, "heap-B/msg")
			b.ReportMetric(encoded, "json-B/msg")
			b.ReportMetric(estimate, "estimate-B/msg")
		})
	}
}

var keptSink int

// measureKept keeps 20,000 messages of a shape as Enqueue does and returns
// the mean heap, encoded length and estimate per message.
func measureKept(tb testing.TB, shape func(int) Message) (heap, encoded, estimate float64) {
	const n = 20_000
	kept := make([]Message, n) // the queue's slots exist with or without a callback
	e := getEncoder()
	defer putEncoder(e)
	now := time.Now()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	var encodedSum, estimateSum int
	for i := range kept {
		msg := shape(i)
		generated, err := e.encodeMessage(msg, now)
		if err != nil { // not require, which would call tb.Helper while the heap is measured
			tb.Fatal(err)
		}
		id := ""
		if generated {
			id = string(e.id[:])
		}
		kept[i] = msg.withDefaults(id, now)
		encodedSum += len(e.buf)
		estimateSum += keptBytes(msg, e.buf)
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	runtime.KeepAlive(kept)
	return float64(m.HeapAlloc-before) / n, float64(encodedSum) / n, float64(estimateSum) / n
}

// BenchmarkEnqueueCallback is BenchmarkEnqueue with a callback set, so that
// Enqueue keeps each message: with the benchmark's track (one Properties
// map shared by every call), and with a fresh 20-property track per call.
func BenchmarkEnqueueCallback(b *testing.B) {
	shared := benchTrack()
	for _, bc := range []struct {
		name string
		msg  func(i int) Message
	}{
		{"track-5-props", func(int) Message { return shared }},
		{"track-20-props", track20},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := New("wk", WithEndpoint("http://bench.test"), WithHTTPClient(&http.Client{Transport: discard{}}),
				WithMaxQueueSize(quietQueue), WithFlushAt(quietQueue), WithFlushInterval(time.Hour),
				WithCallback(CallbackFunc(func(Message, error) {})))
			require.NoError(b, err, "New")
			defer c.Close()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				// Drained well before FlushAt, so that no upload starts.
				if i%(quietQueue/2) == 0 {
					b.StopTimer()
					drainKept(c)
					b.StartTimer()
				}
				if err := c.Enqueue(bc.msg(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// drainKept empties the queue of a client with a callback, as uploads
// would, without calling back.
func drainKept(c *Client) {
	batch := c.queue.Drain()
	size := 0
	for _, it := range batch.Items {
		size += it.Size()
	}
	c.queue.Release(len(batch.Items), size)
}
