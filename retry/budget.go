package retry

import "time"

// Action is what the caller does after an attempt.
type Action int

// The actions. Each name says it is an Action, so that ActionDeliver is
// not read as the Uploader's Deliver.
const (
	// ActionDeliver: the batch was accepted; report success.
	ActionDeliver Action = iota + 1
	// ActionWait: wait Decision.Wait, then send the batch again.
	ActionWait
	// ActionSplit: send each half of the batch as its own batch.
	ActionSplit
	// ActionFail: report the batch failed with Decision.Reason.
	ActionFail
)

// Path is the retry path a wait was taken on (SPEC §5).
type Path int

const (
	// BackoffPath: counted, jittered exponential waits.
	BackoffPath Path = iota + 1
	// RateLimitPath: uncounted waits for the server's Retry-After.
	RateLimitPath
	// TokenPath: an upload refused for its OAuth access token is sent
	// again at once with a fresh one, once per batch, uncounted.
	TokenPath
)

// String returns the path's name, for logs and stats.
func (p Path) String() string {
	switch p {
	case BackoffPath:
		return "backoff"
	case RateLimitPath:
		return "rate-limit"
	case TokenPath:
		return "token"
	}
	return "none"
}

// Decision is the policy's answer to one attempt's Result.
type Decision struct {
	// Action is what to do next.
	Action Action
	// Path and Wait are set when Action is ActionWait.
	Path Path
	Wait time.Duration
	// Reason is set when Action is ActionFail: one of the sentinel errors
	// of this package.
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
	tokenRetried     bool
}

// Attempts returns how many attempts have been decided on so far. Before an
// attempt it is the value of that attempt's X-Retry-Count (0: no header;
// SPEC §4).
func (b *Budget) Attempts() int { return b.attempts }

// Retries returns how many backoff-path retries the batch has spent.
func (b *Budget) Retries() int { return b.retries }

// Next records the end of an attempt and decides what follows. now must come
// from time.Now, whose monotonic reading makes the budgets durations since
// their first use, never wall-clock differences (SPEC §5).
func (b *Budget) Next(r Result, now time.Time) Decision {
	b.attempts++
	switch r.Outcome {
	case OutcomeSuccess:
		return Decision{Action: ActionDeliver}
	case OutcomeTooLarge:
		if b.events > 1 {
			return Decision{Action: ActionSplit}
		}
		return Decision{Action: ActionFail, Reason: ErrFatalStatus}
	case OutcomeRedirect:
		return Decision{Action: ActionFail, Reason: ErrRedirect}
	case OutcomeRateLimited:
		return b.rateLimited(r.RetryAfter, now)
	case OutcomeRetryable:
		return b.backoff(now)
	case OutcomeTokenRefused:
		// Sent again at once with a fresh token, once; refused again, the
		// token is not the fault, nor is a resend the cure.
		if b.tokenRetried {
			return Decision{Action: ActionFail, Reason: ErrFatalStatus}
		}
		b.tokenRetried = true
		return Decision{Action: ActionWait, Path: TokenPath}
	}
	return Decision{Action: ActionFail, Reason: ErrFatalStatus}
}

// rateLimited is the rate-limit path (SPEC §5): it does not spend the retry
// count.
func (b *Budget) rateLimited(retryAfter time.Duration, now time.Time) Decision {
	if !b.rateLimitStarted {
		b.rateLimitStarted, b.rateLimitStart = true, now
	}
	wait := b.policy.rateLimitWait(retryAfter)
	if !fits(now.Sub(b.rateLimitStart), wait, b.policy.MaxRateLimitDuration) {
		return Decision{Action: ActionFail, Reason: ErrRateLimitBudgetExceeded}
	}
	return Decision{Action: ActionWait, Path: RateLimitPath, Wait: wait}
}

// backoff is the counted path (SPEC §5): check what is left, then spend one
// retry.
func (b *Budget) backoff(now time.Time) Decision {
	if !b.backoffStarted {
		b.backoffStarted, b.backoffStart = true, now
	}
	if b.retries >= b.policy.RetryCount {
		return Decision{Action: ActionFail, Reason: ErrRetriesExhausted}
	}
	wait := b.policy.backoff(b.retries + 1)
	if !fits(now.Sub(b.backoffStart), wait, b.policy.MaxTotalBackoffDuration) {
		return Decision{Action: ActionFail, Reason: ErrBackoffBudgetExceeded}
	}
	b.retries++
	return Decision{Action: ActionWait, Path: BackoffPath, Wait: wait}
}

// HoldFits reports whether the batch may be held back from sending, at
// now, for wait more (by the client's send rate, see SendRate). Being held
// spends no retry, only time: once the batch has had a backoff-path
// failure, the hold must end within MaxTotalBackoffDuration of it, as
// every backoff wait must (SPEC §5). Before that, nothing bounds it but the
// caller's context.
func (b *Budget) HoldFits(now time.Time, wait time.Duration) bool {
	return !b.backoffStarted || fits(now.Sub(b.backoffStart), wait, b.policy.MaxTotalBackoffDuration)
}

// BackoffDeadline returns when the batch's backoff budget ends, and false
// before its first backoff-path failure, when none runs. A batch held back
// by the send rate fails with ErrBackoffBudgetExceeded at that time.
func (b *Budget) BackoffDeadline() (time.Time, bool) {
	if !b.backoffStarted {
		return time.Time{}, false
	}
	return b.backoffStart.Add(b.policy.MaxTotalBackoffDuration), true
}

// fits reports whether a wait started after elapsed ends within budget,
// without overflowing on huge values.
func fits(elapsed, wait, budget time.Duration) bool {
	if elapsed < 0 {
		elapsed = 0
	}
	return elapsed <= budget && wait <= budget-elapsed
}
