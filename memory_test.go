package analytics

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A tracking API that never answers: the queue fills to MaxQueueBytes and
// stays there; Enqueue goes on returning at once; memory does not grow
// with the number of events offered; Shutdown returns when its context
// ends and reports every accepted event as failed.
func TestStalledAPIKeepsMemoryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxQueueBytes = 4 << 20
		api := analyticstest.New().Default(analyticstest.Answer{Delay: 24 * time.Hour})
		e := newEnv(t, api, WithMaxQueueSize(1_000_000), WithMaxQueueBytes(maxQueueBytes),
			WithRequestTimeout(48*time.Hour), WithCallback(nil))
		before := heapInUse()
		start := time.Now()
		accepted, full := 0, 0
		var half uint64
		msg := Track{UserId: "user-12345", Event: "Order Completed", Properties: Properties{
			"plan": "pro", "currency": "USD", "coupon": "WINTER", "sku": "sku-42", "category": "books"}}
		for i := range 200_000 {
			err := e.client.Enqueue(msg)
			switch {
			case err == nil:
				accepted++
			case errors.Is(err, ErrQueueFull):
				full++
			default:
				require.NoError(t, err, "Enqueue %d", i)
			}
			switch i {
			case 50_000:
				synctest.Wait() // let the stalled uploads take their batches
			case 100_000:
				half = heapInUse()
			}
		}
		assert.Zero(t, time.Since(start), "time Enqueue waited on a stalled API")
		after := heapInUse()
		grown := after - before
		// The second 100,000 offers, all refused, cost nothing that stays.
		assert.LessOrEqual(t, after, half+1<<20, "heap after the second 100,000 offers, all refused: at most 1 MiB over the heap before them (%d)", half)
		st := e.client.Stats()
		// Queued bytes are bounded by MaxQueueBytes; in flight, at most
		// MaxConcurrentRequests batches of at most MaxBatchBytes.
		assert.LessOrEqual(t, grown, uint64(maxQueueBytes+8*MaxBatchBytes+4<<20), "heap growth")
		assert.LessOrEqual(t, st.QueueBytes, maxQueueBytes, "bytes queued")
		assert.NotZero(t, full, "offers refused")
		assert.Equal(t, 200_000, accepted+full, "offers accepted or refused")
		assert.Equal(t, int64(accepted), int64(st.QueueDepth)+st.InFlight, "events queued or in flight: those accepted")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start = time.Now()
		assert.ErrorIs(t, e.client.Shutdown(ctx), context.DeadlineExceeded, "Shutdown")
		assert.Equal(t, 2*time.Second, time.Since(start), "Shutdown returned when its context ended")
		end := e.client.Stats()
		assert.Equal(t, int64(accepted), end.Failed.Shutdown, "events failed by Shutdown: every accepted one")
		assert.Zero(t, end.Delivered, "events delivered")
		t.Logf("accepted %d, refused %d, heap grew %.1f MiB (queue %d bytes)", accepted, full, float64(grown)/(1<<20), st.QueueBytes)
	})
}
