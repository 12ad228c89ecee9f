package analytics

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// slowAPI answers every request 200 after delay, so that a batch holds its
// events' room for that long.
func slowAPI(delay time.Duration) *analyticstest.Server {
	return analyticstest.New().Default(analyticstest.Answer{Delay: delay})
}

// enqueueInBackground runs EnqueueContext on a goroutine of its own and
// returns where its error will arrive; it first lets the call reach its
// wait, so calls started one after another join the line in that order.
func enqueueInBackground(ctx context.Context, c *Client, msg Message) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- c.EnqueueContext(ctx, msg) }()
	synctest.Wait()
	return errc
}

// pending reports whether errc has nothing yet, once every goroutine of the
// bubble is blocked.
func pending(errc <-chan error) bool {
	synctest.Wait()
	return len(errc) == 0
}

// With the queue full, EnqueueContext waits until a batch ends and gives
// its events' room back, and not longer: no polling interval.
func TestEnqueueContextWaitsForABatchToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, slowAPI(3*time.Second), WithFlushAt(2), WithMaxQueueSize(2))
		defer e.close()
		e.enqueue(tracks("a", 2)...) // FlushAt: the batch goes out and holds the queue for 3 s
		synctest.Wait()
		require.ErrorIs(t, e.client.Enqueue(tracks("b", 1)[0]), ErrQueueFull, "Enqueue into a full queue")

		start := time.Now()
		err := e.client.EnqueueContext(context.Background(), tracks("c", 1)[0])
		require.NoError(t, err, "EnqueueContext")
		assert.Equal(t, 3*time.Second, time.Since(start), "EnqueueContext returned when the batch ended")
		st := e.client.Stats()
		assert.EqualValues(t, 3, st.Enqueued, "Stats().Enqueued")
		assert.EqualValues(t, 1, st.Rejected.QueueFull, "Stats().Rejected.QueueFull: the plain Enqueue only")
		e.flush()
		e.assertDeliveredOnce(append(tracks("a", 2), tracks("c", 1)...))
	})
}

// Several waiting calls get room in the order they arrived.
func TestEnqueueContextServesWaitersInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := slowAPI(time.Second)
		var mu sync.Mutex
		var order []string
		api.OnRequest(func(r analyticstest.Request) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, r.MessageIDs()...)
		})
		e := newEnv(t, api, WithFlushAt(1), WithMaxQueueSize(1), WithMaxConcurrentRequests(1))
		defer e.close()
		e.enqueue(tracks("first", 1)...)
		synctest.Wait()
		waiting := tracks("w", 5)
		var errs []<-chan error
		for _, m := range waiting {
			errs = append(errs, enqueueInBackground(context.Background(), e.client, m))
		}
		for i, errc := range errs {
			require.NoError(t, <-errc, "EnqueueContext of waiter %d", i)
		}
		e.flush()
		assert.Equal(t, []string{"first0", "w0", "w1", "w2", "w3", "w4"}, order,
			"the order events reached the API, one batch at a time")
		e.assertDeliveredOnce(append(tracks("first", 1), waiting...))
	})
}

// When ctx ends first, the error matches both ErrQueueFull and the
// context's error, the event is not queued, and the refusal is counted.
func TestEnqueueContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, slowAPI(time.Hour), WithFlushAt(1), WithMaxQueueSize(1), WithRequestTimeout(2*time.Hour))
		defer e.close()
		e.enqueue(tracks("a", 1)...)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		err := e.client.EnqueueContext(ctx, tracks("b", 1)[0])
		assert.Equal(t, 2*time.Second, time.Since(start), "EnqueueContext returned when its context ended")
		assert.ErrorIs(t, err, ErrQueueFull)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualError(t, err, "analytics: queue is full: context deadline exceeded")
		st := e.client.Stats()
		assert.EqualValues(t, 1, st.Rejected.QueueFull, "Stats().Rejected.QueueFull")
		assert.EqualValues(t, 1, st.Enqueued, "Stats().Enqueued")

		cancelled, cancel2 := context.WithCancel(context.Background())
		errc := enqueueInBackground(cancelled, e.client, tracks("c", 1)[0])
		cancel2()
		err = <-errc
		assert.ErrorIs(t, err, ErrQueueFull, "a cancelled EnqueueContext")
		assert.ErrorIs(t, err, context.Canceled, "a cancelled EnqueueContext")
		e.flush()
		e.assertDeliveredOnce(tracks("a", 1))
	})
}

// Close wakes every waiting call, which returns ErrClosed, without waiting
// for the uploads to end; calls after it return ErrClosed at once.
func TestEnqueueContextCloseWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, slowAPI(10*time.Second), WithFlushAt(1), WithMaxQueueSize(1))
		e.enqueue(tracks("a", 1)...)
		synctest.Wait()
		var errs []<-chan error
		for _, m := range tracks("w", 3) {
			errs = append(errs, enqueueInBackground(context.Background(), e.client, m))
		}
		for i, errc := range errs {
			require.True(t, pending(errc), "waiter %d returned before Close", i)
		}
		start := time.Now()
		closed := make(chan error, 1)
		go func() { closed <- e.client.Close() }()
		for i, errc := range errs {
			assert.ErrorIs(t, <-errc, ErrClosed, "waiter %d", i)
		}
		assert.Zero(t, time.Since(start), "waiters woken when Close began")
		require.NoError(t, <-closed, "Close")
		assert.ErrorIs(t, e.client.EnqueueContext(context.Background(), tracks("z", 1)[0]), ErrClosed,
			"EnqueueContext after Close")
		st := e.client.Stats()
		assert.EqualValues(t, 4, st.Rejected.Closed, "Stats().Rejected.Closed")
		e.assertDeliveredOnce(tracks("a", 1))
	})
}

// With room, EnqueueContext is Enqueue: it accepts at once, even with a
// context that has ended, and refuses what Enqueue refuses.
func TestEnqueueContextWithRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, e.client.EnqueueContext(ctx, tracks("a", 1)[0]), "EnqueueContext with room")
		err := e.client.EnqueueContext(context.Background(), Track{UserId: "u"})
		assert.ErrorIs(t, err, ErrInvalidMessage, "an invalid message")
		var fe *FieldError
		assert.True(t, errors.As(err, &fe), "a *FieldError")
		assert.ErrorIs(t, e.client.EnqueueContext(context.Background(), nil), ErrInvalidMessage, "nil")
		e.close()
		e.assertDeliveredOnce(tracks("a", 1))
	})
}
