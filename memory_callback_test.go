package analytics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/e2e/mockapi"
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
		api := mockapi.New().Default(mockapi.Answer{Delay: 24 * time.Hour})
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
			if err != nil {
				t.Fatalf("Enqueue %d: %v", accepted, err)
			}
		}
		synctest.Wait() // the uploads have taken their batches and stall
		grown := int64(heapInUse()) - int64(before)
		st := e.client.Stats()
		t.Logf("accepted %d events of the 20-property shape; heap grew %.2f MiB for a MaxQueueBytes of %.0f MiB",
			accepted, float64(grown)/(1<<20), float64(maxQueueBytes)/(1<<20))
		if limit := int64(maxQueueBytes * 3 / 2); grown > limit {
			t.Fatalf("heap grew by %d bytes holding %d events, over 1.5 × MaxQueueBytes (%d)", grown, accepted, limit)
		}
		if int64(accepted) != int64(st.QueueDepth)+st.InFlight || st.Enqueued != int64(accepted) {
			t.Fatalf("accepted %d; stats %+v", accepted, st)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := e.client.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v", err)
		}
		if _, failed := e.out.counts(); failed != accepted {
			t.Fatalf("%d failure callbacks, want one for each of the %d accepted events", failed, accepted)
		}
		if st := e.client.Stats(); st.Failed.Shutdown != int64(accepted) || st.QueueDepth != 0 || st.InFlight != 0 {
			t.Fatalf("after Shutdown: %+v", st)
		}
	})
}

// The budget a kept message takes is given back exactly when its event
// ends: after a full queue has been delivered, the same events fill it
// again to the same count.
func TestKeptBytesAreGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every upload waits a minute, so nothing is given back while a
		// round fills the queue.
		api := newAPI().Default(mockapi.Answer{Delay: time.Minute})
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
				if err != nil {
					t.Fatalf("Enqueue: %v", err)
				}
			}
			t.Fatal("the queue never filled")
			return n
		}
		first := fill(1)
		e.flush()
		if st := e.client.Stats(); st.QueueDepth != 0 || st.InFlight != 0 || st.Delivered != int64(first) {
			t.Fatalf("after the first round of %d: %+v", first, st)
		}
		if second := fill(2); second != first {
			t.Fatalf("the second round filled the queue with %d events, the first with %d", second, first)
		}
		e.close()
		st := e.client.Stats()
		if ok, failed := e.out.counts(); st.Delivered != int64(2*first) || ok != 2*first || failed != 0 {
			t.Fatalf("%d Success callbacks, %d Failure; stats %+v", ok, failed, st)
		}
	})
}
