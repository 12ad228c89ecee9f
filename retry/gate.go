package retry

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Gate decides when an attempt may go: every attempt of every batch of a
// client, a first one or a retry on either path, asks it, and it answers
// in one decision. Its parts, in the order it asks them:
//
//   - Stop: once the Gate is stopped, a first attempt goes at once, with
//     no turn, and a retry fails with ErrRetriesStopped.
//   - The client-wide rate-limit pause: one Retry-After (Hold) holds every
//     attempt of the client until the time it named, bounded by
//     MaxRateLimitDuration from the start of the rate-limit episode.
//   - The send rate (SPEC §5), when on: attempts it holds back wait in
//     line, and only the first in line asks for a turn: the attempt that
//     came first, except while the rate probes, when it is the attempt of
//     the batch that has spent the fewest retries (the first of those that
//     came), so that the batches held back through an outage spend their
//     retries evenly. A held attempt spends time from its batch's backoff
//     budget (Budget.HoldFits).
//   - The request slot, which the caller keeps (a bound on the requests
//     in flight): an attempt that holds none is told to take one and ask
//     again, so that Go is given to an attempt that can start at once.
//
// Like the rest of the package it never reads the clock, and it does no
// I/O: the caller passes the time in and waits as told, without its
// request slot, until the answer's time or until its Wake channel is
// closed (another attempt ended, the line or the pause changed), and asks
// again:
//
//	var w retry.Waiter
//	for {
//		a, err := gate.Admit(time.Now(), &w, budget, holdsSlot)
//		if err != nil || a.Go {
//			break // fail the batch, or send it on a.Turn
//		}
//		if a.Slot {
//			// take a request slot, then ask again
//		} else {
//			// give the slot back; wait until a.Until or a.Wake
//		}
//	}
//	// (gate.Leave(&w) if the wait ends another way)
//	resp := send()
//	gate.End(a.Turn, time.Now(), outcome, answered)
//
// A Gate is safe for concurrent use.
type Gate struct {
	policy *Policy
	rate   *sendRate // nil: the send rate is off

	mu      sync.Mutex
	pause   pause
	line    []*Waiter // the attempts waiting for the send rate, in the order they came
	held    int64     // attempts that waited in line
	stopped bool
	// changed is closed and replaced when waiting attempts should ask
	// again; recovered, when the client sees the API recover after it
	// seemed down, so that batches sleeping through a backoff wait go.
	// Stop closes both.
	changed, recovered chan struct{}
}

// A Waiter is one attempt's place at a Gate, kept by the caller across the
// Admit calls of that attempt: its place in line while it waits there.
// The zero Waiter has no place. After an answer of Go or an error it has
// none again; one that gives up waiting is taken out with Leave.
type Waiter struct {
	inLine  bool
	retries int  // the backoff-path retries its batch had spent when it came
	held    bool // the send rate held it back: counted once
}

// NewGate returns an open Gate for policy's budgets and schedule, with the
// send rate on or off. policy must not change while it is in use.
func NewGate(policy *Policy, adaptive bool) *Gate {
	g := &Gate{policy: policy, changed: make(chan struct{}), recovered: make(chan struct{})}
	if adaptive {
		g.rate = &sendRate{policy: policy}
	}
	return g
}

// Admission is a Gate's answer to an attempt.
type Admission struct {
	// Go: the attempt may start now, on Turn, whose end must be reported
	// with End.
	Go   bool
	Turn Turn
	// Recovered, with Go, is closed when the client sees the API recover
	// after this admission (or the Gate is stopped): a backoff wait that
	// follows the attempt may end then. Nil never closes.
	Recovered <-chan struct{}

	// Slot: the attempt may go once it holds a request slot: take one and
	// ask again. Its place in line is kept meanwhile.
	Slot bool

	// Otherwise the attempt waits, without a request slot, until Until
	// (zero: no time) or until Wake is closed, whichever comes first, and
	// asks again.
	Until time.Time
	Wake  <-chan struct{}
	// Paused: it waits for the rate-limit pause.
	Paused bool
}

// Admit answers, at now, the attempt of w whose batch's budget is b:
// whether it may go, and if not until when it waits. slot tells whether
// the attempt holds a request slot. It fails with ErrRetriesStopped (a
// retry, once the Gate is stopped), ErrRateLimitBudgetExceeded (a wait at
// the pause that would end more than MaxRateLimitDuration after the
// episode began) or ErrBackoffBudgetExceeded (a hold by the send rate that
// does not fit in what is left of the backoff budget: at once when the
// hold is known, else when the budget ends).
func (g *Gate) Admit(now time.Time, w *Waiter, b *Budget, slot bool) (Admission, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		g.leave(w)
		if b.Attempts() > 0 {
			return Admission{}, ErrRetriesStopped
		}
	} else if d, err := g.pause.wait(now, g.policy); err != nil || d > 0 {
		// An attempt waits at the pause out of line; it comes back last.
		g.leave(w)
		return Admission{Until: now.Add(d), Wake: g.changed, Paused: true}, err
	}
	// Stopped, the send rate off, or nothing in line and no slot yet: no
	// turn to wait for.
	if g.stopped || g.rate == nil || !w.inLine && len(g.line) == 0 && !slot {
		return Admission{Go: slot, Slot: !slot, Recovered: g.recovered}, nil
	}
	deadline, bounded := b.BackoffDeadline()
	if !w.inLine {
		w.inLine, w.retries = true, b.Retries()
		g.line = append(g.line, w)
	} else if bounded && !now.Before(deadline) {
		// It waited in line until its budget ended.
		g.leave(w)
		return Admission{}, ErrBackoffBudgetExceeded
	}
	a := Admission{Wake: g.changed}
	if g.first() == w {
		if !slot {
			return Admission{Slot: true}, nil
		}
		turn, d, ok := g.rate.admit(now)
		if ok {
			g.leave(w)
			return Admission{Go: true, Turn: turn, Recovered: g.recovered}, nil
		}
		if !b.HoldFits(now, d) || d == 0 && bounded && !now.Before(deadline) {
			g.leave(w)
			return Admission{}, ErrBackoffBudgetExceeded
		}
		if d > 0 {
			a.Until = now.Add(d)
		}
	}
	if bounded && a.Until.IsZero() {
		// Waiting for the line or the probe's end: until the budget ends.
		a.Until = deadline
	}
	if !w.held {
		w.held = true
		g.held++
	}
	return a, nil
}

// first returns the attempt that asks for the next turn. g.mu is held.
func (g *Gate) first() *Waiter {
	if g.rate.mode != sendProbing {
		return g.line[0]
	}
	// MinFunc returns the first of the attempts with the fewest retries.
	return slices.MinFunc(g.line, func(a, b *Waiter) int { return cmp.Compare(a.retries, b.retries) })
}

// Leave takes w out of line, for an attempt that gives up waiting (its
// context ended); it does nothing when w has no place.
func (g *Gate) Leave(w *Waiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.leave(w)
}

// leave is Leave with g.mu held; the next first in line asks.
func (g *Gate) leave(w *Waiter) {
	if w.inLine {
		g.line = slices.DeleteFunc(g.line, func(x *Waiter) bool { return x == w })
		if len(g.line) > 0 {
			g.announce()
		}
	}
	*w = Waiter{}
}

// announce wakes the waiting attempts to ask again. g.mu is held.
func (g *Gate) announce() {
	if !g.stopped { // Stop closed changed for good
		close(g.changed)
		g.changed = make(chan struct{})
	}
}

// End reports, at now, the end of an attempt Admit let go on turn: o is
// its outcome, 0 when it was not sent; answered is false when it got no
// answer (a transport error). It tells the send rate, wakes the line to
// ask again and, when the attempt showed the API has recovered, the
// batches sleeping through a backoff wait. An attempt answered with
// anything but a rate-limited answer ends the rate-limit episode: the
// pause already announced still runs to its end.
func (g *Gate) End(turn Turn, now time.Time, o Outcome, answered bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	recovered := g.rate != nil && g.rate.end(turn, now, o)
	if answered && o != OutcomeRateLimited {
		g.pause.since = time.Time{}
	}
	if len(g.line) > 0 {
		g.announce()
	}
	if recovered && !g.stopped {
		close(g.recovered)
		g.recovered = make(chan struct{})
	}
}

// Hold records a rate-limited answer at now that asked to wait d: every
// attempt of the client waits at the pause until now+d at least, and an
// episode begins unless one is running. With the send rate on, the pause
// ends a jitter of the client's own later (Policy.ResumeJitter), which
// Hold returns with jittered true; off, it ends at the server's time.
func (g *Gate) Hold(now time.Time, d time.Duration) (jitter time.Duration, jittered bool) {
	if g.rate != nil {
		jitter, jittered = g.policy.ResumeJitter(d), true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pause.hold(now, d, jitter)
	return jitter, jittered
}

// Stop ends every batch's retries, for good: from now on a retry fails
// with ErrRetriesStopped at Admit, a first attempt goes at once (neither
// the pause nor the send rate holds it back), and every Wake and
// Recovered channel is closed, so that no attempt waits on. It is safe to
// call more than once.
func (g *Gate) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.stopped {
		g.stopped = true
		close(g.changed)
		close(g.recovered)
	}
}

// GateState is a snapshot of a Gate's send rate and line: all zero when the
// send rate is off. The analytics package names it
// analytics.SendRateStats, in Stats.SendRate.
type GateState struct {
	// Limit is the attempts per second the client allows itself now: the
	// lowered limit after failures, or one over the probe's spacing while
	// probing (0 when that spacing is 0); 0 while the API answers and
	// nothing is limited.
	Limit float64 `json:"limit"`
	// Probing is true while the API seems down: one attempt at a time goes
	// out, spaced by the backoff schedule, up to the Policy's
	// ProbeInterval apart, but further for a client that sends little (its
	// probes cost at most an eighth of its healthy rate), and after a
	// rate-limited answer by the pause.
	Probing bool `json:"probing"`
	// Held counts the attempts that had to wait for their turn, since
	// NewGate.
	Held int64 `json:"held"`
	// Waiting is the attempts waiting for their turn now.
	Waiting int `json:"waiting"`
}

// State returns the Gate's state at now.
func (g *Gate) State(now time.Time) GateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := GateState{Held: g.held, Waiting: len(g.line)}
	if g.rate != nil {
		st.Limit = g.rate.limit(now)
		st.Probing = g.rate.mode == sendProbing
	}
	return st
}

// pause is the client-wide rate-limit pause (SPEC §5). One Retry-After holds
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
// The pause may end a little later than the server asked: each hold may
// add a jitter of the client's own (Policy.ResumeJitter), so that a fleet
// of clients given the same Retry-After does not resume in the same
// instant. It never ends earlier, and the budget is checked against the
// server's time, without the jitter. The zero pause is open; the Gate's
// mutex guards it.
type pause struct {
	until  time.Time // the server's time: the pause lasts at least until then
	resume time.Time // until plus the jitter: the pause ends then
	since  time.Time // the episode began then; zero when none is running
}

// hold records a rate-limited answer at now that asked to wait d: the pause
// lasts at least until now+d, and ends jitter later (jitter ≥ 0); an
// episode begins unless one is running.
func (p *pause) hold(now time.Time, d, jitter time.Duration) {
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

// wait tells a batch about to send at now how long the pause still holds
// it, jitter included: 0 when open. It returns ErrRateLimitBudgetExceeded
// when the server's time would end more than policy's MaxRateLimitDuration
// after the episode began.
func (p *pause) wait(now time.Time, policy *Policy) (time.Duration, error) {
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
