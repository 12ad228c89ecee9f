package retry

import (
	"errors"
	"time"

	"github.com/dualpath/analytics-go/internal/jitter"
)

// The reasons a batch fails. They are the sentinel errors the analytics
// package re-exports for errors.Is.
var (
	// ErrRetriesExhausted: the backoff path spent all RetryCount retries.
	ErrRetriesExhausted = errors.New("analytics: retries exhausted")
	// ErrBackoffBudgetExceeded: the next backoff wait did not fit in what is
	// left of MaxTotalBackoffDuration.
	ErrBackoffBudgetExceeded = errors.New("analytics: backoff budget exceeded")
	// ErrRateLimitBudgetExceeded: the next rate-limit wait did not fit in
	// what is left of MaxRateLimitDuration.
	ErrRateLimitBudgetExceeded = errors.New("analytics: rate-limit budget exceeded")
	// ErrFatalStatus: the server answered a status that no resend can fix.
	ErrFatalStatus = errors.New("analytics: non-retryable status")
	// ErrRedirect: the server answered a 3xx, or a redirect turned the POST
	// into another method. Redirects of a POST are never counted as success.
	ErrRedirect = errors.New("analytics: redirect not followed")
	// ErrRetriesStopped: the batch's attempt failed after its retries were
	// stopped (a Close without retries), or it was waiting to retry then.
	ErrRetriesStopped = errors.New("analytics: retries stopped by close")
)

// Policy is the retry configuration shared by every batch of a client (SPEC
// §5). A Policy is read-only once in use and safe for concurrent use. Its
// jittered waits draw from math/rand/v2.
type Policy struct {
	// RetryCount is how many retries the backoff path may spend per batch;
	// 0 means none.
	RetryCount int
	// BackoffBase and BackoffCap shape the backoff wait: retry n waits about
	// min(BackoffCap, BackoffBase·2^(n−1)).
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// MaxTotalBackoffDuration bounds the backoff path of one batch, from its
	// first backoff-path failure.
	MaxTotalBackoffDuration time.Duration
	// MaxRateLimitDuration bounds the rate-limit path of one batch, from its
	// first rate-limited response, and every wait at the client-wide pause
	// (see Gate), from the start of the rate-limit episode.
	MaxRateLimitDuration time.Duration
	// RateLimitRetryAfterCap caps one rate-limit wait, whatever the server
	// asked for.
	RateLimitRetryAfterCap time.Duration
	// ProbeInterval caps the backoff schedule's spacing of the client-wide
	// probe (see Gate): while the API is down, one attempt at a time
	// goes out, spaced as the backoff schedule says but never more than this
	// apart, so that the client notices the API is back within about this
	// long. The send rate spaces a quiet client's probes further, to an eighth of
	// its healthy rate (SPEC §5). 0 or less: no cap but BackoffCap's.
	ProbeInterval time.Duration
	// Backoff, when set, is the wait before backoff retry n (n = 1, 2,
	// ...) in place of the jittered formula of BackoffBase and BackoffCap;
	// a negative wait counts as 0. The probe's spacing after the k-th
	// failure in a row is then Backoff(k), capped at ProbeInterval, so it
	// is also called for that: it must be a function of n alone, safe
	// for concurrent use.
	Backoff func(retry int) time.Duration

	// draw is where the jitter comes from: math/rand/v2, unless a test
	// set it through internal/jitter.
	draw
}

// draw names jitter.Draw for an unexported embedded field.
type draw = jitter.Draw

// DefaultPolicy returns the SDK's defaults: 10 retries, backoff 500 ms
// doubling up to 60 s, 12 h budgets on both paths, Retry-After capped at
// 300 s, the probe's backoff spacing capped at 4 s (SPEC §7).
func DefaultPolicy() Policy {
	return Policy{
		RetryCount:              10,
		BackoffBase:             500 * time.Millisecond,
		BackoffCap:              60 * time.Second,
		MaxTotalBackoffDuration: 12 * time.Hour,
		MaxRateLimitDuration:    12 * time.Hour,
		RateLimitRetryAfterCap:  300 * time.Second,
		ProbeInterval:           4 * time.Second,
	}
}

// backoff returns the wait before backoff retry n (n = 1, 2, ...):
// Backoff(n) when set, else d/2 + rand[0, d/2) with d = min(BackoffCap, BackoffBase·2^(n−1)). The
// doubling saturates at BackoffCap, never overflows (SPEC §5).
func (p *Policy) backoff(n int) time.Duration {
	if p.Backoff != nil {
		return max(p.Backoff(n), 0)
	}
	d := p.backoffCeiling(n)
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + p.jitter(half)
}

// backoffCeiling is d = min(BackoffCap, BackoffBase·2^(n−1)).
func (p *Policy) backoffCeiling(n int) time.Duration {
	d := p.BackoffBase
	for i := 1; i < n && d < p.BackoffCap; i++ {
		if d > p.BackoffCap/2 {
			return p.BackoffCap
		}
		d *= 2
	}
	return min(d, p.BackoffCap)
}

// jitter returns a uniformly random duration in [0, n) for n > 0, and 0
// for n <= 0.
func (p *Policy) jitter(n time.Duration) time.Duration { return jitter.N(&p.draw, n) }

// maxResumeJitter bounds the jitter added to the end of a Retry-After
// pause: a tenth of the wait, at most this.
const maxResumeJitter = time.Second

// ResumeJitter returns how much later than the server asked this client
// resumes after a Retry-After pause of wait: rand[0, min(wait/10, 1 s)).
// Each client draws its own, so that a fleet given the same Retry-After
// does not come back in the same instant; it is never negative, so no
// client comes back earlier than asked (SPEC §5).
func (p *Policy) ResumeJitter(wait time.Duration) time.Duration {
	return p.jitter(min(wait/10, maxResumeJitter))
}

// probeSpacing is how long the client-wide probe waits after its k-th
// backoff-path failure in a row (k = 1, 2, ...): d/2, the shortest wait of
// backoff retry k, with d = min(BackoffCap, BackoffBase·2^(k−1)), capped at
// ProbeInterval; with Backoff set, Backoff(k) in place of d/2 (SPEC §5, §7).
// A batch's own wait on retry k is at least that, so a batch alone in flight
// never waits for the probe beyond its own backoff.
func (p *Policy) probeSpacing(k int) time.Duration {
	s := p.backoffCeiling(k) / 2
	if p.Backoff != nil {
		s = max(p.Backoff(k), 0)
	}
	if p.ProbeInterval > 0 {
		s = min(s, p.ProbeInterval)
	}
	return s
}

// NewBudget starts the retry state of a batch of the given number of events.
// Every batch, including each half of a split one, gets its own (SPEC §5).
func (p *Policy) NewBudget(events int) *Budget {
	return &Budget{policy: p, events: events}
}

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

var pathNames = [...]string{BackoffPath: "backoff", RateLimitPath: "rate-limit", TokenPath: "token"}

// String returns the path's name, for logs and stats.
func (p Path) String() string {
	if p > 0 && int(p) < len(pathNames) {
		return pathNames[p]
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

	tokenRetried bool
	// When each duration budget started: zero until then (a time from
	// time.Now is never zero).
	backoffStart, rateLimitStart time.Time
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
	if b.rateLimitStart.IsZero() {
		b.rateLimitStart = now
	}
	// The server's Retry-After, capped (SPEC §5).
	wait := min(retryAfter, b.policy.RateLimitRetryAfterCap)
	if !fits(now.Sub(b.rateLimitStart), wait, b.policy.MaxRateLimitDuration) {
		return Decision{Action: ActionFail, Reason: ErrRateLimitBudgetExceeded}
	}
	return Decision{Action: ActionWait, Path: RateLimitPath, Wait: wait}
}

// backoff is the counted path (SPEC §5): check what is left, then spend one
// retry.
func (b *Budget) backoff(now time.Time) Decision {
	if b.backoffStart.IsZero() {
		b.backoffStart = now
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
// now, for wait more (by the client's send rate, see Gate). Being held
// spends no retry, only time: once the batch has had a backoff-path
// failure, the hold must end within MaxTotalBackoffDuration of it, as
// every backoff wait must (SPEC §5). Before that, nothing bounds it but the
// caller's context.
func (b *Budget) HoldFits(now time.Time, wait time.Duration) bool {
	return b.backoffStart.IsZero() || fits(now.Sub(b.backoffStart), wait, b.policy.MaxTotalBackoffDuration)
}

// BackoffDeadline returns when the batch's backoff budget ends, and false
// before its first backoff-path failure, when none runs. A batch held back
// by the send rate fails with ErrBackoffBudgetExceeded at that time.
func (b *Budget) BackoffDeadline() (time.Time, bool) {
	if b.backoffStart.IsZero() {
		return time.Time{}, false
	}
	return b.backoffStart.Add(b.policy.MaxTotalBackoffDuration), true
}

// fits reports whether a wait started after elapsed ends within budget,
// without overflowing on huge values.
func fits(elapsed, wait, budget time.Duration) bool {
	elapsed = max(elapsed, 0)
	return elapsed <= budget && wait <= budget-elapsed
}
