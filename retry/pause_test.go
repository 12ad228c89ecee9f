package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitAt asserts what Pause.Wait answers at t: the wait, and no error.
func waitAt(t *testing.T, p *Pause, at time.Time, policy *Policy, want time.Duration, msg string) {
	t.Helper()
	d, err := p.Wait(at, policy)
	require.NoError(t, err, msg)
	assert.Equal(t, want, d, msg)
}

func TestPauseIsOpenUntilHeld(t *testing.T) {
	var p Pause
	policy := testPolicy()
	t0 := time.Unix(1_000_000, 0)
	waitAt(t, &p, t0, &policy, 0, "the zero Pause")
	p.Hold(t0, 3*time.Second, 0)
	waitAt(t, &p, t0.Add(time.Second), &policy, 2*time.Second, "1s into a 3s pause")
	waitAt(t, &p, t0.Add(3*time.Second), &policy, 0, "at the pause's end")
	// A shorter hold never shortens the pause.
	p.Hold(t0, time.Second, 0)
	assert.WithinDuration(t, t0.Add(3*time.Second), p.Until(), 0, "Until after a shorter hold")
}

// Under sustained rate limiting every batch spends the same episode: a
// wait that would end past MaxRateLimitDuration from the episode's start
// fails, whichever batch's answer asked for it.
func TestPauseWaitsCountAgainstTheEpisode(t *testing.T) {
	var p Pause
	policy := testPolicy()
	policy.MaxRateLimitDuration = 2 * time.Second
	t0 := time.Unix(1_000_000, 0)
	p.Hold(t0, time.Second, 0) // batch A's 429 starts the episode
	waitAt(t, &p, t0, &policy, time.Second, "the first hold")
	p.Hold(t0.Add(time.Second), time.Second, 0) // batch B's 429, a second later
	waitAt(t, &p, t0.Add(time.Second), &policy, time.Second, "a wait ending exactly at the budget")
	p.Hold(t0.Add(1500*time.Millisecond), time.Second, 0) // until t0+2.5s
	_, err := p.Wait(t0.Add(1500*time.Millisecond), &policy)
	assert.ErrorIs(t, err, ErrRateLimitBudgetExceeded, "a wait ending 2.5s into a 2s episode")
	// An attempt answered without Retry-After ends the episode: the pause
	// already announced still holds, and counts from zero.
	p.Answered()
	waitAt(t, &p, t0.Add(1500*time.Millisecond), &policy, time.Second, "after the episode ended: the 1s left of the pause")
	// The next 429 starts a new episode.
	p.Hold(t0.Add(2500*time.Millisecond), 2*time.Second, 0)
	waitAt(t, &p, t0.Add(2500*time.Millisecond), &policy, 2*time.Second, "a new episode")
}

func TestPauseWithZeroBudgetNeverWaits(t *testing.T) {
	var p Pause
	policy := testPolicy()
	policy.MaxRateLimitDuration = 0
	t0 := time.Unix(1_000_000, 0)
	p.Hold(t0, time.Second, 0)
	_, err := p.Wait(t0, &policy)
	assert.ErrorIs(t, err, ErrRateLimitBudgetExceeded, "budget 0")
}

// The client's jitter makes the pause end later than the server asked,
// never earlier; the budget counts the server's time only.
func TestPauseEndsAfterTheJitter(t *testing.T) {
	var p Pause
	policy := testPolicy()
	policy.MaxRateLimitDuration = 2 * time.Second
	t0 := time.Unix(1_000_000, 0)
	p.Hold(t0, 2*time.Second, 150*time.Millisecond)
	waitAt(t, &p, t0, &policy, 2150*time.Millisecond, "a 2s pause with a jitter of 150ms, ending at the budget")
	waitAt(t, &p, t0.Add(2050*time.Millisecond), &policy, 100*time.Millisecond, "in the jitter, past the server's time")
	assert.WithinDuration(t, t0.Add(2150*time.Millisecond), p.Until(), 0, "Until: the end, jitter included")
	// A later, shorter hold with a longer jitter moves the end no earlier.
	p.Hold(t0.Add(time.Second), 500*time.Millisecond, 900*time.Millisecond)
	assert.WithinDuration(t, t0.Add(2400*time.Millisecond), p.Until(), 0, "Until after a hold of 1.5s+900ms")
	p.Hold(t0.Add(time.Second), 100*time.Millisecond, -time.Second)
	assert.WithinDuration(t, t0.Add(2400*time.Millisecond), p.Until(), 0, "a negative jitter counts as none")
}
