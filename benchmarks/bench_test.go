package benchmarks

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/dualpath/analytics-go/benchmarks/sdk"
)

// discard is a tracking API that accepts every request at once, without a
// socket: the benchmarks measure the SDKs, not the loopback.
type discard struct{}

func (discard) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, ContentLength: 16,
		Body: io.NopCloser(strings.NewReader(`{"success":true}`)), Request: r,
	}, nil
}

// BenchmarkEnqueue measures one Enqueue (Track) call of each SDK with its
// defaults, the SDK making the message id. Allocations are the whole
// process's, so they include the SDK's background batching, encoding and
// upload of the events enqueued while the timer ran. When its queue is
// full each SDK waits for room: the peers' Enqueue blocks, ours is
// EnqueueContext, woken when an upload ends.
func BenchmarkEnqueue(b *testing.B) {
	users := make([]string, 1000)
	for i := range users {
		users[i] = "user-" + strconv.Itoa(i)
	}
	for _, name := range sdk.Names {
		b.Run(name, func(b *testing.B) {
			c, err := sdk.New(name, "http://bench.invalid", discard{}, sdk.Options{})
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Track("", users[i%len(users)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.StopTimer()
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
