package analytics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dualpath/analytics-go/analyticstest"
)

// Stats add up the moment Shutdown returns, even while Enqueue calls that
// won the race against it are still returning: shutdown waits until each
// event accepted is counted.
func TestStatsAddUpWhenShutdownReturns(t *testing.T) {
	for iter := range 60 {
		e := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithMaxQueueSize(10), WithFlushAt(5))
		var producers, started sync.WaitGroup
		started.Add(4)
		for p := range 4 {
			producers.Go(func() {
				started.Done()
				for i := 0; ; i++ {
					if errors.Is(e.client.Enqueue(Track{MessageId: fmt.Sprintf("%d-%d", p, i), UserId: "u", Event: "E"}), ErrClosed) {
						return
					}
				}
			})
		}
		started.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = e.client.Shutdown(ctx)
		st := e.client.Stats()
		producers.Wait()
		if !assert.Equal(t, st.Enqueued, st.Delivered+st.Failed.Total(), "iteration %d: Enqueued == Delivered + Failed when Shutdown returned", iter) {
			break
		}
		assert.Equal(t, st.Enqueued, e.client.Stats().Enqueued, "iteration %d: Enqueued once every call returned", iter)
	}
}
