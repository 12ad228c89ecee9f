package analytics

// The dual-path retry seen from the client: options reach the loop, and
// outcomes reach callbacks and stats. The decision table itself is tested
// in package retry, the loop in package consumer.

import (
	"fmt"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func always(a analyticstest.Answer) func(analyticstest.Request) analyticstest.Answer {
	return func(analyticstest.Request) analyticstest.Answer { return a }
}

func TestRetryOptionsReachTheLoop(t *testing.T) {
	tests := []struct {
		name     string
		opts     []Option
		answer   analyticstest.Answer
		requests int
		reason   error
	}{
		{"RetryCount 3 gives 4 requests", []Option{WithRetryCount(3)}, analyticstest.Status(503), 4, ErrRetriesExhausted},
		{"RetryCount 0 gives 1 request", []Option{WithRetryCount(0)}, analyticstest.Status(500), 1, ErrRetriesExhausted},
		{"408 is retried", []Option{WithRetryCount(1)}, analyticstest.Status(408), 2, ErrRetriesExhausted},
		{"410 is retried", []Option{WithRetryCount(1)}, analyticstest.Status(410), 2, ErrRetriesExhausted},
		{"460 is retried", []Option{WithRetryCount(1)}, analyticstest.Status(460), 2, ErrRetriesExhausted},
		{"429 without Retry-After is counted", []Option{WithRetryCount(2)}, analyticstest.Status(429), 3, ErrRetriesExhausted},
		{"501 is fatal", nil, analyticstest.Status(501), 1, ErrFatalStatus},
		{"505 is fatal", nil, analyticstest.Status(505), 1, ErrFatalStatus},
		{"511 is fatal", nil, analyticstest.Status(511), 1, ErrFatalStatus},
		{"400 is fatal", nil, analyticstest.RetryAfter(400, "1"), 1, ErrFatalStatus},
		{"backoff budget", []Option{WithMaxTotalBackoffDuration(time.Second)}, analyticstest.Status(503), 3, ErrBackoffBudgetExceeded},
		{"rate-limit budget", []Option{WithMaxRateLimitDuration(10 * time.Second)}, analyticstest.RetryAfter(429, "3"), 4, ErrRateLimitBudgetExceeded},
		{"Retry-After cap", []Option{WithRateLimitRetryAfterCap(time.Second), WithMaxRateLimitDuration(2 * time.Second)}, analyticstest.RetryAfter(503, "3600"), 3, ErrRateLimitBudgetExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := newAPI().Rule(always(tt.answer))
				e := newEnv(t, api, append([]Option{withExactBackoff()}, tt.opts...)...)
				e.enqueue(tracks("m", 2)...)
				e.close()
				reqs := api.Requests()
				assert.Len(t, reqs, tt.requests, "requests")
				for i, r := range reqs {
					want := ""
					if i > 0 {
						want = strconv.Itoa(i)
					}
					assert.Equal(t, want, r.Header.Get("X-Retry-Count"), "request %d: X-Retry-Count", i+1)
				}
				f := e.out.Failures()
				require.Len(t, f, 2, "failures")
				err := f[0].Err
				assert.ErrorIs(t, err, tt.reason, "failure")
				var be *BatchError
				if assert.ErrorAs(t, err, &be, "failure") {
					assert.Equal(t, tt.requests, be.Attempts, "attempts of the failed batch")
				}
				var he *HTTPError
				if assert.ErrorAs(t, err, &he, "failure: the last attempt's answer") {
					assert.Equal(t, tt.answer.Status, he.StatusCode, "status of the last attempt")
				}
				assert.ErrorContains(t, err, fmt.Sprintf("after %d attempt", tt.requests), "failure")
			})
		})
	}
}

func TestTooLargeSplitsThroughTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(func(r analyticstest.Request) analyticstest.Answer {
			if len(r.Events) > 30 {
				return analyticstest.Status(413)
			}
			return analyticstest.Status(200)
		})
		e := newEnv(t, api, WithFlushAt(250))
		msgs := tracks("m", 250)
		e.enqueue(msgs...)
		e.close()
		e.assertDeliveredOnce(msgs)
		st := e.client.Stats()
		assert.NotZero(t, st.Splits, "splits")
		assert.Equal(t, int64(1), st.Batches, "batches cut")
		assert.GreaterOrEqual(t, st.BatchesDelivered, int64(8), "batches delivered: halves of at most 30 events")
	})
}

func TestStatsAddUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(
			analyticstest.Status(503),          // batch a: backoff retry
			analyticstest.RetryAfter(429, "2"), // batch a: rate-limit retry
			analyticstest.Answer{Drop: true},   // batch a: transport error after the write
			analyticstest.Status(200),          // batch a delivered
			analyticstest.Status(400),          // batch b fails
		)
		e := newEnv(t, api, WithFlushAt(5), WithMaxConcurrentRequests(1), WithGzip(false))
		e.enqueue(tracks("a", 5)...)
		synctest.Wait()
		e.flush()
		e.enqueue(tracks("b", 5)...)
		e.client.Enqueue(Track{})                                                                     // invalid
		e.client.Enqueue(Track{UserId: "u", Event: "E", Properties: Properties{"x": make(chan int)}}) // invalid
		e.close()
		e.client.Enqueue(Track{UserId: "u", Event: "E"}) // closed
		st := e.client.Stats()
		var bytes int64
		for _, r := range api.Requests() {
			if r.Status != 0 || r.Err == nil {
				bytes += int64(len(r.Body))
			}
		}
		want := Stats{
			Enqueued:  10,
			Rejected:  RejectedStats{Invalid: 2, Closed: 1},
			Delivered: 5,
			Failed:    FailedStats{FatalStatus: 5},
			Batches:   2,
			UploadStats: UploadStats{
				BatchesDelivered: 1,
				BatchesFailed:    1,
				Attempts:         5,
				Retries:          RetryStats{Backoff: 2, RateLimit: 1},
				RateLimitedWaits: 1,
				BytesSent:        st.BytesSent,
				TransportErrors:  TransportErrorStats{Written: 1},
			},
			// The first attempt failed, so no healthy rate was measured:
			// after the recovery no ceiling limits (Limit 0), and b's 400
			// says nothing about the load.
			SendRate:      SendRateStats{},
			QueueMaxSize:  10_000,
			QueueMaxBytes: 64 << 20,
			Latency:       st.Latency, // the backoff waits are jittered
		}
		assert.Equal(t, want, st, "stats")
		assert.Equal(t, int64(5), st.Latency.Delivered.Count, "latencies of a's deliveries")
		assert.Equal(t, Histogram{Bounds: latencyBounds[:], Counts: append([]int64{5}, make([]int64, len(latencyBounds))...), Count: 5},
			st.Latency.Failed, "latencies of b's failures: the 400 came at once (the fake clock)")
		assert.Equal(t, bytes, st.BytesSent, "bytes sent: those the server read")
	})
}

// WithBackoffFunc sets the wait of each counted retry, called with the
// retry's number; a valid Retry-After still takes the rate-limit path,
// without a call.
func TestBackoffFuncSetsTheCountedWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(
			analyticstest.Status(503),
			analyticstest.Status(500),
			analyticstest.RetryAfter(429, "7"),
			analyticstest.Answer{Drop: true},
			analyticstest.Status(200),
		)
		var calls []int
		wait := func(n int) time.Duration {
			calls = append(calls, n) // one batch: one goroutine calls it
			return time.Duration(n) * time.Second
		}
		e := newEnv(t, api, WithBackoffFunc(wait), WithAdaptiveSendRate(false))
		e.enqueue(tracks("m", 1)...)
		e.close()
		reqs := api.Requests()
		require.Len(t, reqs, 5)
		var gaps []time.Duration
		for i := 1; i < len(reqs); i++ {
			gaps = append(gaps, reqs[i].At.Sub(reqs[i-1].At))
		}
		assert.Equal(t, []int{1, 2, 3}, calls, "called for each counted retry, with its number")
		assert.Equal(t, []time.Duration{1 * time.Second, 2 * time.Second, 7 * time.Second, 3 * time.Second}, gaps,
			"the waits used: wait(n) on the backoff path, Retry-After on the rate-limit path")
		ok, _ := e.out.Calls()
		assert.Equal(t, 1, ok)
	})
}

// Under sustained 429s the batches take turns being answered, and each
// used to spend its MaxRateLimitDuration only on its own answers, so the
// last of 51 batches waited about 17 budgets. The budget now covers the
// whole rate-limit episode: no event waits on the pause past it.
func TestSustainedRateLimitEndsWithinTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(func(analyticstest.Request) analyticstest.Answer { return analyticstest.RetryAfter(429, "1") })
		const budget = 2 * time.Second
		e := newEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(2), WithMaxRateLimitDuration(budget))
		msgs := tracks("m", 51)
		start := time.Now()
		e.enqueue(msgs...)
		e.close()
		// The episode starts with the first 429; the last wait that fits
		// ends at the budget, and the answers then may ask for one more
		// Retry-After (1s) before the batches still waiting fail.
		assert.LessOrEqual(t, time.Since(start), budget+time.Second, "time Close took under sustained 429s: the budget plus one Retry-After")
		failures := e.out.Failures()
		assert.Len(t, failures, len(msgs), "failures")
		for _, f := range failures {
			if !assert.ErrorIs(t, f.Err, ErrRateLimitBudgetExceeded, "failure of %s", MessageID(f.Message)) {
				break
			}
		}
	})
}

// Once the API answers without Retry-After, the episode is over: a later
// 429 starts a budget of its own.
func TestRateLimitEpisodeEndsWithAnAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(
			analyticstest.RetryAfter(429, "2"), analyticstest.Status(200),
			analyticstest.RetryAfter(429, "2"), analyticstest.Status(200),
		)
		const budget = 3 * time.Second
		e := newEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(1), WithMaxRateLimitDuration(budget))
		first := tracks("a", 1)
		e.enqueue(first...)
		e.flush()
		time.Sleep(time.Second)
		second := tracks("b", 1)
		e.enqueue(second...)
		e.close()
		e.assertDeliveredOnce(append(first, second...))
	})
}
