package analytics

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/e2e/mockapi"
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
		api := mockapi.New().Default(mockapi.Answer{Delay: 24 * time.Hour})
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
				t.Fatalf("Enqueue %d: %v", i, err)
			}
			switch i {
			case 50_000:
				synctest.Wait() // let the stalled uploads take their batches
			case 100_000:
				half = heapInUse()
			}
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("Enqueue waited %v on a stalled API", took)
		}
		after := heapInUse()
		grown := after - before
		// The second 100,000 offers, all refused, cost nothing that stays.
		if after > half+1<<20 {
			t.Fatalf("heap grew by %d bytes while every Enqueue was refused", after-half)
		}
		st := e.client.Stats()
		// Queued bytes are bounded by MaxQueueBytes; in flight, at most
		// MaxConcurrentRequests batches of at most MaxBatchBytes.
		limit := uint64(maxQueueBytes + 8*MaxBatchBytes + 4<<20)
		if grown > limit || st.QueueBytes > maxQueueBytes {
			t.Fatalf("heap grew by %d bytes (limit %d); queue holds %d bytes", grown, limit, st.QueueBytes)
		}
		if full == 0 || accepted+full != 200_000 || int64(accepted) != int64(st.QueueDepth)+st.InFlight {
			t.Fatalf("accepted %d, refused %d; stats %+v", accepted, full, st)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start = time.Now()
		if err := e.client.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v", err)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Fatalf("Shutdown returned after %v, want when its context ended (2s)", took)
		}
		if st := e.client.Stats(); st.Failed.Shutdown != int64(accepted) || st.Delivered != 0 {
			t.Fatalf("after Shutdown: %+v; want all %d accepted events failed", st, accepted)
		}
		t.Logf("accepted %d, refused %d, heap grew %.1f MiB (queue %d bytes)", accepted, full, float64(grown)/(1<<20), st.QueueBytes)
	})
}
