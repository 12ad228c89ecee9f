package analytics

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heapInUse returns the bytes of live heap objects. Two collections first:
// the first moves what sync.Pools hold (from earlier tests too) to their
// victim caches, the second frees it, so that a later measure does not
// find the heap shrunk by pools emptying.
func heapInUse() uint64 {
	runtime.GC()
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
		grown := int64(after) - int64(before) // signed: the heap may have shrunk
		// The second 100,000 offers, all refused, cost nothing that stays.
		assert.LessOrEqual(t, after, half+1<<20, "heap after the second 100,000 offers, all refused: at most 1 MiB over the heap before them (%d)", half)
		st := e.client.Stats()
		// Queued bytes are bounded by MaxQueueBytes; in flight, at most
		// MaxConcurrentRequests batches of at most MaxBatchBytes.
		assert.LessOrEqual(t, grown, int64(maxQueueBytes+8*MaxBatchBytes+4<<20), "heap growth")
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

// track20 is the shape of the hardening issue: a Track with 20 properties,
// half of them strings built per event.
func track20(i int) Message {
	id := strconv.Itoa(i)
	return Track{UserId: "user-" + id, Event: "Order Completed", Properties: Properties{
		"order_id": "order-" + id, "checkout_id": "co-" + id, "affiliation": "store-" + id,
		"coupon": "WINTER-" + id, "currency": "USD", "category": "books", "plan": "pro",
		"sku": "sku-" + id, "name": "Item " + id, "variant": "blue",
		"total": 27.5 + float64(i), "revenue": 25.0 + float64(i), "shipping": 3.0, "tax": 2.0,
		"discount": 2.5, "quantity": 1000 + i, "position": 3000 + i, "items": 2000 + i,
		"gift": i%2 == 0, "first_order": false}}
}

// With a callback the client keeps every message until its outcome; what
// that costs counts against MaxQueueBytes, so that on a stalled API the
// heap grows by about MaxQueueBytes, not by a multiple of it.
func TestCallbackMessagesCountAgainstMaxQueueBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxQueueBytes = 4 << 20
		api := analyticstest.New().Default(analyticstest.Answer{Delay: 24 * time.Hour})
		// One small request in flight, not compressed: the heap holds the
		// events and little else.
		e := newEnv(t, api, WithMaxQueueSize(1_000_000), WithMaxQueueBytes(maxQueueBytes),
			WithRequestTimeout(48*time.Hour), WithFlushAt(50), WithMaxConcurrentRequests(1), WithGzip(false))
		before := heapInUse()
		accepted := 0
		for ; accepted < 1_000_000; accepted++ {
			err := e.client.Enqueue(track20(accepted))
			if errors.Is(err, ErrQueueFull) {
				break
			}
			require.NoError(t, err, "Enqueue %d", accepted)
		}
		synctest.Wait() // the uploads have taken their batches and stall
		grown := int64(heapInUse()) - int64(before)
		st := e.client.Stats()
		t.Logf("accepted %d events of the 20-property shape; heap grew %.2f MiB for a MaxQueueBytes of %.0f MiB",
			accepted, float64(grown)/(1<<20), float64(maxQueueBytes)/(1<<20))
		assert.LessOrEqual(t, grown, int64(maxQueueBytes*3/2), "heap growth holding %d events: at most 1.5 × MaxQueueBytes", accepted)
		assert.Equal(t, int64(accepted), int64(st.QueueDepth)+st.InFlight, "events queued or in flight: those accepted")
		assert.Equal(t, int64(accepted), st.Enqueued, "events enqueued")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.ErrorIs(t, e.client.Shutdown(ctx), context.DeadlineExceeded, "Shutdown")
		_, failed := e.out.Calls()
		assert.Equal(t, accepted, failed, "Failure callbacks: one for each accepted event")
		st = e.client.Stats()
		assert.Equal(t, int64(accepted), st.Failed.Shutdown, "events failed by Shutdown")
		assert.Zero(t, st.QueueDepth, "events queued after Shutdown")
		assert.Zero(t, st.InFlight, "events in flight after Shutdown")
	})
}

// The budget a kept message takes is given back exactly when its event
// ends: after a full queue has been delivered, the same events fill it
// again to the same count.
func TestKeptBytesAreGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every upload waits a minute, so nothing is given back while a
		// round fills the queue.
		api := newAPI().Default(analyticstest.Answer{Delay: time.Minute})
		e := newEnv(t, api, WithMaxQueueBytes(256<<10), WithFlushAt(20), WithRequestTimeout(time.Hour),
			WithCloseTimeout(0))
		ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		fill := func(round int) int {
			n := 0
			for ; n < 10_000; n++ {
				msg := track20(100_000 + n%900_000).(Track)
				msg.MessageId, msg.Timestamp = fmt.Sprintf("r%d-%06d", round, n), ts
				err := e.client.Enqueue(msg)
				if errors.Is(err, ErrQueueFull) {
					return n
				}
				require.NoError(t, err, "Enqueue")
			}
			require.Fail(t, "the queue never filled")
			return n
		}
		first := fill(1)
		e.flush()
		st := e.client.Stats()
		assert.Zero(t, st.QueueDepth, "events queued after the first round")
		assert.Zero(t, st.InFlight, "events in flight after the first round")
		assert.Equal(t, int64(first), st.Delivered, "events delivered after the first round")
		assert.Equal(t, first, fill(2), "events the second round fills the queue with: as many as the first")
		e.close()
		st = e.client.Stats()
		ok, failed := e.out.Calls()
		assert.Equal(t, int64(2*first), st.Delivered, "events delivered")
		assert.Equal(t, 2*first, ok, "Success callbacks")
		assert.Zero(t, failed, "Failure callbacks")
	})
}

// At the defaults, a burst of MaxQueueSize events of the shapes users send
// (a Context, 5 to 10 properties) is taken whole while the API has not
// answered yet: MaxQueueBytes is not the first bound it meets, with a
// callback (the client keeps every message) or without one.
func TestDefaultsTakeABurstOfMaxQueueSize(t *testing.T) {
	shapes := map[string]func(int) Message{}
	for _, s := range keepShapes {
		shapes[s.name] = s.make
	}
	for _, name := range userShapes {
		for _, callback := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/callback", false: "/no-callback"}[callback], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { burstAtDefaults(t, shapes[name], callback) })
			})
		}
	}
}

func burstAtDefaults(t *testing.T, shape func(int) Message, callback bool) {
	api := analyticstest.New().Default(analyticstest.Answer{Delay: 24 * time.Hour})
	var opts []Option
	if !callback {
		opts = append(opts, WithCallback(nil))
	}
	e := newEnv(t, api, opts...) // the SDK's defaults, on an API that does not answer
	maxQueueSize := defaultConfig().maxQueueSize
	refused := 0
	for i := range maxQueueSize {
		if err := e.client.Enqueue(shape(i)); err != nil {
			require.ErrorIs(t, err, ErrQueueFull, "Enqueue %d", i)
			refused++
		}
	}
	st := e.client.Stats()
	assert.Zero(t, refused, "events of the burst refused (%d bytes held, MaxQueueBytes %d)", st.QueueHeldBytes, defaultConfig().maxQueueBytes)
	assert.Equal(t, int64(maxQueueSize), int64(st.QueueDepth)+st.InFlight, "events held: the whole burst")
	assert.ErrorIs(t, e.client.Enqueue(shape(maxQueueSize)), ErrQueueFull, "one more event, past MaxQueueSize")
	t.Logf("%d events held, counted %d bytes (%d per event) against MaxQueueBytes %d",
		maxQueueSize, st.QueueHeldBytes, st.QueueHeldBytes/maxQueueSize, defaultConfig().maxQueueBytes)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	assert.ErrorIs(t, e.client.Shutdown(ctx), context.DeadlineExceeded, "Shutdown of a client whose API never answered")
}
