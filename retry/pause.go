package retry

import (
	"sync"
	"time"
)

// Pause is the client-wide rate-limit pause (SPEC §5). One Retry-After holds
// every batch of the client until the time it named, and the client stays in
// one rate-limit episode from the first such answer until an attempt is
// answered without one.
//
// A batch spends its MaxRateLimitDuration on the whole episode, not only on
// the waits its own answers asked for: a wait at the pause that would end
// more than MaxRateLimitDuration after the episode began fails the batch at
// once with ErrRateLimitBudgetExceeded. So under sustained rate limiting no
// event waits on the pause much longer than MaxRateLimitDuration, however
// many batches take turns being answered 429, and a user who sets the budget
// to fail rather than wait gets that.
//
// The pause may end a little later than the server asked: each Hold may
// add a jitter of the client's own (Policy.ResumeJitter), so that a fleet
// of clients given the same Retry-After does not resume in the same
// instant. It never ends earlier, and the budget is checked against the
// server's time, without the jitter.
//
// The zero Pause is open. A Pause is safe for concurrent use.
type Pause struct {
	mu     sync.Mutex
	until  time.Time // the server's time: the pause lasts at least until then
	resume time.Time // until plus the jitter: the pause ends then
	since  time.Time // the episode began then; zero when none is running
}

// Hold records a rate-limited answer at now that asked to wait d: the pause
// lasts at least until now+d, and ends jitter later (jitter ≥ 0); an
// episode begins unless one is running.
func (p *Pause) Hold(now time.Time, d, jitter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.since.IsZero() {
		p.since = now
	}
	until := now.Add(d)
	if until.After(p.until) {
		p.until = until
	}
	if resume := until.Add(max(jitter, 0)); resume.After(p.resume) {
		p.resume = resume
	}
}

// Answered records an attempt that was answered without a valid
// Retry-After (delivered, or failed another way): the episode is over. A
// pause already announced still runs to its end.
func (p *Pause) Answered() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since = time.Time{}
}

// Wait tells a batch about to send at now how long the pause still holds
// it, jitter included: 0 when open. It returns ErrRateLimitBudgetExceeded
// when the server's time would end more than policy's MaxRateLimitDuration
// after the episode began.
func (p *Pause) Wait(now time.Time, policy *Policy) (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	wait := p.resume.Sub(now)
	if wait <= 0 {
		return 0, nil
	}
	server := p.until.Sub(now)
	if server <= 0 {
		return wait, nil // only the client's own jitter is left
	}
	var elapsed time.Duration
	if !p.since.IsZero() {
		elapsed = now.Sub(p.since)
	}
	if !fits(elapsed, server, policy.MaxRateLimitDuration) {
		return 0, ErrRateLimitBudgetExceeded
	}
	return wait, nil
}

// Until returns the end of the pause, jitter included; a time not after
// now means open.
func (p *Pause) Until() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resume
}
