package analytics

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// Stats.Latency counts each event's time from Enqueue to its outcome, in
// the bucket of its bound, delivered and failed apart. On the fake clock
// of the bubble the times are exact: an answer 30 ms late for two events,
// a 400 two seconds late for a third one, enqueued later.
func TestLatencyFromEnqueueToOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(
			analyticstest.Answer{Delay: 30 * time.Millisecond},
			analyticstest.Answer{Status: 400, Delay: 2 * time.Second},
		)
		e := newEnv(t, api, WithFlushAt(2))
		e.enqueue(tracks("a-", 2)...) // at FlushAt: sent at once
		time.Sleep(time.Second)       // the fake clock: the first batch has its answer
		require.Equal(t, int64(2), e.client.Stats().Delivered, "events delivered after 1 s")
		e.enqueue(tracks("b-", 1)...)
		e.flush() // sends it at once
		e.close()

		st := e.client.Stats()
		bucket := func(d time.Duration) int {
			i, found := slices.BinarySearch(st.Latency.Delivered.Bounds, d)
			require.True(t, found, "%v is a bound", d)
			return i
		}
		delivered := make([]int64, len(latencyBounds)+1)
		delivered[bucket(50*time.Millisecond)] = 2
		assert.Equal(t, Histogram{
			Bounds: latencyBounds[:], Counts: delivered, Count: 2, Sum: 60 * time.Millisecond,
		}, st.Latency.Delivered, "Latency.Delivered: two events 30 ms after Enqueue")
		failed := make([]int64, len(latencyBounds)+1)
		failed[bucket(2500*time.Millisecond)] = 1
		assert.Equal(t, Histogram{
			Bounds: latencyBounds[:], Counts: failed, Count: 1, Sum: 2 * time.Second,
		}, st.Latency.Failed, "Latency.Failed: one event, a 400 2 s after Enqueue")
	})
}

// The bounds are strictly ascending, so that each duration has one bucket.
func TestLatencyBoundsAscend(t *testing.T) {
	for i := 1; i < len(latencyBounds); i++ {
		assert.Less(t, latencyBounds[i-1], latencyBounds[i], "bound %d", i)
	}
}

// With WithSpool, an event read back from disk has no time of Enqueue
// (SPEC §8): one an earlier client left is delivered and counted in
// Delivered, but not in Latency; an event this client enqueued into the
// memory queue is in both.
func TestLatencyLeavesOutEventsReadBackFromTheSpool(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		first := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithSpool(dir))
		first.enqueue(tracks("old-", 3)...)
		cutShort(t, first.client)
		require.Equal(t, int64(3), first.client.Stats().Spool.Left, "events the first client left")

		second := newEnv(t, newAPI(), WithSpool(dir))
		second.flush()
		require.Equal(t, int64(3), second.client.Stats().Delivered, "the recovered events delivered")
		// Nothing waits on disk now: the new event goes straight into the
		// memory queue, stamped.
		second.enqueue(tracks("new-", 1)...)
		second.close()
		st := second.client.Stats()
		require.Equal(t, int64(3), st.Spool.Recovered, "Spool.Recovered")
		require.Equal(t, int64(4), st.Delivered, "Delivered: the three recovered and the new one")
		assert.Equal(t, int64(1), st.Latency.Delivered.Count, "Latency.Delivered.Count: the new event only")
		assert.Zero(t, st.Latency.Failed.Count, "Latency.Failed.Count")
	})
}
