package analytics

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/dualpath/analytics-go/analyticstest"
)

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
		failures := e.out.failed()
		assert.Len(t, failures, len(msgs), "failures")
		for _, f := range failures {
			if !assert.ErrorIs(t, f.err, ErrRateLimitBudgetExceeded, "failure of %s", MessageID(f.msg)) {
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
