package analytics

// A Callback may call Enqueue, whatever the load: the client keeps
// delivering.

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	root "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

// TestCallbackThatEnqueuesKeepsDelivering runs a v3 program whose Success
// enqueues a follow-up event for each event delivered, while producers
// keep the queue full. Every callback waits in Enqueue for room; the
// uploads go on, so room comes, and every event and follow-up is
// delivered. The queue (200 events) holds more than the batches in
// flight can (4 × MaxConcurrentRequests(1) batches of 10: 40 events), so
// that callbacks blocking in Enqueue would stop the uploads, as they do
// without the root's WithBlockingCallbacks, rather than be held back by
// the queue's room first. It runs in fake time: a client that stopped delivering would
// leave the count short when the hour of fake time is up.
func TestCallbackThatEnqueuesKeepsDelivering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const producers, each = 4, 500
		var c Client
		var delivered, followUps atomic.Int64
		var enqueueErr atomic.Value
		cb := callbackFuncs{success: func(m Message) {
			delivered.Add(1)
			if m.(Track).Event != "original" {
				return
			}
			if err := c.Enqueue(Track{UserId: "u", Event: "follow-up"}); err != nil {
				enqueueErr.Store(err)
				return
			}
			followUps.Add(1)
		}}
		api := analyticstest.New()
		var err error
		c, err = NewWithConfig(testWriteKey, Config{
			Transport: api, Logger: &lines{}, Callback: cb, BatchSize: 10,
			options: []root.Option{root.WithMaxQueueSize(200), root.WithMaxConcurrentRequests(1)},
		})
		require.NoError(t, err)

		var wg sync.WaitGroup
		for range producers {
			wg.Go(func() {
				for range each {
					if err := c.Enqueue(Track{UserId: "u", Event: "original"}); err != nil {
						enqueueErr.Store(err)
						return
					}
				}
			})
		}
		const want = 2 * producers * each
		var progress []int64 // deliveries counted every 10 s of fake time
		for deadline := time.Now().Add(time.Hour); delivered.Load() < want && time.Now().Before(deadline); {
			time.Sleep(10 * time.Second)
			progress = append(progress, delivered.Load())
		}
		assert.Equal(t, int64(want), delivered.Load(), "deliveries, counted every 10 s: %v", progress)
		assert.Nil(t, enqueueErr.Load(), "an Enqueue failed")
		assert.Equal(t, int64(producers*each), followUps.Load(), "follow-ups enqueued by the callback")
		require.NoError(t, c.Close())
		wg.Wait()
	})
}

// TestCloseFromACallback: Close called from a Callback begins the close
// and returns at once instead of waiting for itself; the client then ends
// (goleak checks that none of its goroutines is left), and a later Close
// waits for that end and returns ErrClosed.
func TestCloseFromACallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Client
		closed := make(chan error, 1)
		after := make(chan error, 1)
		cb := callbackFuncs{success: func(Message) {
			closed <- c.Close()
			after <- c.Enqueue(Track{UserId: "u", Event: "E"})
		}}
		var err error
		c, err = NewWithConfig(testWriteKey, Config{Transport: analyticstest.New(), Logger: &lines{}, Callback: cb, BatchSize: 1})
		require.NoError(t, err)
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		assert.NoError(t, <-closed, "Close in the callback")
		assert.Equal(t, ErrClosed, <-after, "Enqueue after it")
		assert.Equal(t, ErrClosed, c.Close(), "a later Close")
	})
}
