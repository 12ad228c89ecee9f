package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/jitter"
)

// waitAt asserts what the Gate answers a first attempt that holds its
// slot at t: the wait at the pause (0: it goes), and no error.
func waitAt(t *testing.T, g *Gate, at time.Time, want time.Duration, msg string) {
	t.Helper()
	a, err := g.Admit(at, &Waiter{}, g.policy.NewBudget(1), true)
	require.NoError(t, err, msg)
	if want == 0 {
		assert.True(t, a.Go, "%s: goes", msg)
		return
	}
	assert.True(t, a.Paused, "%s: paused", msg)
	assert.Equal(t, want, a.Until.Sub(at), msg)
}

func TestPauseIsOpenUntilHeld(t *testing.T) {
	policy := testPolicy()
	g := NewGate(&policy, false)
	t0 := time.Unix(1_000_000, 0)
	waitAt(t, g, t0, 0, "a new Gate")
	g.Hold(t0, 3*time.Second)
	waitAt(t, g, t0.Add(time.Second), 2*time.Second, "1s into a 3s pause")
	waitAt(t, g, t0.Add(3*time.Second), 0, "at the pause's end")
	// A shorter hold never shortens the pause.
	g.Hold(t0, time.Second)
	waitAt(t, g, t0.Add(2*time.Second), time.Second, "after a shorter hold")
}

// Under sustained rate limiting every batch spends the same episode: a
// wait that would end past MaxRateLimitDuration from the episode's start
// fails, whichever batch's answer asked for it.
func TestPauseWaitsCountAgainstTheEpisode(t *testing.T) {
	policy := testPolicy()
	policy.MaxRateLimitDuration = 2 * time.Second
	g := NewGate(&policy, false)
	t0 := time.Unix(1_000_000, 0)
	g.Hold(t0, time.Second) // batch A's 429 starts the episode
	waitAt(t, g, t0, time.Second, "the first hold")
	g.Hold(t0.Add(time.Second), time.Second) // batch B's 429, a second later
	waitAt(t, g, t0.Add(time.Second), time.Second, "a wait ending exactly at the budget")
	g.Hold(t0.Add(1500*time.Millisecond), time.Second) // until t0+2.5s
	_, err := g.Admit(t0.Add(1500*time.Millisecond), &Waiter{}, policy.NewBudget(1), true)
	assert.ErrorIs(t, err, ErrRateLimitBudgetExceeded, "a wait ending 2.5s into a 2s episode")
	// A rate-limited answer and one that got no answer leave the episode
	// running.
	g.End(Turn{}, t0.Add(1500*time.Millisecond), OutcomeRateLimited, true)
	g.End(Turn{}, t0.Add(1500*time.Millisecond), OutcomeRetryable, false)
	_, err = g.Admit(t0.Add(1500*time.Millisecond), &Waiter{}, policy.NewBudget(1), true)
	assert.ErrorIs(t, err, ErrRateLimitBudgetExceeded, "after a 429 and a transport error")
	// An attempt answered without Retry-After ends the episode: the pause
	// already announced still holds, and counts from zero.
	g.End(Turn{}, t0.Add(1500*time.Millisecond), OutcomeRetryable, true)
	waitAt(t, g, t0.Add(1500*time.Millisecond), time.Second, "after the episode ended: the 1s left of the pause")
	// The next 429 starts a new episode.
	g.Hold(t0.Add(2500*time.Millisecond), 2*time.Second)
	waitAt(t, g, t0.Add(2500*time.Millisecond), 2*time.Second, "a new episode")
}

func TestPauseWithZeroBudgetNeverWaits(t *testing.T) {
	policy := testPolicy()
	policy.MaxRateLimitDuration = 0
	g := NewGate(&policy, false)
	t0 := time.Unix(1_000_000, 0)
	g.Hold(t0, time.Second)
	_, err := g.Admit(t0, &Waiter{}, policy.NewBudget(1), true)
	assert.ErrorIs(t, err, ErrRateLimitBudgetExceeded, "budget 0")
}

// pauseAt asserts what the pause answers at t: the wait, and no error.
func pauseAt(t *testing.T, p *pause, at time.Time, policy *Policy, want time.Duration, msg string) {
	t.Helper()
	d, err := p.wait(at, policy)
	require.NoError(t, err, msg)
	assert.Equal(t, want, d, msg)
}

// The client's jitter makes the pause end later than the server asked,
// never earlier; the budget counts the server's time only.
func TestPauseEndsAfterTheJitter(t *testing.T) {
	var p pause
	policy := testPolicy()
	policy.MaxRateLimitDuration = 2 * time.Second
	t0 := time.Unix(1_000_000, 0)
	p.hold(t0, 2*time.Second, 150*time.Millisecond)
	pauseAt(t, &p, t0, &policy, 2150*time.Millisecond, "a 2s pause with a jitter of 150ms, ending at the budget")
	pauseAt(t, &p, t0.Add(2050*time.Millisecond), &policy, 100*time.Millisecond, "in the jitter, past the server's time")
	// A later, shorter hold with a longer jitter moves the end no earlier.
	p.hold(t0.Add(time.Second), 500*time.Millisecond, 900*time.Millisecond)
	pauseAt(t, &p, t0, &policy, 2400*time.Millisecond, "after a hold of 1.5s+900ms")
	p.hold(t0.Add(time.Second), 100*time.Millisecond, -time.Second)
	pauseAt(t, &p, t0, &policy, 2400*time.Millisecond, "a negative jitter counts as none")
}

// With the send rate on, the Gate draws the pause's jitter; off, the
// pause ends at the server's time.
func TestHoldJittersWithTheSendRateOnly(t *testing.T) {
	policy := testPolicy()
	jitter.Set(&policy, func(n time.Duration) time.Duration { return n / 2 })
	t0 := time.Unix(1_000_000, 0)
	on, off := NewGate(&policy, true), NewGate(&policy, false)
	jitter, ok := on.Hold(t0, 4*time.Second)
	assert.True(t, ok, "on: jittered")
	assert.Equal(t, 200*time.Millisecond, jitter, "on: half of a tenth of 4s")
	waitAt(t, on, t0, 4200*time.Millisecond, "on: the server's time and the jitter")
	_, ok = off.Hold(t0, 4*time.Second)
	assert.False(t, ok, "off: not jittered")
	waitAt(t, off, t0, 4*time.Second, "off: the server's time")
}

// An attempt that holds no request slot is told to take one, keeping its
// place; the last answer, Go, comes to an attempt that holds one.
func TestGateAnswersGoToAnAttemptWithItsSlot(t *testing.T) {
	policy := testPolicy()
	t0 := time.Unix(1_000_000, 0)
	for _, on := range []bool{true, false} {
		g := NewGate(&policy, on)
		var w Waiter
		a, err := g.Admit(t0, &w, policy.NewBudget(1), false)
		require.NoError(t, err)
		assert.True(t, a.Slot && !a.Go, "send rate on=%v, no slot: take one", on)
		a, err = g.Admit(t0, &w, policy.NewBudget(1), true)
		require.NoError(t, err)
		assert.True(t, a.Go, "send rate on=%v, with the slot", on)
		st := g.State(t0)
		assert.Zero(t, st.Held+int64(st.Waiting), "send rate on=%v: nothing held, nothing waiting", on)
	}
}

// Stopped, the Gate fails every retry and lets a first attempt go at
// once, even through a pause; the channels attempts wait on are closed.
func TestStoppedGateFailsRetriesAndLetsFirstAttemptsGo(t *testing.T) {
	policy := testPolicy()
	g := NewGate(&policy, true)
	t0 := time.Unix(1_000_000, 0)
	g.Hold(t0, time.Minute)
	a, err := g.Admit(t0, &Waiter{}, policy.NewBudget(1), true)
	require.NoError(t, err)
	wake := a.Wake
	g.Stop()
	g.Stop() // twice is once
	assert.True(t, isClosed(wake), "a pause's Wake, closed")
	waitAt(t, g, t0, 0, "a first attempt, through the pause")
	retried := policy.NewBudget(1)
	retried.Next(retryable, t0)
	_, err = g.Admit(t0, &Waiter{}, retried, true)
	assert.ErrorIs(t, err, ErrRetriesStopped, "a retry")
	a, err = g.Admit(t0, &Waiter{}, policy.NewBudget(1), true)
	require.NoError(t, err)
	assert.True(t, isClosed(a.Recovered), "Recovered, closed: no backoff wait after it")
	// A recovery after Stop closes nothing twice.
	g.End(a.Turn, t0, OutcomeSuccess, true)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A held attempt waits until its batch's backoff budget ends, and fails
// then; the first in line fails at once when the turn it was told of does
// not fit.
func TestHeldAttemptSpendsItsBackoffBudget(t *testing.T) {
	policy := testPolicy()
	policy.MaxTotalBackoffDuration = 10 * time.Second
	g := NewGate(&policy, true)
	t0 := time.Unix(1_000_000, 0)
	for range downAfter { // the API seems down: the client probes, and the probe goes
		turn, _, ok := g.rate.admit(t0)
		require.True(t, ok)
		g.End(turn, t0, OutcomeRetryable, true)
	}
	probe, err := g.Admit(t0.Add(time.Minute), &Waiter{}, policy.NewBudget(1), true)
	require.NoError(t, err)
	require.True(t, probe.Go, "the probe")
	b := policy.NewBudget(1)
	b.Next(retryable, t0.Add(time.Minute)) // its budget ends at 1m10s
	var w Waiter
	a, err := g.Admit(t0.Add(time.Minute), &w, b, true)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(70*time.Second), a.Until, "held while the probe is out: until the budget ends")
	b2 := policy.NewBudget(1)
	b2.Next(retryable, t0.Add(time.Minute))
	var w2 Waiter // second in line
	a2, err := g.Admit(t0.Add(time.Minute), &w2, b2, true)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(70*time.Second), a2.Until, "second in line: until the budget ends")
	assert.Equal(t, GateState{Limit: g.rate.limit(t0.Add(time.Minute)), Probing: true, Held: 2, Waiting: 2}, g.State(t0.Add(time.Minute)), "probing, two held, waiting")
	_, err = g.Admit(a2.Until, &w2, b2, true)
	assert.ErrorIs(t, err, ErrBackoffBudgetExceeded, "second in line, at the budget's end")
	_, err = g.Admit(a.Until, &w, b, true)
	assert.ErrorIs(t, err, ErrBackoffBudgetExceeded, "first in line, at the budget's end")
	assert.Zero(t, g.State(t0).Waiting, "out of line")
}

// While the send rate probes, the turn goes to the attempt whose batch has
// spent the fewest retries, the first of those that came; otherwise to the
// first that came. So the batches held back through an outage spend their
// retries evenly.
func TestProbeTurnGoesToTheFewestRetries(t *testing.T) {
	policy := DefaultPolicy()
	g := NewGate(&policy, true)
	g.line = []*Waiter{{retries: 3}, {retries: 1}, {retries: 1}}
	assert.Same(t, g.line[0], g.first(), "healthy: the first that came asks")

	now := time.Now()
	turn, _, ok := g.rate.admit(now)
	require.True(t, ok, "a healthy rate admits")
	g.rate.end(turn, now, OutcomeRateLimited) // one rate-limited answer: the client probes
	require.Equal(t, sendProbing, g.rate.mode, "probing after a rate-limited answer")
	assert.Same(t, g.line[1], g.first(), "probing: the first of those with the fewest retries asks")
}
