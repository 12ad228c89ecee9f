package analytics

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
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

func benchClient(b *testing.B) *Client {
	c, err := New("wk", WithEndpoint("http://bench.test"), WithHTTPClient(&http.Client{Transport: discard{}}),
		WithMaxQueueSize(1_000_000), WithMaxQueueBytes(1<<30), WithFlushInterval(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func BenchmarkEnqueue(b *testing.B) {
	c := benchClient(b)
	msg := benchTrack()
	full := 0
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Enqueue(msg); err != nil {
			full++
		}
	}
	b.ReportMetric(float64(full)/float64(b.N), "refused/op")
}

func BenchmarkEnqueueParallel(b *testing.B) {
	c := benchClient(b)
	msg := benchTrack()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = c.Enqueue(msg)
		}
	})
}

func BenchmarkEncodeTrack(b *testing.B) {
	msg := benchTrack()
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeMessage(msg, "7d7c2d6a-2f1e-4c8e-9a55-0c1f2b3a4d5e", now); err != nil {
			b.Fatal(err)
		}
	}
}
