package retry

import "time"

// Action is what the caller does after an attempt.
type Action int

const (
	// Deliver: the batch was accepted; report success.
	Deliver Action = iota + 1
	// Wait: wait Decision.Wait, then send the batch again.
	Wait
	// Split: send each half of the batch as its own batch.
	Split
	// Fail: report the batch failed with Decision.Reason.
	Fail
)

// Path is the retry path a wait was taken on.
type Path int

const (
	// BackoffPath: counted, jittered exponential waits.
	BackoffPath Path = iota + 1
	// RateLimitPath: uncounted waits for the server's Retry-After.
	RateLimitPath
)

// String returns the path's name, for logs and stats.
func (p Path) String() string {
	switch p {
	case BackoffPath:
		return "backoff"
	case RateLimitPath:
		return "rate-limit"
	}
	return "none"
}

// Decision is the policy's answer to one attempt's Result.
type Decision struct {
	// Action is what to do next.
	Action Action
	// Path and Wait are set when Action is Wait.
	Path Path
	Wait time.Duration
	// Reason is set when Action is Fail: one of the sentinel errors of this
	// package.
	Reason error
}

// Budget is the retry state of one batch: the attempts made, the retries
// spent, and when each duration budget started. It is used by one goroutine
// at a time.
type Budget struct {
	policy   *Policy
	events   int
	attempts int
	retries  int

	backoffStarted   bool
	backoffStart     time.Time
	rateLimitStarted bool
	rateLimitStart   time.Time
}

// Attempts returns how many attempts have been decided on so far. Before an
// attempt it is the value of that attempt's X-Retry-Count (0: no header).
func (b *Budget) Attempts() int { return b.attempts }

// Next records the end of an attempt and decides what follows. now must come
// from the monotonic clock (time.Now, or a fake clock in tests): the budgets
// are measured as durations since their first use, never by wall-clock
// subtraction.
func (b *Budget) Next(r Result, now time.Time) Decision {
	b.attempts++
	switch r.Outcome {
	case Success:
		return Decision{Action: Deliver}
	case TooLarge:
		if b.events > 1 {
			return Decision{Action: Split}
		}
		return Decision{Action: Fail, Reason: ErrFatalStatus}
	case Redirect:
		return Decision{Action: Fail, Reason: ErrRedirect}
	case RateLimited:
		return b.rateLimited(r.RetryAfter, now)
	case Retryable:
		return b.backoff(now)
	}
	return Decision{Action: Fail, Reason: ErrFatalStatus}
}

// rateLimited is the rate-limit path: it does not spend the retry count.
func (b *Budget) rateLimited(retryAfter time.Duration, now time.Time) Decision {
	if !b.rateLimitStarted {
		b.rateLimitStarted, b.rateLimitStart = true, now
	}
	wait := b.policy.RateLimitWait(retryAfter)
	if !fits(now.Sub(b.rateLimitStart), wait, b.policy.MaxRateLimitDuration) {
		return Decision{Action: Fail, Reason: ErrRateLimitBudgetExceeded}
	}
	return Decision{Action: Wait, Path: RateLimitPath, Wait: wait}
}

// backoff is the counted path: check what is left, then spend one retry.
func (b *Budget) backoff(now time.Time) Decision {
	if !b.backoffStarted {
		b.backoffStarted, b.backoffStart = true, now
	}
	if b.retries >= b.policy.RetryCount {
		return Decision{Action: Fail, Reason: ErrRetriesExhausted}
	}
	wait := b.policy.Backoff(b.retries + 1)
	if !fits(now.Sub(b.backoffStart), wait, b.policy.MaxTotalBackoffDuration) {
		return Decision{Action: Fail, Reason: ErrBackoffBudgetExceeded}
	}
	b.retries++
	return Decision{Action: Wait, Path: BackoffPath, Wait: wait}
}

// fits reports whether a wait started after elapsed ends within budget,
// without overflowing on huge values.
func fits(elapsed, wait, budget time.Duration) bool {
	if elapsed < 0 {
		elapsed = 0
	}
	return elapsed <= budget && wait <= budget-elapsed
}
