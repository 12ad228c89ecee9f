package retry

import (
	"errors"
	"math"
	"testing"
	"time"
)

// noJitter makes Backoff return exactly d/2; fullJitter makes it d/2 + (d/2 - 1).
func noJitter(time.Duration) time.Duration     { return 0 }
func fullJitter(n time.Duration) time.Duration { return n - 1 }

func testPolicy() Policy {
	p := DefaultPolicy()
	p.Jitter = noJitter
	return p
}

var (
	retryable   = Result{Outcome: OutcomeRetryable}
	rateLimited = func(d time.Duration) Result { return Result{Outcome: OutcomeRateLimited, RetryAfter: d} }
)

func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	if p.RetryCount != 10 || p.BackoffBase != 500*time.Millisecond || p.BackoffCap != 60*time.Second ||
		p.MaxTotalBackoffDuration != 43200*time.Second || p.MaxRateLimitDuration != 43200*time.Second ||
		p.RateLimitRetryAfterCap != 300*time.Second {
		t.Fatalf("DefaultPolicy() = %+v", p)
	}
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
		p.Jitter = noJitter
		if got := p.backoff(n); got != d/2 {
			t.Errorf("Backoff(%d) without jitter = %v, want %v", n, got, d/2)
		}
		p.Jitter = fullJitter
		if got := p.backoff(n); got != d-1 {
			t.Errorf("Backoff(%d) with top jitter = %v, want %v", n, got, d-1)
		}
	}
}

func TestBackoffJitterStaysInRange(t *testing.T) {
	p := DefaultPolicy() // real random jitter
	seen := map[time.Duration]bool{}
	for i := 0; i < 2000; i++ {
		got := p.backoff(3) // d = 2s
		if got < time.Second || got >= 2*time.Second {
			t.Fatalf("Backoff(3) = %v, want in [1s, 2s)", got)
		}
		seen[got] = true
	}
	if len(seen) < 100 {
		t.Fatalf("jitter produced only %d distinct waits in 2000 draws", len(seen))
	}
}

func TestBackoffNeverOverflows(t *testing.T) {
	p := testPolicy()
	p.BackoffBase = time.Duration(math.MaxInt64 / 3)
	p.BackoffCap = time.Duration(math.MaxInt64)
	for _, n := range []int{1, 2, 3, 10, 63, 64, 1000, math.MaxInt32} {
		if got := p.backoff(n); got <= 0 {
			t.Errorf("Backoff(%d) = %v, overflowed", n, got)
		}
	}
	p = testPolicy()
	if got := p.backoff(1 << 20); got != 30*time.Second {
		t.Errorf("Backoff(huge n) = %v, want cap/2 = 30s", got)
	}
	p.BackoffBase = 0
	if got := p.backoff(5); got != 0 {
		t.Errorf("Backoff with base 0 = %v, want 0", got)
	}
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
			if d.Path != BackoffPath {
				t.Fatalf("RetryCount %d: wait on %v, want backoff path", n, d.Path)
			}
			retries++
		}
		if retries != n || b.Attempts() != n+1 {
			t.Errorf("RetryCount %d: %d retries, %d attempts; want %d and %d", n, retries, b.Attempts(), n, n+1)
		}
		if d.Action != ActionFail || !errors.Is(d.Reason, ErrRetriesExhausted) {
			t.Errorf("RetryCount %d: final decision %+v, want ActionFail with ErrRetriesExhausted", n, d)
		}
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
		if d.Action != ActionWait || d.Path != RateLimitPath || d.Wait != time.Second {
			t.Fatalf("rate-limited attempt %d: %+v", i, d)
		}
	}
	for i := 0; i < 2; i++ {
		if d := b.Next(retryable, now.Add(time.Minute)); d.Action != ActionWait || d.Path != BackoffPath {
			t.Fatalf("backoff retry %d after rate limits: %+v", i+1, d)
		}
	}
	if d := b.Next(retryable, now.Add(time.Minute)); d.Action != ActionFail || d.Reason != ErrRetriesExhausted {
		t.Fatalf("third backoff failure: %+v, want retries exhausted", d)
	}
	if b.Attempts() != 53 {
		t.Fatalf("Attempts() = %d, want 53 (counts both paths)", b.Attempts())
	}
}

func TestRateLimitWaitIsCapped(t *testing.T) {
	p := testPolicy()
	p.RateLimitRetryAfterCap = 30 * time.Second
	d := p.NewBudget(1).Next(rateLimited(time.Hour), now)
	if d.Action != ActionWait || d.Wait != 30*time.Second {
		t.Fatalf("Retry-After 1h with cap 30s: %+v, want wait 30s", d)
	}
	d = p.NewBudget(1).Next(rateLimited(time.Duration(math.MaxInt64)), now)
	if d.Action != ActionWait || d.Wait != 30*time.Second {
		t.Fatalf("saturated Retry-After: %+v, want wait 30s", d)
	}
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
		if d.Action != s.want {
			t.Fatalf("step %d: %+v, want %v", i, d, s.want)
		}
	}
	// A wait that does not fit fails at once, even early on.
	b = p.NewBudget(1)
	if d := b.Next(rateLimited(11*time.Second), now); d.Action != ActionFail || d.Reason != ErrRateLimitBudgetExceeded {
		t.Fatalf("first wait larger than the budget: %+v, want ErrRateLimitBudgetExceeded", d)
	}
	p.MaxRateLimitDuration = 0
	if d := p.NewBudget(1).Next(rateLimited(time.Second), now); d.Action != ActionFail || d.Reason != ErrRateLimitBudgetExceeded {
		t.Fatalf("budget 0: %+v, want immediate failure", d)
	}
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
			if d.Reason != ErrBackoffBudgetExceeded {
				t.Fatalf("failed with %v, want ErrBackoffBudgetExceeded", d.Reason)
			}
			break
		}
		waits = append(waits, d.Wait)
		clock = clock.Add(d.Wait)
	}
	// Waits 250ms, 500ms, 1s, 2s sum to 3.75s; the next (4s) does not fit in
	// the 1.25s left, so the batch fails at once rather than sleeping first.
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
	if len(waits) != len(want) {
		t.Fatalf("waits = %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits = %v, want %v", waits, want)
		}
	}
	if b.retries != 4 {
		t.Fatalf("retries spent = %d, want 4: a wait that does not fit must not spend a retry", b.retries)
	}
}

func TestBackoffBudgetZeroFailsAtOnce(t *testing.T) {
	p := testPolicy()
	p.MaxTotalBackoffDuration = 0
	if d := p.NewBudget(1).Next(retryable, now); d.Action != ActionFail || d.Reason != ErrBackoffBudgetExceeded {
		t.Fatalf("budget 0: %+v, want ErrBackoffBudgetExceeded", d)
	}
}

func TestBackoffBudgetStartsAtFirstBackoffFailure(t *testing.T) {
	p := testPolicy()
	p.MaxTotalBackoffDuration = 2 * time.Second
	b := p.NewBudget(1)
	// An hour of rate limiting first does not eat the backoff budget.
	b.Next(rateLimited(time.Minute), now)
	if d := b.Next(retryable, now.Add(time.Hour)); d.Action != ActionWait {
		t.Fatalf("first backoff failure after an hour of rate limits: %+v, want a wait", d)
	}
}

func TestRetryCountCheckedBeforeBudget(t *testing.T) {
	p := testPolicy()
	p.RetryCount = 0
	p.MaxTotalBackoffDuration = 0
	if d := p.NewBudget(1).Next(retryable, now); d.Reason != ErrRetriesExhausted {
		t.Fatalf("RetryCount 0: %v, want ErrRetriesExhausted", d.Reason)
	}
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
			if got := b.Next(tt.r, now); got != tt.want {
				t.Fatalf("Next = %+v, want %+v", got, tt.want)
			}
			if b.Attempts() != 1 {
				t.Fatalf("Attempts() = %d, want 1", b.Attempts())
			}
		})
	}
}

func TestBudgetsBelongToOneBatch(t *testing.T) {
	p := testPolicy()
	p.RetryCount = 1
	a := p.NewBudget(2)
	a.Next(retryable, now)
	if d := a.Next(retryable, now); d.Action != ActionFail {
		t.Fatalf("first batch: %+v, want exhausted", d)
	}
	if d := p.NewBudget(2).Next(retryable, now); d.Action != ActionWait {
		t.Fatalf("a new batch must start fresh: %+v", d)
	}
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
