package analytics

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/spool"
)

// BenchmarkEnqueueSpool is BenchmarkEnqueue with the spool (WithSpool, its
// default WithSpoolSync of 1 s): Enqueue also writes the event to the
// spool's file, to the operating system, before it returns. The drain
// outside the timer marks the drained events done in the spool, as the end
// of their uploads would, so that the spool's files stay small.
func BenchmarkEnqueueSpool(b *testing.B) {
	c, err := New("wk", WithEndpoint("http://bench.test"), WithHTTPClient(&http.Client{Transport: discard{}}),
		WithMaxQueueSize(quietQueue), WithFlushAt(MaxBatchEvents), WithFlushInterval(time.Hour),
		WithSpool(b.TempDir()))
	require.NoError(b, err, "New")
	defer c.Close()
	msg := benchTrack()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// As in BenchmarkEnqueue: drained well before FlushAt.
		if i%quietDrain == 0 {
			b.StopTimer()
			drainSpool(b, c)
			b.StartTimer()
		}
		if err := c.Enqueue(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// drainSpool empties the queue of a quiet client with a spool and marks
// the drained events done in it.
func drainSpool(b *testing.B, c *Client) {
	in := c.in.(*spoolIntake)
	batch := c.q.Drain()
	size := 0
	ids := make([]spool.ID, 0, len(batch.Items))
	for _, it := range batch.Items {
		size += it.Size()
		ids = append(ids, it.Value.Spool)
	}
	c.q.Release(len(batch.Items), size)
	if err := in.sp.Ack(ids); err != nil {
		b.Fatal(err)
	}
}
