package retry

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/jitter"
)

// noJitter makes Backoff return exactly d/2; fullJitter makes it d/2 + (d/2 - 1).
func noJitter(time.Duration) time.Duration     { return 0 }
func fullJitter(n time.Duration) time.Duration { return n - 1 }

func testPolicy() Policy {
	p := DefaultPolicy()
	jitter.Set(&p, noJitter)
	return p
}

var (
	retryable   = Result{Outcome: OutcomeRetryable}
	rateLimited = func(d time.Duration) Result { return Result{Outcome: OutcomeRateLimited, RetryAfter: d} }
)

func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	assert.Equal(t, 10, p.RetryCount)
	assert.Equal(t, 500*time.Millisecond, p.BackoffBase)
	assert.Equal(t, 60*time.Second, p.BackoffCap)
	assert.Equal(t, 43200*time.Second, p.MaxTotalBackoffDuration)
	assert.Equal(t, 43200*time.Second, p.MaxRateLimitDuration)
	assert.Equal(t, 300*time.Second, p.RateLimitRetryAfterCap)
}

func TestBackoffFormula(t *testing.T) {
	p := testPolicy()
	// d = min(60s, 500ms·2^(n−1)); with no jitter the wait is d/2.
	wantD := []time.Duration{
		500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 60 * time.Second, 60 * time.Second,
	}
	for i, d := range wantD {
		n := i + 1
		jitter.Set(&p, noJitter)
		assert.Equal(t, d/2, p.backoff(n), "backoff(%d) without jitter", n)
		jitter.Set(&p, fullJitter)
		assert.Equal(t, d-1, p.backoff(n), "backoff(%d) with top jitter", n)
	}
}

func TestBackoffJitterStaysInRange(t *testing.T) {
	p := DefaultPolicy() // real random jitter
	seen := map[time.Duration]bool{}
	for i := 0; i < 2000; i++ {
		got := p.backoff(3) // d = 2s
		require.GreaterOrEqual(t, got, time.Second, "backoff(3)")
		require.Less(t, got, 2*time.Second, "backoff(3)")
		seen[got] = true
	}
	assert.GreaterOrEqual(t, len(seen), 100, "distinct waits the jitter produced in 2000 draws")
}

func TestBackoffNeverOverflows(t *testing.T) {
	p := testPolicy()
	p.BackoffBase = time.Duration(math.MaxInt64 / 3)
	p.BackoffCap = time.Duration(math.MaxInt64)
	for _, n := range []int{1, 2, 3, 10, 63, 64, 1000, math.MaxInt32} {
		assert.Positive(t, p.backoff(n), "backoff(%d) overflowed", n)
	}
	p = testPolicy()
	assert.Equal(t, 30*time.Second, p.backoff(1<<20), "backoff(huge n), want cap/2")
	p.BackoffBase = 0
	assert.Zero(t, p.backoff(5), "backoff with base 0")
}

func TestRetryCountNMeansN(t *testing.T) {
	for _, n := range []int{0, 1, 3, 10} {
		p := testPolicy()
		p.RetryCount = n
		b := p.NewBudget(5)
		retries := 0
		var d Decision
		for {
			d = b.Next(retryable, now)
			if d.Action != ActionWait {
				break
			}
			require.Equal(t, BackoffPath, d.Path, "RetryCount %d: the path of a wait", n)
			retries++
		}
		assert.Equal(t, n, retries, "RetryCount %d: retries", n)
		assert.Equal(t, n+1, b.Attempts(), "RetryCount %d: attempts", n)
		assert.Equal(t, ActionFail, d.Action, "RetryCount %d: the final action", n)
		assert.ErrorIs(t, d.Reason, ErrRetriesExhausted, "RetryCount %d: the final reason", n)
	}
}

func TestRateLimitPathDoesNotSpendRetries(t *testing.T) {
	p := testPolicy()
	p.RetryCount = 2
	b := p.NewBudget(1)
	// Many rate-limited answers, then backoff-path failures: the batch
	// still has both of its retries.
	for i := 0; i < 50; i++ {
		d := b.Next(rateLimited(time.Second), now.Add(time.Duration(i)*time.Second))
		assert.Equal(t, Decision{Action: ActionWait, Path: RateLimitPath, Wait: time.Second}, d, "rate-limited attempt %d", i)
	}
	for i := 0; i < 2; i++ {
		d := b.Next(retryable, now.Add(time.Minute))
		assert.Equal(t, ActionWait, d.Action, "backoff retry %d after rate limits", i+1)
		assert.Equal(t, BackoffPath, d.Path, "backoff retry %d after rate limits", i+1)
	}
	d := b.Next(retryable, now.Add(time.Minute))
	assert.Equal(t, ActionFail, d.Action, "the third backoff failure")
	assert.ErrorIs(t, d.Reason, ErrRetriesExhausted, "the third backoff failure")
	assert.Equal(t, 53, b.Attempts(), "attempts, counted on both paths")
}

func TestRateLimitWaitIsCapped(t *testing.T) {
	p := testPolicy()
	p.RateLimitRetryAfterCap = 30 * time.Second
	d := p.NewBudget(1).Next(rateLimited(time.Hour), now)
	assert.Equal(t, ActionWait, d.Action, "Retry-After 1h with cap 30s")
	assert.Equal(t, 30*time.Second, d.Wait, "Retry-After 1h with cap 30s")
	d = p.NewBudget(1).Next(rateLimited(time.Duration(math.MaxInt64)), now)
	assert.Equal(t, ActionWait, d.Action, "a saturated Retry-After")
	assert.Equal(t, 30*time.Second, d.Wait, "a saturated Retry-After")
}

func TestRateLimitBudget(t *testing.T) {
	p := testPolicy()
	p.MaxRateLimitDuration = 10 * time.Second
	b := p.NewBudget(1)
	// Budget starts at the first rate-limited response.
	start := now.Add(time.Hour)
	steps := []struct {
		at   time.Duration // since start
		ra   time.Duration
		want Action
	}{
		{0, 4 * time.Second, ActionWait},               // 0+4 <= 10
		{4 * time.Second, 4 * time.Second, ActionWait}, // 4+4 <= 10
		{8 * time.Second, 2 * time.Second, ActionWait}, // 8+2 == 10 fits exactly
		{10 * time.Second, 1 * time.Second, ActionFail},
	}
	for i, s := range steps {
		d := b.Next(rateLimited(s.ra), start.Add(s.at))
		require.Equal(t, s.want, d.Action, "step %d", i)
	}
	// A wait that does not fit fails at once, even early on.
	b = p.NewBudget(1)
	d := b.Next(rateLimited(11*time.Second), now)
	assert.Equal(t, ActionFail, d.Action, "a first wait larger than the budget")
	assert.ErrorIs(t, d.Reason, ErrRateLimitBudgetExceeded, "a first wait larger than the budget")
	p.MaxRateLimitDuration = 0
	d = p.NewBudget(1).Next(rateLimited(time.Second), now)
	assert.Equal(t, ActionFail, d.Action, "budget 0")
	assert.ErrorIs(t, d.Reason, ErrRateLimitBudgetExceeded, "budget 0")
}

func TestBackoffBudget(t *testing.T) {
	p := testPolicy()
	p.RetryCount = 100
	p.MaxTotalBackoffDuration = 5 * time.Second
	b := p.NewBudget(1)
	start := now.Add(time.Hour)
	clock := start
	var waits []time.Duration
	for {
		d := b.Next(retryable, clock)
		if d.Action == ActionFail {
			assert.ErrorIs(t, d.Reason, ErrBackoffBudgetExceeded, "the failure's reason")
			break
		}
		waits = append(waits, d.Wait)
		clock = clock.Add(d.Wait)
	}
	// Waits 250ms, 500ms, 1s, 2s sum to 3.75s; the next (4s) does not fit in
	// the 1.25s left, so the batch fails at once rather than sleeping first.
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
	assert.Equal(t, want, waits)
	assert.Equal(t, 4, b.retries, "retries spent: a wait that does not fit must not spend a retry")
}

func TestBackoffBudgetZeroFailsAtOnce(t *testing.T) {
	p := testPolicy()
	p.MaxTotalBackoffDuration = 0
	d := p.NewBudget(1).Next(retryable, now)
	assert.Equal(t, ActionFail, d.Action, "budget 0")
	assert.ErrorIs(t, d.Reason, ErrBackoffBudgetExceeded, "budget 0")
}

func TestBackoffBudgetStartsAtFirstBackoffFailure(t *testing.T) {
	p := testPolicy()
	p.MaxTotalBackoffDuration = 2 * time.Second
	b := p.NewBudget(1)
	// An hour of rate limiting first does not eat the backoff budget.
	b.Next(rateLimited(time.Minute), now)
	d := b.Next(retryable, now.Add(time.Hour))
	assert.Equal(t, ActionWait, d.Action, "the first backoff failure after an hour of rate limits")
}

func TestRetryCountCheckedBeforeBudget(t *testing.T) {
	p := testPolicy()
	p.RetryCount = 0
	p.MaxTotalBackoffDuration = 0
	d := p.NewBudget(1).Next(retryable, now)
	assert.ErrorIs(t, d.Reason, ErrRetriesExhausted, "RetryCount 0 and budget 0")
}

func TestTerminalOutcomes(t *testing.T) {
	p := testPolicy()
	tests := []struct {
		name   string
		events int
		r      Result
		want   Decision
	}{
		{"success", 3, Result{Outcome: OutcomeSuccess}, Decision{Action: ActionDeliver}},
		{"413 splits a batch", 2, Result{Outcome: OutcomeTooLarge}, Decision{Action: ActionSplit}},
		{"413 on one event is fatal", 1, Result{Outcome: OutcomeTooLarge}, Decision{Action: ActionFail, Reason: ErrFatalStatus}},
		{"redirect", 3, Result{Outcome: OutcomeRedirect}, Decision{Action: ActionFail, Reason: ErrRedirect}},
		{"fatal", 3, Result{Outcome: OutcomeFatal}, Decision{Action: ActionFail, Reason: ErrFatalStatus}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := p.NewBudget(tt.events)
			assert.Equal(t, tt.want, b.Next(tt.r, now))
			assert.Equal(t, 1, b.Attempts())
		})
	}
}

func TestBudgetsBelongToOneBatch(t *testing.T) {
	p := testPolicy()
	p.RetryCount = 1
	a := p.NewBudget(2)
	a.Next(retryable, now)
	assert.Equal(t, ActionFail, a.Next(retryable, now).Action, "the first batch, exhausted")
	assert.Equal(t, ActionWait, p.NewBudget(2).Next(retryable, now).Action, "a new batch, which starts fresh")
}

func BenchmarkDecision(b *testing.B) {
	p := DefaultPolicy()
	for b.Loop() {
		bud := p.NewBudget(250)
		bud.Next(Result{Outcome: OutcomeRetryable}, now)
		bud.Next(Result{Outcome: OutcomeRateLimited, RetryAfter: time.Second}, now)
		bud.Next(Result{Outcome: OutcomeSuccess}, now)
	}
}

// A refusal of the token is sent again at once, once, on the token path,
// spending no retry and no budget; the second fails the batch.
func TestBudgetTokenRefusedOnce(t *testing.T) {
	p := testPolicy()
	p.RetryCount = 0
	p.MaxTotalBackoffDuration = 0
	b := p.NewBudget(3)
	refused := Result{Outcome: OutcomeTokenRefused}
	assert.Equal(t, Decision{Action: ActionWait, Path: TokenPath}, b.Next(refused, now), "the first refusal")
	assert.Zero(t, b.Retries(), "retries spent")
	assert.Equal(t, Decision{Action: ActionFail, Reason: ErrFatalStatus}, b.Next(refused, now), "the second")
	assert.Equal(t, 2, b.Attempts(), "attempts")
}
