package analytics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

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
		_, failed := e.out.counts()
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
		ok, failed := e.out.counts()
		assert.Equal(t, int64(2*first), st.Delivered, "events delivered")
		assert.Equal(t, 2*first, ok, "Success callbacks")
		assert.Zero(t, failed, "Failure callbacks")
	})
}
