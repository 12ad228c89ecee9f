package analytics

import (
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
)

// blockingCallback blocks every Success until release is closed.
type blockingCallback struct {
	release chan struct{}
	called  atomic.Int64
}

func (b *blockingCallback) Success(Message)        { b.called.Add(1); <-b.release }
func (b *blockingCallback) Failure(Message, error) {}

// TestBlockingCallbacksDoNotStopUploads: with WithBlockingCallbacks, the
// batches go on being cut and sent while every callback is blocked; by
// default they stop once the batches in flight (4 × MaxConcurrentRequests)
// are all held by their callbacks.
func TestBlockingCallbacksDoNotStopUploads(t *testing.T) {
	for _, tt := range []struct {
		name     string
		on       bool
		requests int
	}{
		{"off: the batches in flight are held", false, 4},
		{"on: every batch is sent", true, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := newAPI()
				cb := &blockingCallback{release: make(chan struct{})}
				e := newEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(1),
					WithCallback(cb), WithBlockingCallbacks(tt.on))
				e.enqueue(tracks("m", 10)...)
				synctest.Wait()
				assert.Len(t, api.Requests(), tt.requests, "requests sent while the callbacks block")
				assert.EqualValues(t, tt.requests, cb.called.Load(), "callbacks blocked")
				close(cb.release)
				e.close()
				assert.Len(t, api.Requests(), 10, "requests once released")
				assert.EqualValues(t, 10, cb.called.Load(), "callbacks")
			})
		})
	}
}
