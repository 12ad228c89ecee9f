package analytics

// WithCloseRetries(false): a close makes one last attempt of everything
// and stops every retry (docs/SPEC.md §8).

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// TestCloseWithoutRetriesFailsWaitingBatchesAtOnce: batches waiting
// through a backoff when Close begins fail at once with their last error,
// with no further attempt; one the send rate held back makes its first
// attempt at once; and Close returns without waiting.
func TestCloseWithoutRetriesFailsWaitingBatchesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(always(analyticstest.Status(503)))
		e := newEnv(t, api, WithFlushAt(1), WithCloseRetries(false))
		e.enqueue(tracks("m", 3)...)
		synctest.Wait() // they failed and wait to retry, or the send rate holds one back
		require.NotEmpty(t, api.Requests(), "first attempts before Close")

		start := time.Now()
		e.close()
		assert.Zero(t, time.Since(start), "Close waited for a backoff")
		assert.Len(t, api.Requests(), 3, "requests: one attempt a batch, no retry")
		failed := e.out.failed()
		require.Len(t, failed, 3, "failures")
		for _, f := range failed {
			assert.ErrorIs(t, f.err, ErrRetriesStopped, "%v", f)
			var be *BatchError
			require.ErrorAs(t, f.err, &be, "%v", f)
			assert.Equal(t, 1, be.Attempts, "attempts")
			var he *HTTPError
			require.ErrorAs(t, f.err, &he, "the last attempt's error: %v", f)
			assert.Equal(t, 503, he.StatusCode)
		}
	})
}

// TestCloseWithoutRetriesSendsQueuedEventsOnce: events still queued when
// Close begins get one attempt, and a failed one is not retried.
func TestCloseWithoutRetriesSendsQueuedEventsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(always(analyticstest.Status(500)))
		e := newEnv(t, api, WithFlushAt(100), WithFlushInterval(time.Hour), WithCloseRetries(false))
		e.enqueue(tracks("q", 2)...)
		e.close()
		assert.Len(t, api.Requests(), 1, "requests: one batch, one attempt")
		failed := e.out.failed()
		require.Len(t, failed, 2, "failures")
		for _, f := range failed {
			assert.ErrorIs(t, f.err, ErrRetriesStopped, "%v", f)
		}
	})
}

// TestCloseWithoutRetriesIgnoresTheRateLimitPause: a Retry-After pause
// does not hold back the last attempt of a queued batch, and the batch
// that was paused fails at once.
func TestCloseWithoutRetriesIgnoresTheRateLimitPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.RetryAfter(429, "300")).Default(analyticstest.Status(200))
		e := newEnv(t, api, WithFlushAt(1), WithFlushInterval(time.Hour), WithCloseRetries(false))
		e.enqueue(tracks("a", 1)...)
		synctest.Wait() // answered 429: the client pauses for 300 s
		require.NoError(t, e.client.Enqueue(Track{MessageId: "b", UserId: "u", Event: "E"}))
		synctest.Wait()
		require.Len(t, api.Requests(), 1, "the second batch waits for the pause")

		start := time.Now()
		e.close()
		assert.Zero(t, time.Since(start), "Close waited for the pause")
		successes, failures := e.out.ids()
		assert.Equal(t, map[string]int{"b": 1}, successes, "delivered: the queued batch's last attempt")
		assert.Equal(t, map[string]int{"a0": 1}, failures, "failed: the paused batch")
		for _, f := range e.out.failed() {
			assert.ErrorIs(t, f.err, ErrRetriesStopped, "%v", f)
		}
	})
}

// TestCloseRetriesByDefault: without the option, Close lets a failing
// batch retry (the contrast that shows the option is what stops them).
func TestCloseRetriesByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(always(analyticstest.Status(503)))
		e := newEnv(t, api, WithFlushAt(1), WithRetryCount(2), withExactBackoff())
		e.enqueue(tracks("m", 1)...)
		e.close()
		assert.Len(t, api.Requests(), 3, "requests: the first attempt and two retries")
		failed := e.out.failed()
		require.Len(t, failed, 1)
		assert.True(t, errors.Is(failed[0].err, ErrRetriesExhausted), "%v", failed[0])
	})
}
