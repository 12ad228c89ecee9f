package consumer

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// BenchmarkBatchBody gzips the body of a 250-event batch straight from the
// already-encoded events, as every attempt does with gzip on.
func BenchmarkBatchBody(b *testing.B) {
	evs := events(250)
	ctx := []byte(`{"library":{"name":"analytics-go","version":"bench"}}`)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = compress(newBatchBody(evs, envelope{context: ctx}, "", now))
	}
}

// BenchmarkBatchBodyPlain reads the body of a 250-event batch as the
// transport does with gzip off.
func BenchmarkBatchBodyPlain(b *testing.B) {
	evs := events(250)
	ctx := []byte(`{"library":{"name":"analytics-go","version":"bench"}}`)
	now := time.Now()
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		r := newBatchBody(evs, envelope{context: ctx}, "", now).Reader()
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
	}
}

// okTransport answers every request 200 at once, reading nothing.
type okTransport struct{}

func (okTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// BenchmarkDeliver runs batches of one event through Deliver from every
// core at once, with the send rate on and off: an attempt's way through
// the gate, its request slot and the send rate's end, on a transport that
// answers at once.
func BenchmarkDeliver(b *testing.B) {
	for _, adaptive := range []bool{true, false} {
		b.Run(fmt.Sprintf("adaptive=%v", adaptive), func(b *testing.B) {
			up := New(Config{
				Endpoint:              "http://tracking.test",
				WriteKey:              "wk",
				Client:                &http.Client{Transport: okTransport{}},
				RequestTimeout:        10 * time.Second,
				MaxBodyBytes:          maxBodyBytes,
				MaxConcurrentRequests: 8,
				Policy:                retry.DefaultPolicy(),
				AdaptiveSendRate:      adaptive,
			})
			evs := events(1)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					up.Deliver(context.Background(), evs, func(int, int, error) {})
				}
			})
		})
	}
}
