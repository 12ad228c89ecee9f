package analytics

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// Config.RetryAfter is called before each counted retry with how many
// retries came before, as v3 called it, and its wait is the one used; an
// answer with a valid Retry-After waits what the server asked, without a
// call.
func TestRetryAfterSetsTheWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := analyticstest.New().Script(
			analyticstest.Status(503),
			analyticstest.Status(500),
			analyticstest.RetryAfter(429, "7"),
			analyticstest.Status(502),
			analyticstest.Status(200),
		)
		var mu sync.Mutex
		var calls []int
		c, _, out := newTestClient(t, api, Config{BatchSize: 1, RetryAfter: func(i int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, i)
			return time.Duration(i+1) * time.Second
		}})
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		// Close stops retries, as v3's did: let them run first (the
		// bubble's clock, so the minute passes at once).
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NoError(t, c.Close())
		reqs := api.Requests()
		require.Len(t, reqs, 5)
		var gaps []time.Duration
		for i := 1; i < len(reqs); i++ {
			gaps = append(gaps, reqs[i].At.Sub(reqs[i-1].At))
		}
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []int{0, 1, 2}, calls, "RetryAfter(i) before each counted retry, i retries before it")
		assert.Equal(t, []time.Duration{1 * time.Second, 2 * time.Second, 7 * time.Second, 3 * time.Second}, gaps,
			"the waits: RetryAfter's, and the server's Retry-After")
		ok, _ := out.counts()
		assert.Equal(t, 1, ok)
	})
}

// A batch that keeps failing is retried 10 times, RetryAfter(0) to
// RetryAfter(9), the arguments v3 called it with.
func TestRetryAfterArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := analyticstest.New().Default(analyticstest.Status(503))
		var mu sync.Mutex
		var calls []int
		c, _, out := newTestClient(t, api, Config{BatchSize: 1, RetryAfter: func(i int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, i)
			return time.Millisecond
		}})
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		// Close stops retries, as v3's did: let them run first (the
		// bubble's clock, so the minute passes at once).
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NoError(t, c.Close())
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, calls)
		_, failed := out.counts()
		assert.Equal(t, 1, failed)
	})
}
